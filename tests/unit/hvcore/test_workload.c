// SPDX-License-Identifier: MIT
/*
 * The workload (hvcore/workload.c) run on the host against a plain buffer:
 * the stamps it leaves are what every dirty-log and migration oracle
 * trusts, so their rules are pinned down here. Rates, throttling and
 * sleeping are in test_workload_pacing.c.
 */
#include "tests/unit/hvcore/wl_host_env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

static void test_sweep_stamps_every_page_in_order(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct host_env e;

	setup(&p, &e, 300, HV_WL_PATTERN_SWEEP, HV_WL_CONTENT_STAMP);
	p.vcpu[0].max_writes = 750; /* two passes and a half */
	run(&p, &st, &e);
	CU_ASSERT_EQUAL(st.seq, 750);
	CU_ASSERT_EQUAL(st.passes, 2);
	CU_ASSERT_EQUAL(e.bad_accesses, 0);
	for (uint64_t i = 0; i < 300; i++) {
		const struct hv_wl_stamp *s = stamp(&e, i);
		uint64_t want = i < 150 ? 600 + i + 1 : 300 + i + 1;

		CU_ASSERT_EQUAL(s->magic, HV_WL_STAMP_MAGIC);
		CU_ASSERT_EQUAL(s->vcpu, 0);
		CU_ASSERT_EQUAL(s->seq, want);
	}
	free(e.mem);
}

static void test_stamp_only_pages_stay_zero_past_the_stamp(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct host_env e;

	setup(&p, &e, 64, HV_WL_PATTERN_RANDOM, HV_WL_CONTENT_STAMP);
	p.vcpu[0].max_writes = 1000;
	run(&p, &st, &e);
	for (uint64_t i = 0; i < 64; i++)
		for (unsigned b = sizeof(struct hv_wl_stamp); b < HV_PAGE_SIZE;
		     b++)
			if (e.mem[i * HV_PAGE_SIZE + b]) {
				CU_FAIL("non-zero byte past the stamp");
				free(e.mem);
				return;
			}
	free(e.mem);
}

static void test_random_and_hotset_stay_inside_the_region(void)
{
	for (uint32_t pat = HV_WL_PATTERN_RANDOM; pat <= HV_WL_PATTERN_HOTSET;
	     pat++) {
		struct hv_wl_params p;
		struct hv_wl_status st = {0};
		struct host_env e;

		setup(&p, &e, 1000, pat, HV_WL_CONTENT_RANDOM);
		p.vcpu[0].hot_pct = 10;
		p.vcpu[0].hot_share_pct = 90;
		p.vcpu[0].max_writes = 20000;
		run(&p, &st, &e);
		CU_ASSERT_EQUAL(e.bad_accesses, 0);
		CU_ASSERT_EQUAL(e.writes_seen, 20000);
		CU_ASSERT_EQUAL(st.seq, 20000);
		free(e.mem);
	}
}

static void test_hotset_sends_its_share_to_the_hot_pages(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct host_env e;
	uint64_t hot = 0, total = 0;

	/* Distinct pages written tell where the writes went. */
	setup(&p, &e, 10000, HV_WL_PATTERN_HOTSET, HV_WL_CONTENT_STAMP);
	p.vcpu[0].hot_pct = 5;
	p.vcpu[0].hot_share_pct = 80;
	p.vcpu[0].max_writes = 2000;
	run(&p, &st, &e);
	/* 2000 writes: ~1600 into 500 hot pages (nearly all touched), ~400
	 * into 9500 cold pages (about 390 distinct). */
	for (uint64_t i = 0; i < 10000; i++) {
		if (!stamp(&e, i)->seq)
			continue;
		total++;
		if (i < 500)
			hot++;
	}
	CU_ASSERT(hot >= 450 && hot <= 500);
	CU_ASSERT(total - hot >= 300 && total - hot <= 450);
	free(e.mem);
}

static void test_text_content_compresses_about_three_to_one(void)
{
	uint8_t *page = calloc(64, HV_PAGE_SIZE), *out;
	size_t cap = ZSTD_compressBound(64 * HV_PAGE_SIZE), n;
	double ratio;

	out = malloc(cap);
	for (unsigned i = 0; i < 64; i++)
		hv_wl_fill_page(page + i * HV_PAGE_SIZE, 1, 1000 + i,
				HV_WL_CONTENT_TEXT);
	/* Per page, as the stream compresses small batches. */
	n = 0;
	for (unsigned i = 0; i < 64; i++)
		n += ZSTD_compress(out, cap, page + i * HV_PAGE_SIZE,
				   HV_PAGE_SIZE, 1);
	ratio = (64.0 * HV_PAGE_SIZE) / n;
	printf("\n    text content: zstd-1 ratio %.2f per page\n", ratio);
	CU_ASSERT(ratio > 2.3 && ratio < 4.5);

	for (unsigned i = 0; i < 64; i++)
		hv_wl_fill_page(page + i * HV_PAGE_SIZE, 1, 1000 + i,
				HV_WL_CONTENT_RANDOM);
	n = ZSTD_compress(out, cap, page, 64 * HV_PAGE_SIZE, 1);
	CU_ASSERT(n > 63 * HV_PAGE_SIZE); /* incompressible */
	free(out);
	free(page);
}

static void test_invalid_params_touch_no_page(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct host_env e;
	struct hv_wl_env env = {&e, env_write, env_read, env_now, NULL, NULL};

	setup(&p, &e, 16, HV_WL_PATTERN_SWEEP, HV_WL_CONTENT_STAMP);
	p.magic = 0;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.magic = HV_WL_MAGIC;
	p.vcpu[0].pattern = HV_WL_PATTERN_COUNT;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.vcpu[0].pattern = HV_WL_PATTERN_SWEEP;
	p.vcpu[0].content = 0;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.vcpu[0].content = HV_WL_CONTENT_STAMP;
	p.vcpu[0].region_gpa = REGION_GPA + 1;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.vcpu[0].region_gpa = REGION_GPA;
	p.vcpu[0].region_pages = 0;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.vcpu[0].region_pages = 16;
	p.vcpu[0].write_pct = 101;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.vcpu[0].write_pct = 100;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 1, &env), -22); /* vcpu >= nr */
	p.vcpu[0].pattern = HV_WL_PATTERN_HOTSET;
	p.vcpu[0].hot_pct = 0;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	CU_ASSERT_EQUAL(e.writes_seen, 0);
	CU_ASSERT_EQUAL(st.seq, 0);
	free(e.mem);
}

static void test_run_resumes_seq_and_sweep_from_status(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct host_env e;

	setup(&p, &e, 100, HV_WL_PATTERN_SWEEP, HV_WL_CONTENT_STAMP);
	p.vcpu[0].max_writes = 130;
	run(&p, &st, &e);
	/* A restored vCPU calls hv_wl_run() again with the same status. */
	p.vcpu[0].max_writes = 260;
	run(&p, &st, &e);
	CU_ASSERT_EQUAL(st.seq, 260);
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t want = i < 60 ? 200 + i + 1 : 100 + i + 1;

		CU_ASSERT_EQUAL(stamp(&e, i)->seq, want);
	}
	free(e.mem);
}

/*
 * Prefill (workload.h): the region is written once, page by page in
 * order, before the pattern starts. The write order is recorded here.
 */
struct order_env {
	struct host_env e;
	uint64_t order[4096]; /* page index of each write */
	uint64_t n;
};

static uint8_t *order_write(void *ctx, uint64_t gpa)
{
	struct order_env *o = ctx;

	if (o->n < HV_ARRAY_SIZE(o->order))
		o->order[o->n] = (gpa - REGION_GPA) / HV_PAGE_SIZE;
	o->n++;
	return env_write(&o->e, gpa);
}

static const uint8_t *order_read(void *ctx, uint64_t gpa)
{
	return env_read(&((struct order_env *)ctx)->e, gpa);
}

static void order_run(struct hv_wl_params *p, struct hv_wl_status *st,
		      struct order_env *o)
{
	struct hv_wl_env env = {
		.ctx = o,
		.page_for_write = order_write,
		.page_for_read = order_read,
		.now_tsc = env_now,
	};

	CU_ASSERT_EQUAL(hv_wl_run(p, st, 0, &env), 0);
}

/* Page @i holds a complete write of (vcpu 0, its stamp's seq, content). */

static void test_prefill_writes_every_page_once_in_order_then_the_pattern(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct order_env *o = calloc(1, sizeof(*o));
	uint64_t in_order = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	setup(&p, &o->e, 300, HV_WL_PATTERN_RANDOM, HV_WL_CONTENT_TEXT);
	p.vcpu[0].prefill = 1;
	/* Reads do not apply to the prefill: every page gets written. */
	p.vcpu[0].write_pct = 50;
	p.vcpu[0].max_writes = 300;
	order_run(&p, &st, o);
	CU_ASSERT_EQUAL(st.seq, 300);
	CU_ASSERT_EQUAL(o->n, 300);
	CU_ASSERT_EQUAL(st.reads, 0);
	CU_ASSERT_EQUAL(st.passes, 1);
	CU_ASSERT_TRUE(hv_wl_prefilled(&p.vcpu[0], &st));
	for (uint64_t i = 0; i < 300; i++) {
		CU_ASSERT_EQUAL(o->order[i], i);
		CU_ASSERT_EQUAL(stamp(&o->e, i)->seq, i + 1);
		CU_ASSERT_TRUE(
			page_is_whole_write(&o->e, i, HV_WL_CONTENT_TEXT));
	}
	/* Then the pattern: random pages, half of the accesses reads. */
	p.vcpu[0].max_writes = 1300;
	order_run(&p, &st, o);
	CU_ASSERT_EQUAL(st.seq, 1300);
	CU_ASSERT_EQUAL(o->n, 1300);
	CU_ASSERT(st.reads > 500);
	CU_ASSERT_EQUAL(st.passes, 1);
	for (uint64_t k = 300; k < 1300; k++)
		in_order += o->order[k] == (k - 300) % 300;
	CU_ASSERT(in_order < 50);
	for (uint64_t i = 0; i < 300; i++)
		CU_ASSERT_TRUE(
			page_is_whole_write(&o->e, i, HV_WL_CONTENT_TEXT));
	CU_ASSERT_EQUAL(o->e.bad_accesses, 0);
	free(o->e.mem);
	free(o);
}

/* The soft accelerator returns from hv_wl_run() at every heartbeat and
 * calls it again: the prefill goes on where it stopped, no page twice. */
static void test_prefill_resumes_where_a_return_left_it(void)
{
	static const uint64_t stops[] = {70, 130, 299, 300};
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct order_env *o = calloc(1, sizeof(*o));

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	setup(&p, &o->e, 300, HV_WL_PATTERN_HOTSET, HV_WL_CONTENT_STAMP);
	p.vcpu[0].hot_pct = 10;
	p.vcpu[0].hot_share_pct = 90;
	p.vcpu[0].prefill = 1;
	for (unsigned k = 0; k < HV_ARRAY_SIZE(stops); k++) {
		p.vcpu[0].max_writes = stops[k];
		order_run(&p, &st, o);
		CU_ASSERT_EQUAL(st.seq, stops[k]);
		CU_ASSERT_EQUAL(hv_wl_prefilled(&p.vcpu[0], &st),
				stops[k] >= 300);
	}
	CU_ASSERT_EQUAL(o->n, 300);
	for (uint64_t i = 0; i < 300; i++) {
		CU_ASSERT_EQUAL(o->order[i], i);
		CU_ASSERT_EQUAL(stamp(&o->e, i)->seq, i + 1);
	}
	free(o->e.mem);
	free(o);
}

struct gpa_log {
	uint64_t gpa[16];
	unsigned n;
	_Alignas(4096) uint8_t page[HV_PAGE_SIZE];
};

static uint8_t *log_write(void *ctx, uint64_t gpa)
{
	struct gpa_log *l = ctx;

	if (l->n < 16)
		l->gpa[l->n] = gpa;
	l->n++;
	return l->page;
}

/*
 * A region is consecutive RAM offsets: its pages run up to the MMIO hole
 * and go on at 4 GiB, never inside [hole_start, hole_end) (hvcore/
 * ram_layout.h); one that would end past RAM is refused, touching nothing.
 */
static void test_region_spans_the_hole_in_ram_offsets(void)
{
	struct hv_wl_params p;
	struct hv_wl_status st = {0};
	struct gpa_log l = {.n = 0};
	struct hv_wl_env env = {.ctx = &l,
				.page_for_write = log_write,
				.page_for_read = NULL,
				.now_tsc = env_now};
	const uint64_t hs = HV_RAM_HOLE_START, g4 = HV_RAM_HOLE_END;

	memset(&p, 0, sizeof(p));
	p.magic = HV_WL_MAGIC;
	p.version = HV_WL_VERSION;
	p.nr_vcpus = 1;
	p.tsc_khz = 1000000;
	p.ram = hv_ram_layout_std(8ULL << 30);
	p.vcpu[0].pattern = HV_WL_PATTERN_SWEEP;
	p.vcpu[0].content = HV_WL_CONTENT_STAMP;
	p.vcpu[0].region_gpa = hs - 2 * HV_PAGE_SIZE;
	p.vcpu[0].region_pages = 4;
	p.vcpu[0].write_pct = 100;
	p.vcpu[0].max_writes = 4;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 4);
	CU_ASSERT_EQUAL(l.gpa[0], hs - 2 * HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(l.gpa[1], hs - HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(l.gpa[2], g4);
	CU_ASSERT_EQUAL(l.gpa[3], g4 + HV_PAGE_SIZE);

	/* A start inside the hole, and an end past RAM, are refused. */
	l.n = 0;
	memset(&st, 0, sizeof(st));
	p.vcpu[0].region_gpa = hs;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	p.vcpu[0].region_gpa = g4 + (5ULL << 30) - 2 * HV_PAGE_SIZE;
	CU_ASSERT_EQUAL(hv_wl_run(&p, &st, 0, &env), -22);
	CU_ASSERT_EQUAL(l.n, 0);
	/* The last RAM page is fine. */
	p.vcpu[0].region_pages = 2;
	CU_ASSERT_EQUAL(hv_wl_check(&p, 0), 0);
}

static CU_TestInfo tests[] = {
	{"sweep_stamps_every_page_in_order",
	 test_sweep_stamps_every_page_in_order},
	{"stamp_only_pages_stay_zero_past_the_stamp",
	 test_stamp_only_pages_stay_zero_past_the_stamp},
	{"random_and_hotset_stay_inside_the_region",
	 test_random_and_hotset_stay_inside_the_region},
	{"hotset_sends_its_share_to_the_hot_pages",
	 test_hotset_sends_its_share_to_the_hot_pages},
	{"text_content_compresses_about_three_to_one",
	 test_text_content_compresses_about_three_to_one},
	{"invalid_params_touch_no_page", test_invalid_params_touch_no_page},
	{"run_resumes_seq_and_sweep_from_status",
	 test_run_resumes_seq_and_sweep_from_status},
	{"prefill_writes_every_page_once_in_order_then_the_pattern",
	 test_prefill_writes_every_page_once_in_order_then_the_pattern},
	{"prefill_resumes_where_a_return_left_it",
	 test_prefill_resumes_where_a_return_left_it},
	{"region_spans_the_hole_in_ram_offsets",
	 test_region_spans_the_hole_in_ram_offsets},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/workload", NULL, NULL, tests);
