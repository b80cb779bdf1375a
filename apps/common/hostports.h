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
	bool broker;         /* opened through pktmap broker */
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
	unsigned skipped;    /* counters files left unread: over a bound
			      * below (a directory cut short counts one) */
};

/* What one scan reads at most, so that no user's files (another user's,
 * when root reads) can make a scan slow or big: per owner, directories
 * opened, names looked at, bytes copied, ports and rings kept; over all
 * owners, bytes copied, ports and rings kept. A file of several names
 * (hard links) is read once. (A user's 2048 one-page ports are 8 MiB.) */
#define HP_USER_DIRS 16u
#define HP_USER_NAMES 16384u
#define HP_USER_BYTES (16u << 20)
#define HP_USER_PORTS 2048u
#define HP_USER_RINGS 8192u
#define HP_ALL_BYTES (64u << 20)
#define HP_ALL_PORTS 8192u
#define HP_ALL_RINGS 32768u

/* Read every live port this user may see into l (sorted by pid, then
 * file). Returns 0 or -errno (-ENOMEM); a directory or file that cannot
 * be read is skipped. */
int hp_scan(struct hp_list *l);

/* Check the private copy `buf` (size bytes) of a counters file and fill
 * p from it: names, counters, rings (p->rings allocated). Nothing but
 * buf is read, so the file's owner cannot change a value between its
 * check and its use. Returns 0, or -1 when buf is not a valid file (or
 * out of memory). */
int hp_parse(const void *buf, size_t size, struct hp_port *p);
void hp_free(struct hp_list *l);

/* The start time of process pid (/proc/PID/stat field 22) when it runs
 * as uid, else 0: with the pid, it names a process (a reused pid starts
 * later). */
uint64_t hp_proc_start(int pid, unsigned uid);

/* All drops of a port, every reason. */
uint64_t hp_drops(const struct hp_port *p);

/* The port of `l` with the same key as p, or NULL. */
const struct hp_port *hp_find(const struct hp_list *l, const struct hp_port *p);

#endif /* PKTMAP_APPS_HOSTPORTS_H */
