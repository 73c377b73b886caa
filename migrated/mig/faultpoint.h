/* SPDX-License-Identifier: MIT */
/*
 * Fault points: named steps of the migration engine where a test can make
 * this process misbehave at an exact moment (drop a message, fail as if
 * the connection broke, stop for a while so that a script can kill or
 * SIGSTOP a process or cut a link, or die like kill -9). The commit tests
 * and the fault matrix (docs/reliability.md) need the step to be exact:
 * the commit handshake lasts a millisecond, so timing from outside cannot
 * hit it.
 *
 * Off unless armed: production code pays one relaxed atomic load per
 * point. Armed from the environment when the process starts
 * ($MIGRATED_FAULTPOINTS, read on the first call) or by
 * mig_faultpoints_set() in unit tests. A spec is a comma-separated list
 *
 *   NAME[@N]=ACTION[:ARG]
 *
 * NAME   one of the points below;
 * @N     only the N-th time the point is reached (1-based), else every
 *        time;
 * ACTION sleep:MS  block this thread MS milliseconds, then go on;
 *        kill      raise(SIGKILL): the process dies at this step;
 *        fail      mig_faultpoint() returns -EIO: the caller fails there
 *                  as it would on a broken connection;
 *        drop      mig_faultpoint() returns MIG_FAULT_DROP: the caller
 *                  skips sending the message of that step and goes on as
 *                  if it had been sent (a message lost on the wire).
 * Every firing is logged: comp=mig op=faultpoint name=... action=...
 *
 * This is the one piece of process-wide state in the library, on purpose:
 * the points must be reachable in a daemon without new options on every
 * API in between. It is test-only; nothing in production sets it.
 */
#ifndef MIG_FAULTPOINT_H
#define MIG_FAULTPOINT_H

#define MIG_FAULTPOINTS_ENV "MIGRATED_FAULTPOINTS"

/* Returned by mig_faultpoint() for a "drop" action. */
#define MIG_FAULT_DROP 1

/*
 * The points. Source (s) and destination (d), in protocol order; the
 * "send" points are where a message can be dropped.
 */
#define MIG_FP_SRC_SETUP "src.setup"		  /* channels up, before Setup */
#define MIG_FP_SRC_ITER "src.iter"		  /* start of each iteration */
#define MIG_FP_SRC_SWITCHOVER "src.switchover"	  /* before the pause */
#define MIG_FP_SRC_ACKED "src.acked"		  /* Ack accepted */
#define MIG_FP_SRC_COMMIT_SEND "src.commit.send"  /* Commit on the wire */
#define MIG_FP_SRC_COMMITTED "src.committed"	  /* Commit sent, waiting */
#define MIG_FP_SRC_PC_PUSH "src.pc.push" /* each postcopy push refill */
#define MIG_FP_DST_SETUP "dst.setup"		  /* Setup accepted */
#define MIG_FP_DST_ITER "dst.iter"		  /* each IterEnd received */
#define MIG_FP_DST_BATCH "dst.batch" /* each batch read; drop: not written */
/* Each batch read whose first page is in the top eighth of its slot (near
 * the top of RAM, where a digest that covered only part of a slot would
 * not look); drop: not written. */
#define MIG_FP_DST_BATCH_TOP "dst.batch.top"
#define MIG_FP_DST_LOADED "dst.loaded"		  /* verified, before Ack */
#define MIG_FP_DST_ACK_SEND "dst.ack.send"	  /* Ack on the wire */
#define MIG_FP_DST_COMMIT "dst.commit"		  /* Commit received */
#define MIG_FP_DST_OWNED "dst.owned"	/* ownership taken, VM not started */
#define MIG_FP_DST_RESUMED "dst.resumed"	  /* VM started, not reported */
#define MIG_FP_DST_RESUMED_SEND "dst.resumed.send" /* Resumed on the wire */
#define MIG_FP_DST_DONE "dst.done" /* engine ends, before its teardown */
/* Snapshots (snap_save.h): the start of each pass; the files written,
 * before they replace the previous snapshot. */
#define MIG_FP_SNAP_PASS "snap.pass"
#define MIG_FP_SNAP_WRITTEN "snap.written"

/*
 * Reach point @name. 0: go on. -EIO: fail here. MIG_FAULT_DROP: do not
 * send this step's message. May block (sleep) or not return (kill). Any
 * thread.
 */
int mig_faultpoint(const char *name);

/*
 * Replace the armed spec (NULL or "": disarm) and reset the hit counts.
 * 0, or -EINVAL for a malformed spec (then nothing is armed). Tests only;
 * not to be called while an engine thread may be reaching a point.
 */
int mig_faultpoints_set(const char *spec);

#endif
