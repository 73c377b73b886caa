// SPDX-License-Identifier: MIT
/*
 * mig_source, postcopy recovery (source_priv.h, docs/architecture.md
 * "Postcopy recovery").
 *
 * A connection that breaks after the postcopy switch is not a failure:
 * the VM runs on the destination with part of its memory and the rest is
 * only in our frozen copy, so both are kept. The engine drops the
 * channels and the send pipe, reports POSTCOPY_PAUSED and waits for
 * mig_source_recover() (or a cancel, which gives up: FAILED, our half
 * kept paused). A recovery connects again with the same session id (the
 * destination listens for it alone), reads what the destination still
 * lacks (PostcopyUnsent frames, then PostcopyResume), makes exactly that
 * pending in the scheduler and starts a new send pipe; the destination's
 * outstanding requests follow on the control channel and are served
 * first, as ever. A failed attempt pauses again; so does a later break.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/postcopy_map.h"
#include "migrated/mig/postcopy_recover.h"
#include "migrated/mig/postcopy_sched.h"
#include "migrated/mig/source_priv.h"

bool mig__src_pc_give_up(struct mig_source *s)
{
	bool paused;

	pthread_mutex_lock(&s->lock);
	paused = s->pc_paused;
	if (paused) {
		s->pc_give_up = true;
		pthread_cond_broadcast(&s->pc_cond);
	}
	pthread_mutex_unlock(&s->lock);
	return paused;
}

int mig_source_recover(struct mig_source *s, const char *host, uint16_t port)
{
	int ret = 0;

	if (host && strlen(host) >= sizeof(s->pc_rhost))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (!s->pc_paused || s->pc_recover || s->pc_give_up) {
		ret = -EALREADY;
	} else {
		snprintf(s->pc_rhost, sizeof(s->pc_rhost), "%s",
			 host ? host : "");
		s->pc_rport = port;
		s->pc_recover = true;
		pthread_cond_broadcast(&s->pc_cond);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* The push thread is joined: drop the pipe and every channel. */
static void drop_channels(struct mig_source *s)
{
	mig_send_pipe_destroy(s->pipe);
	s->pipe = NULL;
	pthread_mutex_lock(&s->lock);
	mig_conn_destroy(s->ctl);
	s->ctl = NULL;
	for (unsigned i = 0; i < s->nchan; i++) {
		mig_conn_destroy(s->data[i]);
		s->data[i] = NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

static struct src_slot *slot_by_id(struct mig_source *s, uint32_t id)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].id == id)
			return &s->slots[i];
	return NULL;
}

#define WHY(err, ...)                                                       \
	do {                                                                 \
		snprintf(why, len, __VA_ARGS__);                             \
		return (err);                                                \
	} while (0)

/*
 * The destination's missing set (PostcopyUnsent frames, then the
 * PostcopyResume) becomes the scheduler's pending set. 0, or an error
 * with @why filled.
 */
static int recv_missing(struct mig_source *s, char *why, size_t len)
{
	uint64_t set = 0, words = 1;
	uint64_t *bits;
	int ret = 0;

	for (unsigned i = 0; i < s->nslots; i++)
		words = HV_MAX(words, s->slots[i].nwords);
	bits = malloc(words * 8);
	if (!bits)
		WHY(-ENOMEM, "out of memory");
	mig_pc_sched_reset(s->pc_sched);
	for (;;) {
		const Mig__PostcopyUnsent *u;
		struct mig_frame_hdr h;
		struct src_slot *sl;
		ProtobufCMessage *m;
		uint64_t added = 0;

		ret = mig_conn_recv_types(s->ctl, MIG_PC_RESUME_TYPES, &h, &m);
		if (ret) {
			snprintf(why, len, "waiting for the missing set: %s",
				 strerror(-ret));
			break;
		}
		s->ctl_bytes += MIG_FRAME_HDR_SIZE + h.len;
		if (h.type == MIG__MSG_TYPE__MSG_ABORT) {
			const Mig__Abort *a = (const Mig__Abort *)m;

			snprintf(why, len, "the destination refused: %.120s",
				 a->detail ? a->detail : "");
			mig_frame_msg_free(m);
			ret = -ECONNABORTED;
			break;
		}
		if (h.type == MIG__MSG_TYPE__MSG_POSTCOPY_RESUME) {
			ret = mig_pc_resume_check((Mig__PostcopyResume *)m,
						  set);
			if (ret)
				snprintf(why, len,
					 "PostcopyResume counts %llu missing "
					 "pages, its frames %llu",
					 (unsigned long long)((
						 Mig__PostcopyResume *)m)
						 ->missing_pages,
					 (unsigned long long)set);
			mig_frame_msg_free(m);
			break;
		}
		u = (const Mig__PostcopyUnsent *)m;
		sl = slot_by_id(s, u->slot);
		memset(bits, 0, words * 8);
		ret = sl ? mig_pc_unsent_apply(u, sl->npages, bits, &added)
			 : -EPROTO;
		if (!ret)
			ret = mig_pc_sched_mark(s->pc_sched, sl->tidx, bits,
						sl->npages);
		if (ret)
			snprintf(why, len, "bad missing set of slot %u: %s",
				 u->slot, strerror(-ret));
		set += added;
		mig_frame_msg_free(m);
		if (ret)
			break;
	}
	free(bits);
	if (!ret)
		hv_info("mig", "op=postcopy_resume vm=%s missing=%llu",
			hv_vm_name(s->vm), (unsigned long long)set);
	return ret;
}

/* Connect, take the missing set, start a send pipe. 0 or the error,
 * @why filled. */
static int reconnect(struct mig_source *s, char *why, size_t len)
{
	struct mig_send_pipe_cfg pcfg = { 0 };
	struct mig_progress p;
	int ret;

	ret = mig__src_connect_channels(s);
	if (ret) {
		/* Its FAIL recorded why (our error was 0 while paused). */
		mig__prog_get(&s->prog, &p);
		WHY(ret, "%.150s", p.message);
	}
	ret = recv_missing(s, why, len);
	if (ret)
		return ret;
	/* As the setup's, without deltas (the destination's new pipe holds
	 * no base pages). */
	pcfg.encoding = s->opts.zstd_level < 0 ? MIG__ENCODING__ENCODING_RAW
					       : MIG__ENCODING__ENCODING_ZSTD;
	pcfg.level = s->opts.zstd_level > 0 ? s->opts.zstd_level : 1;
	pcfg.adaptive = s->opts.zstd_level == 0;
	pcfg.table = s->table;
	ret = mig_send_pipe_create(s->data, s->nchan, s->map, &pcfg,
				   &s->pipe);
	if (ret)
		WHY(ret, "send pipeline: %s", strerror(-ret));
	return 0;
}

int mig__src_pc_recover(struct mig_source *s, int err, const char *cause)
{
	char why[160];

	snprintf(why, sizeof(why), "%s", cause);
	for (;;) {
		char host[sizeof(s->pc_rhost)];
		uint16_t port;
		bool give_up;
		int ret;

		drop_channels(s);
		mig__prog_set(&s->prog, MIG_PHASE_POSTCOPY_PAUSED, 0,
			      "postcopy paused (%.150s): the VM runs on the "
			      "destination with part of its memory, the rest "
			      "is only here; reconnect with migratectl "
			      "migration recover (the VM is lost if either "
			      "process dies)",
			      why);
		hv_warn("mig", "op=postcopy_paused vm=%s recoveries=%u "
			       "err=%d why=\"%s\"",
			hv_vm_name(s->vm), s->pc_recoveries, err, why);
		mig__prog_emit(&s->prog, true);
		pthread_mutex_lock(&s->lock);
		s->pc_paused = true;
		while (!s->pc_recover && !s->pc_give_up)
			pthread_cond_wait(&s->pc_cond, &s->lock);
		give_up = s->pc_give_up;
		s->pc_recover = false;
		snprintf(host, sizeof(host), "%s", s->pc_rhost);
		port = s->pc_rport;
		if (give_up)
			s->pc_paused = false;
		pthread_mutex_unlock(&s->lock);
		if (give_up) {
			mig__prog_set(&s->prog, MIG_PHASE_FAILED, err,
				      "recovery given up (postcopy paused: "
				      "%.120s)",
				      why);
			return err;
		}
		/* s->host and s->port are the engine's own. */
		if (host[0])
			snprintf(s->host, sizeof(s->host), "%s", host);
		if (port)
			s->port = port;
		hv_info("mig", "op=postcopy_recover vm=%s dest=%s:%u",
			hv_vm_name(s->vm), s->host, s->port);
		ret = reconnect(s, why, sizeof(why));
		if (!ret)
			break;
		err = ret;
	}
	pthread_mutex_lock(&s->lock);
	s->pc_paused = false;
	s->pc_give_up = false;
	pthread_mutex_unlock(&s->lock);
	s->pc_recoveries++;
	mig__prog_set(&s->prog, MIG_PHASE_POSTCOPY, 0,
		      "postcopy recovered (%u time%s)", s->pc_recoveries,
		      s->pc_recoveries > 1 ? "s" : "");
	hv_info("mig", "op=postcopy_recovered vm=%s recoveries=%u",
		hv_vm_name(s->vm), s->pc_recoveries);
	mig__prog_emit(&s->prog, true);
	return 0;
}
