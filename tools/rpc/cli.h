/* SPDX-License-Identifier: MIT */
/*
 * migd_cli: what every command-line tool says the same way: the
 * --version line, the accepted formats of sizes, rates and ranges in
 * error messages that name the option, and --json errors.
 *
 * Units: sizes and rates are binary everywhere, on input and output:
 * K/KiB = 1024, M/MiB = 1024^2, G/GiB, T/TiB (case-blind, "B"
 * optional); a rate is a size per second ("100MiB/s").
 *
 * --json errors: a tool in --json mode calls migd_cli_json_begin()
 * before it parses anything; what it then prints on stderr is kept, and
 * migd_cli_json_end() prints it, if the exit code is not 0 and nothing
 * has printed a JSON error already, as one JSON line on stdout
 * ({"error":{"status":"STATUS_...","message":"..."},"exit_code":N,
 * "client":true}, shaped like the daemon's error responses) as
 * well as on the real stderr. Not thread-safe: main thread, once.
 */
#ifndef MIGD_CLI_H
#define MIGD_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "migrated/rpc/client.h"

#define MIGD_CLI_SIZE_FMT                                                \
	"a size: bytes, or a number with a binary suffix K|KiB, M|MiB, " \
	"G|GiB, T|TiB (powers of 1024), e.g. 512MiB"
#define MIGD_CLI_RATE_FMT                                                    \
	"a rate: SIZE/s with a binary suffix, e.g. 100MiB/s (K|KiB, M|MiB, " \
	"G|GiB, T|TiB: powers of 1024)"

/* "TOOL (migrated) VERSION" on stdout. */
void migd_cli_version(const char *tool);

/* "TOOL: bad OPT 'VAL': expected WHAT" on stderr; returns 2 (bad input). */
int migd_cli_bad(const char *tool, const char *opt, const char *val,
		 const char *what);
/* The same for an integer out of [@lo, @hi] (or not an integer at all;
 * a sign is refused, never wrapped). */
int migd_cli_bad_range(const char *tool, const char *opt, const char *val,
		       uint64_t lo, uint64_t hi);

/* "100MiB/s", "100M/s" or "100MiB" -> bytes/s. 0 or -EINVAL. */
int migd_cli_parse_rate(const char *s, uint64_t *bytes_per_s);

/*
 * Why the client's TLS files do not load: each of @ca, @cert, @key
 * opened and read as PEM (a certificate, a certificate, a private key),
 * then the key checked against the certificate. Returns 0 (they load),
 * or a negative errno with "FILE: reason" in @why: the open's errno
 * (-ENOENT, -EACCES, ...), -EBADMSG with OpenSSL's reason for a file
 * that is not the PEM it should be, -EKEYREJECTED for a key that is not
 * the certificate's.
 */
int migd_cli_tls_why(const char *ca, const char *cert, const char *key,
		     char *why, size_t size);

/*
 * Reaching the daemon, the same way in every tool (cli_conn.c): the
 * control socket (--socket PATH, default migd_client_default_socket()), or
 * --connect HOST:PORT (also $MIGRATED_CONNECT; a host name or [IPv6])
 * over TCP + mutual TLS with --tls-dir DIR (DIR/ca.pem, DIR/client.pem,
 * DIR/client.key) or --tls-ca/--tls-cert/--tls-key F.
 */
#define MIGD_CLI_TLS_PATH_MAX 4096
struct migd_cli_conn {
	const char *socket;  /* NULL: the default */
	const char *connect; /* NULL: the socket */
	struct migd_client_tls tls; /* points at the buffers below */
	char ca[MIGD_CLI_TLS_PATH_MAX];
	char cert[MIGD_CLI_TLS_PATH_MAX];
	char key[MIGD_CLI_TLS_PATH_MAX];
};
/* Empty, but for $MIGRATED_CONNECT. */
void migd_cli_conn_init(struct migd_cli_conn *cc);
/* Option @opt (without "--": socket, connect, tls-dir, tls-ca, tls-cert,
 * tls-key) with @val: 0, or -ENOENT when @opt is none of them. */
int migd_cli_conn_option(struct migd_cli_conn *cc, const char *opt,
			 const char *val);
/*
 * Connect as @cc says; on failure print why, prefixed "TOOL: ", naming
 * the option to fix. Returns 0 and *@out, or the exit code: 2 (bad
 * --connect, TLS files that do not load), 5 (daemon not reachable).
 */
int migd_cli_conn_open(const char *tool, struct migd_cli_conn *cc,
		       int timeout_ms, struct migd_client **out);

/* --json errors (above). end() returns @exit_code. */
void migd_cli_json_begin(void);
/* A JSON answer or error was already printed on stdout (the daemon's):
 * end() adds no error line for a non-zero exit code. */
void migd_cli_json_printed(void);
int migd_cli_json_end(int exit_code);

#endif
