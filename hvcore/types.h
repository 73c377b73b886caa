/* SPDX-License-Identifier: MIT */
/*
 * Address kinds used across hvcore. These are the only scalar typedefs in the
 * project: they keep guest-physical, frame and host
 * addresses from being mixed up silently.
 */
#ifndef HVCORE_TYPES_H
#define HVCORE_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

typedef uint64_t gpa_t; /* guest-physical address */
typedef uint64_t gfn_t; /* guest frame number (gpa >> HV_PAGE_SHIFT) */
typedef uint64_t hva_t; /* host-virtual address */

#define HV_PAGE_SHIFT 12
#define HV_PAGE_SIZE (1ULL << HV_PAGE_SHIFT)
#define HV_PAGE_MASK (~(HV_PAGE_SIZE - 1))

#define HV_ALIGN_UP(x, a) (((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define HV_ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define HV_DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define HV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define HV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define HV_MAX(a, b) ((a) > (b) ? (a) : (b))

static inline gfn_t hv_gpa_to_gfn(gpa_t gpa)
{
	return gpa >> HV_PAGE_SHIFT;
}

static inline gpa_t hv_gfn_to_gpa(gfn_t gfn)
{
	return gfn << HV_PAGE_SHIFT;
}

/* Serialised component state (a vCPU's, a VM's, the devices'): malloc'd
 * bytes, freed with free() by whoever holds them. */
struct hv_blob {
	uint8_t *data;
	size_t len;
};

#endif
