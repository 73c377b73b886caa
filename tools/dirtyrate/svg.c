// SPDX-License-Identifier: MIT
/*
 * dirtyrate_svg: hand-written SVG time series (svg.h).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tools/dirtyrate/svg.h"

#define W 900.0
#define H 560.0
#define ML 80.0 /* margins */
#define MR 170.0
#define MT 60.0
#define GAP 50.0
#define MB 60.0

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c",
				      "#9467bd", "#ff7f0e", "#8c564b",
				      "#e377c2", "#17becf"};

/* A "nice" tick step for a range of @span over about @n ticks. */
static double nice_step(double span, int n)
{
	double raw = span / n, mag = pow(10, floor(log10(raw)));
	double f = raw / mag;

	return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

struct panel {
	double x0, y0, w, h; /* plot area */
	double tmax, vmax;
};

static double px(const struct panel *p, double t)
{
	return p->x0 + t / p->tmax * p->w;
}

static double py(const struct panel *p, double v)
{
	return p->y0 + p->h - v / p->vmax * p->h;
}

static void axes(FILE *f, const struct panel *p, const char *ylabel,
		 bool xlabels)
{
	double ts = nice_step(p->tmax, 8), vs = nice_step(p->vmax, 5);

	fprintf(f,
		"<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' "
		"fill='#fbfbfb' stroke='#444'/>\n",
		p->x0, p->y0, p->w, p->h);
	for (double v = 0; v <= p->vmax + 1e-9; v += vs) {
		fprintf(f,
			"<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' "
			"stroke='#ddd'/>\n",
			p->x0, py(p, v), p->x0 + p->w, py(p, v));
		fprintf(f,
			"<text x='%.1f' y='%.1f' text-anchor='end' "
			"font-size='12'>%g</text>\n",
			p->x0 - 6, py(p, v) + 4, v);
	}
	for (double t = 0; t <= p->tmax + 1e-9; t += ts) {
		fprintf(f,
			"<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' "
			"stroke='#eee'/>\n",
			px(p, t), p->y0, px(p, t), p->y0 + p->h);
		if (xlabels)
			fprintf(f,
				"<text x='%.1f' y='%.1f' "
				"text-anchor='middle' font-size='12'>%g"
				"</text>\n",
				px(p, t), p->y0 + p->h + 16, t);
	}
	fprintf(f,
		"<text transform='translate(%.1f,%.1f) rotate(-90)' "
		"text-anchor='middle' font-size='13'>%s</text>\n",
		p->x0 - 55, p->y0 + p->h / 2, ylabel);
}

static void line(FILE *f, const struct panel *p, const struct dr_point *pts,
		 size_t n, size_t off, const char *colour, bool dashed)
{
	fprintf(f,
		"<polyline fill='none' stroke='%s' stroke-width='%s'%s "
		"points='",
		colour, dashed ? "1.5" : "2",
		dashed ? " stroke-dasharray='6,4'" : "");
	for (size_t i = 0; i < n; i++) {
		double v = *(const double *)((const char *)&pts[i] + off);

		fprintf(f, "%.1f,%.1f ", px(p, pts[i].t_s), py(p, v));
	}
	fprintf(f, "'/>\n");
}

static void legend(FILE *f, double x, double y, const char *colour, bool dashed,
		   const char *label)
{
	fprintf(f,
		"<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' "
		"stroke='%s' stroke-width='2'%s/>\n",
		x, y, x + 24, y, colour,
		dashed ? " stroke-dasharray='6,4'" : "");
	fprintf(f, "<text x='%.1f' y='%.1f' font-size='12'>%s</text>\n", x + 30,
		y + 4, label);
}

int dirtyrate_svg_write(const char *path, const char *vm,
			const struct dr_point *pts, size_t n, unsigned nr_vcpus,
			const char *subtitle)
{
	double ph = (H - MT - MB - GAP) / 2;
	struct panel top = {ML, MT, W - ML - MR, ph, 1, 1};
	struct panel bot = {ML, MT + ph + GAP, W - ML - MR, ph, 1, 1};
	FILE *f;
	char lbl[64];

	if (nr_vcpus > DR_SVG_VCPUS_MAX)
		nr_vcpus = DR_SVG_VCPUS_MAX;
	for (size_t i = 0; i < n; i++) {
		top.tmax = fmax(top.tmax, pts[i].t_s);
		top.vmax =
			fmax(top.vmax, fmax(pts[i].mib_s, pts[i].guest_mib_s));
		for (unsigned v = 0; v < nr_vcpus; v++)
			bot.vmax = fmax(bot.vmax, pts[i].vcpu_mib_s[v]);
	}
	top.vmax *= 1.1;
	bot.vmax *= 1.1;
	bot.tmax = top.tmax;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"<?xml version='1.0' encoding='UTF-8'?>\n"
		"<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
		"height='%.0f' viewBox='0 0 %.0f %.0f' "
		"font-family='sans-serif'>\n"
		"<rect width='100%%' height='100%%' fill='white'/>\n",
		W, H, W, H);
	fprintf(f,
		"<text x='%.1f' y='24' font-size='17' "
		"font-weight='bold'>Dirty rate of VM %s</text>\n",
		ML, vm);
	fprintf(f,
		"<text x='%.1f' y='44' font-size='12' fill='#555'>%s"
		"</text>\n",
		ML, subtitle);
	axes(f, &top, "dirty rate (MiB/s, 1 s window)", false);
	line(f, &top, pts, n, offsetof(struct dr_point, guest_mib_s), "#999",
	     true);
	line(f, &top, pts, n, offsetof(struct dr_point, mib_s), colours[0],
	     false);
	axes(f, &bot, "per vCPU (MiB/s)", true);
	for (unsigned v = 0; v < nr_vcpus; v++)
		line(f, &bot, pts, n,
		     offsetof(struct dr_point, vcpu_mib_s) + v * sizeof(double),
		     colours[v % 8], false);
	fprintf(f,
		"<text x='%.1f' y='%.1f' text-anchor='middle' "
		"font-size='13'>time (s)</text>\n",
		ML + top.w / 2, H - 14);
	legend(f, W - MR + 16, MT + 10, colours[0], false, "measured");
	legend(f, W - MR + 16, MT + 30, "#999", true, "guest counters");
	for (unsigned v = 0; v < nr_vcpus; v++) {
		snprintf(lbl, sizeof(lbl), "vCPU %u (est.)", v);
		legend(f, W - MR + 16, bot.y0 + 10 + 20 * v, colours[v % 8],
		       false, lbl);
	}
	fprintf(f, "</svg>\n");
	if (fclose(f))
		return -errno;
	return 0;
}
