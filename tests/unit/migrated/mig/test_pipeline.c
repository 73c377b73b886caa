// SPDX-License-Identifier: MIT
/*
 * The multi-channel page pipeline over real loopback channels
 * (migrated/mig/pipe_send.c, pipe_recv.c).
 */
#include "tests/harness/hv_test.h"
#include "hvcore/workload.h"
#include "migrated/mig/devca.h"
#include "migrated/mig/delta.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NCHAN 2u
#define SLOT_PAGES 8192u /* 2 slots: 64 MiB */

static char dir[64];
static struct mig_devca ca;

static int suite_init(void)
{
	signal(SIGPIPE, SIG_IGN);
	strcpy(dir, "/tmp/mig-pipe-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	return mig_devca_ensure(dir, &ca) ? 1 : 0;
}

static int suite_clean(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf -- %s", dir);
	return system(cmd) ? 1 : 0;
}

struct chans {
	struct mig_conn *src[NCHAN], *dst[NCHAN];
	struct mig_tls *stls, *ctls;
	int lfd;
	int accept_ret;
};

static void *acceptor(void *arg)
{
	struct chans *c = arg;

	for (unsigned i = 0; i < NCHAN && !c->accept_ret; i++)
		c->accept_ret = mig_conn_accept(c->lfd, c->stls, 10000,
						&c->dst[i]);
	return NULL;
}

static void chans_open(struct chans *c, bool tls)
{
	struct mig_tls_cfg scfg = { ca.ca_cert, ca.host_cert, ca.host_key,
				    true, NULL };
	struct mig_tls_cfg ccfg = { ca.ca_cert, ca.host_cert, ca.host_key,
				    false, "127.0.0.1" };
	pthread_t t;
	uint16_t port;

	memset(c, 0, sizeof(*c));
	if (tls) {
		CU_ASSERT_EQUAL_FATAL(mig_tls_create(&scfg, &c->stls), 0);
		CU_ASSERT_EQUAL_FATAL(mig_tls_create(&ccfg, &c->ctls), 0);
	}
	CU_ASSERT_EQUAL_FATAL(mig_listen("127.0.0.1", 0, &c->lfd, &port), 0);
	pthread_create(&t, NULL, acceptor, c);
	for (unsigned i = 0; i < NCHAN; i++)
		CU_ASSERT_EQUAL_FATAL(mig_conn_connect("127.0.0.1", port,
						       c->ctls, 10000,
						       &c->src[i]),
				      0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL_FATAL(c->accept_ret, 0);
}

static void chans_close(struct chans *c)
{
	for (unsigned i = 0; i < NCHAN; i++) {
		mig_conn_destroy(c->src[i]);
		mig_conn_destroy(c->dst[i]);
	}
	close(c->lfd);
	mig_tls_destroy(c->stls);
	mig_tls_destroy(c->ctls);
}

struct mem {
	uint8_t *p[2];
	struct mig_memmap *map;
};

static void mem_init(struct mem *m)
{
	struct mig_memmap_slot s[2];

	for (unsigned i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(posix_memalign((void **)&m->p[i], 4096,
						     SLOT_PAGES * 4096ULL),
				      0);
		memset(m->p[i], 0, SLOT_PAGES * 4096ULL);
	}
	s[0] = (struct mig_memmap_slot){ 0, 0, SLOT_PAGES, m->p[0] };
	s[1] = (struct mig_memmap_slot){ 3, 0x100000, SLOT_PAGES, m->p[1] };
	CU_ASSERT_EQUAL_FATAL(mig_memmap_create(s, 2, &m->map), 0);
}

static void mem_fini(struct mem *m)
{
	mig_memmap_destroy(m->map);
	free(m->p[0]);
	free(m->p[1]);
}

/* Content by 64-page windows: zero, stamp, text, random; the text
 * windows hold a few zero pages too. */
static void fill(struct mem *m, uint64_t seq)
{
	for (unsigned s = 0; s < 2; s++)
		for (unsigned i = 0; i < SLOT_PAGES; i++) {
			uint8_t *p = m->p[s] + i * 4096ULL;
			unsigned kind = (i / 64 + s + (unsigned)seq) % 4;

			memset(p, 0, 4096);
			if (kind && !(kind == 2 && i % 16 == 5))
				hv_wl_fill_page(p, (uint16_t)s, seq * 100000 + i,
						kind);
		}
}

/* Source: every 64-page window of both slots, some masks sparse. */
struct walk {
	unsigned slot, win;
	uint64_t sparse_mask;
	bool cache; /* pages may enter the delta cache */
};

static int walk_next(void *ctx, struct mig_page_run *run)
{
	struct walk *w = ctx;

	if (w->win == SLOT_PAGES / 64) {
		w->win = 0;
		w->slot++;
	}
	if (w->slot == 2)
		return 0;
	run->slot = w->slot ? 3 : 0;
	run->gfn = (w->slot ? 0x100000 : 0) + w->win * 64ULL;
	run->mask = w->win % 5 == 4 ? w->sparse_mask : ~0ULL;
	run->cache = w->cache;
	w->win++;
	return 1;
}

static void test_64mib_mixed_pages_arrive_intact_over_2_tls_channels(void)
{
	struct mig_send_pipe *sp;
	struct mig_recv_pipe *rp;
	struct mig_pipe_stats ss, rs;
	uint64_t counts[NCHAN];
	struct mem src, dst;
	struct chans c;
	struct walk w;

	mem_init(&src);
	mem_init(&dst);
	chans_open(&c, true);
	CU_ASSERT_EQUAL_FATAL(mig_send_pipe_create(c.src, NCHAN, src.map,
						   NULL, &sp),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create(c.dst, NCHAN, dst.map,
						   &rp),
			      0);

	/* Iteration 0: everything (sparse windows are completed below). */
	fill(&src, 1);
	w = (struct walk){ .sparse_mask = ~0ULL };
	CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 30000), 0);
	CU_ASSERT(!memcmp(src.p[0], dst.p[0], SLOT_PAGES * 4096ULL));
	CU_ASSERT(!memcmp(src.p[1], dst.p[1], SLOT_PAGES * 4096ULL));

	/* Iteration 1: every page changes kind; zero pages overwrite. */
	fill(&src, 2);
	w = (struct walk){ .sparse_mask = 0x8000ff00f0f00001ULL };
	CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 30000), 0);
	/* Final pass: the rest of the sparse windows (others resent). */
	w = (struct walk){ .sparse_mask = ~0x8000ff00f0f00001ULL };
	CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts), 0);
	CU_ASSERT_EQUAL(mig_send_pipe_finish(sp), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_join(rp), 0);
	CU_ASSERT(!memcmp(src.p[0], dst.p[0], SLOT_PAGES * 4096ULL));
	CU_ASSERT(!memcmp(src.p[1], dst.p[1], SLOT_PAGES * 4096ULL));

	mig_send_pipe_stats(sp, &ss);
	mig_recv_pipe_stats(rp, &rs);
	CU_ASSERT_EQUAL(ss.pages, rs.pages);
	CU_ASSERT_EQUAL(ss.zero, rs.zero);
	CU_ASSERT_EQUAL(ss.compressed, rs.compressed);
	CU_ASSERT_EQUAL(ss.wire, rs.wire);
	CU_ASSERT_EQUAL(ss.batches, rs.batches);
	CU_ASSERT(ss.zero > 0 && ss.compressed > 0 && ss.raw > 0);
	CU_ASSERT(ss.pages == ss.zero + ss.compressed + ss.raw);
	CU_ASSERT(mig_pipe_stats_ratio(&ss) > 1.5);
	/* Both channels carried work. */
	CU_ASSERT(counts[0] > 0 && counts[1] > 0);

	mig_recv_pipe_destroy(rp);
	mig_send_pipe_destroy(sp);
	chans_close(&c);
	mem_fini(&src);
	mem_fini(&dst);
}

static void fill_kind(struct mem *m, uint32_t kind, uint64_t seq)
{
	for (unsigned s = 0; s < 2; s++)
		for (unsigned i = 0; i < SLOT_PAGES; i++)
			hv_wl_fill_page(m->p[s] + i * 4096ULL, (uint16_t)s,
					seq + i, kind);
}

/*
 * The adaptive choice only picks how pages travel: random pages go raw
 * (zstd is not even tried on most of them), text pages compressed at
 * the levels it chose, and every page arrives intact either way.
 */
static void test_adaptive_sends_random_raw_and_text_compressed(void)
{
	struct mig_send_pipe_cfg cfg = { .adaptive = true };
	struct mig_send_pipe *sp;
	struct mig_recv_pipe *rp;
	struct mig_pipe_stats a, b;
	uint64_t counts[NCHAN], lv = 0;
	struct mem src, dst;
	struct chans c;
	struct walk w;
	char levels[96];

	mem_init(&src);
	mem_init(&dst);
	chans_open(&c, true);
	CU_ASSERT_EQUAL_FATAL(mig_send_pipe_create(c.src, NCHAN, src.map,
						   &cfg, &sp),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create(c.dst, NCHAN, dst.map,
						   &rp),
			      0);
	fill_kind(&src, HV_WL_CONTENT_RANDOM, 1);
	w = (struct walk){ .sparse_mask = ~0ULL };
	CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 30000), 0);
	mig_send_pipe_stats(sp, &a);
	CU_ASSERT_EQUAL(a.raw, a.pages);
	CU_ASSERT_EQUAL(a.compressed, 0);

	/* Two passes of text: the raw stretch in force when text begins
	 * (at most MIG_ADAPT_RAW_MAX batches) ends within the first. */
	for (unsigned pass = 0; pass < 2; pass++) {
		fill_kind(&src, HV_WL_CONTENT_TEXT, 100000 * (pass + 1));
		w = (struct walk){ .sparse_mask = ~0ULL };
		CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts),
				0);
	}
	CU_ASSERT_EQUAL(mig_send_pipe_finish(sp), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_join(rp), 0);
	CU_ASSERT(!memcmp(src.p[0], dst.p[0], SLOT_PAGES * 4096ULL));
	CU_ASSERT(!memcmp(src.p[1], dst.p[1], SLOT_PAGES * 4096ULL));
	mig_send_pipe_stats(sp, &b);
	/* A raw stretch ends with a probe: text batches may go raw until
	 * then, never most of them. */
	CU_ASSERT(b.compressed > (b.pages - a.pages) / 2);
	for (unsigned i = 0; i < MIG_PIPE_LEVELS; i++)
		lv += b.level_pages[i];
	CU_ASSERT_EQUAL(lv, b.compressed);
	mig_pipe_stats_levels(&b, levels, sizeof(levels));
	CU_ASSERT(!strncmp(levels, "zstd ", 5));
	CU_ASSERT(b.enc_ns > 0 && b.send_ns > 0);

	mig_recv_pipe_destroy(rp);
	mig_send_pipe_destroy(sp);
	chans_close(&c);
	mem_fini(&src);
	mem_fini(&dst);
}

/*
 * Three passes over 2 TLS channels with a delta cache: the first full,
 * the second caches what it sends, the third sends small edits as deltas
 * (pages may travel on either channel; passes are ordered as the engine
 * orders them, by waiting for each to be applied). Every pass lands
 * intact.
 */
static void test_resent_pages_travel_as_deltas_intact(void)
{
	struct mig_delta_cache *cache;
	struct mig_send_pipe_cfg cfg = { .adaptive = true };
	struct mig_send_pipe *sp;
	struct mig_recv_pipe *rp;
	struct mig_pipe_stats st;
	uint64_t counts[NCHAN];
	struct mem src, dst;
	struct chans c;
	struct walk w;

	mem_init(&src);
	mem_init(&dst);
	chans_open(&c, true);
	CU_ASSERT_EQUAL_FATAL(mig_delta_cache_create(64 << 20,
						     2 * SLOT_PAGES, &cache),
			      0);
	cfg.delta = cache;
	CU_ASSERT_EQUAL_FATAL(mig_send_pipe_create(c.src, NCHAN, src.map,
						   &cfg, &sp),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create(c.dst, NCHAN, dst.map,
						   &rp),
			      0);
	fill(&src, 1);
	for (unsigned pass = 0; pass < 3; pass++) {
		if (pass == 2)
			for (unsigned s = 0; s < 2; s++)
				for (unsigned i = 0; i < SLOT_PAGES; i += 3)
					src.p[s][i * 4096ULL + 100] ^= 0x5a;
		w = (struct walk){ .sparse_mask = ~0ULL, .cache = pass > 0 };
		CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts),
				0);
		CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 30000), 0);
		CU_ASSERT(!memcmp(src.p[0], dst.p[0], SLOT_PAGES * 4096ULL));
		CU_ASSERT(!memcmp(src.p[1], dst.p[1], SLOT_PAGES * 4096ULL));
		mig_send_pipe_stats(sp, &st);
		if (pass < 2)
			CU_ASSERT_EQUAL(st.delta, 0);
	}
	/* Every non-zero page of the third pass had a cached copy. */
	CU_ASSERT(st.delta > 0);
	CU_ASSERT_EQUAL(mig_send_pipe_finish(sp), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_join(rp), 0);
	mig_recv_pipe_destroy(rp);
	mig_send_pipe_destroy(sp);
	mig_delta_cache_destroy(cache);
	chans_close(&c);
	mem_fini(&src);
	mem_fini(&dst);
}

static void test_bad_batch_on_the_wire_fails_the_receiver(void)
{
	Mig__PageBatch b = MIG__PAGE_BATCH__INIT;
	struct mig_recv_pipe *rp;
	uint64_t counts[NCHAN] = { 1, 0 };
	struct mem dst;
	struct chans c;

	mem_init(&dst);
	chans_open(&c, false);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create(c.dst, NCHAN, dst.map,
						   &rp),
			      0);
	/* A zero-page batch beyond slot 0's end. */
	b.slot = 0;
	b.first_gfn = SLOT_PAGES;
	b.npages = 1;
	b.page_mask = 1;
	b.zero_mask = 1;
	b.encoding = MIG__ENCODING__ENCODING_RAW;
	CU_ASSERT_EQUAL(mig_conn_send(c.src[0], MIG__MSG_TYPE__MSG_PAGE_BATCH,
				      &b.base, NULL, 0),
			0);
	CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 10000), -ERANGE);
	/* A control message on a data channel. */
	{
		Mig__Commit commit = MIG__COMMIT__INIT;

		CU_ASSERT_EQUAL(mig_conn_send(c.src[1],
					      MIG__MSG_TYPE__MSG_COMMIT,
					      &commit.base, NULL, 0),
				0);
	}
	CU_ASSERT_EQUAL(mig_recv_pipe_join(rp), -ERANGE);
	CU_ASSERT_NOT_EQUAL(mig_conn_error(c.dst[1]), 0);
	mig_recv_pipe_destroy(rp);
	chans_close(&c);
	mem_fini(&dst);
}

static int fail_source(void *ctx, struct mig_page_run *run)
{
	return -ENOSPC;
}

static void test_source_error_ends_the_run_and_cancel_wakes_receivers(void)
{
	struct mig_send_pipe *sp;
	struct mig_recv_pipe *rp;
	struct mem src;
	struct chans c;

	mem_init(&src);
	chans_open(&c, false);
	CU_ASSERT_EQUAL_FATAL(mig_send_pipe_create(c.src, NCHAN, src.map,
						   NULL, &sp),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create(c.dst, NCHAN, src.map,
						   &rp),
			      0);
	CU_ASSERT_EQUAL(mig_send_pipe_run(sp, fail_source, NULL, NULL),
			-ENOSPC);
	/* Destroying a receiver mid-stream must not hang. */
	mig_recv_pipe_destroy(rp);
	CU_ASSERT_EQUAL(mig_conn_error(c.dst[0]), -ECANCELED);
	mig_send_pipe_destroy(sp);
	chans_close(&c);
	mem_fini(&src);
}

/* The source's slot 0 only (32 MiB at gfn 0, the start of a 48 MiB
 * slot 0 on the destination). */
static int walk_next_slot0(void *ctx, struct mig_page_run *run)
{
	struct walk *w = ctx;

	return w->win == SLOT_PAGES / 64 ? 0 : walk_next(ctx, run);
}

/* Resident 4 KiB pages of @len bytes at @p. */
static uint64_t resident(uint8_t *p, uint64_t len)
{
	static unsigned char vec[(96u << 20) / 4096];
	uint64_t n = 0;

	CU_ASSERT_FATAL(len / 4096 <= sizeof(vec));
	CU_ASSERT_EQUAL_FATAL(mincore(p, len, vec), 0);
	for (uint64_t i = 0; i < len / 4096; i++)
		n += vec[i] & 1;
	return n;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * The prefault helper populates fresh memory only up to its distance
 * ahead of the stream (the source sends only written pages: a sparse
 * guest must not become fully resident), and once stopped it populates
 * nothing more (postcopy drops the missing pages and registers
 * userfaultfd right after stopping it: a page populated then would read
 * as zeros instead of faulting). Pages written while it runs arrive
 * intact.
 */
static void test_prefault_stays_ahead_of_the_stream_and_stops(void)
{
	const uint64_t slot = 48ull << 20; /* 2 x 48 MiB > the window */
	const uint64_t ahead = MIG_RECV_PREFAULT_AHEAD_PAGES;
	struct mig_memmap_slot s[2];
	struct mig_send_pipe *sp;
	struct mig_recv_pipe *rp;
	struct mig_memmap *map;
	uint64_t counts[NCHAN], n = 0;
	struct mem src;
	struct chans c;
	struct walk w;
	uint8_t *m;

	m = mmap(NULL, 2 * slot, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CU_ASSERT_FATAL(m != MAP_FAILED);
	s[0] = (struct mig_memmap_slot){ 0, 0, slot / 4096, m };
	s[1] = (struct mig_memmap_slot){ 3, 0x100000, slot / 4096, m + slot };
	CU_ASSERT_EQUAL_FATAL(mig_memmap_create(s, 2, &map), 0);
	CU_ASSERT_FATAL(ahead * 4096 < 2 * slot);
	chans_open(&c, false);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create(c.dst, NCHAN, map, &rp),
			      0);

	/* Nothing sent yet: the window from the start, and no further. */
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_prefault_start(rp), 0);
	for (unsigned i = 0; i < 1000 && n < ahead; i++) {
		sleep_ms(10);
		n = resident(m, 2 * slot);
	}
	if (n < ahead) { /* Linux < 5.14: no MADV_POPULATE_WRITE */
		CU_ASSERT_EQUAL(n, 0);
	} else {
		sleep_ms(100);
		CU_ASSERT_EQUAL(resident(m, 2 * slot), ahead);
		CU_ASSERT_EQUAL(resident(m + ahead * 4096,
					 2 * slot - ahead * 4096),
				0);
	}

	/* The stream's first 32 MiB, written while the helper runs. */
	mem_init(&src);
	fill(&src, 1);
	CU_ASSERT_EQUAL_FATAL(mig_send_pipe_create(c.src, NCHAN, src.map,
						   NULL, &sp),
			      0);
	w = (struct walk){ .sparse_mask = ~0ULL };
	CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next_slot0, &w, counts),
			0);
	CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 30000), 0);
	CU_ASSERT(!memcmp(src.p[0], m, SLOT_PAGES * 4096ULL));

	/* Stopped: drop everything; nothing comes back. */
	mig_recv_pipe_prefault_stop(rp);
	CU_ASSERT_EQUAL(madvise(m, 2 * slot, MADV_DONTNEED), 0);
	sleep_ms(200);
	CU_ASSERT_EQUAL(resident(m, 2 * slot), 0);

	CU_ASSERT_EQUAL(mig_send_pipe_finish(sp), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_join(rp), 0);
	mig_recv_pipe_destroy(rp);
	mig_send_pipe_destroy(sp);
	chans_close(&c);
	mem_fini(&src);
	mig_memmap_destroy(map);
	munmap(m, 2 * slot);
}

/*
 * With a table, the sender's channels hash every page they send, and
 * only those: entries of pages a pass did not send keep what they held
 * (a sentinel here), sent pages get mig_page_hash() ^ the zero-page
 * hash (0 for a zero page), which is what the receiver's decode-time
 * hashing stores for the same pages, so the two digests agree. A second
 * pass re-hashes the pages it re-sends.
 */
static void test_sender_hashes_each_page_it_sends(void)
{
	const uint64_t sentinel = 0x5a5a5a5a5a5a5a5aULL;
	const uint64_t sparse = 0x00ff00ff00ff00f1ULL;
	const uint64_t n = 2ULL * SLOT_PAGES, zh = mig_zero_page_hash();
	struct mig_send_pipe_cfg cfg = { 0 };
	uint64_t *stab = malloc(n * 8), *dtab = calloc(n, 8);
	struct mig_send_pipe *sp;
	struct mig_recv_pipe *rp;
	uint64_t counts[NCHAN], bad = 0, zeros = 0;
	struct mem src, dst;
	struct chans c;
	struct walk w;

	CU_ASSERT_FATAL(stab && dtab);
	for (uint64_t i = 0; i < n; i++)
		stab[i] = sentinel;
	mem_init(&src);
	mem_init(&dst);
	chans_open(&c, false);
	cfg.table = stab;
	CU_ASSERT_EQUAL_FATAL(mig_send_pipe_create(c.src, NCHAN, src.map,
						   &cfg, &sp),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_recv_pipe_create_hashed(c.dst, NCHAN,
							  dst.map, dtab, &rp),
			      0);

	for (uint64_t seq = 1; seq <= 2; seq++) {
		fill(&src, seq);
		w = (struct walk){ .sparse_mask = sparse };
		CU_ASSERT_EQUAL(mig_send_pipe_run(sp, walk_next, &w, counts),
				0);
		CU_ASSERT_EQUAL(mig_recv_pipe_wait(rp, counts, 30000), 0);
		for (uint64_t i = 0; i < n; i++) {
			unsigned sl = (unsigned)(i / SLOT_PAGES);
			uint64_t pg = i % SLOT_PAGES;
			const uint8_t *p = src.p[sl] + pg * 4096ULL;
			bool sent = pg / 64 % 5 != 4 ||
				    (sparse >> (pg % 64) & 1);

			if (!sent) {
				bad += stab[i] != sentinel;
				continue;
			}
			zeros += stab[i] == 0;
			bad += stab[i] != (mig_page_hash(p) ^ zh);
			bad += stab[i] != dtab[i];
		}
		CU_ASSERT_EQUAL(bad, 0);
	}
	/* fill() leaves zero pages: their entries are 0, as documented. */
	CU_ASSERT(zeros > 0);

	CU_ASSERT_EQUAL(mig_send_pipe_finish(sp), 0);
	CU_ASSERT_EQUAL(mig_recv_pipe_join(rp), 0);
	mig_recv_pipe_destroy(rp);
	mig_send_pipe_destroy(sp);
	chans_close(&c);
	mem_fini(&src);
	mem_fini(&dst);
	free(stab);
	free(dtab);
}

static CU_TestInfo tests[] = {
	{ "sender_hashes_each_page_it_sends",
	  test_sender_hashes_each_page_it_sends },
	{ "resent_pages_travel_as_deltas_intact",
	  test_resent_pages_travel_as_deltas_intact },
	{ "adaptive_sends_random_raw_and_text_compressed",
	  test_adaptive_sends_random_raw_and_text_compressed },
	{ "64mib_mixed_pages_arrive_intact_over_2_tls_channels",
	  test_64mib_mixed_pages_arrive_intact_over_2_tls_channels },
	{ "prefault_stays_ahead_of_the_stream_and_stops",
	  test_prefault_stays_ahead_of_the_stream_and_stops },
	{ "bad_batch_on_the_wire_fails_the_receiver",
	  test_bad_batch_on_the_wire_fails_the_receiver },
	{ "source_error_ends_the_run_and_cancel_wakes_receivers",
	  test_source_error_ends_the_run_and_cancel_wakes_receivers },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/pipeline", suite_init, suite_clean, tests);
