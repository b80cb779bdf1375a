/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What the forwarding commands (bridge, router) share: opening a port with
 * its error on one line, the TSC for cycle counts, CPU lists, the sleeping
 * flag + eventfd pair that wakes an idle thread, and bits of JSON output.
 */
#ifndef PKTMAP_APPS_FWD_H
#define PKTMAP_APPS_FWD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <pktmap/pktmap.h>

#include "run.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* TSC ticks (x86), or nanoseconds elsewhere: only differences are used,
 * and bench/ converts them with the measured TSC rate. */
static inline uint64_t fwd_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return stats_now_ns();
#endif
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

/* Open `name` with the options `o` (o->errbuf is set here: the library
 * then says the open error only there) and print the error once, as
 * "pktmap: <cmd>: <error>". Returns 0 or an exit status. */
int fwd_open(const char *cmd, const char *name,
	     struct pktmap_open_opts *o, struct pktmap_port **out);

/* After run_init(): SIGTERM only asks to stop, however often it comes
 * (`timeout` and service managers send it twice: to the process and to
 * its group); a second SIGINT still quits at once. A forwarder that is
 * giving its buffers back must not be cut short by the duplicate. */
void fwd_soft_sigterm(void);

/* Buffers a region needs per port that lives in it: a default pipe
 * (4 rings of 1024) or an xdp port (fill, RX and TX rings) with room to
 * spare. */
#define FWD_BUFS_PER_PORT 10240u

/* The buffers to ask for (pktmap_open_opts.bufs) when opening names[i]:
 * when it names a region with @mem:NAME and says nothing of its size, room
 * for every port of names[] in that region, FWD_BUFS_PER_PORT plus
 * `extra` each: the first open creates the region, and it must hold the
 * ports opened after it. 0 otherwise (the back end's own sizing). */
uint32_t fwd_region_bufs(const char *const *names, unsigned n, unsigned i,
			 uint32_t extra);

/* Parse a CPU list "0,2,4-7" into cpus[] (at most max). Returns the count,
 * or -1 with a message in err. */
int fwd_parse_cpus(const char *s, int *cpus, unsigned max, char *err,
		   unsigned errlen);

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
	_Alignas(64) atomic_int sleeping;
	int fd; /* eventfd */
};

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

/* Write s as a JSON string. */
void fwd_json_str(FILE *o, const char *s);

/* The library's counters of a port as JSON members (no braces). */
void fwd_json_lib(FILE *o, const struct pktmap_stats *s);

/* Frames in a TX ring submitted but not yet taken by the back end. */
static inline uint32_t fwd_tx_pending(const struct netmap_ring *ring)
{
	uint32_t n = ring->num_slots;

	return (ring->head + 2 * n - ring->tail - 1) % n;
}

/* "same region": both ports' buffers live in one named region with one
 * buffer size, so a buffer index means the same buffer to both and can be
 * moved instead of the bytes. */
bool fwd_same_region(const struct pktmap_info *a, const struct pktmap_info *b);

#endif /* PKTMAP_APPS_FWD_H */
