/* SPDX-License-Identifier: MIT */
/*
 * mig_addr: the socket addresses of a host name or address and a port,
 * for the migration's listener and connections and the daemon's TCP
 * listeners (control RPC, metrics).
 *
 * A numeric IPv4 or IPv6 address (no brackets: "::1") is taken as it
 * is; anything else is a host name resolved with getaddrinfo(3), which
 * may block (DNS): not for a thread that must not wait.
 */
#ifndef MIG_ADDR_H
#define MIG_ADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Most addresses mig_addr_resolve() returns. */
#define MIG_ADDR_MAX 8

struct mig_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/*
 * Resolve @host:@port into @out (at most @max, in the resolver's order of
 * preference; a numeric address gives exactly one). @passive: for a
 * listener (an empty or NULL @host then means every IPv4 address,
 * "0.0.0.0"). Returns how many (>= 1), -EINVAL (NULL/empty host for a
 * connection, @max 0), or -EHOSTUNREACH when the name does not resolve.
 * Thread-safe.
 */
int mig_addr_resolve(const char *host, uint16_t port, bool passive,
		     struct mig_addr *out, unsigned max);

#endif
