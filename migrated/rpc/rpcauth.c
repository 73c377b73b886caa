// SPDX-License-Identifier: MIT
/*
 * migd_rpcauth: roles of TCP control-RPC clients (rpcauth.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/rpc/rpcauth.h"
#include "proto/control.pb-c.h"

static const char *const role_names[] = {
	[MIGD_RPC_ROLE_NONE] = "none",
	[MIGD_RPC_ROLE_READ_ONLY] = "read-only",
	[MIGD_RPC_ROLE_PEER] = "peer-daemon",
	[MIGD_RPC_ROLE_OPERATOR] = "operator",
};

/*
 * The least role each call needs. Roles are ordered except for one pair:
 * peer-daemon holds everything read-only holds plus mig_incoming, and
 * operator holds everything. A call missing here needs operator, so a call
 * added to the protocol is closed to the lesser roles until it is listed.
 */
static const enum migd_rpc_role needs[] = {
	[MIGD__REQUEST__CALL_PING] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_CAPABILITIES] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_VM_LIST] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_VM_INSPECT] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_MIG_STATUS] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_MIG_WATCH] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_SUBSCRIBE] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_UNSUBSCRIBE] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_DIRTY_RATE] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_CONVERGE_ESTIMATE] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_VM_CHECK] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_HOST_DRAIN_STATUS] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_WORKER_INFO] = MIGD_RPC_ROLE_READ_ONLY,
	[MIGD__REQUEST__CALL_MIG_INCOMING] = MIGD_RPC_ROLE_PEER,
};

enum migd_rpc_role migd_rpc_role_parse(const char *s)
{
	for (size_t i = 0; i < HV_ARRAY_SIZE(role_names); i++)
		if (role_names[i] && s && !strcmp(s, role_names[i]))
			return (enum migd_rpc_role)i;
	return MIGD_RPC_ROLE_INVALID;
}

const char *migd_rpc_role_name(enum migd_rpc_role role)
{
	if ((unsigned)role < HV_ARRAY_SIZE(role_names) && role_names[role])
		return role_names[role];
	return "?";
}

int migd_rpc_rule_parse(const char *s, struct migd_rpc_rule *out)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	enum migd_rpc_role role;
	size_t n;

	if (!colon || colon == s)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (n > MIGD_RPC_ID_MAX)
		return -EINVAL;
	role = migd_rpc_role_parse(colon + 1);
	if (role == MIGD_RPC_ROLE_INVALID)
		return -EINVAL;
	memcpy(out->id, s, n);
	out->id[n] = '\0';
	out->role = role;
	return 0;
}

enum migd_rpc_role migd_rpcauth_role(const struct migd_rpc_rule *rules,
				     unsigned nr_rules, enum migd_rpc_role dflt,
				     const char *const *ids, unsigned nr_ids,
				     const char **matched)
{
	for (unsigned r = 0; r < nr_rules; r++) {
		for (unsigned i = 0; i < nr_ids; i++) {
			if (!ids[i] || strcmp(ids[i], rules[r].id))
				continue;
			if (matched)
				*matched = ids[i];
			return rules[r].role;
		}
	}
	if (matched)
		*matched = NULL;
	if (dflt != MIGD_RPC_ROLE_INVALID)
		return dflt;
	return nr_rules ? MIGD_RPC_ROLE_NONE : MIGD_RPC_ROLE_OPERATOR;
}

enum migd_rpc_role migd_rpcauth_needs(unsigned call_case)
{
	if (call_case < HV_ARRAY_SIZE(needs) && needs[call_case])
		return needs[call_case];
	return MIGD_RPC_ROLE_OPERATOR;
}

enum migd_rpc_role migd_rpcauth_needs_request(const Migd__Request *req)
{
	if (req->call_case == MIGD__REQUEST__CALL_MIG_INCOMING &&
	    req->mig_incoming && req->mig_incoming->insecure)
		return MIGD_RPC_ROLE_OPERATOR;
	return migd_rpcauth_needs((unsigned)req->call_case);
}

bool migd_rpcauth_covers(enum migd_rpc_role role, enum migd_rpc_role need)
{
	switch (role) {
	case MIGD_RPC_ROLE_OPERATOR:
		return true;
	case MIGD_RPC_ROLE_PEER:
		return need == MIGD_RPC_ROLE_READ_ONLY ||
		       need == MIGD_RPC_ROLE_PEER;
	case MIGD_RPC_ROLE_READ_ONLY:
		return need == MIGD_RPC_ROLE_READ_ONLY;
	default:
		return false;
	}
}

bool migd_rpcauth_allows(enum migd_rpc_role role, unsigned call_case)
{
	return migd_rpcauth_covers(role, migd_rpcauth_needs(call_case));
}
