// SPDX-License-Identifier: MIT
/*
 * hvcore/soft/sched_wl: the ebizzy-like workload on overcommitted soft
 * vCPUs (2 VMs x 4 vCPUs on 2 tokens), under both policies. Every
 * synchronous call completes with every target's handler (none skipped,
 * the handled counts add up), the scheduler never runs a vCPU without its
 * own token (the test's oracle at every scheduler return), and under the
 * boosted policy no vCPU waits long for a token.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "hvcore/soft/sched_wl.h"

#define VMS 2u
#define VCPUS 4u
#define THREADS 2u

struct oracle {
	_Atomic(struct hv_soft_sched_vcpu *) occupant[THREADS];
	atomic_int active;
	atomic_int violations;
	atomic_uint_fast64_t checks;
};

static void on_sched(void *arg, unsigned vm, unsigned vcpu,
		     struct hv_soft_sched_vcpu *sv, bool running)
{
	struct oracle *o = arg;
	int t = hv_soft_sched_token(sv);
	struct hv_soft_sched_vcpu *exp = running ? NULL : sv;

	(void)vm;
	(void)vcpu;
	if (!running)
		atomic_fetch_sub(&o->active, 1);
	if (t < 0 || t >= (int)THREADS ||
	    !atomic_compare_exchange_strong(&o->occupant[t], &exp,
					    running ? sv : NULL))
		atomic_fetch_add(&o->violations, 1);
	if (running && atomic_fetch_add(&o->active, 1) + 1 > (int)THREADS)
		atomic_fetch_add(&o->violations, 1);
	atomic_fetch_add(&o->checks, 1);
}

static struct hv_soft_sched_wl_cfg base_cfg(enum hv_soft_yield_policy pol)
{
	return (struct hv_soft_sched_wl_cfg){
		.vms = VMS,
		.vcpus = VCPUS,
		.sched = {.threads = THREADS,
			  .slice_ns = 500000,
			  .policy = pol,
			  .lend_spin_ns = 50000},
		.wl = {.region_pages = 512,
		       .chunk_bytes = 512,
		       .chunk_pages = 2,
		       .lock_every = 2,
		       .lock_hold = 2,
		       .free_every = 4,
		       .mutex_spins = 16,
		       .seed = 7},
		.ple_spins = 32,
	};
}

static void test_every_cross_vcpu_call_completes(void)
{
	static const enum hv_soft_yield_policy pols[] = {HV_SOFT_YIELD_BASELINE,
							 HV_SOFT_YIELD_BOOSTED};

	for (unsigned p = 0; p < 2; p++) {
		struct hv_soft_sched_wl_cfg cfg = base_cfg(pols[p]);
		struct hv_soft_sched_wl_vcpu out[VMS * VCPUS];
		struct hv_soft_sched_wl_result res = {.vcpu = out};
		struct oracle o = {0};

		cfg.wl.max_records = 200;
		cfg.wl.call_every = 3; /* senders' calls cross */
		cfg.on_sched = on_sched;
		cfg.arg = &o;
		CU_ASSERT_FATAL(
			!hv_soft_sched_wl_run(&cfg, 30000000000ULL, &res));
		for (unsigned m = 0; m < VMS; m++) {
			uint64_t targets = 0, handled = 0;

			for (unsigned i = 0; i < VCPUS; i++) {
				const struct hv_soft_sched_wl_vcpu *v =
					&out[m * VCPUS + i];

				CU_ASSERT_EQUAL(v->result, 0);
				CU_ASSERT_EQUAL(v->wl.records, 200);
				CU_ASSERT_EQUAL(v->sync.calls,
						200 / 4 + 200 / 3);
				CU_ASSERT_EQUAL(v->sync.call_targets,
						v->sync.calls * (VCPUS - 1));
				CU_ASSERT_EQUAL(v->sync.call_acks,
						v->sync.call_targets);
				CU_ASSERT_EQUAL(v->sync.call_skips, 0);
				targets += v->sync.call_targets;
				handled += v->sync.handled;
			}
			CU_ASSERT_EQUAL(handled, targets);
		}
		CU_ASSERT_EQUAL(atomic_load(&o.violations), 0);
		CU_ASSERT(atomic_load(&o.checks) > 1000);
		CU_ASSERT_EQUAL(res.sched.violations, 0);
		CU_ASSERT(res.sched.max_running <= THREADS);
	}
}

/*
 * Halted vCPUs were among the call targets (the workload's point), and
 * the boosted policy yielded to them; no vCPU waited long for a token.
 */
static void test_boosted_yields_reach_woken_vcpus_without_starving_any(void)
{
	struct hv_soft_sched_wl_cfg cfg = base_cfg(HV_SOFT_YIELD_BOOSTED);
	struct hv_soft_sched_wl_vcpu out[VMS * VCPUS];
	struct hv_soft_sched_wl_result res = {.vcpu = out};
	uint64_t wakeups = 0, yields = 0;

	CU_ASSERT_FATAL(!hv_soft_sched_wl_run(&cfg, 800000000ULL, &res));
	for (unsigned i = 0; i < VMS * VCPUS; i++) {
		CU_ASSERT(out[i].wl.records > 0);
		if (out[i].sched.max_wait_ns >= 300000000ULL)
			printf("\nvCPU %u waited %.1f ms\n", i,
			       out[i].sched.max_wait_ns / 1e6);
		CU_ASSERT(out[i].sched.max_wait_ns < 300000000ULL);
		wakeups += out[i].sched.wakeups;
		yields += out[i].sched.yields;
	}
	CU_ASSERT(wakeups > 0);
	CU_ASSERT(yields > 0);
	CU_ASSERT_EQUAL(res.sched.violations, 0);
}

static void test_run_refuses_bad_config(void)
{
	struct hv_soft_sched_wl_cfg cfg = base_cfg(HV_SOFT_YIELD_BOOSTED);
	struct hv_soft_sched_wl_vcpu out[1];
	struct hv_soft_sched_wl_result res = {.vcpu = out};

	cfg.vcpus = HV_WL_SYNC_MAX_CPUS + 1;
	CU_ASSERT_EQUAL(hv_soft_sched_wl_run(&cfg, 1000000, &res), -EINVAL);
	cfg = base_cfg(HV_SOFT_YIELD_BOOSTED);
	cfg.wl.region_pages = 100;
	CU_ASSERT_EQUAL(hv_soft_sched_wl_run(&cfg, 1000000, &res), -EINVAL);
	cfg = base_cfg(HV_SOFT_YIELD_INVALID);
	CU_ASSERT_EQUAL(hv_soft_sched_wl_run(&cfg, 1000000, &res), -EINVAL);
}

static CU_TestInfo tests[] = {
	{"every_cross_vcpu_call_completes",
	 test_every_cross_vcpu_call_completes},
	{"boosted_yields_reach_woken_vcpus_without_starving_any",
	 test_boosted_yields_reach_woken_vcpus_without_starving_any},
	{"run_refuses_bad_config", test_run_refuses_bad_config},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/sched_wl", NULL, NULL, tests);
