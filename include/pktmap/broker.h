/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The privileged half of `pktmap broker` (docs/broker.md): what the broker,
 * running as root, does for an unprivileged client on top of the sockets
 * it creates and hands over. Applications do not call these: pktmap_open()
 * asks the broker by itself when it lacks a capability.
 *
 * Each call works in the caller's current network namespace.
 */
#ifndef PKTMAP_BROKER_H
#define PKTMAP_BROKER_H

#include <stddef.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pktmap_broker_xsk;

/* Steer queue `queue` of interface `ifindex` (named `ifname`) to the bound
 * AF_XDP socket `fd`: pktmap's XDP program is attached through a link of
 * our own (native mode when `native`, else native where the driver has
 * it, generic otherwise) or the one another pktmap process attached is
 * joined, and the socket goes into its XSKMAP. *out holds the link until
 * pktmap_broker_xsk_detach(). Returns 0, or -errno with one line in err. */
PKTMAP_EXPORT int pktmap_broker_xsk_attach(struct pktmap_broker_xsk **out,
					   int ifindex, const char *ifname,
					   uint32_t queue, int fd, int native,
					   char *err, size_t errlen);
/* Keep pktmap's XDP program attached to interface `ifindex` (named
 * `ifname`) with no queue steered: attached through a link of our own
 * (native mode where the driver has it, generic otherwise), or the link
 * of the one another pktmap process attached joined. A later
 * pktmap_broker_xsk_attach() on the interface then only joins it and
 * fills the XSKMAP: no attach in the kernel on that path. The program is
 * refused, as by pktmap_broker_xsk_attach(), when another XDP program is
 * attached. *out holds the link until pktmap_broker_xsk_detach().
 * Returns 0, or -errno with one line in err. */
PKTMAP_EXPORT int pktmap_broker_xdp_hold(struct pktmap_broker_xsk **out,
					 int ifindex, const char *ifname,
					 char *err, size_t errlen);
/* 1 while the program h holds is the one attached to its interface; 0
 * when it is gone (the interface was removed, the link detached). */
PKTMAP_EXPORT int pktmap_broker_xdp_held(const struct pktmap_broker_xsk *h);
/* "native" or "generic": how the program of h runs. */
PKTMAP_EXPORT const char *pktmap_broker_xsk_mode(const struct pktmap_broker_xsk *h);
/* Take the queue (a hold has none) out of the XSKMAP (the socket
 * receives nothing more) and let go of the link (the program is detached
 * when the last holder lets go). NULL is ignored. */
PKTMAP_EXPORT void pktmap_broker_xsk_detach(struct pktmap_broker_xsk *h);

/* Lock an AF_PACKET socket to interface `ifindex`: a socket filter that
 * drops every frame of any other interface, locked (SO_LOCK_FILTER: the
 * holder of the socket can neither remove nor replace it, whatever it
 * binds the socket to). Returns a descriptor of the filter's switch
 * (for pktmap_broker_pkt_revoke()), or -errno with one line in err. */
PKTMAP_EXPORT int pktmap_broker_pkt_lock(int fd, int ifindex, char *err,
					 size_t errlen);
/* Flip the switch: the socket whose filter it is receives nothing more.
 * Returns 0 or -errno. */
PKTMAP_EXPORT int pktmap_broker_pkt_revoke(int switch_fd);

#ifdef __cplusplus
}
#endif

#endif /* PKTMAP_BROKER_H */
