// SPDX-License-Identifier: MIT
/*
 * migratectl vm snapshot NAME DIR [--pause|--stop] and
 * migratectl vm restore NAME DIR [--paused] (docs/snapshots.md,
 * docs/api.md: vm_snapshot, vm_restore). DIR is on the daemon's host; a
 * relative DIR is taken from this directory, for a daemon on this host.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/migratectl/ctl.h"

/* @dir made absolute against our working directory into @buf. */
static const char *abs_dir(const char *dir, char *buf, size_t n)
{
	char cwd[PATH_MAX];

	if (dir[0] == '/')
		return dir;
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if ((size_t)snprintf(buf, n, "%s/%s", cwd, dir) >= n)
		return NULL;
	return buf;
}

int ctl_vm_snapshot(struct ctl *ctl, int argc, char **argv)
{
	enum { O_PAUSE = 256, O_STOP };
	static const struct option opts[] = {
		{"pause", no_argument, NULL, O_PAUSE},
		{"stop", no_argument, NULL, O_STOP},
		{NULL, 0, NULL, 0},
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmSnapshotRequest r = MIGD__VM_SNAPSHOT_REQUEST__INIT;
	const Migd__VmSnapshotResult *s;
	Migd__Response *resp;
	char buf[PATH_MAX];
	const char *dir;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case O_PAUSE:
			r.pause = true;
			break;
		case O_STOP:
			r.stop = true;
			break;
		default:
			return 2;
		}
	}
	if (optind + 2 != argc) {
		fprintf(stderr, "migratectl: vm snapshot needs NAME and DIR\n");
		return 2;
	}
	if (r.pause && r.stop) {
		fprintf(stderr, "migratectl: vm snapshot: --pause and --stop "
				"exclude each other\n");
		return 2;
	}
	dir = abs_dir(argv[optind + 1], buf, sizeof(buf));
	if (!dir) {
		fprintf(stderr, "migratectl: vm snapshot: directory '%s' is "
				"too long\n",
			argv[optind + 1]);
		return 2;
	}
	r.name = argv[optind];
	r.dir = (char *)dir;
	req.call_case = MIGD__REQUEST__CALL_VM_SNAPSHOT;
	req.vm_snapshot = &r;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	s = resp->vm_snapshot;
	if (ctl->json) {
		ctl_print_json(&s->base);
	} else {
		printf("%s: snapshot in %s, %s: %u pass(es), %llu pages "
		       "written (%llu in the last), %.1f MiB on disk; "
		       "paused %.2f ms, %.1f ms in all; the VM is %s\n",
		       r.name, s->dir, s->live ? "live" : "of a paused VM",
		       s->passes, (unsigned long long)s->pages_written,
		       (unsigned long long)s->last_pass_pages,
		       (double)s->file_bytes / (1 << 20),
		       (double)s->pause_ns / 1e6,
		       (double)s->duration_ns / 1e6,
		       r.stop ? "destroyed" : r.pause ? "paused" : "running");
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

int ctl_vm_restore(struct ctl *ctl, int argc, char **argv)
{
	enum { O_PAUSED = 256 };
	static const struct option opts[] = {
		{"paused", no_argument, NULL, O_PAUSED},
		{NULL, 0, NULL, 0},
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmRestoreRequest r = MIGD__VM_RESTORE_REQUEST__INIT;
	Migd__Response *resp;
	char buf[PATH_MAX];
	const char *dir;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case O_PAUSED:
			r.paused = true;
			break;
		default:
			return 2;
		}
	}
	if (optind + 2 != argc) {
		fprintf(stderr, "migratectl: vm restore needs NAME and DIR\n");
		return 2;
	}
	dir = abs_dir(argv[optind + 1], buf, sizeof(buf));
	if (!dir) {
		fprintf(stderr, "migratectl: vm restore: directory '%s' is "
				"too long\n",
			argv[optind + 1]);
		return 2;
	}
	r.name = argv[optind];
	r.dir = (char *)dir;
	req.call_case = MIGD__REQUEST__CALL_VM_RESTORE;
	req.vm_restore = &r;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->vm->base);
	else
		printf("%s: restored from %s, every page verified; %s\n",
		       resp->vm->name, dir, r.paused ? "paused" : "running");
	migd__response__free_unpacked(resp, NULL);
	return 0;
}
