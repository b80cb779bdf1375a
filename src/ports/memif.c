// SPDX-License-Identifier: BSD-2-Clause
/*
 * memif:SOCKET[/ID]: a memif interface (VPP, DPDK's net_memif, libmemif)
 * as a pktmap port. Netmap's TX ring r is memif queue r in our sending
 * direction (C2S for a client, S2C for a server), RX ring r the other.
 *
 * Client (the default role): the memory is ours. The buffer pool is a
 * sealed memfd handed to the server as region 1, so no frame is copied
 * by us: a TX slot's buffer goes into a C2S descriptor as it is and comes
 * back to the slot when the server moves tail; an RX slot receives the
 * buffer the server filled (swapped with a free one, NS_BUF_CHANGED) and
 * the free one is posted again at once. Mode "zerocopy".
 *
 * Server (@conf:role=server): the memory is the client's. Every frame is
 * copied once, out of or into the client's buffers, after its descriptor
 * was read once and checked: region given, offset + length inside it,
 * flags known, length fitting our buffer (RX) or the copy fitting the
 * buffer the client posted (TX). The copy is what makes a frame immune to
 * a client rewriting it after the check. Mode "copy".
 *
 * A descriptor the peer got wrong is dropped and counted (drop_invalid);
 * a ring index that cannot be (tail past head, head more than a ring
 * ahead) disconnects the peer at the next look at the control channel.
 * Either way one rate-limited log line says what the peer did.
 *
 * Connection life cycle: see memif_ctl.c. While no peer is connected, TX
 * slots stay pending (backpressure: nothing is dropped) and RX is empty;
 * frames in flight when a peer goes (submitted, not taken) are counted
 * in drop_backend and logged.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "memif.h"
#include "util.h"

#define MIF_CHAIN_MAX 64 /* descriptors or slots of one frame, at most */

/* A ring index the peer wrote that cannot be: log, and have the control
 * channel disconnect the peer at its next look. Returns 0: the peer's
 * lie ends its connection, not the application's use of the port (which
 * waits for the next peer); the log line and peer_errors report it. */
static int mif_fault(struct pktmap_port *p, struct pm_kring *k, const char *what,
		     unsigned a, unsigned b)
{
	struct mif_priv *mi = mif(p);
	atomic_store_explicit(&mi->ctl_due, 1, memory_order_relaxed);
	/* One line a connection: the disconnect follows. */
	if (!atomic_exchange_explicit(&mi->fault, 1, memory_order_relaxed))
		pm_log(p, PKTMAP_LOG_WARN, "%s: %s ring %u: the peer broke the "
		       "memif protocol: %s (%u, %u): disconnecting it", p->name,
		       k->tx ? "TX" : "RX", k->ring->ringid, what, a, b);
	return 0;
}

static void bad_desc(struct pktmap_port *p, struct pm_kring *k, const char *what,
		     uint32_t region, uint32_t ofs, uint32_t len)
{
	struct mif_priv *mi = mif(p);
	pm_stat_inc(&k->st->drop_invalid, 1);
	pm_log_ratelimited(p, &mi->rl, "%s: %s ring %u: dropped a descriptor of "
			   "the peer: %s (region %u, offset %u, length %u)",
			   p->name, k->tx ? "TX" : "RX", k->ring->ringid, what,
			   region, ofs, len);
}

/* Wake the peer's reader if it sleeps. The fence orders our index store
 * before the load of its flag (the reader stores the flag, fences, and
 * looks at the index again). */
static void kick(const struct mif_q *q)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (q->ifd >= 0 && !(PM_READ_ONCE(q->r->flags) & MIF_RING_MASK_INT)) {
		uint64_t one = 1;
		ssize_t w = write(q->ifd, &one, sizeof(one));
		(void)w;
	}
}

/* The end of every sync: publish q->mine, the index this side writes
 * (head of a client, tail of a server), when it moved from `from`;
 * release: the descriptors written, or the buffers read, before it are
 * done before the peer sees it move (pairs with the peer's acquire of
 * that index). A writer (`wake`) then wakes the peer's reader. Last,
 * count what went through. */
static void sync_end(struct pm_kring *k, const struct mif_q *q, uint16_t *idx,
		     uint16_t from, bool wake, uint64_t pkts, uint64_t bytes)
{
	if (q->mine != from) {
		atomic_store_explicit(PM_ATOMIC(idx), q->mine,
				      memory_order_release);
		if (wake)
			kick(q);
	}
	pm_count(k, pkts, bytes);
}

/* The frame starting at slot i: its slots' buffers and lengths, checked,
 * into idx[]/len[]. Returns the slot after its last one in *end and the
 * slot count, 0 when the frame is not all submitted yet (up to head), or
 * -1 when a slot is bad (rejected and counted; *end skips the frame). */
static int frame_take(struct pktmap_port *p, struct pm_kring *k, uint32_t i,
		      uint32_t head, uint32_t *end, uint32_t *idx, uint32_t *len,
		      uint32_t *bytes)
{
	uint32_t n = k->nslots, c = 0, b = 0;
	bool bad = false, last = false;
	while (i != head && !last) {
		struct netmap_slot *s = &k->ring->slot[i];
		uint32_t x = PM_READ_ONCE(s->buf_idx), l = PM_READ_ONCE(s->len);
		last = !(PM_READ_ONCE(s->flags) & NS_MOREFRAG) || c + 1 == n - 1;
		enum pm_slot_verdict v = pm_slot_check(&p->bs, x, l, 1);
		if (pm_unlikely(v != PM_SLOT_OK)) {
			pm_slot_reject(p, k, i, x, l, v);
			bad = true;
		} else if (c < MIF_CHAIN_MAX) {
			idx[c] = x;
			len[c] = l;
		}
		c++;
		b += l;
		i = i + 1 == n ? 0 : i + 1;
	}
	if (!last)
		return 0;
	*end = i;
	*bytes = b;
	if (!bad && c > MIF_CHAIN_MAX) {
		pm_stat_inc(&k->st->drop_too_long, 1);
		return -1;
	}
	return bad ? -1 : (int)c;
}

/* ------------------------------------------------------------------ */
/* Client: our buffers go out in descriptors, zero copy. */

static int cli_txsync(struct pktmap_port *p, struct pm_kring *k, struct mif_q *q)
{
	struct mif_ring *r = q->r;
	/* acquire: pairs with the server's release of tail; the buffers
	 * before it are ours again. */
	uint16_t tail = atomic_load_explicit(PM_ATOMIC(&r->tail),
					     memory_order_acquire);
	uint16_t inflight = (uint16_t)(q->mine - q->seen);
	if (pm_unlikely((uint16_t)(tail - q->seen) > inflight))
		return mif_fault(p, k, "tail moved past head", tail, q->mine);
	q->seen = tail;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead, end, bytes;
	uint32_t room = q->size - (uint16_t)(q->mine - q->seen);
	uint32_t idx[MIF_CHAIN_MAX], len[MIF_CHAIN_MAX];
	uint16_t mine = q->mine;
	uint64_t pkts = 0, nbytes = 0;
	while (i != head) {
		int c = frame_take(p, k, i, head, &end, idx, len, &bytes);
		if (c == 0 || (c > 0 && (uint32_t)c > room))
			break;
		if (c > 0) {
			for (int j = 0; j < c; j++) {
				uint32_t pos = mine & q->mask;
				struct mif_desc *d = &r->desc[pos];
				d->flags = j + 1 < c ? MIF_DESC_NEXT : 0;
				d->region = 1;
				d->length = len[j];
				d->offset = mif_buf_ofs(p, idx[j]);
				d->metadata = 0;
				q->slot_of[pos] = pm_ring_add(i, (uint32_t)j, n);
				mine++;
			}
			room -= (uint32_t)c;
			pkts++;
			nbytes += bytes;
		}
		i = end;
	}
	k->hwcur = i;
	uint16_t from = q->mine;
	q->mine = mine;
	sync_end(k, q, &r->head, from, true, pkts, nbytes);
	/* Slots before the first descriptor in flight are free again. */
	uint32_t upto = q->mine != q->seen ? q->slot_of[q->seen & q->mask] : k->hwcur;
	k->hwtail = upto == 0 ? n - 1 : upto - 1;
	return 0;
}

static void cli_post(struct pktmap_port *p, struct mif_q *q, uint32_t pos)
{
	struct mif_desc *d = &q->r->desc[pos];
	d->flags = 0;
	d->region = 1;
	d->length = p->bs.usable;
	d->offset = mif_buf_ofs(p, q->bufs[pos]);
	d->metadata = 0;
}

static int cli_rxsync(struct pktmap_port *p, struct pm_kring *k, struct mif_q *q)
{
	int ret = pm_rx_release(p, k);
	struct mif_ring *r = q->r;
	/* acquire: pairs with the server's release of tail (frames written
	 * into our buffers before). */
	uint16_t tail = atomic_load_explicit(PM_ATOMIC(&r->tail),
					     memory_order_acquire);
	uint16_t avail = (uint16_t)(tail - q->seen);
	if (pm_unlikely(avail > (uint16_t)(q->mine - q->seen)))
		return mif_fault(p, k, "tail moved past the buffers posted", tail,
				 q->mine);
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, j = k->hwtail;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, j, n);
	uint64_t pkts = 0, bytes = 0;
	uint16_t from = q->mine;
	while (avail && space) {
		uint32_t pos = q->seen & q->mask;
		struct mif_desc *d = &r->desc[pos];
		uint16_t fl = PM_READ_ONCE(d->flags);
		uint32_t len = PM_READ_ONCE(d->length);
		if (pm_unlikely((fl & ~MIF_DESC_NEXT) ||
				pm_desc_check(&p->bs, len) != PM_SLOT_OK)) {
			bad_desc(p, k, "bad flags or length", 1, 0, len);
		} else {
			struct netmap_slot *s = &ring->slot[j];
			uint32_t old = PM_READ_ONCE(s->buf_idx);
			if (pm_unlikely(!pm_buf_ok(&p->bs, old))) {
				pm_slot_reject(p, k, j, old, 0, PM_SLOT_BAD_IDX);
				ret = -EINVAL;
				break;
			}
			s->buf_idx = q->bufs[pos];
			s->len = (uint16_t)len;
			s->flags = NS_BUF_CHANGED |
				   ((fl & MIF_DESC_NEXT) ? NS_MOREFRAG : 0);
			q->bufs[pos] = old;
			j = j + 1 == n ? 0 : j + 1;
			space--;
			pkts += !(fl & MIF_DESC_NEXT);
			bytes += len;
		}
		cli_post(p, q, pos); /* the free buffer goes straight back */
		q->seen++;
		q->mine++;
		avail--;
	}
	k->hwtail = j;
	sync_end(k, q, &r->head, from, false, pkts, bytes); /* reposted */
	return ret;
}

/* ------------------------------------------------------------------ */
/* Server: the client's buffers, every descriptor checked, one copy. */

/* The peer's buffer a descriptor names, or NULL when it lies outside the
 * regions the peer gave. */
static char *peer_buf(const struct mif_priv *mi, uint32_t region, uint32_t ofs,
		      uint32_t len)
{
	if (region >= mi->nreg || (uint64_t)ofs + len > mi->reg[region].size)
		return NULL;
	return mi->reg[region].base + ofs;
}

static int srv_rxsync(struct pktmap_port *p, struct pm_kring *k, struct mif_q *q)
{
	struct mif_priv *mi = mif(p);
	int ret = pm_rx_release(p, k);
	struct mif_ring *r = q->r;
	/* acquire: pairs with the client's release of head. */
	uint16_t head = atomic_load_explicit(PM_ATOMIC(&r->head),
					     memory_order_acquire);
	uint16_t avail = (uint16_t)(head - q->mine);
	if (pm_unlikely(avail > q->size))
		return mif_fault(p, k, "head more than a ring ahead of tail", head,
				 q->mine);
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, j = k->hwtail;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, j, n);
	uint64_t pkts = 0, bytes = 0;
	uint16_t from = q->mine;
	while (avail && space) {
		struct mif_desc *d = &r->desc[q->mine & q->mask];
		uint16_t fl = PM_READ_ONCE(d->flags);
		uint32_t reg = PM_READ_ONCE(d->region), ofs = PM_READ_ONCE(d->offset);
		uint32_t len = PM_READ_ONCE(d->length);
		const char *src = peer_buf(mi, reg, ofs, len);
		struct netmap_slot *s = &ring->slot[j];
		uint32_t idx = PM_READ_ONCE(s->buf_idx);
		if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
			pm_slot_reject(p, k, j, idx, 0, PM_SLOT_BAD_IDX);
			ret = -EINVAL;
			break;
		}
		q->mine++;
		avail--;
		if (pm_unlikely(!src || (fl & ~MIF_DESC_NEXT) || len == 0)) {
			bad_desc(p, k, "outside the peer's regions, or bad flags",
				 reg, ofs, len);
			continue;
		}
		if (pm_unlikely(pm_desc_check(&p->bs, len) != PM_SLOT_OK)) {
			/* len is not 0 (above): too long, a drop */
			pm_stat_inc(&k->st->drop_too_long, 1);
			continue;
		}
		memcpy(pm_region_buf(&p->region, idx), src, len);
		s->len = (uint16_t)len;
		s->flags = (fl & MIF_DESC_NEXT) ? NS_MOREFRAG : 0;
		j = j + 1 == n ? 0 : j + 1;
		space--;
		pkts += !(fl & MIF_DESC_NEXT);
		bytes += len;
	}
	k->hwtail = j;
	sync_end(k, q, &r->tail, from, false, pkts, bytes); /* read, copied */
	return ret;
}

/* Copy one frame (c slots) into the buffers the client posted from
 * q->mine on, at most `avail` of them. Returns the descriptors used, 0
 * when they are too few (nothing written), -1 when one lies outside the
 * client's regions. Each posted descriptor is read once. */
static int srv_put_frame(struct pktmap_port *p, struct mif_q *q, uint32_t avail,
			 const uint32_t *idx, const uint32_t *len, int c)
{
	struct mif_priv *mi = mif(p);
	char *dst[MIF_CHAIN_MAX];
	uint32_t cap[MIF_CHAIN_MAX], total = 0, have = 0, nd = 0;
	for (int j = 0; j < c; j++)
		total += len[j];
	while (have < total) {
		if (nd == avail || nd == MIF_CHAIN_MAX)
			return 0;
		struct mif_desc *d = &q->r->desc[(uint16_t)(q->mine + nd) & q->mask];
		uint32_t reg = PM_READ_ONCE(d->region), ofs = PM_READ_ONCE(d->offset);
		cap[nd] = PM_READ_ONCE(d->length);
		dst[nd] = peer_buf(mi, reg, ofs, cap[nd]);
		if (!dst[nd] || cap[nd] == 0)
			return -1;
		have += cap[nd++];
	}
	uint32_t di = 0, dofs = 0;
	for (int j = 0; j < c; j++) {
		const char *src = pm_region_buf(&p->region, idx[j]);
		uint32_t left = len[j];
		while (left) {
			uint32_t m = cap[di] - dofs < left ? cap[di] - dofs : left;
			memcpy(dst[di] + dofs, src, m);
			src += m;
			left -= m;
			dofs += m;
			if (dofs == cap[di] && di + 1 < nd) {
				struct mif_desc *d =
					&q->r->desc[(uint16_t)(q->mine + di) & q->mask];
				PM_WRITE_ONCE(d->length, dofs);
				PM_WRITE_ONCE(d->flags, MIF_DESC_NEXT);
				di++;
				dofs = 0;
			}
		}
	}
	struct mif_desc *d = &q->r->desc[(uint16_t)(q->mine + di) & q->mask];
	PM_WRITE_ONCE(d->length, dofs);
	PM_WRITE_ONCE(d->flags, 0);
	return (int)(di + 1);
}

static int srv_txsync(struct pktmap_port *p, struct pm_kring *k, struct mif_q *q)
{
	struct mif_ring *r = q->r;
	/* acquire: pairs with the client's release of head (the buffers it
	 * posted). */
	uint16_t head = atomic_load_explicit(PM_ATOMIC(&r->head),
					     memory_order_acquire);
	uint16_t avail = (uint16_t)(head - q->mine);
	if (pm_unlikely(avail > q->size))
		return mif_fault(p, k, "head more than a ring ahead of tail", head,
				 q->mine);
	uint32_t n = k->nslots, i = k->hwcur, rhead = k->rhead, end, bytes;
	uint32_t idx[MIF_CHAIN_MAX], len[MIF_CHAIN_MAX];
	uint16_t mine0 = q->mine;
	uint64_t pkts = 0, nbytes = 0;
	int ret = 0;
	while (i != rhead) {
		int c = frame_take(p, k, i, rhead, &end, idx, len, &bytes);
		if (c == 0)
			break;
		if (c > 0) {
			int used = srv_put_frame(p, q, avail, idx, len, c);
			if (used == 0)
				break;
			if (used < 0) {
				mif_fault(p, k, "a posted buffer lies outside the "
					  "regions", q->mine, 0);
				break;
			}
			q->mine = (uint16_t)(q->mine + used);
			avail = (uint16_t)(avail - used);
			pkts++;
			nbytes += bytes;
		}
		i = end;
	}
	/* Copied frames free their slots at once; the room shown is the
	 * buffers the client has posted, so that what the application
	 * submits fits. Frames still pending (submitted while no peer was
	 * there, or chains longer than the buffers posted) leave no room:
	 * the application then waits for POLLOUT and its next txsync sends
	 * them, rather than waiting for input with frames stuck here. */
	uint32_t room = avail < n - 1 ? avail : n - 1;
	uint32_t pending = pm_ring_dist(i, rhead, n);
	if (pending)
		room = pending;
	k->hwcur = i;
	k->hwtail = pm_ring_add(i, room, n);
	sync_end(k, q, &r->tail, mine0, true, pkts, nbytes);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Locks, the control channel's turn, the sync entry points. */

static bool lock(atomic_flag *f)
{
	return !atomic_flag_test_and_set_explicit(f, memory_order_acquire);
}

static void unlock(atomic_flag *f)
{
	atomic_flag_clear_explicit(f, memory_order_release);
}

/* A server's sync that met (or followed) the loss of a page of the
 * peer's memory (mi->lost, set by the guard's SIGBUS handler): what it
 * read there is zeros, not the peer's, so it takes nothing: the RX ring
 * shows no new frame, TX frames stay pending (for the next peer). The
 * control channel disconnects the peer at its next look, with one log
 * line, counted in peer_errors. Returns 0, as mif_fault() does: a peer
 * that takes its memory back ends its connection, not the
 * application's use of the port, which waits for the next peer. */
static int region_lost(struct pktmap_port *p, struct pm_kring *k, uint32_t *cur,
		       uint32_t cur0, uint32_t tail0)
{
	struct mif_priv *mi = mif(p);
	if (cur)
		*cur = cur0;
	k->hwtail = tail0;
	atomic_store_explicit(&mi->ctl_due, 1, memory_order_relaxed);
	return 0;
}

/* From a sync holding its own direction's lock: give the control
 * channel its turn when due and the other direction is not running. */
static void maybe_service(struct pktmap_port *p, atomic_flag *other)
{
	struct mif_priv *mi = mif(p);
	if (pm_likely(!atomic_load_explicit(&mi->ctl_due,
					    memory_order_relaxed) &&
		      pm_clock_ms(CLOCK_MONOTONIC_COARSE) < atomic_load_explicit(
				PM_ATOMIC(&mi->next_service_ms),
				memory_order_relaxed)))
		return;
	if (!lock(other))
		return;
	mif_service(p);
	unlock(other);
}

/* Event-source mode: the writer kicks our RX eventfds on every burst and
 * the control socket wakes the loop too; each rxsync takes the kicks out
 * (so that the level-triggered fd is not readable for nothing) and looks
 * at the control channel. */
static void events_drain(struct pktmap_port *p, struct mif_q *q)
{
	struct mif_priv *mi = mif(p);
	uint64_t v;
	if (q->ifd >= 0) {
		ssize_t r = read(q->ifd, &v, sizeof(v));
		(void)r;
	}
	ssize_t r = read(mi->tfd, &v, sizeof(v));
	(void)r;
	atomic_store_explicit(&mi->ctl_due, 1, memory_order_relaxed);
}

static int memif_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct mif_priv *mi = mif(p);
	if (!lock(&mi->lk_tx))
		return 0; /* the RX thread is changing the connection */
	maybe_service(p, &mi->lk_rx);
	struct mif_q *q = &mi->q[k->id];
	int ret = 0;
	if (q->r) {
		uint32_t cur = k->hwcur, tail = k->hwtail;
		ret = mi->server ? srv_txsync(p, k, q) : cli_txsync(p, k, q);
		if (pm_unlikely(atomic_load_explicit(&mi->lost,
						     memory_order_relaxed)))
			ret = region_lost(p, k, &k->hwcur, cur, tail);
		if (k->hwcur != cur)
			atomic_store_explicit(PM_ATOMIC(&mi->backoff_us),
					      MIF_BACKOFF_MIN_US, memory_order_relaxed);
	}
	unlock(&mi->lk_tx);
	return ret;
}

static int memif_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct mif_priv *mi = mif(p);
	if (!lock(&mi->lk_rx))
		return 0;
	maybe_service(p, &mi->lk_tx);
	struct mif_q *q = &mi->q[k->id];
	int ret;
	if (pm_unlikely(mi->events))
		events_drain(p, q);
	if (q->r) {
		uint32_t tail = k->hwtail;
		ret = mi->server ? srv_rxsync(p, k, q) : cli_rxsync(p, k, q);
		if (pm_unlikely(atomic_load_explicit(&mi->lost,
						     memory_order_relaxed)))
			ret = region_lost(p, k, NULL, 0, tail);
		if (k->hwtail != tail)
			atomic_store_explicit(PM_ATOMIC(&mi->backoff_us),
					      MIF_BACKOFF_MIN_US, memory_order_relaxed);
	} else {
		ret = pm_rx_release(p, k);
	}
	unlock(&mi->lk_rx);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Attach and detach the rings: the control channel's hooks (mi->attach,
 * mi->detach), called with both locks held. */

static void rings_attach(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	uint64_t rb = mif_ring_bytes(mi->run_log2);
	for (uint32_t i = 0; i < p->ntx + p->nrx; i++) {
		struct mif_q *q = &mi->q[i];
		bool rx = i >= p->ntx;
		uint32_t r = rx ? i - p->ntx : i;
		bool c2s = mi->server ? rx : !rx;
		if (r >= (c2s ? mi->run_c2s : mi->run_s2c))
			continue; /* the peer runs fewer queues */
		if (mi->server) {
			struct mif_ring_req *rq = &mi->req[!c2s][r];
			q->r = (struct mif_ring *)(mi->reg[rq->region].base + rq->offset);
			q->ifd = rq->fd;
			rq->fd = -1;
			/* As every server does: indices start at 0. */
			atomic_store_explicit(PM_ATOMIC(&q->r->head), 0,
					      memory_order_relaxed);
			atomic_store_explicit(PM_ATOMIC(&q->r->tail), 0,
					      memory_order_relaxed);
		} else {
			q->r = (struct mif_ring *)(mi->rbase +
						   (c2s ? r : mi->run_c2s + r) * rb);
		}
		q->size = 1u << mi->run_log2;
		q->mask = q->size - 1;
		q->mine = q->seen = 0;
		if (rx) /* polled, unless an event loop waits on pktmap_fd() */
			PM_WRITE_ONCE(q->r->flags, mi->events ? 0 : MIF_RING_MASK_INT);
		if (rx && q->ifd >= 0) {
			struct epoll_event ev = { .events = EPOLLIN, .data.fd = q->ifd };
			(void)epoll_ctl(mi->epfd, EPOLL_CTL_ADD, q->ifd, &ev);
		}
		if (rx && !mi->server) {
			for (uint32_t pos = 0; pos < q->size; pos++)
				cli_post(p, q, pos);
			q->mine = (uint16_t)q->size;
			atomic_store_explicit(PM_ATOMIC(&q->r->head), q->mine,
					      memory_order_release);
		}
	}
}

/* Frames among descriptors [from, to) of q (a C2S ring of ours). */
static uint64_t frames_between(const struct pktmap_port *p,
			       const struct pm_kring *k, const struct mif_q *q,
			       uint16_t from, uint16_t to)
{
	uint64_t f = 0;
	for (uint16_t c = from; c != to; c++) {
		uint32_t x = q->slot_of[c & q->mask];
		f += !(k->ring->slot[x].flags & NS_MOREFRAG);
	}
	(void)p;
	return f;
}

static void rings_detach(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	for (uint32_t i = 0; i < p->ntx + p->nrx; i++) {
		struct mif_q *q = &mi->q[i];
		struct pm_kring *k = &p->krings[i];
		if (!q->r)
			continue;
		bool rx = i >= p->ntx;
		uint64_t lost = 0;
		if (!rx && !mi->server) {
			/* Submitted, never given back: lost with the peer. */
			uint16_t tail = PM_READ_ONCE(q->r->tail);
			if ((uint16_t)(tail - q->seen) <= (uint16_t)(q->mine - q->seen))
				q->seen = tail;
			lost = frames_between(p, k, q, q->seen, q->mine);
			k->hwtail = k->hwcur == 0 ? k->nslots - 1 : k->hwcur - 1;
		} else if (rx) {
			/* What the peer wrote before it went is still mapped:
			 * take what fits (the next rxsync hands it out), count
			 * the rest. */
			(void)(mi->server ? srv_rxsync(p, k, q) : cli_rxsync(p, k, q));
			uint16_t w = mi->server ? PM_READ_ONCE(q->r->head) :
						  PM_READ_ONCE(q->r->tail);
			uint16_t from = mi->server ? q->mine : q->seen;
			uint16_t cnt = (uint16_t)(w - from);
			lost = cnt <= q->size ? cnt : 0;
			if (q->ifd >= 0)
				(void)epoll_ctl(mi->epfd, EPOLL_CTL_DEL, q->ifd, NULL);
		}
		pm_stat_inc(&k->st->drop_backend, lost);
		q->r = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* poll(): the eventfds of our RX rings, the control socket, a timer. */

static int memif_poll_arm(struct pktmap_port *p, short events)
{
	struct mif_priv *mi = mif(p);
	int ready = 0, st = atomic_load_explicit(&mi->state, memory_order_acquire);
	if ((events & POLLIN) && st == MIF_UP) {
		if (!lock(&mi->lk_rx))
			return 1;
		for (uint32_t i = p->first_rx; i <= p->last_rx && i != UINT32_MAX; i++) {
			struct mif_q *q = &mi->q[p->ntx + i];
			if (q->r)
				PM_WRITE_ONCE(q->r->flags, 0);
		}
		/* Pairs with the fence of the writer's kick(). */
		atomic_thread_fence(memory_order_seq_cst);
		for (uint32_t i = p->first_rx; i <= p->last_rx && i != UINT32_MAX; i++) {
			struct mif_q *q = &mi->q[p->ntx + i];
			if (q->r && (mi->server ? PM_READ_ONCE(q->r->head) != q->mine :
						  PM_READ_ONCE(q->r->tail) != q->seen))
				ready = 1;
		}
		unlock(&mi->lk_rx);
	}
	/* memif has no wake-up for TX space, and a writer that does not
	 * fence may miss our flag: a timer backs both, starting at
	 * MIF_BACKOFF_MIN_US and doubling while it finds nothing, up to
	 * 64 ms. Down, it is the next connect() try or the handshake's
	 * deadline. */
	uint32_t b = atomic_load_explicit(PM_ATOMIC(&mi->backoff_us),
					  memory_order_relaxed);
	int64_t us = b;
	if (st == MIF_DOWN && !mi->server)
		us = (mi->next_try_ms - mif_now_ms()) * 1000;
	else if (st != MIF_UP && st != MIF_DOWN)
		us = (mi->deadline_ms - mif_now_ms() + 1) * 1000;
	if (st == MIF_UP || !mi->server || st != MIF_DOWN)
		mif_arm_timer(mi, us);
	if (b < 64000)
		atomic_store_explicit(PM_ATOMIC(&mi->backoff_us), b * 2,
				      memory_order_relaxed);
	return ready;
}

static void memif_poll_disarm(struct pktmap_port *p, short events)
{
	struct mif_priv *mi = mif(p);
	uint64_t v;
	if ((events & POLLIN) && lock(&mi->lk_rx)) {
		for (uint32_t i = p->first_rx; i <= p->last_rx && i != UINT32_MAX; i++) {
			struct mif_q *q = &mi->q[p->ntx + i];
			if (q->r && !mi->events)
				PM_WRITE_ONCE(q->r->flags, MIF_RING_MASK_INT);
			if (q->r && q->ifd >= 0) {
				ssize_t r = read(q->ifd, &v, sizeof(v));
				(void)r;
			}
		}
		unlock(&mi->lk_rx);
	}
	ssize_t r = read(mi->tfd, &v, sizeof(v));
	(void)r;
	/* Whatever woke us may be the control socket: look at it. */
	atomic_store_explicit(&mi->ctl_due, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */

static int mif_open_rings(struct pktmap_port *p, uint32_t nq, uint32_t slots,
			  uint32_t buf_size)
{
	struct mif_priv *mi = mif(p);
	/* netmap slots, plus a ring of posted buffers per RX ring (client) */
	uint64_t nbufs = 2 + 2ull * nq * slots + (mi->server ? 0 : (uint64_t)nq * slots);
	if (nbufs * buf_size >= (1ull << 32))
		return pm_open_error(p, -EINVAL, "%llu buffers of %u bytes do not "
				     "fit memif's 32-bit offsets: fewer rings, "
				     "slots or a smaller buf-size",
				     (unsigned long long)nbufs, buf_size);
	int ret = mif_pool_create(p, (uint32_t)nbufs, buf_size);
	if (ret)
		return ret;
	ret = pm_port_make_rings(p, "memif", nq, nq, 0, 0, slots, slots);
	if (ret)
		return ret;
	mi->q = calloc(2 * nq, sizeof(*mi->q));
	if (!mi->q)
		return -ENOMEM;
	uint32_t b = 2;
	for (uint32_t i = 0; i < 2 * nq; i++) {
		struct mif_q *q = &mi->q[i];
		struct pm_kring *k = &p->krings[i];
		q->ifd = -1;
		q->rx = !k->tx;
		q->nslots = slots;
		for (uint32_t s = 0; s < slots; s++)
			k->ring->slot[s].buf_idx = b++;
		if (mi->server)
			continue;
		uint32_t **arr = q->rx ? &q->bufs : &q->slot_of;
		*arr = calloc(slots, sizeof(uint32_t));
		if (!*arr)
			return -ENOMEM;
		if (q->rx)
			for (uint32_t s = 0; s < slots; s++)
				q->bufs[s] = b++;
	}
	mi->nbufs_used = b;
	return 0;
}

static int memif_open(struct pktmap_port *p, const struct pm_name *nm,
		      const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	struct mif_priv *mi = calloc(1, sizeof(*mi));
	if (!mi)
		return -ENOMEM;
	p->priv = mi;
	mi->lfd = mi->cfd = mi->epfd = mi->tfd = mi->rfd = mi->dirfd = -1;
	mi->backoff_us = MIF_BACKOFF_MIN_US;
	mi->server = c->role == 1;
	mi->attach = rings_attach;
	mi->detach = rings_detach;
	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < PM_MAX_RINGS; i++)
			mi->req[d][i].fd = -1;
	snprintf(mi->secret, sizeof(mi->secret), "%s", c->secret);
	if (c->region[0] || c->extra_bufs || c->hugepages > 0 || c->share)
		return pm_open_error(p, -EOPNOTSUPP, "memif ports have a buffer pool "
				     "of their own: @mem:, extra-bufs, hugepages "
				     "and share are not supported");
	if (mi->server && (nm->flags & PKTMAP_OPEN_ZEROCOPY))
		return pm_open_error(p, -EOPNOTSUPP, "a memif server copies every "
				     "frame (the client owns the memory): drop /Z "
				     "or use role=client");
	if (c->tx_rings && c->rx_rings && c->tx_rings != c->rx_rings)
		return pm_open_error(p, -EINVAL, "memif queues are ring pairs: give "
				     "@conf:rings=N");
	mi->nq = c->tx_rings ? c->tx_rings : (c->rx_rings ? c->rx_rings : 1);
	uint32_t slots = c->tx_slots ? c->tx_slots : (c->rx_slots ? c->rx_slots : 1024);
	if ((c->tx_slots && c->rx_slots && c->tx_slots != c->rx_slots) ||
	    (slots & (slots - 1)) || slots < 2 || slots > (1u << MIF_MAX_LOG2))
		return pm_open_error(p, -EINVAL, "memif rings have a power of two "
				     "of slots, 2 to %u, the same both ways: "
				     "@conf:slots=N", 1u << MIF_MAX_LOG2);
	mi->log2 = (uint32_t)__builtin_ctz(slots);
	uint32_t buf_size = c->buf_size ? c->buf_size : PM_DEFAULT_BUF_SIZE;
	int ret = mif_open_rings(p, mi->nq, slots, buf_size);
	if (ret)
		return ret;
	p->mode = mi->server ? PKTMAP_MODE_COPY : PKTMAP_MODE_ZEROCOPY;
	return mif_ctl_open(p, nm->body, c->abstract);
}

/* pktmap_fd(): from now on the RX rings are in interrupt mode (the peer
 * kicks their eventfds, which are in p->fd's epoll set with the control
 * socket and the timer). */
static int memif_event_fd(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	if (!lock(&mi->lk_rx))
		return -EBUSY;
	mi->events = true;
	for (uint32_t i = 0; i < p->nrx; i++) {
		struct mif_q *q = &mi->q[p->ntx + i];
		if (q->r)
			PM_WRITE_ONCE(q->r->flags, 0);
	}
	unlock(&mi->lk_rx);
	mif_arm_ctl_timer(p);
	return p->fd;
}

static void memif_info(const struct pktmap_port *p, struct pktmap_info *info)
{
	if (atomic_load_explicit(&mif(p)->state, memory_order_acquire) != MIF_UP)
		info->flags |= PKTMAP_INFO_PEER_GONE;
}

/* pktmap_stats(): the peer's life cycle (any thread: relaxed loads). */
static void memif_stats(const struct pktmap_port *p, struct pktmap_stats *st)
{
	const struct mif_priv *mi = mif(p);
	st->peer_connects = pm_stat_read(&mi->connects);
	st->peer_disconnects = pm_stat_read(&mi->disconnects);
	st->peer_errors = pm_stat_read(&mi->peer_errors);
}

static void memif_close(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	if (!mi)
		return;
	if (mi->epfd >= 0 || mi->lfd >= 0)
		mif_ctl_close(p);
	if (mi->q) {
		for (uint32_t i = 0; i < p->ntx + p->nrx; i++) {
			free(mi->q[i].bufs);
			free(mi->q[i].slot_of);
		}
		free(mi->q);
	}
	free(mi);
	p->priv = NULL;
}

static const struct pm_conf_word role_words[] = {
	{ "server", 1, NULL },
	{ "client", 0, NULL },
	{ NULL, 0, NULL },
};

static const struct pm_conf_key memif_keys[] = {
	/* memif's own range (a power of two, the same both ways: open) */
	{ "slots", PM_CONF_PAIR, offsetof(struct pm_conf, tx_slots),
	  offsetof(struct pm_conf, rx_slots), 2, 1u << MIF_MAX_LOG2, NULL, NULL,
	  "descriptors of every memif ring and slots of every netmap ring: a "
	  "power of two (default 1024)", 0 },
	{ "tx-slots", PM_CONF_U32, offsetof(struct pm_conf, tx_slots), 0, 2,
	  1u << MIF_MAX_LOG2, NULL, NULL, "the same, for TX only: equal to "
	  "rx-slots", 0 },
	{ "rx-slots", PM_CONF_U32, offsetof(struct pm_conf, rx_slots), 0, 2,
	  1u << MIF_MAX_LOG2, NULL, NULL, "the same, for RX only: equal to "
	  "tx-slots", 0 },
	{ "role", PM_CONF_WORD, offsetof(struct pm_conf, role), 0, 0, 0,
	  role_words, NULL, "server: listen for a client; client (the default): "
	  "connect to a server", 0 },
	{ "secret", PM_CONF_TEXT, offsetof(struct pm_conf, secret), 0, 1,
	  (uint32_t)sizeof(((struct pm_conf *)0)->secret) - 1, NULL, "TEXT",
	  "the shared secret the server checks", 0 },
	{ "abstract", PM_CONF_INT, offsetof(struct pm_conf, abstract), 0, 0, 1,
	  NULL, NULL, "1: the socket path is an abstract socket name", 0 },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0 },
};

/* A memif port's buffers are its own pool, sized by its rings: no bufs,
 * extra-bufs, hugepages, region or share; its slots are memif's. */
static const struct pm_conf_keys memif_conf = {
	.common = PM_CK_RINGS | PM_CK_BUF_SIZE | PM_CK_SPIN,
	.own = memif_keys,
};

const struct pm_port_ops pm_memif_ops = {
	.desc = {
		.name = "memif",
		.syntax = "memif:SOCKET[/ID][@conf:role=server|client,rings=N,"
			  "slots=N,buf-size=N,secret=S,abstract=1]",
		.mode = "zerocopy (client), copy (server)",
		.summary = "a memif interface: VPP, DPDK net_memif, libmemif "
			   "(SOCKET: a path, or @NAME for an abstract socket)",
	},
	.caps = PM_CAP_PATH | PM_CAP_ZEROCOPY,
	.conf = &memif_conf,
	.open = memif_open,
	.txsync = memif_txsync,
	.rxsync = memif_rxsync,
	.poll_arm = memif_poll_arm,
	.poll_disarm = memif_poll_disarm,
	.event_fd = memif_event_fd,
	.info = memif_info,
	.stats = memif_stats,
	.close = memif_close,
};
