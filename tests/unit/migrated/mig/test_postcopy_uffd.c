// SPDX-License-Identifier: MIT
/*
 * The destination's postcopy installer (migrated/mig/postcopy_uffd.c):
 * real userfaultfd on private anonymous memory and on a memfd. A "source"
 * thread answers the installer's requests with pages whose every byte is
 * derived from the page index, so a page read as zero, as the
 * destination's stale copy or as another page's content is caught.
 */
#include "tests/harness/hv_test.h"
#include "migrated/mig/postcopy_uffd.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define PG 4096u
#define NP 512u
#define STALE 0xa5

struct src {
	struct mig_pc_uffd *u;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t q[NP * 4];
	unsigned qlen;
	bool stop;
	atomic_uint installed_here; /* install() returned 1 */
	atomic_uint dropped_here;   /* install() returned 0 */
	atomic_int err;
};

static uint8_t page_byte(uint64_t idx)
{
	return (uint8_t)(idx * 7 + 1);
}

static void fill(uint8_t *p, uint64_t idx)
{
	memset(p, page_byte(idx), PG);
	memcpy(p, &idx, sizeof(idx));
}

static bool page_ok(const uint8_t *p, uint64_t idx)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v == idx && p[PG - 1] == page_byte(idx);
}

static void on_request(void *arg, uint64_t idx)
{
	struct src *s = arg;

	pthread_mutex_lock(&s->lock);
	if (s->qlen < sizeof(s->q) / sizeof(s->q[0]))
		s->q[s->qlen++] = idx;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void do_install(struct src *s, uint64_t idx)
{
	uint8_t *buf = aligned_alloc(PG, PG);
	int r;

	fill(buf, idx);
	r = mig_pc_uffd_install(s->u, idx, buf);
	if (r == 1)
		atomic_fetch_add(&s->installed_here, 1);
	else if (r == 0)
		atomic_fetch_add(&s->dropped_here, 1);
	else
		atomic_store(&s->err, r);
	free(buf);
}

/* Answers requests, as the source's priority channel would. */
static void *src_thread(void *arg)
{
	struct src *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		if (!s->qlen) {
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		uint64_t idx = s->q[--s->qlen];

		pthread_mutex_unlock(&s->lock);
		do_install(s, idx);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct reader {
	uint8_t *mem;
	const uint64_t *missing;
	unsigned step;
	atomic_uint bad;
};

/* A vCPU: reads every page, in its own order. */
static void *reader_thread(void *arg)
{
	struct reader *r = arg;

	for (uint64_t k = 0; k < NP; k++) {
		uint64_t idx = (k * r->step) % NP;
		bool miss = (r->missing[idx >> 6] >> (idx & 63)) & 1;
		const uint8_t *p = r->mem + idx * PG;

		if (miss ? !page_ok(p, idx) : p[100] != STALE)
			atomic_fetch_add(&r->bad, 1);
	}
	return NULL;
}

static uint8_t *map_mem(bool shared, int *fd_out)
{
	uint8_t *p;
	int fd = -1;

	if (shared) {
		fd = memfd_create("pc-test", MFD_CLOEXEC);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(ftruncate(fd, (off_t)NP * PG) == 0);
		p = mmap(NULL, (size_t)NP * PG, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
	} else {
		p = mmap(NULL, (size_t)NP * PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	CU_ASSERT_FATAL(p != MAP_FAILED);
	/* What the destination received in precopy, including stale copies
	 * of pages the source dirtied again. */
	memset(p, STALE, (size_t)NP * PG);
	*fd_out = fd;
	return p;
}

/*
 * Faulting readers get the source's page, never the destination's stale
 * copy or zeros; pages present at the switch are left alone; with a
 * background push racing the requests, each page is installed once.
 */
static void run_faults_and_push(bool shared)
{
	struct src s = { 0 };
	struct mig_pc_uffd_cfg cfg = { 0 };
	struct mig_pc_uffd_stats st;
	uint64_t missing[NP / 64] = { 0 };
	struct reader rd[2] = { { 0 }, { 0 } };
	pthread_t st_thr, rt[2];
	unsigned nmiss = 0;
	uint8_t *mem;
	int fd, ret;

	for (uint64_t i = 0; i < NP; i++)
		if (i % 3) {
			missing[i / 64] |= 1ull << (i % 64);
			nmiss++;
		}
	mem = map_mem(shared, &fd);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	cfg.base = mem;
	cfg.npages = NP;
	cfg.shared = shared;
	cfg.request = on_request;
	cfg.arg = &s;
	ret = mig_pc_uffd_create(&cfg, missing, &s.u);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(mig_pc_uffd_remaining(s.u), nmiss);
	CU_ASSERT(mig_pc_uffd_installed(s.u, 0));
	CU_ASSERT(!mig_pc_uffd_installed(s.u, 1));
	pthread_create(&st_thr, NULL, src_thread, &s);
	for (unsigned i = 0; i < 2; i++) {
		rd[i].mem = mem;
		rd[i].missing = missing;
		rd[i].step = i ? 7 : 1;
		pthread_create(&rt[i], NULL, reader_thread, &rd[i]);
	}
	/* The background push, from the far end, racing the faults. */
	for (uint64_t i = NP; i-- > 0;)
		if ((missing[i / 64] >> (i % 64)) & 1)
			do_install(&s, i);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(rt[i], NULL);
	pthread_mutex_lock(&s.lock);
	s.stop = true;
	pthread_cond_signal(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(st_thr, NULL);
	/* Whatever is still queued: a late answer is dropped. */
	for (unsigned i = 0; i < s.qlen; i++)
		do_install(&s, s.q[i]);

	CU_ASSERT_EQUAL(atomic_load(&s.err), 0);
	CU_ASSERT_EQUAL(rd[0].bad + rd[1].bad, 0);
	CU_ASSERT_EQUAL(atomic_load(&s.installed_here), nmiss);
	CU_ASSERT_EQUAL(mig_pc_uffd_remaining(s.u), 0);
	mig_pc_uffd_get_stats(s.u, &st);
	CU_ASSERT_EQUAL(st.missing, nmiss);
	CU_ASSERT_EQUAL(st.installed, nmiss);
	CU_ASSERT_EQUAL(st.duplicates, atomic_load(&s.dropped_here));
	CU_ASSERT_EQUAL(st.eexist, 0);
	for (uint64_t i = 0; i < NP; i++) {
		bool miss = (missing[i / 64] >> (i % 64)) & 1;

		if (miss ? !page_ok(mem + i * PG, i)
			 : mem[i * PG + 5] != STALE) {
			CU_FAIL("page content after postcopy");
			break;
		}
	}
	mig_pc_uffd_destroy(s.u);
	munmap(mem, (size_t)NP * PG);
	if (fd >= 0)
		close(fd);
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
}

static void test_faulting_reader_gets_source_page_once_anon(void)
{
	run_faults_and_push(false);
}

static void test_faulting_reader_gets_source_page_once_shmem(void)
{
	run_faults_and_push(true);
}

/* Only requests, no push: every fault is served by its request, timed. */
static void test_fault_waits_only_for_its_page_and_is_timed(void)
{
	struct src s = { 0 };
	struct mig_pc_uffd_cfg cfg = { 0 };
	struct mig_pc_uffd_stats st;
	uint64_t missing[NP / 64];
	struct reader rd = { 0 };
	pthread_t st_thr, rt;
	uint8_t *mem;
	int fd;

	memset(missing, 0xff, sizeof(missing));
	mem = map_mem(false, &fd);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	cfg.base = mem;
	cfg.npages = NP;
	cfg.request = on_request;
	cfg.arg = &s;
	CU_ASSERT_EQUAL_FATAL(mig_pc_uffd_create(&cfg, missing, &s.u), 0);
	pthread_create(&st_thr, NULL, src_thread, &s);
	rd.mem = mem;
	rd.missing = missing;
	rd.step = 3;
	pthread_create(&rt, NULL, reader_thread, &rd);
	pthread_join(rt, NULL);
	pthread_mutex_lock(&s.lock);
	s.stop = true;
	pthread_cond_signal(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(st_thr, NULL);
	CU_ASSERT_EQUAL(rd.bad, 0);
	mig_pc_uffd_get_stats(s.u, &st);
	CU_ASSERT_EQUAL(st.installed, NP);
	CU_ASSERT_EQUAL(st.requests, NP);
	CU_ASSERT_EQUAL(st.faults_served, NP);
	CU_ASSERT(st.lat_p50_ns > 0);
	CU_ASSERT(st.lat_p50_ns <= st.lat_p99_ns);
	/* p99 is a bucket's upper bound: within 25% above the max. */
	CU_ASSERT(st.lat_p99_ns <= st.lat_max_ns + st.lat_max_ns / 4);
	CU_ASSERT(st.last_install_ns > 0);
	mig_pc_uffd_destroy(s.u);
	munmap(mem, (size_t)NP * PG);
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
}

static void noop_request(void *arg, uint64_t idx)
{
	(void)arg;
	(void)idx;
}

static void test_zero_page_install_reads_zero(void)
{
	struct mig_pc_uffd_cfg cfg = { 0 };
	struct mig_pc_uffd *u;
	uint64_t missing[NP / 64] = { 0x2 };
	uint8_t *mem;
	int fd;

	mem = map_mem(false, &fd);
	cfg.base = mem;
	cfg.npages = NP;
	cfg.request = noop_request;
	CU_ASSERT_EQUAL_FATAL(mig_pc_uffd_create(&cfg, missing, &u), 0);
	CU_ASSERT_EQUAL(mig_pc_uffd_install(u, 1, NULL), 1);
	CU_ASSERT_EQUAL(mig_pc_uffd_install(u, 1, NULL), 0);
	/* A page present at create is never installed over. */
	CU_ASSERT_EQUAL(mig_pc_uffd_install(u, 0, NULL), 0);
	CU_ASSERT_EQUAL(mig_pc_uffd_install(u, NP, NULL), -ERANGE);
	CU_ASSERT_EQUAL(mem[PG + 17], 0);
	CU_ASSERT_EQUAL(mem[17], STALE);
	/* The zero page is copy-on-write: the guest may write it. */
	mem[PG + 17] = 1;
	CU_ASSERT_EQUAL(mem[PG + 17], 1);
	mig_pc_uffd_destroy(u);
	munmap(mem, (size_t)NP * PG);
}

/* A page populated behind the installer (written through the memfd) is
 * reported, never silently taken as the source's. */
static void test_page_populated_behind_installer_is_reported(void)
{
	struct mig_pc_uffd_cfg cfg = { 0 };
	struct mig_pc_uffd_stats st;
	struct mig_pc_uffd *u;
	uint64_t missing[NP / 64] = { 0x4 };
	uint8_t *mem, one = 1;
	int fd;

	mem = map_mem(true, &fd);
	cfg.base = mem;
	cfg.npages = NP;
	cfg.shared = true;
	cfg.request = noop_request;
	CU_ASSERT_EQUAL_FATAL(mig_pc_uffd_create(&cfg, missing, &u), 0);
	CU_ASSERT_EQUAL_FATAL(pwrite(fd, &one, 1, 2 * PG), 1);
	CU_ASSERT_EQUAL(mig_pc_uffd_install(u, 2, NULL), -EEXIST);
	mig_pc_uffd_get_stats(u, &st);
	CU_ASSERT_EQUAL(st.eexist, 1);
	CU_ASSERT_EQUAL(st.installed, 0);
	mig_pc_uffd_destroy(u);
	munmap(mem, (size_t)NP * PG);
	close(fd);
}

static void test_hugetlb_and_bad_config_are_refused(void)
{
	struct mig_pc_uffd_cfg cfg = { 0 };
	struct mig_pc_uffd *u = (struct mig_pc_uffd *)&cfg;
	uint64_t missing[NP / 64] = { 0 };
	uint8_t *mem;
	int fd;

	mem = map_mem(false, &fd);
	cfg.base = mem;
	cfg.npages = NP;
	cfg.request = noop_request;
	cfg.hugetlb = true;
	CU_ASSERT_EQUAL(mig_pc_uffd_create(&cfg, missing, &u), -EOPNOTSUPP);
	cfg.hugetlb = false;
	cfg.base = mem + 1;
	CU_ASSERT_EQUAL(mig_pc_uffd_create(&cfg, missing, &u), -EINVAL);
	cfg.base = mem;
	cfg.request = NULL;
	CU_ASSERT_EQUAL(mig_pc_uffd_create(&cfg, missing, &u), -EINVAL);
	CU_ASSERT_PTR_EQUAL(u, (void *)&cfg); /* untouched on failure */
	munmap(mem, (size_t)NP * PG);
}

/*
 * A device model of a Linux guest (hvcore/devices) during postcopy: its
 * thread moves data between guest RAM and a file with preadv/pwritev
 * (virtio-blk), so the kernel itself faults on a missing page (copy to
 * or from user memory), and reads a ring with memcpy; it does so holding
 * its own lock, which a vCPU thread wants meanwhile. The fault service
 * (the source thread here, the engine on a destination) takes no device
 * lock: every access waits for the source's page, then completes. A DMA
 * into part of a missing page keeps the rest of the source's page (never
 * zeros, never the stale copy); a DMA out of one writes the source's
 * page to the file.
 */
struct dev {
	uint8_t *mem;
	int fd;
	pthread_mutex_t lock;
	atomic_bool holding;
	uint8_t ring[PG];
	ssize_t rd, wr;
};

static void *dev_thread(void *arg)
{
	struct dev *v = arg;
	struct iovec in = {v->mem + 1 * PG + 100, 1000};
	struct iovec out = {v->mem + 2 * PG, PG};

	pthread_mutex_lock(&v->lock);
	atomic_store(&v->holding, true);
	v->rd = preadv(v->fd, &in, 1, 0);      /* into missing page 1 */
	v->wr = pwritev(v->fd, &out, 1, 8192); /* out of missing page 2 */
	memcpy(v->ring, v->mem + 3 * PG, PG);  /* a ring in page 3 */
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

/* A vCPU's MMIO exit into the same device: waits for the device's lock. */
static void *vcpu_thread(void *arg)
{
	struct dev *v = arg;

	while (!atomic_load(&v->holding))
		usleep(100);
	pthread_mutex_lock(&v->lock);
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

static void test_device_dma_faults_pages_in_holding_its_lock(void)
{
	struct src s = {0};
	struct mig_pc_uffd_cfg cfg = {0};
	struct mig_pc_uffd_stats st;
	uint64_t missing[NP / 64] = {0xe}; /* pages 1, 2, 3 */
	char path[] = "/tmp/pc-dev-XXXXXX";
	uint8_t data[PG], want[PG], back[PG];
	struct dev v = {0};
	pthread_t st_thr, dt, vt;
	int fd;

	v.mem = map_mem(false, &fd);
	v.fd = mkstemp(path);
	CU_ASSERT_FATAL(v.fd >= 0);
	unlink(path);
	memset(data, 0x3c, sizeof(data));
	CU_ASSERT_FATAL(pwrite(v.fd, data, PG, 0) == PG);
	pthread_mutex_init(&v.lock, NULL);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	cfg.base = v.mem;
	cfg.npages = NP;
	cfg.request = on_request;
	cfg.arg = &s;
	CU_ASSERT_EQUAL_FATAL(mig_pc_uffd_create(&cfg, missing, &s.u), 0);
	pthread_create(&dt, NULL, dev_thread, &v);
	pthread_create(&vt, NULL, vcpu_thread, &v);
	/* The faults wait: nothing answers yet, the device holds its lock. */
	usleep(50000);
	CU_ASSERT(atomic_load(&v.holding));
	CU_ASSERT(!mig_pc_uffd_installed(s.u, 1));
	pthread_create(&st_thr, NULL, src_thread, &s);
	pthread_join(dt, NULL);
	pthread_join(vt, NULL);
	pthread_mutex_lock(&s.lock);
	s.stop = true;
	pthread_cond_signal(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(st_thr, NULL);

	CU_ASSERT_EQUAL(atomic_load(&s.err), 0);
	CU_ASSERT_EQUAL(v.rd, 1000);
	CU_ASSERT_EQUAL(v.wr, PG);
	/* Page 1: the DMA'd bytes, the source's page around them. */
	fill(want, 1);
	memcpy(want + 100, data, 1000);
	CU_ASSERT(!memcmp(v.mem + PG, want, PG));
	/* Page 2 went out as the source's page; page 3 read as it. */
	CU_ASSERT_FATAL(pread(v.fd, back, PG, 8192) == PG);
	CU_ASSERT(page_ok(back, 2));
	CU_ASSERT(page_ok(v.ring, 3));
	mig_pc_uffd_get_stats(s.u, &st);
	CU_ASSERT_EQUAL(st.installed, 3);
	CU_ASSERT_EQUAL(mig_pc_uffd_remaining(s.u), 0);
	mig_pc_uffd_destroy(s.u);
	munmap(v.mem, (size_t)NP * PG);
	close(v.fd);
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
	pthread_mutex_destroy(&v.lock);
}

static CU_TestInfo tests[] = {
	{"device_dma_faults_pages_in_holding_its_lock",
	 test_device_dma_faults_pages_in_holding_its_lock},
	{"faulting_reader_gets_source_page_once_anon",
	 test_faulting_reader_gets_source_page_once_anon},
	{"faulting_reader_gets_source_page_once_shmem",
	 test_faulting_reader_gets_source_page_once_shmem},
	{"fault_waits_only_for_its_page_and_is_timed",
	 test_fault_waits_only_for_its_page_and_is_timed},
	{"zero_page_install_reads_zero", test_zero_page_install_reads_zero},
	{"page_populated_behind_installer_is_reported",
	 test_page_populated_behind_installer_is_reported},
	{"hugetlb_and_bad_config_are_refused",
	 test_hugetlb_and_bad_config_are_refused},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/postcopy_uffd", NULL, NULL, tests);
