// SPDX-License-Identifier: MIT
/*
 * The workload tests' host environment: a plain buffer standing in for
 * guest RAM at REGION_GPA, and the hooks the workload calls. Shared by
 * test_workload.c (patterns, content, prefill) and
 * test_workload_pacing.c (rates, throttling, sleeping).
 */
#ifndef TESTS_UNIT_HVCORE_WL_HOST_ENV_H
#define TESTS_UNIT_HVCORE_WL_HOST_ENV_H

#include "tests/harness/hv_test.h"
#include "hvcore/workload.h"
#include "hvcore/types.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REGION_GPA 0x100000ULL

struct host_env {
	uint8_t *mem; /* backs [REGION_GPA, REGION_GPA + pages * 4K) */
	uint64_t pages;
	uint64_t bad_accesses;
	uint64_t writes_seen;
	uint64_t heartbeats;
};

static inline uint8_t *page_at(struct host_env *e, uint64_t gpa)
{
	if (gpa < REGION_GPA || gpa >= REGION_GPA + e->pages * HV_PAGE_SIZE ||
	    (gpa & (HV_PAGE_SIZE - 1))) {
		e->bad_accesses++;
		return e->mem; /* keep running; the test fails on the count */
	}
	return e->mem + (gpa - REGION_GPA);
}

static inline uint8_t *env_write(void *ctx, uint64_t gpa)
{
	struct host_env *e = ctx;

	e->writes_seen++;
	return page_at(e, gpa);
}

static inline const uint8_t *env_read(void *ctx, uint64_t gpa)
{
	return page_at(ctx, gpa);
}

static inline uint64_t env_now(void *ctx)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void env_heartbeat(void *ctx, const struct hv_wl_status *st)
{
	((struct host_env *)ctx)->heartbeats++;
}

static inline void setup(struct hv_wl_params *p, struct host_env *e,
			 uint64_t pages, uint32_t pattern, uint32_t content)
{
	memset(p, 0, sizeof(*p));
	memset(e, 0, sizeof(*e));
	e->pages = pages;
	e->mem = calloc(pages, HV_PAGE_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->mem);
	p->magic = HV_WL_MAGIC;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = 1;
	p->tsc_khz = 1000000; /* the env's clock is in ns */
	p->vcpu[0].pattern = pattern;
	p->vcpu[0].content = content;
	p->vcpu[0].region_gpa = REGION_GPA;
	p->vcpu[0].region_pages = pages;
	p->vcpu[0].write_pct = 100;
	p->vcpu[0].seed = 42;
}

static inline const struct hv_wl_stamp *stamp(struct host_env *e, uint64_t page)
{
	return (const struct hv_wl_stamp *)(e->mem + page * HV_PAGE_SIZE);
}

static inline void run(struct hv_wl_params *p, struct hv_wl_status *st,
		       struct host_env *e)
{
	struct hv_wl_env env = {
		.ctx = e,
		.page_for_write = env_write,
		.page_for_read = env_read,
		.now_tsc = env_now,
		.heartbeat = env_heartbeat,
	};

	CU_ASSERT_EQUAL(hv_wl_run(p, st, 0, &env), 0);
}

static inline bool page_is_whole_write(struct host_env *e, uint64_t i,
				       uint32_t content)
{
	static uint8_t want[HV_PAGE_SIZE];
	const struct hv_wl_stamp *s = stamp(e, i);

	if (s->magic != HV_WL_STAMP_MAGIC || s->vcpu != 0 || !s->seq)
		return false;
	memset(want, 0, sizeof(want));
	hv_wl_fill_page(want, 0, s->seq, content);
	return !memcmp(want, e->mem + i * HV_PAGE_SIZE, HV_PAGE_SIZE);
}

#endif
