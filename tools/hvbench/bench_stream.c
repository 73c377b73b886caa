// SPDX-License-Identifier: MIT
/*
 * hvbench stream: the page pipeline alone -- pages -> encode (zero check,
 * zstd-1 or raw) -> TLS 1.3 (AES-128-GCM) -> loopback TCP -> decode ->
 * destination memory -- per page content kind and per channel count,
 * next to what zstd level 1 alone and AES-128-GCM alone achieve on the
 * same pages in the same run (docs/architecture.md).
 *
 *   hvbench stream [--mib N] [--channels 1,2,4] [--reps R] [--insecure]
 *
 * effic. = pipeline / min(zstd1 x cores, aes x cores), where cores =
 * min(channels, online CPUs): the best the slower of the two stages could
 * do on the cores the pipeline may use. Both ends run on this machine, so
 * the same CPUs also decrypt and decompress: "loopbk" is the pipeline
 * against that loopback bound, CPUs / (1/zstd + 1/unzstd + 2/(aes x
 * ratio)), capped by the first. Zero and stamp pages are bounded by
 * neither (they skip zstd) and read above 100%.
 */
#include "tools/hvbench/hvbench.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
};

/* One transfer of every page over @n fresh channels. */
static int run_once(struct bench *b, unsigned n, struct result *r)
{
	struct mig_conn *sc[MAX_CH] = { 0 }, *dc[MAX_CH] = { 0 };
	struct acceptor a = { .tls = b->stls, .n = n, .out = dc };
	struct mig_send_pipe *sp = NULL;
	struct mig_recv_pipe *rp = NULL;
	struct mig_pipe_stats st;
	pthread_t t;
	uint16_t port;
	uint64_t t0, t1;
	long rss0;
	int ret;

	/* The destination holds old content: every page must be written. */
	memset(b->dst, 0xaa, b->npages << 12);
	ret = mig_listen("127.0.0.1", 0, &a.lfd, &port);
	if (ret)
		return ret;
	rss0 = rss_kib();
	pthread_create(&t, NULL, accept_main, &a);
	for (unsigned i = 0; i < n && !ret; i++)
		ret = mig_conn_connect("127.0.0.1", port, b->ctls, 10000,
				       &sc[i]);
	pthread_join(t, NULL);
	close(a.lfd);
	if (ret || a.ret)
		goto out;
	ret = mig_send_pipe_create(sc, n, b->smap, NULL, &sp);
	if (!ret)
		ret = mig_recv_pipe_create(dc, n, b->dmap, &rp);
	if (ret)
		goto out;
	b->next_gfn = 0;
	t0 = hvbench_now_ns();
	ret = mig_send_pipe_run(sp, next_run, b, NULL);
	if (!ret)
		ret = mig_send_pipe_finish(sp);
	if (!ret)
		ret = mig_recv_pipe_join(rp);
	t1 = hvbench_now_ns();
	if (ret)
		goto out;
	r->rss_kib = rss_kib() - rss0;
	mig_send_pipe_stats(sp, &st);
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
	struct bench b = { 0 };
	struct mig_memmap_slot slot;
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
		} else {
			goto usage;
		}
	}
	if (!mib || !reps || reps > 32)
		goto usage;
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

	printf("hvbench stream: %lu MiB per run, %s, %ld CPUs, median of %u\n",
	       mib, insecure ? "plain TCP (insecure)" : "TLS 1.3 AES-128-GCM",
	       cpus, reps);
	printf("%-7s %3s %9s %9s %9s %9s %7s %7s %6s %8s\n", "kind", "ch",
	       "pipe GB/s", "zstd1/cpu", "unzstd/cpu", "aes/cpu", "effic.",
	       "loopbk", "ratio", "RSS+MiB");
	for (unsigned k = 0; k < HV_ARRAY_SIZE(kinds) && !ret; k++) {
		double zd, z, a;

		fill(&b, kinds[k].content);
		z = zstd_alone(&b, &zd) / 1e9;
		zd /= 1e9;
		a = aes_alone(&b) / 1e9;
		for (unsigned c = 0; c < nch && !ret; c++) {
			double g[32];
			unsigned cores = (unsigned)HV_MIN((long)chans[c], cpus);
			struct result r = { 0 };
			long rss = 0;
			double med, bound, lb;

			for (unsigned i = 0; i < reps && !ret; i++) {
				ret = run_once(&b, chans[c], &r);
				g[i] = r.gbps;
				rss = HV_MAX(rss, r.rss_kib);
			}
			if (ret)
				break;
			med = hvbench_median(g, reps);
			bound = HV_MIN(z, a) * cores;
			/*
			 * Loopback bound: the CPUs also decompress and
			 * decrypt, so per byte they pay compress +
			 * decompress + encrypt and decrypt of the wire
			 * bytes (1/ratio of the page bytes).
			 */
			lb = cpus / (1 / z + 1 / zd + 2 / (a * r.ratio));
			printf("%-7s %3u %9.2f %9.2f %10.2f %9.2f %6.0f%% "
			       "%6.0f%% %6.1f %8.1f\n",
			       kinds[k].name, chans[c], med, z, zd, a,
			       100 * med / bound, 100 * med / HV_MIN(lb, bound),
			       r.ratio, rss / 1024.0);
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
			"[--reps R] [--insecure]\n");
	return 2;
}

HVBENCH_CMD("stream", "page pipeline (encode, TLS, decode) vs zstd and AES",
	    bench_stream);
