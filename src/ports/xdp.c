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
 * This file opens and closes the port. The rest of the back end:
 *   xdp_sock.c  the interface's facts, one AF_XDP socket per queue, rings
 *   xdp_umem.c  the region's pool as UMEM, one UMEM per region per process
 *   xdp_sync.c  txsync, rxsync, the fill ring, kicks, poll
 *   xdp_prog.c  the XDP program and its sharing among processes
 *   xdp_host.c  the host rings (xdp:IFACE^, xdp:IFACE*)
 * and xdp.h, their shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker_proto.h"
#include "ifnet.h"
#include "xdp.h"

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
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
	struct stat ns;
	int ret;

	if (stat("/proc/self/ns/net", &ns) != 0)
		ns.st_ino = 0;
	/* Claims make sure only one user at a time has a queue. */
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

	/* The netmap_if and rings are private to this open. */
	ret = pm_port_make_rings(p, xp->ifname, xp->nq, xp->nq, nh, nh, txs, rxs);
	if (ret) {
		pm_region_lock(r);
		pm_region_free_bufs(r, all, total);
		pm_region_unlock(r);
		xp->bufs_taken = false;
		free(all);
		return ret;
	}
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

/* Buffers the region needs for nq sockets with these ring sizes. */
static uint64_t bufs_needed(const struct xdp_priv *xp, uint32_t nq, uint32_t rxs,
			    uint32_t txs, uint32_t fq, uint32_t extra)
{
	return 2 + (uint64_t)nq * ((xp->rx ? rxs + fq : 0) + (xp->tx ? txs : 0)) +
	       extra + 64;
}

/* Without CAP_IPC_LOCK the UMEM counts against the locked-memory limit
 * (8 MiB by default; dumpcap drops the capability). Unless the name
 * sized things itself (@conf:bufs, a shared @mem: region), shrink the
 * rings, largest first, until the buffers fit in 7/8 of the limit (the
 * rest for the user's other locked memory), and say so once. Returns 0,
 * or -ENOBUFS with the one-line error when even small rings do not fit. */
static int fit_memlock(struct pktmap_port *p, struct xdp_priv *xp,
		       const struct pm_conf *c, uint32_t nq, uint32_t bsz,
		       uint32_t *rxs, uint32_t *txs)
{
	uint64_t budget = pm_xdp_memlock_budget();
	if (budget == UINT64_MAX || c->bufs || c->region[0])
		return 0;
	uint64_t avail = (budget - budget / 8) / bsz;
	uint32_t r = *rxs, t = *txs, fq = xp->rx_size;
	uint64_t want = bufs_needed(xp, nq, r, t, fq, c->extra_bufs);
	if (want <= avail)
		return 0;
	while (bufs_needed(xp, nq, r, t, fq, c->extra_bufs) > avail) {
		uint32_t *big = fq >= r && fq >= t ? &fq : (r >= t ? &r : &t);
		if (*big <= 64)
			return pm_open_error(p, -ENOBUFS,
					     "even %u buffers (%llu kB of UMEM) exceed the "
					     "locked-memory limit (ulimit -l: %llu kB): "
					     "raise it (ulimit -l unlimited) or give the "
					     "process CAP_IPC_LOCK",
					     (unsigned)bufs_needed(xp, nq, 64, 64, 64, 0),
					     (unsigned long long)bufs_needed(xp, nq, 64, 64,
								      64, 0) * bsz >> 10,
					     (unsigned long long)budget >> 10);
		*big /= 2;
	}
	uint64_t got = bufs_needed(xp, nq, r, t, fq, c->extra_bufs);
	pm_log(p, PKTMAP_LOG_INFO,
	       "%s: UMEM of %llu kB (%u RX / %u TX slots) to fit the locked-"
	       "memory limit of %llu kB instead of %llu kB: raise it (ulimit -l) "
	       "or give the process CAP_IPC_LOCK for deeper rings",
	       p->name, (unsigned long long)(got * bsz >> 10), r, t,
	       (unsigned long long)(budget >> 10),
	       (unsigned long long)(want * bsz >> 10));
	*rxs = r;
	*txs = t;
	xp->rx_size = fq;
	return 0;
}

/* The port's state (p->priv: what fails later is freed by close). */
static struct xdp_priv *priv_alloc(struct pktmap_port *p,
				   const struct pm_name *nm)
{
	struct xdp_priv *xp = calloc(1, sizeof(*xp));
	if (!xp)
		return NULL;
	p->priv = xp;
	xp->epfd = -1;
	xp->evfd = -1;
	xp->mtu_fd = -1;
	pm_xdp_prog_init(&xp->prog);
	pm_xdp_host_init(&xp->hostr);
	snprintf(xp->ifname, sizeof(xp->ifname), "%s", nm->body);
	xp->rx = p->dir & PKTMAP_DIR_RX;
	xp->tx = p->dir & PKTMAP_DIR_TX;
	xp->busy_poll = nm->flags & PKTMAP_OPEN_BUSY_POLL;
	return xp;
}

/* Check the name against the interface and choose the queues it binds:
 * [lo, hi) and the host rings. Sets *mtu. */
static int choose_queues(struct pktmap_port *p, struct xdp_priv *xp,
			 const struct pm_name *nm, uint32_t *mtu)
{
	const struct pm_conf *c = &nm->conf;
	/* opts->rings: a name cannot say rings (pm_xdp_conf), a program can */
	if (c->tx_rings || c->rx_rings)
		return pm_open_error(p, -EINVAL, "a ring count does not apply: "
				     "an interface has the queues it has (ethtool "
				     "-L %s combined N)", xp->ifname);

	xp->ifindex = (int)if_nametoindex(xp->ifname);
	if (xp->ifindex == 0)
		return pm_open_error(p, -ENODEV, "no such interface");

	xp->nq = pm_xdp_queue_count(xp->ifname);
	pm_xdp_driver_name(xp->ifname, xp->driver, sizeof(xp->driver));
	struct ifreq ifr;
	*mtu = 1500;
	if (pm_if_ioctl(xp->ifname, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		*mtu = (uint32_t)ifr.ifr_mtu;
	/* TX refuses frames above the MTU (pm_xdp_above_mtu()): what the
	 * kernel or the device would drop without a word. An AF_XDP socket
	 * answers no interface ioctl: this one does, in this namespace. */
	xp->mtu = *mtu;
	p->tx_max_len = *mtu + 14;
	xp->mtu_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

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
	return 0;
}

/* The buffer size, and whether a frame of this MTU needs chains. Returns
 * the buffer size, or -errno with the open error recorded. */
static int choose_buf_size(struct pktmap_port *p, struct xdp_priv *xp,
			   const struct pm_conf *c, uint32_t mtu)
{
	/* In a region shared by name (@mem:), 4096-byte buffers, as the
	 * other ports of such a region get them (region.c): 2048-byte
	 * frames fit past the headroom. */
	uint32_t bsz = c->buf_size ? c->buf_size :
		       c->region[0] ? 2 * PM_DEFAULT_BUF_SIZE : PM_DEFAULT_BUF_SIZE;
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
	return (int)bsz;
}

/* The region (the UMEM): private unless @mem: names one, then checked
 * for AF_XDP's buffer size and headroom. */
static int open_region(struct pktmap_port *p, struct xdp_priv *xp,
		       const struct pm_conf *c, uint32_t nq, uint32_t rxs,
		       uint32_t txs, uint32_t bsz)
{
	char err[300];
	struct pm_region_params rp = {
		.bufs = 2 + nq * ((xp->rx ? rxs : 0) + (xp->tx ? txs : 0)) +
			xp->free_cap + c->extra_bufs + 64,
		.buf_size = bsz,
		.headroom = PM_XDP_HEADROOM,
		.exact_headroom = true,
		.obj_size = 4096, /* (rings are private; a named region gets
				     room for pipes' control blocks) */
		.hugepages = c->hugepages,
		.share = c->share,
		.share_gid = c->share_gid,
		.pinned = !xp->broker, /* the UMEM (the broker's to pin) */
	};
	if (c->bufs > rp.bufs)
		rp.bufs = c->bufs;
	int ret = pm_region_open(&p->region, c->region, &rp, err, sizeof(err));
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
	return 0;
}

/* The buffer bookkeeping (who holds which buffer, the free list) and
 * the nb queues' state. */
static int alloc_queues(struct xdp_priv *xp, uint32_t nb, uint32_t txs)
{
	size_t words = (xp->nbufs + 63) / 64;
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
	return 0;
}

/* The queues' state and the host rings' syncs on the krings. */
static void hang_krings(struct pktmap_port *p, struct xdp_priv *xp, uint32_t nb)
{
	for (uint32_t j = 0; j < nb; j++) {
		pm_txkring(p, xp->lo + j)->priv = &xp->q[j];
		pm_rxkring(p, xp->lo + j)->priv = &xp->q[j];
	}
	if (xp->host) {
		struct pm_kring *ht = pm_txkring(p, xp->nq);
		struct pm_kring *hr = pm_rxkring(p, xp->nq);
		ht->priv = hr->priv = &xp->hostr;
		ht->sync = pm_xdp_host_ring_ops.txsync;
		hr->sync = pm_xdp_host_ring_ops.rxsync;
	}
}

/* The broker steers our queues to our sockets (it bound them): the
 * program and its XSKMAP are its own to set up. */
static int attach_brokered(struct pktmap_port *p, struct xdp_priv *xp,
			   uint32_t nb)
{
	for (uint32_t j = 0; j < nb; j++) {
		struct pm_bk_req req = { .verb = PM_BK_ATTACH,
					 .queue = xp->q[j].qid };
		char info[PM_BK_MSG_MAX];
		int fd;
		int ret = pm_broker_call(p, &req, NULL, 0, &fd, false, info,
					 sizeof(info));
		if (ret == -EBUSY)
			return pm_open_error(p, ret, "queue %u: %s", req.queue, info);
		if (ret)
			return ret;
		xp->prog.generic = strcmp(info, "generic") == 0;
	}
	return 0;
}

/* In a network namespace of our own (a container: our user namespace
 * owns it), we bound the sockets ourselves; only the program needs the
 * host's CAP_BPF: the broker attaches it there, given each socket and
 * our namespace (docs/broker.md, "Containers"). The capability error
 * pm_xdp_prog_attach() recorded is replaced by the broker's answer. */
static int attach_brokered_ns(struct pktmap_port *p, struct xdp_priv *xp,
			      uint32_t nb)
{
	int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return pm_open_error(p, -errno, "/proc/self/ns/net: %s",
				     strerror(errno));
	if (p->errbuf && p->errbuf_len)
		p->errbuf[0] = 0;
	int ret = 0;
	for (uint32_t j = 0; j < nb && !ret; j++) {
		struct pm_bk_req req = { .verb = PM_BK_ATTACH,
					 .queue = xp->q[j].qid, .ns = true };
		snprintf(req.ifname, sizeof(req.ifname), "%s", xp->ifname);
		int fds[2] = { xp->q[j].fd, ns }, fd;
		char info[PM_BK_MSG_MAX];
		ret = pm_broker_call(p, &req, fds, 2, &fd, false, info,
				     sizeof(info));
		if (ret == -EBUSY)
			ret = pm_open_error(p, ret, "queue %u: %s", req.queue, info);
		if (!ret)
			xp->prog.generic = strcmp(info, "generic") == 0;
	}
	close(ns);
	return ret;
}

/* Start the traffic: the sockets, their fill rings stocked, the XDP
 * program that steers the queues to them, TX live mode, the host rings. */
static int start_queues(struct pktmap_port *p, struct xdp_priv *xp,
			const struct pm_name *nm, uint32_t nb, uint32_t txs)
{
	int ret = nb ? pm_xdp_open_sockets(p, xp, nm->flags) : 0;
	if (ret)
		return ret;
	if (xp->rx)
		for (uint32_t j = 0; j < nb; j++)
			pm_xdp_fill_refill(xp, &xp->q[j]);

	if (xp->broker && ((xp->tx && nm->conf.tx_live == 1) || xp->host ||
			   nm->conf.xdp_prog == 1))
		return pm_open_error(p, -EPERM, "%s needs CAP_BPF and "
				     "CAP_NET_ADMIN: the broker does not grant it",
				     xp->host ? "the host rings" :
				     nm->conf.xdp_prog == 1 ? "@conf:prog=scrub" :
				     "@conf:tx=live");
	/* RX needs the program; a port opened for TX only leaves the
	 * interface's receive side to the host stack. */
	/* (A port with no NIC RX queues attaches no program: prog= says
	 * nothing there, as on the host rings pktmap scrub derives from a
	 * name.) */
	xp->prog.scrub = nm->conf.xdp_prog == 1;
	if (xp->rx && nb && xp->broker) {
		ret = attach_brokered(p, xp, nb);
		if (ret)
			return ret;
	} else if (xp->rx && nb) {
		uint32_t qids[PM_MAX_RINGS];
		int fds[PM_MAX_RINGS];
		for (uint32_t j = 0; j < nb; j++) {
			qids[j] = xp->q[j].qid;
			fds[j] = xp->q[j].fd;
		}
		ret = pm_xdp_prog_attach(p, &xp->prog, xp->ifindex, xp->ifname,
					 xp->driver, xp->zc || xp->host, qids, fds,
					 nb);
		if ((ret == -EPERM || ret == -EACCES) && !xp->host &&
		    !xp->prog.scrub && pm_broker_open(p) == 0)
			ret = attach_brokered_ns(p, xp, nb);
		if (ret)
			return ret;
	}
	if (xp->tx && nm->conf.tx_live == 1) {
		ret = pm_xdp_live_open(p, xp, txs);
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
	return 0;
}

/* pktmap_poll()'s fd: an epoll set of the sockets (and the host rings'
 * fd). A socket that transmits joins it only while a sleep is armed
 * (pm_xdp_poll_arm): while it is in the set, every transmitted frame's
 * completion (sock_wfree) wakes the set, two locks with interrupts off
 * per frame. */
static int publish_fd(struct pktmap_port *p, struct xdp_priv *xp, uint32_t nb)
{
	xp->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (xp->epfd < 0)
		return pm_open_error(p, -errno, "epoll_create1: %s", strerror(errno));
	for (uint32_t j = 0; j < nb && !xp->tx; j++) {
		struct xdp_queue *q = &xp->q[j];
		q->ep_events = EPOLLET | EPOLLIN;
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
	return 0;
}

/* One line saying what the open got: queues, mode, the program. */
static void log_opened(struct pktmap_port *p, const struct xdp_priv *xp,
		       uint32_t nb)
{
	char qs[64];
	if (nb == 0)
		snprintf(qs, sizeof(qs), "host rings");
	else if (nb == 1)
		snprintf(qs, sizeof(qs), "queue %u of %u%s", xp->lo, xp->nq,
			 xp->host ? " and host rings" : "");
	else
		snprintf(qs, sizeof(qs), "queues %u-%u of %u%s", xp->lo, xp->hi - 1,
			 xp->nq, xp->host ? " and host rings" : "");
	pm_log(p, PKTMAP_LOG_INFO, "%s: %s %s, %s%s mode%s%s, XDP program %s",
	       p->name, xp->driver, qs,
	       !xp->live ? "" : xp->rx ? "TX live (BPF_PROG_RUN), RX " :
	       "TX live (BPF_PROG_RUN), sockets in ",
	       xp->zc ? "zero-copy" : "copy",
	       xp->umem_from[0] ? ", UMEM shared with " : "", xp->umem_from,
	       !xp->rx || !nb ? "not needed" :
	       xp->prog.generic ? "in generic mode" : "in native mode");
}

/* Open an xdp: port: check the name against the interface, size the
 * rings and the UMEM, take the region, set up the rings, start the
 * queues, publish the fd. On failure the caller's close frees what was
 * set up. */
static int xdp_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	uint32_t mtu = 1500;
	int ret;

	struct xdp_priv *xp = priv_alloc(p, nm);
	if (!xp)
		return -ENOMEM;
	ret = choose_queues(p, xp, nm, &mtu);
	if (ret)
		return ret;
	ret = choose_buf_size(p, xp, c, mtu);
	if (ret < 0)
		return ret;
	uint32_t bsz = (uint32_t)ret;

	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	/* The kernel's RX ring is a queue in front of the netmap ring: at
	 * least 4096 entries absorb a burst while the application is not
	 * scheduled (20 ms at 200 kpps). The fill ring is as large: its
	 * buffers are the ones the kernel can fill before we run again. */
	uint32_t nb = xp->hi - xp->lo;
	uint32_t nh = xp->host ? 1 : 0;
	xp->rx_size = pow2_at_least(rxs < XDP_MIN_RX_RING ? XDP_MIN_RX_RING : rxs);
	/* Without CAP_NET_RAW, through the broker (docs/broker.md): it
	 * registers the UMEM, and nothing is charged to our locked-memory
	 * limit. */
	int probe = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (probe >= 0)
		close(probe);
	else if (errno == EPERM || errno == EACCES) {
		ret = pm_broker_open(p);
		if (ret && ret != -ENOTCONN)
			return ret;
		xp->broker = ret == 0;
	}
	ret = xp->broker ? 0 : fit_memlock(p, xp, c, nb + nh, bsz, &rxs, &txs);
	if (ret)
		return ret;
	xp->tx_size = pow2_at_least(txs);
	xp->fq_size = xp->rx_size;
	xp->cq_size = xp->tx_size; /* >= the slots that can be in flight */
	xp->free_cap = xp->rx ? nb * xp->fq_size : 0;

	ret = open_region(p, xp, c, nb + nh, rxs, txs, bsz);
	if (!ret)
		ret = alloc_queues(xp, nb, txs);
	if (!ret)
		ret = setup_rings(p, xp, txs, rxs);
	if (ret)
		return ret;
	hang_krings(p, xp, nb);
	ret = start_queues(p, xp, nm, nb, txs);
	if (!ret)
		ret = publish_fd(p, xp, nb);
	if (ret)
		return ret;
	p->mode = xp->live ? PKTMAP_MODE_LIVE :
		  xp->zc ? PKTMAP_MODE_ZEROCOPY : PKTMAP_MODE_COPY;
	log_opened(p, xp, nb);
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
	pm_xdp_umem_leave(xp);
	if (xp->q) {
		uint32_t qids[PM_MAX_RINGS];
		for (uint32_t j = 0; j < nb; j++)
			qids[j] = xp->q[j].qid;
		pm_xdp_prog_release(p, &xp->prog, xp->ifindex, qids, nb);
		/* Closing a socket stops the kernel's use of its buffers. */
		for (uint32_t j = 0; j < nb; j++) {
			struct xdp_queue *q = &xp->q[j];
			pm_xdp_xq_unmap(&q->rx);
			pm_xdp_xq_unmap(&q->tx);
			pm_xdp_xq_unmap(&q->fq);
			pm_xdp_xq_unmap(&q->cq);
			if (q->fd >= 0)
				close(q->fd);
		}
	} else {
		pm_xdp_prog_release(p, &xp->prog, xp->ifindex, NULL, 0);
	}
	pm_xdp_host_close(p, &xp->hostr);
	pm_xdp_live_close(xp);
	if (xp->bufs_taken)
		return_buffers(p, xp);
	if (xp->host_claimed)
		pm_region_unclaim(&p->region, claim_of(xp, PM_MAX_RINGS));
	for (uint32_t i = 0; i < xp->nclaims; i++)
		pm_region_unclaim(&p->region, claim_of(xp, xp->lo + i));
	if (xp->epfd >= 0)
		close(xp->epfd);
	if (xp->evfd >= 0)
		close(xp->evfd);
	if (xp->mtu_fd >= 0)
		close(xp->mtu_fd);
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
		.syntax = "xdp:IFACE[-Q|^|*][/Z|/C][@conf:tx=live,prog=scrub]",
		.mode = "zerocopy, copy or live (TX)",
		.summary = "AF_XDP socket per queue, the region is the UMEM; "
			   "zero-copy where the driver supports it; @conf:tx=live "
			   "sends through BPF_PROG_RUN live frames (no skb)",
	},
	.caps = PM_CAP_ONE_RING | PM_CAP_ZEROCOPY | PM_CAP_HOST,
	.conf = &pm_xdp_conf,
	.open = xdp_open,
	.txsync = pm_xdp_txsync,
	.rxsync = pm_xdp_rxsync,
	.poll_arm = pm_xdp_poll_arm,
	.poll_disarm = pm_xdp_poll_disarm,
	.event_fd = pm_xdp_event_fd,
	.stats = pm_xdp_stats,
	.close = xdp_close,
};
