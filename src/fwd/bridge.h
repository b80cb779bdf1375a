/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The bridge of the forwarding component (bridge.c): two ports, both
 * directions, one thread. The caller (apps/bridge/bridge.c for `pktmap
 * bridge`) opens the ports, sets the fields marked "set by the caller",
 * calls bridge_setup() and runs bridge_work() on a thread of its own.
 */
#ifndef PKTMAP_FWD_BRIDGE_H
#define PKTMAP_FWD_BRIDGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fwd.h"

/* Counters of one direction. Written by the forwarding thread only
 * (relaxed stores), read by the reporter. */
struct bridge_count {
	_Atomic uint64_t packets;    /* frames (a NS_MOREFRAG chain is one) */
	_Atomic uint64_t bytes;
	_Atomic uint64_t slots;      /* RX slots consumed */
	_Atomic uint64_t tx_slots;   /* TX slots filled */
	_Atomic uint64_t rounds;     /* rounds that moved something */
	_Atomic uint64_t drops;      /* frames that could not be forwarded */
};

/* One direction: the RX rings of `from` into the TX rings of `to`. */
struct bridge_dir {
	struct pktmap_port *from, *to;
	struct netmap_if *rx_nifp, *tx_nifp;
	uint32_t rx_lo, rx_hi, tx_lo, tx_hi;   /* bound rings, inclusive */
	uint32_t tx_usable;                    /* bytes one TX buffer holds */
	struct bridge_count c;
	char label[16];                        /* "A->B" */
};

struct bridge {
	/* Set by the caller. */
	uint32_t batch;                        /* slots per direction per round */
	uint64_t count;                        /* stop after this many, 0: never */
	uint64_t idle_ns;                      /* stop after this much silence
						* following the first frame, 0: never */
	const atomic_int *stop;                /* the caller's stop flag, or NULL */
	void *user;                            /* the caller's */
	struct pktmap_port *port[2];
	struct pktmap_info info[2];
	struct bridge_dir dir[2];              /* A->B, B->A */
	bool zerocopy;
	/* Written by the forwarding thread. */
	_Atomic uint64_t busy_cycles;          /* TSC in rounds that moved */
	_Atomic uint64_t busy_cpu_ns;          /* CPU time in those rounds */
	_Atomic uint64_t t_first, t_last;      /* ns of the first/last move */
	atomic_int stopping;                   /* bridge_stop() */
	const char *end;                       /* why the loop ended */
	int error;                             /* a sync's negative errno */
};

/* After the caller set b->port[0] and [1] (open for both directions):
 * read their info, fill both directions, decide zero-copy (both in one
 * named region, unless `copy`). Returns 0, or -errno with a one-line
 * message in err (-EINVAL: a port lacks the rings it needs). */
int bridge_setup(struct bridge *b, bool copy, char *err, size_t errlen);

/* The forwarding loop; returns when asked to stop (b->stop, or
 * bridge_stop()), at the count, after idle_ns, at the end of a source, or
 * on a port error (b->error, a negative errno). b->end says which. */
void bridge_work(struct bridge *b);

/* Ask the loop to stop (from another thread); it notices within
 * FWD_POLL_MS. */
void bridge_stop(struct bridge *b);

#endif /* PKTMAP_FWD_BRIDGE_H */
