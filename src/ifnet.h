/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Interface ioctls, for the back ends on a network interface
 * (src/ifnet.c).
 */
#ifndef PKTMAP_IFNET_H
#define PKTMAP_IFNET_H

/* An interface ioctl (SIOCGIFMTU, SIOCSIFFLAGS, ...) on a socket of its
 * own: sets ifr->ifr_name, leaves the rest as the caller filled it (a
 * SIOCS* after a SIOCG* keeps what was read). Returns 0 or -errno. */
struct ifreq;
int pm_if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr);
/* SIOCETHTOOL with `cmd` (a struct ethtool_* starting with its .cmd) as
 * the data, read and written in place. Returns 0 or -errno. */
int pm_if_ethtool(const char *ifname, void *cmd);

#endif /* PKTMAP_IFNET_H */
