// SPDX-License-Identifier: MIT
/*
 * mig_dest, postcopy recovery (dest_priv.h, docs/architecture.md
 * "Postcopy recovery").
 *
 * After the postcopy switch the VM runs here with part of its memory;
 * the rest is only in the source's frozen copy. A broken channel must
 * not lose either: the engine drops the channels and the receive pipe
 * and keeps everything else (the installer and its fault thread, which
 * goes on queueing the requests of faulting vCPUs; the page-hash table;
 * the VM, whose vCPUs that touch a missing page wait). Phase
 * POSTCOPY_PAUSED. It listens again on the same address for the same
 * session only (the source's 16-byte session id from the first Hello,
 * TLS as before); when the source reconnects it sends what it still
 * lacks (PostcopyUnsent per slot: the pages not installed), a
 * PostcopyResume, and a PageRequest for every page a fault waits on,
 * then serves as before. A page that arrives twice (in flight before the
 * break, sent again after) is installed once, the copy dropped and
 * counted (mig_pc_uffd_stats.duplicates).
 *
 * The VM is never handed to its owner before every page is in: a source
 * that never comes back (its process died) leaves it paused here, its
 * owner not listing it, until a cancel destroys it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/dest_priv.h"
#include "migrated/mig/listener.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/pipeline.h"
#include "migrated/mig/postcopy_map.h"
#include "migrated/mig/postcopy_recover.h"
#include "migrated/mig/postcopy_uffd.h"

/* Drop the receive pipe and every channel (the watcher first). */
static void drop_channels(struct mig_dest *d)
{
	mig__dst_watch_stop(d);
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; i < MIG_CHANNELS_MAX; i++)
		if (d->data[i])
			mig_conn_shutdown(d->data[i]);
	pthread_mutex_unlock(&d->lock);
	mig_recv_pipe_destroy(d->pipe);
	d->pipe = NULL;
	pthread_mutex_lock(&d->lock);
	mig_conn_destroy(d->ctl);
	d->ctl = NULL;
	for (unsigned i = 0; i < MIG_CHANNELS_MAX; i++) {
		mig_conn_destroy(d->data[i]);
		d->data[i] = NULL;
	}
	pthread_mutex_unlock(&d->lock);
	atomic_store(&d->pipe_err, 0);
}

/* Our missing set, slot by slot, then PostcopyResume, then a request for
 * every page a fault waits on. */
static int send_missing(struct mig_dest *d)
{
	Mig__PostcopyResume r = MIG__POSTCOPY_RESUME__INIT;
	uint64_t waiting[MIG_PC_REQ_MAX * 4], bytes = 0, total = 0;
	size_t nw;
	int ret = 0;

	for (unsigned i = 0; !ret && i < mig_memmap_count(d->map); i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(d->map, i);
		uint64_t first = (uint64_t)(sl->host - d->pc_hva) >>
				 HV_PAGE_SHIFT;
		uint64_t *bits = calloc(HV_MAX(HV_DIV_ROUND_UP(sl->npages, 64),
					       1),
					8);

		if (!bits)
			return -ENOMEM;
		for (uint64_t p = 0; p < sl->npages; p++)
			if (!mig_pc_uffd_installed(d->pc_uffd, first + p)) {
				bits[p >> 6] |= 1ull << (p & 63);
				total++;
			}
		ret = mig_pc_unsent_send(d->ctl, sl->id, bits, sl->npages,
					 &bytes);
		free(bits);
	}
	if (ret)
		return ret;
	nw = mig_pc_uffd_waiting(d->pc_uffd, waiting, HV_ARRAY_SIZE(waiting));
	r.missing_pages = total;
	r.outstanding = nw;
	r.recoveries = d->pc_recoveries + 1;
	ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_POSTCOPY_RESUME,
			    &r.base, NULL, 0);
	bytes += mig_frame_size(&r.base);
	for (size_t i = 0; i < nw; i++)
		waiting[i] = mig__dst_pc_idx_gfn(d, waiting[i]);
	for (size_t i = 0; !ret && i < nw; i += MIG_PC_REQ_MAX) {
		Mig__PageRequest q = MIG__PAGE_REQUEST__INIT;

		q.seq = UINT64_MAX; /* a request said again */
		q.n_gfns = HV_MIN(nw - i, MIG_PC_REQ_MAX);
		q.gfns = waiting + i;
		ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_PAGE_REQUEST,
				    &q.base, NULL, 0);
		bytes += mig_frame_size(&q.base);
	}
	atomic_fetch_add_explicit(&d->ctl_bytes, bytes, memory_order_relaxed);
	hv_info("mig", "op=postcopy_resume port=%u missing=%llu "
		       "outstanding=%zu err=%d",
		d->port, (unsigned long long)total, nw, ret);
	return ret;
}

/* The source's channels again: a new pipe over them, what we lack sent.
 * 0 or an error, @why filled. */
static int take_session(struct mig_dest *d, struct mig_listener *lst,
			char *why, size_t len)
{
	struct mig_session_accept sa;
	int ret;

	ret = mig_listener_accept_session(lst, d->io_ms, mig__dst_take_conn, d, &sa,
					  why, len);
	if (ret)
		return ret;
	if (sa.nchan != d->nchan) {
		snprintf(why, len, "the source came back with %u channels, "
				   "not %u",
			 sa.nchan, d->nchan);
		return -EPROTO;
	}
	ret = mig_recv_pipe_create_hashed(d->data, d->nchan, d->map, d->htab,
					  &d->pipe);
	if (!ret) {
		mig__dst_pc_pipe_install(d);
		ret = mig__dst_watch_start(d);
	}
	if (ret) {
		snprintf(why, len, "receive pipeline: %s", strerror(-ret));
		return ret;
	}
	ret = send_missing(d);
	if (ret)
		snprintf(why, len, "send the missing set: %s", strerror(-ret));
	return ret;
}

int mig__dst_pc_recover(struct mig_dest *d, int err, const char *cause)
{
	struct mig_listener_cfg lcfg = {
		.tls = d->tls,
		.io_ms = d->io_ms,
		.cancel = &d->cancel,
		.session_id = d->sid,
	};
	struct mig_listener *lst = NULL;
	char why[160];
	int ret;

	snprintf(why, sizeof(why), "%s", cause);
	drop_channels(d);
	ret = mig_listener_create(d->lhost, d->port, &lcfg, &lst);
	if (ret) /* the port was taken meanwhile: any other */
		ret = mig_listener_create(d->lhost, 0, &lcfg, &lst);
	if (ret)
		FAIL(d, ret,
		     "postcopy broken (%.100s) and cannot listen again: %s; "
		     "the VM cannot run on partial memory",
		     why, strerror(-ret));
	for (;;) {
		mig__prog_set(&d->prog, MIG_PHASE_POSTCOPY_PAUSED, 0,
			      "postcopy paused (%.120s): source gone or link "
			      "broken; the VM cannot run on partial memory "
			      "(vCPUs that need a missing page wait); "
			      "listening on %s:%u for the source's recover",
			      why, d->lhost, mig_listener_port(lst));
		hv_warn("mig", "op=postcopy_paused port=%u listen=%u err=%d "
			       "why=\"%s\"",
			d->port, mig_listener_port(lst), err, why);
		mig__prog_emit(&d->prog, true);
		ret = take_session(d, lst, why, sizeof(why));
		if (!ret)
			break;
		if (ret == -ECANCELED || atomic_load(&d->cancel)) {
			mig_listener_destroy(lst);
			drop_channels(d);
			mig__prog_set(&d->prog, MIG_PHASE_CANCELLED, -ECANCELED,
				      "cancelled while postcopy was paused "
				      "(%.120s)%s",
				      why,
				      d->pc_whole ? ""
						  : ": the incomplete VM is "
						    "destroyed");
			return -ECANCELED;
		}
		err = ret;
		drop_channels(d);
	}
	mig_listener_destroy(lst);
	d->pc_recoveries++;
	mig__prog_set(&d->prog, MIG_PHASE_POSTCOPY, 0,
		      "postcopy recovered (%u time%s)", d->pc_recoveries,
		      d->pc_recoveries > 1 ? "s" : "");
	hv_info("mig", "op=postcopy_recovered port=%u recoveries=%u", d->port,
		d->pc_recoveries);
	mig__prog_emit(&d->prog, true);
	return 0;
}
