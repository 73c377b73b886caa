// SPDX-License-Identifier: MIT
/*
 * migratectl migration ... (list, status, watch, cancel, postcopy,
 * switchover, tune, resolve) and
 * migratectl events.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrated/rpc/parse.h"
#include "tools/migratectl/ctl.h"
#include "tools/rpc/cli.h"
#include "tools/rpc/fmt.h"
#include "tools/rpc/migview.h"

/* "12" names a migration id, anything else a VM. */
static void set_ref(Migd__MigRef *ref, const char *s)
{
	uint64_t id;

	if (!migd_parse_u64(s, UINT64_MAX, &id) && id)
		ref->id = id;
	else
		ref->vm = (char *)s;
}

static int mig_status(struct ctl *ctl, const char *which)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigStatusRequest sr = MIGD__MIG_STATUS_REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	int ret;

	if (which) {
		set_ref(&ref, which);
		sr.ref = &ref;
	}
	req.call_case = MIGD__REQUEST__CALL_MIG_STATUS;
	req.mig_status = &sr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json) {
		ctl_print_json(&resp->mig_status->base);
	} else if (which && resp->mig_status->n_migrations == 1) {
		migd_mig_print_report(stdout, resp->mig_status->migrations[0]);
	} else {
		printf("%-4s %-9s %-16s %-22s %-11s %-10s %s\n", "ID",
		       "DIRECTION", "VM", "PEER", "PHASE", "SENT", "UUID");
		for (size_t i = 0; i < resp->mig_status->n_migrations; i++) {
			Migd__MigInfo *m = resp->mig_status->migrations[i];
			char peer[300], b[32];

			migd_fmt_hostport(peer, sizeof(peer), m->peer,
					  m->port);
			printf("%-4llu %-9s %-16s %-22s %-11s %-10s %s\n",
			       (unsigned long long)m->id,
			       m->direction ==
					       MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING
				       ? "outgoing"
				       : "incoming",
			       m->vm, peer,
			       migd_mig_phase_text(m->progress
							   ? m->progress->phase
							   : 0),
			       migd_fmt_bytes(b, sizeof(b),
					      m->progress
						      ? m->progress->bytes_wire
						      : 0),
			       m->uuid && *m->uuid ? m->uuid : "-");
		}
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

/* "2026-12-02T07:49:34.905Z " for the human lines: the event's time
 * (the daemon's clock), or now if it carries none. */
static void print_time(uint64_t unix_ns)
{
	struct timespec ts;
	struct tm tm;
	time_t sec;

	if (!unix_ns) {
		clock_gettime(CLOCK_REALTIME, &ts);
		unix_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			  (uint64_t)ts.tv_nsec;
	}
	sec = (time_t)(unix_ns / 1000000000ull);
	gmtime_r(&sec, &tm);
	printf("%04d-%02d-%02dT%02d:%02d:%02d.%03uZ ", tm.tm_year + 1900,
	       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	       (unsigned)(unix_ns % 1000000000ull / 1000000));
}

/* One event as one human line, every kind: its time, then what it says. */
static void print_event(const Migd__Event *ev)
{
	char k[32], a[32], b[32], r[32];

	print_time(ev->time_unix_ns);
	switch (ev->body_case) {
	case MIGD__EVENT__BODY_VM_STATE:
		if (!ev->vm_state->vm)
			break;
		printf("vm %s: %s -> %s%s%s%s%s\n", ev->vm_state->vm->name,
		       migd_fmt_enum(a, sizeof(a), &migd__vm_state__descriptor,
				     ev->vm_state->old_state, "VM_STATE_"),
		       migd_fmt_enum(b, sizeof(b), &migd__vm_state__descriptor,
				     ev->vm_state->vm->state, "VM_STATE_"),
		       ev->vm_state->destroyed ? " (destroyed)" : "",
		       /* a guest that stopped on its own: why */
		       ev->vm_state->vm->stop_reason &&
				       *ev->vm_state->vm->stop_reason
			       ? " (guest "
			       : "",
		       ev->vm_state->vm->stop_reason
			       ? ev->vm_state->vm->stop_reason
			       : "",
		       ev->vm_state->vm->stop_reason &&
				       *ev->vm_state->vm->stop_reason
			       ? ")"
			       : "");
		return;
	case MIGD__EVENT__BODY_MIGRATION:
		if (!ev->migration->migration)
			break;
		printf("%s ", migd_fmt_enum(k, sizeof(k),
					    &migd__event_kind__descriptor,
					    ev->kind, "EVENT_KIND_"));
		migd_mig_print_line(stdout, ev->migration->migration);
		return;
	case MIGD__EVENT__BODY_DIRTY_RATE: {
		const Migd__DirtyRateSample *d = ev->dirty_rate;

		printf("dirty vm %s: %llu pages/s, %s (%s)\n",
		       d->vm ? d->vm : "?", (unsigned long long)d->pages_per_s,
		       migd_fmt_rate(r, sizeof(r), d->bytes_per_s),
		       d->source && *d->source ? d->source : "off");
		return;
	}
	case MIGD__EVENT__BODY_END:
		printf("end of the subscription\n");
		return;
	default:
		break;
	}
	printf("%s event (no body)\n",
	       migd_fmt_enum(k, sizeof(k), &migd__event_kind__descriptor,
			     ev->kind, "EVENT_KIND_"));
}

static int mig_watch(struct ctl *ctl, const char *which)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigWatchRequest wr = MIGD__MIG_WATCH_REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	Migd__MigPhase last = MIGD__MIG_PHASE__MIG_PHASE_INVALID;
	int ret;

	set_ref(&ref, which);
	wr.ref = &ref;
	req.call_case = MIGD__REQUEST__CALL_MIG_WATCH;
	req.mig_watch = &wr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (resp->subscribe->migration) {
		Migd__MigInfo *m = resp->subscribe->migration;

		if (ctl->json) {
			ctl_print_json(&m->base);
		} else {
			print_time(0);
			migd_mig_print_line(stdout, m);
		}
		if (m->progress)
			last = m->progress->phase;
		if (m->finished) {
			migd__response__free_unpacked(resp, NULL);
			return last == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED
				       ? 0
				       : 1;
		}
	}
	migd__response__free_unpacked(resp, NULL);
	for (;;) {
		Migd__Event *ev;

		ret = migd_client_next_event(ctl->client, -1, &ev);
		if (ret) {
			fprintf(stderr, "migratectl: daemon connection lost\n");
			return 5;
		}
		if (ev->kind == MIGD__EVENT_KIND__EVENT_KIND_END) {
			migd__event__free_unpacked(ev, NULL);
			break;
		}
		if (ev->body_case == MIGD__EVENT__BODY_MIGRATION &&
		    ev->migration->migration) {
			Migd__MigInfo *m = ev->migration->migration;

			if (ctl->json) {
				ctl_print_json(&m->base);
			} else {
				print_time(ev->time_unix_ns);
				migd_mig_print_line(stdout, m);
			}
			fflush(stdout);
			if (m->progress)
				last = m->progress->phase;
		}
		migd__event__free_unpacked(ev, NULL);
	}
	return last == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED ? 0 : 1;
}

/*
 * A call that takes only a migration (cancel, postcopy, switchover):
 * print @warn (if any) on stderr once the daemon took it, then the
 * response as JSON or @done.
 */
static int mig_ref_call(struct ctl *ctl, const char *which,
			Migd__Request__CallCase call, const char *warn,
			const char *done)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	int ret;

	set_ref(&ref, which);
	req.call_case = call;
	switch (call) {
	case MIGD__REQUEST__CALL_MIG_CANCEL:
		req.mig_cancel = &ref;
		break;
	case MIGD__REQUEST__CALL_MIG_POSTCOPY:
		req.mig_postcopy = &ref;
		break;
	default:
		req.mig_switchover = &ref;
		break;
	}
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (warn)
		fprintf(stderr, "migratectl: warning: %s\n", warn);
	if (ctl->json)
		ctl_print_json(&resp->base);
	else
		printf("%s\n", done);
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

/*
 * resolve ID|VM --resume-source | --confirm-destination. 0: settled (and,
 * confirmed, verified clean); 1: settled but the verification found a
 * mismatch; else the refusal's code (FAILED_PRECONDITION: not unresolved).
 */
static int mig_resolve(struct ctl *ctl, int argc, char **argv)
{
	static const struct {
		const char *flag;
		Migd__MigResolveAction action;
	} acts[] = {
		{ "--resume-source",
		  MIGD__MIG_RESOLVE_ACTION__MIG_RESOLVE_RESUME_SOURCE },
		{ "--confirm-destination",
		  MIGD__MIG_RESOLVE_ACTION__MIG_RESOLVE_CONFIRM_DESTINATION },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigResolveRequest rr = MIGD__MIG_RESOLVE_REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	const char *which = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		size_t k = 0;

		while (k < sizeof(acts) / sizeof(acts[0]) &&
		       strcmp(argv[i], acts[k].flag))
			k++;
		if (k < sizeof(acts) / sizeof(acts[0]) && !rr.action)
			rr.action = acts[k].action;
		else if (argv[i][0] != '-' && !which)
			which = argv[i];
		else
			goto usage;
	}
	if (!which || !rr.action)
		goto usage;
	set_ref(&ref, which);
	rr.ref = &ref;
	req.call_case = MIGD__REQUEST__CALL_MIG_RESOLVE;
	req.mig_resolve = &rr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->base);
	else if (resp->mig_resolve)
		migd_mig_print_report(stdout, resp->mig_resolve);
	ret = resp->mig_resolve && resp->mig_resolve->progress &&
	      resp->mig_resolve->progress->verify_failed;
	migd__response__free_unpacked(resp, NULL);
	return ret;
usage:
	fprintf(stderr, "migratectl: usage: migration resolve ID|VM "
			"--resume-source | --confirm-destination\n"
			"  (ask the destination daemon first whether it runs "
			"the VM)\n");
	return 2;
}

static int mig_tune(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bandwidth", required_argument, NULL, 'b' },
		{ "downtime", required_argument, NULL, 'd' },
		{ "throttle", required_argument, NULL, 't' },
		{ "channels", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigTuneRequest tr = MIGD__MIG_TUNE_REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	char tmp[64];
	uint64_t v;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			snprintf(tmp, sizeof(tmp), "%s", optarg);
			if (strlen(tmp) > 2 &&
			    !strcmp(tmp + strlen(tmp) - 2, "/s"))
				tmp[strlen(tmp) - 2] = '\0';
			if (migd_parse_size(tmp, &tr.bandwidth))
				goto bad;
			break;
		case 'd':
			if (migd_parse_u64(optarg, 600000, &v) || !v)
				goto bad;
			tr.downtime_ms = (uint32_t)v;
			break;
		case 't':
			if (migd_parse_u64(optarg, 99, &v))
				goto bad;
			tr.throttle_max_pct = (uint32_t)v;
			break;
		case 'c':
			/* Removed (control.proto, MigTuneRequest): say where
			 * the number of channels is chosen instead. */
			fprintf(stderr,
				"migratectl: migration tune: --channels is not "
				"supported: the number of data channels is "
				"fixed when the migration starts (migrate-send "
				"--channels N)\n");
			return 2;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "migratectl: migration tune needs ID or VM\n");
		return 2;
	}
	if (!tr.bandwidth && !tr.downtime_ms && !tr.throttle_max_pct) {
		fprintf(stderr, "migratectl: migration tune: nothing to change "
				"(give --bandwidth, --downtime or --throttle)\n");
		return 2;
	}
	set_ref(&ref, argv[optind]);
	tr.ref = &ref;
	req.call_case = MIGD__REQUEST__CALL_MIG_TUNE;
	req.mig_tune = &tr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->base);
	else
		printf("tuned\n");
	migd__response__free_unpacked(resp, NULL);
	return 0;
bad:
	switch (c) {
	case 'b':
		return migd_cli_bad("migratectl", "--bandwidth", optarg,
				    MIGD_CLI_RATE_FMT);
	case 'd':
		return migd_cli_bad_range("migratectl", "--downtime", optarg,
					  1, 600000);
	default:
		return migd_cli_bad_range("migratectl", "--throttle", optarg,
					  0, 99);
	}
}

/* migration recover ID|VM [HOST:PORT] */
static int mig_recover(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigRecoverRequest rr = MIGD__MIG_RECOVER_REQUEST__INIT;
	Migd__MigRef ref = MIGD__MIG_REF__INIT;
	Migd__Response *resp;
	int ret;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "migratectl: usage: migration recover ID|VM "
				"[HOST:PORT]\n");
		return 2;
	}
	set_ref(&ref, argv[1]);
	rr.ref = &ref;
	rr.address = argc == 3 ? argv[2] : "";
	req.call_case = MIGD__REQUEST__CALL_MIG_RECOVER;
	req.mig_recover = &rr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->base);
	else
		printf("recovery started: the migration reconnects (phase "
		       "postcopy again, or postcopy_paused with the reason: "
		       "see migration status)\n");
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

int ctl_mig(struct ctl *ctl, int argc, char **argv)
{
	const char *sub = argc >= 2 ? argv[1] : "";

	if (!strcmp(sub, "list") && argc == 2)
		return mig_status(ctl, NULL);
	if (!strcmp(sub, "status") && argc <= 3)
		return mig_status(ctl, argc == 3 ? argv[2] : NULL);
	if (!strcmp(sub, "watch") && argc == 3)
		return mig_watch(ctl, argv[2]);
	if (!strcmp(sub, "cancel") && argc == 3)
		return mig_ref_call(ctl, argv[2],
				    MIGD__REQUEST__CALL_MIG_CANCEL, NULL,
				    "cancel requested");
	if (!strcmp(sub, "postcopy") && argc == 3)
		return mig_ref_call(ctl, argv[2],
				    MIGD__REQUEST__CALL_MIG_POSTCOPY,
				    "after the postcopy switch the VM's memory "
				    "is split between the two hosts; if the "
				    "source or destination process dies before "
				    "every page arrived, the VM is lost (a "
				    "broken link pauses it: migratectl "
				    "migration recover)",
				    "postcopy requested: it switches when the "
				    "current pass ends");
	if (!strcmp(sub, "switchover") && argc == 3)
		return mig_ref_call(ctl, argv[2],
				    MIGD__REQUEST__CALL_MIG_SWITCHOVER, NULL,
				    "switchover forced: the VM pauses when the "
				    "current batch is out, whatever the "
				    "downtime");
	if (!strcmp(sub, "tune"))
		return mig_tune(ctl, argc - 1, argv + 1);
	if (!strcmp(sub, "recover"))
		return mig_recover(ctl, argc - 1, argv + 1);
	if (!strcmp(sub, "resolve"))
		return mig_resolve(ctl, argc - 1, argv + 1);
	fprintf(stderr, "migratectl: usage: migration list | status [ID|VM] "
			"| watch ID|VM | cancel ID|VM | postcopy ID|VM "
			"| switchover ID|VM "
			"| recover ID|VM [HOST:PORT] "
			"| tune ID|VM ... "
			"| resolve ID|VM --resume-source|--confirm-destination"
			"\n");
	return 2;
}

int ctl_events(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "kind", required_argument, NULL, 'k' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const kinds[] = { NULL, "vm", "phase", "progress",
					     "dirty" };
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__SubscribeRequest sr = MIGD__SUBSCRIBE_REQUEST__INIT;
	Migd__EventKind want[8];
	Migd__Response *resp;
	uint64_t count = 0, v;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			sr.vm = optarg;
			break;
		case 'k': {
			int k;

			for (k = 1; k < 5; k++)
				if (!strcmp(kinds[k], optarg))
					break;
			if (k == 5 || sr.n_kinds >= 8) {
				fprintf(stderr, "migratectl: bad --kind '%s' "
						"(vm, phase, progress, "
						"dirty)\n",
					optarg);
				return 2;
			}
			want[sr.n_kinds++] = (Migd__EventKind)k;
			break;
		}
		case 'i':
			if (migd_parse_u64(optarg, 3600000, &v))
				return migd_cli_bad_range("migratectl",
							  "--interval", optarg,
							  0, 3600000);
			sr.interval_ms = (uint32_t)v;
			break;
		case 'n':
			/* 0 would read as "no limit": omit --count for that. */
			if (migd_parse_u64(optarg, UINT64_MAX, &count) ||
			    !count)
				return migd_cli_bad(
					"migratectl", "--count", optarg,
					"a number of events, 1 or more (without "
					"--count: until interrupted)");
			break;
		default:
			return 2;
		}
	}
	sr.kinds = want;
	req.call_case = MIGD__REQUEST__CALL_SUBSCRIBE;
	req.subscribe = &sr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	migd__response__free_unpacked(resp, NULL);
	for (uint64_t n = 0; !count || n < count; n++) {
		Migd__Event *ev;

		ret = migd_client_next_event(ctl->client, -1, &ev);
		if (ret) {
			fprintf(stderr, "migratectl: daemon connection lost\n");
			return 5;
		}
		if (ctl->json)
			ctl_print_json(&ev->base);
		else
			print_event(ev);
		fflush(stdout);
		migd__event__free_unpacked(ev, NULL);
	}
	return 0;
}
