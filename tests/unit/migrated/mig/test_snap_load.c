// SPDX-License-Identifier: MIT
/*
 * mig_snap_load() (migrated/mig/snap_load.c): a snapshot of a soft VM
 * writing stamps loads into a new VM whose RAM equals the snapshotted
 * VM's page for page and which then runs on; a flipped byte in a page, a
 * short memory file or a damaged state file is refused with its reason
 * and no VM.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrated/mig/snap_load.h"
#include "migrated/mig/snap_save.h"
#include "migrated/mig/snap_state.h"
#include "tests/unit/migrated/mig/session_util.h"

static char top[] = "/tmp/test_snap_load.XXXXXX";
static char dir[sizeof(top) + 8];
static uint8_t *ram; /* the snapshotted VM's RAM at its pause */

static int suite_init(void)
{
	if (!mkdtemp(top) || su_init())
		return -1;
	snprintf(dir, sizeof(dir), "%s/s", top);
	return 0;
}

/* One snapshot of a running VM, left paused, for every test (made by
 * the first that needs it: the helpers assert, so inside a test). */
static void need_snapshot(void)
{
	struct mig_snap_opts o = { .leave_paused = true };
	struct mig_snap_stats st;
	struct hv_vm *vm;
	char why[512];
	bool skip;

	if (ram)
		return;
	vm = su_vm(HV_ACCEL_SOFT, 2, 4000, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	usleep(200000);
	CU_ASSERT_EQUAL_FATAL(mig_snap_save(vm, "orig", dir, &o, &st, why,
					    sizeof(why)),
			      0);
	ram = malloc(SU_MEM);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ram);
	memcpy(ram, hv_vm_ram(vm), SU_MEM);
	hv_vm_destroy(vm);
}

static int suite_clean(void)
{
	char cmd[128];

	free(ram);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd))
		return -1;
	return su_clean();
}

/* Copy the snapshot to @name under top; its path into @out. */
static void copy(const char *name, char *out, size_t n)
{
	char cmd[1024];

	need_snapshot();
	snprintf(out, n, "%s/%s", top, name);
	snprintf(cmd, sizeof(cmd), "rm -rf %s && cp -a --sparse=always %s %s",
		 out, dir, out);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
}

static int load(const char *d, struct hv_vm **vm, char *why, size_t n)
{
	struct mig_snap_load_stats st;
	struct hv_vm_cfg base;

	hv_vm_cfg_init(&base, HV_ACCEL_SOFT, HV_VM_MIN_MEM, 1);
	base.accel = HV_ACCEL_INVALID;
	return mig_snap_load(d, "copy", &base, vm, &st, why, n);
}

static void test_loaded_vm_has_the_snapshot_ram_and_runs(void)
{
	struct hv_vm *vm = NULL;
	uint64_t stamped = 0;
	char why[512] = "";
	int ret;

	need_snapshot();
	ret = load(dir, &vm, why, sizeof(why));
	if (ret)
		printf("\n    load: %s", why);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_CREATED);
	CU_ASSERT_EQUAL(vm->cfg.nr_vcpus, 2);
	CU_ASSERT_EQUAL(vm->cfg.accel, HV_ACCEL_SOFT);
	CU_ASSERT_EQUAL(memcmp(hv_vm_ram(vm), ram, SU_MEM), 0);
	CU_ASSERT_STRING_EQUAL(vm->cfg.name, "copy");
	CU_ASSERT_EQUAL_FATAL(hv_vm_start(vm), 0);
	CU_ASSERT_TRUE(su_vm_progresses(vm, 2000));
	CU_ASSERT_EQUAL(hv_vm_pause(vm), 0);
	CU_ASSERT_TRUE(su_stamps_ok(hv_vm_ram(vm), &vm->cfg, &stamped));
	CU_ASSERT(stamped > 0);
	hv_vm_destroy(vm);
}

static void test_flipped_byte_in_a_page_is_refused_naming_it(void)
{
	struct hv_vm *vm = NULL;
	char d[256], p[300], why[512] = "";
	off_t off;
	uint8_t c;
	int fd;

	copy("flip", d, sizeof(d));
	snprintf(p, sizeof(p), "%s/" MIG_SNAP_MEMORY_FILE, d);
	fd = open(p, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	off = lseek(fd, 4 << 20, SEEK_DATA) + 17;
	CU_ASSERT_EQUAL(pread(fd, &c, 1, off), 1);
	c ^= 1;
	CU_ASSERT_EQUAL(pwrite(fd, &c, 1, off), 1);
	close(fd);
	CU_ASSERT_EQUAL(load(d, &vm, why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NULL(vm);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "1 page(s) do not match"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "gfn"));
}

static void test_data_in_a_hole_is_refused(void)
{
	struct hv_vm *vm = NULL;
	char d[256], p[300], why[512] = "";
	int fd;

	copy("hole", d, sizeof(d));
	snprintf(p, sizeof(p), "%s/" MIG_SNAP_MEMORY_FILE, d);
	fd = open(p, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	/* The last page of RAM: the guest never writes it. */
	CU_ASSERT_EQUAL(pwrite(fd, "x", 1, (off_t)SU_MEM - 100), 1);
	close(fd);
	CU_ASSERT_EQUAL(load(d, &vm, why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NULL(vm);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "do not match their digest"));
}

static void test_short_memory_file_is_refused(void)
{
	struct hv_vm *vm = NULL;
	char d[256], p[300], why[512] = "";

	copy("short", d, sizeof(d));
	snprintf(p, sizeof(p), "%s/" MIG_SNAP_MEMORY_FILE, d);
	CU_ASSERT_EQUAL(truncate(p, SU_MEM - HV_PAGE_SIZE), 0);
	CU_ASSERT_EQUAL(load(d, &vm, why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NULL(vm);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));
}

static void test_damaged_state_file_is_refused(void)
{
	struct hv_vm *vm = NULL;
	char d[256], p[300], why[512] = "";

	copy("state", d, sizeof(d));
	snprintf(p, sizeof(p), "%s/" MIG_SNAP_STATE_FILE, d);
	CU_ASSERT_EQUAL(truncate(p, 1000), 0);
	CU_ASSERT_EQUAL(load(d, &vm, why, sizeof(why)), -EBADMSG);
	CU_ASSERT_PTR_NULL(vm);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));
	CU_ASSERT_EQUAL(load("relative", &vm, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "absolute"));
}

static CU_TestInfo tests[] = {
	{ "loaded_vm_has_the_snapshot_ram_and_runs",
	  test_loaded_vm_has_the_snapshot_ram_and_runs },
	{ "flipped_byte_in_a_page_is_refused_naming_it",
	  test_flipped_byte_in_a_page_is_refused_naming_it },
	{ "data_in_a_hole_is_refused", test_data_in_a_hole_is_refused },
	{ "short_memory_file_is_refused", test_short_memory_file_is_refused },
	{ "damaged_state_file_is_refused",
	  test_damaged_state_file_is_refused },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/snap_load", suite_init, suite_clean, tests);
