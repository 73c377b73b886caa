// SPDX-License-Identifier: MIT
/*
 * migratectl dirty / estimate / vm set-rate: the dirty-rate calls.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrated/rpc/parse.h"
#include "tools/migratectl/ctl.h"

static double mib(double bytes)
{
	return bytes / (1024.0 * 1024.0);
}

int ctl_dirty(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__DirtyRateRequest r = MIGD__DIRTY_RATE_REQUEST__INIT;
	Migd__Response *resp;
	Migd__DirtyRateSample *s;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "migratectl: dirty needs one VM name\n");
		return 2;
	}
	r.vm = argv[1];
	req.call_case = MIGD__REQUEST__CALL_DIRTY_RATE;
	req.dirty_rate = &r;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	s = resp->dirty_rate;
	if (ctl->json) {
		ctl_print_json(&s->base);
		goto out;
	}
	printf("vm %s  source %s  mode %s  interval %u ms  sampled 1/%u\n",
	       s->vm, s->source, s->mode[0] ? s->mode : "-", s->interval_ms,
	       1u << s->sample_shift);
	if (!s->n_windows) {
		printf("dirty rate %.1f MiB/s (%s)\n", mib(s->bytes_per_s),
		       s->source);
		goto out;
	}
	printf("%-7s %12s %10s %12s %12s\n", "window", "pages/s", "MiB/s",
	       "working set", "guest pg/s");
	for (size_t w = 0; w < s->n_windows; w++) {
		Migd__DirtyRateWindow *x = s->windows[w];

		printf("%4us    %12.0f %10.2f %12llu %12.0f%s\n", x->seconds,
		       x->pages_per_s, mib(x->bytes_per_s),
		       (unsigned long long)x->working_set_pages,
		       x->guest_pages_per_s,
		       x->covered_s + 0.05 < x->seconds ? "  (partial)" : "");
	}
	for (size_t i = 0; i < s->n_vcpus; i++) {
		Migd__VcpuDirtyRate *v = s->vcpus[i];

		printf("vcpu %-3u %12.0f pages/s (1 s)%s\n", v->index,
		       v->n_pages_per_s ? v->pages_per_s[0] : 0,
		       i == 0 && s->vcpu_split_estimated
			       ? "  per-vCPU split estimated from guest "
				 "counters"
			       : "");
	}
	printf("hot/cold (pages dirtied in k of the last %u s):",
	       s->hist_seconds);
	for (size_t k = 0; k < s->n_hot_cold && k < s->hist_seconds; k++)
		printf(" %zu:%llu", k + 1, (unsigned long long)s->hot_cold[k]);
	printf("\n");
out:
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

int ctl_estimate(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__ConvergeEstimateRequest r = MIGD__CONVERGE_ESTIMATE_REQUEST__INIT;
	Migd__Response *resp;
	Migd__ConvergeEstimate *e;
	uint64_t v;
	int ret;

	if (argc < 2) {
		fprintf(stderr, "migratectl: estimate VM --bandwidth SIZE/s "
				"[--downtime MS] [--throttle PCT]\n");
		return 2;
	}
	r.vm = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i], *a = i + 1 < argc ? argv[i + 1] : "";
		char tmp[64];
		size_t n = strlen(a);

		if (!strcmp(o, "--bandwidth")) {
			snprintf(tmp, sizeof(tmp), "%.*s",
				 (int)(n >= 2 && !strcmp(a + n - 2, "/s")
					       ? n - 2
					       : n),
				 a);
			if (migd_parse_size(tmp, &r.bandwidth))
				goto bad;
		} else if (!strcmp(o, "--downtime")) {
			if (migd_parse_u64(a, 600000, &v))
				goto bad;
			r.downtime_ms = (uint32_t)v;
		} else if (!strcmp(o, "--throttle")) {
			if (migd_parse_u64(a, 99, &v))
				goto bad;
			r.throttle_max_pct = (uint32_t)v;
		} else {
			goto bad;
		}
		i++;
		continue;
	bad:
		fprintf(stderr, "migratectl: estimate: bad option %s %s\n", o,
			a);
		return 2;
	}
	req.call_case = MIGD__REQUEST__CALL_CONVERGE_ESTIMATE;
	req.converge_estimate = &r;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	e = resp->converge_estimate;
	if (ctl->json) {
		ctl_print_json(&e->base);
	} else {
		printf("%s: %s\n", r.vm, e->note);
		printf("dirty rate %.1f MiB/s, 60 s working set %.1f MiB\n",
		       mib(e->dirty_bytes_per_s), mib(e->working_set_bytes));
		printf("iterations %u, total %.1f s, expected downtime "
		       "%.0f ms, throttle %u%%\n",
		       e->iterations, e->total_s, e->expected_downtime_ms,
		       e->throttle_pct);
	}
	migd__response__free_unpacked(resp, NULL);
	return 0;
}

int ctl_vm_set_rate(struct ctl *ctl, int argc, char **argv)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmSetWorkloadRequest r = MIGD__VM_SET_WORKLOAD_REQUEST__INIT;
	Migd__Response *resp;
	uint32_t vcpus[64];
	int ret;

	if (argc < 3 || ctl_parse_rate(argv[2], &r.rate_pages)) {
		fprintf(stderr, "migratectl: vm set-rate NAME PAGES/S|SIZE/s "
				"[--vcpu N]...\n");
		return 2;
	}
	r.vm = argv[1];
	for (int i = 3; i < argc; i++) {
		uint64_t v;

		if (strcmp(argv[i], "--vcpu") || i + 1 >= argc ||
		    migd_parse_u64(argv[i + 1], 63, &v) || r.n_vcpus >= 64) {
			fprintf(stderr,
				"migratectl: set-rate: bad option "
				"'%s'\n",
				argv[i]);
			return 2;
		}
		vcpus[r.n_vcpus++] = (uint32_t)v;
		i++;
	}
	r.vcpus = vcpus;
	req.call_case = MIGD__REQUEST__CALL_VM_SET_WORKLOAD;
	req.vm_set_workload = &r;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	if (ctl->json)
		ctl_print_json(&resp->vm->base);
	else
		printf("%s: rate %llu pages/s per vCPU\n", r.vm,
		       (unsigned long long)r.rate_pages);
	migd__response__free_unpacked(resp, NULL);
	return 0;
}
