/* SPDX-License-Identifier: MIT */
/*
 * What metrics.c (the server, daemon-wide families) and metrics_host.c
 * (VMs and workers from the host's records) and metrics_mig.c
 * (migrations) share: the text
 * builder of the exposition. Not a contract for other files: migd__
 * prefix. Loop thread.
 */
#ifndef MIGD_METRICS_PRIV_H
#define MIGD_METRICS_PRIV_H

#include <stdbool.h>
#include <stddef.h>

struct migd_host;

/* A growing text buffer; once an allocation failed, @oom stays set and
 * nothing more is added. */
struct migd_mbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

void migd__mput(struct migd_mbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* # HELP and # TYPE of one family. */
void migd__mfamily(struct migd_mbuf *b, const char *name, const char *type,
		   const char *help);
/* @s escaped as a label value into @out (truncated to @size). */
const char *migd__mesc(const char *s, char *out, size_t size);
/* @v at full precision: the shortest "%g" that reads back as @v (15 to
 * 17 digits), or NaN, +Inf, -Inf. @out holds MIGD_NUM_MAX bytes. */
#define MIGD_NUM_MAX 32
const char *migd__mnum(double v, char *out);

/* The VM and worker families (metrics_host.c). */
void migd__metrics_vms(struct migd_host *d, struct migd_mbuf *b);
void migd__metrics_workers(struct migd_host *d, struct migd_mbuf *b);
/* The migration families (metrics_mig.c). */
void migd__metrics_migs(struct migd_host *d, struct migd_mbuf *b);

#endif
