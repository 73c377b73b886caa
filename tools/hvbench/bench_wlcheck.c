// SPDX-License-Identifier: MIT
/*
 * hvbench wlcheck FILE[@GPA]...: the page-stamp oracle of `migratectl vm
 * check` (hvcore/wl_verify.c) over a dump of guest RAM taken outside our
 * VMM, e.g. by QEMU's `pmemsave` after a migration of the same guest
 * image (tools/bench/vs-qemu.sh). Every FILE holds guest RAM from
 * guest-physical address GPA on (default 0), so a guest with RAM above the
 * 4 GiB hole is checked from two dumps: `low.bin high.bin@4G`. The files
 * are mapped read-only into one reserved range at their addresses; what no
 * file covers reads as zero, which the oracle treats as never written.
 *
 * Exit 0 when every page is intact, 1 when the check found bad pages or a
 * lost write, 2 on a usage error or a dump it cannot check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/wl_verify.h"
#include "hvcore/workload.h"
#include "tools/hvbench/hvbench.h"

#define MAX_DUMPS 8

struct dump {
	const char *path;
	uint64_t gpa;
	uint64_t bytes;
	int fd;
};

/* "4294967296", "0x100000000", "4G", "4096M": bytes. */
static int parse_addr(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end)
		return -EINVAL;
	if (shift && end[1])
		return -EINVAL;
	if (shift && v > UINT64_MAX >> shift)
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_dump(char *arg, struct dump *d)
{
	char *at = strrchr(arg, '@');
	struct stat sb;

	d->path = arg;
	d->gpa = 0;
	d->fd = -1;
	if (at) {
		*at = '\0';
		if (parse_addr(at + 1, &d->gpa) ||
		    d->gpa % HV_PAGE_SIZE) {
			fprintf(stderr, "wlcheck: bad address '%s' (a page "
					"multiple, e.g. 4G)\n", at + 1);
			return -EINVAL;
		}
	}
	d->fd = open(d->path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &sb)) {
		fprintf(stderr, "wlcheck: %s: %s\n", d->path, strerror(errno));
		return -errno;
	}
	d->bytes = (uint64_t)sb.st_size;
	if (!d->bytes || d->bytes % HV_PAGE_SIZE) {
		fprintf(stderr, "wlcheck: %s: %llu bytes, not whole pages\n",
			d->path, (unsigned long long)d->bytes);
		return -EINVAL;
	}
	return 0;
}

static void print_result(const struct hv_wl_verify *r, uint64_t ram,
			 double ms)
{
	printf("wlcheck: %llu MiB of RAM, %llu pages checked, %llu written, "
	       "%llu bad (stamp %llu, content %llu, stale %llu), %u vCPU(s) "
	       "lost their last write; %.1f ms\n",
	       (unsigned long long)(ram >> 20), (unsigned long long)r->pages,
	       (unsigned long long)r->written, (unsigned long long)r->bad,
	       (unsigned long long)r->bad_stamp,
	       (unsigned long long)r->bad_content,
	       (unsigned long long)r->stale, r->lost_vcpus, ms);
	if (r->nr_bad_gfns) {
		printf("first bad gfns:");
		for (uint32_t i = 0; i < r->nr_bad_gfns; i++)
			printf(" 0x%llx", (unsigned long long)r->bad_gfns[i]);
		printf("\n");
	}
}

static int bench_wlcheck(int argc, char **argv)
{
	struct dump d[MAX_DUMPS];
	struct hv_wl_verify r;
	uint64_t end = 0, t0;
	int n = argc - 1, ret = 2;
	uint8_t *ram = MAP_FAILED;

	if (n < 1 || n > MAX_DUMPS || !strcmp(argv[1], "--help")) {
		fprintf(n == 1 ? stdout : stderr,
			"usage: hvbench wlcheck FILE[@GPA]...  (at most %d "
			"dumps of guest RAM; GPA default 0)\n", MAX_DUMPS);
		return n == 1 ? 0 : 2;
	}
	for (int i = 0; i < n; i++)
		d[i].fd = -1;
	for (int i = 0; i < n; i++) {
		if (parse_dump(argv[i + 1], &d[i]))
			goto out;
		if (d[i].gpa + d[i].bytes < d[i].gpa) {
			fprintf(stderr, "wlcheck: %s: beyond 2^64\n", d[i].path);
			goto out;
		}
		for (int k = 0; k < i; k++)
			if (d[i].gpa < d[k].gpa + d[k].bytes &&
			    d[k].gpa < d[i].gpa + d[i].bytes) {
				fprintf(stderr, "wlcheck: %s overlaps %s\n",
					d[i].path, d[k].path);
				goto out;
			}
		if (d[i].gpa + d[i].bytes > end)
			end = d[i].gpa + d[i].bytes;
	}
	/* Reserve the whole range (holes read as zero), then lay the dumps
	 * over it at their addresses. */
	ram = mmap(NULL, end, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		   MAP_NORESERVE, -1, 0);
	if (ram == MAP_FAILED) {
		fprintf(stderr, "wlcheck: reserving %llu bytes: %s\n",
			(unsigned long long)end, strerror(errno));
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (mmap(ram + d[i].gpa, d[i].bytes, PROT_READ,
			 MAP_PRIVATE | MAP_FIXED, d[i].fd, 0) == MAP_FAILED) {
			fprintf(stderr, "wlcheck: mapping %s: %s\n", d[i].path,
				strerror(errno));
			goto out;
		}
		madvise(ram + d[i].gpa, d[i].bytes, MADV_SEQUENTIAL);
	}
	t0 = hvbench_now_ns();
	if (hv_wl_verify(ram, end, &r)) {
		fprintf(stderr, "wlcheck: no valid workload params page at "
				"0x%llx (version %u expected), or a region "
				"beyond the dump's %llu bytes\n",
			(unsigned long long)HV_WL_PARAMS_GPA, HV_WL_VERSION,
			(unsigned long long)end);
		goto out;
	}
	print_result(&r, end, (double)(hvbench_now_ns() - t0) / 1e6);
	ret = hv_wl_verify_clean(&r) ? 0 : 1;
out:
	if (ram != MAP_FAILED)
		munmap(ram, end);
	for (int i = 0; i < n; i++)
		if (d[i].fd >= 0)
			close(d[i].fd);
	return ret;
}

HVBENCH_CMD("wlcheck", "page-stamp check of guest RAM dumps (FILE[@GPA])",
	    bench_wlcheck);
