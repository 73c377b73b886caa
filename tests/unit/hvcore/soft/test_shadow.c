// SPDX-License-Identifier: MIT
/*
 * hvcore/soft/shadow: shadow entries follow guest page-table changes,
 * guest tables are never writable through a shadow leaf, every mapping of
 * a gfn is found through the rmap (write protection, memslot zap), and
 * dirty logging in shadow mode misses no page (stamp oracle, a writer
 * thread against a harvester).
 */
#include "tests/harness/hv_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/x86/ept.h"
#include "hvcore/soft/soft_vm.h"
#include "hvcore/workload.h"
#include "tests/unit/hvcore/soft/shadow_util.h"

#define GVA 0x40000000ULL
#define T (HV_GPTE_P | HV_GPTE_RW | HV_GPTE_US)

/* PML4 1 -> PDPT 2 -> PD 3 -> PT 4 at GVA under cr3 = gpa of gfn @pml4. */
static void build(struct shadow_env *e, gfn_t pml4, gfn_t pdpt, gfn_t pd,
		  gfn_t pt)
{
	env_table(e, pml4)[(GVA >> 39) & 511] = (pdpt << 12) | T;
	env_table(e, pdpt)[(GVA >> 30) & 511] = (pd << 12) | T;
	env_table(e, pd)[(GVA >> 21) & 511] = (pt << 12) | T;
}

static uint64_t rd(struct shadow_env *e, gpa_t cr3, uint64_t gva)
{
	uint64_t v = 0;

	CU_ASSERT_EQUAL(hv_soft_shadow_access(e->sh, cr3, gva, false, &v, 8),
			HV_SHADOW_OK);
	return v;
}

static void test_shadow_translation_follows_guest_table_rewrite(void)
{
	struct hv_soft_shadow_xlate x;
	struct shadow_env e;
	uint64_t pte, leaves;

	CU_ASSERT_FATAL(
		!shadow_env_init(&e, 64, 0, 15, HV_SOFT_RMAP_COUNT_LAST));
	build(&e, 1, 2, 3, 4);
	env_table(&e, 4)[0] = (10 << 12) | T;
	*(uint64_t *)(e.mem + (10 << 12)) = 0xaaaa;
	*(uint64_t *)(e.mem + (11 << 12)) = 0xbbbb;
	CU_ASSERT_EQUAL(rd(&e, 0x1000, GVA), 0xaaaa);
	hv_soft_shadow_translate(e.sh, 0x1000, GVA, &x);
	CU_ASSERT(x.present);
	CU_ASSERT_PTR_EQUAL(x.hva, e.mem + (10 << 12));
	CU_ASSERT_EQUAL(hv_soft_shadow_rmap_count(e.sh, 10), 1);
	/* The guest kernel points the entry elsewhere. */
	pte = (11 << 12) | T;
	CU_ASSERT(!hv_soft_shadow_gpa_write(e.sh, 4 << 12, &pte, 8));
	hv_soft_shadow_translate(e.sh, 0x1000, GVA, &x);
	CU_ASSERT(!x.present);
	CU_ASSERT_EQUAL(hv_soft_shadow_rmap_count(e.sh, 10), 0);
	CU_ASSERT_EQUAL(rd(&e, 0x1000, GVA), 0xbbbb);
	CU_ASSERT_EQUAL(rmap_mismatches(&e, &leaves), 0);
	CU_ASSERT_EQUAL(leaves, 1);
	/* Not present: the guest's own fault. */
	pte = 0;
	CU_ASSERT(!hv_soft_shadow_gpa_write(e.sh, 4 << 12, &pte, 8));
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 0x1000, GVA, false, &pte,
					      8),
			HV_SHADOW_PF_NOT_PRESENT);
	shadow_env_fini(&e);
}

static void test_shadow_guest_tables_never_writable_through_a_leaf(void)
{
	struct hv_soft_shadow_xlate x;
	struct shadow_env e;
	uint64_t pte, v, leaves;

	CU_ASSERT_FATAL(
		!shadow_env_init(&e, 64, 0, 3, HV_SOFT_RMAP_NO_COUNT));
	build(&e, 1, 2, 3, 4);
	env_table(&e, 4)[0] = (10 << 12) | T | HV_GPTE_D;
	/* GVA + 4 KiB maps the page table itself, writable for the guest. */
	env_table(&e, 4)[1] = (4 << 12) | T | HV_GPTE_D;
	CU_ASSERT_EQUAL(rd(&e, 0x1000, GVA + 4096), env_table(&e, 4)[0]);
	hv_soft_shadow_translate(e.sh, 0x1000, GVA + 4096, &x);
	CU_ASSERT(x.present);
	CU_ASSERT(!x.writable);
	CU_ASSERT(hv_soft_shadow_gfn_tracked(e.sh, 4));
	CU_ASSERT_EQUAL(rd(&e, 0x1000, GVA), 0);
	/* A user store into entry 0 through that mapping is emulated: the
	 * shadow entry of GVA goes, the next access sees page 11. */
	*(uint64_t *)(e.mem + (11 << 12)) = 0x1111;
	pte = (11 << 12) | T;
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 0x1000, GVA + 4096, true,
					      &pte, 8),
			HV_SHADOW_OK);
	CU_ASSERT_EQUAL(env_table(&e, 4)[0], pte);
	hv_soft_shadow_translate(e.sh, 0x1000, GVA, &x);
	CU_ASSERT(!x.present);
	CU_ASSERT_EQUAL(rd(&e, 0x1000, GVA), 0x1111);
	/* A read-only guest entry gives the guest its protection fault. */
	pte = (12 << 12) | HV_GPTE_P | HV_GPTE_US;
	CU_ASSERT(!hv_soft_shadow_gpa_write(e.sh, (4 << 12) + 16, &pte, 8));
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 0x1000, GVA + 8192, true,
					      &v, 8),
			HV_SHADOW_PF_PROT);
	CU_ASSERT_EQUAL(rmap_mismatches(&e, &leaves), 0);
	/* A page mapped writable (GVA + 3 pages -> gfn 30) that becomes a
	 * page table later loses write permission at once, through its
	 * rmap: the guest's next store to it must be seen. */
	pte = (30 << 12) | T | HV_GPTE_D;
	CU_ASSERT(!hv_soft_shadow_gpa_write(e.sh, (4 << 12) + 24, &pte, 8));
	v = 0;
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 0x1000, GVA + 3 * 4096,
					      true, &v, 8),
			HV_SHADOW_OK);
	hv_soft_shadow_translate(e.sh, 0x1000, GVA + 3 * 4096, &x);
	CU_ASSERT(x.present && x.writable);
	/* PD entry 1 -> gfn 30 as a page table; walk through it. */
	pte = (30 << 12) | T;
	CU_ASSERT(!hv_soft_shadow_gpa_write(
		e.sh, (3 << 12) + 8 * (((GVA >> 21) & 511) + 1), &pte, 8));
	env_table(&e, 30)[0] = (13 << 12) | T;
	CU_ASSERT_EQUAL(rd(&e, 0x1000, GVA + (2 << 20)), 0);
	CU_ASSERT(hv_soft_shadow_gfn_tracked(e.sh, 30));
	hv_soft_shadow_translate(e.sh, 0x1000, GVA + 3 * 4096, &x);
	CU_ASSERT(x.present && !x.writable);
	/* The store through the data mapping rewrites entry 0 of the new
	 * table: GVA + 2 MiB must now miss. */
	v = 0;
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 0x1000, GVA + 3 * 4096,
					      true, &v, 8),
			HV_SHADOW_OK);
	hv_soft_shadow_translate(e.sh, 0x1000, GVA + (2 << 20), &x);
	CU_ASSERT(!x.present);
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 0x1000, GVA + (2 << 20),
					      false, &v, 8),
			HV_SHADOW_PF_NOT_PRESENT);
	CU_ASSERT_EQUAL(rmap_mismatches(&e, &leaves), 0);
	/* Once nothing shadows it, the table page is plain data again. */
	hv_soft_shadow_root_drop(e.sh, 0x1000);
	CU_ASSERT(!hv_soft_shadow_gfn_tracked(e.sh, 4));
	CU_ASSERT(!hv_soft_shadow_gfn_tracked(e.sh, 1));
	CU_ASSERT_EQUAL(rmap_mismatches(&e, &leaves), 0);
	CU_ASSERT_EQUAL(leaves, 0);
	shadow_env_fini(&e);
}

static void test_shadow_write_protect_finds_every_mapping(void)
{
	struct hv_soft_shadow_xlate x;
	struct shadow_env e;
	uint64_t v = 7, leaves;

	CU_ASSERT_FATAL(
		!shadow_env_init(&e, 64, 0, 1, HV_SOFT_RMAP_COUNT_FIRST));
	/* Two address spaces, three mappings of gfn 20. */
	build(&e, 1, 2, 3, 4);
	build(&e, 5, 6, 7, 8);
	env_table(&e, 4)[0] = (20 << 12) | T;
	env_table(&e, 4)[1] = (20 << 12) | T;
	env_table(&e, 8)[9] = (20 << 12) | T;
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 1 << 12, GVA, true, &v, 8),
			0);
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 1 << 12, GVA + 4096,
					      true, &v, 8),
			0);
	CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 5 << 12, GVA + 9 * 4096,
					      true, &v, 8),
			0);
	CU_ASSERT_EQUAL(hv_soft_shadow_rmap_count(e.sh, 20), 3);
	CU_ASSERT_EQUAL(hv_soft_shadow_write_protect(e.sh, 20, 1, NULL), 3);
	hv_soft_shadow_translate(e.sh, 1 << 12, GVA, &x);
	CU_ASSERT(x.present && !x.writable);
	hv_soft_shadow_translate(e.sh, 1 << 12, GVA + 4096, &x);
	CU_ASSERT(x.present && !x.writable);
	hv_soft_shadow_translate(e.sh, 5 << 12, GVA + 9 * 4096, &x);
	CU_ASSERT(x.present && !x.writable);
	/* Memslot removal, through the soft VM's zap: the rmap finds them
	 * all again. */
	{
		struct hv_soft_vm_cfg vcfg = { .fmt = &x86_ept_fmt };
		struct hv_soft_vm *vm;

		CU_ASSERT_FATAL(!hv_soft_vm_create(&vcfg, e.slots, &vm));
		hv_soft_vm_set_shadow(vm, e.sh);
		hv_soft_vm_zap(vm, 16, 16);
		hv_soft_vm_destroy(vm);
	}
	hv_soft_shadow_translate(e.sh, 5 << 12, GVA + 9 * 4096, &x);
	CU_ASSERT(!x.present);
	CU_ASSERT_EQUAL(hv_soft_shadow_rmap_count(e.sh, 20), 0);
	CU_ASSERT_EQUAL(rmap_mismatches(&e, &leaves), 0);
	CU_ASSERT_EQUAL(leaves, 0);
	shadow_env_fini(&e);
}

/* --- dirty logging: the stamp oracle ----------------------------------- */

#define LOG_PAGES 1024u
#define DATA_FIRST 64u
#define DATA_PAGES 512u

struct writer {
	struct shadow_env *e;
	atomic_bool stop;
	_Atomic uint64_t seq;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned r = 1;

	while (!atomic_load(&w->stop)) {
		struct hv_wl_stamp st = { .magic = HV_WL_STAMP_MAGIC,
					  .vcpu = 1 };
		unsigned i;

		r = r * 1103515245u + 12345u;
		i = (r >> 8) % DATA_PAGES;
		st.seq = atomic_fetch_add(&w->seq, 1) + 1;
		if (hv_soft_shadow_access(w->e->sh, 1 << 12,
					  GVA + (uint64_t)i * 4096, true, &st,
					  sizeof(st)))
			break;
		if (st.seq % 256 == 0)
			sched_yield();
	}
	return NULL;
}

/* Stamps of the data pages, read as the VMM reads guest RAM (racy with
 * the guest by nature). */
__attribute__((no_sanitize("thread"))) static void
snapshot(struct shadow_env *e, uint64_t *seq)
{
	for (unsigned i = 0; i < DATA_PAGES; i++) {
		const uint8_t *page = e->mem + (uint64_t)(DATA_FIRST + i) * 4096;

		seq[i] = ((const volatile struct hv_wl_stamp *)page)->seq;
	}
}

static bool bit(const uint64_t *bm, uint64_t i)
{
	return bm[i / 64] >> (i % 64) & 1;
}

static void test_shadow_dirty_log_misses_no_page(void)
{
	struct hv_soft_clear_opts o = { .chunk_pages = 256 };
	uint64_t prev[DATA_PAGES], cur[DATA_PAGES], leaves;
	uint64_t h_prev[LOG_PAGES / 64] = { 0 }, h_cur[LOG_PAGES / 64];
	uint64_t changed = 0, lost = 0, harvested = 0;
	struct hv_soft_vm_cfg vcfg = { .fmt = &x86_ept_fmt };
	struct hv_soft_shadow_stats st;
	const struct hv_memslots_snap *snap;
	struct hv_dirty_bitmap *bm;
	struct writer w = { 0 };
	struct hv_soft_vm *vm;
	struct shadow_env e;
	pthread_t t;

	CU_ASSERT_FATAL(!shadow_env_init(&e, LOG_PAGES, 0, 15,
					 HV_SOFT_RMAP_COUNT_LAST));
	w.e = &e;
	build(&e, 1, 2, 3, 4);
	for (unsigned i = 0; i < DATA_PAGES; i++)
		env_table(&e, 4)[i] = ((uint64_t)(DATA_FIRST + i) << 12) | T;
	CU_ASSERT_FATAL(!hv_soft_vm_create(&vcfg, e.slots, &vm));
	hv_soft_vm_set_shadow(vm, e.sh);
	/* Map every page writable before logging starts, so the start's
	 * write protection (through the rmap) is what makes writes log. */
	for (unsigned i = 0; i < DATA_PAGES; i++) {
		struct hv_wl_stamp s0 = { .magic = HV_WL_STAMP_MAGIC };

		CU_ASSERT_EQUAL(hv_soft_shadow_access(e.sh, 1 << 12,
						      GVA + (uint64_t)i * 4096,
						      true, &s0, sizeof(s0)),
				0);
	}
	CU_ASSERT_FATAL(!hv_memslots_set_flags(e.slots, 1,
					       HV_MEMSLOT_F_DIRTY_LOG));
	CU_ASSERT_FATAL(!hv_soft_vm_log_start(vm, HV_SOFT_LOG_WP, false));
	snap = hv_memslots_read_lock(e.slots);
	bm = hv_memslots_by_id(snap, 1)->dirty;
	hv_memslots_read_unlock(e.slots);

	snapshot(&e, prev);
	CU_ASSERT_FATAL(!pthread_create(&t, NULL, writer_main, &w));
	for (unsigned round = 0; round < 40; round++) {
		struct timespec ts = { 0, 1000000 };
		uint64_t target = atomic_load(&w.seq) + 64;

		/* At least 64 writes per round, however loaded the host. */
		for (unsigned ms = 0; ms < 5000 && atomic_load(&w.seq) < target;
		     ms++)
			nanosleep(&ts, NULL);
		if (round == 39) {
			atomic_store(&w.stop, true);
			pthread_join(t, NULL);
		}
		/* S_k, then H_k: a page changed between S_{k-1} and S_k was
		 * written before H_k began, so H_{k-1} or H_k has it. */
		snapshot(&e, cur);
		CU_ASSERT_FATAL(hv_dirty_bitmap_fetch_clear(bm, 0, LOG_PAGES,
							    h_cur) >= 0);
		CU_ASSERT_FATAL(!hv_soft_vm_clear(vm, 1, 0, LOG_PAGES, h_cur,
						  &o));
		for (unsigned i = 0; i < DATA_PAGES; i++) {
			if (prev[i] == cur[i])
				continue;
			changed++;
			if (!bit(h_cur, DATA_FIRST + i) &&
			    !bit(h_prev, DATA_FIRST + i))
				lost++;
		}
		for (unsigned i = 0; i < DATA_PAGES; i++)
			harvested += bit(h_cur, DATA_FIRST + i);
		memcpy(prev, cur, sizeof(prev));
		memcpy(h_prev, h_cur, sizeof(h_prev));
	}
	/* After the writer stopped, one more round sees the rest. */
	snapshot(&e, cur);
	CU_ASSERT_FATAL(hv_dirty_bitmap_fetch_clear(bm, 0, LOG_PAGES, h_cur) >=
			0);
	for (unsigned i = 0; i < DATA_PAGES; i++)
		if (prev[i] != cur[i] && !bit(h_cur, DATA_FIRST + i) &&
		    !bit(h_prev, DATA_FIRST + i))
			lost++;
	CU_ASSERT_EQUAL(lost, 0);
	CU_ASSERT(changed > 100);
	CU_ASSERT(harvested > 100);
	hv_soft_shadow_get_stats(e.sh, &st);
	CU_ASSERT(st.wp_sptes >= DATA_PAGES);
	CU_ASSERT_EQUAL(rmap_mismatches(&e, &leaves), 0);
	if (lost)
		fprintf(stderr, "shadow dirty log: %lu of %lu changed pages "
				"in no harvest\n",
			(unsigned long)lost, (unsigned long)changed);
	hv_soft_vm_log_stop(vm);
	hv_soft_vm_destroy(vm);
	shadow_env_fini(&e);
}

static CU_TestInfo tests[] = {
	{ "shadow_translation_follows_guest_table_rewrite",
	  test_shadow_translation_follows_guest_table_rewrite },
	{ "shadow_guest_tables_never_writable_through_a_leaf",
	  test_shadow_guest_tables_never_writable_through_a_leaf },
	{ "shadow_write_protect_finds_every_mapping",
	  test_shadow_write_protect_finds_every_mapping },
	{ "shadow_dirty_log_misses_no_page",
	  test_shadow_dirty_log_misses_no_page },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/shadow", NULL, NULL, tests);
