/* SPDX-License-Identifier: BSD-2-Clause
 *
 * <net/netmap.h> for netmap programs built on pktmap (pkg-config
 * pktmap-netmap): netmap's structures, constants and control requests
 * (API 14). They are pktmap's own definitions, <pktmap/netmap.h>, so a
 * program and pktmap agree on every byte. See docs/netmap.md.
 */
#ifndef _NET_NETMAP_H_
#define _NET_NETMAP_H_

#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <net/if.h>

#include <pktmap/netmap.h>

/* The shared control blocks of CSB mode. pktmap has no CSB mode (the
 * request fails with EOPNOTSUPP); the types are here so programs that
 * mention them compile. */
struct nm_csb_atok {
	uint32_t head;
	uint32_t cur;
	uint32_t appl_need_kick;
	uint32_t sync_flags;
	uint32_t pad[12];
};

struct nm_csb_ktoa {
	uint32_t hwcur;
	uint32_t hwtail;
	uint32_t kern_need_kick;
	uint32_t pad[13];
};

#define NETMAP_MAX_FRAGS 64

/* open, ioctl, mmap, poll, ... on a netmap descriptor reach the
 * emulation (not for the emulation itself: it defines them). */
#ifndef PKTMAP_NETMAP_BUILDING_FD
#include <net/netmap_fd.h>
#endif

#endif /* _NET_NETMAP_H_ */
