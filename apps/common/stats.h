/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Counters of gen and recv, and their output: one line per interval, a
 * summary at the end, and the same summary as one JSON object (--json).
 *
 * Each worker thread owns one `struct stats_thread` on its own cache lines
 * and publishes its running totals with relaxed stores once per batch; the
 * main thread reads them to print the interval lines. Relaxed is enough:
 * every counter is written by one thread only, and a reader that sees a
 * slightly old value just shows it in the next line.
 */
#ifndef PKTMAP_APPS_STATS_H
#define PKTMAP_APPS_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <pktmap/pktmap.h>

/* Bytes a frame occupies on an Ethernet wire beyond its length without
 * CRC: 7 preamble + 1 start delimiter + 4 CRC + 12 inter-frame gap. */
#define STATS_WIRE_OVERHEAD 24

struct stats_thread {
	/* Written by the worker only (relaxed), read by the reporter. */
	_Atomic uint64_t packets;
	_Atomic uint64_t bytes;
	_Atomic uint64_t syncs;     /* syncs that moved at least one packet */
	_Atomic uint64_t gaps;      /* recv: sequence numbers never seen */
	_Atomic uint64_t reordered; /* recv: seq lower than expected */
	_Atomic uint64_t bad;       /* recv: frames that are not pktmap's */
	_Atomic uint64_t bad_csum;  /* recv --csum: wrong IP/UDP checksum */
	_Atomic uint64_t t_first;   /* ns (CLOCK_MONOTONIC) work began */
	_Atomic uint64_t t_last;    /* ns of the last packet moved */
	/* Set by the worker before it ends. */
	uint64_t pending;           /* gen: slots not yet sent at the end */
	struct pktmap_stats lib;    /* the port's own counters */
	int error;                  /* 0 or the negative errno it ended on */
	unsigned id;
	char port[256];
} __attribute__((aligned(128)));

/* Sums over the threads. */
struct stats_total {
	uint64_t packets, bytes, syncs;
	uint64_t gaps, reordered, bad, bad_csum, pending;
	uint64_t t_first, t_last;
	struct pktmap_stats lib;
};

struct stats_run {
	const char *cmd;            /* "gen", "recv" */
	const char *port;           /* the name the user gave */
	struct stats_thread *th;
	unsigned nthreads;
	bool recv;                  /* print the recv counters too */
	bool verify;                /* recv: the sequence counters mean something */
	bool csum;                  /* recv: checksums were checked */
	bool json;                  /* JSON summary on stdout */
	bool quiet;                 /* no interval lines, no human summary */
	const char *end_reason;     /* "count", "eof", "idle", "signal", ... */
	FILE *out;                  /* human lines: stdout, or stderr with --json */
	/* Interval state. */
	uint64_t last_ns;
	struct stats_total last;
};

/* Now, in ns of CLOCK_MONOTONIC. */
uint64_t stats_now_ns(void);

void stats_run_init(struct stats_run *r, const char *cmd, const char *port,
		    struct stats_thread *th, unsigned nthreads, bool json,
		    bool quiet);
/* Sum the threads' counters; `final` (after the workers were joined) also
 * sums what they set as they end: pending and the port counters. */
void stats_sum(const struct stats_run *r, struct stats_total *t, bool final);

/* Print the line for the interval since the previous call (or the start). */
void stats_interval(struct stats_run *r);

/* Print the human summary (unless quiet) and the JSON object (if json). */
void stats_summary(struct stats_run *r);

/* "12.345 M" style formatting of a rate: v scaled to k/M/G, three
 * decimals, followed by unit ("pps", "bps"). */
void stats_fmt_rate(char *out, unsigned len, double v, const char *unit);

/* Write s as a JSON string (quotes, backslashes and control characters
 * escaped). The one escaper of the command's JSON output. */
void stats_json_str(FILE *o, const char *s);

#endif /* PKTMAP_APPS_STATS_H */
