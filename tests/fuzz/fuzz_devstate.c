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
 * Byte-level mutation of a protobuf rarely changes the length of a
 * field nested in a message (the enclosing lengths must change with it),
 * nor adds a queue or a device, the very things the decoder must check.
 * So three times in four the mutator (LLVMFuzzerCustomMutator) unpacks
 * the DevState, changes one field of one of its messages -- a number set
 * to an edge value (0, 15..17, 255, 256, 65535, 65536, 2^32 - 1, ...), a
 * byte string mutated to another length, a repeated message grown by
 * copies or shrunk, a nested message dropped -- and packs it again.
 * With a deliberately weakened check (the UART FIFO's 16 bytes read as
 * 64) a run finds it quickly.
 *
 * Promises checked besides ASan/UBSan: the input is read from an
 * allocation of exactly its size and the snapshot written into one of
 * exactly hv_kvm_dev_state_snap_size() bytes (so an over-read or an
 * over-write is an ASan report); the result is 0 or -EINVAL; an empty
 * or oversized blob is refused; decoding is deterministic (the same
 * input decodes to the same snapshot, byte for byte, or fails the same);
 * an accepted snapshot keeps every count (devices, FIFO and queue bytes,
 * queues, MSI-X vectors) within its array (hv_kvm_dev_state_snap_ok():
 * an overflow inside the snapshot is no ASan report).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/kvm/kvm_priv.h"
#include "proto/vmstate.pb-c.h"
#include "tests/fuzz/fuzz_common.h"

/* DEV_STATE_MAX of kvm_devstate.c. */
#define FUZZ_DEVSTATE_MAX (256u << 10)

#define MUT_MSGS 256u

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed);

static const uint64_t edges[] = {
	0,	    1,	     2,		 4,	      6,
	7,	    8,	     15,	 16,	      17,
	31,	    32,	     255,	 256,	      4096,
	0xffff,	    0x10000, 0x7fffffff, 0xffffffffu, 0x100000000ull,
	UINT64_MAX,
};

/* Every message of the tree under @m, depth first, into @out. */
static void collect(ProtobufCMessage *m, ProtobufCMessage **out, unsigned *n)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (*n >= MUT_MSGS)
		return;
	out[(*n)++] = m;
	for (unsigned f = 0; f < d->n_fields; f++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[f];
		char *base = (char *)m + fd->offset;

		if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t k =
				*(size_t *)((char *)m + fd->quantifier_offset);
			ProtobufCMessage **a = *(ProtobufCMessage ***)base;

			for (size_t i = 0; i < k; i++)
				collect(a[i], out, n);
		} else if (*(ProtobufCMessage **)base) {
			collect(*(ProtobufCMessage **)base, out, n);
		}
	}
}

/* What one mutation changed, to put back before the message is freed. */
struct undo {
	void *at[2];
	uint8_t old[2][sizeof(void *)];
	size_t len[2];
	void *mem; /* a buffer of the mutation's */
};

static void save(struct undo *u, unsigned i, void *at, size_t len)
{
	u->at[i] = at;
	u->len[i] = len;
	memcpy(u->old[i], at, len);
}

/* Change field @fd of @m as @r says. */
static void mutate_field(ProtobufCMessage *m,
			 const ProtobufCFieldDescriptor *fd, unsigned r,
			 struct undo *u)
{
	char *at = (char *)m + fd->offset;
	uint64_t v = edges[r % (sizeof(edges) / sizeof(edges[0]))];

	if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
		size_t *np = (size_t *)((char *)m + fd->quantifier_offset);
		void **a = *(void ***)at, **b;
		size_t n = *np, k;

		if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
			return;
		save(u, 0, np, sizeof(*np));
		if (n && r / 32 % 3 == 0) { /* shrink */
			*np = r / 96 % n;
			return;
		}
		if (!n)
			return;
		/* Grow by copies of one element: past the caps too. */
		k = n + 1 + r / 96 % 16;
		b = malloc(k * sizeof(*b));
		FUZZ_CHECK(b);
		for (size_t i = 0; i < k; i++)
			b[i] = a[i < n ? i : r / 7 % n];
		save(u, 1, at, sizeof(b));
		u->mem = b;
		*(void ***)at = b;
		*np = k;
		return;
	}
	switch (fd->type) {
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_INT32:
		*(uint32_t *)at = (uint32_t)(r & 64 ? v + (r >> 8) % 3 - 1 : v);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_INT64:
		*(uint64_t *)at = r & 64 ? v + (r >> 8) % 3 - 1 : v;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)at = !*(protobuf_c_boolean *)at;
		break;
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = (ProtobufCBinaryData *)at;
		size_t cap = b->len * 2 + 64;
		uint8_t *p = malloc(cap);

		FUZZ_CHECK(p);
		if (b->len)
			memcpy(p, b->data, b->len);
		save(u, 0, &b->data, sizeof(b->data));
		save(u, 1, &b->len, sizeof(b->len));
		u->mem = p;
		b->len = LLVMFuzzerMutate(p, b->len, cap);
		b->data = p;
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: /* a nested one, gone */
		save(u, 0, at, sizeof(void *));
		*(void **)at = NULL;
		break;
	default:
		break;
	}
}

/*
 * One time in four, or when @data is not a DevState, mutate the bytes
 * as they are; otherwise one field of one message inside, repacked.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed)
{
	ProtobufCMessage *all[MUT_MSGS], *m;
	Hvstate__DevState *ds = NULL;
	struct undo u = {0};
	unsigned n = 0;
	size_t out;

	if (seed % 4)
		ds = hvstate__dev_state__unpack(NULL, size, data);
	if (!ds)
		return LLVMFuzzerMutate(data, size, max);
	collect(&ds->base, all, &n);
	m = all[seed / 4 % n];
	if (m->descriptor->n_fields)
		mutate_field(m,
			     &m->descriptor->fields[seed / 1024 %
						    m->descriptor->n_fields],
			     seed / 16, &u);
	out = hvstate__dev_state__get_packed_size(ds);
	if (out && out <= max)
		hvstate__dev_state__pack(ds, data);
	else
		out = LLVMFuzzerMutate(data, size, max);
	for (unsigned i = 2; i-- > 0;)
		if (u.at[i])
			memcpy(u.at[i], u.old[i], u.len[i]);
	free(u.mem);
	hvstate__dev_state__free_unpacked(ds, NULL);
	return out;
}

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
		FUZZ_CHECK(!memcmp(a, b, ss) && hv_kvm_dev_state_snap_ok(a));
	free(in);
	free(a);
	free(b);
	return 0;
}
