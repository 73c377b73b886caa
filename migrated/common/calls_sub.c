// SPDX-License-Identifier: MIT
/*
 * Subscriptions to events and the checks of a MigRef (calls.h), shared by
 * the daemon and a worker; nothing here links the engine. Loop thread.
 */
#include <stdio.h>

#include "migrated/rpc/parse.h"
#include "migrated/common/calls.h"

bool migd_mig_ref_check(struct migd_call *call, const Migd__MigRef *r)
{
	if (r && (r->id || (r->vm && *r->vm)))
		return true;
	migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
		       "migration id or VM name missing");
	return false;
}

void migd_mig_ref_missing(struct migd_call *call, const Migd__MigRef *r)
{
	if (r->id)
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no migration %llu", (unsigned long long)r->id);
	else
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no migration of VM '%s'", r->vm);
}

uint64_t migd_sub_interval_ns(uint32_t ms)
{
	if (!ms)
		ms = MIGD_PROGRESS_INTERVAL_MS;
	if (ms < MIGD_PROGRESS_INTERVAL_MIN_MS)
		ms = MIGD_PROGRESS_INTERVAL_MIN_MS;
	return (uint64_t)ms * 1000000ull;
}

void migd_call_subscribe(struct migd_call *call)
{
	const Migd__SubscribeRequest *r = call->req->subscribe;
	uint32_t kinds = 0;
	Migd__SubscribeResult *res;
	struct migd_sub *s;

	for (size_t i = 0; i < r->n_kinds; i++) {
		if (r->kinds[i] <= MIGD__EVENT_KIND__EVENT_KIND_INVALID ||
		    r->kinds[i] >= MIGD__EVENT_KIND__EVENT_KIND_END) {
			migd_call_fail(call,
				       MIGD__STATUS__STATUS_INVALID_ARGUMENT,
				       "cannot subscribe to event kind %d",
				       r->kinds[i]);
			return;
		}
		kinds |= 1u << r->kinds[i];
	}
	if (r->vm && *r->vm && !migd_name_valid(r->vm)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "invalid VM name '%s'", r->vm);
		return;
	}
	s = migd_server_subscribe(call);
	if (!s)
		return;
	s->kinds = kinds;
	if (r->vm)
		snprintf(s->vm, sizeof(s->vm), "%s", r->vm);
	s->mig_id = r->migration_id;
	s->interval_ns = migd_sub_interval_ns(r->interval_ms);
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__subscribe_result__init(res);
	res->subscription = call->req->id;
	call->resp->result_case = MIGD__RESPONSE__RESULT_SUBSCRIBE;
	call->resp->subscribe = res;
}

void migd_call_unsubscribe(struct migd_call *call)
{
	uint64_t id = call->req->unsubscribe->subscription;

	if (migd_server_unsubscribe(call->conn, id))
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no subscription %llu on this connection",
			       (unsigned long long)id);
}
