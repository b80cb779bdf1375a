/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Ports: the per-ring state a back end keeps (the "kring", as in netmap),
 * the table of functions every back end provides, and the port itself
 * (src/port.c, src/rings.c, src/pub.c). A port lives in a region
 * (region.h), is opened from a parsed name (name.h) and logs through
 * log.h. Nothing here is exported.
 */
#ifndef PKTMAP_PORT_H
#define PKTMAP_PORT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pktmap/pktmap.h"
#include "check.h"
#include "log.h"
#include "name.h"
#include "pub.h"
#include "region.h"
#include "util.h"

/* pktmap.h's PKTMAP_CACHELINE, by the library's short name (memif.h). */
#define PM_CACHELINE PKTMAP_CACHELINE
#define PM_DEFAULT_SLOTS 1024u
#define PM_DEFAULT_SPIN_US 50u
/* Where AF_XDP puts a received frame in its chunk (XDP_PACKET_HEADROOM). */
#define PM_XDP_HEADROOM 256u

/* ------------------------------------------------------------------ */
/* Ports */

/* Per-ring state, private to the process that owns the ring. hwcur and
 * hwtail are the library's own copies of the ring's boundaries (netmap's
 * nr_hwcur/nr_hwtail); rhead/rcur/rtail are what the last sync handed to
 * the application (the values the checker compares against). */
struct pm_kring {
	struct netmap_ring *ring;
	uint32_t nslots;
	uint32_t id;        /* index in the port's ring table */
	uint32_t hwcur, hwtail;
	uint32_t rhead, rcur, rtail;
	uint32_t tx;        /* 1 for a TX ring */
	uint32_t host;      /* 1 for a host ring */
	void *priv;         /* back end's per-ring state */
	/* The ring's counters, in the port's published page (pub.h): only
	 * the thread that owns the ring writes them, with pm_stat_add(). */
	struct pm_ring_stats *st;
	/* The ring's buffers when they are not the port's (pkt:'s RX
	 * blocks, a ring geometry of its own); NULL: p->bs. */
	const struct pm_bufspace *bs;
	/* This ring's sync: the back end's txsync or rxsync, unless the back
	 * end gave the ring its own (xdp's host rings, pm_ring_ops). */
	int (*sync)(struct pktmap_port *p, struct pm_kring *k);
};

/* The syncs of a kind of ring that is not the port's own (an xdp port's
 * host rings): set on its krings after pm_port_bind_krings(). */
struct pm_ring_ops {
	int (*txsync)(struct pktmap_port *p, struct pm_kring *k);
	int (*rxsync)(struct pktmap_port *p, struct pm_kring *k);
};

struct pktmap_port;
struct sock_filter;

/* The functions every back end provides (the role of a netmap driver). */
struct pm_port_ops {
	struct pktmap_backend_desc desc;
	/* Which name forms the back end accepts: PM_CAP_*. */
	uint32_t caps;
	/* The @conf keys it takes (conf.h); the name parser refuses others. */
	const struct pm_conf_keys *conf;
	/* Parse the body of the name, set up rings in p->region, p->nifp,
	 * p->krings. Returns 0 or -errno with a message via pm_open_error().
	 * Two rules every back end relies on:
	 * - when open fails, close still runs (pktmap_open() calls it), on
	 *   whatever open left half done: close must take apart any state,
	 *   from nothing made at all to everything but the last step;
	 * - p->bs (what the checker allows) is complete only after open
	 *   returns 0: open may set a bound of its own (usable, ext_lo,
	 *   ext_n), then pktmap_open() sets nbufs from the region (and
	 *   usable when open left it 0), so nothing open runs may check a
	 *   slot against p->bs. */
	int (*open)(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o);
	/* Move [hwcur, ring->head) out and refresh hwtail. Called with head
	 * and cur already checked. Returns 0 or -errno. */
	int (*txsync)(struct pktmap_port *p, struct pm_kring *k);
	/* Release [hwcur, ring->head), fetch new packets into [hwtail, ...). */
	int (*rxsync)(struct pktmap_port *p, struct pm_kring *k);
	/* Before sleeping in poll: arm the wake-up for `events` and check
	 * once more (after a full barrier) whether something is ready.
	 * Returns nonzero when it is. May be NULL (always sleep on the fd). */
	int (*poll_arm)(struct pktmap_port *p, short events);
	/* After waking: disarm what poll_arm armed for `events` and drain
	 * those wake-ups (and only those: another thread may be sleeping on
	 * the other direction). May be NULL. */
	void (*poll_disarm)(struct pktmap_port *p, short events);
	/* The fd to sleep on for `events`, and the poll events to wait for
	 * on it in *pev (POLLIN unless set). May be NULL (p->fd, POLLIN). */
	int (*poll_fd)(const struct pktmap_port *p, short events, short *pev);
	/* pktmap_fd(): turn the port into an event source (the first call)
	 * and return the descriptor to hand out. From then on every sync
	 * calls sync_event. May be NULL (p->fd, which the kernel or the back
	 * end keeps readable and writable as pktmap_fd() promises). */
	int (*event_fd)(struct pktmap_port *p);
	/* After each sync of ring k once event_fd was called: keep the fd
	 * readable (or writable) exactly while an rxsync (txsync) would find
	 * something, arming the peer's wake-up when it would not. */
	void (*sync_event)(struct pktmap_port *p, struct pm_kring *k);
	/* Add back-end facts to info (mode, linktype, flags). May be NULL. */
	void (*info)(const struct pktmap_port *p, struct pktmap_info *info);
	/* Have the kernel filter received frames with a classic BPF program
	 * (struct sock_filter[n], n = 0: none). Returns the frames already
	 * queued that it has not seen, or -errno. May be NULL. */
	int (*rx_filter)(struct pktmap_port *p, const struct sock_filter *insns,
			 unsigned n);
	/* Which frames RX sees: PKTMAP_RX_*. May be NULL (only "in"). */
	int (*rx_direction)(struct pktmap_port *p, unsigned dir);
	/* Add back-end counters (kernel drops). May be NULL. */
	void (*stats)(const struct pktmap_port *p, struct pktmap_stats *st);
	/* Release everything open made; runs after a failed open too (see
	 * open above), so every step must check whether it was done. */
	void (*close)(struct pktmap_port *p);
};

#define PM_CAP_ONE_RING 0x01   /* "-N" */
#define PM_CAP_HOST 0x02       /* "^" and "*" */
#define PM_CAP_PIPE 0x04       /* "{N" and "}N" (the pipe back end) */
#define PM_CAP_PATH 0x08       /* the body is a file path */
#define PM_CAP_EMPTY_BODY 0x10 /* "null:" */
#define PM_CAP_ZEROCOPY 0x20   /* "/Z" can be honoured */
#define PM_CAP_FD_EXACT 0x40   /* p->fd already is what pktmap_fd() promises */
				/* (per port: p->fd_exact, set by open) */

/* Counters: a port may be driven by two threads (one owns the RX rings,
 * one the TX rings) while a third reads pktmap_stats() and other
 * processes read the published page (pub.h). A ring's counters (k->st)
 * are written only by the ring's owner: pm_stat_add(), a relaxed load and
 * store, no locked instruction. The port's own (p->stats: invalid rings,
 * wake-ups, sleeps) any thread may write: pm_stat_inc(). */
static inline uint64_t pm_stat_read(const uint64_t *c)
{
	return atomic_load_explicit(PM_ATOMIC(c), memory_order_relaxed);
}

static inline void pm_stat_add(uint64_t *c, uint64_t n)
{
	atomic_store_explicit(PM_ATOMIC(c), pm_stat_read(c) + n,
			      memory_order_relaxed);
}

static inline void pm_stat_inc(uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(PM_ATOMIC(c), n, memory_order_relaxed);
}

/* A sync moved pkts frames of bytes bytes on ring k. */
static inline void pm_count(struct pm_kring *k, uint64_t pkts, uint64_t bytes)
{
	pm_stat_add(&k->st->packets, pkts);
	pm_stat_add(&k->st->bytes, bytes);
}


struct pktmap_port {
	const struct pm_port_ops *ops;
	struct pm_region region;
	struct netmap_if *nifp;
	struct pm_kring *krings;   /* NIC tx, host tx, NIC rx, host rx */
	uint32_t ntx, nhtx, nrx, nhrx;
	uint32_t first_tx, last_tx; /* bound ring ranges, inclusive, indices */
	uint32_t first_rx, last_rx; /* into krings (rx counted from 0)       */
	uint32_t reg, dir;
	struct pm_bufspace bs;     /* what the checker allows */
	enum pktmap_mode mode;
	uint32_t linktype;
	/* The longest untagged frame TX sends, as open found it: an
	 * interface's MTU + 14 (pkt:, xdp:, tap:); 0 where the buffers
	 * alone bound it. pktmap_info()'s tx_max_len. */
	uint32_t tx_max_len;
	uint32_t info_flags;       /* atomic: any thread may read it */
	int fd;                    /* pollable, owned by the back end */
	bool fd_exact;             /* p->fd is what pktmap_fd() promises */
	int event_fd;              /* pktmap_fd() was called: its result */
	bool events;               /* ... and sync_event runs after syncs */
	/* For back ends without sync_event (kernel descriptors): an epoll
	 * set of their fd and an eventfd that holds a count exactly while
	 * the last rxsync left packets unread (see pktmap_fd()). */
	int ev_set, ev_unread;
	bool ev_unread_set;
	uint32_t spin_us;          /* pktmap_poll() spins this long first */
	/* Set by poll_arm: sleep at most this long (ms), 0 = no bound (a
	 * kernel that gives no wake-up for what is awaited: pkt:'s TX
	 * while its link is down). */
	int poll_cap_ms;
	uint32_t extra_bufs;       /* taken for ni_bufs_head at open */
	bool own_rings;            /* rings made by pm_port_own_rings() */
	void *ringmem;             /* the private netmap_if + rings */
	size_t ringmem_size;
	/* The published page (pub.h, src/pub.c): the port's counters live
	 * there, p->stats the port's own line, each kring's st its ring's. */
	struct pm_pub_hdr *pub;
	size_t pub_size;
	struct pm_port_stats *stats;
	char pub_path[64];         /* "" when not published (private page) */
	/* The kernel's drop counters (ops->stats) are read under this lock:
	 * by pktmap_stats(), and about once a second by the RX path, which
	 * only tries it (never waits). */
	pthread_mutex_t kstats_lock;
	uint32_t rx_calls;         /* rxsyncs since the last look at the clock */
	int64_t kstats_sec;        /* when the RX path last read them */
	pktmap_log_fn log;
	void *log_ctx;
	int log_level;
	struct pm_ratelimit rl_slot, rl_ring; /* TX (and back ends' own use) */
	struct pm_ratelimit rl_rx_slot, rl_rx_ring; /* RX: the checker, pipes */
	char *errbuf;
	size_t errbuf_len;
	char name[PM_NAME_MAX];
	void *priv;                /* back end's state */
	void *priv2;               /* a back end wrapping another's (vale) */
	struct pm_mon *mon;        /* src/monitor.c: watching or watched */
	/* src/broker_cli.c: @conf:broker ("" default, "no"), the connection
	 * to the broker (-1: none), whether it granted something */
	char broker[64];
	int broker_fd;
	bool brokered;
};

/* src/broker_cli.c: asking `pktmap broker` (docs/broker.md). */
struct pm_bk_req;
/* May this port ask (not @conf:broker=no)? */
bool pm_broker_wanted(const struct pktmap_port *p);
const char *pm_broker_path(const struct pktmap_port *p);
/* Connect (once per port). 0; -ENOTCONN (no message) when the port may
 * not ask or no broker listens at the default socket: the caller says
 * what capability it lacks; else -errno with the open error set (a
 * broker named by @conf:broker=PATH that is not there). */
int pm_broker_open(struct pktmap_port *p);
/* Send r with fds attached; an "ok" answer with a descriptor (when
 * want_fd) or without: 0, *fd_out the descriptor, info the rest of the
 * answer. "busy": -EBUSY, no message. Else -errno with the open error set
 * (the broker's one line when it refused). */
int pm_broker_call(struct pktmap_port *p, const struct pm_bk_req *r,
		   const int *fds, int nfds, int *fd_out, bool want_fd,
		   char *info, size_t infolen);
/* Close the connection: the broker frees what it granted this port. */
void pm_broker_close(struct pktmap_port *p);

/* info_flags: set by a sync path, read by any thread (pktmap_info()). */
static inline uint32_t pm_info_flags(const struct pktmap_port *p)
{
	return atomic_load_explicit(PM_ATOMIC(&p->info_flags),
				    memory_order_relaxed);
}

static inline void pm_info_set(struct pktmap_port *p, uint32_t f)
{
	atomic_fetch_or_explicit(PM_ATOMIC(&p->info_flags), f,
				 memory_order_relaxed);
}

/* The checker's rate limiters, one per direction: a flood of bad TX
 * slots does not hold back the RX thread's lines. */
static inline struct pm_ratelimit *pm_rl_slot(struct pktmap_port *p, int tx)
{
	return tx ? &p->rl_slot : &p->rl_rx_slot;
}

static inline struct pm_ratelimit *pm_rl_ring(struct pktmap_port *p, int tx)
{
	return tx ? &p->rl_ring : &p->rl_rx_ring;
}

static inline struct pm_kring *pm_txkring(struct pktmap_port *p, uint32_t i)
{
	return &p->krings[i];
}

static inline struct pm_kring *pm_rxkring(struct pktmap_port *p, uint32_t i)
{
	return &p->krings[p->ntx + p->nhtx + i];
}

/* Give one ring buffers of its own: NETMAP_BUF(ring, i) is then
 * base + i * stride (pkt:'s RX blocks: stride 1, base the blocks). */
void pm_ring_set_bufs(struct netmap_ring *ring, const void *base,
		      uint32_t stride);

/* Lay out the port's netmap_if and its rings (ntx TX, nhtx host TX, nrx
 * RX, nhrx host RX, in netmap's order) in memory private to this open: an
 * anonymous mapping no other process can write. Every layout value (ring
 * offsets, slot counts, buf_ofs towards p->region's pool) is computed here
 * and kept in p->krings; none is read back from the rings. Slots get no
 * buffers (buf_idx 0): the back end fills them. Sets p->nifp, p->krings
 * and the ring counts. Returns 0 or -errno with the open error set. */
int pm_port_make_rings(struct pktmap_port *p, const char *ifname,
		       uint32_t ntx, uint32_t nrx, uint32_t nhtx, uint32_t nhrx,
		       uint32_t tx_slots, uint32_t rx_slots);

/* For back ends that own their rings alone (null, pcap, pkt, tap): open a
 * private region (or the one @mem: names), lay out a netmap_if with ntx TX
 * and nrx RX rings filled with buffers, and bind the krings. The buffers go
 * back to a shared region at pktmap_close(). Returns 0 or -errno with the
 * open error set. */
int pm_port_own_rings(struct pktmap_port *p, const struct pm_conf *c,
		      const char *tag, const char *ifname, uint32_t ntx,
		      uint32_t nrx, uint32_t txs, uint32_t rxs);

/* Give the buffers of the rings pm_port_own_rings() filled back to a
 * shared region (pktmap_close(), a failed open). */
void pm_port_own_rings_put(struct pktmap_port *p);

/* The published counters (src/pub.c). pm_pub_open() maps the page for
 * the port's rings (called by pm_port_make_rings(), once the krings
 * exist) and points p->stats and each kring's st into it: a file in the
 * user's directory when it can, else private memory (the port works the
 * same, it is just not seen by pktmap top). pm_pub_ready() fills in who
 * and what (from `info`, the port's pktmap_info()) once the open
 * succeeded and makes the file visible; pm_pub_close() removes it.
 * pm_pub_open() returns 0 or -ENOMEM. */
int pm_pub_open(struct pktmap_port *p);
void pm_pub_ready(struct pktmap_port *p, const struct pktmap_info *info);
void pm_pub_close(struct pktmap_port *p);
/* The caller's counters directory (made if missing; taken back from a
 * squatter as pm_owned_dir() does), opened: its path in dir. Returns the
 * descriptor or -errno. */
int pm_pub_dir(char *dir, size_t len);

/* The back end called `name`, or NULL (backends.c holds the table). */
const struct pm_port_ops *pm_backend_find(const char *name);

#ifdef PM_TEST_HOOKS
/* Tests only (libpktmap_internal; not in the shipped library): the
 * descriptors (8 bytes each, buf_idx first) that feed RX ring `ring` of
 * a pipe end, in the shared region: what a peer may scribble on. */
uint32_t *pm_pipe_peer_desc(struct pktmap_port *p, uint32_t ring);
/* When set, a pipe TX sync that moved slots stops itself (SIGSTOP) with
 * its descriptors written and nothing published: a test kills it there. */
extern int pm_pipe_tx_stall;
/* The same for an RX sync that received packets: it stops with its
 * releases published and its new packets not. */
extern int pm_pipe_rx_stall;
#endif

/* The back ends. */
extern const struct pm_port_ops pm_null_ops;
extern const struct pm_port_ops pm_pipe_ops;
extern const struct pm_port_ops pm_pcap_ops;
extern const struct pm_port_ops pm_packet_ops, pm_tap_ops;
extern const struct pm_port_ops pm_xdp_ops;
/* xdp:'s @conf keys, the same in a build without AF_XDP (xdp_conf.c). */
extern const struct pm_conf_keys pm_xdp_conf;
extern const struct pm_port_ops pm_vale_ops;
extern const struct pm_port_ops pm_memif_ops;

#endif /* PKTMAP_PORT_H */
