// SPDX-License-Identifier: MIT
/* The destination's state machine (migrated/mig/recv_fsm.c). */
#include "tests/harness/hv_test.h"
#include "migrated/mig/recv_fsm.h"
#include "migrated/mig/frame.h"

#include <errno.h>

#include "hvcore/log.h"

/*
 * The protocol written out independently of the table in recv_fsm.c: if
 * either changes without the other, the enumeration below fails.
 */
static const struct {
	enum mig_recv_state from;
	unsigned type;
	enum mig_recv_state to;
} legal[] = {
	{ MIG_RECV_HELLO, MIG__MSG_TYPE__MSG_HELLO, MIG_RECV_SETUP },
	{ MIG_RECV_SETUP, MIG__MSG_TYPE__MSG_SETUP, MIG_RECV_ITERATING },
	{ MIG_RECV_ITERATING, MIG__MSG_TYPE__MSG_ITER_START,
	  MIG_RECV_ITERATING },
	{ MIG_RECV_ITERATING, MIG__MSG_TYPE__MSG_ITER_END,
	  MIG_RECV_ITERATING },
	{ MIG_RECV_ITERATING, MIG__MSG_TYPE__MSG_SWITCHOVER,
	  MIG_RECV_SWITCHOVER },
	{ MIG_RECV_SWITCHOVER, MIG__MSG_TYPE__MSG_ITER_START,
	  MIG_RECV_SWITCHOVER },
	{ MIG_RECV_SWITCHOVER, MIG__MSG_TYPE__MSG_ITER_END,
	  MIG_RECV_SWITCHOVER },
	{ MIG_RECV_SWITCHOVER, MIG__MSG_TYPE__MSG_VM_STATE, MIG_RECV_STATE },
	{ MIG_RECV_STATE, MIG__MSG_TYPE__MSG_DIGEST, MIG_RECV_VERIFY },
	{ MIG_RECV_VERIFY, MIG__MSG_TYPE__MSG_COMMIT, MIG_RECV_COMMITTED },
	/* Postcopy: the unsent set, then the state, then the commit; no
	 * digest at the switch (the destination lacks pages). */
	{ MIG_RECV_SWITCHOVER, MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT,
	  MIG_RECV_PC_SWITCH },
	{ MIG_RECV_PC_SWITCH, MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT,
	  MIG_RECV_PC_SWITCH },
	{ MIG_RECV_PC_SWITCH, MIG__MSG_TYPE__MSG_VM_STATE, MIG_RECV_PC_STATE },
	{ MIG_RECV_PC_STATE, MIG__MSG_TYPE__MSG_COMMIT, MIG_RECV_COMMITTED },
};

static bool abortable(enum mig_recv_state s)
{
	return (s >= MIG_RECV_HELLO && s <= MIG_RECV_VERIFY) ||
	       s == MIG_RECV_PC_SWITCH || s == MIG_RECV_PC_STATE;
}

static enum mig_recv_state expected(enum mig_recv_state s, unsigned type)
{
	for (unsigned i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
		if (legal[i].from == s && legal[i].type == type)
			return legal[i].to;
	if (abortable(s) && (type == MIG__MSG_TYPE__MSG_ABORT ||
			     type == MIG__MSG_TYPE__MSG_CANCEL))
		return MIG_RECV_FAILED;
	return MIG_RECV_INVALID;
}

/* Refusals log one line each; hundreds of them here are noise. */
static int quiet(void)
{
	hv_log_set_level(HV_LOG_INVALID);
	return 0;
}

static int loud(void)
{
	hv_log_set_level(HV_LOG_INFO);
	return 0;
}

static void test_every_illegal_pair_is_refused(void)
{
	unsigned illegal = 0, allowed = 0;

	for (unsigned s = 0; s < MIG_RECV_STATE_COUNT; s++) {
		for (unsigned t = 0; t <= MIG__MSG_TYPE__MSG_POSTCOPY_DONE + 2;
		     t++) {
			enum mig_recv_state want = expected(s, t);
			struct mig_recv_fsm fsm = { .state = s };
			int ret = mig_recv_fsm_step(&fsm, t);

			CU_ASSERT_EQUAL(mig_recv_fsm_next(s, t), want);
			if (want == MIG_RECV_INVALID) {
				illegal++;
				CU_ASSERT_EQUAL(ret, -EPROTO);
				CU_ASSERT_EQUAL(fsm.state, MIG_RECV_FAILED);
				CU_ASSERT_EQUAL(fsm.failed_type, t);
			} else {
				allowed++;
				CU_ASSERT_EQUAL(ret, 0);
				CU_ASSERT_EQUAL(fsm.state, want);
			}
		}
		/* Far out-of-range types, as a hostile peer could send. */
		CU_ASSERT_EQUAL(mig_recv_fsm_next(s, 0xffff),
				MIG_RECV_INVALID);
	}
	/* 14 legal transitions and abort/cancel from 8 live states. */
	CU_ASSERT_EQUAL(allowed, 14 + 2 * 8);
	CU_ASSERT(illegal > 100);
}

static void test_page_batches_and_own_replies_never_reach_control(void)
{
	static const unsigned never[] = {
		MIG__MSG_TYPE__MSG_PAGE_BATCH, MIG__MSG_TYPE__MSG_DATA_END,
		MIG__MSG_TYPE__MSG_SETUP_ACCEPT,
		MIG__MSG_TYPE__MSG_SETUP_REFUSE, MIG__MSG_TYPE__MSG_ACK,
		MIG__MSG_TYPE__MSG_ITER_ACK, MIG__MSG_TYPE__MSG_RESUMED,
		MIG__MSG_TYPE__MSG_PAGE_REQUEST,
		MIG__MSG_TYPE__MSG_POSTCOPY_DONE, MIG__MSG_TYPE__MSG_INVALID,
	};

	for (unsigned s = 0; s < MIG_RECV_STATE_COUNT; s++)
		for (unsigned i = 0; i < sizeof(never) / sizeof(never[0]); i++)
			CU_ASSERT_EQUAL(mig_recv_fsm_next(s, never[i]),
					MIG_RECV_INVALID);
}

static void test_happy_path_reaches_committed(void)
{
	static const unsigned path[] = {
		MIG__MSG_TYPE__MSG_HELLO,      MIG__MSG_TYPE__MSG_SETUP,
		MIG__MSG_TYPE__MSG_ITER_START, MIG__MSG_TYPE__MSG_ITER_END,
		MIG__MSG_TYPE__MSG_ITER_START, MIG__MSG_TYPE__MSG_ITER_END,
		MIG__MSG_TYPE__MSG_SWITCHOVER, MIG__MSG_TYPE__MSG_ITER_START,
		MIG__MSG_TYPE__MSG_ITER_END,   MIG__MSG_TYPE__MSG_VM_STATE,
		MIG__MSG_TYPE__MSG_DIGEST,     MIG__MSG_TYPE__MSG_COMMIT,
	};
	struct mig_recv_fsm fsm;

	mig_recv_fsm_init(&fsm);
	CU_ASSERT_EQUAL(fsm.state, MIG_RECV_HELLO);
	for (unsigned i = 0; i < sizeof(path) / sizeof(path[0]); i++)
		CU_ASSERT_EQUAL_FATAL(mig_recv_fsm_step(&fsm, path[i]), 0);
	CU_ASSERT_EQUAL(fsm.state, MIG_RECV_COMMITTED);
	/* Nothing after commit, not even an abort. */
	CU_ASSERT_EQUAL(mig_recv_fsm_step(&fsm, MIG__MSG_TYPE__MSG_ABORT),
			-EPROTO);
}

static void test_failure_is_final(void)
{
	struct mig_recv_fsm fsm;

	mig_recv_fsm_init(&fsm);
	CU_ASSERT_EQUAL(mig_recv_fsm_step(&fsm, MIG__MSG_TYPE__MSG_HELLO), 0);
	CU_ASSERT_EQUAL(mig_recv_fsm_step(&fsm, MIG__MSG_TYPE__MSG_CANCEL),
			0);
	CU_ASSERT_EQUAL(fsm.state, MIG_RECV_FAILED);
	CU_ASSERT_EQUAL(fsm.failed_in, MIG_RECV_SETUP);
	for (unsigned t = 0; t <= MIG__MSG_TYPE__MSG_CANCEL; t++)
		CU_ASSERT_EQUAL(mig_recv_fsm_step(&fsm, t), -EPROTO);
	CU_ASSERT_EQUAL(fsm.state, MIG_RECV_FAILED);
	/* The caller can fail it too, idempotently. */
	mig_recv_fsm_init(&fsm);
	mig_recv_fsm_fail(&fsm);
	mig_recv_fsm_fail(&fsm);
	CU_ASSERT_EQUAL(fsm.state, MIG_RECV_FAILED);
	CU_ASSERT_EQUAL(fsm.failed_in, MIG_RECV_HELLO);
}

static CU_TestInfo tests[] = {
	{ "every_illegal_pair_is_refused",
	  test_every_illegal_pair_is_refused },
	{ "page_batches_and_own_replies_never_reach_control",
	  test_page_batches_and_own_replies_never_reach_control },
	{ "happy_path_reaches_committed", test_happy_path_reaches_committed },
	{ "failure_is_final", test_failure_is_final },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/recv_fsm", quiet, loud, tests);
