// SPDX-License-Identifier: MIT
/*
 * dirtyrate-bench: the two measurements docs/benchmarks.md records for
 * the dirty-rate monitor (hvcore/dirtyrate.h), in-process, no daemon.
 *
 *   dirtyrate-bench accuracy [--accel kvm|soft] [--secs S]
 *       rate-limited sweeps at 10, 100 and 1000 MiB/s (and flat out):
 *       the monitor's 1 s / 10 s rates against the guest's own write
 *       counters and against the configured pace.
 *   dirtyrate-bench overhead [--accel kvm|soft] [--secs S] [--rounds N]
 *       guest progress with the monitor off and on, alternated (A/B/A/B)
 *       on the same VM, for a paced sweep, a read-mostly random workload
 *       and a flat-out sweep (the worst case), at sample shifts 0 and 3.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/dirtyrate.h"
#include "hvcore/log.h"
#include "hvcore/vm.h"

#define MIB (1024.0 * 1024.0)

static enum hv_accel_kind g_accel = HV_ACCEL_KVM;
static double g_secs = 5;
static unsigned g_rounds = 3;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	usleep((useconds_t)(s * 1e6));
}

struct wl {
	const char *name;
	uint32_t pattern;
	uint64_t rate_pages; /* per vCPU */
	uint32_t write_pct;
};

static struct hv_vm *make_vm(uint64_t mem, uint32_t nv, const struct wl *w)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	uint64_t per = (mem - HV_VM_WL_BASE) / 4096 / nv;

	hv_vm_cfg_init(&cfg, g_accel, mem, nv);
	for (uint32_t i = 0; i < nv; i++) {
		cfg.wl[i].pattern = w->pattern;
		cfg.wl[i].rate_pages = w->rate_pages;
		cfg.wl[i].write_pct = w->write_pct ? w->write_pct : 100;
		cfg.wl[i].region_gpa = HV_VM_WL_BASE + i * per * 4096;
		cfg.wl[i].region_pages = per;
		cfg.wl[i].heartbeat_us = 10000;
	}
	if (hv_vm_create(&cfg, &vm) || hv_vm_start(vm)) {
		fprintf(stderr, "dirtyrate-bench: cannot start a %s VM\n",
			hv_accel_kind_name(g_accel));
		hv_vm_destroy(vm);
		return NULL;
	}
	return vm;
}

/* Guest accesses (writes + reads) of every vCPU so far. */
static uint64_t progress(struct hv_vm *vm)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		n += hv_vm_wl_status(vm, i)->seq +
		     hv_vm_wl_status(vm, i)->reads;
	return n;
}

static int accuracy(void)
{
	static const double targets[] = {10, 100, 1000, 0};
	const uint32_t nv = 2;

	printf("# accuracy: %s, 2 vCPUs, 1 GiB, sweep, monitor every 200 ms, "
	       "shift 0, %.0f s per rate\n",
	       hv_accel_kind_name(g_accel), g_secs);
	printf("| target MiB/s | guest MiB/s | monitor 1 s MiB/s | err vs "
	       "guest (mean / max) | monitor 10 s MiB/s | err 10 s | "
	       "sample cost max |\n|---|---|---|---|---|---|---|\n");
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		struct wl w = {"sweep", HV_WL_PATTERN_SWEEP,
			       (uint64_t)(targets[t] * MIB / 4096 / nv), 100};
		struct hv_dirtyrate_cfg dcfg = {.interval_ms = 200};
		struct hv_dirtyrate *dr;
		struct hv_dirtyrate_snap s;
		struct hv_vm *vm = make_vm(1ull << 30, nv, &w);
		double err_sum = 0, err_max = 0, g_sum = 0, m_sum = 0;
		unsigned n = 0;
		char label[16];

		if (!vm)
			return 1;
		/* Touch the region once before measuring: first touches
		 * are the guest's cost, not the monitor's. */
		if (hv_dirtyrate_create(vm, &dcfg, &dr)) {
			hv_vm_destroy(vm);
			return 1;
		}
		sleep_s(2.2);
		for (double end = now_s() + g_secs; now_s() < end;) {
			double e;

			sleep_s(1.0);
			hv_dirtyrate_get(dr, &s);
			e = fabs(s.win[HV_DR_1S].pages_per_s -
				 s.win[HV_DR_1S].guest_pages_per_s) /
			    s.win[HV_DR_1S].guest_pages_per_s;
			err_sum += e;
			err_max = fmax(err_max, e);
			g_sum += s.win[HV_DR_1S].guest_pages_per_s;
			m_sum += s.win[HV_DR_1S].pages_per_s;
			n++;
		}
		hv_dirtyrate_get(dr, &s);
		if (targets[t])
			snprintf(label, sizeof(label), "%.0f", targets[t]);
		else
			snprintf(label, sizeof(label), "flat out");
		printf("| %s | %.1f | %.1f | %.2f%% / %.2f%% | %.1f | %.2f%% "
		       "| %.2f ms |\n",
		       label, g_sum / n * 4096 / MIB, m_sum / n * 4096 / MIB,
		       100 * err_sum / n, 100 * err_max,
		       s.win[HV_DR_10S].bytes_per_s / MIB,
		       100 *
			       fabs(s.win[HV_DR_10S].pages_per_s -
				    s.win[HV_DR_10S].guest_pages_per_s) /
			       s.win[HV_DR_10S].guest_pages_per_s,
		       s.sample_ns_max / 1e6);
		fflush(stdout);
		hv_dirtyrate_destroy(dr);
		hv_vm_destroy(vm);
	}
	return 0;
}

static int overhead(void)
{
	static const struct wl wls[] = {
		{"sweep paced 100 MiB/s", HV_WL_PATTERN_SWEEP, 12800, 100},
		{"random, 2% writes, flat out", HV_WL_PATTERN_RANDOM, 0, 2},
		{"sweep flat out (worst case)", HV_WL_PATTERN_SWEEP, 0, 100},
	};
	static const uint32_t shifts[] = {0, 3};

	printf("# overhead: %s, 2 vCPUs, 512 MiB, %u rounds of off/on, "
	       "%.0f s each; progress = guest writes + reads per second\n",
	       hv_accel_kind_name(g_accel), g_rounds, g_secs);
	printf("| workload | shift | off (M acc/s) | on (M acc/s) | "
	       "slowdown | on: dirty MiB/s |\n|---|---|---|---|---|---|\n");
	for (size_t k = 0; k < sizeof(wls) / sizeof(wls[0]); k++) {
		for (size_t si = 0; si < sizeof(shifts) / sizeof(shifts[0]);
		     si++) {
			struct hv_vm *vm = make_vm(512ull << 20, 2, &wls[k]);
			struct hv_dirtyrate_cfg dcfg = {
				.interval_ms = 200, .sample_shift = shifts[si]};
			double off = 0, on = 0, dirty = 0;

			if (!vm)
				return 1;
			sleep_s(2.0); /* first touches */
			for (unsigned r = 0; r < g_rounds; r++) {
				struct hv_dirtyrate *dr;
				struct hv_dirtyrate_snap s;
				uint64_t p0;
				double t0;

				p0 = progress(vm);
				t0 = now_s();
				sleep_s(g_secs);
				off += (progress(vm) - p0) / (now_s() - t0);
				if (hv_dirtyrate_create(vm, &dcfg, &dr))
					return 1;
				sleep_s(1.0); /* the same when it starts */
				p0 = progress(vm);
				t0 = now_s();
				sleep_s(g_secs);
				on += (progress(vm) - p0) / (now_s() - t0);
				hv_dirtyrate_get(dr, &s);
				dirty += s.win[HV_DR_1S].bytes_per_s / MIB;
				hv_dirtyrate_destroy(dr);
				/* Stopping the log changes the memslot flags:
				 * KVM drops its mappings and the guest faults
				 * them back in. That is the cost of turning
				 * the monitor off, not of running it. */
				sleep_s(1.0);
			}
			printf("| %s | %u | %.3f | %.3f | %+.1f%% | %.1f |\n",
			       wls[k].name, shifts[si], off / g_rounds / 1e6,
			       on / g_rounds / 1e6, 100 * (1 - on / off),
			       dirty / g_rounds);
			fflush(stdout);
			hv_vm_destroy(vm);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	hv_log_set_level(HV_LOG_WARN);
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--accel"))
			g_accel = strcmp(argv[i + 1], "soft") ? HV_ACCEL_KVM
							      : HV_ACCEL_SOFT;
		else if (!strcmp(argv[i], "--secs"))
			g_secs = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds"))
			g_rounds = (unsigned)atoi(argv[i + 1]);
	}
	if (!strcmp(what, "accuracy"))
		return accuracy();
	if (!strcmp(what, "overhead"))
		return overhead();
	fprintf(stderr, "usage: dirtyrate-bench accuracy|overhead "
			"[--accel kvm|soft] [--secs S] [--rounds N]\n");
	return 2;
}
