// SPDX-License-Identifier: MIT
/*
 * hvcore/soft/shadow_fork over the shadow MMU, every rmap width: after
 * every fork, child write (copy-on-write) and teardown, every shadow
 * translation agrees with the guest's own walk of its tables, the rmaps
 * hold exactly the shadow leaves, and the stamps say which space wrote
 * which page (the parent's pages are never written by a child).
 */
#include "tests/harness/hv_test.h"

#include "hvcore/soft/shadow_fork.h"
#include "hvcore/workload.h"
#include "tests/unit/hvcore/soft/shadow_util.h"

static const unsigned widths[] = HV_SOFT_RMAP_WIDTHS;

#define MEM_PAGES 4096u
#define DATA 700u /* two page tables, the second partly used */
#define KIDS 6u
#define COW_EVERY 5u

struct tally {
	uint64_t wrong;	    /* a shadow leaf disagrees with the guest */
	uint64_t present;   /* shadow leaves found for live spaces */
	uint64_t bad_stamp; /* content not what that space wrote */
};

/* Compare space @id's shadow translations with its guest tables. */
static void check_space(struct shadow_env *e, struct hv_soft_fork *f,
			unsigned id, bool touched, struct tally *t)
{
	gpa_t cr3 = hv_soft_fork_cr3(f, id);

	for (uint64_t i = 0; i < DATA; i++) {
		uint64_t gva = HV_SOFT_FORK_DATA_GVA + i * 4096;
		struct hv_soft_shadow_xlate x;
		const struct hv_wl_stamp *st;
		gfn_t gfn;
		bool rw;

		hv_soft_shadow_translate(e->sh, cr3, gva, &x);
		if (!guest_walk(e, cr3, gva, &gfn, &rw)) {
			t->wrong += x.present;
			continue;
		}
		st = (const void *)(e->mem + (gfn << 12));
		/* The parent stamped page i with seq i + 1; a child's copy
		 * carries the child's id. */
		if (id == 0 || !touched || i % COW_EVERY)
			t->bad_stamp += st->vcpu != 0 || st->seq != i + 1;
		else
			t->bad_stamp += st->vcpu != id;
		if (!x.present)
			continue;
		t->present++;
		if (x.hva != e->mem + (gfn << 12) ||
		    (x.writable &&
		     (!rw || hv_soft_shadow_gfn_tracked(e->sh, gfn))))
			t->wrong++;
	}
}

static void check_all(struct shadow_env *e, struct hv_soft_fork *f,
		      const bool *touched, struct tally *t)
{
	uint64_t leaves;

	for (unsigned id = 0; id <= KIDS; id++)
		if (hv_soft_fork_cr3(f, id))
			check_space(e, f, id, touched[id], t);
	t->wrong += rmap_mismatches(e, &leaves);
}

static void run(unsigned width, enum hv_soft_rmap_layout layout)
{
	struct hv_soft_fork_cfg cfg = { .data_pages = DATA,
					.max_children = KIDS,
					.cow_every = COW_EVERY };
	static const unsigned exit_order[KIDS] = { 2, 5, 1, 6, 3, 4 };
	bool touched[KIDS + 1] = { false };
	struct hv_soft_shadow_stats st;
	struct tally t = { 0 };
	struct hv_soft_fork *f;
	struct shadow_env e;
	uint64_t before;

	CU_ASSERT_FATAL(!shadow_env_init(&e, MEM_PAGES, 0, width,
					 layout));
	CU_ASSERT_FATAL(!hv_soft_fork_create(e.sh, 16, MEM_PAGES, &cfg, &f));
	CU_ASSERT_FATAL(!hv_soft_fork_parent_init(f));
	check_all(&e, f, touched, &t);
	CU_ASSERT_EQUAL(t.present, DATA);
	for (unsigned k = 0; k < KIDS; k++) {
		unsigned id;

		CU_ASSERT_FATAL(!hv_soft_fork_spawn(f, &id));
		CU_ASSERT_EQUAL(id, k + 1);
		check_all(&e, f, touched, &t);
	}
	for (unsigned id = 1; id <= KIDS; id++) {
		before = t.present;
		CU_ASSERT_FATAL(!hv_soft_fork_touch(f, id));
		touched[id] = true;
		check_all(&e, f, touched, &t);
	}
	/* Every child's every page is mapped. Data page 1 (gfn: after the
	 * parent's PML4, PDPT, PD, 2 PTs and data page 0) is shared by
	 * every child; the parent's own leaf went at the first fork, when
	 * its entry was write-protected, and it has not touched it since. */
	CU_ASSERT(t.present - before >= KIDS * DATA);
	CU_ASSERT_EQUAL(hv_soft_shadow_rmap_count(
				e.sh, (hv_soft_fork_cr3(f, 0) >> 12) + 6),
			KIDS);
	for (unsigned k = 0; k < KIDS; k++) {
		CU_ASSERT_FATAL(!hv_soft_fork_exit(f, exit_order[k]));
		touched[exit_order[k]] = false;
		check_all(&e, f, touched, &t);
	}
	CU_ASSERT_EQUAL(t.wrong, 0);
	CU_ASSERT_EQUAL(t.bad_stamp, 0);
	/* Only the parent's shadow pages remain (PML4, PDPT, PD, 2 PTs),
	 * and no gfn is mapped more than once. */
	hv_soft_shadow_get_stats(e.sh, &st);
	CU_ASSERT_EQUAL(st.sps, 5);
	CU_ASSERT(st.leaves <= DATA);
	for (gfn_t g = 0; g < MEM_PAGES; g++)
		if (hv_soft_shadow_rmap_count(e.sh, g) > 1)
			t.wrong++;
	CU_ASSERT_EQUAL(t.wrong, 0);
	hv_soft_fork_destroy(f);
	shadow_env_fini(&e);
}

static void test_fork_translations_match_guest_tables_every_width(void)
{
	for (unsigned w = 0; w < HV_SOFT_RMAP_NR_WIDTHS; w++) {
		run(widths[w], HV_SOFT_RMAP_COUNT_LAST);
		run(widths[w], HV_SOFT_RMAP_COUNT_FIRST);
		run(widths[w], HV_SOFT_RMAP_NO_COUNT);
	}
}

static CU_TestInfo tests[] = {
	{ "fork_translations_match_guest_tables_every_width",
	  test_fork_translations_match_guest_tables_every_width },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/shadow_fork", NULL, NULL, tests);
