// SPDX-License-Identifier: MIT
#include "hvcore/devices/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int hv_tap_name_check(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (!len || len >= HV_TAP_NAME_MAX || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' || name[i] == ':' || name[i] <= ' ' ||
		    name[i] == 0x7f)
			return -EINVAL;
	return 0;
}

int hv_tap_open(const char *name, int *out)
{
	struct ifreq ifr;
	int fd, ret;

	ret = hv_tap_name_check(name);
	if (ret)
		return ret;
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, TUNSETIFF, &ifr)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	*out = fd;
	return 0;
}

int hv_tap_adopt(int fd, const char *name, int *out)
{
	struct ifreq ifr;
	int nfd, fl, ret;

	ret = hv_tap_name_check(name);
	if (ret || fd < 0)
		return -EINVAL;
	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr))
		return errno == EBADF ? -EBADF : -ENOTTY;
	if ((ifr.ifr_flags & (IFF_TAP | IFF_TUN | IFF_NO_PI)) !=
		    (IFF_TAP | IFF_NO_PI) ||
	    strncmp(ifr.ifr_name, name, IFNAMSIZ))
		return -EINVAL;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (nfd < 0)
		return -errno;
	/* The flag lives in the file, which the giver shares: it is set
	 * there already (hv_tap_open()); this only checks it. */
	fl = fcntl(nfd, F_GETFL);
	if (fl < 0 ||
	    (!(fl & O_NONBLOCK) && fcntl(nfd, F_SETFL, fl | O_NONBLOCK))) {
		ret = -errno;
		close(nfd);
		return ret;
	}
	*out = nfd;
	return 0;
}

size_t hv_tap_rarp_frame(const uint8_t mac[6], uint8_t *b)
{
	/* Ethernet: broadcast, from @mac, RARP. Then the ARP-format body:
	 * Ethernet/IPv4, opcode 3 (reverse request), sender and target
	 * hardware addresses @mac, protocol addresses 0. Padded to 60. */
	static const uint8_t body[] = {0x80, 0x35, 0x00, 0x01, 0x08,
				       0x00, 0x06, 0x04, 0x00, 0x03};

	memset(b, 0, 60);
	memset(b, 0xff, 6);
	memcpy(b + 6, mac, 6);
	memcpy(b + 12, body, sizeof(body));
	memcpy(b + 22, mac, 6);
	memcpy(b + 32, mac, 6);
	return 60;
}

int hv_tap_announce(int fd, const uint8_t mac[6])
{
	uint8_t f[60];
	size_t len = hv_tap_rarp_frame(mac, f);
	ssize_t r = write(fd, f, len);

	if (r == (ssize_t)len)
		return 0;
	return r < 0 ? -errno : -EIO;
}
