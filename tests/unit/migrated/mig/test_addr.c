// SPDX-License-Identifier: MIT
/*
 * mig_addr_resolve() (migrated/mig/addr.h): numeric IPv4 and IPv6
 * addresses without the resolver, "localhost" through it, the listener's
 * empty host, and the refusals.
 */
#include "tests/harness/hv_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "migrated/mig/addr.h"

static void test_numeric_addresses(void)
{
	struct mig_addr a[MIG_ADDR_MAX];
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a[0].ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a[0].ss;

	CU_ASSERT_EQUAL(mig_addr_resolve("127.0.0.1", 4000, false, a, 8), 1);
	CU_ASSERT_EQUAL(a[0].ss.ss_family, AF_INET);
	CU_ASSERT_EQUAL(ntohs(s4->sin_port), 4000);
	CU_ASSERT_EQUAL(a[0].len, sizeof(*s4));
	CU_ASSERT_EQUAL(mig_addr_resolve("::1", 5, false, a, 8), 1);
	CU_ASSERT_EQUAL(a[0].ss.ss_family, AF_INET6);
	CU_ASSERT_EQUAL(ntohs(s6->sin6_port), 5);
	CU_ASSERT(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
	/* A listener's empty host: every IPv4 address. */
	CU_ASSERT_EQUAL(mig_addr_resolve("", 7, true, a, 1), 1);
	CU_ASSERT_EQUAL(a[0].ss.ss_family, AF_INET);
	CU_ASSERT_EQUAL(s4->sin_addr.s_addr, htonl(INADDR_ANY));
}

static void test_localhost_resolves_to_loopback(void)
{
	struct mig_addr a[MIG_ADDR_MAX];
	int n = mig_addr_resolve("localhost", 80, false, a, MIG_ADDR_MAX);

	CU_ASSERT_FATAL(n >= 1);
	for (int i = 0; i < n; i++) {
		const struct sockaddr_in *s4 =
			(const struct sockaddr_in *)&a[i].ss;
		const struct sockaddr_in6 *s6 =
			(const struct sockaddr_in6 *)&a[i].ss;

		if (a[i].ss.ss_family == AF_INET) {
			CU_ASSERT_EQUAL(ntohl(s4->sin_addr.s_addr) >> 24, 127);
			CU_ASSERT_EQUAL(ntohs(s4->sin_port), 80);
		} else {
			CU_ASSERT_EQUAL(a[i].ss.ss_family, AF_INET6);
			CU_ASSERT(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
			CU_ASSERT_EQUAL(ntohs(s6->sin6_port), 80);
		}
	}
}

static void test_refusals(void)
{
	struct mig_addr a[2];

	CU_ASSERT_EQUAL(mig_addr_resolve("", 1, false, a, 2), -EINVAL);
	CU_ASSERT_EQUAL(mig_addr_resolve(NULL, 1, false, a, 2), -EINVAL);
	CU_ASSERT_EQUAL(mig_addr_resolve("127.0.0.1", 1, false, a, 0),
			-EINVAL);
	/* ".invalid" never resolves (RFC 6761). */
	CU_ASSERT_EQUAL(mig_addr_resolve("no-such-host.invalid", 1, false, a,
					 2),
			-EHOSTUNREACH);
	/* Brackets are the caller's to strip (parse.h). */
	CU_ASSERT_EQUAL(mig_addr_resolve("[::1]", 1, false, a, 2),
			-EHOSTUNREACH);
}

static CU_TestInfo tests[] = {
	{ "numeric_addresses", test_numeric_addresses },
	{ "localhost_resolves_to_loopback",
	  test_localhost_resolves_to_loopback },
	{ "refusals", test_refusals },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/addr", NULL, NULL, tests);
