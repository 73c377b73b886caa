// SPDX-License-Identifier: MIT
/*
 * hvbench yield: directed yield with and without the ready boost, on
 * overcommitted soft vCPUs (hvcore/soft/sched.h), with the ebizzy-like
 * records workload (hvcore/wl_ebizzy.h): 1, 2 and 3 VMs of --vcpus vCPUs
 * sharing --threads run tokens. Each row alternates baseline and boosted
 * runs (the order flips every run, so drift hits both alike) and prints
 * medians of records/s, the improvement, and where the vCPUs' time went.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/soft/sched_wl.h"
#include "tools/hvbench/hvbench.h"

#define MAX_RUNS 31

struct yield_opts {
	unsigned vms[HV_SOFT_SCHED_MAX_VMS];
	unsigned nr_rows;
	unsigned runs;
	unsigned hogs;
	double seconds;
	struct hv_soft_sched_wl_cfg cfg;
};

/* What one policy did over the runs of one row. */
struct agg {
	double rps[MAX_RUNS];
	double ns[HV_SOFT_SCHED_NR_BUCKETS];
	double ple, yields, wakeups, preempt, calls, max_wait_ms;
	double grants, back, flushed;
	unsigned n;
};

static const char *const bucket_names[HV_SOFT_SCHED_NR_BUCKETS] = {
	"work", "lock spin", "call spin", "handlers", "halted", "preempted",
};

static int one_run(const struct yield_opts *o, unsigned vms,
		   enum hv_soft_yield_policy pol, struct agg *a)
{
	struct hv_soft_sched_wl_cfg c = o->cfg;
	struct hv_soft_sched_wl_result res = { 0 };
	uint64_t records = 0;
	unsigned n;
	int ret;

	c.vms = vms + o->hogs;
	c.hogs = o->hogs;
	c.sched.policy = pol;
	n = c.vms * c.vcpus;
	res.vcpu = calloc(n, sizeof(*res.vcpu));
	if (!res.vcpu)
		return -ENOMEM;
	ret = hv_soft_sched_wl_run(&c, (uint64_t)(o->seconds * 1e9), &res);
	if (ret) {
		free(res.vcpu);
		return ret;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct hv_soft_sched_wl_vcpu *v = &res.vcpu[i];

		if (i < vms * c.vcpus) /* the hogs' records do not count */
			records += v->wl.records;
		for (unsigned b = 0; b < HV_SOFT_SCHED_NR_BUCKETS; b++)
			a->ns[b] += (double)v->sched.ns[b];
		a->ple += (double)v->sched.ple_exits;
		a->yields += (double)v->sched.yields;
		a->wakeups += (double)v->sched.wakeups;
		a->preempt += (double)v->sched.preemptions;
		a->calls += (double)v->sync.calls;
		if (v->sched.max_wait_ns / 1e6 > a->max_wait_ms)
			a->max_wait_ms = v->sched.max_wait_ns / 1e6;
	}
	a->grants += (double)res.sched.grants;
	a->back += (double)res.sched.lends_back;
	a->flushed += (double)res.sched.lends_flushed;
	if (res.sched.violations) {
		fprintf(stderr, "yield: scheduler oracle: %llu violations\n",
			(unsigned long long)res.sched.violations);
		free(res.vcpu);
		return -EPROTO;
	}
	a->rps[a->n++] = records / (res.wall_ns / 1e9);
	free(res.vcpu);
	return 0;
}

static double pct(const struct agg *a, unsigned b)
{
	double t = 0;

	for (unsigned i = 0; i < HV_SOFT_SCHED_NR_BUCKETS; i++)
		t += a->ns[i];
	return t > 0 ? 100.0 * a->ns[b] / t : 0;
}

static void print_time(const char *row, const char *pol, const struct agg *a)
{
	printf("| %s | %s |", row, pol);
	for (unsigned b = 0; b < HV_SOFT_SCHED_NR_BUCKETS; b++)
		printf(" %.1f |", pct(a, b));
	printf(" %.0f | %.0f%% | %.0f | %.0f | %.0f%% | %.0f | %.1f |\n",
	       a->ple / a->n, a->ple ? 100.0 * a->yields / a->ple : 0,
	       a->calls / a->n, a->grants / a->n,
	       a->yields ? 100.0 * a->back / a->yields : 0, a->wakeups / a->n,
	       a->max_wait_ms);
}

static int parse_vms(struct yield_opts *o, const char *s)
{
	char *end;

	o->nr_rows = 0;
	while (*s && o->nr_rows < HV_SOFT_SCHED_MAX_VMS) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || !v || v > HV_SOFT_SCHED_MAX_VMS)
			return -EINVAL;
		o->vms[o->nr_rows++] = (unsigned)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	return o->nr_rows ? 0 : -EINVAL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hvbench yield [--vms 1,2,3] [--vcpus N] [--threads N]\n"
		"         [--slice-us US] [--seconds S] [--runs N]\n"
		"         [--ple-spins N] [--chunk-pages N] [--chunk-bytes N]\n"
		"         [--lock-every N] [--lock-hold N] [--free-every N]\n"
		"         [--call-every N] [--mutex-spins N] [--lend-spin-us US]\n"
		"         [--hogs N]   (N more VMs whose vCPUs only compute)\n");
}

static int bench_yield(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "vms", required_argument, NULL, 'm' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "threads", required_argument, NULL, 't' },
		{ "slice-us", required_argument, NULL, 'S' },
		{ "seconds", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'r' },
		{ "ple-spins", required_argument, NULL, 'p' },
		{ "chunk-pages", required_argument, NULL, 'c' },
		{ "chunk-bytes", required_argument, NULL, 'b' },
		{ "lock-every", required_argument, NULL, 'l' },
		{ "lock-hold", required_argument, NULL, 'h' },
		{ "free-every", required_argument, NULL, 'F' },
		{ "call-every", required_argument, NULL, 'C' },
		{ "mutex-spins", required_argument, NULL, 'M' },
		{ "lend-spin-us", required_argument, NULL, 'L' },
		{ "hogs", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct yield_opts o = {
		.vms = { 1, 2, 3 },
		.nr_rows = 3,
		.runs = 3,
		.seconds = 2,
		.cfg = {
			.vcpus = 8,
			.sched = { .threads = 2, .slice_ns = 1000000,
				   .lend_spin_ns = 50000 },
			.wl = {
				.region_pages = 512,
				.chunk_bytes = 1024,
				.chunk_pages = 4,
				.lock_every = 4,
				.lock_hold = 4,
				.free_every = 16,
				.mutex_spins = 64,
				.seed = 42,
			},
			.ple_spins = 64,
		},
	};
	struct agg *base, *boost;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 0) : 0;

		switch (c) {
		case 'm':
			if (parse_vms(&o, optarg)) {
				usage();
				return 2;
			}
			break;
		case 'v': o.cfg.vcpus = (unsigned)v; break;
		case 't': o.cfg.sched.threads = (unsigned)v; break;
		case 'S': o.cfg.sched.slice_ns = v * 1000; break;
		case 's': o.seconds = atof(optarg); break;
		case 'r': o.runs = (unsigned)v; break;
		case 'p': o.cfg.ple_spins = (uint32_t)v; break;
		case 'c': o.cfg.wl.chunk_pages = (uint32_t)v; break;
		case 'b': o.cfg.wl.chunk_bytes = (uint32_t)v; break;
		case 'l': o.cfg.wl.lock_every = (uint32_t)v; break;
		case 'h': o.cfg.wl.lock_hold = (uint32_t)v; break;
		case 'F': o.cfg.wl.free_every = (uint32_t)v; break;
		case 'C': o.cfg.wl.call_every = (uint32_t)v; break;
		case 'M': o.cfg.wl.mutex_spins = (uint32_t)v; break;
		case 'L': o.cfg.sched.lend_spin_ns = v * 1000; break;
		case 'H': o.hogs = (unsigned)v; break;
		default:
			usage();
			return 2;
		}
	}
	for (unsigned row = 0; row < o.nr_rows; row++) {
		if (o.vms[row] + o.hogs > HV_SOFT_SCHED_MAX_VMS) {
			usage();
			return 2;
		}
	}
	if (!o.runs || o.runs > MAX_RUNS || o.seconds <= 0 ||
	    !o.cfg.vcpus || o.cfg.vcpus > HV_WL_SYNC_MAX_CPUS) {
		usage();
		return 2;
	}
	base = calloc(o.nr_rows, sizeof(*base));
	boost = calloc(o.nr_rows, sizeof(*boost));
	if (!base || !boost) {
		free(base);
		free(boost);
		return 1;
	}
	if (o.hogs)
		printf("yield: plus %u CPU-hog VM(s) in every row (records of "
		       "the hogs not counted)\n", o.hogs);
	printf("yield: %u vCPUs per VM over %u run tokens, slice %llu us, "
	       "lender spin %llu us, "
	       "%u runs of %.1f s per policy, PLE every %u spins\n"
	       "records: %u pages x %u B, spinlock every %u (hold %u), "
	       "mutex + call to all every %u, bare call every %u, "
	       "mutex spins %u\n",
	       o.cfg.vcpus, o.cfg.sched.threads,
	       (unsigned long long)(o.cfg.sched.slice_ns / 1000),
	       (unsigned long long)(o.cfg.sched.lend_spin_ns / 1000), o.runs,
	       o.seconds, o.cfg.ple_spins, o.cfg.wl.chunk_pages,
	       o.cfg.wl.chunk_bytes, o.cfg.wl.lock_every, o.cfg.wl.lock_hold,
	       o.cfg.wl.free_every, o.cfg.wl.call_every, o.cfg.wl.mutex_spins);
	for (unsigned row = 0; row < o.nr_rows && !ret; row++) {
		for (unsigned r = 0; r < o.runs && !ret; r++) {
			bool boost_first = r & 1;

			for (unsigned k = 0; k < 2 && !ret; k++) {
				bool b = (k == 0) == boost_first;

				ret = one_run(&o, o.vms[row],
					      b ? HV_SOFT_YIELD_BOOSTED
						: HV_SOFT_YIELD_BASELINE,
					      b ? &boost[row] : &base[row]);
			}
			if (!ret)
				printf("  %u VM run %u: baseline %.0f  boosted "
				       "%.0f records/s\n", o.vms[row], r + 1,
				       base[row].rps[r], boost[row].rps[r]);
			fflush(stdout);
		}
	}
	if (ret) {
		fprintf(stderr, "yield: run failed: %s\n", strerror(-ret));
		free(base);
		free(boost);
		return 1;
	}
	printf("\n| VMs | vCPUs / tokens | baseline records/s | boosted "
	       "records/s | improvement | seed (ebizzy -M) |\n");
	printf("|---|---|---|---|---|---|\n");
	for (unsigned row = 0; row < o.nr_rows; row++) {
		static const char *const seed[] = { "+9%", "+180%", "+72%" };
		double mb = hvbench_median(base[row].rps, base[row].n);
		double mo = hvbench_median(boost[row].rps, boost[row].n);

		printf("| %u | %u / %u | %.0f | %.0f | %+.0f%% | %s |\n",
		       o.vms[row], (o.vms[row] + o.hogs) * o.cfg.vcpus,
		       o.cfg.sched.threads, mb, mo, 100.0 * (mo / mb - 1),
		       o.hogs ? (o.vms[row] == 1 ? "+155..179% (hog)" : "-")
		       : o.vms[row] <= 3 ? seed[o.vms[row] - 1]
					 : "-");
	}
	printf("\nwhere vCPU time went (%% of vCPU time, all runs); per run: "
	       "PLE exits, share that found a candidate, calls sent, tokens "
	       "handed over, share of lent tokens given back before the slice "
	       "ended, wake-ups; longest wait for a token\n\n"
	       "| VMs | policy |");
	for (unsigned b = 0; b < HV_SOFT_SCHED_NR_BUCKETS; b++)
		printf(" %s |", bucket_names[b]);
	printf(" PLE exits | yielded | calls | handovers | lent back | "
	       "wake-ups | max wait ms |\n|---|---|");
	for (unsigned b = 0; b < HV_SOFT_SCHED_NR_BUCKETS + 7; b++)
		printf("---|");
	printf("\n");
	for (unsigned row = 0; row < o.nr_rows; row++) {
		char name[16];

		snprintf(name, sizeof(name), "%u", o.vms[row]);
		print_time(name, "baseline", &base[row]);
		print_time(name, "boosted", &boost[row]);
	}
	free(base);
	free(boost);
	return 0;
}

HVBENCH_CMD("yield", "directed yield: baseline vs ready-boosted, 1-3 VMs "
		     "overcommitted",
	    bench_yield);
