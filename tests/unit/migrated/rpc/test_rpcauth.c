// SPDX-License-Identifier: MIT
/*
 * Roles of TCP control-RPC clients (migrated/rpc/rpcauth.c).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/rpc/rpcauth.h"
#include "proto/control.pb-c.h"
#include "tests/harness/hv_test.h"

static void test_read_only_cannot_change_anything(void)
{
	static const unsigned writes[] = {
		MIGD__REQUEST__CALL_VM_CREATE,
		MIGD__REQUEST__CALL_VM_DESTROY,
		MIGD__REQUEST__CALL_VM_PAUSE,
		MIGD__REQUEST__CALL_VM_RESUME,
		MIGD__REQUEST__CALL_VM_UPDATE,
		MIGD__REQUEST__CALL_MIG_START,
		MIGD__REQUEST__CALL_MIG_INCOMING,
		MIGD__REQUEST__CALL_MIG_CANCEL,
		MIGD__REQUEST__CALL_MIG_TUNE,
		MIGD__REQUEST__CALL_MIG_RESOLVE,
		MIGD__REQUEST__CALL_VM_SET_WORKLOAD,
		MIGD__REQUEST__CALL_WORKER_NAME,
		MIGD__REQUEST__CALL_WORKER_HANDOVER,
	};

	for (size_t i = 0; i < HV_ARRAY_SIZE(writes); i++) {
		CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_READ_ONLY,
						    writes[i]));
		CU_ASSERT_TRUE(
			migd_rpcauth_allows(MIGD_RPC_ROLE_OPERATOR, writes[i]));
	}
	CU_ASSERT_TRUE(migd_rpcauth_allows(MIGD_RPC_ROLE_READ_ONLY,
					   MIGD__REQUEST__CALL_VM_LIST));
	CU_ASSERT_TRUE(migd_rpcauth_allows(MIGD_RPC_ROLE_READ_ONLY,
					   MIGD__REQUEST__CALL_MIG_STATUS));
}

static void test_peer_receives_but_cannot_destroy(void)
{
	CU_ASSERT_TRUE(migd_rpcauth_allows(MIGD_RPC_ROLE_PEER,
					   MIGD__REQUEST__CALL_MIG_INCOMING));
	CU_ASSERT_TRUE(migd_rpcauth_allows(MIGD_RPC_ROLE_PEER,
					   MIGD__REQUEST__CALL_MIG_STATUS));
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_PEER,
					    MIGD__REQUEST__CALL_VM_DESTROY));
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_PEER,
					    MIGD__REQUEST__CALL_MIG_RESOLVE));
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_PEER,
					    MIGD__REQUEST__CALL_MIG_START));
}

static void test_peer_cannot_open_an_insecure_incoming(void)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigIncomingRequest in = MIGD__MIG_INCOMING_REQUEST__INIT;

	req.call_case = MIGD__REQUEST__CALL_MIG_INCOMING;
	req.mig_incoming = &in;
	CU_ASSERT_EQUAL(migd_rpcauth_needs_request(&req), MIGD_RPC_ROLE_PEER);
	in.insecure = true;
	CU_ASSERT_EQUAL(migd_rpcauth_needs_request(&req),
			MIGD_RPC_ROLE_OPERATOR);
	CU_ASSERT_FALSE(migd_rpcauth_covers(MIGD_RPC_ROLE_PEER,
					    migd_rpcauth_needs_request(&req)));
	CU_ASSERT_TRUE(migd_rpcauth_covers(MIGD_RPC_ROLE_OPERATOR,
					   migd_rpcauth_needs_request(&req)));
}

static void test_unknown_calls_and_role_none_are_closed(void)
{
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_READ_ONLY, 9999));
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_PEER, 9999));
	CU_ASSERT_TRUE(migd_rpcauth_allows(MIGD_RPC_ROLE_OPERATOR, 9999));
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_NONE,
					    MIGD__REQUEST__CALL_PING));
	CU_ASSERT_FALSE(migd_rpcauth_allows(MIGD_RPC_ROLE_INVALID,
					    MIGD__REQUEST__CALL_PING));
	CU_ASSERT_EQUAL(migd_rpcauth_needs(9999), MIGD_RPC_ROLE_OPERATOR);
}

static void test_first_rule_naming_any_identity_wins(void)
{
	struct migd_rpc_rule rules[3];
	const char *ids[] = {"host-7", "peer.example"};
	const char *m = "x";

	CU_ASSERT_EQUAL(
		migd_rpc_rule_parse("peer.example:peer-daemon", &rules[0]), 0);
	CU_ASSERT_EQUAL(migd_rpc_rule_parse("host-7:operator", &rules[1]), 0);
	CU_ASSERT_EQUAL(
		migd_rpc_rule_parse("spiffe://x/y:read-only", &rules[2]), 0);
	CU_ASSERT_STRING_EQUAL(rules[2].id, "spiffe://x/y");
	CU_ASSERT_EQUAL(
		migd_rpcauth_role(rules, 3, MIGD_RPC_ROLE_INVALID, ids, 2, &m),
		MIGD_RPC_ROLE_PEER);
	CU_ASSERT_STRING_EQUAL(m, "peer.example");
}

static void test_default_role_is_operator_only_without_rules(void)
{
	struct migd_rpc_rule r;
	const char *ids[] = {"stranger"};
	const char *m = "x";

	CU_ASSERT_EQUAL(migd_rpc_rule_parse("ops:operator", &r), 0);
	CU_ASSERT_EQUAL(
		migd_rpcauth_role(NULL, 0, MIGD_RPC_ROLE_INVALID, ids, 1, &m),
		MIGD_RPC_ROLE_OPERATOR);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(
		migd_rpcauth_role(&r, 1, MIGD_RPC_ROLE_INVALID, ids, 1, NULL),
		MIGD_RPC_ROLE_NONE);
	CU_ASSERT_EQUAL(
		migd_rpcauth_role(&r, 1, MIGD_RPC_ROLE_READ_ONLY, ids, 1, NULL),
		MIGD_RPC_ROLE_READ_ONLY);
	/* No identity at all matches nothing. */
	CU_ASSERT_EQUAL(
		migd_rpcauth_role(&r, 1, MIGD_RPC_ROLE_INVALID, NULL, 0, NULL),
		MIGD_RPC_ROLE_NONE);
}

static void test_rule_parse_refuses_bad_rules(void)
{
	static const char *const bad[] = {
		"", "ops", ":operator", "ops:", "ops:admin", "ops:Operator",
	};
	struct migd_rpc_rule r = {.id = "keep", .role = MIGD_RPC_ROLE_NONE};
	char longid[300];

	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++)
		CU_ASSERT_EQUAL(migd_rpc_rule_parse(bad[i], &r), -EINVAL);
	memset(longid, 'a', 256);
	strcpy(longid + 256, ":operator");
	CU_ASSERT_EQUAL(migd_rpc_rule_parse(longid, &r), -EINVAL);
	CU_ASSERT_STRING_EQUAL(r.id, "keep");
	CU_ASSERT_EQUAL(migd_rpc_role_parse("read-only"),
			MIGD_RPC_ROLE_READ_ONLY);
	CU_ASSERT_STRING_EQUAL(migd_rpc_role_name(MIGD_RPC_ROLE_PEER),
			       "peer-daemon");
}

static CU_TestInfo tests[] = {
	{"read_only_cannot_change_anything",
	 test_read_only_cannot_change_anything},
	{"peer_receives_but_cannot_destroy",
	 test_peer_receives_but_cannot_destroy},
	{"peer_cannot_open_an_insecure_incoming",
	 test_peer_cannot_open_an_insecure_incoming},
	{"unknown_calls_and_role_none_are_closed",
	 test_unknown_calls_and_role_none_are_closed},
	{"first_rule_naming_any_identity_wins",
	 test_first_rule_naming_any_identity_wins},
	{"default_role_is_operator_only_without_rules",
	 test_default_role_is_operator_only_without_rules},
	{"rule_parse_refuses_bad_rules", test_rule_parse_refuses_bad_rules},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/rpc/rpcauth", NULL, NULL, tests);
