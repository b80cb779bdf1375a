/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The inner loop of pktmap gen: fill free TX slots, submit them with one
 * txsync, sleep in pktmap_poll() only when every ring is full.
 *
 * Three fill loops, chosen once per batch, never per packet:
 *  - fast:   only slot->len is written; the buffers keep whatever frame
 *            they hold (the template, written once at the start);
 *  - seq:    one frame shape: stamp the stream's sequence number and fix
 *            the UDP checksum incrementally (RFC 1624);
 *  - vary:   lengths and/or addresses change: stamp all varying fields.
 * In the last two the whole template is written into a slot's buffer when
 * nothing is known of it: at the slot's first use, and whenever the slot
 * comes back with NS_BUF_CHANGED (the library swapped its buffer, as a
 * pipe does with every slot).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "util.h"
#include "gen.h"

/* How many slots ahead fill_* prefetch the buffer they will write. */
#define GEN_PREFETCH 8

/* A length in [lo, hi] without a division: multiply and shift. */
static inline uint32_t rand_len(uint64_t *s, uint32_t lo, uint32_t span)
{
	return lo + (uint32_t)(((pm_rng_next(s) >> 32) * span) >> 32);
}

static uint64_t fill_fast(struct gen_thread *g, struct netmap_ring *ring,
			  uint32_t i, uint32_t n)
{
	uint32_t lo = (uint32_t)g->o->len.lo;
	uint32_t span = (uint32_t)(g->o->len.hi - g->o->len.lo) + 1;
	uint64_t bytes = 0;

	/* At most two runs of consecutive slots: no wrap test per slot. */
	while (n) {
		uint32_t run = ring->num_slots - i < n ? ring->num_slots - i : n;
		struct netmap_slot *s = &ring->slot[i];

		if (span == 1) {
			for (uint32_t k = 0; k < run; k++) {
				s[k].len = (uint16_t)lo;
				s[k].flags = 0;
			}
			bytes += (uint64_t)run * lo;
		} else {
			for (uint32_t k = 0; k < run; k++) {
				uint32_t len = rand_len(&g->rng, lo, span);

				s[k].len = (uint16_t)len;
				s[k].flags = 0;
				bytes += len;
			}
		}
		n -= run;
		i = 0;
	}
	return bytes;
}

/* Copy the template into a buffer. Frames up to 64 bytes are copied as
 * a fixed 64 bytes (inline moves, no call): the template and the buffers
 * are at least that long. */
static inline void copy_tmpl(uint8_t *buf, const struct pkt_tmpl *t,
			     uint32_t len)
{
	if (len <= PKT_TMPL_MIN)
		memcpy(buf, t->frame, PKT_TMPL_MIN);
	else
		memcpy(buf, t->frame, len);
}

/* Start pulling the buffer of the slot `ahead` slots on into the cache,
 * for writing: over a pipe it was last touched by the other core. */
static inline void prefetch_buf(const struct netmap_ring *ring, uint32_t i,
				uint32_t k, uint32_t n)
{
	if (k + GEN_PREFETCH < n) {
		uint32_t j = i + GEN_PREFETCH;

		if (j >= ring->num_slots)
			j -= ring->num_slots;
		__builtin_prefetch(NETMAP_BUF(ring, ring->slot[j].buf_idx), 1);
	}
}

static uint64_t fill_seq(struct gen_thread *g, struct gen_ring *gr,
			 uint32_t i, uint32_t n)
{
	struct netmap_ring *ring = gr->ring;
	const struct pkt_tmpl *t = &gr->tmpl;
	uint16_t len = (uint16_t)g->o->len.lo;
	uint64_t seq = gr->seq;

	for (uint32_t k = 0; k < n; k++) {
		struct netmap_slot *s = &ring->slot[i];
		uint8_t *buf = (uint8_t *)NETMAP_BUF(ring, s->buf_idx);

		prefetch_buf(ring, i, k, n);
		/* NS_BUF_CHANGED: always over a pipe, rarely elsewhere */
		if ((s->flags & NS_BUF_CHANGED) || gr->wlen[i] < len) {
			copy_tmpl(buf, t, len);
			gr->wlen[i] = len;
		}
		pkt_stamp_seq(buf, t, seq++);
		s->len = len;
		s->flags = 0;
		i = nm_ring_next(ring, i);
	}
	gr->seq = seq;
	return (uint64_t)n * len;
}

/* Next addresses: source port fastest, then source address, destination
 * port, destination address, each wrapping within its range. */
static inline void odometer(struct gen_thread *g, struct pkt_fields *f)
{
	const struct gen_opts *o = g->o;

	if (++g->sport <= o->src.port_hi)
		goto out;
	g->sport = o->src.port_lo;
	if (++g->sip <= o->src.ip_hi)
		goto out;
	g->sip = o->src.ip_lo;
	if (++g->dport <= o->dst.port_hi)
		goto out;
	g->dport = o->dst.port_lo;
	if (++g->dip <= o->dst.ip_hi)
		goto out;
	g->dip = o->dst.ip_lo;
out:
	f->sip = (uint32_t)g->sip;
	f->dip = (uint32_t)g->dip;
	f->sport = (uint16_t)g->sport;
	f->dport = (uint16_t)g->dport;
}

static uint64_t fill_vary(struct gen_thread *g, struct gen_ring *gr,
			  uint32_t i, uint32_t n)
{
	struct netmap_ring *ring = gr->ring;
	const struct pkt_tmpl *t = &gr->tmpl;
	uint32_t lo = (uint32_t)g->o->len.lo;
	uint32_t span = (uint32_t)(g->o->len.hi - g->o->len.lo) + 1;
	struct pkt_fields f = {
		.sip = (uint32_t)g->sip, .dip = (uint32_t)g->dip,
		.sport = (uint16_t)g->sport, .dport = (uint16_t)g->dport,
		.seq = gr->seq,
	};
	uint64_t bytes = 0;

	for (uint32_t k = 0; k < n; k++) {
		struct netmap_slot *s = &ring->slot[i];
		uint8_t *buf = (uint8_t *)NETMAP_BUF(ring, s->buf_idx);
		uint32_t len = span == 1 ? lo : rand_len(&g->rng, lo, span);
		uint32_t have = gr->wlen[i];

		prefetch_buf(ring, i, k, n);
		if ((s->flags & NS_BUF_CHANGED) || have == 0) {
			copy_tmpl(buf, t, len);
			gr->wlen[i] = (uint16_t)len;
		} else if (have < len) {
			/* Ours, but shorter: the filler must be zeros. */
			memset(buf + have, 0, len - have);
			gr->wlen[i] = (uint16_t)len;
		}
		f.len = len;
		pkt_stamp(buf, t, &f);
		f.seq++;
		odometer(g, &f);
		s->len = (uint16_t)len;
		s->flags = 0;
		bytes += len;
		i = nm_ring_next(ring, i);
	}
	gr->seq = f.seq;
	return bytes;
}

/* Write the template into every free slot's buffer (--fast), once. */
static void prefill(struct gen_thread *g)
{
	for (unsigned k = 0; k < g->nrings; k++) {
		struct netmap_ring *ring = g->rings[k].ring;

		for (uint32_t i = ring->head; i != ring->tail;
		     i = nm_ring_next(ring, i))
			memcpy(NETMAP_BUF(ring, ring->slot[i].buf_idx),
			       g->rings[k].tmpl.frame, g->rings[k].tmpl.max_len);
	}
}

/* A token bucket on CLOCK_MONOTONIC: `rate` tokens a second, at most
 * `depth` saved up. The sender sleeps until `burst` tokens are there, so
 * it wakes at most rate/burst times a second; the depth (10 ms of tokens,
 * at least two bursts) absorbs a late wake-up without losing rate, yet an
 * idle spell (a full ring) is not made up for with a flood. Read once per
 * batch. */
struct bucket {
	uint64_t rate, burst, depth;
	uint64_t t0;     /* ns */
	uint64_t used;   /* tokens spent since t0 (plus those forfeited) */
};

static void bucket_init(struct bucket *b, uint64_t rate, uint32_t batch)
{
	b->rate = rate;
	b->burst = rate / 1000 > batch ? batch : rate / 1000;
	if (b->burst == 0)
		b->burst = 1;
	b->depth = rate / 100 > 2 * b->burst ? rate / 100 : 2 * b->burst;
	/* Wake up on time: the default timer slack is 50 us. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}

static uint64_t bucket_credit(struct bucket *b, uint64_t now)
{
	uint64_t earned = (uint64_t)((unsigned __int128)(now - b->t0) *
				     b->rate / 1000000000u);

	if (earned - b->used > b->depth)
		b->used = earned - b->depth; /* idle time is not saved up */
	return earned - b->used;
}

/* Sleep until `want` tokens are there (or a stop is asked for). */
static void bucket_wait(struct bucket *b, uint64_t want)
{
	uint64_t due = b->t0 + (uint64_t)((unsigned __int128)(b->used + want) *
					  1000000000u / b->rate);
	struct timespec ts = {
		.tv_sec = (time_t)(due / 1000000000u),
		.tv_nsec = (long)(due % 1000000000u),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
		       EINTR &&
	       !run_stopping())
		;
}

/* Keep syncing until nothing is in flight or 2 s have passed. cur is set
 * to tail so that pktmap_poll() sleeps until tail moves. Returns the slots
 * still in flight. */
static uint64_t flush(struct pktmap_port *port, struct gen_thread *g)
{
	uint64_t end = stats_now_ns() + 2000000000ull, left = 0;

	for (;;) {
		bool pending = false;
		uint64_t now;

		for (unsigned k = 0; k < g->nrings; k++) {
			struct netmap_ring *ring = g->rings[k].ring;

			if (nm_tx_pending(ring)) {
				pending = true;
				ring->cur = ring->tail;
			}
		}
		now = stats_now_ns();
		if (!pending || now >= end)
			break;
		if (pktmap_poll(port, POLLOUT,
				(int)((end - now) / 1000000u) + 1) < 0)
			break;
	}
	for (unsigned k = 0; k < g->nrings; k++) {
		struct netmap_ring *ring = g->rings[k].ring;
		uint32_t n = ring->num_slots;

		ring->cur = ring->head;
		left += (ring->head + 2 * n - ring->tail - 1) % n;
	}
	return left;
}

int gen_work(struct run_worker *w)
{
	struct gen_thread *g = w->arg;
	struct stats_thread *st = w->st;
	struct pktmap_port *port = w->port;
	const struct gen_opts *o = g->o;
	uint64_t sent = 0, bytes = 0, syncs = 0, credit = UINT64_MAX;
	struct bucket b = {0};
	int rc = 0;

	if (o->fast)
		prefill(g);
	if (g->rate)
		bucket_init(&b, g->rate, o->batch);
	b.t0 = stats_now_ns();
	run_pub(&st->t_first, b.t0);

	while (!run_stopping()) {
		uint64_t left = g->limited ? g->count - sent : UINT64_MAX;
		uint64_t filled = 0, nb = 0;

		if (left == 0) {
			w->end = "count";
			break;
		}
		if (g->rate) {
			credit = bucket_credit(&b, stats_now_ns());
			if (credit == 0) {
				bucket_wait(&b, left < b.burst ? left : b.burst);
				continue;
			}
			/* reclaim what went out while we slept */
			rc = pktmap_txsync(port);
			if (rc < 0)
				break;
		}
		for (unsigned k = 0; k < g->nrings; k++) {
			struct gen_ring *gr = &g->rings[k];
			struct netmap_ring *ring = gr->ring;
			uint64_t n = nm_ring_space(ring);
			uint32_t head = ring->head;

			if (n > o->batch)
				n = o->batch;
			if (n > left - filled)
				n = left - filled;
			if (n > credit - filled)
				n = credit - filled;
			if (n == 0)
				continue;
			if (o->fast)
				nb += fill_fast(g, ring, head, (uint32_t)n);
			else if (g->vary)
				nb += fill_vary(g, gr, head, (uint32_t)n);
			else
				nb += fill_seq(g, gr, head, (uint32_t)n);
			head += (uint32_t)n;
			if (head >= ring->num_slots)
				head -= ring->num_slots;
			ring->head = ring->cur = head;
			filled += n;
		}
		if (filled == 0) {
			/* every ring full: sleep until one has room */
			rc = pktmap_poll(port, POLLOUT, RUN_POLL_MS);
			if (rc > 0 && (rc & POLLERR))
				rc = -EPROTO; /* the library logged why */
			if (rc < 0)
				break;
			continue;
		}
		rc = pktmap_txsync(port);
		if (rc < 0)
			break;
		if (g->rate)
			b.used += filled;
		sent += filled;
		bytes += nb;
		syncs++;
		run_pub(&st->packets, sent);
		run_pub(&st->bytes, bytes);
		run_pub(&st->syncs, syncs);
	}
	run_pub(&st->t_last, stats_now_ns());
	if (rc < 0) {
		snprintf(w->err, sizeof(w->err), "gen: %s: sync failed: %s",
			 st->port, pktmap_strerror(rc));
		return 1;
	}
	st->pending = flush(port, g);
	st->lib.sz = sizeof(st->lib);
	pktmap_stats(port, &st->lib);
	return 0;
}
