// SPDX-License-Identifier: MIT
/* Address dispatch to device models (hvcore/devices/iobus.c). */
#include "tests/harness/hv_test.h"
#include <errno.h>
#include <string.h>

#include "hvcore/devices/iobus.h"

struct fake_dev {
	uint64_t last_off;
	uint32_t last_len;
	uint8_t last_write[8];
	unsigned reads, writes;
};

static void fake_read(void *dev, uint64_t off, void *data, uint32_t len)
{
	struct fake_dev *d = dev;

	d->reads++;
	d->last_off = off;
	d->last_len = len;
	memset(data, 0x5a, len);
}

static void fake_write(void *dev, uint64_t off, const void *data, uint32_t len)
{
	struct fake_dev *d = dev;

	d->writes++;
	d->last_off = off;
	d->last_len = len;
	memcpy(d->last_write, data, len);
}

static const struct hv_io_ops fake_ops = {fake_read, fake_write};

static void test_dispatch_by_range(void)
{
	struct fake_dev a = {0}, b = {0};
	struct hv_iobus *bus;
	uint32_t v = 0;
	uint8_t byte = 0x41;

	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&bus), 0);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0x3f8, 8, &fake_ops, &a), 0);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0x60, 1, &fake_ops, &b), 0);
	CU_ASSERT(hv_iobus_access(bus, 0x3f8, true, &byte, 1));
	CU_ASSERT_EQUAL(a.writes, 1);
	CU_ASSERT_EQUAL(a.last_off, 0);
	CU_ASSERT_EQUAL(a.last_write[0], 0x41);
	CU_ASSERT(hv_iobus_access(bus, 0x3fd, false, &byte, 1));
	CU_ASSERT_EQUAL(a.last_off, 5);
	CU_ASSERT_EQUAL(byte, 0x5a);
	CU_ASSERT(hv_iobus_access(bus, 0x60, false, &byte, 1));
	CU_ASSERT_EQUAL(b.reads, 1);
	/* Unclaimed: reads float high, nothing is called. */
	CU_ASSERT_FALSE(hv_iobus_access(bus, 0x61, false, &v, 4));
	CU_ASSERT_EQUAL(v, 0xffffffffu);
	/* An access that runs past the end of a range is not the device's. */
	CU_ASSERT_FALSE(hv_iobus_access(bus, 0x3fe, false, &v, 4));
	CU_ASSERT_EQUAL(a.reads, 1);
	hv_iobus_destroy(bus);
}

static void test_overlaps_are_refused(void)
{
	struct fake_dev a = {0};
	struct hv_iobus *bus;

	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&bus), 0);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0x1000, 0x100, &fake_ops, &a),
			0);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0x10ff, 1, &fake_ops, &a),
			-EEXIST);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0xf00, 0x101, &fake_ops, &a),
			-EEXIST);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0xf00, 0x100, &fake_ops, &a), 0);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0x1100, 0x10, &fake_ops, &a), 0);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0, 0, &fake_ops, &a), -EINVAL);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, UINT64_MAX, 2, &fake_ops, &a),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_iobus_unregister(bus, 0x1000), 0);
	CU_ASSERT_EQUAL(hv_iobus_unregister(bus, 0x1000), -ENOENT);
	CU_ASSERT_EQUAL(hv_iobus_register(bus, 0x1080, 0x10, &fake_ops, &a), 0);
	hv_iobus_destroy(bus);
}

/* Many ranges registered out of order are all found. */
static void test_many_ranges_stay_sorted(void)
{
	static struct fake_dev d[64];
	struct hv_iobus *bus;
	uint32_t v;

	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&bus), 0);
	for (unsigned i = 0; i < 64; i++) {
		unsigned k = (i * 37) % 64;

		CU_ASSERT_EQUAL(hv_iobus_register(bus,
						  0xd0000000ull + k * 0x1000,
						  0x1000, &fake_ops, &d[k]),
				0);
	}
	for (unsigned k = 0; k < 64; k++) {
		CU_ASSERT(hv_iobus_access(bus, 0xd0000000ull + k * 0x1000 + 8,
					  false, &v, 4));
		CU_ASSERT_EQUAL(d[k].reads, 1);
		CU_ASSERT_EQUAL(d[k].last_off, 8);
	}
	hv_iobus_destroy(bus);
}

static CU_TestInfo tests[] = {
	{"dispatch_by_range", test_dispatch_by_range},
	{"overlaps_are_refused", test_overlaps_are_refused},
	{"many_ranges_stay_sorted", test_many_ranges_stay_sorted},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/iobus", NULL, NULL, tests);
