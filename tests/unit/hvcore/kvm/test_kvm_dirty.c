// SPDX-License-Identifier: MIT
/*
 * Dirty logging on KVM checked by an oracle in the style of the kernel's
 * dirty_log_test: vCPUs stamp pages (vcpu, seq) while the host harvests
 * and fetch-clears in a loop. With S(i) the stamps read right after round
 * i's harvest+clear and D(i) the pages round i reported:
 *   no miss:    a page whose stamp changed between S(i-1) and S(i) is in
 *               D(i) or D(i+1);
 *   no excess:  a page in D(i) (i >= 2) changed between S(i-2) and S(i);
 *   exact end:  after pause, the final harvest reports every page changed
 *               since the last snapshot, and one more harvest is empty.
 * Any miss fails the test. The ring's defect counters (a desync, an
 * overflow resync: docs/architecture.md) are printed with every run;
 * they explain a miss, they never excuse one. (A nested host whose
 * kernel lost ring entries once made such misses a counted skip; the
 * KVM rig's kernel shows neither counter move, so none is skipped.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/kvm/kvm.h"
#include "hvcore/kvm/kvm_test.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "tests/harness/hv_test.h"

#define MEM (64ULL << 20)
#define SLOT (12ULL << 20) /* regions straddle slot boundaries */
#define PAGES (MEM >> 12)
#define WORDS (PAGES / 64)
#define REGION_PAGES 2048u
#ifndef RING_SMALL
#define RING_SMALL 4096u
#endif

/* Oracle runs in ring mode. */
static unsigned ring_runs;

struct oracle {
	struct hv_vm *vm;
	unsigned nr_rounds;  /* rounds the oracle may harvest */
	uint64_t *snap[4];   /* S(i) in snap[i % 4] */
	uint64_t *dirty[3];  /* D(i) in dirty[i % 3] */
	bool resync[3];	     /* round i's harvest re-marked everything */
	uint64_t *pending;   /* changed in (S(i-2), S(i-1)], not in D(i-1) */
	uint64_t region_end; /* first page after the workload regions */
	uint64_t checked, reported, misses, excess;
};

static bool bit(const uint64_t *b, uint64_t p)
{
	return b[p / 64] >> (p % 64) & 1;
}

static void read_stamps(struct hv_vm *vm, uint64_t *out)
{
	const uint8_t *ram = hv_vm_gpa_to_hva(vm, 0, MEM);

	for (uint64_t p = 0; p < PAGES; p++)
		out[p] = __atomic_load_n((const uint64_t *)(ram + p * 4096 + 8),
					 __ATOMIC_ACQUIRE);
}

/* Harvest, then fetch-clear every slot into @d (global page bitmap). */
static int64_t harvest_all(struct hv_vm *vm, uint64_t *d)
{
	unsigned n = hv_vm_slot_count(vm);
	int64_t total = 0;

	memset(d, 0, WORDS * 8);
	if (hv_vm_dirty_harvest(vm) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint32_t id;
		gfn_t base;
		uint64_t np;
		int64_t got;

		CU_ASSERT_FATAL(hv_vm_slot_info(vm, i, &id, &base, &np) == 0);
		CU_ASSERT_FATAL(base % 64 == 0);
		got = hv_vm_dirty_fetch_clear(vm, id, 0, np, d + base / 64);
		if (got < 0)
			return got;
		total += got;
	}
	return total;
}

static uint64_t resyncs(struct hv_vm *vm)
{
	struct hv_kvm_ring_stats rs;

	hv_kvm_get_ring_stats(vm, &rs);
	return rs.resyncs;
}

/* Round @i: harvest into D(i), snapshot S(i). */
static void round_harvest(struct oracle *o, unsigned i)
{
	uint64_t r0 = resyncs(o->vm);

	CU_ASSERT_FATAL(harvest_all(o->vm, o->dirty[i % 3]) >= 0);
	o->resync[i % 3] = resyncs(o->vm) != r0;
	read_stamps(o->vm, o->snap[i % 4]);
	CU_ASSERT_FATAL(i < o->nr_rounds);
}

/*
 * Check round @i (>= 1). No miss: pages pending from round i-1 are in
 * D(i). No excess: a workload page in D(i-1) changed in (S(i-3), S(i)]:
 * KVM logs a write at its fault, before the store lands, so the change
 * may show one snapshot late; rounds that re-marked everything are
 * exempt.
 */
static void check_round(struct oracle *o, unsigned i)
{
	const uint64_t *s = o->snap[i % 4], *sp = o->snap[(i + 3) % 4];
	const uint64_t *s3 = o->snap[(i + 1) % 4];
	const uint64_t *d = o->dirty[i % 3], *dp = o->dirty[(i + 2) % 3];
	bool check_excess = i >= 3 && !o->resync[(i + 2) % 3];

	for (uint64_t p = 0; p < PAGES; p++) {
		bool in_d = bit(d, p);

		if (bit(o->pending, p) && !in_d)
			o->misses++;
		o->pending[p / 64] &= ~(1ULL << (p % 64));
		if (s[p] != sp[p]) {
			o->checked++;
			if (!in_d)
				o->pending[p / 64] |= 1ULL << (p % 64);
		}
		/* Only workload pages carry stamps; the guest's stacks and
		 * status lines change elsewhere in their pages. */
		if (check_excess && bit(dp, p) && s[p] == s3[p] &&
		    p >= HV_VM_WL_BASE / 4096 && p < o->region_end)
			o->excess++;
		o->reported += in_d;
	}
}

static void oracle_init(struct oracle *o, struct hv_vm *vm, unsigned rounds,
			uint32_t nr_vcpus)
{
	memset(o, 0, sizeof(*o));
	o->vm = vm;
	o->region_end = HV_VM_WL_BASE / 4096 + nr_vcpus * REGION_PAGES;
	for (int k = 0; k < 4; k++)
		o->snap[k] = calloc(PAGES, 8);
	for (int k = 0; k < 3; k++)
		o->dirty[k] = calloc(WORDS, 8);
	o->pending = calloc(WORDS, 8);
	o->nr_rounds = rounds + 2;
	CU_ASSERT_PTR_NOT_NULL_FATAL(o->pending);
}

static void oracle_fini(struct oracle *o)
{
	for (int k = 0; k < 4; k++)
		free(o->snap[k]);
	for (int k = 0; k < 3; k++)
		free(o->dirty[k]);
	free(o->pending);
}

/* Pause (unless @paused), harvest round @i (the last) and count what was
 * never seen. */
static void oracle_final(struct oracle *o, unsigned i, bool paused)
{
	uint64_t *d;

	if (!paused)
		CU_ASSERT_FATAL(hv_vm_pause(o->vm) == 0);
	round_harvest(o, i);
	check_round(o, i);
	for (uint64_t p = 0; p < PAGES; p++)
		if (bit(o->pending, p))
			o->misses++; /* changed before the pause, never seen */
	/* Paused: nothing more to report. */
	d = calloc(WORDS, 8);
	CU_ASSERT_EQUAL(harvest_all(o->vm, d), 0);
	free(d);
}

/*
 * The verdict on misses: any miss fails. The ring's defect counters are
 * printed with it, so that a miss next to a kernel defect says so.
 */
static bool oracle_verdict(struct oracle *o, const char *test,
			   enum hv_dirty_mode mode)
{
	struct hv_kvm_ring_stats rs;

	hv_kvm_get_ring_stats(o->vm, &rs);
	if (mode == HV_DIRTY_RING)
		ring_runs++;
	if (o->misses)
		printf("\n    %s: %llu misses (ring desyncs=%llu "
		       "resyncs=%llu) ",
		       test, (unsigned long long)o->misses,
		       (unsigned long long)rs.desyncs,
		       (unsigned long long)rs.resyncs);
	CU_ASSERT_EQUAL(o->misses, 0);
	return !o->misses;
}

static void run_oracle(enum hv_dirty_mode mode, uint32_t nr_vcpus,
		       uint32_t ring_entries, uint64_t chunk, unsigned rounds,
		       unsigned round_us)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	struct oracle o;
	struct hv_kvm_ring_stats rs;
	unsigned i;

	hv_vm_cfg_init(&cfg, HV_ACCEL_KVM, MEM, nr_vcpus);
	cfg.slot_bytes = SLOT;
	cfg.dirty_ring_entries = ring_entries;
	cfg.clear_chunk_pages = chunk;
	for (uint32_t v = 0; v < nr_vcpus; v++) {
		cfg.wl[v].pattern = HV_WL_PATTERN_RANDOM;
		cfg.wl[v].region_gpa = HV_VM_WL_BASE + v * REGION_PAGES * 4096;
		cfg.wl[v].region_pages = REGION_PAGES;
	}
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	oracle_init(&o, vm, rounds, nr_vcpus);
	CU_ASSERT_FATAL(hv_vm_dirty_log_start(o.vm, mode) == 0);
	CU_ASSERT_FATAL(hv_vm_start(o.vm) == 0);

	/* Round 0: initially set, every page is reported. */
	round_harvest(&o, 0);
	{
		uint64_t all = 0;

		for (uint64_t w = 0; w < WORDS; w++)
			all += (uint64_t)__builtin_popcountll(o.dirty[0][w]);
		CU_ASSERT_EQUAL(all, PAGES);
	}
	for (i = 1; i <= rounds; i++) {
		usleep(round_us);
		round_harvest(&o, i);
		check_round(&o, i);
		if (getenv("HV_TEST_VERBOSE")) {
			hv_kvm_get_ring_stats(o.vm, &rs);
			printf("\n round %u entries=%llu full=%llu resync=%llu "
			       "desync=%llu seq0=%llu",
			       i, (unsigned long long)rs.entries,
			       (unsigned long long)rs.full_exits,
			       (unsigned long long)rs.resyncs,
			       (unsigned long long)rs.desyncs,
			       (unsigned long long)hv_vm_wl_status(o.vm, 0)
				       ->seq);
		}
	}
	/* Final: pause, harvest: whatever changed is now reported. */
	oracle_final(&o, i, false);

	hv_kvm_get_ring_stats(o.vm, &rs);
	printf("\n    mode=%s vcpus=%u rounds=%u changed=%llu reported=%llu "
	       "misses=%llu excess=%llu ring_full=%llu resyncs=%llu "
	       "desyncs=%llu ",
	       hv_dirty_mode_name(mode), nr_vcpus, rounds,
	       (unsigned long long)o.checked, (unsigned long long)o.reported,
	       (unsigned long long)o.misses, (unsigned long long)o.excess,
	       (unsigned long long)rs.full_exits,
	       (unsigned long long)rs.resyncs, (unsigned long long)rs.desyncs);
	if (!oracle_verdict(&o, __func__, mode))
		goto out;
	/* Over-reporting is harmless; a little is expected because KVM
	 * logs at the write fault and a descheduled vCPU thread may store
	 * rounds later. Much of it would mean clears not re-arming. */
	CU_ASSERT(o.excess * 1000 <= o.reported);
	/* The test means something only if the guest dirtied a lot. */
	CU_ASSERT(o.checked >= 1000);
	for (uint32_t v = 0; v < nr_vcpus; v++) {
		struct hv_vcpu_stats st;

		hv_vm_vcpu_stats(o.vm, v, &st);
		CU_ASSERT_FALSE(st.asserted);
		CU_ASSERT_EQUAL(st.error, 0);
		CU_ASSERT(hv_vm_wl_status(o.vm, v)->seq > 0);
	}
out:
	CU_ASSERT_EQUAL(hv_vm_dirty_log_stop(o.vm), 0);
	hv_vm_destroy(o.vm);
	oracle_fini(&o);
}

static void test_ring_misses_no_page_one_vcpu(void)
{
	HV_TEST_REQUIRE_KVM();
	run_oracle(HV_DIRTY_RING, 1, 4096, 0, 30 * hv_test_scale(), 4000);
}

static void test_ring_misses_no_page_two_vcpus_small_ring(void)
{
	HV_TEST_REQUIRE_KVM();
	/* 1024 entries: the drainer must keep up with two vCPUs; a stalled
	 * drainer makes rings fill and exit (the ring-full path). */
	run_oracle(HV_DIRTY_RING, 2, RING_SMALL, 0, 30 * hv_test_scale(), 4000);
}

/* Rounds 100 ms apart: two vCPUs dirty far more than a ring holds between
 * harvests, so only the accelerator's own drainer (or ring-full exits)
 * keeps up, as during a long migration iteration. */
static void test_ring_misses_no_page_with_slow_harvests(void)
{
	HV_TEST_REQUIRE_KVM();
	run_oracle(HV_DIRTY_RING, 2, RING_SMALL, 0, 8 * hv_test_scale(),
		   100000);
}

static void test_bitmap_misses_no_page_one_vcpu(void)
{
	HV_TEST_REQUIRE_KVM();
	run_oracle(HV_DIRTY_BITMAP, 1, 0, 0, 30 * hv_test_scale(), 4000);
}

static void test_dirty_not_lost_during_chunked_clear_two_vcpus(void)
{
	HV_TEST_REQUIRE_KVM();
	run_oracle(HV_DIRTY_BITMAP, 2, 0, 64, 30 * hv_test_scale(), 4000);
}

/*
 * The drainer/harvester race, made deterministic. The guest sweeps a
 * few pages over and over; the drainer collects every entry at once and
 * the hook then holds it for RACE_HOLD_MS before KVM_RESET_DIRTY_RINGS.
 * Meanwhile the guest keeps writing those pages (still writable: not
 * re-protected yet, so no ring entry). The harvest + fetch-clear of that
 * window must not hand the pages out before the reset: if it does, their
 * later writes in the window leave no trace once the reset re-protects
 * them, and the paused VM's final harvest misses them.
 */
#define RACE_PAGES 16u
#define RACE_HOLD_MS 200

struct race_hook {
	int state; /* -1 disarmed, 0 armed, 1 holding, 2 done (atomics) */
	uint32_t want;
};

static void race_hook(void *arg, uint32_t entries)
{
	struct race_hook *h = arg;
	int armed = 0;

	if (entries < h->want ||
	    !__atomic_compare_exchange_n(&h->state, &armed, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	usleep(RACE_HOLD_MS * 1000);
	__atomic_store_n(&h->state, 2, __ATOMIC_RELEASE);
}

static bool wait_state(struct race_hook *h, int want)
{
	for (int ms = 0; ms < 5000; ms++) {
		if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) >= want)
			return true;
		usleep(1000);
	}
	return false;
}

static void test_ring_drainer_delay_before_reset_loses_no_page(void)
{
	struct race_hook h = {.state = -1, .want = RACE_PAGES};
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	struct oracle o;
	unsigned i;

	HV_TEST_REQUIRE_KVM();
	hv_vm_cfg_init(&cfg, HV_ACCEL_KVM, MEM, 1);
	cfg.slot_bytes = SLOT;
	cfg.dirty_ring_entries = 4096;
	cfg.wl[0].pattern = HV_WL_PATTERN_SWEEP;
	cfg.wl[0].region_gpa = HV_VM_WL_BASE;
	cfg.wl[0].region_pages = RACE_PAGES;
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	oracle_init(&o, vm, 8, 1);
	/* Collect as soon as anything is pending: every drainer pass then
	 * takes all the pages written since its last reset. */
	hv_kvm_test_set_drain_hook(vm, race_hook, &h, 1);
	CU_ASSERT_FATAL(hv_vm_dirty_log_start(vm, HV_DIRTY_RING) == 0);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	round_harvest(&o, 0);
	for (i = 1; i <= 3; i++) {
		usleep(4000);
		round_harvest(&o, i);
		check_round(&o, i);
	}
	__atomic_store_n(&h.state, 0, __ATOMIC_RELEASE);
	CU_ASSERT_FATAL(wait_state(&h, 1)); /* the drainer holds entries */
	round_harvest(&o, i); /* the window: pages are still writable */
	check_round(&o, i);
	i++;
	usleep(RACE_HOLD_MS * 1000 / 4); /* the guest rewrites them */
	CU_ASSERT_FATAL(hv_vm_pause(vm) == 0);
	CU_ASSERT_FATAL(wait_state(&h, 2)); /* reset done, nothing logged */
	oracle_final(&o, i, true);
	printf("\n    changed=%llu reported=%llu misses=%llu ",
	       (unsigned long long)o.checked, (unsigned long long)o.reported,
	       (unsigned long long)o.misses);
	if (oracle_verdict(&o, __func__, HV_DIRTY_RING))
		CU_ASSERT(o.checked >= RACE_PAGES);
	hv_kvm_test_set_drain_hook(vm, NULL, NULL, 0);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_stop(vm), 0);
	hv_vm_destroy(vm);
	oracle_fini(&o);
}

/*
 * Randomized interleavings of the three ring reapers (harvester, drainer,
 * vCPU at ring-full) and of the bitmap harvest + chunked clear: each run
 * draws a mode, vCPU count, ring size, pattern, region, harvest period,
 * clear chunk, drainer trigger and a random drainer delay between take
 * and reset, then runs the oracle. $HV_STRESS_SECONDS (default: 3 runs)
 * runs it for that long; $HV_STRESS_SEED repeats a sequence. Every run
 * prints its parameters; any miss fails.
 */
struct stress_hook {
	unsigned seed;	 /* drainer thread only */
	unsigned max_us; /* delay drawn in [0, max_us) */
};

static void stress_hook(void *arg, uint32_t entries)
{
	struct stress_hook *h = arg;

	(void)entries;
	if (h->max_us)
		usleep((useconds_t)(rand_r(&h->seed) % h->max_us));
}

static void stress_run(unsigned *seed, uint64_t *misses)
{
	static const enum hv_wl_pattern pats[] = {HV_WL_PATTERN_RANDOM,
						  HV_WL_PATTERN_SWEEP,
						  HV_WL_PATTERN_HOTSET};
	static const uint32_t rings[] = {4096, 8192, 16384};
	static const uint64_t chunks[] = {0, 64, 512, 4096};
	enum hv_dirty_mode mode =
		rand_r(seed) % 2 ? HV_DIRTY_RING : HV_DIRTY_BITMAP;
	uint32_t nr_vcpus = 1 + rand_r(seed) % 2;
	uint32_t ring = rings[rand_r(seed) % 3];
	enum hv_wl_pattern pat = pats[rand_r(seed) % 3];
	uint32_t region = 16u << (rand_r(seed) % 8); /* 16..2048 pages */
	unsigned round_us = (unsigned)(rand_r(seed) % 20000);
	unsigned rounds = 8 + rand_r(seed) % 24;
	uint64_t chunk = chunks[rand_r(seed) % 4];
	uint32_t drain_min = rand_r(seed) % 2 ? 1 + rand_r(seed) % 64 : 0;
	struct stress_hook h = {rand_r(seed), rand_r(seed) % 3 ? 0 : 3000};
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	struct oracle o;
	unsigned i;

	hv_vm_cfg_init(&cfg, HV_ACCEL_KVM, MEM, nr_vcpus);
	cfg.slot_bytes = SLOT;
	cfg.dirty_ring_entries = mode == HV_DIRTY_RING ? ring : 0;
	cfg.clear_chunk_pages = chunk;
	for (uint32_t v = 0; v < nr_vcpus; v++) {
		cfg.wl[v].pattern = pat;
		cfg.wl[v].region_gpa = HV_VM_WL_BASE + v * REGION_PAGES * 4096;
		cfg.wl[v].region_pages = region;
		cfg.wl[v].hot_pct = 10;
		cfg.wl[v].hot_share_pct = 90;
	}
	printf("\n    run mode=%s vcpus=%u ring=%u pattern=%u region=%u "
	       "round_us=%u rounds=%u chunk=%llu drain_min=%u delay_us<%u",
	       hv_dirty_mode_name(mode), nr_vcpus, cfg.dirty_ring_entries, pat,
	       region, round_us, rounds, (unsigned long long)chunk, drain_min,
	       h.max_us);
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	oracle_init(&o, vm, rounds, nr_vcpus);
	if (mode == HV_DIRTY_RING)
		hv_kvm_test_set_drain_hook(vm, stress_hook, &h, drain_min);
	CU_ASSERT_FATAL(hv_vm_dirty_log_start(vm, mode) == 0);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	round_harvest(&o, 0);
	for (i = 1; i <= rounds; i++) {
		usleep(round_us);
		round_harvest(&o, i);
		check_round(&o, i);
	}
	oracle_final(&o, i, false);
	printf(" changed=%llu misses=%llu ", (unsigned long long)o.checked,
	       (unsigned long long)o.misses);
	*misses += o.misses;
	oracle_verdict(&o, __func__, mode);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_stop(vm), 0);
	hv_vm_destroy(vm);
	oracle_fini(&o);
}

static void test_stress_random_reaper_interleavings(void)
{
	const char *sec = getenv("HV_STRESS_SECONDS");
	const char *sd = getenv("HV_STRESS_SEED");
	unsigned seed =
		sd ? (unsigned)strtoul(sd, NULL, 0) : (unsigned)time(NULL);
	time_t end = time(NULL) + (sec ? atol(sec) : 0);
	unsigned runs = 0;
	uint64_t misses = 0;

	HV_TEST_REQUIRE_KVM();
	printf("\n    stress seed=%u", seed);
	do {
		stress_run(&seed, &misses);
		runs++;
	} while (sec ? time(NULL) < end : runs < 3);
	printf("\n    stress runs=%u misses=%llu (ring oracle runs=%u) ", runs,
	       (unsigned long long)misses, ring_runs);
}

static void check_vmm_write_marked(enum hv_dirty_mode mode)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	uint64_t *d = calloc(WORDS, 8);
	const uint64_t gpa = (7ULL << 20) + 5 * 4096; /* no workload there */
	char buf[100] = "written by the VMM";

	hv_vm_cfg_init(&cfg, HV_ACCEL_KVM, MEM, 1);
	cfg.slot_bytes = SLOT;
	cfg.wl[0].pattern = HV_WL_PATTERN_IDLE;
	cfg.dirty_ring_entries = mode == HV_DIRTY_RING ? 4096 : 0;
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FATAL(hv_vm_dirty_log_start(vm, mode) == 0);
	CU_ASSERT_EQUAL(harvest_all(vm, d), (int64_t)PAGES);
	/* Straddles two pages. */
	CU_ASSERT_EQUAL(hv_vm_write_guest(vm, gpa + 4050, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(harvest_all(vm, d), 2);
	CU_ASSERT(bit(d, gpa / 4096));
	CU_ASSERT(bit(d, gpa / 4096 + 1));
	CU_ASSERT_EQUAL(hv_vm_write_guest(vm, MEM - 10, buf, sizeof(buf)),
			-EFAULT);
	hv_vm_destroy(vm);
	free(d);
}

static void test_vmm_writes_are_marked_in_ring_mode(void)
{
	HV_TEST_REQUIRE_KVM();
	check_vmm_write_marked(HV_DIRTY_RING);
}

static void test_vmm_writes_are_marked_in_bitmap_mode(void)
{
	HV_TEST_REQUIRE_KVM();
	check_vmm_write_marked(HV_DIRTY_BITMAP);
}

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{"ring_misses_no_page_one_vcpu", test_ring_misses_no_page_one_vcpu},
	{"ring_misses_no_page_two_vcpus_small_ring",
	 test_ring_misses_no_page_two_vcpus_small_ring},
	{"ring_misses_no_page_with_slow_harvests",
	 test_ring_misses_no_page_with_slow_harvests},
	{"ring_drainer_delay_before_reset_loses_no_page",
	 test_ring_drainer_delay_before_reset_loses_no_page},
	{"stress_random_reaper_interleavings",
	 test_stress_random_reaper_interleavings},
	{"bitmap_misses_no_page_one_vcpu", test_bitmap_misses_no_page_one_vcpu},
	{"dirty_not_lost_during_chunked_clear_two_vcpus",
	 test_dirty_not_lost_during_chunked_clear_two_vcpus},
	{"vmm_writes_are_marked_in_ring_mode",
	 test_vmm_writes_are_marked_in_ring_mode},
	{"vmm_writes_are_marked_in_bitmap_mode",
	 test_vmm_writes_are_marked_in_bitmap_mode},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("hvcore/kvm/dirty", NULL, NULL, kvm_tests);
