// SPDX-License-Identifier: MIT
/*
 * mig_snap_save() (migrated/mig/snap_save.c) on a small soft VM writing
 * stamps: a live snapshot left paused holds exactly the paused VM's RAM,
 * page for page (a hole where the page is zero); a paused VM is written
 * in one pass; a second snapshot replaces the first whole; a snapshot
 * that fails before its rename leaves the previous one and the VM running;
 * bad requests are refused.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migrated/mig/faultpoint.h"
#include "migrated/mig/snap_save.h"
#include "migrated/mig/snap_state.h"
#include "tests/unit/migrated/mig/session_util.h"

static char top[] = "/tmp/test_snap_save.XXXXXX";

static int suite_init(void)
{
	return mkdtemp(top) ? su_init() : -1;
}

static int suite_clean(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd))
		return -1;
	return su_clean();
}

static void path_of(char *buf, size_t n, const char *dir, const char *f)
{
	snprintf(buf, n, "%s/%s%s%s", top, dir, f ? "/" : "", f ? f : "");
}

/* Pages of the memory file that differ from @ram. */
static uint64_t file_differs(const char *dir, const uint8_t *ram,
			     uint64_t bytes)
{
	static uint8_t page[HV_PAGE_SIZE];
	char p[256];
	uint64_t bad = 0;
	int fd;

	path_of(p, sizeof(p), dir, MIG_SNAP_MEMORY_FILE);
	fd = open(p, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	for (uint64_t o = 0; o < bytes; o += HV_PAGE_SIZE) {
		CU_ASSERT_EQUAL_FATAL(pread(fd, page, HV_PAGE_SIZE, (off_t)o),
				      (ssize_t)HV_PAGE_SIZE);
		if (memcmp(page, ram + o, HV_PAGE_SIZE) && !bad++)
			printf("\n    first differing page at RAM offset "
			       "0x%llx",
			       (unsigned long long)o);
	}
	close(fd);
	return bad;
}

static int save(struct hv_vm *vm, const char *dir, bool leave_paused,
		struct mig_snap_stats *st)
{
	struct mig_snap_opts o = { .leave_paused = leave_paused };
	char p[256], why[512] = "";
	int ret;

	path_of(p, sizeof(p), dir, NULL);
	ret = mig_snap_save(vm, "t", p, &o, st, why, sizeof(why));
	if (ret)
		printf("\n    snapshot: %s", why);
	return ret;
}

static void test_live_snapshot_is_the_ram_of_the_pause(void)
{
	struct mig_snap_stats st;
	uint64_t stamped = 0;
	struct hv_vm *vm;
	struct stat sb;
	char p[256];
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 2, 4000, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	usleep(200000);
	CU_ASSERT_EQUAL_FATAL(save(vm, "live", true, &st), 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	CU_ASSERT_TRUE(st.live);
	CU_ASSERT(st.passes >= 2);
	CU_ASSERT(st.pause_ns > 0);
	CU_ASSERT(st.pages_written > 0);
	/* The VM has not run since the last pass: the file is its RAM. */
	CU_ASSERT_EQUAL(file_differs("live", hv_vm_ram(vm), SU_MEM), 0);
	CU_ASSERT_TRUE(su_stamps_ok(hv_vm_ram(vm), &vm->cfg, &stamped));
	CU_ASSERT(stamped > 0);
	/* Sparse: the never-written RAM takes no disk. */
	path_of(p, sizeof(p), "live", MIG_SNAP_MEMORY_FILE);
	CU_ASSERT_EQUAL_FATAL(stat(p, &sb), 0);
	CU_ASSERT_EQUAL((uint64_t)sb.st_size, SU_MEM);
	CU_ASSERT((uint64_t)sb.st_blocks * 512 < SU_MEM);
	CU_ASSERT_EQUAL(hv_vm_resume(vm), 0);
	CU_ASSERT_TRUE(su_logging_off(vm));
	CU_ASSERT_TRUE(su_vm_progresses(vm, 2000));
	hv_vm_destroy(vm);
}

static void test_paused_vm_is_one_pass_and_stays_paused(void)
{
	struct mig_snap_stats st;
	struct hv_vm *vm;
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 1, 4000, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	CU_ASSERT_EQUAL_FATAL(hv_vm_pause(vm), 0);
	CU_ASSERT_EQUAL_FATAL(save(vm, "paused", false, &st), 0);
	CU_ASSERT_FALSE(st.live);
	CU_ASSERT_EQUAL(st.passes, 1);
	CU_ASSERT_EQUAL(st.pause_ns, 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	CU_ASSERT_EQUAL(file_differs("paused", hv_vm_ram(vm), SU_MEM), 0);
	hv_vm_destroy(vm);
}

/* Runs a live snapshot into "rep" twice; the second must hold the RAM
 * of its own pause, nothing of the first. */
static void test_second_snapshot_replaces_the_first_whole(void)
{
	struct mig_snap_stats st;
	struct hv_vm *vm;
	char p[256];
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 2, 4000, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	CU_ASSERT_EQUAL_FATAL(save(vm, "rep", false, &st), 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	usleep(300000);
	CU_ASSERT_EQUAL_FATAL(save(vm, "rep", true, &st), 0);
	CU_ASSERT_EQUAL(file_differs("rep", hv_vm_ram(vm), SU_MEM), 0);
	/* No temporary directory stays beside it. */
	snprintf(p, sizeof(p), "%s/.rep.partial-%d", top, (int)getpid());
	CU_ASSERT_NOT_EQUAL(access(p, F_OK), 0);
	hv_vm_destroy(vm);
}

static void test_failed_snapshot_leaves_the_previous_one(void)
{
	struct mig_snap_opts o = { 0 };
	struct mig_snap_stats st;
	uint8_t *before;
	struct hv_vm *vm;
	char p[256], why[512] = "";
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 2, 4000, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	CU_ASSERT_EQUAL_FATAL(save(vm, "keep", true, &st), 0);
	before = malloc(SU_MEM);
	CU_ASSERT_PTR_NOT_NULL_FATAL(before);
	memcpy(before, hv_vm_ram(vm), SU_MEM);
	CU_ASSERT_EQUAL_FATAL(hv_vm_resume(vm), 0);
	usleep(200000);
	/* Fails after the files are written, before the rename. */
	CU_ASSERT_EQUAL_FATAL(mig_faultpoints_set(MIG_FP_SNAP_WRITTEN "=fail"),
			      0);
	path_of(p, sizeof(p), "keep", NULL);
	CU_ASSERT_EQUAL(mig_snap_save(vm, "t", p, &o, &st, why, sizeof(why)),
			-EIO);
	mig_faultpoints_set(NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, MIG_FP_SNAP_WRITTEN));
	CU_ASSERT_EQUAL(file_differs("keep", before, SU_MEM), 0);
	snprintf(p, sizeof(p), "%s/.keep.partial-%d", top, (int)getpid());
	CU_ASSERT_NOT_EQUAL(access(p, F_OK), 0);
	CU_ASSERT_TRUE(su_logging_off(vm));
	CU_ASSERT_TRUE(su_vm_progresses(vm, 2000));
	free(before);
	hv_vm_destroy(vm);
}

static void test_bad_requests_are_refused(void)
{
	struct mig_snap_opts o = { 0 };
	struct mig_snap_stats st;
	struct hv_vm *vm;
	char why[512] = "", p[256];
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 1, UINT64_MAX, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	CU_ASSERT_EQUAL(mig_snap_save(vm, "t", "rel/dir", &o, &st, why,
				      sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "absolute"));
	CU_ASSERT_EQUAL(mig_snap_save(vm, "t", "/nonexistent-dir/x/snap", &o,
				      &st, why, sizeof(why)),
			-ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cannot create"));
	CU_ASSERT_TRUE(su_vm_progresses(vm, 2000));
	CU_ASSERT_EQUAL(hv_vm_stop(vm), 0);
	path_of(p, sizeof(p), "stopped", NULL);
	CU_ASSERT_EQUAL(mig_snap_save(vm, "t", p, &o, &st, why, sizeof(why)),
			-EBUSY);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "stopped"));
	hv_vm_destroy(vm);
}

static CU_TestInfo tests[] = {
	{ "live_snapshot_is_the_ram_of_the_pause",
	  test_live_snapshot_is_the_ram_of_the_pause },
	{ "paused_vm_is_one_pass_and_stays_paused",
	  test_paused_vm_is_one_pass_and_stays_paused },
	{ "second_snapshot_replaces_the_first_whole",
	  test_second_snapshot_replaces_the_first_whole },
	{ "failed_snapshot_leaves_the_previous_one",
	  test_failed_snapshot_leaves_the_previous_one },
	{ "bad_requests_are_refused", test_bad_requests_are_refused },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/snap_save", suite_init, suite_clean, tests);
