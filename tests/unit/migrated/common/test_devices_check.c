// SPDX-License-Identifier: MIT
/*
 * A Linux guest's virtio devices in a create request
 * (migrated/vmm/devices_check.c): every bad disk refused with the
 * option, the path and the reason, devices without a kernel refused,
 * good ones pass and are copied into the VM's configuration as given.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/vm.h"
#include "migrated/common/calls.h"
#include "tests/harness/hv_test.h"

static char dir[64], img[128], tiny[128], ro[128];

static int mkfile(const char *path, off_t size, mode_t mode)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, size) || fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/migd-devs.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/disk.img", dir);
	snprintf(tiny, sizeof(tiny), "%s/tiny.img", dir);
	snprintf(ro, sizeof(ro), "%s/ro.img", dir);
	if (mkfile(img, 1 << 20, 0600) || mkfile(tiny, 511, 0600) ||
	    mkfile(ro, 4096, 0444))
		return -1;
	return 0;
}

static int teardown(void)
{
	unlink(img);
	unlink(tiny);
	unlink(ro);
	rmdir(dir);
	return 0;
}

struct devs {
	Migd__Boot b;
	Migd__Disk d[6];
	Migd__Disk *dp[6];
};

static void devs_init(struct devs *q, unsigned n, const char *path, bool ro_)
{
	migd__boot__init(&q->b);
	for (unsigned i = 0; i < 6; i++) {
		migd__disk__init(&q->d[i]);
		q->d[i].path = (char *)path;
		q->d[i].read_only = ro_;
		q->dp[i] = &q->d[i];
	}
	q->b.n_disks = n;
	q->b.disks = q->dp;
}

static int check(struct devs *q, bool linux_guest, char *err, size_t n)
{
	err[0] = '\0';
	return migd_devices_check(&q->b, linux_guest, err, n);
}

static void test_good_devices_pass_and_are_copied(void)
{
	struct hv_boot_cfg cfg;
	struct devs q;
	char err[512];

	devs_init(&q, 0, img, false);
	CU_ASSERT_EQUAL(check(&q, false, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(migd_devices_check(NULL, false, err, sizeof(err)), 0);
	devs_init(&q, 2, img, false);
	q.d[1].path = ro;
	q.d[1].read_only = true;
	q.b.rng = true;
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), 0);
	memset(&cfg, 0xff, sizeof(cfg));
	migd_devices_cfg(&q.b, "vm", &cfg);
	CU_ASSERT_EQUAL(cfg.nr_disks, 2);
	CU_ASSERT_STRING_EQUAL(cfg.disk[0].path, img);
	CU_ASSERT(!cfg.disk[0].read_only);
	CU_ASSERT_STRING_EQUAL(cfg.disk[1].path, ro);
	CU_ASSERT(cfg.disk[1].read_only);
	CU_ASSERT(cfg.rng);
	migd_devices_cfg(NULL, "vm", &cfg);
	CU_ASSERT_EQUAL(cfg.nr_disks, 0);
	CU_ASSERT(!cfg.rng);
	/* One image on two read-only disks is fine. */
	devs_init(&q, 2, img, true);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), 0);
}

static void test_devices_need_a_kernel(void)
{
	struct devs q;
	char err[512];

	devs_init(&q, 1, img, false);
	CU_ASSERT_EQUAL(check(&q, false, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--disk needs --kernel (a Linux guest)");
	devs_init(&q, 0, img, false);
	q.b.rng = true;
	CU_ASSERT_EQUAL(check(&q, false, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--rng needs --kernel (a Linux guest)");
}

static void test_bad_disks_named_with_the_reason(void)
{
	char err[512], want[512], *longp;
	struct devs q;

	devs_init(&q, HV_BOOT_DISKS_MAX + 1, img, true);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--disk given 5 times: at most 4");

	devs_init(&q, 1, "disk.img", false);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "needs an absolute path"));
	devs_init(&q, 1, "", false);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);

	devs_init(&q, 1, "/nonexistent/x.img", true);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -ENOENT);
	CU_ASSERT_STRING_EQUAL(err, "--disk '/nonexistent/x.img': No such "
				    "file or directory (errno 2)");

	devs_init(&q, 1, dir, true);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want),
		 "--disk '%s': not a regular file or a block device", dir);
	CU_ASSERT_STRING_EQUAL(err, want);

	devs_init(&q, 1, tiny, false);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "511 bytes, smaller than one"));

	/* A read-only file asked read-write: refused (EACCES for a user,
	 * EROFS for root, who could open it), fine with read_only. */
	devs_init(&q, 1, ro, false);
	CU_ASSERT(check(&q, true, err, sizeof(err)) ==
		  (getuid() ? -EACCES : -EROFS));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--disk PATH,ro"));
	devs_init(&q, 1, ro, true);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), 0);

	/* One writable image on two disks. */
	devs_init(&q, 2, img, false);
	q.d[1].read_only = true;
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "given twice"));

	longp = malloc(HV_BOOT_PATH_MAX + 1);
	memset(longp, 'a', HV_BOOT_PATH_MAX);
	longp[0] = '/';
	longp[HV_BOOT_PATH_MAX] = 0;
	devs_init(&q, 1, longp, true);
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "a path of at most 511 bytes"));
	free(longp);
}

/* Through migd_boot_check(): the host's one call checks them too. */
static void test_boot_check_checks_the_devices(void)
{
	Migd__VmCreateRequest r;
	struct devs q;
	char err[512];

	migd__vm_create_request__init(&r);
	r.name = (char *)"vm1";
	r.accel = (char *)"kvm";
	devs_init(&q, 1, "/nonexistent/x.img", false);
	r.boot = &q.b;
	CU_ASSERT_EQUAL(migd_boot_check(&r, HV_ACCEL_KVM, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--disk needs --kernel (a Linux guest)");
	q.b.kernel = img; /* readable, non-empty: the kernel check passes */
	CU_ASSERT_EQUAL(migd_boot_check(&r, HV_ACCEL_KVM, err, sizeof(err)),
			-ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--disk '/nonexistent/x.img'"));
}

/* A NIC: its tap name and MAC are checked before the tap is opened;
 * without a MAC it gets one derived from the VM's name. */
static void test_net_tap_and_mac_checked(void)
{
	static const uint8_t want[6] = {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef};
	struct hv_boot_cfg cfg;
	Migd__Net net;
	struct devs q;
	uint8_t mac[6], m2[6];
	char err[512];

	CU_ASSERT_EQUAL(migd_mac_parse("52:54:00:AB:cd:ef", mac), 0);
	CU_ASSERT_EQUAL(memcmp(mac, want, 6), 0);
	CU_ASSERT_EQUAL(migd_mac_parse("52:54:00:ab:cd", mac), -EINVAL);
	CU_ASSERT_EQUAL(migd_mac_parse("52:54:00:ab:cd:efx", mac), -EINVAL);
	CU_ASSERT_EQUAL(migd_mac_parse("52:54:00:ab:cd: f", mac), -EINVAL);
	CU_ASSERT_EQUAL(migd_mac_parse("52-54-00-ab-cd-ef", mac), -EINVAL);
	CU_ASSERT_EQUAL(migd_mac_parse("52:54:00:ab:cd:+f", mac), -EINVAL);
	/* The default: locally administered, unicast, stable, per name. */
	migd_mac_from_name("lx", mac);
	migd_mac_from_name("lx", m2);
	CU_ASSERT_EQUAL(memcmp(mac, m2, 6), 0);
	CU_ASSERT_EQUAL(mac[0] & 3, 2);
	migd_mac_from_name("lx2", m2);
	CU_ASSERT_NOT_EQUAL(memcmp(mac, m2, 6), 0);

	devs_init(&q, 0, img, false);
	migd__net__init(&net);
	q.b.net = &net;
	net.tap = (char *)"tap0";
	CU_ASSERT_EQUAL(check(&q, false, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--net needs --kernel (a Linux guest)");
	net.tap = (char *)"a/b";
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "tap interface name"));
	net.tap = (char *)"0123456789abcdef";
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	net.tap = (char *)"tap0";
	net.mac = (char *)"52:54:00:ab:cd";
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "XX:XX:XX:XX:XX:XX"));
	net.mac = (char *)"01:00:5e:00:00:01";
	CU_ASSERT_EQUAL(check(&q, true, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "multicast"));

	/* Copied: the MAC as given, or the name's. */
	net.mac = (char *)"52:54:00:ab:cd:ef";
	memset(&cfg, 0, sizeof(cfg));
	migd_devices_cfg(&q.b, "lx", &cfg);
	CU_ASSERT_STRING_EQUAL(cfg.net_tap, "tap0");
	CU_ASSERT_EQUAL(memcmp(cfg.net_mac, want, 6), 0);
	net.mac = (char *)"";
	migd_devices_cfg(&q.b, "lx", &cfg);
	CU_ASSERT_EQUAL(memcmp(cfg.net_mac, mac, 6), 0);
	q.b.net = NULL;
	migd_devices_cfg(&q.b, "lx", &cfg);
	CU_ASSERT_STRING_EQUAL(cfg.net_tap, "");
}

static CU_TestInfo tests[] = {
	{"net_tap_and_mac_checked", test_net_tap_and_mac_checked},
	{"good_devices_pass_and_are_copied",
	 test_good_devices_pass_and_are_copied},
	{"devices_need_a_kernel", test_devices_need_a_kernel},
	{"bad_disks_named_with_the_reason",
	 test_bad_disks_named_with_the_reason},
	{"boot_check_checks_the_devices", test_boot_check_checks_the_devices},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/vmm/devices_check", setup, teardown, tests);
