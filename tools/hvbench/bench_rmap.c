// SPDX-License-Identifier: MIT
/*
 * hvbench rmap: the rmap descriptor width (KVM's PTE_LIST_EXT) under
 * shadow paging, on the soft MMU's shadow mode (hvcore/soft/shadow.h).
 *
 * One run: a guest whose parent address space maps --pages data pages
 * forks --children children (hvcore/soft/shadow_fork.h); each child, right
 * after its fork, reads every page (one shadow PTE and one rmap entry per
 * page: a shared page ends with one rmap entry per child), then the
 * children exit in fork order (one emulated page-table write per entry:
 * the rmap removal path). Timed, in thread CPU time (the machine is
 * shared: wall time mostly measured the other processes): the forks with
 * their touches, and the teardown. Variants: 3 and 15 without a count
 * (the seed's patch), widths 1, 3, 14, 15, 31 with the count after the
 * array, 14 and 15 with it before; interleaved, in a fresh (seeded)
 * random order every repetition; medians. Also the rmap-count histogram
 * in the format of KVM's mmu_rmaps_stat, for the idle guest (the parent
 * alone) and with every child alive.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/memslots.h"
#include "hvcore/soft/shadow.h"
#include "hvcore/soft/shadow_fork.h"
#include "tools/hvbench/hvbench.h"

#define MAX_REPS 64

struct variant {
	unsigned width;
	enum hv_soft_rmap_layout layout;
};

/* The table's rows; the questions below index them. */
enum {
	V1_LAST, V3_NONE, V3_LAST, V14_LAST, V14_FIRST, V15_NONE, V15_LAST,
	V15_FIRST, V31_LAST,
};

static const struct variant variants[] = {
	[V1_LAST] = { 1, HV_SOFT_RMAP_COUNT_LAST },
	[V3_NONE] = { 3, HV_SOFT_RMAP_NO_COUNT },
	[V3_LAST] = { 3, HV_SOFT_RMAP_COUNT_LAST },
	[V14_LAST] = { 14, HV_SOFT_RMAP_COUNT_LAST },
	[V14_FIRST] = { 14, HV_SOFT_RMAP_COUNT_FIRST },
	[V15_NONE] = { 15, HV_SOFT_RMAP_NO_COUNT },
	[V15_LAST] = { 15, HV_SOFT_RMAP_COUNT_LAST },
	[V15_FIRST] = { 15, HV_SOFT_RMAP_COUNT_FIRST },
	[V31_LAST] = { 31, HV_SOFT_RMAP_COUNT_LAST },
};
#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct rmap_opts {
	unsigned children;
	uint64_t pages;
	unsigned reps;
	unsigned cow_every;
};

struct run_result {
	double fork_ms, teardown_ms;
	uint64_t peak_desc_bytes;
	size_t desc_size;
	uint64_t hist_idle[HV_SOFT_SHADOW_HIST_BUCKETS];
	uint64_t hist_forked[HV_SOFT_SHADOW_HIST_BUCKETS];
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int run_once(const struct rmap_opts *o, const struct variant *v,
		    struct run_result *res)
{
	uint64_t nr_pts = HV_DIV_ROUND_UP(o->pages, 512);
	uint64_t cow = o->cow_every ? o->pages / o->cow_every + 1 : 0;
	uint64_t npages = 64 + o->pages + nr_pts + 3 +
			  o->children * (3 + nr_pts + cow);
	struct hv_soft_fork_cfg fcfg = { .data_pages = o->pages,
					 .max_children = o->children,
					 .cow_every = o->cow_every };
	struct hv_soft_shadow_cfg scfg = { .rmap_width = v->width,
					   .rmap_layout = v->layout,
					   .max_gfn = npages };
	struct hv_memslot_desc d = { .id = 1, .npages = npages };
	struct hv_soft_shadow_stats st;
	struct hv_soft_shadow *sh = NULL;
	struct hv_memslots *slots = NULL;
	struct hv_soft_fork *f = NULL;
	uint64_t t0, t1, t2;
	uint8_t *mem;
	int ret;

	mem = aligned_alloc(HV_PAGE_SIZE, npages * HV_PAGE_SIZE);
	if (!mem)
		return -ENOMEM;
	memset(mem, 0, npages * HV_PAGE_SIZE);
	d.hva = (uintptr_t)mem;
	ret = hv_memslots_create(&slots);
	if (!ret)
		ret = hv_memslots_add(slots, &d);
	if (!ret)
		ret = hv_soft_shadow_create(&scfg, slots, &sh);
	if (!ret)
		ret = hv_soft_fork_create(sh, 16, npages, &fcfg, &f);
	if (!ret)
		ret = hv_soft_fork_parent_init(f);
	if (ret)
		goto out;
	hv_soft_shadow_rmap_hist(sh, res->hist_idle);

	t0 = cpu_ns();
	for (unsigned k = 0; k < o->children && !ret; k++) {
		unsigned id;

		ret = hv_soft_fork_spawn(f, &id);
		if (!ret)
			ret = hv_soft_fork_touch(f, id);
	}
	t1 = cpu_ns();
	if (ret)
		goto out;
	hv_soft_shadow_rmap_hist(sh, res->hist_forked);
	t2 = cpu_ns();
	for (unsigned id = 1; id <= o->children && !ret; id++)
		ret = hv_soft_fork_exit(f, id);
	res->teardown_ms = (cpu_ns() - t2) / 1e6;
	res->fork_ms = (t1 - t0) / 1e6;
	hv_soft_shadow_get_stats(sh, &st);
	res->desc_size = st.rmap_desc_size;
	res->peak_desc_bytes = st.rmap_peak_descs * st.rmap_desc_size;
out:
	hv_soft_fork_destroy(f);
	hv_soft_shadow_destroy(sh);
	hv_memslots_destroy(slots);
	free(mem);
	return ret;
}

static void print_hist(const char *title, const uint64_t *h)
{
	static const char *const names[HV_SOFT_SHADOW_HIST_BUCKETS] = {
		"0",	 "1",	  "2-3",     "4-7",	"8-15",	   "16-31",
		"32-63", "64-127", "128-255", "256-511", "512-1023", "1024+",
	};

	printf("\n%s\n\n```\n%-11s", title, "Rmap_Count:");
	for (unsigned b = 0; b < HV_SOFT_SHADOW_HIST_BUCKETS; b++)
		printf(" %8s", names[b]);
	printf("\n%-11s", "Level=4K:");
	for (unsigned b = 0; b < HV_SOFT_SHADOW_HIST_BUCKETS; b++)
		printf(" %8llu", (unsigned long long)h[b]);
	/* Shadow leaves are 4 KiB only: the huge-page rows stay empty. */
	printf("\n%-11s", "Level=2M:");
	for (unsigned b = 0; b < HV_SOFT_SHADOW_HIST_BUCKETS; b++)
		printf(" %8d", 0);
	printf("\n%-11s", "Level=1G:");
	for (unsigned b = 0; b < HV_SOFT_SHADOW_HIST_BUCKETS; b++)
		printf(" %8d", 0);
	printf("\n```\n");
}

static const char *layout(const struct variant *v)
{
	static const char *const names[] = {
		[HV_SOFT_RMAP_COUNT_LAST] = "count last",
		[HV_SOFT_RMAP_COUNT_FIRST] = "count first",
		[HV_SOFT_RMAP_NO_COUNT] = "no count",
	};

	return names[v->layout];
}

/* @v is in the comma-separated list @only ("14l", "15f", "3n"). */
static bool selected(const char *only, const struct variant *v)
{
	static const char tag[] = { [HV_SOFT_RMAP_COUNT_LAST] = 'l',
				    [HV_SOFT_RMAP_COUNT_FIRST] = 'f',
				    [HV_SOFT_RMAP_NO_COUNT] = 'n' };
	char want[16];
	size_t n = strlen(only);

	snprintf(want, sizeof(want), "%u%c", v->width, tag[v->layout]);
	for (const char *p = only; p && p < only + n;) {
		size_t len = strcspn(p, ",");

		if (len == strlen(want) && !strncmp(p, want, len))
			return true;
		p += len + 1;
	}
	return false;
}

static const struct {
	const char *what;
	unsigned a, b; /* ratio a / b of median totals */
} questions[] = {
	{ "15 vs 3, no count (the seed's patch)", V15_NONE, V3_NONE },
	{ "15 vs 3, count last", V15_LAST, V3_LAST },
	{ "14 vs 15, count last", V14_LAST, V15_LAST },
	{ "14 vs 15, count first", V14_FIRST, V15_FIRST },
	{ "14 count first vs 15 no count", V14_FIRST, V15_NONE },
	{ "count first vs last, 14", V14_FIRST, V14_LAST },
	{ "count first vs last, 15", V15_FIRST, V15_LAST },
};

static int bench_rmap(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "children", required_argument, NULL, 'c' },
		{ "pages", required_argument, NULL, 'p' },
		{ "reps", required_argument, NULL, 'r' },
		{ "cow-every", required_argument, NULL, 'w' },
		{ "only", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct rmap_opts o = { .children = 500, .pages = 1024, .reps = 5 };
	static double fork_ms[NR_VARIANTS][MAX_REPS];
	static double down_ms[NR_VARIANTS][MAX_REPS];
	static double total_ms[NR_VARIANTS][MAX_REPS];
	static struct run_result res[NR_VARIANTS];
	double med_fork[NR_VARIANTS], med_down[NR_VARIANTS];
	double med_total[NR_VARIANTS];
	const char *only = NULL;
	unsigned seed = 1;
	int c;

	while ((c = getopt_long(argc, argv, "c:p:r:w:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o.children = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			o.pages = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			o.reps = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o.cow_every = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			only = optarg;
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"usage: hvbench rmap [--children N (500)] "
				"[--pages P (1024)] [--reps R (5, max %d)] "
				"[--cow-every K (0: children only read)] "
				"[--only TAGS (e.g. 14l,14f,15n: run those "
				"variants alone, for profiling)]\n",
				MAX_REPS);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!o.children || o.children > 100000 || !o.pages ||
	    o.pages > HV_SOFT_FORK_MAX_DATA_PAGES || !o.reps ||
	    o.reps > MAX_REPS) {
		fprintf(stderr, "rmap: children 1..100000, pages 1..%u, reps "
				"1..%d\n",
			HV_SOFT_FORK_MAX_DATA_PAGES, MAX_REPS);
		return 2;
	}
	printf("rmap: fork of %u children over %llu pages (each child reads "
	       "every page%s), then teardown; shadow MMU, %u reps, "
	       "interleaved, medians\n",
	       o.children, (unsigned long long)o.pages,
	       o.cow_every ? ", copy-on-writes every n-th" : "", o.reps);
	for (unsigned r = 0; r < o.reps; r++) {
		unsigned order[NR_VARIANTS];

		/* A fresh order every repetition (seeded: reproducible), so
		 * no variant always runs first or after the same neighbour
		 * (the heap a run leaves behind is the next one's). */
		for (unsigned k = 0; k < NR_VARIANTS; k++)
			order[k] = k;
		for (unsigned k = NR_VARIANTS - 1; k > 0; k--) {
			unsigned j = (unsigned)(rand_r(&seed) % (k + 1)), x;

			x = order[k];
			order[k] = order[j];
			order[j] = x;
		}
		for (unsigned k = 0; k < NR_VARIANTS; k++) {
			unsigned vi = order[k];
			int ret;

			if (only && !selected(only, &variants[vi]))
				continue;
			ret = run_once(&o, &variants[vi], &res[vi]);

			if (ret) {
				fprintf(stderr, "rmap: width %u %s: %s\n",
					variants[vi].width,
					layout(&variants[vi]), strerror(-ret));
				return 1;
			}
			fork_ms[vi][r] = res[vi].fork_ms;
			down_ms[vi][r] = res[vi].teardown_ms;
			total_ms[vi][r] = res[vi].fork_ms + res[vi].teardown_ms;
		}
	}
	for (unsigned v = 0; v < NR_VARIANTS; v++) {
		med_fork[v] = hvbench_median(fork_ms[v], o.reps);
		med_down[v] = hvbench_median(down_ms[v], o.reps);
		med_total[v] = hvbench_median(total_ms[v], o.reps);
	}
	printf("\n| width | layout | desc bytes | fork+touch (CPU ms) | "
	       "teardown (CPU ms) | total (CPU ms) | vs 3 no count | peak desc KiB "
	       "|\n"
	       "|---|---|---|---|---|---|---|---|\n");
	for (unsigned v = 0; v < NR_VARIANTS; v++)
		if (!only || selected(only, &variants[v]))
			printf("| %u | %s | %zu | %.1f | %.1f | %.1f | "
			       "%+.1f%% | %.0f |\n",
			       variants[v].width, layout(&variants[v]),
			       res[v].desc_size, med_fork[v], med_down[v],
			       med_total[v],
			       100.0 * (med_total[v] / med_total[V3_NONE] - 1),
			       res[v].peak_desc_bytes / 1024.0);
	printf("\n| question | total (ms) | ratio |\n|---|---|---|\n");
	for (unsigned q = 0; q < sizeof(questions) / sizeof(questions[0]);
	     q++) {
		unsigned a = questions[q].a, b = questions[q].b;

		if (only && (!selected(only, &variants[a]) ||
			     !selected(only, &variants[b])))
			continue;

		printf("| %s | %.1f vs %.1f | %.3f |\n", questions[q].what,
		       med_total[a], med_total[b], med_total[a] / med_total[b]);
	}
	print_hist("rmap counts, idle guest (the parent alone):",
		   res[V15_NONE].hist_idle);
	print_hist("rmap counts, every child alive:",
		   res[V15_NONE].hist_forked);
	return 0;
}

HVBENCH_CMD("rmap", "rmap descriptor width under shadow paging (fork test)",
	    bench_rmap);
