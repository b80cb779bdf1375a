/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The ring half of the slot checker (the slot half is inline in check.h):
 * netmap's nm_txsync_prologue/nm_rxsync_prologue for every back end.
 */
#include <stdio.h>

#include "check.h"
#include "log.h"
#include "port.h"
#include "util.h"

int pm_sync_prologue(struct pktmap_port *p, struct pm_kring *k)
{
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots;
	/* Read each index once: the application (or a peer sharing the
	 * region) may change them while we look. */
	uint32_t head = PM_READ_ONCE(ring->head);
	uint32_t cur = PM_READ_ONCE(ring->cur);

	if (pm_likely(head < n && cur < n)) {
		uint32_t dtail = pm_ring_dist(k->hwcur, k->rtail, n);
		uint32_t dhead = pm_ring_dist(k->hwcur, head, n);
		uint32_t dcur = pm_ring_dist(k->hwcur, cur, n);
		if (pm_likely(dhead <= dtail && dcur >= dhead && dcur <= dtail)) {
			k->rhead = head;
			k->rcur = cur;
			return 0;
		}
	}
	pm_stat_inc(&p->stats->invalid_ring, 1);
	pm_log_ratelimited(p, pm_rl_ring(p, (int)k->tx),
			   "%s: %s ring %u: head %u / cur %u outside [%u, %u] "
			   "(%u slots): ring reset",
			   p->name, k->tx ? "TX" : "RX", k->ring->ringid, head, cur,
			   k->hwcur, k->rtail, n);
	/* netmap_ring_reinit(): back to the last state we handed out. */
	ring->head = ring->cur = k->rhead = k->rcur = k->hwcur;
	ring->tail = k->rtail;
	return -EINVAL;
}

void pm_sync_epilogue(struct pm_kring *k)
{
	k->rtail = k->hwtail;
	k->ring->tail = k->hwtail;
}

void pm_slot_reject(struct pktmap_port *p, struct pm_kring *k, uint32_t i,
		    uint32_t idx, uint32_t len, enum pm_slot_verdict v)
{
	pm_stat_add(&k->st->drop_invalid, 1);
	pm_log_ratelimited(p, pm_rl_slot(p, (int)k->tx),
			   "%s: %s ring %u slot %u: %s (buf_idx %u, len %u; "
			   "valid buffers 2..%u, len %s..%u): slot dropped",
			   p->name, k->tx ? "TX" : "RX", k->ring->ringid, i,
			   v == PM_SLOT_BAD_IDX ? "invalid buffer index" :
						  "invalid length",
			   idx, len, p->bs.nbufs - 1, k->tx ? "1" : "0",
			   p->bs.usable);
}

int pm_rx_release(struct pktmap_port *p, struct pm_kring *k)
{
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, head = k->rhead;

	for (uint32_t i = k->hwcur; i != head; i = i + 1 == n ? 0 : i + 1) {
		uint32_t idx = PM_READ_ONCE(ring->slot[i].buf_idx);
		if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
			pm_slot_reject(p, k, i, idx, ring->slot[i].len,
				       PM_SLOT_BAD_IDX);
			k->hwcur = i;
			return -EINVAL;
		}
	}
	k->hwcur = head;
	return 0;
}
