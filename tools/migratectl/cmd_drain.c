// SPDX-License-Identifier: MIT
/*
 * migratectl host drain HOST: ask HOST's daemon (--socket / --connect) to
 * move every VM to the other hosts of the fleet (docs/api.md,
 * host_drain), then follow it until it ends: one line per VM as its state
 * changes, then a table (--json: the final HostDrainStatus as one JSON
 * line). The drain runs in the daemon: interrupting this command does not
 * stop it; `host drain-status` shows it again. Exit 0 when every VM
 * moved, 1 when one could not (failed, skipped or cancelled) or the drain
 * failed.
 *
 * host drain-cancel HOST: stop HOST's running drain, then follow it until
 * its migrations in flight ended (exit 0 once it stopped). host undrain
 * HOST: HOST takes VMs again. HOST may be any registered host: the daemon
 * asked forwards the call to HOST's daemon.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migrated/rpc/parse.h"
#include "tools/migratectl/ctl.h"
#include "tools/rpc/cli.h"

#define POLL_MS 500

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void print_table(const Migd__HostDrainStatus *s)
{
	printf("%-24s %-10s %-16s %s\n", "VM", "STATE", "TARGET",
	       "MIGRATION / REASON");
	for (size_t i = 0; i < s->n_vms; i++) {
		const Migd__HostDrainVm *v = s->vms[i];

		if (v->reason && v->reason[0])
			printf("%-24s %-10s %-16s %s\n", v->vm, v->state,
			       v->target[0] ? v->target : "-", v->reason);
		else
			printf("%-24s %-10s %-16s %llu\n", v->vm, v->state,
			       v->target[0] ? v->target : "-",
			       (unsigned long long)v->migration_id);
	}
	printf("host %s: drain %s: %u migrated, %u not moved, %u cancelled, "
	       "of %zu VM(s) in %.1f s; at most %u migration(s) at once "
	       "(limit %u), %u into one host (limit %u)%s\n",
	       s->host, s->state && s->state[0] ? s->state : "?",
	       s->migrated, s->failed, s->cancelled, s->n_vms,
	       (double)s->elapsed_ms / 1000, s->peak_fleet, s->max_fleet,
	       s->peak_per_host, s->max_per_host,
	       s->draining ? "; the host stays draining" : "");
	if (s->error && s->error[0])
		printf("drain failed: %s\n", s->error);
}

/* Print the rows whose state changed since @seen (a string per row). */
static void print_changes(const Migd__HostDrainStatus *s, char ***seen,
			  size_t *nr_seen)
{
	if (s->n_vms > *nr_seen) {
		char **n = realloc(*seen, s->n_vms * sizeof(*n));

		if (!n)
			return;
		for (size_t i = *nr_seen; i < s->n_vms; i++)
			n[i] = NULL;
		*seen = n;
		*nr_seen = s->n_vms;
	}
	for (size_t i = 0; i < s->n_vms; i++) {
		const Migd__HostDrainVm *v = s->vms[i];

		if ((*seen)[i] && !strcmp((*seen)[i], v->state))
			continue;
		free((*seen)[i]);
		(*seen)[i] = strdup(v->state);
		if (!strcmp(v->state, "migrating"))
			printf("%s: migrating to %s (migration %llu)\n", v->vm,
			       v->target, (unsigned long long)v->migration_id);
		else if (!strcmp(v->state, "migrated"))
			printf("%s: migrated to %s\n", v->vm, v->target);
		else if (strcmp(v->state, "pending"))
			printf("%s: %s: %s\n", v->vm, v->state, v->reason);
		if (v->committing && !strcmp(v->state, "migrating"))
			printf("%s: %s\n", v->vm, v->reason);
		fflush(stdout);
	}
}

static int status_call(struct ctl *ctl, const char *host,
		       Migd__Response **resp)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__HostDrainStatusRequest sr = MIGD__HOST_DRAIN_STATUS_REQUEST__INIT;

	sr.host = (char *)(host ? host : "");
	req.call_case = MIGD__REQUEST__CALL_HOST_DRAIN_STATUS;
	req.host_drain_status = &sr;
	return ctl_call(ctl, &req, resp);
}

static int outcome(const Migd__HostDrainStatus *s)
{
	return s->failed || s->cancelled || (s->error && s->error[0]) ? 1
									 : 0;
}

/* Poll @host's drain status (until it stops when @wait), print it;
 * @cancel: the exit code says it stopped (0), not what it moved. */
static int follow(struct ctl *ctl, const char *host, bool wait, bool cancel)
{
	Migd__Response *resp = NULL;
	char **seen = NULL;
	size_t nr_seen = 0;
	int ret;

	for (;;) {
		ret = status_call(ctl, host, &resp);
		if (ret)
			break;
		if (!ctl->json)
			print_changes(resp->host_drain_status, &seen,
				      &nr_seen);
		if (!resp->host_drain_status->running || !wait)
			break;
		migd__response__free_unpacked(resp, NULL);
		resp = NULL;
		sleep_ms(POLL_MS);
	}
	for (size_t i = 0; i < nr_seen; i++)
		free(seen[i]);
	free(seen);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->host_drain_status->base);
	else
		print_table(resp->host_drain_status);
	ret = cancel ? 0 : outcome(resp->host_drain_status);
	migd__response__free_unpacked(resp, NULL);
	return ret;
}

static int bad_limit(const char *opt, const char *v)
{
	return migd_cli_bad_range("migratectl", opt, v, 1, 64);
}

int ctl_host_drain(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-per-host", required_argument, NULL, 'p' },
		{ "max-fleet", required_argument, NULL, 'f' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__HostDrainRequest dr = MIGD__HOST_DRAIN_REQUEST__INIT;
	bool status_only = !strcmp(argv[1], "drain-status"), wait = true;
	Migd__Response *resp;
	uint64_t v;
	int c, ret;

	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (migd_parse_u64(optarg, 64, &v) || !v)
				return bad_limit("--max-per-host", optarg);
			dr.max_per_host = (uint32_t)v;
			break;
		case 'f':
			if (migd_parse_u64(optarg, 64, &v) || !v)
				return bad_limit("--max-fleet", optarg);
			dr.max_fleet = (uint32_t)v;
			break;
		case 'n':
			wait = false;
			break;
		default:
			return 2;
		}
	}
	if (status_only)
		return optind + 1 < argc ? 2
		       : follow(ctl, optind < argc ? argv[optind] : NULL,
				false, false);
	if (optind + 1 != argc) {
		fprintf(stderr, "migratectl: host drain HOST [--max-per-host "
			"N] [--max-fleet N] [--no-wait]\n");
		return 2;
	}
	dr.host = argv[optind];
	req.call_case = MIGD__REQUEST__CALL_HOST_DRAIN;
	req.host_drain = &dr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	migd__response__free_unpacked(resp, NULL);
	return follow(ctl, argv[optind], wait, false);
}

int ctl_host_drain_cancel(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-wait", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__HostDrainCancelRequest cr = MIGD__HOST_DRAIN_CANCEL_REQUEST__INIT;
	Migd__Response *resp;
	bool wait = true;
	int c, ret;

	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'n')
			return 2;
		wait = false;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "migratectl: host drain-cancel HOST "
			"[--no-wait]\n");
		return 2;
	}
	cr.host = argv[optind];
	req.call_case = MIGD__REQUEST__CALL_HOST_DRAIN_CANCEL;
	req.host_drain_cancel = &cr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	migd__response__free_unpacked(resp, NULL);
	return follow(ctl, argv[optind], wait, true);
}

int ctl_host_undrain(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__HostUndrainRequest ur = MIGD__HOST_UNDRAIN_REQUEST__INIT;
	Migd__Response *resp;
	int ret;

	if (argc != 3 || argv[2][0] == '-') {
		fprintf(stderr, "migratectl: host undrain HOST\n");
		return 2;
	}
	ur.host = argv[2];
	req.call_case = MIGD__REQUEST__CALL_HOST_UNDRAIN;
	req.host_undrain = &ur;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->host_undrain->base);
	else if (resp->host_undrain->was_draining)
		printf("host %s: no longer draining, takes VMs again\n",
		       resp->host_undrain->host);
	else
		printf("host %s was not draining: nothing to do\n",
		       resp->host_undrain->host);
	migd__response__free_unpacked(resp, NULL);
	return 0;
}
