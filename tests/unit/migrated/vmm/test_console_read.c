// SPDX-License-Identifier: MIT
/*
 * One vm_console read by stream position (migrated/vmm/console_read.c),
 * against hvcore's console itself: where a read starts (a position, the
 * end, the oldest byte kept), what it says was lost, and where the next
 * one starts.
 */
#include <string.h>

#include "hvcore/console.h"
#include "migrated/vmm/console_read.h"
#include "tests/harness/hv_test.h"

static struct hv_console *console_with(size_t ring, const char *text)
{
	struct hv_console *c = NULL;

	CU_ASSERT_EQUAL_FATAL(hv_console_create(ring, NULL, false, &c), 0);
	hv_console_put(c, text, strlen(text));
	return c;
}

/* Reading from 0 in small pieces yields the stream once, in order, each
 * answer's next the following one's start, end the whole stream. */
static void test_positions_chain_without_gap_or_repeat(void)
{
	struct hv_console *c = console_with(64, "Linux version 6.1\r\n# ");
	struct migd_console_chunk ch;
	char all[64] = "", buf[8];
	uint64_t pos = 0;

	do {
		migd_console_chunk_read(c, pos, false, buf, 5, &ch);
		CU_ASSERT_EQUAL(ch.start, pos);
		CU_ASSERT_EQUAL(ch.lost, 0);
		CU_ASSERT_EQUAL(ch.next, ch.start + ch.len);
		CU_ASSERT_EQUAL(ch.end, 21);
		strncat(all, buf, ch.len);
		pos = ch.next;
	} while (ch.len);
	CU_ASSERT_STRING_EQUAL(all, "Linux version 6.1\r\n# ");
	CU_ASSERT_EQUAL(pos, 21);
	hv_console_destroy(c);
}

/* from_end: nothing now, and the next read gets only what comes after. */
static void test_from_end_reads_only_new_output(void)
{
	struct hv_console *c = console_with(64, "old boot noise\n");
	struct migd_console_chunk ch;
	char buf[64];

	migd_console_chunk_read(c, 0, true, buf, sizeof(buf), &ch);
	CU_ASSERT_EQUAL(ch.len, 0);
	CU_ASSERT_EQUAL(ch.next, 15);
	CU_ASSERT_EQUAL(ch.lost, 0);
	hv_console_put(c, "4\n", 2);
	migd_console_chunk_read(c, ch.next, false, buf, sizeof(buf), &ch);
	CU_ASSERT_EQUAL(ch.len, 2);
	CU_ASSERT_EQUAL(ch.start, 15);
	CU_ASSERT_EQUAL(memcmp(buf, "4\n", 2), 0);
	hv_console_destroy(c);
}

/* A reader that fell behind the ring: it reads the oldest byte kept, and
 * lost is exactly the bytes between its position and that one. */
static void test_fallen_behind_reader_learns_what_it_lost(void)
{
	struct hv_console *c = console_with(16, "");
	struct migd_console_chunk ch;
	char buf[32];

	for (int i = 0; i < 10; i++)
		hv_console_put(c, "0123456789", 10); /* 100 bytes, 16 kept */
	migd_console_chunk_read(c, 30, false, buf, sizeof(buf), &ch);
	CU_ASSERT_EQUAL(ch.lost, 100 - 16 - 30);
	CU_ASSERT_EQUAL(ch.start, 84);
	CU_ASSERT_EQUAL(ch.len, 16);
	CU_ASSERT_EQUAL(ch.next, 100);
	CU_ASSERT_EQUAL(memcmp(buf, "4567890123456789", 16), 0);
	/* From 0: all that is kept, the rest counted as lost. */
	migd_console_chunk_read(c, 0, false, buf, 4, &ch);
	CU_ASSERT_EQUAL(ch.lost, 84);
	CU_ASSERT_EQUAL(ch.start, 84);
	CU_ASSERT_EQUAL(ch.next, 88);
	CU_ASSERT(ch.next < ch.end);
	/* A reader in step loses nothing. */
	migd_console_chunk_read(c, ch.next, false, buf, sizeof(buf), &ch);
	CU_ASSERT_EQUAL(ch.lost, 0);
	CU_ASSERT_EQUAL(ch.len, 12);
	hv_console_destroy(c);
}

/* A position the stream never reached (a reader of an earlier VM of the
 * same name) is not waited for: it continues from the end, losing
 * nothing of what comes next. */
static void test_position_beyond_end_continues_from_end(void)
{
	struct hv_console *c = console_with(64, "abc");
	struct migd_console_chunk ch;
	char buf[16];

	migd_console_chunk_read(c, 1000, false, buf, sizeof(buf), &ch);
	CU_ASSERT_EQUAL(ch.len, 0);
	CU_ASSERT_EQUAL(ch.lost, 0);
	CU_ASSERT_EQUAL(ch.next, 3);
	CU_ASSERT_EQUAL(ch.end, 3);
	hv_console_put(c, "d", 1);
	migd_console_chunk_read(c, ch.next, false, buf, sizeof(buf), &ch);
	CU_ASSERT_EQUAL(ch.len, 1);
	CU_ASSERT_EQUAL(buf[0], 'd');
	hv_console_destroy(c);
}

static CU_TestInfo tests[] = {
	{"positions_chain_without_gap_or_repeat",
	 test_positions_chain_without_gap_or_repeat},
	{"from_end_reads_only_new_output", test_from_end_reads_only_new_output},
	{"fallen_behind_reader_learns_what_it_lost",
	 test_fallen_behind_reader_learns_what_it_lost},
	{"position_beyond_end_continues_from_end",
	 test_position_beyond_end_continues_from_end},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/vmm/console_read", NULL, NULL, tests);
