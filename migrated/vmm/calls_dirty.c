// SPDX-License-Identifier: MIT
/*
 * Dirty-rate calls of the control RPC: dirty_rate, converge_estimate and
 * vm_set_workload (calls.h). Loop thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/vcpu.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/vm_info.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/estimate.h"
#include "migrated/vmm/monitor.h"

#define COMP "migd.dirty"

static struct migd_vm *find_vm(struct migd_call *call, const char *name)
{
	struct migd_vm *v;

	if (!name || !*name) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "VM name missing");
		return NULL;
	}
	v = migd_registry_find(&migd_vmm_of(call)->reg, name);
	if (!v)
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no VM named '%s'", name);
	return v;
}

void migd_call_dirty_rate(struct migd_call *call)
{
	struct migd_vm *v = find_vm(call, call->req->dirty_rate->vm);
	struct migd_dr_msg *m;

	if (!v)
		return;
	m = migd_call_alloc(call, sizeof(*m));
	if (!m)
		return;
	migd_dirty_fill(migd_vmm_of(call), v, m);
	call->resp->result_case = MIGD__RESPONSE__RESULT_DIRTY_RATE;
	call->resp->dirty_rate = &m->s;
}

void migd_call_converge_estimate(struct migd_call *call)
{
	const Migd__ConvergeEstimateRequest *r = call->req->converge_estimate;
	struct migd_vm *v = find_vm(call, r->vm);
	struct hv_dirtyrate_snap *snap;
	Migd__ConvergeEstimate *e;
	struct migd_est *est;
	struct migd_est_in in;

	if (!v)
		return;
	if (!r->bandwidth || r->throttle_max_pct > 99) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "--bandwidth (bandwidth) must be above 0 and "
			       "--throttle (throttle_max_pct) at most 99%%");
		return;
	}
	if (!v->mon) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' has no dirty-rate monitor (%s)",
			       v->name,
			       v->mig_id ? "it is being migrated"
					 : "monitoring is off");
		return;
	}
	snap = migd_call_alloc(call, sizeof(*snap));
	est = migd_call_alloc(call, sizeof(*est));
	e = migd_call_alloc(call, sizeof(*e));
	if (!snap || !est || !e)
		return;
	hv_dirtyrate_get(v->mon, snap);
	if (snap->samples < 2) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s': not enough dirty-rate samples yet",
			       v->name);
		return;
	}
	in = (struct migd_est_in){
		.mem_bytes = v->vm->cfg.mem_bytes,
		.bandwidth = r->bandwidth,
		.downtime_ms = r->downtime_ms,
		.throttle_max_pct = r->throttle_max_pct,
	};
	if (migd_estimate(snap, &in, est)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "bad estimate input");
		return;
	}
	migd__converge_estimate__init(e);
	e->converges = est->converges;
	e->converges_unthrottled = est->converges_unthrottled;
	e->iterations = est->iterations;
	e->total_s = est->total_s;
	e->expected_downtime_ms = est->expected_downtime_ms;
	e->throttle_pct = est->throttle_pct;
	e->dirty_bytes_per_s = est->dirty_bytes_per_s;
	e->working_set_bytes = est->working_set_bytes;
	e->note = migd_call_strdup(call, est->note);
	e->steps = migd_call_alloc(call, est->nr_steps * sizeof(*e->steps) + 1);
	if (!e->note || !e->steps)
		return;
	for (unsigned i = 0; i < est->nr_steps; i++) {
		Migd__ConvergeIteration *it =
			migd_call_alloc(call, sizeof(*it));

		if (!it)
			return;
		migd__converge_iteration__init(it);
		it->index = i;
		it->send_bytes = est->steps[i].send_bytes;
		it->seconds = est->steps[i].seconds;
		it->throttle_pct = est->steps[i].throttle_pct;
		e->steps[i] = it;
	}
	e->n_steps = est->nr_steps;
	call->resp->result_case = MIGD__RESPONSE__RESULT_CONVERGE_ESTIMATE;
	call->resp->converge_estimate = e;
}

/*
 * A pace above what vCPU @i was measured to reach (VcpuStatus.write_ceiling)
 * is set, and warned about: the vCPU will write flat out, below it. 10 %
 * of slack: the ceiling is one second's measurement.
 */
static void warn_pace(struct migd_call *call, struct migd_vm *v, uint32_t i,
		      uint64_t pace)
{
	struct hv_vcpu_stats vs;

	if (!pace || hv_vm_vcpu_stats(v->vm, i, &vs) || !vs.write_ceiling ||
	    pace * 10 <= vs.write_ceiling * 11)
		return;
	migd_call_warn(call,
		       "vCPU %u: %llu page writes/s asked, but it reached "
		       "%llu/s writing flat out here (%s accelerator): it "
		       "will run flat out, below the rate asked",
		       i, (unsigned long long)pace,
		       (unsigned long long)vs.write_ceiling,
		       hv_accel_kind_name(v->vm->cfg.accel));
	hv_warn(COMP, "event=vm_workload_unreachable vm=%s vcpu=%u asked=%llu "
		"ceiling=%llu", v->name, i, (unsigned long long)pace,
		(unsigned long long)vs.write_ceiling);
}

void migd_call_vm_set_workload(struct migd_call *call)
{
	const Migd__VmSetWorkloadRequest *r = call->req->vm_set_workload;
	struct migd_vm *v = find_vm(call, r->vm);
	uint32_t nv;
	Migd__VmInfo *info;

	if (!v)
		return;
	nv = v->vm->cfg.nr_vcpus;
	if (hv_vm_is_linux(v->vm)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' runs a Linux kernel: its pace is its "
			       "own (set-rate paces the workload guest)",
			       v->name);
		return;
	}
	if (v->mig_id) {
		/* The engine's throttle rewrites the same params page. */
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is being migrated", v->name);
		return;
	}
	if (r->rate_pages > 100000000ull) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "rate_pages above 1e8");
		return;
	}
	for (size_t i = 0; i < r->n_vcpus; i++) {
		if (r->vcpus[i] >= nv) {
			migd_call_fail(call,
				       MIGD__STATUS__STATUS_INVALID_ARGUMENT,
				       "vCPU %u out of range (VM has %u)",
				       r->vcpus[i], nv);
			return;
		}
	}
	for (uint32_t i = 0; i < nv; i++) {
		struct hv_wl_vcpu_params p;
		bool pick = !r->n_vcpus;
		int ret;

		for (size_t k = 0; k < r->n_vcpus; k++)
			pick |= r->vcpus[k] == i;
		if (!pick)
			continue;
		/* The params as the guest sees them now, only the pace
		 * changed. */
		ret = hv_vm_read_guest(
			v->vm,
			HV_WL_PARAMS_GPA + offsetof(struct hv_wl_params, vcpu) +
				i * sizeof(p),
			&p, sizeof(p));
		if (!ret) {
			p.rate_pages = r->rate_pages;
			ret = hv_vm_wl_set_vcpu(v->vm, i, &p);
		}
		if (!ret) /* what inspect shows of the vCPU */
			v->vm->cfg.wl[i].rate_pages = r->rate_pages;
		if (!ret)
			warn_pace(call, v, i, r->rate_pages);
		if (ret) {
			migd_call_fail(call, migd_status_from_errno(ret),
				       "vCPU %u: %s", i, strerror(-ret));
			return;
		}
	}
	if (!r->n_vcpus)
		v->wl.rate_pages = r->rate_pages;
	hv_info(COMP, "event=vm_workload vm=%s rate_pages=%llu vcpus=%zu",
		v->name, (unsigned long long)r->rate_pages,
		r->n_vcpus ? r->n_vcpus : (size_t)nv);
	info = migd_vm_info_new(call, v);
	if (!info)
		return;
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM;
	call->resp->vm = info;
}
