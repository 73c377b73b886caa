// SPDX-License-Identifier: MIT
#include "migrated/mig/postcopy_sched.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct mig_pc_sched {
	/* immutable after create */
	uint64_t npages;
	uint64_t nwords;

	/* protected by lock */
	pthread_mutex_t lock;
	uint64_t *pending; /* one bit per page: not yet handed out */
	uint64_t *queued;  /* one bit per page: in the request queue */
	uint64_t queue[MIG_PC_SCHED_QUEUE];
	unsigned qhead, qlen;
	uint64_t cursor; /* next page the push looks at */
	struct mig_pc_sched_stats st;
};

static bool bit_test(const uint64_t *b, uint64_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}

static void bit_clear(uint64_t *b, uint64_t i)
{
	b[i >> 6] &= ~(1ull << (i & 63));
}

int mig_pc_sched_create(uint64_t npages, struct mig_pc_sched **out)
{
	struct mig_pc_sched *s;
	uint64_t nwords = (npages + 63) / 64;

	if (!npages || nwords > SIZE_MAX / 8)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pending = calloc(nwords, 8);
	s->queued = calloc(nwords, 8);
	if (!s->pending || !s->queued) {
		free(s->queued);
		free(s->pending);
		free(s);
		return -ENOMEM;
	}
	s->npages = npages;
	s->nwords = nwords;
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

void mig_pc_sched_destroy(struct mig_pc_sched *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->queued);
	free(s->pending);
	free(s);
}

int mig_pc_sched_mark(struct mig_pc_sched *s, uint64_t first,
		      const uint64_t *bits, uint64_t npages)
{
	uint64_t added = 0;

	if (first > s->npages || npages > s->npages - first)
		return -ERANGE;
	pthread_mutex_lock(&s->lock);
	for (uint64_t i = 0; i < npages; i++) {
		uint64_t pg = first + i;

		if (!bit_test(bits, i) || bit_test(s->pending, pg))
			continue;
		s->pending[pg >> 6] |= 1ull << (pg & 63);
		added++;
	}
	s->st.pending += added;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void mig_pc_sched_reset(struct mig_pc_sched *s)
{
	pthread_mutex_lock(&s->lock);
	for (uint64_t i = 0; i < s->nwords; i++) {
		s->pending[i] = 0;
		s->queued[i] = 0;
	}
	s->qhead = 0;
	s->qlen = 0;
	s->st.pending = 0;
	pthread_mutex_unlock(&s->lock);
}

int mig_pc_sched_request(struct mig_pc_sched *s, uint64_t idx)
{
	int ret = 1;

	if (idx >= s->npages)
		return -ERANGE;
	pthread_mutex_lock(&s->lock);
	if (!bit_test(s->pending, idx)) {
		s->st.late_requests++;
		ret = -EALREADY;
	} else if (bit_test(s->queued, idx)) {
		ret = 0;
	} else if (s->qlen == MIG_PC_SCHED_QUEUE) {
		ret = -ENOBUFS;
	} else {
		s->queue[(s->qhead + s->qlen++) % MIG_PC_SCHED_QUEUE] = idx;
		s->queued[idx >> 6] |= 1ull << (idx & 63);
		/* Locality: the guest that faulted here usually reads on. */
		s->cursor = idx + 1 < s->npages ? idx + 1 : 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Hand @idx out (lock held): it is no longer pending. */
static void take(struct mig_pc_sched *s, uint64_t idx)
{
	bit_clear(s->pending, idx);
	s->st.pending--;
}

size_t mig_pc_sched_next_urgent(struct mig_pc_sched *s, uint64_t *out,
				size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	while (n < max && s->qlen) {
		uint64_t idx = s->queue[s->qhead];

		s->qhead = (s->qhead + 1) % MIG_PC_SCHED_QUEUE;
		s->qlen--;
		bit_clear(s->queued, idx);
		/* The push may have taken it since it was queued. */
		if (!bit_test(s->pending, idx))
			continue;
		take(s, idx);
		s->st.requested++;
		out[n++] = idx;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* First pending page in [@from, npages), or npages (lock held). */
static uint64_t next_pending(const struct mig_pc_sched *s, uint64_t from)
{
	while (from < s->npages) {
		uint64_t w = s->pending[from >> 6] & (~0ull << (from & 63));

		if (w)
			return (from & ~63ull) + __builtin_ctzll(w);
		from = (from | 63) + 1;
	}
	return s->npages;
}

size_t mig_pc_sched_next_push(struct mig_pc_sched *s, uint64_t *out,
			      size_t max)
{
	uint64_t pg;
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	if (!s->st.pending || !max)
		goto out;
	pg = next_pending(s, s->cursor);
	if (pg == s->npages)
		pg = next_pending(s, 0);
	while (n < max && pg < s->npages) {
		take(s, pg);
		s->st.pushed++;
		out[n++] = pg;
		pg = next_pending(s, pg + 1);
	}
	s->cursor = pg < s->npages ? pg : 0;
out:
	pthread_mutex_unlock(&s->lock);
	return n;
}

void mig_pc_sched_get_stats(struct mig_pc_sched *s,
			    struct mig_pc_sched_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}
