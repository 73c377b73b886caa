// SPDX-License-Identifier: MIT
/*
 * dirtyrate VM: watch one VM's dirty rate (the daemon's monitor,
 * hvcore/dirtyrate.h) -- a live terminal view with per-vCPU rates and
 * sparklines, --json lines, or --plot FILE.svg written at the end.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrated/rpc/parse.h"
#include "tools/dirtyrate/svg.h"
#include "tools/rpc/cli.h"
#include "migrated/rpc/client.h"
#include "tools/rpc/json.h"

#define SPARK_N 40
#define MIB (1024.0 * 1024.0)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dirtyrate [--socket PATH | --connect HOST:PORT "
		"--tls-dir DIR] VM\n"
		"                 [--interval MS] [--duration S] [--json]\n"
		"                 [--plot FILE.svg]\n"
		"       dirtyrate --version | --help\n"
		"  --interval 50..60000 ms (500), --duration 0 (until Ctrl-C)"
		"..86400 s.\n"
		"  live view on a terminal (Ctrl-C ends), one JSON line per\n"
		"  sample with --json; --plot writes a time-series SVG when\n"
		"  it ends (--duration, Ctrl-C or the VM going away).\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Eight-level sparkline of @v (oldest first) scaled to its maximum. */
static void spark(const double *v, size_t n, char *out, size_t size)
{
	static const char *const bars[] = {"▁", "▂", "▃", "▄",
					   "▅", "▆", "▇", "█"};
	double max = 0;
	size_t o = 0;

	for (size_t i = 0; i < n; i++)
		max = v[i] > max ? v[i] : max;
	out[0] = '\0';
	for (size_t i = 0; i < n && o + 4 < size; i++) {
		int b = max > 0 ? (int)(v[i] / max * 7.999) : 0;

		o += (size_t)snprintf(out + o, size - o, "%s", bars[b]);
	}
}

static void live(const Migd__DirtyRateSample *s, double hist[][SPARK_N],
		 size_t nh)
{
	char line[SPARK_N * 4 + 1];

	printf("\033[H\033[J");
	printf("dirtyrate %s   source %s  mode %s  every %u ms%s\n\n", s->vm,
	       s->source, s->mode, s->interval_ms,
	       s->sample_shift ? "  (sampled)" : "");
	if (s->n_windows) {
		printf("%-6s %12s %10s %12s %12s\n", "window", "pages/s",
		       "MiB/s", "working set", "guest pg/s");
		for (size_t w = 0; w < s->n_windows; w++)
			printf("%4us  %12.0f %10.2f %12llu %12.0f\n",
			       s->windows[w]->seconds,
			       s->windows[w]->pages_per_s,
			       s->windows[w]->bytes_per_s / MIB,
			       (unsigned long long)s->windows[w]
				       ->working_set_pages,
			       s->windows[w]->guest_pages_per_s);
	} else {
		printf("%.2f MiB/s (%s)\n", s->bytes_per_s / MIB, s->source);
	}
	spark(hist[0], nh, line, sizeof(line));
	printf("\nVM      %10.2f MiB/s  %s\n", s->bytes_per_s / MIB, line);
	for (size_t i = 0; i < s->n_vcpus && i < DR_SVG_VCPUS_MAX; i++) {
		spark(hist[i + 1], nh, line, sizeof(line));
		printf("vcpu %-2zu %10.2f MiB/s  %s\n", i,
		       s->vcpus[i]->pages_per_s[0] * 4096 / MIB, line);
	}
	if (s->vcpu_split_estimated)
		printf("(per-vCPU split estimated from guest counters)\n");
	if (s->hist_seconds) {
		printf("\nhot/cold: pages dirtied in k of the last %u s:",
		       s->hist_seconds);
		for (size_t k = 0; k < s->n_hot_cold && k < s->hist_seconds;
		     k++)
			printf(" %zu:%llu", k + 1,
			       (unsigned long long)s->hot_cold[k]);
		printf("\n");
	}
	fflush(stdout);
}

static int dr_main(int argc, char **argv)
{
	const char *sock = NULL, *connect_to = NULL, *plot = NULL, *vm = NULL;
	static char ca[4096], cert[4096], key[4096];
	struct migd_client_tls tls = {ca, cert, key, true};
	uint64_t interval = 500, duration = 0;
	bool json = false, tty = isatty(1);
	static double hist[DR_SVG_VCPUS_MAX + 1][SPARK_N];
	struct dr_point *pts = NULL;
	size_t npts = 0, cap = 0, nh = 0;
	unsigned nr_vcpus = 0;
	struct migd_client *c;
	double t0, end;
	int ret, rc = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			migd_cli_version("dirtyrate");
			return 0;
		} else if (a[0] == '-' && !v) {
			fprintf(stderr, "dirtyrate: %s needs a value or is "
					"unknown\n", a);
			usage(stderr);
			return 2;
		} else if (!strcmp(a, "--socket")) {
			sock = argv[++i];
		} else if (!strcmp(a, "--connect")) {
			connect_to = argv[++i];
		} else if (!strcmp(a, "--tls-dir")) {
			snprintf(ca, sizeof(ca), "%s/ca.pem", v);
			snprintf(cert, sizeof(cert), "%s/client.pem", v);
			snprintf(key, sizeof(key), "%s/client.key", v);
			i++;
		} else if (!strcmp(a, "--interval")) {
			if (migd_parse_u64(argv[++i], 60000, &interval) ||
			    interval < 50)
				return migd_cli_bad_range("dirtyrate",
							  "--interval", argv[i],
							  50, 60000);
		} else if (!strcmp(a, "--duration")) {
			if (migd_parse_u64(argv[++i], 86400, &duration))
				return migd_cli_bad_range("dirtyrate",
							  "--duration", argv[i],
							  0, 86400);
		} else if (!strcmp(a, "--plot")) {
			plot = argv[++i];
		} else if (a[0] != '-' && !vm) {
			vm = a;
		} else {
			fprintf(stderr, "dirtyrate: unexpected '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!vm) {
		usage(stderr);
		return 2;
	}
	if (connect_to) {
		char host[MIGD_HOST_MAX + 1];
		uint16_t port;

		if (migd_parse_hostport(connect_to, false, host, sizeof(host),
					&port)) {
			return migd_cli_bad("dirtyrate", "--connect",
					    connect_to,
					    "HOST:PORT (port 1..65535)");
		}
		ret = migd_client_connect_tls(host, port, &tls, 10000, &c);
		if (ret == -ENOENT || ret == -EKEYREJECTED || ret == -EINVAL) {
			char why[600];

			if (migd_cli_tls_why(ca, cert, key, why,
					     sizeof(why))) {
				fprintf(stderr, "dirtyrate: cannot load the "
						"TLS files: %s (--tls-dir)\n",
					why);
				return 2;
			}
		}
	} else {
		ret = migd_client_connect(sock, &c);
	}
	if (ret) {
		fprintf(stderr, "dirtyrate: cannot reach the daemon: %s\n",
			strerror(-ret));
		return 5;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = now_s();
	end = duration ? t0 + (double)duration : 0;
	while (!stop && (!end || now_s() < end)) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__DirtyRateRequest r = MIGD__DIRTY_RATE_REQUEST__INIT;
		Migd__Response *resp;
		Migd__DirtyRateSample *s;
		double t = now_s();

		r.vm = (char *)vm;
		req.call_case = MIGD__REQUEST__CALL_DIRTY_RATE;
		req.dirty_rate = &r;
		ret = migd_client_call(c, &req, 10000, &resp);
		if (ret) {
			fprintf(stderr, "dirtyrate: %s\n", strerror(-ret));
			rc = 5;
			break;
		}
		if (migd_resp_status(resp) != MIGD__STATUS__STATUS_OK) {
			fprintf(stderr, "dirtyrate: %s: %s\n",
				migd_status_text(migd_resp_status(resp)),
				migd_resp_message(resp));
			rc = npts ? 0
				  : migd_status_exit_code(
					    migd_resp_status(resp));
			migd__response__free_unpacked(resp, NULL);
			break;
		}
		s = resp->dirty_rate;
		if (nh == SPARK_N) {
			for (size_t k = 0; k <= DR_SVG_VCPUS_MAX; k++)
				memmove(hist[k], hist[k] + 1,
					(SPARK_N - 1) * sizeof(double));
			nh--;
		}
		hist[0][nh] = (double)s->bytes_per_s;
		for (size_t i = 0; i < s->n_vcpus && i < DR_SVG_VCPUS_MAX; i++)
			hist[i + 1][nh] = s->vcpus[i]->pages_per_s[0];
		nh++;
		if (plot) {
			struct dr_point *p;

			if (npts == cap) {
				size_t nc = cap ? cap * 2 : 256;
				void *np = realloc(pts, nc * sizeof(*pts));

				if (!np)
					break;
				pts = np;
				cap = nc;
			}
			p = &pts[npts++];
			memset(p, 0, sizeof(*p));
			p->t_s = t - t0;
			p->mib_s = (double)s->bytes_per_s / MIB;
			p->guest_mib_s =
				s->n_windows
					? s->windows[0]->guest_pages_per_s *
						  4096 / MIB
					: 0;
			nr_vcpus = (unsigned)s->n_vcpus;
			for (size_t i = 0;
			     i < s->n_vcpus && i < DR_SVG_VCPUS_MAX; i++)
				p->vcpu_mib_s[i] = s->vcpus[i]->pages_per_s[0] *
						   4096 / MIB;
		}
		if (json) {
			migd_json_print(stdout, &s->base);
			fputc('\n', stdout);
			fflush(stdout);
		} else if (tty && !plot) {
			live(s, hist, nh);
		} else if (!plot) {
			printf("%.1f s  %.2f MiB/s  (%s)\n", t - t0,
			       s->bytes_per_s / MIB, s->source);
			fflush(stdout);
		}
		migd__response__free_unpacked(resp, NULL);
		{
			double left = t + interval / 1000.0 - now_s();

			if (left > 0)
				usleep((useconds_t)(left * 1e6));
		}
	}
	if (plot && npts) {
		char sub[160];

		snprintf(sub, sizeof(sub),
			 "%zu samples every %llu ms; dashed: the guest's own "
			 "write counters (reference)",
			 npts, (unsigned long long)interval);
		ret = dirtyrate_svg_write(plot, vm, pts, npts, nr_vcpus, sub);
		if (ret) {
			fprintf(stderr, "dirtyrate: writing %s: %s\n", plot,
				strerror(-ret));
			rc = 1;
		} else if (!json) {
			printf("wrote %s (%zu samples)\n", plot, npts);
		}
	}
	free(pts);
	migd_client_close(c);
	return rc;
}

int main(int argc, char **argv)
{
	/* --json: client-side errors as JSON too. */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			migd_cli_json_begin();
	return migd_cli_json_end(dr_main(argc, argv));
}
