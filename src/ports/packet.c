/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt:IFACE and pkt:IFACE-N: AF_PACKET sockets with mmap rings. It works
 * on every interface the kernel has. One socket per ring pair.
 *
 * RX is in place when it can be (the kernel's TPACKET_V2 frames are
 * buffers of the port's index space: mode "copy", the kernel's one copy
 * only), else by copy out of TPACKET_V3 blocks (mode "emulated"); a
 * reader that asks for it (rx=blocks) gets RX in place in the V3 blocks,
 * its RX rings with a geometry of their own (packet_blocks.c); TX
 * copies once into a ring of fixed frames, or, for a sender that asks
 * (tx=frames), its slots' buffers are those frames (packet_rx.c and
 * packet_tx.c tell how).
 *
 * Several rings (@conf:rings=N) are N sockets in one PACKET_FANOUT_HASH
 * group whose id derives from the ifindex, so "pkt:eth0-1@conf:rings=2" in
 * one process and "pkt:eth0-0@conf:rings=2" in another split the traffic.
 * RX sees the frames the interface receives; pktmap_set_rx_direction()
 * adds the frames it sends (PACKET_OUTGOING, as libpcap's "inout") or
 * keeps only those. Frames this port sends never come back on its own RX
 * (the kernel does not loop a packet socket's frames to itself). A kernel
 * filter (pktmap_set_rx_filter(), SO_ATTACH_FILTER) drops frames before
 * they take a frame. The interface is put in promiscuous mode for as long
 * as the port is open (PACKET_MR_PROMISC, dropped by the kernel when the
 * socket closes).
 *
 * pktmap_fd() is level-triggered without pktmap_poll(): in place with one
 * socket it is the socket (readable while the ring holds a frame the
 * application has not been handed or has not released -- after a release
 * it may wake once more for the rxsync that gives the frames back --,
 * writable while the TX ring has a free frame); otherwise the library's
 * epoll set of the kernel's fd and an "unread packets" eventfd.
 *
 * This file opens and closes the port, and polls. The rest of the back end:
 *   packet_sock.c    one socket, its kernel rings and where they are mapped
 *   packet_rx.c      rxsync: in place (TPACKET_V2) and by copy (TPACKET_V3)
 *   packet_blocks.c  rxsync in place in TPACKET_V3 blocks (rx=blocks)
 *   packet_tx.c      txsync
 *   packet_filter.c  the kernel filter and the RX direction
 * and packet.h, their shared state.
 */
#include <linux/if_ether.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ifnet.h"
#include "packet.h"

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

/* What the name asks that pkt: ports cannot do. Returns the number of
 * rings (@conf:rings), or -errno with the open error recorded. */
static int check_name(struct pktmap_port *p, const struct pm_name *nm)
{
	const struct pm_conf *c = &nm->conf;
	if (nm->flags & PKTMAP_OPEN_ZEROCOPY)
		return pm_open_error(p, -EOPNOTSUPP, "zero-copy is impossible on "
				     "pkt: ports (the kernel copies each frame into "
				     "its ring): use xdp:%s or drop the zero-copy "
				     "demand", nm->body);
	if (nm->flags & PKTMAP_OPEN_BUSY_POLL)
		pm_log(p, PKTMAP_LOG_INFO, "%s: busy polling is not available for "
		       "pkt: ports: ignored", p->name);
	if ((c->tx_rings && c->rx_rings && c->tx_rings != c->rx_rings))
		return pm_open_error(p, -EINVAL, "pkt: ports have one TX and one "
				     "RX ring per socket: give @conf:rings=N");
	return (int)(c->tx_rings ? c->tx_rings : (c->rx_rings ? c->rx_rings : 1));
}

/* The port's state for R rings, the bound ones [lo, hi) (p->priv: what
 * fails later is freed by close). */
static int priv_alloc(struct pktmap_port *p, const struct pm_name *nm,
		      uint32_t R)
{
	struct pkt_priv *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	p->priv = pp;
	pp->epfd = -1;
	pp->rx_dir = PKTMAP_RX_IN;
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
	return 0;
}

/* The interface's index, MTU and link type; a warning when it is down. */
static int iface_facts(struct pktmap_port *p, struct pkt_priv *pp,
		       const char *ifname)
{
	struct ifreq ifr;
	pp->ifindex = (int)if_nametoindex(ifname);
	if (pp->ifindex == 0)
		return pm_open_error(p, -ENODEV, "no such interface: check 'ip link' "
				     "(or the network namespace)");
	pp->mtu = 1500;
	if (pm_if_ioctl(ifname, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		pp->mtu = (uint32_t)ifr.ifr_mtu;
	p->tx_max_len = pp->mtu + ETH_HLEN;
	p->linktype = 1;
	if (pm_if_ioctl(ifname, SIOCGIFHWADDR, &ifr) == 0)
		p->linktype = linktype_of(ifr.ifr_hwaddr.sa_family);
	if (pm_if_ioctl(ifname, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP))
		/* Decided: warn and go on. The socket works as soon as the
		 * link comes up; refusing would make scripts racy. */
		pm_log(p, PKTMAP_LOG_WARN, "%s: interface is down: no packets will "
		       "flow until 'ip link set %s up'", p->name, ifname);
	return 0;
}

/* RX in place when the frames can be buffers of a private region: a
 * power-of-two stride (the kernel's frames are evenly spaced only then)
 * that holds the largest frame after the headroom. Sets pp->inplace and,
 * in place, the region's geometry in *conf. */
static void choose_inplace(struct pktmap_port *p, struct pkt_priv *pp,
			   struct pm_conf *conf)
{
	if (pp->blocks)
		return; /* in place in the kernel's blocks instead */
	uint32_t bs = conf->buf_size ? conf->buf_size : PM_DEFAULT_BUF_SIZE;
	uint32_t hroom = v2_macoff(p->linktype);
	pp->inplace = (p->dir & PKTMAP_DIR_RX) && !conf->region[0] &&
		      bs >= 2048 && bs <= (64u << 10) && (bs & (bs - 1)) == 0 &&
		      hroom + pp->mtu + ETH_HLEN + 4 <= bs;
	if (pp->inplace) {
		conf->headroom = hroom;
		conf->buf_size = bs; /* 2 KiB frames unless asked otherwise */
	}
}

/* RX in the kernel's blocks (rx=blocks, PKTMAP_OPEN_RX_BLOCKS) when
 * asked for and the region is the port's own: the slots' buffers are
 * then lost to it, which only a private region can afford. */
static void choose_blocks(struct pktmap_port *p, struct pkt_priv *pp,
			  const struct pm_name *nm)
{
	const struct pm_conf *c = &nm->conf;
	bool want = c->rx_blocks >= 0 ? c->rx_blocks == 1 :
					(nm->flags & PKTMAP_OPEN_RX_BLOCKS) != 0;
	pp->blocks = want && (p->dir & PKTMAP_DIR_RX) && !c->region[0];
	if (want && c->region[0])
		pm_log(p, PKTMAP_LOG_INFO, "%s: rx=blocks needs a region of the "
		       "port's own (not @mem:): RX frames are copied", p->name);
	/* An opener's timeout may be anything: the kernel's is an int. */
	pp->block_ms = c->block_ms < 60000 ? c->block_ms : 60000;
}

/* TX in the kernel's frames (tx=frames, PKTMAP_OPEN_TX_FRAMES) when
 * asked for and possible: the port's own region (the frames stay the TX
 * slots' buffers for good), an Ethernet link (a refused slot's frame goes
 * out empty, and the kernel skips a frame shorter than a link header
 * under PACKET_LOSS), RX, if any, in place too (one TPACKET_V2 socket),
 * and a buffer stride that holds the largest frame after the headroom:
 * each frame is then one buffer of the index space, the slot's data at
 * the headroom (PACKET_TX_HAS_OFF). *txs is rounded up to whole blocks of
 * frames (slot i is frame i). */
static void choose_tx_frames(struct pktmap_port *p, struct pkt_priv *pp,
			     const struct pm_name *nm, struct pm_conf *conf,
			     uint32_t *txs)
{
	const struct pm_conf *c = &nm->conf;
	bool asked = c->tx_frames == 1;
	bool want = c->tx_frames >= 0 ? asked :
					(nm->flags & PKTMAP_OPEN_TX_FRAMES) != 0;
	if (!want || !(p->dir & PKTMAP_DIR_TX))
		return;
	uint32_t bs = conf->buf_size ? conf->buf_size : PM_DEFAULT_BUF_SIZE;
	/* The frame header, and a virtio_net_hdr (pkt_tx_vnet()). */
	uint32_t min_off = TPACKET_ALIGN(TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) +
					 (pkt_tx_vnet(p) ?
					  sizeof(struct virtio_net_hdr) : 0));
	uint32_t hroom = conf->headroom > min_off ? conf->headroom : min_off;
	const char *why = NULL;
	if (conf->region[0])
		why = "needs a region of the port's own (not @mem:)";
	else if (p->linktype != 1)
		why = "needs an Ethernet link";
	else if ((p->dir & PKTMAP_DIR_RX) && !pp->inplace)
		why = "needs RX in place as well (not rx=blocks)";
	else if (bs < 2048 || bs > PKT_TX_FRAME_MAX || (bs & (bs - 1)) ||
		 hroom + pp->mtu + ETH_HLEN + 4 > bs)
		why = "needs a power-of-two buffer size that holds a frame of "
		      "the MTU after the headroom";
	if (why) {
		pm_log(p, asked ? PKTMAP_LOG_INFO : PKTMAP_LOG_DEBUG, "%s: tx=frames "
		       "%s: TX frames are copied", p->name, why);
		return;
	}
	pp->tx_frames = true;
	conf->buf_size = bs;
	conf->headroom = hroom;
	uint32_t fpb = PKT_TX_BLOCK_MIN > bs ? PKT_TX_BLOCK_MIN / bs : 1;
	*txs = (*txs + fpb - 1) / fpb * fpb;
}

/* tx=frames: point each TX slot at its frame (the region buffers it held
 * are left unused). The in-place map was reserved whole: every frame is
 * a buffer index. */
static void tx_frames_setup(struct pktmap_port *p, struct pkt_sock *s,
			    struct pm_kring *k)
{
	s->tx_base = (uint32_t)((size_t)(s->tx - (uint8_t *)p->region.pool) /
				p->region.buf_size);
	for (uint32_t i = 0; i < k->nslots; i++) {
		k->ring->slot[i].buf_idx = s->tx_base + i;
		k->ring->slot[i].flags = NS_BUF_CHANGED;
	}
}

/* Open the sockets of the bound rings (their rings one after the other
 * from `at`, in place) and hang them on the krings. */
static int open_socks(struct pktmap_port *p, struct pkt_priv *pp,
		      uint32_t rxs, uint32_t txs, uint8_t *at, size_t one_len)
{
	/* Fanout whenever traffic is meant to be split: several rings, or
	 * one ring of several opened on its own. */
	bool fanout = pp->nrings > 1;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *s = &pp->socks[r];
		int ret = pm_pkt_sock_open(p, pp, s, rxs, txs, fanout,
					   at ? at + (size_t)(r - pp->lo) * one_len : NULL);
		if (ret)
			return ret;
		pm_txkring(p, r)->priv = s;
		pm_rxkring(p, r)->priv = s;
		if (pp->tx_frames)
			tx_frames_setup(p, s, pm_txkring(p, r));
		if (s->v2) {
			struct pm_kring *k = pm_rxkring(p, r);
			s->rx_dlv = malloc(k->nslots * sizeof(*s->rx_dlv));
			if (!s->rx_dlv)
				return -ENOMEM;
			for (uint32_t i = 0; i < k->nslots; i++)
				s->rx_dlv[i] = k->ring->slot[i].buf_idx;
		}
	}
	if (pp->inplace || pp->tx_frames) {
		/* Every index of the range is mapped memory: each map is a
		 * whole number of strides, one after the other. */
		p->bs.ext_lo = (uint32_t)((size_t)(pp->resv - (uint8_t *)p->region.pool) /
					  p->region.buf_size);
		p->bs.ext_n = (uint32_t)(pp->resv_len / p->region.buf_size);
	}
	if (pp->inplace) {
		pp->spare_cap = p->region.nbufs;
		pp->spare = malloc((size_t)pp->spare_cap * sizeof(*pp->spare));
		if (!pp->spare)
			return -ENOMEM;
	}
	return 0;
}

/* pktmap_fd(): with one socket, the socket (POLLIN for RX, POLLOUT for
 * TX, level-triggered); with several, an epoll set of them, readable
 * while one has a frame (pktmap_poll() adds EPOLLOUT while it waits for
 * TX space). */
static int publish_fd(struct pktmap_port *p, struct pkt_priv *pp)
{
	if (pp->hi - pp->lo == 1) {
		p->fd = pp->socks[pp->lo].fd;
		/* In place a frame stays TP_STATUS_USER until its slot is
		 * released: the socket is readable while the ring holds
		 * unread packets too, and its POLLOUT is the TX ring's. */
		p->fd_exact = pp->inplace || pp->blocks ||
			      !(p->dir & PKTMAP_DIR_RX);
		return 0;
	}
	pp->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pp->epfd < 0)
		return pm_open_error(p, -errno, "epoll_create1: %s",
				     strerror(errno));
	pp->ep_base = (p->dir & PKTMAP_DIR_RX) ? EPOLLIN : 0;
	pp->ep_events = pp->ep_base;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct epoll_event ev = { .events = pp->ep_base,
					  .data.u32 = r };
		if (epoll_ctl(pp->epfd, EPOLL_CTL_ADD, pp->socks[r].fd, &ev))
			return pm_open_error(p, -errno, "epoll_ctl: %s",
					     strerror(errno));
	}
	p->fd = pp->epfd;
	return 0;
}

/* Open a pkt: port: check the name, learn the interface, choose in
 * place or by copy, take the region, open the sockets, publish the fd.
 * On failure the caller's close frees what was set up. */
static int pkt_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o)
{
	(void)o;
	struct pm_conf conf = nm->conf;
	const struct pm_conf *c = &conf;
	int ret;

	ret = check_name(p, nm);
	if (ret < 0)
		return ret;
	uint32_t R = (uint32_t)ret;
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;
	ret = priv_alloc(p, nm, R);
	if (ret)
		return ret;
	struct pkt_priv *pp = p->priv;
	ret = iface_facts(p, pp, nm->body);
	if (ret)
		return ret;
	choose_blocks(p, pp, nm);
	choose_inplace(p, pp, &conf);
	choose_tx_frames(p, pp, nm, &conf, &txs);
	conf.rx_no_bufs = pp->blocks; /* the slots point into the blocks */

	/* The region: private unless @mem: names one. */
	ret = pm_port_own_rings(p, c, "pkt", nm->body, R, R, txs, rxs);
	if (ret)
		return ret;
	pp->hroom = p->region.headroom;

	uint8_t *at = NULL;
	size_t one_len = 0;
	if (pp->inplace || pp->tx_frames) {
		one_len = pm_pkt_sock_map_len(p, pp, rxs, txs);
		at = pm_pkt_reserve_above_pool(p, pp, one_len * (pp->hi - pp->lo));
		if (!at) {
			pp->inplace = pp->tx_frames = false;
			pm_log(p, PKTMAP_LOG_INFO, "%s: no address range in reach of "
			       "the buffer indices: frames are copied", p->name);
		}
	}
	/* The socket wakes a sleeper for every frame: no spinning before
	 * sleeping unless the name asks for it (@conf:spin-us). */
	if (c->spin_us < 0)
		p->spin_us = 0;
	/* "copy": the kernel's one copy only, each way the port goes. */
	bool rx_one = !(p->dir & PKTMAP_DIR_RX) || pp->inplace || pp->blocks;
	bool tx_one = !(p->dir & PKTMAP_DIR_TX) || pp->tx_frames;
	p->mode = rx_one && tx_one ? PKTMAP_MODE_COPY : PKTMAP_MODE_EMULATED;
	ret = open_socks(p, pp, rxs, txs, at, one_len);
	if (ret)
		return ret;
	return publish_fd(p, pp);
}

/* Anything to do on the bound rings right now? */
static int pkt_ready(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *s = &pp->socks[r];
		if ((events & POLLIN) && s->rx && pm_pkt_rx_ready(s))
			return 1;
		/* TX: ready unless the kernel refused the last kick (link
		 * down, device busy) and has not sent the oldest frame since.
		 * Otherwise frames come back as the kernel sends them, with
		 * no wake-up to wait for: its POLLOUT says only that the
		 * frame at its head is free, and one always is (the kernel
		 * has more frames than the ring has slots); a wait goes
		 * round, each round's txsync reaping what came back. */
		if ((events & POLLOUT) && s->tx &&
		    (!s->tx_refused ||
		     !(status_load(tx_status(s, s->tx_reap)) &
		       (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))))
			return 1;
	}
	return 0;
}

static void ep_set(struct pkt_priv *pp, uint32_t want)
{
	if (want == pp->ep_events)
		return;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct epoll_event ev = { .events = want, .data.u32 = r };
		(void)epoll_ctl(pp->epfd, EPOLL_CTL_MOD, pp->socks[r].fd, &ev);
	}
	pp->ep_events = want;
}

/* Did the kernel refuse the last kick of a bound ring (link down, device
 * busy)? Its socket then says POLLOUT (it has free frames) though no
 * frame will come back: a TX wait sleeps PKT_TX_RETRY_MS at a time and
 * kicks again, rather than spin. */
static bool tx_refused(const struct pkt_priv *pp)
{
	for (uint32_t r = pp->lo; r < pp->hi; r++)
		if (pp->socks[r].tx_refused)
			return true;
	return false;
}

/* One socket: pktmap_poll() sleeps on it for what it waits for (the
 * kernel's poll says POLLIN while the RX ring holds a frame, POLLOUT while
 * the TX ring has a free one). Several: on the epoll set, for POLLIN. */
static int pkt_poll_fd(const struct pktmap_port *p, short events, short *pev)
{
	const struct pkt_priv *pp = p->priv;
	if (pp->epfd < 0)
		*pev = (short)(events & (POLLIN |
					 (tx_refused(pp) ? 0 : POLLOUT)));
	return p->fd;
}

/* Register the sockets for what the caller waits for, then look once
 * more: a frame handed over before the registration is seen here, one
 * handed over after it wakes the socket. */
static int pkt_poll_arm(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	bool refused = (events & POLLOUT) && tx_refused(pp);
	p->poll_cap_ms = refused ? PKT_TX_RETRY_MS : 0;
	if (pp->epfd >= 0 && (events & POLLOUT)) {
		uint32_t want = pp->ep_base;
		if ((events & POLLIN) && (p->dir & PKTMAP_DIR_RX))
			want |= EPOLLIN;
		if ((p->dir & PKTMAP_DIR_TX) && !refused)
			want |= EPOLLOUT;
		ep_set(pp, want);
	}
	return pkt_ready(p, events);
}

/* Back to what a plain poll() on pktmap_fd() waits for. */
static void pkt_poll_disarm(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	p->poll_cap_ms = 0;
	if (pp->epfd >= 0 && (events & POLLOUT))
		ep_set(pp, pp->ep_base);
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

static void pkt_info(const struct pktmap_port *p, struct pktmap_info *info)
{
	const struct pkt_priv *pp = p->priv;
	if (pp->blocks)
		info->flags |= PKTMAP_INFO_RX_BLOCKS;
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
			free(s->rx_out);
			free(s->rx_dlv);
			free(s->rx_upto);
		}
		free(pp->socks);
	}
	if (pp->resv)
		munmap(pp->resv, pp->resv_len);
	if (pp->epfd >= 0)
		close(pp->epfd);
	free(pp->spare);
	free(pp->filt);
	free(pp);
	p->priv = NULL;
	p->fd = -1;
}

static const struct pm_conf_word rx_words[] = {
	{ "blocks", 1, "RX in place in the kernel's TPACKET_V3 blocks" },
	{ "frames", 0, "TPACKET_V2 frames" },
	{ NULL, 0, NULL },
};

static const struct pm_conf_word tx_words[] = {
	{ "frames", 1, "the TX slots' buffers are the kernel's TX frames" },
	{ "copy", 0, "copied into them" },
	{ NULL, 0, NULL },
};

static const struct pm_conf_key pkt_keys[] = {
	{ "rx", PM_CONF_WORD, offsetof(struct pm_conf, rx_blocks), 0, 0, 0,
	  rx_words, NULL, "how RX reads the kernel's ring (default frames, or "
	  "PKTMAP_OPEN_RX_BLOCKS)", 0 },
	{ "tx", PM_CONF_WORD, offsetof(struct pm_conf, tx_frames), 0, 0, 0,
	  tx_words, NULL, "where TX frames are (default copy, or "
	  "PKTMAP_OPEN_TX_FRAMES)", 0 },
	{ "block-ms", PM_CONF_U32, offsetof(struct pm_conf, block_ms), 0, 1,
	  60000, NULL, NULL, "rx=blocks: a block is handed over this long after "
	  "its first frame", 0 },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0 },
};

static const struct pm_conf_keys pkt_conf = {
	.common = PM_CK_ALL | PM_CK_BROKER,
	.own = pkt_keys,
};

const struct pm_port_ops pm_packet_ops = {
	.desc = {
		.name = "pkt",
		.syntax = "pkt:IFACE[-N][@conf:rings=N]",
		.mode = "copy or emulated",
		.summary = "AF_PACKET mmap rings on any interface; RX slots are "
			   "the kernel's ring frames (copy: its one copy); TX and "
			   "@mem: regions copy once more (emulated); several "
			   "rings share a PACKET_FANOUT group",
	},
	.caps = PM_CAP_ONE_RING,
	.conf = &pkt_conf,
	.open = pkt_open,
	.txsync = pm_pkt_txsync,
	.rxsync = pm_pkt_rxsync,
	.poll_arm = pkt_poll_arm,
	.poll_disarm = pkt_poll_disarm,
	.poll_fd = pkt_poll_fd,
	.rx_filter = pm_pkt_rx_filter,
	.rx_direction = pm_pkt_rx_direction,
	.stats = pkt_stats,
	.info = pkt_info,
	.close = pkt_close,
};
