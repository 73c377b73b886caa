// SPDX-License-Identifier: MIT
/*
 * mig_layout_to_cfg() (migrated/mig/layout.c) on VMs above 3 GiB: the
 * destination accepts exactly the slot shapes hv_vm_create() builds (RAM
 * below the MMIO hole, the rest from 4 GiB, cut by one slot size) and
 * rebuilds the same configuration; a slot in or across the hole, or RAM
 * right after 3 GiB, is refused.
 */
#include "tests/harness/hv_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrated/mig/layout.h"

#define GIB (1ULL << 30)
#define PG HV_PAGE_SIZE
#define MAXS 16

struct offer {
	Mig__VmLayout l;
	Mig__Memslot s[MAXS];
	Mig__Memslot *pp[MAXS];
};

/* The layout a source with @mem in slots of @slot_bytes offers. */
static void offer_std(struct offer *o, uint64_t mem, uint64_t slot_bytes)
{
	unsigned n = hv_vm_slot_geometry(mem, slot_bytes, 0, NULL, NULL);

	CU_ASSERT_FATAL(n <= MAXS);
	mig__vm_layout__init(&o->l);
	for (unsigned i = 0; i < n; i++) {
		gfn_t g;
		uint64_t np;

		mig__memslot__init(&o->s[i]);
		hv_vm_slot_geometry(mem, slot_bytes, i, &g, &np);
		o->s[i].id = i;
		o->s[i].base_gfn = g;
		o->s[i].npages = np;
		o->pp[i] = &o->s[i];
	}
	o->l.n_slots = n;
	o->l.slots = o->pp;
	o->l.nr_vcpus = 2;
	o->l.accel = "soft";
	o->l.page_size = PG;
	o->l.name = "";
}

static int to_cfg(struct offer *o, struct hv_vm_cfg *cfg)
{
	char why[128] = "";
	int ret = mig_layout_to_cfg(&o->l, NULL, cfg, why, sizeof(why));

	if (ret)
		printf("\n    refused: %s", why);
	return ret;
}

static void test_two_range_layouts_rebuild_the_same_cfg(void)
{
	static const uint64_t mems[] = { 2 * GIB, 3 * GIB, 8 * GIB,
					 256 * GIB };
	static const uint64_t sbs[] = { 0, GIB, 2 * GIB, 64 * GIB };
	struct offer o;
	struct hv_vm_cfg cfg;

	for (size_t m = 0; m < HV_ARRAY_SIZE(mems); m++) {
		for (size_t k = 0; k < HV_ARRAY_SIZE(sbs); k++) {
			if (hv_vm_slot_geometry(mems[m], sbs[k], 0, NULL,
						NULL) > MAXS)
				continue;
			offer_std(&o, mems[m], sbs[k]);
			CU_ASSERT_EQUAL_FATAL(to_cfg(&o, &cfg), 0);
			CU_ASSERT_EQUAL(cfg.mem_bytes, mems[m]);
			/* The same slots, whichever size was named. */
			CU_ASSERT_EQUAL(hv_vm_slot_geometry(cfg.mem_bytes,
							    cfg.slot_bytes, 0,
							    NULL, NULL),
					o.l.n_slots);
			for (unsigned i = 0; i < o.l.n_slots; i++) {
				gfn_t g;
				uint64_t np;

				hv_vm_slot_geometry(cfg.mem_bytes,
						    cfg.slot_bytes, i, &g, &np);
				CU_ASSERT_EQUAL(g, o.s[i].base_gfn);
				CU_ASSERT_EQUAL(np, o.s[i].npages);
			}
		}
	}
}

static void test_slots_in_or_across_the_hole_are_refused(void)
{
	struct offer o;
	struct hv_vm_cfg cfg;

	/* RAM contiguous from 0 past 3 GiB (the old flat layout). */
	offer_std(&o, 8 * GIB, 0);
	o.s[0].npages = 4 * GIB / PG;
	o.s[1].base_gfn = 4 * GIB / PG;
	o.s[1].npages = 4 * GIB / PG;
	CU_ASSERT_EQUAL(to_cfg(&o, &cfg), MIG__REFUSE_REASON__REFUSE_LAYOUT);
	/* The upper range starting in the hole. */
	offer_std(&o, 8 * GIB, 0);
	o.s[1].base_gfn = 3 * GIB / PG + 16;
	CU_ASSERT_EQUAL(to_cfg(&o, &cfg), MIG__REFUSE_REASON__REFUSE_LAYOUT);
	/* Right after the low range, with no hole. */
	offer_std(&o, 8 * GIB, 0);
	o.s[1].base_gfn = 3 * GIB / PG;
	CU_ASSERT_EQUAL(to_cfg(&o, &cfg), MIG__REFUSE_REASON__REFUSE_LAYOUT);
	/* Slots of 2 GiB, one of them moved up by a page. */
	offer_std(&o, 8 * GIB, 2 * GIB);
	o.s[3].base_gfn++;
	CU_ASSERT_EQUAL(to_cfg(&o, &cfg), MIG__REFUSE_REASON__REFUSE_LAYOUT);
	/* Above the maximum. */
	offer_std(&o, 8 * GIB, 0);
	o.s[1].npages = HV_VM_MAX_MEM / PG;
	CU_ASSERT_EQUAL(to_cfg(&o, &cfg), MIG__REFUSE_REASON__REFUSE_LAYOUT);
}

/*
 * The receiving accelerator: a VM's state loads only into the kind it ran
 * on, so another one is refused, and the refusal names the option that
 * chooses (migrate-recv --accel); the same kind, or no choice (NULL
 * base), is accepted.
 */
static void test_other_accelerator_is_refused_naming_the_option(void)
{
	struct offer o;
	struct hv_vm_cfg base, cfg;
	char why[160] = "";

	offer_std(&o, 2 * GIB, 0);
	o.l.accel = "kvm";
	hv_vm_cfg_init(&base, HV_ACCEL_SOFT, HV_VM_MIN_MEM, 1);
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&o.l, &base, &cfg, why,
					  sizeof(why)),
			MIG__REFUSE_REASON__REFUSE_ACCEL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "--accel kvm"));
	CU_ASSERT(strlen(why) < sizeof(why) - 1); /* not truncated */
	hv_vm_cfg_init(&base, HV_ACCEL_KVM, HV_VM_MIN_MEM, 1);
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&o.l, &base, &cfg, why,
					  sizeof(why)),
			0);
	CU_ASSERT_EQUAL(cfg.accel, HV_ACCEL_KVM);
	o.l.accel = "soft";
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&o.l, &base, &cfg, why,
					  sizeof(why)),
			MIG__REFUSE_REASON__REFUSE_ACCEL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "--accel soft"));
	o.l.accel = "vmx";
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&o.l, NULL, &cfg, why, sizeof(why)),
			MIG__REFUSE_REASON__REFUSE_ACCEL);
}

static CU_TestInfo tests[] = {
	{ "other_accelerator_is_refused_naming_the_option",
	  test_other_accelerator_is_refused_naming_the_option },
	{ "two_range_layouts_rebuild_the_same_cfg",
	  test_two_range_layouts_rebuild_the_same_cfg },
	{ "slots_in_or_across_the_hole_are_refused",
	  test_slots_in_or_across_the_hole_are_refused },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/layout", NULL, NULL, tests);
