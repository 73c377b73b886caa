// SPDX-License-Identifier: MIT
/*
 * A run of the ebizzy-like workload on overcommitted soft vCPUs
 * (hvcore/soft/sched_wl.h).
 */
#include "hvcore/soft/sched_wl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/x86/ept.h"
#include "hvcore/soft/rig.h"

struct run;

/* One vCPU: its soft vCPU, its scheduler entity, its thread. */
struct wl_vcpu {
	struct run *r;
	unsigned vm, idx;
	struct hv_soft_vcpu *v;
	struct hv_soft_sched_vcpu *sv;
	struct hv_soft_sched_vcpu **peers; /* the VM's, by guest id */
	struct hv_wl_sync_env env;
	struct hv_wl_ebizzy_cfg wl;
	struct hv_soft_sched_wl_vcpu *out;
	pthread_t thread;
	bool started;
};

struct run {
	const struct hv_soft_sched_wl_cfg *cfg;
	struct hv_soft_sched *s;
	struct hv_soft_rig *rig[HV_SOFT_SCHED_MAX_VMS];
	struct hv_soft_sched_vcpu **sv; /* vms * vcpus, VM-major */
	struct wl_vcpu *w;
	/* What the threads write; copied to the caller's result only once
	 * every thread joined, so a thread left running after a timeout
	 * never writes into the caller's memory. */
	struct hv_soft_sched_wl_vcpu *out;
	atomic_uint live; /* threads still in the workload */
	uint64_t t_last;  /* when the last one left */
};

static void oracle(struct wl_vcpu *w, bool running)
{
	const struct hv_soft_sched_wl_cfg *c = w->r->cfg;

	if (c->on_sched)
		c->on_sched(c->arg, w->vm, w->idx, w->sv, running);
}

/* An access point: the scheduler may preempt here, outside the TLB
 * bracket (a vCPU waiting for a token must not hold up a remote flush). */
static void access_point(struct wl_vcpu *w)
{
	hv_soft_vcpu_access_end(w->v);
	oracle(w, false);
	hv_soft_sched_tick(w->sv);
	oracle(w, true);
}

static uint8_t *env_write(void *ctx, uint64_t gpa)
{
	struct wl_vcpu *w = ctx;

	access_point(w);
	return hv_soft_vcpu_page_for_write(w->v, gpa);
}

static const uint8_t *env_read(void *ctx, uint64_t gpa)
{
	struct wl_vcpu *w = ctx;

	access_point(w);
	return hv_soft_vcpu_page_for_read(w->v, gpa);
}

static void env_ple_exit(void *ctx)
{
	struct wl_vcpu *w = ctx;

	hv_soft_vcpu_access_end(w->v);
	oracle(w, false);
	hv_soft_sched_yield(w->sv);
	oracle(w, true);
}

static void env_send_ipi(void *ctx, uint32_t cpu)
{
	struct wl_vcpu *w = ctx;

	if (cpu < w->r->cfg->vcpus)
		hv_soft_sched_kick(w->peers[cpu]);
}

static void env_halt(void *ctx)
{
	struct wl_vcpu *w = ctx;

	hv_soft_vcpu_access_end(w->v);
	oracle(w, false);
	hv_soft_sched_halt(w->sv);
	oracle(w, true);
}

static unsigned env_set_act(void *ctx, unsigned act)
{
	return hv_soft_sched_set_act(((struct wl_vcpu *)ctx)->sv, act);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *vcpu_thread(void *p)
{
	struct wl_vcpu *w = p;
	struct hv_wl_sync_cpu c = {
		.env = &w->env,
		.area_gpa = HV_WL_EBIZZY_AREA_GPA,
		.id = w->idx,
	};
	int ret;

	hv_soft_sched_start(w->sv);
	oracle(w, true);
	ret = hv_wl_ebizzy_run(&c, &w->wl, &w->out->wl);
	hv_soft_vcpu_access_end(w->v);
	oracle(w, false);
	hv_soft_sched_stop(w->sv);
	if (!ret && w->v->error)
		ret = w->v->error;
	w->out->result = ret;
	w->out->sync = c.st;
	if (atomic_fetch_sub(&w->r->live, 1) == 1)
		w->r->t_last = now_ns();
	return NULL;
}

static struct hv_wl_sync_area *area(struct hv_soft_rig *rig)
{
	return (struct hv_wl_sync_area *)(rig->mem + HV_WL_EBIZZY_AREA_GPA);
}

/* Ask every vCPU to leave: the flag, then a kick for the halted ones (a
 * vCPU checks the flag before it halts, and a kick before the halt makes
 * the halt return). */
static void stop_all(struct run *r)
{
	unsigned n = r->cfg->vms * r->cfg->vcpus;

	for (unsigned m = 0; m < r->cfg->vms; m++)
		__atomic_store_n(&area(r->rig[m])->stop, 1, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < n; i++)
		hv_soft_sched_kick(r->sv[i]);
}

static int join_all(struct run *r, uint64_t deadline_ns)
{
	unsigned n = r->cfg->vms * r->cfg->vcpus;
	struct timespec ts;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(deadline_ns / 1000000000ULL);
	ts.tv_nsec += (long)(deadline_ns % 1000000000ULL);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!r->w[i].started)
			continue;
		if (pthread_timedjoin_np(r->w[i].thread, NULL, &ts)) {
			ret = -ETIMEDOUT;
			continue;
		}
		r->w[i].started = false;
	}
	return ret;
}

static int setup(struct run *r)
{
	const struct hv_soft_sched_wl_cfg *c = r->cfg;
	struct hv_soft_rig_cfg rc = {
		.fmt = &x86_ept_fmt,
		.nr_vcpus = c->vcpus,
		.region_pages = c->wl.region_pages,
	};
	int ret;

	ret = hv_soft_sched_create(&c->sched, &r->s);
	if (ret)
		return ret;
	for (unsigned m = 0; m < c->vms; m++) {
		ret = hv_soft_rig_create(&rc, &r->rig[m]);
		if (ret)
			return ret;
		ret = hv_wl_sync_area_init(area(r->rig[m]), c->vcpus);
		if (ret)
			return ret;
	}
	for (unsigned m = 0; m < c->vms; m++) {
		for (unsigned i = 0; i < c->vcpus; i++) {
			struct wl_vcpu *w = &r->w[m * c->vcpus + i];

			ret = hv_soft_sched_vcpu_create(
				r->s, m, &r->sv[m * c->vcpus + i]);
			if (ret)
				return ret;
			w->r = r;
			w->vm = m;
			w->idx = i;
			w->v = r->rig[m]->vcpus[i];
			w->sv = r->sv[m * c->vcpus + i];
			w->peers = &r->sv[m * c->vcpus];
			w->env = (struct hv_wl_sync_env){
				.ctx = w,
				.page_for_write = env_write,
				.page_for_read = env_read,
				.ple_exit = env_ple_exit,
				.send_ipi = env_send_ipi,
				.halt = env_halt,
				.set_act = env_set_act,
				.ple_spins = c->ple_spins,
			};
			w->wl = c->wl;
			if (m >= c->vms - c->hogs) {
				w->wl.lock_every = 0;
				w->wl.free_every = 0;
				w->wl.call_every = 0;
			}
			w->wl.region_gpa = HV_SOFT_RIG_LOW_BYTES +
					   i * c->wl.region_pages * 4096;
			w->wl.seed =
				c->wl.seed +
				0x9e3779b97f4a7c15ULL * (m * c->vcpus + i + 1);
		}
	}
	return 0;
}

/* Free everything; false (and nothing freed) when a thread still runs. */
static bool teardown(struct run *r)
{
	unsigned n = r->cfg->vms * r->cfg->vcpus;

	for (unsigned i = 0; i < n; i++)
		if (r->w[i].started)
			return false;
	for (unsigned i = 0; i < n; i++)
		hv_soft_sched_vcpu_destroy(r->sv[i]);
	for (unsigned m = 0; m < r->cfg->vms; m++)
		hv_soft_rig_destroy(r->rig[m]);
	hv_soft_sched_destroy(r->s);
	free(r->sv);
	free(r->w);
	free(r->out);
	free(r);
	return true;
}

int hv_soft_sched_wl_run(const struct hv_soft_sched_wl_cfg *cfg,
			 uint64_t run_ns, struct hv_soft_sched_wl_result *res)
{
	unsigned n = cfg->vms * cfg->vcpus;
	struct run *r;
	uint64_t t0;
	int ret;

	if (!cfg->vms || cfg->vms > HV_SOFT_SCHED_MAX_VMS || !cfg->vcpus ||
	    cfg->hogs >= cfg->vms || (cfg->hogs && cfg->wl.max_records) ||
	    cfg->vcpus > HV_WL_SYNC_MAX_CPUS || !cfg->ple_spins ||
	    !cfg->wl.region_pages || cfg->wl.region_pages % 512 || !run_ns)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cfg = cfg;
	r->sv = calloc(n, sizeof(*r->sv));
	r->w = calloc(n, sizeof(*r->w));
	r->out = calloc(n, sizeof(*r->out));
	ret = r->sv && r->w && r->out ? setup(r) : -ENOMEM;
	if (ret) {
		teardown(r);
		return ret;
	}
	memset(res->vcpu, 0, n * sizeof(*res->vcpu));
	atomic_store(&r->live, n);
	t0 = now_ns();
	for (unsigned i = 0; i < n; i++) {
		r->w[i].out = &r->out[i];
		if (pthread_create(&r->w[i].thread, NULL, vcpu_thread,
				   &r->w[i])) {
			ret = -EAGAIN;
			atomic_fetch_sub(&r->live, n - i);
			break;
		}
		r->w[i].started = true;
	}
	if (ret || !cfg->wl.max_records) {
		if (!ret) {
			struct timespec ts = {(time_t)(run_ns / 1000000000ULL),
					      (long)(run_ns % 1000000000ULL)};

			while (nanosleep(&ts, &ts))
				;
		}
		res->wall_ns = now_ns() - t0;
		stop_all(r);
		if (join_all(r, 10000000000ULL) && !ret)
			ret = -ETIMEDOUT;
	} else {
		ret = join_all(r, run_ns);
		res->wall_ns = r->t_last - t0;
		if (ret) {
			stop_all(r);
			join_all(r, 1000000000ULL);
		}
	}
	hv_soft_sched_get_stats(r->s, &res->sched);
	for (unsigned i = 0; i < n && !ret; i++)
		res->vcpu[i] = r->out[i];
	for (unsigned i = 0; i < n; i++) {
		hv_soft_sched_vcpu_get_stats(r->sv[i], &res->vcpu[i].sched);
		if (!ret && res->vcpu[i].result)
			ret = res->vcpu[i].result;
	}
	if (!teardown(r))
		return -ETIMEDOUT;
	return ret;
}
