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
 * For the same reason the mutator mostly mutates one component's bytes
 * inside the VmState (LLVMFuzzerCustomMutator below) rather than the
 * wrapper: byte-level mutation of the whole blob rarely changes the
 * length of a component, the very thing its decoder must check.
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

static uint64_t state_digest(const Hvstate__VmState *m)
{
	uint64_t h = fnv1a(0xcbf29ce484222325ULL, m->vm.data, m->vm.len);

	for (size_t i = 0; i < m->n_vcpus; i++)
		h = fnv1a(h, m->vcpus[i].data, m->vcpus[i].len);
	return fnv1a(h, m->devices.data, m->devices.len);
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed);

/*
 * One time in four, or when @data is not a VmState, mutate the bytes as
 * they are; otherwise mutate one component (the VM's or a vCPU's) and
 * write the VmState back with its digest right.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed)
{
	Hvstate__VmState *m = NULL;
	ProtobufCBinaryData *c, saved;
	size_t len = 0, out;
	uint8_t *buf;

	if (seed % 4)
		m = hvstate__vm_state__unpack(NULL, size, data);
	if (!m)
		return LLVMFuzzerMutate(data, size, max);
	c = seed / 4 % (m->n_vcpus + 1)
		    ? &m->vcpus[seed / 4 % (m->n_vcpus + 1) - 1]
		    : &m->vm;
	buf = malloc(max);
	FUZZ_CHECK(buf);
	if (c->len <= max) {
		if (c->len)
			memcpy(buf, c->data, c->len);
		len = LLVMFuzzerMutate(buf, c->len, max);
	}
	saved = *c;
	c->data = buf;
	c->len = len;
	m->digest = state_digest(m);
	out = hvstate__vm_state__get_packed_size(m);
	if (out <= max)
		hvstate__vm_state__pack(m, data);
	else
		out = LLVMFuzzerMutate(data, size, max);
	*c = saved;
	free(buf);
	hvstate__vm_state__free_unpacked(m, NULL);
	return out;
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
	/* Both FPU formats: an XSAVE host's and one without XSAVE. */
	static const struct x86_fpu_caps fpus[] = {
		{.xsave = true, .xcrs = true},
		{.xsave = false, .xcrs = false},
	};
	int ret = x86_vm_state_restore(-1, -1, &b);

	FUZZ_CHECK(ret == -EINVAL || ret == -EBADF);
	for (size_t i = 0; i < m->n_vcpus; i++) {
		b = (struct hv_blob){m->vcpus[i].data, m->vcpus[i].len};
		for (size_t f = 0; f < HV_ARRAY_SIZE(fpus); f++) {
			ret = x86_vcpu_state_restore(-1, (uint32_t)i, &fpus[f],
						     &b);
			FUZZ_CHECK(ret == -EINVAL || ret == -EBADF);
		}
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

	restore(data, size);
	m = hvstate__vm_state__unpack(NULL, size, data);
	if (!m)
		return 0;
	x86_components(m);
	m->digest = state_digest(m);
	len = hvstate__vm_state__get_packed_size(m);
	again = malloc(len ? len : 1);
	FUZZ_CHECK(again);
	FUZZ_CHECK(hvstate__vm_state__pack(m, again) == len);
	restore(again, len);
	free(again);
	hvstate__vm_state__free_unpacked(m, NULL);
	return 0;
}
