// SPDX-License-Identifier: MIT
/*
 * The source's dirty set and one iteration: harvest the VM's dirty logs
 * into per-slot bitmaps, then hand them to the send pipeline 64 pages (one
 * bitmap word) at a time, pacing to the bandwidth cap.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/source_priv.h"

int mig__src_dirty_init(struct mig_source *s)
{
	unsigned n = hv_vm_slot_count(s->vm);

	s->slots = calloc(n, sizeof(*s->slots));
	s->fetch_buf = malloc(SRC_FETCH_PAGES / 64 * sizeof(uint64_t));
	if (!s->slots || !s->fetch_buf)
		return -ENOMEM;
	s->nslots = n;
	for (unsigned i = 0; i < n; i++) {
		struct src_slot *sl = &s->slots[i];
		int ret = hv_vm_slot_info(s->vm, i, &sl->id, &sl->base,
					  &sl->npages);

		if (ret)
			return ret;
		sl->nwords = HV_DIV_ROUND_UP(sl->npages, 64);
		sl->bits = calloc(sl->nwords, sizeof(uint64_t));
		sl->sent = calloc(sl->nwords, sizeof(uint64_t));
		if (!sl->bits || !sl->sent)
			return -ENOMEM;
	}
	return 0;
}

void mig__src_dirty_fini(struct mig_source *s)
{
	for (unsigned i = 0; s->slots && i < s->nslots; i++) {
		free(s->slots[i].bits);
		free(s->slots[i].sent);
	}
	free(s->slots);
	free(s->table);
	s->table = NULL;
	free(s->fetch_buf);
	s->slots = NULL;
	s->fetch_buf = NULL;
	s->nslots = 0;
}

/* Bytes the data channels' sockets still hold unsent (SIOCOUTQ). */
static uint64_t data_outq(struct mig_source *s)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < s->nchan; i++) {
		int q = 0;

		if (s->data[i] &&
		    ioctl(mig_conn_fd(s->data[i]), SIOCOUTQ, &q) == 0 && q > 0)
			sum += (uint64_t)q;
	}
	return sum;
}

/*
 * Wait for the destination's answer to a pass for as long as it keeps
 * taking the pass in: the I/O timeout bounds silence, not the length of a
 * pass. Well-compressed pages (a stamp page is a few bytes on the wire)
 * leave the destination seconds of work in the socket buffers after the
 * source's last write; while those drain (the data sockets' unsent bytes
 * shrink) the wait goes on. Returns 0 when a frame (or an error, or a
 * cancel) is there for mig__src_ctl_expect() to read, else -ETIMEDOUT, failed.
 */
static int wait_pass_answer(struct mig_source *s, const char *what)
{
	uint64_t q = data_outq(s), waited = 0;

	for (;;) {
		uint64_t now_q;
		int ret;

		if (atomic_load(&s->cancel))
			return 0;
		ret = mig_conn_wait_recv(s->ctl, 100);
		if (ret != -ETIMEDOUT)
			return 0;
		waited += 100;
		if (!s->io_ms || waited < s->io_ms)
			continue;
		now_q = data_outq(s);
		if (now_q >= q)
			FAIL(s, -ETIMEDOUT, "%s: control channel: %s", what,
			     strerror(ETIMEDOUT));
		q = now_q;
		waited = 0;
	}
}

int64_t mig__src_harvest(struct mig_source *s)
{
	int64_t got = hv_vm_dirty_harvest(s->vm), total = 0;

	if (got < 0)
		return got;
	for (unsigned i = 0; i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];

		for (uint64_t first = 0; first < sl->npages;
		     first += SRC_FETCH_PAGES) {
			uint64_t count = HV_MIN((uint64_t)SRC_FETCH_PAGES,
						sl->npages - first);
			uint64_t *dst = sl->bits + first / 64;
			int64_t n;

			n = hv_vm_dirty_fetch_clear(s->vm, sl->id, first, count,
						    s->fetch_buf);
			if (n < 0)
				return n;
			total += n;
			if (!n)
				continue;
			/* OR, not copy: pages of an unsent pass stay. */
			for (uint64_t w = 0; w < HV_DIV_ROUND_UP(count, 64);
			     w++) {
				uint64_t add = s->fetch_buf[w] & ~dst[w];

				s->pending += (uint64_t)__builtin_popcountll(add);
				dst[w] |= s->fetch_buf[w];
			}
		}
	}
	return total;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
			       (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

/*
 * Hold the pipe back (its lock is held: every channel waits) until the
 * bytes written in this run fit the cap. In-flight batches are not counted
 * yet, so the cap is exceeded by at most one batch per channel.
 */
static int pace(struct mig_source *s)
{
	for (;;) {
		uint64_t cap = atomic_load(&s->max_bw), now, allowed;
		struct mig_pipe_stats st;

		if (!cap)
			return 0;
		if (atomic_load(&s->cancel))
			return -ECANCELED;
		mig_send_pipe_stats(s->pipe, &st);
		now = mig__now_ns();
		allowed = (uint64_t)((double)cap *
				     (double)(now - s->run_start_ns) / 1e9);
		if (st.wire - s->run_wire0 <= allowed)
			return 0;
		sleep_ns(HV_MIN((st.wire - s->run_wire0 - allowed) *
					1000000000ull / cap,
				20000000ull));
	}
}

void mig__src_prog_counters(struct mig_source *s)
{
	struct mig_pipe_stats st;

	if (!s->pipe)
		return;
	mig_send_pipe_stats(s->pipe, &st);
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.elapsed_ns = mig__now_ns() - s->t0;
	s->prog.p.pages_sent = st.pages;
	s->prog.p.pages_zero = st.zero;
	s->prog.p.pages_compressed = st.compressed;
	s->prog.p.pages_raw = st.raw;
	s->prog.p.pages_delta = st.delta;
	s->prog.p.bytes_wire = st.wire + s->ctl_bytes;
	s->prog.p.compression_ratio = mig_pipe_stats_ratio(&st);
	mig_pipe_stats_levels(&st, s->prog.p.compress_levels,
			      sizeof(s->prog.p.compress_levels));
	s->prog.p.remaining_bytes = s->pending << HV_PAGE_SHIFT;
	mig__src_prog_estimate(s, mig__now_ns());
	pthread_mutex_unlock(&s->prog.lock);
}

/* The pipe's page source: the next non-empty word of the dirty set. */
static int next_run(void *ctx, struct mig_page_run *run)
{
	struct mig_source *s = ctx;
	int ret;

	if (atomic_load(&s->cancel))
		return -ECANCELED;
	ret = mig__src_pass_cut(s);
	if (ret)
		return ret < 0 ? ret : 0;
	ret = pace(s);
	if (ret)
		return ret;
	/* End a long pass early (the rest stays in the dirty set for the
	 * next one) so the control channel never stays silent for as long
	 * as the destination's read timeout. */
	if (mig__now_ns() - s->run_start_ns > s->pass_limit_ns)
		return 0;
	mig__src_prog_counters(s);
	mig__prog_emit(&s->prog, false);
	for (; s->cur_slot < s->nslots; s->cur_slot++, s->cur_word = 0) {
		struct src_slot *sl = &s->slots[s->cur_slot];

		for (; s->cur_word < sl->nwords; s->cur_word++) {
			uint64_t m = sl->bits[s->cur_word];

			if (!m)
				continue;
			sl->bits[s->cur_word] = 0;
			run->slot = sl->id;
			run->gfn = sl->base + s->cur_word * 64;
			run->mask = m;
			/* Pages dirtied again after the first pass are the
			 * ones likely to be re-sent: cache those. */
			run->cache = s->cur_iter > 0;
			s->pending -= (uint64_t)__builtin_popcountll(m);
			s->cur_word++;
			return 1;
		}
	}
	return 0;
}

static int send_ctl(struct mig_source *s, unsigned type,
		    const ProtobufCMessage *m)
{
	s->ctl_bytes += mig_frame_size(m);
	return mig_conn_send(s->ctl, type, m, NULL, 0);
}

int mig__src_send_pass(struct mig_source *s, uint32_t iteration)
{
	Mig__IterStart is = MIG__ITER_START__INIT;
	Mig__IterEnd ie = MIG__ITER_END__INIT;
	uint64_t counts[MIG_CHANNELS_MAX];
	struct mig_pipe_stats st;
	uint64_t pages0;
	int ret;

	is.iteration = iteration;
	is.dirty_pages = s->pending;
	ret = send_ctl(s, MIG__MSG_TYPE__MSG_ITER_START, &is.base);
	if (ret)
		return ret;
	mig_send_pipe_stats(s->pipe, &st);
	pages0 = st.pages;
	s->run_wire0 = st.wire;
	s->run_start_ns = mig__now_ns();
	s->cur_slot = 0;
	s->cur_word = 0;
	s->cur_iter = iteration;
	ret = mig_send_pipe_run(s->pipe, next_run, s, counts);
	if (ret)
		return ret;
	mig_send_pipe_stats(s->pipe, &st);
	ie.iteration = iteration;
	ie.n_channel_batches = s->nchan;
	ie.channel_batches = counts;
	ie.pages = st.pages - pages0;
	ret = send_ctl(s, MIG__MSG_TYPE__MSG_ITER_END, &ie.base);
	if (ret)
		return ret;
	/*
	 * Wait until the destination applied the whole pass before the next
	 * one: pages are spread over channels by whichever thread is free,
	 * so a page re-sent next pass may take another channel and must not
	 * overtake its older copy still queued on this one. The reply also
	 * brings a destination's Abort (and its reason) to us at once.
	 */
	{
		ProtobufCMessage *m = NULL;
		char what[48];

		snprintf(what, sizeof(what), "iteration %u", iteration);
		ret = wait_pass_answer(s, what);
		if (ret)
			return ret;
		ret = mig__src_ctl_expect(s, MIG__MSG_TYPE__MSG_ITER_ACK, &m, what);
		if (ret)
			return ret;
		if (((Mig__IterAck *)m)->iteration != iteration)
			ret = -EPROTO;
		mig_frame_msg_free(m);
		if (ret)
			mig__prog_fail(&s->prog, ret,
				       "%s: acknowledged another iteration",
				       what);
		return ret;
	}
}

int mig__src_table_init(struct mig_source *s)
{
	/*
	 * Entries are stored relative to the zero-page hash (SRC_TABLE_REL):
	 * every page starts as a zero page, entry 0, so the table is a
	 * calloc'd (lazily zero) mapping that costs memory only for the
	 * pages sent: 8 bytes a page of a 256 GiB VM would be 512 MiB
	 * touched at setup for RAM the guest never wrote.
	 */
	s->table_pages = mig_memmap_pages(s->map);
	s->table = calloc(HV_MAX(s->table_pages, 1), sizeof(uint64_t));
	if (!s->table)
		return -ENOMEM;
	for (unsigned i = 0; i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];
		uint64_t idx = 0;

		for (unsigned m = 0; m < mig_memmap_count(s->map); m++) {
			const struct mig_memmap_slot *ms =
				mig_memmap_at(s->map, m);

			if (ms->id == sl->id) {
				sl->tidx = idx;
				sl->host = ms->host;
				break;
			}
			idx += ms->npages;
		}
	}
	return 0;
}

/* The data map of @sl's range of the VM's guest memory (any backing). */
static int slot_data_map(struct mig_source *s, const struct src_slot *sl,
			 uint64_t *data)
{
	const struct hv_guest_mem *mem = s->vm->mem;

	if (!mem || sl->host < mem->hva ||
	    sl->host + (sl->npages << HV_PAGE_SHIFT) > mem->hva + mem->bytes)
		return -ENOENT;
	return hv_guest_mem_data_map(mem, (uint64_t)(sl->host - mem->hva),
				     sl->npages, data);
}

int mig__src_skip_holes(struct mig_source *s)
{
	for (unsigned i = 0; i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];
		uint64_t *data = malloc(sl->nwords * sizeof(uint64_t));
		int ret;

		if (!data)
			return -ENOMEM;
		ret = slot_data_map(s, sl, data);
		if (ret) {
			/* Not a range of guest memory we know: send all. */
			free(data);
			continue;
		}
		for (uint64_t w = 0; w < sl->nwords; w++) {
			uint64_t hole = sl->bits[w] & ~data[w];
			uint64_t n = (uint64_t)__builtin_popcountll(hole);

			sl->bits[w] &= data[w];
			s->pending -= n;
			s->holes += n;
		}
		free(data);
	}
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.pages_hole = s->holes;
	pthread_mutex_unlock(&s->prog.lock);
	return 0;
}

int mig__src_hash_sent(struct mig_source *s)
{
	for (unsigned i = 0; i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];
		int ret;

		if (!sl->host)
			continue;
		ret = mig_hash_range_rel(sl->host, sl->npages, sl->sent, NULL,
					 s->table + sl->tidx,
					 mig_zero_page_hash(), s->nchan);
		if (ret)
			return ret;
		memset(sl->sent, 0, sl->nwords * sizeof(uint64_t));
	}
	return 0;
}

int mig__src_verify(struct mig_source *s)
{
	uint64_t t0 = mig__now_ns(), bad = 0, first_bad = UINT64_MAX;
	/* A chunk at a time, as the digest: never a second whole table. */
	uint64_t *now = malloc(MIG_DIGEST_CHUNK_PAGES * sizeof(uint64_t));
	int ret = 0;

	if (!now)
		return -ENOMEM;
	for (unsigned i = 0; !ret && i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];
		uint64_t *data = malloc(sl->nwords * sizeof(uint64_t));

		if (!data) {
			ret = -ENOMEM;
			break;
		}
		if (slot_data_map(s, sl, data)) {
			free(data);
			data = NULL;
		}
		for (uint64_t p = 0; !ret && p < sl->npages;
		     p += MIG_DIGEST_CHUNK_PAGES) {
			uint64_t n = HV_MIN(sl->npages - p,
					    (uint64_t)MIG_DIGEST_CHUNK_PAGES);
			const uint64_t *want = s->table + sl->tidx + p;
			uint64_t zh = mig_zero_page_hash();

			ret = mig_hash_range(sl->host + (p << HV_PAGE_SHIFT), n,
					     NULL, data ? data + p / 64 : NULL,
					     now, 2);
			for (uint64_t k = 0; !ret && k < n; k++) {
				if (now[k] == (want[k] ^ zh))
					continue;
				if (!bad)
					first_bad = sl->tidx + p + k;
				bad++;
			}
		}
		free(data);
	}
	free(now);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.verify_pages = s->table_pages;
	s->prog.p.verify_mismatches = bad;
	s->prog.p.verify_ns = mig__now_ns() - t0;
	pthread_mutex_unlock(&s->prog.lock);
	hv_log(bad ? HV_LOG_ERR : HV_LOG_INFO, "mig",
	       "op=verify vm=%s pages=%llu mismatches=%llu first_bad_page=%lld "
	       "ms=%.1f",
	       hv_vm_name(s->vm), (unsigned long long)s->table_pages,
	       (unsigned long long)bad, bad ? (long long)first_bad : -1LL,
	       (double)(mig__now_ns() - t0) / 1e6);
	return 0;
}
