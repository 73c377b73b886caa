// SPDX-License-Identifier: MIT
/*
 * mig_dest, second half (dest_priv.h): from the switchover to the commit.
 * The received memory is digested and compared with the source's, the VM
 * state is loaded, the Ack goes out, and on the source's Commit the VM is
 * started, once. d->commit_state is the one decision of this side (see
 * dest.c's header comment for the rules).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/types.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "migrated/mig/dest_priv.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/pipeline.h"

#define VMSTATE_FORMAT 1u

/*
 * Digest of the received memory by re-reading it (the check before
 * decode-time hashing, kept for $MIGRATED_DST_DIGEST=reread). Holes
 * (nothing arrived there since setup discarded the memory) are zeros and
 * are not read: reading would fault each one in, several us per page on
 * a nested host.
 */
static int dst_digest_reread(struct mig_dest *d)
{
	const struct hv_guest_mem *mem = d->vm->mem;
	unsigned n = mig_memmap_count(d->map);
	uint64_t **data = calloc(HV_MAX(n, 1u), sizeof(*data));
	int ret = 0;

	if (!data)
		return -ENOMEM;
	for (unsigned i = 0; mem && i < n; i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(d->map, i);
		uint64_t off = (uint64_t)(sl->host - mem->hva);

		if (sl->host < mem->hva ||
		    off + (sl->npages << HV_PAGE_SHIFT) > mem->bytes)
			continue;
		data[i] = malloc(HV_DIV_ROUND_UP(sl->npages, 64) * 8);
		if (!data[i]) {
			ret = -ENOMEM;
			break;
		}
		if (hv_guest_mem_data_map(mem, off, sl->npages, data[i])) {
			free(data[i]);
			data[i] = NULL;
		}
	}
	if (!ret)
		ret = mig_digest_compute_data(d->map,
					      (const uint64_t *const *)data,
					      d->nchan, d->digest,
					      &d->digest_pages);
	for (unsigned i = 0; i < n; i++)
		free(data[i]);
	free(data);
	return ret;
}

/*
 * Digest of the received memory from the page hashes the receive pipeline
 * took as it decoded each batch (mig_recv_pipe_create_hashed): SHA-256 of
 * 8 B per page, no guest memory read inside the downtime. The pipe was
 * joined, so every channel's table writes are visible here. What this
 * covers, and what the re-read covered in addition: docs/architecture.md,
 * "Destination digest".
 */
static int dst_digest(struct mig_dest *d)
{
	int ret;

	if (!d->htab)
		return dst_digest_reread(d);
	ret = mig_digest_table_rel(d->map, d->htab, mig_zero_page_hash(),
				   d->digest);
	if (!ret)
		d->digest_pages = mig_memmap_pages(d->map);
	return ret;
}

int mig__dst_on_vm_state(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__VmStateEnvelope *env = (const Mig__VmStateEnvelope *)m;
	uint64_t t0;
	int ret;

	if (d->pc)
		return mig__dst_pc_on_vm_state(d, m);
	if (env->format != VMSTATE_FORMAT || !env->state.len)
		FAIL(d, -EPROTO, "VM state format %u, %zu bytes", env->format,
		     env->state.len);
	mig_recv_pipe_prefault_stop(d->pipe);
	/* The source sent DataEnd on every channel before the state. */
	ret = mig_recv_pipe_join(d->pipe);
	if (ret)
		FAIL(d, ret, "final pages: %s", strerror(-ret));
	d->state.data = malloc(env->state.len);
	if (!d->state.data)
		FAIL(d, -ENOMEM, "VM state: out of memory");
	memcpy(d->state.data, env->state.data, env->state.len);
	d->state.len = env->state.len;
	if (d->hooks.dst_received)
		d->hooks.dst_received(d->hooks.arg, d->vm);
	/* Computed now, while the source hashes its page table. */
	t0 = mig__now_ns();
	ret = dst_digest(d);
	d->verify_ns = mig__now_ns() - t0;
	if (ret)
		FAIL(d, ret, "digest: %s", strerror(-ret));
	d->data_done = true;
	mig__dst_prog_counters(d);
	return 0;
}

int mig__dst_on_digest(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__Digest *dg = (const Mig__Digest *)m;
	Mig__Ack ack = MIG__ACK__INIT;
	uint64_t t0;
	int ret;

	if (!d->data_done)
		FAIL(d, -EPROTO, "digest before the VM state");
	if (dg->algo != MIG__DIGEST_ALGO__DIGEST_PAGE64_SHA256 ||
	    dg->digest.len != MIG_DIGEST_LEN)
		FAIL(d, -EPROTO, "digest algorithm %d, %zu bytes",
		     (int)dg->algo, dg->digest.len);
	if (dg->pages != d->digest_pages ||
	    memcmp(dg->digest.data, d->digest, MIG_DIGEST_LEN))
		FAIL(d, -EBADE,
		     "memory digest mismatch over %llu pages: received memory "
		     "differs from the source's",
		     (unsigned long long)d->digest_pages);
	t0 = mig__now_ns();
	ret = hv_vm_state_restore(d->vm, &d->state);
	d->load_ns = mig__now_ns() - t0;
	if (ret)
		FAIL(d, ret, "load VM state: %s", strerror(-ret));
	if (d->hooks.dst_loaded)
		d->hooks.dst_loaded(d->hooks.arg, d->vm);
	mig__prog_phase(&d->prog, MIG_PHASE_COMMIT);
	ret = mig_faultpoint(MIG_FP_DST_LOADED);
	if (ret < 0)
		FAIL(d, ret, "fault point %s", MIG_FP_DST_LOADED);
	ack.pages = d->digest_pages;
	ret = mig_faultpoint(MIG_FP_DST_ACK_SEND);
	if (ret == 0)
		ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_ACK, &ack.base,
				    NULL, 0);
	else if (ret == MIG_FAULT_DROP)
		ret = 0;
	if (ret)
		FAIL(d, ret, "send ack: %s", strerror(-ret));
	d->commit_state = DST_LOADED;
	return 0;
}

int mig__dst_on_commit(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__Commit *c = (const Mig__Commit *)m;
	Mig__Resumed r = MIG__RESUMED__INIT;
	uint64_t t0 = mig__now_ns(), t1, hb = 0;
	bool keep_paused = c && c->keep_paused;
	int ret;

	/* The state machine lets a Commit in only after the Digest; this
	 * says whether that Digest's verification and load succeeded. */
	if (d->commit_state != DST_LOADED)
		FAIL(d, -EPROTO, "commit refused: %s",
		     d->commit_state == DST_RESUMED
			     ? "the VM runs already"
			     : "the VM was not verified and loaded");
	ret = mig_faultpoint(MIG_FP_DST_COMMIT);
	if (ret < 0)
		FAIL(d, ret, "fault point %s", MIG_FP_DST_COMMIT);
	/* An operator's cancel that came before the start still wins: the
	 * source then finds the channel closed and stays UNRESOLVED. */
	if (atomic_load(&d->cancel))
		FAIL(d, -ECANCELED, "cancelled before resume");
	if (d->opts.dst_commit) {
		char why[256] = "";

		ret = d->opts.dst_commit(d->opts.dst_commit_arg, d->vm_name,
					 why, sizeof(why));
		if (ret)
			FAIL(d, ret, "ownership not taken: %s", why);
	}
	/* Owned here now (fleet); not started yet. */
	ret = mig_faultpoint(MIG_FP_DST_OWNED);
	if (ret < 0)
		FAIL(d, ret, "fault point %s", MIG_FP_DST_OWNED);
	/* Where the VM runs, for the logs' timeline: here, from before it
	 * may run (paused on the source by its operator: it arrives
	 * paused, and is not running). */
	if (!keep_paused)
		hv_info("mig", "op=vm_running vm=%s why=migrated_in",
			hv_vm_name(d->vm));
	ret = keep_paused ? hv_vm_start_paused(d->vm) : hv_vm_start(d->vm);
	t1 = mig__now_ns();
	if (ret)
		FAIL(d, ret, "start the VM after commit: %s", strerror(-ret));
	d->commit_state = DST_RESUMED;
	if (keep_paused)
		hv_info("mig", "op=commit vm=%s keep_paused=1", d->vm_name);
	/* In postcopy the first heartbeat may wait on a missing page,
	 * which is asked for only once this thread serves faults. */
	if (!d->pc && !keep_paused && mig__wants_heartbeats(d->vm))
		hb = mig__first_heartbeat(d->vm);
	r.verify_ns = d->verify_ns;
	r.load_ns = d->load_ns;
	r.resume_ns = t1 - t0;
	r.first_heartbeat_realtime_ns = mig__mono_to_real(hb);
	r.heartbeat_wait_ns = mig__now_ns() - t1;
	/* The VM runs here now, whether or not the report arrives. Its
	 * owner learns it before the source does, so that nobody who heard
	 * of the success from the source finds it missing here. */
	d->vm_out = d->vm;
	d->vm = NULL;
	/* Postcopy hands it over once every page is in (mig__dst_pc_run): until
	 * then a broken postcopy must be able to drop it. */
	if (d->opts.dst_running && !d->pc) {
		d->opts.dst_running(d->opts.dst_running_arg, d->vm_out);
		d->vm_out = NULL;
	}
	ret = mig_faultpoint(MIG_FP_DST_RESUMED);
	if (ret == 0)
		ret = mig_faultpoint(MIG_FP_DST_RESUMED_SEND);
	if (ret == 0)
		ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_RESUMED, &r.base,
				    NULL, 0);
	else if (ret == MIG_FAULT_DROP)
		ret = 0;
	if (ret)
		hv_warn("mig", "op=resumed_report err=%d", ret);
	pthread_mutex_lock(&d->prog.lock);
	d->prog.p.downtime.dst_verify_ns = d->verify_ns;
	d->prog.p.downtime.dst_load_ns = d->load_ns;
	d->prog.p.downtime.dst_resume_ns = t1 - t0;
	pthread_mutex_unlock(&d->prog.lock);
	return 0;
}

/*
 * Loaded and acknowledged: the Commit follows the Ack at once unless it
 * or the Ack was lost. Give up after half the I/O timeout, before the
 * source's wait for Resumed ends, so that our Abort (sent by dst_thread
 * on a connection still healthy) settles the migration on the source.
 * Past this point a late Commit is never read.
 */
int mig__dst_wait_commit(struct mig_dest *d)
{
	unsigned ms = HV_MAX(d->io_ms / 2, 1u);
	int ret;

	if (d->commit_state != DST_LOADED)
		return 0;
	ret = mig_conn_wait_recv(d->ctl, ms);
	if (ret == -ETIMEDOUT) {
		d->commit_state = DST_GAVE_UP;
		FAIL(d, ret, "no commit within %u ms of the ack: the VM is "
			     "discarded here and never resumed",
		     ms);
	}
	return ret;
}
