// SPDX-License-Identifier: MIT
/*
 * hvbench handover: the pause of a local live update (migrated/vmm/
 * handover.h). The sender is this process, the receiver a forked child,
 * the guest sweeps its memory flat out with stamp writes. Per run: a
 * fresh VM is started and written for --warmup-ms, then paused and handed
 * over; the child resumes it and runs it briefly. Two ways, one table
 * each: "send" (migd_handover_send on the paused VM: the receiver creates
 * its VM inside the pause) and "live" (migd_handover_offer while the
 * guest runs, then pause and migd_handover_commit).
 *
 * pause = the sender's hv_vm_pause() call to the receiver's vCPUs
 * resumed (CLOCK_MONOTONIC, one host). Its parts: park (hv_vm_pause),
 * save (hv_vm_state_save), pause->sent (the Handover frame with the
 * memfd on the socket), the receiver's create (new VM over the memfd),
 * restore (state + vCPU threads parked) and start (Go -> resumed).
 * guest gap: the largest jump of a vCPU's own clock (status.last_tsc)
 * between its last batch before the pause and its first batch after it,
 * seen through the sender's mapping of the same memory; and the host
 * time from the pause until every vCPU had published that next batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/vm.h"
#include "migrated/vmm/handover.h"
#include "tools/hvbench/hvbench.h"

#define MAX_SIZES 8
#define TMO_MS 20000u

enum metric {
	M_PARK,
	M_SAVE,
	M_SENT,
	M_CREATE,
	M_RESTORE,
	M_START,
	M_PAUSE,
	M_TOTAL,
	M_GAP,
	M_SEEN,
	M_COUNT,
};

static const char *const metric_names[M_COUNT] = {
	[M_PARK] = "park (hv_vm_pause)",
	[M_SAVE] = "state save",
	[M_SENT] = "pause -> sent",
	[M_CREATE] = "recv: create over memfd (in pause: send only)",
	[M_RESTORE] = "recv: restore + threads",
	[M_START] = "recv: Go -> resumed",
	[M_PAUSE] = "**pause** (pause -> resumed)",
	[M_TOTAL] = "pause -> STARTED reply",
	[M_GAP] = "guest-seen gap",
	[M_SEEN] = "pause -> every vCPU's next batch (host clock)",
};

struct ho_opts {
	enum hv_accel_kind accel;
	uint64_t sizes[MAX_SIZES];
	unsigned nr_sizes, runs, vcpus, warmup_ms;
	bool populate;
};

static bool have_kvm(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int parse_sizes(struct ho_opts *o, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;

	o->nr_sizes = 0;
	for (char *t = strtok_r(dup, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		char *end;
		uint64_t v = strtoull(t, &end, 0);

		switch (*end) {
		case 'G': case 'g': v <<= 30; break;
		case 'M': case 'm': v <<= 20; break;
		case 0: break;
		default: v = 0;
		}
		if (!v || o->nr_sizes == MAX_SIZES) {
			free(dup);
			return -EINVAL;
		}
		o->sizes[o->nr_sizes++] = v;
	}
	free(dup);
	return o->nr_sizes ? 0 : -EINVAL;
}

/* The receiver: take the VM, let it run a little, clean up. */
static int child_main(int sock)
{
	struct hv_vm *vm = NULL;
	void *meta = NULL;
	size_t len = 0;

	if (migd_handover_recv(sock, TMO_MS, &vm, &meta, &len, true))
		return 1;
	sleep_ms(200);
	hv_vm_destroy(vm);
	free(meta);
	return 0;
}

__attribute__((no_sanitize("thread"))) static uint64_t
last_tsc(struct hv_vm *vm, uint32_t v)
{
	return hv_vm_wl_status(vm, v)->last_tsc;
}

/*
 * Largest guest clock jump over the handover, in ns (0 if none seen);
 * *seen_at: host time when the last vCPU published its next batch.
 */
static double guest_gap_ns(struct hv_vm *vm, unsigned n, const uint64_t *before,
			   uint64_t *seen_at)
{
	uint64_t t0 = hvbench_now_ns(), gap = 0;
	unsigned seen = 0;
	bool done[HV_VM_MAX_VCPUS] = { false };

	while (seen < n && hvbench_now_ns() - t0 < 2000000000ull) {
		for (unsigned v = 0; v < n; v++) {
			uint64_t now = last_tsc(vm, v);

			if (done[v] || now == before[v])
				continue;
			done[v] = true;
			seen++;
			*seen_at = hvbench_now_ns();
			if (now > before[v] && now - before[v] > gap)
				gap = now - before[v];
		}
	}
	if (seen < n || !vm->tsc_khz)
		return 0;
	return (double)gap * 1e6 / (double)vm->tsc_khz;
}

static int one_run(const struct ho_opts *o, uint64_t mem, bool live,
		   double *m)
{
	struct migd_handover_times t = { 0 };
	uint64_t before[HV_VM_MAX_VCPUS];
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	uint64_t t0;
	int sv[2], st = 0, ret;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	/* Fork before the VM exists: the child inherits no guest. */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(sv[0]);
		_exit(child_main(sv[1]));
	}
	close(sv[1]);
	hv_vm_cfg_init(&cfg, o->accel, mem, o->vcpus);
	for (unsigned v = 0; v < o->vcpus; v++)
		cfg.wl[v].heartbeat_us = 1000;
	ret = hv_vm_create(&cfg, &vm);
	/* A VM that ran a while has its RAM allocated: fault it all in, so
	 * that the guest's writes are not host page faults. */
	if (!ret && o->populate)
		ret = hv_guest_mem_populate(vm->mem);
	if (!ret)
		ret = hv_vm_start(vm);
	if (ret)
		goto out;
	sleep_ms(o->warmup_ms);
	if (live) {
		ret = migd_handover_offer(sv[0], vm, NULL, 0, TMO_MS, &t);
		if (ret) {
			fprintf(stderr, "handover: offer err=%d %s\n", ret,
				t.error);
			goto out;
		}
	}
	t0 = hvbench_now_ns();
	ret = hv_vm_pause(vm);
	if (ret)
		goto out;
	m[M_PARK] = (double)(hvbench_now_ns() - t0);
	for (unsigned v = 0; v < o->vcpus; v++)
		before[v] = last_tsc(vm, v);
	t.paused_at_ns = t0;
	ret = live ? migd_handover_commit(sv[0], vm, TMO_MS, &t)
		   : migd_handover_send(sv[0], vm, NULL, 0, TMO_MS, &t);
	if (ret) {
		fprintf(stderr, "handover: err=%d %s\n", ret, t.error);
		if (ret < 0)
			hv_vm_resume(vm);
		ret = ret < 0 ? ret : -EIO;
		goto out;
	}
	{
		uint64_t seen_at = 0;

		m[M_GAP] = guest_gap_ns(vm, o->vcpus, before, &seen_at);
		m[M_SEEN] = seen_at ? (double)(seen_at - t0) : 0;
	}
	m[M_SAVE] = (double)t.save_ns;
	m[M_SENT] = (double)t.sent_ns;
	m[M_CREATE] = (double)t.create_ns;
	m[M_RESTORE] = (double)t.restore_ns;
	m[M_START] = (double)t.start_ns;
	m[M_PAUSE] = (double)t.pause_ns;
	m[M_TOTAL] = (double)t.total_ns;
out:
	hv_vm_destroy(vm);
	close(sv[0]);
	if (waitpid(pid, &st, 0) == pid && (!WIFEXITED(st) || WEXITSTATUS(st)))
		ret = ret ? ret : -EIO;
	return ret;
}

/* Runs of one size and way, and their table. */
static int one_table(const struct ho_opts *o, uint64_t mem, bool live)
{
	double *v[M_COUNT];
	unsigned ok = 0;

	for (unsigned k = 0; k < M_COUNT; k++)
		v[k] = calloc(o->runs, sizeof(double));
	for (unsigned r = 0; r < o->runs; r++) {
		double m[M_COUNT] = { 0 };

		if (one_run(o, mem, live, m)) {
			fprintf(stderr, "handover: run %u of %llu MiB failed\n",
				r, (unsigned long long)(mem >> 20));
			continue;
		}
		for (unsigned k = 0; k < M_COUNT; k++)
			v[k][ok] = m[k];
		ok++;
	}
	printf("\n%llu MiB, %s: %u of %u runs\n\n| step | median ms | "
	       "max ms |\n|---|---|---|\n",
	       (unsigned long long)(mem >> 20),
	       live ? "live (offer, pause, commit)" : "send (pause, send)", ok,
	       o->runs);
	for (unsigned k = 0; k < M_COUNT && ok; k++) {
		double max = 0;

		for (unsigned r = 0; r < ok; r++)
			if (v[k][r] > max)
				max = v[k][r];
		printf("| %s | %.3f | %.3f |\n", metric_names[k],
		       hvbench_median(v[k], ok) / 1e6, max / 1e6);
	}
	for (unsigned k = 0; k < M_COUNT; k++)
		free(v[k]);
	return ok < o->runs;
}

static int bench_handover(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },
		{ "accel", required_argument, NULL, 'a' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "warmup-ms", required_argument, NULL, 'w' },
		{ "no-populate", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct ho_opts o = {
		.accel = have_kvm() ? HV_ACCEL_KVM : HV_ACCEL_SOFT,
		.sizes = { 1ULL << 30, 3ULL << 30 },
		.nr_sizes = 2, .runs = 5, .vcpus = 2, .warmup_ms = 300,
		.populate = true,
	};
	int c;

	while ((c = getopt_long(argc, argv, "m:r:a:v:w:n", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_sizes(&o, optarg))
				goto usage;
			break;
		case 'r': o.runs = (unsigned)atoi(optarg); break;
		case 'v': o.vcpus = (unsigned)atoi(optarg); break;
		case 'w': o.warmup_ms = (unsigned)atoi(optarg); break;
		case 'n': o.populate = false; break;
		case 'a':
			if (!strcmp(optarg, "kvm"))
				o.accel = HV_ACCEL_KVM;
			else if (!strcmp(optarg, "soft"))
				o.accel = HV_ACCEL_SOFT;
			else
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (!o.runs || !o.vcpus || o.vcpus > HV_VM_MAX_VCPUS)
		goto usage;
	printf("handover: accel=%s vcpus=%u runs=%u warmup=%ums, RAM %s, "
	       "guest sweeping flat out (stamp writes); receiver = forked "
	       "child\n",
	       hv_accel_kind_name(o.accel), o.vcpus, o.runs, o.warmup_ms,
	       o.populate ? "populated" : "not populated");
	for (unsigned s = 0; s < o.nr_sizes; s++)
		for (int live = 0; live < 2; live++)
			if (one_table(&o, o.sizes[s], live))
				return 1;
	return 0;

usage:
	fprintf(stderr, "usage: hvbench handover [--mem SIZES (e.g. 1G,3G)] "
		"[--runs N] [--accel kvm|soft] [--vcpus N] "
		"[--warmup-ms MS] [--no-populate]\n");
	return 2;
}
HVBENCH_CMD("handover", "local live update pause: memfd + state to a "
	    "forked receiver", bench_handover);
