/* SPDX-License-Identifier: MIT */
/*
 * KVM capability numbers newer than the installed linux-libc-dev headers
 * (6.1 on the build machines, Debian 12). They are ABI: the
 * numbers never change once released; each use is still checked at run
 * time with KVM_CHECK_EXTENSION, so an older kernel reports "missing".
 */
#ifndef HVCORE_KVM_CAPS_H
#define HVCORE_KVM_CAPS_H

#include <linux/kvm.h>

#ifndef KVM_CAP_DIRTY_LOG_RING_ACQ_REL
#define KVM_CAP_DIRTY_LOG_RING_ACQ_REL 223
#endif
#ifndef KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP
#define KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP 225
#endif
#ifndef KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE
#define KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE (1 << 0)
#endif
#ifndef KVM_DIRTY_LOG_INITIALLY_SET
#define KVM_DIRTY_LOG_INITIALLY_SET (1 << 1)
#endif

#endif
