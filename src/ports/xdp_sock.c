/* SPDX-License-Identifier: BSD-2-Clause
 *
 * xdp: back end, sockets and rings: facts about the interface (queues,
 * driver), one AF_XDP socket per bound queue with its four rings mapped,
 * bound with its own UMEM or the shared one.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker_proto.h"
#include "ifnet.h"
#include "xdp.h"

/* ------------------------------------------------------------------ */
/* Facts about the interface. */

/* RX queues: combined + rx-only channels (ETHTOOL_GCHANNELS), else the
 * rx-N entries under /sys/class/net/IF/queues. */
uint32_t pm_xdp_queue_count(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	uint32_t n = 0;

	if (pm_if_ethtool(ifname, &ch) == 0)
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

void pm_xdp_driver_name(const char *ifname, char *out, size_t len)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	if (pm_if_ethtool(ifname, &di) == 0 && di.driver[0])
		snprintf(out, len, "%.*s", (int)sizeof(di.driver), di.driver);
	else
		snprintf(out, len, "of %s", ifname);
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
	q->cached_prod = atomic_load_explicit(PM_ATOMIC(q->producer),
					      memory_order_acquire);
	q->cached_cons = atomic_load_explicit(PM_ATOMIC(q->consumer),
					      memory_order_acquire);
	return 0;
}

/* The interface's MTU, read again (it may have changed since open): by
 * index, as the interface may have been renamed. */
static uint32_t refresh_mtu(struct xdp_priv *xp)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = xp->ifindex;
	if (xp->mtu_fd >= 0 && ioctl(xp->mtu_fd, SIOCGIFNAME, &ifr) == 0 &&
	    ioctl(xp->mtu_fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		atomic_store_explicit(PM_ATOMIC(&xp->mtu),
				      (uint32_t)ifr.ifr_mtu, memory_order_relaxed);
	return atomic_load_explicit(PM_ATOMIC(&xp->mtu), memory_order_relaxed);
}

void pm_xdp_mtu_tick(struct xdp_priv *xp, struct xdp_queue *q)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec == q->mtu_sec)
		return;
	q->mtu_sec = now.tv_sec;
	refresh_mtu(xp);
}

/* The kernel's AF_XDP TX checks no MTU: a veth peer, or the device,
 * drops such a frame, and its completion says nothing. The limit is
 * pkt:'s (above_mtu() in packet_tx.c), the one the kernel applies to a
 * packet socket: MTU + 14, or + 18 with a VLAN tag. */
bool pm_xdp_above_mtu(struct xdp_priv *xp, const uint8_t *frame,
		      uint32_t len, uint32_t flen)
{
	if (flen <= atomic_load_explicit(PM_ATOMIC(&xp->mtu),
					 memory_order_relaxed) + ETH_HLEN)
		return false;
	uint32_t mtu = refresh_mtu(xp);
	if (flen <= mtu + ETH_HLEN)
		return false;
	bool tagged = len >= ETH_HLEN &&
		      ((frame[12] == 0x81 && frame[13] == 0x00) ||
		       (frame[12] == 0x88 && frame[13] == 0xa8));
	return !tagged || flen > mtu + ETH_HLEN + 4;
}

void pm_xdp_xq_unmap(struct pm_xq *q)
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

/* Bind, retrying for a while when the queue is still held by a socket
 * that was just closed. A signal the process handles (a Ctrl-C) ends the
 * wait with -EINTR, as it would a blocking call: signals are blocked
 * between the sleeps and taken only inside ppoll(), so one that arrives
 * during a bind() is not missed. Synchronous ones stay unblocked. */
static int bind_retry(struct pktmap_port *p, int fd,
		      const struct sockaddr_xdp *sa)
{
	const struct timespec step = {0, BIND_BUSY_STEP_MS * 1000000L};
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int waited = 0;; waited += BIND_BUSY_STEP_MS) {
		if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
			ret = 0;
			break;
		}
		ret = -errno;
		if (ret != -EBUSY || waited >= BIND_BUSY_WAIT_MS)
			break;
		if (waited == 0)
			pm_log(p, PKTMAP_LOG_INFO, "%s: queue %u is busy: waiting up "
			       "to %d s for it (a signal stops the wait)", p->name,
			       sa->sxdp_queue_id, BIND_BUSY_WAIT_MS / 1000);
		if (ppoll(NULL, 0, &step, &old) < 0 && errno == EINTR) {
			ret = -EINTR;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

static void xsk_finish(struct pktmap_port *p, struct xdp_priv *xp,
		       struct xdp_queue *q);

/* Map the four rings of q's socket (sized already). */
static int xsk_map_rings(struct pktmap_port *p, struct xdp_priv *xp,
			 struct xdp_queue *q)
{
	int fd = q->fd, ret;
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
	return 0;
}

/* Queue q's socket from the broker (docs/broker.md): it creates the
 * socket, registers the region's pool (its own mapping of our memfd) as
 * the UMEM, or shares the first queue's, sizes the rings and binds; we
 * map the rings. A queue still held by a socket just closed is asked
 * for again, as bind_retry() does. */
static int xsk_open_brokered(struct pktmap_port *p, struct xdp_priv *xp,
			     struct xdp_queue *q, bool share,
			     uint32_t mode_flag)
{
	struct pm_region *r = &p->region;
	struct pm_bk_req req = {
		.verb = PM_BK_XSK,
		.queue = q->qid,
		.mode = mode_flag == XDP_ZEROCOPY ? PM_BK_MODE_ZC :
			mode_flag == XDP_COPY ? PM_BK_MODE_COPY : 0,
		.dir = (xp->rx ? PM_BK_DIR_RX : 0) | (xp->tx ? PM_BK_DIR_TX : 0),
		.umem_off = (uint64_t)(r->pool - (char *)r->base),
		.umem_len = (uint64_t)r->nbufs * r->buf_size,
		.chunk = r->buf_size,
		.rx = xp->rx ? xp->rx_size : 0,
		.tx = xp->tx ? xp->tx_size : 0,
		.fq = xp->rx ? xp->fq_size : 64,
		.cq = xp->tx ? xp->cq_size : 64,
		.sg = xp->sg,
		.share = share,
	};
	snprintf(req.ifname, sizeof(req.ifname), "%s", xp->ifname);
	const struct timespec step = {0, BIND_BUSY_STEP_MS * 1000000L};
	char info[PM_BK_MSG_MAX];
	int ret;
	for (int waited = 0;; waited += BIND_BUSY_STEP_MS) {
		ret = pm_broker_call(p, &req, &r->mfd, share ? 0 : 1, &q->fd, true,
				     info, sizeof(info));
		if (ret != -EBUSY)
			break;
		if (waited >= BIND_BUSY_WAIT_MS)
			return pm_open_error(p, ret, "queue %u is busy: %s", q->qid,
					     info);
		if (nanosleep(&step, NULL) != 0 && errno == EINTR)
			return pm_open_error(p, -EINTR, "queue %u is busy: "
					     "interrupted while waiting for it",
					     q->qid);
	}
	if (ret)
		return ret;
	ret = xsk_map_rings(p, xp, q);
	if (ret)
		return ret;
	xsk_finish(p, xp, q);
	return 0;
}

/* Create queue q's socket: its rings, the UMEM (registered, or shared
 * through `umem_fd`), the bind. */
static int xsk_open(struct pktmap_port *p, struct xdp_priv *xp,
		    struct xdp_queue *q, int umem_fd, uint32_t mode_flag)
{
	if (xp->broker)
		return xsk_open_brokered(p, xp, q, umem_fd >= 0, mode_flag);
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
		ret = pm_xdp_umem_register(p, fd);
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

	ret = xsk_map_rings(p, xp, q);
	if (ret)
		return ret;

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
	ret = bind_retry(p, fd, &sa);
	if (ret == -EINTR)
		return pm_open_error(p, ret, "queue %u of %s is busy (another "
				     "AF_XDP socket or XDP program uses it): "
				     "interrupted while waiting for it", q->qid,
				     xp->ifname);
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

	xsk_finish(p, xp, q);
	return 0;
}

/* A bound socket's options: what the kernel chose, TX budget, busy
 * polling. */
static void xsk_finish(struct pktmap_port *p, struct xdp_priv *xp,
		       struct xdp_queue *q)
{
	int fd = q->fd;
	struct xdp_options opts = { 0 };
	socklen_t olen = sizeof(opts);
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
}

/* Open every bound queue's socket. The first shares the UMEM of another
 * port on the region if it can (same mode), else registers it; the rest
 * share the first's. */
int pm_xdp_open_sockets(struct pktmap_port *p, struct xdp_priv *xp,
			uint32_t flags)
{
	uint32_t mode_flag = (flags & PKTMAP_OPEN_ZEROCOPY) ? XDP_ZEROCOPY :
			     (flags & PKTMAP_OPEN_COPY) ? XDP_COPY : 0;
	int ret = 0;

	pm_xdp_umem_lock();
	if (p->region.named && !xp->broker) {
		struct xdp_priv *d = pm_xdp_umem_join(xp, p->region.fd);
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
				pm_xdp_xq_unmap(&xp->q[0].rx);
				pm_xdp_xq_unmap(&xp->q[0].tx);
				pm_xdp_xq_unmap(&xp->q[0].fq);
				pm_xdp_xq_unmap(&xp->q[0].cq);
				close(xp->q[0].fd);
				xp->q[0].fd = -1;
			}
		} else {
			ret = -1;
		}
	} else {
		ret = -1;
	}
	if (ret && ret != -EINTR)
		ret = xsk_open(p, xp, &xp->q[0], -1, mode_flag);
	if (ret == 0)
		xp->zc = xp->q[0].zc;
	for (uint32_t j = 1; ret == 0 && j < xp->hi - xp->lo; j++) {
		ret = xsk_open(p, xp, &xp->q[j], xp->q[0].fd, 0);
		if (ret == -EINTR)
			; /* said by xsk_open() */
		else if (ret == -EBUSY)
			ret = pm_open_error(p, ret, "queue %u is busy: another "
					    "AF_XDP socket or XDP program uses it "
					    "(is another pktmap running on %s?)",
					    xp->q[j].qid, xp->ifname);
		else if (ret)
			ret = pm_open_error(p, ret, "cannot bind queue %u: %s",
					    xp->q[j].qid, strerror(-ret));
	}
	pm_xdp_umem_unlock();
	if (ret)
		return ret;
	if ((flags & PKTMAP_OPEN_ZEROCOPY) && !xp->zc)
		return pm_open_error(p, -EOPNOTSUPP, "driver %s has no zero-copy "
				     "AF_XDP support: drop /Z to run in copy mode",
				     xp->driver);
	return 0;
}
