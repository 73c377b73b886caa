// SPDX-License-Identifier: MIT
/* The sending half of the page pipeline (pipeline.h). */
#include "migrated/mig/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/bug.h"
#include "hvcore/log.h"
#include "migrated/mig/adapt.h"
#include "migrated/mig/digest.h"

struct send_chan {
	/* immutable after create */
	struct mig_send_pipe *pipe;
	struct mig_conn *conn;
	unsigned index;
	pthread_t thread;
	/* channel thread only */
	struct mig_batch_enc *enc;
	bool adaptive;
	struct mig_adapt_state ad;
	struct mig_adapt_epoch ep;
	/* written by the channel thread, read by anyone */
	_Atomic uint64_t batches, pages, zero, compressed, raw, payload, wire;
	_Atomic uint64_t enc_ns, send_ns, delta;
	_Atomic uint64_t level_pages[MIG_PIPE_LEVELS];
};

struct mig_send_pipe {
	/* immutable after create */
	const struct mig_memmap *map;
	struct mig_delta_cache *delta;
	uint64_t *htab; /* mig_send_pipe_cfg.table, or NULL */
	uint64_t zero_hash;
	unsigned n;
	/* protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t work_cv; /* a new run, or stop */
	pthread_cond_t done_cv; /* a thread finished its part of a run */
	uint64_t gen;		/* run generation */
	unsigned active;	/* threads still working on this run */
	mig_page_next_cb next;
	void *ctx;
	bool source_done;
	bool stop;
	int err;

	struct send_chan chans[];
};

double mig_pipe_stats_ratio(const struct mig_pipe_stats *s)
{
	return s->wire ? (double)(s->pages << HV_PAGE_SHIFT) / (double)s->wire
		       : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mig_pipe_stats_levels(const struct mig_pipe_stats *s, char *buf,
			   size_t len)
{
	uint64_t total = 0;
	size_t off = 0;

	if (!len)
		return;
	buf[0] = 0;
	for (unsigned i = 0; i < MIG_PIPE_LEVELS; i++)
		total += s->level_pages[i];
	if (!total)
		return;
	for (unsigned i = 0; i < MIG_PIPE_LEVELS && off < len; i++) {
		int n;

		if (!s->level_pages[i])
			continue;
		n = snprintf(buf + off, len - off, "%s%d:%.0f%%",
			     off ? " " : "zstd ", MIG_PIPE_LEVEL_MIN + (int)i,
			     100.0 * (double)s->level_pages[i] /
				     (double)total);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

/* Account one batch to the channel's epoch; decide at its end. */
static void chan_adapt(struct send_chan *c, const struct mig_batch_info *in,
		       uint64_t enc_ns, uint64_t send_ns)
{
	struct mig_adapt_state old = c->ad;
	int r;

	c->ep.batches++;
	c->ep.pages += in->pages;
	c->ep.enc_ns += enc_ns;
	c->ep.send_ns += send_ns;
	c->ep.tried_bytes += in->tried;
	c->ep.tried_out += in->tried_out;
	if (c->ep.batches < c->ad.epoch)
		return;
	c->ad = mig_adapt(&old, &c->ep);
	memset(&c->ep, 0, sizeof(c->ep));
	if (c->ad.rung == old.rung)
		return;
	r = mig_batch_enc_set_level(c->enc, mig_adapt_level(c->ad.rung));
	if (r) {
		/* Cannot happen with the ladder's levels; stay as we were. */
		c->ad = old;
		return;
	}
	hv_dbg("mig", "op=adapt chan=%u level=%d->%d", c->index,
	       mig_adapt_level(old.rung), mig_adapt_level(c->ad.rung));
}

static void set_err(struct mig_send_pipe *p, int err)
{
	if (!p->err)
		p->err = err;
}

/*
 * Hash the pages of @run into the table (pipeline.h, cfg.table). Each
 * run's words are handed out once per mig_send_pipe_run(), so no other
 * channel writes these entries meanwhile.
 */
static void hash_run(struct mig_send_pipe *p, const struct mig_page_run *run)
{
	unsigned n = 64 - (unsigned)__builtin_clzll(run->mask);
	uint64_t idx = mig_memmap_index(p->map, run->slot, run->gfn);
	const uint8_t *host = mig_memmap_range(p->map, run->slot, run->gfn, n);

	/* Encoded already, so the run is inside its slot. One thread: no
	 * thread is started, nothing can fail. */
	if (host && idx != UINT64_MAX)
		(void)mig_hash_range_rel(host, n, &run->mask, NULL,
					 p->htab + idx, p->zero_hash, 1);
}

/* One run's worth of work on one channel. Called without the lock. */
static void chan_run(struct send_chan *c)
{
	struct mig_send_pipe *p = c->pipe;
	struct mig_batch_info info;
	struct mig_page_run run;
	const uint8_t *frame;
	uint64_t t0, t1, t1h, t2;
	size_t len;
	int r;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		if (p->err || p->source_done) {
			pthread_mutex_unlock(&p->lock);
			return;
		}
		r = p->next(p->ctx, &run);
		if (r <= 0) {
			p->source_done = true;
			if (r < 0)
				set_err(p, r);
		}
		pthread_mutex_unlock(&p->lock);
		if (r <= 0)
			return;

		if (p->delta)
			mig_batch_enc_set_delta(c->enc, p->delta, run.cache);
		t0 = now_ns();
		r = mig_batch_encode(c->enc, p->map, run.slot, run.gfn,
				     run.mask, &frame, &len, &info);
		t1 = now_ns();
		/* Hash while the pages the encoder just read are in cache
		 * (the TLS record of a raw batch would push them out). */
		if (!r && p->htab)
			hash_run(p, &run);
		t1h = now_ns();
		if (!r)
			r = mig_conn_send_frame(c->conn, frame, len);
		t2 = now_ns();
		if (r) {
			hv_err("mig", "op=send_batch chan=%u slot=%u gfn=0x%llx "
				      "err=%d",
			       c->index, run.slot, (unsigned long long)run.gfn,
			       r);
			pthread_mutex_lock(&p->lock);
			set_err(p, r);
			pthread_mutex_unlock(&p->lock);
			return;
		}
		atomic_fetch_add_explicit(&c->batches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->pages, info.pages,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->zero, info.zero,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->compressed, info.compressed,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->raw, info.raw,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->payload, info.payload,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->wire, info.wire,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->delta, info.delta,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->enc_ns, t1 - t0,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->send_ns, t2 - t1h,
					  memory_order_relaxed);
		if (info.compressed && info.level >= MIG_PIPE_LEVEL_MIN &&
		    info.level < MIG_PIPE_LEVEL_MIN + (int)MIG_PIPE_LEVELS)
			atomic_fetch_add_explicit(
				&c->level_pages[info.level - MIG_PIPE_LEVEL_MIN],
				info.compressed, memory_order_relaxed);
		if (c->adaptive)
			chan_adapt(c, &info, t1 - t0, t2 - t1h);
	}
}

static void *chan_thread(void *arg)
{
	struct send_chan *c = arg;
	struct mig_send_pipe *p = c->pipe;
	uint64_t seen = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->work_cv, &p->lock);
		if (p->stop)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->lock);
		chan_run(c);
		pthread_mutex_lock(&p->lock);
		if (!--p->active)
			pthread_cond_broadcast(&p->done_cv);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void pipe_stop(struct mig_send_pipe *p, unsigned started)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(p->chans[i].thread, NULL);
	for (unsigned i = 0; i < p->n; i++)
		mig_batch_enc_destroy(p->chans[i].enc);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->work_cv);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int mig_send_pipe_create(struct mig_conn *const *conns, unsigned n,
			 const struct mig_memmap *map,
			 const struct mig_send_pipe_cfg *cfg,
			 struct mig_send_pipe **out)
{
	struct mig_batch_enc_cfg ecfg = {
		.encoding = cfg ? cfg->encoding : 0,
		.level = cfg ? cfg->level : 0,
	};
	struct mig_send_pipe *p;
	unsigned started = 0;
	int ret = 0;

	if (!n || n > MIG_PIPE_MAX_CHANNELS || !conns || !map)
		return -EINVAL;
	p = calloc(1, sizeof(*p) + n * sizeof(p->chans[0]));
	if (!p)
		return -ENOMEM;
	p->map = map;
	p->delta = cfg ? cfg->delta : NULL;
	p->htab = cfg ? cfg->table : NULL;
	p->zero_hash = mig_zero_page_hash();
	p->n = n;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct send_chan *c = &p->chans[i];

		c->pipe = p;
		c->conn = conns[i];
		c->index = i;
		ret = mig_batch_enc_create(&ecfg, &c->enc);
		if (ret)
			goto fail;
		c->adaptive = cfg && cfg->adaptive &&
			      ecfg.encoding != MIG__ENCODING__ENCODING_RAW;
		if (p->delta) {
			/* Allocate its buffers now, not mid-stream. */
			ret = mig_batch_enc_set_delta(c->enc, p->delta, false);
			if (ret)
				goto fail;
		}
		if (c->adaptive) {
			c->ad = mig_adapt_init();
			ret = mig_batch_enc_set_level(
				c->enc, mig_adapt_level(c->ad.rung));
			if (ret)
				goto fail;
		}
	}
	for (; started < n; started++) {
		ret = -pthread_create(&p->chans[started].thread, NULL,
				      chan_thread, &p->chans[started]);
		if (ret)
			goto fail;
	}
	*out = p;
	return 0;
fail:
	pipe_stop(p, started);
	return ret;
}

int mig_send_pipe_run(struct mig_send_pipe *p, mig_page_next_cb next,
		      void *ctx, uint64_t *channel_batches)
{
	int ret;

	pthread_mutex_lock(&p->lock);
	HV_BUG_ON(p->active);
	p->next = next;
	p->ctx = ctx;
	p->source_done = false;
	p->active = p->n;
	p->gen++;
	pthread_cond_broadcast(&p->work_cv);
	while (p->active)
		pthread_cond_wait(&p->done_cv, &p->lock);
	ret = p->err;
	pthread_mutex_unlock(&p->lock);
	if (channel_batches)
		for (unsigned i = 0; i < p->n; i++)
			channel_batches[i] = atomic_load(&p->chans[i].batches);
	return ret;
}

int mig_send_pipe_finish(struct mig_send_pipe *p)
{
	int ret = 0;

	/* Between runs the threads are idle: the caller may write. */
	for (unsigned i = 0; i < p->n; i++) {
		Mig__DataEnd end = MIG__DATA_END__INIT;
		int r;

		end.batches = atomic_load(&p->chans[i].batches);
		r = mig_conn_send(p->chans[i].conn, MIG__MSG_TYPE__MSG_DATA_END,
				  &end.base, NULL, 0);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

void mig_send_pipe_stats(const struct mig_send_pipe *p,
			 struct mig_pipe_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < p->n; i++) {
		const struct send_chan *c = &p->chans[i];

		out->batches += atomic_load(&c->batches);
		out->pages += atomic_load(&c->pages);
		out->zero += atomic_load(&c->zero);
		out->compressed += atomic_load(&c->compressed);
		out->raw += atomic_load(&c->raw);
		out->payload += atomic_load(&c->payload);
		out->wire += atomic_load(&c->wire);
		out->delta += atomic_load(&c->delta);
		out->enc_ns += atomic_load(&c->enc_ns);
		out->send_ns += atomic_load(&c->send_ns);
		for (unsigned l = 0; l < MIG_PIPE_LEVELS; l++)
			out->level_pages[l] += atomic_load(&c->level_pages[l]);
	}
}

void mig_send_pipe_destroy(struct mig_send_pipe *p)
{
	if (p)
		pipe_stop(p, p->n);
}
