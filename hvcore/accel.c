// SPDX-License-Identifier: MIT
/*
 * The names of the accelerator kinds (accel.h), in hvcore's base library
 * so that code that only names an accelerator (option parsing, logs,
 * capabilities) does not link the VM and the accelerators.
 */
#include <string.h>

#include "hvcore/accel.h"

static const char *const accel_names[HV_ACCEL_COUNT] = {
	[HV_ACCEL_INVALID] = "invalid",
	[HV_ACCEL_KVM] = "kvm",
	[HV_ACCEL_SOFT] = "soft",
};

const char *hv_accel_kind_name(enum hv_accel_kind kind)
{
	return (unsigned)kind < HV_ACCEL_COUNT ? accel_names[kind] : "?";
}

enum hv_accel_kind hv_accel_kind_parse(const char *s, enum hv_accel_kind dflt)
{
	if (!s || !*s)
		return dflt;
	if (!strcmp(s, "kvm"))
		return HV_ACCEL_KVM;
	if (!strcmp(s, "soft"))
		return HV_ACCEL_SOFT;
	return HV_ACCEL_INVALID;
}
