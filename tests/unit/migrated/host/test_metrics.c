// SPDX-License-Identifier: MIT
/*
 * migd_metrics: the exposition of a daemon in the host role rendered from
 * hand-built worker and migration records (no worker, no loop), and the
 * migration totals migd_metrics_mig_seen() keeps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/time.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/metrics.h"
#include "tests/harness/hv_test.h"

/* One worker's records, with storage for the messages they point to. */
struct fake_vm {
	struct migd_worker w;
	Migd__VmInfo info;
	Migd__DirtyRateSample dr;
	Migd__DirtyRateWindow win[3];
	Migd__DirtyRateWindow *winp[3];
	Migd__VcpuDirtyRate vc[2];
	Migd__VcpuDirtyRate *vcp[2];
	double rates[2][3];
};

struct fake {
	struct migd_host d;
	struct migd_supervisor h;
	struct fake_vm vm[5];
	struct migd_hmig mig[4];
	Migd__MigInfo mi[3];
	Migd__MigProgress mp[3];
	Migd__Downtime dt;
	char *text;
	size_t len;
};

/* A VM of @nr_vcpus dirtying @pps pages/s in the 1 s window (half that
 * in 10 s, a quarter in 60 s), split 3:1 between its vCPUs. */
static void monitor_sample(struct fake_vm *v, double pps)
{
	static const uint32_t secs[3] = {1, 10, 60};

	migd__dirty_rate_sample__init(&v->dr);
	v->dr.vm = v->w.name;
	v->dr.source = (char *)"monitor";
	for (int k = 0; k < 3; k++) {
		double r = pps / (1 << k);

		migd__dirty_rate_window__init(&v->win[k]);
		v->win[k].seconds = secs[k];
		v->win[k].pages_per_s = r;
		v->win[k].bytes_per_s = r * 4096;
		v->win[k].working_set_pages = (uint64_t)(r * secs[k]) / 2;
		v->winp[k] = &v->win[k];
		v->rates[0][k] = r * 0.75;
		v->rates[1][k] = r * 0.25;
	}
	v->dr.n_windows = 3;
	v->dr.windows = v->winp;
	for (unsigned i = 0; i < 2; i++) {
		migd__vcpu_dirty_rate__init(&v->vc[i]);
		v->vc[i].index = i;
		v->vc[i].n_pages_per_s = 3;
		v->vc[i].pages_per_s = v->rates[i];
		v->vcp[i] = &v->vc[i];
	}
	v->dr.n_vcpus = 2;
	v->dr.vcpus = v->vcp;
	v->dr.vcpu_split_estimated = true;
	v->w.dr = &v->dr;
}

static struct fake_vm *add_vm(struct fake *f, unsigned i, const char *name,
			      Migd__VmState st, int pid)
{
	struct fake_vm *v = &f->vm[i];

	v->w.d = &f->d;
	v->w.wid = 10 + i;
	v->w.pid = pid;
	snprintf(v->w.name, sizeof(v->w.name), "%s", name);
	v->w.has_vm = true;
	migd__vm_info__init(&v->info);
	v->info.name = v->w.name;
	v->info.state = st;
	v->w.info = &v->info;
	/* Newest first, as the host links them. */
	v->w.next = f->h.workers;
	f->h.workers = &v->w;
	f->h.nr_workers++;
	return v;
}

static struct fake *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->d.sup = &f->h;
	f->d.start_ns = hv_now_ns();
	return f;
}

static void fake_free(struct fake *f)
{
	if (f)
		free(f->text);
	free(f);
}

static int render(struct fake *f)
{
	free(f->text);
	f->text = NULL;
	return migd_metrics_render(&f->d, &f->text, &f->len);
}

/* @line is one whole line of the exposition. */
static bool has_line(const struct fake *f, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = f->text; p && (p = strstr(p, line)); p++)
		if ((p == f->text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

static bool has(const struct fake *f, const char *s)
{
	return f->text && strstr(f->text, s);
}

/* a runs (monitor sample), b crashed (a stale sample), c handed its VM
 * to another worker, d's VM was destroyed, e migrates (the engine's
 * rate, no windows). */
static struct fake *five_vms(void)
{
	struct fake *f = fake_new();
	struct fake_vm *v;

	if (!f)
		return NULL;
	monitor_sample(add_vm(f, 0, "a", MIGD__VM_STATE__VM_STATE_RUNNING,
			      1234),
		       1000);
	v = add_vm(f, 1, "b", MIGD__VM_STATE__VM_STATE_RUNNING, 1235);
	monitor_sample(v, 500);
	v->w.crashed = true;
	v = add_vm(f, 2, "c", MIGD__VM_STATE__VM_STATE_RUNNING, 1236);
	monitor_sample(v, 300);
	v->w.retired = true;
	v = add_vm(f, 3, "d", MIGD__VM_STATE__VM_STATE_STOPPED, 1237);
	v->w.vm_gone = true;
	v = add_vm(f, 4, "e", MIGD__VM_STATE__VM_STATE_MIGRATING, 1238);
	migd__dirty_rate_sample__init(&v->dr);
	v->dr.source = (char *)"migration";
	v->dr.pages_per_s = 25;
	v->dr.bytes_per_s = 25 * 4096;
	v->w.dr = &v->dr;
	f->h.crashes = 3;
	f->h.adopted = 2;
	f->h.spawned = 4;
	return f;
}

static void test_vms_come_from_the_workers_records(void)
{
	struct fake *f = five_vms();

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_vms{state=\"running\"} 1"));
	CU_ASSERT(has_line(f, "migd_vms{state=\"crashed\"} 1"));
	CU_ASSERT(has_line(f, "migd_vms{state=\"migrating\"} 1"));
	CU_ASSERT(has_line(f, "migd_vms{state=\"stopped\"} 0"));
	/* The running VM's windows and per-vCPU split. */
	CU_ASSERT(has_line(f, "migd_vm_dirty_pages_per_second{vm=\"a\","
			      "window=\"1s\",source=\"monitor\"} 1000"));
	CU_ASSERT(has_line(f, "migd_vm_dirty_pages_per_second{vm=\"a\","
			      "window=\"10s\",source=\"monitor\"} 500"));
	CU_ASSERT(has_line(f, "migd_vm_dirty_pages_per_second{vm=\"a\","
			      "window=\"60s\",source=\"monitor\"} 250"));
	CU_ASSERT(has_line(f, "migd_vm_dirty_bytes_per_second{vm=\"a\","
			      "window=\"1s\",source=\"monitor\"} 4096000"));
	CU_ASSERT(has_line(f, "migd_vm_working_set_pages{vm=\"a\","
			      "window=\"10s\"} 2500"));
	CU_ASSERT(has_line(f, "migd_vcpu_dirty_pages_per_second{vm=\"a\","
			      "vcpu=\"0\",window=\"1s\",estimated=\"true\"} "
			      "750"));
	CU_ASSERT(has_line(f, "migd_vcpu_dirty_pages_per_second{vm=\"a\","
			      "vcpu=\"1\",window=\"60s\",estimated=\"true\"} "
			      "62.5"));
	/* The migrating VM: the engine's rate, no windows. */
	CU_ASSERT(has_line(f, "migd_vm_dirty_pages_per_second{vm=\"e\","
			      "window=\"migration\",source=\"migration\"} 25"));
	CU_ASSERT(has_line(f, "migd_vm_dirty_bytes_per_second{vm=\"e\","
			      "window=\"migration\",source=\"migration\"} "
			      "102400"));
	CU_ASSERT_FALSE(has(f, "migd_vm_working_set_pages{vm=\"e\""));
	/* A crashed VM has no rate; VMs handed over or gone are not ours. */
	CU_ASSERT_FALSE(has(f, "per_second{vm=\"b\""));
	CU_ASSERT_FALSE(has(f, "vm=\"c\""));
	CU_ASSERT_FALSE(has(f, "vm=\"d\""));
	fake_free(f);
}

static void test_worker_families(void)
{
	struct fake *f = five_vms();

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	/* Every entry but the crashed one is a process. */
	CU_ASSERT(has_line(f, "migd_workers 4"));
	CU_ASSERT(has_line(f, "migd_vm_crashes_total 3"));
	CU_ASSERT(has_line(f, "migd_workers_adopted_total 2"));
	CU_ASSERT(has_line(f, "migd_workers_spawned_total 4"));
	CU_ASSERT(has_line(f, "# TYPE migd_vm_crashes_total counter"));
	CU_ASSERT(has_line(f, "migd_vm_worker_info{vm=\"a\",pid=\"1234\","
			      "worker=\"10\"} 1"));
	CU_ASSERT(has_line(f, "migd_vm_worker_info{vm=\"b\",pid=\"1235\","
			      "worker=\"11\"} 1"));
	CU_ASSERT(has_line(f, "migd_vm_worker_info{vm=\"e\",pid=\"1238\","
			      "worker=\"14\"} 1"));
	/* A re-adopted worker whose VM has not reported yet counts in no
	 * state, but is a worker and names its VM. */
	f->vm[0].w.info = NULL;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_vms{state=\"running\"} 0"));
	CU_ASSERT(has_line(f, "migd_workers 4"));
	CU_ASSERT(has_line(f, "migd_vm_worker_info{vm=\"a\",pid=\"1234\","
			      "worker=\"10\"} 1"));
	fake_free(f);
}

static void test_empty_host_renders_every_family(void)
{
	struct fake *f = fake_new();

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_workers 0"));
	CU_ASSERT(has_line(f, "migd_vms{state=\"crashed\"} 0"));
	CU_ASSERT(has_line(f, "# TYPE migd_vm_dirty_pages_per_second gauge"));
	CU_ASSERT(has_line(f, "# TYPE migd_migration_phase gauge"));
	CU_ASSERT(has_line(f, "migd_migrations{phase=\"iterate\"} 0"));
	/* No host at all (the worker role): still a valid exposition. */
	f->d.sup = NULL;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_workers 0"));
	CU_ASSERT(has_line(f, "migd_up 1"));
	fake_free(f);
}

/* 7: outgoing "a", iterating, a quarter left; 6: incoming "x",
 * completed (settled); 5: a record with no MigInfo yet; 4: outgoing "a"
 * failed with nothing left to send (an older record of the same VM). */
static struct fake *three_migrations(void)
{
	struct fake *f = fake_new();
	Migd__MigProgress *p;

	if (!f)
		return NULL;
	for (int i = 0; i < 3; i++) {
		migd__mig_info__init(&f->mi[i]);
		migd__mig_progress__init(&f->mp[i]);
		f->mi[i].progress = &f->mp[i];
	}
	f->mi[0].id = 7;
	f->mi[0].direction = MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING;
	f->mi[0].vm = (char *)"a";
	f->mi[0].peer = (char *)"10.0.0.2:7000";
	p = &f->mp[0];
	p->phase = MIGD__MIG_PHASE__MIG_PHASE_ITERATE;
	p->iteration = 3;
	p->elapsed_ns = 1500000000;
	p->ram_bytes = 4096 * 1000;
	p->remaining_bytes = 4096 * 250;
	p->bytes_wire = 123456789012345ull;
	p->pages_sent = 900;
	p->bandwidth = 1000000;
	p->dirty_rate = 20000;
	p->expected_downtime_ns = 12345678;
	f->mi[1].id = 6;
	f->mi[1].direction = MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING;
	f->mi[1].vm = (char *)"x";
	f->mi[1].peer = (char *)"0.0.0.0";
	f->mi[1].finished = true;
	p = &f->mp[1];
	p->phase = MIGD__MIG_PHASE__MIG_PHASE_COMPLETED;
	migd__downtime__init(&f->dt);
	f->dt.total_ns = 42000000;
	p->downtime = &f->dt;
	p->guest_downtime_ns = 50000000;
	f->mi[2].id = 4;
	f->mi[2].direction = MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING;
	f->mi[2].vm = (char *)"a";
	f->mi[2].peer = (char *)"10.0.0.3:7000";
	f->mi[2].finished = true;
	p = &f->mp[2];
	p->phase = MIGD__MIG_PHASE__MIG_PHASE_FAILED;
	p->ram_bytes = 4096 * 1000;
	p->remaining_bytes = 0;
	p->error = -EIO;
	f->mig[0] = (struct migd_hmig){.id = 7, .info = &f->mi[0],
				       .next = &f->mig[1]};
	f->mig[1] = (struct migd_hmig){.id = 6, .info = &f->mi[1],
				       .finished = true, .next = &f->mig[2]};
	f->mig[2] = (struct migd_hmig){.id = 5, .next = &f->mig[3]};
	f->mig[3] = (struct migd_hmig){.id = 4, .info = &f->mi[2],
				       .finished = true};
	f->h.migs = &f->mig[0];
	return f;
}

static void test_migrations_in_flight_are_labelled_by_vm_not_id(void)
{
	struct fake *f = three_migrations();

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	f->d.mig_errors = 2;
	f->d.mig_unresolved = 1;
	f->d.mig_verify_failures = 1;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_migration_phase{vm=\"a\","
			      "direction=\"outgoing\",phase=\"iterate\"} 1"));
	CU_ASSERT(has_line(f, "migd_migration_phase{vm=\"a\","
			      "direction=\"outgoing\",phase=\"setup\"} 0"));
	CU_ASSERT(has_line(f, "migd_migration_iteration{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "3"));
	CU_ASSERT(has_line(f, "migd_migration_progress_ratio{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "0.75"));
	CU_ASSERT(has_line(f, "migd_migration_elapsed_seconds{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "1.5"));
	CU_ASSERT(has_line(f, "migd_migration_expected_downtime_seconds{"
			      "vm=\"a\",direction=\"outgoing\","
			      "peer=\"10.0.0.2:7000\"} 0.012345678"));
	/* No id label anywhere: the series count does not grow with the
	 * migrations ever run. */
	CU_ASSERT_FALSE(has(f, "id=\""));
	/* Settled migrations leave the in-flight families: the completed
	 * incoming one, and the failed one of "a" (which would otherwise
	 * claim progress 1 with nothing left to send). */
	CU_ASSERT_FALSE(has(f, "vm=\"x\""));
	CU_ASSERT_FALSE(has(f, "10.0.0.3"));
	CU_ASSERT(has_line(f, "migd_migrations{phase=\"iterate\"} 1"));
	CU_ASSERT(has_line(f, "migd_migrations{phase=\"completed\"} 1"));
	CU_ASSERT(has_line(f, "migd_migrations{phase=\"failed\"} 1"));
	CU_ASSERT(has_line(f, "migd_migration_errors_total 2"));
	CU_ASSERT(has_line(f, "migd_migration_unresolved_total 1"));
	CU_ASSERT(has_line(f, "migd_migration_verify_failures_total 1"));
	CU_ASSERT(has_line(f, "# TYPE migd_migration_wire_bytes_total "
			      "counter"));
	fake_free(f);
}

static void test_failed_migration_never_shows_progress_one(void)
{
	struct fake *f = three_migrations();

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	/* Failed with nothing left to send, settled: gone. */
	f->mi[0].progress->phase = MIGD__MIG_PHASE__MIG_PHASE_FAILED;
	f->mi[0].progress->remaining_bytes = 0;
	f->mi[0].finished = true;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT_FALSE(has(f, "migd_migration_progress_ratio{"));
	/* The phase FAILED before the record says finished: 0, not 1. */
	f->mi[0].finished = false;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_migration_progress_ratio{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "0"));
	/* Nothing left to send in the commit: that one is 1. */
	f->mi[0].progress->phase = MIGD__MIG_PHASE__MIG_PHASE_COMMIT;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_migration_progress_ratio{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "1"));
	/* Setup, before the first pass: nothing says how much is left. */
	f->mi[0].progress->phase = MIGD__MIG_PHASE__MIG_PHASE_SETUP;
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_migration_progress_ratio{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "0"));
	fake_free(f);
}

static void test_values_keep_full_precision(void)
{
	struct fake *f = three_migrations();
	struct fake_vm *v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	v = add_vm(f, 0, "p", MIGD__VM_STATE__VM_STATE_RUNNING, 99);
	monitor_sample(v, 1234567.891);
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	/* 6 significant digits would print 1.23457e+14 and 1.23457e+06. */
	CU_ASSERT(has_line(f, "migd_migration_wire_bytes_total{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "123456789012345"));
	CU_ASSERT(has_line(f, "migd_migration_remaining_bytes{vm=\"a\","
			      "direction=\"outgoing\",peer=\"10.0.0.2:7000\"} "
			      "1024000"));
	CU_ASSERT(has_line(f, "migd_vm_dirty_pages_per_second{vm=\"p\","
			      "window=\"1s\",source=\"monitor\"} "
			      "1234567.891"));
	fake_free(f);
}

/* ---- migd_metrics_mig_seen --------------------------------------------- */

struct seen {
	Migd__MigInfo i;
	Migd__MigProgress p;
};

static const Migd__MigInfo *info(struct seen *s, Migd__MigDirection dir,
				 Migd__MigPhase ph, bool finished, int err,
				 bool vf)
{
	migd__mig_info__init(&s->i);
	migd__mig_progress__init(&s->p);
	s->i.direction = dir;
	s->i.finished = finished;
	s->i.progress = &s->p;
	s->p.phase = ph;
	s->p.error = err;
	s->p.verify_failed = vf;
	return &s->i;
}

#define OUT MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING
#define IN MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING
#define PH(x) MIGD__MIG_PHASE__MIG_PHASE_##x

static void totals(const struct migd_host *d, uint64_t err, uint64_t unres,
		   uint64_t vf)
{
	CU_ASSERT_EQUAL(d->mig_errors, err);
	CU_ASSERT_EQUAL(d->mig_unresolved, unres);
	CU_ASSERT_EQUAL(d->mig_verify_failures, vf);
}

static void test_outgoing_outcomes_are_counted_once(void)
{
	struct migd_host *d = calloc(1, sizeof(*d));
	struct seen a, b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	/* Progress counts nothing; a failure once, however often seen. */
	migd_metrics_mig_seen(d, NULL, info(&a, OUT, PH(ITERATE), 0, 0, 0));
	totals(d, 0, 0, 0);
	migd_metrics_mig_seen(d, info(&a, OUT, PH(ITERATE), 0, 0, 0),
			      info(&b, OUT, PH(FAILED), 1, -EIO, 0));
	totals(d, 1, 0, 0);
	migd_metrics_mig_seen(d, info(&a, OUT, PH(FAILED), 1, -EIO, 0),
			      info(&b, OUT, PH(FAILED), 1, -EIO, 0));
	totals(d, 1, 0, 0);
	/* A first sight that is already the end (a quick failure). */
	migd_metrics_mig_seen(d, NULL, info(&b, OUT, PH(FAILED), 1, -EIO, 0));
	totals(d, 2, 0, 0);
	/* Unresolved on entry; resolving to the source is an error. */
	migd_metrics_mig_seen(d, info(&a, OUT, PH(COMMIT), 0, 0, 0),
			      info(&b, OUT, PH(UNRESOLVED), 1, 0, 0));
	totals(d, 2, 1, 0);
	migd_metrics_mig_seen(d, info(&a, OUT, PH(UNRESOLVED), 1, 0, 0),
			      info(&b, OUT, PH(UNRESOLVED), 1, 0, 0));
	totals(d, 2, 1, 0);
	migd_metrics_mig_seen(d, info(&a, OUT, PH(UNRESOLVED), 1, 0, 0),
			      info(&b, OUT, PH(FAILED), 1, 0, 0));
	totals(d, 3, 1, 0);
	/* Completed: fine, or with a verification failure (both). */
	migd_metrics_mig_seen(d, info(&a, OUT, PH(COMMIT), 0, 0, 0),
			      info(&b, OUT, PH(COMPLETED), 1, 0, 0));
	totals(d, 3, 1, 0);
	migd_metrics_mig_seen(d, info(&a, OUT, PH(COMMIT), 0, 0, 0),
			      info(&b, OUT, PH(COMPLETED), 1, -EBADE, 1));
	totals(d, 4, 1, 1);
	/* Cancelled is no error; nothing incoming counts. */
	migd_metrics_mig_seen(d, info(&a, OUT, PH(ITERATE), 0, 0, 0),
			      info(&b, OUT, PH(CANCELLED), 1, -ECANCELED, 0));
	migd_metrics_mig_seen(d, info(&a, IN, PH(ITERATE), 0, 0, 0),
			      info(&b, IN, PH(FAILED), 1, -EIO, 0));
	migd_metrics_mig_seen(d, NULL, NULL);
	totals(d, 4, 1, 1);
	free(d);
}

static void test_settled_migrations_feed_results_and_histograms(void)
{
	struct fake *f = fake_new();
	struct seen a, b;
	Migd__Downtime dt = MIGD__DOWNTIME__INIT;
	Migd__MigInfo *i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	/* Outgoing, 12 s, 30 ms downtime, the guest saw 70 ms. */
	info(&a, OUT, PH(COMMIT), 0, 0, 0);
	i = (Migd__MigInfo *)info(&b, OUT, PH(COMPLETED), 1, 0, 0);
	b.p.elapsed_ns = 12000000000ull;
	dt.total_ns = 30000000;
	b.p.downtime = &dt;
	b.p.guest_downtime_ns = 70000000;
	migd_metrics_mig_seen(&f->d, &a.i, i);
	/* Seen again: counted once. */
	migd_metrics_mig_seen(&f->d, i, i);
	/* Incoming, failed after 0.2 s, no switchover: no downtimes. */
	i = (Migd__MigInfo *)info(&b, IN, PH(FAILED), 1, -EIO, 0);
	b.p.elapsed_ns = 200000000;
	migd_metrics_mig_seen(&f->d, NULL, i);
	/* Outgoing cancelled, outgoing verification failure. */
	migd_metrics_mig_seen(&f->d, NULL,
			      info(&b, OUT, PH(CANCELLED), 1, -ECANCELED, 0));
	migd_metrics_mig_seen(&f->d, NULL,
			      info(&b, OUT, PH(COMPLETED), 1, -EBADE, 1));
	CU_ASSERT_EQUAL_FATAL(render(f), 0);
	CU_ASSERT(has_line(f, "migd_migrations_total{direction=\"outgoing\","
			      "result=\"completed\"} 1"));
	CU_ASSERT(has_line(f, "migd_migrations_total{direction=\"outgoing\","
			      "result=\"cancelled\"} 1"));
	CU_ASSERT(has_line(f, "migd_migrations_total{direction=\"outgoing\","
			      "result=\"verify_failed\"} 1"));
	CU_ASSERT(has_line(f, "migd_migrations_total{direction=\"outgoing\","
			      "result=\"failed\"} 0"));
	CU_ASSERT(has_line(f, "migd_migrations_total{direction=\"incoming\","
			      "result=\"failed\"} 1"));
	CU_ASSERT(has_line(f, "# TYPE migd_migration_duration_seconds "
			      "histogram"));
	/* 12 s: above the 10 s bucket, within 30 s; all three outgoing
	 * (the two quick ones at 0 s) in +Inf. */
	CU_ASSERT(has_line(f, "migd_migration_duration_seconds_bucket{"
			      "direction=\"outgoing\",le=\"10\"} 2"));
	CU_ASSERT(has_line(f, "migd_migration_duration_seconds_bucket{"
			      "direction=\"outgoing\",le=\"30\"} 3"));
	CU_ASSERT(has_line(f, "migd_migration_duration_seconds_bucket{"
			      "direction=\"outgoing\",le=\"+Inf\"} 3"));
	CU_ASSERT(has_line(f, "migd_migration_duration_seconds_sum{"
			      "direction=\"outgoing\"} 12"));
	CU_ASSERT(has_line(f, "migd_migration_duration_seconds_count{"
			      "direction=\"incoming\"} 1"));
	CU_ASSERT(has_line(f, "migd_migration_duration_seconds_sum{"
			      "direction=\"incoming\"} 0.2"));
	CU_ASSERT(has_line(f, "migd_migration_downtime_seconds_bucket{"
			      "direction=\"outgoing\",le=\"0.025\"} 0"));
	CU_ASSERT(has_line(f, "migd_migration_downtime_seconds_bucket{"
			      "direction=\"outgoing\",le=\"0.05\"} 1"));
	CU_ASSERT(has_line(f, "migd_migration_downtime_seconds_count{"
			      "direction=\"outgoing\"} 1"));
	CU_ASSERT(has_line(f, "migd_migration_downtime_seconds_count{"
			      "direction=\"incoming\"} 0"));
	CU_ASSERT(has_line(f, "migd_migration_guest_downtime_seconds_bucket{"
			      "direction=\"outgoing\",le=\"0.1\"} 1"));
	CU_ASSERT(has_line(f, "migd_migration_guest_downtime_seconds_sum{"
			      "direction=\"outgoing\"} 0.07"));
	fake_free(f);
}

static CU_TestInfo tests[] = {
	{"vms_come_from_the_workers_records",
	 test_vms_come_from_the_workers_records},
	{"worker_families", test_worker_families},
	{"empty_host_renders_every_family",
	 test_empty_host_renders_every_family},
	{"migrations_in_flight_are_labelled_by_vm_not_id",
	 test_migrations_in_flight_are_labelled_by_vm_not_id},
	{"failed_migration_never_shows_progress_one",
	 test_failed_migration_never_shows_progress_one},
	{"values_keep_full_precision", test_values_keep_full_precision},
	{"settled_migrations_feed_results_and_histograms",
	 test_settled_migrations_feed_results_and_histograms},
	{"outgoing_outcomes_are_counted_once",
	 test_outgoing_outcomes_are_counted_once},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/host/metrics", NULL, NULL, tests);
