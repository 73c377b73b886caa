/* SPDX-License-Identifier: MIT */
/*
 * mig_send_pipe / mig_recv_pipe: the multi-channel page pipeline, what the
 * migration engine drives to move pages (docs/architecture.md).
 *
 * Sender: N data channels, one thread each. mig_send_pipe_run() hands the
 * threads a page source; each thread pulls a run (slot, gfn, 64-page mask)
 * from it, encodes it with its own mig_batch_enc (zero detection, zstd
 * with its own context, raw when that does not pay) and writes the frame
 * to its own channel with blocking I/O. The source callback is called
 * under the pipe's lock, one call at a time, so it needs no locking of its
 * own and may walk a dirty bitmap with plain state.
 *
 * Receiver: N threads, one per data channel, each reading batches and
 * decoding them straight into the memory map's memory (mig_batch_decode:
 * every field checked before anything is written), until the channel's
 * MSG_DATA_END. The control channel (not handled here) says in MSG_ITER_END
 * how many batches each channel carried; mig_recv_pipe_wait() blocks until
 * they have all been applied.
 *
 * Memory: per channel, one encoder buffer (256 KiB + 256) and zstd
 * contexts on the sender, with delta encoding another 256 KiB of staged
 * copies and the shared cache (delta.h: guest RAM / 64 at most 64 MiB by
 * default, resident only as it fills); one payload buffer and one scratch (256 KiB each) and a
 * zstd context on the receiver; plus the sockets' own buffers.
 *
 * Ownership: the pipes do not own the connections or the map; both must
 * outlive the pipe. While a pipe exists its threads own the connections'
 * I/O; the caller may use them only around mig_send_pipe_run() on the
 * sender (between runs the threads are idle), never on the receiver.
 */
#ifndef MIG_PIPELINE_H
#define MIG_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvcore/types.h"
#include "migrated/mig/batch.h"
#include "migrated/mig/conn.h"
#include "migrated/mig/memmap.h"

#define MIG_PIPE_MAX_CHANNELS 16u

/* Up to 64 pages of one slot: bit i of @mask is page @gfn + i. */
struct mig_page_run {
	uint32_t slot;
	gfn_t gfn;
	uint64_t mask;
	/* With a delta cache: the pages sent full may be cached (the source
	 * sets it for pages likely to be sent again, delta.h). */
	bool cache;
};

/*
 * Page source. Fill *@run and return 1, return 0 at the end, or a negative
 * errno to fail the run. Called with the pipe's lock held, from any of its
 * threads, one call at a time.
 */
typedef int (*mig_page_next_cb)(void *ctx, struct mig_page_run *run);

/* zstd levels counted per level in the stats: -7..22. */
#define MIG_PIPE_LEVEL_MIN (-7)
#define MIG_PIPE_LEVELS 30u

/* Totals since create, summed over channels. Any thread. */
struct mig_pipe_stats {
	uint64_t batches;
	uint64_t pages;	     /* pages carried */
	uint64_t zero;	     /* zero pages (one bit each) */
	uint64_t compressed; /* non-zero pages sent zstd-encoded */
	uint64_t raw;	     /* non-zero pages sent raw */
	uint64_t delta;	     /* of compressed + raw: sent as a delta */
	uint64_t payload;    /* payload bytes */
	uint64_t wire;	     /* frame bytes (before TLS) */
	uint64_t enc_ns;     /* channel threads' time encoding batches */
	uint64_t send_ns;    /* ... and writing them (TLS, blocked) */
	/* Non-zero pages sent compressed at zstd level MIN + i. */
	uint64_t level_pages[MIG_PIPE_LEVELS];
};

/* pages * 4 KiB / wire bytes; 0 when nothing was sent. */
double mig_pipe_stats_ratio(const struct mig_pipe_stats *s);

/*
 * What the channels compress with: zstd at a fixed @level, raw
 * (@encoding RAW), or, with @adaptive, a level each channel chooses by
 * itself every few batches from what it measures (migrated/mig/adapt.h;
 * @level is then ignored).
 */
struct mig_send_pipe_cfg {
	unsigned encoding; /* Mig__Encoding; 0 = ZSTD */
	int level;	   /* zstd level; 0 = 1 */
	bool adaptive;	   /* ZSTD only */
	/* Delta-encode re-sent pages against this cache (delta.h), shared
	 * by the channels, not owned; NULL: off. Only when the destination
	 * offered MIG_FEATURE_DELTA. */
	struct mig_delta_cache *delta;
	/* Hash every page as it is sent (by the channel thread that sends
	 * it, right after encoding its batch and before the send, read
	 * from guest memory while still in cache) into this table: one entry per page of the map,
	 * slots back to back in mig_memmap_at() order, stored as
	 * mig_page_hash() ^ mig_zero_page_hash() (0: a zero page), as
	 * mig_hash_range_rel() would. The caller's, not owned; it must
	 * outlive the pipe, and be read only after mig_send_pipe_run()
	 * returned (which orders the channels' writes before it). NULL:
	 * off. A page that changes after it was read is dirty again and
	 * is sent, and hashed, again. */
	uint64_t *table;
};

/*
 * "zstd -1:12% 1:80% 3:8%": each level's share of the compressed pages,
 * into @buf (NUL-terminated, truncated to @len). "" when none.
 */
void mig_pipe_stats_levels(const struct mig_pipe_stats *s, char *buf,
			   size_t len);

struct mig_send_pipe;

/*
 * Start @n (1..MIG_PIPE_MAX_CHANNELS) idle sender threads over @conns.
 * Returns 0, -EINVAL, -ENOMEM or -errno of pthread_create.
 */
int mig_send_pipe_create(struct mig_conn *const *conns, unsigned n,
			 const struct mig_memmap *map,
			 const struct mig_send_pipe_cfg *cfg,
			 struct mig_send_pipe **out);

/*
 * Send every run @next yields, spread over the channels; return when the
 * source is exhausted and every batch has been written (or on the first
 * error, after the other threads stopped). @channel_batches (n entries, may
 * be NULL) gets each channel's cumulative batch count, for MSG_ITER_END.
 * Returns 0, the source's error, or the first channel error. Caller
 * thread: one run at a time.
 */
int mig_send_pipe_run(struct mig_send_pipe *p, mig_page_next_cb next,
		      void *ctx, uint64_t *channel_batches);

/*
 * End the stream: send MSG_DATA_END on every channel. Call after the last
 * run. Returns 0 or the first error.
 */
int mig_send_pipe_finish(struct mig_send_pipe *p);

void mig_send_pipe_stats(const struct mig_send_pipe *p,
			 struct mig_pipe_stats *out);

/* Stop and join the threads. The connections are left open. NULL ok. */
void mig_send_pipe_destroy(struct mig_send_pipe *p);

struct mig_recv_pipe;

/* Start @n receiver threads over @conns, writing into @map's memory. */
int mig_recv_pipe_create(struct mig_conn *const *conns, unsigned n,
			 const struct mig_memmap *map,
			 struct mig_recv_pipe **out);
/*
 * The same, and after each batch is decoded the pages it wrote are read
 * back and hashed into @table (one entry per page of @map, slots back to
 * back in mig_memmap_at() order, as mig_digest_table() wants), stored as
 * mig_page_hash() ^ mig_zero_page_hash() so that an entry left 0 (a page
 * never received: zeros) needs no write and a lazily-zeroed table costs
 * no memory for it. @table stays the caller's and must outlive the pipe;
 * read it only after mig_recv_pipe_join() (or a wait that covers every
 * batch), which orders the channels' writes before the read.
 */
int mig_recv_pipe_create_hashed(struct mig_conn *const *conns, unsigned n,
				const struct mig_memmap *map, uint64_t *table,
				struct mig_recv_pipe **out);

/*
 * Postcopy (dest_postcopy.c): from now on every batch of channel i is
 * checked against and decoded into @maps[i] (the layout over channel i's
 * own bounce buffer, not guest memory, which a missing page would make
 * wait on itself), then handed to @install with that map, which puts
 * its pages in place and hashes them (the pipe's own hashing is
 * skipped). 0 or a negative errno, which fails the channel. Call only
 * while no batch is in flight (after an IterAck); the maps and @arg must
 * outlive the pipe. Engine thread.
 */
typedef int (*mig_recv_install_cb)(void *arg, const struct mig_memmap *map,
				   const Mig__PageBatch *b);
void mig_recv_pipe_set_install(struct mig_recv_pipe *p,
			       struct mig_memmap *const *maps,
			       mig_recv_install_cb install, void *arg);

/* How far ahead of the furthest page written the prefault helper may
 * populate (64 MiB). */
#define MIG_RECV_PREFAULT_AHEAD_PAGES (64ull << (20 - HV_PAGE_SHIFT))

/*
 * Start a helper thread that populates @p's memory (MADV_POPULATE_WRITE,
 * a huge page at a time, in table order) a bounded distance ahead of the
 * furthest page the channels wrote, so that they do not take the
 * first-touch faults themselves (pipe_recv.c says what it bounds and
 * why). Precopy only: stop it before anything relies on pages being
 * missing (postcopy's userfaultfd). 0 or a negative errno (no helper:
 * the channels fault pages in as before). Engine thread.
 */
int mig_recv_pipe_prefault_start(struct mig_recv_pipe *p);

/* Stop and join the prefault helper, if it runs; it populates nothing
 * after this returns. NULL ok. Engine thread; mig_recv_pipe_destroy()
 * calls it. */
void mig_recv_pipe_prefault_stop(struct mig_recv_pipe *p);

/*
 * Wait until channel i has applied @channel_batches[i] batches, for every
 * i, or no batch was applied for @timeout_ms (0: no limit): a long pass
 * that keeps making progress never times out. Returns 0, -ETIMEDOUT or the
 * first error of any channel (-EPROTO if a channel ended before the
 * count).
 */
int mig_recv_pipe_wait(struct mig_recv_pipe *p,
		       const uint64_t *channel_batches, unsigned timeout_ms);

/*
 * Wait until every channel received MSG_DATA_END (its count must match
 * what it applied) or failed. Returns 0 or the first error.
 */
int mig_recv_pipe_join(struct mig_recv_pipe *p);

void mig_recv_pipe_stats(const struct mig_recv_pipe *p,
			 struct mig_pipe_stats *out);

/*
 * Stop the threads: channels still running are shut down
 * (mig_conn_shutdown(), they are unusable afterwards), then joined.
 * NULL ok.
 */
void mig_recv_pipe_destroy(struct mig_recv_pipe *p);

#endif
