// SPDX-License-Identifier: MIT
/*
 * migd_host: what the daemon learns from its workers' events, and its
 * migration records (host.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_priv.h"
#include "migrated/host/metrics.h"
#include "migrated/common/cfg.h"
#include "migrated/rpc/server.h"

#define COMP "migd.host"

/* ---- migration records ------------------------------------------------- */

struct migd_hmig *migd_hmig_find(struct migd_host *d, uint64_t id,
				 const char *vm)
{
	for (struct migd_hmig *m = d->sup->migs; m; m = m->next) {
		if (id && m->id == id)
			return m;
		if (!id && vm && *vm && m->info && m->info->vm &&
		    !strcmp(m->info->vm, vm))
			return m; /* newest first */
	}
	return NULL;
}

/* Keep at most MIGD_MIG_HISTORY finished records. */
static void trim(struct migd_host *d)
{
	unsigned kept = 0;

	for (struct migd_hmig **pp = &d->sup->migs; *pp;) {
		struct migd_hmig *m = *pp;

		if (m->finished && ++kept > MIGD_MIG_HISTORY) {
			*pp = m->next;
			if (m->info)
				migd__mig_info__free_unpacked(m->info, NULL);
			free(m);
			continue;
		}
		pp = &m->next;
	}
}

static void hmig_update(struct migd_hmig *m, const Migd__MigInfo *info)
{
	Migd__MigInfo *copy =
		migd_msg_dup(&info->base, &migd__mig_info__descriptor);

	if (!copy)
		return;
	if (m->info)
		migd__mig_info__free_unpacked(m->info, NULL);
	m->info = copy;
	/* An UNRESOLVED migration still waits for mig_resolve. */
	m->finished = info->finished &&
		      !(info->progress && info->progress->phase ==
				MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED);
}

struct migd_hmig *migd_hmig_add(struct migd_host *d, uint64_t id, uint64_t wid,
				const Migd__MigInfo *info)
{
	struct migd_hmig *m = migd_hmig_find(d, id, NULL);

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->id = id;
		m->next = d->sup->migs;
		d->sup->migs = m;
	}
	m->wid = wid;
	if (info)
		hmig_update(m, info);
	if (id > d->next_mig_id)
		d->next_mig_id = id;
	trim(d);
	return m;
}

uint64_t migd_host_next_mig_id(struct migd_host *d)
{
	char path[PATH_MAX + 16];
	FILE *f;
	uint64_t id = ++d->next_mig_id;

	/* Ids stay unique across daemon restarts, also of migrations whose
	 * worker is gone by then. */
	snprintf(path, sizeof(path), "%s/next_mig_id", d->cfg.state_dir);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%llu\n", (unsigned long long)id);
		fclose(f);
	}
	return id;
}

/* ---- VM info ----------------------------------------------------------- */

void migd__host_set_info(struct migd_worker *w, const Migd__VmInfo *info)
{
	Migd__VmInfo *copy =
		migd_msg_dup(&info->base, &migd__vm_info__descriptor);

	if (!copy)
		return;
	if (w->info)
		migd__vm_info__free_unpacked(w->info, NULL);
	w->info = copy;
	if (info->name && *info->name &&
	    (strcmp(w->name, info->name) || !w->has_vm)) {
		snprintf(w->name, sizeof(w->name), "%s", info->name);
		w->has_vm = true;
		migd__record_write(w); /* names the VM for a crash report */
	}
	w->has_vm = true;
}

void migd__host_info_fill(struct migd_worker *w, Migd__VmInfo *out)
{
	if (w->info)
		*out = *w->info; /* shallow: strings point into w->info */
	else
		migd__vm_info__init(out);
	out->name = w->name;
	out->worker_pid = (uint64_t)w->pid;
	out->worker_id = w->wid;
	if (w->crashed) {
		out->state = MIGD__VM_STATE__VM_STATE_CRASHED;
		out->exit_reason = w->exit_reason;
	}
	out->updates = w->updates;
}

void migd__host_vm_crashed(struct migd_worker *w)
{
	Migd__Event ev = MIGD__EVENT__INIT;
	Migd__VmStateEvent body = MIGD__VM_STATE_EVENT__INIT;
	Migd__VmInfo info;

	migd__host_info_fill(w, &info);
	body.vm = &info;
	body.old_state = w->info ? w->info->state
				 : MIGD__VM_STATE__VM_STATE_RUNNING;
	ev.kind = MIGD__EVENT_KIND__EVENT_KIND_VM_STATE;
	ev.body_case = MIGD__EVENT__BODY_VM_STATE;
	ev.vm_state = &body;
	migd_server_publish(&w->d->srv, &ev, w->name, 0, false);
	/* Migrations it ran and did not finish ended with it. */
	for (struct migd_hmig *m = w->d->sup->migs; m; m = m->next) {
		Migd__MigInfo was;
		Migd__MigProgress was_p;

		if (m->wid != w->wid || m->finished || !m->info ||
		    !m->info->progress)
			continue;
		was = *m->info;
		was_p = *m->info->progress;
		was.progress = &was_p;
		m->info->progress->phase = MIGD__MIG_PHASE__MIG_PHASE_FAILED;
		m->info->finished = true;
		m->finished = true;
		/* An empty string of an unpacked message is protobuf-c's
		 * static "" (protobuf_c_empty_string), not heap: a worker
		 * killed while its migration had no message crashed the
		 * daemon here. */
		if (m->info->progress->message != protobuf_c_empty_string)
			free(m->info->progress->message);
		m->info->progress->message = strdup(w->exit_reason);
		migd_metrics_mig_seen(w->d, &was, m->info);
	}
}

/* ---- events ------------------------------------------------------------ */

void migd__host_event(struct migd_worker *w, const Migd__Event *ev_in)
{
	struct migd_host *d = w->d;
	Migd__Event ev = *ev_in;
	const char *vm = w->name;
	uint64_t mig_id = 0;
	bool final = false;

	switch (ev.body_case) {
	case MIGD__EVENT__BODY_VM_STATE: {
		const Migd__VmStateEvent *b = ev.vm_state;

		if (!b->vm)
			break;
		if (w->retired)
			return; /* the new worker speaks for the VM now */
		if (w->update) {
			/* a new worker in an update: its VM is someone
			 * else's until the handover is done */
			Migd__VmInfo *c = migd_msg_dup(
				&b->vm->base, &migd__vm_info__descriptor);

			if (c) {
				if (w->info)
					migd__vm_info__free_unpacked(w->info,
								     NULL);
				w->info = c;
			}
			migd__host_update_ready(w);
			return;
		}
		migd__host_set_info(w, b->vm);
		if (b->destroyed)
			w->vm_gone = true;
		vm = w->name;
		break;
	}
	case MIGD__EVENT__BODY_MIGRATION: {
		const Migd__MigInfo *mi = ev.migration->migration;
		struct migd_hmig *m;

		if (!mi)
			break;
		mig_id = mi->id;
		m = migd_hmig_find(d, mi->id, NULL);
		migd_metrics_mig_seen(d, m ? m->info : NULL, mi);
		m = migd_hmig_add(d, mi->id, w->wid, mi);
		final = m && m->info && m->info->finished;
		if (mi->direction == MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING &&
		    mi->vm && *mi->vm && !w->name[0])
			snprintf(w->name, sizeof(w->name), "%s", mi->vm);
		vm = mi->vm;
		break;
	}
	case MIGD__EVENT__BODY_DIRTY_RATE: {
		Migd__DirtyRateSample *c;

		if (!ev.dirty_rate)
			break;
		vm = ev.dirty_rate->vm;
		c = migd_msg_dup(&ev.dirty_rate->base,
				 &migd__dirty_rate_sample__descriptor);
		if (c) {
			if (w->dr)
				migd__dirty_rate_sample__free_unpacked(w->dr,
								       NULL);
			w->dr = c;
		}
		break;
	}
	case MIGD__EVENT__BODY_END:
		return; /* of the daemon's own subscription at the worker */
	default:
		break;
	}
	migd_server_publish(&d->srv, &ev, vm, mig_id, final);
}
