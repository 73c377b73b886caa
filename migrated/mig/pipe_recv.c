// SPDX-License-Identifier: MIT
/* The receiving half of the page pipeline (pipeline.h). */
#include "migrated/mig/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/faultpoint.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The prefault helper's step: a huge page. */
#define PREFAULT_STEP_PAGES 512u

/* All a data channel carries; anything else fails it by its header. */
#define DATA_TYPES                                                           \
	(MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_PAGE_BATCH) |                      \
	 MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_DATA_END))

struct recv_chan {
	/* immutable after create */
	struct mig_recv_pipe *pipe;
	struct mig_conn *conn;
	unsigned index;
	pthread_t thread;
	/* channel thread only */
	struct mig_batch_dec *dec;
	uint8_t *payload; /* MIG_BATCH_PAYLOAD_MAX */
	uint64_t end;	  /* table index past the last batch written */
	/* protected by pipe->lock */
	uint64_t applied; /* batches written into memory */
	bool ended;	  /* DATA_END seen, or failed */
	/* written by the channel thread, read by anyone */
	_Atomic uint64_t pages, zero, compressed, raw, payload_bytes, wire;
};

struct mig_recv_pipe {
	/* immutable after create */
	const struct mig_memmap *map;
	unsigned n;
	/* Page hash table (mig_recv_pipe_create_hashed) or NULL; each
	 * channel writes the entries of the pages its batches wrote. */
	uint64_t *htab;
	uint64_t zero_hash;
	/* Postcopy: set once by mig_recv_pipe_set_install() between
	 * batches; the channels load imap with acquire per batch. */
	struct mig_memmap *const *_Atomic imaps; /* one per channel */
	mig_recv_install_cb install;
	void *install_arg;
	/* protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t cv; /* a batch applied, a channel ended or failed */
	int err;
	uint64_t front;	 /* highest channel end: where the stream is */
	bool pf_started; /* the prefault helper runs (pf_thread) */
	bool pf_stop;	 /* the helper is asked to stop */
	pthread_t pf_thread;

	struct recv_chan chans[];
};

/*
 * Hash the pages batch @b just wrote, read back from guest memory (what
 * the decoder actually left there, zero pages included), into the table
 * as hash ^ zero_hash (0 = a zero page, so entries never written cost no
 * memory). Before the batch is published as applied: the source starts a
 * pass only after the previous one was acknowledged, which waits for
 * that publication, so a later copy of a page is always hashed after an
 * older one.
 */
static void hash_batch(struct mig_recv_pipe *p, const Mig__PageBatch *b)
{
	const uint8_t *host = mig_memmap_range(p->map, b->slot, b->first_gfn,
					       b->npages);
	uint64_t base = mig_memmap_index(p->map, b->slot, b->first_gfn);

	if (!host || base == UINT64_MAX)
		return;
	for (uint32_t i = 0; i < b->npages; i++)
		if (b->page_mask >> i & 1)
			p->htab[base + i] =
				mig_page_hash(host + (i << HV_PAGE_SHIFT)) ^
				p->zero_hash;
}

/* Test only (MIG_FP_DST_BATCH_TOP): @b starts in the top eighth of its
 * slot. One lookup among a VM's few slots, per 256 KiB batch. */
static bool batch_at_slot_top(const struct mig_memmap *map,
			      const Mig__PageBatch *b)
{
	const struct mig_memmap_slot *sl = mig_memmap_find(map, b->slot);

	return sl &&
	       b->first_gfn - sl->base_gfn >= sl->npages - sl->npages / 8;
}

/* Apply one batch; its frame header and message were read already. */
static int chan_batch(struct recv_chan *c, const Mig__PageBatch *b,
		      struct mig_batch_info *info)
{
	struct mig_memmap *const *imaps =
		atomic_load_explicit(&c->pipe->imaps, memory_order_acquire);
	const struct mig_memmap *imap = imaps ? imaps[c->index] : NULL;
	const struct mig_memmap *map = imap ? imap : c->pipe->map;
	int ret;

	/* Check everything, the payload length included, before reading. */
	ret = mig_batch_check(b, map);
	if (ret)
		return ret;
	ret = mig_conn_read(c->conn, c->payload, b->payload_len);
	if (ret)
		return ret;
	/* Test only: the batch is lost after the wire (never written). */
	if (mig_faultpoint(MIG_FP_DST_BATCH) == MIG_FAULT_DROP ||
	    (batch_at_slot_top(map, b) &&
	     mig_faultpoint(MIG_FP_DST_BATCH_TOP) == MIG_FAULT_DROP)) {
		memset(info, 0, sizeof(*info));
		return 0;
	}
	ret = mig_batch_decode(c->dec, map, b, c->payload, b->payload_len,
			       info);
	if (!ret && imap)
		return c->pipe->install(c->pipe->install_arg, imap, b);
	if (!ret)
		c->end = mig_memmap_index(c->pipe->map, b->slot, b->first_gfn) +
			 b->npages;
	if (!ret && c->pipe->htab)
		hash_batch(c->pipe, b);
	return ret;
}

void mig_recv_pipe_set_install(struct mig_recv_pipe *p,
			       struct mig_memmap *const *maps,
			       mig_recv_install_cb install, void *arg)
{
	p->install = install;
	p->install_arg = arg;
	atomic_store_explicit(&p->imaps, maps, memory_order_release);
}

static void chan_fail(struct recv_chan *c, int err, const char *what,
		      uint64_t applied)
{
	struct mig_recv_pipe *p = c->pipe;

	/* A cancel (pipe destroyed mid-stream) is not a failure to report. */
	hv_log(err == -ECANCELED ? HV_LOG_DBG : HV_LOG_ERR, "mig",
	       "op=recv_batch chan=%u batches=%llu err=%d what=%s", c->index,
	       (unsigned long long)applied, err, what);
	mig_conn_set_error(c->conn, err);
	pthread_mutex_lock(&p->lock);
	if (!p->err)
		p->err = err;
	c->ended = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
}

static void *chan_thread(void *arg)
{
	struct recv_chan *c = arg;
	struct mig_recv_pipe *p = c->pipe;
	uint64_t applied = 0;

	for (;;) {
		struct mig_batch_info info;
		struct mig_frame_hdr h;
		ProtobufCMessage *msg;
		int ret;

		ret = mig_conn_recv_types(c->conn, DATA_TYPES, &h, &msg);
		if (ret) {
			chan_fail(c, ret, "recv", applied);
			return NULL;
		}
		if (h.type == MIG__MSG_TYPE__MSG_DATA_END) {
			uint64_t sent = ((Mig__DataEnd *)msg)->batches;

			mig_frame_msg_free(msg);
			if (sent != applied) {
				chan_fail(c, -EPROTO, "data_end_count",
					  applied);
				return NULL;
			}
			pthread_mutex_lock(&p->lock);
			c->ended = true;
			pthread_cond_broadcast(&p->cv);
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		if (h.type != MIG__MSG_TYPE__MSG_PAGE_BATCH) {
			mig_frame_msg_free(msg);
			chan_fail(c, -EPROTO, mig_frame_type_name(h.type),
				  applied);
			return NULL;
		}
		ret = chan_batch(c, (Mig__PageBatch *)msg, &info);
		mig_frame_msg_free(msg);
		if (ret) {
			chan_fail(c, ret, "batch", applied);
			return NULL;
		}
		applied++;
		atomic_fetch_add_explicit(&c->pages, info.pages,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->zero, info.zero,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->compressed, info.compressed,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->raw, info.raw,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->payload_bytes, info.payload,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&c->wire,
					  MIG_FRAME_HDR_SIZE + h.len +
						  info.payload,
					  memory_order_relaxed);
		/* Publish after the pages are written: wait() orders on it. */
		pthread_mutex_lock(&p->lock);
		c->applied = applied;
		if (c->end > p->front)
			p->front = c->end;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->lock);
	}
}

static void pipe_free(struct mig_recv_pipe *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		mig_batch_dec_destroy(p->chans[i].dec);
		free(p->chans[i].payload);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/*
 * The prefault helper: populate guest memory ahead of the stream, a huge
 * page per madvise(MADV_POPULATE_WRITE), so that the channels write into
 * memory that is already there instead of each taking the first-touch
 * fault (allocate and zero a page, which on a nested host also faults the
 * page in at the hypervisor below) inside its batch. It walks the map in
 * table order and stays at most MIG_RECV_PREFAULT_AHEAD_PAGES ahead of the
 * furthest page any channel wrote, because the source sends only the
 * pages its guest wrote: memory the stream skips is populated only up to
 * that distance past each skipped run's start. Populating never changes
 * a page's content, so racing a channel that writes the same huge page
 * is harmless. Timeline against postcopy: the engine stops the helper
 * (mig_recv_pipe_prefault_stop) before it drops the missing pages and
 * registers userfaultfd, so nothing populates a page postcopy expects
 * missing.
 */
static void *prefault_thread(void *arg)
{
	const uint64_t ahead = MIG_RECV_PREFAULT_AHEAD_PAGES;
	struct mig_recv_pipe *p = arg;
	uint64_t idx = 0, done = 0;

	for (unsigned i = 0; i < mig_memmap_count(p->map); i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(p->map, i);

		for (uint64_t off = 0; off < sl->npages;
		     off += PREFAULT_STEP_PAGES) {
			uint64_t n = HV_MIN((uint64_t)PREFAULT_STEP_PAGES,
					    sl->npages - off);
			bool stop;

			pthread_mutex_lock(&p->lock);
			while (!p->pf_stop && !p->err &&
			       idx + off >= p->front + ahead)
				pthread_cond_wait(&p->cv, &p->lock);
			stop = p->pf_stop || p->err;
			pthread_mutex_unlock(&p->lock);
			if (stop)
				goto out;
			if (madvise(sl->host + (off << HV_PAGE_SHIFT),
				    n << HV_PAGE_SHIFT, MADV_POPULATE_WRITE)) {
				/* Before Linux 5.14 (EINVAL), or out of
				 * memory: the channels fault it themselves. */
				hv_dbg("mig", "op=prefault pages=%llu err=%d",
				       (unsigned long long)done, -errno);
				goto out;
			}
			done += n;
		}
		idx += sl->npages;
	}
out:
	hv_dbg("mig", "op=prefault_end pages=%llu", (unsigned long long)done);
	return NULL;
}

int mig_recv_pipe_prefault_start(struct mig_recv_pipe *p)
{
	int ret;

	if (p->pf_started)
		return 0;
	ret = -pthread_create(&p->pf_thread, NULL, prefault_thread, p);
	if (!ret)
		p->pf_started = true;
	return ret;
}

void mig_recv_pipe_prefault_stop(struct mig_recv_pipe *p)
{
	if (!p || !p->pf_started)
		return;
	pthread_mutex_lock(&p->lock);
	p->pf_stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->pf_thread, NULL);
	p->pf_started = false;
}

static void pipe_stop(struct mig_recv_pipe *p, unsigned started)
{
	mig_recv_pipe_prefault_stop(p);
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		if (!p->chans[i].ended)
			mig_conn_shutdown(p->chans[i].conn);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(p->chans[i].thread, NULL);
	pipe_free(p);
}

int mig_recv_pipe_create(struct mig_conn *const *conns, unsigned n,
			 const struct mig_memmap *map,
			 struct mig_recv_pipe **out)
{
	return mig_recv_pipe_create_hashed(conns, n, map, NULL, out);
}

int mig_recv_pipe_create_hashed(struct mig_conn *const *conns, unsigned n,
				const struct mig_memmap *map, uint64_t *table,
				struct mig_recv_pipe **out)
{
	struct mig_recv_pipe *p;
	unsigned started = 0;
	int ret = 0;

	if (!n || n > MIG_PIPE_MAX_CHANNELS || !conns || !map)
		return -EINVAL;
	p = calloc(1, sizeof(*p) + n * sizeof(p->chans[0]));
	if (!p)
		return -ENOMEM;
	p->map = map;
	p->n = n;
	p->htab = table;
	p->zero_hash = mig_zero_page_hash();
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct recv_chan *c = &p->chans[i];

		c->pipe = p;
		c->conn = conns[i];
		c->index = i;
		c->payload = malloc(MIG_BATCH_PAYLOAD_MAX);
		if (!c->payload) {
			ret = -ENOMEM;
			goto fail;
		}
		ret = mig_batch_dec_create(&c->dec);
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

static bool counts_reached(const struct mig_recv_pipe *p,
			   const uint64_t *want, int *err)
{
	bool all = true;

	for (unsigned i = 0; i < p->n; i++) {
		const struct recv_chan *c = &p->chans[i];

		if (c->applied >= want[i])
			continue;
		if (c->ended && !*err)
			*err = -EPROTO; /* ended short of the count */
		all = false;
	}
	return all;
}

static uint64_t applied_total(const struct mig_recv_pipe *p)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < p->n; i++)
		n += p->chans[i].applied;
	return n;
}

static void deadline_in(struct timespec *dl, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, dl);
	dl->tv_sec += ms / 1000;
	dl->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
}

int mig_recv_pipe_wait(struct mig_recv_pipe *p,
		       const uint64_t *channel_batches, unsigned timeout_ms)
{
	struct timespec dl;
	uint64_t seen;
	int ret = 0;

	deadline_in(&dl, timeout_ms);
	pthread_mutex_lock(&p->lock);
	seen = applied_total(p);
	for (;;) {
		int short_err = 0;

		if (p->err) {
			ret = p->err;
			break;
		}
		if (counts_reached(p, channel_batches, &short_err))
			break;
		if (short_err) {
			ret = short_err;
			break;
		}
		/* The limit is on silence, not on the length of a pass: a
		 * backlog of well-compressed pages (4 MiB of socket buffer
		 * can hold GiBs of stamp pages) may take long to apply. */
		if (applied_total(p) != seen) {
			seen = applied_total(p);
			deadline_in(&dl, timeout_ms);
		}
		if (!timeout_ms) {
			pthread_cond_wait(&p->cv, &p->lock);
		} else if (pthread_cond_timedwait(&p->cv, &p->lock, &dl) ==
				   ETIMEDOUT &&
			   applied_total(p) == seen) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

int mig_recv_pipe_join(struct mig_recv_pipe *p)
{
	int ret;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		bool all = true;

		for (unsigned i = 0; i < p->n; i++)
			all &= p->chans[i].ended;
		if (all)
			break;
		pthread_cond_wait(&p->cv, &p->lock);
	}
	ret = p->err;
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void mig_recv_pipe_stats(const struct mig_recv_pipe *p,
			 struct mig_pipe_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < p->n; i++) {
		const struct recv_chan *c = &p->chans[i];

		pthread_mutex_lock((pthread_mutex_t *)&p->lock);
		out->batches += c->applied;
		pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
		out->pages += atomic_load(&c->pages);
		out->zero += atomic_load(&c->zero);
		out->compressed += atomic_load(&c->compressed);
		out->raw += atomic_load(&c->raw);
		out->payload += atomic_load(&c->payload_bytes);
		out->wire += atomic_load(&c->wire);
	}
}

void mig_recv_pipe_destroy(struct mig_recv_pipe *p)
{
	if (p)
		pipe_stop(p, p->n);
}
