// SPDX-License-Identifier: MIT
/*
 * mig_snap_disk_writer() (migrated/mig/snap_disks.c): a child process
 * holding an image open for writing is seen, with its pid; one holding it
 * read-only is not, nor this process's own descriptor; a missing image is
 * -ENOENT.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrated/mig/snap_disks.h"

static char top[] = "/tmp/test_snap_disks.XXXXXX";
static char img[sizeof(top) + 16];

static int suite_init(void)
{
	int fd;

	if (!mkdtemp(top))
		return -1;
	snprintf(img, sizeof(img), "%s/disk.img", top);
	fd = open(img, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int suite_clean(void)
{
	unlink(img);
	rmdir(top);
	return 0;
}

/* A child that opens @img with @flags, says so on a pipe, and waits. */
static pid_t holder(int flags)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		int fd = open(img, flags);

		close(p[0]);
		if (write(p[1], fd >= 0 ? "y" : "n", 1) != 1 || fd < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1 || c != 'y')
		pid = -1;
	close(p[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_writer_is_seen(void)
{
	pid_t pid = holder(O_RDWR), seen = 0;

	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(mig_snap_disk_writer(img, &seen), 1);
	CU_ASSERT_EQUAL(seen, pid);
	reap(pid);
	CU_ASSERT_EQUAL(mig_snap_disk_writer(img, &seen), 0);
}

static void test_reader_and_self_are_not(void)
{
	pid_t pid = holder(O_RDONLY), seen = 0;
	int fd = open(img, O_RDWR);

	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(mig_snap_disk_writer(img, &seen), 0);
	close(fd);
	reap(pid);
}

static void test_missing_image(void)
{
	pid_t seen = 0;
	char p[sizeof(top) + 16];

	snprintf(p, sizeof(p), "%s/none.img", top);
	CU_ASSERT_EQUAL(mig_snap_disk_writer(p, &seen), -ENOENT);
}

static CU_TestInfo tests[] = {
	{"writer_is_seen", test_writer_is_seen},
	{"reader_and_self_are_not", test_reader_and_self_are_not},
	{"missing_image", test_missing_image},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/snap_disks", suite_init, suite_clean, tests);
