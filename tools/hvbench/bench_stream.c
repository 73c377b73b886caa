// SPDX-License-Identifier: MIT
/*
 * hvbench stream: the page pipeline alone -- pages -> encode (zero check,
 * zstd or raw) -> TLS 1.3 (AES-128-GCM) -> TCP -> decode -> destination
 * memory -- per page content kind, channel count and compression mode
 * (docs/architecture.md).
 *
 *   hvbench stream [--mib N] [--channels 1,2,4] [--reps R] [--insecure]
 *                  [--modes adaptive,1,3,raw] [--kinds zero,stamp,text,random]
 *                  [--netns SRC,DST --addr DST_IP]
 *
 * --modes: how the channels compress, one row each, side by side in the
 * same run: "adaptive" (the engine's default, migrated/mig/adapt.h), a
 * fixed zstd level, or "raw". --netns: the sender connects from network
 * namespace SRC to a listener in DST at DST_IP (tools/hvbench/
 * stream-shaped.sh makes a veth pair shaped to a rate with tc tbf), so
 * that the link, not loopback, is the limit. Columns: MB/s of pages
 * delivered, MB on the wire, seconds the channels spent encoding (the
 * sender's compression CPU) and writing, CPU seconds of the whole
 * process (both ends) per run, and the levels the adaptive mode chose.
 *
 * A "one CPU alone" line per kind gives what zstd level 1, its decoder
 * and AES-128-GCM each do alone on one CPU on the same pages: the bounds
 * the pipeline's rows are read against.
 */
#include "tools/hvbench/hvbench.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zstd.h>

#include "hvcore/workload.h"
#include "migrated/mig/devca.h"
#include "migrated/mig/pipeline.h"

#define MAX_CH 8u

static const struct kind {
	const char *name;
	uint32_t content; /* 0: zero pages */
} kinds[] = {
	{ "zero", 0 },
	{ "stamp", HV_WL_CONTENT_STAMP },
	{ "text", HV_WL_CONTENT_TEXT },
	{ "random", HV_WL_CONTENT_RANDOM },
};

struct bench {
	uint64_t npages;
	uint8_t *src, *dst;
	struct mig_memmap *smap, *dmap;
	struct mig_tls *stls, *ctls; /* NULL: --insecure */
	uint64_t next_gfn;	     /* page source cursor */
	int ns_self, ns_src, ns_dst; /* -1: no namespaces */
	const char *addr;	     /* the listener's address */
};

struct mode {
	char name[16];
	struct mig_send_pipe_cfg cfg;
};

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void fill(struct bench *b, uint32_t content)
{
	for (uint64_t i = 0; i < b->npages; i++) {
		uint8_t *p = b->src + (i << 12);

		memset(p, 0, 4096);
		if (content)
			hv_wl_fill_page(p, (uint16_t)(i & 1), i + 1, content);
	}
}

static int next_run(void *ctx, struct mig_page_run *run)
{
	struct bench *b = ctx;

	if (b->next_gfn >= b->npages)
		return 0;
	run->slot = 0;
	run->gfn = b->next_gfn;
	run->mask = ~0ULL;
	b->next_gfn += 64;
	return 1;
}

/*
 * zstd level 1 alone, one thread, 64-page batches: input bytes/s of
 * compression, and in *@dec of decompression of the last batch repeated
 * (what the receiver pays on the same cores in a loopback run).
 */
static double zstd_alone(const struct bench *b, double *dec)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	size_t cap = ZSTD_compressBound(64 * 4096), last = 0;
	uint8_t *dst = malloc(cap), *back = malloc(64 * 4096);
	uint64_t t0, t1, n = HV_MIN(b->npages, 16384ULL);

	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
	t0 = hvbench_now_ns();
	for (uint64_t i = 0; i < n; i += 64)
		last = ZSTD_compress2(cctx, dst, cap, b->src + (i << 12),
				      64 * 4096);
	t0 = hvbench_now_ns() - t0;
	t1 = hvbench_now_ns();
	for (uint64_t i = 0; i < n; i += 64)
		ZSTD_decompressDCtx(dctx, back, 64 * 4096, dst, last);
	t1 = hvbench_now_ns() - t1;
	*dec = (double)(n << 12) / (t1 / 1e9);
	ZSTD_freeCCtx(cctx);
	ZSTD_freeDCtx(dctx);
	free(dst);
	free(back);
	return (double)(n << 12) / (t0 / 1e9);
}

/* AES-128-GCM alone (EVP), one thread, 16 KiB records as TLS sends. */
static double aes_alone(const struct bench *b)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	EVP_CIPHER *aes = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
	uint8_t key[16] = { 1 }, iv[12] = { 2 }, tag[16];
	uint8_t *out = malloc(16384 + 32);
	uint64_t t0, n = HV_MIN(b->npages, 16384ULL) << 12;
	int len;

	t0 = hvbench_now_ns();
	for (uint64_t off = 0; off < n; off += 16384) {
		iv[0]++;
		EVP_EncryptInit_ex2(ctx, aes, key, iv, NULL);
		EVP_EncryptUpdate(ctx, out, &len, b->src + off, 16384);
		EVP_EncryptFinal_ex(ctx, out + len, &len);
		EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag);
	}
	t0 = hvbench_now_ns() - t0;
	EVP_CIPHER_free(aes);
	EVP_CIPHER_CTX_free(ctx);
	free(out);
	return (double)n / (t0 / 1e9);
}

struct acceptor {
	int lfd;
	struct mig_tls *tls;
	unsigned n;
	struct mig_conn **out;
	int ret;
};

static void *accept_main(void *arg)
{
	struct acceptor *a = arg;

	for (unsigned i = 0; i < a->n && !a->ret; i++)
		a->ret = mig_conn_accept(a->lfd, a->tls, 10000, &a->out[i]);
	return NULL;
}

struct result {
	double gbps;
	double ratio;
	long rss_kib;
	double wire_mb, enc_s, send_s, cpu_s;
	char levels[96];
};

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Enter network namespace @fd (-1: stay). 0 or -errno. */
static int ns_enter(int fd)
{
	if (fd < 0)
		return 0;
	return setns(fd, CLONE_NEWNET) ? -errno : 0;
}

/* One transfer of every page over @n fresh channels. */
static int run_once(struct bench *b, unsigned n, const struct mode *md,
		    struct result *r)
{
	struct mig_conn *sc[MAX_CH] = { 0 }, *dc[MAX_CH] = { 0 };
	struct acceptor a = { .tls = b->stls, .n = n, .out = dc };
	struct mig_send_pipe *sp = NULL;
	struct mig_recv_pipe *rp = NULL;
	struct mig_pipe_stats st;
	pthread_t t;
	uint16_t port;
	uint64_t t0, t1;
	double c0;
	long rss0;
	int ret;

	/* The destination holds old content: every page must be written. */
	memset(b->dst, 0xaa, b->npages << 12);
	/* Sockets stay in the namespace they were made in. */
	ret = ns_enter(b->ns_dst);
	if (!ret)
		ret = mig_listen(b->addr, 0, &a.lfd, &port);
	if (ret)
		return ret;
	ret = ns_enter(b->ns_src);
	if (ret) {
		close(a.lfd);
		return ret;
	}
	rss0 = rss_kib();
	pthread_create(&t, NULL, accept_main, &a);
	for (unsigned i = 0; i < n && !ret; i++)
		ret = mig_conn_connect(b->addr, port, b->ctls, 10000, &sc[i]);
	pthread_join(t, NULL);
	if (ns_enter(b->ns_self) && !ret)
		ret = -EIO;
	close(a.lfd);
	if (ret || a.ret)
		goto out;
	ret = mig_send_pipe_create(sc, n, b->smap, &md->cfg, &sp);
	if (!ret)
		ret = mig_recv_pipe_create(dc, n, b->dmap, &rp);
	if (ret)
		goto out;
	b->next_gfn = 0;
	c0 = cpu_s();
	t0 = hvbench_now_ns();
	ret = mig_send_pipe_run(sp, next_run, b, NULL);
	if (!ret)
		ret = mig_send_pipe_finish(sp);
	if (!ret)
		ret = mig_recv_pipe_join(rp);
	t1 = hvbench_now_ns();
	if (ret)
		goto out;
	r->cpu_s = cpu_s() - c0;
	r->rss_kib = rss_kib() - rss0;
	mig_send_pipe_stats(sp, &st);
	r->wire_mb = (double)st.wire / 1e6;
	r->enc_s = (double)st.enc_ns / 1e9;
	r->send_s = (double)st.send_ns / 1e9;
	mig_pipe_stats_levels(&st, r->levels, sizeof(r->levels));
	r->gbps = (double)(b->npages << 12) / ((t1 - t0) / 1e9) / 1e9;
	r->ratio = mig_pipe_stats_ratio(&st);
	if (memcmp(b->src, b->dst, b->npages << 12)) {
		fprintf(stderr, "stream: destination differs from source\n");
		ret = -EIO;
	}
out:
	mig_recv_pipe_destroy(rp);
	mig_send_pipe_destroy(sp);
	for (unsigned i = 0; i < n; i++) {
		mig_conn_destroy(sc[i]);
		mig_conn_destroy(dc[i]);
	}
	return ret ? ret : a.ret;
}

static int setup_tls(struct bench *b, char *dir)
{
	struct mig_devca ca;
	struct mig_tls_cfg s, c;
	int ret;

	if (!mkdtemp(dir))
		return -errno;
	ret = mig_devca_ensure(dir, &ca);
	if (ret)
		return ret;
	s = (struct mig_tls_cfg){ ca.ca_cert, ca.host_cert, ca.host_key, true,
				  NULL };
	c = (struct mig_tls_cfg){ ca.ca_cert, ca.host_cert, ca.host_key,
				  false, NULL };
	ret = mig_tls_create(&s, &b->stls);
	if (!ret)
		ret = mig_tls_create(&c, &b->ctls);
	return ret;
}

static int bench_stream(int argc, char **argv)
{
	unsigned chans[MAX_CH] = { 1, 2, 4 }, nch = 3, reps = 3;
	unsigned long mib = 256;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char dir[] = "/tmp/hvbench-stream-XXXXXX", cmd[64];
	bool insecure = false;
	struct bench b = { .ns_self = -1, .ns_src = -1, .ns_dst = -1,
			   .addr = "127.0.0.1" };
	struct mig_memmap_slot slot;
	struct mode modes[8];
	unsigned nmodes = 0, kmask = 0xf;
	const char *mode_list = "adaptive,1,3,raw";
	int ret = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
			mib = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = (unsigned)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--channels") && i + 1 < argc) {
			char *s = argv[++i];

			for (nch = 0; *s && nch < MAX_CH; nch++) {
				chans[nch] = (unsigned)strtoul(s, &s, 10);
				if (!chans[nch] || chans[nch] > MAX_CH)
					goto usage;
				if (*s == ',')
					s++;
			}
		} else if (!strcmp(argv[i], "--insecure")) {
			insecure = true;
		} else if (!strcmp(argv[i], "--modes") && i + 1 < argc) {
			mode_list = argv[++i];
		} else if (!strcmp(argv[i], "--kinds") && i + 1 < argc) {
			char list[64], *save = NULL;

			snprintf(list, sizeof(list), "%s", argv[++i]);
			kmask = 0;
			for (char *t = strtok_r(list, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				unsigned k;

				for (k = 0; k < HV_ARRAY_SIZE(kinds); k++)
					if (!strcmp(t, kinds[k].name))
						break;
				if (k == HV_ARRAY_SIZE(kinds))
					goto usage;
				kmask |= 1u << k;
			}
		} else if (!strcmp(argv[i], "--netns") && i + 1 < argc) {
			char path[128], list[96], *comma;

			snprintf(list, sizeof(list), "%s", argv[++i]);
			comma = strchr(list, ',');
			if (!comma)
				goto usage;
			*comma = 0;
			snprintf(path, sizeof(path), "/var/run/netns/%s", list);
			b.ns_src = open(path, O_RDONLY | O_CLOEXEC);
			snprintf(path, sizeof(path), "/var/run/netns/%s",
				 comma + 1);
			b.ns_dst = open(path, O_RDONLY | O_CLOEXEC);
			b.ns_self = open("/proc/self/ns/net",
					 O_RDONLY | O_CLOEXEC);
			if (b.ns_src < 0 || b.ns_dst < 0 || b.ns_self < 0) {
				fprintf(stderr, "stream: cannot open the "
						"namespaces %s\n", argv[i]);
				return 1;
			}
		} else if (!strcmp(argv[i], "--addr") && i + 1 < argc) {
			b.addr = argv[++i];
		} else {
			goto usage;
		}
	}
	if (!mib || !reps || reps > 32)
		goto usage;
	{
		char list[96], *save = NULL;

		snprintf(list, sizeof(list), "%s", mode_list);
		for (char *t = strtok_r(list, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			struct mode *m = &modes[nmodes];
			char *end;
			long lv;

			if (nmodes == HV_ARRAY_SIZE(modes))
				goto usage;
			memset(m, 0, sizeof(*m));
			if (!strcmp(t, "adaptive")) {
				m->cfg.adaptive = true;
				snprintf(m->name, sizeof(m->name), "adapt");
			} else if (!strcmp(t, "raw")) {
				m->cfg.encoding = MIG__ENCODING__ENCODING_RAW;
				snprintf(m->name, sizeof(m->name), "raw");
			} else {
				lv = strtol(t, &end, 10);
				if (*end || !lv || lv < -7 || lv > 22)
					goto usage;
				m->cfg.level = (int)lv;
				snprintf(m->name, sizeof(m->name), "zstd%ld",
					 lv);
			}
			nmodes++;
		}
		if (!nmodes)
			goto usage;
	}
	signal(SIGPIPE, SIG_IGN);
	b.npages = HV_ALIGN_UP(mib * 256, 64);
	b.src = mmap(NULL, b.npages << 12, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	b.dst = mmap(NULL, b.npages << 12, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (b.src == MAP_FAILED || b.dst == MAP_FAILED) {
		fprintf(stderr, "stream: cannot map %lu MiB twice\n", mib);
		return 1;
	}
	slot = (struct mig_memmap_slot){ 0, 0, b.npages, b.src };
	if (mig_memmap_create(&slot, 1, &b.smap))
		return 1;
	slot.host = b.dst;
	if (mig_memmap_create(&slot, 1, &b.dmap))
		return 1;
	if (!insecure && (ret = setup_tls(&b, dir))) {
		fprintf(stderr, "stream: TLS setup failed: %d\n", ret);
		return 1;
	}

	printf("hvbench stream: %lu MiB per run, %s, %s, %ld CPUs, "
	       "median of %u\n",
	       mib, insecure ? "plain TCP (insecure)" : "TLS 1.3 AES-128-GCM",
	       b.ns_src >= 0 ? "between network namespaces" : "loopback",
	       cpus, reps);
	printf("%-7s %3s %-6s %8s %8s %6s %6s %6s %6s %7s  %s\n", "kind", "ch",
	       "mode", "pageMB/s", "wireMB", "ratio", "enc s", "send s",
	       "cpu s", "RSS+MiB", "levels (adaptive)");
	for (unsigned k = 0; k < HV_ARRAY_SIZE(kinds) && !ret; k++) {
		if (!(kmask & (1u << k)))
			continue;
		fill(&b, kinds[k].content);
		{
			double zd, z = zstd_alone(&b, &zd), a = aes_alone(&b);

			printf("# %s: one CPU alone: zstd1 %.2f GB/s, unzstd "
			       "%.2f GB/s, AES-128-GCM %.2f GB/s\n",
			       kinds[k].name, z / 1e9, zd / 1e9, a / 1e9);
		}
		for (unsigned c = 0; c < nch && !ret; c++) {
			/* Reps outside, modes inside: the machine's noise
			 * (other work comes and goes) hits every mode. */
			static double g[8][32], cp[8][32], en[8][32], se[8][32];
			static struct result last[8];
			static long rss[8];

			memset(rss, 0, sizeof(rss));
			for (unsigned i = 0; i < reps && !ret; i++) {
				for (unsigned md = 0; md < nmodes && !ret;
				     md++) {
					unsigned m = (md + i) % nmodes;
					struct result r = { 0 };

					ret = run_once(&b, chans[c], &modes[m],
						       &r);
					g[m][i] = r.gbps;
					cp[m][i] = r.cpu_s;
					en[m][i] = r.enc_s;
					se[m][i] = r.send_s;
					rss[m] = HV_MAX(rss[m], r.rss_kib);
					last[m] = r;
				}
			}
			for (unsigned md = 0; md < nmodes && !ret; md++) {
				const struct result *r = &last[md];

				printf("%-7s %3u %-6s %8.0f %8.1f %6.2f %6.2f "
				       "%6.2f %6.2f %7.1f  %s\n",
				       kinds[k].name, chans[c],
				       modes[md].name,
				       hvbench_median(g[md], reps) * 1e3,
				       r->wire_mb, r->ratio,
				       hvbench_median(en[md], reps),
				       hvbench_median(se[md], reps),
				       hvbench_median(cp[md], reps),
				       rss[md] / 1024.0,
				       modes[md].cfg.adaptive ? r->levels
							      : "");
			}
			fflush(stdout);
		}
	}
	if (ret)
		fprintf(stderr, "stream: run failed: %d (%s)\n", ret,
			strerror(-ret));
	mig_tls_destroy(b.stls);
	mig_tls_destroy(b.ctls);
	mig_memmap_destroy(b.smap);
	mig_memmap_destroy(b.dmap);
	munmap(b.src, b.npages << 12);
	munmap(b.dst, b.npages << 12);
	if (!insecure) {
		snprintf(cmd, sizeof(cmd), "rm -rf -- %s", dir);
		if (system(cmd))
			fprintf(stderr, "stream: could not remove %s\n", dir);
	}
	return ret ? 1 : 0;
usage:
	fprintf(stderr, "usage: hvbench stream [--mib N] [--channels 1,2,4] "
			"[--reps R] [--insecure]\n"
			"       [--modes adaptive,1,3,raw] "
			"[--kinds zero,stamp,text,random]\n"
			"       [--netns SRC,DST --addr DST_IP]\n");
	return 2;
}

HVBENCH_CMD("stream", "page pipeline (encode, TLS, decode) vs zstd and AES",
	    bench_stream);
