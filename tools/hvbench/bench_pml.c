// SPDX-License-Identifier: MIT
/*
 * hvbench pml: the PML flush with and without once-per-flush memslot
 * resolution, dirty_log_perf_test style, on the soft accelerator.
 *
 * Each vCPU sweeps its region once per iteration (every page written once)
 * with dirty logging in PML mode; between iterations the host harvests and
 * clears the whole log. Iteration 1 (first writes after logging started)
 * is discarded; iterations 2..N are averaged; runs alternate baseline
 * (slot lookup + read-side section per PML entry) and patched (once per
 * flush) so drift hits both alike.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arm64/stage2.h"
#include "arch/x86/ept.h"
#include "hvcore/memslots.h"
#include "hvcore/soft/rig.h"
#include "hvcore/soft/soft_vm.h"
#include "tools/hvbench/hvbench.h"

struct pml_opts {
	uint32_t vcpus;
	uint64_t mib;
	unsigned iters, runs;
	const struct hv_arch_pte_fmt *fmt;
};

/* One run: average seconds of iterations 2..iters, or < 0 on error. */
static double pml_run(const struct pml_opts *o, bool per_entry,
		      uint64_t *pml_full)
{
	struct hv_soft_rig_cfg cfg = {
		.fmt = o->fmt, .nr_vcpus = o->vcpus,
		.region_pages = o->mib << 8, .huge = false,
		.pml_per_entry = per_entry, .pattern = HV_WL_PATTERN_SWEEP,
	};
	struct hv_soft_clear_opts co = { .lock = HV_SOFT_LOCK_READ,
					 .eager_split = true };
	struct hv_soft_vm_stats st;
	struct hv_soft_rig *rig;
	uint64_t *bm, pages;
	double sum = 0;
	int ret;

	if (hv_soft_rig_create(&cfg, &rig))
		return -1;
	pages = cfg.region_pages;
	bm = calloc(HV_DIV_ROUND_UP(rig->high_pages, 64), 8);
	if (!bm)
		goto fail;
	/* Iteration 0: populate, unlogged. Then log, iterate. */
	for (unsigned it = 0; it <= o->iters; it++) {
		struct hv_wl_params *p = hv_soft_rig_params(rig);
		uint64_t t0;

		if (it == 1 && hv_soft_rig_log_start(rig, HV_SOFT_LOG_PML))
			goto fail;
		for (uint32_t v = 0; v < o->vcpus; v++)
			p->vcpu[v].max_writes = (it + 1) * pages;
		t0 = hvbench_now_ns();
		if (hv_soft_rig_start(rig))
			goto fail;
		ret = hv_soft_rig_wait(rig);
		if (ret)
			goto fail;
		if (it >= 2)
			sum += (hvbench_now_ns() - t0) / 1e9;
		if (it >= 1) {
			if (hv_soft_rig_harvest(rig, HV_SOFT_RIG_SLOT_HIGH,
						bm) < 0 ||
			    hv_soft_vm_clear(rig->vm, HV_SOFT_RIG_SLOT_HIGH, 0,
					     rig->high_pages, bm, &co))
				goto fail;
		}
	}
	hv_soft_vm_get_stats(rig->vm, &st);
	*pml_full += st.pml_full;
	free(bm);
	hv_soft_rig_destroy(rig);
	return sum / (o->iters - 1);
fail:
	free(bm);
	hv_soft_rig_destroy(rig);
	return -1;
}

/*
 * The flush alone, on synthetic PML buffers: 512 GPAs spread over @nslots
 * logged slots of 512 pages each, in runs of @run_len consecutive entries
 * in the same slot (a vCPU sweeping one region gives long runs; one
 * writing all over gives short ones). Per-entry cost of both variants,
 * medians of 21 rounds of 2000 flushes: no vCPU threads, no noise from
 * the rest of an iteration.
 */
static double flush_ns(struct hv_memslots *set, const uint64_t *gpas,
		       bool per_entry)
{
	double v[21];

	for (unsigned r = 0; r < 21; r++) {
		uint64_t t0 = hvbench_now_ns();

		for (unsigned i = 0; i < 2000; i++)
			hv_soft_pml_flush(set, gpas, 512, per_entry);
		v[r] = (double)(hvbench_now_ns() - t0) / (2000.0 * 512);
	}
	return hvbench_median(v, 21);
}

static int pml_synthetic(void)
{
	static const unsigned slots[] = { 1, 8, 64 };
	static const unsigned runs[] = { 1, 16, 512 };
	static uint8_t backing[64 * 512 * 8]; /* fake hvas, never touched */
	uint64_t gpas[512];

	printf("\nsynthetic PML flush, 512 entries per flush "
	       "(userspace cost per entry, medians)\n");
	printf("slots  run_len   per-entry ns/e   once/flush ns/e   "
	       "speedup\n");
	for (unsigned a = 0; a < HV_ARRAY_SIZE(slots); a++) {
		struct hv_memslots *set;

		if (hv_memslots_create(&set))
			return -ENOMEM;
		for (unsigned i = 0; i < slots[a]; i++) {
			struct hv_memslot_desc d = {
				.id = i, .base_gfn = 0x100000 + i * 1024,
				.npages = 512,
				.hva = HV_ALIGN_UP((uintptr_t)backing, 4096) +
				       ((uint64_t)i << 24),
			};

			if (hv_memslots_add(set, &d) ||
			    hv_memslots_set_flags(set, i,
						  HV_MEMSLOT_F_DIRTY_LOG)) {
				hv_memslots_destroy(set);
				return -EINVAL;
			}
		}
		for (unsigned b = 0; b < HV_ARRAY_SIZE(runs); b++) {
			double pe, once;

			for (unsigned i = 0; i < 512; i++) {
				unsigned slot = (i / runs[b]) % slots[a];

				gpas[i] = (0x100000ULL + slot * 1024 +
					   (i % 512)) << HV_PAGE_SHIFT;
			}
			pe = flush_ns(set, gpas, true);
			once = flush_ns(set, gpas, false);
			printf("%5u  %7u   %14.2f   %15.2f   %6.2fx\n",
			       slots[a], runs[b], pe, once, pe / once);
		}
		hv_memslots_destroy(set);
	}
	return 0;
}

static int bench_pml(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "vcpus", required_argument, NULL, 'v' },
		{ "mib", required_argument, NULL, 'm' },
		{ "iters", required_argument, NULL, 'i' },
		{ "runs", required_argument, NULL, 'r' },
		{ "fmt", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct pml_opts o = { 2, 64, 5, 5, &x86_ept_fmt };
	double base[64], patched[64], bsum = 0, psum = 0;
	uint64_t bfull = 0, pfull = 0;
	int c;

	while ((c = getopt_long(argc, argv, "v:m:i:r:f:", lo, NULL)) != -1) {
		switch (c) {
		case 'v': o.vcpus = atoi(optarg); break;
		case 'm': o.mib = strtoull(optarg, NULL, 0); break;
		case 'i': o.iters = atoi(optarg); break;
		case 'r': o.runs = atoi(optarg); break;
		case 'f':
			o.fmt = !strcmp(optarg, "arm64") ? &arm64_s2_fmt
							 : &x86_ept_fmt;
			break;
		default:
			fprintf(stderr, "usage: hvbench pml [--vcpus N] "
				"[--mib MiB-per-vCPU] [--iters N>=2] "
				"[--runs N<=64] [--fmt x86|arm64]\n");
			return 2;
		}
	}
	if (o.iters < 2 || !o.runs || o.runs > 64 || !o.vcpus || !o.mib)
		return 2;
	printf("pml: %u vCPUs x %llu MiB, fmt=%s, iterations 2-%u averaged, "
	       "%u runs\n", o.vcpus, (unsigned long long)o.mib, o.fmt->name,
	       o.iters, o.runs);
	for (unsigned r = 0; r < o.runs; r++) {
		base[r] = pml_run(&o, true, &bfull);
		patched[r] = pml_run(&o, false, &pfull);
		if (base[r] < 0 || patched[r] < 0) {
			fprintf(stderr, "pml: run %u failed\n", r);
			return 1;
		}
		printf("  run %u: baseline %.4f s  patched %.4f s\n", r + 1,
		       base[r], patched[r]);
		bsum += base[r];
		psum += patched[r];
	}
	printf("\n| variant | avg iteration time (s) | PML-full exits/run |\n");
	printf("|---|---|---|\n");
	printf("| baseline (lookup per entry) | %.4f | %llu |\n",
	       bsum / o.runs, (unsigned long long)(bfull / o.runs));
	printf("| patched (once per flush) | %.4f | %llu |\n", psum / o.runs,
	       (unsigned long long)(pfull / o.runs));
	printf("| saving | %.1f%% | |\n", 100.0 * (bsum - psum) / bsum);
	return pml_synthetic() ? 1 : 0;
}

HVBENCH_CMD("pml", "PML flush: memslot lookup per entry vs once per flush",
	    bench_pml);
