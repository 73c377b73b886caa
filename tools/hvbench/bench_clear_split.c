// SPDX-License-Identifier: MIT
/*
 * hvbench clear-split: chunked clear-dirty-log with eager huge-page split,
 * chunk size x MMU lock mode, on the soft accelerator, with vCPUs writing
 * (random pages, flat out) throughout.
 *
 * Per configuration and run: guest RAM mapped by 2 MiB stage-2 leaves
 * (faulted in unlogged), dirty logging started with initially-set bitmaps,
 * then `passes` harvest + chunked clear rounds; the first clear splits
 * every huge leaf. Reported: total clear time and vCPU progress (pages
 * written per second during the clear phase); relative change of the
 * read-lock variant against the write-lock baseline per chunk size, as in
 * the KVM eager-split commit's table.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/arm64/stage2.h"
#include "arch/x86/ept.h"
#include "hvcore/soft/rig.h"
#include "tools/hvbench/hvbench.h"

struct cs_result {
	double clear_s;	 /* sum of clear times */
	double rate;	 /* vCPU pages written per second, clear phase */
	double first_s;	 /* first (splitting) clear */
	uint64_t splits;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int cs_run(const struct hv_arch_pte_fmt *fmt, uint32_t vcpus,
		  uint64_t mib, uint64_t chunk, enum hv_soft_lock_mode lock,
		  unsigned passes, struct cs_result *res)
{
	struct hv_soft_rig_cfg cfg = {
		.fmt = fmt, .nr_vcpus = vcpus, .region_pages = mib << 8,
		.huge = true, .pattern = HV_WL_PATTERN_RANDOM,
	};
	struct hv_soft_clear_opts co = { .chunk_pages = chunk, .lock = lock,
					 .eager_split = true };
	struct hv_soft_mmu_stats ms;
	struct hv_soft_rig *rig;
	uint64_t *bm, w0, t0, clear_ns = 0;
	int ret = -1;

	if (hv_soft_rig_create(&cfg, &rig))
		return -1;
	bm = calloc(HV_DIV_ROUND_UP(rig->high_pages, 64), 8);
	if (!bm || hv_soft_rig_start(rig))
		goto out;
	/* Fault the whole region in as 2 MiB leaves before logging. */
	while (hv_soft_rig_writes(rig) < rig->high_pages)
		sleep_ms(5);
	if (hv_soft_rig_log_start(rig, HV_SOFT_LOG_WP))
		goto out;
	w0 = hv_soft_rig_writes(rig);
	t0 = hvbench_now_ns();
	for (unsigned p = 0; p < passes; p++) {
		uint64_t c0;

		if (hv_soft_rig_harvest(rig, HV_SOFT_RIG_SLOT_HIGH, bm) < 0)
			goto out;
		c0 = hvbench_now_ns();
		if (hv_soft_vm_clear(rig->vm, HV_SOFT_RIG_SLOT_HIGH, 0,
				     rig->high_pages, bm, &co))
			goto out;
		c0 = hvbench_now_ns() - c0;
		if (!p)
			res->first_s = c0 / 1e9;
		clear_ns += c0;
	}
	res->rate = (hv_soft_rig_writes(rig) - w0) /
		    ((hvbench_now_ns() - t0) / 1e9);
	res->clear_s = clear_ns / 1e9;
	hv_soft_mmu_get_stats(rig->vm->mmu, &ms);
	res->splits = ms.splits;
	ret = hv_soft_rig_stop(rig) ? -1 : 0;
out:
	free(bm);
	hv_soft_rig_destroy(rig);
	return ret;
}

static int bench_clear_split(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "vcpus", required_argument, NULL, 'v' },
		{ "mib", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },
		{ "passes", required_argument, NULL, 'p' },
		{ "fmt", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const struct hv_arch_pte_fmt *fmt = &x86_ept_fmt;
	uint32_t vcpus = 1;
	uint64_t mib = 1024;
	unsigned runs = 3, passes = 3;
	uint64_t chunks[3];
	const char *names[3] = { "whole", "1/16", "2 MiB" };
	int c;

	while ((c = getopt_long(argc, argv, "v:m:r:p:f:", lo, NULL)) != -1) {
		switch (c) {
		case 'v': vcpus = atoi(optarg); break;
		case 'm': mib = strtoull(optarg, NULL, 0); break;
		case 'r': runs = atoi(optarg); break;
		case 'p': passes = atoi(optarg); break;
		case 'f':
			fmt = !strcmp(optarg, "arm64") ? &arm64_s2_fmt
						       : &x86_ept_fmt;
			break;
		default:
			fprintf(stderr, "usage: hvbench clear-split [--vcpus N]"
				" [--mib MiB-per-vCPU, multiple of 32] "
				"[--runs N] [--passes N] [--fmt x86|arm64]\n");
			return 2;
		}
	}
	if (!vcpus || !runs || !passes || !mib || mib % 32)
		return 2;
	chunks[0] = 0;
	chunks[1] = (mib << 8) * vcpus / 16;
	chunks[2] = 512;
	printf("clear-split: %u vCPU(s) x %llu MiB, 2 MiB leaves, WP mode, "
	       "fmt=%s, %u clear passes, median of %u runs\n", vcpus,
	       (unsigned long long)mib, fmt->name, passes, runs);
	printf("\n| chunk | lock | clear time (s) | first clear (s) | "
	       "vCPU pages/s | splits |\n|---|---|---|---|---|---|\n");
	double ct[3][2], vr[3][2];

	for (unsigned k = 0; k < 3; k++) {
		for (unsigned l = 0; l < 2; l++) {
			double a[16], b[16], f[16];
			struct cs_result r = { 0 };

			for (unsigned i = 0; i < runs && i < 16; i++) {
				if (cs_run(fmt, vcpus, mib, chunks[k],
					   l ? HV_SOFT_LOCK_READ
					     : HV_SOFT_LOCK_WRITE,
					   passes, &r)) {
					fprintf(stderr, "clear-split: failed\n");
					return 1;
				}
				a[i] = r.clear_s;
				b[i] = r.rate;
				f[i] = r.first_s;
			}
			ct[k][l] = hvbench_median(a, HV_MIN(runs, 16u));
			vr[k][l] = hvbench_median(b, HV_MIN(runs, 16u));
			printf("| %s | %s | %.4f | %.4f | %.0f | %llu |\n",
			       names[k], l ? "read" : "write", ct[k][l],
			       hvbench_median(f, HV_MIN(runs, 16u)), vr[k][l],
			       (unsigned long long)r.splits);
		}
	}
	printf("\n| chunk | clear time change (read vs write) | "
	       "vCPU progress change |\n|---|---|---|\n");
	for (unsigned k = 0; k < 3; k++)
		printf("| %s | %+.0f%% | %+.0f%% |\n", names[k],
		       100.0 * (ct[k][1] - ct[k][0]) / ct[k][0],
		       100.0 * (vr[k][1] - vr[k][0]) / vr[k][0]);
	return 0;
}

HVBENCH_CMD("clear-split",
	    "chunked clear with eager split: chunk size x read/write lock",
	    bench_clear_split);
