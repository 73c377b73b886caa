// SPDX-License-Identifier: MIT
/*
 * migratectl vm ...: create, list, inspect, pause, resume, destroy.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/ram_layout.h"
#include "hvcore/workload.h" /* HV_WL_MAX_VCPUS: the daemon's vCPU limit */
#include "migrated/rpc/parse.h"
#include "tools/migratectl/ctl.h"
#include "tools/rpc/cli.h"
#include "tools/rpc/fmt.h"

static const char *const patterns[] = { NULL, "sweep", "random", "hotset",
					"idle" };
static const char *const contents[] = { NULL, "stamp", "text", "random" };

static int lookup(const char *const *names, int n, const char *s)
{
	for (int i = 1; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

static int bad(const char *what, const char *val, const char *expected)
{
	return migd_cli_bad("migratectl", what, val, expected);
}

#define RATE_FMT                                                             \
	"PAGES/S (a plain number: page writes per second per vCPU) or "      \
	MIGD_CLI_RATE_FMT

/* "--rate 25000" pages/s, or "--rate 100M" bytes/s (a unit suffix). */
int ctl_parse_rate(const char *s, uint64_t *pages)
{
	uint64_t v;
	size_t n = strlen(s);
	char tmp[64];

	if (n >= 2 && !strcmp(s + n - 2, "/s")) {
		if (n - 2 >= sizeof(tmp))
			return -1;
		memcpy(tmp, s, n - 2);
		tmp[n - 2] = '\0';
		s = tmp;
	}
	if (!migd_parse_u64(s, UINT64_MAX, &v)) {
		*pages = v;
		return 0;
	}
	if (migd_parse_size(s, &v))
		return -1;
	*pages = v / 4096;
	return 0;
}

/*
 * A boot file's path as the daemon must see it: absolute. A relative one
 * is taken from our directory when the daemon is local (its socket); over
 * --connect it would name a file of another host, so it is refused.
 */
#define BOOT_PATH_MAX 4096
static int boot_path(struct ctl *ctl, const char *opt, const char *arg,
		     char *out)
{
	char cwd[BOOT_PATH_MAX];
	int n;

	if (arg[0] == '/' || !arg[0]) {
		n = snprintf(out, BOOT_PATH_MAX, "%s", arg);
		goto check;
	}
	if (ctl->conn.connect)
		return bad(opt, arg,
			   "an absolute path on the daemon's host (with "
			   "--connect a relative path names nothing there)");
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "migratectl: %s '%s': cannot resolve: %s\n",
			opt, arg, strerror(errno));
		return 2;
	}
	n = snprintf(out, BOOT_PATH_MAX, "%s/%s", cwd, arg);
check:
	if (n < 0 || n >= BOOT_PATH_MAX)
		return bad(opt, arg, "a shorter path");
	return 0;
}

/* --disk PATH[,ro]: the path made absolute as a boot file's. */
#define MAX_DISKS 8
static int disk_arg(struct ctl *ctl, const char *arg, size_t nd, char *path,
		    Migd__Disk *d)
{
	char p[BOOT_PATH_MAX];
	size_t len = strlen(arg);
	bool ro = false;
	int ret;

	if (nd >= MAX_DISKS)
		return bad("--disk", arg, "at most 4 disks");
	if (len >= 3 && !strcmp(arg + len - 3, ",ro")) {
		ro = true;
		len -= 3;
	}
	if (!len || len >= sizeof(p))
		return bad("--disk", arg, "PATH or PATH,ro");
	memcpy(p, arg, len);
	p[len] = 0;
	ret = boot_path(ctl, "--disk", p, path);
	if (ret)
		return ret;
	migd__disk__init(d);
	d->path = path;
	d->read_only = ro;
	return 0;
}

/*
 * A daemon that predates Linux guests would skip VmCreateRequest.boot (an
 * unknown field) and make the workload guest instead: ask it first.
 */
static int need_linux_boot(struct ctl *ctl, bool disks, bool rng, bool net)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__CapabilitiesRequest cr = MIGD__CAPABILITIES_REQUEST__INIT;
	Migd__Response *resp;
	bool ok = false, blk = false, ent = false, nic = false;
	int ret;

	if (!ctl->client) {
		ret = migd_cli_conn_open("migratectl", &ctl->conn,
					 ctl->timeout_ms, &ctl->client);
		if (ret)
			return ret;
	}
	req.call_case = MIGD__REQUEST__CALL_CAPABILITIES;
	req.capabilities = &cr;
	ret = migd_client_call(ctl->client, &req, ctl->timeout_ms, &resp);
	if (ret) {
		fprintf(stderr, "migratectl: call failed: %s\n",
			strerror(-ret));
		return 5;
	}
	if (migd_resp_status(resp) == MIGD__STATUS__STATUS_OK &&
	    resp->capabilities)
		for (size_t i = 0; i < resp->capabilities->n_features; i++) {
			const char *f = resp->capabilities->features[i];

			ok |= !strcmp(f, "linux-boot");
			blk |= !strcmp(f, "virtio-blk");
			ent |= !strcmp(f, "virtio-rng");
			nic |= !strcmp(f, "virtio-net");
		}
	migd__response__free_unpacked(resp, NULL);
	/* Devices, like boot files, would be skipped by an older daemon. */
	if (ok && ((disks && !blk) || (rng && !ent) || (net && !nic))) {
		const char *f = disks && !blk ? "virtio-blk"
				: rng && !ent ? "virtio-rng"
					      : "virtio-net";

		fprintf(stderr,
			"migratectl: this daemon has no %s device (its "
			"capabilities lack '%s': an older migrated); nothing "
			"was created\n",
			f, f);
		return 4;
	}
	if (ok)
		return 0;
	fprintf(stderr, "migratectl: this daemon cannot boot a Linux kernel "
			"(its capabilities lack 'linux-boot': an older "
			"migrated); nothing was created\n");
	return 4;
}

/* --net TAP[,mac=XX:XX:XX:XX:XX:XX]: the daemon checks both (the tap
 * is on its host); here only the shape. */
static int net_arg(const char *arg, char *tap, size_t tap_size, Migd__Net *n)
{
	const char *comma = strchr(arg, ',');
	size_t len = comma ? (size_t)(comma - arg) : strlen(arg);

	if (!len || len >= tap_size ||
	    (comma && strncmp(comma + 1, "mac=", 4))) {
		fprintf(stderr,
			"migratectl: bad --net '%s' (expected "
			"TAP[,mac=XX:XX:XX:XX:XX:XX])\n",
			arg);
		return 2;
	}
	memcpy(tap, arg, len);
	tap[len] = '\0';
	n->tap = tap;
	n->mac = comma ? (char *)comma + 5 : (char *)"";
	return 0;
}

static int vm_create(struct ctl *ctl, int argc, char **argv)
{
	enum { O_MEM = 256, O_VCPUS, O_ACCEL, O_PATTERN, O_CONTENT, O_RATE,
	       O_ROFF, O_RSIZE, O_WPCT, O_HOT, O_HOTSHARE, O_HB, O_SEED,
	       O_PAUSED, O_RING, O_BACKING, O_PREFILL, O_KERNEL, O_INITRD,
	       O_CMDLINE, O_DISK, O_RNG, O_NET };
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, O_MEM },
		{ "vcpus", required_argument, NULL, O_VCPUS },
		{ "accel", required_argument, NULL, O_ACCEL },
		{ "pattern", required_argument, NULL, O_PATTERN },
		{ "content", required_argument, NULL, O_CONTENT },
		{ "rate", required_argument, NULL, O_RATE },
		{ "region-offset", required_argument, NULL, O_ROFF },
		{ "region-size", required_argument, NULL, O_RSIZE },
		{ "write-pct", required_argument, NULL, O_WPCT },
		{ "hot-pct", required_argument, NULL, O_HOT },
		{ "hot-share", required_argument, NULL, O_HOTSHARE },
		{ "heartbeat-us", required_argument, NULL, O_HB },
		{ "seed", required_argument, NULL, O_SEED },
		{ "paused", no_argument, NULL, O_PAUSED },
		{ "dirty-ring", required_argument, NULL, O_RING },
		{ "backing", required_argument, NULL, O_BACKING },
		{ "prefill", no_argument, NULL, O_PREFILL },
		{ "kernel", required_argument, NULL, O_KERNEL },
		{ "initrd", required_argument, NULL, O_INITRD },
		{ "cmdline", required_argument, NULL, O_CMDLINE },
		{ "disk", required_argument, NULL, O_DISK },
		{ "rng", no_argument, NULL, O_RNG },
		{ "net", required_argument, NULL, O_NET },
		{ NULL, 0, NULL, 0 },
	};
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmCreateRequest cr = MIGD__VM_CREATE_REQUEST__INIT;
	Migd__Workload wl = MIGD__WORKLOAD__INIT;
	Migd__Boot boot = MIGD__BOOT__INIT;
	Migd__Net net = MIGD__NET__INIT;
	static char net_tap[64];
	char kernel[BOOT_PATH_MAX] = "", initrd[BOOT_PATH_MAX] = "";
	/* --disk PATH[,ro], repeatable: the daemon checks the count. */
	static char disk_path[MAX_DISKS][BOOT_PATH_MAX];
	Migd__Disk disk[MAX_DISKS], *disks[MAX_DISKS];
	size_t nd = 0;
	Migd__Response *resp;
	uint64_t v;
	int c, ret;

	cr.mem_bytes = 256ull << 20;
	cr.nr_vcpus = 1;
	cr.accel = (char *)"";
	cr.backing = (char *)"";
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_MEM:
			if (migd_parse_size(optarg, &cr.mem_bytes))
				return bad("--mem", optarg, MIGD_CLI_SIZE_FMT);
			break;
		case O_VCPUS:
			if (migd_parse_u64(optarg, HV_WL_MAX_VCPUS, &v) || !v)
				return migd_cli_bad_range("migratectl",
							  "--vcpus", optarg, 1,
							  HV_WL_MAX_VCPUS);
			cr.nr_vcpus = (uint32_t)v;
			break;
		case O_ACCEL:
			cr.accel = optarg;
			break;
		case O_PATTERN:
			if ((ret = lookup(patterns, 5, optarg)) < 0)
				return bad("--pattern", optarg,
					   "sweep, random, hotset or idle");
			wl.pattern = (Migd__WlPattern)ret;
			break;
		case O_CONTENT:
			if ((ret = lookup(contents, 4, optarg)) < 0)
				return bad("--content", optarg,
					   "stamp, text or random");
			wl.content = (Migd__WlContent)ret;
			break;
		case O_RATE:
			if (ctl_parse_rate(optarg, &wl.rate_pages))
				return bad("--rate", optarg, RATE_FMT);
			break;
		case O_ROFF:
			if (migd_parse_size(optarg, &wl.region_offset))
				return bad("--region-offset", optarg,
					   MIGD_CLI_SIZE_FMT);
			break;
		case O_RSIZE:
			if (migd_parse_size(optarg, &wl.region_bytes))
				return bad("--region-size", optarg,
					   MIGD_CLI_SIZE_FMT);
			break;
		case O_WPCT:
		case O_HOT:
		case O_HOTSHARE:
			if (migd_parse_u64(optarg, 100, &v))
				return migd_cli_bad_range(
					"migratectl",
					c == O_WPCT  ? "--write-pct"
					: c == O_HOT ? "--hot-pct"
						     : "--hot-share",
					optarg, 0, 100);
			if (c == O_WPCT)
				wl.write_pct = (uint32_t)v;
			else if (c == O_HOT)
				wl.hot_pct = (uint32_t)v;
			else
				wl.hot_share_pct = (uint32_t)v;
			break;
		case O_HB:
			if (migd_parse_u64(optarg, 10000000, &v))
				return migd_cli_bad_range("migratectl",
							  "--heartbeat-us",
							  optarg, 0, 10000000);
			wl.heartbeat_us = (uint32_t)v;
			break;
		case O_SEED:
			if (migd_parse_u64(optarg, UINT64_MAX, &wl.seed))
				return bad("--seed", optarg,
					   "an unsigned 64-bit integer");
			break;
		case O_PAUSED:
			cr.paused = true;
			break;
		case O_PREFILL:
			wl.prefill = true;
			break;
		case O_RING:
			/* The daemon checks the size; off = the bitmap. */
			if (!strcmp(optarg, "off"))
				cr.dirty_ring = -1;
			else if (migd_parse_u64(optarg, INT32_MAX, &v) || !v)
				return bad("--dirty-ring", optarg,
					   "off or a number of entries "
					   "(a power of two; the daemon "
					   "checks the range)");
			else
				cr.dirty_ring = (int32_t)v;
			break;
		case O_BACKING: /* the daemon checks the name */
			cr.backing = optarg;
			break;
		case O_KERNEL:
		case O_INITRD:
			ret = boot_path(
				ctl, c == O_KERNEL ? "--kernel" : "--initrd",
				optarg, c == O_KERNEL ? kernel : initrd);
			if (ret)
				return ret;
			break;
		case O_CMDLINE: /* the daemon checks it */
			boot.cmdline = optarg;
			break;
		case O_DISK:
			ret = disk_arg(ctl, optarg, nd, disk_path[nd % MAX_DISKS],
				       &disk[nd % MAX_DISKS]);
			if (ret)
				return ret;
			disks[nd] = &disk[nd];
			nd++;
			break;
		case O_RNG:
			boot.rng = true;
			break;
		case O_NET:
			ret = net_arg(optarg, net_tap, sizeof(net_tap), &net);
			if (ret)
				return ret;
			boot.net = &net;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "migratectl: vm create needs one NAME\n");
		return 2;
	}
	cr.name = argv[optind];
	cr.workload = &wl;
	/* The daemon says what is wrong with the boot options (so does it
	 * for every client); only a daemon that knows them is sent them. */
	if (kernel[0] || initrd[0] || boot.cmdline || nd || boot.rng ||
	    boot.net) {
		boot.kernel = kernel;
		boot.initrd = initrd;
		boot.cmdline = boot.cmdline ? boot.cmdline : (char *)"";
		boot.n_disks = nd;
		boot.disks = nd ? disks : NULL;
		cr.boot = &boot;
		ret = need_linux_boot(ctl, nd > 0, boot.rng, boot.net != NULL);
		if (ret)
			return ret;
	}
	req.call_case = MIGD__REQUEST__CALL_VM_CREATE;
	req.vm_create = &cr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->vm->base);
	else if (resp->vm->kernel && *resp->vm->kernel)
		printf("created %s (Linux %s, %s, %u vCPUs, %llu MiB); "
		       "migratectl vm console %s\n",
		       resp->vm->name, resp->vm->kernel, resp->vm->accel,
		       resp->vm->nr_vcpus,
		       (unsigned long long)(resp->vm->mem_bytes >> 20),
		       resp->vm->name);
	else
		printf("created %s (%s, %u vCPUs, %llu MiB)\n",
		       resp->vm->name, resp->vm->accel, resp->vm->nr_vcpus,
		       (unsigned long long)(resp->vm->mem_bytes >> 20));
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

static const char *state_text(Migd__VmState s, char *buf, size_t n)
{
	return migd_fmt_enum(buf, n, &migd__vm_state__descriptor, s,
			     "VM_STATE_");
}

/* "stopped (reboot)": the state, and why a guest stopped on its own. */
static const char *state_why(const Migd__VmInfo *v, char *buf, size_t n)
{
	char st[32];

	state_text(v->state, st, sizeof(st));
	if (v->stop_reason && *v->stop_reason)
		snprintf(buf, n, "%s (%s)", st, v->stop_reason);
	else
		snprintf(buf, n, "%s", st);
	return buf;
}

/* What each stop reason means, for vm inspect. */
static const char *stop_meaning(const char *why)
{
	static const struct {
		const char *why, *text;
	} t[] = {
		{"poweroff", "the guest powered off"},
		{"reboot", "the guest asked for a reset; a reboot stops the "
			   "VM (vm destroy, vm create to start it again)"},
		{"panic", "the guest kernel panicked (vm console --from-start "
			  "or the console log shows why)"},
		{"error", "a vCPU failed (see the VCPU table and the daemon's "
			  "log)"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(why, t[i].why))
			return t[i].text;
	return "";
}

static int vm_list(struct ctl *ctl)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmListRequest lr = MIGD__VM_LIST_REQUEST__INIT;
	Migd__Response *resp;
	int ret;

	req.call_case = MIGD__REQUEST__CALL_VM_LIST;
	req.vm_list = &lr;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json) {
		ctl_print_json(&resp->vm_list->base);
	} else {
		printf("%-20s %-10s %-5s %5s %10s  %-8s %8s\n", "NAME",
		       "STATE", "ACCEL", "VCPUS", "MEMORY", "ORIGIN", "PID");
		for (size_t i = 0; i < resp->vm_list->n_vms; i++) {
			Migd__VmInfo *v = resp->vm_list->vms[i];
			char st[64], mem[32];

			printf("%-20s %-10s %-5s %5u %10s  %-8s %8llu\n",
			       v->name, state_why(v, st, sizeof(st)), v->accel,
			       v->nr_vcpus,
			       migd_fmt_bytes(mem, sizeof(mem), v->mem_bytes),
			       v->origin, (unsigned long long)v->worker_pid);
			if (v->exit_reason && *v->exit_reason)
				printf("  %s: %s\n", v->name, v->exit_reason);
		}
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

/* A vCPU's write ceiling, or "-" when not measured yet. */
static const char *ceiling_text(char *buf, size_t n, uint64_t ceiling)
{
	if (!ceiling)
		return "-";
	snprintf(buf, n, "%llu", (unsigned long long)ceiling);
	return buf;
}

/* A Linux guest's virtio devices: where the guest sees them, what they
 * did. */
static void print_devices(const Migd__VmInspectResult *r)
{
	char a[32], b[32];

	for (size_t i = 0; i < r->n_devices; i++) {
		const Migd__Device *d = r->devices[i];

		printf("device:    00:%02x.0 %s", d->pci_slot, d->kind);
		if (d->path && *d->path)
			printf(" %s%s", d->path, d->read_only ? " (ro)" : "");
		if (d->bar0)
			printf(", bar0 0x%llx", (unsigned long long)d->bar0);
		printf(", %s, %s\n",
		       d->status & 0x4 ? "driver ok" : "no driver",
		       d->msix ? "msi-x" : "intx");
		if (!strcmp(d->kind, "virtio-net"))
			printf("           mac %s, %llu packets (%llu dropped "
			       "or failed), received %s, sent %s\n",
			       d->mac && *d->mac ? d->mac : "?",
			       (unsigned long long)d->requests,
			       (unsigned long long)d->errors,
			       migd_fmt_bytes(a, sizeof(a), d->bytes_read),
			       migd_fmt_bytes(b, sizeof(b), d->bytes_written));
		else if (!strcmp(d->kind, "virtio-blk"))
			printf("           %llu requests (%llu errors), read "
			       "%s, written %s, %llu flushes\n",
			       (unsigned long long)d->requests,
			       (unsigned long long)d->errors,
			       migd_fmt_bytes(a, sizeof(a), d->bytes_read),
			       migd_fmt_bytes(b, sizeof(b), d->bytes_written),
			       (unsigned long long)d->flushes);
		else
			printf("           %s given to the guest\n",
			       migd_fmt_bytes(a, sizeof(a), d->bytes_read));
	}
	if (!r->n_devices && r->boot && r->boot->net)
		printf("net:       tap %s, mac %s (asked for)\n",
		       r->boot->net->tap, r->boot->net->mac);
	if (!r->n_devices && r->boot &&
	    (r->boot->n_disks || r->boot->rng || r->boot->net))
		printf("device:    (asked for; the VM has none now)\n");
}

static void print_inspect(const Migd__VmInspectResult *r)
{
	const Migd__VmInfo *v = r->info;
	const Migd__Workload *w = r->workload;
	char a[32], b[32], c[32];

	printf("name:      %s\n", v->name);
	printf("state:     %s\n", state_text(v->state, a, sizeof(a)));
	if (v->stop_reason && *v->stop_reason)
		printf("stopped:   %s: %s\n", v->stop_reason,
		       stop_meaning(v->stop_reason));
	if (r->boot && r->boot->kernel && *r->boot->kernel) {
		printf("guest:     Linux\n");
		printf("kernel:    %s\n", r->boot->kernel);
		printf("initrd:    %s\n", r->boot->initrd && *r->boot->initrd
						  ? r->boot->initrd
						  : "(none)");
		if (r->boot->cmdline && *r->boot->cmdline)
			printf("cmdline:   the default + \"%s\"\n",
			       r->boot->cmdline);
		else
			printf("cmdline:   the default\n");
		printf("console:   %s (migratectl vm console %s)\n",
		       r->console_log && *r->console_log ? r->console_log
							 : "(no log file)",
		       v->name);
		print_devices(r);
	}
	printf("accel:     %s, %u vCPUs, %s, %s\n", v->accel, v->nr_vcpus,
	       migd_fmt_bytes(b, sizeof(b), v->mem_bytes), v->origin);
	{
		/* hvcore's layout (hvcore/ram_layout.h): RAM below the MMIO
		 * hole, the rest from 4 GiB. */
		struct hv_ram_layout l = hv_ram_layout_std(v->mem_bytes);
		char d[32];

		if (v->mem_bytes > l.hole_start)
			printf("ram:       gpa [0, %s) + [%s, 0x%llx), MMIO "
			       "hole [%s, %s)\n",
			       migd_fmt_bytes(a, sizeof(a), l.hole_start),
			       migd_fmt_bytes(b, sizeof(b), l.hole_end),
			       (unsigned long long)hv_ram_top_gpa(&l),
			       migd_fmt_bytes(c, sizeof(c), l.hole_start),
			       migd_fmt_bytes(d, sizeof(d), l.hole_end));
		else
			printf("ram:       gpa [0, %s)\n",
			       migd_fmt_bytes(a, sizeof(a), v->mem_bytes));
	}
	printf("worker:    pid %llu (worker %llu)%s%u live update(s)\n",
	       (unsigned long long)v->worker_pid,
	       (unsigned long long)v->worker_id, ", ", v->updates);
	if (v->backing && *v->backing)
		printf("backing:   %s\n", v->backing);
	if (v->dirty_ring)
		printf("dirty log: ring, %u entries per vCPU%s\n",
		       v->dirty_ring,
		       v->ring_desyncs || v->ring_resyncs
			       ? " (host ring defect seen, log resynced)"
			       : "");
	else
		printf("dirty log: bitmap\n");
	if (w) {
		printf("workload:  %s, %s content, ",
		       migd_fmt_enum(a, sizeof(a),
				     &migd__wl_pattern__descriptor,
				     w->pattern, "WL_PATTERN_"),
		       migd_fmt_enum(b, sizeof(b),
				     &migd__wl_content__descriptor,
				     w->content, "WL_CONTENT_"));
		if (w->rate_pages)
			printf("%llu pages/s per vCPU, ",
			       (unsigned long long)w->rate_pages);
		else
			printf("flat out, ");
		printf("region %s at %s, %u%% writes, heartbeat %u us\n",
		       migd_fmt_bytes(a, sizeof(a), w->region_bytes),
		       migd_fmt_bytes(c, sizeof(c), w->region_offset),
		       w->write_pct, w->heartbeat_us);
		if (w->prefill)
			printf("prefill:   %s\n",
			       r->prefill_done ? "done" : "in progress");
	}
	printf("%-5s %14s %10s %11s %8s %12s %10s %10s %-7s %s\n", "VCPU",
	       "SEQ", "PASSES", "HEARTBEATS", "HB-AGE", "MAX-HB-GAP",
	       "WRITES/S", "CEILING/S", "RUNNING", "ERROR");
	for (size_t i = 0; i < r->n_vcpus; i++) {
		const Migd__VcpuStatus *s = r->vcpus[i];

		printf("%-5u %14llu %10llu %11llu %6llums %10lluus %10llu "
		       "%10s %-7s %s\n",
		       s->index, (unsigned long long)s->seq,
		       (unsigned long long)s->passes,
		       (unsigned long long)s->heartbeats,
		       (unsigned long long)s->last_heartbeat_age_ms,
		       (unsigned long long)s->max_heartbeat_gap_us,
		       (unsigned long long)s->write_rate,
		       ceiling_text(a, sizeof(a), s->write_ceiling),
		       s->running ? "yes" : "no", s->error ? s->error : "");
	}
	if (r->workload && r->workload->rate_pages)
		for (size_t i = 0; i < r->n_vcpus; i++)
			if (r->vcpus[i]->write_ceiling &&
			    r->workload->rate_pages * 10 >
				    r->vcpus[i]->write_ceiling * 11)
				printf("note: vCPU %u reached %llu writes/s "
				       "flat out, below its pace of %llu/s\n",
				       r->vcpus[i]->index,
				       (unsigned long long)
					       r->vcpus[i]->write_ceiling,
				       (unsigned long long)
					       r->workload->rate_pages);
}

static int vm_simple(struct ctl *ctl, const char *sub, const char *name)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmRef ref = MIGD__VM_REF__INIT;
	Migd__Response *resp;
	char st[32];
	int ret;

	ref.name = (char *)name;
	if (!strcmp(sub, "inspect")) {
		req.call_case = MIGD__REQUEST__CALL_VM_INSPECT;
		req.vm_inspect = &ref;
	} else if (!strcmp(sub, "pause")) {
		req.call_case = MIGD__REQUEST__CALL_VM_PAUSE;
		req.vm_pause = &ref;
	} else if (!strcmp(sub, "resume")) {
		req.call_case = MIGD__REQUEST__CALL_VM_RESUME;
		req.vm_resume = &ref;
	} else if (!strcmp(sub, "destroy")) {
		req.call_case = MIGD__REQUEST__CALL_VM_DESTROY;
		req.vm_destroy = &ref;
	} else if (!strcmp(sub, "update")) {
		req.call_case = MIGD__REQUEST__CALL_VM_UPDATE;
		req.vm_update = &ref;
	} else {
		fprintf(stderr, "migratectl: unknown vm command '%s'\n", sub);
		return 2;
	}
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (resp->result_case == MIGD__RESPONSE__RESULT_VM_UPDATE) {
		const Migd__VmUpdateResult *u = resp->vm_update;

		if (ctl->json)
			ctl_print_json(&u->base);
		else
			printf("%s: updated, worker pid %llu -> %llu, vCPUs "
			       "paused %.2f ms (state saved %.2f ms, restored "
			       "%.2f ms), %.1f ms in all\n",
			       u->vm ? u->vm->name : name,
			       (unsigned long long)u->old_pid,
			       (unsigned long long)u->new_pid, u->pause_ns / 1e6,
			       u->save_ns / 1e6, u->restore_ns / 1e6,
			       u->total_ns / 1e6);
	} else if (resp->result_case == MIGD__RESPONSE__RESULT_VM_INSPECT) {
		if (ctl->json)
			ctl_print_json(&resp->vm_inspect->base);
		else
			print_inspect(resp->vm_inspect);
	} else if (resp->result_case == MIGD__RESPONSE__RESULT_VM) {
		bool moving = resp->vm->state ==
			      MIGD__VM_STATE__VM_STATE_MIGRATING;

		if (ctl->json)
			ctl_print_json(&resp->vm->base);
		else if (moving && !strcmp(sub, "pause"))
			/* Its state stays MIGRATING: say what changed. */
			printf("%s: paused; it migrates on and arrives "
			       "paused\n",
			       resp->vm->name);
		else if (moving && !strcmp(sub, "resume"))
			printf("%s: resumed; it migrates on and arrives "
			       "running\n",
			       resp->vm->name);
		else
			printf("%s: %s\n", resp->vm->name,
			       !strcmp(sub, "destroy")
				       ? "destroyed"
				       : state_text(resp->vm->state, st,
						    sizeof(st)));
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

/* The vm subcommands (the usage line of migratectl --help has them). */
static const char *const vm_cmds[] = {
	"create", "list",    "inspect", "pause",  "resume",
	"destroy", "set-rate", "check",  "update", "console",
	"snapshot", "restore",
};

int ctl_vm(struct ctl *ctl, int argc, char **argv)
{
	size_t k = 0;

	while (argc >= 2 && k < sizeof(vm_cmds) / sizeof(vm_cmds[0]) &&
	       strcmp(argv[1], vm_cmds[k]))
		k++;
	if (argc < 2 || k == sizeof(vm_cmds) / sizeof(vm_cmds[0])) {
		if (argc >= 2)
			fprintf(stderr, "migratectl: unknown vm command "
					"'%s'\n", argv[1]);
		fprintf(stderr, "migratectl: vm commands:");
		for (k = 0; k < sizeof(vm_cmds) / sizeof(vm_cmds[0]); k++)
			fprintf(stderr, " %s", vm_cmds[k]);
		fprintf(stderr, " (migratectl vm --help)\n");
		return 2;
	}
	if (!strcmp(argv[1], "create"))
		return vm_create(ctl, argc - 1, argv + 1);
	if (!strcmp(argv[1], "set-rate"))
		return ctl_vm_set_rate(ctl, argc - 1, argv + 1);
	if (!strcmp(argv[1], "console"))
		return ctl_vm_console(ctl, argc - 1, argv + 1);
	if (!strcmp(argv[1], "snapshot"))
		return ctl_vm_snapshot(ctl, argc - 1, argv + 1);
	if (!strcmp(argv[1], "restore"))
		return ctl_vm_restore(ctl, argc - 1, argv + 1);
	if (!strcmp(argv[1], "list")) {
		if (argc != 2) {
			fprintf(stderr, "migratectl: vm list takes no "
					"argument\n");
			return 2;
		}
		return vm_list(ctl);
	}
	if (argc != 3) {
		fprintf(stderr, "migratectl: vm %s needs one NAME\n", argv[1]);
		return 2;
	}
	if (!strcmp(argv[1], "check"))
		return ctl_vm_check(ctl, argv[2]);
	return vm_simple(ctl, argv[1], argv[2]);
}
