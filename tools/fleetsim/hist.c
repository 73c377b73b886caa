// SPDX-License-Identifier: MIT
/*
 * fleet-sim: latency histograms and the clock (fleetsim.h).
 */
#include <time.h>

#include "tools/fleetsim/fleetsim.h"

uint64_t fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned bucket(uint64_t us)
{
	unsigned e;

	if (us < 64)
		return (unsigned)us;
	e = 63u - (unsigned)__builtin_clzll(us); /* >= 6 */
	if (e > 40)
		return FS_HIST_N - 1;
	return 64u + (e - 6u) * 32u + (unsigned)((us >> (e - 5u)) & 31u);
}

/* The middle of bucket @i, in us. */
static double bucket_us(unsigned i)
{
	unsigned e, sub;

	if (i < 64)
		return i + 0.5;
	e = (i - 64u) / 32u + 6u;
	sub = (i - 64u) % 32u;
	return (double)((32ull + sub) << (e - 5u)) +
	       (double)(1ull << (e - 5u)) / 2;
}

void fs_hist_add(struct fs_hist *h, uint64_t ns)
{
	atomic_fetch_add_explicit(&h->b[bucket(ns / 1000)], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&h->n, 1, memory_order_relaxed);
}

double fs_hist_ms(struct fs_hist *h, double p)
{
	uint64_t n = atomic_load(&h->n), want, sum = 0;

	if (!n)
		return 0;
	want = (uint64_t)(p * (double)n);
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < FS_HIST_N; i++) {
		sum += atomic_load_explicit(&h->b[i], memory_order_relaxed);
		if (sum >= want)
			return bucket_us(i) / 1000.0;
	}
	return bucket_us(FS_HIST_N - 1) / 1000.0;
}
