/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The router's two stages (router_thread.c runs them).
 *
 * RX stage of input i, one step: note how much room each fwd[i][o] has;
 * for each frame in the RX ring (up to a batch): classify it; if its
 * queue has room, stage its (buf_idx, len) for that output and give the
 * RX slot a buffer from the stash (NS_BUF_CHANGED), else count a drop and
 * leave the buffer where it is; then enqueue each output's descriptors
 * in one batch, wake the TX threads that sleep, and rxsync. The stash is
 * refilled from the recycle queues only when it is empty (lazily), and
 * then with everything they hold (in batches).
 *
 * TX stage of output o, one step: serve the inputs' queues round-robin,
 * at most a quantum each, starting one further each step; put each
 * descriptor in a TX slot (swapping buffers, or copying the bytes when
 * the input is in another region) and send the slot's previous buffer
 * back to the input on rec[o][i], in one batch per dequeue; txsync. A
 * chain (NS_MOREFRAG) is never interleaved with another input's frames.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "router.h"
#include "util.h"

/* How many slots ahead the RX stage prefetches the frame it will read. */
#define RT_PREFETCH 4

static inline char *buf_of(const struct rt_port *p, uint32_t idx)
{
	return p->buf0 + (size_t)idx * p->stride;
}

/* ------------------------------------------------------------------ */
/* RX stage */

/* Take back every buffer the outputs have returned to this input. */
static uint32_t reclaim(struct rt_port *p)
{
	struct rt_router *rt = p->rt;

	for (unsigned o = 0; o < rt->n && p->rx.nstash < p->rx.total; o++)
		p->rx.nstash += pktmap_spsc_dequeue(rt->rec[o][p->id],
						p->rx.stash + p->rx.nstash,
						p->rx.total - p->rx.nstash);
	return p->rx.nstash;
}

static inline bool stash_has(struct rt_port *p, uint32_t want)
{
	return p->rx.nstash >= want || reclaim(p) >= want;
}

static inline struct rt_desc *stage_at(struct rt_port *p, unsigned o)
{
	return &p->rx.stage[o * p->rx.stage_cap + p->rx.cnt[o]];
}

/* Slots of the chain at slot j, looking at `avail` of them; 0 if it does
 * not end there. */
static uint32_t chain_len(const struct netmap_ring *ring, uint32_t j,
			  uint32_t avail)
{
	for (uint32_t n = 1; n <= avail; n++) {
		if (!(ring->slot[j].flags & NS_MOREFRAG))
			return n;
		j = nm_ring_next(ring, j);
	}
	return 0;
}

/* The general case: a frame of `len` slots at j going to output `out` or
 * flooded (out == RT_FLOOD). The first output with room gets the buffers
 * themselves, the others copies into stash buffers. The caller made sure
 * the stash holds `len` buffers for the RX slots. */
static void rx_multi(struct rt_port *p, struct netmap_ring *ring, uint32_t j,
		     uint32_t len, int out)
{
	struct rt_router *rt = p->rt;
	uint32_t *rep = p->rx.rep;
	bool orig = false;

	for (uint32_t f = 0; f < len; f++)
		rep[f] = p->rx.stash[--p->rx.nstash];
	for (unsigned t = 0; t < rt->n; t++) {
		unsigned o = out == RT_FLOOD ? t : (unsigned)out;
		uint32_t x = j;

		if (out == RT_FLOOD && o == p->id)
			continue;
		if (p->rx.room[o] < len) {
			p->rx.full[o]++;
		} else if (!orig) {
			for (uint32_t f = 0; f < len; f++) {
				const struct netmap_slot *s = &ring->slot[x];

				*stage_at(p, o) = (struct rt_desc){
					s->buf_idx, s->len,
					(uint16_t)(s->flags & NS_MOREFRAG)};
				p->rx.cnt[o]++;
				x = nm_ring_next(ring, x);
			}
			orig = true;
			p->rx.room[o] -= len;
			p->rx.enq[o]++;
		} else if (!stash_has(p, len)) {
			p->rx.no_buf++;
		} else {
			for (uint32_t f = 0; f < len; f++) {
				const struct netmap_slot *s = &ring->slot[x];
				uint32_t c = p->rx.stash[--p->rx.nstash];

				memcpy(buf_of(p, c), buf_of(p, s->buf_idx), s->len);
				*stage_at(p, o) = (struct rt_desc){
					c, s->len, (uint16_t)(s->flags & NS_MOREFRAG)};
				p->rx.cnt[o]++;
				x = nm_ring_next(ring, x);
			}
			p->rx.room[o] -= len;
			p->rx.enq[o]++;
		}
		if (out != RT_FLOOD)
			break;
	}
	if (orig) {
		for (uint32_t f = 0; f < len; f++) {
			ring->slot[j].buf_idx = rep[f];
			ring->slot[j].flags = NS_BUF_CHANGED;
			j = nm_ring_next(ring, j);
		}
	} else {
		for (uint32_t f = len; f-- > 0;)
			p->rx.stash[p->rx.nstash++] = rep[f];
	}
	p->rx.flooded += out == RT_FLOOD;
}

static inline void count_drop(struct rt_port *p, int verdict)
{
	switch (verdict) {
	case RT_DROP_NO_ROUTE: p->rx.no_route++; break;
	case RT_DROP_TTL: p->rx.ttl++; break;
	case RT_DROP_NOT_IP: p->rx.not_ip++; break;
	default: p->rx.filtered++; break;
	}
}

static inline int decide(struct rt_port *p, uint8_t *frame, uint32_t len)
{
	struct rt_router *rt = p->rt;

	switch (rt->o->mode) {
	case RT_STATIC:
		return rt->static_out[p->id];
	case RT_RANDOM:
		return rt->outs[((pm_rng_next(&p->rx.rng) >> 32) * rt->nouts) >> 32];
	default:
		return rt_classify(p, frame, len);
	}
}

/* A chain at slot j with `visible` slots in the ring from there. Returns
 * the slots consumed, 0 to stop the step (the chain is incomplete, or
 * the stash cannot cover it). */
static uint32_t rx_chain(struct rt_port *p, struct netmap_ring *ring,
			 uint32_t j, uint32_t visible)
{
	uint32_t len = chain_len(ring, j, visible), bytes = 0;
	int out;

	if (len == 0) {
		/* Filling the ring, it can never complete: let it go. */
		if (visible >= ring->num_slots - 1) {
			p->rx.chain_drop++;
			return visible;
		}
		return 0;
	}
	if (!stash_has(p, len)) {
		p->rx.stalls++;
		return 0;
	}
	for (uint32_t f = 0, x = j; f < len; f++, x = nm_ring_next(ring, x))
		bytes += ring->slot[x].len;
	p->rx.packets++;
	p->rx.bytes += bytes;
	out = decide(p, (uint8_t *)buf_of(p, ring->slot[j].buf_idx),
		     ring->slot[j].len);
	if (out >= 0 || out == RT_FLOOD)
		rx_multi(p, ring, j, len, out);
	else
		count_drop(p, out);
	return len;
}

/* Queue what the step staged, one enqueue per output, and wake the TX
 * threads that sleep. */
static void rx_flush(struct rt_port *p)
{
	struct rt_router *rt = p->rt;
	uint64_t wake = 0;

	for (unsigned o = 0; o < rt->n; o++) {
		uint32_t c = p->rx.cnt[o], put;
		struct rt_desc *d = &p->rx.stage[o * p->rx.stage_cap];

		if (!c)
			continue;
		/* never short: room was counted before staging */
		put = pktmap_spsc_enqueue(rt->fwd[p->id][o], d, c);
		for (uint32_t k = put; k < c; k++)
			p->rx.stash[p->rx.nstash++] = d[k].idx;
		p->rx.cnt[o] = 0;
		if (rt->ports[o].tx_th != p->rx_th)
			wake |= 1ull << rt->ports[o].tx_th->id;
	}
	while (wake) {
		unsigned t = (unsigned)__builtin_ctzll(wake);

		wake &= wake - 1;
		fwd_wake(&rt->th[t].wait);
	}
}

void rt_rx_publish(struct rt_port *p)
{
	struct rt_router *rt = p->rt;
	struct rt_rxstats *s = &p->rxs;

	fwd_pub(&s->packets, p->rx.packets);
	fwd_pub(&s->bytes, p->rx.bytes);
	fwd_pub(&s->syncs, p->rx.syncs);
	fwd_pub(&s->no_route, p->rx.no_route);
	fwd_pub(&s->ttl, p->rx.ttl);
	fwd_pub(&s->not_ip, p->rx.not_ip);
	fwd_pub(&s->filtered, p->rx.filtered);
	fwd_pub(&s->no_buf, p->rx.no_buf);
	fwd_pub(&s->flooded, p->rx.flooded);
	fwd_pub(&s->chain_drop, p->rx.chain_drop);
	fwd_pub(&s->stalls, p->rx.stalls);
	uint64_t full = 0;
	for (unsigned o = 0; o < rt->n; o++) {
		fwd_pub(&rt->qs[p->id * rt->n + o].enq, p->rx.enq[o]);
		fwd_pub(&rt->qs[p->id * rt->n + o].full, p->rx.full[o]);
		full += p->rx.full[o];
	}
	/* In the input port's published counters too (pktmap top). */
	pktmap_set_drops(p->port, PKTMAP_DROP_NO_SPACE, full);
	pktmap_set_drops(p->port, PKTMAP_DROP_FILTERED, p->rx.filtered);
}

uint32_t rt_rx_step(struct rt_port *p)
{
	struct rt_router *rt = p->rt;
	const enum rt_mode mode = rt->o->mode;
	const bool reads = mode != RT_STATIC && mode != RT_RANDOM;
	uint32_t budget = rt->batch, done = 0;
	bool stop = false;
	int rc;

	for (unsigned o = 0; o < rt->n; o++) {
		uint32_t r = pktmap_spsc_free_slots(rt->fwd[p->id][o], budget);

		p->rx.room[o] = r < p->rx.stage_cap ? r : p->rx.stage_cap;
	}
	for (uint32_t ri = p->rx_lo; ri <= p->rx_hi && done < budget && !stop;
	     ri++) {
		struct netmap_ring *ring = NETMAP_RXRING(p->nifp, ri);
		uint32_t space = nm_ring_space(ring), j = ring->head, k = 0;
		uint32_t avail = space < budget - done ? space : budget - done;

		while (k < avail) {
			struct netmap_slot *s = &ring->slot[j];
			int out;

			if (pm_unlikely(s->flags & NS_MOREFRAG)) {
				uint32_t used = rx_chain(p, ring, j, space - k);

				if (!used) {
					stop = true;
					break;
				}
				k += used;
				j = (j + used) % ring->num_slots;
				continue;
			}
			/* a buffer for this RX slot before the frame is
			 * touched (lpm rewrites it) */
			if (pm_unlikely(!stash_has(p, 1))) {
				p->rx.stalls++;
				stop = true;
				break;
			}
			if (reads && k + RT_PREFETCH < avail) {
				uint32_t x = j + RT_PREFETCH;

				if (x >= ring->num_slots)
					x -= ring->num_slots;
				__builtin_prefetch(buf_of(p, ring->slot[x].buf_idx));
			}
			p->rx.packets++;
			p->rx.bytes += s->len;
			out = decide(p, (uint8_t *)buf_of(p, s->buf_idx), s->len);
			if (pm_likely(out >= 0)) {
				if (pm_likely(p->rx.room[out])) {
					*stage_at(p, (unsigned)out) = (struct rt_desc){
						s->buf_idx, s->len, 0};
					p->rx.cnt[out]++;
					p->rx.room[out]--;
					p->rx.enq[out]++;
					s->buf_idx = p->rx.stash[--p->rx.nstash];
					s->flags = NS_BUF_CHANGED;
				} else {
					p->rx.full[out]++;
				}
			} else if (out == RT_FLOOD) {
				rx_multi(p, ring, j, 1, RT_FLOOD);
			} else {
				count_drop(p, out);
			}
			j = nm_ring_next(ring, j);
			k++;
		}
		ring->head = ring->cur = j;
		done += k;
	}
	rx_flush(p);
	rc = pktmap_rxsync(p->port);
	p->rx.syncs++;
	if (pm_unlikely(rc < 0)) {
		struct rt_thread *t = p->rx_th;

		t->error = rc;
		snprintf(t->err, sizeof(t->err), "router: %s: rxsync failed: %s",
			 p->info.name, pktmap_strerror(rc));
	}
	if (done)
		rt_rx_publish(p);
	return done;
}

/* ------------------------------------------------------------------ */
/* TX stage */

uint32_t rt_tx_space(const struct rt_port *p)
{
	uint32_t n = 0;

	for (uint32_t r = p->tx_lo; r <= p->tx_hi; r++)
		n += nm_ring_space(NETMAP_TXRING(p->nifp, r));
	return n;
}

bool rt_tx_pending(const struct rt_port *p)
{
	for (uint32_t r = p->tx_lo; r <= p->tx_hi; r++)
		if (fwd_tx_pending(NETMAP_TXRING(p->nifp, r)))
			return true;
	return false;
}

bool rt_tx_queued(const struct rt_port *p)
{
	struct rt_router *rt = p->rt;

	for (unsigned j = 0; j < rt->n; j++)
		if (pktmap_spsc_count(rt->fwd[j][p->id]))
			return true;
	return false;
}

/* Put cnt descriptors from input j into TX slots (there is room for
 * them) and send the buffers that come free back to j. Returns the slots
 * used. */
static uint32_t place(struct rt_port *p, unsigned j, const struct rt_desc *d,
		      uint32_t cnt)
{
	struct rt_router *rt = p->rt;
	const struct rt_port *in = &rt->ports[j];
	const bool zc = rt->zc[j][p->id];
	uint32_t *rec = p->tx.recycled, nr = 0, used = 0, r = p->tx.ring;
	struct netmap_ring *ring = NETMAP_TXRING(p->nifp, r);
	uint32_t k = ring->head, sp = nm_ring_space(ring), put;
	uint64_t pkts = 0, bytes = 0;

	for (uint32_t x = 0; x < cnt; x++) {
		uint16_t more = d[x].flags & NS_MOREFRAG;

		while (pm_unlikely(sp == 0)) {
			/* this ring is full: the next one */
			ring->head = ring->cur = k;
			ring = NETMAP_TXRING(p->nifp, ++r);
			k = ring->head;
			sp = nm_ring_space(ring);
		}
		struct netmap_slot *s = &ring->slot[k];

		if (zc) {
			rec[nr++] = s->buf_idx;
			s->buf_idx = d[x].idx;
			s->flags = (uint16_t)(NS_BUF_CHANGED | more);
		} else {
			rec[nr++] = d[x].idx;
			if (pm_unlikely(p->tx.chain_drop || d[x].len > p->usable ||
				     d[x].len == 0)) {
				/* does not fit this port's buffers: the
				 * frame (its whole chain) is dropped */
				if (!p->tx.chain_drop)
					p->tx.too_long++;
				p->tx.chain_drop = more != 0;
				continue;
			}
			memcpy(buf_of(p, s->buf_idx), buf_of(in, d[x].idx),
			       d[x].len);
			s->flags = more;
		}
		s->len = d[x].len;
		bytes += d[x].len;
		pkts += !more;
		k = nm_ring_next(ring, k);
		sp--;
		used++;
	}
	ring->head = ring->cur = k;
	p->tx.ring = r;
	/* never short: the queue holds every buffer j owns */
	put = pktmap_spsc_enqueue(rt->rec[p->id][j], rec, nr);
	p->tx.lost += nr - put;
	p->tx.sent[j] += pkts;
	p->tx.packets += pkts;
	p->tx.bytes += bytes;
	return used;
}

void rt_tx_publish(struct rt_port *p)
{
	struct rt_router *rt = p->rt;

	fwd_pub(&p->txs.packets, p->tx.packets);
	fwd_pub(&p->txs.bytes, p->tx.bytes);
	fwd_pub(&p->txs.syncs, p->tx.syncs);
	fwd_pub(&p->txs.too_long, p->tx.too_long);
	fwd_pub(&p->txs.lost, p->tx.lost);
	for (unsigned j = 0; j < rt->n; j++)
		fwd_pub(&rt->qs[j * rt->n + p->id].sent, p->tx.sent[j]);
}

uint32_t rt_tx_step(struct rt_port *p)
{
	struct rt_router *rt = p->rt;
	unsigned n = rt->n, start;
	uint32_t space = rt_tx_space(p), placed = 0;
	bool synced = false;
	int rc = 0;

	if (space == 0) {
		/* reclaim what went out */
		rc = pktmap_txsync(p->port);
		p->tx.syncs++;
		synced = true;
		space = rt_tx_space(p);
	}
	p->tx.ring = p->tx_lo;
	start = p->tx.chain_q >= 0 ? (unsigned)p->tx.chain_q : p->tx.rr;
	for (unsigned s = 0; s < n && space && rc >= 0; s++) {
		unsigned j = start + s < n ? start + s : start + s - n;

		for (;;) {
			uint32_t want = space < p->tx.quantum ? space : p->tx.quantum;
			uint32_t got = pktmap_spsc_dequeue(rt->fwd[j][p->id],
						       p->tx.descs, want);

			if (!got)
				break;
			space -= place(p, j, p->tx.descs, got);
			placed += got;
			if (p->tx.descs[got - 1].flags & NS_MOREFRAG) {
				/* the rest of this chain first */
				p->tx.chain_q = (int)j;
				if (space)
					continue;
				break;
			}
			p->tx.chain_q = -1;
			break;
		}
		if (p->tx.chain_q == (int)j)
			break;
	}
	p->tx.rr = p->tx.rr + 1 == n ? 0 : p->tx.rr + 1;
	if (placed || (!synced && rt_tx_pending(p))) {
		rc = pktmap_txsync(p->port);
		p->tx.syncs++;
	}
	if (pm_unlikely(rc < 0)) {
		struct rt_thread *t = p->tx_th;

		t->error = rc;
		snprintf(t->err, sizeof(t->err), "router: %s: txsync failed: %s",
			 p->info.name, pktmap_strerror(rc));
	}
	if (placed)
		rt_tx_publish(p);
	return placed;
}
