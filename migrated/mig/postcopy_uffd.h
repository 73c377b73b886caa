/* SPDX-License-Identifier: MIT */
/*
 * mig_pc_uffd: the destination's postcopy page installer over
 * userfaultfd (MISSING mode).
 *
 * At the switch the destination holds every page the source sent and
 * did not dirty again; the others (the unsent set, postcopy_map.h) are
 * missing. create():
 *   1. drops the destination's copy of every missing page (it may hold
 *      an older one, sent before the page was dirtied again): private
 *      anonymous memory by MADV_DONTNEED, a shared memfd (shmem) by
 *      MADV_REMOVE, which punches the page out of the file;
 *   2. private memory: MADV_NOHUGEPAGE, because UFFDIO_COPY installs
 *      4 KiB pages and a huge page over a missing page would hide it
 *      (khugepaged must not collapse the range either);
 *   3. registers the whole range with userfaultfd (MISSING): a page
 *      present is never reported, a missing one faults into our fault
 *      thread, from vCPU threads (soft MMU, or KVM's get_user_pages) or
 *      any other thread alike;
 *   4. starts the fault thread: it reads faults and, for a page not
 *      installed and not already asked for, calls cfg->request (ask the
 *      source on the priority channel). A fault on a page installed in
 *      the meantime is woken (UFFDIO_WAKE).
 * Backings: private anonymous ("anon", the daemon's default) and memfd
 * shmem ("memfd", "memfd-thp": shmem THP is off on our hosts, so 4 KiB)
 * work, userfaultfd on shmem needing kernel >= 4.11. hugetlb is refused
 * (-EOPNOTSUPP): its pages are installed 2 MiB at a time, so a missing
 * 4 KiB page would need its whole huge page fetched; not done yet.
 *
 * Exactly once: an "installed" bitmap (set at create for the pages
 * present) is claimed by an atomic fetch-or before UFFDIO_COPY /
 * UFFDIO_ZEROPAGE; the second installer of a page (a pushed page that
 * was also requested) drops its copy. UFFDIO_COPY wakes the threads
 * waiting on that page. EEXIST from the kernel (a page we did not
 * install is present: something populated guest memory behind the
 * installer) is counted and returned as an error: the page's content is
 * not known to be the source's.
 *
 * Never destroy the installer while pages are missing and the guest may
 * run: closing the userfaultfd unregisters the range, and a missing
 * private page would then read as zeros. Stop the vCPUs first.
 *
 * Threads: create/destroy from the owner; install() from any thread
 * (several at once); cfg->request is called on the fault thread and
 * must not block for long (queue the gfn, send from elsewhere);
 * get_stats from any thread.
 */
#ifndef MIG_POSTCOPY_UFFD_H
#define MIG_POSTCOPY_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mig_pc_uffd;

struct mig_pc_uffd_cfg {
	uint8_t *base;	 /* guest RAM, page aligned, 4 KiB pages */
	uint64_t npages; /* pages from @base; page i is at base + i * 4096 */
	bool shared;	 /* a MAP_SHARED memfd (shmem), else private anon */
	bool hugetlb;	 /* hugetlb backing: refused (-EOPNOTSUPP) */
	/* Fault thread: page @idx is needed and was not asked for yet. */
	void (*request)(void *arg, uint64_t idx);
	void *arg;
};

struct mig_pc_uffd_stats {
	uint64_t missing;	/* pages missing at create */
	uint64_t installed;	/* of them, installed since */
	uint64_t zero;		/* of those, as zero pages */
	uint64_t duplicates;	/* installs dropped: already installed */
	uint64_t eexist;	/* kernel found a page we did not install */
	uint64_t faults;	/* fault messages read */
	uint64_t requests;	/* cfg->request calls */
	uint64_t faults_served; /* requested pages installed since */
	/* From a page's first fault to its install, over faults_served. */
	uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns;
	uint64_t last_install_ns; /* CLOCK_MONOTONIC of the last install */
};

/*
 * Take over @cfg->base: drop, register and watch the pages whose bit is
 * set in @missing (one bit per page). 0, or -EINVAL (cfg), -EOPNOTSUPP
 * (hugetlb, or a kernel without userfaultfd on this memory), -ENOMEM, or
 * the errno of the userfaultfd calls. On failure nothing is registered,
 * but the missing pages may have been dropped already: the caller
 * fails the migration then.
 */
int mig_pc_uffd_create(const struct mig_pc_uffd_cfg *cfg,
		       const uint64_t *missing, struct mig_pc_uffd **out);

/*
 * Install page @idx with @page's 4096 bytes (NULL: a zero page) and
 * wake whoever waits on it. 1: installed; 0: already installed
 * (dropped); -ERANGE: not a page of the range; -EEXIST (see above) or
 * another errno from the kernel.
 */
int mig_pc_uffd_install(struct mig_pc_uffd *u, uint64_t idx,
			const void *page);

/* True when page @idx is in place (present at create or installed). */
bool mig_pc_uffd_installed(struct mig_pc_uffd *u, uint64_t idx);
/* Pages still missing. */
uint64_t mig_pc_uffd_remaining(struct mig_pc_uffd *u);
/*
 * Up to @max pages (RAM page indexes) a fault waits on and that are not
 * installed yet, in no order: what to ask for again after the requests
 * were lost with a broken connection. Faults past the wait table's room
 * (1024 pages at once) are not listed; the source's push brings them.
 * Returns how many were written. Any thread.
 */
size_t mig_pc_uffd_waiting(struct mig_pc_uffd *u, uint64_t *idx, size_t max);

void mig_pc_uffd_get_stats(struct mig_pc_uffd *u,
			   struct mig_pc_uffd_stats *st);

/* Stop the fault thread and unregister (see the warning above). NULL is
 * a no-op. */
void mig_pc_uffd_destroy(struct mig_pc_uffd *u);

#endif
