// SPDX-License-Identifier: MIT
/*
 * The page-stamp oracle (hvcore/wl_verify.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/wl_verify.h"
#include "hvcore/workload.h"

/* Pages per data-map query of hv_wl_verify_mem(). */
#define DATA_CHUNK 32768u

static const uint8_t zero_page[HV_PAGE_SIZE];

/* What one page holds, per the rules of the header. */
enum verdict {
	PAGE_ZERO,
	PAGE_GOOD,
	PAGE_BAD_STAMP,
	PAGE_BAD_CONTENT,
	PAGE_STALE,
};

struct region {
	uint32_t vcpu;
	uint32_t content;
	uint64_t pages;
	uint64_t seq; /* published seq S */
	int sweep;    /* the sweep order can be checked */
	int full;     /* prefilled: no page of the region may be zero */
};

static enum verdict check_page(const struct region *r, uint64_t idx,
			       const uint8_t *pg, uint8_t *want,
			       uint64_t *seen_seq)
{
	struct hv_wl_stamp s;

	memcpy(&s, pg, sizeof(s));
	if (!memcmp(pg, zero_page, HV_PAGE_SIZE)) {
		/* The sweep wrote page idx with seq idx + 1 on its first
		 * pass: once S reached that, the page cannot be empty. */
		if ((r->sweep && r->seq > idx) || r->full)
			return PAGE_STALE;
		return PAGE_ZERO;
	}
	if (s.magic != HV_WL_STAMP_MAGIC || s.vcpu != r->vcpu ||
	    s.content != r->content || !s.seq || s.seq > r->seq + HV_WL_BATCH)
		return PAGE_BAD_STAMP;
	if (r->sweep && (s.seq - 1) % r->pages != idx)
		return PAGE_BAD_STAMP;
	if (r->content == HV_WL_CONTENT_STAMP) {
		/* What hv_wl_fill_page() leaves: the stamp (checked above)
		 * on a zero page. One pass instead of fill and compare. */
		if (memcmp(pg + sizeof(s), zero_page, HV_PAGE_SIZE - sizeof(s)))
			return PAGE_BAD_CONTENT;
	} else {
		memset(want, 0, HV_PAGE_SIZE);
		hv_wl_fill_page(want, (uint16_t)r->vcpu, s.seq, r->content);
		if (memcmp(want, pg, HV_PAGE_SIZE))
			return PAGE_BAD_CONTENT;
	}
	*seen_seq = s.seq;
	/* The newest seq this page can hold is within one pass of S. */
	if (r->sweep && r->seq >= r->pages && s.seq <= r->seq - r->pages)
		return PAGE_STALE;
	return PAGE_GOOD;
}

static void count(struct hv_wl_verify *out, enum verdict v, gfn_t gfn)
{
	switch (v) {
	case PAGE_ZERO:
		return;
	case PAGE_GOOD:
		out->written++;
		return;
	case PAGE_BAD_STAMP:
		out->bad_stamp++;
		break;
	case PAGE_BAD_CONTENT:
		out->written++;
		out->bad_content++;
		break;
	case PAGE_STALE:
		out->stale++;
		break;
	}
	out->bad++;
	if (out->nr_bad_gfns < HV_WL_VERIFY_BAD_MAX)
		out->bad_gfns[out->nr_bad_gfns++] = gfn;
}

/*
 * The RAM layout the regions follow: the params page's, which must name
 * @ram_bytes; params without one (ram_bytes 0, hand-built) are flat.
 */
static int ram_layout(const struct hv_wl_params *p, uint64_t ram_bytes,
		      struct hv_ram_layout *l)
{
	*l = p->ram;
	if (!l->ram_bytes)
		*l = (struct hv_ram_layout){ ram_bytes, 0, 0 };
	if (l->ram_bytes != ram_bytes || l->hole_end < l->hole_start)
		return -EINVAL;
	return 0;
}

/* Validate the params page and the regions against the RAM size. */
static int check_params(const struct hv_wl_params *p,
			const struct hv_ram_layout *l)
{
	for (uint32_t v = 0; v < p->nr_vcpus && v < HV_WL_MAX_VCPUS; v++) {
		const struct hv_wl_vcpu_params *w = &p->vcpu[v];

		if (hv_wl_check(p, v))
			return -EINVAL;
		if (w->pattern == HV_WL_PATTERN_IDLE && !w->prefill)
			continue;
		if (hv_wl_region_off(l, w) == HV_RAM_BAD)
			return -EINVAL;
	}
	return hv_wl_check(p, 0);
}

/*
 * Region pages [@i, @end) that hold no data in the memfd (a hole: zeros,
 * never written). Only the sweep has a rule for zero pages: those it must
 * have reached already are stale.
 */
static void check_hole(struct hv_wl_verify *out, const struct region *r,
		       const struct hv_ram_layout *l, uint64_t off0,
		       uint64_t i, uint64_t end)
{
	if (!r->sweep)
		return;
	for (; i < end && i < r->seq; i++)
		count(out, PAGE_STALE,
		      hv_gpa_to_gfn(hv_ram_off_to_gpa(
			      l, off0 + (i << HV_PAGE_SHIFT))));
}

/* Where to learn which RAM holds data: a memfd, a data-map function, or
 * nothing (everything is data). */
struct data_src {
	int fd;
	hv_wl_data_map_fn map;
	void *ctx;
	uint64_t bits[DATA_CHUNK / 64];
};

/* next_data() through a data-map function, a chunk at a time. */
static uint64_t next_data_mem(struct data_src *src, uint64_t off0, uint64_t i,
			      uint64_t n, uint64_t *data_end)
{
	*data_end = n;
	while (i < n) {
		uint64_t cnt = HV_MIN(n - i, (uint64_t)DATA_CHUNK), j, k;

		if (src->map(src->ctx, off0 + (i << HV_PAGE_SHIFT), cnt,
			     src->bits))
			return i; /* cannot tell: data */
		for (j = 0; j < cnt && !(src->bits[j / 64] >> (j % 64) & 1);
		     j++)
			;
		if (j == cnt) {
			i += cnt;
			continue;
		}
		for (k = j; k < cnt && (src->bits[k / 64] >> (k % 64) & 1); k++)
			;
		*data_end = k < cnt ? i + k : n;
		return i + j;
	}
	return n;
}

/*
 * The first region page at or after @i (below @n) that may hold data, and
 * in *@data_end the end of that data run. Without a source, or when it
 * cannot tell, everything is data.
 */
static uint64_t next_data(struct data_src *src, uint64_t off0, uint64_t i,
			  uint64_t n, uint64_t *data_end)
{
	off_t d, h;
	int fd = src->fd;

	if (src->map)
		return next_data_mem(src, off0, i, n, data_end);
	*data_end = n;
	if (fd < 0)
		return i;
	d = lseek(fd, (off_t)(off0 + (i << HV_PAGE_SHIFT)), SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? n : i;
	h = lseek(fd, d, SEEK_HOLE);
	if (h < 0)
		return i;
	d = (off_t)(((uint64_t)d - off0) >> HV_PAGE_SHIFT);
	h = (off_t)HV_DIV_ROUND_UP((uint64_t)h - off0, HV_PAGE_SIZE);
	*data_end = HV_MIN((uint64_t)h, n);
	return HV_MIN((uint64_t)d, n);
}

static int verify(const uint8_t *ram, uint64_t ram_bytes,
		  struct data_src *src, struct hv_wl_verify *out);

int hv_wl_verify(const uint8_t *ram, uint64_t ram_bytes,
		 struct hv_wl_verify *out)
{
	return hv_wl_verify_fd(ram, ram_bytes, -1, out);
}

int hv_wl_verify_fd(const uint8_t *ram, uint64_t ram_bytes, int fd,
		    struct hv_wl_verify *out)
{
	struct data_src src = { .fd = fd };

	return verify(ram, ram_bytes, &src, out);
}

int hv_wl_verify_map(const uint8_t *ram, uint64_t ram_bytes,
		     hv_wl_data_map_fn map, void *ctx, struct hv_wl_verify *out)
{
	struct data_src *src = calloc(1, sizeof(*src));
	int ret;

	if (!src)
		return -ENOMEM;
	src->fd = -1;
	src->map = map;
	src->ctx = ctx;
	ret = verify(ram, ram_bytes, src, out);
	free(src);
	return ret;
}

static int verify(const uint8_t *ram, uint64_t ram_bytes,
		  struct data_src *src, struct hv_wl_verify *out)
{
	const struct hv_wl_params *p;
	const struct hv_wl_status *st;
	struct hv_ram_layout l;
	uint8_t want[HV_PAGE_SIZE];

	memset(out, 0, sizeof(*out));
	if (ram_bytes < HV_WL_STATUS_GPA + HV_WL_MAX_VCPUS * sizeof(*st) ||
	    ram_bytes < HV_WL_PARAMS_GPA + sizeof(*p))
		return -EINVAL;
	p = (const struct hv_wl_params *)(ram + HV_WL_PARAMS_GPA);
	st = (const struct hv_wl_status *)(ram + HV_WL_STATUS_GPA);
	if (ram_layout(p, ram_bytes, &l) || check_params(p, &l))
		return -EINVAL;

	for (uint32_t v = 0; v < p->nr_vcpus; v++) {
		const struct hv_wl_vcpu_params *w = &p->vcpu[v];
		struct region r = {
			.vcpu = v,
			.content = w->content,
			.pages = w->region_pages,
			.seq = st[v].seq,
			/* Reads move the sweep on without a stamp. An idle
			 * vCPU's prefill is a sweep that stops after one
			 * pass. */
			.sweep = (w->pattern == HV_WL_PATTERN_SWEEP &&
				  w->write_pct == 100) ||
				 w->pattern == HV_WL_PATTERN_IDLE,
			.full = w->prefill && st[v].seq >= w->region_pages,
		};
		uint64_t newest = 0, off0, i = 0;

		if (w->pattern == HV_WL_PATTERN_IDLE && !w->prefill)
			continue;
		/* A region is consecutive in RAM offsets (workload.h). */
		off0 = hv_wl_region_off(&l, w);
		while (i < r.pages) {
			uint64_t end, d = next_data(src, off0, i, r.pages, &end);

			check_hole(out, &r, &l, off0, i, d);
			for (i = d; i < end; i++) {
				uint64_t off = off0 + (i << HV_PAGE_SHIFT);
				uint64_t seen = 0;
				enum verdict vd;

				vd = check_page(&r, i, ram + off, want, &seen);
				count(out, vd,
				      hv_gpa_to_gfn(hv_ram_off_to_gpa(&l, off)));
				if (seen > newest)
					newest = seen;
			}
		}
		out->pages += r.pages;
		if (r.seq && newest < r.seq)
			out->lost_vcpus++;
	}
	return 0;
}
