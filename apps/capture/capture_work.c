/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The loop of one capture worker: pktmap_poll() for POLLIN, then every
 * packet in [head, tail) of the bound RX rings is stamped, run through
 * the filter and appended to the output, and the slots go back by moving
 * head. Packets are read in place in the shared buffers, and written from
 * there: each record is queued by reference (its header in the buffer's
 * headroom when there is room), and the batch goes to the file in large
 * writev() calls before the slots are given back; only chains (NS_MOREFRAG)
 * and pcapng records are copied into the writer's buffer. The filter runs
 * in the kernel where the port has one (pkt:): here only on the packets
 * that were queued before it was attached.
 *
 * Time stamps: back ends that stamp each frame (pkt:, tap:, pcap:) leave
 * it in slot->ptr; for the others (xdp:, pipe:, ...) a packet gets the
 * time of the sync that brought it in, read once per batch. With several
 * rings the packets of a batch are merged by time stamp (stable: ring
 * order among equal stamps), so one file is in time order batch by batch.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "run.h"
#include "util.h"

#define CAP_POLL_MS 200
#define CAP_MAX_FRAGS 32
/* Batching for ports that deliver packets a few at a time (xdp: on
 * veth wakes its reader every two or three frames): after a batch of
 * fewer than CAP_COALESCE_MIN packets, let the ring fill for
 * CAP_COALESCE_NS before the next sync, as TPACKET_V3's block timeout
 * does for AF_PACKET. The ring (8192 slots by default) holds many times
 * that at any rate a core can capture. */
#define CAP_COALESCE_MIN 64
#define CAP_COALESCE_NS 50000
/* How often the port's drop counters are read while running. */
#define CAP_STATS_NS 200000000ull

/* What one batch did; added to the published counters after it. */
struct batch {
	uint64_t received, matched;
	int stop;             /* 1: -c reached, 2: -G -W done, <0: error */
};

static inline uint64_t slot_ts(const struct cap_worker *w,
			       const struct netmap_slot *s, uint64_t now)
{
	return w->ts_from_ptr ? s->ptr : now;
}

/* Whether -c allows one more matched packet (and take it). */
static inline bool take_one(struct cap_worker *w, uint64_t *local)
{
	struct capture *cap = w->cap;
	uint64_t count = cap->o.count;

	if (pm_likely(!count))
		return true;
	if (cap->nworkers == 1)
		return (*local)++ < count;
	return atomic_fetch_add_explicit(&cap->matched_total, 1,
					 memory_order_relaxed) < count;
}

/* The packet starting at slot i, spanning slots while NS_MOREFRAG is set:
 * at most `avail` slots. Returns how many slots it takes, or 0 when its
 * last fragment has not arrived yet. */
static inline uint32_t gather(const struct netmap_ring *ring, uint32_t i,
			      uint32_t avail, struct iovec *iov, unsigned *niov,
			      uint32_t *len)
{
	uint32_t k = 0, total = 0;
	unsigned n = 0;

	for (;;) {
		const struct netmap_slot *s = &ring->slot[i];

		if (n < CAP_MAX_FRAGS) {
			iov[n].iov_base = NETMAP_BUF(ring, s->buf_idx);
			iov[n].iov_len = s->len;
			n++;
		}
		total += s->len;
		k++;
		if (pm_likely(!(s->flags & NS_MOREFRAG)))
			break;
		if (k == avail)
			return 0;
		i = nm_ring_next(ring, i);
	}
	*niov = n;
	*len = total;
	return k;
}

/* Filter and write one packet. Returns 0 to go on, or stop/error as
 * struct batch's `stop`. */
static inline int one(struct cap_worker *w, const struct iovec *iov,
		      unsigned niov, uint32_t len, uint64_t ts,
		      struct batch *b, uint64_t *taken)
{
	struct capture *cap = w->cap;
	int rc;

	b->received++;
	if (cap->prog.bf_len && (!w->kfilter || w->ufilter_left)) {
		if (w->ufilter_left)
			w->ufilter_left--;
		if (!bpf_filter(cap->prog.bf_insns, iov[0].iov_base, len,
				(u_int)iov[0].iov_len))
			return 0;
	}
	if (!take_one(w, taken)) {
		b->received--; /* left in the ring, not taken */
		return 1;
	}
	b->matched++;
	if (!cap->o.file)
		return 0;
	if (pm_likely(niov == 1))
		rc = cap_out_write_ref(&w->out, iov[0].iov_base, len, w->headroom,
				       ts, w->err, sizeof(w->err));
	else
		rc = cap_out_write(&w->out, iov, niov, len, len, ts, w->err,
				   sizeof(w->err));
	if (pm_unlikely(rc))
		return rc > 0 ? 2 : rc;
	return 0;
}

/* Whether this batch can go to the file slot run by slot run: pcap
 * records by reference with their headers in the headroom, nothing to
 * decide per packet (no filter here, no -c, no rotation). */
static inline bool fast_batch(const struct cap_worker *w)
{
	return w->fast && w->out.w && !w->out.done &&
	       (!w->cap->prog.bf_len || (w->kfilter && !w->ufilter_left));
}

/* Drain one ring. */
static void drain_one(struct cap_worker *w, struct netmap_ring *ring,
		      uint64_t now, struct batch *b, uint64_t *taken)
{
	uint32_t i = ring->head, avail = nm_ring_space(ring);
	struct iovec iov[CAP_MAX_FRAGS];
	bool fast = fast_batch(w);

	while (avail) {
		const struct netmap_slot *s = &ring->slot[i];
		unsigned niov;
		uint32_t len, k;

		if (fast && pm_likely(!(s->flags & NS_MOREFRAG))) {
			uint32_t want = avail;
			uint64_t count = w->cap->o.count; /* one worker here */

			if (count) {
				if (*taken >= count) {
					b->stop = 1;
					break;
				}
				if (want > count - *taken)
					want = (uint32_t)(count - *taken);
			}
			int n = pktmap_pcapw_write_slots(w->out.w, ring, i, want,
							 w->ts_from_ptr, now,
							 w->headroom);
			if (pm_unlikely(n < 0)) {
				snprintf(w->err, sizeof(w->err), "%s: %s",
					 w->out.name, pktmap_strerror(n));
				b->stop = n;
				break;
			}
			b->received += (uint32_t)n;
			b->matched += (uint32_t)n;
			w->out.file_packets += (uint32_t)n;
			*taken += (uint32_t)n;
			i += (uint32_t)n;
			if (i >= ring->num_slots)
				i -= ring->num_slots;
			avail -= (uint32_t)n;
			if (n)
				continue;
		}

		if (pm_likely(!(s->flags & NS_MOREFRAG))) {
			iov[0].iov_base = NETMAP_BUF(ring, s->buf_idx);
			iov[0].iov_len = len = s->len;
			niov = 1;
			k = 1;
		} else {
			k = gather(ring, i, avail, iov, &niov, &len);
			if (!k)
				break; /* the rest of the chain comes later */
		}
		b->stop = one(w, iov, niov, len, slot_ts(w, s, now), b, taken);
		if (pm_unlikely(b->stop)) {
			if (b->stop > 1 || b->stop < 0)
				i = i + k >= ring->num_slots ? i + k - ring->num_slots
							      : i + k;
			break;
		}
		i += k;
		if (i >= ring->num_slots)
			i -= ring->num_slots;
		avail -= k;
	}
	ring->head = ring->cur = i;
}

/* Drain several rings into one output in time-stamp order. */
static void drain_merge(struct cap_worker *w, uint64_t now, struct batch *b,
			uint64_t *taken)
{
	uint32_t pos[CAP_MAX_WORKERS], left[CAP_MAX_WORKERS];
	struct iovec iov[CAP_MAX_FRAGS];
	unsigned nr = w->nrings;

	for (unsigned r = 0; r < nr; r++) {
		pos[r] = w->rings[r]->head;
		left[r] = nm_ring_space(w->rings[r]);
	}
	for (;;) {
		unsigned best = nr;
		uint64_t best_ts = UINT64_MAX;

		for (unsigned r = 0; r < nr; r++) {
			if (!left[r])
				continue;
			uint64_t t = slot_ts(w, &w->rings[r]->slot[pos[r]], now);
			if (best == nr || t < best_ts) {
				best = r;
				best_ts = t;
			}
		}
		if (best == nr)
			break;
		struct netmap_ring *ring = w->rings[best];
		unsigned niov;
		uint32_t len;
		uint32_t k = gather(ring, pos[best], left[best], iov, &niov, &len);

		if (!k) { /* an incomplete chain: that ring waits */
			left[best] = 0;
			continue;
		}
		b->stop = one(w, iov, niov, len, best_ts, b, taken);
		if (b->stop == 1)
			break;
		pos[best] = (pos[best] + k) % ring->num_slots;
		left[best] -= k;
		if (b->stop)
			break;
	}
	for (unsigned r = 0; r < nr; r++)
		w->rings[r]->head = w->rings[r]->cur = pos[r];
}

static void publish_lib(struct cap_worker *w)
{
	struct pktmap_stats st = {.sz = sizeof(st)};

	if (pktmap_stats(w->port, &st) == 0) {
		atomic_store_explicit(&w->c.drop_kernel, st.drop_backend,
				      memory_order_relaxed);
		atomic_store_explicit(&w->c.drop_port,
				      st.drop_too_long + st.drop_invalid,
				      memory_order_relaxed);
		w->lib = st;
	}
}

static void pub(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}

void *cap_work(void *arg)
{
	struct cap_worker *w = arg;
	const struct capture_opts *o = &w->cap->o;
	uint64_t received = 0, matched = 0, taken = 0;
	uint64_t next_stats = 0, t_last = 0, idle_ns = (uint64_t)(o->idle * 1e9);
	bool started = false;
	int rc = 0;

	for (;;) {
		struct batch b = {0};
		uint64_t now;

		if (run_stopping()) {
			w->end = "signal";
			break;
		}
		rc = pktmap_poll(w->port, POLLIN, CAP_POLL_MS);
		if (rc < 0) {
			snprintf(w->err, sizeof(w->err), "%s: %s", w->portname,
				 pktmap_strerror(rc));
			break;
		}
		now = pm_clock_ns(CLOCK_REALTIME);
		if (w->nrings == 1)
			drain_one(w, w->rings[0], now, &b, &taken);
		else
			drain_merge(w, now, &b, &taken);
		/* Before the next sync gives the slots back. */
		if (o->file && b.matched && b.stop >= 0 &&
		    cap_out_flush(&w->out, w->err, sizeof(w->err)))
			b.stop = -EIO;
		if (b.received) {
			received += b.received;
			matched += b.matched;
			pub(&w->c.received, received);
			pub(&w->c.matched, matched);
			if (o->file) {
				pub(&w->c.written, matched - (b.stop == 2));
				pub(&w->c.bytes, w->out.bytes_closed +
					(w->out.w ? pktmap_pcapw_bytes(w->out.w) : 0));
				pub(&w->c.files, w->out.files);
			}
			if (!started) {
				started = true;
				pub(&w->c.t_first, now);
			}
			t_last = now;
			pub(&w->c.t_last, now);
		}
		if (now >= next_stats) {
			publish_lib(w);
			next_stats = now + CAP_STATS_NS;
		}
		if (!b.stop && o->count &&
		    (w->cap->nworkers == 1
			     ? taken >= o->count
			     : atomic_load_explicit(&w->cap->matched_total,
						    memory_order_relaxed) >=
				       o->count))
			b.stop = 1;
		if (b.stop) {
			if (b.stop < 0)
				rc = b.stop;
			else
				w->end = b.stop == 1 ? "count" : "files";
			break;
		}
		if (w->coalesce && b.received && b.received < CAP_COALESCE_MIN) {
			struct timespec d = {0, CAP_COALESCE_NS};

			nanosleep(&d, NULL);
		}
		if (!b.received) {
			struct pktmap_info info = {.sz = sizeof(info)};

			if ((rc & POLLHUP) ||
			    (pktmap_info(w->port, &info) == 0 &&
			     (info.flags & PKTMAP_INFO_EOF))) {
				w->end = "eof";
				rc = 0;
				break;
			}
			if (idle_ns && started && now - t_last >= idle_ns) {
				w->end = "idle";
				rc = 0;
				break;
			}
		}
		rc = 0;
	}
	if (rc >= 0)
		pktmap_rxsync(w->port); /* give the last slots back */
	if (o->file) {
		char err[512];

		if (cap_out_close(&w->out, err, sizeof(err)) && !w->err[0])
			snprintf(w->err, sizeof(w->err), "%s", err);
		pub(&w->c.bytes, w->out.bytes_closed);
		pub(&w->c.files, w->out.files);
	}
	publish_lib(w);
	return NULL;
}
