// SPDX-License-Identifier: MIT
/*
 * hvbench dirty-log: a counterpart of the kernel's dirty_log_perf_test on
 * our KVM accelerator, plus two tables of our own:
 *
 *  1. per iteration: the time for every vCPU to dirty its whole region
 *     once more ("dirty memory"), the harvest ("get": KVM_GET_DIRTY_LOG or
 *     ring collection + reset) and the fetch-and-clear ("clear":
 *     KVM_CLEAR_DIRTY_LOG in chunks) times, then totals and averages.
 *     Unlike the kernel tool, the vCPUs keep running during get and clear
 *     (which is what a live migration does); the pages they dirty during
 *     the clear are counted;
 *  2. --chunk-sweep: clear time and pages dirtied during the clear for
 *     several chunk sizes (bitmap mode);
 *  3. --ring-cost: ring harvest cost per entry with the slot resolved once
 *     per run of same-slot entries vs per entry, on synthetic rings (pure
 *     userspace cost) and measured on the live VM.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvbench.h"
#include "hvcore/guest_mem.h"
#include "hvcore/kvm/kvm.h"
#include "hvcore/kvm/kvm_ring.h"
#include "hvcore/log.h"
#include "hvcore/memslots.h"
#include "hvcore/vm.h"

struct opts {
	uint32_t vcpus;
	uint64_t bytes; /* per vCPU */
	unsigned iters;
	enum hv_wl_pattern pattern;
	uint32_t write_pct;
	int mode; /* 0 both, else enum hv_dirty_mode */
	uint64_t chunk;
	enum hv_mem_backing backing;
	uint32_t ring;
	uint64_t slot_bytes;
	bool chunk_sweep, ring_cost;
};

struct iter_t {
	double dirty_s, get_s, clear_s;
	uint64_t pages, during_clear;
};

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static uint64_t sum_seq(struct hv_vm *vm, uint32_t n)
{
	uint64_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += hv_vm_wl_status(vm, i)->seq;
	return s;
}

static uint64_t min_passes(struct hv_vm *vm, uint32_t n)
{
	uint64_t m = UINT64_MAX;

	for (uint32_t i = 0; i < n; i++)
		m = HV_MIN(m, hv_vm_wl_status(vm, i)->passes);
	return m;
}

/* Fetch-and-clear every slot; returns pages. */
static int64_t clear_all(struct hv_vm *vm, uint64_t *buf)
{
	unsigned n = hv_vm_slot_count(vm);
	int64_t total = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t id;
		gfn_t base;
		uint64_t np;
		int64_t got;

		hv_vm_slot_info(vm, i, &id, &base, &np);
		got = hv_vm_dirty_fetch_clear(vm, id, 0, np, buf);
		if (got < 0)
			return got;
		total += got;
	}
	return total;
}

static int make_vm(const struct opts *o, enum hv_dirty_mode mode,
		   struct hv_vm **out)
{
	struct hv_vm_cfg cfg;
	uint64_t mem =
		HV_ALIGN_UP(HV_VM_WL_BASE + o->vcpus * o->bytes, 2ULL << 20);

	hv_vm_cfg_init(&cfg, HV_ACCEL_KVM, mem, o->vcpus);
	cfg.backing = o->backing;
	cfg.slot_bytes = o->slot_bytes;
	cfg.clear_chunk_pages = o->chunk;
	cfg.dirty_ring_entries = mode == HV_DIRTY_RING ? o->ring : 0;
	for (uint32_t i = 0; i < o->vcpus; i++) {
		cfg.wl[i].pattern = o->pattern;
		cfg.wl[i].region_gpa = HV_VM_WL_BASE + i * o->bytes;
		cfg.wl[i].region_pages = o->bytes >> HV_PAGE_SHIFT;
		cfg.wl[i].write_pct = o->write_pct;
		cfg.wl[i].hot_pct = 10;
		cfg.wl[i].hot_share_pct = 90;
	}
	return hv_vm_create(&cfg, out);
}

/* Wait until every vCPU finished one more pass, harvesting meanwhile in
 * ring mode (so the rings do not overflow). */
static void wait_pass(struct hv_vm *vm, const struct opts *o,
		      enum hv_dirty_mode mode, uint64_t target)
{
	while (min_passes(vm, o->vcpus) < target) {
		if (mode == HV_DIRTY_RING)
			hv_vm_dirty_harvest(vm);
		usleep(mode == HV_DIRTY_RING ? 2000 : 1000);
	}
}

static int run_mode(const struct opts *o, enum hv_dirty_mode mode)
{
	struct hv_vm *vm = NULL;
	struct iter_t *it = calloc(o->iters + 1, sizeof(*it));
	uint64_t *buf = NULL;
	uint64_t t0, passes;
	int ret;

	ret = make_vm(o, mode, &vm);
	if (ret) {
		fprintf(stderr, "dirty-log: create (%s) failed: %d\n",
			hv_dirty_mode_name(mode), ret);
		free(it);
		return ret;
	}
	buf = calloc(HV_DIV_ROUND_UP(vm->cfg.mem_bytes >> HV_PAGE_SHIFT, 64),
		     8);
	ret = hv_vm_dirty_log_start(vm, mode);
	if (ret || !buf)
		goto out;
	ret = hv_vm_start(vm);
	if (ret)
		goto out;
	printf("\n== mode=%s vcpus=%u bytes/vcpu=%llu MiB pattern=%u "
	       "write%%=%u backing=%s chunk=%llu pages ring=%u ==\n",
	       hv_dirty_mode_name(mode), o->vcpus,
	       (unsigned long long)(o->bytes >> 20), o->pattern, o->write_pct,
	       hv_mem_backing_name(o->backing), (unsigned long long)o->chunk,
	       mode == HV_DIRTY_RING ? o->ring : 0);
	printf("%-5s %12s %10s %10s %10s %14s\n", "iter", "dirty_mem_s",
	       "get_s", "clear_s", "pages", "dirtied_in_clr");
	/* Iteration 0 is the populating pass (every page first-touched and
	 * logged), like the kernel tool's "Populate memory time". */
	for (unsigned i = 0; i <= o->iters; i++) {
		uint64_t s0, s1;
		int64_t n;

		passes = min_passes(vm, o->vcpus);
		t0 = hvbench_now_ns();
		wait_pass(vm, o, mode, passes + 1);
		it[i].dirty_s = secs(hvbench_now_ns() - t0);
		t0 = hvbench_now_ns();
		n = hv_vm_dirty_harvest(vm);
		it[i].get_s = secs(hvbench_now_ns() - t0);
		s0 = sum_seq(vm, o->vcpus);
		t0 = hvbench_now_ns();
		n = clear_all(vm, buf);
		it[i].clear_s = secs(hvbench_now_ns() - t0);
		s1 = sum_seq(vm, o->vcpus);
		if (n < 0) {
			ret = (int)n;
			goto out;
		}
		it[i].pages = (uint64_t)n;
		it[i].during_clear = s1 - s0;
		printf("%-5u %12.4f %10.4f %10.4f %10llu %14llu\n", i,
		       it[i].dirty_s, it[i].get_s, it[i].clear_s,
		       (unsigned long long)it[i].pages,
		       (unsigned long long)it[i].during_clear);
	}
	{
		double d = 0, g = 0, c = 0;

		for (unsigned i = 1; i <= o->iters; i++) {
			d += it[i].dirty_s;
			g += it[i].get_s;
			c += it[i].clear_s;
		}
		printf("populate: %.4fs\n", it[0].dirty_s);
		printf("total (iters 1..%u): dirty %.4fs get %.4fs clear "
		       "%.4fs\n",
		       o->iters, d, g, c);
		printf("average: dirty %.4fs get %.4fs clear %.4fs\n",
		       d / o->iters, g / o->iters, c / o->iters);
	}
	if (mode == HV_DIRTY_RING) {
		struct hv_kvm_ring_stats rs;

		hv_kvm_get_ring_stats(vm, &rs);
		printf("ring: entries=%llu collect=%.1f ns/entry reset=%.1f "
		       "ns/entry full_exits=%llu resyncs=%llu desyncs=%llu\n",
		       (unsigned long long)rs.entries,
		       rs.entries ? (double)rs.collect_ns / rs.entries : 0,
		       rs.entries ? (double)rs.reset_ns / rs.entries : 0,
		       (unsigned long long)rs.full_exits,
		       (unsigned long long)rs.resyncs,
		       (unsigned long long)rs.desyncs);
	}
	if (o->chunk_sweep && mode == HV_DIRTY_BITMAP) {
		static const uint64_t chunks[] = {64, 16384, 262144, 0};

		printf("\nchunk sweep (bitmap, vCPUs running):\n");
		printf("%-12s %10s %10s %14s\n", "chunk", "pages", "clear_s",
		       "dirtied_in_clr");
		for (size_t k = 0; k < HV_ARRAY_SIZE(chunks); k++) {
			char name[32];
			uint64_t s0, s1;
			int64_t n;

			hv_vm_set_clear_chunk(vm, chunks[k]);
			passes = min_passes(vm, o->vcpus);
			wait_pass(vm, o, mode, passes + 1);
			hv_vm_dirty_harvest(vm);
			s0 = sum_seq(vm, o->vcpus);
			t0 = hvbench_now_ns();
			n = clear_all(vm, buf);
			t0 = hvbench_now_ns() - t0;
			s1 = sum_seq(vm, o->vcpus);
			if (chunks[k])
				snprintf(name, sizeof(name), "%llu KiB",
					 (unsigned long long)chunks[k] * 4);
			else
				snprintf(name, sizeof(name), "whole slot");
			printf("%-12s %10lld %10.4f %14llu\n", name,
			       (long long)n, secs(t0),
			       (unsigned long long)(s1 - s0));
		}
	}
	if (o->ring_cost && mode == HV_DIRTY_RING) {
		struct hv_kvm_ring_stats a, b;

		printf("\nlive ring collection, per entry (same VM):\n");
		for (int pe = 0; pe <= 1; pe++) {
			hv_kvm_set_ring_per_entry(vm, pe);
			hv_kvm_get_ring_stats(vm, &a);
			passes = min_passes(vm, o->vcpus);
			wait_pass(vm, o, mode, passes + 1);
			hv_vm_dirty_harvest(vm);
			hv_kvm_get_ring_stats(vm, &b);
			printf("  %-22s %8.1f ns/entry lookups/entry=%.3f "
			       "entries=%llu\n",
			       pe ? "per-entry lookup" : "once per run",
			       b.entries > a.entries
				       ? (double)(b.collect_ns - a.collect_ns) /
						 (double)(b.entries - a.entries)
				       : 0.0,
			       b.entries > a.entries
				       ? (double)(b.lookups - a.lookups) /
						 (double)(b.entries - a.entries)
				       : 0.0,
			       (unsigned long long)(b.entries - a.entries));
		}
	}
	hv_vm_stop(vm);
out:
	if (ret)
		fprintf(stderr, "dirty-log: mode=%s failed: %d\n",
			hv_dirty_mode_name(mode), ret);
	hv_vm_destroy(vm);
	free(buf);
	free(it);
	return ret;
}

/*
 * Synthetic ring cost: @slots memslots of 32768 pages, rings filled with
 * runs of @run entries per slot (sweep-like: consecutive offsets), the
 * collector timed with and without once-per-run slot resolution.
 */
static int ring_cost_synthetic(void)
{
	const uint32_t size = 65536, nslots = 64, slot_pages = 32768;
	static const uint32_t runs[] = {1, 16, 512};
	struct hv_memslots *set = NULL;
	struct kvm_dirty_gfn *ring, *taken = NULL;
	uint8_t *backing;
	int ret;

	ret = hv_memslots_create(&set);
	if (ret)
		return ret;
	hv_memslots_set_initially_set(set, false);
	backing = aligned_alloc(4096, 4096); /* never dereferenced */
	ring = calloc(size, sizeof(*ring));
	taken = calloc(size, sizeof(*taken));
	for (uint32_t s = 0; s < nslots && !ret; s++) {
		struct hv_memslot_desc d = {
			.id = s,
			.flags = HV_MEMSLOT_F_DIRTY_LOG,
			.base_gfn = (uint64_t)s * slot_pages,
			.npages = slot_pages,
			.hva = (hva_t)(uintptr_t)backing,
		};

		ret = hv_memslots_add(set, &d);
	}
	if (ret || !ring || !taken)
		goto out;
	printf("\nsynthetic ring collection: %u entries, %u slots "
	       "(userspace cost, no ioctl)\n",
	       size, nslots);
	printf("%-10s %16s %16s %10s\n", "run_len", "once/run ns/e",
	       "per-entry ns/e", "speedup");
	for (size_t r = 0; r < HV_ARRAY_SIZE(runs); r++) {
		double ns[2];

		for (int pe = 0; pe <= 1; pe++) {
			const struct hv_memslots_snap *snap;
			struct hv_kvm_ring_result res = {0};
			uint64_t best = UINT64_MAX;

			for (int rep = 0; rep < 20; rep++) {
				uint32_t fetch = 0;
				uint64_t t0;

				for (uint32_t i = 0; i < size; i++) {
					uint32_t run = i / runs[r];

					ring[i].slot = (run * 7) % nslots;
					ring[i].offset =
						(i % runs[r]) +
						(run * 613) %
							(slot_pages - runs[r]);
					ring[i].flags = KVM_DIRTY_GFN_F_DIRTY;
				}
				snap = hv_memslots_read_lock(set);
				t0 = hvbench_now_ns();
				hv_kvm_ring_apply(taken,
						  hv_kvm_ring_take(ring, size,
								   &fetch,
								   taken),
						  snap, pe, &res);
				t0 = hvbench_now_ns() - t0;
				hv_memslots_read_unlock(set);
				best = HV_MIN(best, t0);
			}
			ns[pe] = (double)best / size;
		}
		printf("%-10u %16.2f %16.2f %9.2fx\n", runs[r], ns[0], ns[1],
		       ns[1] / ns[0]);
	}
out:
	free(taken);
	free(ring);
	free(backing);
	hv_memslots_destroy(set);
	return ret;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hvbench dirty-log [-v vcpus] [-b bytes_per_vcpu(MiB)] "
		"[-i iters]\n"
		"  [-p sweep|random|hotset] [-w write_pct] [-m "
		"ring|bitmap|both]\n"
		"  [-c clear_chunk_pages] [-B anon|thp|hugetlb] [-r "
		"ring_entries]\n"
		"  [-s slot_MiB] [--chunk-sweep] [--ring-cost] "
		"[--synthetic]\n");
}

static int bench_dirty_log(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"chunk-sweep", no_argument, NULL, 'S'},
		{"ring-cost", no_argument, NULL, 'R'},
		{"synthetic", no_argument, NULL, 'Y'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {
		.vcpus = 2,
		.bytes = 508ULL << 20,
		.iters = 3,
		.pattern = HV_WL_PATTERN_SWEEP,
		.write_pct = 100,
		.mode = 0,
		.chunk = 0,
		.backing = HV_BACKING_ANON,
		.ring = 65536,
		.slot_bytes = 0,
	};
	bool synthetic_only = false;
	int c, ret = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "v:b:i:p:w:m:c:B:r:s:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'v':
			o.vcpus = (uint32_t)atoi(optarg);
			break;
		case 'b':
			o.bytes = strtoull(optarg, NULL, 0) << 20;
			break;
		case 'i':
			o.iters = (unsigned)atoi(optarg);
			break;
		case 'p':
			o.pattern = !strcmp(optarg, "random")
					    ? HV_WL_PATTERN_RANDOM
				    : !strcmp(optarg, "hotset")
					    ? HV_WL_PATTERN_HOTSET
					    : HV_WL_PATTERN_SWEEP;
			break;
		case 'w':
			o.write_pct = (uint32_t)atoi(optarg);
			break;
		case 'm':
			o.mode = !strcmp(optarg, "ring")     ? HV_DIRTY_RING
				 : !strcmp(optarg, "bitmap") ? HV_DIRTY_BITMAP
							     : 0;
			break;
		case 'c':
			o.chunk = strtoull(optarg, NULL, 0);
			break;
		case 'B':
			o.backing = !strcmp(optarg, "thp") ? HV_BACKING_THP
				    : !strcmp(optarg, "hugetlb")
					    ? HV_BACKING_HUGETLB
					    : HV_BACKING_ANON;
			break;
		case 'r':
			o.ring = (uint32_t)atoi(optarg);
			break;
		case 's':
			o.slot_bytes = strtoull(optarg, NULL, 0) << 20;
			break;
		case 'S':
			o.chunk_sweep = true;
			break;
		case 'R':
			o.ring_cost = true;
			break;
		case 'Y':
			synthetic_only = true;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!o.vcpus || !o.iters || !o.bytes || o.bytes % (2ULL << 20)) {
		usage();
		return 2;
	}
	if (o.ring_cost || synthetic_only)
		ret = ring_cost_synthetic();
	if (synthetic_only)
		return ret ? 1 : 0;
	if (!hv_kvm_available()) {
		fprintf(stderr, "dirty-log: /dev/kvm not available\n");
		return 1;
	}
	if (!o.mode || o.mode == HV_DIRTY_BITMAP)
		ret |= run_mode(&o, HV_DIRTY_BITMAP);
	if (!o.mode || o.mode == HV_DIRTY_RING)
		ret |= run_mode(&o, HV_DIRTY_RING);
	return ret ? 1 : 0;
}

HVBENCH_CMD("dirty-log",
	    "KVM dirty ring / bitmap harvest and clear costs "
	    "(dirty_log_perf_test counterpart)",
	    bench_dirty_log);
