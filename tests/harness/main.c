// SPDX-License-Identifier: MIT
#include "tests/harness/hv_test.h"

#include <CUnit/Basic.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SUITES 256

struct suite {
	const char *name;
	CU_InitializeFunc init;
	CU_CleanupFunc clean;
	CU_TestInfo *tests;
	bool kvm; /* HV_TEST_SUITE_KVM: needs /dev/kvm */
};

static struct suite suites[MAX_SUITES];
static unsigned nr_suites;
static atomic_uint nr_skipped;

static void suite_register(const char *name, CU_InitializeFunc init,
			   CU_CleanupFunc clean, CU_TestInfo *tests, bool kvm)
{
	if (nr_suites == MAX_SUITES) {
		fprintf(stderr, "too many test suites\n");
		abort();
	}
	suites[nr_suites++] = (struct suite){ name, init, clean, tests, kvm };
}

void hv_test_register(const char *name, CU_InitializeFunc init,
		      CU_CleanupFunc clean, CU_TestInfo *tests)
{
	suite_register(name, init, clean, tests, false);
}

void hv_test_register_kvm(const char *name, CU_InitializeFunc init,
			  CU_CleanupFunc clean, CU_TestInfo *tests)
{
	suite_register(name, init, clean, tests, true);
}

bool hv_test_have_kvm(void)
{
	const char *host = getenv("MIGD_TEST_HOST_KVM");
	int fd;

	/* tools/test.sh: a host KVM the tests leave alone (kvm_pvm). */
	if (host && !strcmp(host, "0"))
		return false;
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool hv_test_kvm_emulated(void)
{
	const char *s = getenv("KVMRIG");

	return s && *s && strcmp(s, "0");
}

void hv_test_skip(const char *test, const char *why)
{
	atomic_fetch_add(&nr_skipped, 1);
	printf("\n    SKIP %s: %s\n", test, why);
	fflush(stdout);
}

unsigned hv_test_scale(void)
{
	const char *s = getenv("HV_TEST_SCALE");
	int v = s ? atoi(s) : 1;

	return v > 0 ? (unsigned)v : 1;
}

static bool selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strncmp(name, argv[i], strlen(argv[i])))
			return true;
	return false;
}

/*
 * --kvm: only the suites that need KVM (ctest's test labelled "kvm");
 * --no-kvm: only the others. Neither: every suite.
 */
int main(int argc, char **argv)
{
	enum { ALL, KVM_ONLY, NO_KVM } which = ALL;
	unsigned failures;

	if (argc > 1 && !strcmp(argv[1], "--kvm"))
		which = KVM_ONLY;
	else if (argc > 1 && !strcmp(argv[1], "--no-kvm"))
		which = NO_KVM;
	if (which != ALL) {
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (unsigned i = 0; i < nr_suites; i++) {
		struct suite *s = &suites[i];
		CU_pSuite cs;

		if (!selected(s->name, argc, argv) ||
		    (which == KVM_ONLY && !s->kvm) ||
		    (which == NO_KVM && s->kvm))
			continue;
		cs = CU_add_suite(s->name, s->init, s->clean);
		if (!cs)
			return 2;
		for (CU_TestInfo *t = s->tests; t->pName; t++)
			if (!CU_add_test(cs, t->pName, t->pTestFunc))
				return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() +
		   CU_get_number_of_suites_failed();
	if (atomic_load(&nr_skipped))
		printf("SKIPPED: %u test(s) skipped (see SKIP lines above)\n",
		       atomic_load(&nr_skipped));
	CU_cleanup_registry();
	return failures ? 1 : 0;
}
