/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The steps the syncs share of the back ends that copy between the
 * netmap rings and a kernel ring, a device or a file (packet_rx.c,
 * packet_tx.c, tap.c, pcap.c).
 */
#ifndef PKTMAP_PORTS_COPY_SYNC_H
#define PKTMAP_PORTS_COPY_SYNC_H

#include "check.h"
#include "port.h"

/* An rxsync delivered `pkts` packets of `bytes` bytes, the newest
 * stamped `ts_ns` (ns since the epoch): count them, and give the ring
 * that time as netmap does (ring->ts). Nothing when none came. */
static inline void pm_rx_done(struct pm_kring *k, uint64_t pkts,
			      uint64_t bytes, uint64_t ts_ns)
{
	if (!pkts)
		return;
	pm_count(k, pkts, bytes);
	k->ring->ts.tv_sec = (time_t)(ts_ns / 1000000000ull);
	k->ring->ts.tv_usec = (suseconds_t)(ts_ns % 1000000000ull / 1000);
}

/* The end of the packet that starts at slot i of a TX ring: a chain
 * (NS_MOREFRAG) is sent whole, and only once the application has
 * submitted all of it. Sets *end to the slot after its last one; returns
 * false while the chain goes on past head (a chain as long as the ring
 * allows is taken as it is). */
static inline bool pm_tx_chain_end(struct netmap_ring *ring, uint32_t i,
				   uint32_t head, uint32_t n, uint32_t *end)
{
	uint32_t e = i, cnt = 0;
	bool complete = false;
	while (e != head) {
		uint16_t fl = PM_READ_ONCE(ring->slot[e].flags);
		e = e + 1 == n ? 0 : e + 1;
		cnt++;
		if (!(fl & NS_MOREFRAG)) {
			complete = true;
			break;
		}
	}
	*end = e;
	return complete || cnt >= n - 1;
}

/* Slot x of a TX ring, read once and checked: its buffer index and
 * length in *idx and *len, and true; or false for a slot the checker
 * refused (counted and logged). */
static inline bool pm_tx_slot_take(struct pktmap_port *p, struct pm_kring *k,
				   uint32_t x, uint32_t *idx, uint32_t *len)
{
	struct netmap_slot *sl = &k->ring->slot[x];
	*idx = PM_READ_ONCE(sl->buf_idx);
	*len = PM_READ_ONCE(sl->len);
	enum pm_slot_verdict v = pm_slot_check(&p->bs, *idx, *len, 1);
	if (pm_likely(v == PM_SLOT_OK))
		return true;
	pm_slot_reject(p, k, x, *idx, *len, v);
	return false;
}

#endif /* PKTMAP_PORTS_COPY_SYNC_H */
