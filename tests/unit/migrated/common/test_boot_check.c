// SPDX-License-Identifier: MIT
/*
 * The boot files of a create request (migrated/vmm/boot_check.c): each
 * bad combination and each unreadable file refused with the option's
 * name, the path and the errno; a good request and the workload guest
 * pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/vm.h"
#include "migrated/common/calls.h"
#include "tests/harness/hv_test.h"

static char dir[64], kernel[128], empty[128];

static int setup(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/migd-boot.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	f = fopen(kernel, "w");
	if (!f)
		return -1;
	fputs("not really a kernel, but a readable file", f);
	fclose(f);
	f = fopen(empty, "w");
	if (!f)
		return -1;
	fclose(f);
	return 0;
}

static int teardown(void)
{
	unlink(kernel);
	unlink(empty);
	rmdir(dir);
	return 0;
}

struct req {
	Migd__VmCreateRequest r;
	Migd__Boot b;
	Migd__Workload w;
};

static void req_init(struct req *q, const char *k, const char *i,
		     const char *cmdline)
{
	migd__vm_create_request__init(&q->r);
	migd__boot__init(&q->b);
	migd__workload__init(&q->w);
	q->r.name = (char *)"vm1";
	q->r.accel = (char *)"kvm";
	q->r.workload = &q->w; /* all zero, as migratectl sends it */
	q->b.kernel = (char *)k;
	q->b.initrd = (char *)i;
	q->b.cmdline = (char *)cmdline;
	q->r.boot = &q->b;
}

/* Check @q for kvm: the return value, @err in *out. */
static int check(struct req *q, enum hv_accel_kind accel, char *err, size_t n)
{
	err[0] = '\0';
	return migd_boot_check(&q->r, accel, err, n);
}

static void test_good_request_and_workload_guest_pass(void)
{
	struct req q;
	char err[512];

	req_init(&q, kernel, kernel, "quiet loglevel=3");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), 0);
	CU_ASSERT(migd_boot_wanted(&q.r));
	/* No boot message at all, or an empty one: the workload guest,
	 * with its options, on any accelerator. */
	req_init(&q, "", "", "");
	q.w.rate_pages = 100;
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_SOFT, err, sizeof(err)), 0);
	CU_ASSERT(!migd_boot_wanted(&q.r));
	q.r.boot = NULL;
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_SOFT, err, sizeof(err)), 0);
}

static void test_initrd_or_cmdline_need_a_kernel(void)
{
	struct req q;
	char err[512];

	req_init(&q, "", kernel, "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--initrd needs --kernel"));
	req_init(&q, "", "", "console=ttyS0");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--cmdline needs --kernel"));
}

/* Every workload option set is named, the unset ones are not. */
static void test_workload_options_named_with_a_kernel(void)
{
	struct req q;
	char err[512];

	req_init(&q, kernel, "", "");
	q.w.pattern = MIGD__WL_PATTERN__WL_PATTERN_RANDOM;
	q.w.prefill = true;
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--pattern --prefill"));
	CU_ASSERT_PTR_NULL(strstr(err, "--rate"));
	req_init(&q, kernel, "", "");
	q.w.rate_pages = 5;
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--rate:"));
}

static void test_kernel_needs_kvm(void)
{
	struct req q;
	char err[512];

	req_init(&q, kernel, "", "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_SOFT, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(err, "booting a Linux kernel needs --accel kvm"));
	/* The daemon's default named as such when the request had none. */
	q.r.accel = (char *)"";
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_SOFT, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "the daemon's default"));
}

/* The open's errno is returned and named with the option and the path. */
static void test_unreadable_files_name_path_and_errno(void)
{
	struct req q;
	char err[512], missing[160], want[200];

	snprintf(missing, sizeof(missing), "%s/nope", dir);
	req_init(&q, missing, "", "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "--kernel '%s': %s (errno %d)", missing,
		 strerror(ENOENT), ENOENT);
	CU_ASSERT_STRING_EQUAL(err, want);
	req_init(&q, kernel, missing, "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--initrd '"));
	if (geteuid()) { /* root reads anything */
		chmod(kernel, 0);
		req_init(&q, kernel, "", "");
		CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)),
				-EACCES);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot read it"));
		chmod(kernel, 0644);
	}
	req_init(&q, empty, "", "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty"));
	req_init(&q, dir, "", "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a regular file"));
	req_init(&q, "boot/vmlinuz", "", "");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "absolute path"));
}

/* HV_BOOT_CMDLINE_MAX - 1 bytes fit (hvcore keeps the NUL), one more
 * does not; a control character never does. */
static void test_cmdline_length_and_characters(void)
{
	char *line = malloc(HV_BOOT_CMDLINE_MAX + 1);
	struct req q;
	char err[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	memset(line, 'a', HV_BOOT_CMDLINE_MAX - 1);
	line[HV_BOOT_CMDLINE_MAX - 1] = '\0';
	req_init(&q, kernel, "", line);
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), 0);
	line[HV_BOOT_CMDLINE_MAX - 1] = 'a';
	line[HV_BOOT_CMDLINE_MAX] = '\0';
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "at most 2047"));
	req_init(&q, kernel, "", "init=/bin/sh\nrm -rf");
	CU_ASSERT_EQUAL(check(&q, HV_ACCEL_KVM, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "control character at byte 12"));
	free(line);
}

static CU_TestInfo tests[] = {
	{"good_request_and_workload_guest_pass",
	 test_good_request_and_workload_guest_pass},
	{"initrd_or_cmdline_need_a_kernel",
	 test_initrd_or_cmdline_need_a_kernel},
	{"workload_options_named_with_a_kernel",
	 test_workload_options_named_with_a_kernel},
	{"kernel_needs_kvm", test_kernel_needs_kvm},
	{"unreadable_files_name_path_and_errno",
	 test_unreadable_files_name_path_and_errno},
	{"cmdline_length_and_characters", test_cmdline_length_and_characters},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/vmm/boot_check", setup, teardown, tests);
