/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The bridge loop (bridge.h), netmap's bridge.c on pktmap: move what the RX
 * rings of one port hold into the TX rings of the other, both directions,
 * one thread; sync after each round; sleep in pktmap_poll_many() only when
 * a round moved nothing.
 *
 * Zero-copy (both ports in one region): the RX slot and the TX slot swap
 * buffer indices and both get NS_BUF_CHANGED; no byte of a frame is
 * touched. Copy: the frame is copied into the TX slot's own buffer.
 *
 * A frame spread over several slots (NS_MOREFRAG on all but the last) is
 * moved whole or not at all: a round stops in front of a chain that does
 * not fit in the TX ring yet. In copy mode a chain is gathered into as
 * few TX slots as the TX buffers allow, so frames also cross between
 * ports of different buffer sizes. A chain that can never fit (longer
 * than the TX ring) is dropped and counted.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"
#include "util.h"

/* What one round did in one direction. */
struct round {
	uint64_t packets, bytes, slots, tx_slots, drops;
	bool rx_wait; /* stopped in front of an incomplete chain */
};

static inline uint32_t min3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t m = a < b ? a : b;

	return m < c ? m : c;
}

/* Slots of the chain starting at slot i, at most `avail` looked at; 0 if
 * the chain does not end within them. */
static uint32_t chain_len(const struct netmap_ring *rx, uint32_t i,
			  uint32_t avail)
{
	for (uint32_t n = 1; n <= avail; n++) {
		if (!(rx->slot[i].flags & NS_MOREFRAG))
			return n;
		i = nm_ring_next(rx, i);
	}
	return 0;
}

static inline void swap_slot(struct netmap_slot *rs, struct netmap_slot *ts)
{
	uint32_t idx = ts->buf_idx;

	ts->buf_idx = rs->buf_idx;
	rs->buf_idx = idx;
	ts->len = rs->len;
	ts->flags = (uint16_t)(NS_BUF_CHANGED | (rs->flags & NS_MOREFRAG));
	rs->flags |= NS_BUF_CHANGED;
}

/* What to do with a chain at RX slot j that is not a single slot: its
 * length in *len, or 0 to stop (wait for the rest), or drop it (returns
 * 1 with *len slots to release). */
static int chain_verdict(const struct netmap_ring *rx,
			 const struct netmap_ring *tx, uint32_t j,
			 uint32_t rx_left, uint32_t *len, struct round *r)
{
	uint32_t l = chain_len(rx, j, rx_left);

	if (l == 0) {
		/* It ends beyond what has arrived. If it already fills the
		 * ring it can never complete: let it go. */
		if (rx_left >= rx->num_slots - 1) {
			*len = rx_left;
			return 1;
		}
		r->rx_wait = true;
		*len = 0;
		return 0;
	}
	*len = l;
	return l > tx->num_slots - 1; /* never fits: drop */
}

/* Zero-copy: swap up to `limit` RX slots into TX slots. Returns RX slots
 * consumed. */
static uint32_t move_zc(struct netmap_ring *rx, struct netmap_ring *tx,
			uint32_t limit, struct round *r)
{
	uint32_t j = rx->head, k = tx->head;
	uint32_t nrx = nm_ring_space(rx), ntx = nm_ring_space(tx);
	uint32_t used_rx = 0, used_tx = 0;
	uint64_t bytes = 0, pkts = 0;

	while (used_rx < nrx && used_tx < ntx && used_rx < limit) {
		uint32_t m = min3(nrx - used_rx, ntx - used_tx, limit - used_rx);
		uint32_t i;

		for (i = 0; i < m; i++) {
			struct netmap_slot *rs = &rx->slot[j];

			if (pm_unlikely(rs->flags & NS_MOREFRAG))
				break;
			bytes += rs->len;
			swap_slot(rs, &tx->slot[k]);
			j = nm_ring_next(rx, j);
			k = nm_ring_next(tx, k);
		}
		pkts += i;
		used_rx += i;
		used_tx += i;
		if (i == m)
			continue;
		/* A chain starts at j. */
		uint32_t len;
		int drop = chain_verdict(rx, tx, j, nrx - used_rx, &len, r);

		if (drop) {
			r->drops++;
			j = (j + len) % rx->num_slots;
			used_rx += len;
			continue;
		}
		if (len == 0 || len > ntx - used_tx)
			break; /* wait for the rest, or for TX room */
		for (uint32_t n = 0; n < len; n++) {
			bytes += rx->slot[j].len;
			swap_slot(&rx->slot[j], &tx->slot[k]);
			j = nm_ring_next(rx, j);
			k = nm_ring_next(tx, k);
		}
		pkts++;
		used_rx += len;
		used_tx += len;
	}
	rx->head = rx->cur = j;
	tx->head = tx->cur = k;
	r->packets += pkts;
	r->bytes += bytes;
	r->slots += used_rx;
	r->tx_slots += used_tx;
	return used_rx;
}

/* Copy the chain of `len` RX slots at j (total bytes `total`) into
 * ceil(total / usable) TX slots from k. Returns the TX slots used. */
static uint32_t copy_chain(struct netmap_ring *rx, struct netmap_ring *tx,
			   uint32_t j, uint32_t len, uint32_t k,
			   uint32_t usable)
{
	uint32_t used = 1, room = usable;
	struct netmap_slot *ts = &tx->slot[k];
	char *dst = NETMAP_BUF(tx, ts->buf_idx);

	ts->len = 0;
	for (uint32_t n = 0; n < len; n++) {
		const struct netmap_slot *rs = &rx->slot[j];
		const char *src = NETMAP_BUF(rx, rs->buf_idx);
		uint32_t left = rs->len;

		while (left) {
			uint32_t c = left < room ? left : room;

			if (c == 0) {
				/* this TX buffer is full: chain on */
				ts->flags = NS_MOREFRAG;
				k = nm_ring_next(tx, k);
				ts = &tx->slot[k];
				dst = NETMAP_BUF(tx, ts->buf_idx);
				ts->len = 0;
				room = usable;
				used++;
				continue;
			}
			memcpy(dst + ts->len, src, c);
			ts->len = (uint16_t)(ts->len + c);
			src += c;
			left -= c;
			room -= c;
		}
		j = nm_ring_next(rx, j);
	}
	ts->flags = 0;
	return used;
}

/* Copy mode: up to `limit` RX slots. Returns RX slots consumed. */
static uint32_t move_copy(struct netmap_ring *rx, struct netmap_ring *tx,
			  uint32_t limit, uint32_t usable, struct round *r)
{
	uint32_t j = rx->head, k = tx->head;
	uint32_t nrx = nm_ring_space(rx), ntx = nm_ring_space(tx);
	uint32_t used_rx = 0, used_tx = 0;

	while (used_rx < nrx && used_tx < ntx && used_rx < limit) {
		struct netmap_slot *rs = &rx->slot[j];
		uint32_t len = 1, total = rs->len, need;

		if (pm_likely(!(rs->flags & NS_MOREFRAG) && total <= usable &&
			   total)) {
			struct netmap_slot *ts = &tx->slot[k];

			memcpy(NETMAP_BUF(tx, ts->buf_idx),
			       NETMAP_BUF(rx, rs->buf_idx), total);
			ts->len = (uint16_t)total;
			ts->flags = 0;
			r->packets++;
			r->bytes += total;
			j = nm_ring_next(rx, j);
			k = nm_ring_next(tx, k);
			used_rx++;
			used_tx++;
			continue;
		}
		if (rs->flags & NS_MOREFRAG) {
			if (chain_verdict(rx, tx, j, nrx - used_rx, &len, r))
				goto drop;
			if (len == 0)
				break;
			total = 0;
			for (uint32_t n = 0, i = j; n < len; n++) {
				total += rx->slot[i].len;
				i = nm_ring_next(rx, i);
			}
		}
		need = (total + usable - 1) / usable;
		if (total == 0 || need > tx->num_slots - 1)
			goto drop; /* nothing to send, or can never fit */
		if (need > ntx - used_tx)
			break;
		need = copy_chain(rx, tx, j, len, k, usable);
		k = (k + need) % tx->num_slots;
		used_tx += need;
		r->packets++;
		r->bytes += total;
		j = (j + len) % rx->num_slots;
		used_rx += len;
		continue;
drop:
		r->drops++;
		j = (j + len) % rx->num_slots;
		used_rx += len;
	}
	rx->head = rx->cur = j;
	tx->head = tx->cur = k;
	r->slots += used_rx;
	r->tx_slots += used_tx;
	return used_rx;
}

/* Move one direction. With as many RX rings as TX rings, ring k feeds
 * ring k: a ring's frames stay in their ring, and a full TX ring holds
 * back only its own RX ring. Otherwise netmap's bridge way: the next RX
 * ring when one is empty, the next TX ring when one is full. */
static uint32_t move_dir(struct bridge *b, struct bridge_dir *d,
			 uint32_t limit, struct round *r)
{
	uint32_t si = d->rx_lo, di = d->tx_lo, moved = 0;
	const bool paired = d->rx_hi - d->rx_lo == d->tx_hi - d->tx_lo;

	while (si <= d->rx_hi && di <= d->tx_hi && moved < limit) {
		struct netmap_ring *rx = NETMAP_RXRING(d->rx_nifp, si);
		struct netmap_ring *tx = NETMAP_TXRING(d->tx_nifp, di);
		uint32_t m;

		if (nm_ring_empty(rx) || (paired && nm_ring_empty(tx))) {
			si++;
			di += paired;
			continue;
		}
		if (nm_ring_empty(tx)) {
			di++;
			continue;
		}
		r->rx_wait = false;
		m = b->zerocopy ? move_zc(rx, tx, limit - moved, r)
				: move_copy(rx, tx, limit - moved, d->tx_usable, r);
		moved += m;
		if (paired) {
			si++;      /* one pass over each pair per round */
			di++;
		} else if (r->rx_wait) {
			si++;      /* this ring waits for the rest of a chain */
		} else if (m == 0 || !nm_ring_empty(rx)) {
			di++;      /* this TX ring has no room for what is next */
		}
	}
	return moved;
}

static bool rx_empty(const struct bridge_dir *d)
{
	return fwd_rx_empty(d->rx_nifp, d->rx_lo, d->rx_hi);
}

static bool tx_pending(const struct bridge_dir *d)
{
	return fwd_tx_any_pending(d->tx_nifp, d->tx_lo, d->tx_hi);
}

static void publish(struct bridge_dir *d, const struct round *r)
{
	struct bridge_count *c = &d->c;

	fwd_pub(&c->packets, atomic_load_explicit(&c->packets, memory_order_relaxed) + r->packets);
	fwd_pub(&c->bytes, atomic_load_explicit(&c->bytes, memory_order_relaxed) + r->bytes);
	fwd_pub(&c->slots, atomic_load_explicit(&c->slots, memory_order_relaxed) + r->slots);
	fwd_pub(&c->tx_slots, atomic_load_explicit(&c->tx_slots, memory_order_relaxed) + r->tx_slots);
	fwd_pub(&c->drops, atomic_load_explicit(&c->drops, memory_order_relaxed) + r->drops);
	fwd_pub(&c->rounds, atomic_load_explicit(&c->rounds, memory_order_relaxed) + 1);
}

/* At the end: keep syncing until what was put in the TX rings has left,
 * for at most 1 s (a peer that reads nothing keeps it), and give the RX
 * slots back. */
static void flush(struct bridge *b)
{
	uint64_t end = fwd_now_ns() + 1000000000ull;

	for (;;) {
		bool pending = false;

		for (int i = 0; i < 2; i++) {
			pktmap_rxsync(b->dir[i].from);
			if (tx_pending(&b->dir[i])) {
				pending = true;
				pktmap_txsync(b->dir[i].to);
			}
		}
		if (!pending || fwd_now_ns() >= end)
			break;
		struct pktmap_pollreq q[2];
		unsigned n = 0;

		for (int i = 0; i < 2; i++)
			if (tx_pending(&b->dir[i]))
				q[n++] = (struct pktmap_pollreq){
					.port = b->dir[i].to, .events = POLLOUT};
		if (n && pktmap_poll_many(q, n, 10) < 0)
			break;
	}
}

/* Fill in one direction from the open ports. */
static int setup_dir(struct bridge *b, int from, int to, char *err,
		     size_t errlen)
{
	struct bridge_dir *d = &b->dir[from];
	const struct pktmap_info *ri = &b->info[from], *ti = &b->info[to];

	d->from = b->port[from];
	d->to = b->port[to];
	d->rx_nifp = pktmap_nifp(d->from);
	d->tx_nifp = pktmap_nifp(d->to);
	d->rx_lo = ri->first_rx_ring;
	d->rx_hi = ri->last_rx_ring;
	d->tx_lo = ti->first_tx_ring;
	d->tx_hi = ti->last_tx_ring;
	d->tx_usable = ti->buf_usable;
	snprintf(d->label, sizeof(d->label), "%s", from ? "B->A" : "A->B");
	if (d->rx_hi < d->rx_lo || ri->rx_slots == 0) {
		snprintf(err, errlen, "%s: the port has no RX ring", ri->name);
		return -EINVAL;
	}
	if (d->tx_hi < d->tx_lo || ti->tx_slots == 0) {
		snprintf(err, errlen, "%s: the port has no TX ring", ti->name);
		return -EINVAL;
	}
	return 0;
}

int bridge_setup(struct bridge *b, bool copy, char *err, size_t errlen)
{
	int rc;

	for (int i = 0; i < 2; i++) {
		b->info[i].sz = sizeof(b->info[i]);
		rc = pktmap_info(b->port[i], &b->info[i]);
		if (rc) {
			snprintf(err, errlen, "port %c: %s", 'A' + i,
				 pktmap_strerror(rc));
			return rc;
		}
	}
	rc = setup_dir(b, 0, 1, err, errlen);
	if (!rc)
		rc = setup_dir(b, 1, 0, err, errlen);
	if (rc)
		return rc;
	b->zerocopy = !copy && fwd_same_region(&b->info[0], &b->info[1]);
	return 0;
}

void bridge_stop(struct bridge *b)
{
	atomic_store_explicit(&b->stopping, 1, memory_order_relaxed);
}

/* Remember a failed sync; the loop ends on it. */
static bool failed(struct bridge *b, int rc)
{
	if (rc >= 0)
		return false;
	b->error = rc;
	b->end = "error";
	return true;
}

void bridge_work(struct bridge *b)
{
	uint64_t idle_ns = b->idle_ns, total = 0, seen = 0;
	uint64_t t_last = 0, busy = 0;
	struct fwd_span span = {0};
	bool started = false;

	for (;;) {
		struct round r[2] = {{0}, {0}};
		uint32_t limit = b->batch, m[2];
		uint64_t c0;

		if (fwd_stopping(&b->stopping, b->stop)) {
			b->end = "signal";
			break;
		}
		if (b->count) {
			if (total >= b->count) {
				b->end = "count";
				break;
			}
			if (b->count - total < limit)
				limit = (uint32_t)(b->count - total);
		}
		fwd_span_round(&span);
		c0 = fwd_cycles();
		m[0] = move_dir(b, &b->dir[0], limit, &r[0]);
		m[1] = move_dir(b, &b->dir[1], limit, &r[1]);
		if (m[0] | m[1]) {
			int rc = 0;

			if (pm_unlikely(!started)) {
				started = true;
				fwd_pub(&b->t_first, fwd_now_ns());
			}
			/* submit, then give the RX slots back and look for more */
			for (int i = 0; i < 2 && rc >= 0; i++) {
				if (!m[i])
					continue;
				rc = pktmap_txsync(b->dir[i].to);
				if (rc >= 0)
					rc = pktmap_rxsync(b->dir[i].from);
				publish(&b->dir[i], &r[i]);
				total += r[i].packets + r[i].drops;
			}
			busy += fwd_cycles() - c0;
			fwd_pub(&b->busy_cycles, busy);
			fwd_span_busy(&span);
			if (failed(b, rc))
				break;
			continue;
		}
		fwd_span_close(&span);
		fwd_pub(&b->busy_cpu_ns, span.total);

		/* Nothing moved: wait for packets where the RX rings are
		 * empty, for TX room where the other side has packets. */
		struct pktmap_pollreq q[2];
		unsigned n = 0;
		bool empty[2] = {rx_empty(&b->dir[0]), rx_empty(&b->dir[1])};

		for (int p = 0; p < 2; p++) {
			/* port p receives for dir[p] and sends for dir[1-p] */
			short ev = (short)((empty[p] ? POLLIN : 0) |
					   (!empty[1 - p] ? POLLOUT : 0));
			if (ev)
				q[n++] = (struct pktmap_pollreq){
					.port = b->port[p], .events = ev};
		}
		int rc = pktmap_poll_many(q, n, FWD_POLL_MS);

		if (failed(b, rc))
			break;
		for (unsigned i = 0; i < n; i++) {
			if (q[i].revents & POLLERR) {
				failed(b, -EPROTO);
				goto out;
			}
		}
		uint64_t now = fwd_now_ns();
		uint64_t moved = atomic_load_explicit(&b->dir[0].c.packets,
						      memory_order_relaxed) +
				 atomic_load_explicit(&b->dir[1].c.packets,
						      memory_order_relaxed);

		if (moved != seen) {
			seen = moved;
			t_last = now;
			fwd_pub(&b->t_last, now);
		}
		for (unsigned i = 0; i < n; i++) {
			/* a source that ended (a capture file) ends the run */
			if ((q[i].revents & POLLHUP) && rx_empty(&b->dir[
				    q[i].port == b->port[0] ? 0 : 1])) {
				b->end = "eof";
				goto out;
			}
		}
		if (idle_ns && started && now - t_last >= idle_ns) {
			b->end = "idle";
			break;
		}
	}
out:
	fwd_span_close(&span);
	fwd_pub(&b->busy_cpu_ns, span.total);
	if (atomic_load_explicit(&b->dir[0].c.packets, memory_order_relaxed) +
		    atomic_load_explicit(&b->dir[1].c.packets,
					 memory_order_relaxed) != seen)
		fwd_pub(&b->t_last, fwd_now_ns());
	if (!b->error)
		flush(b);
}
