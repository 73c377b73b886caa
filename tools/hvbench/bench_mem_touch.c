// SPDX-License-Identifier: MIT
/*
 * hvbench mem-touch: the first-touch cost of guest RAM per backing
 * (hvcore/guest_mem.h), what a migration destination pays as the decoder
 * first writes each page. For each backing: create SIZE of guest RAM,
 * write one byte into every 4 KiB page once (a fresh mapping each
 * repetition), report the median time and GiB/s; then the same pages
 * written again (already populated) as the floor, and the data map of
 * the populated memory (what the source builds once per migration).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/guest_mem.h"
#include "hvcore/types.h"
#include "tools/hvbench/hvbench.h"

#define REPS_MAX 16

static void touch(uint8_t *p, uint64_t bytes, uint8_t v)
{
	for (uint64_t off = 0; off < bytes; off += HV_PAGE_SIZE)
		((volatile uint8_t *)p)[off] = v;
}

static int one_backing(enum hv_mem_backing b, uint64_t bytes, unsigned reps)
{
	double first[REPS_MAX], again[REPS_MAX], map[REPS_MAX];
	uint64_t npages = bytes >> HV_PAGE_SHIFT;
	uint64_t *bits = malloc(HV_DIV_ROUND_UP(npages, 64) * 8);

	if (!bits)
		return -ENOMEM;
	for (unsigned r = 0; r < reps; r++) {
		struct hv_guest_mem *mem = NULL;
		uint64_t t0, t1, t2, t3;
		int ret = hv_guest_mem_create(bytes, b, &mem);

		if (ret) {
			printf("%-10s  create failed: %s\n",
			       hv_mem_backing_name(b), strerror(-ret));
			free(bits);
			return 0;
		}
		t0 = hvbench_now_ns();
		touch(mem->hva, bytes, 1);
		t1 = hvbench_now_ns();
		touch(mem->hva, bytes, 2);
		t2 = hvbench_now_ns();
		ret = hv_guest_mem_data_map(mem, 0, npages, bits);
		t3 = hvbench_now_ns();
		hv_guest_mem_destroy(mem);
		if (ret) {
			free(bits);
			return ret;
		}
		first[r] = (double)(t1 - t0) / 1e6;
		again[r] = (double)(t2 - t1) / 1e6;
		map[r] = (double)(t3 - t2) / 1e6;
	}
	free(bits);
	{
		double f = hvbench_median(first, reps);
		double a = hvbench_median(again, reps);
		double m = hvbench_median(map, reps);

		printf("%-10s  %10.1f  %8.2f  %10.1f  %10.2f\n",
		       hv_mem_backing_name(b), f,
		       (double)bytes / (1 << 30) / (f / 1e3), a, m);
	}
	return 0;
}

static int bench_mem_touch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size-mb", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t mb = 1024;
	unsigned reps = 3;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			mb = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			reps = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'h':
			printf("hvbench mem-touch [--size-mb MB (1024, a "
			       "multiple of 2)] [--reps N (3, <= %u)]\n",
			       REPS_MAX);
			return 0;
		default:
			return 2;
		}
	}
	if (!mb || mb % 2 || !reps || reps > REPS_MAX) {
		fprintf(stderr, "mem-touch: --size-mb a multiple of 2, "
				"--reps 1..%u\n",
			REPS_MAX);
		return 2;
	}
	printf("== mem-touch: one byte into every 4 KiB page of %llu MiB, "
	       "median of %u ==\n",
	       (unsigned long long)mb, reps);
	printf("%-10s  %10s  %8s  %10s  %10s\n", "backing", "first ms",
	       "GiB/s", "again ms", "datamap ms");
	for (unsigned b = HV_BACKING_ANON; b < HV_BACKING_COUNT; b++)
		if (one_backing(b, mb << 20, reps))
			return 1;
	return 0;
}
HVBENCH_CMD("mem-touch", "first-touch cost of guest RAM per backing",
	    bench_mem_touch);
