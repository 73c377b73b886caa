// SPDX-License-Identifier: MIT
/*
 * Where a host drain call naming another host goes
 * (migrated/host/drain_route.c), and the drain's overall state
 * (migd_drain_state_name, host_drain_calls.c).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/host/drain_route.h"
#include "migrated/host/host_drain_priv.h"
#include "tests/harness/hv_test.h"

static struct migd_etcd_kv kv(const char *key, const char *value)
{
	struct migd_etcd_kv k = { .key = (char *)key, .value = (char *)value,
				  .value_len = strlen(value) };

	return k;
}

static void test_route_finds_the_host(void)
{
	struct migd_etcd_kv k[] = {
		kv("a", "{\"id\":\"a\",\"rpc\":\"127.0.0.1:7001\"}"),
		kv("b", "{\"id\":\"b\",\"rpc\":\"[::1]:7002\","
			"\"draining\":true}"),
	};
	struct migd_etcd_kvs kvs = { .kv = k, .n = 2 };
	char addr[64], text[64];
	uint16_t port = 0;

	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "a", "", addr, sizeof(addr),
					 &port, text, sizeof(text)), 0);
	CU_ASSERT_STRING_EQUAL(addr, "127.0.0.1");
	CU_ASSERT_EQUAL(port, 7001);
	CU_ASSERT_STRING_EQUAL(text, "127.0.0.1:7001");
	/* v6, and a draining host is still reachable (to cancel, undrain) */
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "b", "127.0.0.1:7001", addr,
					 sizeof(addr), &port, text,
					 sizeof(text)), 0);
	CU_ASSERT_STRING_EQUAL(addr, "::1");
	CU_ASSERT_EQUAL(port, 7002);
}

static void test_route_refusals(void)
{
	struct migd_etcd_kv k[] = {
		kv("a", "{\"rpc\":\"127.0.0.1:7001\"}"),
		kv("norpc", "{\"rpc\":\"\"}"),
		kv("noport", "{\"rpc\":\"127.0.0.1\"}"),
		kv("junk", "not json"),
		kv("ab", "{\"rpc\":\"127.0.0.1:7003\"}"),
	};
	struct migd_etcd_kvs kvs = { .kv = k, .n = HV_ARRAY_SIZE(k) };
	char addr[64] = "", text[64];
	uint16_t port = 0;

	/* an exact id, not a prefix */
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "x", "", addr, sizeof(addr),
					 &port, text, sizeof(text)), -ENOENT);
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "", "", addr, sizeof(addr),
					 &port, text, sizeof(text)), -ENOENT);
	CU_ASSERT_EQUAL(migd_drain_route(NULL, "a", "", addr, sizeof(addr),
					 &port, text, sizeof(text)), -ENOENT);
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "norpc", "", addr,
					 sizeof(addr), &port, text,
					 sizeof(text)), -EADDRNOTAVAIL);
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "noport", "", addr,
					 sizeof(addr), &port, text,
					 sizeof(text)), -EADDRNOTAVAIL);
	CU_ASSERT_STRING_EQUAL(text, "127.0.0.1");
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "junk", "", addr,
					 sizeof(addr), &port, text,
					 sizeof(text)), -EADDRNOTAVAIL);
	CU_ASSERT_STRING_EQUAL(text, "");
	/* a stale record naming this daemon: never call ourselves */
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "a", "127.0.0.1:7001", addr,
					 sizeof(addr), &port, text,
					 sizeof(text)), -ELOOP);
	CU_ASSERT_EQUAL(port, 0);
	CU_ASSERT_STRING_EQUAL(addr, "");
	/* the address does not fit the caller's buffer */
	CU_ASSERT_EQUAL(migd_drain_route(&kvs, "ab", "", addr, 4, &port,
					 text, sizeof(text)), -EADDRNOTAVAIL);
}

static void test_state_names(void)
{
	CU_ASSERT_STRING_EQUAL(migd_drain_state_name(true, false, false),
			       "running");
	CU_ASSERT_STRING_EQUAL(migd_drain_state_name(true, true, false),
			       "cancelling");
	CU_ASSERT_STRING_EQUAL(migd_drain_state_name(false, true, false),
			       "cancelled");
	/* cancelled wins over an error of the drain as a whole */
	CU_ASSERT_STRING_EQUAL(migd_drain_state_name(false, true, true),
			       "cancelled");
	CU_ASSERT_STRING_EQUAL(migd_drain_state_name(false, false, true),
			       "failed");
	CU_ASSERT_STRING_EQUAL(migd_drain_state_name(false, false, false),
			       "finished");
}

static CU_TestInfo tests[] = {
	{"route_finds_the_host", test_route_finds_the_host},
	{"route_refusals", test_route_refusals},
	{"state_names", test_state_names},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/host/drain_route", NULL, NULL, tests);
