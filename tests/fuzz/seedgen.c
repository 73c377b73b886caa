// SPDX-License-Identifier: MIT
/*
 * fuzz_seedgen OUTDIR: write the seed corpus of every fuzz target into
 * OUTDIR/<target>/ from real messages, made by the project's own encoders
 * (mig_frame_encode, mig_batch_encode, mig_hello_send over a loopback
 * connection, mig_layout_build and hv_vm_state_save on real VMs,
 * migd_frame_pack), so that the seeds follow the wire when it changes.
 * Deterministic except for the host name a Hello carries and the KVM
 * state (only when /dev/kvm is there). tools/fuzz.sh runs it before each
 * run; tests/fuzz/corpus/ keeps a copy and the regression inputs.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include "hvcore/console.h"
#include "hvcore/devices/i8042.h"
#include "hvcore/devices/uart16550.h"
#include "hvcore/kvm/kvm_pci.h"
#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/vm.h"
#include "proto/vmstate.pb-c.h"
#include "migrated/rpc/ctl_frame.h"
#include "migrated/mig/batch.h"
#include "migrated/mig/delta.h"
#include "migrated/mig/conn.h"
#include "migrated/mig/handshake.h"
#include "migrated/mig/layout.h"
#include "proto/control.pb-c.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/unit/hvcore/devices/fake_env.h"

static const char *outdir;
static unsigned nr_seeds;

static const uint8_t sid[MIG_SESSION_ID_LEN] = {
	0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
};

static void seed(const char *target, const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		FUZZ_CHECK(!"mkdir");
	snprintf(path, sizeof(path), "%s/%s/seed-%s", outdir, target, name);
	f = fopen(path, "wb");
	FUZZ_CHECK(f);
	FUZZ_CHECK(fwrite(p, 1, n, f) == n || n == 0);
	FUZZ_CHECK(fclose(f) == 0);
	nr_seeds++;
}

/* A growing byte string, for streams of several frames. */
struct bytes {
	uint8_t *p;
	size_t len;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	b->p = realloc(b->p, b->len + n + 1);
	FUZZ_CHECK(b->p);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Encode one frame of @type and append it to @b. */
static void frame(struct bytes *b, unsigned type, const ProtobufCMessage *m)
{
	size_t len = mig_frame_size(m);
	uint8_t *buf = malloc(len);

	FUZZ_CHECK(buf);
	FUZZ_CHECK(mig_frame_encode(type, m, buf, len, &len) == 0);
	put(b, buf, len);
	free(buf);
}

static void frame_seed(const char *target, const char *name, unsigned type,
		       const ProtobufCMessage *m)
{
	struct bytes b = {0};

	frame(&b, type, m);
	seed(target, name, b.p, b.len);
	free(b.p);
}

/* ---- page batches --------------------------------------------------- */

/* Page contents: zero, text-like (compresses), or noise (does not). */
static void fill_pages(struct mig_memmap_slot *s)
{
	uint32_t x = 2463534242u;

	for (uint64_t i = 0; i < s->npages; i++) {
		uint8_t *p = s->host + i * HV_PAGE_SIZE;

		if (i % 5 == 0)
			continue;
		for (size_t j = 0; j < HV_PAGE_SIZE; j++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			p[j] = i % 5 == 1 ? (uint8_t)x
					  : (uint8_t)("migrated "[j % 9] + i);
		}
	}
}

static void batch_seed(struct mig_batch_enc *enc, const struct mig_memmap *map,
		       const char *name, uint32_t slot, gfn_t gfn,
		       uint64_t mask, struct bytes *stream)
{
	const uint8_t *f;
	size_t len;

	FUZZ_CHECK(mig_batch_encode(enc, map, slot, gfn, mask, &f, &len,
				    NULL) == 0);
	seed("batch", name, f, len);
	if (stream)
		put(stream, f, len);
}

/*
 * Batches with deltas whose base is the page fuzz_batch.c keeps between
 * inputs (zeros and a sentinel in the first and last word), so the
 * fuzzer reaches the apply path while it mutates the runs.
 */
static void delta_batches(void)
{
	struct mig_batch_enc_cfg raw_cfg = {
		.encoding = MIG__ENCODING__ENCODING_RAW};
	struct mig_memmap_slot slots[FUZZ_NR_SLOTS];
	struct mig_batch_enc *enc[2];
	struct mig_delta_cache *cache;
	struct mig_memmap *map;
	const uint8_t *f;
	size_t len;

	fuzz_slots_map(slots);
	FUZZ_CHECK(mig_memmap_create(slots, FUZZ_NR_SLOTS, &map) == 0);
	FUZZ_CHECK(mig_batch_enc_create(NULL, &enc[0]) == 0);
	FUZZ_CHECK(mig_batch_enc_create(&raw_cfg, &enc[1]) == 0);
	for (unsigned e = 0; e < 2; e++) {
		FUZZ_CHECK(mig_delta_cache_create(1 << 20, 4096, &cache) == 0);
		FUZZ_CHECK(mig_batch_enc_set_delta(enc[e], cache, true) == 0);
		for (unsigned i = 0; i < 8; i++) {
			uint8_t *p = slots[0].host + (4 + i) * HV_PAGE_SIZE;
			uint64_t sentinel = 0x5a5aa5a5c3c33c3cull;

			memset(p, 0, HV_PAGE_SIZE);
			memcpy(p, &sentinel, 8);
			memcpy(p + HV_PAGE_SIZE - 8, &sentinel, 8);
		}
		FUZZ_CHECK(mig_batch_encode(enc[e], map, FUZZ_SLOT_A_ID, 4,
					    0xff, &f, &len, NULL) == 0);
		/* Small edits, one page rewritten, one gone zero. */
		for (unsigned i = 0; i < 8; i++) {
			uint8_t *p = slots[0].host + (4 + i) * HV_PAGE_SIZE;

			memset(p + 64 * i + 8, 'a' + (int)i, 5 + i);
			if (i == 3)
				memset(p, 'z', HV_PAGE_SIZE);
			if (i == 6)
				memset(p, 0, HV_PAGE_SIZE);
		}
		FUZZ_CHECK(mig_batch_encode(enc[e], map, FUZZ_SLOT_A_ID, 4,
					    0xff, &f, &len, NULL) == 0);
		seed("batch", e ? "delta-raw" : "delta-zstd", f, len);
		mig_batch_enc_set_delta(enc[e], NULL, false);
		mig_delta_cache_destroy(cache);
	}
	mig_batch_enc_destroy(enc[0]);
	mig_batch_enc_destroy(enc[1]);
	mig_memmap_destroy(map);
}

/*
 * A raw batch made by hand: the encoder never makes one with a page mask
 * reaching outside its window, so the edges of the window come from here.
 * The payload is @mask's non-zero pages, filled with one byte.
 */
static void edge_seed(const char *name, uint32_t slot, gfn_t gfn,
		      uint32_t npages, uint64_t mask, uint64_t zero)
{
	Mig__PageBatch b = MIG__PAGE_BATCH__INIT;
	size_t plen = (size_t)__builtin_popcountll(mask & ~zero) * HV_PAGE_SIZE;
	struct bytes out = {0};
	uint8_t *payload = malloc(plen + 1);

	FUZZ_CHECK(payload);
	memset(payload, 0x3c, plen);
	b.slot = slot;
	b.first_gfn = gfn;
	b.npages = npages;
	b.page_mask = mask;
	b.zero_mask = zero;
	b.encoding = MIG__ENCODING__ENCODING_RAW;
	b.payload_len = (uint32_t)plen;
	frame(&out, MIG__MSG_TYPE__MSG_PAGE_BATCH, &b.base);
	put(&out, payload, plen);
	seed("batch", name, out.p, out.len);
	free(out.p);
	free(payload);
}

/*
 * The last bit of a window and the one after it (bit npages, which a
 * decoder must refuse, -EPROTO, and not write), where the window ends
 * with its slot: the bit after it is the guard page. A check widened by
 * one page went unseen by the fuzzer in 10 s runs; as seeds, every run
 * starts with them.
 */
static void edge_batches(void)
{
	const gfn_t a_end = FUZZ_SLOT_A_GFN + FUZZ_SLOT_A_PAGES;
	const gfn_t b_end = FUZZ_SLOT_B_GFN + FUZZ_SLOT_B_PAGES;

	edge_seed("edge-last-bit", FUZZ_SLOT_B_ID, b_end - 4, 4, 1ull << 3, 0);
	edge_seed("edge-bit-npages", FUZZ_SLOT_B_ID, b_end - 4, 4, 0x1f, 0);
	edge_seed("edge-zero-bit-npages", FUZZ_SLOT_A_ID, a_end - 1, 1,
		  1ull << 1, 1ull << 1);
	edge_seed("edge-bit-63", FUZZ_SLOT_A_ID, a_end - 63, 63,
		  1ull << 63 | 1ull, 0);
	edge_seed("edge-bit-npages-inside", FUZZ_SLOT_A_ID, FUZZ_SLOT_A_GFN + 8,
		  8, 1ull << 8, 0);
}

static void batches(struct bytes *stream)
{
	struct mig_batch_enc_cfg raw_cfg = {
		.encoding = MIG__ENCODING__ENCODING_RAW};
	struct mig_memmap_slot slots[FUZZ_NR_SLOTS];
	struct mig_batch_enc *zstd, *raw;
	struct mig_memmap *map;

	fuzz_slots_map(slots);
	for (unsigned i = 0; i < FUZZ_NR_SLOTS; i++)
		fill_pages(&slots[i]);
	FUZZ_CHECK(mig_memmap_create(slots, FUZZ_NR_SLOTS, &map) == 0);
	FUZZ_CHECK(mig_batch_enc_create(NULL, &zstd) == 0);
	FUZZ_CHECK(mig_batch_enc_create(&raw_cfg, &raw) == 0);
	/* Text pages 2, 3, 4 and zero page 5 of slot A: zstd. */
	batch_seed(zstd, map, "zstd", FUZZ_SLOT_A_ID, 2, 0xf, stream);
	/* All 64 pages of a window, every kind: zstd with a zero mask. */
	batch_seed(zstd, map, "zstd-64", FUZZ_SLOT_A_ID, 20, ~0ull, NULL);
	batch_seed(raw, map, "raw", FUZZ_SLOT_B_ID, FUZZ_SLOT_B_GFN + 3, 0x15,
		   stream);
	batch_seed(raw, map, "raw-sparse", FUZZ_SLOT_B_ID, FUZZ_SLOT_B_GFN + 16,
		   0x8000000100000003ull, NULL);
	/* Only zero pages: a mask and no payload at all. */
	batch_seed(zstd, map, "zero", FUZZ_SLOT_A_ID, 0, 1ull << 0 | 1ull << 5,
		   NULL);
	/* Noise pages only: zstd does not pay, the encoder sends raw. */
	batch_seed(zstd, map, "noise", FUZZ_SLOT_A_ID, 1, 1ull | 1ull << 5,
		   NULL);
	mig_batch_enc_destroy(zstd);
	mig_batch_enc_destroy(raw);
	mig_memmap_destroy(map);
	delta_batches();
	edge_batches();
}

/* ---- hello, captured off a real connection ---------------------------- */

static void hello_capture(const char *name, uint32_t version, unsigned role,
			  uint32_t index, uint32_t nr, struct bytes *stream)
{
	struct mig_conn *cli = NULL, *srv = NULL;
	uint8_t hdr[MIG_FRAME_HDR_SIZE], *buf;
	struct mig_frame_hdr h;
	uint16_t port;
	int lfd;

	FUZZ_CHECK(mig_listen("127.0.0.1", 0, &lfd, &port) == 0);
	FUZZ_CHECK(mig_conn_connect("127.0.0.1", port, NULL, 5000, &cli) == 0);
	FUZZ_CHECK(mig_conn_accept(lfd, NULL, 5000, &srv) == 0);
	FUZZ_CHECK(mig_hello_send(cli, version, role, sid, index, nr) == 0);
	FUZZ_CHECK(mig_conn_read(srv, hdr, sizeof(hdr)) == 0);
	FUZZ_CHECK(mig_frame_hdr_decode(hdr, &h) == 0);
	buf = malloc(sizeof(hdr) + h.len);
	FUZZ_CHECK(buf);
	memcpy(buf, hdr, sizeof(hdr));
	FUZZ_CHECK(mig_conn_read(srv, buf + sizeof(hdr), h.len) == 0);
	seed("hello", name, buf, sizeof(hdr) + h.len);
	if (stream)
		put(stream, buf, sizeof(hdr) + h.len);
	free(buf);
	mig_conn_destroy(cli);
	mig_conn_destroy(srv);
	close(lfd);
}

/* A Hello the receiver must refuse, one broken rule each. */
static void bad_hello(const char *name, unsigned role, size_t sid_len,
		      uint32_t index, uint32_t nr)
{
	Mig__Hello h = MIG__HELLO__INIT;

	h.version_min = MIG_FRAME_VERSION_MIN;
	h.version_max = MIG_FRAME_VERSION;
	h.role = (Mig__Role)role;
	h.session_id.data = (uint8_t *)sid;
	h.session_id.len = sid_len;
	h.channel_index = index;
	h.nr_channels = nr;
	h.host_id = "src";
	frame_seed("hello", name, MIG__MSG_TYPE__MSG_HELLO, &h.base);
}

static void hellos(struct bytes *stream)
{
	Mig__SetupRefuse r = MIG__SETUP_REFUSE__INIT;
	Mig__Abort a = MIG__ABORT__INIT;

	hello_capture("control", 0, MIG__ROLE__ROLE_CONTROL, 0, 4, stream);
	hello_capture("data", 0, MIG__ROLE__ROLE_DATA, 3, 4, NULL);
	hello_capture("answer", MIG_FRAME_VERSION, MIG__ROLE__ROLE_CONTROL, 0,
		      4, NULL);
	/* A long run kept none of these (docs/fuzzing.md): seed them. */
	bad_hello("bad-role", 7, MIG_SESSION_ID_LEN, 0, 1);
	bad_hello("bad-sid", MIG__ROLE__ROLE_DATA, 8, 0, 1);
	bad_hello("bad-no-channels", MIG__ROLE__ROLE_DATA, MIG_SESSION_ID_LEN,
		  0, 0);
	bad_hello("bad-17-channels", MIG__ROLE__ROLE_DATA, MIG_SESSION_ID_LEN,
		  0, 17);
	bad_hello("bad-index", MIG__ROLE__ROLE_DATA, MIG_SESSION_ID_LEN, 4, 4);
	bad_hello("bad-control-index", MIG__ROLE__ROLE_CONTROL,
		  MIG_SESSION_ID_LEN, 1, 4);
	/* What a refusing destination answers instead of a Hello. */
	r.reason = MIG__REFUSE_REASON__REFUSE_VERSION;
	r.detail = "no common stream version";
	frame_seed("hello", "refuse", MIG__MSG_TYPE__MSG_SETUP_REFUSE, &r.base);
	a.reason = MIG__ABORT_REASON__ABORT_CANCELLED;
	a.detail = "cancelled";
	frame_seed("hello", "abort", MIG__MSG_TYPE__MSG_ABORT, &a.base);
}

/* ---- layouts and VM state, from real VMs ------------------------------ */

static struct hv_vm *vm_new(enum hv_accel_kind accel, uint64_t mem,
			    uint64_t slot_bytes, uint32_t nr_vcpus)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	hv_vm_cfg_init(&cfg, accel, mem, nr_vcpus);
	cfg.slot_bytes = slot_bytes;
	if (hv_vm_create(&cfg, &vm))
		return NULL;
	return vm;
}

static void layout_seed(struct hv_vm *vm, const char *vmname, const char *name,
			struct bytes *stream)
{
	Mig__VmLayout *l;

	FUZZ_CHECK(mig_layout_build(vm, vmname, &l) == 0);
	frame_seed("layout", name, MIG__MSG_TYPE__MSG_SETUP, &l->base);
	if (stream)
		frame(stream, MIG__MSG_TYPE__MSG_SETUP, &l->base);
	mig_layout_free(l);
}

static void state_seed(struct hv_vm *vm, const char *name, struct bytes *stream)
{
	Mig__VmStateEnvelope env = MIG__VM_STATE_ENVELOPE__INIT;
	struct hv_blob st = {0};

	FUZZ_CHECK(hv_vm_state_save(vm, &st) == 0);
	seed("vmstate", name, st.data, st.len);
	if (stream) {
		env.format = 1;
		env.state.data = st.data;
		env.state.len = st.len;
		frame(stream, MIG__MSG_TYPE__MSG_VM_STATE, &env.base);
	}
	free(st.data);
}

static void vms(struct bytes *stream)
{
	/* The fuzz_vmstate target loads into a soft VM of this shape. */
	struct hv_vm *soft = vm_new(HV_ACCEL_SOFT, HV_VM_MIN_MEM, 0, 2);
	struct hv_vm *slots = vm_new(HV_ACCEL_SOFT, 32ull << 20, 4ull << 20, 3);
	struct hv_vm *kvm = NULL;

	FUZZ_CHECK(soft && slots);
	layout_seed(soft, "", "one-slot", stream);
	layout_seed(slots, "web-01.eu_west", "slots-named", NULL);
	state_seed(soft, "soft", stream);
	/* KVM's components (X86VmState, X86VcpuState) when it is there. */
	if (!access("/dev/kvm", R_OK | W_OK))
		kvm = vm_new(HV_ACCEL_KVM, HV_VM_MIN_MEM, 0, 2);
	if (kvm) {
		layout_seed(kvm, "kvm-vm", "kvm", NULL);
		state_seed(kvm, "kvm", NULL);
	} else {
		fprintf(stderr, "seedgen: no KVM VM: no kvm seeds\n");
	}
	hv_vm_destroy(kvm);
	hv_vm_destroy(slots);
	hv_vm_destroy(soft);
}

/* ---- a KVM Linux guest's devices (DevState) ----------------------------- */

static void no_reset(void *arg)
{
	(void)arg;
}

/* Encode @d as the KVM accelerator does; with @edit, unpack, let it
 * change the message (a NIC's MAC, a driver's queues), pack again. */
static void devstate_seed(const struct hv_kvm_linux_devs *d, const char *name,
			  void (*edit)(Hvstate__DevState *m))
{
	struct hv_blob b = {0};
	Hvstate__DevState *m;

	void *snap = malloc(hv_kvm_dev_state_snap_size());

	FUZZ_CHECK(snap && hv_kvm_dev_state_encode(d, &b) == 0);
	if (edit) {
		m = hvstate__dev_state__unpack(NULL, b.len, b.data);
		FUZZ_CHECK(m);
		edit(m);
		free(b.data);
		b.len = hvstate__dev_state__get_packed_size(m);
		b.data = malloc(b.len);
		FUZZ_CHECK(b.data);
		hvstate__dev_state__pack(m, b.data);
		hvstate__dev_state__free_unpacked(m, NULL);
	}
	/* A seed the decoder refuses would start the fuzzer nowhere. */
	FUZZ_CHECK(hv_kvm_dev_state_decode(&b, snap) == 0);
	seed("devstate", name, b.data, b.len);
	free(snap);
	free(b.data);
}

/* The last device a NIC (as a tap's would be; no tap here). */
static void edit_net(Hvstate__DevState *m)
{
	static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x77, 0x00, 0x02};
	Hvstate__VirtioPciState *v = m->virtio[m->n_virtio - 1];

	v->type = 1; /* VIRTIO_ID_NET */
	/* Freed with the unpacked message. */
	v->net_mac.data = malloc(6);
	FUZZ_CHECK(v->net_mac.data);
	memcpy(v->net_mac.data, mac, 6);
	v->net_mac.len = 6;
	v->net_status = 1;
}

/* A driver that set the devices up: DRIVER_OK, MSI-X on, every queue
 * enabled with its rings in RAM and some progress. */
static void edit_driver(Hvstate__DevState *m)
{
	for (size_t i = 0; i < m->n_virtio; i++) {
		Hvstate__VirtioPciState *v = m->virtio[i];

		v->status = 0x0f;
		v->driver_features = 1ull << 32 | 1ull << 28 | 1ull << 29;
		v->msix_enabled = true;
		v->msix_config = 0;
		for (size_t k = 0; k < v->n_msix; k++) {
			v->msix[k]->addr_lo = 0xfee00000u;
			v->msix[k]->data = 0x4021 + (uint32_t)k;
			v->msix[k]->ctrl = 0;
		}
		for (size_t q = 0; q < v->n_queues; q++) {
			Hvstate__VirtqState *x = v->queues[q];

			x->size = 256;
			x->msix = (uint32_t)q + 1;
			x->enabled = true;
			x->desc = 0x100000 + 0x4000 * (q + 4 * i);
			x->avail = x->desc + 0x1000;
			x->used = x->desc + 0x2000;
			x->last_avail = 17 + (uint32_t)q;
			x->used_idx = 17 + (uint32_t)q;
			x->signalled_used = 16;
			x->signalled_valid = true;
		}
	}
}

static void devstates(void)
{
	struct fake_vm *vm = fake_vm_new();
	struct hv_iobus *pio = NULL, *mmio = NULL;
	struct hv_kvm_pci_disk disk[2];
	struct hv_kvm_pci_cfg c = {0};
	struct hv_kvm_linux_devs d = {0};
	struct hv_console *con = NULL;
	struct hv_uart_state us = {.ier = 0x0f,
				   .lcr = 0x03,
				   .mcr = 0x0b,
				   .fcr = 0xc1,
				   .dll = 1,
				   .thri_pending = true,
				   .rx = "ls\r",
				   .rx_len = 3};
	struct hv_i8042_state ks = {.status = 0x1d,
				    .ctr = 0x47,
				    .outport = 0x03,
				    .out = {0xfa, 0xaa},
				    .out_len = 2};
	char img[64];
	int fd;

	snprintf(img, sizeof(img), "/tmp/fuzz_seedgen.%d.img", (int)getpid());
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	FUZZ_CHECK(fd >= 0 && !ftruncate(fd, 8 << 20));
	close(fd);
	FUZZ_CHECK(!hv_iobus_create(&pio) && !hv_iobus_create(&mmio));
	FUZZ_CHECK(!hv_console_create(0, NULL, false, &con));
	FUZZ_CHECK(!hv_uart_create(&vm->env, 4, con, &d.uart));
	FUZZ_CHECK(!hv_i8042_create(&vm->env, no_reset, NULL, &d.i8042));
	/* The bus alone, then two disks (one read-only) and the rng. */
	FUZZ_CHECK(!hv_kvm_pci_create("seed", &c, pio, mmio, &vm->env, &d.pci));
	devstate_seed(&d, "nodevs", NULL);
	hv_kvm_pci_destroy(d.pci);
	disk[0] = (struct hv_kvm_pci_disk){img, false, false, -1};
	disk[1] = (struct hv_kvm_pci_disk){img, true, false, -1};
	c.disk = disk;
	c.nr_disks = 2;
	c.rng = true;
	FUZZ_CHECK(!hv_kvm_pci_create("seed", &c, pio, mmio, &vm->env, &d.pci));
	devstate_seed(&d, "fresh", NULL);
	FUZZ_CHECK(!hv_uart_load(d.uart, &us) && !hv_i8042_load(d.i8042, &ks));
	devstate_seed(&d, "console", NULL);
	devstate_seed(&d, "driver", edit_driver);
	devstate_seed(&d, "net", edit_net);
	hv_kvm_pci_destroy(d.pci);
	hv_i8042_destroy(d.i8042);
	hv_uart_destroy(d.uart);
	hv_console_destroy(con);
	hv_iobus_destroy(pio);
	hv_iobus_destroy(mmio);
	fake_vm_free(vm);
	unlink(img);
}

/* ---- the rest of the migration stream ---------------------------------- */

static void stream_frames(struct bytes *s)
{
	uint64_t batches[2] = {2, 1};
	uint8_t dg[32] = {0xd1, 0x9e, 0x57};
	Mig__SetupAccept sa = MIG__SETUP_ACCEPT__INIT;
	Mig__IterStart is = MIG__ITER_START__INIT;
	Mig__IterEnd ie = MIG__ITER_END__INIT;
	Mig__IterAck ia = MIG__ITER_ACK__INIT;
	Mig__DataEnd de = MIG__DATA_END__INIT;
	Mig__Switchover so = MIG__SWITCHOVER__INIT;
	Mig__Digest d = MIG__DIGEST__INIT;
	Mig__Ack ack = MIG__ACK__INIT;
	Mig__Commit c = MIG__COMMIT__INIT;
	Mig__Resumed r = MIG__RESUMED__INIT;
	Mig__Cancel cn = MIG__CANCEL__INIT;

	sa.nr_channels = 2;
	is.iteration = 0;
	is.dirty_pages = 4096;
	ie.iteration = 0;
	ie.n_channel_batches = 2;
	ie.channel_batches = batches;
	ie.pages = 9;
	ia.iteration = 0;
	ia.pages = 9;
	de.batches = 3;
	so.iteration = 1;
	so.remaining_pages = 12;
	d.algo = MIG__DIGEST_ALGO__DIGEST_SHA256;
	d.digest.data = dg;
	d.digest.len = sizeof(dg);
	d.pages = 4096;
	ack.pages = 4096;
	c.downtime_us = 4200;
	r.verify_ns = 1000;
	r.load_ns = 2000;
	r.resume_ns = 3000;
	cn.detail = "operator";
	frame_seed("frame", "setup-accept", MIG__MSG_TYPE__MSG_SETUP_ACCEPT,
		   &sa.base);
	frame_seed("frame", "cancel", MIG__MSG_TYPE__MSG_CANCEL, &cn.base);
	frame(s, MIG__MSG_TYPE__MSG_SETUP_ACCEPT, &sa.base);
	frame(s, MIG__MSG_TYPE__MSG_ITER_START, &is.base);
	frame(s, MIG__MSG_TYPE__MSG_ITER_END, &ie.base);
	frame(s, MIG__MSG_TYPE__MSG_ITER_ACK, &ia.base);
	frame(s, MIG__MSG_TYPE__MSG_DATA_END, &de.base);
	frame(s, MIG__MSG_TYPE__MSG_SWITCHOVER, &so.base);
	frame(s, MIG__MSG_TYPE__MSG_DIGEST, &d.base);
	frame(s, MIG__MSG_TYPE__MSG_ACK, &ack.base);
	frame(s, MIG__MSG_TYPE__MSG_COMMIT, &c.base);
	frame(s, MIG__MSG_TYPE__MSG_RESUMED, &r.base);
}

/* The postcopy frames (MIG_FEATURE_POSTCOPY): the switch's unsent set,
 * a page request, the destination's last word. */
static void postcopy_frames(void)
{
	Mig__PostcopyUnsent u = MIG__POSTCOPY_UNSENT__INIT;
	Mig__PageRequest r = MIG__PAGE_REQUEST__INIT;
	Mig__PostcopyDone d = MIG__POSTCOPY_DONE__INIT;
	uint8_t runs[] = {2, 3};
	uint64_t gfns[] = {5, 300};
	struct bytes b = {0};

	u.slot = 1;
	u.npages = 200;
	u.encoding = MIG__UNSENT_ENCODING__UNSENT_RUNS;
	u.data.data = runs;
	u.data.len = sizeof(runs);
	u.set_pages = 3;
	r.seq = 9;
	r.n_gfns = 2;
	r.gfns = gfns;
	d.pages_installed = 3;
	d.pages_requested = 1;
	frame(&b, MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT, &u.base);
	frame(&b, MIG__MSG_TYPE__MSG_PAGE_REQUEST, &r.base);
	frame(&b, MIG__MSG_TYPE__MSG_POSTCOPY_DONE, &d.base);
	seed("frame", "postcopy", b.p, b.len);
	free(b.p);
}

/* ---- control RPC and metrics HTTP -------------------------------------- */

/* @mode is the target's first byte: how the stream is cut, which cap. */
static void rpc_seed(const char *name, uint8_t mode,
		     const ProtobufCMessage *const *msgs, unsigned n)
{
	struct bytes b = {0};

	put(&b, &mode, 1);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *f;
		size_t len;

		FUZZ_CHECK(migd_frame_pack(msgs[i], MIGD_FRAME_MAX, &f, &len) ==
			   0);
		put(&b, f, len);
		free(f);
	}
	seed("ctl_frame", name, b.p, b.len);
	free(b.p);
}

static void rpcs(void)
{
	Migd__Request ping = MIGD__REQUEST__INIT, create = MIGD__REQUEST__INIT,
		      start = MIGD__REQUEST__INIT;
	Migd__PingRequest pr = MIGD__PING_REQUEST__INIT;
	Migd__VmCreateRequest cr = MIGD__VM_CREATE_REQUEST__INIT;
	Migd__MigStartRequest sr = MIGD__MIG_START_REQUEST__INIT;
	Migd__ServerMessage sm = MIGD__SERVER_MESSAGE__INIT;
	Migd__Response resp = MIGD__RESPONSE__INIT;
	Migd__PingResult pres = MIGD__PING_RESULT__INIT;
	const ProtobufCMessage *reqs[] = {&ping.base, &create.base,
					  &start.base};
	const ProtobufCMessage *srv[] = {&sm.base};

	ping.id = 1;
	ping.call_case = MIGD__REQUEST__CALL_PING;
	ping.ping = &pr;
	create.id = 2;
	create.call_case = MIGD__REQUEST__CALL_VM_CREATE;
	create.vm_create = &cr;
	cr.name = "vm1";
	cr.mem_bytes = 64ull << 20;
	cr.nr_vcpus = 2;
	cr.accel = "soft";
	start.id = 3;
	start.call_case = MIGD__REQUEST__CALL_MIG_START;
	start.mig_start = &sr;
	sr.vm = "vm1";
	sr.dest = "127.0.0.1:4444";
	sr.channels = 2;
	resp.id = 1;
	resp.result_case = MIGD__RESPONSE__RESULT_PING;
	resp.ping = &pres;
	pres.version = "0.1.0";
	pres.default_accel = "kvm";
	sm.msg_case = MIGD__SERVER_MESSAGE__MSG_RESPONSE;
	sm.response = &resp;
	rpc_seed("ping", 0x00, reqs, 1);
	rpc_seed("requests-pieces", 0x41, reqs, 3);
	rpc_seed("requests-small-cap", 0xc3, reqs, 3);
	rpc_seed("response", 0x45, srv, 1);
}

static void http_seed(const char *name, uint8_t mode, const char *req)
{
	struct bytes b = {0};

	put(&b, &mode, 1);
	put(&b, req, strlen(req));
	seed("metrics_http", name, b.p, b.len);
	free(b.p);
}

static void https(void)
{
	/* What curl and Prometheus send. */
	http_seed("curl", 0x01,
		  "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9187\r\n"
		  "User-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n");
	http_seed("prometheus", 0x37,
		  "GET /metrics?format=text HTTP/1.1\r\nHost: 10.0.0.2:9187\r\n"
		  "User-Agent: Prometheus/2.42.0\r\nAccept: "
		  "application/openmetrics-text;version=1.0.0,text/plain;"
		  "version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n"
		  "X-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n");
	http_seed("lf-only", 0x02, "GET /metrics HTTP/1.0\n\n");
	http_seed("not-found", 0x03, "GET / HTTP/1.1\r\n\r\n");
	http_seed("post", 0x04,
		  "POST /metrics HTTP/1.1\r\n"
		  "Content-Length: 0\r\n\r\n");
	http_seed("head", 0x05,
		  "HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1:9187\r\n"
		  "User-Agent: curl/7.88.1\r\n\r\n");
}

int main(int argc, char **argv)
{
	struct bytes s = {0};

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	fuzz_quiet_logs();
	signal(SIGPIPE, SIG_IGN);
	/* One stream a destination might see, in order. */
	hellos(&s);
	vms(&s);
	stream_frames(&s);
	batches(&s);
	seed("frame", "stream", s.p, s.len);
	free(s.p);
	postcopy_frames();
	devstates();
	rpcs();
	https();
	printf("seedgen: %u seeds in %s\n", nr_seeds, outdir);
	return 0;
}
