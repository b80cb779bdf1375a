/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap recv: options (recv.c) and the work of one receiving thread
 * (recv_work.c).
 */
#ifndef PKTMAP_APPS_RECV_H
#define PKTMAP_APPS_RECV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "pkt.h"
#include "run.h"

struct recv_opts {
	const char *port;
	uint32_t batch;       /* slots consumed per ring per sync, 0 = all */
	uint64_t count;       /* stop after this many packets, 0 = no end */
	unsigned threads;
	int cpu;
	double interval;
	double idle;          /* seconds without packets that end the run */
	uint64_t dump;        /* hex-dump this many packets */
	bool fast, verify, csum, json, quiet;
	int verbose;
};

/* Shared by the threads of one run. */
struct recv_shared {
	_Atomic uint64_t total;     /* packets received by all threads (-n) */
	_Atomic int64_t dump_left;  /* packets still to dump */
};

struct recv_thread {
	const struct recv_opts *o;
	struct recv_shared *sh;
	struct netmap_ring **rings;
	unsigned nrings;
	uint64_t *expect;           /* per stream: next seq + 1, 0 = unseen */
	bool in_chain;              /* the last slot had NS_MOREFRAG */
	bool dumping;
};

/* The body of a recv worker (run.h's fn). */
int recv_work(struct run_worker *w);

#endif /* PKTMAP_APPS_RECV_H */
