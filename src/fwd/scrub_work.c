/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's worker loop (scrub_work.h): the bridge's loop (bridge.c) with
 * a judge in the way. Zero-copy when both ports share a region (a passed
 * frame's RX and TX slots swap buffers), a copy otherwise. A dropped
 * frame costs no TX slot: its RX slot is simply passed over.
 *
 * A frame spread over several slots (NS_MOREFRAG) is judged by its first
 * slot (the headers are there) and moved or dropped whole; one that does
 * not fit the TX ring now waits, one that never can is dropped.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "scrub_work.h"

struct round {
	uint64_t packets, bytes, dropped, too_long;
	uint32_t rx_used;
};

static inline void add(_Atomic uint64_t *c, uint64_t v)
{
	if (v)
		fwd_pub(c, atomic_load_explicit(c, memory_order_relaxed) + v);
}

/* Slots of the chain at slot i, looking at most at `avail`; 0 when it
 * does not end within them. */
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

/* Put the RX slot's frame in the TX slot: swap buffers or copy (what
 * fits_tx() said fits). */
static inline void put(struct scrub_thread *t, struct scrub_dir *d,
		       struct netmap_ring *rx, struct netmap_slot *rs,
		       struct netmap_ring *tx, struct netmap_slot *ts)
{
	if (t->zerocopy) {
		uint32_t idx = ts->buf_idx;

		ts->buf_idx = rs->buf_idx;
		rs->buf_idx = idx;
		ts->len = rs->len;
		ts->flags = (uint16_t)(NS_BUF_CHANGED | (rs->flags & NS_MOREFRAG));
		rs->flags |= NS_BUF_CHANGED;
		return;
	}
	(void)d;
	memcpy(NETMAP_BUF(tx, ts->buf_idx), NETMAP_BUF(rx, rs->buf_idx),
	       rs->len);
	ts->len = rs->len;
	ts->flags = rs->flags & NS_MOREFRAG;
}

/* Copy mode: does every slot of the frame fit a TX buffer? */
static bool fits_tx(const struct scrub_thread *t, const struct scrub_dir *d,
		    const struct netmap_ring *rx, uint32_t j, uint32_t len)
{
	if (t->zerocopy)
		return true;
	for (uint32_t n = 0; n < len; n++, j = nm_ring_next(rx, j))
		if (rx->slot[j].len > d->tx_usable)
			return false;
	return true;
}

/* The verdict on the frame at RX slot j: true to drop it. */
static inline bool verdict(struct scrub_thread *t, struct scrub_dir *d,
			   const struct scrub_view *v, struct netmap_ring *rx,
			   uint32_t j, uint64_t now)
{
	const struct netmap_slot *rs = &rx->slot[j];
	const uint8_t *buf = (const uint8_t *)NETMAP_BUF(rx, rs->buf_idx);
	int why;

	if (!d->judged) {
		atomic_store_explicit(&t->w.reason[SCRUB_PASS_UNJUDGED],
				      atomic_load_explicit(&t->w.reason[SCRUB_PASS_UNJUDGED],
							   memory_order_relaxed) + 1,
				      memory_order_relaxed);
		return false;
	}
	why = scrub_judge(&t->w, v->rules, v->bans, buf, rs->len, now);
	if (pm_unlikely(t->w.new_ban) && t->on_ban)
		t->on_ban(t->user, t->w.ban_addr, t->w.ban_until);
	if (pm_likely(!scrub_dropped(why)))
		return false;
	if (t->sample && ++t->drops_seen % t->sample_every == 0)
		t->sample(t->user, t->id, buf, rs->len, why);
	return !t->dry_run;
}

/* One RX ring into one TX ring, up to `limit` RX slots. */
static void move_ring(struct scrub_thread *t, struct scrub_dir *d,
		      const struct scrub_view *v, struct netmap_ring *rx,
		      struct netmap_ring *tx, uint32_t limit, uint64_t now,
		      struct round *r)
{
	uint32_t j = rx->head, k = tx->head;
	uint32_t nrx = nm_ring_space(rx), ntx = nm_ring_space(tx);
	uint32_t used = 0, sent = 0;

	if (nrx > limit)
		nrx = limit;
	while (used < nrx) {
		uint32_t len = 1;

		if (pm_unlikely(rx->slot[j].flags & NS_MOREFRAG)) {
			len = chain_len(rx, j, nm_ring_space(rx) - used);
			if (len == 0 && nm_ring_space(rx) < rx->num_slots - 1)
				break; /* the rest has not arrived */
			if (len == 0 || len > tx->num_slots - 1)
				goto drop; /* can never complete or fit */
		}
		if (ntx - sent < len)
			break; /* wait for TX room */
		if (verdict(t, d, v, rx, j, now)) {
			r->dropped++;
			goto skip;
		}
		if (pm_unlikely(!fits_tx(t, d, rx, j, len))) {
			r->too_long++;
			goto skip;
		}
		for (uint32_t n = 0, jj = j; n < len; n++) {
			struct netmap_slot *rs = &rx->slot[jj];

			put(t, d, rx, rs, tx, &tx->slot[k]);
			r->bytes += rs->len;
			k = nm_ring_next(tx, k);
			sent++;
			jj = nm_ring_next(rx, jj);
		}
		r->packets++;
		goto skip;
drop:
		if (len == 0)
			len = nm_ring_space(rx) - used;
		r->dropped++;
skip:
		j = (j + len) % rx->num_slots;
		used += len;
	}
	rx->head = rx->cur = j;
	tx->head = tx->cur = k;
	r->rx_used += used;
}

/* Each RX ring into its TX ring (ring k to ring k when the counts
 * match, else the next TX ring with room). */
static uint32_t move_dir(struct scrub_thread *t, struct scrub_dir *d,
			 const struct scrub_view *v, uint64_t now,
			 struct round *r)
{
	uint32_t di = d->tx_lo;
	const bool paired = d->rx_hi - d->rx_lo == d->tx_hi - d->tx_lo;

	r->rx_used = 0;
	for (uint32_t si = d->rx_lo; si <= d->rx_hi; si++) {
		struct netmap_ring *rx = NETMAP_RXRING(d->rx_nifp, si);

		if (paired)
			di = d->tx_lo + (si - d->rx_lo);
		while (!nm_ring_empty(rx) && r->rx_used < t->batch) {
			struct netmap_ring *tx = NETMAP_TXRING(d->tx_nifp, di);
			uint32_t before = r->rx_used;

			move_ring(t, d, v, rx, tx, t->batch - r->rx_used, now, r);
			if (r->rx_used != before)
				continue;
			if (paired || di == d->tx_hi)
				break; /* no TX room */
			di++;
		}
	}
	add(&d->packets, r->packets);
	add(&d->bytes, r->bytes);
	add(&d->dropped, r->dropped);
	add(&d->too_long, r->too_long);
	return r->rx_used;
}

static bool rx_empty(const struct scrub_dir *d)
{
	return fwd_rx_empty(d->rx_nifp, d->rx_lo, d->rx_hi);
}

static bool tx_pending(const struct scrub_dir *d)
{
	return fwd_tx_any_pending(d->tx_nifp, d->tx_lo, d->tx_hi);
}

/* At the end: let what is in the TX rings leave (up to 1 s). */
static void flush(struct scrub_thread *t)
{
	uint64_t end = fwd_now_ns() + 1000000000ull;

	for (;;) {
		bool pending = false;

		for (unsigned i = 0; i < t->ndir; i++) {
			if (tx_pending(&t->dir[i])) {
				pending = true;
				pktmap_txsync(t->dir[i].to);
			}
		}
		if (!pending || fwd_now_ns() >= end)
			return;
		struct pktmap_pollreq q[2];
		unsigned n = 0;

		for (unsigned i = 0; i < t->ndir; i++)
			if (tx_pending(&t->dir[i]))
				q[n++] = (struct pktmap_pollreq){
					.port = t->dir[i].to, .events = POLLOUT};
		if (n && pktmap_poll_many(q, n, 10) < 0)
			return;
	}
}

static int setup_dir(struct scrub_thread *t, int from, int to, char *err,
		     size_t errlen)
{
	struct scrub_dir *d = &t->dir[t->ndir];
	const struct pktmap_info *ri = &t->info[from], *ti = &t->info[to];
	bool has_rx = ri->last_rx_ring >= ri->first_rx_ring && ri->rx_slots;
	bool has_tx = ti->last_tx_ring >= ti->first_tx_ring && ti->tx_slots;

	if (!has_rx || !has_tx) {
		if (from == 1)
			return 0; /* no return direction (pcap:FILE/T) */
		snprintf(err, errlen, "%s: %s", has_rx ? ti->name : ri->name,
			 has_rx ? "the port has no TX ring" : "the port has no RX ring");
		return -EINVAL;
	}
	d->from = t->port[from];
	d->to = t->port[to];
	d->rx_nifp = pktmap_nifp(d->from);
	d->tx_nifp = pktmap_nifp(d->to);
	d->rx_lo = ri->first_rx_ring;
	d->rx_hi = ri->last_rx_ring;
	d->tx_lo = ti->first_tx_ring;
	d->tx_hi = ti->last_tx_ring;
	d->tx_usable = ti->buf_usable;
	d->judged = from == 0;
	t->ndir++;
	return 0;
}

int scrub_thread_setup(struct scrub_thread *t, uint32_t sources,
		       uint32_t dests, char *err, size_t errlen)
{
	int rc;

	for (int i = 0; i < 2; i++) {
		t->info[i].sz = sizeof(t->info[i]);
		rc = pktmap_info(t->port[i], &t->info[i]);
		if (rc) {
			snprintf(err, errlen, "port %d: %s", i, pktmap_strerror(rc));
			return rc;
		}
	}
	rc = setup_dir(t, 0, 1, err, errlen);
	if (!rc)
		rc = setup_dir(t, 1, 0, err, errlen);
	if (rc)
		return rc;
	t->zerocopy = !t->copy && fwd_same_region(&t->info[0], &t->info[1]);
	if (!t->batch)
		t->batch = 512;
	rc = scrub_worker_init(&t->w, t->id, sources, dests, 0);
	if (rc)
		snprintf(err, errlen, "the source and destination tables "
			 "(%u + %u entries): %s", sources, dests, strerror(-rc));
	return rc;
}

void scrub_thread_free(struct scrub_thread *t)
{
	scrub_worker_free(&t->w);
}

void scrub_thread_stop(struct scrub_thread *t)
{
	atomic_store_explicit(&t->stopping, 1, memory_order_relaxed);
}

static bool failed(struct scrub_thread *t, int rc)
{
	if (rc >= 0)
		return false;
	t->error = rc;
	t->end = "error";
	return true;
}

/* One round: both directions under one rule set, then the syncs.
 * Returns the RX slots used, or -1 on a sync error. */
static int64_t round_once(struct scrub_thread *t)
{
	struct scrub_view v = scrub_ctx_enter(t->ctx, t->id);
	uint64_t now = t->manual_ns ? atomic_load_explicit(t->manual_ns,
							   memory_order_relaxed)
				    : fwd_now_ns();
	struct round r[2] = {{0}, {0}};
	uint32_t m[2] = {0, 0};

	for (unsigned i = 0; i < t->ndir; i++)
		m[i] = move_dir(t, &t->dir[i], &v, now, &r[i]);
	scrub_ctx_leave(t->ctx, t->id);
	int rc = 0;

	for (unsigned i = 0; i < t->ndir && rc >= 0; i++) {
		if (!m[i])
			continue;
		if (r[i].packets)
			rc = pktmap_txsync(t->dir[i].to);
		if (rc >= 0)
			rc = pktmap_rxsync(t->dir[i].from);
	}
	if (failed(t, rc))
		return -1;
	return (int64_t)m[0] + m[1];
}

/* Nothing moved: wait for frames or TX room. Returns false to stop. */
static bool wait_ports(struct scrub_thread *t, bool started, uint64_t *t_last,
		       uint64_t *seen)
{
	struct pktmap_pollreq q[2];
	unsigned n = 0;

	for (unsigned i = 0; i < 2; i++) {
		/* port i receives for dir[i] and sends for dir[1 - i] */
		bool rx = i < t->ndir, tx = 1 - i < t->ndir;
		short ev = (short)((rx && rx_empty(&t->dir[i]) ? POLLIN : 0) |
				   (tx && !rx_empty(&t->dir[1 - i]) ? POLLOUT : 0));

		if (ev)
			q[n++] = (struct pktmap_pollreq){.port = t->port[i],
							 .events = ev};
	}
	fwd_pub(&t->polls, atomic_load_explicit(&t->polls, memory_order_relaxed) + 1);
	if (failed(t, pktmap_poll_many(q, n, FWD_POLL_MS)))
		return false;
	uint64_t now = fwd_now_ns();
	uint64_t moved = atomic_load_explicit(&t->rounds, memory_order_relaxed);

	if (moved != *seen) {
		*seen = moved;
		*t_last = now;
	}
	for (unsigned i = 0; i < n; i++) {
		if (q[i].revents & POLLERR) {
			failed(t, -EPROTO);
			return false;
		}
		if ((q[i].revents & POLLHUP) && q[i].port == t->port[0] &&
		    rx_empty(&t->dir[0])) {
			t->end = "eof";
			return false;
		}
	}
	if (t->idle_ns && started && now - *t_last >= t->idle_ns) {
		t->end = "idle";
		return false;
	}
	return true;
}

void scrub_thread_work(struct scrub_thread *t)
{
	uint64_t t_last = 0, seen = 0, rounds = 0;
	bool started = false;

	for (;;) {
		if (fwd_stopping(&t->stopping, t->stop)) {
			t->end = "signal";
			break;
		}
		int64_t m = round_once(t);

		if (m < 0)
			break;
		if (m > 0) {
			started = true;
			fwd_pub(&t->rounds, ++rounds);
			continue;
		}
		if (!wait_ports(t, started, &t_last, &seen))
			break;
	}
	if (!t->error)
		flush(t);
}
