// SPDX-License-Identifier: MIT
/*
 * Dirty-rate monitors of the daemon's VMs and their events (monitor.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/monitor.h"
#include "migrated/vmm/vm_info.h"

#define COMP "migd.dirty"

int migd_monitor_attach(struct migd_vmm *d, struct migd_vm *v)
{
	struct hv_dirtyrate_cfg cfg = {
		.interval_ms = d->cfg.dirty_interval_ms,
		.sample_shift = d->cfg.dirty_sample_shift,
	};
	int ret;

	if (!d->cfg.dirty_monitor || v->mon || v->mig_id)
		return 0;
	ret = hv_dirtyrate_create(v->vm, &cfg, &v->mon);
	if (ret)
		hv_warn(COMP, "event=monitor_failed vm=%s err=%d", v->name,
			ret);
	return ret;
}

void migd_monitor_detach(struct migd_vm *v)
{
	if (v->mon) {
		struct hv_dirtyrate_snap sn;

		hv_dirtyrate_get(v->mon, &sn);
		v->mon_last_bps =
			(uint64_t)(sn.win[HV_DR_1S].bytes_per_s + 0.5);
	}
	hv_dirtyrate_destroy(v->mon);
	v->mon = NULL;
}

static const char *mode_name(enum hv_dirty_mode m)
{
	return m ? hv_dirty_mode_name(m) : "";
}

void migd_dirty_fill(struct migd_vmm *d, struct migd_vm *v,
		     struct migd_dr_msg *m)
{
	Migd__DirtyRateSample *s = &m->s;
	struct hv_dirtyrate_snap *sn = &m->snap;
	uint32_t nv = v->vm->cfg.nr_vcpus;

	migd__dirty_rate_sample__init(s);
	s->vm = v->name;
	s->mem_pages = v->vm->cfg.mem_bytes / 4096;
	if (!v->mon) {
		struct migd_mig *mig =
			v->mig_id ? migd_mig_find(d, v->mig_id, NULL) : NULL;

		s->source = (char *)(mig ? "migration" : "off");
		if (mig) {
			pthread_mutex_lock(&mig->lock);
			s->bytes_per_s = mig->latest.dirty_rate;
			pthread_mutex_unlock(&mig->lock);
			/* The first pass measures nothing until it ends (it
			 * may take minutes): until then, the monitor's last
			 * rate, named as such, rather than a false 0. */
			if (!s->bytes_per_s && v->mon_last_bps) {
				s->bytes_per_s = v->mon_last_bps;
				s->source = (char *)"monitor-before-migration";
			}
			s->pages_per_s = s->bytes_per_s / 4096;
			s->window_ms = 0; /* one migration iteration */
		}
		return;
	}
	hv_dirtyrate_get(v->mon, sn);
	s->source = (char *)"monitor";
	s->mode = (char *)mode_name(sn->mode);
	s->sample_shift = sn->sample_shift;
	s->interval_ms = sn->interval_ms;
	s->samples = sn->samples;
	s->sample_ns_max = sn->sample_ns_max;
	s->window_ms = 1000;
	s->pages_per_s = (uint64_t)(sn->win[HV_DR_1S].pages_per_s + 0.5);
	s->bytes_per_s = (uint64_t)(sn->win[HV_DR_1S].bytes_per_s + 0.5);
	for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++) {
		Migd__DirtyRateWindow *x = &m->win[w];

		migd__dirty_rate_window__init(x);
		x->seconds = sn->win[w].seconds;
		x->covered_s = sn->win[w].covered_s;
		x->pages_per_s = sn->win[w].pages_per_s;
		x->bytes_per_s = sn->win[w].bytes_per_s;
		x->working_set_pages = sn->win[w].working_set;
		x->guest_pages_per_s = sn->win[w].guest_pages_per_s;
		m->winp[w] = x;
	}
	s->n_windows = HV_DR_NR_WINDOWS;
	s->windows = m->winp;
	for (uint32_t i = 0; i < nv && i < HV_WL_MAX_VCPUS; i++) {
		Migd__VcpuDirtyRate *x = &m->vc[i];

		migd__vcpu_dirty_rate__init(x);
		x->index = i;
		for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++)
			m->vc_rates[i][w] = sn->vcpu_pages_per_s[i][w];
		x->n_pages_per_s = HV_DR_NR_WINDOWS;
		x->pages_per_s = m->vc_rates[i];
		m->vcp[i] = x;
		m->vcpu_pps[i] =
			(uint64_t)(sn->vcpu_pages_per_s[i][HV_DR_1S] + 0.5);
	}
	s->n_vcpus = nv;
	s->vcpus = m->vcp;
	s->n_vcpu_pages_per_s = nv;
	s->vcpu_pages_per_s = m->vcpu_pps;
	s->vcpu_split_estimated = sn->vcpu_split_estimated;
	for (unsigned k = 0; k < HV_DR_HIST_N; k++)
		m->hot[k] = sn->hist[k + 1];
	s->n_hot_cold = HV_DR_HIST_N;
	s->hot_cold = m->hot;
	s->hist_seconds = sn->hist_seconds;
}

bool migd_vm_watch_exit(struct migd_vmm *d, struct migd_vm *v)
{
	enum hv_vm_exit why = hv_vm_exit_reason(v->vm);
	Migd__VmState old;
	int ret;

	if (why == HV_VM_EXIT_NONE || v->exit_seen || v->mig_id)
		return false;
	v->exit_seen = true;
	old = migd_vm_api_state(v);
	migd_monitor_detach(v);
	ret = hv_vm_stop(v->vm);
	hv_info(COMP, "event=guest_stopped vm=%s reason=%s stop_err=%d",
		v->name, hv_vm_exit_name(why), ret);
	migd_publish_vm_state(d, v, old, false);
	return true;
}

static void dirty_timer_cb(uv_timer_t *t)
{
	struct migd_vmm *d = t->data;
	struct migd_dr_msg *m;

	/* An incoming-only worker has no VM yet: its armed receive's limit
	 * is checked here too. */
	migd_mig_arm_check(d);
	if (!d->reg.head)
		return;
	for (struct migd_vm *v = d->reg.head; v; v = v->next)
		migd_vm_watch_exit(d, v);
	m = malloc(sizeof(*m));
	if (!m)
		return;
	for (struct migd_vm *v = d->reg.head; v; v = v->next) {
		Migd__Event ev = MIGD__EVENT__INIT;

		migd_dirty_fill(d, v, m);
		ev.kind = MIGD__EVENT_KIND__EVENT_KIND_DIRTY_RATE;
		ev.body_case = MIGD__EVENT__BODY_DIRTY_RATE;
		ev.dirty_rate = &m->s;
		migd_server_publish(&d->srv, &ev, v->name, v->mig_id, false);
	}
	free(m);
}

void migd_monitor_events_start(struct migd_vmm *d)
{
	uint32_t ms = d->cfg.dirty_event_ms ? d->cfg.dirty_event_ms
					    : MIGD_DIRTY_EVENT_MS_DEFAULT;

	uv_timer_init(d->loop, &d->dirty_timer);
	d->dirty_timer.data = d;
	uv_timer_start(&d->dirty_timer, dirty_timer_cb, ms, ms);
	d->dirty_timer_on = true;
}

void migd_monitor_events_stop(struct migd_vmm *d)
{
	if (!d->dirty_timer_on)
		return;
	uv_timer_stop(&d->dirty_timer);
	uv_close((uv_handle_t *)&d->dirty_timer, NULL);
	d->dirty_timer_on = false;
}
