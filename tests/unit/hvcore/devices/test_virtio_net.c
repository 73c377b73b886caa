// SPDX-License-Identifier: MIT
/*
 * The virtio network device (virtio_net.c) over a datagram socketpair
 * standing in for the tap: one frame per read and write, as a tap is.
 */
#include "tests/harness/hv_test.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hvcore/devices/tap.h"
#include "hvcore/devices/virtio_net.h"
#include "tests/unit/hvcore/devices/fake_driver.h"

#define HDR HV_VIRTIO_NET_HDR_LEN
#define RX 0
#define TX 1

static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

struct rig {
	struct hv_virtio_net *net;
	struct fake_drv d;
	int peer; /* the "tap"'s other end */
};

static void rig_up(struct rig *r)
{
	struct hv_virtio_net_cfg c = {.fd = -1};
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(
		socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv), 0);
	c.fd = sv[0];
	memcpy(c.mac, mac, 6);
	r->peer = sv[1];
	CU_ASSERT_EQUAL_FATAL(hv_virtio_net_create(&c, &r->net), 0);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&r->d, hv_virtio_net_dev(r->net)), 0);
	CU_ASSERT_EQUAL(
		drv_negotiate(&r->d, 1ull << HV_VIRTIO_F_VERSION_1 |
					     1ull << HV_VIRTIO_NET_F_MAC |
					     1ull << HV_VIRTIO_NET_F_STATUS),
		0);
	drv_start(&r->d, 2, 16, true, false, false);
}

static void rig_down(struct rig *r)
{
	drv_detach(&r->d);
	hv_virtio_net_destroy(r->net);
	close(r->peer);
}

static bool wait_status(struct fake_drv *d, uint8_t bit)
{
	for (int i = 0; i < 2000 && !(drv_status(d) & bit); i++)
		usleep(1000);
	return drv_status(d) & bit;
}

/* A frame of @len bytes whose byte i is (i * 7 + @seed). */
static void frame(uint8_t *f, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		f[i] = (uint8_t)(i * 7 + seed);
}

static void test_config_has_mac_and_link_up(void)
{
	struct rig r;
	uint8_t got[6];

	rig_up(&r);
	CU_ASSERT_EQUAL(drv_cfg_rd(&r.d, 2, 2), 0x1041);
	for (unsigned i = 0; i < 6; i++)
		got[i] = (uint8_t)drv_rd(&r.d, HV_VIRTIO_PCI_DEVICE + i, 1);
	CU_ASSERT_EQUAL(memcmp(got, mac, 6), 0);
	CU_ASSERT_EQUAL(drv_rd(&r.d, HV_VIRTIO_PCI_DEVICE + 6, 2),
			HV_VIRTIO_NET_S_LINK_UP);
	rig_down(&r);
}

static void test_tx_frame_reaches_the_tap_without_header(void)
{
	struct rig r;
	uint8_t f[1514], got[2048];
	uint32_t id, len;
	struct hv_virtio_net_stats st;
	ssize_t n = -1;

	rig_up(&r);
	frame(f, sizeof(f), 3);
	/* Header and frame in three pieces: 12, 100, the rest. */
	memset(r.d.vm->ram + DRV_BUF, 0xee, HDR);
	memcpy(r.d.vm->ram + DRV_BUF + 0x100, f, 100);
	memcpy(r.d.vm->ram + DRV_BUF + 0x1000, f + 100, sizeof(f) - 100);
	fake_desc_set(&r.d.ring[TX], 0, DRV_BUF, HDR, HV_VRING_DESC_F_NEXT, 1);
	fake_desc_set(&r.d.ring[TX], 1, DRV_BUF + 0x100, 100,
		      HV_VRING_DESC_F_NEXT, 2);
	fake_desc_set(&r.d.ring[TX], 2, DRV_BUF + 0x1000, sizeof(f) - 100, 0,
		      0);
	fake_ring_offer(&r.d.ring[TX], 0);
	drv_kick(&r.d, TX);
	CU_ASSERT_FATAL(fake_wait_used(&r.d.ring[TX], 1));
	fake_used_elem(&r.d.ring[TX], 0, &id, &len);
	CU_ASSERT_EQUAL(id, 0);
	CU_ASSERT_EQUAL(len, 0);
	for (int i = 0; i < 100 && n < 0; i++) {
		n = read(r.peer, got, sizeof(got));
		if (n < 0)
			usleep(1000);
	}
	CU_ASSERT_EQUAL_FATAL(n, (ssize_t)sizeof(f));
	CU_ASSERT_EQUAL(memcmp(got, f, sizeof(f)), 0);
	hv_virtio_net_stats(r.net, &st);
	CU_ASSERT_EQUAL(st.tx_packets, 1);
	CU_ASSERT_EQUAL(st.tx_bytes, sizeof(f));
	rig_down(&r);
}

static void offer_rx(struct rig *r, uint16_t head, uint32_t len)
{
	fake_desc_set(&r->d.ring[RX], head, DRV_BUF + 0x10000u * head, len,
		      HV_VRING_DESC_F_WRITE, 0);
	fake_ring_offer(&r->d.ring[RX], head);
}

static void test_rx_fills_a_guest_buffer_with_header(void)
{
	struct rig r;
	uint8_t f[1000], hdr[HDR] = {0};
	uint32_t id, len;
	struct hv_virtio_net_stats st;
	const uint8_t *b;

	rig_up(&r);
	/* A frame before any buffer, once the device thread waits on the
	 * fd: held (the fd no longer polled) until the driver offers a
	 * buffer and kicks, which also has the fd polled again (the next
	 * frame below comes through it). */
	usleep(20000);
	frame(f, sizeof(f), 9);
	CU_ASSERT_EQUAL(write(r.peer, f, sizeof(f)), (ssize_t)sizeof(f));
	usleep(20000);
	CU_ASSERT_EQUAL(fake_used_idx(&r.d.ring[RX]), 0);
	memset(r.d.vm->ram + DRV_BUF, 0xcc, 2048);
	offer_rx(&r, 0, 1526);
	drv_kick(&r.d, RX);
	CU_ASSERT_FATAL(fake_wait_used(&r.d.ring[RX], 1));
	fake_used_elem(&r.d.ring[RX], 0, &id, &len);
	CU_ASSERT_EQUAL(id, 0);
	CU_ASSERT_EQUAL(len, HDR + sizeof(f));
	b = r.d.vm->ram + DRV_BUF;
	hdr[10] = 1; /* num_buffers */
	CU_ASSERT_EQUAL(memcmp(b, hdr, HDR), 0);
	CU_ASSERT_EQUAL(memcmp(b + HDR, f, sizeof(f)), 0);
	CU_ASSERT(fake_dirty(r.d.vm, DRV_BUF));
	/* Buffers there first: the frame arrives on its own (the fd). */
	offer_rx(&r, 1, 1526);
	drv_kick(&r.d, RX);
	usleep(10000);
	frame(f, 60, 1);
	CU_ASSERT_EQUAL(write(r.peer, f, 60), 60);
	CU_ASSERT_FATAL(fake_wait_used(&r.d.ring[RX], 2));
	fake_used_elem(&r.d.ring[RX], 1, &id, &len);
	CU_ASSERT_EQUAL(id, 1);
	CU_ASSERT_EQUAL(len, HDR + 60);
	CU_ASSERT_EQUAL(memcmp(r.d.vm->ram + DRV_BUF + 0x10000 + HDR, f, 60),
			0);
	CU_ASSERT(fake_dirty(r.d.vm, DRV_BUF + 0x10000));
	hv_virtio_net_stats(r.net, &st);
	CU_ASSERT_EQUAL(st.rx_packets, 2);
	CU_ASSERT_EQUAL(st.rx_bytes, sizeof(f) + 60);
	/* Too big for the chain: dropped, the chain completed empty. */
	offer_rx(&r, 2, HDR + 10);
	drv_kick(&r.d, RX);
	CU_ASSERT_EQUAL(write(r.peer, f, 60), 60);
	CU_ASSERT_FATAL(fake_wait_used(&r.d.ring[RX], 3));
	fake_used_elem(&r.d.ring[RX], 2, &id, &len);
	CU_ASSERT_EQUAL(len, 0);
	hv_virtio_net_stats(r.net, &st);
	CU_ASSERT_EQUAL(st.rx_dropped, 1);
	rig_down(&r);
}

static void test_malformed_chains_are_refused(void)
{
	struct rig r;
	uint8_t f[64] = {0};

	/* Transmit: a buffer that runs past RAM. */
	rig_up(&r);
	fake_desc_set(&r.d.ring[TX], 0, FAKE_RAM - 8, 64, 0, 0);
	fake_ring_offer(&r.d.ring[TX], 0);
	drv_kick(&r.d, TX);
	CU_ASSERT(wait_status(&r.d, HV_VIRTIO_S_NEEDS_RESET));
	CU_ASSERT_EQUAL(fake_used_idx(&r.d.ring[TX]), 0);
	rig_down(&r);

	/* Transmit: a chain that loops. */
	rig_up(&r);
	fake_desc_set(&r.d.ring[TX], 0, DRV_BUF, HDR, HV_VRING_DESC_F_NEXT, 1);
	fake_desc_set(&r.d.ring[TX], 1, DRV_BUF, 64, HV_VRING_DESC_F_NEXT, 0);
	fake_ring_offer(&r.d.ring[TX], 0);
	drv_kick(&r.d, TX);
	CU_ASSERT(wait_status(&r.d, HV_VIRTIO_S_NEEDS_RESET));
	rig_down(&r);

	/* Receive: no room for the header; nothing written. */
	rig_up(&r);
	memset(r.d.vm->ram + DRV_BUF, 0xcc, 16);
	offer_rx(&r, 0, HDR - 1);
	drv_kick(&r.d, RX);
	CU_ASSERT_EQUAL(write(r.peer, f, sizeof(f)), (ssize_t)sizeof(f));
	CU_ASSERT(wait_status(&r.d, HV_VIRTIO_S_NEEDS_RESET));
	CU_ASSERT_EQUAL(fake_used_idx(&r.d.ring[RX]), 0);
	CU_ASSERT_EQUAL(r.d.vm->ram[DRV_BUF], 0xcc);
	rig_down(&r);
}

/* Migration: quiesce, save, load into a twin over a copy of RAM, run;
 * the twin receives into the buffers the source's driver offered. */
static void test_state_round_trip_keeps_receiving(void)
{
	struct hv_virtio_pci_state *s = calloc(1, sizeof(*s));
	struct rig a, b;
	struct fake_ring rx;
	uint8_t f[200];
	uint32_t id, len;

	CU_ASSERT_FATAL(s != NULL);
	rig_up(&a);
	rig_up(&b);
	/* The twin is fresh: reset it so that load sees status 0. */
	drv_wr(&b.d, HV_VIRTIO_PCI_STATUS, 0, 1);
	offer_rx(&a, 0, 1526);
	offer_rx(&a, 1, 1526);
	drv_kick(&a.d, RX);
	frame(f, sizeof(f), 5);
	CU_ASSERT_EQUAL(write(a.peer, f, sizeof(f)), (ssize_t)sizeof(f));
	CU_ASSERT_FATAL(fake_wait_used(&a.d.ring[RX], 1));
	hv_virtio_pci_quiesce(a.d.vp);
	CU_ASSERT_EQUAL_FATAL(hv_virtio_pci_save(a.d.vp, s), 0);
	CU_ASSERT_EQUAL(s->type, HV_VIRTIO_ID_NET);
	CU_ASSERT_EQUAL(s->nqueues, 2);
	CU_ASSERT_EQUAL(s->q[RX].last_avail, 1);
	memcpy(b.d.vm->ram, a.d.vm->ram, FAKE_RAM);
	CU_ASSERT_EQUAL_FATAL(hv_virtio_pci_load(b.d.vp, s), 0);
	hv_virtio_pci_run(b.d.vp);
	rx = a.d.ring[RX];
	rx.vm = b.d.vm;
	frame(f, sizeof(f), 6);
	CU_ASSERT_EQUAL(write(b.peer, f, sizeof(f)), (ssize_t)sizeof(f));
	CU_ASSERT_FATAL(fake_wait_used(&rx, 2));
	fake_used_elem(&rx, 1, &id, &len);
	CU_ASSERT_EQUAL(id, 1);
	CU_ASSERT_EQUAL(len, HDR + sizeof(f));
	CU_ASSERT_EQUAL(
		memcmp(b.d.vm->ram + DRV_BUF + 0x10000 + HDR, f, sizeof(f)), 0);
	CU_ASSERT(fake_dirty(b.d.vm, DRV_BUF + 0x10000));
	rig_down(&a);
	rig_down(&b);
	free(s);
}

static void test_rarp_announce_frame(void)
{
	uint8_t f[60];
	int sv[2];

	CU_ASSERT_EQUAL(hv_tap_rarp_frame(mac, f), 60);
	for (unsigned i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(f[i], 0xff);
	CU_ASSERT_EQUAL(memcmp(f + 6, mac, 6), 0);
	CU_ASSERT_EQUAL(f[12], 0x80);
	CU_ASSERT_EQUAL(f[13], 0x35);
	CU_ASSERT_EQUAL(f[21], 3); /* reverse request */
	CU_ASSERT_EQUAL(memcmp(f + 22, mac, 6), 0);
	CU_ASSERT_EQUAL(memcmp(f + 32, mac, 6), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	CU_ASSERT_EQUAL(hv_tap_announce(sv[0], mac), 0);
	CU_ASSERT_EQUAL(read(sv[1], f, sizeof(f)), 60);
	close(sv[0]);
	close(sv[1]);
	CU_ASSERT_EQUAL(hv_tap_name_check("tap0"), 0);
	CU_ASSERT_EQUAL(hv_tap_name_check(""), -EINVAL);
	CU_ASSERT_EQUAL(hv_tap_name_check("a/b"), -EINVAL);
	CU_ASSERT_EQUAL(hv_tap_name_check("0123456789abcdef"), -EINVAL);
}

/* One tap, one user: a second open of a tap another fd has is -EBUSY
 * (what refuses a second VM, and a migration to the same host). Needs
 * /dev/net/tun and CAP_NET_ADMIN for the tap, which goes away with its
 * fd; without them only the refusal of a bad name is checked. */
static void test_tap_busy_when_open_elsewhere(void)
{
	char name[HV_TAP_NAME_MAX];
	int a = -1, b = -1, ret;

	CU_ASSERT_EQUAL(hv_tap_open("bad/name", &a), -EINVAL);
	snprintf(name, sizeof(name), "hvut%d", (int)getpid() % 100000);
	ret = hv_tap_open(name, &a);
	if (ret == -EPERM || ret == -EACCES || ret == -ENOENT ||
	    ret == -ENODEV) {
		printf("(no tap here: %d) ", ret);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(hv_tap_open(name, &b), -EBUSY);
	close(a);
	/* Free again once its fd is closed. */
	CU_ASSERT_EQUAL(hv_tap_open(name, &b), 0);
	if (b >= 0)
		close(b);
}

/* A tap's fd handed over (vm update): adopted as a dup that keeps the
 * tap attached once the giver closes its own; anything but a tap of that
 * name refused. The tap part needs what the test above needs. */
static void test_tap_adopt(void)
{
	char name[HV_TAP_NAME_MAX];
	int sv[2], a = -1, c = -1, b = -1, ret;

	CU_ASSERT_EQUAL(hv_tap_adopt(-1, "tap0", &c), -EINVAL);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	CU_ASSERT_EQUAL(hv_tap_adopt(sv[0], "tap0", &c), -ENOTTY);
	CU_ASSERT_EQUAL(hv_tap_adopt(sv[0], "bad/name", &c), -EINVAL);
	close(sv[0]);
	close(sv[1]);
	snprintf(name, sizeof(name), "hvua%d", (int)getpid() % 100000);
	ret = hv_tap_open(name, &a);
	if (ret) {
		printf("(no tap here: %d) ", ret);
		return;
	}
	CU_ASSERT_EQUAL(hv_tap_adopt(a, "othertap", &c), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(hv_tap_adopt(a, name, &c), 0);
	CU_ASSERT(c != a && (fcntl(c, F_GETFD) & FD_CLOEXEC));
	CU_ASSERT(fcntl(c, F_GETFL) & O_NONBLOCK);
	close(a);
	/* Still attached through the adopted fd: busy for a third. */
	CU_ASSERT_EQUAL(hv_tap_open(name, &b), -EBUSY);
	close(c);
	CU_ASSERT_EQUAL(hv_tap_open(name, &b), 0);
	if (b >= 0)
		close(b);
}

static CU_TestInfo tests[] = {
	{"tap_busy_when_open_elsewhere", test_tap_busy_when_open_elsewhere},
	{"tap_adopt", test_tap_adopt},
	{"config_has_mac_and_link_up", test_config_has_mac_and_link_up},
	{"tx_frame_reaches_the_tap_without_header",
	 test_tx_frame_reaches_the_tap_without_header},
	{"rx_fills_a_guest_buffer_with_header",
	 test_rx_fills_a_guest_buffer_with_header},
	{"malformed_chains_are_refused", test_malformed_chains_are_refused},
	{"state_round_trip_keeps_receiving",
	 test_state_round_trip_keeps_receiving},
	{"rarp_announce_frame", test_rarp_announce_frame},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/virtio_net", NULL, NULL, tests);
