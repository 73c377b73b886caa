// SPDX-License-Identifier: MIT
/*
 * migd_mig: what an operator does to a migration in flight (migration.h):
 * cancel, postcopy, pause/resume of its VM, forced switchover, recovery
 * and tuning. Each hands the request to the engine's source or destination
 * and logs it; the migration's life (start, settle, resolve) is
 * migration.c's.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/mig/session.h"

#define COMP "migd.mig"

#ifdef MIGD_HAVE_ENGINE

int migd_mig_cancel(struct migd_mig *m)
{
	if (m->finished)
		return -EALREADY;
	hv_info(COMP, "event=migration_cancel mig=%llu vm=%s",
		(unsigned long long)m->id, m->vm);
	atomic_store(&m->settle_stop, true);
	return m->src ? mig_source_cancel(m->src) : mig_dest_cancel(m->dst);
}

void migd_mig_arm_check(struct migd_vmm *d)
{
	uint64_t now = hv_now_ns();

	for (struct migd_mig *m = d->migs; m; m = m->next) {
		bool waiting;

		if (m->finished || !m->dst || !m->prm.arm_timeout_ms ||
		    m->cancel_why ||
		    now - m->armed_ns <
			    (uint64_t)m->prm.arm_timeout_ms * 1000000ull)
			continue;
		/* The source's uuid arrives with its hello: none yet, and
		 * still in setup, means nobody came. */
		pthread_mutex_lock(&m->lock);
		waiting = !m->latest.uuid[0] &&
			  m->latest.phase <= MIG_PHASE_SETUP;
		pthread_mutex_unlock(&m->lock);
		if (!waiting)
			continue;
		snprintf(m->arm_why, sizeof(m->arm_why),
			 "no source connected within %u s of arming "
			 "(migrate-recv --arm-timeout): disarmed, its port and "
			 "worker freed; arm it again when the source is ready",
			 (m->prm.arm_timeout_ms + 999) / 1000);
		m->cancel_why = m->arm_why;
		if (migd_mig_cancel(m) == 0)
			hv_warn(COMP,
				"event=migration_disarmed mig=%llu vm=%s "
				"arm_timeout_ms=%u",
				(unsigned long long)m->id, m->vm,
				m->prm.arm_timeout_ms);
	}
}

int migd_mig_postcopy(struct migd_mig *m)
{
	if (m->finished || !m->src)
		return m->finished ? -EALREADY : -EINVAL;
	hv_warn(COMP, "event=migration_postcopy mig=%llu vm=%s msg=\"until "
		      "every page is in place the VM is lost if the source or "
		      "destination process dies; a broken link pauses it "
		      "(mig_recover)\"",
		(unsigned long long)m->id, m->vm);
	return mig_source_postcopy(m->src);
}

int migd_mig_vm_pause(struct migd_mig *m, bool pause)
{
	int ret;

	if (m->finished || m->unresolved)
		return -EALREADY;
	if (!m->src)
		return -EINVAL;
	ret = mig_source_vm_pause(m->src, pause);
	hv_info(COMP, "event=migration_vm_%s mig=%llu uuid=%s vm=%s err=%d",
		pause ? "paused" : "resumed", (unsigned long long)m->id,
		m->uuid, m->vm, ret);
	return ret;
}

int migd_mig_switchover(struct migd_mig *m)
{
	if (m->finished || !m->src)
		return m->finished ? -EALREADY : -EINVAL;
	hv_info(COMP, "event=migration_switchover mig=%llu vm=%s msg=\"forced: "
		      "the VM pauses now whatever the downtime\"",
		(unsigned long long)m->id, m->vm);
	return mig_source_switchover(m->src);
}

int migd_mig_recover(struct migd_mig *m, const char *host, uint16_t port)
{
	int ret;

	if (m->finished || !m->src)
		return m->finished ? -EALREADY : -EINVAL;
	ret = mig_source_recover(m->src, host, port);
	hv_log(ret ? HV_LOG_WARN : HV_LOG_INFO, COMP,
	       "event=migration_recover mig=%llu vm=%s dest=%s:%u err=%d",
	       (unsigned long long)m->id, m->vm, host ? host : "(same)", port,
	       ret);
	return ret;
}

int migd_mig_tune(struct migd_mig *m, const struct mig_tune *t)
{
	if (m->finished)
		return -EALREADY;
	if (!m->src)
		return -EINVAL; /* only the source paces a migration */
	return mig_source_tune(m->src, t);
}

#else /* !MIGD_HAVE_ENGINE */

void migd_mig_arm_check(struct migd_vmm *d)
{
	(void)d;
}

int migd_mig_cancel(struct migd_mig *m)
{
	return -EALREADY;
}

int migd_mig_tune(struct migd_mig *m, const struct mig_tune *t)
{
	return -EALREADY;
}

int migd_mig_postcopy(struct migd_mig *m)
{
	(void)m;
	return -EALREADY;
}

int migd_mig_vm_pause(struct migd_mig *m, bool pause)
{
	(void)m;
	(void)pause;
	return -EALREADY;
}

int migd_mig_switchover(struct migd_mig *m)
{
	(void)m;
	return -EALREADY;
}

int migd_mig_recover(struct migd_mig *m, const char *host, uint16_t port)
{
	(void)m;
	(void)host;
	(void)port;
	return -EALREADY;
}

#endif
