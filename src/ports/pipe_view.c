/* SPDX-License-Identifier: BSD-2-Clause
 *
 * An end's private ring taken from what the queue holds: one operation,
 * done at two moments.
 *
 *   resume  at open (pm_pipe_resume()): the ring is new, every slot
 *           needs a buffer; the last binder of the ring (a process that
 *           closed or died) left them in the queue. Under the region
 *           lock and the ring's sync lock.
 *   reload  at a sync that finds another binder synced last (its
 *           generation is not ours: pipe_sync.c): take that binder's
 *           view, as netmap's binders of one ring share it. Under the
 *           ring's sync lock.
 *
 * TX: the slots' buffers are the shadow, hwcur the control block's, the
 * room what prod and cons leave. RX: the ring as the last sync left it,
 * packets [cons, rx_hwtail) from their descriptors. Everything is read
 * once and checked before use (the peer may have written it), by the
 * same rules at both moments; they differ only in what a bad value
 * costs (struct pipe_view): at open a bad index fails the open and a bad
 * or duplicated buffer is replaced from the free list (each buffer must
 * end up in exactly one slot); at a sync a bad value is reported and
 * ours stays.
 */
#include <errno.h>

#include "pipe.h"

/* The buffer the last binder left at *at, for slot s of k. At open:
 * kept when it is a buffer of the pool that no slot resumed so far
 * holds, else replaced by a fresh one (and *at with it). At a sync: kept
 * when it is a buffer of the pool, else reported, and the slot keeps
 * ours. b is the value read (once) from *at. */
static int view_buf(struct pktmap_port *p, struct pm_kring *k,
		    const struct pipe_view *v, uint32_t s, uint32_t *at,
		    uint32_t b)
{
	uint8_t *seen = v->seen;
	if (!seen) {
		if (pm_buf_ok(&v->bs, b))
			k->ring->slot[s].buf_idx = b;
		else
			pipe_report_proto(p, k, "buffer index", b);
		return 0;
	}
	if (!pm_buf_ok(&v->bs, b) || (seen[b / 8] & (1u << (b % 8)))) {
		struct pm_region *reg = &p->region;
		if (pm_region_alloc_bufs(reg, &b, 1) != 0)
			return pm_open_error(p, -ENOMEM, "region '%s' is out of "
					     "buffers", reg->name);
		*at = b;
	}
	seen[b / 8] |= (uint8_t)(1u << (b % 8));
	k->ring->slot[s].buf_idx = b;
	return 0;
}

/* Indices of the control block that are not ring indices. At open: the
 * open fails; at a sync: reported (the first bad one). */
static int view_invalid(struct pktmap_port *p, struct pm_kring *k,
			const struct pipe_view *v, uint32_t bad)
{
	struct pipe_priv *pp = p->priv;
	if (v->seen)
		return pm_open_error(p, -EPROTO,
				     "pipe %u ring %u: control block is invalid "
				     "(written by another program?); close every "
				     "user of the pipe so that it is rebuilt",
				     pp->pipe_id, k->ring->ringid);
	pipe_report_proto(p, k, "ring index", bad);
	return -EPROTO;
}

/* TX ring k from the queue: its slots' buffers from the shadow, hwcur
 * from the control block, the free room from prod and cons. At a sync,
 * slots our application filled on the old view are dropped, and said
 * so: a binder syncs (or polls) when its turn comes, before it fills
 * slots; an index out of the ring leaves an empty ring (nothing goes
 * out). */
static int view_tx(struct pktmap_port *p, struct pm_kring *k,
		   const struct pipe_view *v)
{
	struct pipe_kpriv *kp = k->priv;
	uint32_t S = k->nslots;
	uint32_t hwcur = PM_READ_ONCE(kp->q->tx_hwcur);
	/* Acquire: pairs with the release stores of prod (pipe_txsync()) and
	 * cons (pipe_rxsync()); what they publish is read after. */
	uint32_t prod = atomic_load_explicit(&kp->q->prod, memory_order_acquire);
	uint32_t cons = atomic_load_explicit(&kp->q->cons, memory_order_acquire);
	if (hwcur >= S || prod >= S || cons >= S) {
		int ret = view_invalid(p, k, v, hwcur >= S ? hwcur :
					     prod >= S ? prod : cons);
		if (v->seen)
			return ret;
		hwcur = prod = cons = 0;
	}
	for (uint32_t s = 0; s < S; s++) {
		int ret = view_buf(p, k, v, s, &kp->shadow[s],
				   PM_READ_ONCE(kp->shadow[s]));
		if (ret)
			return ret;
	}
	if (!v->seen && k->rhead != k->hwcur)
		pm_log_ratelimited(p, pm_rl_slot(p, 1), "%s: TX ring %u: another "
				   "open synced it since this one did: the %u "
				   "slots filled before this sync are dropped "
				   "(sync or poll first, then fill)", p->name,
				   k->ring->ringid,
				   pm_ring_dist(k->hwcur, k->rhead, S));
	uint32_t d = pm_ring_dist(prod, cons, S);
	kp->prod = prod;
	kp->cons = cons;
	k->hwcur = k->rhead = k->rcur = hwcur;
	k->hwtail = k->rtail = pm_ring_add(hwcur, d ? d - 1 : S - 1, S);
	k->ring->head = k->ring->cur = hwcur;
	k->ring->tail = k->hwtail;
	return 0;
}

/* Descriptor s of [cons, tail) into RX slot s, read with one 8-byte
 * load and checked by the one rule (a buffer of the pool, a length that
 * fits: pipe_rx_len_ok(), rxsync's). At open a bad buffer is replaced (view_buf()) and a bad length
 * becomes 0: the packet is delivered empty; at a sync the first bad
 * descriptor is reported and stops the reload (-EPROTO). */
static int view_rx_slot(struct pktmap_port *p, struct pm_kring *k,
			const struct pipe_view *v, uint32_t s)
{
	struct pipe_kpriv *kp = k->priv;
	union pm_pipe_desc d = { .word = PM_READ_ONCE(kp->desc[s].word) };
	bool buf_ok = pm_buf_ok(&v->bs, d.buf_idx);
	bool len_ok = pipe_rx_len_ok(&v->bs, d.len);
	if (!v->seen && !(buf_ok && len_ok)) {
		pipe_report_proto(p, k, buf_ok ? "length" : "buffer index",
				  buf_ok ? d.len : d.buf_idx);
		return -EPROTO;
	}
	int ret = view_buf(p, k, v, s, &kp->desc[s].buf_idx, d.buf_idx);
	if (ret)
		return ret;
	struct netmap_slot *sl = &k->ring->slot[s];
	sl->len = len_ok ? d.len : 0;
	sl->flags = (uint16_t)((d.flags & NS_MOREFRAG) | NS_BUF_CHANGED);
	return 0;
}

/* RX ring k from the queue: the ring as the last sync left it, packets
 * [cons, rx_hwtail) unreleased. At a sync, slots our application
 * released since our last sync count only if the other binder released
 * them too: binders take turns, each syncing when its turn comes; at the
 * first bad value our indices stay as they were (slots already filled
 * hold checked buffers). At open, every other slot takes the buffer its
 * descriptor holds. */
static int view_rx(struct pktmap_port *p, struct pm_kring *k,
		   const struct pipe_view *v)
{
	struct pipe_kpriv *kp = k->priv;
	uint32_t S = k->nslots;
	/* Acquire: as in view_tx(). */
	uint32_t cons = atomic_load_explicit(&kp->q->cons, memory_order_acquire);
	uint32_t prod = atomic_load_explicit(&kp->q->prod, memory_order_acquire);
	uint32_t tail = PM_READ_ONCE(kp->q->rx_hwtail);
	if (cons >= S || tail >= S || prod >= S ||
	    pm_ring_dist(cons, tail, S) > pm_ring_dist(cons, prod, S)) {
		int ret = view_invalid(p, k, v, cons >= S ? cons :
					     tail >= S ? tail : prod);
		return v->seen ? ret : 0;
	}
	if (!v->seen && k->rhead != k->hwcur)
		pm_log_ratelimited(p, pm_rl_slot(p, 0), "%s: RX ring %u: another "
				   "open synced it since this one did: the %u "
				   "slots released here since are released only "
				   "if that open released them (take turns: "
				   "sync when your turn comes)", p->name,
				   k->ring->ringid,
				   pm_ring_dist(k->hwcur, k->rhead, S));
	for (uint32_t s = cons; s != tail; s = s + 1 == S ? 0 : s + 1) {
		int ret = view_rx_slot(p, k, v, s);
		if (ret)
			return v->seen ? ret : 0;
	}
	/* The buffers of the slots outside [cons, tail): a new ring's. */
	uint32_t rest = v->seen ? S - pm_ring_dist(cons, tail, S) : 0;
	for (uint32_t s = tail; rest--; s = s + 1 == S ? 0 : s + 1) {
		uint32_t *at = &kp->desc[s].buf_idx;
		int ret = view_buf(p, k, v, s, at, PM_READ_ONCE(*at));
		if (ret)
			return ret;
	}
	k->hwcur = k->rhead = k->rcur = cons;
	k->hwtail = k->rtail = tail;
	k->ring->head = k->ring->cur = cons;
	k->ring->tail = tail;
	return 0;
}

/* Take ring k's view from the queue (see the top of this file). 0, or
 * at open the error that fails it (said); at a sync, bad values are
 * reported and 0 returned. */
int pm_pipe_view(struct pktmap_port *p, struct pm_kring *k,
		 const struct pipe_view *v)
{
	return k->tx ? view_tx(p, k, v) : view_rx(p, k, v);
}

/* Resume ring r of this end in direction dir, at open, under its sync
 * lock: other processes may bind the ring and sync it meanwhile.
 * Touches nothing of the other direction, which another process may
 * have bound. Under the region lock. */
int pm_pipe_resume(struct pktmap_port *p, struct pipe_priv *pp, uint32_t dir,
		   uint32_t r, uint8_t *seen)
{
	struct pm_kring *k = dir == PIPE_TX ? pm_txkring(p, r) : pm_rxkring(p, r);
	struct pipe_kpriv *kp = k->priv;
	const struct pm_region *reg = &p->region;
	uint32_t usable = reg->buf_size - reg->headroom;
	const struct pipe_view v = {
		.bs = { .nbufs = reg->nbufs,
			.usable = usable < 65535 ? usable : 65535 },
		.seen = seen,
	};
	int ret = pm_pipe_lock_wait(p, k);
	if (ret == -EBUSY && pp->nowait)
		return pm_open_error(p, ret, "pipe %u %s ring %u: another process "
				     "is syncing it, and this open does not wait "
				     "for it: try again", pp->pipe_id,
				     dir == PIPE_TX ? "TX" : "RX", r);
	if (ret < 0)
		return ret;
	ret = pm_pipe_view(p, k, &v);
	/* Relaxed: we hold the lock, and only holders change the word. */
	kp->gen = SYNC_GEN(atomic_load_explicit(kp->sync, memory_order_relaxed));
	sync_release(kp);
	return ret;
}
