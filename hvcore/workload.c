// SPDX-License-Identifier: MIT
/*
 * The parametric dirtying workload (hvcore/workload.h).
 *
 * Freestanding: this file is compiled into the x86 guest image as well as
 * into the host. It calls no library function; everything it needs from
 * its surroundings comes through struct hv_wl_env. (The compiler may still
 * emit calls to memset/memcpy for loops; the guest image provides them.)
 */
#include "hvcore/workload.h"

#define EINVAL_ 22
#define PAGE_SIZE_ 4096u
#define BATCH HV_WL_BATCH
/* Pacing debt is capped so that a vCPU that was descheduled or paused (a
 * migration switchover) does not burst far above its rate afterwards. */
#define MAX_DEBT_MS 10u

static inline uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: fast, good enough for page choice and filler. */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static inline uint64_t rng_seed(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t s = seed ^ (a + 1) * 0x9e3779b97f4a7c15ULL ^
		     (b + 1) * 0xc2b2ae3d27d4eb4fULL;

	return s ? s : 0x853c49e6748fea9bULL;
}

uint64_t hv_wl_region_off(const struct hv_ram_layout *ram,
			  const struct hv_wl_vcpu_params *w)
{
	uint64_t off = hv_ram_gpa_to_off(ram, w->region_gpa);

	if (off == HV_RAM_BAD)
		return HV_RAM_BAD;
	if (ram->ram_bytes &&
	    w->region_pages > (ram->ram_bytes - off) / PAGE_SIZE_)
		return HV_RAM_BAD;
	return off;
}

static int check_vcpu(const struct hv_ram_layout *ram,
		      const struct hv_wl_vcpu_params *v)
{
	if (v->pattern == HV_WL_PATTERN_INVALID ||
	    v->pattern >= HV_WL_PATTERN_COUNT)
		return -EINVAL_;
	if (v->throttle_pct >= 100)
		return -EINVAL_;
	if (v->pattern == HV_WL_PATTERN_IDLE && !v->prefill)
		return 0;
	if (v->content == HV_WL_CONTENT_INVALID ||
	    v->content >= HV_WL_CONTENT_COUNT)
		return -EINVAL_;
	if (!v->region_pages || (v->region_gpa & (PAGE_SIZE_ - 1)) ||
	    v->region_pages > (1ULL << 40) ||
	    v->region_gpa + v->region_pages * PAGE_SIZE_ < v->region_gpa)
		return -EINVAL_;
	if (hv_wl_region_off(ram, v) == HV_RAM_BAD)
		return -EINVAL_;
	if (v->write_pct > 100)
		return -EINVAL_;
	if (v->pattern == HV_WL_PATTERN_HOTSET &&
	    (!v->hot_pct || v->hot_pct > 100 || v->hot_share_pct > 100))
		return -EINVAL_;
	return 0;
}

static int check_header(uint32_t magic, uint32_t version, uint32_t nr_vcpus,
			uint64_t tsc_khz, uint32_t vcpu)
{
	if (magic != HV_WL_MAGIC || version != HV_WL_VERSION)
		return -EINVAL_;
	if (!nr_vcpus || nr_vcpus > HV_WL_MAX_VCPUS || vcpu >= nr_vcpus ||
	    !tsc_khz)
		return -EINVAL_;
	return 0;
}

int hv_wl_check(const struct hv_wl_params *p, uint32_t vcpu)
{
	int ret = check_header(p->magic, p->version, p->nr_vcpus, p->tsc_khz,
			       vcpu);

	if (ret)
		return ret;
	if (p->ram.hole_end < p->ram.hole_start)
		return -EINVAL_;
	return check_vcpu(&p->ram, &p->vcpu[vcpu]);
}

/*
 * Text-like filler: words drawn from a small vocabulary. zstd level 1
 * compresses it about 3:1 (checked by tests/unit/hvcore/test_workload.c
 * against the real zstd).
 */
static const char *const vocab[32] = {
	"the ",	   "memory ", "page ",	 "dirty ", "guest ",  "host ",
	"write ",  "log ",    "slot ",	 "migrate ", "ring ", "clear ",
	"split ",  "huge ",   "table ",	 "vcpu ",  "stream ", "zstd ",
	"channel ", "bitmap ", "harvest ", "chunk ", "lock ", "read ",
	"kernel ", "entry ",  "frame ",	 "batch ", "copy ",   "state ",
	"switch ", "over ",
};

static void fill_text(uint8_t *dst, uint32_t len, uint64_t *rng)
{
	uint32_t off = 0;

	while (off < len) {
		uint64_t r = rng_next(rng);

		/* Three words per draw: 5 bits each. */
		for (int k = 0; k < 3 && off < len; k++) {
			const char *w = vocab[(r >> (k * 5 + 7)) & 31];

			while (*w && off < len)
				dst[off++] = (uint8_t)*w++;
		}
		/* A number now and then, like real text and logs. */
		if (((r >> 40) & 7) == 0 && off + 3 < len) {
			dst[off++] = (uint8_t)('0' + (r >> 44) % 10);
			dst[off++] = (uint8_t)('0' + (r >> 48) % 10);
			dst[off++] = ' ';
		}
	}
}

void hv_wl_fill_page(uint8_t *page, uint16_t vcpu, uint64_t seq,
		     uint32_t content)
{
	volatile struct hv_wl_stamp *st = (volatile struct hv_wl_stamp *)page;
	uint64_t rng = rng_seed(seq, vcpu, content);

	switch (content) {
	case HV_WL_CONTENT_TEXT:
		fill_text(page + sizeof(*st), PAGE_SIZE_ - sizeof(*st), &rng);
		break;
	case HV_WL_CONTENT_RANDOM: {
		uint64_t *w = (uint64_t *)(page + sizeof(*st));

		for (uint32_t i = 0; i < (PAGE_SIZE_ - sizeof(*st)) / 8; i++)
			w[i] = rng_next(&rng);
		break;
	}
	default:
		break;
	}
	/* The stamp goes last so that a page with a given stamp also holds
	 * that stamp's content once the write is complete. */
	st->magic = HV_WL_STAMP_MAGIC;
	st->vcpu = vcpu;
	st->content = (uint16_t)content;
	st->seq = seq;
}

struct run {
	const volatile struct hv_wl_vcpu_params *vp;
	volatile struct hv_wl_status *st;
	const struct hv_wl_env *env;
	uint32_t vcpu;
	uint32_t pattern, content, write_pct, hot_share_pct, prefill;
	uint64_t region_off, region_pages, hot_pages, max_writes;
	struct hv_ram_layout ram;
	uint64_t rng;
	uint64_t seq, reads, sweep_pos;
	uint64_t ticks_per_ms;
	uint64_t min_sleep, max_sleep; /* ticks, see HV_WL_MIN_SLEEP_US */
	/* Throttle account in ticks: idle still owed (> 0) or, after a wait
	 * that overran, idle already done ahead (< 0). See throttle_wait(). */
	int64_t idle_owed;
	uint32_t sink; /* keeps reads from being optimised away */
};

static uint64_t pick_page(struct run *r)
{
	uint64_t n = r->region_pages;

	switch (r->pattern) {
	case HV_WL_PATTERN_SWEEP: {
		uint64_t p = r->sweep_pos++;

		if (r->sweep_pos == n) {
			r->sweep_pos = 0;
			r->st->passes = r->st->passes + 1;
		}
		return p;
	}
	case HV_WL_PATTERN_HOTSET:
		if (r->hot_pages == n ||
		    rng_next(&r->rng) % 100 < r->hot_share_pct)
			return rng_next(&r->rng) % r->hot_pages;
		return r->hot_pages + rng_next(&r->rng) % (n - r->hot_pages);
	default: /* random */
		return rng_next(&r->rng) % n;
	}
}

static void access_one(struct run *r)
{
	uint64_t gpa = hv_ram_off_to_gpa(&r->ram, r->region_off +
						     pick_page(r) * PAGE_SIZE_);

	if (r->write_pct == 100 || rng_next(&r->rng) % 100 < r->write_pct) {
		uint8_t *page = r->env->page_for_write(r->env->ctx, gpa);

		hv_wl_fill_page(page, (uint16_t)r->vcpu, ++r->seq, r->content);
	} else {
		const uint8_t *page = r->env->page_for_read(r->env->ctx, gpa);

		r->sink += *(const volatile uint32_t *)(page + 8);
		r->reads++;
	}
}

/*
 * One batch of the prefill, if one is still due: pages in order from
 * where the last batch (or the last hv_wl_run(), after a return of the
 * soft accelerator) stopped, which is seq itself, since the prefill is the
 * vCPU's first writes. Every write is a real one (write_pct does not
 * apply) so the region is fully populated. Returns 0 when no prefill is
 * due, so the caller runs the pattern.
 */
static int prefill_batch(struct run *r)
{
	if (!r->prefill || r->seq >= r->region_pages)
		return 0;
	for (uint32_t i = 0; i < BATCH && r->seq < r->region_pages; i++) {
		uint64_t gpa = hv_ram_off_to_gpa(&r->ram, r->region_off +
						 r->seq * PAGE_SIZE_);
		uint8_t *page = r->env->page_for_write(r->env->ctx, gpa);

		hv_wl_fill_page(page, (uint16_t)r->vcpu, ++r->seq, r->content);
		if (r->max_writes && r->seq >= r->max_writes)
			break;
	}
	if (r->seq == r->region_pages) {
		/* A sweep goes on from page 0, as after any full pass. */
		r->sweep_pos = 0;
		r->st->passes = r->st->passes + 1;
	}
	return 1;
}

static void publish(struct run *r, uint64_t now)
{
	uint64_t last = r->st->last_tsc;

	if (last && now - last > r->st->max_gap_tsc)
		r->st->max_gap_tsc = now - last;
	r->st->seq = r->seq;
	r->st->reads = r->reads;
	r->st->last_tsc = now;
}

/*
 * One step of a wait that must last until @until, @now being the time:
 * sleep when the env can, for at least min_sleep (the schedule catches up
 * after it, see HV_WL_MIN_SLEEP_US) and at most max_sleep (the caller
 * rereads stop and the throttle after each step); spin otherwise.
 */
static void wait_step(struct run *r, uint64_t now, uint64_t until)
{
	const struct hv_wl_env *env = r->env;
	uint64_t left = until - now;

	if (env->wait_until) {
		if (left < r->min_sleep)
			left = r->min_sleep;
		if (left > r->max_sleep)
			left = r->max_sleep;
		env->wait_until(env->ctx, now + left);
	} else if (env->relax) {
		env->relax(env->ctx);
	}
}

/* Wait until @until (guest TSC), publishing liveness while waiting. */
static void wait_until(struct run *r, uint64_t until)
{
	for (;;) {
		uint64_t now = r->env->now_tsc(r->env->ctx);

		if ((int64_t)(until - now) <= 0 || r->vp->stop)
			return;
		publish(r, now);
		wait_step(r, now, until);
	}
}

/*
 * Idle for throttle_pct of the time, so that the vCPU makes
 * (100 - t)% of its unthrottled progress, whether it runs flat out or
 * paced (the engine's mig_throttle scales rates by exactly that).
 *
 * The idle time is kept in one account over the whole run, not per batch:
 * each batch adds busy * t / (100 - t) to what is owed, and what the wait
 * really lasted is taken off. Per batch, a wait that overran (the host
 * preempted the vCPU while it idled) was never paid back, so the share of
 * idle time depended on where the host's preemptions fell. With one
 * account the overrun is paid back by the next batches (at most
 * MAX_DEBT_MS of it), and the share is exact over any window longer than
 * a few batches.
 *
 * @busy is capped at MAX_DEBT_MS plus what pacing alone made the batch
 * last (@paced ticks): a VM paused in the middle of a batch (a migration
 * switchover) would otherwise turn its whole pause into "busy" time and
 * stall for many times that after it resumes, while a slowly paced batch
 * is legitimately long. t is re-read while waiting, so a throttle the
 * host lifts ends the wait at once (and clears the account). A stop ends
 * the wait too, but what is still owed stays on the account, which
 * hv_wl_run() keeps in the status line: the soft accelerator returns from
 * hv_wl_run() at every heartbeat and kick and calls it again, and a
 * throttle forgotten at each return never slowed a soft vCPU at all.
 *
 * Returns the ticks spent waiting: pacing must not count them as time it
 * owes writes for, or it would write them all once the wait ends and the
 * throttle would not slow a paced guest at all.
 */
static uint64_t throttle_wait(struct run *r, uint64_t end, uint64_t busy,
			      uint64_t paced)
{
	uint64_t cap = MAX_DEBT_MS * r->ticks_per_ms;
	uint32_t t = r->vp->throttle_pct;
	uint64_t now = end;

	if (!t || t >= 100) {
		r->idle_owed = 0;
		return 0;
	}
	if (busy > cap + paced)
		busy = cap + paced;
	r->idle_owed += (int64_t)(busy * t / (100 - t));
	while (!r->vp->stop && r->idle_owed > (int64_t)(now - end)) {
		t = r->vp->throttle_pct;
		if (!t || t >= 100) {
			r->idle_owed = 0;
			return now - end;
		}
		publish(r, now);
		wait_step(r, now, end + (uint64_t)r->idle_owed);
		now = r->env->now_tsc(r->env->ctx);
	}
	r->idle_owed -= (int64_t)(now - end);
	if (r->idle_owed < -(int64_t)cap)
		r->idle_owed = -(int64_t)cap;
	return now - end;
}

int hv_wl_run(const volatile struct hv_wl_params *p,
	      volatile struct hv_wl_status *st, uint32_t vcpu,
	      const struct hv_wl_env *env)
{
	const volatile struct hv_wl_vcpu_params *vp;
	uint64_t rate = 0, interval_fp = 0, deadline_fp = 0, t0 = 0;
	uint64_t owed = env->pace_owed ? *env->pace_owed : 0;
	uint64_t last_hb, hb_ticks;
	struct run r;
	int ret;

	/* Validate a private copy: the host may be writing the live one. */
	ret = check_header(p->magic, p->version, p->nr_vcpus, p->tsc_khz, vcpu);
	if (ret)
		return ret;
	r.ram.ram_bytes = p->ram.ram_bytes;
	r.ram.hole_start = p->ram.hole_start;
	r.ram.hole_end = p->ram.hole_end;
	if (r.ram.hole_end < r.ram.hole_start)
		return -EINVAL_;
	{
		const volatile struct hv_wl_vcpu_params *s = &p->vcpu[vcpu];
		struct hv_wl_vcpu_params c = { 0 };

		c.pattern = s->pattern;
		c.content = s->content;
		c.region_gpa = s->region_gpa;
		c.region_pages = s->region_pages;
		c.write_pct = s->write_pct;
		c.hot_pct = s->hot_pct;
		c.hot_share_pct = s->hot_share_pct;
		c.prefill = s->prefill;
		ret = check_vcpu(&r.ram, &c);
		if (ret)
			return ret;
		/* From the checked copy: the host may change the live one. */
		r.region_off = hv_wl_region_off(&r.ram, &c);
		r.region_pages = c.region_pages;
	}
	vp = &p->vcpu[vcpu];

	r.vp = vp;
	r.st = st;
	r.env = env;
	r.vcpu = vcpu;
	r.pattern = vp->pattern;
	r.content = vp->content;
	r.write_pct = vp->write_pct;
	r.hot_share_pct = vp->hot_share_pct;
	r.prefill = vp->prefill;
	r.hot_pages = r.region_pages * vp->hot_pct / 100;
	if (!r.hot_pages)
		r.hot_pages = 1;
	r.max_writes = vp->max_writes;
	r.ticks_per_ms = p->tsc_khz;
	r.min_sleep = HV_WL_MIN_SLEEP_US * r.ticks_per_ms / 1000;
	r.max_sleep = HV_WL_MAX_SLEEP_US * r.ticks_per_ms / 1000;
	/*
	 * Resume from the status page: after a restore or a migration the
	 * writes go on from the last published seq, so stamps keep
	 * increasing and the sweep continues where it was.
	 */
	r.seq = st->seq;
	r.reads = st->reads;
	r.sweep_pos = r.region_pages ? r.seq % r.region_pages : 0;
	r.rng = rng_seed(vp->seed, vcpu, r.seq);
	r.sink = 0;
	/* What the throttle was still owed when the last run returned, less
	 * the time since (the vCPU did not run then either). */
	r.idle_owed = (int64_t)st->throttle_owed;
	if (r.idle_owed && st->last_tsc) {
		uint64_t gap = env->now_tsc(env->ctx) - st->last_tsc;

		r.idle_owed = gap < (uint64_t)r.idle_owed
				      ? r.idle_owed - (int64_t)gap
				      : 0;
	}

	st->vcpu = vcpu;
	st->running = 1;
	hb_ticks = (uint64_t)vp->heartbeat_us * p->tsc_khz / 1000;
	last_hb = env->now_tsc(env->ctx);
	throttle_wait(&r, last_hb, 0, 0);

	while (!vp->stop && (!r.max_writes || r.seq < r.max_writes)) {
		uint64_t start = env->now_tsc(env->ctx), now, paced = 0;
		int filling = prefill_batch(&r);

		if (filling) {
			/* Pacing starts where the prefill ends. */
			rate = UINT64_MAX;
		} else if (vp->rate_pages != rate) {
			/* (Re)start pacing from now at the new rate, in
			 * 48.16 fixed-point ticks per write. */
			rate = vp->rate_pages;
			interval_fp = rate ? (p->tsc_khz * 1000 << 16) / rate
					   : 0;
			t0 = start;
			deadline_fp = 0;
			/* Start as far behind as the last run returned (a
			 * sleep stretched to HV_WL_MIN_SLEEP_US leaves the
			 * schedule up to that far behind, and the soft
			 * accelerator returns at every heartbeat): without
			 * it those writes were lost at each return. */
			if (owed && interval_fp) {
				uint64_t cap = MAX_DEBT_MS * r.ticks_per_ms;
				uint64_t back = (owed * interval_fp) >> 16;

				t0 -= back < cap ? back : cap;
			}
			owed = 0;
		}

		if (filling) {
			/* This batch was the prefill's. */
		} else if (r.pattern != HV_WL_PATTERN_IDLE) {
			for (uint32_t i = 0; i < BATCH; i++) {
				if (interval_fp) {
					uint64_t debt = MAX_DEBT_MS *
							r.ticks_per_ms << 16;
					uint64_t el = (env->now_tsc(env->ctx) -
						       t0) << 16;

					if (el > deadline_fp + debt)
						deadline_fp = el - debt;
					wait_until(&r, t0 + (deadline_fp >> 16));
					if (vp->stop)
						break;
					deadline_fp += interval_fp;
					paced += interval_fp;
				}
				access_one(&r);
				if (r.max_writes && r.seq >= r.max_writes)
					break;
			}
		} else {
			wait_until(&r, start + r.ticks_per_ms);
		}

		now = env->now_tsc(env->ctx);
		publish(&r, now);
		if (hb_ticks && now - last_hb >= hb_ticks) {
			last_hb = now;
			st->heartbeats = st->heartbeats + 1;
			if (env->heartbeat)
				env->heartbeat(env->ctx,
					       (const struct hv_wl_status *)st);
		}
		t0 += throttle_wait(&r, now, now - start, paced >> 16);
	}
	if (env->pace_owed) {
		uint64_t el = (env->now_tsc(env->ctx) - t0) << 16;

		*env->pace_owed = interval_fp && el > deadline_fp
					  ? (el - deadline_fp) / interval_fp
					  : 0;
	}
	publish(&r, env->now_tsc(env->ctx));
	st->throttle_owed = r.idle_owed > 0 ? (uint64_t)r.idle_owed : 0;
	st->running = 0;
	return 0;
}
