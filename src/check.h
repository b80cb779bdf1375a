/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The slot checker: every slot and every ring index that crosses a sync
 * call is validated here, and only here (docs/design.md, "Trust
 * model"). Each value is read from shared memory exactly once; the
 * checks use the copies, so a peer that rewrites the ring while we look
 * cannot make us follow a value we did not check.
 */
#ifndef PKTMAP_CHECK_H
#define PKTMAP_CHECK_H

#include <stdint.h>

#include "pktmap/netmap.h"

struct pktmap_port;
struct pm_kring;

/* What the checker knows about a port's buffers. */
struct pm_bufspace {
	uint32_t nbufs;  /* valid indices are 2 .. nbufs-1 */
	uint32_t usable; /* largest len a slot may carry */
	uint32_t ext_lo, ext_n; /* and ext_lo .. ext_lo+ext_n-1: buffers a
				 * back end maps beyond the region (pkt:'s
				 * kernel ring) */
};

enum pm_slot_verdict {
	PM_SLOT_OK = 0,
	PM_SLOT_BAD_IDX = 1, /* 0, 1, or beyond the pool */
	PM_SLOT_BAD_LEN = 2, /* 0 (on TX) or larger than a buffer */
};

/* Load a value another process may be writing, once. */
#define PM_READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
/* Store a value another process may be reading, once. */
#define PM_WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))

/* Is idx a buffer of the region? (0 and 1 never are.) */
static inline int pm_buf_ok(const struct pm_bufspace *b, uint32_t idx)
{
	return idx - 2u < b->nbufs - 2u || idx - b->ext_lo < b->ext_n;
}

/* The length rule of a slot or descriptor that carries frame bytes from
 * the application or a peer (a TX slot, a memif or pipe descriptor):
 * at least one byte, at most a buffer's usable bytes. pm_slot_check()
 * holds a TX slot to the same rule (written out there with the index
 * test, in the fast paths' own form). */
static inline enum pm_slot_verdict pm_desc_check(const struct pm_bufspace *b,
						 uint32_t len)
{
	return len - 1u < b->usable ? PM_SLOT_OK : PM_SLOT_BAD_LEN;
}

/* Check one slot's copies. `tx` is nonzero when the slot carries a frame
 * to send (len 0 is then refused: a frame has at least one byte). */
static inline enum pm_slot_verdict
pm_slot_check(const struct pm_bufspace *b, uint32_t idx, uint32_t len, int tx)
{
	if (!pm_buf_ok(b, idx))
		return PM_SLOT_BAD_IDX;
	if (len > b->usable || (tx && len == 0))
		return PM_SLOT_BAD_LEN;
	return PM_SLOT_OK;
}

/* Circular distance from a to b in a ring of n slots. */
static inline uint32_t pm_ring_dist(uint32_t a, uint32_t b, uint32_t n)
{
	return b >= a ? b - a : b + n - a;
}

static inline uint32_t pm_ring_add(uint32_t i, uint32_t d, uint32_t n)
{
	i += d;
	return i >= n ? i - n : i;
}

/* Check head and cur of a ring against what the last sync handed out
 * ([hwcur, rtail] circularly, cur not before head). On success stores them
 * in k->rhead/k->rcur and returns 0. On failure the ring is reset to its
 * last valid state, the port's invalid_ring counter is raised, one
 * rate-limited line is logged, and -EINVAL is returned. */
int pm_sync_prologue(struct pktmap_port *p, struct pm_kring *k);

/* Hand the new tail to the application (k->hwtail). */
void pm_sync_epilogue(struct pm_kring *k);

/* Count and report (rate-limited) a slot the checker refused. */
void pm_slot_reject(struct pktmap_port *p, struct pm_kring *k, uint32_t i,
		    uint32_t idx, uint32_t len, enum pm_slot_verdict v);

/* Take back the RX slots the application released ([hwcur, rhead)) for
 * a back end that fills them with copies: each must hold a buffer of the
 * port (the application may have swapped buffers). Moves hwcur to rhead,
 * or to the first bad slot, which is counted and logged: then -EINVAL. */
int pm_rx_release(struct pktmap_port *p, struct pm_kring *k);

#endif /* PKTMAP_CHECK_H */
