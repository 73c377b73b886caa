// SPDX-License-Identifier: MIT
/*
 * vm_check: the page-stamp oracle (hvcore/wl_verify.h) over a VM of this
 * daemon (calls.h). Loop thread.
 *
 * The memory must hold still while it is checked, so a running VM is
 * paused for the check and resumed after it: the guest sees one pause of
 * a few milliseconds per 256 MiB (check_ns in the reply). A VM that an
 * outgoing migration owns is refused: pause and resume belong to the
 * engine then (mig/session.h). An unresolved one is checked: its engine
 * has stopped, the copy is paused and frozen until resolve, and whether
 * it is intact is what the operator must know before resolving.
 */
#include <errno.h>
#include <string.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/time.h"
#include "hvcore/vm.h"
#include "hvcore/wl_verify.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/vm_info.h"
#include "migrated/vmm/vmm.h"

#define COMP "migd.vm"

/* The check's numbers into the reply (arrays in @call's arena). */
static Migd__VmCheckResult *result_new(struct migd_call *call,
				       struct migd_vm *v,
				       const struct hv_wl_verify *vr)
{
	Migd__VmCheckResult *r = migd_call_alloc(call, sizeof(*r));
	uint64_t *gfns = NULL;

	if (!r)
		return NULL;
	migd__vm_check_result__init(r);
	if (vr->nr_bad_gfns) {
		gfns = migd_call_alloc(call, vr->nr_bad_gfns * sizeof(*gfns));
		if (!gfns)
			return NULL;
		memcpy(gfns, vr->bad_gfns, vr->nr_bad_gfns * sizeof(*gfns));
	}
	r->vm = migd_vm_info_new(call, v);
	if (!r->vm)
		return NULL;
	r->pages = vr->pages;
	r->written = vr->written;
	r->bad = vr->bad;
	r->bad_stamp = vr->bad_stamp;
	r->bad_content = vr->bad_content;
	r->stale = vr->stale;
	r->lost_vcpus = vr->lost_vcpus;
	r->n_bad_gfns = vr->nr_bad_gfns;
	r->bad_gfns = gfns;
	return r;
}

/* hv_wl_verify_map()'s data map of the VM's RAM, any backing. */
static int data_map(void *mem, uint64_t off, uint64_t npages, uint64_t *bits)
{
	return hv_guest_mem_data_map(mem, off, npages, bits);
}

void migd_call_vm_check(struct migd_call *call)
{
	const Migd__VmRef *ref = call->req->vm_check;
	struct hv_wl_verify vr;
	Migd__VmCheckResult *r;
	struct migd_vm *v;
	const uint8_t *ram;
	bool paused = false;
	uint64_t t0, ns;
	int ret, rret = 0;

	if (!ref || !ref->name || !*ref->name) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "VM name missing");
		return;
	}
	v = migd_registry_find(&migd_vmm_of(call)->reg, ref->name);
	if (!v) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no VM named '%s'", ref->name);
		return;
	}
	if (hv_vm_is_linux(v->vm)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' runs a Linux kernel: vm check verifies "
			       "the workload guest's page stamps only",
			       v->name);
		return;
	}
	if (v->mig_id && !v->mig_unresolved) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is being migrated (migration %llu)",
			       v->name, (unsigned long long)v->mig_id);
		return;
	}
	ram = hv_vm_ram(v->vm);
	if (!ram) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
			       "VM '%s': guest RAM not mapped", v->name);
		return;
	}
	if (hv_vm_get_state(v->vm) == HV_VM_RUNNING) {
		ret = hv_vm_pause(v->vm);
		if (ret) {
			migd_call_fail(call, migd_status_from_errno(ret),
				       "pausing VM '%s' for the check failed: "
				       "%s",
				       v->name, strerror(-ret));
			return;
		}
		paused = true;
	}
	t0 = hv_now_ns();
	/* The never-written RAM of a large sparse VM is skipped rather than
	 * read (and, in a memfd, allocated) page by page. */
	ret = hv_wl_verify_map(ram, v->vm->cfg.mem_bytes, data_map, v->vm->mem,
			       &vr);
	ns = hv_now_ns() - t0;
	if (paused)
		rret = hv_vm_resume(v->vm);
	if (ret) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s': its params page is not a valid "
			       "workload: %s",
			       v->name, strerror(-ret));
		return;
	}
	if (rret) {
		/* The guest stays paused: say so rather than hide it. */
		migd_call_fail(call, migd_status_from_errno(rret),
			       "VM '%s' checked but resuming it failed: %s",
			       v->name, strerror(-rret));
		return;
	}
	hv_info(COMP,
		"event=vm_checked vm=%s pages=%llu written=%llu bad=%llu "
		"stamp=%llu content=%llu stale=%llu lost_vcpus=%u "
		"first_bad_gfn=%lld ms=%.1f paused=%d",
		v->name, (unsigned long long)vr.pages,
		(unsigned long long)vr.written, (unsigned long long)vr.bad,
		(unsigned long long)vr.bad_stamp,
		(unsigned long long)vr.bad_content,
		(unsigned long long)vr.stale, vr.lost_vcpus,
		vr.nr_bad_gfns ? (long long)vr.bad_gfns[0] : -1LL,
		(double)ns / 1e6, paused);
	r = result_new(call, v, &vr);
	if (!r)
		return;
	r->paused_for_check = paused;
	r->check_ns = ns;
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_CHECK;
	call->resp->vm_check = r;
}
