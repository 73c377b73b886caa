// SPDX-License-Identifier: MIT
/*
 * The service manager's notify protocol (migrated/host/notify.c): the
 * exact datagrams on a socket bound in a temporary directory and on an
 * abstract one, the no-op without $NOTIFY_SOCKET, refused addresses, and
 * that migd_notify_unset_env() hides the socket from children but keeps
 * it for the daemon. The last test leaves the kept address set: it runs
 * last.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "migrated/host/notify.h"
#include "tests/harness/hv_test.h"

static char dir[] = "/tmp/migd-notify.XXXXXX";
static char path[sizeof(dir) + 16];

static int suite_init(void)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/notify", dir);
	unsetenv("NOTIFY_SOCKET");
	return 0;
}

static int suite_clean(void)
{
	unlink(path);
	rmdir(dir);
	unsetenv("NOTIFY_SOCKET");
	return 0;
}

/* A datagram socket bound to @addr ("/path" or "@name"). */
static int listener(const char *addr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(addr);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    n + (addr[0] == '/'));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CU_ASSERT_FATAL(fd >= 0);
	memcpy(sa.sun_path, addr, n);
	if (addr[0] == '@')
		sa.sun_path[0] = '\0';
	else
		unlink(addr);
	CU_ASSERT_FATAL(bind(fd, (struct sockaddr *)&sa, len) == 0);
	return fd;
}

/* The next datagram on @fd (2 s at most), NUL-terminated; its length. */
static ssize_t next_dgram(int fd, char *buf, size_t size)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, 2000) != 1)
		return -1;
	n = recv(fd, buf, size - 1, MSG_DONTWAIT);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static bool nothing_waits(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 50) == 0;
}

static unsigned long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ull +
	       (unsigned long long)ts.tv_nsec / 1000ull;
}

static void test_no_socket_is_a_noop(void)
{
	unsetenv("NOTIFY_SOCKET");
	CU_ASSERT_EQUAL(migd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CU_ASSERT_EQUAL(migd_notify("READY=1"), 0);
	unsetenv("NOTIFY_SOCKET");
}

static void test_path_socket_gets_the_exact_bytes(void)
{
	static const char ready[] = "READY=1\nMAINPID=42\nSTATUS=running";
	static const char stopping[] = "STOPPING=1\nSTATUS=stopping: 3 VM(s)";
	char buf[8192];
	int fd = listener(path);

	setenv("NOTIFY_SOCKET", path, 1);
	CU_ASSERT_EQUAL(migd_notify(ready), 1);
	CU_ASSERT_EQUAL(next_dgram(fd, buf, sizeof(buf)),
			(ssize_t)strlen(ready));
	CU_ASSERT_EQUAL(memcmp(buf, ready, sizeof(ready)), 0);
	CU_ASSERT_EQUAL(migd_notifyf("STOPPING=1\nSTATUS=stopping: %u VM(s)",
				     3u),
			1);
	CU_ASSERT_EQUAL(next_dgram(fd, buf, sizeof(buf)),
			(ssize_t)strlen(stopping));
	CU_ASSERT_STRING_EQUAL(buf, stopping);
	CU_ASSERT(nothing_waits(fd)); /* one datagram per call */
	unsetenv("NOTIFY_SOCKET");
	close(fd);
}

static void test_reloading_carries_monotonic_usec(void)
{
	char buf[512], status[64];
	unsigned long long t0, t1, us = 0;
	int fd = listener(path), used = 0;

	setenv("NOTIFY_SOCKET", path, 1);
	t0 = mono_us();
	CU_ASSERT_EQUAL(migd_notify_reloading("reloading"), 1);
	t1 = mono_us();
	CU_ASSERT(next_dgram(fd, buf, sizeof(buf)) > 0);
	CU_ASSERT_EQUAL(sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%llu\n"
				    "STATUS=%63s%n",
			       &us, status, &used),
			2);
	CU_ASSERT_EQUAL((size_t)used, strlen(buf)); /* nothing else */
	CU_ASSERT_STRING_EQUAL(status, "reloading");
	CU_ASSERT(us >= t0 && us <= t1);
	CU_ASSERT_EQUAL(migd_notify_reloading(NULL), 1);
	CU_ASSERT(next_dgram(fd, buf, sizeof(buf)) > 0);
	CU_ASSERT_EQUAL(strncmp(buf, "RELOADING=1\nMONOTONIC_USEC=", 27), 0);
	CU_ASSERT_EQUAL(strspn(buf + 27, "0123456789"), strlen(buf + 27));
	unsetenv("NOTIFY_SOCKET");
	close(fd);
}

static void test_abstract_socket_gets_the_exact_bytes(void)
{
	char name[64], buf[512];
	int fd;

	snprintf(name, sizeof(name), "@migd-test-notify-%d", (int)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	CU_ASSERT_EQUAL(migd_notify("READY=1"), 1);
	CU_ASSERT_EQUAL(next_dgram(fd, buf, sizeof(buf)), 7);
	CU_ASSERT_STRING_EQUAL(buf, "READY=1");
	unsetenv("NOTIFY_SOCKET");
	close(fd);
}

static void test_bad_addresses_are_refused(void)
{
	char longpath[200];

	setenv("NOTIFY_SOCKET", "run/notify", 1);
	CU_ASSERT_EQUAL(migd_notify("READY=1"), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "@", 1);
	CU_ASSERT_EQUAL(migd_notify("READY=1"), -EAFNOSUPPORT);
	/* 108 bytes: sun_path has no room for the NUL of a path. */
	memset(longpath, 'a', sizeof(longpath));
	longpath[0] = '/';
	longpath[108] = '\0';
	setenv("NOTIFY_SOCKET", longpath, 1);
	CU_ASSERT_EQUAL(migd_notify("READY=1"), -ENAMETOOLONG);
	snprintf(longpath, sizeof(longpath), "%s/nobody-listens", dir);
	setenv("NOTIFY_SOCKET", longpath, 1);
	CU_ASSERT(migd_notify("READY=1") < 0);
	unsetenv("NOTIFY_SOCKET");
}

/* Last: the kept address outlives the test. */
static void test_unset_env_hides_it_from_children_only(void)
{
	char buf[512];
	int fd = listener(path);

	setenv("NOTIFY_SOCKET", path, 1);
	migd_notify_unset_env();
	CU_ASSERT_PTR_NULL(getenv("NOTIFY_SOCKET"));
	/* A child started now does not see it ... */
	CU_ASSERT_EQUAL(system("exec test -z \"${NOTIFY_SOCKET+set}\""), 0);
	/* ... the daemon still reaches the service manager. */
	CU_ASSERT_EQUAL(migd_notify("READY=1\nSTATUS=after unset"), 1);
	CU_ASSERT(next_dgram(fd, buf, sizeof(buf)) > 0);
	CU_ASSERT_STRING_EQUAL(buf, "READY=1\nSTATUS=after unset");
	migd_notify_unset_env(); /* idempotent */
	CU_ASSERT_EQUAL(migd_notify("STOPPING=1"), 1);
	CU_ASSERT(next_dgram(fd, buf, sizeof(buf)) > 0);
	CU_ASSERT_STRING_EQUAL(buf, "STOPPING=1");
	close(fd);
}

static CU_TestInfo tests[] = {
	{ "no_socket_is_a_noop", test_no_socket_is_a_noop },
	{ "path_socket_gets_the_exact_bytes",
	  test_path_socket_gets_the_exact_bytes },
	{ "reloading_carries_monotonic_usec",
	  test_reloading_carries_monotonic_usec },
	{ "abstract_socket_gets_the_exact_bytes",
	  test_abstract_socket_gets_the_exact_bytes },
	{ "bad_addresses_are_refused", test_bad_addresses_are_refused },
	{ "unset_env_hides_it_from_children_only",
	  test_unset_env_hides_it_from_children_only },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/host/notify", suite_init, suite_clean, tests);
