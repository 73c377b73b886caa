// SPDX-License-Identifier: MIT
/*
 * migd_server: subscriptions of a connection and the delivery of events
 * to them (server.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/time.h"
#include "migrated/rpc/server_priv.h"

struct migd_sub *migd_server_subscribe(struct migd_call *call)
{
	struct migd_conn *conn = call->conn;
	struct migd_sub *s;

	for (s = conn->subs; s; s = s->next) {
		if (s->id == call->req->id) {
			migd_call_fail(call,
				       MIGD__STATUS__STATUS_ALREADY_EXISTS,
				       "subscription %llu exists",
				       (unsigned long long)s->id);
			return NULL;
		}
	}
	if (conn->nr_subs >= MIGD_SUBS_PER_CONN) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "at most %u subscriptions per connection",
			       MIGD_SUBS_PER_CONN);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return NULL;
	}
	s->id = call->req->id;
	s->interval_ns = MIGD_PROGRESS_INTERVAL_MS * 1000000ull;
	s->next = conn->subs;
	conn->subs = s;
	conn->nr_subs++;
	migd__conn_idle_arm(conn); /* a listener: no idle deadline */
	return s;
}

int migd_server_unsubscribe(struct migd_conn *conn, uint64_t id)
{
	for (struct migd_sub **pp = &conn->subs; *pp; pp = &(*pp)->next) {
		struct migd_sub *s = *pp;

		if (s->id == id) {
			*pp = s->next;
			conn->nr_subs--;
			free(s);
			migd__conn_idle_arm(conn);
			return 0;
		}
	}
	return -ENOENT;
}

static bool sub_matches(const struct migd_sub *s, const Migd__Event *ev,
			const char *vm, uint64_t mig_id)
{
	if (s->kinds && !(s->kinds & (1u << ev->kind)))
		return false;
	if (s->vm[0] && (!vm || strcmp(s->vm, vm)))
		return false;
	if (s->mig_id && s->mig_id != mig_id)
		return false;
	return true;
}

static void send_event(struct migd_conn *conn, struct migd_sub *s,
		       Migd__Event *ev)
{
	Migd__ServerMessage sm = MIGD__SERVER_MESSAGE__INIT;

	ev->subscription = s->id;
	ev->seq = ++conn->event_seq;
	sm.msg_case = MIGD__SERVER_MESSAGE__MSG_EVENT;
	sm.event = ev;
	migd__conn_send(conn, &sm.base);
}

void migd_server_publish(struct migd_server *srv, Migd__Event *ev,
			 const char *vm, uint64_t mig_id, bool mig_final)
{
	uint64_t now = hv_now_ns();
	struct migd_conn *conn, *cnext;

	ev->time_unix_ns = hv_now_unix_ns();
	for (conn = srv->conns; conn; conn = cnext) {
		struct migd_sub **pp = &conn->subs;

		cnext = conn->next; /* a send may close the connection */
		while (*pp && !conn->closing) {
			struct migd_sub *s = *pp;

			if (!sub_matches(s, ev, vm, mig_id)) {
				pp = &s->next;
				continue;
			}
			if (ev->kind == MIGD__EVENT_KIND__EVENT_KIND_MIG_PROGRESS) {
				if (now - s->last_progress_ns < s->interval_ns) {
					pp = &s->next;
					continue;
				}
				s->last_progress_ns = now;
			}
			send_event(conn, s, ev);
			if (mig_final && s->end_with_mig &&
			    s->mig_id == mig_id && !conn->closing) {
				Migd__Event end = MIGD__EVENT__INIT;
				Migd__EndEvent body = MIGD__END_EVENT__INIT;

				body.status = MIGD__STATUS__STATUS_OK;
				body.message = (char *)"migration finished";
				end.kind = MIGD__EVENT_KIND__EVENT_KIND_END;
				end.time_unix_ns = ev->time_unix_ns;
				end.body_case = MIGD__EVENT__BODY_END;
				end.end = &body;
				send_event(conn, s, &end);
				*pp = s->next;
				conn->nr_subs--;
				free(s);
				migd__conn_idle_arm(conn);
				continue;
			}
			pp = &s->next;
		}
	}
}
