/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt:IFACE and pkt:IFACE-N: AF_PACKET sockets with mmap rings, netmap's
 * "emulated" mode. It works on every interface the kernel has, at the cost
 * of one copy in each direction (reported as PKTMAP_MODE_EMULATED).
 *
 * One socket per ring pair. Each socket has
 *
 *   - a TPACKET_V3 RX ring: the kernel fills blocks of frames and hands a
 *     whole block over (TP_STATUS_USER) when it is full or after a short
 *     timeout; rxsync copies frames out of the blocks into the port's RX
 *     slots and gives a block back as soon as its last frame is copied, so
 *     the kernel never waits for the application;
 *   - a TX ring of fixed frames (same TPACKET_V3 version; the kernel uses
 *     frame semantics for TX): txsync copies each submitted packet into a
 *     free frame, marks it TP_STATUS_SEND_REQUEST and kicks the kernel with
 *     one sendto(MSG_DONTWAIT) per sync. PACKET_QDISC_BYPASS hands frames
 *     straight to the driver. Sent frames come back (TP_STATUS_AVAILABLE)
 *     and are reaped in later syncs; the TX ring's tail reflects the free
 *     frames, so a full kernel ring is backpressure, not loss.
 *
 *     TX ring:   hwcur ......... head            (slots to copy out)
 *     frames:    reap [in flight: SEND_REQUEST/SENDING) fill [free ...)
 *
 * Several rings (@conf:rings=N) are N sockets in one PACKET_FANOUT_HASH
 * group whose id derives from the ifindex, so "pkt:eth0-1@conf:rings=2" in
 * one process and "pkt:eth0-0@conf:rings=2" in another split the traffic.
 * Packets this port sends are not looped back to its RX
 * (PACKET_IGNORE_OUTGOING). The interface is put in promiscuous mode for
 * as long as the port is open (PACKET_MR_PROMISC, dropped by the kernel
 * when the socket closes).
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define PKT_RX_BLOCK (256u << 10)       /* holds any frame up to 64 KiB */
#define PKT_RX_MIN_BYTES (4u << 20)     /* kernel RX memory per ring, at least */
#define PKT_RX_TOV_MS 1                 /* hand over a partial block after 1 ms */
#define PKT_TX_FRAME_MAX (16u << 10)    /* largest TX frame stride (jumbo) */
#define PKT_TX_BLOCK_MIN (64u << 10)
#define PKT_FANOUT_BASE 0x7000u         /* fanout id = base + ifindex */

/* One socket: the state of one ring pair. */
struct pkt_sock {
	int fd;
	uint8_t *map;
	size_t map_len;
	/* RX (TPACKET_V3 blocks) */
	uint8_t *rx;               /* first block, NULL without an RX ring */
	uint32_t rx_bsize, rx_nblocks;
	uint32_t rx_blk;           /* block being read */
	uint32_t rx_left;          /* frames of rx_blk not yet copied; 0: none */
	struct tpacket3_hdr *rx_hdr; /* next frame of rx_blk */
	uint64_t kdrops;           /* PACKET_STATISTICS, accumulated */
	uint64_t kpackets;
	/* TX (fixed frames) */
	uint8_t *tx;               /* first frame, NULL without a TX ring */
	uint32_t tx_fsize, tx_nframes;
	uint32_t tx_fill;          /* next frame to fill */
	uint32_t tx_reap;          /* oldest frame handed to the kernel */
	uint32_t tx_inflight;      /* frames between reap and fill */
	uint32_t tx_cap;           /* largest frame the kernel accepts */
	uint32_t tx_off;           /* data offset in a frame */
};

struct pkt_priv {
	struct pkt_sock *socks;    /* one per ring, index = ring id */
	uint32_t nrings, lo, hi;   /* bound rings [lo, hi) */
	int ifindex;
	uint32_t mtu;
	int epfd;                  /* when fd is not a single RX socket */
	uint32_t ep_events;        /* what the sockets are registered for */
};

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* Interface facts through an ioctl on any socket. Returns 0 or -errno. */
static int if_query(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	int ret = ioctl(s, req, ifr) == 0 ? 0 : -errno;
	close(s);
	return ret;
}

static uint32_t linktype_of(unsigned short arphrd)
{
	switch (arphrd) {
	case ARPHRD_ETHER:
	case ARPHRD_LOOPBACK:
		return 1;   /* LINKTYPE_ETHERNET */
	case ARPHRD_NONE:
		return 101; /* LINKTYPE_RAW: tun, wireguard */
	case ARPHRD_IEEE80211:
		return 105;
	default:
		return 1;
	}
}

static struct tpacket_block_desc *rx_block(struct pkt_sock *s, uint32_t b)
{
	return (struct tpacket_block_desc *)(s->rx + (size_t)b * s->rx_bsize);
}

static struct tpacket3_hdr *tx_frame(struct pkt_sock *s, uint32_t f)
{
	return (struct tpacket3_hdr *)(s->tx + (size_t)f * s->tx_fsize);
}

/* The status words are shared with the kernel: the kernel writes frame or
 * block contents, then the status (with smp_wmb); we read the status with
 * acquire before reading contents, and write contents before publishing a
 * status with release. */
static uint32_t status_load(const volatile uint32_t *st)
{
	return __atomic_load_n(st, __ATOMIC_ACQUIRE);
}

static void status_store(volatile uint32_t *st, uint32_t v)
{
	__atomic_store_n(st, v, __ATOMIC_RELEASE);
}

static int set_opt(int fd, int opt, const void *v, socklen_t len)
{
	return setsockopt(fd, SOL_PACKET, opt, v, len) == 0 ? 0 : -errno;
}

/* Create and bind the socket of one ring. Returns 0 or -errno with the
 * open error recorded. */
static int pkt_sock_open(struct pktmap_port *p, struct pkt_priv *pp,
			 struct pkt_sock *s, uint32_t rx_slots,
			 uint32_t tx_slots, bool fanout)
{
	bool want_rx = p->dir & PKTMAP_DIR_RX, want_tx = p->dir & PKTMAP_DIR_TX;
	int one = 1, ret;

	/* Protocol 0 until the rings exist: nothing is queued to a socket
	 * that has no ring yet. */
	s->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES)
			return pm_open_error(p, ret, "needs CAP_NET_RAW: run as root");
		return pm_open_error(p, ret, "cannot create an AF_PACKET socket: %s",
				     strerror(-ret));
	}
	int ver = TPACKET_V3;
	ret = set_opt(s->fd, PACKET_VERSION, &ver, sizeof(ver));
	if (ret)
		return pm_open_error(p, ret, "TPACKET_V3 not supported: %s "
				     "(needs Linux 3.2+)", strerror(-ret));

	struct tpacket_req3 rq;
	if (want_rx) {
		size_t bytes = (size_t)rx_slots * p->region.buf_size * 2;
		if (bytes < PKT_RX_MIN_BYTES)
			bytes = PKT_RX_MIN_BYTES;
		s->rx_bsize = PKT_RX_BLOCK;
		s->rx_nblocks = (uint32_t)((bytes + PKT_RX_BLOCK - 1) / PKT_RX_BLOCK);
		memset(&rq, 0, sizeof(rq));
		rq.tp_block_size = s->rx_bsize;
		rq.tp_block_nr = s->rx_nblocks;
		rq.tp_frame_size = 2048; /* bookkeeping only in V3 */
		rq.tp_frame_nr = rq.tp_block_nr * (rq.tp_block_size / rq.tp_frame_size);
		rq.tp_retire_blk_tov = PKT_RX_TOV_MS;
		ret = set_opt(s->fd, PACKET_RX_RING, &rq, sizeof(rq));
		if (ret)
			return pm_open_error(p, ret, "cannot set up the kernel RX ring "
					     "(%u blocks of %u KiB): %s: use fewer "
					     "@conf:rx-slots", rq.tp_block_nr,
					     rq.tp_block_size >> 10, strerror(-ret));
	}
	if (want_tx) {
		s->tx_off = TPACKET3_HDRLEN - sizeof(struct sockaddr_ll);
		uint32_t need = s->tx_off + pp->mtu + ETH_HLEN + 4;
		uint32_t fsize = pow2_at_least(need < 2048 ? 2048 : need);
		if (fsize > PKT_TX_FRAME_MAX)
			fsize = PKT_TX_FRAME_MAX;
		uint32_t bsize = fsize > PKT_TX_BLOCK_MIN ? fsize : PKT_TX_BLOCK_MIN;
		uint32_t fpb = bsize / fsize;
		uint32_t nblocks = (tx_slots + fpb - 1) / fpb;
		s->tx_fsize = fsize;
		s->tx_nframes = nblocks * fpb;
		s->tx_cap = fsize - s->tx_off;
		if (s->tx_cap > pp->mtu + ETH_HLEN + 4)
			s->tx_cap = pp->mtu + ETH_HLEN + 4;
		memset(&rq, 0, sizeof(rq));
		rq.tp_block_size = bsize;
		rq.tp_block_nr = nblocks;
		rq.tp_frame_size = fsize;
		rq.tp_frame_nr = s->tx_nframes;
		ret = set_opt(s->fd, PACKET_TX_RING, &rq, sizeof(rq));
		if (ret)
			return pm_open_error(p, ret, "cannot set up the kernel TX ring "
					     "(%u frames of %u bytes): %s: use fewer "
					     "@conf:tx-slots", s->tx_nframes, fsize,
					     strerror(-ret));
		/* Straight to the driver, like netmap; and a frame the
		 * kernel refuses is skipped rather than wedging the ring. */
		(void)set_opt(s->fd, PACKET_QDISC_BYPASS, &one, sizeof(one));
		(void)set_opt(s->fd, PACKET_LOSS, &one, sizeof(one));
	}

	size_t rx_len = (size_t)s->rx_bsize * s->rx_nblocks;
	size_t tx_len = want_tx ? (size_t)s->tx_fsize * s->tx_nframes : 0;
	/* tx_nframes * tx_fsize equals the blocks' size: fpb divides bsize. */
	s->map_len = rx_len + tx_len;
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, s->fd, 0);
	if (s->map == MAP_FAILED) {
		ret = -errno;
		s->map = NULL;
		return pm_open_error(p, ret, "cannot map the kernel rings (%zu "
				     "bytes): %s", s->map_len, strerror(-ret));
	}
	s->rx = want_rx ? s->map : NULL;
	s->tx = want_tx ? s->map + rx_len : NULL;

	if (want_rx) {
		/* Not supported before Linux 4.20: then our own frames
		 * come back on RX, which the documentation mentions. */
		if (set_opt(s->fd, PACKET_IGNORE_OUTGOING, &one, sizeof(one)))
			pm_log(p, PKTMAP_LOG_WARN, "%s: PACKET_IGNORE_OUTGOING not "
			       "supported: frames sent on this port are also "
			       "received", p->name);
	}
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = want_rx ? htons(ETH_P_ALL) : 0,
		.sll_ifindex = pp->ifindex,
	};
	if (bind(s->fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		ret = -errno;
		if (ret == -ENODEV)
			return pm_open_error(p, ret, "no such interface (it went "
					     "away): check 'ip link'");
		return pm_open_error(p, ret, "cannot bind to the interface: %s",
				     strerror(-ret));
	}
	if (want_rx && fanout) {
		int arg = (int)(((PKT_FANOUT_BASE + (uint32_t)pp->ifindex) & 0xffff) |
				(PACKET_FANOUT_HASH << 16));
		ret = set_opt(s->fd, PACKET_FANOUT, &arg, sizeof(arg));
		if (ret)
			return pm_open_error(p, ret, "cannot join fanout group %u: %s "
					     "(is another program using it with "
					     "another mode?)",
					     arg & 0xffff, strerror(-ret));
	}
	if (want_rx) {
		struct packet_mreq mr = {
			.mr_ifindex = pp->ifindex,
			.mr_type = PACKET_MR_PROMISC,
		};
		if (setsockopt(s->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr,
			       sizeof(mr)) != 0)
			pm_log(p, PKTMAP_LOG_WARN, "%s: cannot set promiscuous mode: "
			       "%s: only frames for this host are received",
			       p->name, strerror(errno));
	}
	return 0;
}

static int pkt_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	struct ifreq ifr;
	int ret;

	if (nm->flags & PKTMAP_OPEN_ZEROCOPY)
		return pm_open_error(p, -EOPNOTSUPP, "zero-copy is impossible on "
				     "pkt: ports (AF_PACKET copies once): use xdp:%s "
				     "or drop the zero-copy demand", nm->body);
	if (nm->flags & PKTMAP_OPEN_BUSY_POLL)
		pm_log(p, PKTMAP_LOG_INFO, "%s: busy polling is not available for "
		       "pkt: ports: ignored", p->name);
	if ((c->tx_rings && c->rx_rings && c->tx_rings != c->rx_rings))
		return pm_open_error(p, -EINVAL, "pkt: ports have one TX and one "
				     "RX ring per socket: give @conf:rings=N");
	uint32_t R = c->tx_rings ? c->tx_rings : (c->rx_rings ? c->rx_rings : 1);
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;

	struct pkt_priv *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	p->priv = pp;
	pp->epfd = -1;
	pp->nrings = R;
	pp->lo = nm->ring >= 0 ? (uint32_t)nm->ring : 0;
	pp->hi = nm->ring >= 0 ? pp->lo + 1 : R;
	if (pp->lo >= R)
		return pm_open_error(p, -EINVAL, "ring %u does not exist: the port "
				     "has %u ring%s (open it as pkt:%s-%u@conf:rings=%u "
				     "in every process that shares the traffic)",
				     pp->lo, R, R == 1 ? "" : "s", nm->body, pp->lo,
				     pp->lo + 1);
	pp->socks = calloc(R, sizeof(*pp->socks));
	if (!pp->socks)
		return -ENOMEM;
	for (uint32_t r = 0; r < R; r++)
		pp->socks[r].fd = -1;

	pp->ifindex = (int)if_nametoindex(nm->body);
	if (pp->ifindex == 0)
		return pm_open_error(p, -ENODEV, "no such interface: check 'ip link' "
				     "(or the network namespace)");
	pp->mtu = 1500;
	if (if_query(nm->body, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		pp->mtu = (uint32_t)ifr.ifr_mtu;
	if (if_query(nm->body, SIOCGIFHWADDR, &ifr) == 0)
		p->linktype = linktype_of(ifr.ifr_hwaddr.sa_family);
	if (if_query(nm->body, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP))
		/* Decided: warn and go on. The socket works as soon as the
		 * link comes up; refusing would make scripts racy. */
		pm_log(p, PKTMAP_LOG_WARN, "%s: interface is down: no packets will "
		       "flow until 'ip link set %s up'", p->name, nm->body);

	/* The region: private unless @mem: names one. */
	ret = pm_port_own_rings(p, c, "pkt", nm->body, R, R, txs, rxs);
	if (ret)
		return ret;
	p->mode = PKTMAP_MODE_EMULATED;

	/* Fanout whenever traffic is meant to be split: several rings, or
	 * one ring of several opened on its own. */
	bool fanout = R > 1;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *s = &pp->socks[r];
		ret = pkt_sock_open(p, pp, s, rxs, txs, fanout);
		if (ret)
			return ret;
		pm_txkring(p, r)->priv = s;
		pm_rxkring(p, r)->priv = s;
	}

	if (pp->hi - pp->lo == 1 && p->dir == PKTMAP_DIR_RX) {
		p->fd = pp->socks[pp->lo].fd;
	} else {
		/* TX waits need POLLOUT, but the library polls for POLLIN:
		 * an epoll set is readable when a socket has what poll_arm
		 * registered it for. */
		pp->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (pp->epfd < 0)
			return pm_open_error(p, -errno, "epoll_create1: %s",
					     strerror(errno));
		for (uint32_t r = pp->lo; r < pp->hi; r++) {
			struct epoll_event ev = { .events = 0, .data.u32 = r };
			if (epoll_ctl(pp->epfd, EPOLL_CTL_ADD, pp->socks[r].fd, &ev))
				return pm_open_error(p, -errno, "epoll_ctl: %s",
						     strerror(errno));
		}
		p->fd = pp->epfd;
	}
	return 0;
}

/* Copy `len` bytes of a frame made of up to three pieces (the frame may
 * gain a VLAN tag the kernel took out) into consecutive slots from
 * `*j`. The caller has checked that they fit. Returns 0, or -EINVAL when a
 * slot's buffer index is not ours (the slot is reported). */
struct piece {
	const uint8_t *p;
	uint32_t len;
};

static int copy_to_slots(struct pktmap_port *p, struct pm_kring *k, uint32_t *j,
			 const struct piece *pc, int npc, uint64_t ts)
{
	struct netmap_ring *ring = k->ring;
	uint32_t usable = p->bs.usable, n = k->nslots, pos = *j;
	int i = 0;
	uint32_t off = 0;
	for (;;) {
		struct netmap_slot *s = &ring->slot[pos];
		uint32_t idx = PM_READ_ONCE(s->buf_idx);
		if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
			pm_slot_reject(p, k, pos, idx, 0, PM_SLOT_BAD_IDX);
			return -EINVAL;
		}
		uint8_t *dst = (uint8_t *)pm_region_buf(&p->region, idx);
		uint32_t room = usable, got = 0;
		while (room && i < npc) {
			uint32_t take = pc[i].len - off;
			if (take > room)
				take = room;
			memcpy(dst + got, pc[i].p + off, take);
			got += take;
			room -= take;
			off += take;
			if (off == pc[i].len)
				i++, off = 0;
		}
		s->len = (uint16_t)got;
		s->ptr = ts;
		pos = pos + 1 == n ? 0 : pos + 1;
		if (i == npc) {
			s->flags = 0;
			break;
		}
		s->flags = NS_MOREFRAG;
	}
	*j = pos;
	return 0;
}

/* Give back released slots, then copy frames out of the kernel's blocks
 * into the free slots. A block goes back to the kernel as soon as its
 * last frame has been copied. */
static int pkt_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, head = k->rhead;
	int ret = 0;

	/* Released slots come back with the buffers the application put
	 * there (it may swap them): they must be ours before we fill them. */
	for (uint32_t i = k->hwcur; i != head; i = i + 1 == n ? 0 : i + 1) {
		uint32_t idx = PM_READ_ONCE(ring->slot[i].buf_idx);
		if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
			pm_slot_reject(p, k, i, idx, ring->slot[i].len,
				       PM_SLOT_BAD_IDX);
			head = i;
			ret = -EINVAL;
			break;
		}
	}
	k->hwcur = head;

	uint32_t j = k->hwtail;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, j, n);
	uint64_t pkts = 0, bytes = 0, last_ts = 0;
	uint8_t vtag[4];

	while (space) {
		if (s->rx_left == 0) {
			struct tpacket_block_desc *bd = rx_block(s, s->rx_blk);
			if (!(status_load(&bd->hdr.bh1.block_status) & TP_STATUS_USER))
				break;
			s->rx_left = bd->hdr.bh1.num_pkts;
			s->rx_hdr = (struct tpacket3_hdr *)((uint8_t *)bd +
					bd->hdr.bh1.offset_to_first_pkt);
			if (s->rx_left == 0 ||
			    bd->hdr.bh1.offset_to_first_pkt >= s->rx_bsize) {
				s->rx_left = 0;
				status_store(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL);
				s->rx_blk = s->rx_blk + 1 == s->rx_nblocks ? 0 : s->rx_blk + 1;
				continue;
			}
		}
		struct tpacket3_hdr *h = s->rx_hdr;
		const uint8_t *blk_end = (const uint8_t *)rx_block(s, s->rx_blk) +
					 s->rx_bsize;
		const uint8_t *data = (const uint8_t *)h + h->tp_mac;
		uint32_t snap = h->tp_snaplen;
		struct piece pc[3];
		int npc = 0;
		bool bad = data + snap > blk_end || (const uint8_t *)h >= blk_end;
		if (!bad && (h->tp_status & TP_STATUS_VLAN_VALID) && snap >= 12) {
			/* Put back the 802.1Q tag the kernel (or the NIC)
			 * took out, as libpcap does: the wire's frame. */
			uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) &&
						h->hv1.tp_vlan_tpid ?
					h->hv1.tp_vlan_tpid : ETH_P_8021Q;
			uint16_t tci = h->hv1.tp_vlan_tci;
			vtag[0] = (uint8_t)(tpid >> 8), vtag[1] = (uint8_t)tpid;
			vtag[2] = (uint8_t)(tci >> 8), vtag[3] = (uint8_t)tci;
			pc[npc++] = (struct piece){ data, 12 };
			pc[npc++] = (struct piece){ vtag, 4 };
			pc[npc++] = (struct piece){ data + 12, snap - 12 };
		} else {
			pc[npc++] = (struct piece){ data, snap };
		}
		uint32_t flen = 0;
		for (int i = 0; i < npc; i++)
			flen += pc[i].len;
		uint32_t need = flen ? (flen + p->bs.usable - 1) / p->bs.usable : 1;
		if (bad || need > n - 1 || snap < h->tp_len) {
			/* Cannot be delivered whole, now or ever. */
			if (bad)
				pm_stat_inc(&p->st.drop_backend, 1);
			else
				pm_stat_inc(&p->st.drop_too_long, 1);
		} else if (need > space) {
			break; /* wait for the application to release slots */
		} else {
			uint64_t ts = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec;
			int r = copy_to_slots(p, k, &j, pc, npc, ts);
			if (r) {
				ret = r;
				break;
			}
			space -= need;
			pkts++;
			bytes += flen;
			last_ts = ts;
		}
		/* Next frame, or the block back to the kernel. */
		if (--s->rx_left) {
			s->rx_hdr = (struct tpacket3_hdr *)((uint8_t *)h +
							    h->tp_next_offset);
			if (h->tp_next_offset == 0)
				s->rx_left = 0; /* malformed: end the block here */
		}
		if (s->rx_left == 0) {
			struct tpacket_block_desc *bd = rx_block(s, s->rx_blk);
			status_store(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL);
			s->rx_blk = s->rx_blk + 1 == s->rx_nblocks ? 0 : s->rx_blk + 1;
		}
	}
	k->hwtail = j;
	if (pkts) {
		pm_stat_add(&p->st.rx_packets, pkts);
		pm_stat_add(&p->st.rx_bytes, bytes);
		ring->ts.tv_sec = (time_t)(last_ts / 1000000000ull);
		ring->ts.tv_usec = (suseconds_t)(last_ts % 1000000000ull / 1000);
	}
	return ret;
}

/* The MTU may have changed since open: read it again (only for frames
 * that look too long). The TX frame size stays what open chose. */
static uint32_t pkt_refresh_mtu(struct pktmap_port *p, struct pkt_priv *pp)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = pp->ifindex;
	int fd = pp->socks[pp->lo].fd;
	if (ioctl(fd, SIOCGIFNAME, &ifr) == 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0 &&
	    ifr.ifr_mtu > 0)
		pp->mtu = (uint32_t)ifr.ifr_mtu;
	(void)p;
	return pp->mtu;
}

/* Take back frames the kernel is done with, oldest first. */
static void tx_reap(struct pktmap_port *p, struct pkt_sock *s)
{
	while (s->tx_inflight) {
		struct tpacket3_hdr *h = tx_frame(s, s->tx_reap);
		uint32_t st = status_load(&h->tp_status);
		if (st & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))
			break;
		if (pm_unlikely(st & TP_STATUS_WRONG_FORMAT)) {
			/* Counted as sent when queued: move it to drops. */
			pm_stat_add(&p->st.tx_packets, (uint64_t)-1);
			pm_stat_add(&p->st.tx_bytes, -(uint64_t)h->tp_len);
			pm_stat_inc(&p->st.drop_backend, 1);
			status_store(&h->tp_status, TP_STATUS_AVAILABLE);
		}
		s->tx_reap = s->tx_reap + 1 == s->tx_nframes ? 0 : s->tx_reap + 1;
		s->tx_inflight--;
	}
}

/* Copy submitted packets (chains joined) into free kernel frames, kick
 * the kernel once, and offer as many slots as there are free frames. */
static int pkt_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct pkt_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	uint64_t pkts = 0, bytes = 0;
	int ret = 0;

	tx_reap(p, s);
	while (i != head) {
		if (s->tx_inflight == s->tx_nframes)
			break; /* kernel ring full: the rest waits */
		/* Find the end of the packet: a chain is sent whole, and only
		 * once the application has submitted all of it. */
		uint32_t e = i, cnt = 0;
		bool complete = false;
		while (e != head) {
			uint16_t fl = PM_READ_ONCE(ring->slot[e].flags);
			e = e + 1 == n ? 0 : e + 1;
			cnt++;
			if (!(fl & NS_MOREFRAG)) {
				complete = true;
				break;
			}
		}
		if (!complete && cnt < n - 1)
			break; /* the rest of the chain is not submitted yet */
		struct tpacket3_hdr *h = tx_frame(s, s->tx_fill);
		uint8_t *dst = (uint8_t *)h + s->tx_off;
		uint32_t flen = 0;
		bool drop = false, invalid = false;
		for (uint32_t x = i; x != e; x = x + 1 == n ? 0 : x + 1) {
			struct netmap_slot *sl = &ring->slot[x];
			uint32_t idx = PM_READ_ONCE(sl->buf_idx);
			uint32_t len = PM_READ_ONCE(sl->len);
			enum pm_slot_verdict v = pm_slot_check(&p->bs, idx, len, 1);
			if (pm_unlikely(v != PM_SLOT_OK)) {
				pm_slot_reject(p, k, x, idx, len, v);
				invalid = true;
				continue;
			}
			if (drop || invalid || flen + len > s->tx_cap) {
				drop = true;
				continue;
			}
			memcpy(dst + flen, pm_region_buf(&p->region, idx), len);
			flen += len;
		}
		i = e;
		if (invalid)
			continue; /* counted by pm_slot_reject */
		/* What the kernel would refuse (it would skip the frame
		 * silently): frames above the MTU that are not VLAN-tagged,
		 * and frames shorter than an Ethernet header. */
		if (!drop && flen > pp->mtu + ETH_HLEN && flen >= 14 &&
		    flen > pkt_refresh_mtu(p, pp) + ETH_HLEN &&
		    !((dst[12] == 0x81 && dst[13] == 0x00) ||
		      (dst[12] == 0x88 && dst[13] == 0xa8)))
			drop = true;
		if (drop) {
			pm_stat_inc(&p->st.drop_too_long, 1);
			continue;
		}
		if (flen < ETH_HLEN && p->linktype == 1) {
			pm_stat_inc(&p->st.drop_invalid, 1);
			pm_log_ratelimited(p, &p->rl_slot, "%s: TX ring %u: frame of "
					   "%u bytes is shorter than an Ethernet "
					   "header: dropped", p->name,
					   ring->ringid, flen);
			continue;
		}
		h->tp_len = flen;
		h->tp_snaplen = flen;
		h->tp_next_offset = 0;
		status_store(&h->tp_status, TP_STATUS_SEND_REQUEST);
		s->tx_fill = s->tx_fill + 1 == s->tx_nframes ? 0 : s->tx_fill + 1;
		s->tx_inflight++;
		pkts++;
		bytes += flen;
	}
	k->hwcur = i;
	pm_stat_add(&p->st.tx_packets, pkts);
	pm_stat_add(&p->st.tx_bytes, bytes);

	/* Kick when the newest frame has not been taken yet (new frames, or
	 * frames a busy device refused last time). */
	if (s->tx_inflight) {
		uint32_t last = s->tx_fill ? s->tx_fill - 1 : s->tx_nframes - 1;
		if (status_load(&tx_frame(s, last)->tp_status) & TP_STATUS_SEND_REQUEST) {
			/* ENOBUFS: the device queue is busy, the frame stays
			 * queued for the next kick. ENETDOWN: the same until
			 * the link is up again (backpressure, not an error). */
			if (sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
			    errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
				if (errno != ENETDOWN)
					ret = -errno;
				pm_log_ratelimited(p, &p->rl_ring, "%s: TX ring %u: "
						   "send failed: %s%s", p->name,
						   ring->ringid, strerror(errno),
						   errno == ENETDOWN ?
						   ": frames wait for the link" : "");
			}
			tx_reap(p, s);
		}
	}
	uint32_t busy = s->tx_inflight < n - 1 ? s->tx_inflight : n - 1;
	k->hwtail = pm_ring_add(k->hwcur, n - 1 - busy, n);
	return ret;
}

/* Anything to do on the bound rings right now? */
static int pkt_ready(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *s = &pp->socks[r];
		if ((events & POLLIN) && s->rx &&
		    (s->rx_left ||
		     (status_load(&rx_block(s, s->rx_blk)->hdr.bh1.block_status) &
		      TP_STATUS_USER)))
			return 1;
		if ((events & POLLOUT) && s->tx &&
		    (s->tx_inflight < s->tx_nframes ||
		     !(status_load(&tx_frame(s, s->tx_reap)->tp_status) &
		       (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))))
			return 1;
	}
	return 0;
}

/* Register the sockets for what the caller waits for, then look once
 * more: a block handed over before the registration is seen here, one
 * handed over after it wakes the socket. */
static int pkt_poll_arm(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	if (pp->epfd >= 0) {
		uint32_t want = 0;
		if ((events & POLLIN) && (p->dir & PKTMAP_DIR_RX))
			want |= EPOLLIN;
		if ((events & POLLOUT) && (p->dir & PKTMAP_DIR_TX))
			want |= EPOLLOUT;
		if (want != pp->ep_events) {
			for (uint32_t r = pp->lo; r < pp->hi; r++) {
				struct epoll_event ev = { .events = want, .data.u32 = r };
				(void)epoll_ctl(pp->epfd, EPOLL_CTL_MOD,
						pp->socks[r].fd, &ev);
			}
			pp->ep_events = want;
		}
	}
	return pkt_ready(p, events);
}

static void pkt_sock_stats(struct pkt_sock *s)
{
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof(st);
	if (s->fd < 0 || !s->rx)
		return;
	/* The kernel resets its counters on every read: accumulate. */
	if (getsockopt(s->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) {
		s->kdrops += st.tp_drops;
		s->kpackets += st.tp_packets;
	}
}

static void pkt_stats(const struct pktmap_port *p, struct pktmap_stats *st)
{
	struct pkt_priv *pp = p->priv;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		pkt_sock_stats(&pp->socks[r]);
		st->drop_backend += pp->socks[r].kdrops;
	}
}

static void pkt_close(struct pktmap_port *p)
{
	struct pkt_priv *pp = p->priv;
	if (!pp)
		return;
	if (pp->socks) {
		for (uint32_t r = 0; r < pp->nrings; r++) {
			struct pkt_sock *s = &pp->socks[r];
			if (s->map)
				munmap(s->map, s->map_len);
			if (s->fd >= 0)
				close(s->fd); /* drops promiscuous mode and fanout */
		}
		free(pp->socks);
	}
	if (pp->epfd >= 0)
		close(pp->epfd);
	free(pp);
	p->priv = NULL;
	p->fd = -1;
}

const struct pm_port_ops pm_packet_ops = {
	.desc = {
		.name = "pkt",
		.syntax = "pkt:IFACE[-N][@conf:rings=N]",
		.mode = "emulated",
		.summary = "AF_PACKET TPACKET_V3 mmap rings on any interface; one "
			   "copy; several rings share a PACKET_FANOUT group",
	},
	.caps = PM_CAP_ONE_RING,
	.open = pkt_open,
	.txsync = pkt_txsync,
	.rxsync = pkt_rxsync,
	.poll_arm = pkt_poll_arm,
	.stats = pkt_stats,
	.close = pkt_close,
};
