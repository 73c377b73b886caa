// SPDX-License-Identifier: MIT
/*
 * hv_dirtyrate: dirty-rate monitor of one VM (dirtyrate.h).
 *
 * Data kept by the sampler thread:
 *   ring[]   one entry per sample: time, pages found dirty since the
 *            previous sample, and each vCPU's guest write counter; enough
 *            entries for the 60 s window plus slack;
 *   hist[]   per guest page, 64 bits of "dirtied in second i" (bit 0 =
 *            the second in progress); rolled once per second, which is
 *            when working sets and the hot/cold histogram are computed.
 * Rates are sums over ring entries inside a window divided by the time
 * they span, so a late or slow sample never distorts a rate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/bug.h"
#include "hvcore/dirtyrate.h"
#include "hvcore/log.h"
#include "hvcore/types.h"
#include "hvcore/vm.h"

#define COMP "dirtyrate"
#define HV_PAGE 4096u

struct dr_sample {
	uint64_t t_ns;
	uint64_t pages; /* scaled */
};

struct dr_slot {
	uint32_t id;
	uint64_t base_gfn;
	uint64_t npages;
};

struct hv_dirtyrate {
	/* immutable after create */
	struct hv_vm *vm;
	struct hv_dirtyrate_cfg cfg;
	uint32_t nr_vcpus;
	unsigned nr_slots;
	struct dr_slot *slots;
	uint64_t mem_pages;
	uint64_t max_gfn; /* hist[] covers gfn [0, max_gfn) */

	/* sampler thread only */
	unsigned ring_cap;
	unsigned ring_head; /* next entry to write */
	unsigned ring_len;
	struct dr_sample *ring;
	uint64_t *ring_seq; /* ring_cap x nr_vcpus guest counters */
	uint64_t *ring_log; /* ring_cap x nr_vcpus hv_vcpu.dirty_logged */
	bool per_vcpu;	    /* the mode attributes pages to vCPUs */
	uint64_t *hist;	    /* per gfn, touched only where written */
	bool *live;	    /* per block: some hist[] of it is non-zero */
	uint64_t *buf;	    /* one block of fetched bits */
	uint64_t sec_start_ns;
	uint64_t ws[HV_DR_NR_WINDOWS];
	uint64_t hcount[HV_DR_HIST_N + 1];
	uint32_t hist_seconds;

	/* protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct hv_dirtyrate_snap snap;

	pthread_t thread;
};

static const uint32_t win_seconds[HV_DR_NR_WINDOWS] = {1, 10, 60};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool block_sampled(const struct hv_dirtyrate *dr, uint64_t block)
{
	return (block & ((1ull << dr->cfg.sample_shift) - 1)) == 0;
}

/*
 * Harvest, then fetch-and-clear every sampled block. Returns the pages
 * found (unscaled) or a negative errno. @mark: record them in hist[].
 */
static int64_t collect(struct hv_dirtyrate *dr, bool mark)
{
	int64_t total = 0, ret;

	ret = hv_vm_dirty_harvest(dr->vm);
	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < dr->nr_slots; i++) {
		const struct dr_slot *sl = &dr->slots[i];
		uint64_t nblocks =
			HV_DIV_ROUND_UP(sl->npages, HV_DR_BLOCK_PAGES);

		for (uint64_t b = 0; b < nblocks; b++) {
			uint64_t first = b * HV_DR_BLOCK_PAGES;
			uint64_t count = sl->npages - first;

			if (!block_sampled(dr, (sl->base_gfn + first) /
						       HV_DR_BLOCK_PAGES))
				continue;
			if (count > HV_DR_BLOCK_PAGES)
				count = HV_DR_BLOCK_PAGES;
			ret = hv_vm_dirty_fetch_clear(dr->vm, sl->id, first,
						      count, dr->buf);
			if (ret < 0)
				return ret;
			total += ret;
			if (!ret || !mark)
				continue;
			for (uint64_t w = 0; w < HV_DIV_ROUND_UP(count, 64);
			     w++) {
				uint64_t bits = dr->buf[w];

				while (bits) {
					unsigned bit =
						(unsigned)__builtin_ctzll(bits);
					uint64_t gfn = sl->base_gfn + first +
						       w * 64 + bit;

					bits &= bits - 1;
					if (gfn < dr->max_gfn) {
						dr->hist[gfn] |= 1;
						dr->live[gfn /
							 HV_DR_BLOCK_PAGES] = 1;
					}
				}
			}
		}
	}
	return total;
}

/* A second completed: working sets, histogram, then shift histories. */
static void roll_second(struct hv_dirtyrate *dr)
{
	const uint64_t m1 = 1, m10 = (1ull << 10) - 1;
	const uint64_t m60 = (1ull << 60) - 1;
	const uint64_t mh = (1ull << HV_DR_HIST_N) - 1;
	uint64_t ws1 = 0, ws10 = 0, ws60 = 0;
	uint64_t hc[HV_DR_HIST_N + 1] = {0};
	unsigned scale = dr->cfg.sample_shift;

	for (unsigned i = 0; i < dr->nr_slots; i++) {
		const struct dr_slot *sl = &dr->slots[i];
		uint64_t n;

		for (uint64_t first = 0; first < sl->npages; first += n) {
			uint64_t gfn0 = sl->base_gfn + first;
			uint64_t blk = gfn0 / HV_DR_BLOCK_PAGES;
			bool keep = false;

			n = HV_MIN(HV_DR_BLOCK_PAGES - gfn0 % HV_DR_BLOCK_PAGES,
				   sl->npages - first);
			/* Blocks not sampled, and blocks without history
			 * (most of a large VM the guest never wrote) are
			 * skipped without reading hist[], whose pages then
			 * stay untouched (no RSS, no time). */
			if (!block_sampled(dr, blk) || !dr->live[blk])
				continue;
			for (uint64_t gfn = gfn0; gfn < gfn0 + n; gfn++) {
				uint64_t h = dr->hist[gfn];

				if (!h)
					continue;
				ws1 += !!(h & m1);
				ws10 += !!(h & m10);
				ws60 += !!(h & m60);
				hc[__builtin_popcountll(h & mh)]++;
				dr->hist[gfn] = h << 1;
				keep |= (h << 1) != 0;
			}
			dr->live[blk] = keep;
		}
	}
	dr->ws[HV_DR_1S] = ws1 << scale;
	dr->ws[HV_DR_10S] = ws10 << scale;
	dr->ws[HV_DR_60S] = ws60 << scale;
	for (unsigned k = 1; k <= HV_DR_HIST_N; k++)
		dr->hcount[k] = hc[k] << scale;
	if (dr->hist_seconds < HV_DR_HIST_N)
		dr->hist_seconds++;
}

static unsigned ring_idx(const struct hv_dirtyrate *dr, unsigned back)
{
	/* back = 0: newest entry */
	return (dr->ring_head + dr->ring_cap - 1 - back) % dr->ring_cap;
}

/* Build the snapshot from the ring (sampler thread, lock held). */
static void fill_snap(struct hv_dirtyrate *dr, struct hv_dirtyrate_snap *s)
{
	unsigned newest = ring_idx(dr, 0);
	const struct dr_sample *n = &dr->ring[newest];
	const uint64_t *nseq = &dr->ring_seq[newest * dr->nr_vcpus];
	const uint64_t *nlog = &dr->ring_log[newest * dr->nr_vcpus];

	s->time_ns = n->t_ns;
	for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++) {
		struct hv_dr_window_stats *ws = &s->win[w];
		uint64_t span = win_seconds[w] * 1000000000ull;
		uint64_t pages = 0, gsum = 0;
		unsigned back = 0, base;
		const uint64_t *bseq, *blog;
		double dt;

		/* Entries newer than the base entry make up the window; the
		 * base is the newest entry at least @span old (or the oldest
		 * one kept). */
		while (back + 1 < dr->ring_len) {
			const struct dr_sample *e =
				&dr->ring[ring_idx(dr, back)];

			if (n->t_ns - e->t_ns >= span)
				break;
			pages += e->pages;
			back++;
		}
		base = ring_idx(dr, back);
		bseq = &dr->ring_seq[base * dr->nr_vcpus];
		blog = &dr->ring_log[base * dr->nr_vcpus];
		dt = (double)(n->t_ns - dr->ring[base].t_ns) / 1e9;
		ws->seconds = win_seconds[w];
		ws->covered_s = dt;
		ws->working_set = dr->hist_seconds >= 1 ? dr->ws[w] : 0;
		if (dt <= 0) {
			ws->pages_per_s = ws->bytes_per_s = 0;
			ws->guest_pages_per_s = 0;
			continue;
		}
		ws->pages_per_s = (double)pages / dt;
		ws->bytes_per_s = ws->pages_per_s * HV_PAGE;
		for (uint32_t v = 0; v < dr->nr_vcpus; v++)
			gsum += nseq[v] - bseq[v];
		ws->guest_pages_per_s = (double)gsum / dt;
		for (uint32_t v = 0; v < dr->nr_vcpus; v++) {
			if (dr->per_vcpu) {
				/* Measured: what each vCPU's own log
				 * reported, scaled like the VM's count. */
				s->vcpu_pages_per_s[v][w] =
					(double)((nlog[v] - blog[v])
						 << dr->cfg.sample_shift) /
					dt;
				continue;
			}
			s->vcpu_pages_per_s[v][w] =
				gsum ? ws->pages_per_s *
					       (double)(nseq[v] - bseq[v]) /
					       (double)gsum
				     : 0;
		}
	}
	memcpy(s->hist, dr->hcount, sizeof(s->hist));
	s->hist_seconds = dr->hist_seconds;
}

static void sample_once(struct hv_dirtyrate *dr)
{
	uint64_t t0 = now_ns(), t1;
	int64_t pages = collect(dr, true);
	struct dr_sample *e;
	uint64_t *seq;

	t1 = now_ns();
	if (pages < 0) {
		pthread_mutex_lock(&dr->lock);
		if (!dr->snap.error)
			hv_warn(COMP, "vm=%s op=sample err=%lld",
				hv_vm_name(dr->vm), (long long)pages);
		dr->snap.error = (int)pages;
		pthread_mutex_unlock(&dr->lock);
		return;
	}
	e = &dr->ring[dr->ring_head];
	seq = &dr->ring_seq[dr->ring_head * dr->nr_vcpus];
	e->t_ns = t1;
	e->pages = (uint64_t)pages << dr->cfg.sample_shift;
	for (uint32_t v = 0; v < dr->nr_vcpus; v++) {
		seq[v] = hv_vm_wl_status(dr->vm, v)->seq;
		dr->ring_log[dr->ring_head * dr->nr_vcpus + v] =
			hv_vm_vcpu_dirty_logged(dr->vm, v);
	}
	dr->ring_head = (dr->ring_head + 1) % dr->ring_cap;
	if (dr->ring_len < dr->ring_cap)
		dr->ring_len++;
	while (t1 - dr->sec_start_ns >= 1000000000ull) {
		roll_second(dr);
		dr->sec_start_ns += 1000000000ull;
	}
	pthread_mutex_lock(&dr->lock);
	fill_snap(dr, &dr->snap);
	dr->snap.samples++;
	dr->snap.sample_ns_last = t1 - t0;
	if (t1 - t0 > dr->snap.sample_ns_max)
		dr->snap.sample_ns_max = t1 - t0;
	pthread_mutex_unlock(&dr->lock);
}

static void *sampler(void *arg)
{
	struct hv_dirtyrate *dr = arg;
	uint64_t period = dr->cfg.interval_ms * 1000000ull;
	uint64_t next = now_ns() + period;

	pthread_mutex_lock(&dr->lock);
	while (!dr->stop) {
		struct timespec ts;
		int r;

		clock_gettime(CLOCK_REALTIME, &ts);
		{
			uint64_t now = now_ns();
			uint64_t wait = next > now ? next - now : 0;
			uint64_t abs = (uint64_t)ts.tv_sec * 1000000000ull +
				       (uint64_t)ts.tv_nsec + wait;

			ts.tv_sec = (time_t)(abs / 1000000000ull);
			ts.tv_nsec = (long)(abs % 1000000000ull);
		}
		r = pthread_cond_timedwait(&dr->cond, &dr->lock, &ts);
		if (dr->stop)
			break;
		if (r != ETIMEDOUT && now_ns() < next)
			continue;
		pthread_mutex_unlock(&dr->lock);
		sample_once(dr);
		next += period;
		/* Fell behind (a slow harvest): skip, do not burst. */
		if (next < now_ns())
			next = now_ns() + period;
		pthread_mutex_lock(&dr->lock);
	}
	pthread_mutex_unlock(&dr->lock);
	return NULL;
}

static enum hv_dirty_mode best_mode(struct hv_vm *vm)
{
	if (vm->cfg.accel == HV_ACCEL_KVM)
		return vm->cfg.dirty_ring_entries ? HV_DIRTY_RING
						  : HV_DIRTY_BITMAP;
	return HV_DIRTY_PML;
}

static void dr_free(struct hv_dirtyrate *dr)
{
	free(dr->slots);
	free(dr->ring);
	free(dr->ring_seq);
	free(dr->ring_log);
	free(dr->hist);
	free(dr->live);
	free(dr->buf);
	pthread_cond_destroy(&dr->cond);
	pthread_mutex_destroy(&dr->lock);
	free(dr);
}

int hv_dirtyrate_create(struct hv_vm *vm, const struct hv_dirtyrate_cfg *cfg,
			struct hv_dirtyrate **out)
{
	struct hv_dirtyrate *dr;
	pthread_condattr_t ca;
	int64_t primed;
	int ret;

	if (!vm || !cfg || cfg->sample_shift > HV_DR_SHIFT_MAX ||
	    (cfg->interval_ms && (cfg->interval_ms < HV_DR_INTERVAL_MS_MIN ||
				  cfg->interval_ms > HV_DR_INTERVAL_MS_MAX)) ||
	    cfg->mode >= HV_DIRTY_COUNT)
		return -EINVAL;
	dr = calloc(1, sizeof(*dr));
	if (!dr)
		return -ENOMEM;
	dr->vm = vm;
	dr->cfg = *cfg;
	if (!dr->cfg.interval_ms)
		dr->cfg.interval_ms = HV_DR_INTERVAL_MS_DEFAULT;
	if (!dr->cfg.mode)
		dr->cfg.mode = best_mode(vm);
	dr->nr_vcpus = vm->cfg.nr_vcpus;
	pthread_mutex_init(&dr->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_cond_init(&dr->cond, &ca);
	pthread_condattr_destroy(&ca);

	dr->nr_slots = hv_vm_slot_count(vm);
	dr->slots = calloc(dr->nr_slots ? dr->nr_slots : 1, sizeof(*dr->slots));
	if (!dr->slots)
		goto oom;
	for (unsigned i = 0; i < dr->nr_slots; i++) {
		struct dr_slot *sl = &dr->slots[i];
		gfn_t base;

		ret = hv_vm_slot_info(vm, i, &sl->id, &base, &sl->npages);
		if (ret)
			goto fail;
		sl->base_gfn = base;
		dr->mem_pages += sl->npages;
		if (base + sl->npages > dr->max_gfn)
			dr->max_gfn = base + sl->npages;
	}
	/* 60 s of samples plus slack for late ones. */
	dr->ring_cap = 60000 / dr->cfg.interval_ms + 16;
	dr->ring = calloc(dr->ring_cap, sizeof(*dr->ring));
	dr->ring_seq =
		calloc((size_t)dr->ring_cap * dr->nr_vcpus, sizeof(uint64_t));
	dr->ring_log =
		calloc((size_t)dr->ring_cap * dr->nr_vcpus, sizeof(uint64_t));
	/* calloc of this size is a fresh mapping: pages of hist[] the
	 * guest's writes never reach (the MMIO hole's gfns, RAM never
	 * written) are never touched and cost no memory. */
	dr->hist = calloc(dr->max_gfn ? dr->max_gfn : 1, sizeof(uint64_t));
	dr->live = calloc(HV_DIV_ROUND_UP(dr->max_gfn, HV_DR_BLOCK_PAGES) + 1,
			  sizeof(bool));
	dr->buf = calloc(HV_DR_BLOCK_PAGES / 64, sizeof(uint64_t));
	if (!dr->ring || !dr->ring_seq || !dr->ring_log || !dr->hist ||
	    !dr->live || !dr->buf)
		goto oom;

	ret = hv_vm_dirty_log_start(vm, dr->cfg.mode);
	if (ret)
		goto fail;
	/* The first harvest reports every page (initially-set): consume it
	 * without counting, so that rates start from real writes. */
	primed = collect(dr, false);
	if (primed < 0) {
		ret = (int)primed;
		goto fail_log;
	}
	dr->ring[0].t_ns = now_ns();
	for (uint32_t v = 0; v < dr->nr_vcpus; v++) {
		dr->ring_seq[v] = hv_vm_wl_status(vm, v)->seq;
		dr->ring_log[v] = hv_vm_vcpu_dirty_logged(vm, v);
	}
	dr->per_vcpu = hv_vm_dirty_per_vcpu(vm);
	dr->ring_head = 1;
	dr->ring_len = 1;
	dr->sec_start_ns = dr->ring[0].t_ns;
	dr->snap.time_ns = dr->ring[0].t_ns;
	dr->snap.mode = dr->cfg.mode;
	dr->snap.interval_ms = dr->cfg.interval_ms;
	dr->snap.sample_shift = dr->cfg.sample_shift;
	dr->snap.mem_pages = dr->mem_pages;
	dr->snap.nr_vcpus = dr->nr_vcpus;
	dr->snap.vcpu_split_estimated = !dr->per_vcpu;
	for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++)
		dr->snap.win[w].seconds = win_seconds[w];

	ret = -pthread_create(&dr->thread, NULL, sampler, dr);
	if (ret)
		goto fail_log;
	hv_info(COMP,
		"vm=%s op=start mode=%s interval_ms=%u shift=%u "
		"pages=%llu",
		hv_vm_name(vm), hv_dirty_mode_name(dr->cfg.mode),
		dr->cfg.interval_ms, dr->cfg.sample_shift,
		(unsigned long long)dr->mem_pages);
	*out = dr;
	return 0;
oom:
	ret = -ENOMEM;
	goto fail;
fail_log:
	hv_vm_dirty_log_stop(vm);
fail:
	dr_free(dr);
	return ret;
}

void hv_dirtyrate_destroy(struct hv_dirtyrate *dr)
{
	if (!dr)
		return;
	pthread_mutex_lock(&dr->lock);
	dr->stop = true;
	pthread_cond_signal(&dr->cond);
	pthread_mutex_unlock(&dr->lock);
	pthread_join(dr->thread, NULL);
	hv_vm_dirty_log_stop(dr->vm);
	hv_info(COMP, "vm=%s op=stop samples=%llu sample_ns_max=%llu",
		hv_vm_name(dr->vm), (unsigned long long)dr->snap.samples,
		(unsigned long long)dr->snap.sample_ns_max);
	dr_free(dr);
}

void hv_dirtyrate_get(struct hv_dirtyrate *dr, struct hv_dirtyrate_snap *out)
{
	pthread_mutex_lock(&dr->lock);
	*out = dr->snap;
	pthread_mutex_unlock(&dr->lock);
}
