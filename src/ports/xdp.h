/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Internals of the xdp: back end, shared by xdp.c (open, close),
 * xdp_sock.c (sockets and rings), xdp_umem.c (UMEM registration and
 * sharing), xdp_sync.c (the fast path), xdp_prog.c (the XDP program that
 * steers queues to the sockets) and xdp_host.c (the host rings).
 *
 * AF_XDP rings as user space sees them, in the shape of libxdp's xsk.h:
 * free-running 32-bit indices masked on access; each side keeps a cached
 * copy of the other side's index and reloads it only when the ring looks
 * empty (consumer) or full (producer).
 *
 *   producer rings (fill, TX)         consumer rings (RX, completion)
 *   we write entries [prod, ...)      the kernel writes [.., prod)
 *   publish prod (release) ------->   kernel loads prod (acquire)
 *   load cons (acquire)    <-------   kernel publishes cons (release)
 *
 * and the mirror image for the consumer rings. The kernel side is
 * xskq_prod_submit()/__xskq_cons_release() in net/xdp/xsk_queue.h.
 */
#ifndef PKTMAP_PORTS_XDP_H
#define PKTMAP_PORTS_XDP_H

#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "port.h"
#include "util.h"

struct pm_xq {
	uint32_t cached_prod;
	uint32_t cached_cons;
	uint32_t mask;
	uint32_t size;
	uint32_t *producer;
	uint32_t *consumer;
	void *ring;       /* struct xdp_desc[] (RX, TX) or __u64[] (fill, compl) */
	uint32_t *flags;  /* XDP_RING_NEED_WAKEUP */
	void *map;
	size_t map_len;
};

/* Producer: how many entries may be written now (at most `want`). */
static inline uint32_t pm_xq_prod_space(struct pm_xq *q, uint32_t want)
{
	uint32_t free = q->size - (q->cached_prod - q->cached_cons);
	if (free >= want)
		return want;
	/* Pairs with the kernel's smp_store_release() of the consumer
	 * index: the entries before it have been read. */
	q->cached_cons = atomic_load_explicit(PM_ATOMIC(q->consumer),
					      memory_order_acquire);
	free = q->size - (q->cached_prod - q->cached_cons);
	if (pm_unlikely(free > q->size))
		free = 0; /* never trust a value we did not write */
	return free < want ? free : want;
}

/* Producer: publish everything written up to cached_prod. */
static inline void pm_xq_prod_submit(struct pm_xq *q)
{
	/* Pairs with the kernel's smp_load_acquire() of the producer
	 * index: the entries before it are written. */
	atomic_store_explicit(PM_ATOMIC(q->producer), q->cached_prod,
			      memory_order_release);
}

/* Consumer: how many entries may be read now (at most `want`). */
static inline uint32_t pm_xq_cons_avail(struct pm_xq *q, uint32_t want)
{
	uint32_t n = q->cached_prod - q->cached_cons;
	if (n < want) {
		/* Pairs with the kernel's smp_store_release() of the
		 * producer index. */
		q->cached_prod = atomic_load_explicit(PM_ATOMIC(q->producer),
						      memory_order_acquire);
		n = q->cached_prod - q->cached_cons;
		if (pm_unlikely(n > q->size)) {
			q->cached_prod = q->cached_cons;
			n = 0;
		}
	}
	return n < want ? n : want;
}

/* Consumer: hand the entries read up to cached_cons back. */
static inline void pm_xq_cons_release(struct pm_xq *q)
{
	/* Pairs with the kernel's smp_load_acquire() of the consumer
	 * index: we are done reading the entries before it. */
	atomic_store_explicit(PM_ATOMIC(q->consumer), q->cached_cons,
			      memory_order_release);
}

/* Entries not yet taken by the kernel (producer rings). */
static inline uint32_t pm_xq_prod_pending(struct pm_xq *q)
{
	uint32_t cons = atomic_load_explicit(PM_ATOMIC(q->consumer),
					     memory_order_acquire);
	return q->cached_prod - cons;
}

static inline bool pm_xq_needs_wakeup(const struct pm_xq *q)
{
	return atomic_load_explicit(PM_ATOMIC(q->flags),
				    memory_order_relaxed) & XDP_RING_NEED_WAKEUP;
}

static inline struct xdp_desc *pm_xq_desc(struct pm_xq *q, uint32_t i)
{
	return &((struct xdp_desc *)q->ring)[i & q->mask];
}

static inline uint64_t *pm_xq_addr(struct pm_xq *q, uint32_t i)
{
	return &((uint64_t *)q->ring)[i & q->mask];
}

/* ------------------------------------------------------------------ */
/* The XDP program (xdp_prog.c). */

struct pm_xdp_prog {
	int link_fd;          /* our hold on the BPF link, see xdp_prog.c */
	int prog_fd;
	int map_fd;           /* the program's XSKMAP */
	uint32_t prog_id;
	uint32_t mode_flags;  /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	bool generic;         /* attached in generic (SKB) mode */
	bool scrub;           /* scrub's program (@conf:prog=scrub), set by
			       * the caller before attaching; kept by
			       * pm_xdp_prog_init() */
};

/* Make sure pktmap's XDP program runs on `ifindex` with queue qids[i]
 * steered to socket fds[i]: join the BPF link of the program another
 * live pktmap process attached, or load ours and attach it through a
 * link of our own (native mode, else generic mode with a message; native
 * only when `need_native`). The sockets are in the map before a new
 * program sees its first frame. Returns 0 or -errno with the open error
 * set. */
int pm_xdp_prog_attach(struct pktmap_port *p, struct pm_xdp_prog *pr,
		       int ifindex, const char *ifname, const char *driver,
		       bool need_native, const uint32_t *qids, const int *fds,
		       uint32_t n);

/* Remove our queues from the map and let go of the link: the kernel
 * detaches the program when the last holder's descriptor closes (also
 * when a process is killed, or has dropped its privileges). Safe on a
 * partly set up `pr`. */
void pm_xdp_prog_release(struct pktmap_port *p, struct pm_xdp_prog *pr,
			 int ifindex, const uint32_t *qids, uint32_t n);

void pm_xdp_prog_init(struct pm_xdp_prog *pr);

/* Around calls into libbpf: its messages go to p's log (debug level). */
void pm_xdp_libbpf_enter(const struct pktmap_port *p);
void pm_xdp_libbpf_leave(void);
/* The kernel's last error message libbpf relayed ("" if none). */
const char *pm_xdp_libbpf_last(void);

/* ------------------------------------------------------------------ */
/* Host rings (xdp_host.c). */

#define PM_XDP_HOST_NOFF 3 /* offloads turned off: tx csum, TSO, GSO */

struct pm_xdp_host {
	int lock_fd;
	int ifindex;
	int eg_fd, in_fd, rb_fd;  /* TC egress program, XDP_PASS program, ringbuf */
	uint64_t *cons_pos;       /* ring buffer: ours to write */
	const uint64_t *prod_pos; /* the kernel's */
	const uint8_t *data;      /* rb_size bytes, mapped twice in a row */
	void *cons_map, *prod_map;
	size_t prod_map_len;
	uint32_t rb_size;
	bool hook_created, tc_attached;
	int saved_off[PM_XDP_HOST_NOFF]; /* -1: untouched */
	int64_t saved_gso_segs;   /* -1: untouched */
	uint64_t drops;           /* frames the host stack refused */
	char ifname[IFNAMSIZ];
	char lock_path[128];
};

void pm_xdp_host_init(struct pm_xdp_host *h);
/* Take the host rings of `ifindex`: load and attach the programs, map the
 * ring buffer, turn off the offloads that would hand over unfinished
 * frames. Returns 0 or -errno with the open error set. */
int pm_xdp_host_open(struct pktmap_port *p, struct pm_xdp_host *h,
		     int ifindex, const char *ifname);
/* The host rings' syncs (their kring's priv is the struct pm_xdp_host). */
extern const struct pm_ring_ops pm_xdp_host_ring_ops;
bool pm_xdp_host_rx_ready(const struct pm_xdp_host *h);
/* Detach, restore the offloads, unmap. Safe on a partly opened `h`. */
void pm_xdp_host_close(struct pktmap_port *p, struct pm_xdp_host *h);

/* ------------------------------------------------------------------ */
/* Live-frames TX (xdp_live.c, @conf:tx=live). */

struct pm_xdp_live;
struct xdp_priv;
/* Load the TX program (one copy per bound queue, the maps shared), attach
 * its tracepoint counters, map the frame slots and probe the kernel for
 * live frames (sending nothing); on success the TX krings sync through
 * it. Returns 0 or -errno with the open error set. */
int pm_xdp_live_open(struct pktmap_port *p, struct xdp_priv *xp,
		     uint32_t tx_slots);
void pm_xdp_live_close(struct xdp_priv *xp);
/* Frames the kernel or the program dropped (drop_backend). */
uint64_t pm_xdp_live_drops(const struct xdp_priv *xp);

/* ------------------------------------------------------------------ */
/* The port's state (xdp.c, xdp_sock.c, xdp_umem.c, xdp_sync.c). */

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
/* Linux 6.17: descriptors one copy-mode sendto() may send (default 32). */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif
/* Linux 6.6: multi-buffer frames (a descriptor per buffer, all but the
 * last flagged as continued). */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
/* Buffers in one frame: MAX_SKB_FRAGS + 1, what copy mode takes. */
#define XDP_MAX_FRAGS 17u

/* How long a bind that finds the queue busy is retried: the kernel frees
 * a closed socket's hold on its queue in deferred work, so a queue can
 * look busy for a moment right after its previous user closed it. */
#define BIND_BUSY_WAIT_MS 5000
#define XDP_MIN_RX_RING 4096u
#define BIND_BUSY_STEP_MS 20

struct xdp_queue {
	int fd;
	uint32_t qid;
	struct pm_xq rx, tx, fq, cq;
	uint32_t rx_inflight;   /* buffers in the fill ring or the kernel */
	uint32_t tx_inflight;   /* posted and not completed */
	uint32_t tx_done;       /* first TX slot not known to be completed */
	uint32_t *tx_sent;      /* buffer posted from each TX slot, 0: none */
	uint32_t ep_events;     /* what epoll waits for on fd; 0: not in the set */
	bool zc;
	bool dead;              /* the device went away under the socket */
	uint32_t tx_calls;      /* txsyncs, to look at the clock every 16 */
	int64_t mtu_sec;        /* the second TX last read the MTU */
};

struct umem_share;

struct xdp_priv {
	char ifname[IFNAMSIZ];
	char driver[32];
	int ifindex;
	uint32_t nq;            /* queues of the interface */
	uint32_t lo, hi;        /* bound queues [lo, hi) */
	bool rx, tx;            /* directions bound */
	struct xdp_queue *q;    /* [hi - lo] */
	uint32_t nsock;         /* sockets bound so far */
	uint32_t rx_size, tx_size, fq_size, cq_size;
	uint32_t *free;         /* buffers for the fill rings (a stack) */
	uint32_t nfree, free_cap;
	uint64_t *rx_own;       /* bitmap: posted to a fill ring */
	uint64_t *tx_own;       /* bitmap: posted to a TX ring */
	uint32_t nbufs, buf_size, bs_shift;
	bool bufs_taken;
	uint32_t nclaims;       /* queues claimed in a named region, from lo */
	uint32_t claim_base;
	int epfd;
	int evfd;               /* pktmap_fd(): level-triggered set, or -1 */
	bool busy_poll;
	bool zc;
	bool sg;                /* frames span several buffers (NS_MOREFRAG) */
	uint32_t mtu;           /* the interface's, at open; TX reads it again
				 * (through mtu_fd) for a frame longer than
				 * mtu + 14 */
	int mtu_fd;             /* a datagram socket for that, or -1 */
	char umem_from[IFNAMSIZ]; /* the port whose UMEM we share, or "" */
	uint64_t bad_desc;      /* descriptors the kernel gave that we refused */
	struct pm_xdp_prog prog;
	bool host;              /* host rings too (xdp:IF^, xdp:IF*) */
	bool host_claimed;
	struct pm_xdp_host hostr;
	struct pm_xdp_live *live; /* TX through live frames, or NULL */
	struct umem_share *share;
	struct xdp_priv *share_next;
	bool broker;            /* the sockets come from `pktmap broker` */
};

/* Bitmaps over buffer indices. */

/* The buffer-ownership bitmaps: the RX path and the TX path of one port
 * may run in two threads (docs/design.md, "Threads"), and each tests the
 * other's map, so every access is atomic (relaxed: a bit only says who
 * holds a buffer, it publishes nothing). Each map has one writer (rx_own
 * the RX path, tx_own the TX path), so a bit is set or cleared with a
 * relaxed load and store, no locked instruction. */
static inline bool bit_test(const uint64_t *m, uint32_t i)
{
	return (atomic_load_explicit(PM_ATOMIC(&m[i >> 6]),
				     memory_order_relaxed) >> (i & 63)) & 1;
}

static inline void bit_set(uint64_t *m, uint32_t i)
{
	uint64_t w = atomic_load_explicit(PM_ATOMIC(&m[i >> 6]),
					  memory_order_relaxed);
	atomic_store_explicit(PM_ATOMIC(&m[i >> 6]), w | 1ull << (i & 63),
			      memory_order_relaxed);
}

static inline void bit_clear(uint64_t *m, uint32_t i)
{
	uint64_t w = atomic_load_explicit(PM_ATOMIC(&m[i >> 6]),
					  memory_order_relaxed);
	atomic_store_explicit(PM_ATOMIC(&m[i >> 6]), w & ~(1ull << (i & 63)),
			      memory_order_relaxed);
}

/* xdp_sock.c: would the kernel or the device drop this frame of flen
 * bytes silently? Above the MTU and not VLAN-tagged, or above the MTU
 * and a tag (the MTU read again first, as pkt:'s TX does; `frame` is
 * the frame's first `len` bytes). The caller counts it in
 * drop_too_long. */
bool pm_xdp_above_mtu(struct xdp_priv *xp, const uint8_t *frame,
		      uint32_t len, uint32_t flen);

/* TX, every 16 syncs: once a second, read the MTU again, so that one
 * lowered under an open port is applied within about a second (one
 * raised is seen at the first longer frame). */
void pm_xdp_mtu_tick(struct xdp_priv *xp, struct xdp_queue *q);

static inline void pm_xdp_tx_tick(struct xdp_priv *xp, struct xdp_queue *q)
{
	if (pm_unlikely((++q->tx_calls & 15) == 0))
		pm_xdp_mtu_tick(xp, q);
}

/* xdp_sock.c */
uint32_t pm_xdp_queue_count(const char *ifname);
void pm_xdp_driver_name(const char *ifname, char *out, size_t len);
/* Open every bound queue's socket. The first shares the UMEM of another
 * port on the region if it can (same mode), else registers it; the rest
 * share the first's. Returns 0 or -errno with the open error set. */
int pm_xdp_open_sockets(struct pktmap_port *p, struct xdp_priv *xp,
			uint32_t flags);
void pm_xdp_xq_unmap(struct pm_xq *q);

/* xdp_umem.c: the table of shared UMEMs, under pm_xdp_umem_lock(). */
void pm_xdp_umem_lock(void);
void pm_xdp_umem_unlock(void);
/* Join the users of the region behind `region_fd`; returns a bound
 * socket's port to share the UMEM through, or NULL. Under the lock. */
struct xdp_priv *pm_xdp_umem_join(struct xdp_priv *xp, int region_fd);
/* Leave the users (takes the lock). */
void pm_xdp_umem_leave(struct xdp_priv *xp);
/* Register the region's pool as this socket's UMEM. */
int pm_xdp_umem_register(struct pktmap_port *p, int fd);

/* xdp_sync.c */
void pm_xdp_fill_refill(struct xdp_priv *xp, struct xdp_queue *q);
/* The interface went away under queue q (deleted, moved to another
 * namespace: the kernel unbound the socket): say so once, set EOF. For a
 * reader that is the end of the source. Inline: the sync and the live
 * TX path both call it, and neither file is below the other. */
static inline void pm_xdp_queue_gone(struct pktmap_port *p,
				     struct xdp_queue *q)
{
	if (!(pm_info_flags(p) & PKTMAP_INFO_EOF))
		pm_log(p, PKTMAP_LOG_WARN, "%s: queue %u: the interface went away",
		       p->name, q->qid);
	pm_info_set(p, PKTMAP_INFO_EOF);
}
int pm_xdp_rxsync(struct pktmap_port *p, struct pm_kring *k);
int pm_xdp_txsync(struct pktmap_port *p, struct pm_kring *k);
int pm_xdp_poll_arm(struct pktmap_port *p, short events);
void pm_xdp_poll_disarm(struct pktmap_port *p, short events);
uint64_t pm_xdp_memlock_budget(void);
int pm_xdp_event_fd(struct pktmap_port *p);
void pm_xdp_stats(const struct pktmap_port *p, struct pktmap_stats *st);

#endif /* PKTMAP_PORTS_XDP_H */
