// SPDX-License-Identifier: MIT
/*
 * The snapshot state file (migrated/mig/snap_state.c): what is written
 * reads back the same, and every damaged file is refused with its own
 * error and a reason that names the damage: truncated, longer than its
 * header says, a flipped byte anywhere (checksum), another format
 * version, a file that is not a snapshot at all, a layout this build
 * cannot make.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "migrated/mig/layout.h"
#include "migrated/mig/snap_state.h"

#define MEM (64ULL << 20)
#define NPAGES (MEM / HV_PAGE_SIZE)

static char dir[] = "/tmp/test_snap_state.XXXXXX";
static char path[sizeof(dir) + 16];

static int suite_init(void)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/state", dir);
	return 0;
}

static int suite_clean(void)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

/* A 64 MiB, 2-vCPU soft VM's layout, packed; free() it. */
static uint8_t *layout_packed(size_t *len, const char *accel)
{
	Mig__VmLayout l;
	Mig__Memslot s, *pp = &s;
	uint8_t *buf;

	mig__vm_layout__init(&l);
	mig__memslot__init(&s);
	s.id = 0;
	s.base_gfn = 0;
	s.npages = NPAGES;
	l.n_slots = 1;
	l.slots = &pp;
	l.nr_vcpus = 2;
	l.accel = (char *)accel;
	l.page_size = HV_PAGE_SIZE;
	l.name = "vm1";
	*len = mig__vm_layout__get_packed_size(&l);
	buf = malloc(*len);
	mig__vm_layout__pack(&l, buf);
	return buf;
}

static uint64_t *table;

static int write_good(const char *accel)
{
	uint8_t vs[100], dig[32];
	struct hv_blob b = { vs, sizeof(vs) };
	size_t ll;
	uint8_t *l = layout_packed(&ll, accel);
	int ret;

	for (size_t i = 0; i < sizeof(vs); i++)
		vs[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(dig); i++)
		dig[i] = (uint8_t)(0xa0 + i);
	free(table);
	table = malloc(NPAGES * 8);
	for (uint64_t i = 0; i < NPAGES; i++)
		table[i] = i * 0x9e3779b97f4a7c15ull;
	ret = mig_snap_state_write(path, MEM, l, ll, &b, table, dig, 1234);
	free(l);
	return ret;
}

static int read_it(char *why, size_t len)
{
	struct mig_snap_state st = { 0 };
	int ret = mig_snap_state_read(path, NULL, &st, why, len);

	mig_snap_state_fini(&st);
	return ret;
}

static void test_state_round_trip_is_exact(void)
{
	struct mig_snap_state st = { 0 };
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(write_good("soft"), 0);
	CU_ASSERT_EQUAL_FATAL(mig_snap_state_read(path, NULL, &st, why,
						  sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(st.mem_bytes, MEM);
	CU_ASSERT_EQUAL(st.npages, NPAGES);
	CU_ASSERT_EQUAL(st.created_unix_ms, 1234);
	CU_ASSERT_EQUAL(st.cfg.accel, HV_ACCEL_SOFT);
	CU_ASSERT_EQUAL(st.cfg.nr_vcpus, 2);
	CU_ASSERT_EQUAL(st.cfg.mem_bytes, MEM);
	CU_ASSERT_STRING_EQUAL(st.name, "vm1");
	CU_ASSERT_EQUAL(st.vmstate.len, 100);
	CU_ASSERT_EQUAL(st.vmstate.data[99], 99);
	CU_ASSERT_EQUAL(memcmp(st.table, table, NPAGES * 8), 0);
	CU_ASSERT_EQUAL(st.digest[31], 0xa0 + 31);
	mig_snap_state_fini(&st);
}

static void test_truncated_state_is_refused(void)
{
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(write_good("soft"), 0);
	CU_ASSERT_EQUAL(truncate(path, 5000), 0);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));
	/* Shorter than the header itself. */
	CU_ASSERT_EQUAL(truncate(path, 40), 0);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));
}

static void test_trailing_bytes_are_refused(void)
{
	char why[256] = "";
	int fd;

	CU_ASSERT_EQUAL_FATAL(write_good("soft"), 0);
	fd = open(path, O_WRONLY | O_APPEND);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "x", 1), 1);
	close(fd);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "longer"));
}

static void flip(off_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t c = 0;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	CU_ASSERT_EQUAL(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void test_any_flipped_byte_fails_the_checksum(void)
{
	/* In the layout, the VM state, the page table, the digest. */
	const off_t offs[] = { 70, 64 + 40, 2000, 64 * 1024, -40 };
	char why[256] = "";

	for (size_t i = 0; i < HV_ARRAY_SIZE(offs); i++) {
		off_t o = offs[i];

		CU_ASSERT_EQUAL_FATAL(write_good("soft"), 0);
		if (o < 0) {
			struct stat sb;

			CU_ASSERT_EQUAL_FATAL(stat(path, &sb), 0);
			o += sb.st_size;
		}
		flip(o);
		CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EBADMSG);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "checksum"));
	}
}

static void test_other_version_is_refused_naming_both(void)
{
	char why[256] = "";
	uint32_t v = MIG_SNAP_VERSION + 1;
	int fd;

	CU_ASSERT_EQUAL_FATAL(write_good("soft"), 0);
	fd = open(path, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, &v, 4, 8), 4);
	close(fd);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EPROTONOSUPPORT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "version 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "version 1 only"));
}

static void test_foreign_file_is_refused(void)
{
	char why[256] = "";
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char junk[4096];

	CU_ASSERT_FATAL(fd >= 0);
	memset(junk, 'z', sizeof(junk));
	CU_ASSERT_EQUAL(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a snapshot state file"));
	/* A short one too. */
	CU_ASSERT_EQUAL(truncate(path, 20), 0);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EPROTO);
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cannot open"));
}

static void test_unknown_accelerator_is_refused(void)
{
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(write_good("vmx"), 0);
	CU_ASSERT_EQUAL(read_it(why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "accelerator"));
}

static void test_oversized_lengths_are_refused_on_write(void)
{
	uint8_t dig[32] = { 0 }, l[8] = { 0 };
	struct hv_blob b = { l, MIG_SNAP_VMSTATE_MAX + 1 };

	CU_ASSERT_EQUAL(mig_snap_state_write(path, MEM, l, sizeof(l), &b,
					     table, dig, 0),
			-EINVAL);
	b.len = 0;
	CU_ASSERT_EQUAL(mig_snap_state_write(path, MEM + 1, l, sizeof(l), &b,
					     table, dig, 0),
			-EINVAL);
	free(table);
	table = NULL;
}

static CU_TestInfo tests[] = {
	{ "state_round_trip_is_exact", test_state_round_trip_is_exact },
	{ "truncated_state_is_refused", test_truncated_state_is_refused },
	{ "trailing_bytes_are_refused", test_trailing_bytes_are_refused },
	{ "any_flipped_byte_fails_the_checksum",
	  test_any_flipped_byte_fails_the_checksum },
	{ "other_version_is_refused_naming_both",
	  test_other_version_is_refused_naming_both },
	{ "foreign_file_is_refused", test_foreign_file_is_refused },
	{ "unknown_accelerator_is_refused",
	  test_unknown_accelerator_is_refused },
	{ "oversized_lengths_are_refused_on_write",
	  test_oversized_lengths_are_refused_on_write },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/snap_state", suite_init, suite_clean, tests);
