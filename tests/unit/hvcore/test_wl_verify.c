// SPDX-License-Identifier: MIT
/*
 * The page-stamp oracle (hvcore/wl_verify.c) over RAM the real workload
 * wrote: it must pass what the workload leaves and find every kind of
 * damage a migration could do (a flipped byte, a page rolled back to an
 * older stamp, a write that never arrived, a stamp of the wrong vCPU).
 */
#include "tests/harness/hv_test.h"
#include "hvcore/types.h"
#include "hvcore/wl_verify.h"
#include "hvcore/workload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RAM_BYTES (2ULL << 20)
#define PAGES 64ULL
#define SWEEP_GPA 0x100000ULL /* vCPU 0: sweep, text content */
#define RANDOM_GPA 0x180000ULL /* vCPU 1: random, stamp only */
#define SWEEP_WRITES (PAGES * 5 / 2) /* two and a half passes */
#define RANDOM_WRITES 40ULL

static uint8_t *env_write(void *ctx, uint64_t gpa)
{
	return (uint8_t *)ctx + gpa;
}

static const uint8_t *env_read(void *ctx, uint64_t gpa)
{
	return (const uint8_t *)ctx + gpa;
}

static uint64_t env_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct hv_wl_params *params(uint8_t *ram)
{
	return (struct hv_wl_params *)(ram + HV_WL_PARAMS_GPA);
}

static struct hv_wl_status *status(uint8_t *ram, uint32_t vcpu)
{
	return (struct hv_wl_status *)(ram + HV_WL_STATUS_GPA) + vcpu;
}

static uint8_t *page(uint8_t *ram, uint64_t region_gpa, uint64_t idx)
{
	return ram + region_gpa + idx * HV_PAGE_SIZE;
}

/* RAM as two vCPUs running the real workload to max_writes leave it. */
static uint8_t *ram_written(void)
{
	uint8_t *ram = calloc(1, RAM_BYTES);
	struct hv_wl_env env = {
		.page_for_write = env_write,
		.page_for_read = env_read,
		.now_tsc = env_now,
	};
	struct hv_wl_params *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ram);
	env.ctx = ram;
	p = params(ram);
	p->magic = HV_WL_MAGIC;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = 2;
	p->tsc_khz = 1000000; /* env_now ticks in ns */
	p->vcpu[0] = (struct hv_wl_vcpu_params){
		.pattern = HV_WL_PATTERN_SWEEP,
		.content = HV_WL_CONTENT_TEXT,
		.region_gpa = SWEEP_GPA,
		.region_pages = PAGES,
		.write_pct = 100,
		.max_writes = SWEEP_WRITES,
	};
	p->vcpu[1] = (struct hv_wl_vcpu_params){
		.pattern = HV_WL_PATTERN_RANDOM,
		.content = HV_WL_CONTENT_STAMP,
		.region_gpa = RANDOM_GPA,
		.region_pages = PAGES,
		.write_pct = 100,
		.seed = 7,
		.max_writes = RANDOM_WRITES,
	};
	for (uint32_t v = 0; v < 2; v++)
		CU_ASSERT_EQUAL_FATAL(
			hv_wl_run(p, status(ram, v), v, &env), 0);
	CU_ASSERT_EQUAL_FATAL(status(ram, 0)->seq, SWEEP_WRITES);
	CU_ASSERT_EQUAL_FATAL(status(ram, 1)->seq, RANDOM_WRITES);
	return ram;
}

static int verify(uint8_t *ram, struct hv_wl_verify *r)
{
	return hv_wl_verify(ram, RAM_BYTES, r);
}

static void test_workload_output_is_clean(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;

	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_TRUE(hv_wl_verify_clean(&r));
	CU_ASSERT_EQUAL(r.pages, 2 * PAGES);
	/* Every sweep page, and at most 40 random pages, hold a stamp. */
	CU_ASSERT(r.written > PAGES && r.written <= PAGES + RANDOM_WRITES);
	CU_ASSERT_EQUAL(r.nr_bad_gfns, 0);
	free(ram);
}

static void test_one_flipped_byte_is_found(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;

	/* Deep inside the page, far from the stamp. */
	page(ram, SWEEP_GPA, 17)[3000] ^= 0x01;
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_FALSE(hv_wl_verify_clean(&r));
	CU_ASSERT_EQUAL(r.bad, 1);
	CU_ASSERT_EQUAL(r.bad_content, 1);
	CU_ASSERT_EQUAL(r.nr_bad_gfns, 1);
	CU_ASSERT_EQUAL(r.bad_gfns[0], (SWEEP_GPA >> HV_PAGE_SHIFT) + 17);
	free(ram);
}

static void test_flipped_byte_in_stamp_only_page_is_found(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;
	uint64_t idx = 0;

	/* A written page of the stamp-only vCPU: its tail must stay zero. */
	while (!((struct hv_wl_stamp *)page(ram, RANDOM_GPA, idx))->seq)
		idx++;
	page(ram, RANDOM_GPA, idx)[HV_PAGE_SIZE - 1] = 0x80;
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_EQUAL(r.bad_content, 1);
	CU_ASSERT_EQUAL(r.bad_gfns[0], (RANDOM_GPA >> HV_PAGE_SHIFT) + idx);
	free(ram);
}

static void test_sweep_page_rolled_back_is_stale(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;
	uint8_t *pg = page(ram, SWEEP_GPA, 5);
	const struct hv_wl_stamp *s = (const void *)pg;
	uint64_t seq = s->seq;

	/* The previous pass's write of this page: a valid stamp and
	 * content, but a dirty page the copy missed. */
	CU_ASSERT_FATAL(seq > PAGES);
	memset(pg, 0, HV_PAGE_SIZE);
	hv_wl_fill_page(pg, 0, seq - PAGES, HV_WL_CONTENT_TEXT);
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_EQUAL(r.bad, 1);
	CU_ASSERT_EQUAL(r.stale, 1);
	CU_ASSERT_EQUAL(r.bad_gfns[0], (SWEEP_GPA >> HV_PAGE_SHIFT) + 5);
	free(ram);
}

static void test_sweep_page_never_arrived_is_stale(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;

	memset(page(ram, SWEEP_GPA, 9), 0, HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_EQUAL(r.stale, 1);
	CU_ASSERT_EQUAL(r.bad_gfns[0], (SWEEP_GPA >> HV_PAGE_SHIFT) + 9);
	free(ram);
}

static void test_last_random_write_lost_is_found(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;
	uint64_t idx;

	/* The page holding seq 40 goes back to zero: every other page is
	 * fine by itself, but the vCPU's last counted write is gone. */
	for (idx = 0; idx < PAGES; idx++)
		if (((struct hv_wl_stamp *)page(ram, RANDOM_GPA, idx))->seq ==
		    RANDOM_WRITES)
			break;
	CU_ASSERT_FATAL(idx < PAGES);
	memset(page(ram, RANDOM_GPA, idx), 0, HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_EQUAL(r.bad, 0);
	CU_ASSERT_EQUAL(r.lost_vcpus, 1);
	CU_ASSERT_FALSE(hv_wl_verify_clean(&r));
	free(ram);
}

static void test_foreign_and_future_stamps_are_bad(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;
	uint64_t s = status(ram, 1)->seq;

	/* vCPU 0's stamp in vCPU 1's region. */
	hv_wl_fill_page(page(ram, RANDOM_GPA, 0), 0, 1, HV_WL_CONTENT_STAMP);
	/* A seq beyond what a mid-batch pause can explain. */
	hv_wl_fill_page(page(ram, RANDOM_GPA, 1), 1, s + HV_WL_BATCH + 1,
			HV_WL_CONTENT_STAMP);
	/* Garbage where nothing was written. */
	memset(page(ram, RANDOM_GPA, 2), 0xab, 16);
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT(r.bad_stamp >= 2);
	CU_ASSERT(r.nr_bad_gfns >= 2);
	CU_ASSERT_EQUAL(r.bad_gfns[0], RANDOM_GPA >> HV_PAGE_SHIFT);
	free(ram);
}

static void test_mid_batch_slack_is_allowed(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;

	/* Paused mid-batch: pages written up to a batch past the published
	 * seq. The sweep and random regions both stay clean. */
	status(ram, 0)->seq -= HV_WL_BATCH - 1;
	status(ram, 1)->seq -= 3;
	CU_ASSERT_EQUAL(verify(ram, &r), 0);
	CU_ASSERT_TRUE(hv_wl_verify_clean(&r));
	free(ram);
}

static void test_invalid_params_are_refused(void)
{
	uint8_t *ram = ram_written();
	struct hv_wl_verify r;

	params(ram)->vcpu[1].region_gpa = RAM_BYTES - HV_PAGE_SIZE;
	CU_ASSERT_EQUAL(verify(ram, &r), -EINVAL);
	params(ram)->vcpu[1].region_gpa = RANDOM_GPA;
	params(ram)->magic = 0;
	CU_ASSERT_EQUAL(verify(ram, &r), -EINVAL);
	CU_ASSERT_EQUAL(hv_wl_verify(ram, 4096, &r), -EINVAL);
	free(ram);
}

/* A prefill that never ends must not hang the test: stop after 0.2 s. */
static void stop_in_time(void *ctx, const struct hv_wl_status *st)
{
	if (st->heartbeats >= 200)
		params(ctx)->vcpu[0].stop = 1;
}

/* RAM of one vCPU whose prefill finished and then ran @more pattern
 * writes (idle: none). */
static uint8_t *ram_prefilled(uint32_t pattern, uint64_t more)
{
	uint8_t *ram = calloc(1, RAM_BYTES);
	struct hv_wl_env env = {
		.page_for_write = env_write,
		.page_for_read = env_read,
		.now_tsc = env_now,
		.heartbeat = stop_in_time,
	};
	struct hv_wl_params *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ram);
	env.ctx = ram;
	p = params(ram);
	p->magic = HV_WL_MAGIC;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = 1;
	p->tsc_khz = 1000000;
	p->vcpu[0] = (struct hv_wl_vcpu_params){
		.pattern = pattern,
		.content = HV_WL_CONTENT_TEXT,
		.region_gpa = SWEEP_GPA,
		.region_pages = PAGES,
		.write_pct = 100,
		.seed = 3,
		.max_writes = PAGES + more,
		.heartbeat_us = 1000,
		.prefill = 1,
	};
	CU_ASSERT_EQUAL_FATAL(hv_wl_run(p, status(ram, 0), 0, &env), 0);
	CU_ASSERT_EQUAL_FATAL(status(ram, 0)->seq, PAGES + more);
	return ram;
}

static void test_prefilled_regions_are_checked_whole(void)
{
	static const uint32_t pats[] = { HV_WL_PATTERN_RANDOM,
					 HV_WL_PATTERN_IDLE };

	for (unsigned k = 0; k < 2; k++) {
		uint8_t *ram = ram_prefilled(pats[k], k ? 0 : 20);
		struct hv_wl_verify r;

		CU_ASSERT_EQUAL(verify(ram, &r), 0);
		CU_ASSERT_TRUE(hv_wl_verify_clean(&r));
		/* Idle included: its prefilled region is checked too. */
		CU_ASSERT_EQUAL(r.pages, PAGES);
		CU_ASSERT_EQUAL(r.written, PAGES);
		/* A random vCPU may leave pages zero, but not once its
		 * prefill wrote them all: the copy lost that page. */
		memset(page(ram, SWEEP_GPA, 11), 0, HV_PAGE_SIZE);
		CU_ASSERT_EQUAL(verify(ram, &r), 0);
		CU_ASSERT_EQUAL(r.bad, 1);
		CU_ASSERT_EQUAL(r.stale, 1);
		CU_ASSERT_EQUAL(r.bad_gfns[0],
				(SWEEP_GPA >> HV_PAGE_SHIFT) + 11);
		free(ram);
	}
}

static CU_TestInfo tests[] = {
	{ "workload_output_is_clean", test_workload_output_is_clean },
	{ "one_flipped_byte_is_found", test_one_flipped_byte_is_found },
	{ "flipped_byte_in_stamp_only_page_is_found",
	  test_flipped_byte_in_stamp_only_page_is_found },
	{ "sweep_page_rolled_back_is_stale",
	  test_sweep_page_rolled_back_is_stale },
	{ "sweep_page_never_arrived_is_stale",
	  test_sweep_page_never_arrived_is_stale },
	{ "last_random_write_lost_is_found",
	  test_last_random_write_lost_is_found },
	{ "foreign_and_future_stamps_are_bad",
	  test_foreign_and_future_stamps_are_bad },
	{ "mid_batch_slack_is_allowed", test_mid_batch_slack_is_allowed },
	{ "invalid_params_are_refused", test_invalid_params_are_refused },
	{ "prefilled_regions_are_checked_whole",
	  test_prefilled_regions_are_checked_whole },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/wl_verify", NULL, NULL, tests);
