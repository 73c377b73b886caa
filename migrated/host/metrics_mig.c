// SPDX-License-Identifier: MIT
/*
 * migd_metrics: the migration families. The migrations in flight come
 * from the host's records (host.h: each record's last MigInfo), labelled
 * by VM and direction, never by migration id: a finished migration
 * leaves its series, and what it did stays in the lifetime totals
 * (migd_migrations_total and three histograms) that
 * migd_metrics_mig_seen() keeps as records settle (metrics.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/metrics.h"
#include "migrated/host/metrics_priv.h"

#define put migd__mput
#define family migd__mfamily
#define esc migd__mesc
#define num migd__mnum

#define NR_PHASES (MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED + 1)

static const char *const phase_label[NR_PHASES] = {
	"invalid",   "setup",  "iterate",   "switchover", "commit",
	"completed", "failed", "cancelled", "unresolved",
};

static const char *const dir_label[MIGD_MIG_DIRS] = {"outgoing", "incoming"};

static const char *const result_label[MIGD_MIG_RESULTS] = {
	[MIGD_MIG_RESULT_COMPLETED] = "completed",
	[MIGD_MIG_RESULT_VERIFY_FAILED] = "verify_failed",
	[MIGD_MIG_RESULT_FAILED] = "failed",
	[MIGD_MIG_RESULT_CANCELLED] = "cancelled",
};

/* Whole migrations take seconds to an hour; downtimes milliseconds to a
 * few seconds (Prometheus' default buckets). */
static const double duration_bounds[] = {0.5, 1,   2.5, 5,   10,   30,
					 60,  120, 300, 600, 1800, 3600};
static const double downtime_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
					 0.5,	1,    2.5,   5,	   10};

static const struct hist_fam {
	const char *name, *help;
	const double *bounds;
	size_t nr;
	size_t off; /* of the struct migd_hist[MIGD_MIG_DIRS] in totals */
} hist_fams[] = {
	{"migd_migration_duration_seconds",
	 "Total time of settled migrations, setup to end.", duration_bounds,
	 HV_ARRAY_SIZE(duration_bounds),
	 offsetof(struct migd_mig_totals, duration)},
	{"migd_migration_downtime_seconds",
	 "Downtime the source measured (sum of its parts), of migrations "
	 "whose switchover ran.",
	 downtime_bounds, HV_ARRAY_SIZE(downtime_bounds),
	 offsetof(struct migd_mig_totals, downtime)},
	{"migd_migration_guest_downtime_seconds",
	 "Largest heartbeat gap the guest saw, of migrations where it "
	 "reported one.",
	 downtime_bounds, HV_ARRAY_SIZE(downtime_bounds),
	 offsetof(struct migd_mig_totals, guest_downtime)},
};

_Static_assert(HV_ARRAY_SIZE(duration_bounds) <= MIGD_HIST_BOUNDS_MAX,
	       "duration buckets");
_Static_assert(HV_ARRAY_SIZE(downtime_bounds) <= MIGD_HIST_BOUNDS_MAX,
	       "downtime buckets");

/* ---- settling ---------------------------------------------------------- */

/* Ended for good: FAILED, CANCELLED or COMPLETED (UNRESOLVED waits for
 * mig_resolve and ends in one of those). */
static bool settled(const Migd__MigInfo *i)
{
	return i && i->finished && i->progress &&
	       i->progress->phase != MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED;
}

static bool unresolved(const Migd__MigInfo *i)
{
	return i && i->progress &&
	       i->progress->phase == MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED;
}

static unsigned dir_of(const Migd__MigInfo *i)
{
	return i->direction == MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING;
}

enum migd_mig_result migd_metrics_mig_result(const Migd__MigInfo *i)
{
	const Migd__MigProgress *p = i->progress;

	switch (p->phase) {
	case MIGD__MIG_PHASE__MIG_PHASE_COMPLETED:
		/* A verification failure completes with -EBADE. */
		if (p->verify_failed || p->error == -EBADE)
			return MIGD_MIG_RESULT_VERIFY_FAILED;
		return p->error ? MIGD_MIG_RESULT_FAILED
				: MIGD_MIG_RESULT_COMPLETED;
	case MIGD__MIG_PHASE__MIG_PHASE_CANCELLED:
		return MIGD_MIG_RESULT_CANCELLED;
	default:
		return MIGD_MIG_RESULT_FAILED;
	}
}

static void observe(struct migd_hist *h, const struct hist_fam *f, double v)
{
	size_t k = 0;

	while (k < f->nr && v > f->bounds[k])
		k++;
	h->bucket[k]++;
	h->count++;
	h->sum += v;
}

static struct migd_hist *hist_of(struct migd_mig_totals *t, size_t f,
				 unsigned dir)
{
	return (struct migd_hist *)((char *)t + hist_fams[f].off) + dir;
}

static void count_settled(struct migd_host *d, const Migd__MigInfo *i)
{
	const Migd__MigProgress *p = i->progress;
	struct migd_mig_totals *t = &d->mig_totals;
	unsigned dir = dir_of(i);
	enum migd_mig_result r = migd_metrics_mig_result(i);

	t->result[dir][r]++;
	observe(hist_of(t, 0, dir), &hist_fams[0], p->elapsed_ns / 1e9);
	if (p->downtime && p->downtime->total_ns)
		observe(hist_of(t, 1, dir), &hist_fams[1],
			p->downtime->total_ns / 1e9);
	if (p->guest_downtime_ns)
		observe(hist_of(t, 2, dir), &hist_fams[2],
			p->guest_downtime_ns / 1e9);
	if (dir != 0)
		return; /* the older totals are the source's */
	d->mig_errors += r != MIGD_MIG_RESULT_COMPLETED &&
			 r != MIGD_MIG_RESULT_CANCELLED;
	d->mig_verify_failures += r == MIGD_MIG_RESULT_VERIFY_FAILED;
}

void migd_metrics_mig_seen(struct migd_host *d, const Migd__MigInfo *prev,
			   const Migd__MigInfo *now)
{
	if (!now || !now->progress)
		return;
	if (!dir_of(now) && unresolved(now) && !unresolved(prev))
		d->mig_unresolved++;
	if (settled(now) && !settled(prev))
		count_settled(d, now);
}

/* ---- migrations in flight ---------------------------------------------- */

static const struct {
	const char *name, *type, *help;
} live_fams[] = {
	{"migd_migration_phase", "gauge",
	 "1 for the current phase of the VM's migration in flight."},
	{"migd_migration_iteration", "gauge", "Precopy iteration."},
	{"migd_migration_progress_ratio", "gauge",
	 "1 - remaining / RAM (0 during setup and once failed or "
	 "cancelled)."},
	{"migd_migration_elapsed_seconds", "gauge",
	 "Time since the migration started."},
	{"migd_migration_wire_bytes_total", "counter",
	 "Bytes on the wire, compressed and framed."},
	{"migd_migration_sent_pages_total", "counter", "Pages sent."},
	{"migd_migration_remaining_bytes", "gauge",
	 "Dirty bytes left to send."},
	{"migd_migration_bandwidth_bytes_per_second", "gauge",
	 "Bandwidth of the last iteration."},
	{"migd_migration_dirty_bytes_per_second", "gauge",
	 "Dirty rate the engine measured in the last iteration."},
	{"migd_migration_expected_downtime_seconds", "gauge",
	 "Downtime the engine expects if it switched over now."},
};

static const Migd__MigProgress *progress_of(const struct migd_hmig *m)
{
	static const Migd__MigProgress none = MIGD__MIG_PROGRESS__INIT;

	return m->info && m->info->progress ? m->info->progress : &none;
}

static unsigned phase_of(const Migd__MigProgress *p)
{
	return (unsigned)p->phase < NR_PHASES ? (unsigned)p->phase : 0;
}

static bool same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/*
 * In flight (not settled; UNRESOLVED included, it still holds the VM),
 * and the newest such record of its VM and direction: a series is one
 * VM's one migration, whatever the records left behind.
 */
static bool shown(const struct migd_hmig *migs, const struct migd_hmig *m)
{
	if (!m->info || settled(m->info))
		return false;
	for (const struct migd_hmig *o = migs; o != m; o = o->next)
		if (o->info && !settled(o->info) &&
		    dir_of(o->info) == dir_of(m->info) &&
		    same_str(o->info->vm, m->info->vm))
			return false;
	return true;
}

/* The value of family @f (1 .. HV_ARRAY_SIZE(live_fams) - 1). */
static double live_value(size_t f, const Migd__MigProgress *p)
{
	double v;

	switch (f) {
	case 1:
		return p->iteration;
	case 2:
		/* Before the first pass nothing says how much is left, and
		 * a failed or cancelled one went nowhere: never 1. */
		if (p->phase == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED)
			return 1;
		if (p->phase < MIGD__MIG_PHASE__MIG_PHASE_ITERATE ||
		    p->phase == MIGD__MIG_PHASE__MIG_PHASE_FAILED ||
		    p->phase == MIGD__MIG_PHASE__MIG_PHASE_CANCELLED ||
		    !p->ram_bytes)
			return 0;
		v = 1 - (double)p->remaining_bytes / (double)p->ram_bytes;
		return v < 0 ? 0 : v;
	case 3:
		return p->elapsed_ns / 1e9;
	case 4:
		return (double)p->bytes_wire;
	case 5:
		return (double)p->pages_sent;
	case 6:
		return (double)p->remaining_bytes;
	case 7:
		return (double)p->bandwidth;
	case 8:
		return (double)p->dirty_rate;
	case 9:
		return p->expected_downtime_ns / 1e9;
	}
	return 0;
}

static void live_series(struct migd_mbuf *b, size_t f,
			const struct migd_hmig *m)
{
	const Migd__MigProgress *p = progress_of(m);
	const char *dir = dir_label[dir_of(m->info)];
	char vm[160], peer[300], v[MIGD_NUM_MAX];

	esc(m->info->vm, vm, sizeof(vm));
	if (f == 0) {
		for (unsigned ph = 1; ph < NR_PHASES; ph++)
			put(b,
			    "migd_migration_phase{vm=\"%s\",direction=\"%s\","
			    "phase=\"%s\"} %d\n",
			    vm, dir, phase_label[ph], phase_of(p) == ph);
		return;
	}
	esc(m->info->peer, peer, sizeof(peer));
	put(b, "%s{vm=\"%s\",direction=\"%s\",peer=\"%s\"} %s\n",
	    live_fams[f].name, vm, dir, peer, num(live_value(f, p), v));
}

/* ---- lifetime totals --------------------------------------------------- */

static void hist_render(struct migd_mbuf *b, const struct migd_host *d,
			size_t f)
{
	const struct hist_fam *hf = &hist_fams[f];
	char le[MIGD_NUM_MAX], v[MIGD_NUM_MAX];

	family(b, hf->name, "histogram", hf->help);
	for (unsigned dir = 0; dir < MIGD_MIG_DIRS; dir++) {
		const struct migd_hist *h = hist_of(
			(struct migd_mig_totals *)&d->mig_totals, f, dir);
		uint64_t cum = 0;

		for (size_t k = 0; k <= hf->nr; k++) {
			cum += h->bucket[k];
			put(b, "%s_bucket{direction=\"%s\",le=\"%s\"} %llu\n",
			    hf->name, dir_label[dir],
			    k < hf->nr ? num(hf->bounds[k], le) : "+Inf",
			    (unsigned long long)cum);
		}
		put(b, "%s_sum{direction=\"%s\"} %s\n", hf->name,
		    dir_label[dir], num(h->sum, v));
		put(b, "%s_count{direction=\"%s\"} %llu\n", hf->name,
		    dir_label[dir], (unsigned long long)h->count);
	}
}

void migd__metrics_migs(struct migd_host *d, struct migd_mbuf *b)
{
	struct migd_hmig *migs = d->sup ? d->sup->migs : NULL;

	for (size_t f = 0; f < HV_ARRAY_SIZE(live_fams); f++) {
		family(b, live_fams[f].name, live_fams[f].type,
		       live_fams[f].help);
		for (struct migd_hmig *m = migs; m; m = m->next)
			if (shown(migs, m))
				live_series(b, f, m);
	}
	family(b, "migd_migrations", "gauge",
	       "Migrations known (running and the last finished), by phase.");
	for (unsigned ph = 1; ph < NR_PHASES; ph++) {
		unsigned c = 0;

		for (struct migd_hmig *m = migs; m; m = m->next)
			c += m->info && phase_of(progress_of(m)) == ph;
		put(b, "migd_migrations{phase=\"%s\"} %u\n", phase_label[ph],
		    c);
	}
	family(b, "migd_migrations_total", "counter",
	       "Migrations settled since start, by direction and result.");
	for (unsigned dir = 0; dir < MIGD_MIG_DIRS; dir++)
		for (unsigned r = 0; r < MIGD_MIG_RESULTS; r++)
			put(b,
			    "migd_migrations_total{direction=\"%s\","
			    "result=\"%s\"} %llu\n",
			    dir_label[dir], result_label[r],
			    (unsigned long long)d->mig_totals.result[dir][r]);
	for (size_t f = 0; f < HV_ARRAY_SIZE(hist_fams); f++)
		hist_render(b, d, f);
	family(b, "migd_migration_errors_total", "counter",
	       "Outgoing migrations that failed (not cancelled).");
	put(b, "migd_migration_errors_total %llu\n",
	    (unsigned long long)d->mig_errors);
	family(b, "migd_migration_unresolved_total", "counter",
	       "Outgoing migrations whose commit had no answer (source VM "
	       "kept paused until resolved).");
	put(b, "migd_migration_unresolved_total %llu\n",
	    (unsigned long long)d->mig_unresolved);
	family(b, "migd_migration_verify_failures_total", "counter",
	       "Outgoing migrations whose post-commit verification found "
	       "pages that differ (also in migd_migration_errors_total).");
	put(b, "migd_migration_verify_failures_total %llu\n",
	    (unsigned long long)d->mig_verify_failures);
}
