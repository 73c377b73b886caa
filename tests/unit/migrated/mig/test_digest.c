// SPDX-License-Identifier: MIT
/*
 * The memory digest (migrated/mig/digest.c): known answers over a small
 * fixed memory map for both ways of computing it -- from a page table
 * (the source's switchover digest, the destination's table filled as it
 * decodes) and from memory (mig_digest_compute*: the re-read and the
 * verification) -- and that any one page table entry, or any one page,
 * changed changes the digest, wherever it is in its slot. Both sides
 * compute the digest with the same code, so a digest that skips part of
 * the table on both sides still agrees with itself: only known answers
 * and single-entry changes catch that.
 */
#include "tests/harness/hv_test.h"
#include "migrated/mig/digest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two slots, not in gfn order of their ids, neither at gfn 0. */
#define A_ID 2u
#define A_GFN 0x100u
#define A_PAGES 8u
#define B_ID 5u
#define B_GFN 0x40u
#define B_PAGES 5u
#define NR_PAGES (A_PAGES + B_PAGES)
/* Page 3 of slot A is all zero; every other page has content. */
#define ZERO_PAGE 3u

/*
 * The known answers. They define the wire (Digest.algo
 * DIGEST_PAGE64_SHA256): a change here is a protocol change, not a test
 * to update.
 */
static const uint64_t kat_page_hash = 0xa1a6243bd9e7ebb4ull; /* page 0 */
static const uint64_t kat_zero_page_hash = 0xac869b6f32d8bbdbull;
static const uint8_t kat_digest[MIG_DIGEST_LEN] = {
	0xfa, 0xa4, 0xfb, 0x6b, 0xa3, 0xc6, 0x5b, 0xc2,
	0x80, 0xe5, 0x04, 0xb3, 0x09, 0x27, 0x1a, 0x9a,
	0x22, 0x3e, 0xa7, 0x8c, 0xf4, 0x93, 0x1c, 0x83,
	0x8a, 0xb8, 0xea, 0xec, 0x2f, 0xa3, 0x32, 0x80,
};

struct fixed {
	uint8_t *mem; /* NR_PAGES pages: slot A, then slot B */
	struct mig_memmap *map;
	uint64_t table[NR_PAGES];
};

static uint8_t *fixed_page(struct fixed *f, unsigned i)
{
	return f->mem + (size_t)i * HV_PAGE_SIZE;
}

static void fixed_init(struct fixed *f)
{
	struct mig_memmap_slot slots[2];

	CU_ASSERT_EQUAL_FATAL(posix_memalign((void **)&f->mem, HV_PAGE_SIZE,
					     NR_PAGES * HV_PAGE_SIZE),
			      0);
	for (unsigned i = 0; i < NR_PAGES; i++)
		for (unsigned k = 0; k < HV_PAGE_SIZE; k++)
			fixed_page(f, i)[k] =
				i == ZERO_PAGE
					? 0
					: (uint8_t)(i * 37 + k * 13 + (k >> 8));
	slots[0] = (struct mig_memmap_slot){ A_ID, A_GFN, A_PAGES, f->mem };
	slots[1] = (struct mig_memmap_slot){ B_ID, B_GFN, B_PAGES,
					     fixed_page(f, A_PAGES) };
	CU_ASSERT_EQUAL_FATAL(mig_memmap_create(slots, 2, &f->map), 0);
	CU_ASSERT_EQUAL_FATAL(mig_memmap_pages(f->map), NR_PAGES);
}

static void fixed_fini(struct fixed *f)
{
	mig_memmap_destroy(f->map);
	free(f->mem);
}

static void print_digest(const char *what, const uint8_t d[MIG_DIGEST_LEN])
{
	fprintf(stderr, "  %s:", what);
	for (unsigned i = 0; i < MIG_DIGEST_LEN; i++)
		fprintf(stderr, "%s0x%02x,", i % 8 ? " " : "\n\t", d[i]);
	fprintf(stderr, "\n");
}

/* @d is the known answer; else say what it was, for the record. */
static bool is_kat(const char *what, const uint8_t d[MIG_DIGEST_LEN])
{
	if (!memcmp(d, kat_digest, MIG_DIGEST_LEN))
		return true;
	print_digest(what, d);
	return false;
}

static void table_digest(struct fixed *f, uint8_t out[MIG_DIGEST_LEN])
{
	CU_ASSERT_EQUAL_FATAL(mig_digest_table(f->map, f->table, out), 0);
}

static void memory_digest(struct fixed *f, unsigned nthreads,
			  uint8_t out[MIG_DIGEST_LEN])
{
	uint64_t pages = 0;

	CU_ASSERT_EQUAL_FATAL(mig_digest_compute(f->map, nthreads, out,
						 &pages),
			      0);
	CU_ASSERT_EQUAL(pages, NR_PAGES);
}

/* The page table of the fixed memory, as the source builds it. */
static void fill_table(struct fixed *f)
{
	CU_ASSERT_EQUAL_FATAL(mig_hash_range(f->mem, NR_PAGES, NULL, NULL,
					     f->table, 1),
			      0);
}

static void test_page_hash_known_answers(void)
{
	struct fixed f;
	uint64_t h, z;

	fixed_init(&f);
	h = mig_page_hash(fixed_page(&f, 0));
	z = mig_zero_page_hash();
	if (h != kat_page_hash || z != kat_zero_page_hash)
		fprintf(stderr, "  page hash 0x%016llxull, zero 0x%016llxull\n",
			(unsigned long long)h, (unsigned long long)z);
	CU_ASSERT_EQUAL(h, kat_page_hash);
	CU_ASSERT_EQUAL(z, kat_zero_page_hash);
	CU_ASSERT_EQUAL(mig_page_hash(fixed_page(&f, ZERO_PAGE)), z);
	fixed_fini(&f);
}

static void test_digest_known_answer_from_table_and_from_memory(void)
{
	uint64_t rel_table[NR_PAGES], data[2] = { ~0ULL, ~0ULL };
	const uint64_t *datas[2] = { data, data + 1 };
	uint8_t d[MIG_DIGEST_LEN];
	struct fixed f;

	fixed_init(&f);
	fill_table(&f);
	CU_ASSERT_EQUAL(f.table[ZERO_PAGE], mig_zero_page_hash());
	table_digest(&f, d);
	CU_ASSERT(is_kat("from the table", d));

	/* Entries stored ^ the zero hash (the destination's table). */
	CU_ASSERT_EQUAL_FATAL(mig_hash_range_rel(f.mem, NR_PAGES, NULL, NULL,
						 rel_table,
						 mig_zero_page_hash(), 1),
			      0);
	CU_ASSERT_EQUAL(rel_table[ZERO_PAGE], 0);
	CU_ASSERT_EQUAL_FATAL(mig_digest_table_rel(f.map, rel_table,
						   mig_zero_page_hash(), d),
			      0);
	CU_ASSERT(is_kat("from the table, relative", d));

	memory_digest(&f, 1, d);
	CU_ASSERT(is_kat("from memory", d));
	memory_digest(&f, 4, d);
	CU_ASSERT(is_kat("from memory, 4 threads", d));
	/* The zero page as a hole of the data map: not read, same hash. */
	data[0] &= ~(1ULL << ZERO_PAGE);
	CU_ASSERT_EQUAL_FATAL(mig_digest_compute_data(f.map, datas, 1, d,
						      NULL),
			      0);
	CU_ASSERT(is_kat("from memory with a hole", d));
	fixed_fini(&f);
}

/* First, middle and last page of each slot (table indexes). */
static const unsigned probes[] = {
	0, A_PAGES / 2, A_PAGES - 1,
	A_PAGES, A_PAGES + B_PAGES / 2, A_PAGES + B_PAGES - 1,
};

static void test_any_one_table_entry_changed_changes_the_digest(void)
{
	uint8_t d0[MIG_DIGEST_LEN], d[MIG_DIGEST_LEN];
	struct fixed f;

	fixed_init(&f);
	fill_table(&f);
	/* Against the digest of the table as it is, not the known answer:
	 * this holds whatever the answer is. */
	table_digest(&f, d0);
	for (unsigned k = 0; k < HV_ARRAY_SIZE(probes); k++) {
		unsigned i = probes[k];

		for (unsigned bit = 0; bit < 64; bit += 63) {
			f.table[i] ^= 1ULL << bit;
			table_digest(&f, d);
			if (!memcmp(d, d0, MIG_DIGEST_LEN)) {
				fprintf(stderr, "  entry %u bit %u not in the "
						"digest\n",
					i, bit);
				CU_FAIL("a changed table entry left the "
					"digest as it was");
			}
			f.table[i] ^= 1ULL << bit;
		}
		table_digest(&f, d);
		CU_ASSERT(!memcmp(d, d0, MIG_DIGEST_LEN));
	}
	fixed_fini(&f);
}

static void test_any_one_page_changed_changes_the_digest(void)
{
	static const unsigned offsets[] = { 0, HV_PAGE_SIZE - 1 };
	uint8_t d0[MIG_DIGEST_LEN], d[MIG_DIGEST_LEN];
	struct fixed f;

	fixed_init(&f);
	memory_digest(&f, 1, d0);
	for (unsigned k = 0; k < HV_ARRAY_SIZE(probes); k++) {
		for (unsigned o = 0; o < HV_ARRAY_SIZE(offsets); o++) {
			uint8_t *p = fixed_page(&f, probes[k]) + offsets[o];

			*p ^= 0x01;
			memory_digest(&f, 1, d);
			if (!memcmp(d, d0, MIG_DIGEST_LEN)) {
				fprintf(stderr, "  page %u byte %u not in the "
						"digest\n",
					probes[k], offsets[o]);
				CU_FAIL("a changed page left the digest as "
					"it was");
			}
			*p ^= 0x01;
		}
	}
	memory_digest(&f, 1, d);
	CU_ASSERT(!memcmp(d, d0, MIG_DIGEST_LEN));
	fixed_fini(&f);
}

static CU_TestInfo tests[] = {
	{ "page_hash_known_answers", test_page_hash_known_answers },
	{ "digest_known_answer_from_table_and_from_memory",
	  test_digest_known_answer_from_table_and_from_memory },
	{ "any_one_table_entry_changed_changes_the_digest",
	  test_any_one_table_entry_changed_changes_the_digest },
	{ "any_one_page_changed_changes_the_digest",
	  test_any_one_page_changed_changes_the_digest },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/digest", NULL, NULL, tests);
