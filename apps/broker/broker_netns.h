/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker: a client's own network namespace (broker_netns.c).
 */
#ifndef PKTMAP_APPS_BROKER_NETNS_H
#define PKTMAP_APPS_BROKER_NETNS_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Is nsfd a network namespace whose user namespace uid owns? 0 (*ino its
 * inode), or -errno with the reason in why. */
int netns_owned_by(int nsfd, uid_t uid, uint64_t *ino, char *why,
		   size_t whylen);

/* What an AF_XDP socket is bound to, as the kernel says (sock_diag of
 * the caller's current network namespace). -ENOENT: the kernel cannot
 * say (no AF_XDP sock_diag); other -errno: not an AF_XDP socket, not
 * bound. */
struct xsk_bound {
	bool found;
	int ifindex;
	uint32_t queue;
	uint64_t umem;
	char ifname[IF_NAMESIZE];
};
int xsk_bound_in(int sock, struct xsk_bound *b, char *why, size_t whylen);

#endif /* PKTMAP_APPS_BROKER_NETNS_H */
