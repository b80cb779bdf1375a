/* SPDX-License-Identifier: BSD-2-Clause
 *
 * netmap's inline ring helpers, as in netmap_user.h, so that a netmap
 * application's inner loop compiles against pktmap unchanged:
 *
 *     struct netmap_ring *r = NETMAP_RXRING(nifp, 0);
 *     while (!nm_ring_empty(r)) {
 *             struct netmap_slot *s = &r->slot[r->head];
 *             consume(NETMAP_BUF(r, s->buf_idx), s->len);
 *             r->head = r->cur = nm_ring_next(r, r->head);
 *     }
 *     pktmap_rxsync(port);
 */
#ifndef PKTMAP_NETMAP_USER_H
#define PKTMAP_NETMAP_USER_H

#include <stddef.h>
#include <stdint.h>

#include "netmap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define _NETMAP_OFFSET(type, ptr, offset) \
	((type)(void *)((char *)(ptr) + (offset)))

#define NETMAP_IF(_base, _ofs) _NETMAP_OFFSET(struct netmap_if *, _base, _ofs)

#define NETMAP_TXRING(nifp, index) \
	_NETMAP_OFFSET(struct netmap_ring *, nifp, (nifp)->ring_ofs[index])

#define NETMAP_RXRING(nifp, index)                             \
	_NETMAP_OFFSET(struct netmap_ring *, nifp,             \
		       (nifp)->ring_ofs[(index) + (nifp)->ni_tx_rings + \
					(nifp)->ni_host_tx_rings])

#define NETMAP_BUF(ring, index) \
	((char *)(ring) + (ring)->buf_ofs + ((size_t)(index) * (ring)->nr_buf_size))

#define NETMAP_BUF_IDX(ring, buf)                              \
	((uint32_t)(((char *)(buf) - ((char *)(ring) + (ring)->buf_ofs)) / \
		    (ring)->nr_buf_size))

/* The slot after i, wrapping at the end of the ring. */
static inline uint32_t nm_ring_next(const struct netmap_ring *r, uint32_t i)
{
	return (i + 1 == r->num_slots) ? 0 : i + 1;
}

/* Slots available to the application from head: received packets on RX,
 * free slots on TX (netmap's definition since 2018; cur is a wake-up
 * point and does not count). nm_ring_empty() is in netmap.h. */
static inline uint32_t nm_ring_space(const struct netmap_ring *ring)
{
	int ret = (int)ring->tail - (int)ring->head;
	if (ret < 0)
		ret += (int)ring->num_slots;
	return (uint32_t)ret;
}

/* True while some submitted TX slots have not been sent yet. */
static inline int nm_tx_pending(const struct netmap_ring *r)
{
	return nm_ring_next(r, r->tail) != r->head;
}

#ifdef __cplusplus
}
#endif

#endif /* PKTMAP_NETMAP_USER_H */
