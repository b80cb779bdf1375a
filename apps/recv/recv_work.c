/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The inner loop of pktmap recv: pktmap_poll() for POLLIN, consume
 * [head, tail) of every bound RX ring, give the slots back by moving head.
 *
 * Two consume loops, chosen once per batch: --fast only reads the slots
 * (lengths and NS_MOREFRAG); the other one also looks at the first bytes
 * of every packet: the payload header of pktmap's frames (stream, seq), the
 * checksums with --csum, and the hex dump with --dump. A packet spread over
 * several slots (NS_MOREFRAG on all but the last) is counted once, at its
 * last slot, and checked at its first.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recv.h"
#include "util.h"

#define NSTREAMS 65536
/* How many slots ahead consume_check() prefetches the frame it will read. */
#define RECV_PREFETCH 8

/* Counts of one batch; added to the thread's totals after it. */
struct counts {
	uint64_t packets, bytes, gaps, reordered, bad, bad_csum;
};

static uint32_t consume_fast(struct recv_thread *t, struct netmap_ring *ring,
			     uint32_t n, struct counts *c)
{
	uint32_t i = ring->head, last = i;
	uint64_t bytes = 0, frags = 0, slots = n;

	/* At most two runs of consecutive slots: no wrap test per slot. */
	while (n) {
		uint32_t run = ring->num_slots - i < n ? ring->num_slots - i : n;
		const struct netmap_slot *s = &ring->slot[i];

		for (uint32_t k = 0; k < run; k++) {
			bytes += s[k].len;
			frags += (s[k].flags & NS_MOREFRAG) != 0;
		}
		last = i + run - 1;
		n -= run;
		i += run;
		if (i == ring->num_slots)
			i = 0;
	}
	if (slots)
		t->in_chain = (ring->slot[last].flags & NS_MOREFRAG) != 0;
	c->bytes += bytes;
	c->packets += slots - frags;
	return i;
}

static void dump(struct run_worker *w, struct netmap_ring *ring, uint32_t i,
		 const uint8_t *buf, uint32_t len)
{
	struct recv_thread *t = w->arg;
	FILE *o = w->run->stats.out;
	int64_t left = atomic_fetch_sub_explicit(&t->sh->dump_left, 1,
						 memory_order_relaxed);
	uint16_t stream;
	uint64_t seq;

	if (left <= 0) {
		t->dumping = false;
		return;
	}
	flockfile(o);
	fprintf(o, "recv %s: ring %u slot %u len %u%s", w->st->port,
		ring->ringid, i, len,
		(ring->slot[i].flags & NS_MOREFRAG) ? " (more fragments)" : "");
	if (pkt_parse(buf, len, &stream, &seq))
		fprintf(o, " stream %u seq %llu\n", stream,
			(unsigned long long)seq);
	else
		fprintf(o, " (not a pktmap frame)\n");
	pkt_hexdump(o, buf, len);
	funlockfile(o);
	fflush(o);
}

/* Account one packet's header: stream and sequence number, or not ours. */
static inline void check(struct recv_thread *t, const uint8_t *buf,
			 uint32_t len, struct counts *c)
{
	uint16_t stream;
	uint64_t seq, e;

	if (pm_unlikely(!pkt_parse(buf, len, &stream, &seq))) {
		c->bad++;
		return;
	}
	if (pm_unlikely(stream == PKT_STREAM_NOSEQ))
		return;
	e = t->expect[stream];
	if (pm_likely(e == seq + 1 || e == 0)) {
		t->expect[stream] = seq + 2;
	} else if (seq + 1 > e) {
		c->gaps += seq + 1 - e;
		t->expect[stream] = seq + 2;
	} else {
		/* Late: it fills a hole counted as a gap when it was skipped
		 * (several rings of one stream, e.g. a fanout group). */
		c->reordered++;
		if (c->gaps)
			c->gaps--;
	}
}

static uint32_t consume_check(struct run_worker *w, struct netmap_ring *ring,
			      uint32_t n, struct counts *c)
{
	struct recv_thread *t = w->arg;
	const struct recv_opts *o = t->o;
	uint32_t i = ring->head;
	bool chain = t->in_chain;

	for (uint32_t k = 0; k < n; k++) {
		const struct netmap_slot *s = &ring->slot[i];
		uint32_t len = s->len;

		if (k + RECV_PREFETCH < n) {
			/* the frame was written on the other core: fetch
			 * it while the ones before it are checked */
			uint32_t j = i + RECV_PREFETCH;

			if (j >= ring->num_slots)
				j -= ring->num_slots;
			__builtin_prefetch(NETMAP_BUF(ring, ring->slot[j].buf_idx));
		}
		c->bytes += len;
		if (!chain) {
			const uint8_t *buf =
				(const uint8_t *)NETMAP_BUF(ring, s->buf_idx);

			if (o->verify)
				check(t, buf, len, c);
			if (o->csum && !(s->flags & NS_MOREFRAG) &&
			    pkt_check_csums(buf, len))
				c->bad_csum++;
			if (pm_unlikely(t->dumping))
				dump(w, ring, i, buf, len);
		}
		chain = (s->flags & NS_MOREFRAG) != 0;
		c->packets += !chain;
		i = nm_ring_next(ring, i);
	}
	t->in_chain = chain;
	return i;
}

/* Consume up to `limit` slots of every ring. Returns the slots taken. */
static uint64_t consume(struct run_worker *w, uint64_t limit, struct counts *c)
{
	struct recv_thread *t = w->arg;
	const struct recv_opts *o = t->o;
	uint64_t got = 0;

	for (unsigned k = 0; k < t->nrings && got < limit; k++) {
		struct netmap_ring *ring = t->rings[k];
		uint64_t n = nm_ring_space(ring);

		if (o->batch && n > o->batch)
			n = o->batch;
		if (n > limit - got)
			n = limit - got;
		if (n == 0)
			continue;
		if (o->fast && !t->dumping)
			ring->head = consume_fast(t, ring, (uint32_t)n, c);
		else
			ring->head = consume_check(w, ring, (uint32_t)n, c);
		ring->cur = ring->head;
		got += n;
	}
	return got;
}

static bool at_eof(struct pktmap_port *port, int rev)
{
	struct pktmap_info info = {.sz = sizeof(info)};

	if (rev & POLLHUP)
		return true;
	return pktmap_info(port, &info) == 0 && (info.flags & PKTMAP_INFO_EOF);
}

int recv_work(struct run_worker *w)
{
	struct recv_thread *t = w->arg;
	const struct recv_opts *o = t->o;
	struct stats_thread *st = w->st;
	struct pktmap_port *port = w->port;
	struct counts c = {0};
	uint64_t syncs = 0, t0 = 0, t_last = 0, seen = 0, now;
	bool started = false, was_empty = false;
	uint64_t idle_ns = (uint64_t)(o->idle * 1e9);
	int rc = 0;

	t->expect = calloc(NSTREAMS, sizeof(*t->expect));
	if (!t->expect) {
		snprintf(w->err, sizeof(w->err), "recv: out of memory");
		return 1;
	}
	t->dumping = o->dump > 0;
	for (;;) {
		uint64_t limit = UINT64_MAX, before = c.packets;

		if (run_stopping())
			break;
		if (o->count) {
			uint64_t total = atomic_load_explicit(&t->sh->total,
							      memory_order_relaxed);
			if (total >= o->count) {
				w->end = "count";
				break;
			}
			limit = o->count - total;
		}
		/* Sleep only after a look that found nothing, so that the
		 * clock read below dates the last packet, not a time-out. */
		rc = pktmap_poll(port, POLLIN, was_empty ? RUN_POLL_MS : 0);
		if (rc > 0 && (rc & POLLERR))
			rc = -ECANCELED; /* the library logged why */
		if (rc < 0)
			break;
		if (pm_unlikely(!started))
			t0 = stats_now_ns(); /* the first batch's arrival */
		if (consume(w, limit, &c)) {
			if (pm_unlikely(!started && c.packets)) {
				started = true;
				run_pub(&st->t_first, t0);
			}
			if (o->count)
				atomic_fetch_add_explicit(&t->sh->total,
							  c.packets - before,
							  memory_order_relaxed);
			syncs++;
			run_pub(&st->packets, c.packets);
			run_pub(&st->bytes, c.bytes);
			run_pub(&st->syncs, syncs);
			if (o->verify || o->csum) {
				run_pub(&st->gaps, c.gaps);
				run_pub(&st->reordered, c.reordered);
				run_pub(&st->bad, c.bad);
				run_pub(&st->bad_csum, c.bad_csum);
			}
			was_empty = false;
			continue;
		}
		/* Nothing there: the only place the clock is read. */
		was_empty = true;
		now = stats_now_ns();
		if (seen != c.packets) {
			seen = c.packets;
			t_last = now;
			run_pub(&st->t_last, t_last);
		}
		if (at_eof(port, rc)) {
			w->end = "eof";
			break;
		}
		if (idle_ns && c.packets && now - t_last >= idle_ns) {
			w->end = "idle";
			break;
		}
	}
	if (seen != c.packets)
		run_pub(&st->t_last, stats_now_ns());
	if (rc == -ECANCELED) {
		/* POLLERR: the port's own error line said what and where */
		snprintf(w->err, sizeof(w->err), "recv: %s: stopped on the "
			 "error above", st->port);
	} else if (rc < 0) {
		snprintf(w->err, sizeof(w->err), "recv: %s: %s", st->port,
			 pktmap_strerror(rc));
	} else {
		pktmap_rxsync(port); /* give the last slots back */
	}
	st->lib.sz = sizeof(st->lib);
	pktmap_stats(port, &st->lib);
	free(t->expect);
	t->expect = NULL;
	return rc < 0;
}
