// SPDX-License-Identifier: MIT
/*
 * What one soft vCPU costs the host while it paces itself or idles:
 * vcpu_wait_cpu <idle|PAGES_PER_S> [seconds]
 * prints "rate=<pages/s> cpu=<% of one CPU>" for a 1-vCPU soft VM whose
 * workload sweeps an 8 MiB region (stamp content) at the given rate, or
 * idles. Uses the public hvcore/vm.h API only, so that
 * tools/bench/vcpu-wait.sh can build it against an older tree too and
 * compare the two in one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/vm.h"

static uint64_t ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	unsigned secs = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
	uint64_t c0, t0, s0, c1, t1, s1;
	int ret;

	if (argc < 2 || !secs) {
		fprintf(stderr, "usage: %s idle|PAGES_PER_S [seconds]\n",
			argv[0]);
		return 2;
	}
	hv_vm_cfg_init(&cfg, HV_ACCEL_SOFT, 32ULL << 20, 1);
	cfg.wl[0].region_pages = 2048;
	cfg.wl[0].heartbeat_us = 5000;
	if (!strcmp(argv[1], "idle"))
		cfg.wl[0].pattern = HV_WL_PATTERN_IDLE;
	else
		cfg.wl[0].rate_pages = strtoull(argv[1], NULL, 0);
	ret = hv_vm_create(&cfg, &vm);
	if (!ret)
		ret = hv_vm_start(vm);
	if (ret) {
		fprintf(stderr, "vcpu_wait_cpu: vm: %s\n", strerror(-ret));
		return 1;
	}
	/* Warm up: one pass at 12800 pages/s faults the region in. */
	sleep_ms(400);
	c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = ns(CLOCK_MONOTONIC);
	s0 = hv_vm_wl_status(vm, 0)->seq;
	sleep_ms(secs * 1000);
	c1 = ns(CLOCK_PROCESS_CPUTIME_ID);
	t1 = ns(CLOCK_MONOTONIC);
	s1 = hv_vm_wl_status(vm, 0)->seq;
	hv_vm_stop(vm);
	hv_vm_destroy(vm);
	printf("rate=%.0f cpu=%.1f\n", (double)(s1 - s0) * 1e9 / (t1 - t0),
	       100.0 * (double)(c1 - c0) / (double)(t1 - t0));
	return 0;
}
