// SPDX-License-Identifier: MIT
/*
 * hvbench tsc-khz: the host's TSC rate in kHz, measured against
 * CLOCK_MONOTONIC_RAW (median of five 50 ms windows). A guest under QEMU
 * with -cpu qemu64 sees the host's TSC rate (TCG reads the host's TSC; KVM
 * without a TSC scaling request keeps it), so tools/bench/vs-qemu.sh hands
 * this value to the guest on its command line for pacing, instead of
 * having the guest calibrate against a timer.
 */
#include <stdio.h>
#include <time.h>

#include "tools/hvbench/hvbench.h"

#if defined(__x86_64__)
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int bench_tsc(int argc, char **argv)
{
	double khz[5];

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: hvbench tsc-khz\n");
		return 2;
	}
	for (unsigned i = 0; i < 5; i++) {
		struct timespec d = { 0, 50 * 1000000L };
		uint64_t n0 = raw_ns(), c0 = rdtsc(), n1, c1;

		nanosleep(&d, NULL);
		c1 = rdtsc();
		n1 = raw_ns();
		khz[i] = (double)(c1 - c0) * 1e6 / (double)(n1 - n0);
	}
	printf("%.0f\n", hvbench_median(khz, 5));
	return 0;
}
#else
static int bench_tsc(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "hvbench tsc-khz: x86-64 only\n");
	return 2;
}
#endif

HVBENCH_CMD("tsc-khz", "the host's TSC rate in kHz (for a QEMU guest)",
	    bench_tsc);
