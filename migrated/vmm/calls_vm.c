// SPDX-License-Identifier: MIT
/*
 * VM calls of the control RPC: ping, create, list, inspect, pause, resume,
 * destroy (calls.h). Loop thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/kvm/kvm.h"
#include "hvcore/log.h"
#include "hvcore/time.h"
#include "hvcore/vcpu.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/monitor.h"
#include "migrated/vmm/vm_info.h"

#define COMP "migd.vm"

/* Look a VM up by the request's VmRef; fails the call when missing. */
static struct migd_vm *ref_vm(struct migd_call *call, const Migd__VmRef *ref,
			      bool must_be_free)
{
	struct migd_vm *v;

	if (!ref || !ref->name || !*ref->name) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "VM name missing");
		return NULL;
	}
	v = migd_registry_find(&migd_vmm_of(call)->reg, ref->name);
	if (!v) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no VM named '%s'", ref->name);
		return NULL;
	}
	if (must_be_free && v->mig_id) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is being migrated (migration %llu)",
			       v->name, (unsigned long long)v->mig_id);
		return NULL;
	}
	return v;
}

struct migd_vm *migd_call_find_vm(struct migd_call *call, const char *name)
{
	Migd__VmRef ref = MIGD__VM_REF__INIT;

	ref.name = (char *)name;
	return ref_vm(call, &ref, false);
}

static void reply_vm(struct migd_call *call, struct migd_vm *v)
{
	Migd__VmInfo *info = migd_vm_info_new(call, v);

	if (!info)
		return;
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM;
	call->resp->vm = info;
}

/* The workload the guest runs, by name in logs (what --pattern and
 * --content take). */
static const char *const pattern_names[HV_WL_PATTERN_COUNT] = {
	"invalid", "sweep", "random", "hotset", "idle",
};
static const char *const content_names[HV_WL_CONTENT_COUNT] = {
	"invalid", "stamp", "text", "random",
};

static const char *wl_name(const char *const *names, unsigned n,
			   unsigned v)
{
	return v < n ? names[v] : "unknown";
}

/*
 * Guest RAM beyond the host's: allowed (memory is reserved lazily, and a
 * sparse guest runs), but said, since a guest that writes it all gets the
 * worker killed for want of memory.
 */
static void warn_host_ram(struct migd_call *call, uint64_t mem_bytes)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t host = pages > 0 && psz > 0
				? (uint64_t)pages * (uint64_t)psz
				: 0;

	if (host && mem_bytes > host)
		migd_call_warn(call,
			       "--mem %.1f GiB is more than this host's RAM "
			       "(%.1f GiB): the VM runs while it stays "
			       "sparse; a guest that writes all of it is "
			       "killed when memory runs out",
			       (double)mem_bytes / (1 << 30),
			       (double)host / (1 << 30));
}

void migd_console_log_path(struct migd_vmm *d, const char *name, char *buf,
			   size_t size)
{
	snprintf(buf, size, "%.400s/vms/%s.console", d->cfg.state_dir, name);
}

/* The console log of a VM that is not (or no longer) there, and the
 * rotated one beside it: nothing of a failed create stays behind. */
static void console_log_remove(const char *path)
{
	char old[HV_BOOT_PATH_MAX + 2];

	if (!path[0])
		return;
	unlink(path);
	snprintf(old, sizeof(old), "%s.1", path);
	unlink(old);
}

/* hv_vm_create()'s error, said for the operator. */
static void create_failed(struct migd_call *call, const struct hv_vm_cfg *cfg,
			  int ret)
{
	const char *accel = hv_accel_kind_name(cfg->accel);

	console_log_remove(cfg->boot.console_log);
	if (ret == -ENODEV)
		migd_call_fail(call, MIGD__STATUS__STATUS_UNAVAILABLE,
			       "accelerator %s is not available here%s", accel,
			       cfg->accel == HV_ACCEL_KVM
				       ? " (/dev/kvm does not open)"
				       : "");
	else if (ret == -EOPNOTSUPP && cfg->boot.kernel[0])
		migd_call_fail(call, MIGD__STATUS__STATUS_UNAVAILABLE,
			       "VM '%s': this build's %s accelerator cannot "
			       "boot a Linux kernel yet; nothing was created",
			       cfg->name, accel);
	else if (cfg->boot.kernel[0] && (ret == -EINVAL || ret == -ENOEXEC ||
					 ret == -E2BIG || ret == -EFBIG))
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "VM '%s': the kernel '%s'%s%s cannot boot in "
			       "%llu MiB: %s (the daemon's log says more)",
			       cfg->name, cfg->boot.kernel,
			       cfg->boot.initrd[0] ? " with initrd " : "",
			       cfg->boot.initrd,
			       (unsigned long long)(cfg->mem_bytes >> 20),
			       strerror(-ret));
	else
		migd_call_fail(call, migd_status_from_errno(ret),
			       "creating VM '%s' failed: %s", cfg->name,
			       strerror(-ret));
}

void migd_call_vm_create(struct migd_call *call)
{
	const Migd__VmCreateRequest *r = call->req->vm_create;
	struct migd_vmm *d = migd_vmm_of(call);
	enum hv_accel_kind accel;
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	struct migd_vm *v;
	struct hv_vm *vm;
	char err[256];
	int ret;

	accel = hv_accel_kind_parse(r->accel, d->accel);
	/* The boot files first: cfg_build only copies them. */
	ret = migd_boot_check(r, accel, err, sizeof(err));
	if (!ret)
		ret = migd_vm_cfg_build(r, accel, &cfg, &wl, err, sizeof(err));
	if (ret) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "%s", err);
		return;
	}
	if (!r->dirty_ring && accel == HV_ACCEL_KVM)
		cfg.dirty_ring_entries = d->cfg.dirty_ring;
	if (!r->backing || !*r->backing)
		cfg.backing = d->cfg.backing ? d->cfg.backing
					     : MIGD_BACKING_DEFAULT;
	if (d->reg.count || d->migs) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "this worker runs a VM already");
		return;
	}
	/* Also refused while a VM of that name is arriving by migration. */
	if (migd_registry_taken(&d->reg, r->name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_ALREADY_EXISTS,
			       migd_registry_find(&d->reg, r->name)
				       ? "a VM named '%s' exists"
				       : "a VM named '%s' is arriving by "
					 "migration",
			       r->name);
		return;
	}
	if (d->reg.count >= MIGD_VMS_MAX) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "at most %u VMs", MIGD_VMS_MAX);
		return;
	}
	snprintf(cfg.name, sizeof(cfg.name), "%s", r->name);
	if (migd_boot_wanted(r))
		migd_console_log_path(d, r->name, cfg.boot.console_log,
				      sizeof(cfg.boot.console_log));
	ret = hv_vm_create(&cfg, &vm);
	if (ret) {
		hv_warn(COMP, "event=vm_create_failed vm=%s accel=%s err=%d",
			r->name, hv_accel_kind_name(accel), ret);
		create_failed(call, &cfg, ret);
		return;
	}
	if (!r->paused) {
		ret = hv_vm_start(vm);
		if (ret) {
			hv_vm_destroy(vm);
			console_log_remove(cfg.boot.console_log);
			migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
				       "starting VM '%s' failed: %s", r->name,
				       strerror(-ret));
			return;
		}
	}
	ret = migd_registry_add(&d->reg, r->name, vm, &wl, false, &v);
	if (ret) {
		hv_vm_destroy(vm);
		console_log_remove(cfg.boot.console_log);
		migd_call_fail(call, migd_status_from_errno(ret),
			       "registering VM '%s' failed: %s", r->name,
			       strerror(-ret));
		return;
	}
	hv_info(COMP,
		"event=vm_created vm=%s accel=%s mem=%llu vcpus=%u "
		"dirty_ring=%u backing=%s pattern=%s content=%s rate=%llu "
		"prefill=%d started=%d",
		v->name, hv_accel_kind_name(accel),
		(unsigned long long)cfg.mem_bytes, cfg.nr_vcpus,
		cfg.dirty_ring_entries, hv_mem_backing_name(cfg.backing),
		wl_name(pattern_names, HV_WL_PATTERN_COUNT,
			cfg.wl[0].pattern),
		wl_name(content_names, HV_WL_CONTENT_COUNT,
			cfg.wl[0].content),
		(unsigned long long)wl.rate_pages,
		wl.prefill, !r->paused);
	if (hv_vm_is_linux(vm))
		hv_info(COMP,
			"event=vm_linux vm=%s kernel=\"%s\" initrd=\"%s\" "
			"console_log=\"%s\"",
			v->name, cfg.boot.kernel, cfg.boot.initrd,
			cfg.boot.console_log);
	warn_host_ram(call, cfg.mem_bytes);
	reply_vm(call, v);
	migd_monitor_attach(d, v);
	migd_publish_vm_state(d, v, MIGD__VM_STATE__VM_STATE_INVALID, false);
}

void migd_call_vm_list(struct migd_call *call)
{
	struct migd_registry *reg = &migd_vmm_of(call)->reg;
	Migd__VmListResult *r = migd_call_alloc(call, sizeof(*r));
	Migd__VmInfo **arr;
	Migd__VmInfo *infos;
	size_t i = 0;

	if (!r)
		return;
	migd__vm_list_result__init(r);
	if (reg->count) {
		arr = migd_call_alloc(call, reg->count * sizeof(*arr));
		infos = migd_call_alloc(call, reg->count * sizeof(*infos));
		if (!arr || !infos)
			return;
		for (struct migd_vm *v = reg->head; v; v = v->next, i++) {
			migd_vm_info_fill(&infos[i], v);
			arr[i] = &infos[i];
		}
		r->n_vms = i;
		r->vms = arr;
	}
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_LIST;
	call->resp->vm_list = r;
}

static Migd__Workload *workload_msg(struct migd_call *call,
				    const struct migd_wl *wl)
{
	Migd__Workload *w = migd_call_alloc(call, sizeof(*w));

	if (!w)
		return NULL;
	migd__workload__init(w);
	w->pattern = (Migd__WlPattern)wl->pattern;
	w->content = (Migd__WlContent)wl->content;
	w->rate_pages = wl->rate_pages;
	w->region_offset = wl->region_offset;
	w->region_bytes = wl->region_bytes;
	w->write_pct = wl->write_pct;
	w->hot_pct = wl->hot_pct;
	w->hot_share_pct = wl->hot_share_pct;
	w->heartbeat_us = wl->heartbeat_us;
	w->seed = wl->seed;
	w->prefill = wl->prefill;
	return w;
}

/*
 * Whether vCPU @i's prefill is done, from the params page as the guest
 * sees it (it arrived with the memory after a migration or an update,
 * whatever the host-side copy says) and its status line.
 */
static bool prefill_done(struct migd_vm *v, uint32_t i,
			 const volatile struct hv_wl_status *st)
{
	struct hv_wl_vcpu_params p;

	if (!st || hv_vm_read_guest(v->vm,
				    HV_WL_PARAMS_GPA +
					    offsetof(struct hv_wl_params,
						     vcpu) +
					    i * sizeof(p),
				    &p, sizeof(p)))
		return false;
	return hv_wl_prefilled(&p, st);
}

static void fill_vcpu(struct migd_call *call, struct migd_vm *v, uint32_t i,
		      Migd__VcpuStatus *s, uint64_t now_ns)
{
	/* A Linux guest's RAM holds no workload status: its vCPUs say only
	 * what the host saw of them. */
	bool wl = !hv_vm_is_linux(v->vm);
	const volatile struct hv_wl_status *st =
		wl ? hv_vm_wl_status(v->vm, i) : NULL;
	const struct hv_wl_vcpu_params *p = &v->vm->cfg.wl[i];
	struct hv_vcpu_stats vs;
	char buf[160] = "";

	migd__vcpu_status__init(s);
	s->index = i;
	if (st) {
		s->seq = st->seq;
		s->passes = st->passes;
		s->reads = st->reads;
		s->running = st->running != 0;
		if (v->vm->tsc_khz)
			s->guest_max_gap_us =
				st->max_gap_tsc * 1000 / v->vm->tsc_khz;
	}
	if (wl) {
		struct hv_ram_layout l = hv_vm_ram_layout(v->vm);

		/* Clients speak RAM offsets (control.proto). */
		s->region_offset = hv_ram_gpa_to_off(&l, p->region_gpa);
		s->prefill_done = prefill_done(v, i, st);
		s->region_bytes = p->region_pages * HV_PAGE_SIZE;
	} else {
		s->prefill_done = true;
	}
	if (hv_vm_vcpu_stats(v->vm, i, &vs) == 0) {
		s->heartbeats = vs.heartbeats;
		s->write_rate = vs.write_rate;
		s->write_ceiling = vs.write_ceiling;
		s->max_heartbeat_gap_us = vs.max_heartbeat_gap_ns / 1000;
		if (vs.last_heartbeat_ns && now_ns > vs.last_heartbeat_ns)
			s->last_heartbeat_age_ms =
				(now_ns - vs.last_heartbeat_ns) / 1000000;
		if (vs.asserted)
			snprintf(buf, sizeof(buf), "guest assert at %s:%u",
				 vs.assert_file, vs.assert_line);
		else if (vs.error)
			snprintf(buf, sizeof(buf), "vcpu stopped: %s%s%s",
				 strerror(-vs.error),
				 vs.last_detail ? " " : "",
				 vs.last_detail ? vs.last_detail : "");
	}
	s->error = migd_call_strdup(call, buf);
}

/* A Linux guest's boot files and console log (strings point into the
 * VM's cfg, which outlives the call). */
static void fill_boot(struct migd_call *call, struct migd_vm *v,
		      Migd__VmInspectResult *r)
{
	struct hv_boot_cfg *b = &v->vm->cfg.boot;
	Migd__Boot *m = migd_call_alloc(call, sizeof(*m));

	if (!m)
		return;
	migd__boot__init(m);
	m->kernel = b->kernel;
	m->initrd = b->initrd;
	m->cmdline = b->cmdline;
	r->boot = m;
	r->console_log = b->console_log;
	migd_devices_inspect(call, v->vm, m, r);
}

void migd_call_vm_inspect(struct migd_call *call)
{
	struct migd_vm *v = ref_vm(call, call->req->vm_inspect, false);
	Migd__VmInspectResult *r;
	Migd__VcpuStatus *vs, **arr;
	struct hv_vm_stats stats;
	uint32_t n;
	uint64_t now;
	struct timespec ts;

	if (!v)
		return;
	n = v->vm->cfg.nr_vcpus;
	r = migd_call_alloc(call, sizeof(*r));
	vs = migd_call_alloc(call, n * sizeof(*vs));
	arr = migd_call_alloc(call, n * sizeof(*arr));
	if (!r || !vs || !arr)
		return;
	migd__vm_inspect_result__init(r);
	r->info = migd_vm_info_new(call, v);
	if (hv_vm_is_linux(v->vm))
		fill_boot(call, v, r);
	else
		r->workload = workload_msg(call, &v->wl);
	/* vcpu.h stamps heartbeats with CLOCK_MONOTONIC. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	r->prefill_done = true;
	for (uint32_t i = 0; i < n; i++) {
		fill_vcpu(call, v, i, &vs[i], now);
		arr[i] = &vs[i];
		r->prefill_done &= vs[i].prefill_done;
	}
	r->n_vcpus = n;
	r->vcpus = arr;
	hv_vm_get_stats(v->vm, &stats);
	r->dirty_harvests = stats.harvests;
	r->vmm_writes = stats.vmm_writes;
	if (call->status != MIGD__STATUS__STATUS_OK)
		return;
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_INSPECT;
	call->resp->vm_inspect = r;
}

/*
 * Pause or resume a VM an outgoing migration owns: the engine does it
 * (a paused VM stops dirtying; the migration goes on, and the VM arrives
 * as the operator left it). True when @v is such a VM (call answered).
 */
static bool mig_pause(struct migd_call *call, struct migd_vm *v, bool pause)
{
	struct migd_mig *m;
	int ret;

	if (!v->mig_id)
		return false;
	m = migd_mig_find(migd_vmm_of(call), v->mig_id, NULL);
	ret = m ? migd_mig_vm_pause(m, pause) : -EALREADY;
	if (ret == -EBUSY)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is %s", v->name,
			       pause ? "paused already" : "not paused");
	else if (ret == -EALREADY || ret == -EINVAL)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s': migration %llu is past its commit "
			       "(or unresolved)",
			       v->name, (unsigned long long)v->mig_id);
	else if (ret)
		migd_call_fail(call, migd_status_from_errno(ret),
			       "%s VM '%s' failed: %s",
			       pause ? "pausing" : "resuming", v->name,
			       strerror(-ret));
	else
		reply_vm(call, v);
	return true;
}

void migd_call_vm_pause(struct migd_call *call)
{
	struct migd_vm *v = ref_vm(call, call->req->vm_pause, false);
	Migd__VmState old;
	int ret;

	if (!v || mig_pause(call, v, true))
		return;
	old = migd_vm_api_state(v);
	if (old != MIGD__VM_STATE__VM_STATE_RUNNING) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is not running", v->name);
		return;
	}
	ret = hv_vm_pause(v->vm);
	if (ret) {
		migd_call_fail(call, migd_status_from_errno(ret),
			       "pausing VM '%s' failed: %s", v->name,
			       strerror(-ret));
		return;
	}
	hv_info(COMP, "event=vm_paused vm=%s", v->name);
	reply_vm(call, v);
	migd_publish_vm_state(migd_vmm_of(call), v, old, false);
}

void migd_call_vm_resume(struct migd_call *call)
{
	struct migd_vm *v = ref_vm(call, call->req->vm_resume, false);
	Migd__VmState old;
	int ret;

	if (!v || mig_pause(call, v, false))
		return;
	old = migd_vm_api_state(v);
	if (old == MIGD__VM_STATE__VM_STATE_CREATED)
		ret = hv_vm_start(v->vm);
	else if (old == MIGD__VM_STATE__VM_STATE_PAUSED)
		ret = hv_vm_resume(v->vm);
	else {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is not paused", v->name);
		return;
	}
	if (ret) {
		migd_call_fail(call, migd_status_from_errno(ret),
			       "resuming VM '%s' failed: %s", v->name,
			       strerror(-ret));
		return;
	}
	hv_info(COMP, "event=vm_resumed vm=%s", v->name);
	reply_vm(call, v);
	migd_publish_vm_state(migd_vmm_of(call), v, old, false);
}

void migd_call_vm_destroy(struct migd_call *call)
{
	struct migd_vm *v = ref_vm(call, call->req->vm_destroy, true);
	char log[HV_BOOT_PATH_MAX];
	Migd__VmInfo *info;
	Migd__VmState old;

	if (!v)
		return;
	info = migd_vm_info_new(call, v);
	if (!info)
		return;
	/* The reply outlives the entry: copy the strings it points to. */
	info->name = migd_call_strdup(call, v->name);
	if (!info->name)
		return;
	old = info->state;
	info->state = MIGD__VM_STATE__VM_STATE_STOPPED;
	migd_publish_vm_state(migd_vmm_of(call), v, old, true);
	/* Its console log goes with it. */
	snprintf(log, sizeof(log), "%s", v->vm->cfg.boot.console_log);
	migd_registry_remove(&migd_vmm_of(call)->reg, v);
	console_log_remove(log);
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM;
	call->resp->vm = info;
}
