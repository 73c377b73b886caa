// SPDX-License-Identifier: MIT
/*
 * Target: the VM state a destination loads (proto/vmstate.proto): the
 * VmState wrapper and its checks in hv_vm_state_restore() (hvcore/vm.c),
 * the soft accelerator's VM and vCPU components behind it, and the KVM x86
 * components' decoders (arch/x86/x86_state.c).
 *
 * The input is the state blob a MSG_VM_STATE envelope carries. It is
 * loaded as it is, and, when it unpacks as a VmState, a second time with
 * its FNV-1a digest recomputed -- a fuzzer would almost never guess the
 * digest, and without this it would not get past it to the components.
 *
 * The x86 decoders run on file descriptor -1: they unpack and validate the
 * whole message before their first ioctl, which then fails with -EBADF.
 * That keeps the fuzzer off the host's KVM while it still covers all the
 * parsing and every length check of the x86 components.
 *
 * Promises checked: a restore returns 0 or -EINVAL; the x86 decoders
 * return -EINVAL or, for a message that passed validation, -EBADF.
 */
#include <errno.h>
#include <string.h>

#include "arch/x86/x86_vcpu.h"
#include "hvcore/vm.h"
#include "proto/vmstate.pb-c.h"
#include "tests/fuzz/fuzz_common.h"

#define NR_VCPUS 2u

static struct hv_vm *vm;

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void restore(const uint8_t *data, size_t size)
{
	struct hv_blob in = {(uint8_t *)data, size};
	int ret = hv_vm_state_restore(vm, &in);

	FUZZ_CHECK(ret == 0 || ret == -EINVAL);
}

/* The x86 decoders, on the components of @m. */
static void x86_components(const Hvstate__VmState *m)
{
	struct hv_blob b = {m->vm.data, m->vm.len};
	int ret = x86_vm_state_restore(-1, -1, &b);

	FUZZ_CHECK(ret == -EINVAL || ret == -EBADF);
	for (size_t i = 0; i < m->n_vcpus; i++) {
		b = (struct hv_blob){m->vcpus[i].data, m->vcpus[i].len};
		ret = x86_vcpu_state_restore(-1, (uint32_t)i, 4096, &b);
		FUZZ_CHECK(ret == -EINVAL || ret == -EBADF);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct hv_vm_cfg cfg;

	fuzz_quiet_logs();
	hv_vm_cfg_init(&cfg, HV_ACCEL_SOFT, HV_VM_MIN_MEM, NR_VCPUS);
	FUZZ_CHECK(hv_vm_create(&cfg, &vm) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Hvstate__VmState *m;
	uint8_t *again;
	size_t len;
	uint64_t h;

	restore(data, size);
	m = hvstate__vm_state__unpack(NULL, size, data);
	if (!m)
		return 0;
	x86_components(m);
	h = fnv1a(0xcbf29ce484222325ULL, m->vm.data, m->vm.len);
	for (size_t i = 0; i < m->n_vcpus; i++)
		h = fnv1a(h, m->vcpus[i].data, m->vcpus[i].len);
	m->digest = h;
	len = hvstate__vm_state__get_packed_size(m);
	again = malloc(len ? len : 1);
	FUZZ_CHECK(again);
	FUZZ_CHECK(hvstate__vm_state__pack(m, again) == len);
	restore(again, len);
	free(again);
	hvstate__vm_state__free_unpacked(m, NULL);
	return 0;
}
