// SPDX-License-Identifier: MIT
/* The sending half of the page pipeline (pipeline.h). */
#include "migrated/mig/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/bug.h"
#include "hvcore/log.h"

struct send_chan {
	/* immutable after create */
	struct mig_send_pipe *pipe;
	struct mig_conn *conn;
	unsigned index;
	pthread_t thread;
	/* channel thread only */
	struct mig_batch_enc *enc;
	/* written by the channel thread, read by anyone */
	_Atomic uint64_t batches, pages, zero, compressed, raw, payload, wire;
};

struct mig_send_pipe {
	/* immutable after create */
	const struct mig_memmap *map;
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

static void set_err(struct mig_send_pipe *p, int err)
{
	if (!p->err)
		p->err = err;
}

/* One run's worth of work on one channel. Called without the lock. */
static void chan_run(struct send_chan *c)
{
	struct mig_send_pipe *p = c->pipe;
	struct mig_batch_info info;
	struct mig_page_run run;
	const uint8_t *frame;
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

		r = mig_batch_encode(c->enc, p->map, run.slot, run.gfn,
				     run.mask, &frame, &len, &info);
		if (!r)
			r = mig_conn_send_frame(c->conn, frame, len);
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
	}
}

void mig_send_pipe_destroy(struct mig_send_pipe *p)
{
	if (p)
		pipe_stop(p, p->n);
}
