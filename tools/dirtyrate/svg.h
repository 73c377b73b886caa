/* SPDX-License-Identifier: MIT */
/*
 * dirtyrate_svg: a time-series plot written by hand as SVG: one chart of
 * the VM's dirty rate (MiB/s, 1 s window) with the guest's own write rate
 * as a dashed reference, one line per vCPU below, axes with ticks and
 * labels, a legend. No library: the format is text.
 */
#ifndef DIRTYRATE_SVG_H
#define DIRTYRATE_SVG_H

#include <stddef.h>
#include <stdint.h>

#define DR_SVG_VCPUS_MAX 8

struct dr_point {
	double t_s;	    /* since the first sample */
	double mib_s;	    /* measured, 1 s window */
	double guest_mib_s; /* guest counters (reference) */
	double vcpu_mib_s[DR_SVG_VCPUS_MAX];
};

/* Write @n points to @path. 0 or negative errno. */
int dirtyrate_svg_write(const char *path, const char *vm,
			const struct dr_point *pts, size_t n, unsigned nr_vcpus,
			const char *subtitle);

#endif
