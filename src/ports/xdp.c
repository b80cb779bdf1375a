/* SPDX-License-Identifier: BSD-2-Clause
 *
 * xdp:IFACE and xdp:IFACE-Q: a Linux interface in netmap mode through
 * AF_XDP. One AF_XDP socket per bound queue; the UMEM of every socket is
 * the region's buffer pool, so a netmap buffer index and a UMEM address
 * are the same thing seen two ways:
 *
 *     UMEM address = idx * buf_size + 256       (a frame's first byte)
 *     NETMAP_BUF() = pool + 256 + idx * buf_size (the region's headroom
 *                                                 is XDP_PACKET_HEADROOM)
 *
 * Buffer flow (every buffer the port took from the region is always in
 * exactly one of these places, which is what close() gives back):
 *
 *   RX:  free list --(fill ring)--> kernel --(RX ring)--> RX slot
 *        the slot's previous buffer ----------------------> free list
 *   TX:  TX slot --(TX ring)--> kernel --(completion ring)--> same slot
 *
 * RX is netmap's "every slot holds a buffer": a received frame's buffer
 * is swapped into the slot and the buffer the slot held (whatever the
 * application left there, NS_BUF_CHANGED or not) goes to the free list
 * that stocks the fill ring. TX keeps netmap's semantics exactly: a slot
 * keeps its buffer; txsync posts it and the slot comes back to the
 * application (tail moves past it) when the kernel has completed it, so
 * an application may write a frame once and resend it by setting len.
 * Completions may arrive out of order; two bitmaps say which buffers the
 * kernel holds (posted to the fill or the TX ring), so a completion is
 * matched to its slot, and a buffer the kernel holds is never handed to
 * it twice, whatever the application writes into its slots.
 *
 * Every slot crosses the checker (pm_slot_check) on TX; on RX the
 * kernel's descriptors are checked too (inside the UMEM, at offset 256,
 * a buffer we posted) before a slot points at them.
 *
 * A frame larger than a buffer (a jumbo MTU) is a chain of slots,
 * NS_MOREFRAG on all but the last, and AF_XDP multi-buffer descriptors
 * (XDP_PKT_CONTD) on the socket side; chains cross a sync whole.
 *
 * The host rings (xdp:IFACE^, xdp:IFACE*) are in xdp_host.c, the XDP
 * program and its sharing among processes in xdp_prog.c.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "xdp.h"

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
	uint32_t ep_events;     /* what epoll waits for on fd */
	bool zc;
	bool dead;              /* the device went away under the socket */
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
	bool busy_poll;
	bool zc;
	bool sg;                /* frames span several buffers (NS_MOREFRAG) */
	char umem_from[IFNAMSIZ]; /* the port whose UMEM we share, or "" */
	uint64_t bad_desc;      /* descriptors the kernel gave that we refused */
	struct pm_xdp_prog prog;
	bool host;              /* host rings too (xdp:IF^, xdp:IF*) */
	bool host_claimed;
	struct pm_xdp_host hostr;
	struct umem_share *share;
	struct xdp_priv *share_next;
};

/* ------------------------------------------------------------------ */
/* Bitmaps over buffer indices. */

static inline bool bit_test(const uint64_t *m, uint32_t i)
{
	return (m[i >> 6] >> (i & 63)) & 1;
}

static inline void bit_set(uint64_t *m, uint32_t i)
{
	m[i >> 6] |= 1ull << (i & 63);
}

static inline void bit_clear(uint64_t *m, uint32_t i)
{
	m[i >> 6] &= ~(1ull << (i & 63));
}

/* ------------------------------------------------------------------ */
/* One UMEM per region per process.
 *
 * Ports of one process that name the same region (@mem:NAME) share one
 * UMEM: the first socket registers the pool, every later one binds with
 * XDP_SHARED_UMEM through any bound socket of a port still using it.
 * (Another process maps the region at another address and registers its
 * own UMEM over the same pages: buffer indices mean the same everywhere.)
 * The table is process-wide by nature, like the UMEM it describes. */

struct umem_share {
	struct umem_share *next;
	dev_t dev;
	ino_t ino;
	struct xdp_priv *users; /* linked through share_next */
};

static pthread_mutex_t share_mu = PTHREAD_MUTEX_INITIALIZER;
static struct umem_share *shares;

/* Find or create the entry of the region behind `fd`. Under share_mu. */
static struct umem_share *share_get(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	for (struct umem_share *s = shares; s; s = s->next)
		if (s->dev == st.st_dev && s->ino == st.st_ino)
			return s;
	struct umem_share *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->next = shares;
	shares = s;
	return s;
}

/* A bound socket of another port on the same UMEM, or NULL. */
static struct xdp_priv *share_donor(struct umem_share *s, struct xdp_priv *self)
{
	for (struct xdp_priv *u = s ? s->users : NULL; u; u = u->share_next)
		if (u != self && u->nsock > 0)
			return u;
	return NULL;
}

static void share_leave(struct xdp_priv *xp)
{
	struct umem_share *s = xp->share;
	if (!s)
		return;
	pthread_mutex_lock(&share_mu);
	for (struct xdp_priv **u = &s->users; *u; u = &(*u)->share_next)
		if (*u == xp) {
			*u = xp->share_next;
			break;
		}
	if (!s->users)
		for (struct umem_share **e = &shares; *e; e = &(*e)->next)
			if (*e == s) {
				*e = s->next;
				free(s);
				break;
			}
	pthread_mutex_unlock(&share_mu);
	xp->share = NULL;
}

/* ------------------------------------------------------------------ */
/* Facts about the interface. */

static int ifreq_ioctl(int s, const char *ifname, unsigned long req,
		       struct ifreq *ifr)
{
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	return ioctl(s, req, ifr) == 0 ? 0 : -errno;
}

/* RX queues: combined + rx-only channels (ETHTOOL_GCHANNELS), else the
 * rx-N entries under /sys/class/net/IF/queues. */
static uint32_t queue_count(int s, const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	uint32_t n = 0;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	if (ioctl(s, SIOCETHTOOL, &ifr) == 0)
		n = ch.combined_count + ch.rx_count;
	if (n == 0) {
		char path[96];
		snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
		DIR *d = opendir(path);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d)) != NULL)
				n += strncmp(e->d_name, "rx-", 3) == 0;
			closedir(d);
		}
	}
	if (n == 0)
		n = 1;
	return n > PM_MAX_RINGS ? PM_MAX_RINGS : n;
}

static void driver_name(int s, const char *ifname, char *out, size_t len)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&di;
	if (ioctl(s, SIOCETHTOOL, &ifr) == 0 && di.driver[0])
		snprintf(out, len, "%.*s", (int)sizeof(di.driver), di.driver);
	else
		snprintf(out, len, "of %s", ifname);
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* Raise the soft locked-memory limit to the hard one: older kernels and
 * processes without CAP_IPC_LOCK charge the UMEM's pinned pages to it. */
static void raise_memlock(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

/* ------------------------------------------------------------------ */
/* Sockets. */

static int xq_map(int fd, struct pm_xq *q, const struct xdp_ring_offset *off,
		  uint32_t n, size_t esz, off_t pgoff)
{
	q->map_len = off->desc + (size_t)n * esz;
	q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, fd, pgoff);
	if (q->map == MAP_FAILED) {
		q->map = NULL;
		return -errno;
	}
	char *m = q->map;
	q->producer = (uint32_t *)(m + off->producer);
	q->consumer = (uint32_t *)(m + off->consumer);
	q->flags = (uint32_t *)(m + off->flags);
	q->ring = m + off->desc;
	q->size = n;
	q->mask = n - 1;
	q->cached_prod = __atomic_load_n(q->producer, __ATOMIC_ACQUIRE);
	q->cached_cons = __atomic_load_n(q->consumer, __ATOMIC_ACQUIRE);
	return 0;
}

static void xq_unmap(struct pm_xq *q)
{
	if (q->map)
		munmap(q->map, q->map_len);
	q->map = NULL;
}

static int sockopt_ring(int fd, int opt, uint32_t n)
{
	int v = (int)n;
	return setsockopt(fd, SOL_XDP, opt, &v, sizeof(v)) == 0 ? 0 : -errno;
}

/* Register the region's pool as this socket's UMEM. */
static int umem_register(struct pktmap_port *p, int fd)
{
	struct pm_region *r = &p->region;
	struct xdp_umem_reg mr;
	memset(&mr, 0, sizeof(mr)); /* padding and newer fields are zero */
	mr.addr = (uint64_t)(uintptr_t)r->pool;
	mr.len = (uint64_t)r->nbufs * r->buf_size;
	mr.chunk_size = r->buf_size;
	mr.headroom = 0; /* the 256 bytes are the kernel's XDP_PACKET_HEADROOM */
	raise_memlock();
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) == 0)
		return 0;
	int err = -errno;
	if (err == -ENOBUFS || err == -ENOMEM || err == -EPERM) {
		struct rlimit rl = { 0, 0 };
		getrlimit(RLIMIT_MEMLOCK, &rl);
		return pm_open_error(p, err,
				     "registering %llu MB of buffers as UMEM exceeds "
				     "the locked-memory limit (ulimit -l: %llu kB): "
				     "raise it (ulimit -l unlimited) or run as root",
				     (unsigned long long)(mr.len >> 20),
				     (unsigned long long)(rl.rlim_cur == RLIM_INFINITY ?
							  0 : rl.rlim_cur >> 10));
	}
	return pm_open_error(p, err, "cannot register the UMEM: %s",
			     strerror(-err));
}

/* Bind, retrying for a while when the queue is still held by a socket
 * that was just closed. */
static int bind_retry(int fd, const struct sockaddr_xdp *sa)
{
	for (int waited = 0;; waited += BIND_BUSY_STEP_MS) {
		if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
			return 0;
		if (errno != EBUSY || waited >= BIND_BUSY_WAIT_MS)
			return -errno;
		poll(NULL, 0, BIND_BUSY_STEP_MS);
	}
}

/* Create queue q's socket: its rings, the UMEM (registered, or shared
 * through `umem_fd`), the bind. */
static int xsk_open(struct pktmap_port *p, struct xdp_priv *xp,
		    struct xdp_queue *q, int umem_fd, uint32_t mode_flag)
{
	int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	int ret;
	if (fd < 0) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES)
			return pm_open_error(p, ret, "needs CAP_NET_RAW and CAP_BPF: "
					     "run as root");
		if (ret == -EAFNOSUPPORT)
			return pm_open_error(p, ret, "this kernel has no AF_XDP "
					     "sockets (CONFIG_XDP_SOCKETS): use pkt:%s",
					     xp->ifname);
		return pm_open_error(p, ret, "socket(AF_XDP): %s", strerror(-ret));
	}
	q->fd = fd;
	if (umem_fd < 0) {
		ret = umem_register(p, fd);
		if (ret)
			return ret;
	}
	/* Every socket has its own fill and completion rings (one with a
	 * shared UMEM on another queue must); a direction not bound gets
	 * the smallest ones and never uses them. */
	if ((ret = sockopt_ring(fd, XDP_UMEM_FILL_RING, xp->rx ? xp->fq_size : 64)) ||
	    (ret = sockopt_ring(fd, XDP_UMEM_COMPLETION_RING,
				xp->tx ? xp->cq_size : 64)) ||
	    (xp->rx && (ret = sockopt_ring(fd, XDP_RX_RING, xp->rx_size))) ||
	    (xp->tx && (ret = sockopt_ring(fd, XDP_TX_RING, xp->tx_size))))
		return pm_open_error(p, ret, "cannot size the AF_XDP rings: %s",
				     strerror(-ret));

	struct xdp_mmap_offsets off;
	socklen_t olen = sizeof(off);
	if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &olen) != 0)
		return pm_open_error(p, -errno, "XDP_MMAP_OFFSETS: %s",
				     strerror(errno));
	if ((ret = xq_map(fd, &q->fq, &off.fr, xp->rx ? xp->fq_size : 64,
			  sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING)) ||
	    (ret = xq_map(fd, &q->cq, &off.cr, xp->tx ? xp->cq_size : 64,
			  sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING)) ||
	    (xp->rx && (ret = xq_map(fd, &q->rx, &off.rx, xp->rx_size,
				     sizeof(struct xdp_desc), XDP_PGOFF_RX_RING))) ||
	    (xp->tx && (ret = xq_map(fd, &q->tx, &off.tx, xp->tx_size,
				     sizeof(struct xdp_desc), XDP_PGOFF_TX_RING))))
		return pm_open_error(p, ret, "cannot map the AF_XDP rings: %s",
				     strerror(-ret));

	struct sockaddr_xdp sa = {
		.sxdp_family = AF_XDP,
		.sxdp_ifindex = (uint32_t)xp->ifindex,
		.sxdp_queue_id = q->qid,
	};
	if (umem_fd >= 0) {
		sa.sxdp_flags = XDP_SHARED_UMEM; /* the mode is the UMEM's */
		sa.sxdp_shared_umem_fd = (uint32_t)umem_fd;
	} else {
		sa.sxdp_flags = XDP_USE_NEED_WAKEUP | mode_flag |
				(xp->sg ? XDP_USE_SG : 0);
	}
	ret = bind_retry(fd, &sa);
	if (ret) {
		if (umem_fd >= 0)
			return ret; /* the caller falls back to its own UMEM */
		if (ret == -EBUSY)
			return pm_open_error(p, ret, "queue %u is busy: another "
					     "AF_XDP socket or XDP program uses it "
					     "(is another pktmap running on %s?)",
					     q->qid, xp->ifname);
		if ((ret == -EOPNOTSUPP || ret == -EINVAL) &&
		    (mode_flag & XDP_ZEROCOPY))
			return pm_open_error(p, ret, "driver %s has no zero-copy "
					     "AF_XDP support: drop /Z to run in "
					     "copy mode", xp->driver);
		if (ret == -ENODEV)
			return pm_open_error(p, ret, "no such interface");
		if (ret == -EPERM || ret == -EACCES)
			return pm_open_error(p, ret, "needs CAP_NET_RAW and CAP_BPF: "
					     "run as root");
		return pm_open_error(p, ret, "cannot bind an AF_XDP socket to "
				     "queue %u: %s", q->qid, strerror(-ret));
	}

	struct xdp_options opts = { 0 };
	olen = sizeof(opts);
	if (getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opts, &olen) == 0)
		q->zc = opts.flags & XDP_OPTIONS_ZEROCOPY;
	if (xp->tx) {
		/* One sendto() may move the whole ring (copy mode, 6.17+). */
		unsigned int budget = xp->tx_size;
		(void)setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget,
				 sizeof(budget));
	}
	if (xp->busy_poll) {
		int one = 1, usec = 20, budget = 64;
		if (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one,
			       sizeof(one)) ||
		    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &usec, sizeof(usec)) ||
		    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget,
			       sizeof(budget)))
			pm_log(p, PKTMAP_LOG_INFO, "%s: busy polling not available: "
			       "%s", p->name, strerror(errno));
	}
	xp->nsock++;
	return 0;
}

/* Open every bound queue's socket. The first shares the UMEM of another
 * port on the region if it can (same mode), else registers it; the rest
 * share the first's. */
static int open_sockets(struct pktmap_port *p, struct xdp_priv *xp,
			uint32_t flags)
{
	uint32_t mode_flag = (flags & PKTMAP_OPEN_ZEROCOPY) ? XDP_ZEROCOPY :
			     (flags & PKTMAP_OPEN_COPY) ? XDP_COPY : 0;
	int ret = 0;

	pthread_mutex_lock(&share_mu);
	if (p->region.named) {
		xp->share = share_get(p->region.fd);
		struct xdp_priv *d = share_donor(xp->share, xp);
		if (d && !((flags & PKTMAP_OPEN_ZEROCOPY) && !d->zc) &&
		    !((flags & PKTMAP_OPEN_COPY) && d->zc)) {
			ret = xsk_open(p, xp, &xp->q[0], d->q[0].fd, 0);
			if (ret == 0)
				snprintf(xp->umem_from, sizeof(xp->umem_from), "%s",
					 d->ifname);
			if (ret) {
				/* Different driver modes cannot share: own UMEM
				 * over the same pages. */
				pm_log(p, PKTMAP_LOG_DEBUG, "%s: cannot share the UMEM "
				       "of %s (%s): registering another", p->name,
				       d->ifname, strerror(-ret));
				xq_unmap(&xp->q[0].rx);
				xq_unmap(&xp->q[0].tx);
				xq_unmap(&xp->q[0].fq);
				xq_unmap(&xp->q[0].cq);
				close(xp->q[0].fd);
				xp->q[0].fd = -1;
			}
		} else {
			ret = -1;
		}
		if (xp->share) {
			xp->share_next = xp->share->users;
			xp->share->users = xp;
		}
	} else {
		ret = -1;
	}
	if (ret)
		ret = xsk_open(p, xp, &xp->q[0], -1, mode_flag);
	if (ret == 0)
		xp->zc = xp->q[0].zc;
	for (uint32_t j = 1; ret == 0 && j < xp->hi - xp->lo; j++) {
		ret = xsk_open(p, xp, &xp->q[j], xp->q[0].fd, 0);
		if (ret == -EBUSY)
			ret = pm_open_error(p, ret, "queue %u is busy: another "
					    "AF_XDP socket or XDP program uses it "
					    "(is another pktmap running on %s?)",
					    xp->q[j].qid, xp->ifname);
		else if (ret)
			ret = pm_open_error(p, ret, "cannot bind queue %u: %s",
					    xp->q[j].qid, strerror(-ret));
	}
	pthread_mutex_unlock(&share_mu);
	if (ret)
		return ret;
	if ((flags & PKTMAP_OPEN_ZEROCOPY) && !xp->zc)
		return pm_open_error(p, -EOPNOTSUPP, "driver %s has no zero-copy "
				     "AF_XDP support: drop /Z to run in copy mode",
				     xp->driver);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The fast path. */

static inline void free_push(struct xdp_priv *xp, uint32_t idx)
{
	if (pm_likely(xp->nfree < xp->free_cap))
		xp->free[xp->nfree++] = idx;
}

/* Keep the fill ring stocked from the free list: the kernel can deliver
 * only into buffers it has. */
static void fill_refill(struct xdp_priv *xp, struct xdp_queue *q)
{
	uint32_t want = xp->fq_size - q->rx_inflight;
	if (want > xp->nfree)
		want = xp->nfree;
	if (want == 0)
		return;
	uint32_t n = pm_xq_prod_space(&q->fq, want);
	uint32_t prod = q->fq.cached_prod, posted = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t idx = xp->free[--xp->nfree];
		if (pm_unlikely(bit_test(xp->rx_own, idx) ||
				bit_test(xp->tx_own, idx)))
			continue; /* never hand the kernel a buffer twice */
		bit_set(xp->rx_own, idx);
		*pm_xq_addr(&q->fq, prod + posted) = (uint64_t)idx << xp->bs_shift;
		posted++;
	}
	q->fq.cached_prod = prod + posted;
	q->rx_inflight += posted;
	pm_xq_prod_submit(&q->fq);
}

/* Wake the driver for the fill ring (zero-copy) or run busy polling.
 * Returns false when the socket lost its device. */
static bool rx_kick(struct xdp_queue *q)
{
	if (recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL) < 0 &&
	    errno == ENXIO)
		q->dead = true;
	return !q->dead;
}

/* The interface went away (deleted, moved to another namespace): the
 * kernel unbound the socket. For a reader that is the end of the source. */
static void queue_gone(struct pktmap_port *p, struct xdp_queue *q)
{
	if (!(p->info_flags & PKTMAP_INFO_EOF))
		pm_log(p, PKTMAP_LOG_WARN, "%s: queue %u: the interface went away",
		       p->name, q->qid);
	p->info_flags |= PKTMAP_INFO_EOF;
}

/* Give the kernel the descriptors queued in the TX ring. In copy mode
 * each sendto() transmits at most the socket's budget and says EAGAIN
 * when more is left, so go on while it makes progress. EAGAIN, EBUSY and
 * ENOBUFS leave what was not sent in the ring: nothing is lost, the next
 * sync or poll kicks again. Returns 0, or -ENODEV when the device is
 * gone. */
static int tx_kick(struct pktmap_port *p, struct xdp_queue *q)
{
	uint32_t pending = pm_xq_prod_pending(&q->tx);
	for (int tries = 0; pending && tries < 64; tries++) {
		if (q->zc && !pm_xq_needs_wakeup(&q->tx))
			return 0;
		if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			return 0;
		int err = errno;
		uint32_t left = pm_xq_prod_pending(&q->tx);
		if (err == EAGAIN || err == EBUSY) {
			if (left >= pending)
				return 0; /* no room in the kernel: later */
			pending = left;
			continue;
		}
		if (err == ENOBUFS || err == EINTR)
			return 0;
		if (err == ENXIO || err == ENODEV) {
			q->dead = true;
			queue_gone(p, q);
			return -ENODEV;
		}
		pm_log_ratelimited(p, &p->rl_ring, "%s: queue %u: sendto: %s: "
				   "frames stay queued", p->name, q->qid,
				   strerror(err));
		return 0;
	}
	return 0;
}

/* Multi-buffer: of the `avail` descriptors that fit, keep only whole
 * frames (a frame is never split across syncs). A frame longer than the
 * whole ring could never be delivered: its descriptors are consumed, its
 * buffers recycled, and it is counted as too long. */
static uint32_t rx_whole_frames(struct pktmap_port *p, struct xdp_priv *xp,
				struct xdp_queue *q, uint32_t avail,
				bool ring_empty)
{
	uint32_t cons = q->rx.cached_cons, whole = 0;
	for (uint32_t i = 0; i < avail; i++)
		if (!(pm_xq_desc(&q->rx, cons + i)->options & XDP_PKT_CONTD))
			whole = i + 1;
	if (whole || !ring_empty || avail == 0)
		return whole;
	uint32_t all = pm_xq_cons_avail(&q->rx, UINT32_MAX), i = 0;
	for (; i < all; i++) {
		const struct xdp_desc *d = pm_xq_desc(&q->rx, cons + i);
		uint64_t idx = d->addr >> xp->bs_shift;
		if (idx >= 2 && idx < xp->nbufs && bit_test(xp->rx_own, (uint32_t)idx)) {
			bit_clear(xp->rx_own, (uint32_t)idx);
			q->rx_inflight--;
			free_push(xp, (uint32_t)idx);
		}
		if (!(d->options & XDP_PKT_CONTD)) {
			i++;
			p->st.drop_too_long++;
			break;
		}
	}
	q->rx.cached_cons = cons + i;
	pm_xq_cons_release(&q->rx);
	return 0;
}

/* Receive: release [hwcur, head) (the slots keep their buffers), then
 * swap newly arrived frames into [hwtail, hwcur - 1). */
static int xdp_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct xdp_priv *xp = p->priv;
	struct xdp_queue *q = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, shift = xp->bs_shift;
	const uint32_t usable = p->bs.usable, nbufs = xp->nbufs;

	if (pm_unlikely(k->host))
		return pm_xdp_host_rxsync(p, k, k->priv);
	if (pm_unlikely(q->dead)) {
		k->hwcur = k->rhead;
		return 0; /* the end of the source: EOF is set */
	}
	k->hwcur = k->rhead;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, k->hwtail, n);
	uint32_t got = pm_xq_cons_avail(&q->rx, space);
	uint32_t j = k->hwtail, cons = q->rx.cached_cons;
	uint64_t pkts = 0, bytes = 0;
	if (xp->sg)
		got = rx_whole_frames(p, xp, q, got, space == n - 1);

	for (uint32_t i = 0; i < got; i++) {
		const struct xdp_desc *d = pm_xq_desc(&q->rx, cons + i);
		uint64_t addr = d->addr;
		uint32_t len = d->len;
		uint64_t idx = addr >> shift;
		uint32_t ofs = (uint32_t)addr & (xp->buf_size - 1);
		if (pm_unlikely(idx < 2 || idx >= nbufs ||
				!bit_test(xp->rx_own, (uint32_t)idx))) {
			xp->bad_desc++; /* not a buffer we gave the kernel */
			continue;
		}
		bit_clear(xp->rx_own, (uint32_t)idx);
		q->rx_inflight--;
		uint32_t contd = d->options & XDP_PKT_CONTD;
		if (pm_unlikely(ofs != PM_XDP_HEADROOM || len > usable ||
				(contd && !xp->sg))) {
			xp->bad_desc++;
			free_push(xp, (uint32_t)idx);
			continue;
		}
		struct netmap_slot *s = &ring->slot[j];
		uint32_t old = s->buf_idx;
		/* The slot's buffer (ours since it was released, perhaps
		 * swapped by the application) feeds the fill ring. */
		if (pm_likely(pm_buf_ok(&p->bs, old) && !bit_test(xp->rx_own, old) &&
			      !bit_test(xp->tx_own, old)))
			free_push(xp, old);
		else
			pm_slot_reject(p, k, j, old, s->len, PM_SLOT_BAD_IDX);
		s->buf_idx = (uint32_t)idx;
		s->len = (uint16_t)len;
		s->flags = contd ? NS_MOREFRAG : 0;
		j = j + 1 == n ? 0 : j + 1;
		pkts += !contd;
		bytes += len;
	}
	if (got) {
		q->rx.cached_cons = cons + got;
		pm_xq_cons_release(&q->rx);
	}
	k->hwtail = j;
	p->st.rx_packets += pkts;
	p->st.rx_bytes += bytes;
	fill_refill(xp, q);
	if (xp->busy_poll || (got == 0 && pm_xq_needs_wakeup(&q->fq)))
		(void)rx_kick(q);
	if (pkts && (ring->flags & NR_TIMESTAMP))
		gettimeofday(&ring->ts, NULL);
	return 0;
}

/* Reap completions: the buffers are the kernel's no more. */
static void tx_reap(struct xdp_priv *xp, struct xdp_queue *q)
{
	uint32_t n = pm_xq_cons_avail(&q->cq, q->cq.size);
	if (n == 0)
		return;
	uint32_t cons = q->cq.cached_cons;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t idx = *pm_xq_addr(&q->cq, cons + i) >> xp->bs_shift;
		if (pm_likely(idx < xp->nbufs && bit_test(xp->tx_own, (uint32_t)idx))) {
			bit_clear(xp->tx_own, (uint32_t)idx);
			q->tx_inflight--;
		} else {
			xp->bad_desc++;
		}
	}
	q->cq.cached_cons = cons + n;
	pm_xq_cons_release(&q->cq);
}

/* Transmit: post [hwcur, head) with each slot's own buffer; a slot comes
 * back to the application (tail passes it) once its buffer completed. */
static int xdp_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct xdp_priv *xp = p->priv;
	struct xdp_queue *q = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, head = k->rhead;
	uint32_t i = k->hwcur;
	int ret = 0;

	if (pm_unlikely(k->host))
		return pm_xdp_host_txsync(p, k, k->priv);
	if (pm_unlikely(q->dead))
		return -ENODEV;
	tx_reap(xp, q);
	while (q->tx_done != i && !bit_test(xp->tx_own, q->tx_sent[q->tx_done]))
		q->tx_done = q->tx_done + 1 == n ? 0 : q->tx_done + 1;

	uint32_t room = pm_xq_prod_space(&q->tx, pm_ring_dist(i, head, n));
	uint32_t prod = q->tx.cached_prod, posted = 0;
	uint64_t pkts = 0, bytes = 0;
	while (i != head) {
		/* One frame: a slot, or a chain of slots flagged NS_MOREFRAG
		 * but the last. Each slot is read once, into fr[]. */
		struct { uint32_t idx, len; } fr[XDP_MAX_FRAGS];
		uint32_t nf = 0, e = i, flen = 0;
		bool whole = false;
		enum pm_slot_verdict v = PM_SLOT_OK;
		uint32_t bad_at = i, bad_idx = 0, bad_len = 0;
		do {
			const struct netmap_slot *s = &ring->slot[e];
			uint32_t idx = s->buf_idx, len = s->len, fl = s->flags;
			q->tx_sent[e] = 0;
			if (nf < XDP_MAX_FRAGS) {
				fr[nf].idx = idx;
				fr[nf].len = len;
			}
			enum pm_slot_verdict sv = pm_slot_check(&p->bs, idx, len, 1);
			if (sv == PM_SLOT_OK &&
			    (bit_test(xp->tx_own, idx) || bit_test(xp->rx_own, idx)))
				sv = PM_SLOT_BAD_IDX; /* the kernel holds that buffer */
			if (sv != PM_SLOT_OK && v == PM_SLOT_OK) {
				v = sv;
				bad_at = e, bad_idx = idx, bad_len = len;
			}
			nf++;
			flen += len;
			e = e + 1 == n ? 0 : e + 1;
			whole = !(fl & NS_MOREFRAG);
		} while (!whole && e != head);
		if (!whole && pm_ring_dist(i, head, n) < n - 1)
			break; /* the rest of the chain is not submitted yet */
		if (whole && v == PM_SLOT_OK && nf <= XDP_MAX_FRAGS &&
		    (nf == 1 || xp->sg) && nf > room - posted)
			break; /* no room for the whole frame: later */
		if (pm_unlikely(v != PM_SLOT_OK)) {
			pm_slot_reject(p, k, bad_at, bad_idx, bad_len, v);
		} else if (pm_unlikely(!whole || nf > XDP_MAX_FRAGS ||
				       (nf > 1 && !xp->sg))) {
			p->st.drop_too_long++; /* a chain this port cannot send */
		} else {
			uint32_t at = i;
			for (uint32_t f = 0; f < nf; f++) {
				struct xdp_desc *d = pm_xq_desc(&q->tx, prod + posted);
				d->addr = ((uint64_t)fr[f].idx << xp->bs_shift) +
					  PM_XDP_HEADROOM;
				d->len = fr[f].len;
				d->options = f + 1 < nf ? XDP_PKT_CONTD : 0;
				bit_set(xp->tx_own, fr[f].idx);
				q->tx_sent[at] = fr[f].idx;
				at = at + 1 == n ? 0 : at + 1;
				posted++;
			}
			pkts++;
			bytes += flen;
		}
		i = e;
	}
	if (posted) {
		q->tx.cached_prod = prod + posted;
		q->tx_inflight += posted;
		pm_xq_prod_submit(&q->tx);
	}
	if (posted || pm_xq_prod_pending(&q->tx))
		ret = tx_kick(p, q);
	/* Rejected slots before anything in flight are done at once. */
	while (q->tx_done != i && !bit_test(xp->tx_own, q->tx_sent[q->tx_done]))
		q->tx_done = q->tx_done + 1 == n ? 0 : q->tx_done + 1;
	k->hwcur = i;
	k->hwtail = q->tx_done == 0 ? n - 1 : q->tx_done - 1;
	p->st.tx_packets += pkts;
	p->st.tx_bytes += bytes;
	return ret;
}

/* Before sleeping: make the kernel run what waits for a kick, arm epoll
 * (edge-triggered: the socket's wake-ups on arrival and completion are
 * the events), then look once more. */
static int xdp_poll_arm(struct pktmap_port *p, short events)
{
	struct xdp_priv *xp = p->priv;
	int ready = 0;
	for (uint32_t j = 0; j < xp->hi - xp->lo; j++) {
		struct xdp_queue *q = &xp->q[j];
		uint32_t want = EPOLLET;
		if ((events & POLLIN) && xp->rx) {
			want |= EPOLLIN;
			/* Also the only way to learn that the device is gone:
			 * an unbound socket polls as idle, not as an error. */
			if (!rx_kick(q)) {
				queue_gone(p, q);
				ready = 1;
			}
		}
		if ((events & POLLOUT) && xp->tx) {
			want |= EPOLLOUT;
			if (pm_xq_prod_pending(&q->tx))
				(void)tx_kick(p, q);
		}
		if (want != q->ep_events) {
			struct epoll_event ev = { .events = want, .data.u32 = j };
			if (epoll_ctl(xp->epfd, EPOLL_CTL_MOD, q->fd, &ev) == 0)
				q->ep_events = want;
		}
		if ((want & EPOLLIN) &&
		    __atomic_load_n(q->rx.producer, __ATOMIC_ACQUIRE) !=
			    q->rx.cached_cons)
			ready = 1;
		if ((want & EPOLLOUT) && q->tx_inflight) {
			if (__atomic_load_n(q->cq.producer, __ATOMIC_ACQUIRE) !=
			    q->cq.cached_cons)
				ready = 1;
			/* Zero-copy drivers publish completions without waking
			 * the socket: do not sleep on them. */
			if (q->zc)
				ready = 1;
		}
	}
	if (xp->host && (events & POLLIN) && xp->rx &&
	    pm_xdp_host_rx_ready(&xp->hostr))
		ready = 1;
	return ready;
}

/* After waking: consume the edge-triggered events. */
static void xdp_poll_disarm(struct pktmap_port *p, short events)
{
	(void)events;
	struct xdp_priv *xp = p->priv;
	struct epoll_event ev[16];
	while (epoll_wait(xp->epfd, ev, 16, 0) == 16)
		;
}

static void xdp_stats(const struct pktmap_port *p, struct pktmap_stats *st)
{
	struct xdp_priv *xp = p->priv;
	/* rx_fill_ring_empty_descs is left out: in copy mode the same loss
	 * is also counted in rx_dropped, and in zero-copy mode an empty fill
	 * ring shows as the NIC's own drops. */
	for (uint32_t j = 0; j < xp->nsock; j++) {
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);
		memset(&xs, 0, sizeof(xs));
		if (getsockopt(xp->q[j].fd, SOL_XDP, XDP_STATISTICS, &xs, &len) == 0)
			st->drop_backend += xs.rx_dropped + xs.rx_ring_full +
					    xs.rx_invalid_descs + xs.tx_invalid_descs;
	}
	st->drop_backend += xp->bad_desc + xp->hostr.drops;
}

/* ------------------------------------------------------------------ */
/* Open and close. */

static size_t obj_size(uint32_t nq, uint32_t nh, uint32_t txs, uint32_t rxs)
{
	return pm_nifp_size(nq, nq, nh, nh) + (nq + nh) * (pm_ring_size(txs) +
							   pm_ring_size(rxs));
}

static uint32_t claim_of(struct xdp_priv *xp, uint32_t qid)
{
	/* Above the pipe back end's claims (< 2^19). */
	return xp->claim_base + qid;
}

/* Lay out the netmap_if and rings, and take every buffer the port will
 * ever own: one per bound slot, plus the fill rings' stock. */
static int setup_rings(struct pktmap_port *p, struct xdp_priv *xp,
		       uint32_t txs, uint32_t rxs)
{
	struct pm_region *r = &p->region;
	uint32_t nb = xp->hi - xp->lo, nh = xp->host ? 1 : 0;
	uint32_t slots = (nb + nh) * ((xp->rx ? rxs : 0) + (xp->tx ? txs : 0));
	uint32_t total = slots + xp->free_cap;
	char key[48];
	struct stat ns;
	int ret;

	if (stat("/proc/self/ns/net", &ns) != 0)
		ns.st_ino = 0;
	/* One object per interface and queue range: claims make sure only
	 * one user at a time has it. */
	snprintf(key, sizeof(key), "xdp:%s@%lx:%u+%u%s", xp->ifname,
		 (unsigned long)ns.st_ino, xp->lo, nb, nh ? "^" : "");
	xp->claim_base = (1u << 24) +
			 (((uint32_t)xp->ifindex * 2654435761u ^
			   (uint32_t)ns.st_ino) & 0x3ffffu) * (PM_MAX_RINGS + 1);

	uint32_t *all = malloc((size_t)total * sizeof(*all));
	if (!all)
		return -ENOMEM;
	pm_region_lock(r);
	if (r->named) {
		for (; xp->nclaims < nb; xp->nclaims++)
			if (pm_region_claim(r, claim_of(xp, xp->lo + xp->nclaims))) {
				pm_region_unlock(r);
				free(all);
				return pm_open_error(p, -EBUSY, "queue %u of %s is "
						     "already open in region '%s'",
						     xp->lo + xp->nclaims, xp->ifname,
						     r->name);
			}
		if (nh) {
			if (pm_region_claim(r, claim_of(xp, PM_MAX_RINGS))) {
				pm_region_unlock(r);
				free(all);
				return pm_open_error(p, -EBUSY, "the host rings of %s "
						     "are already open in region '%s'",
						     xp->ifname, r->name);
			}
			xp->host_claimed = true;
		}
	}
	bool created;
	uint64_t ofs = pm_region_object(r, key, obj_size(xp->nq, nh, txs, rxs),
					&created);
	if (!ofs) {
		pm_region_unlock(r);
		free(all);
		return pm_open_error(p, -ENOMEM, "region '%s' has no room for the "
				     "rings of %s (open the xdp: port first, it "
				     "sizes the region)", r->name, xp->ifname);
	}
	ret = pm_region_make_nifp(r, ofs, xp->ifname, xp->nq, xp->nq, nh, nh, txs,
				  rxs, false);
	if (ret == 0)
		ret = pm_region_alloc_bufs(r, all, total);
	if (ret) {
		uint32_t fc = pm_region_free_count(r);
		pm_region_unlock(r);
		free(all);
		return pm_open_error(p, -ENOMEM, "region '%s' is out of buffers: "
				     "%u needed, %u free (give it more with "
				     "@conf:bufs=)", r->name, total, fc);
	}
	pm_region_unlock(r);
	xp->bufs_taken = true;

	p->nifp = pm_region_ptr(r, ofs);
	uint32_t k = 0;
	/* The bound NIC rings, then the host rings (index nq). */
	for (uint32_t qid = xp->lo; qid < xp->hi + nh; qid++) {
		if (nh && qid == xp->hi)
			qid = xp->nq;
		if (xp->rx) {
			struct netmap_ring *ring = NETMAP_RXRING(p->nifp, qid);
			for (uint32_t s = 0; s < rxs; s++) {
				ring->slot[s].buf_idx = all[k++];
				ring->slot[s].len = 0;
				ring->slot[s].flags = 0;
			}
		}
		if (xp->tx) {
			struct netmap_ring *ring = NETMAP_TXRING(p->nifp, qid);
			for (uint32_t s = 0; s < txs; s++) {
				ring->slot[s].buf_idx = all[k++];
				ring->slot[s].len = 0;
				ring->slot[s].flags = 0;
			}
		}
	}
	memcpy(xp->free, all + k, (size_t)(total - k) * sizeof(*all));
	xp->nfree = total - k;
	free(all);
	return 0;
}

static int xdp_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	char err[300];
	int ret;

	struct xdp_priv *xp = calloc(1, sizeof(*xp));
	if (!xp)
		return -ENOMEM;
	p->priv = xp;
	xp->epfd = -1;
	pm_xdp_prog_init(&xp->prog);
	pm_xdp_host_init(&xp->hostr);
	snprintf(xp->ifname, sizeof(xp->ifname), "%s", nm->body);
	xp->rx = p->dir & PKTMAP_DIR_RX;
	xp->tx = p->dir & PKTMAP_DIR_TX;
	xp->busy_poll = nm->flags & PKTMAP_OPEN_BUSY_POLL;

	if (c->tx_rings || c->rx_rings)
		return pm_open_error(p, -EINVAL, "'@conf:rings' does not apply: "
				     "an interface has the queues it has (ethtool "
				     "-L %s combined N)", xp->ifname);
	if (c->host_tx_rings > 1 || c->host_rx_rings > 1)
		return pm_open_error(p, -EINVAL, "an interface has one host ring "
				     "pair");

	xp->ifindex = (int)if_nametoindex(xp->ifname);
	if (xp->ifindex == 0)
		return pm_open_error(p, -ENODEV, "no such interface");

	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return pm_open_error(p, -errno, "socket: %s", strerror(errno));
	xp->nq = queue_count(s, xp->ifname);
	driver_name(s, xp->ifname, xp->driver, sizeof(xp->driver));
	struct ifreq ifr;
	uint32_t mtu = 1500;
	if (ifreq_ioctl(s, xp->ifname, SIOCGIFMTU, &ifr) == 0)
		mtu = (uint32_t)ifr.ifr_mtu;
	close(s);

	xp->host = nm->reg == NR_REG_SW || nm->reg == NR_REG_ONE_SW ||
		   nm->reg == NR_REG_NIC_SW;
	if (nm->reg == NR_REG_ONE_SW && nm->ring != 0)
		return pm_open_error(p, -EINVAL, "host ring %d does not exist: an "
				     "interface has one host ring pair", nm->ring);
	if (nm->reg == NR_REG_SW || nm->reg == NR_REG_ONE_SW) {
		xp->lo = xp->hi = 0; /* host rings only */
	} else if (nm->reg == NR_REG_ONE_NIC) {
		if ((uint32_t)nm->ring >= xp->nq)
			return pm_open_error(p, -EINVAL, "queue %d does not exist: "
					     "%s has %u queue%s", nm->ring,
					     xp->ifname, xp->nq,
					     xp->nq == 1 ? "" : "s");
		xp->lo = (uint32_t)nm->ring;
		xp->hi = xp->lo + 1;
	} else {
		xp->lo = 0;
		xp->hi = xp->nq;
	}

	uint32_t bsz = c->buf_size ? c->buf_size : PM_DEFAULT_BUF_SIZE;
	if (bsz != 2048 && bsz != 4096)
		return pm_open_error(p, -EINVAL, "'@conf:buf-size=%u': AF_XDP "
				     "buffers are 2048 or 4096 bytes", bsz);
	/* A frame larger than a buffer spans several (NS_MOREFRAG chains,
	 * AF_XDP multi-buffer), up to what the kernel takes in one frame. */
	uint32_t frame = mtu + 14 + 4; /* Ethernet header and one VLAN tag */
	uint32_t usable = bsz - PM_XDP_HEADROOM;
	xp->sg = frame > usable;
	if (frame > usable * XDP_MAX_FRAGS)
		return pm_open_error(p, -EMSGSIZE, "MTU %u: frames up to %u bytes "
				     "need more than %u buffers of %u bytes: lower "
				     "the MTU (ip link set dev %s mtu %u)", mtu,
				     frame, XDP_MAX_FRAGS, usable, xp->ifname,
				     usable * XDP_MAX_FRAGS - 18);

	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	/* The kernel's RX ring is a queue in front of the netmap ring: at
	 * least 4096 entries absorb a burst while the application is not
	 * scheduled (20 ms at 200 kpps). The fill ring is as large: its
	 * buffers are the ones the kernel can fill before we run again. */
	xp->rx_size = pow2_at_least(rxs < XDP_MIN_RX_RING ? XDP_MIN_RX_RING : rxs);
	xp->tx_size = pow2_at_least(txs);
	xp->fq_size = xp->rx_size;
	xp->cq_size = xp->tx_size; /* >= the slots that can be in flight */
	uint32_t nb = xp->hi - xp->lo;
	xp->free_cap = xp->rx ? nb * xp->fq_size : 0;

	uint32_t nh = xp->host ? 1 : 0;
	size_t obj = obj_size(xp->nq, nh, txs, rxs);
	struct pm_region_params rp = {
		.bufs = 2 + (nb + nh) * ((xp->rx ? rxs : 0) + (xp->tx ? txs : 0)) +
			xp->free_cap + c->extra_bufs + 64,
		.buf_size = bsz,
		.headroom = PM_XDP_HEADROOM,
		.exact_headroom = true,
		.obj_size = obj, /* (a named region gets room for others) */
		.hugepages = c->hugepages,
	};
	if (c->bufs > rp.bufs)
		rp.bufs = c->bufs;
	ret = pm_region_open(&p->region, c->region, &rp, err, sizeof(err));
	if (ret)
		return pm_open_error(p, ret, "%s", err);
	struct pm_region *r = &p->region;
	if (r->buf_size != 2048 && r->buf_size != 4096)
		return pm_open_error(p, -EINVAL, "region '%s' has buf_size=%u: "
				     "AF_XDP buffers are 2048 or 4096 bytes",
				     r->name, r->buf_size);
	if (r->headroom != PM_XDP_HEADROOM)
		return pm_open_error(p, -EINVAL, "region '%s' has no AF_XDP "
				     "headroom", r->name);
	xp->nbufs = r->nbufs;
	xp->buf_size = r->buf_size;
	xp->bs_shift = (uint32_t)__builtin_ctz(r->buf_size);
	p->bs.usable = r->buf_size - PM_XDP_HEADROOM;
	p->bs.nbufs = r->nbufs;

	size_t words = (r->nbufs + 63) / 64;
	xp->rx_own = calloc(words, sizeof(uint64_t));
	xp->tx_own = calloc(words, sizeof(uint64_t));
	xp->free = calloc(xp->free_cap ? xp->free_cap : 1, sizeof(uint32_t));
	xp->q = calloc(nb ? nb : 1, sizeof(*xp->q));
	if (!xp->rx_own || !xp->tx_own || !xp->free || !xp->q)
		return -ENOMEM;
	for (uint32_t j = 0; j < nb; j++) {
		xp->q[j].fd = -1;
		xp->q[j].qid = xp->lo + j;
		xp->q[j].tx_sent = calloc(txs, sizeof(uint32_t));
		if (!xp->q[j].tx_sent)
			return -ENOMEM;
	}

	ret = setup_rings(p, xp, txs, rxs);
	if (ret)
		return ret;
	ret = pm_port_bind_krings(p);
	if (ret)
		return ret;
	for (uint32_t j = 0; j < nb; j++) {
		pm_txkring(p, xp->lo + j)->priv = &xp->q[j];
		pm_rxkring(p, xp->lo + j)->priv = &xp->q[j];
	}
	if (xp->host) {
		pm_txkring(p, xp->nq)->priv = &xp->hostr;
		pm_rxkring(p, xp->nq)->priv = &xp->hostr;
	}

	ret = nb ? open_sockets(p, xp, nm->flags) : 0;
	if (ret)
		return ret;
	if (xp->rx)
		for (uint32_t j = 0; j < nb; j++)
			fill_refill(xp, &xp->q[j]);

	/* RX needs the program; a port opened for TX only leaves the
	 * interface's receive side to the host stack. */
	if (xp->rx && nb) {
		uint32_t qids[PM_MAX_RINGS];
		int fds[PM_MAX_RINGS];
		for (uint32_t j = 0; j < nb; j++) {
			qids[j] = xp->q[j].qid;
			fds[j] = xp->q[j].fd;
		}
		ret = pm_xdp_prog_attach(p, &xp->prog, xp->ifindex, xp->ifname,
					 xp->driver, xp->zc || xp->host, qids, fds,
					 nb);
		if (ret)
			return ret;
	}
	if (xp->host) {
		/* (Native XDP only with NIC rings: a generic-mode program
		 * would see the frames given to the host stack again.) */
		ret = pm_xdp_host_open(p, &xp->hostr, xp->ifindex, xp->ifname);
		if (ret)
			return ret;
	}

	xp->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (xp->epfd < 0)
		return pm_open_error(p, -errno, "epoll_create1: %s", strerror(errno));
	for (uint32_t j = 0; j < nb; j++) {
		struct xdp_queue *q = &xp->q[j];
		q->ep_events = EPOLLET | (xp->rx ? EPOLLIN : EPOLLOUT);
		struct epoll_event ev = { .events = q->ep_events, .data.u32 = j };
		if (epoll_ctl(xp->epfd, EPOLL_CTL_ADD, q->fd, &ev) != 0)
			return pm_open_error(p, -errno, "epoll_ctl: %s",
					     strerror(errno));
	}
	if (xp->host) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
					  .data.u32 = UINT32_MAX };
		if (epoll_ctl(xp->epfd, EPOLL_CTL_ADD, xp->hostr.rb_fd, &ev) != 0)
			return pm_open_error(p, -errno, "epoll_ctl: %s",
					     strerror(errno));
	}
	p->fd = xp->epfd;
	p->mode = xp->zc ? PKTMAP_MODE_ZEROCOPY : PKTMAP_MODE_COPY;
	char qs[64];
	if (nb == 0)
		snprintf(qs, sizeof(qs), "host rings");
	else if (nb == 1)
		snprintf(qs, sizeof(qs), "queue %u of %u%s", xp->lo, xp->nq,
			 xp->host ? " and host rings" : "");
	else
		snprintf(qs, sizeof(qs), "queues %u-%u of %u%s", xp->lo, xp->hi - 1,
			 xp->nq, xp->host ? " and host rings" : "");
	pm_log(p, PKTMAP_LOG_INFO, "%s: %s %s, %s mode%s%s, XDP program %s",
	       p->name, xp->driver, qs, xp->zc ? "zero-copy" : "copy",
	       xp->umem_from[0] ? ", UMEM shared with " : "", xp->umem_from,
	       !xp->rx || !nb ? "not needed" :
	       xp->prog.generic ? "in generic mode" : "in native mode");
	return 0;
}

/* A set of buffer indices, each kept once. */
struct bufset {
	const struct pm_bufspace *bs;
	uint64_t *seen;
	uint32_t *list;
	uint32_t n;
};

static void bufset_add(struct bufset *b, uint32_t idx)
{
	if (pm_buf_ok(b->bs, idx) && !bit_test(b->seen, idx)) {
		bit_set(b->seen, idx);
		b->list[b->n++] = idx;
	}
}

/* Give back every buffer the port holds, each once (whatever duplicates
 * the application wrote into its slots): the ring slots, the free list,
 * and what the kernel held when the sockets closed. */
static void return_buffers(struct pktmap_port *p, struct xdp_priv *xp)
{
	struct pm_region *r = &p->region;
	size_t words = (xp->nbufs + 63) / 64;
	struct bufset b = {
		.bs = &p->bs,
		.seen = calloc(words, sizeof(uint64_t)),
		.list = malloc((size_t)xp->nbufs * sizeof(uint32_t)),
	};
	if (!b.seen || !b.list) {
		free(b.seen);
		free(b.list);
		return; /* the buffers come back when the region is rebuilt */
	}
	uint32_t nh = xp->host ? 1 : 0;
	for (uint32_t qid = xp->lo; p->nifp && qid < xp->hi + nh; qid++) {
		struct xdp_queue *q = qid < xp->hi ? &xp->q[qid - xp->lo] : NULL;
		if (!q)
			qid = xp->nq; /* the host rings */
		if (xp->rx) {
			struct netmap_ring *ring = NETMAP_RXRING(p->nifp, qid);
			for (uint32_t s = 0; s < ring->num_slots; s++)
				bufset_add(&b, ring->slot[s].buf_idx);
		}
		if (xp->tx) {
			struct netmap_ring *ring = NETMAP_TXRING(p->nifp, qid);
			for (uint32_t s = 0; s < ring->num_slots; s++) {
				bufset_add(&b, ring->slot[s].buf_idx);
				if (q && q->tx_sent)
					bufset_add(&b, q->tx_sent[s]);
			}
		}
	}
	for (uint32_t i = 0; i < xp->nfree; i++)
		bufset_add(&b, xp->free[i]);
	for (size_t w = 0; w < words; w++) {
		uint64_t m = xp->rx_own[w] | xp->tx_own[w];
		while (m) {
			bufset_add(&b, (uint32_t)(w * 64 + (uint32_t)__builtin_ctzll(m)));
			m &= m - 1;
		}
	}
	pm_region_lock(r);
	pm_region_free_bufs(r, b.list, b.n);
	pm_region_unlock(r);
	free(b.seen);
	free(b.list);
}

static void xdp_close(struct pktmap_port *p)
{
	struct xdp_priv *xp = p->priv;
	if (!xp)
		return;
	uint32_t nb = xp->hi - xp->lo;
	/* First, so that no port opening now picks our sockets to share
	 * the UMEM through. */
	share_leave(xp);
	if (xp->q) {
		uint32_t qids[PM_MAX_RINGS];
		for (uint32_t j = 0; j < nb; j++)
			qids[j] = xp->q[j].qid;
		pm_xdp_prog_release(p, &xp->prog, xp->ifindex, qids, nb);
		/* Closing a socket stops the kernel's use of its buffers. */
		for (uint32_t j = 0; j < nb; j++) {
			struct xdp_queue *q = &xp->q[j];
			xq_unmap(&q->rx);
			xq_unmap(&q->tx);
			xq_unmap(&q->fq);
			xq_unmap(&q->cq);
			if (q->fd >= 0)
				close(q->fd);
		}
	} else {
		pm_xdp_prog_release(p, &xp->prog, xp->ifindex, NULL, 0);
	}
	pm_xdp_host_close(p, &xp->hostr);
	if (xp->bufs_taken)
		return_buffers(p, xp);
	if (xp->host_claimed)
		pm_region_unclaim(&p->region, claim_of(xp, PM_MAX_RINGS));
	for (uint32_t i = 0; i < xp->nclaims; i++)
		pm_region_unclaim(&p->region, claim_of(xp, xp->lo + i));
	if (xp->epfd >= 0)
		close(xp->epfd);
	p->fd = -1;
	if (xp->q)
		for (uint32_t j = 0; j < nb; j++)
			free(xp->q[j].tx_sent);
	free(xp->q);
	free(xp->free);
	free(xp->rx_own);
	free(xp->tx_own);
	free(xp);
	p->priv = NULL;
}

const struct pm_port_ops pm_xdp_ops = {
	.desc = {
		.name = "xdp",
		.syntax = "xdp:IFACE[-Q|^|*][/Z|/C]",
		.mode = "zerocopy or copy",
		.summary = "AF_XDP socket per queue, the region is the UMEM; "
			   "zero-copy where the driver supports it",
	},
	.caps = PM_CAP_ONE_RING | PM_CAP_ZEROCOPY | PM_CAP_HOST,
	.open = xdp_open,
	.txsync = xdp_txsync,
	.rxsync = xdp_rxsync,
	.poll_arm = xdp_poll_arm,
	.poll_disarm = xdp_poll_disarm,
	.stats = xdp_stats,
	.close = xdp_close,
};
