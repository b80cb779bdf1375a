/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Port names, parsed (src/name.c): the back end, its body, the ring
 * selector, the flags and the @conf options (their keys: conf.h).
 * Knows nothing of ports.
 */
#ifndef PKTMAP_NAME_H
#define PKTMAP_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

#define PM_MAX_RINGS 64u
#define PM_MAX_SLOTS 65536u
#define PM_NAME_MAX 256

/* ------------------------------------------------------------------ */
/* Port names: BACKEND:BODY[-N|^|*|{N|}N][/FLAGS][@conf:k=v,...][@mem:R] */

struct pm_conf {
	uint32_t tx_rings, rx_rings;       /* 0 = back end's default */
	uint32_t host_tx_rings, host_rx_rings;
	uint32_t tx_slots, rx_slots;
	uint32_t bufs, buf_size, extra_bufs;
	int hugepages;                     /* -1 unset, 0, 1 */
	int loop;                          /* pcap: replay the file forever */
	uint32_t linktype;                 /* pcap writing: DLT (0 = Ethernet) */
	int nanosec;                       /* pcap writing: -1 unset, 0 us, 1 ns */
	int spin_us;                       /* poll: spin this long before
					    * sleeping; -1 unset */
	int tx_live;                       /* xdp: tx=live (1), tx=xsk (0), -1 unset */
	int xdp_prog;                      /* xdp: prog=scrub (1), prog=redirect (0), -1 unset */
	int rx_blocks;                     /* pkt: rx=blocks (1), rx=frames (0), -1 unset */
	int tx_frames;                     /* pkt: tx=frames (1), tx=copy (0), -1 unset */
	uint32_t block_ms;                 /* pkt: block-ms (0 = unset) */
	char region[64];                   /* "" = the back end's choice */
	bool share;                        /* share=group:G given */
	uint32_t share_gid;
	uint32_t headroom;                 /* back end's own: 0 = default */
	bool rx_no_bufs;                   /* back end's own: RX slots get no
					    * buffers (pkt: rx=blocks) */
	/* memif: */
	int role;                          /* -1 unset, 0 client, 1 server */
	int abstract;                      /* -1 unset: abstract socket name */
	char secret[25];                   /* "" = none */
	/* xdp:, pkt:, tap: (docs/broker.md): "" the default socket, "no"
	 * never ask, else the broker's socket */
	char broker[64];
};

struct pm_name {
	char backend[16];
	char body[PM_NAME_MAX]; /* interface, pipe name or file path */
	uint32_t reg;           /* NR_REG_* */
	int ring;               /* NR_REG_ONE_NIC / ONE_SW: the ring; else -1 */
	int pipe_id;            /* NR_REG_PIPE_*: the pipe number */
	uint32_t dir;           /* PKTMAP_DIR_* from "/R", "/T" (0: both) */
	uint32_t flags;         /* PKTMAP_OPEN_* from "/Z", "/C" */
	uint32_t mon;           /* PM_MON_* from "/r", "/t", "/z": a monitor */
	uint32_t port_len;      /* BACKEND:BODY and its ring selector: where
				 * "/FLAGS" and "@..." options begin */
	struct pm_conf conf;
};

/* pm_name's mon: a monitor of the port, "/r" (what it receives), "/t"
 * (what it transmits), "/z" (zero-copy: refused by src/monitor.c). */
#define PM_MON_RX 1u
#define PM_MON_TX 2u
#define PM_MON_ZCOPY 4u

/* Parse a port name. Returns 0, or -EINVAL with a one-line message in err. */
int pm_name_parse(const char *name, struct pm_name *out, char *err,
		  size_t errlen);

#endif /* PKTMAP_NAME_H */
