// SPDX-License-Identifier: MIT
/*
 * mig_source: the sending side of a precopy migration (session.h).
 *
 * One engine thread runs setup -> iterations -> switchover -> commit
 * (the connection and setup are in source_setup.c; the commit, rollback
 * and resolve in source_commit.c).
 * Until the destination's Ack has been accepted (s->committed, under
 * s->lock) every failure goes through rollback(): vCPUs resumed if we
 * paused them, throttle removed, dirty logging stopped, the peer told
 * (Abort or Cancel) when the control channel still works. After the
 * Commit went out, the VM is the destination's: the source never resumes
 * it again.
 *
 * Cancel timeline (any thread):
 *   cancel:  cancel = true; lock; if !committed: shutdown data channels,
 *            and the control channel if the engine is blocked reading it
 *   engine:  page source returns -ECANCELED / I/O returns -ECANCELED ->
 *            rollback; or, holding the lock after the Ack arrived, sees
 *            cancel and rolls back instead of committing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "hvcore/vcpu.h"
#include "migrated/mig/converge.h"
#include "migrated/mig/delta.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/source_priv.h"

/* A pass shorter than this (and smaller than 16 MiB) says more about
 * latency than bandwidth: its measurement is not used. */
#define SRC_BW_MIN_NS 20000000ull
#define SRC_BW_MIN_PAGES 4096u
#define VMSTATE_FORMAT 1u
/* How long a failed source waits for the destination's reason. */
#define SRC_PEER_REASON_MS 1000u

static void set_rates(struct mig_source *s, uint32_t iter, uint64_t bw_wire,
		      uint64_t dirty_rate, double exp_ms)
{
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.iteration = iter;
	s->prog.p.bandwidth = bw_wire;
	s->prog.p.dirty_rate = dirty_rate;
	s->prog.p.expected_downtime_ns =
		exp_ms >= 0 ? (uint64_t)(exp_ms * 1e6) : 0;
	s->prog.p.throttle_pct = mig_throttle_max(&s->thr);
	pthread_mutex_unlock(&s->prog.lock);
}

/* Iterate until mig_converge() says the rest fits the downtime. */
static int iterate(struct mig_source *s, uint32_t *iter_out)
{
	double bw_pages = 0;
	uint64_t bw_wire = 0, t_h;
	uint32_t iter = 0;
	int64_t n;
	int ret;

	mig__prog_phase(&s->prog, MIG_PHASE_ITERATE);
	n = mig__src_harvest(s); /* initially set: every page */
	if (n < 0)
		FAIL(s, (int)n, "harvest: %s", strerror((int)-n));
	/* Never-written pages are zeros on both sides: not read, not sent
	 * (the destination's memory starts as holes too, see dest.c). */
	ret = mig__src_skip_holes(s);
	if (ret)
		FAIL(s, ret, "memory holes: %s", strerror(-ret));
	mig_eta_init(&s->eta, s->pending << HV_PAGE_SHIFT);
	t_h = mig__now_ns();
	for (;;) {
		struct mig_pipe_stats a, b;
		struct mig_conv_in in = { 0 };
		struct mig_conv_out out;
		uint64_t t_s, t_e, sent, dirty_rate;

		ret = mig_faultpoint(MIG_FP_SRC_ITER);
		if (ret < 0)
			FAIL(s, ret, "fault point %s (iteration %u)",
			     MIG_FP_SRC_ITER, iter);
		mig_send_pipe_stats(s->pipe, &a);
		t_s = mig__now_ns();
		ret = mig__src_send_pass(s, iter);
		if (ret) {
			if (ret == -ECANCELED && atomic_load(&s->cancel))
				FAIL(s, ret, "cancelled in iteration %u", iter);
			if (ret == -ETIMEDOUT && s->deadline &&
			    mig__now_ns() > s->deadline)
				FAIL(s, ret,
				     "could not converge within %u ms "
				     "(iteration %u, throttle %u%%): the VM "
				     "runs on the source; " SRC_TIMEOUT_NEXT,
				     s->opts.timeout_ms, iter,
				     mig_throttle_max(&s->thr));
			FAIL(s, ret, "iteration %u: %s", iter, strerror(-ret));
		}
		/* The rate the source moves pages at is the whole pass's,
		 * hashing included (the channels hash each page as they send
		 * it, pipeline.h): the final pass pays it inside the
		 * downtime, and a guest that re-dirties its region faster
		 * than that never converges without a throttle. */
		t_e = mig__now_ns();
		mig_send_pipe_stats(s->pipe, &b);
		sent = b.pages - a.pages;
		if (bw_pages <= 0 || t_e - t_s >= SRC_BW_MIN_NS ||
		    sent >= SRC_BW_MIN_PAGES) {
			double dt = (double)HV_MAX(t_e - t_s, 1000u) / 1e9;

			bw_pages = (double)(sent << HV_PAGE_SHIFT) / dt;
			bw_wire = (uint64_t)((double)(b.wire - a.wire) / dt);
		}
		n = mig__src_harvest(s);
		if (n < 0)
			FAIL(s, (int)n, "harvest: %s", strerror((int)-n));
		dirty_rate = (uint64_t)((double)((uint64_t)n << HV_PAGE_SHIFT) *
					1e9 / (double)HV_MAX(mig__now_ns() - t_h, 1u));
		t_h = mig__now_ns();
		mig_throttle_sample(&s->thr);
		iter++;
		s->bw_pages = bw_pages;
		s->dirty_rate = dirty_rate;

		in.remaining_bytes = s->pending << HV_PAGE_SHIFT;
		/* Page bytes per second, the unit of remaining_bytes; the
		 * wire cap is already in it through pacing. */
		in.bandwidth = bw_pages;
		in.dirty_rate = (double)dirty_rate;
		in.downtime_ms = atomic_load(&s->downtime_ms);
		in.iteration = iter;
		in.max_iterations = s->opts.max_iterations;
		in.throttle_pct = mig_throttle_max(&s->thr);
		out = mig_converge(&in);
		set_rates(s, iter, bw_wire, dirty_rate,
			  out.expected_downtime_ms);
		mig__src_prog_counters(s);
		mig__prog_emit(&s->prog, false);
		hv_dbg("mig", "op=iterate iter=%u sent=%llu pending=%llu "
			      "bw=%.0f dirty=%llu action=%s",
		       iter, (unsigned long long)sent,
		       (unsigned long long)s->pending, bw_pages,
		       (unsigned long long)dirty_rate,
		       mig_conv_action_name(out.action));
		ret = mig__src_policy_after_pass(s, &in, &out, iter);
		if (ret < 0)
			return ret;
		if (ret)
			break;
		if (out.action == MIG_CONV_THROTTLE) {
			uint32_t cap = mig__src_throttle_cap(s);
			uint32_t pct = HV_MIN(out.throttle_pct, cap);

			if (pct > in.throttle_pct) {
				ret = mig_throttle_apply(&s->thr, pct);
				if (ret)
					FAIL(s, ret, "throttle: %s",
					     strerror(-ret));
				hv_info("mig", "op=throttle iter=%u pct=%u",
					iter, pct);
			}
		}
	}
	*iter_out = iter;
	return 0;
}

/* The last heartbeat any vCPU sent before it parked. */
uint64_t mig__src_last_heartbeat(struct hv_vm *vm)
{
	uint64_t last = 0;

	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct hv_vcpu_stats st;

		if (!hv_vm_vcpu_stats(vm, i, &st))
			last = HV_MAX(last, st.last_heartbeat_ns);
	}
	return last;
}

/* The paused VM's state on the control channel (switchover, and the
 * postcopy switch). */
int mig__src_send_vm_state(struct mig_source *s)
{
	Mig__VmStateEnvelope env = MIG__VM_STATE_ENVELOPE__INIT;
	struct hv_blob blob = { 0 };
	int ret;

	/* A test hook runs inside the downtime and is counted in state_ns:
	 * the guest waits for it too. */
	if (s->hooks.src_switchover)
		s->hooks.src_switchover(s->hooks.arg, s->vm);
	ret = hv_vm_state_save(s->vm, &blob);
	if (ret)
		FAIL(s, ret, "save VM state: %s", strerror(-ret));
	env.format = VMSTATE_FORMAT;
	env.state.data = blob.data;
	env.state.len = blob.len;
	ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_VM_STATE, &env.base,
			    NULL, 0);
	s->ctl_bytes += mig_frame_size(&env.base);
	free(blob.data);
	if (ret)
		FAIL(s, ret, "send VM state: %s", strerror(-ret));
	return 0;
}

/* Pause, send the rest, the state and the digest; wait for the Ack. */
static int switchover(struct mig_source *s, uint32_t iter,
		      struct mig_downtime *dt, uint64_t *hb_src)
{
	Mig__Switchover so = MIG__SWITCHOVER__INIT;
	Mig__Digest dg = MIG__DIGEST__INIT;
	uint8_t digest[MIG_DIGEST_LEN];
	ProtobufCMessage *m;
	uint64_t t[8], pages = 0;
	int64_t n;
	int ret;

	mig__prog_phase(&s->prog, MIG_PHASE_SWITCHOVER);
	ret = mig_faultpoint(MIG_FP_SRC_SWITCHOVER);
	if (ret < 0)
		FAIL(s, ret, "fault point %s", MIG_FP_SRC_SWITCHOVER);
	t[0] = mig__now_ns();
	ret = mig__src_pause(s);
	if (ret)
		FAIL(s, ret, "pause: %s", strerror(-ret));
	t[1] = mig__now_ns();
	/* Where the VM runs, for the logs' timeline: not here any more
	 * (logged once it is true). */
	hv_info("mig", "op=vm_stopped vm=%s why=switchover",
		hv_vm_name(s->vm));
	/* The last heartbeat any vCPU sent before it parked. */
	*hb_src = mig__mono_to_real(mig__src_last_heartbeat(s->vm));
	/* The destination must not inherit our throttle: restore it now,
	 * while paused; the params page is dirty and goes in the final pass. */
	ret = mig_throttle_restore(&s->thr);
	if (ret)
		FAIL(s, ret, "unthrottle: %s", strerror(-ret));
	n = mig__src_harvest(s);
	if (n < 0)
		FAIL(s, (int)n, "final harvest: %s", strerror((int)-n));
	so.iteration = iter;
	so.remaining_pages = s->pending;
	ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_SWITCHOVER, &so.base,
			    NULL, 0);
	if (ret)
		FAIL(s, ret, "send switchover: %s", strerror(-ret));
	t[2] = mig__now_ns();
	do {
		ret = mig__src_send_pass(s, iter);
	} while (!ret && s->pending);
	if (!ret)
		ret = mig_send_pipe_finish(s->pipe);
	if (ret)
		FAIL(s, ret, "final pass: %s", strerror(-ret));
	t[3] = mig__now_ns();
	ret = mig__src_send_vm_state(s);
	if (ret)
		return ret;
	t[4] = mig__now_ns();
	/* The table already holds every page as sent: only its own 8 bytes
	 * per page are hashed inside the downtime. */
	pages = s->table_pages;
	ret = mig_digest_table_rel(s->map, s->table, mig_zero_page_hash(),
				   digest);
	if (ret)
		FAIL(s, ret, "digest: %s", strerror(-ret));
	dg.algo = MIG__DIGEST_ALGO__DIGEST_PAGE64_SHA256;
	dg.digest.data = digest;
	dg.digest.len = sizeof(digest);
	dg.pages = pages;
	ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_DIGEST, &dg.base, NULL,
			    0);
	if (ret)
		FAIL(s, ret, "send digest: %s", strerror(-ret));
	t[5] = mig__now_ns();
	mig__prog_phase(&s->prog, MIG_PHASE_COMMIT);
	ret = mig__src_ctl_expect(s, MIG__MSG_TYPE__MSG_ACK, &m, "waiting for ack");
	if (ret)
		return ret;
	if (((Mig__Ack *)m)->pages != pages) {
		uint64_t acked = ((Mig__Ack *)m)->pages;

		mig_frame_msg_free(m);
		FAIL(s, -EPROTO, "ack for %llu pages, sent %llu",
		     (unsigned long long)acked, (unsigned long long)pages);
	}
	mig_frame_msg_free(m);
	t[6] = mig__now_ns();
	dt->pause_ns = t[1] - t[0];
	dt->final_harvest_ns = t[2] - t[1];
	dt->final_send_ns = t[3] - t[2];
	dt->state_ns = t[4] - t[3];
	dt->digest_ns = t[5] - t[4];
	dt->load_ns = t[6] - t[5];
	return 0;
}

/*
 * A channel closed under us: if the destination cancelled or aborted, its
 * Cancel or Abort is on the control channel, and that is the cause the
 * user must read, not "Broken pipe".
 */
static int src_peer_reason(struct mig_source *s, int ret)
{
	char why[160];
	int pr;

	if (atomic_load(&s->cancel) || !s->ctl || mig_conn_error(s->ctl) ||
	    !(ret == -EPIPE || ret == -ECONNRESET || ret == -EPROTO))
		return ret;
	pr = mig_peer_reason(s->ctl, SRC_PEER_REASON_MS, why, sizeof(why));
	if (!pr)
		return ret;
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.error = pr;
	s->prog.p.phase = pr == -ECANCELED ? MIG_PHASE_CANCELLED
					   : MIG_PHASE_FAILED;
	if (pr == -ECANCELED)
		snprintf(s->prog.p.message, sizeof(s->prog.p.message),
			 SRC_DEST_CANCELLED);
	else
		snprintf(s->prog.p.message, sizeof(s->prog.p.message),
			 "destination aborted: %.160s", why);
	pthread_mutex_unlock(&s->prog.lock);
	return pr;
}

static void *src_thread(void *arg)
{
	struct mig_source *s = arg;
	struct mig_downtime dt = { 0 };
	uint64_t hb_src = 0;
	uint32_t iter = 0;
	int ret;

	ret = mig__src_connect_channels(s);
	if (!ret)
		ret = mig__src_setup(s);
	if (!ret)
		ret = iterate(s, &iter);
	if (!ret && s->pc_go)
		ret = mig__src_pc_switch(s, iter, &dt, &hb_src);
	else if (!ret)
		ret = switchover(s, iter, &dt, &hb_src);
	if (!ret)
		ret = mig__src_commit(s, &dt, hb_src);
	if (!ret && s->pc_switched)
		ret = mig__src_pc_run(s);
	if (ret && ret != SRC_UNRESOLVED && atomic_load(&s->cancel) &&
	    !s->committed) {
		/* Whatever broke, the operator's cancel is the cause. */
		pthread_mutex_lock(&s->prog.lock);
		s->prog.p.error = -ECANCELED;
		s->prog.p.phase = MIG_PHASE_CANCELLED;
		pthread_mutex_unlock(&s->prog.lock);
		ret = -ECANCELED;
	}
	if (ret && !s->committed)
		ret = src_peer_reason(s, ret);
	mig_send_pipe_destroy(s->pipe);
	s->pipe = NULL;
	if (s->delta)
		hv_info("mig",
			"op=delta_cache vm=%s pages_cached=%llu "
			"pages_delta=%llu",
			hv_vm_name(s->vm),
			(unsigned long long)mig_delta_cache_pages(s->delta),
			(unsigned long long)s->prog.p.pages_delta);
	mig_delta_cache_destroy(s->delta);
	s->delta = NULL;
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.elapsed_ns = mig__now_ns() - s->t0;
	pthread_mutex_unlock(&s->prog.lock);
	if (ret && ret != SRC_UNRESOLVED && s->pc_switched && s->committed) {
		struct mig_progress p;

		/*
		 * Postcopy broke after the VM moved: it runs (or waits on
		 * faults) on the destination with part of its memory, the
		 * rest is only here. Neither copy may go: keep ours paused
		 * and frozen, never resume it. Recovery (source_recover.c)
		 * was given up, or cannot help (a wrong digest).
		 */
		s->unresolved = true;
		s->cause = ret;
		mig__prog_get(&s->prog, &p);
		if (ret == -EBADE)
			mig__prog_set(&s->prog, MIG_PHASE_FAILED, ret,
				      "postcopy: every page is on the "
				      "destination, but its memory digest "
				      "differs from this host's frozen copy: "
				      "the destination runs the VM with memory "
				      "that is not the source's; this copy is "
				      "kept paused");
		else
			mig__prog_set(&s->prog, MIG_PHASE_FAILED, ret,
				      "postcopy interrupted (%.120s): the "
				      "destination holds the VM with part of "
				      "its memory, this host keeps the rest "
				      "paused; the VM cannot complete",
				      p.message[0] ? p.message
						   : strerror(-ret));
		hv_err("mig", "op=migrate_out vm=%s result=postcopy_broken "
			      "err=%d",
		       hv_vm_name(s->vm), ret);
	} else if (ret == SRC_UNRESOLVED) {
		struct mig_progress p;

		/* Paused, unthrottled since the switchover, not logging:
		 * exactly the memory the destination acknowledged. (Notes
		 * such as a failed log stop go after the verdict.) */
		s->unresolved = true;
		mig__prog_get(&s->prog, &p);
		mig__prog_set(&s->prog, MIG_PHASE_UNRESOLVED, s->cause,
			      "commit unresolved: no word from the destination "
			      "after the Commit (%.120s); the VM is paused "
			      "here: ask the destination whether it runs it, "
			      "then resolve",
			      p.message[0] ? p.message : strerror(-s->cause));
		mig__src_stop_logging(s);
		hv_err("mig", "op=migrate_out vm=%s result=unresolved err=%d",
		       hv_vm_name(s->vm), s->cause);
	} else if (ret) {
		mig__src_rollback(s, ret);
	} else {
		ret = mig__src_complete(s);
		mig__src_stop_logging(s);
		hv_log(ret ? HV_LOG_ERR : HV_LOG_INFO, "mig",
		       "op=migrate_out vm=%s result=completed err=%d "
		       "downtime_ms=%.1f guest_downtime_ms=%.1f",
		       hv_vm_name(s->vm), ret, (double)dt.total_ns / 1e6,
		       (double)s->prog.p.guest_downtime_ns / 1e6);
	}
	pthread_mutex_lock(&s->lock);
	mig_conn_destroy(s->ctl);
	s->ctl = NULL;
	for (unsigned i = 0; i < s->nchan; i++) {
		mig_conn_destroy(s->data[i]);
		s->data[i] = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (!s->unresolved) {
		mig_memmap_destroy(s->map);
		s->map = NULL;
		mig__src_dirty_fini(s);
	}
	mig__src_pc_fini(s);
	mig__src_prog_counters(s);
	pthread_mutex_lock(&s->prog.lock);
	mig__src_prog_estimate(s, mig__now_ns()); /* 100% when COMPLETED */
	pthread_mutex_unlock(&s->prog.lock);
	s->result = ret;
	mig__prog_emit(&s->prog, true);
	return NULL;
}

int mig_source_start(struct hv_vm *vm, const char *host, uint16_t port,
		     const struct mig_opts *opts, mig_progress_cb cb,
		     void *arg, struct mig_source **out)
{
	struct mig_source *s;
	int ret;

	if (!vm || !host || !out || strlen(host) >= sizeof(s->host))
		return -EINVAL;
	if (hv_vm_get_state(vm) != HV_VM_RUNNING &&
	    hv_vm_get_state(vm) != HV_VM_PAUSED)
		return -EBUSY;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* Paused by its operator: it stays so, here and there. */
	s->user_paused = hv_vm_get_state(vm) == HV_VM_PAUSED;
	s->paused = s->user_paused;
	ret = mig__opts_check(opts, &s->nchan, &s->io_ms);
	if (ret)
		goto fail;
	s->vm = vm;
	snprintf(s->host, sizeof(s->host), "%s", host);
	s->port = port;
	s->opts = *opts;
	if (opts->hooks)
		s->hooks = *opts->hooks;
	s->opts.hooks = NULL;
	s->opts.tls = NULL; /* only used here, not kept */
	/* Our own copy: the caller's string may go before the setup. */
	s->opts.vm_name = NULL;
	if (opts->vm_name && *opts->vm_name) {
		s->opts.vm_name = strdup(opts->vm_name);
		if (!s->opts.vm_name) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	atomic_store(&s->max_bw, opts->max_bandwidth);
	atomic_store(&s->downtime_ms, opts->downtime_ms);
	atomic_store(&s->throttle_max, opts->throttle_max_pct
					       ? opts->throttle_max_pct
					       : MIG_CONV_THROTTLE_MAX);
	ret = mig_session_id_new(s->sid);
	if (ret)
		goto fail;
	ret = mig__tls_make(opts, false, &s->tls);
	if (ret)
		goto fail;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->pc_cond, NULL);
	mig__prog_init(&s->prog, cb, arg);
	s->prog.p.ram_bytes = vm->cfg.mem_bytes;
	mig_uuid_format(s->sid, s->prog.p.uuid);
	s->t0 = mig__now_ns();
	s->pass_limit_ns = (uint64_t)s->io_ms * 1000000ull / 3;
	if (opts->timeout_ms)
		s->deadline = s->t0 + (uint64_t)opts->timeout_ms * 1000000ull;
	ret = -pthread_create(&s->thread, NULL, src_thread, s);
	if (ret) {
		mig__prog_fini(&s->prog);
		pthread_cond_destroy(&s->pc_cond);
		pthread_mutex_destroy(&s->lock);
		mig_tls_destroy(s->tls);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	free((char *)s->opts.vm_name);
	free(s);
	return ret;
}

int mig_source_cancel(struct mig_source *s)
{
	int ret = 0;

	if (mig__src_pc_give_up(s))
		return 0; /* a paused postcopy gives up recovering */
	pthread_mutex_lock(&s->lock);
	if (s->committed || atomic_load(&s->cancel)) {
		ret = -EALREADY;
	} else {
		atomic_store(&s->cancel, true);
		/* Wake an engine stuck in I/O; the page source and the
		 * commit decision see the flag otherwise. */
		for (unsigned i = 0; i < s->nchan; i++)
			if (s->data[i])
				mig_conn_shutdown(s->data[i]);
		if (s->ctl && s->ctl_blocked)
			mig_conn_interrupt(s->ctl);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int mig_source_postcopy(struct mig_source *s)
{
	struct mig_progress p;

	mig__prog_get(&s->prog, &p);
	if (p.phase != MIG_PHASE_SETUP && p.phase != MIG_PHASE_ITERATE)
		return -EALREADY;
	/* Known once the setup is done (engine thread, before ITERATE). */
	if (p.phase == MIG_PHASE_ITERATE && !atomic_load(&s->pc_offered))
		return -EOPNOTSUPP;
	atomic_store(&s->pc_request, true);
	return 0;
}

int mig__src_pause(struct mig_source *s)
{
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (!s->paused)
		ret = hv_vm_pause(s->vm);
	if (!ret)
		s->paused = s->switching = true;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int mig_source_vm_pause(struct mig_source *s, bool pause)
{
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (s->committed) {
		pthread_mutex_unlock(&s->lock);
		return -EALREADY;
	}
	if (pause == s->user_paused) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	/* Until the switchover the VM's run state is the operator's; from
	 * it on the engine holds it paused, and only the outcome changes:
	 * how the destination starts it, or whether a rollback resumes it. */
	if (!s->switching)
		ret = pause ? hv_vm_pause(s->vm) : hv_vm_resume(s->vm);
	if (!ret) {
		s->user_paused = pause;
		if (!s->switching)
			s->paused = pause;
	}
	pthread_mutex_unlock(&s->lock);
	hv_info("mig", "op=vm_%s vm=%s err=%d", pause ? "pause" : "resume",
		hv_vm_name(s->vm), ret);
	return ret;
}

int mig_source_tune(struct mig_source *s, const struct mig_tune *t)
{
	if (!t || t->throttle_max_pct > 99)
		return -EINVAL;
	if (t->max_bandwidth)
		atomic_store(&s->max_bw, t->max_bandwidth);
	if (t->downtime_ms)
		atomic_store(&s->downtime_ms, t->downtime_ms);
	if (t->throttle_max_pct)
		atomic_store(&s->throttle_max, t->throttle_max_pct);
	return 0;
}

void mig_source_get_progress(struct mig_source *s, struct mig_progress *p)
{
	mig__prog_get(&s->prog, p);
}

int mig_source_wait(struct mig_source *s, struct mig_progress *final)
{
	if (!s->joined) {
		pthread_join(s->thread, NULL);
		s->joined = true;
	}
	if (final)
		mig__prog_get(&s->prog, final);
	return s->result;
}

void mig_source_destroy(struct mig_source *s)
{
	if (!s)
		return;
	if (!s->joined) {
		mig_source_cancel(s);
		mig_source_wait(s, NULL);
	}
	/* Unresolved and never settled: the VM stays paused, the caller's. */
	mig_memmap_destroy(s->map);
	mig__src_dirty_fini(s);
	mig_tls_destroy(s->tls);
	mig__prog_fini(&s->prog);
	pthread_cond_destroy(&s->pc_cond);
	pthread_mutex_destroy(&s->lock);
	free((char *)s->opts.vm_name);
	free(s);
}
