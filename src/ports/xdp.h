/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Internals of the xdp: back end, shared by xdp.c (sockets, rings, sync)
 * and xdp_prog.c (the XDP program that steers queues to the sockets).
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

#include "internal.h"

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
	q->cached_cons = __atomic_load_n(q->consumer, __ATOMIC_ACQUIRE);
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
	__atomic_store_n(q->producer, q->cached_prod, __ATOMIC_RELEASE);
}

/* Consumer: how many entries may be read now (at most `want`). */
static inline uint32_t pm_xq_cons_avail(struct pm_xq *q, uint32_t want)
{
	uint32_t n = q->cached_prod - q->cached_cons;
	if (n < want) {
		/* Pairs with the kernel's smp_store_release() of the
		 * producer index. */
		q->cached_prod = __atomic_load_n(q->producer, __ATOMIC_ACQUIRE);
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
	__atomic_store_n(q->consumer, q->cached_cons, __ATOMIC_RELEASE);
}

/* Entries not yet taken by the kernel (producer rings). */
static inline uint32_t pm_xq_prod_pending(struct pm_xq *q)
{
	uint32_t cons = __atomic_load_n(q->consumer, __ATOMIC_ACQUIRE);
	return q->cached_prod - cons;
}

static inline bool pm_xq_needs_wakeup(const struct pm_xq *q)
{
	return __atomic_load_n(q->flags, __ATOMIC_RELAXED) & XDP_RING_NEED_WAKEUP;
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
	int lock_fd;          /* the interface's lock file, see xdp_prog.c */
	int prog_fd;
	int map_fd;           /* the program's XSKMAP */
	uint32_t prog_id;
	uint32_t mode_flags;  /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	bool user;            /* we hold a users lock: detach when last */
	bool generic;         /* attached in generic (SKB) mode */
	char lock_path[128];
};

/* Make sure pktmap's XDP program runs on `ifindex` with queue qids[i]
 * steered to socket fds[i]: reuse the program another live pktmap
 * process attached, replace one a dead process left behind, or load ours
 * and attach it (native mode, else generic mode with a message; native
 * only when `need_native`). The sockets are in the map before a new
 * program sees its first frame. Returns 0 or -errno with the open error
 * set. */
int pm_xdp_prog_attach(struct pktmap_port *p, struct pm_xdp_prog *pr,
		       int ifindex, const char *ifname, const char *driver,
		       bool need_native, const uint32_t *qids, const int *fds,
		       uint32_t n);

/* Remove our queues from the map and detach the program when no other
 * pktmap process uses it. Safe on a partly set up `pr`. */
void pm_xdp_prog_release(struct pktmap_port *p, struct pm_xdp_prog *pr,
			 int ifindex, const uint32_t *qids, uint32_t n);

void pm_xdp_prog_init(struct pm_xdp_prog *pr);

/* Around calls into libbpf: its messages go to p's log (debug level). */
void pm_xdp_libbpf_enter(const struct pktmap_port *p);
void pm_xdp_libbpf_leave(void);

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
int pm_xdp_host_rxsync(struct pktmap_port *p, struct pm_kring *k,
		       struct pm_xdp_host *h);
int pm_xdp_host_txsync(struct pktmap_port *p, struct pm_kring *k,
		       struct pm_xdp_host *h);
bool pm_xdp_host_rx_ready(const struct pm_xdp_host *h);
/* Detach, restore the offloads, unmap. Safe on a partly opened `h`. */
void pm_xdp_host_close(struct pktmap_port *p, struct pm_xdp_host *h);

#endif /* PKTMAP_PORTS_XDP_H */
