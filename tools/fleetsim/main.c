// SPDX-License-Identifier: MIT
/*
 * fleet-sim: register simulated hosts under leases, claim their VMs, then
 * move ownership with the commit's transaction at set rates while
 * watchers follow the VM keys; print one row per rate (fleetsim.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/fleet/fleet.h"
#include "tools/fleetsim/fleetsim.h"

#define STEPS_MAX 16

static struct {
	const char *endpoints;
	const char *prefix;
	unsigned hosts, vms_per_host, ttl, clients, watchers, setup_threads;
	unsigned duration_s;
	unsigned nsteps;
	unsigned rate[STEPS_MAX]; /* 0 = max */
	bool keep;
} opt = {
	.prefix = "/migrated/", .hosts = 1000, .vms_per_host = 30,
	.ttl = 10, .clients = 8, .watchers = 4, .setup_threads = 16,
	.duration_s = 20,
};

static char *ep[MIGD_ETCD_ENDPOINTS_MAX];
static unsigned nep;
static struct migd_fleet **fleet;
static unsigned nvms;
/* Where each VM is, as the clients know it: VM v is only ever moved by
 * client v % clients, so these need no lock. */
static unsigned *owner;
static uint64_t *gen;
static struct fs_shared sh;
static _Atomic unsigned next_job;
static _Atomic uint64_t setup_err;
static _Atomic uint64_t claim_retries; /* and registrations */

struct step_res {
	struct fs_hist commit;
	_Atomic uint64_t ok, stale, other;
	double secs;
	int64_t db;
};
static struct step_res res[STEPS_MAX];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleet-sim --etcd URLS [options]\n"
		"  --hosts N          simulated hosts (1000)\n"
		"  --vms-per-host N   VMs each (30)\n"
		"  --ttl S            host lease TTL, s (10, as the daemon)\n"
		"  --rates LIST       ownership moves/s per step, 0 = max "
		"(100,500,1000,0)\n"
		"  --duration S       seconds per step (20)\n"
		"  --clients N        threads moving VMs (8)\n"
		"  --setup-threads N  threads registering and claiming (16)\n"
		"  --watchers N       watch streams on the VM keys (4)\n"
		"  --prefix P         key prefix (/migrated/)\n"
		"  --keep             do not revoke the hosts' leases at the end\n");
}

static void host_id(unsigned h, char *buf, size_t n)
{
	snprintf(buf, n, "sim-%05u", h);
}

static void vm_name(unsigned v, char *buf, size_t n)
{
	snprintf(buf, n, "sim-vm-%07u", v);
}

/* Host @h's endpoint list, rotated so that the hosts' connections spread
 * over the members as a fleet's would. */
static void host_endpoints(unsigned h, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < nep; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s",
					i ? "," : "", ep[(h + i) % nep]);
}

static void *register_thread(void *arg)
{
	unsigned h;

	(void)arg;
	while ((h = atomic_fetch_add(&next_job, 1)) < opt.hosts) {
		char id[32], eps[1024], rec[256], err[512];
		struct migd_fleet_cfg c = { .prefix = opt.prefix };
		int ret;

		host_id(h, id, sizeof(id));
		host_endpoints(h, eps, sizeof(eps));
		/* The daemon's record, with made-up values. */
		snprintf(rec, sizeof(rec),
			 "{\"id\":\"%s\",\"rpc\":\"\",\"migration\":"
			 "\"10.%u.%u.%u:7001\",\"mem_bytes\":549755813888,"
			 "\"vcpus\":128,\"accel\":\"kvm\",\"version\":"
			 "\"fleet-sim\",\"pid\":%d}", id, h >> 16,
			 (h >> 8) & 255, h & 255, getpid());
		c.etcd.endpoints = eps;
		c.host_id = id;
		c.ttl_s = opt.ttl;
		c.record = rec;
		/* A timeout may be etcd starved for a moment: try again
		 * (a failed start revoked the lease it took). */
		for (unsigned try = 0; try < 30; try++) {
			if (try) {
				atomic_fetch_add(&claim_retries, 1);
				usleep(500000);
			}
			ret = migd_fleet_start(&c, &fleet[h], err,
					       sizeof(err));
			if (ret != -ETIMEDOUT && ret != -EAGAIN &&
			    ret != -EPROTO)
				break;
		}
		if (ret) {
			fprintf(stderr, "fleet-sim: host %s: %s\n", id, err);
			atomic_fetch_add(&setup_err, 1);
		}
	}
	return NULL;
}

/*
 * Claim VM @v for its first host. An error whose outcome is unknown (a
 * timeout, etcd overloaded: "too many requests") is tried again after a
 * pause, and a claim that finds the key ours took effect the first time.
 */
static int claim(unsigned v)
{
	struct migd_fleet_owner o;
	char name[32], err[512];
	unsigned h = v / opt.vms_per_host, owned;
	int ret = 0;

	vm_name(v, name, sizeof(name));
	owner[v] = h;
	gen[v] = 1;
	for (unsigned try = 0; try < 60; try++) {
		if (try)
			usleep(200000);
		ret = migd_fleet_vm_claim(fleet[h], name, &o, err,
					  sizeof(err));
		if (!ret)
			return 0;
		if (ret != -EEXIST) {
			atomic_fetch_add(&claim_retries, 1);
			continue;
		}
		if (sscanf(o.owner, "sim-%u", &owned) != 1 ||
		    owned >= opt.hosts)
			break;
		/* Ours from an earlier try, or left by an earlier run
		 * (--keep): take it as it is. */
		owner[v] = owned;
		gen[v] = o.generation;
		return 0;
	}
	fprintf(stderr, "fleet-sim: claim %s: %s\n", name, err);
	return ret;
}

static void *claim_thread(void *arg)
{
	unsigned v;

	(void)arg;
	while ((v = atomic_fetch_add(&next_job, 1)) < nvms)
		if (claim(v))
			atomic_fetch_add(&setup_err, 1);
	return NULL;
}

static void *stop_thread(void *arg)
{
	unsigned h;

	(void)arg;
	while ((h = atomic_fetch_add(&next_job, 1)) < opt.hosts)
		migd_fleet_stop(fleet[h], true);
	return NULL;
}

static double run_pool(void *(*fn)(void *), const char *what)
{
	pthread_t th[64];
	unsigned n = opt.setup_threads > 64 ? 64 : opt.setup_threads;
	uint64_t t0 = fs_now_ns();

	atomic_store(&next_job, 0);
	for (unsigned i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, fn, NULL)) {
			fprintf(stderr, "fleet-sim: %s: no thread\n", what);
			exit(1);
		}
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return (double)(fs_now_ns() - t0) / 1e9;
}

struct client {
	pthread_t th;
	unsigned idx, step;
	uint64_t rnd;
};

static uint64_t rnd(struct client *c)
{
	c->rnd ^= c->rnd << 13;
	c->rnd ^= c->rnd >> 7;
	c->rnd ^= c->rnd << 17;
	return c->rnd;
}

/* Resynchronise VM @v from its key after an answer we could not use. */
static void resync(unsigned v, const char *name)
{
	struct migd_fleet_owner o;
	char err[512];
	unsigned h;
	bool found;

	if (!migd_fleet_vm_get(fleet[0], name, &found, &o, err, sizeof(err)) &&
	    found && sscanf(o.owner, "sim-%u", &h) == 1 && h < opt.hosts) {
		owner[v] = h;
		gen[v] = o.generation;
	}
}

static void *client_thread(void *arg)
{
	struct client *c = arg;
	struct step_res *r = &res[c->step];
	unsigned rate = opt.rate[c->step];
	unsigned mine = (nvms - c->idx + opt.clients - 1) / opt.clients;
	uint64_t t0 = fs_now_ns(), end = t0 + opt.duration_s * 1000000000ull;
	/* Each client sends rate/clients moves per second, at fixed times
	 * (catching up when late, never ahead). */
	uint64_t every = rate ? 1000000000ull * opt.clients / rate : 0;
	uint64_t due = t0;

	while (fs_now_ns() < end) {
		unsigned v = c->idx + opt.clients * (unsigned)(rnd(c) % mine);
		unsigned to = (unsigned)(rnd(c) % (opt.hosts - 1));
		struct migd_fleet_owner now;
		char name[32], from[32], err[512];
		uint64_t s, e;
		int ret;

		if (every) {
			uint64_t t = fs_now_ns();

			if (t < due)
				usleep((useconds_t)((due - t) / 1000));
			due += every;
		}
		if (to >= owner[v])
			to++; /* anyone but the owner */
		vm_name(v, name, sizeof(name));
		host_id(owner[v], from, sizeof(from));
		s = fs_now_ns();
		atomic_store(&sh.sent_ns[v * 4u + ((gen[v] + 1) & 3u)], s);
		ret = migd_fleet_vm_move(fleet[to], name, from, gen[v], &now,
					 err, sizeof(err));
		e = fs_now_ns();
		fs_hist_add(&r->commit, e - s);
		if (!ret) {
			owner[v] = to;
			gen[v]++;
			atomic_fetch_add(&r->ok, 1);
		} else {
			atomic_fetch_add(ret == -ESTALE ? &r->stale : &r->other,
					 1);
			resync(v, name);
		}
	}
	return NULL;
}

static void run_step(unsigned s, unsigned nw)
{
	struct client *cl = calloc(opt.clients, sizeof(*cl));
	struct step_res *r = &res[s];
	uint64_t t0, want, deadline;

	if (!cl)
		exit(1);
	atomic_store(&sh.step, s);
	t0 = fs_now_ns();
	for (unsigned i = 0; i < opt.clients; i++) {
		cl[i].idx = i;
		cl[i].step = s;
		cl[i].rnd = 0x9e3779b97f4a7c15ull * (i + 1) + s;
		if (pthread_create(&cl[i].th, NULL, client_thread, &cl[i]))
			exit(1);
	}
	for (unsigned i = 0; i < opt.clients; i++)
		pthread_join(cl[i].th, NULL);
	r->secs = (double)(fs_now_ns() - t0) / 1e9;
	/* Let the watchers catch up (10 s at most) before the next step
	 * counts as theirs. */
	want = atomic_load(&r->ok) * nw;
	deadline = fs_now_ns() + 10000000000ull;
	while (atomic_load(&sh.watch_events[s]) < want &&
	       fs_now_ns() < deadline)
		usleep(50000);
	r->db = fs_db_size(opt.endpoints);
	free(cl);
}

static int parse_rates(const char *s)
{
	char *list = strdup(s), *save = NULL, *t;

	opt.nsteps = 0;
	for (t = list ? strtok_r(list, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save)) {
		if (opt.nsteps == STEPS_MAX)
			break;
		opt.rate[opt.nsteps++] =
			strcmp(t, "max") ? (unsigned)strtoul(t, NULL, 10) : 0;
	}
	free(list);
	return opt.nsteps ? 0 : -1;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "etcd", required_argument, NULL, 'e' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "vms-per-host", required_argument, NULL, 'm' },
		{ "ttl", required_argument, NULL, 't' },
		{ "rates", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "clients", required_argument, NULL, 'c' },
		{ "watchers", required_argument, NULL, 'w' },
		{ "setup-threads", required_argument, NULL, 's' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	parse_rates("100,500,1000,0");
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'e': opt.endpoints = optarg; break;
		case 'H': opt.hosts = (unsigned)atoi(optarg); break;
		case 'm': opt.vms_per_host = (unsigned)atoi(optarg); break;
		case 't': opt.ttl = (unsigned)atoi(optarg); break;
		case 'd': opt.duration_s = (unsigned)atoi(optarg); break;
		case 'c': opt.clients = (unsigned)atoi(optarg); break;
		case 'w': opt.watchers = (unsigned)atoi(optarg); break;
		case 's': opt.setup_threads = (unsigned)atoi(optarg); break;
		case 'p': opt.prefix = optarg; break;
		case 'k': opt.keep = true; break;
		case 'r':
			if (parse_rates(optarg)) {
				usage(stderr);
				exit(2);
			}
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (!opt.endpoints || opt.hosts < 2 || !opt.vms_per_host ||
	    !opt.clients || !opt.duration_s || !opt.setup_threads ||
	    opt.clients > opt.hosts * opt.vms_per_host) {
		usage(stderr);
		exit(2);
	}
}

static void split_endpoints(void)
{
	char *list = strdup(opt.endpoints), *save = NULL, *t;

	for (t = list ? strtok_r(list, ",", &save) : NULL;
	     t && nep < MIGD_ETCD_ENDPOINTS_MAX;
	     t = strtok_r(NULL, ",", &save))
		ep[nep++] = t; /* list kept for the program's life */
}

static void fmt_rate(unsigned r, char *buf, size_t n)
{
	if (r)
		snprintf(buf, n, "%u", r);
	else
		snprintf(buf, n, "max");
}

int main(int argc, char **argv)
{
	struct fs_watcher *w[64] = { 0 };
	unsigned nw;
	struct rlimit rl;
	uint64_t t;
	double secs;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	split_endpoints();
	/* One connection per host object, and the watchers. */
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!getenv("HV_LOG_LEVEL"))
		hv_log_set_level(HV_LOG_ERR);
	nvms = opt.hosts * opt.vms_per_host;
	fleet = calloc(opt.hosts, sizeof(*fleet));
	owner = calloc(nvms, sizeof(*owner));
	gen = calloc(nvms, sizeof(*gen));
	sh.prefix = opt.prefix;
	sh.nvms = nvms;
	sh.sent_ns = calloc((size_t)nvms * 4, sizeof(*sh.sent_ns));
	sh.watch_hist = calloc(STEPS_MAX, sizeof(*sh.watch_hist));
	sh.watch_events = calloc(STEPS_MAX, sizeof(*sh.watch_events));
	if (!fleet || !owner || !gen || !sh.sent_ns || !sh.watch_hist ||
	    !sh.watch_events)
		return 1;

	secs = run_pool(register_thread, "register");
	printf("registered %u hosts (lease TTL %u s) in %.1f s (%" PRIu64
	       " tried again)\n", opt.hosts, opt.ttl, secs,
	       atomic_load(&claim_retries));
	atomic_store(&claim_retries, 0);
	if (atomic_load(&setup_err))
		return 1;
	secs = run_pool(claim_thread, "claim");
	printf("claimed %u VMs in %.1f s (%.0f claims/s, %" PRIu64
	       " tried again)\n", nvms, secs, nvms / secs,
	       atomic_load(&claim_retries));
	if (atomic_load(&setup_err))
		goto out;

	nw = opt.watchers > 64 ? 64 : opt.watchers;
	for (unsigned i = 0; i < nw; i++)
		if (!(w[i] = fs_watch_start(ep[i % nep], &sh)))
			goto out;
	for (t = fs_now_ns() + 10000000000ull; fs_now_ns() < t;) {
		unsigned ready = 0;

		for (unsigned i = 0; i < nw; i++)
			ready += fs_watch_ready(w[i]);
		if (ready == nw)
			break;
		usleep(20000);
	}
	printf("%u watchers on %svms/, %u clients, %u s per step\n", nw,
	       opt.prefix, opt.clients, opt.duration_s);

	for (unsigned s = 0; s < opt.nsteps; s++) {
		run_step(s, nw);
		fflush(stdout);
	}

	printf("\n%-6s %8s %6s %9s %9s %10s %9s %9s %8s\n", "asked", "txn/s",
	       "fail", "commit50", "commit99", "watch_ev/s", "watch50",
	       "watch99", "db_MiB");
	for (unsigned s = 0; s < opt.nsteps; s++) {
		struct step_res *r = &res[s];
		char rate[16];

		fmt_rate(opt.rate[s], rate, sizeof(rate));
		printf("%-6s %8.0f %6" PRIu64 " %9.1f %9.1f %10.0f %9.1f "
		       "%9.1f %8.1f\n", rate, atomic_load(&r->ok) / r->secs,
		       atomic_load(&r->stale) + atomic_load(&r->other),
		       fs_hist_ms(&r->commit, 0.5),
		       fs_hist_ms(&r->commit, 0.99),
		       atomic_load(&sh.watch_events[s]) / r->secs,
		       fs_hist_ms(&sh.watch_hist[s], 0.5),
		       fs_hist_ms(&sh.watch_hist[s], 0.99),
		       r->db < 0 ? -1.0 : r->db / 1048576.0);
	}
	{
		unsigned relost = 0;

		for (unsigned h = 0; h < opt.hosts; h++)
			relost += migd_fleet_epoch(fleet[h]) > 1;
		printf("hosts that lost their lease and registered again: "
		       "%u of %u\n", relost, opt.hosts);
	}
out:
	atomic_store(&sh.stop, true);
	for (unsigned i = 0; i < 64; i++)
		fs_watch_stop(w[i]);
	/* The hosts go (their leases revoked unless --keep); the VM keys
	 * stay, as a daemon's do. */
	if (opt.keep)
		for (unsigned h = 0; h < opt.hosts; h++)
			migd_fleet_stop(fleet[h], false);
	else
		run_pool(stop_thread, "stop");
	return atomic_load(&setup_err) ? 1 : 0;
}
