/* SPDX-License-Identifier: MIT */
/*
 * Test harness over CUnit. Each tests/unit/<area>/test_<object>.c file ends
 * with one HV_TEST_SUITE(); the suites of an area are linked into one binary
 * (unit_<area>) whose main() lives in tests/harness/main.c. ctest runs the
 * binaries; CUnit prints its usual run summary.
 *
 *   static void test_add_refuses_overlap(void) { ... }
 *   static CU_TestInfo tests[] = {
 *	{ "add_refuses_overlap", test_add_refuses_overlap },
 *	CU_TEST_INFO_NULL,
 *   };
 *   HV_TEST_SUITE("hvcore/memslots", NULL, NULL, tests);
 *
 * A binary takes optional suite names (or prefixes) on its command line to
 * run only those.
 */
#ifndef TESTS_HV_TEST_H
#define TESTS_HV_TEST_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdio.h>

void hv_test_register(const char *name, CU_InitializeFunc init,
		      CU_CleanupFunc clean, CU_TestInfo *tests);

#define HV_TEST_SUITE(name, init, clean, tests)                              \
	__attribute__((constructor)) static void hv_test_suite_ctor(void)   \
	{                                                                    \
		hv_test_register(name, init, clean, tests);                  \
	}

/* True when /dev/kvm can be opened read-write. */
bool hv_test_have_kvm(void);

/*
 * Print a visible skip line and count it; tests call it and return.
 * The binary prints "SKIPPED: n" after CUnit's summary.
 */
void hv_test_skip(const char *test, const char *why);

#define HV_TEST_REQUIRE_KVM()                                                \
	do {                                                                 \
		if (!hv_test_have_kvm()) {                                   \
			hv_test_skip(__func__, "/dev/kvm is not available"); \
			return;                                              \
		}                                                            \
	} while (0)

/* Scale factor for long tests: $HV_TEST_SCALE (default 1). */
unsigned hv_test_scale(void);

#endif
