/* SPDX-License-Identifier: MIT */
/*
 * Parsing of the strings operators and clients give the daemon and the
 * tools: HOST:PORT addresses, sizes with units, VM names, and the default
 * state directory and socket path both sides agree on. Pure functions, any
 * thread.
 */
#ifndef MIGD_PARSE_H
#define MIGD_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIGD_NAME_MAX 63
#define MIGD_HOST_MAX 255

/*
 * "HOST:PORT", "[V6ADDR]:PORT" or ":PORT" (host "" meaning any). The port
 * is decimal, 1..65535, or 0 when @allow_port0. The host is copied to
 * @host (NUL-terminated, at most MIGD_HOST_MAX bytes, no brackets).
 * Returns 0 or -EINVAL (nothing written to @port then).
 */
int migd_parse_hostport(const char *s, bool allow_port0, char *host,
			size_t host_size, uint16_t *port);

/*
 * The reverse: @host and @port as "HOST:PORT", an IPv6 address (any host
 * with a ':') in brackets ("[::1]:47400"), "*:PORT" for an empty host.
 * Truncated to @size (NUL-terminated); returns @buf.
 */
char *migd_fmt_hostport(char *buf, size_t size, const char *host,
			unsigned port);

/*
 * A listen address with an optional port range: "HOST:PORT" as
 * migd_parse_hostport() (port 0 allowed: any free port), or
 * "HOST:LO-HI" with 1 <= LO <= HI <= 65535 (the first free port of the
 * range, for firewall rules). Sets *@port and *@port_max (equal without a
 * range). Returns 0 or -EINVAL (nothing written to the ports then).
 */
int migd_parse_listen(const char *s, char *host, size_t host_size,
		      uint16_t *port, uint16_t *port_max);

/*
 * "4096", "64K", "512M", "1G", "1GiB", "2T" (powers of 1024, case-blind,
 * optional "B"/"iB"). 0 or -EINVAL (empty, junk, overflow).
 */
int migd_parse_size(const char *s, uint64_t *out);

/* Decimal unsigned integer up to @max: 0 or -EINVAL. */
int migd_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* A VM name: 1..MIGD_NAME_MAX characters of [A-Za-z0-9._-], not "." or
 * "..", not starting with '-'. */
bool migd_name_valid(const char *name);

/*
 * Default state directory: $MIGRATED_STATE_DIR, else
 * $XDG_RUNTIME_DIR/migrated, else /tmp/migrated-<uid>. And the default
 * control socket: $MIGRATED_SOCKET, else <default state dir>/control.sock.
 * 0 or -ENAMETOOLONG.
 */
int migd_default_state_dir(char *buf, size_t size);
int migd_default_socket(char *buf, size_t size);

#endif
