/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap bridge: the command line, setup and output (bridge.c) and the
 * forwarding loop (bridge_work.c).
 */
#ifndef PKTMAP_APPS_BRIDGE_H
#define PKTMAP_APPS_BRIDGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fwd.h"
#include "run.h"

struct bridge_opts {
	const char *port[2];
	char host_name[300];    /* B = A^ when one port is given */
	uint32_t batch;         /* slots moved per direction per round */
	uint64_t count;         /* stop after this many packets, 0 = never */
	int cpu;                /* -1: not pinned */
	double interval, idle;
	bool copy;              /* copy even when zero-copy is possible */
	bool json, quiet;
	int verbose;
};

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
	const struct bridge_opts *o;
	struct pktmap_port *port[2];
	struct pktmap_info info[2];
	struct bridge_dir dir[2];              /* A->B, B->A */
	bool zerocopy;
	/* Written by the forwarding thread. */
	_Atomic uint64_t busy_cycles;          /* TSC in rounds that moved */
	_Atomic uint64_t busy_cpu_ns;          /* CPU time in those rounds */
	_Atomic uint64_t t_first, t_last;      /* ns of the first/last move */
	const char *end;                       /* why the loop ended */
	int error;                             /* a sync's negative errno */
};

/* The forwarding loop; returns when asked to stop, at the count, after
 * --idle, or on a port error (b->error). */
void bridge_work(struct bridge *b);

#endif /* PKTMAP_APPS_BRIDGE_H */
