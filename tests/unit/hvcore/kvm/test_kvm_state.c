// SPDX-License-Identifier: MIT
/*
 * VM state round trip on KVM: run, pause, save, destroy, create a fresh
 * VM, load RAM and state, resume. The guest must continue where it was:
 * its write counters keep increasing from the saved values, its stamps
 * stay consistent, and the RAM it did not touch is unchanged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/kvm/kvm_test.h"
#include "hvcore/vcpu.h"
#include "proto/vmstate.pb-c.h"
#include "hvcore/vm.h"
#include "tests/harness/hv_test.h"

#define MEM (32ULL << 20)
#define NR 2

static void make_cfg(struct hv_vm_cfg *cfg)
{
	hv_vm_cfg_init(cfg, HV_ACCEL_KVM, MEM, NR);
	for (uint32_t i = 0; i < NR; i++) {
		cfg->wl[i].region_pages = 512;
		cfg->wl[i].heartbeat_us = 1000;
		cfg->wl[i].rate_pages = 200000; /* paced by the guest TSC */
	}
}

static void check_stamps(struct hv_vm *vm, const struct hv_vm_cfg *cfg)
{
	for (uint32_t v = 0; v < NR; v++) {
		uint64_t seq = hv_vm_wl_status(vm, v)->seq;

		for (uint64_t p = 0; p < cfg->wl[v].region_pages; p++) {
			struct hv_wl_stamp s;

			hv_vm_read_guest(vm, cfg->wl[v].region_gpa + p * 4096,
					 &s, sizeof(s));
			if (!s.seq)
				continue;
			CU_ASSERT_EQUAL(s.magic, HV_WL_STAMP_MAGIC);
			CU_ASSERT_EQUAL(s.vcpu, v);
			/* status.seq is published once per batch of 64
			 * writes, so a paused batch may be ahead of it. */
			CU_ASSERT(s.seq < seq + 64);
		}
	}
}

/* The general registers of vCPU @v in a saved VmState. */
static void saved_regs(const struct hv_blob *b, uint32_t v, uint64_t *regs)
{
	Hvstate__VmState *m = hvstate__vm_state__unpack(NULL, b->len, b->data);
	Hvstate__X86VcpuState *c;

	CU_ASSERT_FATAL(m != NULL && v < m->n_vcpus);
	c = hvstate__x86_vcpu_state__unpack(NULL, m->vcpus[v].len,
					    m->vcpus[v].data);
	CU_ASSERT_FATAL(c != NULL && c->n_regs == 18);
	memcpy(regs, c->regs, 18 * sizeof(uint64_t));
	hvstate__x86_vcpu_state__free_unpacked(c, NULL);
	hvstate__vm_state__free_unpacked(m, NULL);
}

/*
 * MSRs of vCPU @v that differ between two saved VmStates, printed. Not
 * compared: the clocks that count on while the vCPU is stopped, the TSC
 * (0x10) with TSC_ADJUST (0x3b) that KVM moves with it, the TSC deadline
 * (0x6e0, 0 once it fired) and Hyper-V's VP runtime and reference counter
 * (0x40000010, 0x40000020).
 */
static bool msr_is_a_clock(uint32_t idx)
{
	return idx == 0x10 || idx == 0x3b || idx == 0x6e0 ||
	       idx == 0x40000010 || idx == 0x40000020;
}

static unsigned msrs_differ(const struct hv_blob *a, const struct hv_blob *b,
			    uint32_t v)
{
	Hvstate__VmState *ma = hvstate__vm_state__unpack(NULL, a->len, a->data);
	Hvstate__VmState *mb = hvstate__vm_state__unpack(NULL, b->len, b->data);
	Hvstate__X86VcpuState *ca, *cb;
	unsigned bad = 0;

	CU_ASSERT_FATAL(ma && mb && v < ma->n_vcpus && v < mb->n_vcpus);
	ca = hvstate__x86_vcpu_state__unpack(NULL, ma->vcpus[v].len,
					     ma->vcpus[v].data);
	cb = hvstate__x86_vcpu_state__unpack(NULL, mb->vcpus[v].len,
					     mb->vcpus[v].data);
	CU_ASSERT_FATAL(ca && cb);
	CU_ASSERT_EQUAL(ca->n_msrs, cb->n_msrs);
	for (size_t i = 0; i < ca->n_msrs && i < cb->n_msrs; i++) {
		uint32_t idx = ca->msrs[i]->index;

		CU_ASSERT_EQUAL(idx, cb->msrs[i]->index);
		if (msr_is_a_clock(idx) ||
		    ca->msrs[i]->value == cb->msrs[i]->value)
			continue;
		printf("\n    vcpu %u msr 0x%x saved 0x%llx restored 0x%llx", v,
		       idx, (unsigned long long)ca->msrs[i]->value,
		       (unsigned long long)cb->msrs[i]->value);
		bad++;
	}
	hvstate__x86_vcpu_state__free_unpacked(ca, NULL);
	hvstate__x86_vcpu_state__free_unpacked(cb, NULL);
	hvstate__vm_state__free_unpacked(ma, NULL);
	hvstate__vm_state__free_unpacked(mb, NULL);
	return bad;
}

/*
 * MSRs a guest OS sets (syscall entry, swapgs, sysenter) and the test
 * guest does not use: given values unlike their reset ones before the
 * save, a round trip that lost one shows it in msrs_differ().
 */
static const uint32_t os_msrs[] = {
	0xc0000081, /* STAR */
	0xc0000082, /* LSTAR */
	0xc0000083, /* CSTAR */
	0xc0000084, /* SFMASK */
	0xc0000102, /* KERNEL_GS_BASE */
	0x174,	    /* SYSENTER_CS */
	0x175,	    /* SYSENTER_ESP */
	0x176,	    /* SYSENTER_EIP */
};

static void set_os_msrs(struct hv_vm *vm)
{
	for (uint32_t v = 0; v < NR; v++)
		for (size_t i = 0; i < HV_ARRAY_SIZE(os_msrs); i++)
			CU_ASSERT_EQUAL(hv_kvm_test_set_msr(vm, v, os_msrs[i],
							    0xffffffff81000000ULL +
								    (v << 16) +
								    i * 0x40),
					0);
}

static void test_state_round_trip_guest_continues(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL, *vm2 = NULL;
	struct hv_blob blob = {0};
	uint64_t seq[NR], hb[NR], tsc[NR];
	uint8_t *ram;

	HV_TEST_REQUIRE_KVM();
	make_cfg(&cfg);
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_EQUAL(hv_vm_state_save(vm, &blob), 0); /* CREATED: ok */
	free(blob.data);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	usleep(100000);
	/* On a loaded machine, give the vCPUs time to get going. */
	for (int t = 0; t < 1000 && (!hv_vm_wl_status(vm, 0)->heartbeats ||
				     !hv_vm_wl_status(vm, NR - 1)->heartbeats);
	     t++)
		usleep(10000);
	CU_ASSERT_EQUAL(hv_vm_state_save(vm, &blob), -EBUSY);
	CU_ASSERT_FATAL(hv_vm_pause(vm) == 0);
	set_os_msrs(vm);
	for (uint32_t v = 0; v < NR; v++) {
		struct hv_vcpu_stats s;

		seq[v] = hv_vm_wl_status(vm, v)->seq;
		CU_ASSERT(seq[v] > 0);
		hv_vm_vcpu_stats(vm, v, &s);
		hb[v] = hv_vm_wl_status(vm, v)->heartbeats;
		tsc[v] = hv_vm_wl_status(vm, v)->last_tsc;
		CU_ASSERT_FALSE(s.asserted);
	}
	CU_ASSERT_FATAL(hv_vm_state_save(vm, &blob) == 0);
	CU_ASSERT(blob.len > 1000);
	ram = malloc(MEM);
	CU_ASSERT_FATAL(ram != NULL);
	CU_ASSERT_FATAL(hv_vm_read_guest(vm, 0, ram, MEM) == 0);
	hv_vm_destroy(vm);

	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm2) == 0);
	memcpy(hv_vm_gpa_to_hva(vm2, 0, MEM), ram, MEM);
	CU_ASSERT_FATAL(hv_vm_state_restore(vm2, &blob) == 0);
	/* Nothing ran yet: memory and registers are what was saved (a
	 * fresh VM would sit at the PVH entry). */
	CU_ASSERT_EQUAL(memcmp(hv_vm_gpa_to_hva(vm2, 0, MEM), ram, MEM), 0);
	{
		struct hv_blob again = {0};
		uint64_t a[18], b[18];

		CU_ASSERT_FATAL(hv_vm_state_save(vm2, &again) == 0);
		for (uint32_t v = 0; v < NR; v++) {
			saved_regs(&blob, v, a);
			saved_regs(&again, v, b);
			CU_ASSERT_EQUAL(memcmp(a, b, sizeof(a)), 0);
			CU_ASSERT(a[16] < HV_VM_WL_BASE); /* rip in image */
			/* Every MSR as saved: one not restored would leave
			 * the fresh vCPU's value. */
			CU_ASSERT_EQUAL(msrs_differ(&blob, &again, v), 0);
		}
		free(again.data);
	}
	CU_ASSERT_FATAL(hv_vm_start(vm2) == 0);
	usleep(100000);
	for (int t = 0; t < 1000; t++) {
		uint32_t ok = 0;

		for (uint32_t v = 0; v < NR; v++)
			ok += hv_vm_wl_status(vm2, v)->heartbeats > hb[v] &&
			      hv_vm_wl_status(vm2, v)->seq > seq[v];
		if (ok == NR)
			break;
		usleep(10000);
	}
	CU_ASSERT_FATAL(hv_vm_pause(vm2) == 0);
	for (uint32_t v = 0; v < NR; v++) {
		struct hv_vcpu_stats s;

		hv_vm_vcpu_stats(vm2, v, &s);
		CU_ASSERT_FALSE(s.asserted);
		CU_ASSERT_EQUAL(s.error, 0);
		/* Continued, not restarted: the counter went on from the
		 * saved value and heartbeats kept coming. */
		CU_ASSERT(hv_vm_wl_status(vm2, v)->seq > seq[v]);
		CU_ASSERT(hv_vm_wl_status(vm2, v)->heartbeats > hb[v]);
		/* The guest TSC keeps counting (never goes back). */
		CU_ASSERT(hv_vm_wl_status(vm2, v)->last_tsc > tsc[v]);
		CU_ASSERT(s.heartbeats > 0);
		CU_ASSERT_EQUAL(s.exits[HV_EXIT_ERROR], 0);
	}
	check_stamps(vm2, &cfg);
	/* Pages below the workload regions, except the workload status
	 * page and the guest's own stacks, are unchanged. */
	CU_ASSERT_EQUAL(memcmp(hv_vm_gpa_to_hva(vm2, 0, HV_WL_STATUS_GPA), ram,
			       HV_WL_STATUS_GPA),
			0);
	hv_vm_destroy(vm2);
	free(ram);
	free(blob.data);
}

static void test_restore_refuses_corrupt_or_mismatched_state(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL, *other = NULL;
	struct hv_blob blob = {0};

	HV_TEST_REQUIRE_KVM();
	make_cfg(&cfg);
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FATAL(hv_vm_state_save(vm, &blob) == 0);
	/* A flipped byte fails the digest (or the decode). */
	blob.data[blob.len / 2] ^= 0x40;
	CU_ASSERT_EQUAL(hv_vm_state_restore(vm, &blob), -EINVAL);
	blob.data[blob.len / 2] ^= 0x40;
	CU_ASSERT_EQUAL(hv_vm_state_restore(vm, &blob), 0);
	/* A VM with another vCPU count refuses it. */
	cfg.nr_vcpus = 1;
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &other) == 0);
	CU_ASSERT_EQUAL(hv_vm_state_restore(other, &blob), -EINVAL);
	{
		struct hv_blob empty = {blob.data, 0};

		CU_ASSERT_EQUAL(hv_vm_state_restore(other, &empty), -EINVAL);
	}
	hv_vm_destroy(other);
	hv_vm_destroy(vm);
	free(blob.data);
}

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{"state_round_trip_guest_continues",
	 test_state_round_trip_guest_continues},
	{"restore_refuses_corrupt_or_mismatched_state",
	 test_restore_refuses_corrupt_or_mismatched_state},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("hvcore/kvm/state", NULL, NULL, kvm_tests);
