/* SPDX-License-Identifier: MIT */
/*
 * Clocks: the one definition every layer uses, any thread.
 *   hv_now_ns()       CLOCK_MONOTONIC in nanoseconds: durations, deadlines;
 *   hv_now_unix_ns()  CLOCK_REALTIME in nanoseconds since the epoch: what
 *                     is shown to operators and stamped on events.
 */
#ifndef HVCORE_TIME_H
#define HVCORE_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t hv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t hv_now_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
