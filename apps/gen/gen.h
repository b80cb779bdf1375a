/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap gen: options (gen.c) and the work of one sending thread
 * (gen_work.c).
 */
#ifndef PKTMAP_APPS_GEN_H
#define PKTMAP_APPS_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "pkt.h"
#include "run.h"

struct gen_opts {
	const char *port;
	struct cli_range len;     /* frame length without CRC */
	uint32_t batch;           /* slots per ring per sync, at most */
	uint64_t count;           /* packets in all, 0 = no end */
	uint64_t rate;            /* packets per second in all, 0 = no limit */
	struct cli_addr src, dst;
	uint8_t smac[6], dmac[6];
	unsigned threads;
	int cpu;                  /* -1: no pinning */
	double interval, wait;
	bool fast, json, quiet;
	int verbose;
};

/* One TX ring of a thread's port. */
struct gen_ring {
	struct netmap_ring *ring;
	struct pkt_tmpl tmpl;     /* carries this ring's stream id */
	uint16_t *wlen;           /* per slot: bytes of template known to be
	                           * in its buffer (0: nothing known) */
	uint64_t seq;             /* next sequence number of the stream */
};

/* The state of one sending thread. */
struct gen_thread {
	const struct gen_opts *o;
	bool limited;             /* count applies */
	uint64_t count;           /* this thread's share of the count */
	uint64_t rate;            /* this thread's share of the rate */
	bool vary;                /* lengths or addresses change per packet */
	struct gen_ring *rings;
	unsigned nrings;
	/* The address/port odometer (host order). */
	uint64_t sip, dip;
	uint32_t sport, dport;
	uint64_t rng;             /* xorshift state for random lengths */
};

/* The body of a gen worker (run.h's fn). */
int gen_work(struct run_worker *w);

#endif /* PKTMAP_APPS_GEN_H */
