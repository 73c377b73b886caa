// SPDX-License-Identifier: MIT
#include "hvcore/soft/soft_vcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"

#define FAULT_CACHE_MIN 4u /* one table per level below the root */

int hv_soft_vcpu_create(struct hv_soft_vm *vm, uint32_t id,
			struct hv_soft_vcpu **out)
{
	struct hv_soft_vcpu *v;
	int ret = -ENOMEM;

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->scratch = aligned_alloc(HV_PAGE_SIZE, HV_PAGE_SIZE);
	if (!v->scratch)
		goto err_free;
	v->vm = vm;
	v->id = id;
	pthread_mutex_init(&v->pml_lock, NULL);
	ret = hv_soft_mmu_tlb_register(vm->mmu, &v->ack);
	if (ret)
		goto err_scratch;
	ret = hv_soft_vm_add_vcpu(vm, v);
	if (ret)
		goto err_tlb;
	*out = v;
	return 0;

err_tlb:
	hv_soft_mmu_tlb_unregister(vm->mmu, &v->ack);
err_scratch:
	pthread_mutex_destroy(&v->pml_lock);
	free(v->scratch);
err_free:
	free(v);
	return ret;
}

void hv_soft_vcpu_destroy(struct hv_soft_vcpu *v)
{
	if (!v)
		return;
	hv_soft_vcpu_access_end(v);
	hv_soft_vm_del_vcpu(v->vm, v);
	hv_soft_vcpu_flush_pml(v);
	hv_soft_mmu_tlb_unregister(v->vm->mmu, &v->ack);
	hv_soft_pgcache_drain(&v->cache);
	pthread_mutex_destroy(&v->pml_lock);
	free(v->scratch);
	free(v);
}

void hv_soft_vcpu_access_end(struct hv_soft_vcpu *v)
{
	if (v->in_access) {
		hv_soft_tlb_exit(&v->ack);
		v->in_access = false;
	}
}

unsigned hv_soft_vcpu_flush_pml(struct hv_soft_vcpu *v)
{
	unsigned n;

	pthread_mutex_lock(&v->pml_lock);
	n = hv_soft_pml_flush(v->vm->slots, v->pml, v->pml_nr,
			      atomic_load_explicit(&v->vm->pml_per_entry,
						   memory_order_relaxed));
	v->pml_nr = 0;
	pthread_mutex_unlock(&v->pml_lock);
	atomic_fetch_add_explicit(&v->vm->pml_flushed, n,
				  memory_order_relaxed);
	return n;
}

/* Append @gpa; true when the log is now full (a "PML full" exit). */
static bool pml_append(struct hv_soft_vcpu *v, gpa_t gpa)
{
	bool full;

	pthread_mutex_lock(&v->pml_lock);
	v->pml[v->pml_nr++] = gpa;
	full = v->pml_nr == HV_SOFT_PML_ENTRIES;
	pthread_mutex_unlock(&v->pml_lock);
	atomic_fetch_add_explicit(&v->vm->pml_logged, 1, memory_order_relaxed);
	if (v->logged)
		atomic_fetch_add_explicit(v->logged, 1, memory_order_relaxed);
	return full;
}

/* Largest leaf level the slot allows for @gfn (both gfn and hva aligned,
 * range inside the slot). */
static unsigned pick_level(struct hv_soft_vm *vm, const struct hv_memslot *s,
			   gfn_t gfn, bool logging)
{
	const struct hv_arch_pte_fmt *fmt = hv_soft_mmu_fmt(vm->mmu);

	if (logging || !vm->cfg.huge)
		return 0;
	for (unsigned l = fmt->max_leaf_level; l > 0; l--) {
		uint64_t n = 1ULL << (HV_PTE_LEVEL_BITS * l);
		gfn_t start = HV_ALIGN_DOWN(gfn, n);
		hva_t hva;

		if (start < s->base_gfn || start + n > s->base_gfn + s->npages)
			continue;
		hva = (hva_t)(uintptr_t)hv_memslot_gfn_to_hva(s, start);
		if (hva & ((n << HV_PAGE_SHIFT) - 1))
			continue;
		return l;
	}
	return 0;
}

struct fault {
	bool write;
	bool pml_full;
	struct hv_soft_tlbe *e;
};

/*
 * Resolve a TLB miss for @gpa under the MMU read lock. The loop re-walks
 * after every change it makes (or loses) until the leaf allows the access,
 * then fills the TLB entry.
 */
static int fault_locked(struct hv_soft_vcpu *v, const struct hv_memslot *s,
			gpa_t gpa, struct fault *f)
{
	struct hv_soft_vm *vm = v->vm;
	struct hv_soft_mmu *mmu = vm->mmu;
	const struct hv_arch_pte_fmt *fmt = hv_soft_mmu_fmt(mmu);
	int mode = atomic_load_explicit(&vm->log_mode, memory_order_acquire);
	bool logging = mode != HV_SOFT_LOG_OFF && s->dirty;
	gfn_t gfn = hv_gpa_to_gfn(gpa);
	struct hv_soft_walk w;
	int ret;

	for (;;) {
		unsigned perm;

		if (!hv_soft_mmu_walk(mmu, gpa, &w)) {
			unsigned l = pick_level(vm, s, gfn, logging);
			uint64_t n = 1ULL << (HV_PTE_LEVEL_BITS * l);
			gfn_t start = HV_ALIGN_DOWN(gfn, n);
			bool log_wp = false, log_pml = false;

			perm = HV_PTE_R | HV_PTE_W | HV_PTE_D;
			if (logging && !f->write)
				perm = mode == HV_SOFT_LOG_WP
					       ? HV_PTE_R
					       : HV_PTE_R | HV_PTE_W;
			else if (logging && mode == HV_SOFT_LOG_WP)
				log_wp = true;
			else if (logging)
				log_pml = true;
			if (s->flags & HV_MEMSLOT_F_READONLY)
				perm &= ~(HV_PTE_W | HV_PTE_D);
			ret = hv_soft_mmu_map(
				mmu, hv_gfn_to_gpa(start),
				(hva_t)(uintptr_t)hv_memslot_gfn_to_hva(s,
									start),
				l, perm, &v->cache);
			if (ret == -ENOMEM)
				return ret;
			/* Log only once the writable leaf is in: see the
			 * write-protection fault below for why. */
			if (!ret && log_wp) {
				hv_dirty_bitmap_set(s->dirty,
						    gfn - s->base_gfn);
				if (v->logged)
					atomic_fetch_add_explicit(
						v->logged, 1,
						memory_order_relaxed);
			}
			if (!ret && log_pml)
				f->pml_full |= pml_append(v, gpa);
			continue;
		}
		perm = fmt->perm(w.pte);
		if (!f->write ||
		    (perm & (HV_PTE_W | HV_PTE_D)) == (HV_PTE_W | HV_PTE_D))
			break;
		if (s->flags & HV_MEMSLOT_F_READONLY)
			return -EFAULT;
		if (!(perm & HV_PTE_W)) {
			/* Write-protection fault. Huge leaves in a logged
			 * slot are split first: the bit must name the 4 KiB
			 * page, and the other 511 must stay protected. */
			if (logging && w.level > 0) {
				ret = hv_soft_mmu_split(mmu, &w, &v->cache);
				if (ret == -ENOMEM)
					return ret;
				continue;
			}
			/*
			 * CAS first, then the bit (KVM's fast page fault
			 * does the same). The other order loses writes:
			 *   vCPU: bit = 1
			 *   harvester: fetch bit; protect: leaf already
			 *              read-only, nothing to do; return
			 *   vCPU: CAS -> writable; writes from now on are
			 *         in no bitmap and nothing protects them.
			 * With the bit after the CAS, whoever fetches it
			 * finds the leaf writable and protects it, and
			 * the bit is set before this vCPU writes.
			 */
			if (hv_soft_mmu_set_perm(mmu, &w,
						 perm | HV_PTE_W | HV_PTE_D)) {
				if (logging) {
					hv_dirty_bitmap_set(s->dirty,
							    gfn - s->base_gfn);
					if (v->logged)
						atomic_fetch_add_explicit(
							v->logged, 1,
							memory_order_relaxed);
				}
				atomic_fetch_add_explicit(&vm->wp_faults, 1,
						memory_order_relaxed);
			}
			continue;
		}
		/* Writable but clean: the "hardware" sets the dirty bit and,
		 * in PML mode, logs the GPA. */
		if (hv_soft_mmu_set_perm(mmu, &w, perm | HV_PTE_D) && logging &&
		    mode == HV_SOFT_LOG_PML)
			f->pml_full |= pml_append(v, gpa);
	}
	{
		uint64_t size = 1ULL << hv_pte_level_shift(w.level);
		uint64_t off = gpa & (size - 1) & HV_PAGE_MASK;
		unsigned perm = fmt->perm(w.pte);

		f->e->tag = gfn + 1;
		f->e->hva = (uint8_t *)(uintptr_t)(fmt->addr(w.pte) + off);
		f->e->writable = (perm & (HV_PTE_W | HV_PTE_D)) ==
				 (HV_PTE_W | HV_PTE_D);
	}
	return 0;
}

static void tlb_sync(struct hv_soft_vcpu *v, uint64_t gen)
{
	if (gen != v->tlb_gen) {
		memset(v->tlb, 0, sizeof(v->tlb));
		v->tlb_gen = gen;
	}
}

static int fault(struct hv_soft_vcpu *v, gpa_t gpa, struct fault *f)
{
	struct hv_soft_vm *vm = v->vm;
	const struct hv_memslots_snap *snap;
	const struct hv_memslot *s;
	int ret;

	atomic_fetch_add_explicit(&vm->faults, 1, memory_order_relaxed);
	/* The generation is read before the walk: a flush after it makes
	 * the next enter drop what this walk fills. */
	tlb_sync(v, hv_soft_mmu_tlb_gen(vm->mmu));
	for (;;) {
		if (hv_soft_pgcache_topup(&v->cache, FAULT_CACHE_MIN))
			return -ENOMEM;
		snap = hv_memslots_read_lock(vm->slots);
		s = hv_memslots_by_gfn(snap, hv_gpa_to_gfn(gpa));
		if (!s) {
			hv_memslots_read_unlock(vm->slots);
			return -EFAULT;
		}
		hv_soft_mmu_read_lock(vm->mmu);
		ret = fault_locked(v, s, gpa, f);
		hv_soft_mmu_read_unlock(vm->mmu);
		hv_memslots_read_unlock(vm->slots);
		if (ret != -ENOMEM)
			return ret;
	}
}

static uint8_t *vcpu_access(struct hv_soft_vcpu *v, gpa_t gpa, bool write)
{
	gfn_t gfn = hv_gpa_to_gfn(gpa);
	struct hv_soft_tlbe *e = &v->tlb[gfn % HV_SOFT_TLB_ENTRIES];

	hv_soft_vcpu_access_end(v);
	for (;;) {
		struct fault f = { .write = write, .e = e };
		int ret;

		tlb_sync(v, hv_soft_tlb_enter(v->vm->mmu, &v->ack));
		if (e->tag == gfn + 1 && (e->writable || !write)) {
			v->in_access = true;
			return e->hva + (gpa & (HV_PAGE_SIZE - 1));
		}
		hv_soft_tlb_exit(&v->ack);
		ret = fault(v, gpa, &f);
		if (f.pml_full) {
			atomic_fetch_add_explicit(&v->vm->pml_full, 1,
						  memory_order_relaxed);
			hv_soft_vcpu_flush_pml(v);
			v->pml_full_exits++;
		}
		if (ret) {
			if (!v->error)
				v->error = ret;
			return v->scratch;
		}
	}
}

uint8_t *hv_soft_vcpu_page_for_write(struct hv_soft_vcpu *v, gpa_t gpa)
{
	return vcpu_access(v, gpa, true);
}

const uint8_t *hv_soft_vcpu_page_for_read(struct hv_soft_vcpu *v, gpa_t gpa)
{
	return vcpu_access(v, gpa, false);
}

/* The workload's environment. */
struct wl_run {
	struct hv_soft_vcpu *v;
	const struct hv_soft_wl_ctl *ctl;
	const volatile struct hv_wl_params *gp; /* guest params page */
	struct hv_wl_params shadow;		/* what the workload reads */
	struct hv_wl_status st;			/* mirrored to guest */
	uint64_t last_mirror;
	bool stop;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Guest RAM is shared with the VMM without host-level synchronisation, as
 * a real guest's is: the host rewrites the params page (hv_vm_wl_set_vcpu)
 * while vCPUs read it. The fields it may change while the guest runs are
 * read with atomic loads, never torn; the rest is copied word by word and
 * validated by the workload. Hence no TSan instrumentation here (and no
 * memcpy, which TSan intercepts).
 */
__attribute__((no_sanitize("thread"))) static void
copy_params(struct hv_wl_params *dst, const volatile struct hv_wl_params *src)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	_Static_assert(sizeof(*dst) % 8 == 0, "params copied by words");
	for (size_t i = 0; i < sizeof(*dst) / 8; i++)
		d[i] = s[i];
}

__attribute__((no_sanitize("thread"))) static void
refresh_shadow(struct wl_run *r)
{
	const volatile struct hv_wl_vcpu_params *g = &r->gp->vcpu[r->v->id];
	struct hv_wl_vcpu_params *s = &r->shadow.vcpu[r->v->id];

	/* The host changes these while the vCPU runs: atomic reads. */
	s->rate_pages = __atomic_load_n(&g->rate_pages, __ATOMIC_RELAXED);
	s->throttle_pct = __atomic_load_n(&g->throttle_pct, __ATOMIC_RELAXED);
	s->stop = __atomic_load_n(&g->stop, __ATOMIC_ACQUIRE) || r->stop ||
		  r->v->error;
}

/* Status line written through the MMU, so it is logged like the guest's
 * own writes. */
static void mirror_status(struct wl_run *r)
{
	gpa_t gpa = HV_WL_STATUS_GPA + r->v->id * sizeof(struct hv_wl_status);
	uint8_t *p = hv_soft_vcpu_page_for_write(r->v,
						 gpa & HV_PAGE_MASK);

	if (!r->v->error)
		memcpy(p + (gpa & ~HV_PAGE_MASK), &r->st, sizeof(r->st));
	hv_soft_vcpu_access_end(r->v);
}

static uint8_t *env_write(void *ctx, uint64_t gpa)
{
	return hv_soft_vcpu_page_for_write(((struct wl_run *)ctx)->v, gpa);
}

static const uint8_t *env_read(void *ctx, uint64_t gpa)
{
	return hv_soft_vcpu_page_for_read(((struct wl_run *)ctx)->v, gpa);
}

/* Ask the host whether to stop; true makes the workload return. */
static void poll_ctl(struct wl_run *r)
{
	if (r->ctl && r->ctl->checkpoint && r->ctl->checkpoint(r->ctl->arg))
		r->stop = true;
}

static uint64_t env_now(void *ctx)
{
	struct wl_run *r = ctx;
	uint64_t now = now_ns();

	hv_soft_vcpu_access_end(r->v);
	/* The workload reads the clock at batch start and end and at every
	 * pacing step: the place to poll the host (cheap) and, every
	 * millisecond, to mirror the status and reread the live params. */
	poll_ctl(r);
	if (now - r->last_mirror >= 1000000) {
		r->last_mirror = now;
		mirror_status(r);
		refresh_shadow(r);
	} else if (r->stop) {
		refresh_shadow(r);
	}
	return now;
}

static void env_heartbeat(void *ctx, const struct hv_wl_status *st)
{
	struct wl_run *r = ctx;

	hv_soft_vcpu_access_end(r->v);
	if (r->ctl && r->ctl->heartbeat && r->ctl->heartbeat(r->ctl->arg, st)) {
		r->stop = true;
		refresh_shadow(r);
	}
}

/*
 * The workload waits (pacing, throttle, idle) by sleeping on the host, so
 * that a rate-limited or idle vCPU costs a few percent of a CPU, not all
 * of it. A stop already asked for is not slept on: the workload returns.
 */
static void env_wait(void *ctx, uint64_t deadline)
{
	struct wl_run *r = ctx;
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / 1000000000ULL),
		.tv_nsec = (long)(deadline % 1000000000ULL),
	};

	hv_soft_vcpu_access_end(r->v);
	if (r->stop)
		return;
	if (r->ctl && r->ctl->wait)
		r->ctl->wait(r->ctl->arg, deadline);
	else
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int hv_soft_vcpu_run_workload(struct hv_soft_vcpu *v,
			      const struct hv_soft_wl_ctl *ctl)
{
	struct hv_wl_env env = {
		.page_for_write = env_write,
		.page_for_read = env_read,
		.now_tsc = env_now,
		.heartbeat = env_heartbeat,
		.wait_until = env_wait,
	};
	const struct hv_memslots_snap *snap;
	const struct hv_memslot *s;
	struct wl_run *r;
	int ret;

	if (v->id >= HV_WL_MAX_VCPUS)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->v = v;
	r->ctl = ctl;
	env.ctx = r;
	env.pace_owed = ctl ? ctl->pace_owed : NULL;
	/* The params page's host address is stable for the slot's life. */
	snap = hv_memslots_read_lock(v->vm->slots);
	s = hv_memslots_by_gfn(snap, hv_gpa_to_gfn(HV_WL_PARAMS_GPA));
	r->gp = s && hv_gpa_to_gfn(HV_WL_PARAMS_GPA + sizeof(r->shadow) - 1) <
				s->base_gfn + s->npages
			? hv_memslot_gfn_to_hva(s, hv_gpa_to_gfn(
							   HV_WL_PARAMS_GPA))
			: NULL;
	hv_memslots_read_unlock(v->vm->slots);
	if (!r->gp) {
		free(r);
		return -EFAULT;
	}
	copy_params(&r->shadow, r->gp);
	r->shadow.vcpu[v->id].stop = 0;
	/* now_tsc() ticks in nanoseconds. */
	r->shadow.tsc_khz = 1000000;
	refresh_shadow(r);
	{
		gpa_t gpa = HV_WL_STATUS_GPA + v->id * sizeof(r->st);
		const uint8_t *p = hv_soft_vcpu_page_for_read(v,
							      gpa & HV_PAGE_MASK);

		memcpy(&r->st, p + (gpa & ~HV_PAGE_MASK), sizeof(r->st));
		hv_soft_vcpu_access_end(v);
	}
	r->last_mirror = now_ns();
	ret = hv_wl_run(&r->shadow, &r->st, v->id, &env);
	hv_soft_vcpu_access_end(v);
	if (!v->error)
		mirror_status(r);
	if (!ret && v->error)
		ret = v->error;
	free(r);
	return ret;
}
