// SPDX-License-Identifier: MIT
/*
 * How every tool reaches its daemon (cli.h): the Unix socket, or
 * --connect HOST:PORT over TCP + mutual TLS, with the same options and
 * the same messages in migratectl, migrate-send and migrate-recv.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrated/rpc/parse.h"
#include "tools/rpc/cli.h"

void migd_cli_conn_init(struct migd_cli_conn *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->tls.ca_file = cc->ca;
	cc->tls.cert_file = cc->cert;
	cc->tls.key_file = cc->key;
	cc->tls.check_name = true;
	cc->connect = getenv("MIGRATED_CONNECT");
	if (cc->connect && !*cc->connect)
		cc->connect = NULL;
}

int migd_cli_conn_option(struct migd_cli_conn *cc, const char *opt,
			 const char *val)
{
	if (!strcmp(opt, "socket")) {
		cc->socket = val;
	} else if (!strcmp(opt, "connect")) {
		cc->connect = val;
	} else if (!strcmp(opt, "tls-dir")) {
		snprintf(cc->ca, sizeof(cc->ca), "%s/ca.pem", val);
		snprintf(cc->cert, sizeof(cc->cert), "%s/client.pem", val);
		snprintf(cc->key, sizeof(cc->key), "%s/client.key", val);
	} else if (!strcmp(opt, "tls-ca")) {
		snprintf(cc->ca, sizeof(cc->ca), "%s", val);
	} else if (!strcmp(opt, "tls-cert")) {
		snprintf(cc->cert, sizeof(cc->cert), "%s", val);
	} else if (!strcmp(opt, "tls-key")) {
		snprintf(cc->key, sizeof(cc->key), "%s", val);
	} else {
		return -ENOENT;
	}
	return 0;
}

int migd_cli_conn_open(const char *tool, struct migd_cli_conn *cc,
		       int timeout_ms, struct migd_client **out)
{
	char host[MIGD_HOST_MAX + 1], def[108] = "";
	const char *path;
	uint16_t port;
	int ret;

	if (!cc->connect) {
		ret = migd_client_connect(cc->socket, out);
		if (!ret)
			return 0;
		if (!cc->socket)
			migd_client_default_socket(def, sizeof(def));
		path = cc->socket ? cc->socket : def;
		fprintf(stderr, "%s: cannot reach the daemon at %s: %s%s\n",
			tool, path, strerror(-ret),
			ret == -EACCES && !strcmp(path, MIGD_SYSTEM_SOCKET)
				? " (the system service's socket is for the "
				  "group that owns it: sudo adduser $USER "
				  "migrated, then log in again; or use sudo)"
			: ret == -ENOENT && !cc->socket
				? " (neither the system service, "
				  MIGD_SYSTEM_SOCKET ": systemctl start "
				  "migrated, nor a daemon of yours runs; "
				  "--socket PATH names another)"
			: ret == -ENOENT || ret == -ECONNREFUSED
				? " (is migrated running? --socket?)"
				: "");
		return 5;
	}
	if (migd_parse_hostport(cc->connect, false, host, sizeof(host),
				&port) ||
	    !host[0]) {
		fprintf(stderr,
			"%s: bad --connect '%s' (HOST:PORT, [IPv6]:PORT)\n",
			tool, cc->connect);
		return 2;
	}
	ret = migd_client_connect_tls(host, port, &cc->tls, timeout_ms, out);
	if (ret == -ENOENT || ret == -EKEYREJECTED || ret == -EINVAL) {
		char why[600];

		if (migd_cli_tls_why(cc->ca, cc->cert, cc->key, why,
				     sizeof(why))) {
			fprintf(stderr,
				"%s: cannot load the TLS files: %s (--tls-dir "
				"or --tls-ca, --tls-cert, --tls-key)\n",
				tool, why);
			return 2;
		}
	}
	if (ret) {
		fprintf(stderr,
			"%s: cannot reach the daemon at %s over TLS: %s\n",
			tool, cc->connect,
			ret == -EKEYREJECTED ? "its certificate is not trusted"
			: ret == -ENOENT     ? "cannot load the TLS files"
					     : strerror(-ret));
		return 5;
	}
	return 0;
}
