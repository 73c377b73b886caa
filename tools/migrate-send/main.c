// SPDX-License-Identifier: MIT
/*
 * migrate-send: start migrating a VM of the local migrated to DEST:PORT
 * and follow it to the end: a progress bar on a terminal, plain lines
 * otherwise, JSON lines with --json. Exit 0 only when the VM runs on the
 * destination and its memory verified; 6 and 7 are the two outcomes an
 * orchestrator must act on (usage()).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "migrated/rpc/parse.h"
#include "tools/rpc/cli.h"
#include "migrated/rpc/client.h"
#include "tools/rpc/json.h"
#include "tools/rpc/migview.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migrate-send [--socket PATH | --connect HOST:PORT\n"
		"                    [--tls-dir DIR | --tls-ca F --tls-cert F "
		"--tls-key F]]\n"
		"                    [--channels N]\n"
		"                    [--bandwidth SIZE/s] [--downtime MS]\n"
		"                    [--timeout-ms N] [--insecure] [--json]\n"
		"                    [--interval MS]\n"
		"                    [--compress adaptive|off|LEVEL]\n"
		"                    [--delta-cache SIZE|on|off]\n"
		"                    [--postcopy-after SECONDS|auto]\n"
		"                    [--postcopy-throttle-max PCT]\n"
		"                    [--timeout-policy abort|switchover|\n"
		"                                      postcopy]\n"
		"                    [--throttle-max PCT] [--detach]\n"
		"                    VM DEST:PORT\n"
		"       migrate-send --version | --help\n"
		"SIZE: bytes or binary units, K|KiB, M|MiB, G|GiB, T|TiB\n"
		"(powers of 1024); --bandwidth SIZE/s likewise (100MiB/s;\n"
		"0: no cap); it holds for precopy and for the postcopy push\n"
		"(pages the guest faults on are sent at once, uncapped).\n"
		"--connect (or $MIGRATED_CONNECT): the daemon's control RPC\n"
		"over TCP + mutual TLS, as migratectl --connect.\n"
		"DEST: an IPv4 address, [IPv6] or a host name. A paused VM\n"
		"migrates too and arrives paused.\n"
		"--channels 1..16 (default 2, fixed for the migration);\n"
		"--downtime 1..600000 ms;\n"
		"--timeout-ms 0 (none) ..4294967295; --interval 0..60000 ms.\n"
		"--json: progress, the final state and errors as JSON lines.\n"
		"Ctrl-C (SIGINT) cancels the migration: the VM stays on the\n"
		"source and migrate-send exits 1 once the cancel is done (a\n"
		"second Ctrl-C stops waiting for it). After the commit or the\n"
		"postcopy switch a cancel is refused and migrate-send keeps\n"
		"following the migration. SIGTERM (kill, timeout(1)) asks\n"
		"for the cancel too, then exits 143 without waiting.\n"
		"--detach: start the migration, print its id and how to\n"
		"follow it (migratectl migration watch ID) or cancel it\n"
		"(migratectl migration cancel ID), and exit 0 at once.\n"
		"--compress: adaptive (default) lets each data channel pick raw\n"
		"or a zstd level from what limits it; LEVEL (1..22) pins zstd\n"
		"at that level; off sends every non-zero page raw.\n"
		"--delta-cache: delta-encode re-sent pages against a cache of\n"
		"that size of last-sent pages (on: guest RAM / 64, 1..64 MiB);\n"
		"off (default): no delta encoding.\n"
		"--postcopy-after: switch to postcopy once a pass ends that\n"
		"many seconds after the start (0: after the first pass): the\n"
		"VM then runs on the destination and pulls the pages it lacks.\n"
		"Until every page is there the VM lives on both hosts: if\n"
		"the source or destination process dies, the VM is lost; a\n"
		"broken link pauses it (phase postcopy_paused; migrate-send\n"
		"waits and says how to recover: 'migratectl migration\n"
		"recover ID [HOST:PORT]').\n"
		"--postcopy-after auto: switch when the convergence model\n"
		"says precopy will not finish within the downtime limit\n"
		"without throttling the guest past --postcopy-throttle-max PCT\n"
		"(0..99, default 50; the throttle stays within it), and only\n"
		"if the destination offers postcopy; else plain precopy.\n"
		"--throttle-max: the auto-throttle's ceiling, 1..99 (default\n"
		"99; migratectl migration tune --throttle changes it later).\n"
		"--timeout-policy: what --timeout-ms running out does: abort\n"
		"(default; the VM stays on the source), switchover (pause and\n"
		"finish now, whatever the downtime), postcopy (switch if the\n"
		"destination offers it, else abort).\n"
		"Exit codes: 0 the VM runs on the destination, 1 migration\n"
		"failed or cancelled (the VM runs on the source), 2 bad input,\n"
		"3 unknown VM, 4 unavailable, 5 daemon not reachable,\n"
		"6 UNRESOLVED: the commit had no answer; the VM is paused on\n"
		"  the source and may run on the destination: ask the\n"
		"  destination, then 'migratectl migration resolve ID\n"
		"  --resume-source | --confirm-destination',\n"
		"7 the VM runs on the destination but the post-commit\n"
		"  verification found pages that differ from the source's,\n"
		"8 permission denied (the RPC role of this client),\n"
		"9 postcopy ended broken after the switch (recovery given up,\n"
		"  or a digest mismatch): the VM's memory is split between the\n"
		"  hosts and it cannot complete,\n"
		"130 interrupted twice, 143 terminated (SIGTERM): no longer\n"
		"  following (a cancel was asked for; migratectl migration\n"
		"  status ID tells the end).\n");
}

struct send_opts {
	bool json;
	bool tty;
	bool detach;
	int width;
};

/* Ctrl-C, counted: the first cancels, the second quits. SIGTERM: cancel
 * and quit at once (whoever sends it will not wait for us). */
static volatile sig_atomic_t interrupts, terminated;

static void on_interrupt(int sig)
{
	if (sig == SIGTERM)
		terminated = 1;
	else
		interrupts++;
}

/* No SA_RESTART: the client's waits are bounded and re-check the count. */
static void catch_interrupts(void)
{
	struct sigaction sa = { .sa_handler = on_interrupt };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * The first interrupt: ask the daemon to cancel migration @id and say
 * what happens now. Refused (past the commit or the postcopy switch, or
 * already over), the tool keeps following the migration to its end.
 */
static void cancel_on_interrupt(const struct send_opts *o,
				struct migd_client *c, uint64_t id)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	int ret;

	ref.id = id;
	req.call_case = MIGD__REQUEST__CALL_MIG_CANCEL;
	req.mig_cancel = &ref;
	if (o->tty)
		putchar('\n');
	ret = migd_client_call(c, &req, 30000, &resp);
	if (ret) {
		fprintf(stderr,
			"migrate-send: interrupted: could not ask for the "
			"cancel (%s); check with: migratectl migration status "
			"%llu\n",
			strerror(-ret), (unsigned long long)id);
		return;
	}
	if (migd_resp_status(resp) == MIGD__STATUS__STATUS_OK)
		fprintf(stderr,
			"migrate-send: interrupted: cancelling migration %llu; "
			"the VM stays on the source%s\n",
			(unsigned long long)id,
			terminated ? "" : " (Ctrl-C again to stop waiting "
					  "for the cancel)");
	else
		fprintf(stderr,
			"migrate-send: interrupted, but migration %llu cannot "
			"be cancelled now (%s)%s\n",
			(unsigned long long)id, migd_resp_message(resp),
			terminated ? ""
				   : "; following it to its end (Ctrl-C "
				     "again to stop following; it goes on)");
	migd__response__free_unpacked(resp, NULL);
	fflush(stdout);
}

/* --detach: the migration runs on; say how to follow or cancel it. */
static void say_detached(const struct send_opts *o, const char *vm,
			 uint64_t id)
{
	if (o->json) {
		printf("{\"id\":%llu,\"vm\":\"%s\",\"detached\":true}\n",
		       (unsigned long long)id, vm);
		return;
	}
	printf("migration %llu of %s started; it runs in the daemon.\n"
	       "  follow it: migratectl migration watch %llu\n"
	       "  cancel it: migratectl migration cancel %llu\n",
	       (unsigned long long)id, vm, (unsigned long long)id,
	       (unsigned long long)id);
}

/* Once per pause: the postcopy waits for an operator's recover. */
static void say_paused(const Migd__MigInfo *m, bool *said)
{
	const Migd__MigProgress *p = m->progress;
	bool paused = p && p->phase ==
				   MIGD__MIG_PHASE__MIG_PHASE_POSTCOPY_PAUSED;

	if (paused && !*said)
		fprintf(stderr,
			"migrate-send: postcopy paused: %s\n"
			"migrate-send: waiting; to resume it, run: migratectl "
			"migration recover %llu [HOST:PORT] (the destination "
			"listens on its original port); to give up: "
			"migratectl migration cancel %llu\n",
			p->message ? p->message : "",
			(unsigned long long)m->id, (unsigned long long)m->id);
	*said = paused;
}

static void show(const struct send_opts *o, const Migd__MigInfo *m,
		 bool final)
{
	if (o->json) {
		migd_json_print(stdout, &m->base);
		putchar('\n');
		fflush(stdout);
		if (final) /* it says how it ended: no error line after it */
			migd_cli_json_printed();
		return;
	}
	if (o->tty && !final) {
		migd_mig_print_bar(stdout, m, o->width);
		return;
	}
	if (!final) {
		migd_mig_print_line(stdout, m);
		fflush(stdout);
		return;
	}
	if (o->tty)
		putchar('\n');
	migd_mig_print_report(stdout, m);
}

static int send_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'C' },
		{ "connect", required_argument, NULL, 'C' },
		{ "tls-dir", required_argument, NULL, 'C' },
		{ "tls-ca", required_argument, NULL, 'C' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'C' },
		{ "channels", required_argument, NULL, 'c' },
		{ "bandwidth", required_argument, NULL, 'b' },
		{ "downtime", required_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'I' },
		{ "insecure", no_argument, NULL, 'i' },
		{ "compress", required_argument, NULL, 'z' },
		{ "delta-cache", required_argument, NULL, 'D' },
		{ "postcopy-after", required_argument, NULL, 'P' },
		{ "postcopy-throttle-max", required_argument, NULL, 'T' },
		{ "timeout-policy", required_argument, NULL, 'O' },
		{ "throttle-max", required_argument, NULL, 'M' },
		{ "json", no_argument, NULL, 'j' },
		{ "detach", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigStartRequest sr = MIGD__MIG_START_REQUEST__INIT;
	Migd__MigWatchRequest wr = MIGD__MIG_WATCH_REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	struct send_opts so = { .width = 80 };
	static struct migd_cli_conn cc;
	int oi = 0;
	bool paused = false;
	Migd__MigInfo *last = NULL;
	Migd__Event *last_ev = NULL;
	struct migd_client *c;
	Migd__Response *resp, *wresp = NULL;
	char host[MIGD_HOST_MAX + 1], tmp[64];
	struct winsize ws;
	uint16_t port;
	uint64_t v;
	int opt, ret;

	migd_cli_conn_init(&cc);
	while ((opt = getopt_long(argc, argv, "", opts, &oi)) != -1) {
		switch (opt) {
		case 'C': /* --socket, --connect, --tls-* */
			migd_cli_conn_option(&cc, opts[oi].name, optarg);
			break;
		case 'c':
			if (migd_parse_u64(optarg, 16, &v) || !v)
				goto bad;
			sr.channels = (uint32_t)v;
			break;
		case 'b':
			snprintf(tmp, sizeof(tmp), "%s", optarg);
			if (strlen(tmp) > 2 &&
			    !strcmp(tmp + strlen(tmp) - 2, "/s"))
				tmp[strlen(tmp) - 2] = '\0';
			if (migd_parse_size(tmp, &sr.bandwidth))
				goto bad;
			break;
		case 'd':
			if (migd_parse_u64(optarg, 600000, &v) || !v)
				goto bad;
			sr.downtime_ms = (uint32_t)v;
			break;
		case 't':
			if (migd_parse_u64(optarg, UINT32_MAX, &v))
				goto bad;
			sr.timeout_ms = (uint32_t)v;
			break;
		case 'I':
			if (migd_parse_u64(optarg, 60000, &v))
				goto bad;
			wr.interval_ms = (uint32_t)v;
			break;
		case 'i':
			sr.insecure = true;
			break;
		case 'D':
			if (!strcmp(optarg, "off")) {
				sr.delta_cache = 0;
			} else if (!strcmp(optarg, "on")) {
				sr.delta_cache = -1;
			} else {
				uint64_t sz;

				if (migd_parse_size(optarg, &sz) || !sz ||
				    sz > (1ull << 40))
					goto bad;
				sr.delta_cache = (int64_t)sz;
			}
			break;
		case 'P':
			if (!strcmp(optarg, "auto")) {
				sr.postcopy_auto = true;
				break;
			}
			if (migd_parse_u64(optarg, 86400, &v))
				goto bad;
			sr.postcopy = true;
			sr.postcopy_after_ms = (uint32_t)v * 1000;
			break;
		case 'T':
			if (migd_parse_u64(optarg, 99, &v))
				goto bad;
			sr.postcopy_throttle_max_pct = (uint32_t)v;
			break;
		case 'M':
			if (migd_parse_u64(optarg, 99, &v) || !v)
				goto bad;
			sr.throttle_max_pct = (uint32_t)v;
			break;
		case 'O': {
			static const char *const pol[] = { "abort",
							   "switchover",
							   "postcopy" };
			unsigned k = 0;

			/* MigTimeoutPolicy's values, in order. */
			while (k < 3 && strcmp(optarg, pol[k]))
				k++;
			if (k == 3)
				goto bad;
			sr.timeout_policy = (Migd__MigTimeoutPolicy)k;
			break;
		}
		case 'z':
			if (!strcmp(optarg, "adaptive"))
				sr.zstd_level = 0;
			else if (!strcmp(optarg, "off"))
				sr.zstd_level = -1;
			else if (!migd_parse_u64(optarg, 22, &v) && v)
				sr.zstd_level = (int32_t)v;
			else
				goto bad;
			break;
		case 'j':
			so.json = true;
			break;
		case 'x':
			so.detach = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			migd_cli_version("migrate-send");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 2 != argc) {
		usage(stderr);
		return 2;
	}
	sr.vm = argv[optind];
	sr.dest = argv[optind + 1];
	if (!migd_name_valid(sr.vm)) {
		fprintf(stderr, "migrate-send: bad VM name '%s'\n", sr.vm);
		return 2;
	}
	if (migd_parse_hostport(sr.dest, false, host, sizeof(host), &port) ||
	    !host[0]) {
		fprintf(stderr,
			"migrate-send: bad destination '%s' (HOST:PORT, port "
			"1..65535)\n",
			sr.dest);
		return 2;
	}
	if (sr.postcopy || sr.postcopy_auto ||
	    sr.timeout_policy == MIGD__MIG_TIMEOUT_POLICY__MIG_TIMEOUT_POSTCOPY)
		fprintf(stderr,
			"migrate-send: warning: postcopy enabled: after the "
			"switch the VM's memory is split between the two "
			"hosts; if the source or destination process dies "
			"before every page arrived, the VM is lost (a broken "
			"link pauses it until 'migratectl migration recover')"
			"\n");
	so.tty = !so.json && isatty(STDOUT_FILENO);
	if (so.tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col)
		so.width = ws.ws_col;

	if (!so.detach)
		catch_interrupts();
	ret = migd_cli_conn_open("migrate-send", &cc, 30000, &c);
	if (ret)
		return ret;
	if (interrupts) { /* before anything started: nothing to cancel */
		fprintf(stderr, "migrate-send: interrupted: no migration "
				"started\n");
		migd_client_close(c);
		return 1;
	}
	req.call_case = MIGD__REQUEST__CALL_MIG_START;
	req.mig_start = &sr;
	ret = migd_client_call(c, &req, 30000, &resp);
	if (ret)
		goto lost;
	if (migd_resp_status(resp) != MIGD__STATUS__STATUS_OK) {
		fprintf(stderr, "migrate-send: %s: %s\n",
			migd_status_text(migd_resp_status(resp)),
			migd_resp_message(resp));
		ret = migd_status_exit_code(migd_resp_status(resp));
		migd__response__free_unpacked(resp, NULL);
		migd_client_close(c);
		return ret;
	}
	ref.id = resp->mig_start->id;
	migd__response__free_unpacked(resp, NULL);
	if (so.detach) {
		say_detached(&so, sr.vm, ref.id);
		migd_client_close(c);
		return 0;
	}

	/* Events of the migration may already be queued behind the start
	 * response; the watch reply carries the state at subscription. */
	req = (Migd__Request)MIGD__REQUEST__INIT;
	wr.ref = &ref;
	req.call_case = MIGD__REQUEST__CALL_MIG_WATCH;
	req.mig_watch = &wr;
	ret = migd_client_call(c, &req, 30000, &wresp);
	if (ret)
		goto lost;
	if (migd_resp_status(wresp) != MIGD__STATUS__STATUS_OK) {
		fprintf(stderr, "migrate-send: watch: %s\n",
			migd_resp_message(wresp));
		migd__response__free_unpacked(wresp, NULL);
		migd_client_close(c);
		return 1;
	}
	if (wresp->subscribe->migration && wresp->subscribe->migration->finished) {
		last = wresp->subscribe->migration;
	} else {
		if (wresp->subscribe->migration)
			show(&so, wresp->subscribe->migration, false);
		for (int seen = 0;;) {
			Migd__Event *ev;

			if (terminated) {
				cancel_on_interrupt(&so, c, ref.id);
				goto quit;
			}
			if (interrupts > seen) {
				seen = interrupts;
				if (seen == 1)
					cancel_on_interrupt(&so, c, ref.id);
				else
					goto quit;
			}
			/* Short waits: an interrupt is acted on within 0.2 s. */
			ret = migd_client_next_event(c, 200, &ev);
			if (ret == -ETIMEDOUT)
				continue;
			if (ret)
				goto lost;
			if (ev->kind == MIGD__EVENT_KIND__EVENT_KIND_END) {
				migd__event__free_unpacked(ev, NULL);
				break;
			}
			if (ev->body_case != MIGD__EVENT__BODY_MIGRATION ||
			    !ev->migration->migration ||
			    ev->subscription != wresp->id) {
				migd__event__free_unpacked(ev, NULL);
				continue;
			}
			if (last_ev)
				migd__event__free_unpacked(last_ev, NULL);
			last_ev = ev;
			last = ev->migration->migration;
			say_paused(last, &paused);
			if (!last->finished)
				show(&so, last, false);
		}
	}
	ret = 1;
	if (last) {
		const Migd__MigProgress *p = last->progress;

		show(&so, last, true);
		if (p && p->phase == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED)
			ret = p->verify_failed ? 7 : 0;
		else if (p && p->phase == MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED)
			ret = 6;
		else if (p && p->postcopy)
			ret = 9;
	} else {
		fprintf(stderr, "migrate-send: no final state received\n");
	}
	if (last_ev)
		migd__event__free_unpacked(last_ev, NULL);
	migd__response__free_unpacked(wresp, NULL);
	migd_client_close(c);
	return ret;
quit:
	fprintf(stderr,
		"%smigrate-send: %s: no longer following migration %llu; "
		"check with: migratectl migration status %llu\n",
		so.tty ? "\n" : "",
		terminated ? "terminated" : "interrupted again",
		(unsigned long long)ref.id, (unsigned long long)ref.id);
	if (last_ev)
		migd__event__free_unpacked(last_ev, NULL);
	migd__response__free_unpacked(wresp, NULL);
	migd_client_close(c);
	return terminated ? 143 : 130;
lost:
	fprintf(stderr,
		"migrate-send: lost the daemon (%s); the migration may still "
		"run: check with migratectl migration status\n",
		strerror(-ret));
	if (last_ev)
		migd__event__free_unpacked(last_ev, NULL);
	if (wresp)
		migd__response__free_unpacked(wresp, NULL);
	migd_client_close(c);
	return 5;
bad:
	switch (opt) {
	case 'c':
		return migd_cli_bad_range("migrate-send", "--channels", optarg,
					  1, 16);
	case 'b':
		return migd_cli_bad("migrate-send", "--bandwidth", optarg,
				    MIGD_CLI_RATE_FMT);
	case 'd':
		return migd_cli_bad_range("migrate-send", "--downtime", optarg,
					  1, 600000);
	case 't':
		return migd_cli_bad_range("migrate-send", "--timeout-ms",
					  optarg, 0, UINT32_MAX);
	case 'I':
		return migd_cli_bad_range("migrate-send", "--interval", optarg,
					  0, 60000);
	case 'P':
		return migd_cli_bad("migrate-send", "--postcopy-after", optarg,
				    "auto or seconds 0..86400");
	case 'T':
		return migd_cli_bad_range("migrate-send",
					  "--postcopy-throttle-max", optarg, 0,
					  99);
	case 'M':
		return migd_cli_bad_range("migrate-send", "--throttle-max",
					  optarg, 1, 99);
	case 'O':
		return migd_cli_bad("migrate-send", "--timeout-policy", optarg,
				    "abort, switchover or postcopy");
	case 'D':
		return migd_cli_bad("migrate-send", "--delta-cache", optarg,
				    "on, off or a size up to 1TiB ("
				    MIGD_CLI_SIZE_FMT ")");
	default:
		return migd_cli_bad("migrate-send", "--compress", optarg,
				    "adaptive, off or a zstd level 1..22");
	}
}

int main(int argc, char **argv)
{
	/* --json anywhere (getopt permutes): client-side errors as JSON. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			migd_cli_json_begin();
	return migd_cli_json_end(send_main(argc, argv));
}
