// SPDX-License-Identifier: MIT
/*
 * KVM dirty logging: the dirty ring and the manual-protect dirty bitmap,
 * both harvested into the memslot bitmaps (docs/architecture.md).
 *
 * Bitmap mode, one round (vCPUs running):
 *   harvest: KVM_GET_DIRTY_LOG per slot (with manual protect it does not
 *            clear or re-protect anything) OR-ed into the memslot bitmap;
 *   fetch_clear (vm.c): take bits out of the memslot bitmap a chunk at a
 *            time and KVM_CLEAR_DIRTY_LOG exactly those bits.
 * A page first written after GET but before CLEAR is set in KVM's bitmap
 * and not in our mask, so CLEAR leaves it set for the next GET; a page
 * harvested and written again before CLEAR was re-armed after the write,
 * and its content is read after the CLEAR. Nothing is lost either way.
 *
 * Ring mode: each vCPU pushes (slot, offset) entries; a reaper takes them,
 * KVM_RESET_DIRTY_RINGS re-protects their pages, and only then are their
 * bits set in the memslot bitmaps, so dirty_clear has nothing to do. Three
 * reapers share the rings: the harvester, the drainer below, and a vCPU at
 * a ring-full exit. Each holds the VM's reap_lock throughout:
 *
 *   reaper (reap_lock held)          guest / KVM
 *   take: copy (slot, off) of P,
 *         flag the entry RESET       P still writable: writes log nothing
 *   KVM_RESET_DIRTY_RINGS            P write-protected again; the next
 *                                    write logs a new entry
 *   apply: set P's bit               from here fetch_clear may hand P to
 *   unlock                           the sender, which reads it after a
 *                                    re-protect: no write can slip by
 *
 * Had the bit been set at take (as before), fetch_clear could hand P out
 * while it was still writable; a write before the reset would then leave
 * neither an entry nor a bit (test_kvm_dirty.c holds a drainer in that
 * window). The harvest that precedes every fetch_clear takes reap_lock
 * too: it waits for a reaper in flight, so its result includes every
 * entry taken before it, and it resets whatever it took itself.
 *
 * The ring drainer. KVM only stops a vCPU at its ring's soft limit (64
 * entries below the end) when it next checks requests. The nested PVM
 * host of our build machines emulates guest ring-0 code in batches
 * (kvm_pvm.pvm_emul_batch=1024 instructions) and checks only after the
 * batch: traced, a 256-entry ring reached 315 used entries before the
 * KVM_EXIT_DIRTY_RING_FULL, and kvm_dirty_ring_push WARNs "should never
 * get full" (dirty_ring.c:225, from pvm_emulate_insn_scrubbed). The
 * overflow overwrites entries not yet reset, their pages are never
 * re-protected (lost writes), and the kernel's reset index stops for good
 * (endless ring-full exits). tools/kvm-ring-repro reproduces it with raw
 * ioctls. Userspace cannot repair that state, so we keep rings far from
 * soft-full instead: a thread polls every ring each millisecond and
 * collects + resets one as soon as an eighth of it is pending. Ring-full
 * exits remain handled (and overflows detected) as the safety net.
 */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/kvm/kvm_ring.h"
#include "hvcore/log.h"
#include "hvcore/memslots.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Poll period and trigger of the ring drainer (see the top comment): a
 * vCPU here dirties at most ~150 pages per ms (7 us per logged write). */
#define RING_DRAIN_PERIOD_NS 1000000L
#define RING_DRAIN_FRACTION 8

/* At least @n entries pending from our fetch index (they are in order).
 * Under reap_lock. */
static bool ring_pending(struct hv_kvm_vm *k, struct hv_kvm_vcpu *c,
			 uint32_t n)
{
	struct kvm_dirty_gfn *e =
		&c->ring[(c->fetch + n - 1) & (k->ring_entries - 1)];

	return __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) &
	       KVM_DIRTY_GFN_F_DIRTY;
}

/*
 * Take one vCPU's pending entries into its taken[] buffer (reap_lock
 * held). @full_exit: called for KVM_EXIT_DIRTY_RING_FULL, so an empty ring
 * means our position is out of step with the kernel's.
 */
static uint32_t take_vcpu(struct hv_vm *vm, struct hv_kvm_vm *k,
			  struct hv_vcpu *vcpu, bool full_exit)
{
	struct hv_kvm_vcpu *c = vcpu->accel;
	uint64_t t0 = now_ns();
	uint32_t n;

	n = hv_kvm_ring_take(c->ring, k->ring_entries, &c->fetch, c->taken);
	if (!n && full_exit &&
	    hv_kvm_ring_resync_fetch(c->ring, k->ring_entries, &c->fetch)) {
		__atomic_fetch_add(&k->rstats.desyncs, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&k->ring_overflow, true, __ATOMIC_RELEASE);
		hv_warn("kvm", "vm=%s vcpu=%u op=ring_take reason=desync",
			hv_vm_name(vm), vcpu->id);
		n = hv_kvm_ring_take(c->ring, k->ring_entries, &c->fetch,
				     c->taken);
	}
	/* Every entry dirty: the ring was hard-full, and KVM may have
	 * written past it over entries we had not handed back, losing their
	 * re-protection. The harvester resyncs (see resync_after_overflow). */
	if (n == k->ring_entries)
		__atomic_store_n(&k->ring_overflow, true, __ATOMIC_RELEASE);
	c->nr_taken = n;
	__atomic_fetch_add(&k->rstats.collect_ns, now_ns() - t0,
			   __ATOMIC_RELAXED);
	return n;
}

static int ring_reset(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	uint64_t t0 = now_ns();
	int ret = 0;

	if (ioctl(k->vm_fd, KVM_RESET_DIRTY_RINGS, 0) < 0) {
		ret = -errno;
		hv_err("kvm", "vm=%s op=reset_dirty_rings err=%d",
		       hv_vm_name(vm), ret);
		/* Taken pages may stay writable: resync at the next harvest
		 * (the bits are still applied below, nothing is dropped). */
		__atomic_store_n(&k->ring_overflow, true, __ATOMIC_RELEASE);
	}
	__atomic_fetch_add(&k->rstats.reset_ns, now_ns() - t0,
			   __ATOMIC_RELAXED);
	return ret;
}

/* Set the bits of every vCPU's taken[] entries (reap_lock held, after the
 * reset), attributing them to their vCPUs. */
static void apply_taken(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	bool per_entry = __atomic_load_n(&k->ring_per_entry, __ATOMIC_RELAXED);
	const struct hv_memslots_snap *snap;
	uint64_t t0 = now_ns();

	snap = hv_memslots_read_lock(vm->slots);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct hv_vcpu *vcpu = vm->vcpus[i];
		struct hv_kvm_vcpu *c = vcpu ? vcpu->accel : NULL;
		struct hv_kvm_ring_result res = {0};

		if (!c || !c->nr_taken)
			continue;
		hv_kvm_ring_apply(c->taken, c->nr_taken, snap, per_entry,
				  &res);
		c->nr_taken = 0;
		if (res.bad)
			hv_warn("kvm",
				"vm=%s vcpu=%u op=ring_apply bad_entries=%u",
				hv_vm_name(vm), vcpu->id, res.bad);
		__atomic_fetch_add(&k->rstats.entries, res.entries,
				   __ATOMIC_RELAXED);
		__atomic_fetch_add(&k->rstats.lookups, res.lookups,
				   __ATOMIC_RELAXED);
		atomic_fetch_add_explicit(&vcpu->dirty_logged, res.entries,
					  memory_order_relaxed);
	}
	hv_memslots_read_unlock(vm->slots);
	__atomic_fetch_add(&k->rstats.collect_ns, now_ns() - t0,
			   __ATOMIC_RELAXED);
}

/* Reset (when anything was taken), then apply: see the timeline above. */
static int reset_and_apply(struct hv_vm *vm, struct hv_kvm_vm *k,
			   uint64_t taken)
{
	int ret = 0;

	if (taken) {
		ret = ring_reset(vm, k);
		apply_taken(vm, k);
	}
	return ret;
}

int64_t hv_kvm_ring_reap_full(struct hv_vm *vm, struct hv_vcpu *vcpu)
{
	struct hv_kvm_vm *k = kvm_of(vm);
	uint32_t n;
	int ret;

	pthread_mutex_lock(&k->reap_lock);
	n = take_vcpu(vm, k, vcpu, true);
	/* KVM found the ring full: reset even when another reaper took the
	 * entries first, as the old code did (a reset can only make room). */
	ret = ring_reset(vm, k);
	apply_taken(vm, k);
	pthread_mutex_unlock(&k->reap_lock);
	return ret ? ret : (int64_t)n;
}

static void *ring_drain_thread(void *arg)
{
	struct hv_vm *vm = arg;
	struct hv_kvm_vm *k = kvm_of(vm);
	const struct timespec period = {0, RING_DRAIN_PERIOD_NS};
	uint32_t def = HV_MAX(k->ring_entries / RING_DRAIN_FRACTION, 1u);

	while (!__atomic_load_n(&k->drain_stop, __ATOMIC_ACQUIRE)) {
		uint32_t min = __atomic_load_n(&k->drain_min, __ATOMIC_RELAXED);
		uint32_t n = min ? HV_MIN(min, k->ring_entries) : def;
		hv_kvm_drain_hook_fn hook;
		uint64_t got = 0;

		nanosleep(&period, NULL);
		/* Another reaper holds the lock: it is draining anyway. */
		if (pthread_mutex_trylock(&k->reap_lock))
			continue;
		for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
			struct hv_vcpu *vcpu = vm->vcpus[i];

			if (vcpu && vcpu->accel &&
			    ring_pending(k, vcpu->accel, n))
				got += take_vcpu(vm, k, vcpu, false);
		}
		hook = __atomic_load_n(&k->drain_hook, __ATOMIC_ACQUIRE);
		if (got && hook)
			hook(__atomic_load_n(&k->drain_hook_arg,
					     __ATOMIC_RELAXED),
			     (uint32_t)got);
		reset_and_apply(vm, k, got);
		pthread_mutex_unlock(&k->reap_lock);
	}
	return NULL;
}

void hv_kvm_test_set_drain_hook(struct hv_vm *vm, hv_kvm_drain_hook_fn fn,
				void *arg, uint32_t min_pending)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	__atomic_store_n(&k->drain_hook_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&k->drain_min, min_pending, __ATOMIC_RELAXED);
	__atomic_store_n(&k->drain_hook, fn, __ATOMIC_RELEASE);
}

static int ring_drain_start(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	int ret;

	if (k->drain_running)
		return 0;
	__atomic_store_n(&k->drain_stop, false, __ATOMIC_RELEASE);
	ret = -pthread_create(&k->drain_thread, NULL, ring_drain_thread, vm);
	if (ret) {
		hv_err("kvm", "vm=%s op=ring_drain_start err=%d",
		       hv_vm_name(vm), ret);
		return ret;
	}
	k->drain_running = true;
	return 0;
}

void hv_kvm_ring_drain_stop(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	if (!k || !k->drain_running)
		return;
	__atomic_store_n(&k->drain_stop, true, __ATOMIC_RELEASE);
	pthread_join(k->drain_thread, NULL);
	k->drain_running = false;
}

int hv_kvm_dirty_start(struct hv_vm *vm, enum hv_dirty_mode mode)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	switch (mode) {
	case HV_DIRTY_RING:
		if (!k->ring_entries) {
			hv_err("kvm",
			       "vm=%s op=dirty_start mode=ring err=%d "
			       "reason=cfg.dirty_ring_entries=0",
			       hv_vm_name(vm), -EOPNOTSUPP);
			return -EOPNOTSUPP;
		}
		break;
	case HV_DIRTY_BITMAP:
		if (!k->manual_protect) {
			hv_err("kvm",
			       "vm=%s op=dirty_start mode=bitmap err=%d "
			       "missing=KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2"
			       " ring=%u",
			       hv_vm_name(vm), -EOPNOTSUPP, k->ring_entries);
			return -EOPNOTSUPP;
		}
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (mode == HV_DIRTY_RING) {
		int ret = ring_drain_start(vm, k);

		if (ret)
			return ret;
	}
	k->mode = mode;
	return 0;
}

void hv_kvm_dirty_stop(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	/* Drain the rings so that a later start begins empty. */
	hv_kvm_ring_drain_stop(vm);
	if (k->mode == HV_DIRTY_RING)
		hv_kvm_dirty_harvest(vm);
	k->mode = HV_DIRTY_INVALID;
}

static int64_t harvest_bitmap(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	const struct hv_memslots_snap *snap = hv_memslots_read_lock(vm->slots);
	unsigned n = hv_memslots_count(snap);
	int64_t total = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct hv_memslot *m = hv_memslots_at(snap, i);
		struct kvm_slot *s =
			m->id < k->nr_slots ? &k->slots[m->id] : NULL;
		struct kvm_dirty_log log = {.slot = m->id};
		uint64_t words = HV_DIV_ROUND_UP(m->npages, 64);

		if (!m->dirty || !s || !s->scratch)
			continue;
		log.dirty_bitmap = s->scratch;
		if (ioctl(k->vm_fd, KVM_GET_DIRTY_LOG, &log) < 0) {
			total = -errno;
			hv_err("kvm", "vm=%s op=get_dirty_log slot=%u err=%d",
			       hv_vm_name(vm), m->id, (int)total);
			break;
		}
		for (uint64_t w = 0; w < words; w++)
			total += __builtin_popcountll(s->scratch[w]);
		hv_dirty_bitmap_or(m->dirty, s->scratch, m->npages);
	}
	hv_memslots_read_unlock(vm->slots);
	return total;
}

/*
 * After a possible ring overflow, trust nothing: re-protect every page by
 * turning logging off and on for each slot (KVM write-protects the whole
 * slot when the flag is set), then mark every page dirty. Writes between
 * the two ioctls are covered by the marking, which comes last.
 */
static int64_t resync_after_overflow(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	const struct hv_memslots_snap *snap = hv_memslots_read_lock(vm->slots);
	unsigned n = hv_memslots_count(snap);
	int64_t total = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct hv_memslot *m = hv_memslots_at(snap, i);
		struct kvm_userspace_memory_region r = {
			.slot = m->id,
			.flags = 0,
			.guest_phys_addr = hv_gfn_to_gpa(m->base_gfn),
			.memory_size = m->npages << HV_PAGE_SHIFT,
			.userspace_addr = m->hva,
		};

		if (!m->dirty)
			continue;
		if (ioctl(k->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
			goto err;
		r.flags = m->flags;
		if (ioctl(k->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
			goto err;
		hv_dirty_bitmap_set_all(m->dirty);
		total += (int64_t)m->npages;
	}
	hv_memslots_read_unlock(vm->slots);
	__atomic_fetch_add(&k->rstats.resyncs, 1, __ATOMIC_RELAXED);
	hv_warn("kvm", "vm=%s op=ring_resync pages=%lld reason=ring_overflow",
		hv_vm_name(vm), (long long)total);
	return total;
err:
	total = -errno;
	hv_memslots_read_unlock(vm->slots);
	hv_err("kvm", "vm=%s op=ring_resync err=%d", hv_vm_name(vm),
	       (int)total);
	return total;
}

int64_t hv_kvm_dirty_harvest(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);
	int64_t total = 0;
	int ret;

	if (k->mode == HV_DIRTY_BITMAP)
		return harvest_bitmap(vm, k);
	if (k->mode != HV_DIRTY_RING)
		return -EINVAL;
	pthread_mutex_lock(&k->reap_lock);
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		if (vm->vcpus[i] && vm->vcpus[i]->accel)
			total += take_vcpu(vm, k, vm->vcpus[i], false);
	ret = reset_and_apply(vm, k, (uint64_t)total);
	if (__atomic_exchange_n(&k->ring_overflow, false, __ATOMIC_ACQ_REL)) {
		int64_t r = resync_after_overflow(vm, k);

		if (r < 0)
			ret = (int)r;
		else
			total += r;
	}
	pthread_mutex_unlock(&k->reap_lock);
	return ret ? ret : total;
}

int hv_kvm_dirty_clear(struct hv_vm *vm, uint32_t slot_id, uint64_t first,
		       uint64_t count, const uint64_t *mask)
{
	struct hv_kvm_vm *k = kvm_of(vm);
	struct kvm_clear_dirty_log c = {
		.slot = slot_id,
		.num_pages = (uint32_t)count,
		.first_page = first,
		.dirty_bitmap = (void *)(uintptr_t)mask,
	};

	if (k->mode != HV_DIRTY_BITMAP)
		return 0; /* ring: re-armed by KVM_RESET_DIRTY_RINGS */
	if (count > UINT32_MAX)
		return -EINVAL;
	if (ioctl(k->vm_fd, KVM_CLEAR_DIRTY_LOG, &c) < 0) {
		int ret = -errno;

		hv_err("kvm",
		       "vm=%s op=clear_dirty_log slot=%u first=%llu "
		       "count=%llu err=%d",
		       hv_vm_name(vm), slot_id, (unsigned long long)first,
		       (unsigned long long)count, ret);
		return ret;
	}
	return 0;
}
