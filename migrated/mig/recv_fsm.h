/* SPDX-License-Identifier: MIT */
/*
 * mig_recv_fsm: the destination's control-channel state machine.
 *
 * Every frame that arrives on the control channel is first offered to
 * mig_recv_fsm_step(), which looks (state, message type) up in one table of
 * allowed transitions; any pair not in the table is refused with -EPROTO
 * and moves the machine to FAILED, so a confused or hostile source cannot
 * make the destination load state before memory, resume before verifying,
 * or do anything after a failure.
 *
 *   HELLO      --hello-->        SETUP
 *   SETUP      --setup-->        ITERATING  (layout offered; the caller
 *                                            validates and answers)
 *   ITERATING  --iter_start, iter_end-->   ITERATING
 *   ITERATING  --switchover-->   SWITCHOVER (source paused)
 *   SWITCHOVER --iter_start, iter_end-->   SWITCHOVER (the final pass)
 *   SWITCHOVER --vm_state-->     STATE
 *   STATE      --digest-->       VERIFY     (caller verifies, sends ACK)
 *   VERIFY     --commit-->       COMMITTED  (the destination resumes)
 * Postcopy (MIG_FEATURE_POSTCOPY), after the switchover's small pass:
 *   SWITCHOVER --postcopy_unsent-->      PC_SWITCH (pages it lacks)
 *   PC_SWITCH  --postcopy_unsent-->      PC_SWITCH
 *   PC_SWITCH  --vm_state-->     PC_STATE   (caller loads, sends ACK)
 *   PC_STATE   --commit-->       COMMITTED  (resumes; pages then move
 *                                            outside this machine)
 *   any but COMMITTED/FAILED --abort, cancel--> FAILED
 *
 * Page batches travel on data channels, never on the control channel;
 * messages the destination itself sends (setup_accept/refuse, ack) are
 * never accepted from the source. The caller fails the machine itself
 * (mig_recv_fsm_fail()) when handling an accepted message goes wrong.
 * Not thread-safe: it belongs to the thread reading the control channel.
 */
#ifndef MIG_RECV_FSM_H
#define MIG_RECV_FSM_H

enum mig_recv_state {
	MIG_RECV_INVALID = 0,
	MIG_RECV_HELLO,
	MIG_RECV_SETUP,
	MIG_RECV_ITERATING,
	MIG_RECV_SWITCHOVER,
	MIG_RECV_STATE,
	MIG_RECV_VERIFY,
	MIG_RECV_COMMITTED,
	MIG_RECV_FAILED,
	MIG_RECV_PC_SWITCH,
	MIG_RECV_PC_STATE,
	MIG_RECV_STATE_COUNT,
};

struct mig_recv_fsm {
	enum mig_recv_state state;
	enum mig_recv_state failed_in; /* state where it failed */
	unsigned failed_type;	       /* message type that failed it */
};

/* Start in MIG_RECV_HELLO. */
void mig_recv_fsm_init(struct mig_recv_fsm *fsm);

/*
 * Offer a received message of @type (enum Mig__MsgType). Returns 0 and
 * moves to the table's next state, or -EPROTO (pair not allowed; the
 * machine is then FAILED and logs one line naming state and message).
 */
int mig_recv_fsm_step(struct mig_recv_fsm *fsm, unsigned type);

/*
 * Pure lookup: the state after (@state, @type), or MIG_RECV_INVALID when
 * the pair is not allowed.
 */
enum mig_recv_state mig_recv_fsm_next(enum mig_recv_state state,
				      unsigned type);

/* Move to FAILED (idempotent). */
void mig_recv_fsm_fail(struct mig_recv_fsm *fsm);

const char *mig_recv_state_name(enum mig_recv_state state);

#endif
