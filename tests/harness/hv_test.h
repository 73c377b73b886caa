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
 *
 * Tests that need /dev/kvm live in their file's one HV_TEST_SUITE_KVM()
 * suite (named "<suite>/kvm" by habit). The binary's --kvm runs only those
 * suites, --no-kvm only the others; tests/CMakeLists.txt makes two ctest
 * tests of an area that has both, the KVM one labelled "kvm".
 */
#ifndef TESTS_HV_TEST_H
#define TESTS_HV_TEST_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdio.h>

void hv_test_register(const char *name, CU_InitializeFunc init,
		      CU_CleanupFunc clean, CU_TestInfo *tests);

void hv_test_register_kvm(const char *name, CU_InitializeFunc init,
			  CU_CleanupFunc clean, CU_TestInfo *tests);

#define HV_TEST_SUITE(name, init, clean, tests)                              \
	__attribute__((constructor)) static void hv_test_suite_ctor(void)   \
	{                                                                    \
		hv_test_register(name, init, clean, tests);                  \
	}

#define HV_TEST_SUITE_KVM(name, init, clean, tests)                          \
	__attribute__((constructor)) static void hv_test_suite_kvm_ctor(void) \
	{                                                                    \
		hv_test_register_kvm(name, init, clean, tests);              \
	}

/* True when /dev/kvm can be opened read-write. */
bool hv_test_have_kvm(void);

/*
 * True inside tools/kvmrig/run.sh (it exports KVMRIG=1): KVM there is
 * nested under QEMU TCG, where an exit costs ~50 us and a guest runs tens
 * of times slower than on a host. Tests that assert host timings (CPU
 * shares, latencies) widen their bounds there, and say so; correctness
 * checks stay the same.
 */
bool hv_test_kvm_emulated(void);

/*
 * Print a visible skip line and count it; tests call it and return.
 * The binary prints "SKIPPED: n" after CUnit's summary.
 */
void hv_test_skip(const char *test, const char *why);

/*
 * A test that needs KVM and finds none fails: ctest runs the tests labelled
 * "kvm" only where /dev/kvm is (tools/test.sh runs them in the KVM rig,
 * tools/kvmrig/run.sh, on a host without it), so a missing /dev/kvm there
 * is a broken setup, never a skip.
 */
#define HV_TEST_REQUIRE_KVM()                                                \
	do {                                                                 \
		if (!hv_test_have_kvm()) {                                   \
			printf("\n    NO KVM %s: /dev/kvm is not available "   \
			       "(run it in tools/kvmrig/run.sh)\n",          \
			       __func__);                                    \
			CU_FAIL_FATAL("/dev/kvm is not available");          \
		}                                                            \
	} while (0)

/* Scale factor for long tests: $HV_TEST_SCALE (default 1). */
unsigned hv_test_scale(void);

#endif
