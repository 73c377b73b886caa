// SPDX-License-Identifier: MIT
/*
 * mig_addr: host names and addresses to socket addresses (addr.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "migrated/mig/addr.h"

/* A numeric IPv4 or IPv6 address, no resolver involved. */
static bool numeric(const char *host, uint16_t port, struct mig_addr *a)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->ss;

	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		a->len = sizeof(*sin);
		return true;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		a->len = sizeof(*sin6);
		return true;
	}
	return false;
}

int mig_addr_resolve(const char *host, uint16_t port, bool passive,
		     struct mig_addr *out, unsigned max)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL, *a;
	char sport[8];
	unsigned n = 0;

	if (!max)
		return -EINVAL;
	if (!host || !*host) {
		if (!passive)
			return -EINVAL;
		host = "0.0.0.0";
	}
	if (numeric(host, port, &out[0]))
		return 1;
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	snprintf(sport, sizeof(sport), "%u", port);
	if (getaddrinfo(host, sport, &hints, &ai))
		return -EHOSTUNREACH;
	for (a = ai; a && n < max; a = a->ai_next) {
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    a->ai_addrlen > sizeof(out[n].ss))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		memcpy(&out[n].ss, a->ai_addr, a->ai_addrlen);
		out[n].len = a->ai_addrlen;
		n++;
	}
	freeaddrinfo(ai);
	return n ? (int)n : -EHOSTUNREACH;
}
