// SPDX-License-Identifier: MIT
/*
 * migd_notify: sd_notify(3) without libsystemd (notify.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/host/notify.h"

#define COMP "migd.notify"
#define NOTIFY_MAX 4096

/* Taken from the environment by migd_notify_unset_env(); "" = none.
 * Longer than sun_path, so that a name too long is refused, not cut. */
static char kept_addr[256];

static const char *notify_addr(void)
{
	const char *env = getenv("NOTIFY_SOCKET");

	if (env && *env)
		return env;
	return kept_addr[0] ? kept_addr : NULL;
}

void migd_notify_unset_env(void)
{
	const char *env = getenv("NOTIFY_SOCKET");

	if (env && *env)
		snprintf(kept_addr, sizeof(kept_addr), "%s", env);
	unsetenv("NOTIFY_SOCKET");
}

/* sockaddr_un of "/path" or "@abstract": its length, or a negative errno */
static int make_addr(const char *addr, struct sockaddr_un *sa)
{
	size_t n = strlen(addr);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (addr[0] != '/' && addr[0] != '@')
		return -EAFNOSUPPORT;
	/* A path needs its NUL; an abstract name's '@' becomes one. */
	if (n > sizeof(sa->sun_path) ||
	    (addr[0] == '/' && n == sizeof(sa->sun_path)))
		return -ENAMETOOLONG;
	if (n < 2)
		return -EAFNOSUPPORT;
	memcpy(sa->sun_path, addr, n);
	if (addr[0] == '@')
		sa->sun_path[0] = '\0'; /* abstract: no NUL at the end */
	return (int)(offsetof(struct sockaddr_un, sun_path) + n +
		     (addr[0] == '/'));
}

int migd_notify(const char *state)
{
	const char *addr = notify_addr();
	char esc[HV_LOG_ESCAPE_LEN(64)], first[32];
	char esc_first[HV_LOG_ESCAPE_LEN(sizeof(first))];
	struct sockaddr_un sa;
	size_t n = strlen(state);
	int fd, len, ret = 0;

	if (!addr)
		return 0;
	len = make_addr(addr, &sa);
	if (len < 0) {
		ret = len;
	} else if (n > NOTIFY_MAX) {
		ret = -EMSGSIZE;
	} else {
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
		} else {
			if (sendto(fd, state, n, MSG_NOSIGNAL,
				   (struct sockaddr *)&sa,
				   (socklen_t)len) != (ssize_t)n)
				ret = -errno;
			close(fd);
		}
	}
	if (!ret)
		return 1;
	/* The first assignment names what was lost ("READY=1"). */
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(state, "\n"),
		 state);
	hv_warn(COMP, "event=notify_failed addr=\"%s\" state=\"%s\" "
		      "err=\"%s\"",
		hv_log_escape(addr, esc, sizeof(esc)),
		hv_log_escape(first, esc_first, sizeof(esc_first)),
		ret == -EAFNOSUPPORT ? "not /path or @abstract"
				     : strerror(-ret));
	return ret;
}

int migd_notifyf(const char *fmt, ...)
{
	char buf[NOTIFY_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return migd_notify(buf);
}

int migd_notify_reloading(const char *status)
{
	struct timespec ts;
	unsigned long long us;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	us = (unsigned long long)ts.tv_sec * 1000000ull +
	     (unsigned long long)ts.tv_nsec / 1000ull;
	if (status)
		return migd_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu\n"
				    "STATUS=%s",
				    us, status);
	return migd_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu", us);
}
