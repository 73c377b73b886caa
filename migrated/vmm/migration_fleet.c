// SPDX-License-Identifier: MIT
/*
 * migd_mig_fleet_*: a migration's side of the fleet (migration.h), in the
 * worker that runs the engine: the ownership record read before the
 * switchover and the commit's transactions on it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "hvcore/log.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/fleet/fleet.h"

#define COMP "migd.mig"

/* How long the source keeps asking etcd to settle an UNRESOLVED commit:
 * past any leader election, shorter than an operator's patience. */
#define MIGD_FLEET_SETTLE_S 30ull

/*
 * Both sides compare the ownership record as it was before the switchover:
 *   source  read (self, G) when the migration started;
 *   dest    read (src, G) in setup;
 *   dest    at Commit: if (src, G) then (dest, G + 1)   -> start the VM
 *   source  UNRESOLVED: if (self, G) then (self, G + 1) -> resume ours
 *                       else owned by another           -> drop ours
 * etcd applies one of the two transactions first; the other's compare
 * then fails, so at most one copy ever runs, whatever message was lost
 * and whichever side died.
 */
/*
 * The transaction (@from, G) -> (self, G + 1), G the generation read when
 * the migration started, until its outcome is known:
 *   0        it took effect: the VM is this host's. A transaction whose
 *            answer was lost and that is tried again finds (self, G + 1)
 *            and counts as taken: trying again is safe.
 *   -ESTALE  another owner or generation won; @now holds it.
 *   -EAGAIN  etcd could not answer (no leader while one is elected, a
 *            member down, a partition) for MIGD_FLEET_SETTLE_S, or a
 *            cancel came: the outcome is still open.
 */
static int move_until_known(struct migd_mig *m, const char *name,
			    const char *from, struct migd_fleet_owner *now,
			    char *why, size_t why_len)
{
	struct migd_fleet *f = m->d->fleet_keys;
	const char *self = migd_fleet_host_id(f);
	uint64_t gen = m->fleet_own.generation, start = uv_hrtime();
	unsigned tries = 0, delay_ms = 100;
	int ret;

	for (;;) {
		tries++;
		memset(now, 0, sizeof(*now));
		ret = migd_fleet_vm_move(f, name, from, gen, now, why,
					 why_len);
		if (ret == -ESTALE && now->owner[0])
			return !strcmp(now->owner, self) &&
					       now->generation == gen + 1
				       ? 0
				       : -ESTALE;
		if (!ret)
			return 0;
		if (atomic_load(&m->settle_stop) ||
		    uv_hrtime() - start >= MIGD_FLEET_SETTLE_S * 1000000000ull)
			return -EAGAIN;
		hv_warn(COMP, "event=fleet_txn_retry mig=%llu vm=%s try=%u "
			"err=\"%s\"", (unsigned long long)m->id, name, tries,
			why);
		usleep(delay_ms * 1000u);
		if (delay_ms < 1000)
			delay_ms *= 2;
	}
}

int migd_mig_fleet_incoming(struct migd_mig *m, const char *name,
				char *why, size_t why_len)
{
	struct migd_fleet *f = m->d->fleet_keys;
	bool found;
	int ret;

	if (!f)
		return 0;
	if (!*name) {
		snprintf(why, why_len, "in a fleet the source must offer the "
			 "VM's name (its ownership key)");
		return -EINVAL;
	}
	ret = migd_fleet_vm_get(f, name, &found, &m->fleet_own, why,
				why_len);
	if (!ret && !found) {
		snprintf(why, why_len, "VM '%s' has no ownership record in "
			 "the fleet", name);
		ret = -ENOENT;
	} else if (!ret && !strcmp(m->fleet_own.owner,
				   migd_fleet_host_id(f))) {
		snprintf(why, why_len, "VM '%s' is owned by this host "
			 "already", name);
		ret = -EEXIST;
	}
	m->fleet_on = !ret;
	return ret;
}

int migd_mig_fleet_commit(void *arg, const char *name, char *why,
			   size_t why_len)
{
	struct migd_mig *m = arg;
	struct migd_fleet_owner now;
	int ret;

	if (!m->fleet_on)
		return 0;
	ret = move_until_known(m, name, m->fleet_own.owner, &now, why,
			       why_len);
	hv_log(ret ? HV_LOG_ERR : HV_LOG_INFO, COMP,
	       "event=fleet_commit mig=%llu vm=%s from=%s generation=%llu "
	       "err=%d", (unsigned long long)m->id, name, m->fleet_own.owner,
	       (unsigned long long)m->fleet_own.generation + !ret, ret);
	return ret;
}

/* Source, loop thread, before the engine starts: the VM must be ours. */
int migd_mig_fleet_outgoing(struct migd_mig *m, char *err,
				size_t err_size)
{
	struct migd_fleet *f = m->d->fleet_keys;
	bool found;
	int ret;

	if (!f)
		return 0;
	ret = migd_fleet_vm_get(f, m->vm, &found, &m->fleet_own, err,
				err_size);
	if (ret)
		return ret;
	if (!found || strcmp(m->fleet_own.owner, migd_fleet_host_id(f))) {
		snprintf(err, err_size, "VM '%s' is not owned by this host in "
			 "the fleet (owner '%s')", m->vm,
			 found ? m->fleet_own.owner : "none");
		return -EPERM;
	}
	m->fleet_on = true;
	return 0;
}

/*
 * Source, waiter thread, the engine said UNRESOLVED: settle it by the
 * record. Our transaction either keeps the VM (and fences out a
 * destination whose own one is still on its way) or finds it moved.
 * etcd that cannot answer in MIGD_FLEET_SETTLE_S (or a cancel): it stays
 * UNRESOLVED, as without a fleet, for the operator's `migration resolve`.
 */
int migd_mig_fleet_settle(struct migd_mig *m, struct mig_progress *final)
{
	struct migd_fleet *f = m->d->fleet_keys;
	const char *self = migd_fleet_host_id(f);
	struct migd_fleet_owner now;
	enum mig_resolve how;
	struct mig_progress p;
	char why[512] = "";
	int ret;

	ret = move_until_known(m, m->vm, self, &now, why, sizeof(why));
	if (!ret)
		how = MIG_RESOLVE_RESUME_SOURCE;
	else if (ret == -ESTALE && strcmp(now.owner, self))
		how = MIG_RESOLVE_CONFIRM_DESTINATION;
	else {
		/* etcd silent, or ours at a generation nobody here wrote:
		 * not this side's to decide. */
		hv_err(COMP, "event=fleet_settle mig=%llu vm=%s result="
		       "unresolved err=\"%s\"", (unsigned long long)m->id,
		       m->vm, why);
		return -EINPROGRESS;
	}
	ret = mig_source_resolve(m->src, how, &p);
	hv_log(ret && ret != -EBADE ? HV_LOG_ERR : HV_LOG_INFO, COMP,
	       "event=fleet_settle mig=%llu vm=%s how=%s owner=%s err=%d",
	       (unsigned long long)m->id, m->vm,
	       how == MIG_RESOLVE_RESUME_SOURCE ? "resume_source"
						: "confirm_destination",
	       how == MIG_RESOLVE_RESUME_SOURCE ? self : now.owner, ret);
	if (ret && ret != -EBADE)
		return -EINPROGRESS;
	*final = p;
	return ret ? ret : p.error;
}
