// SPDX-License-Identifier: MIT
/*
 * migrate-recv: tell the local migrated to accept one incoming migration
 * on ADDR:PORT (port 0: any; none: the daemon's --migration-listen) and
 * print the port it listens on. The VM
 * arrives under the name the source offers, or --name.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "migrated/rpc/parse.h"
#include "tools/rpc/cli.h"
#include "migrated/rpc/client.h"
#include "tools/rpc/json.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migrate-recv [--socket PATH | --connect HOST:PORT\n"
		"                    [--tls-dir DIR | --tls-ca F --tls-cert F "
		"--tls-key F]]\n"
		"                    [--insecure] [--name VM]\n"
		"                    [--accel kvm|soft] [--timeout-ms N] "
		"[--json]\n"
		"                    [--arm-timeout SECONDS]\n"
		"                    [ADDR:PORT]\n"
		"       migrate-recv --version | --help\n"
		"Prints the port the daemon listens on (PORT 0 picks one;\n"
		"without ADDR:PORT, the daemon's --migration-listen).\n"
		"The VM keeps the name it has on the source; --name gives it\n"
		"another here. A name already taken here is refused: by this\n"
		"call with --name, else when the source arrives (the VM then\n"
		"keeps running on the source).\n"
		"--accel: the accelerator the VM is received into (default:\n"
		"the daemon's); a VM's state loads only into the kind it ran\n"
		"on, so a source on another one is refused in setup.\n"
		"ADDR: an IPv4 or [IPv6] address or a host name.\n"
		"--connect (or $MIGRATED_CONNECT): the daemon's control RPC\n"
		"over TCP + mutual TLS, as migratectl --connect.\n"
		"--timeout-ms: the whole migration, 0 (none) ..4294967295.\n"
		"An armed receive keeps its port and a worker until the\n"
		"source comes: 'migratectl migration list' shows it (phase\n"
		"setup), 'migratectl migration cancel ID' disarms it.\n"
		"--arm-timeout: how long it waits for the source to connect\n"
		"(default 600 s; 0: no limit); then it disarms itself, its\n"
		"phase cancelled with a message saying so.\n"
		"--json: the result and errors as JSON lines.\n");
}

static int recv_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'C' },
		{ "connect", required_argument, NULL, 'C' },
		{ "tls-dir", required_argument, NULL, 'C' },
		{ "tls-ca", required_argument, NULL, 'C' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'C' },
		{ "insecure", no_argument, NULL, 'i' },
		{ "name", required_argument, NULL, 'n' },
		{ "accel", required_argument, NULL, 'a' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "arm-timeout", required_argument, NULL, 'A' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigIncomingRequest ir = MIGD__MIG_INCOMING_REQUEST__INIT;
	static struct migd_cli_conn cc;
	int oi = 0;
	struct migd_client *c;
	Migd__Response *resp;
	char host[MIGD_HOST_MAX + 1];
	bool json = false;
	uint16_t port;
	uint64_t v;
	int opt, ret;

	migd_cli_conn_init(&cc);
	while ((opt = getopt_long(argc, argv, "", opts, &oi)) != -1) {
		switch (opt) {
		case 'C': /* --socket, --connect, --tls-* */
			migd_cli_conn_option(&cc, opts[oi].name, optarg);
			break;
		case 'i':
			ir.insecure = true;
			break;
		case 'n':
			if (!migd_name_valid(optarg))
				return migd_cli_bad("migrate-recv", "--name",
						    optarg,
						    "1..63 of A-Z a-z 0-9 . _ "
						    "-, not starting with -");
			ir.vm_name = optarg;
			break;
		case 'a':
			if (strcmp(optarg, "kvm") && strcmp(optarg, "soft"))
				return migd_cli_bad("migrate-recv", "--accel",
						    optarg, "kvm or soft");
			ir.accel = optarg;
			break;
		case 't':
			if (migd_parse_u64(optarg, UINT32_MAX, &v))
				return migd_cli_bad_range("migrate-recv",
							  "--timeout-ms",
							  optarg, 0,
							  UINT32_MAX);
			ir.timeout_ms = (uint32_t)v;
			break;
		case 'A':
			/* 0 = no limit: all ones on the wire (control.proto) */
			if (migd_parse_u64(optarg, UINT32_MAX / 1000, &v))
				return migd_cli_bad_range("migrate-recv",
							  "--arm-timeout",
							  optarg, 0,
							  UINT32_MAX / 1000);
			ir.arm_timeout_ms = v ? (uint32_t)(v * 1000)
					      : UINT32_MAX;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			migd_cli_version("migrate-recv");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 < argc) {
		usage(stderr);
		return 2;
	}
	if (optind < argc && migd_parse_hostport(argv[optind], true, host,
						 sizeof(host), &port)) {
		fprintf(stderr,
			"migrate-recv: bad address '%s' (HOST:PORT, "
			"[IPv6]:PORT or :PORT)\n",
			argv[optind]);
		return 2;
	}
	ir.listen = optind < argc ? argv[optind] : (char *)"";
	ret = migd_cli_conn_open("migrate-recv", &cc, 30000, &c);
	if (ret)
		return ret;
	req.call_case = MIGD__REQUEST__CALL_MIG_INCOMING;
	req.mig_incoming = &ir;
	ret = migd_client_call(c, &req, 30000, &resp);
	if (ret) {
		fprintf(stderr, "migrate-recv: call failed: %s\n",
			strerror(-ret));
		migd_client_close(c);
		return 5;
	}
	if (migd_resp_status(resp) != MIGD__STATUS__STATUS_OK) {
		fprintf(stderr, "migrate-recv: %s: %s\n",
			migd_status_text(migd_resp_status(resp)),
			migd_resp_message(resp));
		ret = migd_status_exit_code(migd_resp_status(resp));
		if (json) { /* the daemon's error, as migratectl prints it */
			migd_json_print(stdout, &resp->base);
			putchar('\n');
			migd_cli_json_printed();
		}
	} else if (json) {
		migd_json_print(stdout, &resp->mig_incoming->base);
		putchar('\n');
	} else {
		printf("%u\n", resp->mig_incoming->port);
		/* An armed receive holds a port and a worker until the
		 * source comes: say how to find and drop it. On a terminal
		 * only: stdout (the port) is what scripts read, and some
		 * read stderr with it. */
		if (isatty(STDERR_FILENO))
			fprintf(stderr,
				"migrate-recv: migration %llu armed on %s; it "
				"waits for the source (migrate-send VM "
				"HOST:%u there). See it: migratectl migration "
				"list; disarm it: migratectl migration cancel "
				"%llu\n",
				(unsigned long long)resp->mig_incoming->id,
				resp->mig_incoming->listen,
				resp->mig_incoming->port,
				(unsigned long long)resp->mig_incoming->id);
	}
	migd__response__free_unpacked(resp, NULL);
	migd_client_close(c);
	return ret;
}

int main(int argc, char **argv)
{
	/* --json anywhere (getopt permutes): client-side errors as JSON. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			migd_cli_json_begin();
	return migd_cli_json_end(recv_main(argc, argv));
}
