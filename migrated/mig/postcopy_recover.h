/* SPDX-License-Identifier: MIT */
/*
 * mig_pc_recover: the pieces both sides of a postcopy recovery share
 * (docs/migration-protocol.md, "Postcopy recovery").
 *
 * After a break in postcopy the source reconnects with the same session
 * id; the destination then sends the pages it still lacks, slot by slot,
 * as PostcopyUnsent frames (the switch's encoding, postcopy_map.h, the
 * other way round), then a PostcopyResume, then a PageRequest for every
 * page a fault still waits on. The source makes exactly those pages
 * pending (postcopy_sched.h: mig_pc_sched_reset() and _mark()) and goes
 * on as before the break.
 *
 * mig_pc_unsent_send() does blocking I/O on the caller's connection; the
 * checks are pure.
 */
#ifndef MIG_POSTCOPY_RECOVER_H
#define MIG_POSTCOPY_RECOVER_H

#include <stdint.h>

#include "migrated/mig/conn.h"
#include "proto/migration.pb-c.h"

/*
 * Send the set pages of @bits (one bit per page of slot @slot, @npages
 * pages) as PostcopyUnsent frames, one per MIG_PC_UNSENT_RANGE_MAX pages
 * (at least one: an empty set is said too). Adds the bytes sent to
 * *@bytes (may be NULL). 0, -ENOMEM, -EINVAL or the connection's error.
 */
int mig_pc_unsent_send(struct mig_conn *c, uint32_t slot,
		       const uint64_t *bits, uint64_t npages,
		       uint64_t *bytes);

/*
 * The source's check of a PostcopyResume after PostcopyUnsent frames
 * that set @set_pages pages in all (each slot's ranges at most once):
 * 0, or -EBADMSG when the count differs or @r->recoveries is 0.
 */
int mig_pc_resume_check(const Mig__PostcopyResume *r, uint64_t set_pages);

/*
 * Frame types the source accepts on a recovered control channel before
 * the PostcopyResume.
 */
#define MIG_PC_RESUME_TYPES                                                  \
	(MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT) |                 \
	 MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_POSTCOPY_RESUME) |                 \
	 MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_ABORT))

#endif
