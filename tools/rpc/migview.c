// SPDX-License-Identifier: MIT
/*
 * Human views of a migration (migview.h).
 */
#include <stdbool.h>
#include <string.h>

#include "tools/rpc/fmt.h"
#include "tools/rpc/migview.h"

const char *migd_mig_phase_text(Migd__MigPhase p)
{
	static const char *const names[] = {
		[MIGD__MIG_PHASE__MIG_PHASE_INVALID] = "unknown",
		[MIGD__MIG_PHASE__MIG_PHASE_SETUP] = "setup",
		[MIGD__MIG_PHASE__MIG_PHASE_ITERATE] = "iterate",
		[MIGD__MIG_PHASE__MIG_PHASE_SWITCHOVER] = "switchover",
		[MIGD__MIG_PHASE__MIG_PHASE_COMMIT] = "commit",
		[MIGD__MIG_PHASE__MIG_PHASE_COMPLETED] = "completed",
		[MIGD__MIG_PHASE__MIG_PHASE_FAILED] = "failed",
		[MIGD__MIG_PHASE__MIG_PHASE_CANCELLED] = "cancelled",
		[MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED] = "unresolved",
		[MIGD__MIG_PHASE__MIG_PHASE_POSTCOPY] = "postcopy",
		[MIGD__MIG_PHASE__MIG_PHASE_POSTCOPY_PAUSED] =
			"postcopy_paused",
	};

	if ((unsigned)p < sizeof(names) / sizeof(names[0]))
		return names[p];
	return "unknown";
}

int migd_mig_phase_terminal(Migd__MigPhase p)
{
	return p == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED ||
	       p == MIGD__MIG_PHASE__MIG_PHASE_FAILED ||
	       p == MIGD__MIG_PHASE__MIG_PHASE_CANCELLED ||
	       p == MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED;
}

static const Migd__MigProgress empty_progress = MIGD__MIG_PROGRESS__INIT;

static const Migd__MigProgress *prog_of(const Migd__MigInfo *m)
{
	return m->progress ? m->progress : &empty_progress;
}

/*
 * Percent done, as shown. 100 only once the migration completed: in
 * setup nothing is sent yet (0), and while it runs the guest can dirty
 * again what was sent (at most 99).
 */
static unsigned pct_done(const Migd__MigProgress *p)
{
	unsigned pct;

	if (p->phase == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED)
		return 100;
	if (p->phase == MIGD__MIG_PHASE__MIG_PHASE_SETUP)
		return 0;
	/* The source's own estimate; an older daemon sends none. */
	if (p->percent)
		pct = p->percent;
	else if (!p->ram_bytes || p->remaining_bytes >= p->ram_bytes ||
		 !p->pages_sent)
		pct = 0;
	else
		pct = (unsigned)(100 - p->remaining_bytes * 100 /
					       p->ram_bytes);
	return pct > 99 ? 99 : pct;
}

/*
 * The rate to show: the daemon's last measured bandwidth, or, before it
 * measured one (the whole first pass), the average since the start.
 */
static uint64_t shown_rate(const Migd__MigProgress *p)
{
	uint64_t bytes = p->bytes_wire ? p->bytes_wire : p->pages_sent * 4096;

	if (p->bandwidth || !p->elapsed_ns)
		return p->bandwidth;
	return (uint64_t)((double)bytes * 1e9 / (double)p->elapsed_ns);
}

/* "12.0s", or "?" when the daemon does not know. */
static char *fmt_eta(char *buf, size_t size, uint64_t ns)
{
	if (!ns) {
		snprintf(buf, size, "?");
		return buf;
	}
	return migd_fmt_ns(buf, size, ns);
}

static const char *cause_text(Migd__MigSwitchCause c)
{
	switch (c) {
	case MIGD__MIG_SWITCH_CAUSE__MIG_SWITCH_POSTCOPY_REQUEST:
		return "postcopy on request";
	case MIGD__MIG_SWITCH_CAUSE__MIG_SWITCH_POSTCOPY_AFTER:
		return "postcopy after its delay";
	case MIGD__MIG_SWITCH_CAUSE__MIG_SWITCH_POSTCOPY_AUTO:
		return "postcopy automatically";
	case MIGD__MIG_SWITCH_CAUSE__MIG_SWITCH_POSTCOPY_TIMEOUT:
		return "postcopy at the time limit";
	case MIGD__MIG_SWITCH_CAUSE__MIG_SWITCH_FORCED:
		return "switchover forced";
	case MIGD__MIG_SWITCH_CAUSE__MIG_SWITCH_TIMEOUT:
		return "switchover at the time limit";
	default:
		return NULL;
	}
}

void migd_mig_print_line(FILE *f, const Migd__MigInfo *m)
{
	const Migd__MigProgress *p = prog_of(m);
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32], k[32];

	fprintf(f,
		"mig=%llu vm=%s phase=%s iter=%u elapsed=%s sent=%s "
		"wire=%s bw=%s dirty=%s remaining=%s throttle=%u%% "
		"pct=%u eta=%s expected_downtime=%s",
		(unsigned long long)m->id, m->vm ? m->vm : "",
		migd_mig_phase_text(p->phase), p->iteration,
		migd_fmt_ns(a, sizeof(a), p->elapsed_ns),
		migd_fmt_bytes(b, sizeof(b), p->pages_sent * 4096),
		migd_fmt_bytes(c, sizeof(c), p->bytes_wire),
		migd_fmt_rate(d, sizeof(d), shown_rate(p)),
		migd_fmt_rate(e, sizeof(e), p->dirty_rate),
		migd_fmt_bytes(g, sizeof(g), p->remaining_bytes),
		p->throttle_pct, pct_done(p), fmt_eta(h, sizeof(h), p->eta_ns),
		migd_fmt_ns(k, sizeof(k), p->expected_downtime_ns));
	if (cause_text(p->switch_cause))
		fprintf(f, " switch=\"%s\"", cause_text(p->switch_cause));
	if (m->uuid && *m->uuid)
		fprintf(f, " uuid=%s", m->uuid);
	if (p->message && *p->message)
		fprintf(f, " msg=\"%s\"", p->message);
	fputc('\n', f);
}

/*
 * The bar's fields, most important first: each has a long and a short
 * form; what does not fit the terminal is shortened, then dropped from
 * the least important up, then the bar itself narrows and goes.
 */
enum { BAR_FIELDS = 6, BAR_MIN = 5, BAR_MAX = 40, FIELD_MAX = 48 };

struct bar_field {
	char full[FIELD_MAX];
	char brief[FIELD_MAX];
};

static void bar_fields(const Migd__MigProgress *p,
		       struct bar_field f[BAR_FIELDS])
{
	char a[32], b[32], c[32], d[32], e[32];

	migd_fmt_ns(a, sizeof(a), p->elapsed_ns);
	migd_fmt_rate(b, sizeof(b), shown_rate(p));
	migd_fmt_rate(c, sizeof(c), p->dirty_rate);
	migd_fmt_bytes(d, sizeof(d), p->remaining_bytes);
	fmt_eta(e, sizeof(e), p->eta_ns);
	snprintf(f[0].full, FIELD_MAX, "%s", b);
	snprintf(f[0].brief, FIELD_MAX, "%s", b);
	snprintf(f[1].full, FIELD_MAX, "eta %s", e);
	snprintf(f[1].brief, FIELD_MAX, "eta %s", e);
	snprintf(f[2].full, FIELD_MAX, "left %s", d);
	snprintf(f[2].brief, FIELD_MAX, "%s", d);
	snprintf(f[3].full, FIELD_MAX, "dirty %s", c);
	snprintf(f[3].brief, FIELD_MAX, "d %s", c);
	snprintf(f[4].full, FIELD_MAX, "pass %u", p->iteration);
	snprintf(f[4].brief, FIELD_MAX, "p%u", p->iteration);
	snprintf(f[5].full, FIELD_MAX, "%s", a);
	snprintf(f[5].brief, FIELD_MAX, "%s", a);
}

/* The fields' text: the first @n, long or short forms, two spaces apart. */
static int bar_tail(char *buf, size_t size, const struct bar_field *f, int n,
		    bool brief)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "  %s",
					brief ? f[i].brief : f[i].full);
	return (int)len;
}

void migd_mig_print_bar(FILE *f, const Migd__MigInfo *m, int width)
{
	const Migd__MigProgress *p = prog_of(m);
	const char *phase = migd_mig_phase_text(p->phase);
	unsigned pct = pct_done(p);
	struct bar_field fld[BAR_FIELDS];
	char tail[BAR_FIELDS * (FIELD_MAX + 2) + 1];
	/* The last column stays free: a terminal that auto-wraps would
	 * otherwise move the cursor to the next line. */
	int room = (width > 1 ? width : 80) - 1;
	int head = (int)strlen(phase) + 5; /* "PHASE" + " 42%" */
	int n = BAR_FIELDS, bar = 0, len = 0;
	bool brief = false;

	bar_fields(p, fld);
	/* Shorten, then drop fields, while the bar stays at BAR_MIN+5. */
	for (;;) {
		len = bar_tail(tail, sizeof(tail), fld, n, brief);
		bar = room - head - len - 3; /* " [" "]" */
		if (bar >= BAR_MIN + 5 || (brief && !n))
			break;
		if (!brief)
			brief = true;
		else
			n--;
	}
	if (bar > BAR_MAX)
		bar = BAR_MAX;
	if (bar < BAR_MIN)
		bar = 0; /* no room for a bar: phase and percent only */
	fprintf(f, "\r%s", phase);
	if (bar) {
		fputs(" [", f);
		for (int i = 0; i < bar; i++)
			fputc(i < (int)(pct * (unsigned)bar / 100) ? '#' : '.',
			      f);
		fputc(']', f);
	}
	fprintf(f, " %3u%%", pct);
	if (head + (bar ? bar + 3 : 0) + len <= room)
		fputs(tail, f);
	fputs("\033[K", f);
	fflush(f);
}

void migd_mig_print_report(FILE *f, const Migd__MigInfo *m)
{
	const Migd__MigProgress *p = prog_of(m);
	const Migd__Downtime *dt = p->downtime;
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32], k[32];

	fprintf(f, "migration %llu of %s: %s\n", (unsigned long long)m->id,
		m->vm ? m->vm : "?", migd_mig_phase_text(p->phase));
	if (m->uuid && *m->uuid)
		fprintf(f, "  uuid:         %s\n", m->uuid);
	if (p->message && *p->message)
		fprintf(f, "  reason:       %s (errno %d)\n", p->message,
			-p->error);
	fprintf(f, "  total time:   %s, %u iterations\n",
		migd_fmt_ns(a, sizeof(a), p->elapsed_ns), p->iteration);
	if (!migd_mig_phase_terminal(p->phase))
		fprintf(f,
			"  progress:     %u%%, eta %s, %s left, throttle %u%%, "
			"expected downtime %s\n",
			pct_done(p), fmt_eta(a, sizeof(a), p->eta_ns),
			migd_fmt_bytes(b, sizeof(b), p->remaining_bytes),
			p->throttle_pct,
			migd_fmt_ns(c, sizeof(c), p->expected_downtime_ns));
	if (cause_text(p->switch_cause))
		fprintf(f,
			"  ended early:  %s after %s: precopy needed throttle "
			"%u%% (limit %u%%), bandwidth %s, guest dirtying %s "
			"unthrottled, %s left, expected downtime %s\n",
			cause_text(p->switch_cause),
			migd_fmt_ns(a, sizeof(a), p->switch_at_ns),
			p->switch_needed_throttle_pct,
			p->switch_throttle_limit_pct,
			migd_fmt_rate(b, sizeof(b), p->switch_bandwidth),
			migd_fmt_rate(c, sizeof(c), p->switch_dirty_rate),
			migd_fmt_bytes(d, sizeof(d), p->switch_remaining_bytes),
			migd_fmt_ns(e, sizeof(e),
				    p->switch_expected_downtime_ns));
	fprintf(f,
		"  pages:        %llu sent, %llu zero, %llu compressed, "
		"%llu raw\n",
		(unsigned long long)p->pages_sent,
		(unsigned long long)p->pages_zero,
		(unsigned long long)p->pages_compressed,
		(unsigned long long)p->pages_raw);
	if (p->pages_delta)
		fprintf(f, "  delta:        %llu pages sent as a delta\n",
			(unsigned long long)p->pages_delta);
	if (p->compress_levels && *p->compress_levels)
		fprintf(f, "  compression:  %s of compressed pages, %.0f%% of "
			   "non-zero pages raw\n",
			p->compress_levels,
			p->pages_raw + p->pages_compressed
				? 100.0 * (double)p->pages_raw /
					  (double)(p->pages_raw +
						   p->pages_compressed)
				: 0.0);
	fprintf(f, "  on the wire:  %s (ratio %.2f), last bandwidth %s\n",
		migd_fmt_bytes(a, sizeof(a), p->bytes_wire),
		p->compression_ratio,
		migd_fmt_rate(b, sizeof(b), p->bandwidth));
	if (dt && dt->total_ns)
		fprintf(f,
			"  downtime:     %s = pause %s + harvest %s + send %s "
			"+ state %s + digest %s + load %s + resume %s\n",
			migd_fmt_ns(a, sizeof(a), dt->total_ns),
			migd_fmt_ns(b, sizeof(b), dt->pause_ns),
			migd_fmt_ns(c, sizeof(c), dt->final_harvest_ns),
			migd_fmt_ns(d, sizeof(d), dt->final_send_ns),
			migd_fmt_ns(e, sizeof(e), dt->state_ns),
			migd_fmt_ns(k, sizeof(k), dt->digest_ns),
			migd_fmt_ns(g, sizeof(g), dt->load_ns),
			migd_fmt_ns(h, sizeof(h), dt->resume_ns));
	if (p->guest_downtime_ns)
		fprintf(f, "  guest saw:    %s without a heartbeat\n",
			migd_fmt_ns(a, sizeof(a), p->guest_downtime_ns));
	if (p->postcopy)
		fprintf(f,
			"  postcopy:     %llu pages missing at the switch: "
			"%llu asked for by faults, %llu pushed\n",
			(unsigned long long)p->pc_unsent_pages,
			(unsigned long long)p->pc_pages_requested,
			(unsigned long long)p->pc_pages_pushed);
	if (p->postcopy && p->pc_fault_max_ns)
		fprintf(f, "  faults:       p50 %s, p99 %s, max %s\n",
			migd_fmt_ns(a, sizeof(a), p->pc_fault_p50_ns),
			migd_fmt_ns(b, sizeof(b), p->pc_fault_p99_ns),
			migd_fmt_ns(c, sizeof(c), p->pc_fault_max_ns));
	if (p->postcopy && p->pc_last_page_ns)
		fprintf(f, "  last page:    %s after the switch\n",
			migd_fmt_ns(a, sizeof(a), p->pc_last_page_ns));
	if (p->verify_pages)
		fprintf(f,
			"  verified:     %llu pages re-hashed on the source "
			"after commit in %s: %llu differ\n",
			(unsigned long long)p->verify_pages,
			migd_fmt_ns(a, sizeof(a), p->verify_ns),
			(unsigned long long)p->verify_mismatches);
	if (p->verify_failed)
		fprintf(f, "  VERIFICATION FAILED: the destination runs a VM "
			   "whose memory differs from the source's\n");
	if (p->phase == MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED)
		fprintf(f,
			"  unresolved:   the VM is paused and intact on the "
			"source; it may run on the\n"
			"                destination. Ask the destination "
			"daemon (migratectl migration\n"
			"                status there), then: migratectl "
			"migration resolve %llu\n"
			"                --resume-source | "
			"--confirm-destination\n",
			(unsigned long long)m->id);
}
