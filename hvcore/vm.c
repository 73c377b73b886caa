// SPDX-License-Identifier: MIT
/*
 * hv_vm: generic VM object over an accelerator ops table (see vm.h).
 * Guest memory, memslots and their dirty bitmaps, vCPU life cycle, the
 * workload ABI pages live here, the composed VM state in vm_state.c; no
 * ioctls.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/bug.h"
#include "hvcore/console.h"
#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/memslots.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

#ifdef HV_HAVE_KVM
#include "hvcore/kvm/kvm.h"
#endif
#ifdef HV_HAVE_SOFT
#include "hvcore/soft/soft.h"
#endif

static const struct hv_accel_ops *const accel_ops[HV_ACCEL_COUNT] = {
#ifdef HV_HAVE_KVM
	[HV_ACCEL_KVM] = &hv_kvm_ops,
#endif
#ifdef HV_HAVE_SOFT
	[HV_ACCEL_SOFT] = &hv_soft_ops,
#endif
};

static const char *const dirty_mode_names[HV_DIRTY_COUNT] = {
	[HV_DIRTY_INVALID] = "off",   [HV_DIRTY_RING] = "ring",
	[HV_DIRTY_BITMAP] = "bitmap", [HV_DIRTY_WP] = "wp",
	[HV_DIRTY_PML] = "pml",
};

static const char *const exit_kind_names[HV_EXIT_COUNT] = {
	[HV_EXIT_INVALID] = "invalid",	   [HV_EXIT_KICK] = "kick",
	[HV_EXIT_LOG_FULL] = "log_full",   [HV_EXIT_SYNC] = "sync",
	[HV_EXIT_HEARTBEAT] = "heartbeat", [HV_EXIT_DONE] = "done",
	[HV_EXIT_ASSERT] = "assert",	   [HV_EXIT_SHUTDOWN] = "shutdown",
	[HV_EXIT_ERROR] = "error",
};

const char *hv_dirty_mode_name(enum hv_dirty_mode mode)
{
	return (unsigned)mode < HV_DIRTY_COUNT ? dirty_mode_names[mode] : "?";
}

const char *hv_exit_kind_name(enum hv_exit_kind kind)
{
	return (unsigned)kind < HV_EXIT_COUNT ? exit_kind_names[kind] : "?";
}

void hv_vm_cfg_init(struct hv_vm_cfg *cfg, enum hv_accel_kind accel,
		    uint64_t mem_bytes, uint32_t nr_vcpus)
{
	uint64_t pages, per;

	memset(cfg, 0, sizeof(*cfg));
	cfg->accel = accel;
	cfg->mem_bytes = mem_bytes;
	cfg->nr_vcpus = nr_vcpus;
	cfg->backing = HV_BACKING_ANON;
	cfg->mem_fd = -1;
	if (!nr_vcpus || nr_vcpus > HV_VM_MAX_VCPUS ||
	    mem_bytes <= HV_VM_WL_BASE)
		return;
	pages = (mem_bytes - HV_VM_WL_BASE) >> HV_PAGE_SHIFT;
	per = pages / nr_vcpus;
	for (uint32_t i = 0; i < nr_vcpus; i++) {
		struct hv_wl_vcpu_params *w = &cfg->wl[i];
		struct hv_ram_layout l = hv_ram_layout_std(mem_bytes);

		w->pattern = HV_WL_PATTERN_SWEEP;
		w->content = HV_WL_CONTENT_STAMP;
		/* Shares of RAM offsets: a share that would start at the
		 * hole's first offset starts at 4 GiB instead. */
		w->region_gpa = hv_ram_off_to_gpa(
			&l, HV_VM_WL_BASE + i * per * HV_PAGE_SIZE);
		w->region_pages = per;
		w->write_pct = 100;
		w->seed = 0x5eed0000u + i;
	}
}

static int check_cfg(const struct hv_vm_cfg *c)
{
	const uint64_t two_m = 2ULL << 20;

	if (c->accel == HV_ACCEL_INVALID || c->accel >= HV_ACCEL_COUNT)
		return -EINVAL;
	if (c->mem_bytes < HV_VM_MIN_MEM || c->mem_bytes > HV_VM_MAX_MEM ||
	    c->mem_bytes % two_m)
		return -EINVAL;
	if (c->slot_bytes % two_m ||
	    hv_vm_slot_geometry(c->mem_bytes, c->slot_bytes, 0, NULL, NULL) >
		    HV_MEMSLOT_MAX)
		return -EINVAL;
	if (!c->nr_vcpus || c->nr_vcpus > HV_VM_MAX_VCPUS)
		return -EINVAL;
	if (c->backing == HV_BACKING_INVALID || c->backing >= HV_BACKING_COUNT)
		return -EINVAL;
	if (c->dirty_ring_entries &&
	    (c->dirty_ring_entries & (c->dirty_ring_entries - 1)))
		return -EINVAL;
	if (c->clear_chunk_pages % HV_DIRTY_WORD_PAGES)
		return -EINVAL;
	if (c->adopt_mem && c->mem_fd < 0)
		return -EINVAL;
	for (uint32_t i = 0; i < c->nr_vcpus; i++) {
		const struct hv_wl_vcpu_params *w = &c->wl[i];
		struct hv_ram_layout l = hv_ram_layout_std(c->mem_bytes);
		uint64_t off;

		if (w->pattern == HV_WL_PATTERN_IDLE)
			continue;
		off = hv_wl_region_off(&l, w);
		if (off == HV_RAM_BAD || off < HV_VM_WL_BASE ||
		    !w->region_pages)
			return -EINVAL;
	}
	return 0;
}

unsigned hv_vm_slot_geometry(uint64_t mem_bytes, uint64_t slot_bytes,
			     unsigned idx, gfn_t *base_gfn, uint64_t *npages)
{
	uint64_t low = HV_MIN(mem_bytes, HV_RAM_HOLE_START);
	uint64_t high = mem_bytes - low;
	uint64_t step_lo = slot_bytes ? slot_bytes : low;
	uint64_t step_hi = slot_bytes ? slot_bytes : high;
	uint64_t n_lo, n_hi, base, end;

	if (!step_lo)
		return 0;
	n_lo = HV_DIV_ROUND_UP(low, step_lo);
	n_hi = high ? HV_DIV_ROUND_UP(high, step_hi) : 0;
	if (n_lo + n_hi > UINT_MAX)
		return UINT_MAX;
	if (idx < n_lo) {
		base = idx * step_lo;
		end = HV_MIN(base + step_lo, low);
	} else if (idx - n_lo < n_hi) {
		base = HV_RAM_HOLE_END + (idx - n_lo) * step_hi;
		end = HV_MIN(base + step_hi, HV_RAM_HOLE_END + high);
	} else {
		base = end = 0;
	}
	if (base_gfn)
		*base_gfn = base >> HV_PAGE_SHIFT;
	if (npages)
		*npages = (end - base) >> HV_PAGE_SHIFT;
	return (unsigned)(n_lo + n_hi);
}

/* The slots of hv_vm_slot_geometry(), each told to the accelerator. */
static int add_slots(struct hv_vm *vm)
{
	struct hv_ram_layout l = hv_vm_ram_layout(vm);
	unsigned n = hv_vm_slot_geometry(vm->cfg.mem_bytes, vm->cfg.slot_bytes,
					 0, NULL, NULL);

	for (unsigned id = 0; id < n; id++) {
		struct hv_memslot_desc d = {.id = id, .flags = 0};
		uint64_t off;
		int ret;

		hv_vm_slot_geometry(vm->cfg.mem_bytes, vm->cfg.slot_bytes, id,
				    &d.base_gfn, &d.npages);
		off = hv_ram_gpa_to_off(&l, hv_gfn_to_gpa(d.base_gfn));
		d.hva = (hva_t)(uintptr_t)(vm->mem->hva + off);
		ret = hv_memslots_add(vm->slots, &d);
		if (ret)
			return ret;
		ret = vm->ops->memslot_update(vm, NULL, &d);
		if (ret) {
			hv_memslots_delete(vm->slots, id);
			return ret;
		}
	}
	return 0;
}

static int write_params(struct hv_vm *vm)
{
	struct hv_wl_params *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->magic = HV_WL_MAGIC;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = vm->cfg.nr_vcpus;
	p->tsc_khz = vm->tsc_khz;
	p->ram = hv_vm_ram_layout(vm);
	memcpy(p->vcpu, vm->cfg.wl, sizeof(p->vcpu));
	ret = hv_vm_write_guest(vm, HV_WL_PARAMS_GPA, p, sizeof(*p));
	free(p);
	return ret;
}

static void destroy_vcpus(struct hv_vm *vm)
{
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		if (vm->vcpus[i])
			hv_vcpu_stop(vm->vcpus[i]);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		hv_vcpu_destroy(vm->vcpus[i]);
	free(vm->vcpus);
	vm->vcpus = NULL;
}

int hv_vm_create(const struct hv_vm_cfg *cfg, struct hv_vm **out)
{
	struct hv_vm *vm;
	int ret;

	ret = check_cfg(cfg);
	if (ret) {
		bool no_fd = cfg->adopt_mem && cfg->mem_fd < 0;

		hv_err("vm", "op=create err=%d reason=%s", ret,
		       no_fd ? "adopt_mem_without_fd" : "bad_cfg");
		return ret;
	}
	if (!accel_ops[cfg->accel]) {
		hv_err("vm", "op=create accel=%s err=%d reason=not_built",
		       hv_accel_kind_name(cfg->accel), -ENODEV);
		return -ENODEV;
	}
	if (cfg->boot.kernel[0] && !accel_ops[cfg->accel]->boots_linux) {
		hv_err("vm", "op=create accel=%s err=%d reason=no_linux_boot",
		       hv_accel_kind_name(cfg->accel), -EOPNOTSUPP);
		return -EOPNOTSUPP;
	}
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	vm->ops = accel_ops[cfg->accel];
	vm->cfg = *cfg;
	vm->cfg.adopt_mem = false;
	vm->cfg.mem_fd = -1;
	vm->state = HV_VM_CREATED;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_mutex_init(&vm->dirty_lock, NULL);
	vm->vcpus = calloc(cfg->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		ret = -ENOMEM;
		goto err_free;
	}
	if (cfg->boot.kernel[0]) {
		ret = hv_console_create(0, cfg->boot.console_log, cfg->adopt_mem,
					&vm->console);
		if (ret)
			goto err_free;
	}
	if (cfg->adopt_mem)
		ret = hv_guest_mem_adopt(cfg->mem_fd, cfg->mem_bytes,
					 cfg->backing, &vm->mem);
	else
		ret = hv_guest_mem_create(cfg->mem_bytes, cfg->backing,
					  &vm->mem);
	if (ret)
		goto err_free;
	ret = hv_memslots_create(&vm->slots);
	if (ret)
		goto err_mem;
	/* Like KVM_DIRTY_LOG_INITIALLY_SET: a fresh log names every page. */
	hv_memslots_set_initially_set(vm->slots, true);
	ret = vm->ops->vm_init(vm);
	/* The devices dup'd what they adopt (hv_boot_cfg.adopt_fds): the
	 * copy names no fd of the caller's. */
	vm->cfg.boot.adopt_fds = false;
	vm->cfg.boot.net_fd = -1;
	for (unsigned i = 0; i < HV_BOOT_DISKS_MAX; i++)
		vm->cfg.boot.disk_fd[i] = -1;
	if (ret)
		goto err_slots;
	ret = add_slots(vm);
	if (ret)
		goto err_accel;
	for (uint32_t i = 0; i < cfg->nr_vcpus; i++) {
		ret = hv_vcpu_create(vm, i, &vm->vcpus[i]);
		if (ret)
			goto err_vcpus;
	}
	/* After the vCPUs: the accelerator may learn tsc_khz from one. An
	 * adopted RAM holds the params its guest runs with already. */
	ret = vm->mem->adopted || hv_vm_is_linux(vm) ? 0 : write_params(vm);
	if (ret)
		goto err_vcpus;
	hv_info("vm",
		"op=create vm=%s accel=%s mem=%llu vcpus=%u slots=%u "
		"backing=%s ring=%u adopted=%d",
		hv_vm_name(vm), vm->ops->name,
		(unsigned long long)cfg->mem_bytes, cfg->nr_vcpus,
		hv_vm_slot_count(vm), hv_mem_backing_name(cfg->backing),
		cfg->dirty_ring_entries, vm->mem->adopted);
	*out = vm;
	return 0;

err_vcpus:
	destroy_vcpus(vm);
err_accel:
	vm->ops->vm_fini(vm);
err_slots:
	hv_memslots_destroy(vm->slots);
err_mem:
	hv_guest_mem_destroy(vm->mem);
err_free:
	hv_console_destroy(vm->console);
	free(vm->vcpus);
	pthread_mutex_destroy(&vm->dirty_lock);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
	hv_err("vm", "op=create accel=%s err=%d",
	       hv_accel_kind_name(cfg->accel), ret);
	return ret;
}

void hv_vm_destroy(struct hv_vm *vm)
{
	if (!vm)
		return;
	hv_vm_stop(vm);
	destroy_vcpus(vm);
	vm->ops->vm_fini(vm);
	hv_memslots_destroy(vm->slots);
	hv_guest_mem_destroy(vm->mem);
	hv_console_destroy(vm->console);
	pthread_mutex_destroy(&vm->dirty_lock);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

struct hv_console *hv_vm_console(struct hv_vm *vm)
{
	return vm->console;
}

enum hv_vm_exit hv_vm_exit_reason(struct hv_vm *vm)
{
	return (enum hv_vm_exit)atomic_load(&vm->exit_reason);
}

void hv_vm_set_exit_reason(struct hv_vm *vm, enum hv_vm_exit why)
{
	int none = HV_VM_EXIT_NONE;

	atomic_compare_exchange_strong(&vm->exit_reason, &none, (int)why);
}

void hv_vm_guest_stopped(struct hv_vm *vm, enum hv_vm_exit why)
{
	hv_vm_set_exit_reason(vm, why);
	/* Ask every vCPU to stop without joining (the caller may be one of
	 * them): each leaves at its next kick check and parks as STOPPED;
	 * hv_vm_get_state() then reads STOPPED. */
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct hv_vcpu *v = vm->vcpus[i];

		if (!v)
			continue;
		pthread_mutex_lock(&v->lock);
		__atomic_store_n(&v->req, HV_VCPU_REQ_STOP, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&v->cond);
		pthread_mutex_unlock(&v->lock);
		vm->ops->vcpu_kick(v);
	}
}

const char *hv_vm_exit_name(enum hv_vm_exit why)
{
	static const char *const names[HV_VM_EXIT_COUNT] = {
		[HV_VM_EXIT_NONE] = "none",
		[HV_VM_EXIT_POWEROFF] = "poweroff",
		[HV_VM_EXIT_REBOOT] = "reboot",
		[HV_VM_EXIT_PANIC] = "panic",
		[HV_VM_EXIT_ERROR] = "error",
	};

	return (unsigned)why < HV_VM_EXIT_COUNT ? names[why] : "?";
}

static int start_threads(struct hv_vm *vm, bool paused)
{
	int ret = 0;

	pthread_mutex_lock(&vm->lock);
	if (vm->state != HV_VM_CREATED) {
		ret = -EBUSY;
		goto out;
	}
	/* Devices loaded from a saved state wait for this (or a resume). */
	if (!paused && vm->ops->devices_run)
		vm->ops->devices_run(vm);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		ret = hv_vcpu_start(vm->vcpus[i], paused);
		if (ret) {
			/* Threads already started are stopped by stop. */
			vm->state = HV_VM_RUNNING;
			pthread_mutex_unlock(&vm->lock);
			hv_vm_stop(vm);
			return ret;
		}
	}
	for (uint32_t i = 0; paused && i < vm->cfg.nr_vcpus; i++)
		hv_vcpu_wait_parked(vm->vcpus[i]);
	vm->state = paused ? HV_VM_PAUSED : HV_VM_RUNNING;
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int hv_vm_start(struct hv_vm *vm)
{
	return start_threads(vm, false);
}

int hv_vm_start_paused(struct hv_vm *vm)
{
	return start_threads(vm, true);
}

int hv_vm_pause(struct hv_vm *vm)
{
	int ret = 0;

	pthread_mutex_lock(&vm->lock);
	if (vm->state != HV_VM_RUNNING) {
		ret = -EBUSY;
		goto out;
	}
	/* Ask all first, then wait: the vCPUs park in parallel. */
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		hv_vcpu_request_pause(vm->vcpus[i]);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		hv_vcpu_wait_parked(vm->vcpus[i]);
	/* The devices' I/O completed too: the state is whole. */
	if (vm->ops->devices_pause)
		vm->ops->devices_pause(vm);
	vm->state = HV_VM_PAUSED;
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int hv_vm_resume(struct hv_vm *vm)
{
	int ret = 0;

	pthread_mutex_lock(&vm->lock);
	if (vm->state != HV_VM_PAUSED) {
		ret = -EBUSY;
		goto out;
	}
	if (vm->ops->devices_run)
		vm->ops->devices_run(vm);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		hv_vcpu_resume(vm->vcpus[i]);
	vm->state = HV_VM_RUNNING;
out:
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int hv_vm_stop(struct hv_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		if (vm->vcpus[i])
			hv_vcpu_stop(vm->vcpus[i]);
	vm->state = HV_VM_STOPPED;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

enum hv_vm_state hv_vm_get_state(struct hv_vm *vm)
{
	enum hv_vm_state s;

	pthread_mutex_lock(&vm->lock);
	s = vm->state;
	/* A guest that stopped itself (hv_vm_guest_stopped) is STOPPED once
	 * its last vCPU parked. */
	if ((s == HV_VM_RUNNING || s == HV_VM_PAUSED) &&
	    hv_vm_exit_reason(vm) != HV_VM_EXIT_NONE) {
		bool all = true;

		for (uint32_t i = 0; i < vm->cfg.nr_vcpus && all; i++)
			all = hv_vcpu_get_state(vm->vcpus[i]) ==
			      HV_VCPU_STOPPED;
		if (all)
			s = vm->state = HV_VM_STOPPED;
	}
	pthread_mutex_unlock(&vm->lock);
	return s;
}

int hv_vm_wait(struct hv_vm *vm, unsigned timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct hv_vcpu *v = vm->vcpus[i];

		pthread_mutex_lock(&v->lock);
		while (v->state != HV_VCPU_STOPPED && ret == 0)
			ret = -pthread_cond_timedwait(&v->cond, &v->lock, &dl);
		if (v->stats.asserted || v->stats.error)
			ret = ret ? ret : -EIO;
		pthread_mutex_unlock(&v->lock);
		if (ret)
			return ret;
	}
	return 0;
}

uint64_t hv_vm_vcpu_dirty_logged(struct hv_vm *vm, uint32_t idx)
{
	if (idx >= vm->cfg.nr_vcpus)
		return 0;
	return atomic_load_explicit(&vm->vcpus[idx]->dirty_logged,
				    memory_order_relaxed);
}

enum hv_dirty_mode hv_vm_dirty_mode(struct hv_vm *vm)
{
	enum hv_dirty_mode mode;

	pthread_mutex_lock(&vm->dirty_lock);
	mode = vm->dirty_mode;
	pthread_mutex_unlock(&vm->dirty_lock);
	return mode;
}

bool hv_vm_dirty_per_vcpu(struct hv_vm *vm)
{
	enum hv_dirty_mode mode = hv_vm_dirty_mode(vm);

	return mode == HV_DIRTY_RING || mode == HV_DIRTY_WP ||
	       mode == HV_DIRTY_PML;
}

int hv_vm_vcpu_stats(struct hv_vm *vm, uint32_t idx, struct hv_vcpu_stats *out)
{
	if (idx >= vm->cfg.nr_vcpus)
		return -EINVAL;
	hv_vcpu_get_stats(vm->vcpus[idx], out);
	return 0;
}

void hv_vm_get_stats(struct hv_vm *vm, struct hv_vm_stats *out)
{
	out->harvests = __atomic_load_n(&vm->stats.harvests, __ATOMIC_RELAXED);
	out->harvested =
		__atomic_load_n(&vm->stats.harvested, __ATOMIC_RELAXED);
	out->fetched = __atomic_load_n(&vm->stats.fetched, __ATOMIC_RELAXED);
	out->clear_calls =
		__atomic_load_n(&vm->stats.clear_calls, __ATOMIC_RELAXED);
	out->vmm_writes =
		__atomic_load_n(&vm->stats.vmm_writes, __ATOMIC_RELAXED);
}

/* ---- dirty logging -------------------------------------------------- */

/* Set or clear HV_MEMSLOT_F_DIRTY_LOG on every slot, telling the accel. */
static int set_logging(struct hv_vm *vm, bool on)
{
	unsigned n = hv_vm_slot_count(vm);
	int ret = 0;

	for (unsigned i = 0; i < n; i++) {
		struct hv_memslot_desc old, nd;
		const struct hv_memslots_snap *s;
		const struct hv_memslot *m;

		s = hv_memslots_read_lock(vm->slots);
		m = hv_memslots_at(s, i);
		old = (struct hv_memslot_desc){m->id, m->flags, m->base_gfn,
					       m->npages, m->hva};
		hv_memslots_read_unlock(vm->slots);
		nd = old;
		nd.flags = on ? old.flags | HV_MEMSLOT_F_DIRTY_LOG
			      : old.flags & ~HV_MEMSLOT_F_DIRTY_LOG;
		ret = hv_memslots_set_flags(vm->slots, old.id, nd.flags);
		if (ret)
			break;
		ret = vm->ops->memslot_update(vm, &old, &nd);
		if (ret) {
			hv_memslots_set_flags(vm->slots, old.id, old.flags);
			break;
		}
	}
	return ret;
}

int hv_vm_dirty_log_start(struct hv_vm *vm, enum hv_dirty_mode mode)
{
	int ret;

	if (mode == HV_DIRTY_INVALID || mode >= HV_DIRTY_COUNT)
		return -EINVAL;
	pthread_mutex_lock(&vm->dirty_lock);
	if (vm->dirty_mode != HV_DIRTY_INVALID) {
		ret = -EBUSY;
		goto out;
	}
	ret = vm->ops->dirty_log_start(vm, mode);
	if (ret)
		goto out;
	ret = set_logging(vm, true);
	if (ret) {
		set_logging(vm, false);
		vm->ops->dirty_log_stop(vm);
		goto out;
	}
	vm->dirty_mode = mode;
out:
	pthread_mutex_unlock(&vm->dirty_lock);
	if (ret)
		hv_err("vm", "vm=%s op=dirty_log_start mode=%s err=%d",
		       hv_vm_name(vm), hv_dirty_mode_name(mode), ret);
	return ret;
}

int hv_vm_dirty_log_stop(struct hv_vm *vm)
{
	int ret = 0;

	pthread_mutex_lock(&vm->dirty_lock);
	if (vm->dirty_mode == HV_DIRTY_INVALID) {
		ret = -EINVAL;
		goto out;
	}
	ret = set_logging(vm, false);
	vm->ops->dirty_log_stop(vm);
	vm->dirty_mode = HV_DIRTY_INVALID;
out:
	pthread_mutex_unlock(&vm->dirty_lock);
	return ret;
}

int64_t hv_vm_dirty_harvest(struct hv_vm *vm)
{
	int64_t n;

	pthread_mutex_lock(&vm->dirty_lock);
	if (vm->dirty_mode == HV_DIRTY_INVALID)
		n = -EINVAL;
	else
		n = vm->ops->dirty_harvest(vm);
	pthread_mutex_unlock(&vm->dirty_lock);
	if (n >= 0) {
		__atomic_fetch_add(&vm->stats.harvests, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&vm->stats.harvested, (uint64_t)n,
				   __ATOMIC_RELAXED);
	}
	return n;
}

/*
 * Fetch-and-clear one chunk at a time and re-arm it at once, so that the
 * window in which a harvested page is neither in our bitmap nor protected
 * stays one chunk wide, and the accelerator (KVM's mmu_lock, the soft MMU's
 * lock) is held for one chunk at a time while vCPUs keep running.
 */
int64_t hv_vm_dirty_fetch_clear(struct hv_vm *vm, uint32_t slot_id,
				uint64_t first, uint64_t count, uint64_t *dst)
{
	const struct hv_memslots_snap *s;
	const struct hv_memslot *m;
	uint64_t chunk, done = 0;
	int64_t total = 0;

	pthread_mutex_lock(&vm->dirty_lock);
	s = hv_memslots_read_lock(vm->slots);
	m = hv_memslots_by_id(s, slot_id);
	if (!m) {
		total = -ENOENT;
		goto out;
	}
	if (!m->dirty || first % HV_DIRTY_WORD_PAGES || first >= m->npages ||
	    count > m->npages - first ||
	    (count % HV_DIRTY_WORD_PAGES && first + count != m->npages)) {
		total = -EINVAL;
		goto out;
	}
	chunk = vm->cfg.clear_chunk_pages ? vm->cfg.clear_chunk_pages : count;
	while (done < count) {
		uint64_t n = HV_MIN(chunk, count - done);
		uint64_t *d = dst + done / HV_DIRTY_WORD_PAGES;
		int64_t got;

		got = hv_dirty_bitmap_fetch_clear(m->dirty, first + done, n, d);
		if (got < 0) {
			total = got;
			goto out;
		}
		if (got && vm->ops->dirty_clear) {
			int ret = vm->ops->dirty_clear(vm, slot_id,
						       first + done, n, d);

			__atomic_fetch_add(&vm->stats.clear_calls, 1,
					   __ATOMIC_RELAXED);
			if (ret) {
				/* Not re-armed: put the bits back so that
				 * nothing is lost, and report the error. */
				for (uint64_t k = 0; k < HV_DIV_ROUND_UP(n, 64);
				     k++)
					hv_dirty_bitmap_set_mask(
						m->dirty,
						(first + done) / 64 + k, d[k]);
				total = ret;
				goto out;
			}
		}
		total += got;
		done += n;
	}
	__atomic_fetch_add(&vm->stats.fetched, (uint64_t)total,
			   __ATOMIC_RELAXED);
out:
	hv_memslots_read_unlock(vm->slots);
	pthread_mutex_unlock(&vm->dirty_lock);
	return total;
}

int hv_vm_set_clear_chunk(struct hv_vm *vm, uint64_t pages)
{
	if (pages % HV_DIRTY_WORD_PAGES)
		return -EINVAL;
	pthread_mutex_lock(&vm->dirty_lock);
	vm->cfg.clear_chunk_pages = pages;
	pthread_mutex_unlock(&vm->dirty_lock);
	return 0;
}

int hv_vm_mem_fd(struct hv_vm *vm)
{
	return hv_guest_mem_fd(vm->mem);
}

bool hv_vm_mem_adopted(struct hv_vm *vm)
{
	return vm->mem->adopted;
}

unsigned hv_vm_slot_count(struct hv_vm *vm)
{
	unsigned n = hv_memslots_count(hv_memslots_read_lock(vm->slots));

	hv_memslots_read_unlock(vm->slots);
	return n;
}

int hv_vm_slot_info(struct hv_vm *vm, unsigned idx, uint32_t *id,
		    gfn_t *base_gfn, uint64_t *npages)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(vm->slots);
	int ret = -ENOENT;

	if (idx < hv_memslots_count(s)) {
		const struct hv_memslot *m = hv_memslots_at(s, idx);

		*id = m->id;
		*base_gfn = m->base_gfn;
		*npages = m->npages;
		ret = 0;
	}
	hv_memslots_read_unlock(vm->slots);
	return ret;
}

/* ---- guest memory access -------------------------------------------- */

struct hv_ram_layout hv_vm_ram_layout(const struct hv_vm *vm)
{
	return hv_ram_layout_std(vm->cfg.mem_bytes);
}

uint8_t *hv_vm_ram(struct hv_vm *vm)
{
	return vm->mem->hva;
}

void *hv_vm_gpa_to_hva(struct hv_vm *vm, gpa_t gpa, uint64_t len)
{
	struct hv_ram_layout l = hv_vm_ram_layout(vm);
	uint64_t off = hv_ram_range_to_off(&l, gpa, len);

	if (off == HV_RAM_BAD || off >= vm->mem->bytes ||
	    len > vm->mem->bytes - off)
		return NULL;
	return vm->mem->hva + off;
}

int hv_vm_write_guest(struct hv_vm *vm, gpa_t gpa, const void *buf,
		      uint64_t len)
{
	uint8_t *p = hv_vm_gpa_to_hva(vm, gpa, len);

	if (!p)
		return -EFAULT;
	if (!len)
		return 0;
	memcpy(p, buf, len);
	hv_vm_mark_dirty(vm, gpa, len);
	return 0;
}

void hv_vm_mark_dirty(struct hv_vm *vm, gpa_t gpa, uint64_t len)
{
	const struct hv_memslots_snap *s;
	const struct hv_memslot *m = NULL;
	uint64_t marked = 0;

	if (!len)
		return;
	/* Data first, then the bit (release in the bitmap): a harvester that
	 * sees the bit reads the new data. */
	s = hv_memslots_read_lock(vm->slots);
	for (gfn_t g = hv_gpa_to_gfn(gpa); g <= hv_gpa_to_gfn(gpa + len - 1);
	     g++) {
		if (!m || g < m->base_gfn || g >= m->base_gfn + m->npages)
			m = hv_memslots_by_gfn(s, g);
		if (m && m->dirty) {
			hv_dirty_bitmap_set(m->dirty, g - m->base_gfn);
			marked++;
		}
	}
	hv_memslots_read_unlock(vm->slots);
	if (marked)
		__atomic_fetch_add(&vm->stats.vmm_writes, marked,
				   __ATOMIC_RELAXED);
}

int hv_vm_read_guest(struct hv_vm *vm, gpa_t gpa, void *buf, uint64_t len)
{
	const uint8_t *p = hv_vm_gpa_to_hva(vm, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int hv_vm_wl_set_vcpu(struct hv_vm *vm, uint32_t idx,
		      const struct hv_wl_vcpu_params *p)
{
	if (idx >= vm->cfg.nr_vcpus)
		return -EINVAL;
	return hv_vm_write_guest(vm,
				 HV_WL_PARAMS_GPA +
					 offsetof(struct hv_wl_params, vcpu) +
					 idx * sizeof(*p),
				 p, sizeof(*p));
}

const volatile struct hv_wl_status *hv_vm_wl_status(struct hv_vm *vm,
						    uint32_t idx)
{
	if (idx >= vm->cfg.nr_vcpus)
		return NULL;
	return hv_vm_gpa_to_hva(
		vm, HV_WL_STATUS_GPA + idx * sizeof(struct hv_wl_status),
		sizeof(struct hv_wl_status));
}
