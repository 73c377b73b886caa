// SPDX-License-Identifier: MIT
/*
 * migratectl: the control API of a local migrated from the command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrated/rpc/parse.h"
#include "tools/migratectl/ctl.h"
#include "tools/rpc/cli.h"
#include "tools/rpc/json.h"


static const struct {
	const char *name;
	int (*fn)(struct ctl *ctl, int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "vm", ctl_vm,
	  "vm create NAME [--mem SIZE] [--vcpus N] [--accel kvm|soft]\n"
	  "          [--pattern sweep|random|hotset|idle]\n"
	  "          [--content stamp|text|random] [--rate PAGES/S|SIZE/s]\n"
	  "          [--region-offset SIZE] [--region-size SIZE]\n"
	  "          [--write-pct N] [--hot-pct N] [--hot-share N]\n"
	  "          [--heartbeat-us N] [--seed N] [--paused]\n"
	  "          [--dirty-ring ENTRIES|off] [--prefill]\n"
	  "          [--backing anon|memfd|memfd-thp|hugetlb]\n"
	  "  vm create NAME --kernel PATH [--initrd PATH] [--cmdline TEXT]\n"
	  "          --accel kvm [--mem SIZE] [--vcpus N] [--paused]\n"
	  "          [--disk PATH[,ro]]... [--rng]  (virtio-blk disks of\n"
	  "          raw images, a virtio-rng device)\n"
	  "          [--net TAP[,mac=XX:XX:XX:XX:XX:XX]]  (a virtio-net NIC\n"
	  "          on a tap of the daemon's host)\n"
	  "          (a Linux guest: paths on the daemon's host; not with\n"
	  "          the workload options; migrated precopy only)\n"
	  "  vm console NAME [--follow] [--from-start] [--until TEXT]\n"
	  "          [--input FILE|-]  (a Linux guest's serial console:\n"
	  "          interactive on a terminal, Ctrl-] detaches; else the\n"
	  "          output kept, or --follow what comes next; --input\n"
	  "          sends FILE's bytes as typed first)\n"
	  "  vm list | vm inspect NAME | vm pause NAME | vm resume NAME\n"
	  "  vm destroy NAME | vm set-rate NAME PAGES/S|SIZE/s [--vcpu N]...\n"
	  "  vm check NAME   (every page's stamp; exit 1 when one is bad)\n"
	  "  vm update NAME  (local live update: a fresh worker process from\n"
	  "                  the installed migrated-vmm takes the VM over,\n"
	  "                  guest memory handed over, not copied; only a\n"
	  "                  VM created with --backing memfd or hugetlb:\n"
	  "                  the default, anon, cannot be handed over)\n"
	  "  vm snapshot NAME DIR [--pause|--stop]  (memory and state into\n"
	  "                  DIR on the daemon's host, live: the VM pauses\n"
	  "                  only for the last pass; then it runs on, or\n"
	  "                  stays paused, or is destroyed)\n"
	  "  vm restore NAME DIR [--paused]  (a new VM NAME from the\n"
	  "                  snapshot in DIR, every page checked against\n"
	  "                  its digest; refused if NAME exists)" },
	{ "dirty", ctl_dirty, "dirty VM   (dirty rate, working set, hot/cold)" },
	{ "estimate", ctl_estimate,
	  "estimate VM --bandwidth SIZE/s [--downtime MS] [--throttle PCT]" },
	{ "migration", ctl_mig,
	  "migration list | migration status [ID|VM]\n"
	  "  migration watch ID|VM | migration cancel ID|VM\n"
	  "  migration tune ID|VM [--bandwidth SIZE/s] [--downtime MS]\n"
	  "                       [--throttle PCT]\n"
	  "  migration resolve ID|VM --resume-source|--confirm-destination\n"
	  "                       (after an UNRESOLVED commit: ask the\n"
	  "                       destination first whether it runs the VM)\n"
	  "  migration postcopy ID|VM  (switch a running migration to\n"
	  "                       postcopy: the VM moves now and pulls the\n"
	  "                       pages it lacks; lost if a host dies)\n"
	  "  migration switchover ID|VM  (pause and finish a running\n"
	  "                       migration now, whatever the downtime)\n"
	  "  migration recover ID|VM [HOST:PORT]  (a postcopy paused by a\n"
	  "                       broken link: reconnect, to the original\n"
	  "                       address or HOST:PORT)" },
	{ "events", ctl_events,
	  "events [--vm NAME] [--kind vm|phase|progress|dirty]... "
	  "[--interval MS] [--count N]" },
	{ "host", ctl_host,
	  "host list --etcd URL[,URL...] [--etcd-prefix P]\n"
	  "          [--etcd-cacert F --etcd-cert F --etcd-key F]\n"
	  "          (the fleet's hosts and their VMs, read from etcd;\n"
	  "          $MIGRATED_ETCD for --etcd)\n"
	  "  host drain HOST [--max-per-host N] [--max-fleet N] [--no-wait]\n"
	  "          (HOST's daemon moves every VM to the other hosts;\n"
	  "          exit 1 when one could not be moved)\n"
	  "  host drain-status [HOST]\n"
	  "  host drain-cancel HOST [--no-wait]  (stop HOST's drain: nothing\n"
	  "          more starts, migrations in flight are cancelled, one\n"
	  "          past its commit point finishes; HOST stays draining)\n"
	  "  host undrain HOST  (HOST takes VMs again; refused while a\n"
	  "          drain runs)\n"
	  "          HOST may be any registered host: the daemon asked\n"
	  "          forwards the call to HOST's daemon over mutual TLS" },
	{ "ping", ctl_ping, "ping" },
	{ "capabilities", ctl_capabilities,
	  "capabilities  (API version, features, accelerators)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migratectl [--socket PATH | --connect HOST:PORT\n"
		   "                   [--tls-dir DIR | --tls-ca F --tls-cert F "
		   "--tls-key F]]\n"
		   "                  [--json] [--timeout MS] COMMAND ...\n"
		   "       migratectl --version | --help | COMMAND --help\n\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %s\n", cmds[i].help);
	fprintf(f, "\nThe socket defaults to $MIGRATED_SOCKET, else "
		   "$MIGRATED_STATE_DIR/control.sock, else the\nsystem "
		   "service's " MIGD_SYSTEM_SOCKET " when it exists, else "
		   "a daemon of your own\n($XDG_RUNTIME_DIR/migrated or "
		   "/tmp/migrated-UID).\n"
		   "Exit codes: 0 ok, 1 failure, 2 bad input, 3 not found, "
		   "4 unavailable, 5 daemon not reachable,\n"
		   "8 permission denied (the RPC role of this client).\n"
		   "--connect (or $MIGRATED_CONNECT) uses TCP + mutual TLS; "
		   "--tls-dir DIR means\nDIR/ca.pem, DIR/client.pem, "
		   "DIR/client.key (what --dev-tls makes).\n"
		   "SIZE: bytes or binary units, K|KiB, M|MiB, G|GiB, T|TiB "
		   "(powers of 1024);\nSIZE/s likewise per second "
		   "(100MiB/s); output uses the same units.\n"
		   "--json (anywhere on the line): results and errors (the "
		   "daemon's and our own) as\nJSON lines on stdout.\n");
}

/* COMMAND --help (or -h) anywhere among its arguments. */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	}
	return false;
}

void ctl_print_json(const ProtobufCMessage *msg)
{
	migd_json_print(stdout, msg);
	fputc('\n', stdout);
	fflush(stdout);
	/* The answer is on stdout: an exit code that reports it (a drain
	 * that ended cancelled, a page that failed its check) adds no
	 * client error line after it. */
	migd_cli_json_printed();
}

int ctl_call(struct ctl *ctl, Migd__Request *req, Migd__Response **resp)
{
	Migd__Status st;
	int ret;

	if (!ctl->client) {
		ret = migd_cli_conn_open("migratectl", &ctl->conn,
					 ctl->timeout_ms, &ctl->client);
		if (ret)
			return ret;
	}
	ret = migd_client_call(ctl->client, req, ctl->timeout_ms, resp);
	if (ret) {
		fprintf(stderr, "migratectl: call failed: %s\n",
			ret == -ETIMEDOUT ? "timed out"
			: ret == -EPIPE || ret == -ECONNRESET
				? "daemon closed the connection (over TLS: "
				  "our certificate refused?)"
				: strerror(-ret));
		return 5;
	}
	st = migd_resp_status(*resp);
	if (st == MIGD__STATUS__STATUS_OK) {
		/* On stderr in both modes: stdout keeps the result alone. */
		for (size_t i = 0; i < (*resp)->n_warnings; i++)
			fprintf(stderr, "migratectl: warning: %s\n",
				(*resp)->warnings[i]);
		return 0;
	}
	if (ctl->json) {
		ctl_print_json(&(*resp)->base);
	} else
		fprintf(stderr, "migratectl: %s: %s\n", migd_status_text(st),
			migd_resp_message(*resp));
	ret = migd_status_exit_code(st);
	migd__response__free_unpacked(*resp, NULL);
	*resp = NULL;
	return ret;
}

int ctl_ping(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__PingRequest ping = MIGD__PING_REQUEST__INIT;
	Migd__Response *resp;
	int ret;

	req.call_case = MIGD__REQUEST__CALL_PING;
	req.ping = &ping;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json) {
		ctl_print_json(&resp->ping->base);
	} else {
		Migd__PingResult *p = resp->ping;

		printf("migrated %s pid %llu accel %s engine %s uptime "
		       "%llu ms\n",
		       p->version, (unsigned long long)p->pid,
		       p->default_accel, p->engine ? "yes" : "no",
		       (unsigned long long)p->uptime_ms);
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

int ctl_capabilities(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__CapabilitiesRequest cr = MIGD__CAPABILITIES_REQUEST__INIT;
	Migd__CapabilitiesResult *r;
	Migd__Response *resp;
	int ret;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "migratectl: capabilities takes no argument\n");
		return 2;
	}
	req.call_case = MIGD__REQUEST__CALL_CAPABILITIES;
	req.capabilities = &cr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	r = resp->capabilities;
	if (!r) {
		fprintf(stderr, "migratectl: the daemon sent no capabilities\n");
		migd__response__free_unpacked(resp, NULL);
		return 1;
	}
	if (ctl->json) {
		ctl_print_json(&r->base);
	} else {
		printf("api_version: %u\napi_package: %s\nversion: %s\n",
		       r->api_version, r->api_package, r->version);
		printf("features:");
		for (size_t i = 0; i < r->n_features; i++)
			printf(" %s", r->features[i]);
		printf("\naccelerators:");
		for (size_t i = 0; i < r->n_accelerators; i++)
			printf(" %s", r->accelerators[i]);
		printf("\ndefault_accel: %s\nstream_versions: %u..%u\n"
		       "channels_max: %u\n",
		       r->default_accel, r->stream_version_min,
		       r->stream_version_max, r->channels_max);
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

/* The global options, then the command. Returns the exit code. */
static int run(struct ctl *ctl, int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json")) {
			ctl->json = true;
		} else if (!strncmp(argv[i], "--", 2) && i + 1 < argc &&
			   !migd_cli_conn_option(&ctl->conn, argv[i] + 2,
						 argv[i + 1])) {
			i++; /* --socket, --connect, --tls-* */
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			uint64_t v;

			if (migd_parse_u64(argv[++i], 3600000, &v) || !v)
				return migd_cli_bad_range("migratectl",
							  "--timeout", argv[i],
							  1, 3600000);
			ctl->timeout_ms = (int)v;
		} else if (!strcmp(argv[i], "--version")) {
			migd_cli_version("migratectl");
			return 0;
		} else if (!strcmp(argv[i], "--help") ||
			   !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "migratectl: unknown option '%s'\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		if (!strcmp(argv[i], cmds[k].name)) {
			if (wants_help(argc - i, argv + i)) {
				printf("usage: migratectl [OPTIONS] %s\n",
				       cmds[k].help);
				return 0;
			}
			return cmds[k].fn(ctl, argc - i, argv + i);
		}
	}
	fprintf(stderr, "migratectl: unknown command '%s'\n", argv[i]);
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	static struct ctl ctl = { .timeout_ms = 30000 };
	int ret;

	migd_cli_conn_init(&ctl.conn);
	/*
	 * --json anywhere before "--", as the other tools take it (getopt
	 * permutes there): before the command, between global options,
	 * after the command's arguments. Taken out here, so neither the
	 * global options nor a command's own parser sees it; from now on
	 * client-side errors are JSON too.
	 */
	for (int k = 1; k < argc && strcmp(argv[k], "--");) {
		if (strcmp(argv[k], "--json")) {
			k++;
			continue;
		}
		if (!ctl.json)
			migd_cli_json_begin();
		ctl.json = true;
		/* argv[argc] (NULL) moves down too. */
		memmove(&argv[k], &argv[k + 1],
			(size_t)(argc - k) * sizeof(argv[0]));
		argc--;
	}
	ret = run(&ctl, argc, argv);
	migd_client_close(ctl.client);
	return migd_cli_json_end(ret);
}
