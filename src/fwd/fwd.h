/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The forwarding component of pktmap: what moves frames among ports
 * inside one process, above the port API (pktmap.h, spsc.h) and below the
 * command line. The router (router.h: MapRouter's stages, queues and
 * threads), the bridge loop (bridge.h) and what they share, declared
 * here: the TSC and thread-CPU clocks, the sleeping flag + eventfd pair
 * that wakes an idle thread, CPU pinning, region and ring helpers.
 *
 * Rules of the component: every object is an explicit context the caller
 * owns (struct rt_router, struct bridge); work stops when the context's
 * own stop flag or the caller's (cfg.stop) is set; nothing prints, nothing
 * exits: errors come back as -errno with a one-line message in the
 * context's err[]. The `pktmap router` and `pktmap bridge` commands are
 * thin command lines over it (apps/router, apps/bridge); a switch builds
 * on the same pieces.
 */
#ifndef PKTMAP_FWD_FWD_H
#define PKTMAP_FWD_FWD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <pktmap/pktmap.h>

#include "util.h" /* pm_rng_next(), pm_parse_ipv4(): below the library */

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* How long a thread sleeps in one wait before it looks at its stop flags
 * again (ms). */
#define FWD_POLL_MS 200

/* Buffers a region needs per port that lives in it: a default pipe
 * (4 rings of 1024) or an xdp port (fill, RX and TX rings) with room to
 * spare. */
#define FWD_BUFS_PER_PORT 10240u

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t fwd_now_ns(void)
{
	return pm_clock_ns(CLOCK_MONOTONIC);
}

/* TSC ticks (x86), or nanoseconds elsewhere: only differences are used,
 * and bench/ converts them with the measured TSC rate. */
static inline uint64_t fwd_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return fwd_now_ns();
#endif
}

/* Publish a counter another thread reads (relaxed: a report, not a
 * synchronisation). */
static inline void fwd_pub(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}

/* Is either stop flag set? `ext` (the caller's, may be NULL) and the
 * context's own. */
static inline bool fwd_stopping(const atomic_int *own, const atomic_int *ext)
{
	return atomic_load_explicit(own, memory_order_relaxed) ||
	       (ext && atomic_load_explicit(ext, memory_order_relaxed));
}

/* CPU time of the calling thread, ns: unlike the TSC it does not run
 * while the thread is preempted, which on a machine with more busy
 * threads than cores is most of the difference. A system call: read it
 * per span of rounds, not per round (struct fwd_span). */
static inline uint64_t fwd_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU time of a thread's rounds, waits left out: a span opens at the
 * start of a round and closes before the thread waits, or after
 * FWD_SPAN_ROUNDS busy rounds, so the clock is read twice per span. */
#define FWD_SPAN_ROUNDS 64

struct fwd_span {
	uint64_t start, total;
	unsigned rounds;
	bool open;
};

/* At the start of every round. */
static inline void fwd_span_round(struct fwd_span *s)
{
	if (!s->open) {
		s->start = fwd_thread_cpu_ns();
		s->open = true;
		s->rounds = 0;
	}
}

/* After a round that moved something. */
static inline void fwd_span_busy(struct fwd_span *s)
{
	if (++s->rounds == FWD_SPAN_ROUNDS) {
		s->total += fwd_thread_cpu_ns() - s->start;
		s->open = false;
	}
}

/* Before waiting. */
static inline void fwd_span_close(struct fwd_span *s)
{
	if (s->open) {
		s->total += fwd_thread_cpu_ns() - s->start;
		s->open = false;
	}
}

/* The buffers to ask for (pktmap_open_opts.bufs) when opening names[i]:
 * when it names a region with @mem:NAME and says nothing of its size, room
 * for every port of names[] in that region, FWD_BUFS_PER_PORT plus
 * `extra` each: the first open creates the region, and it must hold the
 * ports opened after it. 0 otherwise (the back end's own sizing). Names
 * are read with the library's parser (pktmap_name_parse). */
uint32_t fwd_region_bufs(const char *const *names, unsigned n, unsigned i,
			 uint32_t extra);

/* Pin the calling thread to `cpu` (no-op for cpu < 0). Returns 0 or an
 * errno value. */
int fwd_pin(int cpu);

/* A thread that may sleep until another one hands it work. The sleeper
 * announces itself (flag), fences, looks for work once more, and only
 * then waits on the eventfd; the waker publishes its work, fences, and
 * writes the eventfd only when the flag is set (the Dekker pattern of the
 * pipes' wake-ups, docs/design.md): no wake-up is lost and none is sent
 * to a thread that is awake. */
struct fwd_waiter {
	_Alignas(PKTMAP_CACHELINE) atomic_int sleeping;
	int fd; /* eventfd */
};

/* Returns 0 or -errno. */
int fwd_waiter_init(struct fwd_waiter *w);
void fwd_waiter_fini(struct fwd_waiter *w);

/* Sleeper: announce (then look for work once more before fwd_wait()). */
static inline void fwd_waiter_arm(struct fwd_waiter *w)
{
	atomic_store_explicit(&w->sleeping, 1, memory_order_relaxed);
	/* Pairs with the fence in fwd_wake(). */
	atomic_thread_fence(memory_order_seq_cst);
}

/* Sleeper: wait up to timeout_us (-1: no limit), then disarm. */
void fwd_wait(struct fwd_waiter *w, int64_t timeout_us);

/* Sleeper: work was found after arming; do not sleep. */
static inline void fwd_waiter_disarm(struct fwd_waiter *w)
{
	atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
}

/* Waker: after publishing work (a release store), wake the sleeper if it
 * said it sleeps. */
void fwd_wake_slow(struct fwd_waiter *w);

static inline void fwd_wake(struct fwd_waiter *w)
{
	/* Pairs with the fence in fwd_waiter_arm(): either the sleeper sees
	 * our work when it looks once more, or we see its flag. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->sleeping, memory_order_relaxed))
		fwd_wake_slow(w);
}

/* Wake the sleeper whatever it said (to make it look at a stop flag). */
void fwd_wake_always(struct fwd_waiter *w);

/* Frames in a TX ring submitted but not yet taken by the back end. */
static inline uint32_t fwd_tx_pending(const struct netmap_ring *ring)
{
	uint32_t n = ring->num_slots;

	return (ring->head + 2 * n - ring->tail - 1) % n;
}

/* Are RX rings lo..hi of an interface all empty? */
static inline bool fwd_rx_empty(const struct netmap_if *nifp, uint32_t lo,
				uint32_t hi)
{
	for (uint32_t i = lo; i <= hi; i++)
		if (!nm_ring_empty(NETMAP_RXRING(nifp, i)))
			return false;
	return true;
}

/* Has any of TX rings lo..hi frames not yet taken by the back end? */
static inline bool fwd_tx_any_pending(const struct netmap_if *nifp,
				      uint32_t lo, uint32_t hi)
{
	for (uint32_t i = lo; i <= hi; i++)
		if (fwd_tx_pending(NETMAP_TXRING(nifp, i)))
			return true;
	return false;
}

/* Do names a and b open the same rings of the same port (one back end,
 * interface or pipe, end, ring and pipe number; flags and options
 * aside)? A forwarder given one port twice would be its own peer: its
 * two stages would sync the same rings (names that do not parse: no). */
bool fwd_same_port(const char *a, const char *b);
/* The first name of names[0..n) that repeats an earlier one (that one's
 * index in *first), or -1. */
int fwd_repeated_port(const char *const *names, unsigned n, unsigned *first);

/* "same region": both ports' buffers live in one named region (one
 * memory: its device and inode, not only its name) with one buffer size,
 * so a buffer index means the same buffer to both and can be moved
 * instead of the bytes. */
bool fwd_same_region(const struct pktmap_info *a, const struct pktmap_info *b);
/* A nonzero number shared by the ports whose buffers are in one named
 * region's memory (its device and inode, not its name), 0 for a private
 * one: the switch's zero-copy group. */
uint64_t fwd_memory_group(const struct pktmap_info *info);

#endif /* PKTMAP_FWD_FWD_H */
