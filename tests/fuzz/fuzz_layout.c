// SPDX-License-Identifier: MIT
/*
 * Target: the VM layout a source offers in setup (migrated/mig/layout.h),
 * as the destination receives it: one MSG_SETUP frame, unpacked and handed
 * to mig_layout_to_cfg(), once without and once with a local base
 * configuration (the daemon's case: its own accelerator and backing).
 *
 * Promises checked: a refusal is a known Mig__RefuseReason with a
 * NUL-terminated reason; an accepted layout gives a configuration
 * hv_vm_create() can build -- RAM the sum of the slots, a multiple of 2 MiB
 * within [HV_VM_MIN_MEM, HV_VM_MAX_MEM], 1..HV_VM_MAX_VCPUS vCPUs, exactly
 * the slots hv_vm_create() builds for it (none in or across the MMIO
 * hole), a valid name.
 */
#include <string.h>

#include "hvcore/vm.h"
#include "migrated/mig/frame.h"
#include "migrated/mig/layout.h"
#include "tests/fuzz/fuzz_common.h"

static void check_accepted(const Mig__VmLayout *l, const struct hv_vm_cfg *c)
{
	uint64_t pages = 0;

	for (size_t i = 0; i < l->n_slots; i++)
		pages += l->slots[i]->npages;
	FUZZ_CHECK(c->accel > HV_ACCEL_INVALID && c->accel < HV_ACCEL_COUNT);
	FUZZ_CHECK(c->mem_bytes == pages << HV_PAGE_SHIFT);
	FUZZ_CHECK(c->mem_bytes >= HV_VM_MIN_MEM &&
		   c->mem_bytes <= HV_VM_MAX_MEM);
	FUZZ_CHECK(c->mem_bytes % (2ull << 20) == 0);
	FUZZ_CHECK(c->nr_vcpus == l->nr_vcpus && c->nr_vcpus >= 1 &&
		   c->nr_vcpus <= HV_VM_MAX_VCPUS);
	FUZZ_CHECK(l->n_slots >= 1);
	FUZZ_CHECK(c->slot_bytes % (2ull << 20) == 0);
	/* Exactly the slots hv_vm_create() builds, none across the hole. */
	FUZZ_CHECK(hv_vm_slot_geometry(c->mem_bytes, c->slot_bytes, 0, NULL,
				       NULL) == l->n_slots);
	for (size_t i = 0; i < l->n_slots; i++) {
		gfn_t g = 0;
		uint64_t np = 0, a, e;

		hv_vm_slot_geometry(c->mem_bytes, c->slot_bytes, (unsigned)i,
				    &g, &np);
		FUZZ_CHECK(l->slots[i]->base_gfn == g &&
			   l->slots[i]->npages == np);
		a = g << HV_PAGE_SHIFT;
		e = a + (np << HV_PAGE_SHIFT);
		FUZZ_CHECK(e <= HV_RAM_HOLE_START || a >= HV_RAM_HOLE_END);
	}
	FUZZ_CHECK(!l->name || !*l->name || mig_vm_name_valid(l->name));
}

static void check_one(const Mig__VmLayout *l, const struct hv_vm_cfg *base)
{
	struct hv_vm_cfg cfg;
	char why[128];
	int ret;

	memset(why, 0x7f, sizeof(why));
	ret = mig_layout_to_cfg(l, base, &cfg, why, sizeof(why));
	if (ret) {
		FUZZ_CHECK(ret > 0 &&
			   protobuf_c_enum_descriptor_get_value(
				   &mig__refuse_reason__descriptor, ret));
		FUZZ_CHECK(memchr(why, 0, sizeof(why)) && why[0]);
		return;
	}
	check_accepted(l, &cfg);
	if (base)
		FUZZ_CHECK(cfg.accel == base->accel &&
			   cfg.backing == base->backing);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_frame_hdr h;
	ProtobufCMessage *msg = NULL;
	struct hv_vm_cfg base;
	size_t used;

	if (mig_frame_decode(data, size, &h, &msg, &used))
		return 0;
	if (h.type == MIG__MSG_TYPE__MSG_SETUP) {
		const Mig__VmLayout *l = (const Mig__VmLayout *)msg;

		check_one(l, NULL);
		hv_vm_cfg_init(&base, HV_ACCEL_SOFT, HV_VM_MIN_MEM, 1);
		check_one(l, &base);
	}
	mig_frame_msg_free(msg);
	return 0;
}
