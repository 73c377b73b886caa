/* SPDX-License-Identifier: MIT */
/*
 * HV_BUG_ON(): the one way to report a programmer error.
 * It prints the condition with file:line and aborts; it is never used for
 * conditions caused by input, the guest, the kernel or the network.
 */
#ifndef HVCORE_BUG_H
#define HVCORE_BUG_H

void hv_bug(const char *cond, const char *file, int line)
	__attribute__((noreturn, cold));

#define HV_BUG_ON(cond)                                                      \
	do {                                                                 \
		if (__builtin_expect(!!(cond), 0))                           \
			hv_bug(#cond, __FILE__, __LINE__);                   \
	} while (0)

#endif
