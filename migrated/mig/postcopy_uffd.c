// SPDX-License-Identifier: MIT
#include "migrated/mig/postcopy_uffd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/log.h"

#define PC_PAGE 4096u
/* Faults waiting for their page that carry a timestamp; more (a guest
 * with hundreds of vCPUs all faulting) are served, not timed. */
#define PC_WAIT_SLOTS 1024u
/* Latency histogram: 4 buckets per power of two of nanoseconds. */
#define PC_LAT_BUCKETS 256u

struct pc_wait {
	uint64_t idx; /* page + 1; 0 = free */
	uint64_t t0;
};

struct mig_pc_uffd {
	/* immutable after create */
	uint8_t *base;
	uint64_t npages;
	int uffd;
	int stop_fd; /* eventfd: the fault thread ends */
	void (*request)(void *arg, uint64_t idx);
	void *arg;
	pthread_t thread;
	bool thread_started;

	/* any thread: atomic words, one bit per page in place */
	_Atomic uint64_t *installed;
	atomic_uint_fast64_t remaining;

	/* protected by lock */
	pthread_mutex_t lock;
	struct pc_wait wait[PC_WAIT_SLOTS];
	uint64_t lat[PC_LAT_BUCKETS];
	struct mig_pc_uffd_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned lat_bucket(uint64_t v)
{
	unsigned e;

	if (v < 4)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	return e * 4 + (unsigned)((v >> (e - 2)) & 3);
}

/* The largest value of bucket @b. */
static uint64_t lat_bucket_top(unsigned b)
{
	unsigned e = b / 4, sub = b % 4;

	if (b < 4)
		return b;
	return ((4ull + sub + 1) << (e - 2)) - 1;
}

static uint64_t lat_pct(const uint64_t *h, uint64_t n, unsigned pct)
{
	uint64_t want = (n * pct + 99) / 100, seen = 0;

	for (unsigned b = 0; b < PC_LAT_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want && h[b])
			return lat_bucket_top(b);
	}
	return 0;
}

/* Slot of page @idx in the wait table, or of a free place when @add. */
static struct pc_wait *wait_find(struct mig_pc_uffd *u, uint64_t idx,
				 bool add)
{
	unsigned h = (unsigned)((idx * 0x9e3779b97f4a7c15ull) >> 54);

	for (unsigned i = 0; i < PC_WAIT_SLOTS; i++) {
		struct pc_wait *w = &u->wait[(h + i) % PC_WAIT_SLOTS];

		if (w->idx == idx + 1)
			return w;
		if (!w->idx)
			return add ? w : NULL;
	}
	return NULL;
}

/* Remove @w keeping the linear-probe chains intact (lock held). */
static void wait_del(struct mig_pc_uffd *u, struct pc_wait *w)
{
	unsigned i = (unsigned)(w - u->wait);

	w->idx = 0;
	for (unsigned j = (i + 1) % PC_WAIT_SLOTS; u->wait[j].idx;
	     j = (j + 1) % PC_WAIT_SLOTS) {
		struct pc_wait e = u->wait[j];

		u->wait[j].idx = 0;
		*wait_find(u, e.idx - 1, true) = e;
	}
}

bool mig_pc_uffd_installed(struct mig_pc_uffd *u, uint64_t idx)
{
	if (idx >= u->npages)
		return false;
	return (atomic_load(&u->installed[idx >> 6]) >> (idx & 63)) & 1;
}

uint64_t mig_pc_uffd_remaining(struct mig_pc_uffd *u)
{
	return atomic_load(&u->remaining);
}

size_t mig_pc_uffd_waiting(struct mig_pc_uffd *u, uint64_t *idx, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < PC_WAIT_SLOTS && n < max; i++) {
		uint64_t w = u->wait[i].idx;

		if (w && !mig_pc_uffd_installed(u, w - 1))
			idx[n++] = w - 1;
	}
	pthread_mutex_unlock(&u->lock);
	return n;
}

/* A page is needed by a faulting thread (fault thread). */
static void on_fault(struct mig_pc_uffd *u, uint64_t addr)
{
	uint64_t idx = (addr - (uint64_t)(uintptr_t)u->base) / PC_PAGE;
	bool ask = false;

	if (addr < (uint64_t)(uintptr_t)u->base || idx >= u->npages)
		return;
	pthread_mutex_lock(&u->lock);
	u->st.faults++;
	if (!mig_pc_uffd_installed(u, idx)) {
		struct pc_wait *w = wait_find(u, idx, false);

		if (!w) {
			/* First fault on it: time it (if there is room) and
			 * ask. A later fault on the same page, from another
			 * vCPU, waits for the same answer. */
			w = wait_find(u, idx, true);
			if (w)
				*w = (struct pc_wait){ idx + 1, now_ns() };
			u->st.requests++;
			ask = true;
		}
	}
	pthread_mutex_unlock(&u->lock);
	/*
	 * Installed meanwhile, the fault raced with its UFFDIO_COPY (which
	 * woke the threads that were waiting then). Our faulting thread may
	 * have been queued after that wake: wake it; if the page is still
	 * not in (the installer claimed it but has not copied yet), the
	 * thread faults again and waits for the copy's wake.
	 */
	if (mig_pc_uffd_installed(u, idx)) {
		struct uffdio_range r = {
			.start = (uint64_t)(uintptr_t)u->base + idx * PC_PAGE,
			.len = PC_PAGE,
		};

		ioctl(u->uffd, UFFDIO_WAKE, &r);
		return;
	}
	if (ask)
		u->request(u->arg, idx);
}

static void *fault_thread(void *arg)
{
	struct mig_pc_uffd *u = arg;
	struct uffd_msg msg[16];

	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = u->uffd, .events = POLLIN },
			{ .fd = u->stop_fd, .events = POLLIN },
		};
		ssize_t n;

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			hv_err("postcopy", "op=fault_poll err=%d", -errno);
			break;
		}
		if (pf[1].revents)
			break;
		n = read(u->uffd, msg, sizeof(msg));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			hv_err("postcopy", "op=fault_read err=%d", -errno);
			break;
		}
		for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++)
			if (msg[i].event == UFFD_EVENT_PAGEFAULT)
				on_fault(u, msg[i].arg.pagefault.address &
						    ~(uint64_t)(PC_PAGE - 1));
	}
	return NULL;
}

int mig_pc_uffd_install(struct mig_pc_uffd *u, uint64_t idx,
			const void *page)
{
	uint64_t dst = (uint64_t)(uintptr_t)u->base + idx * PC_PAGE;
	uint64_t bit = 1ull << (idx & 63), t;
	struct pc_wait *w;
	int ret = 0;

	if (idx >= u->npages)
		return -ERANGE;
	/* Claim the page: exactly one installer gets past this. */
	if (atomic_fetch_or(&u->installed[idx >> 6], bit) & bit) {
		pthread_mutex_lock(&u->lock);
		u->st.duplicates++;
		pthread_mutex_unlock(&u->lock);
		return 0;
	}
	for (;;) {
		if (page) {
			struct uffdio_copy c = {
				.dst = dst,
				.src = (uint64_t)(uintptr_t)page,
				.len = PC_PAGE,
			};

			ret = ioctl(u->uffd, UFFDIO_COPY, &c) ? -errno : 0;
		} else {
			struct uffdio_zeropage z = {
				.range = { .start = dst, .len = PC_PAGE },
			};

			ret = ioctl(u->uffd, UFFDIO_ZEROPAGE, &z) ? -errno : 0;
		}
		/* EAGAIN: the mm changed under the copy; nothing was
		 * installed, try again. */
		if (ret != -EAGAIN)
			break;
	}
	t = now_ns();
	pthread_mutex_lock(&u->lock);
	if (ret == -EEXIST)
		u->st.eexist++;
	if (!ret) {
		u->st.installed++;
		u->st.zero += !page;
		u->st.last_install_ns = t;
		w = wait_find(u, idx, false);
		if (w) {
			uint64_t d = t - w->t0;

			u->lat[lat_bucket(d)]++;
			u->st.faults_served++;
			if (d > u->st.lat_max_ns)
				u->st.lat_max_ns = d;
			wait_del(u, w);
		}
	}
	pthread_mutex_unlock(&u->lock);
	if (ret)
		return ret;
	atomic_fetch_sub(&u->remaining, 1);
	return 1;
}

void mig_pc_uffd_get_stats(struct mig_pc_uffd *u,
			   struct mig_pc_uffd_stats *st)
{
	pthread_mutex_lock(&u->lock);
	*st = u->st;
	st->lat_p50_ns = lat_pct(u->lat, u->st.faults_served, 50);
	st->lat_p99_ns = lat_pct(u->lat, u->st.faults_served, 99);
	pthread_mutex_unlock(&u->lock);
}

static int uffd_open(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	int dev;

	if (fd >= 0)
		return fd;
	/* The syscall may be limited to privileged users
	 * (vm.unprivileged_userfaultfd); the device asks for its own
	 * permission instead. */
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	fd = fd < 0 ? -errno : fd;
	close(dev);
	return fd;
}

/* Drop our copy of every missing page, a run at a time. */
static int drop_missing(const struct mig_pc_uffd_cfg *cfg,
			const uint64_t *missing, uint64_t *count)
{
	int advice = cfg->shared ? MADV_REMOVE : MADV_DONTNEED;
	uint64_t i = 0, n = 0;

	while (i < cfg->npages) {
		uint64_t j;

		if (!((missing[i >> 6] >> (i & 63)) & 1)) {
			i++;
			continue;
		}
		for (j = i; j < cfg->npages && ((missing[j >> 6] >> (j & 63)) & 1);
		     j++)
			;
		if (madvise(cfg->base + i * PC_PAGE, (j - i) * PC_PAGE,
			    advice) < 0)
			return -errno;
		n += j - i;
		i = j;
	}
	*count = n;
	return 0;
}

int mig_pc_uffd_create(const struct mig_pc_uffd_cfg *cfg,
		       const uint64_t *missing, struct mig_pc_uffd **out)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	uint64_t nwords, nmissing = 0;
	struct mig_pc_uffd *u;
	int ret;

	if (!cfg || !cfg->base || !cfg->npages || !cfg->request || !missing ||
	    ((uintptr_t)cfg->base & (PC_PAGE - 1)))
		return -EINVAL;
	if (cfg->hugetlb)
		return -EOPNOTSUPP;
	nwords = (cfg->npages + 63) / 64;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->installed = calloc(nwords, sizeof(*u->installed));
	if (!u->installed) {
		ret = -ENOMEM;
		goto err_free;
	}
	u->base = cfg->base;
	u->npages = cfg->npages;
	u->request = cfg->request;
	u->arg = cfg->arg;
	u->uffd = -1;
	u->stop_fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	for (uint64_t w = 0; w < nwords; w++) {
		uint64_t m = missing[w];

		if (w == nwords - 1 && (cfg->npages & 63))
			m &= (1ull << (cfg->npages & 63)) - 1;
		atomic_init(&u->installed[w], ~m);
	}

	ret = uffd_open();
	if (ret < 0)
		goto err_lock;
	u->uffd = ret;
	if (cfg->shared)
		api.features = UFFD_FEATURE_MISSING_SHMEM;
	if (ioctl(u->uffd, UFFDIO_API, &api) < 0) {
		ret = errno == EINVAL ? -EOPNOTSUPP : -errno;
		goto err_uffd;
	}
	u->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (u->stop_fd < 0) {
		ret = -errno;
		goto err_uffd;
	}
	/* UFFDIO_COPY installs 4 KiB pages: no huge page may cover the
	 * range, now or later (khugepaged). Shared memfds here are 4 KiB
	 * anyway (shmem THP is off). */
	if (!cfg->shared &&
	    madvise(cfg->base, cfg->npages * PC_PAGE, MADV_NOHUGEPAGE) < 0) {
		ret = -errno;
		goto err_stop;
	}
	ret = drop_missing(cfg, missing, &nmissing);
	if (ret)
		goto err_stop;
	reg.range.start = (uint64_t)(uintptr_t)cfg->base;
	reg.range.len = cfg->npages * PC_PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(u->uffd, UFFDIO_REGISTER, &reg) < 0) {
		ret = errno == EINVAL ? -EOPNOTSUPP : -errno;
		goto err_stop;
	}
	if (!(reg.ioctls & (1ull << _UFFDIO_COPY)) ||
	    !(reg.ioctls & (1ull << _UFFDIO_ZEROPAGE))) {
		ret = -EOPNOTSUPP;
		goto err_unreg;
	}
	u->st.missing = nmissing;
	atomic_init(&u->remaining, nmissing);
	ret = -pthread_create(&u->thread, NULL, fault_thread, u);
	if (ret)
		goto err_unreg;
	u->thread_started = true;
	hv_info("postcopy", "op=uffd_register pages=%llu missing=%llu "
			    "backing=%s",
		(unsigned long long)u->npages, (unsigned long long)nmissing,
		cfg->shared ? "shmem" : "anon");
	*out = u;
	return 0;

err_unreg:
	ioctl(u->uffd, UFFDIO_UNREGISTER, &reg.range);
err_stop:
	close(u->stop_fd);
err_uffd:
	close(u->uffd);
err_lock:
	pthread_mutex_destroy(&u->lock);
err_free:
	free(u->installed);
	free(u);
	return ret;
}

void mig_pc_uffd_destroy(struct mig_pc_uffd *u)
{
	uint64_t one = 1;

	if (!u)
		return;
	if (u->thread_started) {
		if (write(u->stop_fd, &one, sizeof(one)) < 0)
			hv_err("postcopy", "op=fault_stop err=%d", -errno);
		pthread_join(u->thread, NULL);
	}
	if (atomic_load(&u->remaining))
		hv_warn("postcopy", "op=uffd_close missing=%llu",
			(unsigned long long)atomic_load(&u->remaining));
	/* Closing the userfaultfd unregisters the range and wakes any
	 * thread still waiting in a fault. */
	close(u->uffd);
	close(u->stop_fd);
	pthread_mutex_destroy(&u->lock);
	free(u->installed);
	free(u);
}
