// SPDX-License-Identifier: MIT
/* The guest console's output ring, log file and input queue
 * (hvcore/console.c). */
#include "tests/harness/hv_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/console.h"

static void test_reads_follow_positions(void)
{
	struct hv_console *c;
	uint64_t a = 0, b = 0, lost = 9;
	char buf[32];

	CU_ASSERT_EQUAL_FATAL(hv_console_create(16, NULL, false, &c), 0);
	hv_console_put(c, "hello ", 6);
	CU_ASSERT_EQUAL(hv_console_read(c, &a, buf, 3, &lost), 3);
	CU_ASSERT_EQUAL(lost, 0);
	CU_ASSERT_EQUAL(memcmp(buf, "hel", 3), 0);
	hv_console_put(c, "world", 5);
	CU_ASSERT_EQUAL(hv_console_read(c, &a, buf, sizeof(buf), NULL), 8);
	CU_ASSERT_EQUAL(memcmp(buf, "lo world", 8), 0);
	CU_ASSERT_EQUAL(a, 11);
	CU_ASSERT_EQUAL(hv_console_read(c, &a, buf, sizeof(buf), NULL), 0);
	/* A second reader is independent of the first. */
	CU_ASSERT_EQUAL(hv_console_read(c, &b, buf, sizeof(buf), NULL), 11);
	CU_ASSERT_EQUAL(hv_console_end(c), 11);
	hv_console_destroy(c);
}

/* A reader that fell behind the ring is told how much it lost and reads
 * the newest ring_bytes, in order, across the wrap. */
static void test_wrap_reports_lost_bytes(void)
{
	struct hv_console *c;
	uint64_t pos = 0, lost = 0;
	char buf[32];

	CU_ASSERT_EQUAL_FATAL(hv_console_create(8, NULL, false, &c), 0);
	hv_console_put(c, "0123456", 7);
	hv_console_put(c, "789abcdefghij", 13); /* longer than the ring */
	CU_ASSERT_EQUAL(hv_console_read(c, &pos, buf, sizeof(buf), &lost), 8);
	CU_ASSERT_EQUAL(lost, 12);
	CU_ASSERT_EQUAL(memcmp(buf, "cdefghij", 8), 0);
	CU_ASSERT_EQUAL(pos, 20);
	hv_console_destroy(c);
}

static void test_log_file_holds_output(void)
{
	char dir[] = "/tmp/hv-console-XXXXXX", path[64], got[16] = {0};
	struct hv_console *c;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/console.log", dir);
	CU_ASSERT_EQUAL_FATAL(hv_console_create(0, path, false, &c), 0);
	hv_console_put(c, "boot ok\n", 8);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fread(got, 1, sizeof(got), f), 8);
	CU_ASSERT_STRING_EQUAL(got, "boot ok\n");
	fclose(f);
	hv_console_destroy(c);
	unlink(path);
	rmdir(dir);
}

/* The file is bounded: past the cap it moves to .1 and starts again. */
static void test_log_file_rotates_at_its_cap(void)
{
	char dir[] = "/tmp/hv-console-XXXXXX", path[64], old[70];
	static char chunk[64 << 10];
	struct hv_console *c;
	struct stat st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/console.log", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	memset(chunk, 'x', sizeof(chunk));
	CU_ASSERT_EQUAL_FATAL(hv_console_create(0, path, false, &c), 0);
	for (unsigned i = 0; i < HV_CONSOLE_LOG_MAX / sizeof(chunk) + 2; i++)
		hv_console_put(c, chunk, sizeof(chunk));
	CU_ASSERT_EQUAL(stat(old, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, HV_CONSOLE_LOG_MAX);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 2 * sizeof(chunk));
	hv_console_destroy(c);
	unlink(path);
	unlink(old);
	rmdir(dir);
}

/* A continued log (a live update's new worker) keeps what the file held,
 * appends, and counts the old bytes towards the rotation cap. */
static void test_kept_log_continues_the_file(void)
{
	char dir[] = "/tmp/hv-console-XXXXXX", path[64], old[70];
	char got[32] = {0};
	static char chunk[64 << 10];
	struct hv_console *c;
	struct stat st;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/console.log", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	CU_ASSERT_EQUAL_FATAL(hv_console_create(0, path, false, &c), 0);
	hv_console_put(c, "before\n", 7);
	hv_console_destroy(c);
	CU_ASSERT_EQUAL_FATAL(hv_console_create(0, path, true, &c), 0);
	hv_console_put(c, "after\n", 6);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fread(got, 1, sizeof(got), f), 13);
	CU_ASSERT_STRING_EQUAL(got, "before\nafter\n");
	fclose(f);
	/* 13 bytes were there: MAX - 10 more reach the cap (they would not
	 * if only this console's 6 counted), so the next byte rotates. */
	memset(chunk, 'x', sizeof(chunk));
	for (unsigned i = 0; i < HV_CONSOLE_LOG_MAX / sizeof(chunk) - 1; i++)
		hv_console_put(c, chunk, sizeof(chunk));
	hv_console_put(c, chunk, sizeof(chunk) - 10);
	hv_console_put(c, "z", 1);
	CU_ASSERT_EQUAL(stat(old, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, HV_CONSOLE_LOG_MAX + 3);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 1);
	hv_console_destroy(c);
	unlink(path);
	unlink(old);
	rmdir(dir);
}

static void test_open_failure_is_reported(void)
{
	struct hv_console *c = NULL;

	CU_ASSERT(hv_console_create(0, "/nonexistent-dir/console.log", false,
				    &c) < 0);
	CU_ASSERT_PTR_NULL(c);
}

static void on_input(void *arg)
{
	(*(int *)arg)++;
}

static void test_input_queue_is_bounded_and_notifies(void)
{
	static char big[HV_CONSOLE_IN_MAX + 10];
	struct hv_console *c;
	char buf[8];
	int calls = 0;

	CU_ASSERT_EQUAL_FATAL(hv_console_create(0, NULL, false, &c), 0);
	hv_console_set_notify(c, on_input, &calls);
	CU_ASSERT_EQUAL(hv_console_get(c, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(hv_console_write(c, "ls\n", 3), 3);
	CU_ASSERT_EQUAL(calls, 1);
	CU_ASSERT_EQUAL(hv_console_input_pending(c), 3);
	CU_ASSERT_EQUAL(hv_console_get(c, buf, 2), 2);
	CU_ASSERT_EQUAL(memcmp(buf, "ls", 2), 0);
	CU_ASSERT_EQUAL(hv_console_get(c, buf, sizeof(buf)), 1);
	CU_ASSERT_EQUAL(buf[0], '\n');
	memset(big, 'y', sizeof(big));
	CU_ASSERT_EQUAL(hv_console_write(c, big, sizeof(big)),
			HV_CONSOLE_IN_MAX);
	CU_ASSERT_EQUAL(hv_console_write(c, "z", 1), 0);
	CU_ASSERT_EQUAL(calls, 2);
	hv_console_destroy(c);
}

static CU_TestInfo tests[] = {
	{"reads_follow_positions", test_reads_follow_positions},
	{"wrap_reports_lost_bytes", test_wrap_reports_lost_bytes},
	{"log_file_holds_output", test_log_file_holds_output},
	{"log_file_rotates_at_its_cap", test_log_file_rotates_at_its_cap},
	{"kept_log_continues_the_file", test_kept_log_continues_the_file},
	{"open_failure_is_reported", test_open_failure_is_reported},
	{"input_queue_is_bounded_and_notifies",
	 test_input_queue_is_bounded_and_notifies},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/console", NULL, NULL, tests);
