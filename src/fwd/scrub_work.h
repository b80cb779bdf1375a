/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's worker loop (scrub_work.c): one thread, one queue pair, two
 * directions. The judged direction (the inbound one: -i's RX into -o's
 * TX, or an interface's RX into its host rings) runs every frame through
 * scrub_judge() and moves only what passes; the other direction (the
 * return traffic, the host's own) is moved unjudged. Both ports are open
 * in both directions; what a dropped frame leaves is its RX slot, given
 * back at the next sync.
 *
 * Per round: scrub_ctx_enter() (one rule set for the whole round), move
 * up to `batch` slots each way, scrub_ctx_leave(), then sync; when a round
 * moved nothing, pktmap_poll_many() waits (outside any batch, so a reload
 * never waits for a sleeping worker).
 */
#ifndef PKTMAP_FWD_SCRUB_WORK_H
#define PKTMAP_FWD_SCRUB_WORK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

#include "fwd.h"
#include "scrub.h"

struct scrub_dir {
	struct pktmap_port *from, *to;
	struct netmap_if *rx_nifp, *tx_nifp;
	uint32_t rx_lo, rx_hi, tx_lo, tx_hi;
	uint32_t tx_usable;
	bool judged;
	/* Written by the worker (relaxed), read by the reporter. */
	_Atomic uint64_t packets, bytes;   /* moved to the other port */
	_Atomic uint64_t dropped;          /* judged and dropped */
	_Atomic uint64_t too_long;         /* copy: larger than a TX buffer */
};

/* A dropped frame sampled for the caller (--sample-pcap), or a ban made
 * (for the kernel's map). Called from the worker thread. */
typedef void (*scrub_sample_fn)(void *user, unsigned worker,
				const uint8_t *frame, uint32_t len, int reason);
typedef void (*scrub_ban_fn)(void *user, const uint8_t addr[16],
			     uint64_t until_ns);

struct scrub_thread {
	/* Set by the caller. */
	struct scrub_ctx *ctx;
	unsigned id;                 /* worker number: ctx slot, hits row */
	struct pktmap_port *port[2]; /* in, out (the same port twice: no) */
	uint32_t batch;
	bool dry_run;                /* judge and count, move everything */
	bool copy;                   /* copy even within one region */
	uint64_t idle_ns;            /* stop after this much silence following
				      * the first frame, 0: never */
	const atomic_int *stop;      /* the caller's stop flag */
	/* The clock: CLOCK_MONOTONIC, or *manual_ns when set (tests). */
	const _Atomic uint64_t *manual_ns;
	uint64_t sample_every;       /* call sample() on every Nth drop, 0: never */
	scrub_sample_fn sample;
	scrub_ban_fn on_ban;         /* NULL: none */
	void *user;
	/* Set by scrub_thread_setup(). */
	struct scrub_worker w;
	struct pktmap_info info[2];
	struct scrub_dir dir[2];     /* in->out (judged), out->in */
	unsigned ndir;
	bool zerocopy;
	/* Written by the thread. */
	_Atomic uint64_t rounds, polls;
	atomic_int stopping;
	const char *end;             /* why it ended */
	int error;                   /* a sync's -errno */
	uint64_t drops_seen;         /* for sampling */
};

/* After the caller set the fields above: read the ports' info, fill the
 * directions, make the worker's tables (sources, dests: entries). 0, or
 * -errno with a one-line message in err. */
int scrub_thread_setup(struct scrub_thread *t, uint32_t sources,
		       uint32_t dests, char *err, size_t errlen);
void scrub_thread_free(struct scrub_thread *t);

/* The loop; returns when asked to stop, at the end of a capture file,
 * after idle_ns, or on a port error (t->error). t->end says which. */
void scrub_thread_work(struct scrub_thread *t);

/* Ask the loop to stop; it notices within FWD_POLL_MS. */
void scrub_thread_stop(struct scrub_thread *t);

#endif /* PKTMAP_FWD_SCRUB_WORK_H */
