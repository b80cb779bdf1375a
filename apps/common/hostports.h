/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The ports open on this host, read from the counters every port
 * publishes (src/pub.h): what `pktmap top` and `pktmap metrics` show.
 * Root sees every user's ports, anyone else only their own. Files left
 * by processes that died (kill -9) are never shown, and removed when
 * they belong to the reader.
 */
#ifndef PKTMAP_APPS_HOSTPORTS_H
#define PKTMAP_APPS_HOSTPORTS_H

#include <stdbool.h>
#include <stdint.h>

#include "pub.h"

/* One ring: its counters and where it sits. */
struct hp_ring {
	uint32_t id;         /* the ring's number among its kind */
	bool tx, host, bound;
	struct pm_ring_stats c;
};

struct hp_port {
	char key[64];        /* "UID/PID.SEQ": the same port across scans */
	int pid;
	unsigned uid;
	int64_t open_sec;
	uint64_t start_ticks;
	int64_t start_sec;   /* the process's start (Unix time), 0: unknown */
	char name[256], mode[16], backend[16], region[64];
	char comm[16], cmdline[256];
	char program[48];    /* "tcpdump", "pktmap switch": argv[0]'s base
			      * name, and the subcommand of pktmap */
	struct pm_port_stats port;
	struct hp_ring *rings;
	uint32_t nrings;
	/* Totals over the bound rings. */
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
	uint64_t tx_syncs, rx_syncs;
	uint64_t drop_invalid, drop_too_long, drop_backend;
};

struct hp_list {
	struct hp_port *v;
	unsigned n;
};

/* Read every live port this user may see into l (sorted by pid, then
 * file). Returns 0 or -errno (-ENOMEM); a directory or file that cannot
 * be read is skipped. */
int hp_scan(struct hp_list *l);
void hp_free(struct hp_list *l);

/* All drops of a port, every reason. */
uint64_t hp_drops(const struct hp_port *p);

/* The port of `l` with the same key as p, or NULL. */
const struct hp_port *hp_find(const struct hp_list *l, const struct hp_port *p);

#endif /* PKTMAP_APPS_HOSTPORTS_H */
