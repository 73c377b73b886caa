/* SPDX-License-Identifier: MIT */
/*
 * The host drain's shared state (host_drain.h): host_drain.c is its
 * thread, host_drain_calls.c the calls on the loop thread. Fields under
 * "shared" are read by the loop thread and written by the drain thread,
 * both under @lock.
 */
#ifndef MIGD_HOST_DRAIN_PRIV_H
#define MIGD_HOST_DRAIN_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "migrated/host/drain_place.h"
#include "migrated/rpc/parse.h"
#include "migrated/rpc/client.h"

#define MIGD_DRAIN_HOSTS_MAX 256u

struct migd_host;
struct migd_fleet;
struct migd_call;

enum migd_drain_row_state { ROW_PENDING, ROW_MIGRATING, ROW_MIGRATED, ROW_FAILED,
		 ROW_SKIPPED, ROW_CANCELLED };

extern const char *const migd_drain_row_names[];

struct migd_drain_row {
	char vm[MIGD_NAME_MAX + 1];
	enum migd_drain_row_state state;
	char target[MIGD_DRAIN_ID_MAX + 1];
	char reason[256];
	uint64_t mig_id;
	uint64_t mem;
	uint32_t vcpus;
	uint32_t percent;
	/* the cancel found its migration past its commit point */
	bool committing;
	/* drain thread only */
	int dst;
	unsigned slot;
	bool has_slot;
	char holder[MIGD_DRAIN_ID_MAX + MIGD_NAME_MAX + 2];
};

/* A destination as the drain thread knows it. */
struct migd_drain_dest {
	struct migd_client *c;
	char mig_host[MIGD_HOST_MAX + 1];
};

struct migd_drain {
	struct migd_host *d;
	pthread_t thread;
	bool joinable;
	_Atomic bool stop;
	/* host_drain_cancel: start nothing more, cancel what is in flight */
	_Atomic bool cancel;

	/* the loop thread's copies, set before the thread starts */
	char host[MIGD_DRAIN_ID_MAX + 1];
	unsigned max_per_host, max_fleet;
	char sock[108];
	struct migd_client_tls tls;
	char ca[PATH_MAX + 16], cert[PATH_MAX + 16], key[PATH_MAX + 16];
	struct migd_fleet *f;
	uint64_t grace_ms;
	/* shutdown: the fleet object handed over to be stopped after the
	 * thread (migd_host_drain_stop) */
	struct migd_fleet *fleet_owned;
	bool fleet_revoke;
	uint64_t started_unix_ms, t0_ns;

	/* shared, under @lock */
	pthread_mutex_t lock;
	bool running;
	struct migd_drain_row *rows;
	unsigned nr_rows;
	char error[512];
	unsigned peak_fleet, peak_per_host;
	uint64_t elapsed_ms;

	/* drain thread only */
	struct migd_drain_host hosts[MIGD_DRAIN_HOSTS_MAX];
	struct migd_drain_dest dests[MIGD_DRAIN_HOSTS_MAX];
	unsigned nr_hosts;
	unsigned inflight;
	bool cancel_done; /* the cancel was carried out */
};

/* The drain thread (host_drain.c): runs the drain @arg, a struct
 * migd_drain, to its end, then clears @running. */
void *migd_drain_thread(void *arg);

/* HostDrainStatus.state: "running", "cancelling", "cancelled",
 * "finished" or "failed" (@error: the drain as a whole failed). */
const char *migd_drain_state_name(bool running, bool cancel, bool error);

/*
 * host_drain_forward.c: a drain call (host_drain, host_drain_status,
 * host_drain_cancel, host_undrain) naming @host. false: @host is "" or
 * this daemon's id: the caller answers it. true: the call is handled:
 * forwarded to @host's daemon over mutual TLS (answered later: deferred,
 * server.h), or failed: standalone (FAILED_PRECONDITION), @forwarded
 * (a forwarded call must name its receiver: INVALID_ARGUMENT), no such
 * host registered (NOT_FOUND), no control RPC address in its record or
 * no TLS files here (FAILED_PRECONDITION), etcd unreadable or the peer
 * unreachable (UNAVAILABLE). The peer's refusals come back as it sent
 * them, their message prefixed with the host's id and address.
 */
bool migd_drain_forward(struct migd_call *call, const char *host,
			bool forwarded);

#endif
