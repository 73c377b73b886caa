// SPDX-License-Identifier: MIT
#include "migrated/mig/handshake.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/session.h"

int mig_session_id_new(uint8_t id[MIG_SESSION_ID_LEN])
{
	size_t done = 0;

	while (done < MIG_SESSION_ID_LEN) {
		ssize_t n = getrandom(id + done, MIG_SESSION_ID_LEN - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	id[6] = (uint8_t)((id[6] & 0x0f) | 0x40); /* version 4: random */
	id[8] = (uint8_t)((id[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	return 0;
}

void mig_uuid_format(const uint8_t id[MIG_SESSION_ID_LEN],
		     char out[MIG_UUID_STR_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (unsigned i = 0; i < MIG_SESSION_ID_LEN; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[id[i] >> 4];
		out[o++] = hex[id[i] & 0xf];
	}
	out[o] = '\0';
}

int mig_version_negotiate(uint32_t peer_min, uint32_t peer_max,
			  uint32_t *out)
{
	uint32_t lo = HV_MAX(peer_min, (uint32_t)MIG_FRAME_VERSION_MIN);
	uint32_t hi = HV_MIN(peer_max, (uint32_t)MIG_FRAME_VERSION);

	if (peer_min > peer_max || lo > hi)
		return -EPROTONOSUPPORT;
	*out = hi;
	return 0;
}

int mig_hello_send(struct mig_conn *c, uint32_t version, unsigned role,
		   const uint8_t id[MIG_SESSION_ID_LEN], uint32_t index,
		   uint32_t nr_channels)
{
	Mig__Hello h = MIG__HELLO__INIT;
	char host[MIG_HOST_ID_MAX] = "";

	gethostname(host, sizeof(host) - 1);
	h.version_min = version ? version : MIG_FRAME_VERSION_MIN;
	h.version_max = version ? version : MIG_FRAME_VERSION;
	h.role = (Mig__Role)role;
	h.session_id.data = (uint8_t *)id;
	h.session_id.len = MIG_SESSION_ID_LEN;
	h.channel_index = index;
	h.nr_channels = nr_channels;
	h.host_id = host;
	return mig_conn_send(c, MIG__MSG_TYPE__MSG_HELLO, &h.base, NULL, 0);
}

static int hello_check(const Mig__Hello *h)
{
	if (h->role != MIG__ROLE__ROLE_CONTROL &&
	    h->role != MIG__ROLE__ROLE_DATA)
		return -EPROTO;
	if (h->session_id.len != MIG_SESSION_ID_LEN)
		return -EPROTO;
	if (!h->nr_channels || h->nr_channels > MIG_CHANNELS_MAX)
		return -EPROTO;
	if (h->channel_index >= h->nr_channels)
		return -EPROTO;
	if (h->role == MIG__ROLE__ROLE_CONTROL && h->channel_index)
		return -EPROTO;
	return 0;
}

/* A channel role by name in logs (ROLE_DATA), whatever a peer sent. */
static const char *role_name(int role)
{
	const ProtobufCEnumValue *v;

	v = protobuf_c_enum_descriptor_get_value(&mig__role__descriptor,
						 role);
	return v ? v->name : "unknown";
}

int mig_hello_take(unsigned type, ProtobufCMessage *msg,
		   struct mig_hello_info *out)
{
	const Mig__Hello *h;
	int ret;

	if (type != MIG__MSG_TYPE__MSG_HELLO) {
		/* A peer that refuses says why instead of answering. */
		if (type == MIG__MSG_TYPE__MSG_SETUP_REFUSE)
			ret = ((Mig__SetupRefuse *)msg)->reason ==
					      MIG__REFUSE_REASON__REFUSE_VERSION
				      ? -EPROTONOSUPPORT
				      : -ECONNREFUSED;
		else if (type == MIG__MSG_TYPE__MSG_CANCEL ||
			 (type == MIG__MSG_TYPE__MSG_ABORT &&
			  ((Mig__Abort *)msg)->reason ==
				  MIG__ABORT_REASON__ABORT_CANCELLED))
			ret = -ECANCELED;
		else if (type == MIG__MSG_TYPE__MSG_ABORT)
			ret = -ECONNABORTED;
		else
			ret = -EPROTO;
		hv_err("mig", "op=hello err=%d msg=%s", ret,
		       mig_frame_type_name(type));
		mig_frame_msg_free(msg);
		return ret;
	}
	h = (const Mig__Hello *)msg;
	ret = hello_check(h);
	if (ret) {
		hv_err("mig", "op=hello err=bad_hello role=%s index=%u nr=%u "
			      "sid_len=%zu",
		       role_name((int)h->role), h->channel_index,
		       h->nr_channels,
		       h->session_id.len);
		mig_frame_msg_free(msg);
		return ret;
	}
	memset(out, 0, sizeof(*out));
	out->version_min = h->version_min;
	out->version_max = h->version_max;
	out->role = h->role;
	memcpy(out->session_id, h->session_id.data, MIG_SESSION_ID_LEN);
	out->channel_index = h->channel_index;
	out->nr_channels = h->nr_channels;
	if (h->host_id)
		snprintf(out->host_id, sizeof(out->host_id), "%s", h->host_id);
	mig_frame_msg_free(msg);
	return 0;
}

int mig_peer_reason(struct mig_conn *c, unsigned wait_ms, char *detail,
		    size_t len)
{
	const uint64_t types = MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_ABORT) |
			       MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_CANCEL);
	struct timespec t0, t;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	detail[0] = '\0';
	/* Bounded: a peer that keeps talking does not keep us here. */
	for (unsigned n = 0; n < 64 && !ret; n++) {
		struct mig_frame_hdr h;
		ProtobufCMessage *m;
		long ms;
		int r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 +
		     (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= (long)wait_ms ||
		    mig_conn_wait_readable(c, wait_ms - (unsigned)ms))
			break;
		r = mig_conn_recv(c, &h, &m);
		if (r == -EINTR)
			continue; /* the interrupt that woke the engine */
		if (r)
			break;
		if (types & MIG_CONN_TYPE(h.type)) {
			const Mig__Abort *a = (const Mig__Abort *)m;

			if (h.type == MIG__MSG_TYPE__MSG_CANCEL ||
			    a->reason == MIG__ABORT_REASON__ABORT_CANCELLED) {
				ret = -ECANCELED;
			} else {
				ret = -ECONNABORTED;
				snprintf(detail, len, "%s",
					 a->detail ? a->detail : "");
			}
		}
		mig_frame_msg_free(m);
	}
	return ret;
}

int mig_hello_recv(struct mig_conn *c, struct mig_hello_info *out)
{
	struct mig_frame_hdr hdr;
	ProtobufCMessage *msg;
	int ret;

	ret = mig_conn_recv_types(c, MIG_HELLO_REPLY_TYPES, &hdr, &msg);
	if (ret)
		return ret;
	ret = mig_hello_take(hdr.type, msg, out);
	return ret ? mig_conn_set_error(c, ret) : 0;
}
