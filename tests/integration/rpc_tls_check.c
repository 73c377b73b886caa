// SPDX-License-Identifier: MIT
/*
 * rpc_tls_check: the control RPC over TCP refuses every client without a
 * valid certificate from the daemon's CA before reading any request, and
 * serves one that has it.
 *
 *   rpc_tls_check MIGRATED TMPDIR
 *
 * Makes two dev CAs (mig_devca_ensure) and an expired certificate from
 * the daemon's CA (mig_devca_issue), starts MIGRATED with --rpc-listen,
 * then tries: no client certificate (a raw OpenSSL client that pipelines
 * a ping right after its handshake), a certificate from the other CA, an
 * expired one, a client that distrusts the daemon's CA, and a good one.
 * The good client's ping reports how many requests the daemon served
 * before it (must be 0) and how many handshakes failed (must be 4: the
 * three refusals, and the one the distrustful client aborted).
 * Exit 0 when every case behaves, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "migrated/rpc/ctl_frame.h"
#include "migrated/mig/devca.h"
#include "proto/control.pb-c.h"
#include "migrated/rpc/client.h"

static int fails;

static void check(bool ok, const char *what, const char *detail)
{
	printf("%-4s %-44s %s\n", ok ? "ok" : "FAIL", what, detail);
	fails += !ok;
}

static uint16_t free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &len);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A client with no certificate: handshake, send a ping at once, read. */
static void case_no_cert(uint16_t port, const char *ca)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__PingRequest ping = MIGD__PING_REQUEST__INIT;
	uint8_t *frame, buf[256];
	char detail[200] = "";
	size_t len;
	int fd = tcp_connect(port), r;
	SSL *ssl;

	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_load_verify_locations(ctx, ca, NULL);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	r = SSL_connect(ssl);
	req.id = 1;
	req.call_case = MIGD__REQUEST__CALL_PING;
	req.ping = &ping;
	migd_frame_pack(&req.base, MIGD_FRAME_MAX, &frame, &len);
	if (r == 1)
		SSL_write(ssl, frame, (int)len);
	free(frame);
	r = r == 1 ? SSL_read(ssl, buf, sizeof(buf)) : r;
	if (r <= 0) {
		unsigned long e = ERR_get_error();

		snprintf(detail, sizeof(detail), "refused: %s",
			 e ? ERR_reason_error_string(e) : "connection closed");
	} else {
		snprintf(detail, sizeof(detail), "got %d bytes back", r);
	}
	check(r <= 0, "no client certificate", detail);
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
}

/* With the C client: connect, then one ping; 0 = answered. */
static int try_client(uint16_t port, const char *ca, const char *cert,
		      const char *key, Migd__PingResult *out, char *detail,
		      size_t dsize)
{
	struct migd_client_tls t = {ca, cert, key, true};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__PingRequest ping = MIGD__PING_REQUEST__INIT;
	Migd__Response *resp = NULL;
	struct migd_client *c;
	int ret;

	ret = migd_client_connect_tls("127.0.0.1", port, &t, 5000, &c);
	if (ret) {
		snprintf(detail, dsize, "connect: %s", strerror(-ret));
		return ret;
	}
	req.call_case = MIGD__REQUEST__CALL_PING;
	req.ping = &ping;
	ret = migd_client_call(c, &req, 5000, &resp);
	if (ret) {
		snprintf(detail, dsize, "refused at first call: %s",
			 strerror(-ret));
	} else {
		snprintf(detail, dsize, "served: %s",
			 migd_status_text(migd_resp_status(resp)));
		if (out && resp->ping)
			*out = *resp->ping;
		migd__response__free_unpacked(resp, NULL);
	}
	migd_client_close(c);
	return ret;
}

int main(int argc, char **argv)
{
	char ca1[600], ca2[600], st[600], log[600], port_s[64];
	char exp_cert[600], exp_key[600], detail[300];
	struct mig_devca d1, d2;
	Migd__PingResult pr;
	uint16_t port;
	pid_t pid;
	int ret, st_rc;

	if (argc != 3) {
		fprintf(stderr, "usage: rpc_tls_check MIGRATED TMPDIR\n");
		return 2;
	}
	snprintf(ca1, sizeof(ca1), "%s/ca1", argv[2]);
	snprintf(ca2, sizeof(ca2), "%s/ca2", argv[2]);
	snprintf(st, sizeof(st), "%s/state", argv[2]);
	snprintf(log, sizeof(log), "%s/daemon.log", argv[2]);
	snprintf(exp_cert, sizeof(exp_cert), "%s/expired.pem", argv[2]);
	snprintf(exp_key, sizeof(exp_key), "%s/expired.key", argv[2]);
	if (mig_devca_ensure(ca1, &d1) || mig_devca_ensure(ca2, &d2) ||
	    mig_devca_issue(d1.ca_cert, d1.ca_key, "expired-client", -7200,
			    -3600, exp_cert, exp_key)) {
		fprintf(stderr, "rpc_tls_check: cannot make certificates\n");
		return 1;
	}
	port = free_port();
	snprintf(port_s, sizeof(port_s), "127.0.0.1:%u", port);
	pid = fork();
	if (pid == 0) {
		int fd = creat(log, 0600);

		dup2(fd, 2);
		dup2(fd, 1);
		execl(argv[1], argv[1], "--state-dir", st, "--tls-dir", ca1,
		      "--rpc-listen", port_s, "--log-level", "debug", "--accel",
		      "soft", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		int fd = tcp_connect(port);

		if (fd >= 0) {
			close(fd);
			break;
		}
		usleep(50000);
	}
	case_no_cert(port, d1.ca_cert);
	ret = try_client(port, d1.ca_cert, d2.client_cert, d2.client_key, NULL,
			 detail, sizeof(detail));
	check(ret != 0, "client certificate from another CA", detail);
	ret = try_client(port, d1.ca_cert, exp_cert, exp_key, NULL, detail,
			 sizeof(detail));
	check(ret != 0, "expired client certificate", detail);
	/* The client side refuses a daemon it does not trust, too. */
	ret = try_client(port, d2.ca_cert, d2.client_cert, d2.client_key, NULL,
			 detail, sizeof(detail));
	check(ret == -EKEYREJECTED, "daemon certificate from another CA",
	      detail);
	ret = try_client(port, d1.ca_cert, d1.client_cert, d1.client_key, &pr,
			 detail, sizeof(detail));
	check(ret == 0, "valid client certificate", detail);
	if (!ret) {
		snprintf(detail, sizeof(detail),
			 "requests before = %llu, tls_refused = %llu",
			 (unsigned long long)pr.requests_served,
			 (unsigned long long)pr.tls_refused);
		check(pr.requests_served == 0 && pr.tls_refused == 4,
		      "refused clients got no request served", detail);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &st_rc, 0);
	check(WIFEXITED(st_rc) && WEXITSTATUS(st_rc) == 0,
	      "daemon exits 0 on SIGTERM", "");
	if (fails) {
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "tail -20 %s", log);
		if (system(cmd) < 0)
			perror("system");
	}
	printf("%s\n", fails ? "FAILED" : "all checks passed");
	return fails ? 1 : 0;
}
