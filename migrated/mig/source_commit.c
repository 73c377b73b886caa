// SPDX-License-Identifier: MIT
/*
 * mig_source, the commit handshake's source side (session.h, the diagram
 * in docs/architecture.md): Commit, the destination's answer, and what
 * each answer makes of our paused copy -- stopped and verified
 * (COMPLETED), resumed (rollback, FAILED) or kept paused and intact
 * (UNRESOLVED) until mig_source_resolve().
 *
 * The rule: our copy is given up only on the destination's word. Resumed
 * says it runs there; Abort or Cancel say it does not and never will (the
 * destination decides once, dest.c); anything else after the Commit went
 * out -- silence, a broken channel, an unexpected frame -- says nothing,
 * and guessing either way may lose the VM or run it twice.
 */
#include <errno.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/source_priv.h"

int mig__src_commit(struct mig_source *s, struct mig_downtime *dt,
	       uint64_t hb_src)
{
	Mig__Commit c = MIG__COMMIT__INIT;
	ProtobufCMessage *m = NULL;
	uint64_t t0 = mig__now_ns(), t1;
	int ret;

	ret = mig_faultpoint(MIG_FP_SRC_ACKED);
	if (ret < 0)
		FAIL(s, ret, "fault point %s", MIG_FP_SRC_ACKED);
	if (s->hooks.src_acked)
		s->hooks.src_acked(s->hooks.arg, s->vm);
	pthread_mutex_lock(&s->lock);
	if (atomic_load(&s->cancel)) {
		pthread_mutex_unlock(&s->lock);
		FAIL(s, -ECANCELED, "cancelled before commit");
	}
	s->committed = true;
	c.keep_paused = s->user_paused;
	pthread_mutex_unlock(&s->lock);
	c.downtime_us = (dt->pause_ns + dt->final_harvest_ns +
			 dt->final_send_ns + dt->state_ns + dt->digest_ns +
			 dt->load_ns) / 1000;
	ret = mig_faultpoint(MIG_FP_SRC_COMMIT_SEND);
	if (ret == 0)
		ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_COMMIT, &c.base,
				    NULL, 0);
	else if (ret == MIG_FAULT_DROP)
		ret = 0;
	if (ret) {
		/* Not written whole: the destination cannot resume; we may. */
		pthread_mutex_lock(&s->lock);
		s->committed = false;
		pthread_mutex_unlock(&s->lock);
		FAIL(s, ret, "send commit: %s", strerror(-ret));
	}
	/*
	 * Our VM stays paused until the destination reports. Resumed: it
	 * runs there. Abort or Cancel: it gave up before starting the VM and
	 * never starts it later (dest.c decides once), so ours may run
	 * again. Silence, a broken channel or anything else: we cannot tell,
	 * and guessing either way may lose the VM or run it twice.
	 */
	ret = mig_faultpoint(MIG_FP_SRC_COMMITTED);
	if (ret == 0)
		ret = mig__src_ctl_expect(s, MIG__MSG_TYPE__MSG_RESUMED, &m,
				     "waiting for resume report");
	t1 = mig__now_ns();
	if (ret == -ECONNABORTED ||
	    (ret == -ECANCELED && !atomic_load(&s->cancel))) {
		pthread_mutex_lock(&s->lock);
		s->committed = false;
		pthread_mutex_unlock(&s->lock);
		return ret;
	}
	pthread_mutex_lock(&s->prog.lock);
	dt->resume_ns = t1 - t0;
	if (!ret) {
		Mig__Resumed *r = (Mig__Resumed *)m;

		dt->resume_ns -= HV_MIN(r->heartbeat_wait_ns, t1 - t0);
		dt->dst_verify_ns = r->verify_ns;
		dt->dst_load_ns = r->load_ns;
		dt->dst_resume_ns = r->resume_ns;
		if (r->first_heartbeat_realtime_ns && hb_src &&
		    r->first_heartbeat_realtime_ns > hb_src)
			s->prog.p.guest_downtime_ns =
				r->first_heartbeat_realtime_ns - hb_src;
	}
	dt->total_ns = dt->pause_ns + dt->final_harvest_ns +
		       dt->final_send_ns + dt->state_ns + dt->digest_ns +
		       dt->load_ns + dt->resume_ns;
	s->prog.p.downtime = *dt;
	s->prog.p.throttle_pct = 0;
	pthread_mutex_unlock(&s->prog.lock);
	mig_frame_msg_free(m);
	if (!ret)
		return 0;
	s->cause = ret < 0 ? ret : -EIO;
	return SRC_UNRESOLVED;
}

void mig__src_stop_logging(struct mig_source *s)
{
	int r;

	if (!s->logging)
		return;
	r = hv_vm_dirty_log_stop(s->vm);
	if (r) {
		hv_err("mig", "op=dirty_log_stop vm=%s err=%d",
		       hv_vm_name(s->vm), r);
		mig__prog_note(&s->prog, "dirty logging not stopped: %s",
			       strerror(-r));
	}
	s->logging = false;
}

/* Everything back as it was before the migration: the VM running, or
 * paused if its operator paused it. */
void mig__src_rollback(struct mig_source *s, int err)
{
	char esc[HV_LOG_ESCAPE_LEN(sizeof(s->prog.p.message))];
	struct mig_progress p;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	s->switching = false; /* the operator's again */
	if (s->paused && !s->user_paused) {
		hv_info("mig", "op=vm_running vm=%s why=rollback",
			hv_vm_name(s->vm));
		r = hv_vm_resume(s->vm);
		if (!r)
			s->paused = false;
	}
	pthread_mutex_unlock(&s->lock);
	if (r) {
		/* Paused and intact is still better than lost: say so, and
		 * leave it to the operator. */
		hv_err("mig", "op=rollback what=resume vm=%s err=%d",
		       hv_vm_name(s->vm), r);
		mig__prog_note(&s->prog,
			       "the source VM could not be resumed (%s): it "
			       "is paused",
			       strerror(-r));
	}
	r = mig_throttle_restore(&s->thr);
	if (r) {
		hv_err("mig", "op=rollback what=unthrottle vm=%s err=%d",
		       hv_vm_name(s->vm), r);
		mig__prog_note(&s->prog, "throttle not removed: %s",
			       strerror(-r));
	}
	mig__src_stop_logging(s);
	mig__prog_get(&s->prog, &p);
	mig__send_abort(s->ctl, err, p.message);
	hv_log(err == -ECANCELED ? HV_LOG_INFO : HV_LOG_ERR, "mig",
	       "op=migrate_out vm=%s err=%d phase=%s msg=\"%s\"",
	       hv_vm_name(s->vm), err, mig_phase_name(p.phase),
	       hv_log_escape(p.message, esc, sizeof(esc)));
}

/*
 * The VM is stopped and its memory frozen: check every page against what
 * the destination acknowledged. 0, or -EBADE (a mismatch, in the
 * progress as an error of a COMPLETED migration).
 */
int mig__src_complete(struct mig_source *s)
{
	struct mig_progress p;
	int r;

	r = hv_vm_stop(s->vm);
	if (r)
		hv_warn("mig", "op=stop vm=%s err=%d", hv_vm_name(s->vm), r);
	s->paused = false;
	r = mig__src_verify(s);
	mig__prog_get(&s->prog, &p);
	if (r) {
		/* Not run: no verdict either way, but it must not look like
		 * a clean verification. */
		mig__prog_set(&s->prog, MIG_PHASE_COMPLETED, r,
			      "post-commit verification not run: %s",
			      strerror(-r));
		return 0;
	}
	if (p.verify_mismatches) {
		mig__prog_set(&s->prog, MIG_PHASE_COMPLETED, -EBADE,
			      "post-commit verification: %llu of %llu pages "
			      "differ from the memory the destination "
			      "acknowledged",
			      (unsigned long long)p.verify_mismatches,
			      (unsigned long long)p.verify_pages);
		return -EBADE;
	}
	mig__prog_set(&s->prog, MIG_PHASE_COMPLETED, 0, "%s", "");
	return 0;
}

int mig_source_resolve(struct mig_source *s, enum mig_resolve how,
		       struct mig_progress *final)
{
	int ret;

	if (how != MIG_RESOLVE_RESUME_SOURCE &&
	    how != MIG_RESOLVE_CONFIRM_DESTINATION)
		return -EINVAL;
	if (!s->joined || !s->unresolved)
		return -EALREADY;
	if (how == MIG_RESOLVE_RESUME_SOURCE) {
		/* A VM its operator paused stays paused. */
		if (!s->user_paused)
			hv_info("mig", "op=vm_running vm=%s why=resume_source",
				hv_vm_name(s->vm));
		ret = s->user_paused ? 0 : hv_vm_resume(s->vm);
		if (ret) {
			hv_err("mig",
			       "op=resolve vm=%s how=resume_source "
			       "err=%d",
			       hv_vm_name(s->vm), ret);
			return ret;
		}
		s->paused = false;
		mig__prog_set(&s->prog, MIG_PHASE_FAILED, s->cause,
			      "commit unresolved (%s); resolved: the VM was "
			      "resumed on the source",
			      strerror(-s->cause));
		s->result = s->cause;
	} else {
		ret = mig__src_complete(s);
		if (!ret)
			mig__prog_note(&s->prog, "%s",
				       "commit unresolved; resolved: the "
				       "destination runs the VM");
		s->result = ret;
	}
	hv_info("mig", "op=resolve vm=%s how=%s result=%d", hv_vm_name(s->vm),
		how == MIG_RESOLVE_RESUME_SOURCE ? "resume_source"
						 : "confirm_destination",
		s->result);
	s->unresolved = false;
	mig_memmap_destroy(s->map);
	s->map = NULL;
	mig__src_dirty_fini(s);
	if (final)
		mig__prog_get(&s->prog, final);
	return ret;
}
