// SPDX-License-Identifier: MIT
#include "migrated/mig/recv_fsm.h"

#include <errno.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/frame.h"

#define NR_TYPES (MIG__MSG_TYPE__MSG_POSTCOPY_DONE + 1)

/* The whole protocol of the destination: next state, 0 = refused. */
static const unsigned char transitions[MIG_RECV_STATE_COUNT][NR_TYPES] = {
	[MIG_RECV_HELLO] = {
		[MIG__MSG_TYPE__MSG_HELLO] = MIG_RECV_SETUP,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_SETUP] = {
		[MIG__MSG_TYPE__MSG_SETUP] = MIG_RECV_ITERATING,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_ITERATING] = {
		[MIG__MSG_TYPE__MSG_ITER_START] = MIG_RECV_ITERATING,
		[MIG__MSG_TYPE__MSG_ITER_END] = MIG_RECV_ITERATING,
		[MIG__MSG_TYPE__MSG_SWITCHOVER] = MIG_RECV_SWITCHOVER,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_SWITCHOVER] = {
		[MIG__MSG_TYPE__MSG_ITER_START] = MIG_RECV_SWITCHOVER,
		[MIG__MSG_TYPE__MSG_ITER_END] = MIG_RECV_SWITCHOVER,
		[MIG__MSG_TYPE__MSG_VM_STATE] = MIG_RECV_STATE,
		[MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT] = MIG_RECV_PC_SWITCH,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_PC_SWITCH] = {
		[MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT] = MIG_RECV_PC_SWITCH,
		[MIG__MSG_TYPE__MSG_VM_STATE] = MIG_RECV_PC_STATE,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_PC_STATE] = {
		[MIG__MSG_TYPE__MSG_COMMIT] = MIG_RECV_COMMITTED,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_STATE] = {
		[MIG__MSG_TYPE__MSG_DIGEST] = MIG_RECV_VERIFY,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	[MIG_RECV_VERIFY] = {
		[MIG__MSG_TYPE__MSG_COMMIT] = MIG_RECV_COMMITTED,
		[MIG__MSG_TYPE__MSG_ABORT] = MIG_RECV_FAILED,
		[MIG__MSG_TYPE__MSG_CANCEL] = MIG_RECV_FAILED,
	},
	/* COMMITTED and FAILED are final: nothing is accepted. */
};

static const char *const state_names[MIG_RECV_STATE_COUNT] = {
	[MIG_RECV_INVALID] = "invalid",	     [MIG_RECV_HELLO] = "hello",
	[MIG_RECV_SETUP] = "setup",	     [MIG_RECV_ITERATING] = "iterating",
	[MIG_RECV_SWITCHOVER] = "switchover", [MIG_RECV_STATE] = "state",
	[MIG_RECV_VERIFY] = "verify",	     [MIG_RECV_COMMITTED] = "committed",
	[MIG_RECV_FAILED] = "failed",	     [MIG_RECV_PC_SWITCH] = "pc_switch",
	[MIG_RECV_PC_STATE] = "pc_state",
};

const char *mig_recv_state_name(enum mig_recv_state state)
{
	if ((unsigned)state >= MIG_RECV_STATE_COUNT)
		return "invalid";
	return state_names[state];
}

void mig_recv_fsm_init(struct mig_recv_fsm *fsm)
{
	*fsm = (struct mig_recv_fsm){ .state = MIG_RECV_HELLO };
}

enum mig_recv_state mig_recv_fsm_next(enum mig_recv_state state,
				      unsigned type)
{
	if ((unsigned)state >= MIG_RECV_STATE_COUNT || type >= NR_TYPES)
		return MIG_RECV_INVALID;
	return (enum mig_recv_state)transitions[state][type];
}

void mig_recv_fsm_fail(struct mig_recv_fsm *fsm)
{
	if (fsm->state == MIG_RECV_FAILED)
		return;
	fsm->failed_in = fsm->state;
	fsm->state = MIG_RECV_FAILED;
}

int mig_recv_fsm_step(struct mig_recv_fsm *fsm, unsigned type)
{
	enum mig_recv_state next = mig_recv_fsm_next(fsm->state, type);

	if (next == MIG_RECV_INVALID) {
		hv_err("mig", "op=recv_fsm err=unexpected state=%s msg=%s(%u)",
		       mig_recv_state_name(fsm->state),
		       mig_frame_type_name(type), type);
		fsm->failed_type = type;
		mig_recv_fsm_fail(fsm);
		return -EPROTO;
	}
	if (next == MIG_RECV_FAILED) {
		fsm->failed_type = type;
		mig_recv_fsm_fail(fsm);
		return 0;
	}
	fsm->state = next;
	return 0;
}
