// SPDX-License-Identifier: MIT
/*
 * hvguest: the project's stamp workload and its oracle as a Linux user
 * program, for Linux guests (docs/guests.md). It runs hvcore/workload.c
 * on an anonymous mapping laid out like the workload guest's RAM (params
 * page at HV_WL_PARAMS_GPA, status lines at HV_WL_STATUS_GPA, the
 * regions from REGION_OFF), one thread per online CPU, for a duration;
 * then, with check, it verifies every page of the regions with
 * hvcore/wl_verify.c and prints a one-line verdict:
 *
 *   hvguest: start vcpus=2 size_mib=64 pattern=sweep rate=0 duration_s=10
 *   hvguest: check ok pages=16384 written=16384 writes=123456
 *   hvguest: check FAILED bad=3 stamp=1 content=2 stale=0 lost_vcpus=0
 *
 * Parameters come from the kernel command line (/proc/cmdline, keys
 * hv.size=MiB hv.rate=pages/s hv.pattern=sweep|random|hotset
 * hv.content=stamp|text|random hv.duration=s hv.check=0|1) and may be
 * given as arguments in the same key=value form, which win.
 * Exit status: 0 ok, 1 check failed, 2 bad parameters or no memory.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/workload.h"
#include "hvcore/wl_verify.h"

#define REGION_OFF 0x100000ULL

struct opts {
	uint64_t size_mib;
	uint64_t rate;
	uint32_t pattern;
	uint32_t content;
	uint64_t duration_s;
	int check;
};

struct worker {
	pthread_t t;
	uint32_t id;
	uint8_t *mem;
	uint64_t mem_bytes;
	struct hv_wl_params *p;
	struct hv_wl_status *st;
	int ret;
};

static const char *const patterns[] = {"", "sweep", "random", "hotset", "idle"};
static const char *const contents[] = {"", "stamp", "text", "random"};

static uint32_t lookup(const char *const *names, unsigned n, const char *v)
{
	for (unsigned i = 1; i < n; i++)
		if (!strcmp(names[i], v))
			return i;
	return 0;
}

/* One "hv.key=value" word; other words are ignored. */
static int apply(struct opts *o, const char *w)
{
	const char *eq = strchr(w, '=');
	char key[32];
	size_t kl;

	if (strncmp(w, "hv.", 3) || !eq)
		return 0;
	kl = (size_t)(eq - w - 3);
	if (kl >= sizeof(key))
		return -1;
	memcpy(key, w + 3, kl);
	key[kl] = 0;
	eq++;
	if (!strcmp(key, "size"))
		o->size_mib = strtoull(eq, NULL, 0);
	else if (!strcmp(key, "rate"))
		o->rate = strtoull(eq, NULL, 0);
	else if (!strcmp(key, "duration"))
		o->duration_s = strtoull(eq, NULL, 0);
	else if (!strcmp(key, "check"))
		o->check = atoi(eq);
	else if (!strcmp(key, "pattern"))
		o->pattern = lookup(patterns, 4, eq);
	else if (!strcmp(key, "content"))
		o->content = lookup(contents, 4, eq);
	return 0;
}

static void parse_cmdline(struct opts *o)
{
	char buf[4096], *save = NULL, *w;
	FILE *f = fopen("/proc/cmdline", "r");
	size_t n;

	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (w = strtok_r(buf, " \n", &save); w;
	     w = strtok_r(NULL, " \n", &save))
		apply(o, w);
}

static uint64_t now_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint8_t *page_w(void *ctx, uint64_t gpa)
{
	return (uint8_t *)ctx + gpa;
}

static const uint8_t *page_r(void *ctx, uint64_t gpa)
{
	return (const uint8_t *)ctx + gpa;
}

static void wait_until(void *ctx, uint64_t deadline)
{
	uint64_t now = now_ns(ctx);
	struct timespec ts;

	if (deadline <= now)
		return;
	ts.tv_sec = (time_t)((deadline - now) / 1000000000ULL);
	ts.tv_nsec = (long)((deadline - now) % 1000000000ULL);
	nanosleep(&ts, NULL);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	const struct hv_wl_env env = {
		.ctx = w->mem,
		.page_for_write = page_w,
		.page_for_read = page_r,
		.now_tsc = now_ns,
		.wait_until = wait_until,
	};

	w->ret = hv_wl_run(w->p, &w->st[w->id], w->id, &env);
	return NULL;
}

int main(int argc, char **argv)
{
	struct opts o = {32, 0, HV_WL_PATTERN_SWEEP, HV_WL_CONTENT_STAMP,
			 10, 1};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct hv_wl_verify v;
	struct hv_wl_params *p;
	struct worker *w;
	uint64_t pages, share, bytes, writes = 0;
	uint8_t *mem;
	int ret;

	parse_cmdline(&o);
	for (int i = 1; i < argc; i++)
		apply(&o, argv[i]);
	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > (long)HV_WL_MAX_VCPUS)
		ncpu = HV_WL_MAX_VCPUS;
	pages = o.size_mib << 8;
	share = pages / (uint64_t)ncpu;
	if (!o.pattern || !o.content || !share) {
		fprintf(stderr, "hvguest: bad parameters\n");
		return 2;
	}
	bytes = REGION_OFF + pages * 4096;
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	w = calloc((size_t)ncpu, sizeof(*w));
	if (mem == MAP_FAILED || !w) {
		fprintf(stderr, "hvguest: no memory for %llu MiB\n",
			(unsigned long long)o.size_mib);
		return 2;
	}
	p = (struct hv_wl_params *)(mem + HV_WL_PARAMS_GPA);
	p->magic = HV_WL_MAGIC;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = (uint32_t)ncpu;
	p->tsc_khz = 1000000;	  /* the clock is in ns */
	p->ram.ram_bytes = bytes; /* flat: offset == "gpa" */
	for (long i = 0; i < ncpu; i++) {
		struct hv_wl_vcpu_params *vp = &p->vcpu[i];

		vp->pattern = o.pattern;
		vp->content = o.content;
		vp->region_gpa = REGION_OFF + (uint64_t)i * share * 4096;
		vp->region_pages = share;
		vp->rate_pages = o.rate / (uint64_t)ncpu;
		vp->write_pct = 100;
		vp->hot_pct = 10;
		vp->hot_share_pct = 90;
		vp->seed = 42 + (uint64_t)i;
	}
	printf("hvguest: start vcpus=%ld size_mib=%llu pattern=%s rate=%llu "
	       "duration_s=%llu\n",
	       ncpu, (unsigned long long)o.size_mib, patterns[o.pattern],
	       (unsigned long long)o.rate, (unsigned long long)o.duration_s);
	fflush(stdout);
	for (long i = 0; i < ncpu; i++) {
		w[i] = (struct worker){
			.id = (uint32_t)i,
			.mem = mem,
			.mem_bytes = bytes,
			.p = p,
			.st = (struct hv_wl_status *)(mem + HV_WL_STATUS_GPA)};
		if (pthread_create(&w[i].t, NULL, run, &w[i])) {
			fprintf(stderr, "hvguest: cannot start thread %ld\n",
				i);
			return 2;
		}
	}
	sleep((unsigned)o.duration_s);
	for (long i = 0; i < ncpu; i++)
		__atomic_store_n(&p->vcpu[i].stop, 1, __ATOMIC_RELEASE);
	for (long i = 0; i < ncpu; i++) {
		pthread_join(w[i].t, NULL);
		writes += w[i].st[i].seq;
	}
	if (!o.check) {
		printf("hvguest: done writes=%llu\n",
		       (unsigned long long)writes);
		return 0;
	}
	ret = hv_wl_verify(mem, bytes, &v);
	if (ret || !hv_wl_verify_clean(&v)) {
		printf("hvguest: check FAILED err=%d bad=%llu stamp=%llu "
		       "content=%llu stale=%llu lost_vcpus=%u\n",
		       ret, (unsigned long long)v.bad,
		       (unsigned long long)v.bad_stamp,
		       (unsigned long long)v.bad_content,
		       (unsigned long long)v.stale, v.lost_vcpus);
		return 1;
	}
	printf("hvguest: check ok pages=%llu written=%llu writes=%llu\n",
	       (unsigned long long)v.pages, (unsigned long long)v.written,
	       (unsigned long long)writes);
	return 0;
}
