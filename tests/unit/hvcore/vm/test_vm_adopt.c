// SPDX-License-Identifier: MIT
/*
 * hv_vm_create() adopting an existing guest memfd (hv_vm_cfg.adopt_mem),
 * the primitive of the local live update: a VM runs and stamps pages, is
 * paused and its state saved; a second VM is created over the same memfd,
 * the first destroyed, the state restored, and the guest goes on where it
 * was. The page-stamp oracle (hvcore/wl_verify.h) checks every page.
 * Both accelerators (KVM skipped visibly without /dev/kvm). Refusals: an
 * fd of the wrong size, no fd.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "hvcore/wl_verify.h"

#define MEM (32ULL << 20)
#define NR 2

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void make_cfg(struct hv_vm_cfg *cfg, enum hv_accel_kind accel)
{
	hv_vm_cfg_init(cfg, accel, MEM, NR);
	for (uint32_t i = 0; i < NR; i++) {
		cfg->wl[i].region_pages = 1024;
		cfg->wl[i].heartbeat_us = 1000;
		cfg->wl[i].rate_pages = 100000;
	}
}

/* vCPUs write guest RAM with no host synchronisation, like a guest. */
__attribute__((no_sanitize("thread"))) static uint64_t
status_seq(struct hv_vm *vm, uint32_t idx)
{
	return hv_vm_wl_status(vm, idx)->seq;
}

/* Wait (up to 10 s) until every vCPU's published seq exceeds @above. */
static bool wait_progress(struct hv_vm *vm, const uint64_t *above)
{
	for (int t = 0; t < 1000; t++) {
		uint32_t ok = 0;

		for (uint32_t v = 0; v < NR; v++)
			ok += status_seq(vm, v) > (above ? above[v] : 0);
		if (ok == NR)
			return true;
		sleep_ms(10);
	}
	return false;
}

static void adopt_continues(enum hv_accel_kind accel)
{
	struct hv_vm_cfg cfg, cfg2;
	struct hv_vm *vm = NULL, *vm2 = NULL;
	struct hv_blob blob = { 0 };
	struct hv_wl_vcpu_params p;
	struct hv_wl_verify r;
	uint64_t seq[NR];
	uint8_t *copy;

	make_cfg(&cfg, accel);
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FALSE(hv_vm_mem_adopted(vm));
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	CU_ASSERT_FATAL(wait_progress(vm, NULL));
	/* A live params change: an adopting create must not undo it. */
	p = cfg.wl[0];
	p.rate_pages = 50000;
	CU_ASSERT_FATAL(hv_vm_wl_set_vcpu(vm, 0, &p) == 0);
	sleep_ms(50);
	CU_ASSERT_FATAL(hv_vm_pause(vm) == 0);
	for (uint32_t v = 0; v < NR; v++)
		seq[v] = status_seq(vm, v);
	CU_ASSERT_FATAL(hv_vm_state_save(vm, &blob) == 0);
	copy = malloc(MEM);
	CU_ASSERT_FATAL(copy != NULL);
	memcpy(copy, hv_vm_gpa_to_hva(vm, 0, MEM), MEM);

	cfg2 = vm->cfg;
	/* What the first VM keeps is a fresh-VM cfg. */
	CU_ASSERT_FALSE(cfg2.adopt_mem);
	CU_ASSERT_EQUAL(cfg2.mem_fd, -1);
	cfg2.adopt_mem = true;
	cfg2.mem_fd = hv_vm_mem_fd(vm);
	CU_ASSERT_FATAL(hv_vm_create(&cfg2, &vm2) == 0);
	CU_ASSERT_TRUE(hv_vm_mem_adopted(vm2));
	CU_ASSERT_FALSE(vm2->cfg.adopt_mem);
	CU_ASSERT_EQUAL(vm2->cfg.mem_fd, -1);
	CU_ASSERT_NOT_EQUAL(hv_vm_mem_fd(vm2), hv_vm_mem_fd(vm));
	/* Nothing was written: no image, no params, no zeroing. */
	CU_ASSERT_EQUAL(memcmp(hv_vm_gpa_to_hva(vm2, 0, MEM), copy, MEM), 0);
	hv_vm_destroy(vm);
	/* The RAM outlives the first VM (the second holds its own fd). */
	CU_ASSERT_EQUAL(memcmp(hv_vm_gpa_to_hva(vm2, 0, MEM), copy, MEM), 0);
	free(copy);

	CU_ASSERT_FATAL(hv_vm_state_restore(vm2, &blob) == 0);
	CU_ASSERT_FATAL(hv_vm_start(vm2) == 0);
	sleep_ms(200);
	CU_ASSERT(wait_progress(vm2, seq));
	CU_ASSERT_FATAL(hv_vm_pause(vm2) == 0);
	for (uint32_t v = 0; v < NR; v++) {
		struct hv_vcpu_stats s;

		CU_ASSERT(status_seq(vm2, v) > seq[v]);
		CU_ASSERT_EQUAL(hv_vm_vcpu_stats(vm2, v, &s), 0);
		CU_ASSERT_FALSE(s.asserted);
		CU_ASSERT_EQUAL(s.error, 0);
	}
	CU_ASSERT_EQUAL(hv_wl_verify(hv_vm_gpa_to_hva(vm2, 0, MEM), MEM, &r),
			0);
	CU_ASSERT(r.written > 0);
	CU_ASSERT_EQUAL(r.bad, 0);
	CU_ASSERT_EQUAL(r.lost_vcpus, 0);
	if (!hv_wl_verify_clean(&r))
		fprintf(stderr,
			"verify: pages=%llu written=%llu bad=%llu stale=%llu "
			"bad_stamp=%llu lost=%u\n",
			(unsigned long long)r.pages,
			(unsigned long long)r.written,
			(unsigned long long)r.bad, (unsigned long long)r.stale,
			(unsigned long long)r.bad_stamp, r.lost_vcpus);
	hv_vm_destroy(vm2);
	free(blob.data);
}

static void test_adopt_soft_continues(void)
{
	adopt_continues(HV_ACCEL_SOFT);
}

static void test_adopt_kvm_continues(void)
{
	HV_TEST_REQUIRE_KVM();
	adopt_continues(HV_ACCEL_KVM);
}

static void test_adopt_refuses_bad_fd(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	int fd = memfd_create("test-adopt", MFD_CLOEXEC);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)(MEM / 2)) == 0);
	make_cfg(&cfg, HV_ACCEL_SOFT);
	cfg.adopt_mem = true;
	cfg.mem_fd = fd;
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	CU_ASSERT_PTR_NULL(vm);
	/* The caller's fd stays open and its own. */
	CU_ASSERT(fcntl(fd, F_GETFD) >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)MEM) == 0);
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), 0);
	hv_vm_destroy(vm);
	vm = NULL;
	CU_ASSERT(fcntl(fd, F_GETFD) >= 0);
	close(fd);
	/* Adopting without an fd, or a closed one. */
	cfg.mem_fd = -1;
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	cfg.mem_fd = fd;
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	CU_ASSERT_PTR_NULL(vm);
}

/* A zeroed cfg has mem_fd 0 (stdin): without adopt_mem it is ignored. */
static void test_zeroed_cfg_never_adopts_fd0(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	make_cfg(&cfg, HV_ACCEL_SOFT);
	CU_ASSERT_EQUAL(cfg.mem_fd, -1);
	cfg.mem_fd = 0;
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FALSE(hv_vm_mem_adopted(vm));
	CU_ASSERT_NOT_EQUAL(hv_vm_mem_fd(vm), 0);
	hv_vm_destroy(vm);
}

static CU_TestInfo tests[] = {
	{ "adopt_soft_continues", test_adopt_soft_continues },
	{ "adopt_refuses_bad_fd", test_adopt_refuses_bad_fd },
	{ "zeroed_cfg_never_adopts_fd0", test_zeroed_cfg_never_adopts_fd0 },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/vm/adopt", NULL, NULL, tests);

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "adopt_kvm_continues", test_adopt_kvm_continues },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("hvcore/vm/adopt/kvm", NULL, NULL, kvm_tests);
