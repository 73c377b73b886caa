// SPDX-License-Identifier: MIT
/*
 * The etcd gateway codec (migrated/fleet/etcd_json.c). The answers below
 * are what etcd 3.4.23's gateway sent for the same requests (captured
 * from a 3-member loopback cluster), so they are the golden vectors of
 * the mapping we rely on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "migrated/fleet/etcd.h"
#include "migrated/fleet/etcd_json.h"
#include "hvcore/types.h"
#include "tests/harness/hv_test.h"

#define HDR                                                                  \
	"\"header\":{\"cluster_id\":\"177295208406875530\",\"member_id\":"   \
	"\"11322910662820092261\",\"revision\":\"2\",\"raft_term\":\"2\"}"

static int range(const char *body, struct migd_etcd_kvs *kvs, char *err)
{
	return migd_etcd_parse_range(body, strlen(body), kvs, err, 256);
}

static void test_b64_round_trip_and_refusals(void)
{
	static const char *const bad[] = { "Zm9", "Zm9v!", "Z===", "=m9v",
					   "Zm=v", "Zg=A" };
	char *s, *d;
	size_t n;

	for (size_t len = 0; len < 8; len++) {
		s = migd_etcd_b64("abcdefgh", len);
		CU_ASSERT_EQUAL_FATAL(migd_etcd_unb64(s, 64, &d, &n), 0);
		CU_ASSERT_EQUAL(n, len);
		CU_ASSERT_EQUAL(memcmp(d, "abcdefgh", len), 0);
		CU_ASSERT_EQUAL(d[n], '\0');
		free(s);
		free(d);
	}
	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++)
		CU_ASSERT_EQUAL(migd_etcd_unb64(bad[i], 64, &d, &n), -EPROTO);
	/* Over the caller's bound: refused, not truncated. */
	CU_ASSERT_EQUAL(migd_etcd_unb64("YWJjZGVm", 5, &d, &n), -EPROTO);
	CU_ASSERT_EQUAL(migd_etcd_unb64("YWJjZGVm", 6, &d, &n), 0);
	free(d);
}

static void test_range_answer_decoded(void)
{
	struct migd_etcd_kvs kvs;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(
		range("{" HDR ",\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":"
		      "\"2\",\"mod_revision\":\"7\",\"version\":\"3\",\"value\":"
		      "\"YmFy\",\"lease\":\"99\"}],\"count\":\"1\"}",
		      &kvs, err), 0);
	CU_ASSERT_EQUAL_FATAL(kvs.n, 1);
	CU_ASSERT_EQUAL(kvs.revision, 2);
	CU_ASSERT_STRING_EQUAL(kvs.kv[0].key, "foo");
	CU_ASSERT_EQUAL(kvs.kv[0].value_len, 3);
	CU_ASSERT_STRING_EQUAL(kvs.kv[0].value, "bar");
	CU_ASSERT_EQUAL(kvs.kv[0].create_revision, 2);
	CU_ASSERT_EQUAL(kvs.kv[0].mod_revision, 7);
	CU_ASSERT_EQUAL(kvs.kv[0].version, 3);
	CU_ASSERT_EQUAL(kvs.kv[0].lease, 99);
	migd_etcd_kvs_free(&kvs);
	/* No key: the gateway leaves "kvs" out. */
	CU_ASSERT_EQUAL(range("{" HDR "}", &kvs, err), 0);
	CU_ASSERT_EQUAL(kvs.n, 0);
	migd_etcd_kvs_free(&kvs);
}

static void test_bad_answers_are_refused_with_a_reason(void)
{
	static const struct {
		const char *body;
		const char *why;
	} bad[] = {
		{ "", "not JSON" },
		{ "[1]", "not a JSON object" },
		{ "{\"kvs\":[]}", "no header" },
		{ "{" HDR ",\"kvs\":{}}", "wrong type" },
		{ "{" HDR ",\"kvs\":[1]}", "not an object" },
		{ "{" HDR ",\"kvs\":[{\"key\":\"@@@@\"}]}", "base64" },
		{ "{" HDR ",\"kvs\":[{\"value\":\"YmFy\"}]}", "empty" },
		{ "{" HDR ",\"kvs\":[{\"key\":\"Zm9v\",\"version\":\"1x\"}]}",
		  "not an int64" },
		{ "{" HDR ",\"kvs\":[{\"key\":\"Zm9v\",\"version\":[]}]}",
		  "not a number" },
		{ "{\"header\":{\"revision\":\"99999999999999999999\"}}",
		  "not an int64" },
		{ "{" HDR ",\"kvs\":[{\"key\":\"Zm9v\"}],\"more\":\"yes\"}",
		  "not a boolean" },
	};
	struct migd_etcd_kvs kvs = { 0 };
	char err[256];

	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(range(bad[i].body, &kvs, err), -EPROTO);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].why));
		CU_ASSERT_EQUAL(kvs.n, 0); /* untouched */
	}
	/* A key with a NUL in it is not one of ours ("a\0b"). */
	CU_ASSERT_EQUAL(range("{" HDR ",\"kvs\":[{\"key\":\"YQBi\"}]}", &kvs,
			      err), -EPROTO);
}

static void test_oversized_value_refused(void)
{
	size_t n = MIGD_ETCD_VALUE_MAX + 1;
	char *v = calloc(1, n), *b = migd_etcd_b64(v, n), *body;
	struct migd_etcd_kvs kvs;
	char err[256];

	CU_ASSERT_FATAL(asprintf(&body, "{" HDR ",\"kvs\":[{\"key\":\"Zm9v\","
				 "\"value\":\"%s\"}]}", b) > 0);
	CU_ASSERT_EQUAL(range(body, &kvs, err), -EPROTO);
	free(body);
	free(b);
	free(v);
}

static void test_txn_request_golden(void)
{
	const struct migd_etcd_cmp cmp[] = {
		{ .key = "foo", .target = MIGD_ETCD_T_VERSION,
		  .result = MIGD_ETCD_R_EQUAL, .num = 0 },
		{ .key = "foo", .target = MIGD_ETCD_T_VALUE,
		  .result = MIGD_ETCD_R_NOT_EQUAL, .value = "x",
		  .value_len = 1 },
	};
	const struct migd_etcd_op ok[] = {
		{ .kind = MIGD_ETCD_OP_PUT, .key = "foo", .value = "bar",
		  .value_len = 3, .lease = 7 },
		{ .kind = MIGD_ETCD_OP_DELETE, .key = "old" },
	};
	const struct migd_etcd_op els[] = {
		{ .kind = MIGD_ETCD_OP_RANGE, .key = "foo" },
	};
	const struct migd_etcd_cmp badcmp = { .key = "foo" };
	char *s = migd_etcd_req_txn(cmp, 2, ok, 2, els, 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(
		s,
		"{\"compare\":[{\"key\":\"Zm9v\",\"target\":\"VERSION\","
		"\"result\":\"EQUAL\",\"version\":\"0\"},{\"key\":\"Zm9v\","
		"\"target\":\"VALUE\",\"result\":\"NOT_EQUAL\",\"value\":"
		"\"eA==\"}],\"success\":[{\"request_put\":{\"key\":\"Zm9v\","
		"\"value\":\"YmFy\",\"lease\":\"7\"}},{\"request_delete_range\":"
		"{\"key\":\"b2xk\"}}],\"failure\":[{\"request_range\":{\"key\":"
		"\"Zm9v\"}}]}");
	free(s);
	/* An unset target or result is a programmer's error, not a txn
	 * that compares nothing. */
	CU_ASSERT_PTR_NULL(migd_etcd_req_txn(&badcmp, 1, ok, 1, NULL, 0));
}

static void test_prefix_range_end(void)
{
	char *s = migd_etcd_req_range("hosts/", true, 0);

	/* "hosts/" .. "hosts0" */
	CU_ASSERT_STRING_EQUAL(s, "{\"key\":\"aG9zdHMv\",\"range_end\":"
				  "\"aG9zdHMw\"}");
	free(s);
	s = migd_etcd_req_range("\xff", true, 5);
	/* Every key from 0xff on: range_end "\0". */
	CU_ASSERT_STRING_EQUAL(s, "{\"key\":\"\\/w==\",\"range_end\":\"AA==\","
				  "\"limit\":\"5\"}");
	free(s);
}

static void test_txn_answer_branches(void)
{
	const char *failed =
		"{" HDR ",\"responses\":[{\"response_range\":{\"header\":{"
		"\"revision\":\"2\"},\"kvs\":[{\"key\":\"Zm9v\",\"create_revision"
		"\":\"2\",\"mod_revision\":\"2\",\"version\":\"1\",\"value\":"
		"\"YmFy\"}],\"count\":\"1\"}}]}";
	const char *ok = "{" HDR ",\"succeeded\":true,\"responses\":[{"
			 "\"response_put\":{\"header\":{\"revision\":\"3\"}}}]}";
	const char *notbool = "{" HDR ",\"succeeded\":1}";
	struct migd_etcd_kvs kvs;
	bool s = true;
	char err[256];

	CU_ASSERT_EQUAL(migd_etcd_parse_txn(failed, strlen(failed), &s, &kvs,
					    err, sizeof(err)), 0);
	CU_ASSERT_FALSE(s); /* "succeeded" left out = false */
	CU_ASSERT_EQUAL_FATAL(kvs.n, 1);
	CU_ASSERT_STRING_EQUAL(kvs.kv[0].value, "bar");
	migd_etcd_kvs_free(&kvs);
	CU_ASSERT_EQUAL(migd_etcd_parse_txn(ok, strlen(ok), &s, NULL, err,
					    sizeof(err)), 0);
	CU_ASSERT_TRUE(s);
	CU_ASSERT_EQUAL(migd_etcd_parse_txn(notbool, strlen(notbool), &s,
					    NULL, err, sizeof(err)), -EPROTO);
}

static void test_lease_answers(void)
{
	const char *grant = "{" HDR ",\"ID\":\"6441733193308872455\","
			    "\"TTL\":\"5\"}";
	const char *ka = "{\"result\":{" HDR ",\"ID\":\"64\",\"TTL\":\"4\"}}\n"
			 "{\"result\":{" HDR ",\"ID\":\"64\"}}";
	const char *gone = "{\"result\":{" HDR ",\"ID\":\"12345\"}}";
	int64_t id, ttl = 0;
	char err[256];

	CU_ASSERT_EQUAL(migd_etcd_parse_grant(grant, strlen(grant), &id, &ttl,
					      err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(id, 6441733193308872455LL);
	CU_ASSERT_EQUAL(ttl, 5);
	CU_ASSERT_EQUAL(migd_etcd_parse_grant("{" HDR "}", strlen(HDR) + 2,
					      &id, &ttl, err, sizeof(err)),
			-EPROTO);
	/* The first line of the stream is the answer to our one request. */
	CU_ASSERT_EQUAL(migd_etcd_parse_keepalive(ka, strlen(ka), &ttl, err,
						  sizeof(err)), 0);
	CU_ASSERT_EQUAL(ttl, 4);
	/* An expired or unknown lease: the gateway answers without TTL. */
	CU_ASSERT_EQUAL(migd_etcd_parse_keepalive(gone, strlen(gone), &ttl,
						  err, sizeof(err)), -ENOENT);
	CU_ASSERT_EQUAL(migd_etcd_parse_keepalive("{}", 2, &ttl, err,
						  sizeof(err)), -EPROTO);
}

static void test_error_answers_map_to_errno(void)
{
	const char *nf = "{\"error\":\"etcdserver: requested lease not found\","
			 "\"message\":\"etcdserver: requested lease not found\","
			 "\"code\":5}";
	const char *unav = "{\"error\":\"etcdserver: no leader\",\"message\":"
			   "\"etcdserver: no leader\",\"code\":14}";
	char err[256];

	CU_ASSERT_EQUAL(migd_etcd_parse_error(404, nf, strlen(nf), err,
					      sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "requested lease not found"));
	CU_ASSERT_EQUAL(migd_etcd_parse_error(503, unav, strlen(unav), err,
					      sizeof(err)), -EAGAIN);
	CU_ASSERT_EQUAL(migd_etcd_parse_error(502, "<html>", 6, err,
					      sizeof(err)), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "HTTP 502"));
}

static void test_endpoints_parsed_and_bad_ones_named(void)
{
	static const char *const bad[] = {
		"", ",", "ftp://h:1", "h", "h:", ":1", "http://h:1/v3",
		"h:12x", "http://",
	};
	struct migd_etcd_cfg cfg = {
		.endpoints = "127.0.0.1:2379,http://[::1]:1,https://h:3/",
	};
	struct migd_etcd *e = NULL, *keep = (void *)1;
	char err[256], cur[64];

	CU_ASSERT_EQUAL_FATAL(migd_etcd_create(&cfg, &e, err, sizeof(err)), 0);
	migd_etcd_current(e, cur, sizeof(cur));
	CU_ASSERT_STRING_EQUAL(cur, "http://127.0.0.1:2379");
	migd_etcd_destroy(e);
	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++) {
		cfg.endpoints = bad[i];
		err[0] = '\0';
		CU_ASSERT_EQUAL(migd_etcd_create(&cfg, &keep, err, sizeof(err)),
				-EINVAL);
		CU_ASSERT(strstr(err, "etcd endpoint") != NULL);
		CU_ASSERT_PTR_EQUAL(keep, (void *)1);
	}
	migd_etcd_destroy(NULL);
}

/* Nobody listens: every member is named in the error, and the call says
 * "unreachable", not "timed out" or a protocol error. */
static void test_unreachable_cluster_is_named(void)
{
	struct migd_etcd_cfg cfg = {
		.endpoints = "127.0.0.1:1,127.0.0.1:2", .timeout_ms = 500,
	};
	struct migd_etcd *e;
	char err[256], msg[512];
	bool found;

	CU_ASSERT_EQUAL_FATAL(migd_etcd_create(&cfg, &e, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(migd_etcd_get(e, "k", &found, NULL), -ECONNREFUSED);
	migd_etcd_error(e, msg, sizeof(msg));
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "127.0.0.1:1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "127.0.0.1:2"));
	migd_etcd_destroy(e);
}

static CU_TestInfo tests[] = {
	{ "b64_round_trip_and_refusals", test_b64_round_trip_and_refusals },
	{ "range_answer_decoded", test_range_answer_decoded },
	{ "bad_answers_are_refused_with_a_reason",
	  test_bad_answers_are_refused_with_a_reason },
	{ "oversized_value_refused", test_oversized_value_refused },
	{ "txn_request_golden", test_txn_request_golden },
	{ "prefix_range_end", test_prefix_range_end },
	{ "txn_answer_branches", test_txn_answer_branches },
	{ "lease_answers", test_lease_answers },
	{ "error_answers_map_to_errno", test_error_answers_map_to_errno },
	{ "endpoints_parsed_and_bad_ones_named",
	  test_endpoints_parsed_and_bad_ones_named },
	{ "unreachable_cluster_is_named", test_unreachable_cluster_is_named },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/fleet/etcd_json", NULL, NULL, tests);
