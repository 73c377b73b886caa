// SPDX-License-Identifier: MIT
/*
 * migd_mig_info_fill(): a migration record as the API shows it
 * (MigInfo, MigProgress, Downtime), for calls, events and WorkerInfo
 * (migration.h). The record's lifecycle is in migration.c.
 */
#include <stdio.h>
#include <string.h>

#include "migrated/vmm/migration.h"
#include "migrated/mig/session.h"

void migd_mig_info_fill(struct migd_mig *m, Migd__MigInfo *info,
			Migd__MigProgress *prog, Migd__Downtime *dt,
			char msg[MIGD_MIG_MSG_LEN])
{
	struct mig_progress p;

	if (m->finished) {
		p = m->final;
	} else {
		pthread_mutex_lock(&m->lock);
		p = m->latest;
		pthread_mutex_unlock(&m->lock);
	}
	migd__mig_info__init(info);
	migd__mig_progress__init(prog);
	migd__downtime__init(dt);
	info->id = m->id;
	info->direction = m->dir;
	info->vm = m->vm;
	info->peer = m->prm.host; /* port in its own field */
	info->port = m->dir == MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING
			     ? m->port
			     : m->prm.port;
	info->insecure = m->prm.insecure;
	info->finished = m->finished;
	if (!m->uuid[0] && p.uuid[0])
		memcpy(m->uuid, p.uuid, sizeof(m->uuid));
	info->uuid = m->uuid;
	info->progress = prog;
	prog->phase = (unsigned)p.phase < MIG_PHASE_COUNT
			      ? (Migd__MigPhase)p.phase
			      : MIGD__MIG_PHASE__MIG_PHASE_INVALID;
	prog->iteration = p.iteration;
	prog->elapsed_ns = p.elapsed_ns;
	prog->ram_bytes = p.ram_bytes;
	prog->pages_sent = p.pages_sent;
	prog->pages_zero = p.pages_zero;
	prog->pages_compressed = p.pages_compressed;
	prog->pages_raw = p.pages_raw;
	prog->pages_delta = p.pages_delta;
	prog->bytes_wire = p.bytes_wire;
	prog->compression_ratio = p.compression_ratio;
	prog->bandwidth = p.bandwidth;
	prog->dirty_rate = p.dirty_rate;
	prog->remaining_bytes = p.remaining_bytes;
	prog->expected_downtime_ns = p.expected_downtime_ns;
	prog->throttle_pct = p.throttle_pct;
	prog->guest_downtime_ns = p.guest_downtime_ns;
	prog->pages_hole = p.pages_hole;
	prog->verify_pages = p.verify_pages;
	prog->verify_mismatches = p.verify_mismatches;
	prog->verify_ns = p.verify_ns;
	prog->verify_failed = p.verify_pages && p.verify_mismatches;
	prog->postcopy = p.postcopy;
	prog->pc_unsent_pages = p.pc_unsent_pages;
	prog->pc_pages_requested = p.pc_pages_requested;
	prog->pc_pages_pushed = p.pc_pages_pushed;
	prog->pc_fault_p50_ns = p.pc_fault_p50_ns;
	prog->pc_fault_p99_ns = p.pc_fault_p99_ns;
	prog->pc_fault_max_ns = p.pc_fault_max_ns;
	prog->pc_last_page_ns = p.pc_last_page_ns;
	prog->percent = p.percent;
	prog->eta_ns = p.eta_ns;
	prog->switch_cause = (Migd__MigSwitchCause)p.why.cause;
	prog->switch_needed_throttle_pct = p.why.needed_throttle_pct;
	prog->switch_throttle_limit_pct = p.why.throttle_limit_pct;
	prog->switch_bandwidth = p.why.bandwidth;
	prog->switch_dirty_rate = p.why.dirty_rate;
	prog->switch_remaining_bytes = p.why.remaining_bytes;
	prog->switch_expected_downtime_ns = p.why.expected_downtime_ns;
	prog->switch_at_ns = p.why.at_ns;
	/* Only once finished: m->final no longer changes, p is a copy. */
	if (m->finished && m->final.compress_levels[0])
		prog->compress_levels = m->final.compress_levels;
	prog->error = p.error;
	/* From the snapshot, not from @m: the engine thread rewrites
	 * m->latest (under m->lock) while this message is being packed. */
	snprintf(msg, MIGD_MIG_MSG_LEN, "%s", p.message);
	prog->message = msg;
	dt->pause_ns = p.downtime.pause_ns;
	dt->final_harvest_ns = p.downtime.final_harvest_ns;
	dt->final_send_ns = p.downtime.final_send_ns;
	dt->state_ns = p.downtime.state_ns;
	dt->load_ns = p.downtime.load_ns;
	dt->resume_ns = p.downtime.resume_ns;
	dt->total_ns = p.downtime.total_ns;
	dt->digest_ns = p.downtime.digest_ns;
	dt->dst_verify_ns = p.downtime.dst_verify_ns;
	dt->dst_load_ns = p.downtime.dst_load_ns;
	dt->dst_resume_ns = p.downtime.dst_resume_ns;
	prog->downtime = dt;
}
