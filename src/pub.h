/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The counters every open port publishes (docs/metrics.md): one small
 * file per port, /dev/shm/pktmap-stats.UID/PID.SEQ (directory 0700, file
 * 0600: its owner and root read it), mapped shared by the process that
 * opened the port. The port counts straight into it: these lines ARE the
 * port's counters, not a copy.
 *
 *   0      struct pm_pub_hdr: who, what, when (written once at open);
 *          its last cache line holds the counters of the port as a whole
 *   ring_ofs  one struct pm_ring_stats per ring (netmap's order: NIC TX,
 *          host TX, NIC RX, host RX), a cache line each
 *
 * Writers: each ring's line is written only by the thread that owns the
 * ring (plain relaxed stores, no locked instruction); the port line by
 * any thread with atomic adds. Readers (pktmap top, pktmap metrics) take
 * nothing: they copy the file once into their own memory, loading each
 * 64-bit word once, so a value is never torn, and counters only grow. A
 * reader trusts nothing in the file (its owner may have written anything,
 * and may change it at any time): only the copy is checked and used,
 * every size and offset is checked, strings are cut at their field.
 *
 * Only this header and src/pub.c know the layout; readers include it.
 */
#ifndef PKTMAP_PUB_H
#define PKTMAP_PUB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pktmap/pktmap.h> /* PKTMAP_CACHELINE */

#define PM_PUB_DIR "/dev/shm"
#define PM_PUB_PREFIX "pktmap-stats."    /* + uid: the directory */
#define PM_PUB_MAGIC 0x3174736d6b74706eull /* "nptkmst1" */
#define PM_PUB_VERSION 1u
#define PM_PUB_MAX_RINGS 1024u

/* One ring's counters: a cache line written by the ring's owner only. */
struct pm_ring_stats {
	uint64_t packets, bytes;  /* moved by the ring (sent, received) */
	uint64_t syncs;           /* txsync/rxsync calls on the ring */
	uint64_t drop_invalid;    /* slots the checker rejected */
	uint64_t drop_too_long;   /* frames longer than the port carries */
	uint64_t drop_backend;    /* lost by the back end (write failed, ...) */
	uint64_t copied, lent;    /* pkt RX: see struct pktmap_stats */
} __attribute__((aligned(PKTMAP_CACHELINE)));

/* The port as a whole: any thread, atomic adds. */
struct pm_port_stats {
	uint64_t invalid_ring;    /* syncs refused: head or cur out of range */
	uint64_t poll_sleeps;     /* times pktmap_poll() slept */
	uint64_t wakeups_sent;    /* times this port woke a sleeping peer */
	uint64_t drop_kernel;     /* reported by the kernel (socket, device),
				   * as of the program's last pktmap_stats() */
	uint64_t drop_nospace;    /* a program's own: no room downstream */
	uint64_t drop_filtered;   /* a program's own: its filter said no */
	/* A monitor of this port (src/monitor.c): written by the monitor
	 * (compare-and-swap), read once per sync by the port; 0: none. */
	uint64_t mon;
	uint64_t mon_drops;       /* frames the monitor had no room for */
} __attribute__((aligned(PKTMAP_CACHELINE)));

/* pm_pub_hdr.flags */
#define PM_PUB_F_BROKER 1u        /* opened through pktmap broker */

struct pm_pub_hdr {
	uint64_t magic;           /* PM_PUB_MAGIC, stored last (release) */
	uint32_t version;         /* PM_PUB_VERSION */
	uint32_t size;            /* bytes of the file */
	uint32_t ring_ofs;        /* where the ring lines start */
	uint32_t ntx, nhtx, nrx, nhrx; /* rings, in netmap's order */
	uint32_t first_tx, last_tx;    /* bound rings (first > last: none), */
	uint32_t first_rx, last_rx;    /* as in struct pktmap_info */
	int32_t pid;
	uint32_t uid;
	uint32_t flags;           /* PM_PUB_F_* */
	uint64_t start_ticks;     /* the process's start, /proc/PID/stat
				   * field 22: with pid, names the process */
	int64_t open_sec;         /* when the port was opened (Unix time) */
	char mode[16];            /* zerocopy, copy, emulated */
	char backend[16];
	char region[64];
	char name[256];           /* the port's name as opened */
	char comm[16];            /* /proc/PID/comm */
	char cmdline[256];        /* /proc/PID/cmdline, arguments space-separated */
	struct pm_port_stats port;
};

/* Where the ring lines start in a file the library writes, and the
 * largest file it writes (PM_PUB_MAX_RINGS rings, whole pages): readers
 * refuse a bigger one. */
#define PM_PUB_RING_OFS ((sizeof(struct pm_pub_hdr) + PKTMAP_CACHELINE - 1) & \
			 ~(size_t)(PKTMAP_CACHELINE - 1))
#define PM_PUB_MAX_SIZE ((PM_PUB_RING_OFS + PM_PUB_MAX_RINGS * \
			  sizeof(struct pm_ring_stats) + 4095) & ~(size_t)4095)

/* The start time (field 22, clock ticks after boot) in the text of
 * /proc/PID/stat, or 0. Fields are counted after the last ')': the
 * command name in parentheses may hold spaces and parentheses. */
static inline uint64_t pm_pub_parse_start(const char *stat)
{
	const char *s = strrchr(stat, ')');
	if (!s)
		return 0;
	/* ") S ppid ...": field 3 is the state; 19 more fields to 22. */
	for (int field = 2; field < 22 && s; field++)
		s = strchr(s + 1, ' ');
	return s ? strtoull(s + 1, NULL, 10) : 0;
}

#endif /* PKTMAP_PUB_H */
