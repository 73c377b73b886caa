// SPDX-License-Identifier: MIT
/* The migration port, safe against idle and hostile peers (listener.h). */
#include "migrated/mig/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/mig/session.h"

#define LISTENER_TICK_MS 100
/* accept(2) calls per wake-up, so that pending ones are served too. */
#define ACCEPT_BURST 32u

struct pending {
	struct mig_conn *c;
	char peer[INET6_ADDRSTRLEN];
	uint64_t since_ns, deadline_ns;
	short events; /* what mig_conn_server_step() waits for */
	bool spoke;   /* the peer sent something */
};

struct mig_listener {
	/* immutable after create */
	int lfd;
	uint16_t port;
	struct mig_listener_cfg cfg;
	/* accepting thread only */
	struct pending *pend; /* cfg.max_pending slots, c == NULL: free */
	struct pollfd *pfd;   /* 1 + cfg.max_pending */
	unsigned *slot;	      /* pfd[k + 1] is pend[slot[k]] */
	struct mig_listener_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int mig_listener_create(const char *host, uint16_t port,
			const struct mig_listener_cfg *cfg,
			struct mig_listener **out)
{
	struct mig_listener *l;
	int fl, ret;

	if (!host || !cfg || !out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cfg = *cfg;
	if (!l->cfg.handshake_ms)
		l->cfg.handshake_ms = MIG_LISTENER_HANDSHAKE_MS_DEFAULT;
	if (!l->cfg.max_pending)
		l->cfg.max_pending = MIG_LISTENER_PENDING_DEFAULT;
	if (!l->cfg.max_per_peer)
		l->cfg.max_per_peer = MIG_LISTENER_PER_PEER_DEFAULT;
	l->pend = calloc(l->cfg.max_pending, sizeof(*l->pend));
	l->pfd = calloc(l->cfg.max_pending + 1, sizeof(*l->pfd));
	l->slot = calloc(l->cfg.max_pending, sizeof(*l->slot));
	if (!l->pend || !l->pfd || !l->slot) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = mig_listen(host, port, &l->lfd, &l->port);
	if (ret)
		goto fail;
	/* accept(2) until EAGAIN, never blocking the pending ones. */
	fl = fcntl(l->lfd, F_GETFL);
	if (fl < 0 || fcntl(l->lfd, F_SETFL, fl | O_NONBLOCK)) {
		ret = -errno;
		close(l->lfd);
		goto fail;
	}
	*out = l;
	return 0;
fail:
	free(l->slot);
	free(l->pfd);
	free(l->pend);
	free(l);
	return ret;
}

/* Close pending slot @p, counting it in @counter, logging @why. */
static void drop(struct pending *p, uint64_t *counter, const char *why,
		 int err)
{
	/* Peers of a flood are many: their lines are debug, a failed
	 * handshake (a misconfigured real peer, usually) is a warning. */
	hv_log(err ? HV_LOG_WARN : HV_LOG_DBG, "mig",
	       "op=accept_drop peer=%s why=%s err=%d cause=\"%s\" age_ms=%llu",
	       p->peer, why, err, err ? mig_conn_strerror(err) : "",
	       (unsigned long long)((now_ns() - p->since_ns) / 1000000));
	mig_conn_destroy(p->c);
	p->c = NULL;
	(*counter)++;
}

void mig_listener_destroy(struct mig_listener *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->cfg.max_pending; i++)
		if (l->pend[i].c)
			drop(&l->pend[i], &l->st.refused, "closing", 0);
	/* One line for what the per-connection debug lines said. */
	if (l->st.accepted > l->st.handed)
		hv_info("mig",
			"op=listener_close port=%u accepted=%llu handed=%llu "
			"timed_out=%llu evicted=%llu refused=%llu",
			l->port, (unsigned long long)l->st.accepted,
			(unsigned long long)l->st.handed,
			(unsigned long long)l->st.timed_out,
			(unsigned long long)l->st.evicted,
			(unsigned long long)l->st.refused);
	close(l->lfd);
	free(l->slot);
	free(l->pfd);
	free(l->pend);
	free(l);
}

uint16_t mig_listener_port(const struct mig_listener *l)
{
	return l->port;
}

void mig_listener_get_stats(const struct mig_listener *l,
			    struct mig_listener_stats *out)
{
	*out = l->st;
}

/*
 * The slot to give a new connection from @peer: a free one, unless a bound
 * is reached; then the victim is the oldest silent connection (of @peer
 * when its own bound is the one reached), else the oldest.
 */
static struct pending *slot_for(struct mig_listener *l, const char *peer)
{
	struct pending *free_slot = NULL, *victim = NULL;
	unsigned same = 0;
	bool per_peer;

	for (unsigned i = 0; i < l->cfg.max_pending; i++) {
		struct pending *p = &l->pend[i];

		if (!p->c) {
			free_slot = free_slot ? free_slot : p;
			continue;
		}
		same += !strcmp(p->peer, peer);
	}
	per_peer = same >= l->cfg.max_per_peer;
	if (free_slot && !per_peer)
		return free_slot;
	for (unsigned i = 0; i < l->cfg.max_pending; i++) {
		struct pending *p = &l->pend[i];

		if (!p->c || (per_peer && strcmp(p->peer, peer)))
			continue;
		if (!victim || (victim->spoke && !p->spoke) ||
		    (victim->spoke == p->spoke &&
		     p->since_ns < victim->since_ns))
			victim = p;
	}
	drop(victim, &l->st.evicted, "evicted", 0);
	return victim;
}

static void peer_name(const struct sockaddr_storage *ss, char *out,
		      size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	const void *a = ss->ss_family == AF_INET6 ? (const void *)&s6->sin6_addr
						  : (const void *)&s4->sin_addr;

	if (!inet_ntop(ss->ss_family, a, out, (socklen_t)len))
		snprintf(out, len, "unknown");
}

/* Take what the backlog holds, up to a burst. */
static void accept_new(struct mig_listener *l)
{
	for (unsigned n = 0; n < ACCEPT_BURST; n++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char peer[INET6_ADDRSTRLEN];
		struct pending *p;
		struct mig_conn *c;
		int fd, ret;

		fd = accept4(l->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a transient ECONNABORTED */
		l->st.accepted++;
		peer_name(&ss, peer, sizeof(peer));
		ret = mig_conn_server_new(fd, l->cfg.tls, &c);
		if (ret) {
			hv_warn("mig", "op=accept peer=%s err=%d", peer, ret);
			close(fd);
			l->st.refused++;
			continue;
		}
		p = slot_for(l, peer);
		*p = (struct pending){
			.c = c,
			.since_ns = now_ns(),
			.events = POLLIN,
		};
		p->deadline_ns = p->since_ns + l->cfg.handshake_ms * 1000000ull;
		memcpy(p->peer, peer, sizeof(peer));
	}
}

/* A channel role by name in logs (ROLE_DATA), whatever a peer sent. */
static const char *role_name(int role)
{
	const ProtobufCEnumValue *v;

	v = protobuf_c_enum_descriptor_get_value(&mig__role__descriptor,
						 role);
	return v ? v->name : "unknown";
}

/*
 * Advance pending @p. Returns true with *@out and *@hi set when it is a
 * connection the caller wants; otherwise it stays pending or is dropped.
 */
static bool advance(struct mig_listener *l, struct pending *p,
		    mig_listener_want_fn want, void *arg,
		    struct mig_conn **out, struct mig_hello_info *hi)
{
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	int ret;

	p->spoke = true;
	ret = mig_conn_server_step(p->c,
				   MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_HELLO),
				   &p->events, &h, &m);
	if (ret == -EAGAIN)
		return false;
	if (!ret)
		ret = mig_hello_take(h.type, m, hi);
	if (!ret)
		ret = mig_conn_set_blocking(p->c, l->cfg.io_ms);
	if (ret) {
		drop(p, &l->st.refused, "handshake", ret);
		return false;
	}
	if (want && !want(arg, hi)) {
		drop(p, &l->st.refused, "unwanted_hello", -EPROTO);
		return false;
	}
	hv_dbg("mig", "op=accept peer=%s role=%s index=%u", p->peer,
	       role_name((int)hi->role), hi->channel_index);
	*out = p->c;
	p->c = NULL;
	l->st.handed++;
	return true;
}

/* Close what overstayed; the poll timeout until the next deadline. */
static int expire(struct mig_listener *l, uint64_t now)
{
	uint64_t next = now + LISTENER_TICK_MS * 1000000ull;

	for (unsigned i = 0; i < l->cfg.max_pending; i++) {
		struct pending *p = &l->pend[i];

		if (!p->c)
			continue;
		if (now >= p->deadline_ns)
			drop(p, &l->st.timed_out, "handshake_timeout", 0);
		else if (p->deadline_ns < next)
			next = p->deadline_ns;
	}
	return (int)((next - now + 999999) / 1000000);
}

int mig_listener_accept(struct mig_listener *l, unsigned wait_ms,
			mig_listener_want_fn want, void *arg,
			struct mig_conn **out, struct mig_hello_info *hi)
{
	uint64_t end = wait_ms ? now_ns() + wait_ms * 1000000ull : 0;

	for (;;) {
		unsigned n = 1;
		uint64_t now = now_ns();
		int r, tmo;

		if (l->cfg.cancel && atomic_load(l->cfg.cancel))
			return -ECANCELED;
		if (end && now >= end)
			return -ETIMEDOUT;
		tmo = expire(l, now);
		if (end && end - now < (uint64_t)tmo * 1000000ull)
			tmo = (int)((end - now + 999999) / 1000000);
		l->pfd[0] = (struct pollfd){ .fd = l->lfd, .events = POLLIN };
		for (unsigned i = 0; i < l->cfg.max_pending; i++) {
			if (!l->pend[i].c)
				continue;
			l->pfd[n] = (struct pollfd){
				.fd = mig_conn_fd(l->pend[i].c),
				.events = l->pend[i].events,
			};
			l->slot[n - 1] = i;
			n++;
		}
		r = poll(l->pfd, n, tmo);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		for (unsigned k = 1; k < n; k++) {
			struct pending *p = &l->pend[l->slot[k - 1]];

			if (!l->pfd[k].revents || !p->c)
				continue;
			if (advance(l, p, want, arg, out, hi))
				return 0;
		}
		if (l->pfd[0].revents & POLLIN)
			accept_new(l);
	}
}

/* What the data channel Hellos must match: this session, each index once. */
struct session_want {
	const struct mig_session_accept *sa;
	bool seen[MIG_CHANNELS_MAX];
};

static bool want_data(void *arg, const struct mig_hello_info *hi)
{
	struct session_want *w = arg;

	return hi->role == MIG__ROLE__ROLE_DATA &&
	       !memcmp(hi->session_id, w->sa->sid, sizeof(w->sa->sid)) &&
	       hi->nr_channels == w->sa->nchan && !w->seen[hi->channel_index] &&
	       hi->version_min == w->sa->version;
}

static bool want_control(void *arg, const struct mig_hello_info *hi)
{
	const uint8_t *sid = arg;

	return hi->role == MIG__ROLE__ROLE_CONTROL &&
	       (!sid || !memcmp(hi->session_id, sid, MIG_SESSION_ID_LEN));
}

#define WHY(err, ...)                                                       \
	do {                                                                 \
		snprintf(why, why_len, __VA_ARGS__);                         \
		return (err);                                                \
	} while (0)

int mig_listener_accept_session(struct mig_listener *l, unsigned data_ms,
				mig_listener_take_fn take, void *arg,
				struct mig_session_accept *out, char *why,
				size_t why_len)
{
	struct session_want w = { .sa = out };
	struct mig_hello_info hi;
	struct mig_conn *c = NULL;
	int ret;

	ret = mig_listener_accept(l, 0, want_control,
				  (void *)l->cfg.session_id, &c, &hi);
	if (ret == -ECANCELED)
		WHY(ret, "cancelled while listening");
	if (ret)
		WHY(ret, "listen: %s", strerror(-ret));
	ret = mig_conn_set_interruptible(c);
	if (ret) {
		mig_conn_destroy(c);
		WHY(ret, "control channel: %s", strerror(-ret));
	}
	take(arg, -1, c);
	if (mig_version_negotiate(hi.version_min, hi.version_max,
				  &out->version)) {
		Mig__SetupRefuse r = MIG__SETUP_REFUSE__INIT;

		r.reason = MIG__REFUSE_REASON__REFUSE_VERSION;
		r.detail = "no stream version in common";
		mig_conn_send(c, MIG__MSG_TYPE__MSG_SETUP_REFUSE, &r.base, NULL,
			      0);
		WHY(-EPROTONOSUPPORT, "source speaks versions %u..%u",
		    hi.version_min, hi.version_max);
	}
	memcpy(out->sid, hi.session_id, sizeof(out->sid));
	out->nchan = hi.nr_channels;
	ret = mig_hello_send(c, out->version, MIG__ROLE__ROLE_CONTROL,
			     out->sid, 0, out->nchan);
	if (ret)
		WHY(ret, "hello reply: %s", strerror(-ret));
	for (unsigned i = 0; i < out->nchan; i++) {
		ret = mig_listener_accept(l, data_ms, want_data, &w, &c, &hi);
		if (ret)
			WHY(ret, "accept data channel %u of %u: %s", i,
			    out->nchan, strerror(-ret));
		w.seen[hi.channel_index] = true;
		take(arg, (int)hi.channel_index, c);
		ret = mig_hello_send(c, out->version, MIG__ROLE__ROLE_DATA,
				     out->sid, hi.channel_index, out->nchan);
		if (ret)
			WHY(ret, "hello reply on data channel %u: %s",
			    hi.channel_index, strerror(-ret));
	}
	return 0;
}
