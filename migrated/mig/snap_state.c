// SPDX-License-Identifier: MIT
#include "migrated/mig/snap_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "hvcore/types.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/layout.h"

/* The page table is written as the host holds it: both architectures we
 * build for are little-endian, which is what the format says. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the snapshot format is little-endian");

#define SUM_LEN 32u

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EBADMSG; /* shorter than fstat said: truncated */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The bytes after the header, before the checksum. */
static uint64_t body_len(uint64_t layout_len, uint64_t state_len,
			 uint64_t npages)
{
	return layout_len + state_len + npages * 8 + MIG_DIGEST_LEN;
}

int mig_snap_state_write(const char *path, uint64_t mem_bytes,
			 const uint8_t *layout, size_t layout_len,
			 const struct hv_blob *vmstate, const uint64_t *table,
			 const uint8_t digest[32], uint64_t created_unix_ms)
{
	uint8_t hdr[MIG_SNAP_HDR_BYTES] = { 0 }, sum[SUM_LEN];
	uint64_t npages = mem_bytes / HV_PAGE_SIZE;
	const struct {
		const void *p;
		size_t len;
	} parts[] = {
		{ hdr, sizeof(hdr) },
		{ layout, layout_len },
		{ vmstate->data, vmstate->len },
		{ table, npages * 8 },
		{ digest, MIG_DIGEST_LEN },
	};
	EVP_MD_CTX *ctx;
	unsigned slen = 0;
	int fd, ret = 0;

	if (!mem_bytes || mem_bytes % HV_PAGE_SIZE || !layout_len ||
	    layout_len > MIG_SNAP_LAYOUT_MAX ||
	    vmstate->len > MIG_SNAP_VMSTATE_MAX)
		return -EINVAL;
	memcpy(hdr, MIG_SNAP_MAGIC, 8);
	put32(hdr + 8, MIG_SNAP_VERSION);
	put32(hdr + 12, MIG_SNAP_HDR_BYTES);
	put64(hdr + 16, mem_bytes);
	put64(hdr + 24, npages);
	put32(hdr + 32, (uint32_t)layout_len);
	put32(hdr + 36, (uint32_t)vmstate->len);
	put64(hdr + 40, created_unix_ms);

	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		return -ENOMEM;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		EVP_MD_CTX_free(ctx);
		return -errno;
	}
	for (size_t i = 0; i < HV_ARRAY_SIZE(parts) && !ret; i++) {
		if (!parts[i].len)
			continue;
		if (!EVP_DigestUpdate(ctx, parts[i].p, parts[i].len))
			ret = -EIO;
		else
			ret = write_all(fd, parts[i].p, parts[i].len);
	}
	if (!ret && (!EVP_DigestFinal_ex(ctx, sum, &slen) || slen != SUM_LEN))
		ret = -EIO;
	if (!ret)
		ret = write_all(fd, sum, SUM_LEN);
	EVP_MD_CTX_free(ctx);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

#define BAD(err, ...)                                                        \
	do {                                                                 \
		snprintf(why, why_len, __VA_ARGS__);                         \
		ret = (err);                                                 \
		goto out;                                                    \
	} while (0)

/* Header and sizes: everything that can be said before reading more. */
static int check_header(const uint8_t *hdr, uint64_t fsize, const char *path,
			char *why, size_t why_len)
{
	uint64_t mem = get64(hdr + 16), np = get64(hdr + 24);
	uint32_t ver = get32(hdr + 8), hlen = get32(hdr + 12);
	uint32_t ll = get32(hdr + 32), sl = get32(hdr + 36);
	uint64_t want;

	if (memcmp(hdr, MIG_SNAP_MAGIC, 8)) {
		snprintf(why, why_len,
			 "%s is not a snapshot state file (no MIGDSNAP magic)",
			 path);
		return -EPROTO;
	}
	if (ver != MIG_SNAP_VERSION) {
		snprintf(why, why_len,
			 "%s is snapshot format version %u; this build reads "
			 "version %u only",
			 path, ver, MIG_SNAP_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (hlen != MIG_SNAP_HDR_BYTES || !mem || mem % HV_PAGE_SIZE ||
	    mem > HV_VM_MAX_MEM || np != mem / HV_PAGE_SIZE || !ll ||
	    ll > MIG_SNAP_LAYOUT_MAX || sl > MIG_SNAP_VMSTATE_MAX) {
		snprintf(why, why_len,
			 "%s: header is malformed (header %u bytes, RAM %llu "
			 "bytes in %llu pages, layout %u bytes, VM state %u "
			 "bytes)",
			 path, hlen, (unsigned long long)mem,
			 (unsigned long long)np, ll, sl);
		return -EBADMSG;
	}
	want = MIG_SNAP_HDR_BYTES + body_len(ll, sl, np) + SUM_LEN;
	if (fsize != want) {
		snprintf(why, why_len,
			 "%s is %s: %llu bytes, its header says %llu", path,
			 fsize < want ? "truncated" : "longer than its header "
						      "says",
			 (unsigned long long)fsize, (unsigned long long)want);
		return -EBADMSG;
	}
	return 0;
}

int mig_snap_state_read(const char *path, const struct hv_vm_cfg *base,
			struct mig_snap_state *out, char *why, size_t why_len)
{
	uint8_t hdr[MIG_SNAP_HDR_BYTES], sum[SUM_LEN];
	struct mig_snap_state st = { 0 };
	Mig__VmLayout *l = NULL;
	uint8_t *buf = NULL, *p;
	uint64_t blen = 0;
	unsigned slen = 0;
	struct stat sb;
	uint32_t ll, sl;
	char lwhy[160];
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "cannot open %s: %s", path,
			 strerror(errno));
		return ret;
	}
	if (fstat(fd, &sb))
		BAD(-errno, "cannot stat %s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		BAD(-EPROTO, "%s is not a regular file", path);
	if ((uint64_t)sb.st_size < MIG_SNAP_HDR_BYTES + SUM_LEN) {
		if (sb.st_size >= 8 && !read_all(fd, hdr, 8) &&
		    memcmp(hdr, MIG_SNAP_MAGIC, 8))
			BAD(-EPROTO,
			    "%s is not a snapshot state file (no MIGDSNAP "
			    "magic)",
			    path);
		BAD(-EBADMSG, "%s is truncated: %lld bytes, shorter than its "
			      "header",
		    path, (long long)sb.st_size);
	}
	ret = read_all(fd, hdr, sizeof(hdr));
	if (ret)
		BAD(ret, "%s: reading the header: %s", path, strerror(-ret));
	ret = check_header(hdr, (uint64_t)sb.st_size, path, why, why_len);
	if (ret)
		goto out;
	st.mem_bytes = get64(hdr + 16);
	st.npages = get64(hdr + 24);
	st.created_unix_ms = get64(hdr + 40);
	ll = get32(hdr + 32);
	sl = get32(hdr + 36);
	blen = body_len(ll, sl, st.npages) + SUM_LEN;
	buf = malloc(blen);
	if (!buf)
		BAD(-ENOMEM, "%s: no memory for %llu bytes", path,
		    (unsigned long long)blen);
	ret = read_all(fd, buf, blen);
	if (ret)
		BAD(ret, "%s: reading: %s", path,
		    ret == -EBADMSG ? "file is truncated" : strerror(-ret));

	/* The checksum before anything is decoded. */
	{
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
			 EVP_DigestUpdate(ctx, hdr, sizeof(hdr)) &&
			 EVP_DigestUpdate(ctx, buf, blen - SUM_LEN) &&
			 EVP_DigestFinal_ex(ctx, sum, &slen) &&
			 slen == SUM_LEN;

		EVP_MD_CTX_free(ctx);
		if (!ok)
			BAD(-ENOMEM, "%s: SHA-256 failed", path);
	}
	if (memcmp(sum, buf + blen - SUM_LEN, SUM_LEN))
		BAD(-EBADMSG,
		    "%s is corrupted: its checksum does not match its "
		    "contents",
		    path);

	p = buf;
	l = mig__vm_layout__unpack(NULL, ll, p);
	if (!l)
		BAD(-EBADMSG, "%s: the VM configuration does not decode",
		    path);
	ret = mig_layout_to_cfg(l, base, &st.cfg, lwhy, sizeof(lwhy));
	if (ret)
		BAD(-EINVAL, "%s: the snapshot's VM cannot be made here: %s",
		    path, lwhy);
	if (st.cfg.mem_bytes != st.mem_bytes)
		BAD(-EBADMSG,
		    "%s: the header says %llu bytes of RAM, the VM "
		    "configuration %llu",
		    path, (unsigned long long)st.mem_bytes,
		    (unsigned long long)st.cfg.mem_bytes);
	snprintf(st.name, sizeof(st.name), "%s", l->name ? l->name : "");
	p += ll;
	st.vmstate.len = sl;
	st.vmstate.data = malloc(sl ? sl : 1);
	st.table = malloc(st.npages * 8);
	if (!st.vmstate.data || !st.table)
		BAD(-ENOMEM, "%s: no memory for the page table", path);
	memcpy(st.vmstate.data, p, sl);
	p += sl;
	memcpy(st.table, p, st.npages * 8);
	p += st.npages * 8;
	memcpy(st.digest, p, MIG_DIGEST_LEN);
	*out = st;
	memset(&st, 0, sizeof(st));
	ret = 0;
out:
	mig_snap_state_fini(&st);
	if (l)
		mig__vm_layout__free_unpacked(l, NULL);
	free(buf);
	close(fd);
	return ret;
}

void mig_snap_state_fini(struct mig_snap_state *st)
{
	if (!st)
		return;
	free(st->vmstate.data);
	free(st->table);
	st->vmstate.data = NULL;
	st->table = NULL;
}
