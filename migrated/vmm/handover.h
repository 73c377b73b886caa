/* SPDX-License-Identifier: MIT */
/*
 * migd_handover: local live update. A worker process hands its VM to a
 * fresh worker on the same host over a connected AF_UNIX stream socket,
 * without copying guest RAM: the guest memfd goes over SCM_RIGHTS, the
 * receiver creates a new VM over the same memfd (hv_vm_cfg.adopt_mem) and
 * loads the state of hv_vm_state_save(). A KVM VM fd cannot serve another
 * process (KVM refuses ioctls from a different mm), hence a new VM.
 *
 * Exchange (proto/handover.proto has the messages):
 *   offer:  Handover + memfd  ->  recv: create a VM adopting it (nothing
 *                                       is written to guest RAM)
 *           CREATED           <-        (or an error; then holds nothing)
 *   commit: State             ->        restore, vCPU threads parked
 *           PREPARED          <-        (or an error; then holds nothing)
 *           Go                ->        resume the vCPUs
 *           STARTED           <-
 * The sender resumes its VM only before Go or when the receiver said it
 * failed; the receiver runs the guest only after Go. So the guest never
 * runs in two processes: the worst case (sender gone or silent after Go)
 * is a guest that runs nowhere, with its RAM intact.
 *
 * Since adopting writes nothing, the offer may be made while the guest
 * still runs: migd_handover_offer(), then hv_vm_pause(), then
 * migd_handover_commit() keeps the receiver's VM creation (the largest
 * part on KVM) out of the pause. migd_handover_send() does both on a
 * paused VM.
 *
 * Threads: each call runs on one thread and blocks for at most a few
 * times @timeout_ms (every wait for the peer has @timeout_ms; 0 = none).
 * Errors: every failure is logged with its cause and, for the sender,
 * copied into times->error (the receiver's own message when it failed).
 */
#ifndef MIGRATED_VMM_HANDOVER_H
#define MIGRATED_VMM_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hv_vm;

/* Largest opaque metadata carried with the VM. */
#define MIGD_HANDOVER_META_MAX (1u << 20)

/*
 * migd_handover_send() returned after Go was sent but without the
 * receiver's confirmation (it died, hung or the socket broke): the guest
 * may be running there or nowhere. Do NOT resume: keep the VM paused (or
 * destroy it; the receiver holds its own fd and mapping) and report.
 */
#define MIGD_HANDOVER_UNCONFIRMED 1

/* Sender-side results. ns are CLOCK_MONOTONIC differences (one host). */
struct migd_handover_times {
	/* in: CLOCK_MONOTONIC ns of the caller's hv_vm_pause (0: the call's
	 * entry is taken instead) */
	uint64_t paused_at_ns;
	/* out, sender */
	uint64_t offer_ns;	/* offer: Handover sent -> CREATED received */
	uint64_t save_ns;	/* hv_vm_state_save */
	uint64_t sent_ns;	/* pause -> State frame sent */
	uint64_t prepared_ns;	/* pause -> PREPARED received */
	uint64_t total_ns;	/* pause -> STARTED received */
	/* out, from the receiver's replies */
	uint64_t create_ns;	/* Handover frame in -> VM created over it */
	uint64_t restore_ns;	/* State frame in -> restored, threads up */
	uint64_t start_ns;	/* Go -> vCPUs resumed */
	/* pause -> the receiver's vCPUs resumed: the guest's pause (0
	 * when the receiver was asked not to start) */
	uint64_t pause_ns;
	uint64_t state_bytes;	/* the VM state blob */
	/* out: why it failed ("" on success) */
	char error[192];
};

/*
 * Step 1: offer @vm (running or not) through @sock: its cfg, @meta (0 ..
 * MIGD_HANDOVER_META_MAX bytes, may be NULL when @meta_len is 0) and the
 * memfd; the receiver creates its VM over the memfd and answers CREATED.
 * 0, or < 0 (-EINVAL, -ENOMEM, -ETIMEDOUT, -ECONNRESET, -EPROTO, the
 * receiver's error): the receiver holds nothing then. @t may be NULL;
 * its results are reset here (t->paused_at_ns kept).
 */
int migd_handover_offer(int sock, struct hv_vm *vm, const void *meta,
			size_t meta_len, unsigned timeout_ms,
			struct migd_handover_times *t);

/*
 * Step 2, after a successful offer on @sock and within the receiver's
 * @timeout_ms: @vm must be PAUSED and not dirty logging (-EBUSY, nothing
 * sent: pause and call again). Saves the state, sends it, then Go.
 *   0: the receiver runs the guest now. The caller destroys its hv_vm;
 *      the memfd contents survive (the receiver has its own fd/mapping).
 *   MIGD_HANDOVER_UNCONFIRMED (1): see above; do not resume.
 *   < 0: the receiver does not have the guest (its error, or a local
 *      one: -EBUSY, -ENOMEM, -ETIMEDOUT, -ECONNRESET, -EPROTO, ...); @vm is
 *      untouched and still PAUSED: the caller resumes it.
 */
int migd_handover_commit(int sock, struct hv_vm *vm, unsigned timeout_ms,
			 struct migd_handover_times *t);

/*
 * Offer and commit in one: @vm must be PAUSED and not dirty logging
 * (-EBUSY, nothing sent). Returns as migd_handover_commit().
 */
int migd_handover_send(int sock, struct hv_vm *vm, const void *meta,
		       size_t meta_len, unsigned timeout_ms,
		       struct migd_handover_times *t);

/*
 * Receive a VM through @sock: create it over the received memfd, restore
 * the state that follows, and after the sender's Go resume it (@start)
 * or leave it CREATED for the caller's hv_vm_start() (!@start). On 0,
 * *out is the VM and *meta / *meta_len the sender's metadata (malloc'd,
 * the caller frees; NULL / 0 when empty). On failure (< 0) an error reply
 * went to the sender when the socket still worked, nothing is left
 * behind (no VM, no fd, no memory) and *out, *meta are NULL. After Go it
 * does not fail (a lost STARTED reply is logged; the guest runs here).
 */
int migd_handover_recv(int sock, unsigned timeout_ms, struct hv_vm **out,
		       void **meta, size_t *meta_len, bool start);

#endif
