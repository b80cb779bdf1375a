/* SPDX-License-Identifier: BSD-2-Clause
 *
 * xdp: back end, the fast path: txsync and rxsync between the netmap
 * rings and the AF_XDP rings, the fill ring's stock, kicks, poll.
 * The buffer flow they keep is described at the top of xdp.c.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "xdp.h"

static inline void free_push(struct xdp_priv *xp, uint32_t idx)
{
	if (pm_likely(xp->nfree < xp->free_cap))
		xp->free[xp->nfree++] = idx;
}

/* Keep the fill ring stocked from the free list: the kernel can deliver
 * only into buffers it has. */
void pm_xdp_fill_refill(struct xdp_priv *xp, struct xdp_queue *q)
{
	uint32_t want = xp->fq_size - q->rx_inflight;
	if (want > xp->nfree)
		want = xp->nfree;
	if (want == 0)
		return;
	uint32_t n = pm_xq_prod_space(&q->fq, want);
	uint32_t prod = q->fq.cached_prod, posted = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t idx = xp->free[--xp->nfree];
		if (pm_unlikely(bit_test(xp->rx_own, idx) ||
				bit_test(xp->tx_own, idx)))
			continue; /* never hand the kernel a buffer twice */
		bit_set(xp->rx_own, idx);
		*pm_xq_addr(&q->fq, prod + posted) = (uint64_t)idx << xp->bs_shift;
		posted++;
	}
	q->fq.cached_prod = prod + posted;
	q->rx_inflight += posted;
	pm_xq_prod_submit(&q->fq);
}

/* Wake the driver for the fill ring (zero-copy) or run busy polling.
 * Returns false when the socket lost its device. */
static bool rx_kick(struct xdp_queue *q)
{
	if (recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL) < 0 &&
	    errno == ENXIO)
		q->dead = true;
	return !q->dead;
}

/* Give the kernel the descriptors queued in the TX ring. In copy mode
 * each sendto() transmits at most the socket's budget and says EAGAIN
 * when more is left, so go on while it makes progress. EAGAIN, EBUSY and
 * ENOBUFS leave what was not sent in the ring: nothing is lost, the next
 * sync or poll kicks again. Returns 0, or -ENODEV when the device is
 * gone. */
static int tx_kick(struct pktmap_port *p, struct xdp_queue *q)
{
	uint32_t pending = pm_xq_prod_pending(&q->tx);
	for (int tries = 0; pending && tries < 64; tries++) {
		if (q->zc && !pm_xq_needs_wakeup(&q->tx))
			return 0;
		if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			return 0;
		int err = errno;
		uint32_t left = pm_xq_prod_pending(&q->tx);
		if (err == EAGAIN || err == EBUSY) {
			if (left >= pending)
				return 0; /* no room in the kernel: later */
			pending = left;
			continue;
		}
		if (err == ENOBUFS || err == EINTR)
			return 0;
		if (err == ENXIO || err == ENODEV) {
			q->dead = true;
			pm_xdp_queue_gone(p, q);
			return -ENODEV;
		}
		pm_log_ratelimited(p, &p->rl_ring, "%s: queue %u: sendto: %s: "
				   "frames stay queued", p->name, q->qid,
				   strerror(err));
		return 0;
	}
	return 0;
}

/* Multi-buffer: of the `avail` descriptors that fit, keep only whole
 * frames (a frame is never split across syncs). A frame longer than the
 * whole ring could never be delivered: its descriptors are consumed, its
 * buffers recycled, and it is counted as too long. */
static uint32_t rx_whole_frames(struct pm_kring *k, struct xdp_priv *xp,
				struct xdp_queue *q, uint32_t avail,
				bool ring_empty)
{
	uint32_t cons = q->rx.cached_cons, whole = 0;
	for (uint32_t i = 0; i < avail; i++)
		if (!(pm_xq_desc(&q->rx, cons + i)->options & XDP_PKT_CONTD))
			whole = i + 1;
	if (whole || !ring_empty || avail == 0)
		return whole;
	uint32_t all = pm_xq_cons_avail(&q->rx, UINT32_MAX), i = 0;
	for (; i < all; i++) {
		const struct xdp_desc *d = pm_xq_desc(&q->rx, cons + i);
		uint64_t idx = d->addr >> xp->bs_shift;
		if (idx >= 2 && idx < xp->nbufs && bit_test(xp->rx_own, (uint32_t)idx)) {
			bit_clear(xp->rx_own, (uint32_t)idx);
			q->rx_inflight--;
			free_push(xp, (uint32_t)idx);
		}
		if (!(d->options & XDP_PKT_CONTD)) {
			i++;
			pm_stat_add(&k->st->drop_too_long, 1);
			break;
		}
	}
	q->rx.cached_cons = cons + i;
	pm_xq_cons_release(&q->rx);
	return 0;
}

/* Receive: release [hwcur, head) (the slots keep their buffers), then
 * swap newly arrived frames into [hwtail, hwcur - 1). */
int pm_xdp_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct xdp_priv *xp = p->priv;
	struct xdp_queue *q = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, shift = xp->bs_shift;
	const uint32_t usable = p->bs.usable, nbufs = xp->nbufs;

	if (pm_unlikely(q->dead)) {
		k->hwcur = k->rhead;
		return 0; /* the end of the source: EOF is set */
	}
	k->hwcur = k->rhead;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, k->hwtail, n);
	uint32_t got = pm_xq_cons_avail(&q->rx, space);
	uint32_t j = k->hwtail, cons = q->rx.cached_cons;
	uint64_t pkts = 0, bytes = 0;
	if (xp->sg)
		got = rx_whole_frames(k, xp, q, got, space == n - 1);

	for (uint32_t i = 0; i < got; i++) {
		const struct xdp_desc *d = pm_xq_desc(&q->rx, cons + i);
		uint64_t addr = d->addr;
		uint32_t len = d->len;
		uint64_t idx = addr >> shift;
		uint32_t ofs = (uint32_t)addr & (xp->buf_size - 1);
		if (pm_unlikely(idx < 2 || idx >= nbufs ||
				!bit_test(xp->rx_own, (uint32_t)idx))) {
			xp->bad_desc++; /* not a buffer we gave the kernel */
			continue;
		}
		bit_clear(xp->rx_own, (uint32_t)idx);
		q->rx_inflight--;
		uint32_t contd = d->options & XDP_PKT_CONTD;
		if (pm_unlikely(ofs != PM_XDP_HEADROOM || len > usable ||
				(contd && !xp->sg))) {
			xp->bad_desc++;
			free_push(xp, (uint32_t)idx);
			continue;
		}
		struct netmap_slot *s = &ring->slot[j];
		uint32_t old = s->buf_idx;
		/* The slot's buffer (ours since it was released, perhaps
		 * swapped by the application) feeds the fill ring. */
		if (pm_likely(pm_buf_ok(&p->bs, old) && !bit_test(xp->rx_own, old) &&
			      !bit_test(xp->tx_own, old)))
			free_push(xp, old);
		else
			pm_slot_reject(p, k, j, old, s->len, PM_SLOT_BAD_IDX);
		s->buf_idx = (uint32_t)idx;
		s->len = (uint16_t)len;
		s->flags = contd ? NS_MOREFRAG : 0;
		j = j + 1 == n ? 0 : j + 1;
		pkts += !contd;
		bytes += len;
	}
	if (got) {
		q->rx.cached_cons = cons + got;
		pm_xq_cons_release(&q->rx);
	}
	k->hwtail = j;
	pm_count(k, pkts, bytes);
	pm_xdp_fill_refill(xp, q);
	if (xp->busy_poll || (got == 0 && pm_xq_needs_wakeup(&q->fq)))
		(void)rx_kick(q);
	if (pkts && (ring->flags & NR_TIMESTAMP))
		gettimeofday(&ring->ts, NULL);
	return 0;
}

/* One buffer of a frame to send. */
struct tx_frag {
	uint32_t idx, len;
};

/* Reap completions: the buffers are the kernel's no more. */
static void tx_reap(struct xdp_priv *xp, struct xdp_queue *q)
{
	uint32_t n = pm_xq_cons_avail(&q->cq, q->cq.size);
	if (n == 0)
		return;
	uint32_t cons = q->cq.cached_cons;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t idx = *pm_xq_addr(&q->cq, cons + i) >> xp->bs_shift;
		if (pm_likely(idx < xp->nbufs && bit_test(xp->tx_own, (uint32_t)idx))) {
			bit_clear(xp->tx_own, (uint32_t)idx);
			q->tx_inflight--;
		} else {
			xp->bad_desc++;
		}
	}
	q->cq.cached_cons = cons + n;
	pm_xq_cons_release(&q->cq);
}

/* What one txsync has posted so far. */
struct tx_batch {
	uint32_t room;          /* TX descriptors free at the start */
	uint32_t prod, posted;  /* the TX ring's producer, descriptors posted */
	uint64_t pkts, bytes;
};

/* Post the one-buffer frame of slot `at`. */
static inline void tx_post_one(struct xdp_priv *xp, struct xdp_queue *q,
			       struct tx_batch *b, uint32_t at,
			       uint32_t idx, uint32_t len)
{
	struct xdp_desc *d = pm_xq_desc(&q->tx, b->prod + b->posted);
	d->addr = ((uint64_t)idx << xp->bs_shift) + PM_XDP_HEADROOM;
	d->len = len;
	d->options = 0;
	bit_set(xp->tx_own, idx);
	q->tx_sent[at] = idx;
	b->posted++;
	b->pkts++;
	b->bytes += len;
}

/* Post one frame of nf buffers from slot `at` on. */
static void tx_post(struct xdp_priv *xp, struct xdp_queue *q, uint32_t n,
		    struct tx_batch *b, uint32_t at,
		    const struct tx_frag *fr, uint32_t nf, uint32_t flen)
{
	for (uint32_t f = 0; f < nf; f++) {
		struct xdp_desc *d = pm_xq_desc(&q->tx, b->prod + b->posted);
		d->addr = ((uint64_t)fr[f].idx << xp->bs_shift) + PM_XDP_HEADROOM;
		d->len = fr[f].len;
		d->options = f + 1 < nf ? XDP_PKT_CONTD : 0;
		bit_set(xp->tx_own, fr[f].idx);
		q->tx_sent[at] = fr[f].idx;
		at = at + 1 == n ? 0 : at + 1;
		b->posted++;
	}
	b->pkts++;
	b->bytes += flen;
}

/* One frame from slot i: a slot, or a chain of slots flagged NS_MOREFRAG
 * but the last, each read once. Posts it, or rejects or drops it; returns
 * the slot after it, or i when it must wait (the rest of the chain is not
 * submitted yet, or no room for the whole frame). */
static uint32_t tx_frame(struct pktmap_port *p, struct pm_kring *k,
			 struct tx_batch *b, uint32_t i, uint32_t head)
{
	struct xdp_priv *xp = p->priv;
	struct xdp_queue *q = k->priv;
	const uint32_t n = k->nslots;
	struct tx_frag fr[XDP_MAX_FRAGS];
	uint32_t nf = 0, e = i, flen = 0;
	bool whole = false;
	enum pm_slot_verdict v = PM_SLOT_OK;
	uint32_t bad_at = i, bad_idx = 0, bad_len = 0;
	do {
		const struct netmap_slot *s = &k->ring->slot[e];
		uint32_t idx = s->buf_idx, len = s->len, fl = s->flags;
		q->tx_sent[e] = 0;
		if (nf < XDP_MAX_FRAGS) {
			fr[nf].idx = idx;
			fr[nf].len = len;
		}
		enum pm_slot_verdict sv = pm_slot_check(&p->bs, idx, len, 1);
		if (sv == PM_SLOT_OK &&
		    (bit_test(xp->tx_own, idx) || bit_test(xp->rx_own, idx)))
			sv = PM_SLOT_BAD_IDX; /* the kernel holds that buffer */
		if (sv != PM_SLOT_OK && v == PM_SLOT_OK) {
			v = sv;
			bad_at = e, bad_idx = idx, bad_len = len;
		}
		nf++;
		flen += len;
		e = e + 1 == n ? 0 : e + 1;
		whole = !(fl & NS_MOREFRAG);
	} while (!whole && e != head);
	if (!whole && pm_ring_dist(i, head, n) < n - 1)
		return i; /* the rest of the chain is not submitted yet */
	if (whole && v == PM_SLOT_OK && nf <= XDP_MAX_FRAGS &&
	    (nf == 1 || xp->sg) && nf > b->room - b->posted)
		return i; /* no room for the whole frame: later */
	if (pm_unlikely(v != PM_SLOT_OK))
		pm_slot_reject(p, k, bad_at, bad_idx, bad_len, v);
	else if (pm_unlikely(!whole || nf > XDP_MAX_FRAGS || (nf > 1 && !xp->sg)))
		pm_stat_add(&k->st->drop_too_long, 1); /* a chain this port cannot send */
	else if (pm_xdp_above_mtu(xp, (const uint8_t *)pm_region_buf(&p->region,
								     fr[0].idx),
				  fr[0].len, flen))
		pm_stat_add(&k->st->drop_too_long, 1);
	else
		tx_post(xp, q, n, b, i, fr, nf, flen);
	return e;
}

/* Transmit: post [hwcur, head) with each slot's own buffer; a slot comes
 * back to the application (tail passes it) once its buffer completed.
 * The common frame (one slot, a valid buffer the kernel does not hold,
 * within the MTU, room) is posted inline; anything else goes through tx_frame(). */
int pm_xdp_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct xdp_priv *xp = p->priv;
	struct xdp_queue *q = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, head = k->rhead;
	uint32_t i = k->hwcur;
	int ret = 0;

	if (pm_unlikely(q->dead))
		return -ENODEV;
	pm_xdp_tx_tick(xp, q);
	tx_reap(xp, q);
	while (q->tx_done != i && !bit_test(xp->tx_own, q->tx_sent[q->tx_done]))
		q->tx_done = q->tx_done + 1 == n ? 0 : q->tx_done + 1;

	struct tx_batch b = {
		.room = pm_xq_prod_space(&q->tx, pm_ring_dist(i, head, n)),
		.prod = q->tx.cached_prod,
	};
	/* The inline path's bound is the buffer's or the MTU's, the lesser,
	 * in the slot checker's one length compare; a longer frame goes
	 * through tx_frame(), which checks each (and counts what the MTU
	 * refuses as too long). */
	struct pm_bufspace bs = p->bs;
	const uint32_t most = atomic_load_explicit(PM_ATOMIC(&xp->mtu),
						   memory_order_relaxed) + 14;
	if (most < bs.usable)
		bs.usable = most;
	while (i != head) {
		const struct netmap_slot *s = &ring->slot[i];
		uint32_t idx = s->buf_idx, len = s->len;
		if (pm_likely(!(s->flags & NS_MOREFRAG) && b.posted < b.room &&
			      pm_slot_check(&bs, idx, len, 1) == PM_SLOT_OK &&
			      !bit_test(xp->tx_own, idx) &&
			      !bit_test(xp->rx_own, idx))) {
			tx_post_one(xp, q, &b, i, idx, len);
			i = i + 1 == n ? 0 : i + 1;
			continue;
		}
		uint32_t e = tx_frame(p, k, &b, i, head);
		if (e == i)
			break;
		i = e;
	}
	if (b.posted) {
		q->tx.cached_prod = b.prod + b.posted;
		q->tx_inflight += b.posted;
		pm_xq_prod_submit(&q->tx);
	}
	if (b.posted || pm_xq_prod_pending(&q->tx))
		ret = tx_kick(p, q);
	/* Rejected slots before anything in flight are done at once. */
	while (q->tx_done != i && !bit_test(xp->tx_own, q->tx_sent[q->tx_done]))
		q->tx_done = q->tx_done + 1 == n ? 0 : q->tx_done + 1;
	k->hwcur = i;
	k->hwtail = q->tx_done == 0 ? n - 1 : q->tx_done - 1;
	pm_count(k, b.pkts, b.bytes);
	return ret;
}

/* Arm one socket for a sleep: kick what waits for the kernel, then put
 * the socket in the epoll set for what the caller waits for. Returns
 * true when it joined the set just now (a transmitting socket). */
static bool arm_queue(struct pktmap_port *p, struct xdp_priv *xp, uint32_t j,
		      short events, int *ready)
{
	struct xdp_queue *q = &xp->q[j];
	uint32_t want = EPOLLET;
	if ((events & POLLIN) && xp->rx) {
		want |= EPOLLIN;
		/* Also the only way to learn that the device is gone: an
		 * unbound socket polls as idle, not as an error. */
		if (!rx_kick(q)) {
			pm_xdp_queue_gone(p, q);
			*ready = 1;
		}
	}
	if ((events & POLLOUT) && xp->tx) {
		want |= EPOLLOUT;
		if (pm_xq_prod_pending(&q->tx))
			(void)tx_kick(p, q);
	}
	if (want == q->ep_events)
		return false;
	struct epoll_event ev = { .events = want, .data.u32 = j };
	int op = q->ep_events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(xp->epfd, op, q->fd, &ev) != 0)
		return false;
	q->ep_events = want;
	return op == EPOLL_CTL_ADD;
}

/* Anything to take from one socket right now? */
static bool queue_ready(const struct xdp_priv *xp, const struct xdp_queue *q,
			short events)
{
	if ((q->ep_events & EPOLLIN) &&
	    atomic_load_explicit(PM_ATOMIC(q->rx.producer),
				 memory_order_acquire) != q->rx.cached_cons)
		return true;
	/* Live-frames TX frees its slots within the sync. */
	if ((events & POLLOUT) && xp->live)
		return true;
	if ((q->ep_events & EPOLLOUT) && q->tx_inflight) {
		if (atomic_load_explicit(PM_ATOMIC(q->cq.producer),
					 memory_order_acquire) !=
		    q->cq.cached_cons)
			return true;
		/* Zero-copy drivers publish completions without waking the
		 * socket: do not sleep on them. */
		if (q->zc)
			return true;
	}
	return false;
}

/* Take what epoll has reported; true if a socket reported input. */
static bool drain_events(struct xdp_priv *xp)
{
	struct epoll_event ev[16];
	bool in = false;
	int n;
	do {
		n = epoll_wait(xp->epfd, ev, 16, 0);
		for (int i = 0; i < n; i++)
			in |= (ev[i].events & EPOLLIN) != 0;
	} while (n == 16);
	return in;
}

/* Before sleeping: make the kernel run what waits for a kick, arm epoll
 * (edge-triggered: the socket's wake-ups on arrival and completion are
 * the events), then look once more. A socket that joins the set now is
 * reported ready at once (a TX ring with room is writable): that report
 * is taken here, so the sleep waits for the next wake-up; input it
 * reports counts. */
int pm_xdp_poll_arm(struct pktmap_port *p, short events)
{
	struct xdp_priv *xp = p->priv;
	int ready = 0;
	bool joined = false;
	for (uint32_t j = 0; j < xp->hi - xp->lo; j++)
		joined |= arm_queue(p, xp, j, events, &ready);
	if (joined && drain_events(xp) && (events & POLLIN))
		ready = 1;
	for (uint32_t j = 0; j < xp->hi - xp->lo; j++)
		if (queue_ready(xp, &xp->q[j], events))
			ready = 1;
	if (xp->host && (events & POLLIN) && xp->rx &&
	    pm_xdp_host_rx_ready(&xp->hostr))
		ready = 1;
	return ready;
}

/* After waking: consume the edge-triggered events; a transmitting
 * socket leaves the set (publish_fd says why). */
void pm_xdp_poll_disarm(struct pktmap_port *p, short events)
{
	(void)events;
	struct xdp_priv *xp = p->priv;
	(void)drain_events(xp);
	if (!xp->tx)
		return;
	for (uint32_t j = 0; j < xp->hi - xp->lo; j++) {
		struct xdp_queue *q = &xp->q[j];
		if (q->ep_events &&
		    epoll_ctl(xp->epfd, EPOLL_CTL_DEL, q->fd, NULL) == 0)
			q->ep_events = 0;
	}
}

/* pktmap_fd(). The kernel keeps an AF_XDP socket's readiness level:
 * readable while its RX ring holds descriptors an rxsync has not taken
 * (rxsync releases what it takes at once), writable while its TX ring is
 * less than half full. A port of one socket hands out that socket; one
 * of several (or with host rings) gets a level-triggered epoll set of
 * them, readable when one has frames (a TX-only port: when one has room),
 * plus the host rings' ring buffer, readable while it holds frames. The
 * set is not the edge-triggered one pktmap_poll() sleeps on. */
int pm_xdp_event_fd(struct pktmap_port *p)
{
	struct xdp_priv *xp = p->priv;
	uint32_t nb = xp->hi - xp->lo;
	if (nb == 1 && !xp->host)
		return xp->q[0].fd;
	xp->evfd = epoll_create1(EPOLL_CLOEXEC);
	if (xp->evfd < 0)
		return -errno;
	for (uint32_t j = 0; j < nb; j++) {
		struct epoll_event ev = { .events = xp->rx ? EPOLLIN : EPOLLOUT,
					  .data.u32 = j };
		if (epoll_ctl(xp->evfd, EPOLL_CTL_ADD, xp->q[j].fd, &ev) != 0)
			return -errno;
	}
	if (xp->host) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
		if (epoll_ctl(xp->evfd, EPOLL_CTL_ADD, xp->hostr.rb_fd, &ev) != 0)
			return -errno;
	}
	return xp->evfd;
}

void pm_xdp_stats(const struct pktmap_port *p, struct pktmap_stats *st)
{
	struct xdp_priv *xp = p->priv;
	/* rx_fill_ring_empty_descs is left out: in copy mode the same loss
	 * is also counted in rx_dropped, and in zero-copy mode an empty fill
	 * ring shows as the NIC's own drops. */
	for (uint32_t j = 0; j < xp->nsock; j++) {
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);
		memset(&xs, 0, sizeof(xs));
		if (getsockopt(xp->q[j].fd, SOL_XDP, XDP_STATISTICS, &xs, &len) == 0)
			st->drop_backend += xs.rx_dropped + xs.rx_ring_full +
					    xs.rx_invalid_descs + xs.tx_invalid_descs;
	}
	st->drop_backend += xp->bad_desc + xp->hostr.drops + pm_xdp_live_drops(xp);
}
