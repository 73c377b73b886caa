// SPDX-License-Identifier: MIT
/*
 * What fresh memory costs on first touch, against memory freed a moment
 * ago: fresh_touch MB [reps] [threads]
 * For each repetition: map MB of private anonymous memory at a 2 MiB
 * aligned address, advise huge pages (what guest RAM of backing "anon"
 * is, hvcore/guest_mem.c), populate it with MADV_POPULATE_WRITE split
 * between @threads threads, then write one byte into every 4 KiB page
 * again (the floor), and unmap it. The first repetition gets whatever the
 * kernel has free; the next ones mostly get the pages the one before just
 * freed. On a guest whose kernel reports free memory to its hypervisor
 * (virtio-balloon free page reporting), the difference is the
 * hypervisor's cost of memory it has to back again (docs/benchmarks.md,
 * "Fresh memory on the destination"). Linux 5.14+ (MADV_POPULATE_WRITE).
 *
 *   cc -O2 -pthread -o /tmp/fresh_touch tools/bench/fresh_touch.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HUGE_2M (2ul << 20)
#define THREADS_MAX 16u

struct part {
	uint8_t *p;
	size_t len;
	int err;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *populate(void *arg)
{
	struct part *pt = arg;

	pt->err = madvise(pt->p, pt->len, MADV_POPULATE_WRITE) ? -1 : 0;
	return NULL;
}

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) << 20 : 0;
	unsigned reps = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 3;
	unsigned nt = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 1;

	if (!bytes || bytes % HUGE_2M || !reps || !nt || nt > THREADS_MAX ||
	    bytes / HUGE_2M % nt) {
		fprintf(stderr, "usage: fresh_touch MB (a multiple of 2 per "
				"thread) [reps] [threads <= %u]\n",
			THREADS_MAX);
		return 2;
	}
	for (unsigned r = 0; r < reps; r++) {
		struct part parts[THREADS_MAX];
		pthread_t t[THREADS_MAX];
		uint8_t *m, *a;
		double t0, t1, t2;

		m = mmap(NULL, bytes + HUGE_2M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		a = (uint8_t *)(((uintptr_t)m + HUGE_2M - 1) & ~(HUGE_2M - 1));
		madvise(a, bytes, MADV_HUGEPAGE);
		t0 = now_ms();
		for (unsigned i = 0; i < nt; i++) {
			parts[i] = (struct part){ a + i * (bytes / nt),
						  bytes / nt, 0 };
			pthread_create(&t[i], NULL, populate, &parts[i]);
		}
		for (unsigned i = 0; i < nt; i++) {
			pthread_join(t[i], NULL);
			if (parts[i].err) {
				perror("madvise(MADV_POPULATE_WRITE)");
				return 1;
			}
		}
		t1 = now_ms();
		for (size_t off = 0; off < bytes; off += 4096)
			((volatile uint8_t *)a)[off] = 1;
		t2 = now_ms();
		printf("rep %u: %zu MiB, %u thread(s): first touch %.1f ms "
		       "(%.2f GiB/s), again %.1f ms\n",
		       r, bytes >> 20, nt, t1 - t0,
		       (double)bytes / (1 << 30) / ((t1 - t0) / 1e3), t2 - t1);
		munmap(m, bytes + HUGE_2M);
	}
	return 0;
}
