/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The pipe's txsync and rxsync. Zero-copy: txsync writes each slot's
 * buffer into a descriptor of the shared queue and takes, in exchange,
 * the buffer the reader left in that descriptor (both slots get
 * NS_BUF_CHANGED); rxsync copies descriptors into its private RX ring
 * and gives released slots back through them.
 *
 * No slot is dropped: a full queue leaves the writer's TX ring with no
 * space (its tail stops), which is backpressure. Anything the peer could
 * have written (indices, buffer numbers, lengths) is checked before it
 * is used: a peer that breaks the protocol costs -EPROTO, not a crash.
 * The loops take four slots at a time while every value passes the
 * checks (pipe_fast.h) and fall back to one at a time before the first
 * value that does not, which the one-at-a-time loop then reports.
 *
 * Each sync runs under its direction's sync word (pipe_lock.c): a lone
 * binder pays one compare-and-swap and one store; one that finds another
 * binder synced last takes its view first (pipe_view.c).
 */
#include <errno.h>
#include <signal.h>
#include <sys/time.h>

#include "pipe.h"

#ifdef PM_TEST_HOOKS
/* Tests only: libpktmap_internal is built with PM_TEST_HOOKS, the
 * shipped library is not. */
int pm_pipe_tx_stall, pm_pipe_rx_stall;
#endif

/* The writer's load of the reader's consumer index, checked and cached
 * in kp->cons. Pairs with the release store of cons in pipe_rxsync(): the
 * reader is done with the descriptors before cons. -EPROTO (reported)
 * when the peer wrote an index outside the ring. */
static inline int load_cons(struct pktmap_port *p, struct pm_kring *k,
			    uint32_t *cons)
{
	struct pipe_kpriv *kp = k->priv;
	uint32_t c = atomic_load_explicit(&kp->q->cons, memory_order_acquire);
	if (pm_unlikely(c >= k->nslots)) {
		pipe_report_proto(p, k, "consumer index", c);
		return -EPROTO;
	}
	kp->cons = *cons = c;
	return 0;
}

/* The syncs' slow path (sync_try() failed): wait for the lock, and
 * reload our view when another open synced last. */
static int pipe_lock_slow(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	int ret = pm_pipe_lock_wait(p, k);
	if (ret < 0)
		return ret;
	/* Relaxed: we hold the lock, and only holders change the word. */
	uint32_t gen = SYNC_GEN(atomic_load_explicit(kp->sync,
						     memory_order_relaxed));
	if (gen != kp->gen) {
		const struct pipe_view v = { .bs = p->bs, .seen = NULL };
		(void)pm_pipe_view(p, k, &v);
		kp->gen = gen;
	}
	return 0;
}

/* Move submitted TX slots into the queue, swapping buffers: each slot's
 * buffer goes out in a descriptor, and the slot gets the buffer the reader
 * returned in that descriptor's place. */
static int pipe_txsync_locked(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	struct pm_pipe_q *q = kp->q;
	union pm_pipe_desc *desc = kp->desc;
	uint32_t *shadow = kp->shadow;
	struct netmap_slot *slot = k->ring->slot;
	const struct pm_bufspace bs = p->bs;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead, prod = kp->prod;
	uint32_t cons = kp->cons;
	uint64_t pkts = 0, bytes = 0;
	int ret = 0;

	/* The consumer index cached by the last sync is enough unless it
	 * leaves less room than asked for (or nothing was asked: a
	 * refresh); then, and after moving slots, the shared one is read. */
	uint32_t want = pm_ring_dist(i, head, n);
	uint32_t space = n - 1 - pm_ring_dist(cons, prod, n);
	if (space < want || want == 0) {
		if (load_cons(p, k, &cons))
			return -EPROTO;
		space = n - 1 - pm_ring_dist(cons, prod, n);
	}
	uint32_t moved = 0, todo = want < space ? want : space;
	while (todo) {
		/* A run of slots and descriptors with no wrap in either. */
		uint32_t run = todo, r;
		if (run > n - i)
			run = n - i;
		if (run > n - prod)
			run = n - prod;
		struct netmap_slot *ts = &slot[i];
		union pm_pipe_desc *d = &desc[prod];
		uint32_t *sh = &shadow[i];
		uint32_t flags_or = 0;
		r = pipe_tx_fast(d, ts, sh, run, &bs, &bytes, &flags_or);
		for (; r < run; r++) {
			uint32_t idx = ts[r].buf_idx, len = ts[r].len, fl = ts[r].flags;
			/* The buffer the reader gave back here: read once. */
			uint32_t ridx = PM_READ_ONCE(d[r].buf_idx);
			if (pm_unlikely(!pm_buf_ok(&bs, idx) ||
					pm_desc_check(&bs, len) != PM_SLOT_OK ||
					!pm_buf_ok(&bs, ridx)))
				break; /* the slow path below says which */
			union pm_pipe_desc out = {
				.buf_idx = idx, .len = (uint16_t)len,
				.flags = (uint16_t)(fl & NS_MOREFRAG) };
			PM_WRITE_ONCE(d[r].word, out.word); /* one store */
			ts[r].buf_idx = ridx;
			ts[r].flags = NS_BUF_CHANGED;
			sh[r] = ridx;
			bytes += len;
			flags_or |= fl;
		}
		uint32_t frags = 0;
		if (pm_unlikely(flags_or & NS_MOREFRAG)) /* chains: count them */
			for (uint32_t x = 0; x < r; x++)
				frags += (PM_READ_ONCE(d[x].flags) & NS_MOREFRAG) != 0;
		pkts += r - frags;
		moved += r;
		todo -= r;
		i = pm_ring_add(i, r, n);
		prod = pm_ring_add(prod, r, n);
		if (pm_likely(r == run))
			continue;
		/* Slot i failed a check: a bad slot of ours is dropped (and
		 * counted), a bad buffer index from the reader stops us. */
		uint32_t idx = ts[r].buf_idx, len = ts[r].len;
		enum pm_slot_verdict v = pm_slot_check(&bs, idx, len, 1);
		if (v != PM_SLOT_OK) {
			pm_slot_reject(p, k, i, idx, len, v);
			i = i + 1 == n ? 0 : i + 1;
			todo--;
			continue;
		}
		pipe_report_proto(p, k, "buffer index", PM_READ_ONCE(d[r].buf_idx));
		ret = -EPROTO;
		break;
	}
#ifdef PM_TEST_HOOKS
	if (pm_pipe_tx_stall && moved)
		raise(SIGSTOP);
#endif
	space -= moved;
	k->hwcur = i;
	q->tx_hwcur = i;
	if (moved) {
		kp->prod = prod;
		/* Pairs with the acquire load of prod in pipe_rxsync(): the
		 * descriptors before prod are written. */
		atomic_store_explicit(&q->prod, prod, memory_order_release);
		kp->gen++; /* the other binders reload (sync_release()) */
		pm_count(k, pkts, bytes);
		pipe_wake_if_sleeping(p, &q->reader_sleeping, kp->wake_peer_fd);
		/* Look again, so that the application's tail shows the room
		 * the reader made meanwhile: a sync hands out what there is,
		 * as netmap's does (forwarders count a queue full from it).
		 * One load per batch that moved. */
		if (load_cons(p, k, &cons))
			return -EPROTO;
		space = n - 1 - pm_ring_dist(cons, prod, n);
	}
	k->hwtail = pm_ring_add(i, space, n);
	return ret;
}

/* Several opens may bind a ring (pipe_claim()); the syncs of one side
 * take turns under its sync word kp->sync (q->tx_sync or q->rx_sync),
 * which holds the pid of the syncing process, and one that finds another
 * synced last takes its view first (pm_pipe_view()). A lone binder pays
 * one compare-and-swap and three stores per sync (the word, and its
 * owner record written and cleared: pipe_lock.c). */
static inline int pipe_sync_turn(struct pktmap_port *p, struct pm_kring *k,
				 int (*locked)(struct pktmap_port *, struct pm_kring *))
{
	struct pipe_kpriv *kp = k->priv;
	struct pipe_priv *pp = p->priv;
	if (pm_unlikely(!sync_try(kp, pp))) {
		int ret = pipe_lock_slow(p, k);
		if (ret)
			return ret;
	}
	int ret = locked(p, k);
	sync_release(kp);
	/* A page of a shared hugetlb region taken away (guard.h): every
	 * sync from the one that met the loss on fails. One look, after the
	 * work: the mark never clears, and work done on a lost region reads
	 * the guard's private zeros, which the checks refuse like any
	 * other garbage. */
	if (pm_unlikely(atomic_load_explicit(&p->region.lost, memory_order_relaxed)))
		return pm_region_lost(p, &p->region);
	return ret;
}

int pm_pipe_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	return pipe_sync_turn(p, k, pipe_txsync_locked);
}

/* Give the released slots [i, head) back to the writer through their
 * descriptors. Usually a released slot still holds the buffer its
 * descriptor brought: then the descriptor says so already, and not
 * writing it leaves its cache line clean for the writer. The application
 * may have swapped another buffer in: the writer will take it, so it
 * must be one of the pool. Returns where it stopped: head, or a bad slot
 * (*ret -EINVAL, reported). */
static inline uint32_t rx_give_back(struct pktmap_port *p, struct pm_kring *k,
				    const struct pm_bufspace *bs, uint32_t i,
				    uint32_t head, int *ret)
{
	struct pipe_kpriv *kp = k->priv;
	union pm_pipe_desc *desc = kp->desc;
	struct netmap_slot *slot = k->ring->slot;
	uint32_t n = k->nslots;
	while (i != head) {
		/* Runs of untouched slots, four at a time. */
		uint32_t run = head > i ? head - i : n - i;
		i = pm_ring_add(i, pipe_release_same(&desc[i], &slot[i], run), n);
		if (i == head)
			break;
		uint32_t idx = slot[i].buf_idx;
		if (pm_unlikely(PM_READ_ONCE(desc[i].buf_idx) != idx)) {
			if (pm_unlikely(!pm_buf_ok(bs, idx))) {
				pm_slot_reject(p, k, i, idx, slot[i].len,
					       PM_SLOT_BAD_IDX);
				*ret = -EINVAL;
				break;
			}
			desc[i].buf_idx = idx;
		}
		i = i + 1 == n ? 0 : i + 1;
	}
	return i;
}

/* Give back released RX slots, then expose newly arrived whole packets:
 * each descriptor is read once, checked, and copied into our ring. */
static int pipe_rxsync_locked(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	struct pm_pipe_q *q = kp->q;
	union pm_pipe_desc *desc = kp->desc;
	struct netmap_slot *slot = k->ring->slot;
	const struct pm_bufspace bs = p->bs;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	int ret = 0;

	if (i != head) {
		i = rx_give_back(p, k, &bs, i, head, &ret);
		if (i != k->hwcur) {
			k->hwcur = i;
			kp->gen++; /* the other binders reload (sync_release()) */
			/* Pairs with the acquire load of cons in pipe_txsync(). */
			atomic_store_explicit(&q->cons, i, memory_order_release);
			pipe_wake_if_sleeping(p, &q->writer_sleeping, kp->wake_peer_fd);
		}
	}

	/* Pairs with the release store of prod in pipe_txsync(). */
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_acquire);
	uint32_t j = k->hwtail;
	if (pm_unlikely(prod >= n ||
			pm_ring_dist(k->hwcur, prod, n) <
				pm_ring_dist(k->hwcur, j, n))) {
		pipe_report_proto(p, k, "producer index", prod);
		return -EPROTO;
	}
	uint32_t end = j;
	uint64_t pkts = 0, bytes = 0, done_bytes = 0;
	while (j != prod) {
		uint32_t run = prod > j ? prod - j : n - j, r;
		const union pm_pipe_desc *d = &desc[j];
		struct netmap_slot *rs = &slot[j];
		uint64_t rbytes = 0, frags = 0;
		r = pipe_rx_fast(&desc[j], rs, run, &bs, &rbytes, &frags);
		for (; r < run; r++) {
			/* One load: the writer cannot change it under the check. */
			union pm_pipe_desc dd = { .word = PM_READ_ONCE(d[r].word) };
			uint32_t idx = dd.buf_idx, len = dd.len;
			uint32_t fl = dd.flags & NS_MOREFRAG;
			if (pm_unlikely(!pm_buf_ok(&bs, idx) || !pipe_rx_len_ok(&bs, len)))
				break;
			rs[r].buf_idx = idx;
			rs[r].len = (uint16_t)len;
			rs[r].flags = (uint16_t)(fl | NS_BUF_CHANGED);
			rbytes += len;
			frags += fl != 0;
		}
		if (pm_likely(frags == 0)) {
			/* No chain in this run: every slot is a whole packet. */
			pkts += r;
			bytes += rbytes;
			done_bytes = bytes;
			end = pm_ring_add(j, r, n);
		} else {
			/* Chains: a packet ends at a slot without NS_MOREFRAG. */
			for (uint32_t x = 0; x < r; x++) {
				bytes += rs[x].len;
				if (!(rs[x].flags & NS_MOREFRAG)) {
					end = pm_ring_add(j, x + 1, n);
					pkts++;
					done_bytes = bytes;
				}
			}
		}
		j = pm_ring_add(j, r, n);
		if (pm_unlikely(r != run)) {
			union pm_pipe_desc dd = { .word = PM_READ_ONCE(d[r].word) };
			uint32_t idx = dd.buf_idx, len = dd.len;
			int bad_idx = !pm_buf_ok(&bs, idx);
			pipe_report_proto(p, k, bad_idx ? "buffer index" : "length",
				     bad_idx ? idx : len);
			ret = -EPROTO;
			break;
		}
	}
	/* A chain as long as the whole ring can never complete: deliver
	 * it rather than wedge the pipe. */
	if (end == k->hwtail && j != end &&
	    pm_ring_dist(k->hwcur, j, n) == n - 1) {
		end = j;
		pkts++;
		done_bytes = bytes;
		pm_stat_add(&k->st->drop_too_long, 1);
	}
#ifdef PM_TEST_HOOKS
	if (pm_pipe_rx_stall && end != k->hwtail)
		raise(SIGSTOP);
#endif
	if (end != k->hwtail) {
		kp->gen++; /* the other binders reload (sync_release()) */
		k->hwtail = end;
		q->rx_hwtail = end;
		pm_count(k, pkts, done_bytes);
	}
	if (k->ring->flags & NR_TIMESTAMP)
		gettimeofday(&k->ring->ts, NULL);
	return ret;
}

int pm_pipe_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	return pipe_sync_turn(p, k, pipe_rxsync_locked);
}
