// SPDX-License-Identifier: MIT
/*
 * mig_source: connecting to the destination and the migration's setup
 * (source_priv.h): the control and data channels with their Hellos, the
 * control channel's receive (interruptible by a cancel), and the setup
 * exchange that ends with the destination's memory ready or its refusal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/delta.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/source_priv.h"

static int ctl_recv(struct mig_source *s, struct mig_frame_hdr *h,
		    ProtobufCMessage **m)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	s->ctl_blocked = true;
	ret = atomic_load(&s->cancel) ? -ECANCELED : 0;
	pthread_mutex_unlock(&s->lock);
	if (!ret)
		ret = mig_conn_recv(s->ctl, h, m);
	pthread_mutex_lock(&s->lock);
	s->ctl_blocked = false;
	pthread_mutex_unlock(&s->lock);
	/* mig_source_cancel() interrupted the wait. */
	if (ret == -EINTR && atomic_load(&s->cancel))
		ret = -ECANCELED;
	if (!ret)
		s->ctl_bytes += MIG_FRAME_HDR_SIZE + h->len;
	return ret;
}

/* The error for a reply @m of type @h->type that is not the one wanted: an
 * Abort/Cancel from the peer names it, anything else is -EPROTO. Records
 * the failure in the progress; does not free @m. */
static int unwanted_reply(struct mig_source *s, const struct mig_frame_hdr *h,
			  ProtobufCMessage *m, const char *what)
{
	int ret;

	if (h->type == MIG__MSG_TYPE__MSG_ABORT &&
	    ((Mig__Abort *)m)->reason == MIG__ABORT_REASON__ABORT_CANCELLED) {
		mig__prog_fail(&s->prog, -ECANCELED,
			       "%s: " SRC_DEST_CANCELLED, what);
		ret = -ECANCELED;
	} else if (h->type == MIG__MSG_TYPE__MSG_ABORT) {
		Mig__Abort *a = (Mig__Abort *)m;

		mig__prog_fail(&s->prog, -ECONNABORTED,
			       "%s: destination aborted (reason %d): %.160s",
			       what, (int)a->reason, a->detail ? a->detail : "");
		ret = -ECONNABORTED;
	} else if (h->type == MIG__MSG_TYPE__MSG_CANCEL) {
		mig__prog_fail(&s->prog, -ECANCELED,
			       "%s: " SRC_DEST_CANCELLED, what);
		ret = -ECANCELED;
	} else {
		mig__prog_fail(&s->prog, -EPROTO,
			       "%s: unexpected %s from destination", what,
			       mig_frame_type_name(h->type));
		ret = -EPROTO;
	}
	return ret;
}

/* Receive the reply of @want type; an Abort/Cancel from the peer or any
 * other message is an error, with the peer's reason in the message. */
int mig__src_ctl_expect(struct mig_source *s, unsigned want,
		      ProtobufCMessage **m, const char *what)
{
	return mig__src_ctl_expect_or(s, want, want, NULL, m, what);
}

int mig__src_ctl_expect_or(struct mig_source *s, unsigned want, unsigned also,
		      unsigned *got, ProtobufCMessage **m, const char *what)
{
	struct mig_frame_hdr h;
	int ret = ctl_recv(s, &h, m);

	if (ret)
		FAIL(s, ret, "%s: control channel: %s", what, strerror(-ret));
	if (got)
		*got = h.type;
	if (h.type == want || h.type == also)
		return 0;
	ret = unwanted_reply(s, &h, *m, what);
	mig_frame_msg_free(*m);
	*m = NULL;
	mig_conn_set_error(s->ctl, ret);
	return ret;
}

/* Why a connect failed, for an operator: what to check next. */
static const char *connect_why(int err)
{
	switch (err) {
	case -EHOSTUNREACH: /* also: the name did not resolve (addr.c) */
		return "unknown host or no route to it: check the name "
		       "(getent hosts) and the network";
	case -ECONNREFUSED:
		return "connection refused: nothing listens there (arm the "
		       "destination with migrate-recv; it prints the port)";
	case -ETIMEDOUT:
		return "no TLS handshake in time: not a migration endpoint, "
		       "or a firewall drops the connection";
	default:
		return mig_conn_strerror(err);
	}
}

int mig__src_connect_channels(struct mig_source *s)
{
	struct mig_hello_info hi;
	struct mig_conn *c;
	int ret;

	ret = mig_conn_connect(s->host, s->port, s->tls, s->io_ms, &c);
	if (ret)
		FAIL(s, ret, "connect %s:%u: %s", s->host, s->port,
		     connect_why(ret));
	pthread_mutex_lock(&s->lock);
	s->ctl = c;
	pthread_mutex_unlock(&s->lock);
	/* A cancel interrupts a wait on it, leaving it whole for our
	 * Cancel (mig_source_cancel()). */
	ret = mig_conn_set_interruptible(c);
	if (ret)
		FAIL(s, ret, "control channel: %s", strerror(-ret));
	ret = mig_hello_send(c, 0, MIG__ROLE__ROLE_CONTROL, s->sid, 0,
			     s->nchan);
	if (!ret)
		ret = mig_hello_recv(c, &hi);
	if (!ret && (hi.role != MIG__ROLE__ROLE_CONTROL ||
		     memcmp(hi.session_id, s->sid, MIG_SESSION_ID_LEN) ||
		     hi.version_min != hi.version_max ||
		     hi.version_max < MIG_FRAME_VERSION_MIN ||
		     hi.version_max > MIG_FRAME_VERSION))
		ret = -EPROTO;
	if (ret)
		FAIL(s, ret, "hello on control channel: %s",
		     ret == -ETIMEDOUT || ret == -EPROTO
			     ? "no migration answer: the peer is not a "
			       "migration endpoint (migrate-recv there "
			       "prints the port to use)"
			     : mig_conn_strerror(ret));
	for (unsigned i = 0; i < s->nchan; i++) {
		ret = mig_conn_connect(s->host, s->port, s->tls, s->io_ms, &c);
		if (ret)
			FAIL(s, ret, "connect data channel %u: %s", i,
			     mig_conn_strerror(ret));
		pthread_mutex_lock(&s->lock);
		s->data[i] = c;
		pthread_mutex_unlock(&s->lock);
		ret = mig_hello_send(c, hi.version_max, MIG__ROLE__ROLE_DATA,
				     s->sid, i, s->nchan);
		if (!ret)
			ret = mig_hello_recv(c, &hi);
		if (!ret && (hi.role != MIG__ROLE__ROLE_DATA ||
			     hi.channel_index != i ||
			     memcmp(hi.session_id, s->sid, MIG_SESSION_ID_LEN)))
			ret = -EPROTO;
		if (ret)
			FAIL(s, ret, "hello on data channel %u: %s", i,
			     strerror(-ret));
	}
	return 0;
}

static int refuse_errno(unsigned reason)
{
	switch (reason) {
	case MIG__REFUSE_REASON__REFUSE_NO_MEMORY:
		return -ENOMEM;
	case MIG__REFUSE_REASON__REFUSE_ACCEL:
		return -ENODEV;
	case MIG__REFUSE_REASON__REFUSE_BUSY:
		return -EBUSY;
	case MIG__REFUSE_REASON__REFUSE_VERSION:
		return -EPROTONOSUPPORT;
	case MIG__REFUSE_REASON__REFUSE_NAME:
		return -EEXIST;
	default:
		return -ECONNREFUSED;
	}
}

static const char *refuse_name(unsigned reason)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
		&mig__refuse_reason__descriptor, (int)reason);

	return v ? v->name : "unknown reason";
}

int mig__src_setup(struct mig_source *s)
{
	struct mig_send_pipe_cfg pcfg = { 0 };
	Mig__VmLayout *layout = NULL;
	bool peer_delta;
	struct mig_memmap_slot *ms;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	unsigned dmode;
	int ret;

	ret = mig_faultpoint(MIG_FP_SRC_SETUP);
	if (ret < 0)
		FAIL(s, ret, "fault point %s", MIG_FP_SRC_SETUP);
	ret = mig_layout_build(s->vm, s->opts.vm_name, &layout);
	if (ret)
		FAIL(s, ret, "layout: %s", strerror(-ret));
	ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_SETUP, &layout->base,
			    NULL, 0);
	s->ctl_bytes += mig_frame_size(&layout->base);
	mig_layout_free(layout);
	if (ret)
		FAIL(s, ret, "send setup: %s", strerror(-ret));
	ret = ctl_recv(s, &h, &m);
	if (ret)
		FAIL(s, ret, "setup reply: %s", strerror(-ret));
	if (h.type == MIG__MSG_TYPE__MSG_SETUP_REFUSE) {
		Mig__SetupRefuse *r = (Mig__SetupRefuse *)m;

		ret = refuse_errno(r->reason);
		mig__prog_fail(&s->prog, ret,
			       "destination refused the setup (%s): %.160s",
			       refuse_name(r->reason),
			       r->detail ? r->detail : "");
		mig_frame_msg_free(m);
		return ret;
	}
	/* A destination cancelled while the source set up (seen on a slow
	 * host, KVM nested under TCG) answers Cancel: the peer cancelled,
	 * not a protocol error. */
	if (h.type == MIG__MSG_TYPE__MSG_CANCEL ||
	    h.type == MIG__MSG_TYPE__MSG_ABORT) {
		ret = unwanted_reply(s, &h, m, "setup reply");
		mig_frame_msg_free(m);
		mig_conn_set_error(s->ctl, ret);
		return ret;
	}
	if (h.type != MIG__MSG_TYPE__MSG_SETUP_ACCEPT ||
	    ((Mig__SetupAccept *)m)->nr_channels != s->nchan) {
		mig_frame_msg_free(m);
		FAIL(s, -EPROTO, "bad setup reply %s from destination",
		     mig_frame_type_name(h.type));
	}
	/* An older destination offers nothing: it is never sent deltas.
	 * Postcopy pages are installed from a bounce buffer that holds no
	 * base page, so a migration that may switch sends none either. */
	peer_delta = ((Mig__SetupAccept *)m)->features & MIG_FEATURE_DELTA &&
		     !mig__src_may_postcopy(s);
	atomic_store(&s->pc_offered, ((Mig__SetupAccept *)m)->features &
					     MIG_FEATURE_POSTCOPY);
	if (mig__src_may_postcopy(s) && !atomic_load(&s->pc_offered))
		hv_warn("mig", "op=setup vm=%s postcopy=unsupported_by_peer",
			hv_vm_name(s->vm));
	mig_frame_msg_free(m);

	ret = mig__src_dirty_init(s);
	if (ret)
		FAIL(s, ret, "dirty set: %s", strerror(-ret));
	ms = calloc(s->nslots, sizeof(*ms));
	if (!ms)
		FAIL(s, -ENOMEM, "memory map: out of memory");
	for (unsigned i = 0; i < s->nslots; i++) {
		const struct src_slot *sl = &s->slots[i];

		ms[i] = (struct mig_memmap_slot){
			.id = sl->id,
			.base_gfn = sl->base,
			.npages = sl->npages,
			.host = hv_vm_gpa_to_hva(s->vm, hv_gfn_to_gpa(sl->base),
						 sl->npages << HV_PAGE_SHIFT),
		};
	}
	ret = mig_memmap_create(ms, s->nslots, &s->map);
	free(ms);
	if (ret)
		FAIL(s, ret, "memory map: %s", strerror(-ret));
	ret = mig__src_table_init(s);
	if (ret)
		FAIL(s, ret, "page table: %s", strerror(-ret));
	pcfg.encoding = s->opts.zstd_level < 0 ? MIG__ENCODING__ENCODING_RAW
					       : MIG__ENCODING__ENCODING_ZSTD;
	pcfg.level = s->opts.zstd_level > 0 ? s->opts.zstd_level : 1;
	pcfg.adaptive = s->opts.zstd_level == 0;
	if (peer_delta && s->opts.delta_cache) {
		uint64_t pages = mig_memmap_pages(s->map);
		uint64_t bytes = s->opts.delta_cache > 0
					 ? (uint64_t)s->opts.delta_cache
					 : mig_delta_cache_default(pages);

		ret = mig_delta_cache_create(bytes, pages, &s->delta);
		if (ret)
			FAIL(s, ret, "delta cache: %s", strerror(-ret));
		pcfg.delta = s->delta;
	}
	/* The channels hash every page they send into the digest table. */
	pcfg.table = s->table;
	ret = mig_send_pipe_create(s->data, s->nchan, s->map, &pcfg, &s->pipe);
	if (ret)
		FAIL(s, ret, "send pipeline: %s", strerror(-ret));
	ret = mig_throttle_init(&s->thr, s->vm);
	if (ret)
		FAIL(s, ret, "workload params: %s", strerror(-ret));

	/* Logging starts last: a refused setup leaves the VM untouched. */
	dmode = s->opts.dirty_mode;
	if (!dmode && s->vm->cfg.accel == HV_ACCEL_KVM)
		dmode = s->vm->cfg.dirty_ring_entries ? HV_DIRTY_RING
						      : HV_DIRTY_BITMAP;
	if (!dmode) {
		ret = hv_vm_dirty_log_start(s->vm, HV_DIRTY_PML);
		if (ret == -EOPNOTSUPP)
			dmode = HV_DIRTY_WP;
	}
	if (dmode)
		ret = hv_vm_dirty_log_start(s->vm, dmode);
	if (ret)
		FAIL(s, ret, "dirty logging: %s", strerror(-ret));
	s->logging = true;
	return 0;
}
