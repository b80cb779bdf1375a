/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Interface ioctls for the back ends that sit on a Linux interface
 * (packet, tap, xdp): one helper instead of a socket-open-ioctl-close
 * block in each.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ifnet.h"

int pm_if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) /* a namespace without IPv4 still has AF_UNIX */
		s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	int ret = ioctl(s, req, ifr) == 0 ? 0 : -errno;
	close(s);
	return ret;
}

int pm_if_ethtool(const char *ifname, void *cmd)
{
	struct ifreq ifr = { .ifr_data = cmd };
	return pm_if_ioctl(ifname, SIOCETHTOOL, &ifr);
}
