/* SPDX-License-Identifier: MIT */
/*
 * hv_tap: open a Linux tap interface by name for a virtio-net device
 * (hvcore/devices/virtio_net.h): /dev/net/tun, IFF_TAP | IFF_NO_PI (one
 * Ethernet frame per read or write, no packet-information prefix, no
 * vnet header: the device adds and strips the virtio header itself),
 * non-blocking, close-on-exec. The interface is created when it does
 * not exist and the caller may (CAP_NET_ADMIN); then it lives as long
 * as the fd, a persistent one (ip tuntap add) outlives it.
 *
 * Also the RARP announce a migrated guest's NIC sends from its new host
 * (as QEMU's self-announce does) so that switches learn the MAC's port.
 */
#ifndef HVCORE_DEVICES_TAP_H
#define HVCORE_DEVICES_TAP_H

#include <stddef.h>
#include <stdint.h>

/* IFNAMSIZ: names of 1..15 bytes. */
#define HV_TAP_NAME_MAX 16

/* 0 with the fd in *@fd, or -EINVAL (an empty or too long name, or one
 * with '/' or blanks), -EBUSY (another fd has the tap: another VM or
 * program), -ENOENT (/dev/net/tun missing: no tun module), -EPERM (it
 * does not exist and may not be created, or belongs to another user),
 * other -errno of open/ioctl. */
int hv_tap_open(const char *name, int *fd);

/* Adopt the tap fd another process opened (hv_tap_open()) and passed
 * over (local live update, migrated/vmm/handover.h): *@out is a
 * close-on-exec dup of @fd, the caller keeps @fd. Both fds share the open
 * file, so the tap stays attached while either is open and frames queued
 * in it are read by whoever reads next. 0, or -EINVAL (@fd < 0, a bad
 * @name, or a tap with another name or with packet information),
 * -ENOTTY (not a tap), -EBADF, other -errno of fcntl. */
int hv_tap_adopt(int fd, const char *name, int *out);

/* Whether @name is a valid interface name for hv_tap_open(). */
int hv_tap_name_check(const char *name);

/* Write one RARP request ("reverse request", ethertype 0x8035) from
 * @mac to the broadcast address on @fd: the frame QEMU's announce sends.
 * 0 or -errno of write. Any thread. */
int hv_tap_announce(int fd, const uint8_t mac[6]);

/* Build that frame into @buf (at least 60 bytes); returns its length. */
size_t hv_tap_rarp_frame(const uint8_t mac[6], uint8_t *buf);

#endif
