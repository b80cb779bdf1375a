/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The software switch of the forwarding component (switch.c, the data
 * path; switch_mac.c, the learning bridge): VALE's design in a process.
 *
 * The caller (switch_srv.c, the component `pktmap switch` runs) opens
 * ports and attaches them; sw_round() then moves one batch from every
 * port: it takes the frames a port received, checks each descriptor
 * (index inside the port's pool, length inside its buffer and at least an
 * Ethernet header), asks the lookup (a table of functions: VALE's
 * pluggable lookup; the learning bridge by default) where each goes,
 * groups the batch per destination, and copies each frame once into the
 * destination's TX buffers, or moves the buffer when both ports share a
 * region. A full destination drops only its own frames (no head-of-line
 * blocking), each drop counted under one reason.
 *
 * Rules of the component: struct sw is an explicit context the caller
 * owns; nothing prints, nothing exits. One thread runs sw_round(),
 * sw_wait() and the attach/detach calls (the switch's control requests
 * are served between rounds); counters are plain fields that thread
 * writes and may read.
 */
#ifndef PKTMAP_FWD_SWITCH_H
#define PKTMAP_FWD_SWITCH_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

#define SW_MAX_PORTS 254u     /* as VALE (NM_BDG_MAXPORTS) */
#define SW_BATCH 512u         /* frames per source ring per round, at most */
#define SW_MAX_RINGS 64u
#define SW_FLOOD 0xffffu      /* lookup: every port but the source */
#define SW_FILTER 0xfffeu     /* lookup: not forwarded (on the source port) */
#define SW_ETH_HLEN 14u

/* A frame as the lookup sees it: its bytes and length (at least
 * SW_ETH_HLEN, at most the buffer). */
struct sw_frame {
	const uint8_t *buf;
	uint32_t len;
};

/* A lookup (VALE's bdg_ops.lookup): where each frame of a batch from port
 * `src` goes. Fills dst[i] with a port id, SW_FLOOD or SW_FILTER; an id
 * that names no attached port is counted as "unknown port" and dropped.
 * now_ms is a monotonic clock in ms. port_gone() is told when a port is
 * detached (its id may be given to a new port afterwards); tick() runs
 * about once a second (aging). Both may be NULL. */
struct sw_lookup_ops {
	const char *name;
	void (*lookup)(void *ctx, const struct sw_frame *f, uint32_t n,
		       uint16_t src, uint16_t *dst, uint32_t now_ms);
	void (*port_gone)(void *ctx, uint16_t port);
	void (*tick)(void *ctx, uint32_t now_ms);
};

/* Per-port counters. rx: frames taken from the port; tx: frames put into
 * it. Every frame taken is counted once as forwarded (to at least one
 * port), filtered, invalid or unknown; each copy that did not fit a
 * destination counts once in that destination's drop_nospace. */
struct sw_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t drop_nospace;  /* to this port: its TX rings were full */
	uint64_t drop_invalid;  /* from this port: bad descriptor or frame */
	uint64_t drop_unknown;  /* from this port: the lookup named no port */
	uint64_t filtered;      /* from this port: its destination is itself */
	uint64_t sync_errors;   /* syncs that failed (a peer broke the rules) */
	uint64_t tx_moved;      /* of tx_frames: buffers moved, not copied
				 * (source and destination share a pool) */
};

/* One ring as the data path uses it: pointer and buffer geometry read
 * once at attach time, never again from shared memory. */
struct sw_ring {
	struct netmap_ring *ring;
	char *base;             /* (char *)ring + buf_ofs */
	uint32_t buf_size;
	uint32_t nslots;
};

struct sw_port {
	struct pktmap_port *port;
	bool used;
	bool own;               /* sw_detach() closes the port */
	uint16_t id;
	uint32_t nrx, ntx;
	struct sw_ring rx[SW_MAX_RINGS], tx[SW_MAX_RINGS];
	uint32_t nbufs;         /* valid buffer indices: 2 .. nbufs-1 */
	uint32_t usable;        /* longest frame one buffer holds */
	uint32_t cur_tx;        /* TX ring being filled */
	uint64_t zc_group;      /* nonzero: ports with the same value share
				 * one pool and move buffers, not bytes */
	bool tx_dirty;          /* frames put in since the last txsync */
	int fd;                 /* pktmap_fd(), or -1 */
	uint16_t nlist;         /* frames of the current batch for this port */
	uint16_t list[SW_BATCH];
	struct sw_counters c;
	char name[64];          /* the port's name on the switch ("a") */
	char kind[16];          /* "client", "nic", "host", "tap", ... */
	char attached[160];     /* the pktmap name that was opened */
	int pid;                /* client's pid, 0 for the switch's own */
	void *user;             /* the caller's (its control connection) */
};

struct sw_cfg {
	const struct sw_lookup_ops *lookup; /* NULL: the learning bridge */
	void *lookup_ctx;                   /* for a lookup given here */
	uint32_t mac_entries;               /* learning bridge: table size
					     * (0: 4096) */
	uint32_t aging_ms;                  /* learning bridge: 0: 300 s */
	bool no_tick;                       /* another context runs the
					     * lookup's tick (a shared table) */
};

struct sw_mac; /* the learning bridge's table, switch_mac.c */

struct sw {
	struct sw_cfg cfg;
	const struct sw_lookup_ops *lookup;
	void *lookup_ctx;
	struct sw_mac *mac;                 /* when the lookup is ours */
	struct sw_port *port[SW_MAX_PORTS];
	uint32_t nports;                    /* highest used id + 1 */
	uint32_t now_ms;
	uint64_t last_tick_ms;
	/* Work counters: TSC ticks spent in rounds that moved frames, and
	 * frames taken in them (bench/ reads them: cycles per frame). */
	uint64_t busy_cycles, busy_frames, rounds;
	char err[256];                      /* the last failure, one line */
};

/* Set up a switch. Returns 0 or -errno (s->err says why). */
int sw_init(struct sw *s, const struct sw_cfg *cfg);
/* Detach every port (closing those attached with own) and free all. */
void sw_fini(struct sw *s);

/* Attach an open port under `name`. With own, sw_detach()/sw_fini()
 * close it. zc_group: ports given the same nonzero value share one
 * buffer pool (a region they named together) and exchange buffers.
 * Returns the port id or -errno (-EEXIST: the name is taken, -ENOSPC:
 * SW_MAX_PORTS). */
int sw_attach(struct sw *s, struct pktmap_port *p, const char *name,
	      const char *kind, bool own, uint64_t zc_group);
/* Detach port `id`: the lookup forgets it, and its port is closed if the
 * switch owns it. */
void sw_detach(struct sw *s, uint16_t id);
/* The port attached under `name`, or NULL. */
struct sw_port *sw_find(struct sw *s, const char *name);

/* One round: every port's received frames to their destinations, then
 * txsync and rxsync. Returns the frames taken (0: idle), or -errno when
 * a sync failed with something else than a peer's protocol error. */
int sw_round(struct sw *s);

/* Sleep until a port has frames or one of the `nextra` caller's fds is
 * ready, at most timeout_ms. Returns what poll() returns. */
int sw_wait(struct sw *s, struct pollfd *extra, unsigned nextra,
	    int timeout_ms);

/* The learning bridge (switch_mac.c): VALE's default lookup. */
extern const struct sw_lookup_ops sw_mac_lookup;

struct sw_mac_stats {
	uint64_t entries, capacity;
	uint64_t learned;   /* new entries */
	uint64_t moved;     /* entries that changed port */
	uint64_t aged;      /* entries removed after aging_ms of silence */
	uint64_t evicted;   /* entries pushed out by a full bucket */
};

/* A table of about `entries` MACs (rounded up to a power of two, at
 * least 16) forgetting a MAC after aging_ms without a frame from it.
 * Returns NULL when out of memory. */
struct sw_mac *sw_mac_new(uint32_t entries, uint32_t aging_ms);
void sw_mac_free(struct sw_mac *t);
void sw_mac_stats(struct sw_mac *t, struct sw_mac_stats *st);
/* Learn or refresh `mac` (6 bytes) on port; look one up: its port, or
 * -1 (unknown or aged). For tests and tools; the data path uses the
 * lookup table above. */
void sw_mac_learn(struct sw_mac *t, const uint8_t *mac, uint16_t port,
		  uint32_t now_ms);
int sw_mac_find(struct sw_mac *t, const uint8_t *mac, uint32_t now_ms);

#endif /* PKTMAP_FWD_SWITCH_H */
