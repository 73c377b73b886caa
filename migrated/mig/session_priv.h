/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the source and destination engines (source.c,
 * dest.c, session.c). Not a public contract: mig__ prefix.
 */
#ifndef MIG_SESSION_PRIV_H
#define MIG_SESSION_PRIV_H

#include <pthread.h>
#include <stdarg.h>

#include "migrated/mig/conn.h"
#include "migrated/mig/session.h"

/* CLOCK_MONOTONIC in ns. */
uint64_t mig__now_ns(void);
/* A CLOCK_MONOTONIC timestamp of this host as CLOCK_REALTIME, so that the
 * two hosts' heartbeat times can be compared (loopback: exact; across
 * hosts: as good as their clock synchronisation). 0 stays 0. */
uint64_t mig__mono_to_real(uint64_t mono_ns);

/* The TLS context of one side from opts (tls copied, server forced), or
 * NULL in insecure mode. 0, -EINVAL or the errors of mig_tls_create(). */
int mig__tls_make(const struct mig_opts *o, bool server,
		  struct mig_tls **out);

/* Check opts; fill the defaults the engines use. 0 or -EINVAL. */
int mig__opts_check(const struct mig_opts *o, unsigned *nchan,
		    uint32_t *io_ms);

/* The Mig__AbortReason that describes a local failure @err. */
unsigned mig__abort_reason(int err);
/* Best-effort Abort (or Cancel when @err is -ECANCELED) to the peer. */
void mig__send_abort(struct mig_conn *c, int err, const char *detail);

/* Destination, after resume: does any vCPU's workload send heartbeats,
 * and the earliest heartbeat after resume, CLOCK_MONOTONIC; 0 if none
 * came within MIG_FIRST_HEARTBEAT_WAIT_MS. Polled: the first one is seen
 * within 200 us, far below a heartbeat period. */
bool mig__wants_heartbeats(struct hv_vm *vm);
uint64_t mig__first_heartbeat(struct hv_vm *vm);

/* Progress: one snapshot guarded by its own lock, and the callback called
 * under a second lock so that it never runs twice at once. */
struct mig__prog {
	pthread_mutex_t lock;	/* guards p */
	pthread_mutex_t cblock; /* serialises cb */
	struct mig_progress p;
	uint64_t last_cb_ns;
	mig_progress_cb cb;
	void *arg;
};

void mig__prog_init(struct mig__prog *pr, mig_progress_cb cb, void *arg);
void mig__prog_fini(struct mig__prog *pr);
void mig__prog_get(struct mig__prog *pr, struct mig_progress *out);
/* Call the callback with the current snapshot if @force or 100 ms passed
 * since the last call. */
void mig__prog_emit(struct mig__prog *pr, bool force);
/* Set phase (and emit). */
void mig__prog_phase(struct mig__prog *pr, enum mig_phase ph);
/* Record a failure: phase FAILED (CANCELLED for -ECANCELED), error and
 * message, unless an error is already recorded (the first one wins). */
void mig__prog_fail(struct mig__prog *pr, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Append "; <text>" to the message (error and phase unchanged). */
void mig__prog_note(struct mig__prog *pr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Set phase, error and message outright (a later verdict replaces an
 * earlier one: UNRESOLVED, a verification error, a resolve). */
void mig__prog_set(struct mig__prog *pr, enum mig_phase ph, int err,
		   const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
