// SPDX-License-Identifier: MIT
/*
 * hvblk: the block check of Linux guests (docs/guests.md). In the guest
 * it writes N MiB of self-describing 4 KiB blocks to a disk, syncs
 * (a virtio-blk FLUSH), reads them back with O_DIRECT (from the device,
 * not the page cache) and checks every block; on the host, --verify
 * checks that the image file holds exactly those blocks:
 *
 *   hvblk: ok dev=/dev/vda mib=64 seed=7 blocks=16384 write_ms=812 read_ms=407
 *   hvblk: FAILED dev=/dev/vda bad=3 first_bad=12 (block number 0 seed 7)
 *
 * Block b (little-endian 64-bit words): w[0] = "hvblk01\0", w[1] = b,
 * w[2] = the seed, w[3] = FNV-1a 64 of bytes 32..4095, and
 * w[j] = splitmix64(seed ^ (b << 16 | j)) for j = 4..511.
 *
 * Parameters from /proc/cmdline (hv.blk=DEV hv.blk_mib=N hv.blk_seed=S),
 * or as arguments in the same form, which win; --verify only reads.
 *
 * --hold (hv.hold_mib=M, hv.hold_stop=FILE, hv.hold_rate=R): device DMA
 * into guest memory that the guest keeps, for a migration's test. The
 * blocks written before (hv.blk_mib of them, not written again) are read
 * over and over with O_DIRECT, 64 KiB a request, into a buffer of M MiB
 * (mlocked) that the program keeps: the device writes the buffer, the
 * guest's CPU only reads it. Pass k puts disk chunk (j + 7k) mod n into
 * buffer chunk j, so each pass changes what every page holds, and the
 * block number each buffer block must hold is noted in a table (written
 * by the CPU). Before a chunk is read again, its blocks are checked
 * against the table (magic, block number, seed, a last word); once FILE
 * (default /tmp/hold.stop) exists the reading ends and every block of the
 * buffer is checked in full. A page the device wrote that a migration
 * left behind (its dirty bit not set: the destination keeps an older
 * copy) holds another pass's block: caught, at the first check after
 * the switchover. R caps the reading at R MiB/s (0, default: no cap).
 *
 *   hvblk: hold reading dev=/dev/vda mib=32 disk_mib=8      (first pass done)
 *   hvblk: hold ok dev=/dev/vda mib=32 passes=9 read_mib=290 checked=74240
 *   hvblk: hold FAILED bad=12 first: pass=3 block_slot=77 got=1234 want=99
 *
 * Exit status: 0 ok, 1 a block is wrong or an I/O failed, 2 bad use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLK 4096u
#define WORDS (BLK / 8)
#define CHUNK (1u << 20)
#define MAGIC 0x0031306b6c627668ULL /* "hvblk01\0" */

struct opts {
	char dev[256];
	uint64_t mib, seed;
	int verify_only;
	int hold;
	uint64_t hold_mib, hold_rate;
	char hold_stop[256];
};

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void fill(uint8_t *b, uint64_t blk, uint64_t seed)
{
	put64(b, MAGIC);
	put64(b + 8, blk);
	put64(b + 16, seed);
	for (uint64_t j = 4; j < WORDS; j++)
		put64(b + 8 * j, splitmix64(seed ^ (blk << 16 | j)));
	put64(b + 24, fnv1a(b + 32, BLK - 32));
}

static void apply(struct opts *o, const char *w)
{
	if (!strncmp(w, "hv.blk=", 7))
		snprintf(o->dev, sizeof(o->dev), "%s", w + 7);
	else if (!strncmp(w, "hv.blk_mib=", 11))
		o->mib = strtoull(w + 11, NULL, 0);
	else if (!strncmp(w, "hv.blk_seed=", 12))
		o->seed = strtoull(w + 12, NULL, 0);
	else if (!strcmp(w, "--verify"))
		o->verify_only = 1;
	else if (!strcmp(w, "--hold"))
		o->hold = 1;
	else if (!strncmp(w, "hv.hold_mib=", 12))
		o->hold_mib = strtoull(w + 12, NULL, 0);
	else if (!strncmp(w, "hv.hold_rate=", 13))
		o->hold_rate = strtoull(w + 13, NULL, 0);
	else if (!strncmp(w, "hv.hold_stop=", 13))
		snprintf(o->hold_stop, sizeof(o->hold_stop), "%s", w + 13);
}

static void parse_cmdline(struct opts *o)
{
	char buf[4096], *save = NULL, *w;
	FILE *f = fopen("/proc/cmdline", "r");
	size_t n;

	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (w = strtok_r(buf, " \n", &save); w;
	     w = strtok_r(NULL, " \n", &save))
		apply(o, w);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int do_write(const struct opts *o, uint8_t *buf)
{
	int fd = open(o->dev, O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("hvblk: FAILED dev=%s open: %s\n", o->dev,
		       strerror(errno));
		return 1;
	}
	for (uint64_t off = 0; off < o->mib << 20; off += CHUNK) {
		for (uint64_t b = 0; b < CHUNK / BLK; b++)
			fill(buf + b * BLK, off / BLK + b, o->seed);
		if (pwrite(fd, buf, CHUNK, (off_t)off) != (ssize_t)CHUNK) {
			printf("hvblk: FAILED dev=%s write at %llu: %s\n",
			       o->dev, (unsigned long long)off,
			       strerror(errno));
			close(fd);
			return 1;
		}
	}
	/* fsync: the page cache to the device, then a FLUSH request. */
	if (fsync(fd)) {
		printf("hvblk: FAILED dev=%s fsync: %s\n", o->dev,
		       strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

static int do_verify(const struct opts *o, uint8_t *buf, uint64_t *bad,
		     uint64_t *first_bad)
{
	uint8_t want[BLK];
	int fd;

	/* O_DIRECT: the device's answer, not the page cache's (a regular
	 * file on the host may refuse it: then a plain read). */
	fd = open(o->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fd = open(o->dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("hvblk: FAILED dev=%s open: %s\n", o->dev,
		       strerror(errno));
		return 1;
	}
	*bad = 0;
	*first_bad = UINT64_MAX;
	for (uint64_t off = 0; off < o->mib << 20; off += CHUNK) {
		if (pread(fd, buf, CHUNK, (off_t)off) != (ssize_t)CHUNK) {
			printf("hvblk: FAILED dev=%s read at %llu: %s\n",
			       o->dev, (unsigned long long)off,
			       strerror(errno));
			close(fd);
			return 1;
		}
		for (uint64_t b = 0; b < CHUNK / BLK; b++) {
			uint8_t *got = buf + b * BLK;

			fill(want, off / BLK + b, o->seed);
			if (memcmp(got, want, BLK) ||
			    fnv1a(got + 32, BLK - 32) != get64(got + 24)) {
				if (*first_bad == UINT64_MAX)
					*first_bad = off / BLK + b;
				(*bad)++;
			}
		}
	}
	close(fd);
	return 0;
}

/* ---- --hold ---------------------------------------------------------- */

#define HOLD_CHUNK (64u << 10)
#define HOLD_BPC (HOLD_CHUNK / BLK) /* blocks per chunk */

struct hold_bad {
	uint64_t n, pass, slot, got, want;
};

/* Block @slot of the buffer must hold disk block @want: a quick check of
 * its words (magic, number, seed, the last word), or all of it. */
static void hold_check(const uint8_t *b, uint64_t slot, uint64_t want,
		       uint64_t seed, uint64_t pass, int full,
		       struct hold_bad *bad, uint8_t *scratch)
{
	int ok;

	if (full) {
		fill(scratch, want, seed);
		ok = !memcmp(b, scratch, BLK);
	} else {
		ok = get64(b) == MAGIC && get64(b + 8) == want &&
		     get64(b + 16) == seed &&
		     get64(b + BLK - 8) ==
			     splitmix64(seed ^ (want << 16 | (WORDS - 1)));
	}
	if (ok)
		return;
	if (!bad->n++) {
		bad->pass = pass;
		bad->slot = slot;
		bad->got = get64(b + 8);
		bad->want = want;
	}
}

static int do_hold(const struct opts *o)
{
	uint64_t nslot = o->hold_mib << 8, nchunk = nslot / HOLD_BPC;
	uint64_t disk_chunks = (o->mib << 20) / HOLD_CHUNK;
	uint64_t pass, read = 0, checked = 0, t0 = now_ms();
	struct hold_bad bad = {0};
	const char *stop = o->hold_stop[0] ? o->hold_stop : "/tmp/hold.stop";
	uint8_t scratch[BLK];
	uint32_t *want;
	uint8_t *buf;
	struct stat st;
	int fd, done = 0;

	if (!o->hold_mib || !disk_chunks || o->hold_mib > 4096) {
		fprintf(stderr, "hvblk: --hold needs hv.hold_mib=1..4096 and "
				"hv.blk_mib\n");
		return 2;
	}
	unlink(stop);
	want = malloc(nslot * sizeof(*want));
	if (!want || posix_memalign((void **)&buf, BLK, o->hold_mib << 20)) {
		printf("hvblk: hold FAILED no memory\n");
		return 1;
	}
	/* Resident and in place for the whole run. */
	memset(buf, 0, o->hold_mib << 20);
	mlock(buf, o->hold_mib << 20);
	fd = open(o->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) /* a file on the host (tests of the program) */
		fd = open(o->dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("hvblk: hold FAILED dev=%s open: %s\n", o->dev,
		       strerror(errno));
		return 1;
	}
	for (pass = 0; !done; pass++) {
		for (uint64_t j = 0; j < nchunk && !done; j++) {
			uint64_t dc = (j + 7 * pass) % disk_chunks;
			uint8_t *c = buf + j * HOLD_CHUNK;

			/* What the last pass read there is still there. */
			for (uint64_t b = 0; pass && b < HOLD_BPC; b++) {
				hold_check(c + b * BLK, j * HOLD_BPC + b,
					   want[j * HOLD_BPC + b], o->seed,
					   pass, 0, &bad, scratch);
				checked++;
			}
			if (pread(fd, c, HOLD_CHUNK,
				  (off_t)(dc * HOLD_CHUNK)) !=
			    (ssize_t)HOLD_CHUNK) {
				printf("hvblk: hold FAILED dev=%s read at "
				       "%llu: %s\n",
				       o->dev,
				       (unsigned long long)(dc * HOLD_CHUNK),
				       strerror(errno));
				return 1;
			}
			for (uint64_t b = 0; b < HOLD_BPC; b++)
				want[j * HOLD_BPC + b] =
					(uint32_t)(dc * HOLD_BPC + b);
			read += HOLD_CHUNK;
			if ((j & 15) == 15 && pass)
				done = !stat(stop, &st);
			/* The cap: no further ahead than R MiB/s allows. */
			while (o->hold_rate &&
			       read * 1000 / (o->hold_rate << 20) >
				       now_ms() - t0)
				usleep(2000);
		}
		if (!pass) {
			printf("hvblk: hold reading dev=%s mib=%llu "
			       "disk_mib=%llu\n",
			       o->dev, (unsigned long long)o->hold_mib,
			       (unsigned long long)o->mib);
			fflush(stdout);
		}
	}
	close(fd);
	/* The whole buffer, every byte, against the last reads. A chunk not
	 * read in the last pass (it stopped midway) holds the pass before. */
	for (uint64_t i = 0; i < nslot; i++) {
		hold_check(buf + i * BLK, i, want[i], o->seed, pass, 1, &bad,
			   scratch);
		checked++;
	}
	if (bad.n) {
		printf("hvblk: hold FAILED dev=%s bad=%llu first: pass=%llu "
		       "block_slot=%llu got=%llu want=%llu\n",
		       o->dev, (unsigned long long)bad.n,
		       (unsigned long long)bad.pass,
		       (unsigned long long)bad.slot,
		       (unsigned long long)bad.got,
		       (unsigned long long)bad.want);
		return 1;
	}
	printf("hvblk: hold ok dev=%s mib=%llu passes=%llu read_mib=%llu "
	       "checked=%llu\n",
	       o->dev, (unsigned long long)o->hold_mib,
	       (unsigned long long)pass, (unsigned long long)(read >> 20),
	       (unsigned long long)checked);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {"", 64, 1, 0, 0, 0, 0, ""};
	uint64_t t0, t1, t2, bad, first;
	uint8_t *buf;

	parse_cmdline(&o);
	for (int i = 1; i < argc; i++)
		apply(&o, argv[i]);
	if (!o.dev[0] || !o.mib || o.mib > (1ULL << 20)) {
		fprintf(stderr, "usage: hvblk [--verify | --hold hv.hold_mib=M "
				"[hv.hold_rate=R] [hv.hold_stop=FILE]] "
				"hv.blk=DEV [hv.blk_mib=N] [hv.blk_seed=S]\n");
		return 2;
	}
	if (o.hold)
		return do_hold(&o);
	if (posix_memalign((void **)&buf, BLK, CHUNK)) {
		printf("hvblk: FAILED no memory\n");
		return 2;
	}
	t0 = now_ms();
	if (!o.verify_only && do_write(&o, buf))
		return 1;
	t1 = now_ms();
	if (do_verify(&o, buf, &bad, &first))
		return 1;
	t2 = now_ms();
	if (bad) {
		uint8_t *b = buf; /* re-read the first bad one for the log */
		int fd = open(o.dev, O_RDONLY | O_CLOEXEC);
		uint64_t num = 0, seed = 0;

		if (fd >= 0 && pread(fd, b, BLK, (off_t)(first * BLK)) ==
				       (ssize_t)BLK) {
			num = get64(b + 8);
			seed = get64(b + 16);
		}
		if (fd >= 0)
			close(fd);
		printf("hvblk: FAILED dev=%s bad=%llu first_bad=%llu (block "
		       "number %llu seed %llu)\n",
		       o.dev, (unsigned long long)bad,
		       (unsigned long long)first, (unsigned long long)num,
		       (unsigned long long)seed);
		return 1;
	}
	printf("hvblk: ok dev=%s mib=%llu seed=%llu blocks=%llu write_ms=%llu "
	       "read_ms=%llu%s\n",
	       o.dev, (unsigned long long)o.mib, (unsigned long long)o.seed,
	       (unsigned long long)(o.mib << 8), (unsigned long long)(t1 - t0),
	       (unsigned long long)(t2 - t1), o.verify_only ? " verify" : "");
	free(buf);
	return 0;
}
