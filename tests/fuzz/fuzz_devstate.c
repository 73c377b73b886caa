// SPDX-License-Identifier: MIT
/*
 * Target: the device state decoder of a KVM Linux guest,
 * hv_kvm_dev_state_decode() (hvcore/kvm/kvm_devstate.c): the DevState
 * component of a VM state (proto/vmstate.proto) that a migration's
 * destination, a local live update's new worker and a snapshot restore
 * read: the UART, the i8042 and every virtio-pci device with its queues
 * and MSI-X table. The decoder touches no device, so no VM is needed.
 *
 * Input: the DevState blob as it is (the seeds are real blobs from
 * hv_kvm_dev_state_encode() over devices on a fake VM, seedgen.c).
 *
 * Promises checked besides ASan/UBSan: the input is read from an
 * allocation of exactly its size and the snapshot written into one of
 * exactly hv_kvm_dev_state_snap_size() bytes (so an over-read or an
 * over-write is an ASan report); the result is 0 or -EINVAL; an empty
 * or oversized blob is refused; decoding is deterministic (the same
 * input decodes to the same snapshot, byte for byte, or fails the same).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/kvm/kvm_priv.h"
#include "tests/fuzz/fuzz_common.h"

/* DEV_STATE_MAX of kvm_devstate.c. */
#define FUZZ_DEVSTATE_MAX (256u << 10)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ss = hv_kvm_dev_state_snap_size();
	uint8_t *in = malloc(size ? size : 1);
	uint8_t *a = malloc(ss), *b = malloc(ss);
	struct hv_blob blob;
	int r1, r2;

	FUZZ_CHECK(in && a && b);
	if (size)
		memcpy(in, data, size);
	blob.data = in;
	blob.len = size;
	memset(a, 0xa5, ss);
	memset(b, 0x5a, ss);
	r1 = hv_kvm_dev_state_decode(&blob, a);
	FUZZ_CHECK(r1 == 0 || r1 == -EINVAL);
	if (!size || size > FUZZ_DEVSTATE_MAX)
		FUZZ_CHECK(r1 == -EINVAL);
	r2 = hv_kvm_dev_state_decode(&blob, b);
	FUZZ_CHECK(r2 == r1);
	/* The decoder clears the whole snapshot first, so padding too
	 * compares equal. */
	if (!r1)
		FUZZ_CHECK(!memcmp(a, b, ss));
	free(in);
	free(a);
	free(b);
	return 0;
}
