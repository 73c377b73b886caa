// SPDX-License-Identifier: MIT
/*
 * VM create requests -> configuration (migrated/vmm/registry.c): every
 * bad field refused with a reason, defaults applied, regions split.
 */
#include <errno.h>
#include <string.h>

#include "migrated/vmm/registry.h"
#include "tests/harness/hv_test.h"

static Migd__VmCreateRequest base_req(void)
{
	Migd__VmCreateRequest r = MIGD__VM_CREATE_REQUEST__INIT;

	r.name = (char *)"vm1";
	r.mem_bytes = 64ull << 20;
	r.nr_vcpus = 2;
	r.accel = (char *)"";
	return r;
}

static void test_defaults_split_region_between_vcpus(void)
{
	Migd__VmCreateRequest r = base_req();
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	char err[256];
	uint64_t per;

	CU_ASSERT_EQUAL_FATAL(migd_vm_cfg_build(&r, HV_ACCEL_KVM, &cfg, &wl,
						err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.accel, HV_ACCEL_KVM);
	CU_ASSERT_EQUAL(wl.pattern, HV_WL_PATTERN_SWEEP);
	CU_ASSERT_EQUAL(wl.content, HV_WL_CONTENT_STAMP);
	CU_ASSERT_EQUAL(wl.write_pct, 100);
	CU_ASSERT_EQUAL(wl.heartbeat_us, MIGD_HEARTBEAT_US_DEFAULT);
	CU_ASSERT_EQUAL(wl.region_offset, HV_VM_WL_BASE);
	CU_ASSERT_EQUAL(wl.region_bytes, (64ull << 20) - HV_VM_WL_BASE);
	per = wl.region_bytes / 2 / HV_PAGE_SIZE;
	CU_ASSERT_EQUAL(cfg.wl[0].region_gpa, HV_VM_WL_BASE);
	CU_ASSERT_EQUAL(cfg.wl[0].region_pages, per);
	CU_ASSERT_EQUAL(cfg.wl[1].region_gpa,
			HV_VM_WL_BASE + per * HV_PAGE_SIZE);
	CU_ASSERT_NOT_EQUAL(cfg.wl[0].seed, cfg.wl[1].seed);
	/* Regions end inside guest RAM. */
	CU_ASSERT(cfg.wl[1].region_gpa + per * HV_PAGE_SIZE <= r.mem_bytes);
}

/* Regions are RAM offsets: a region that spans 3 GiB goes on at 4 GiB. */
static void test_region_offsets_skip_the_mmio_hole(void)
{
	Migd__VmCreateRequest r = base_req();
	Migd__Workload w = MIGD__WORKLOAD__INIT;
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	char err[256];

	r.mem_bytes = 8ull << 30;
	r.workload = &w;
	w.region_offset = (3ull << 30) - (64ull << 20);
	w.region_bytes = 128ull << 20;
	CU_ASSERT_EQUAL_FATAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl,
						err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.wl[0].region_gpa, (3ull << 30) - (64ull << 20));
	CU_ASSERT_EQUAL(cfg.wl[1].region_gpa, 4ull << 30);
	CU_ASSERT_EQUAL(cfg.wl[1].region_pages, (64ull << 20) / HV_PAGE_SIZE);
	/* The last 64 MiB of RAM (offsets) is the top of the gpa space. */
	w.region_offset = (8ull << 30) - (64ull << 20);
	w.region_bytes = 0;
	CU_ASSERT_EQUAL_FATAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl,
						err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.wl[1].region_gpa + cfg.wl[1].region_pages *
						       HV_PAGE_SIZE,
			9ull << 30);
}

static void test_bad_fields_refused_with_reason(void)
{
	Migd__Workload w = MIGD__WORKLOAD__INIT;
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	char err[256];
	Migd__VmCreateRequest r;

#define REFUSE(stmt, accel, needle)                                          \
	do {                                                                 \
		r = base_req();                                              \
		w = (Migd__Workload)MIGD__WORKLOAD__INIT;                     \
		r.workload = &w;                                             \
		stmt;                                                        \
		err[0] = '\0';                                               \
		CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, accel, &cfg, &wl, err, \
						  sizeof(err)),              \
				-EINVAL);                                    \
		CU_ASSERT_PTR_NOT_NULL(strstr(err, needle));                 \
	} while (0)

	REFUSE(r.name = (char *)"", HV_ACCEL_KVM, "name");
	REFUSE(r.name = (char *)"a/b", HV_ACCEL_KVM, "name");
	REFUSE((void)0, HV_ACCEL_INVALID, "accelerator");
	REFUSE(r.mem_bytes = 3 << 20, HV_ACCEL_KVM, "mem_bytes");
	REFUSE(r.mem_bytes = (64ull << 20) + 4096, HV_ACCEL_KVM, "mem_bytes");
	REFUSE(r.mem_bytes = HV_VM_MAX_MEM + (2ull << 20), HV_ACCEL_KVM,
	       "mem_bytes");
	REFUSE(r.nr_vcpus = 0, HV_ACCEL_KVM, "nr_vcpus");
	REFUSE(r.nr_vcpus = HV_VM_MAX_VCPUS + 1, HV_ACCEL_KVM, "nr_vcpus");
	REFUSE(w.pattern = 9, HV_ACCEL_KVM, "pattern");
	REFUSE(w.content = 9, HV_ACCEL_KVM, "content");
	REFUSE(w.write_pct = 101, HV_ACCEL_KVM, "write_pct");
	REFUSE(w.pattern = MIGD__WL_PATTERN__WL_PATTERN_HOTSET, HV_ACCEL_KVM,
	       "hotset");
	REFUSE(w.region_offset = 4096, HV_ACCEL_KVM, "region offset");
	REFUSE(w.region_offset = (8 << 20) + 1, HV_ACCEL_KVM,
	       "region offset");
	REFUSE(w.region_bytes = 64ull << 20, HV_ACCEL_KVM, "region");
	REFUSE(w.region_bytes = 100, HV_ACCEL_KVM, "region");
	REFUSE((r.nr_vcpus = 4, w.region_bytes = 8192), HV_ACCEL_KVM,
	       "too small");
	REFUSE(r.dirty_ring = 1000, HV_ACCEL_KVM, "dirty_ring");
	REFUSE(r.dirty_ring = 128, HV_ACCEL_KVM, "dirty_ring");
	REFUSE(r.dirty_ring = 131072, HV_ACCEL_KVM, "dirty_ring");
	REFUSE(r.dirty_ring = -2, HV_ACCEL_KVM, "dirty_ring");
	REFUSE(r.dirty_ring = 4096, HV_ACCEL_SOFT, "dirty_ring");
	REFUSE(r.backing = (char *)"shm", HV_ACCEL_SOFT, "backing 'shm'");
#undef REFUSE
}

static void test_dirty_ring_sizes(void)
{
	Migd__VmCreateRequest r = base_req();
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	char err[256];

	r.dirty_ring = 4096;
	CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, HV_ACCEL_KVM, &cfg, &wl, err,
					  sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.dirty_ring_entries, 4096);
	/* -1 (no ring) and 0 (the daemon's default, applied by the caller)
	 * both leave the configuration without one. */
	r.dirty_ring = -1;
	CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, HV_ACCEL_KVM, &cfg, &wl, err,
					  sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.dirty_ring_entries, 0);
	r.dirty_ring = 0;
	CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl, err,
					  sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.dirty_ring_entries, 0);
}

/* A named backing is taken; "" leaves the daemon's default to the
 * caller (cfg keeps hv_vm_cfg_init's). */
static void test_backing_names(void)
{
	Migd__VmCreateRequest r = base_req();
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	char err[256];

	r.backing = (char *)"anon";
	CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl, err,
					  sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.backing, HV_BACKING_PRIVATE);
	r.backing = (char *)"memfd";
	CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl, err,
					  sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.backing, HV_BACKING_ANON);
	r.backing = (char *)"";
	CU_ASSERT_EQUAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl, err,
					  sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.backing, HV_BACKING_ANON);
}

static void test_accel_names(void)
{
	CU_ASSERT_EQUAL(hv_accel_kind_parse("kvm", HV_ACCEL_SOFT), HV_ACCEL_KVM);
	CU_ASSERT_EQUAL(hv_accel_kind_parse("soft", HV_ACCEL_KVM), HV_ACCEL_SOFT);
	CU_ASSERT_EQUAL(hv_accel_kind_parse("", HV_ACCEL_SOFT), HV_ACCEL_SOFT);
	CU_ASSERT_EQUAL(hv_accel_kind_parse(NULL, HV_ACCEL_KVM), HV_ACCEL_KVM);
	CU_ASSERT_EQUAL(hv_accel_kind_parse("qemu", HV_ACCEL_KVM),
			HV_ACCEL_INVALID);
}

static void test_registry_refuses_duplicate_names(void)
{
	struct migd_registry reg;
	struct migd_vm *v = NULL;

	migd_registry_init(&reg);
	/* NULL VMs: the registry only stores them; remove copes. */
	CU_ASSERT_EQUAL(migd_registry_add(&reg, "a", NULL, NULL, false, &v),
			0);
	CU_ASSERT_EQUAL(migd_registry_add(&reg, "a", NULL, NULL, false, NULL),
			-EEXIST);
	CU_ASSERT_EQUAL(migd_registry_add(&reg, "b", NULL, NULL, true, NULL),
			0);
	CU_ASSERT_EQUAL(reg.count, 2);
	CU_ASSERT_PTR_EQUAL(migd_registry_find(&reg, "a"), v);
	CU_ASSERT_PTR_NULL(migd_registry_find(&reg, "c"));
	/* Creation order is kept. */
	CU_ASSERT_STRING_EQUAL(reg.head->name, "a");
	CU_ASSERT_STRING_EQUAL(reg.head->next->name, "b");
	migd_registry_remove(&reg, v);
	CU_ASSERT_EQUAL(reg.count, 1);
	CU_ASSERT_PTR_NULL(migd_registry_find(&reg, "a"));
	migd_registry_fini(&reg);
	CU_ASSERT_EQUAL(reg.count, 0);
	CU_ASSERT_PTR_NULL(reg.head);
}

static void test_held_name_is_taken_until_added_or_released(void)
{
	struct migd_registry reg;
	struct migd_vm *v = NULL;

	migd_registry_init(&reg);
	CU_ASSERT_EQUAL(migd_registry_add(&reg, "here", NULL, NULL, false,
					  NULL),
			0);
	/* A VM's name cannot be held; a held one cannot be held twice,
	 * nor taken by a create, nor added as held when nobody holds it. */
	CU_ASSERT_EQUAL(migd_registry_hold(&reg, "here"), -EEXIST);
	CU_ASSERT_EQUAL(migd_registry_hold(&reg, "coming"), 0);
	CU_ASSERT_EQUAL(migd_registry_hold(&reg, "coming"), -EEXIST);
	CU_ASSERT(migd_registry_taken(&reg, "coming"));
	CU_ASSERT(migd_registry_taken(&reg, "here"));
	CU_ASSERT(!migd_registry_taken(&reg, "free"));
	CU_ASSERT_PTR_NULL(migd_registry_find(&reg, "coming"));
	CU_ASSERT_EQUAL(migd_registry_add(&reg, "coming", NULL, NULL, false,
					  NULL),
			-EEXIST);
	CU_ASSERT_EQUAL(migd_registry_add_held(&reg, "free", NULL, NULL, true,
					       NULL),
			-EEXIST);
	CU_ASSERT_EQUAL(migd_registry_hold(&reg, ""), -EINVAL);
	/* The hold becomes the VM. */
	CU_ASSERT_EQUAL(migd_registry_add_held(&reg, "coming", NULL, NULL,
					       true, &v),
			0);
	CU_ASSERT_PTR_EQUAL(migd_registry_find(&reg, "coming"), v);
	CU_ASSERT_PTR_NULL(reg.holds);
	CU_ASSERT_EQUAL(reg.count, 2);
	/* A released hold frees the name. */
	CU_ASSERT_EQUAL(migd_registry_hold(&reg, "gone"), 0);
	migd_registry_release(&reg, "gone");
	migd_registry_release(&reg, "never-held");
	CU_ASSERT(!migd_registry_taken(&reg, "gone"));
	CU_ASSERT_EQUAL(migd_registry_add(&reg, "gone", NULL, NULL, false,
					  NULL),
			0);
	/* fini frees holds still pending (ASan would see a leak). */
	CU_ASSERT_EQUAL(migd_registry_hold(&reg, "pending"), 0);
	migd_registry_fini(&reg);
}

/* --prefill reaches every vCPU's params, and is off unless asked for. */
static void test_prefill_reaches_every_vcpu(void)
{
	Migd__Workload w = MIGD__WORKLOAD__INIT;
	Migd__VmCreateRequest r = base_req();
	struct hv_vm_cfg cfg;
	struct migd_wl wl;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl,
						err, sizeof(err)), 0);
	CU_ASSERT_FALSE(wl.prefill);
	CU_ASSERT_EQUAL(cfg.wl[0].prefill, 0);
	w.prefill = true;
	w.pattern = MIGD__WL_PATTERN__WL_PATTERN_IDLE;
	r.workload = &w;
	CU_ASSERT_EQUAL_FATAL(migd_vm_cfg_build(&r, HV_ACCEL_SOFT, &cfg, &wl,
						err, sizeof(err)), 0);
	CU_ASSERT_TRUE(wl.prefill);
	for (uint32_t i = 0; i < r.nr_vcpus; i++) {
		CU_ASSERT_EQUAL(cfg.wl[i].prefill, 1);
		/* An idle vCPU that prefills needs a valid region. */
		CU_ASSERT(cfg.wl[i].region_pages > 0);
	}
}

static CU_TestInfo tests[] = {
	{ "defaults_split_region_between_vcpus",
	  test_defaults_split_region_between_vcpus },
	{ "bad_fields_refused_with_reason",
	  test_bad_fields_refused_with_reason },
	{ "region_offsets_skip_the_mmio_hole",
	  test_region_offsets_skip_the_mmio_hole },
	{ "dirty_ring_sizes", test_dirty_ring_sizes },
	{ "backing_names", test_backing_names },
	{ "prefill_reaches_every_vcpu", test_prefill_reaches_every_vcpu },
	{ "accel_names", test_accel_names },
	{ "registry_refuses_duplicate_names",
	  test_registry_refuses_duplicate_names },
	{ "held_name_is_taken_until_added_or_released",
	  test_held_name_is_taken_until_added_or_released },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/vmm/registry", NULL, NULL, tests);
