/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt: back end, one socket: its TPACKET_V2 (in place) or V3 (by copy)
 * RX ring and its TX ring, mapped in place right after the region (an
 * address range reserved above the pool) or anywhere; bound to the
 * interface, joined to the fanout group, the interface in promiscuous
 * mode for as long as the socket is open.
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "broker_proto.h"
#include "packet.h"

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* Kernel RX memory of one ring: twice the slots' buffers, at least 16 MiB
 * of fixed frames in place (8192 frames: 40 ms at 200 kpps for a reader
 * that is descheduled) and in blocks (the same memory: libpcap's buffer
 * size, see compat/pcap/live.c), 4 MiB of V3 blocks by copy. */
static size_t rx_bytes(const struct pktmap_port *p, uint32_t rx_slots,
		       bool v2)
{
	size_t bytes = (size_t)rx_slots * p->region.buf_size * 2;
	size_t min = v2 ? PKT_V2_MIN_BYTES : PKT_RX_MIN_BYTES;
	return bytes < min ? min : bytes;
}

/* The TX ring's geometry for a socket (s->tx_* filled). Returns its
 * bytes. With tx=frames a frame is one buffer stride, its data at the
 * region's headroom. */
static size_t tx_geometry(const struct pktmap_port *p, struct pkt_priv *pp,
			  struct pkt_sock *s, uint32_t tx_slots,
			  struct tpacket_req3 *rq)
{
	uint32_t fsize;
	if (pp->tx_frames) {
		fsize = p->region.buf_size;
		s->tx_off = p->region.headroom;
	} else {
		s->tx_off = (s->v2 ? TPACKET2_HDRLEN : TPACKET3_HDRLEN) -
			    sizeof(struct sockaddr_ll) + s->tx_vnet;
		uint32_t need = s->tx_off + pp->mtu + ETH_HLEN + 4;
		fsize = pow2_at_least(need < 2048 ? 2048 : need);
		if (fsize > PKT_TX_FRAME_MAX)
			fsize = PKT_TX_FRAME_MAX;
	}
	uint32_t bsize = fsize > PKT_TX_BLOCK_MIN ? fsize : PKT_TX_BLOCK_MIN;
	uint32_t fpb = bsize / fsize;
	uint32_t nblocks = (tx_slots + fpb - 1) / fpb;
	s->tx_fsize = fsize;
	s->tx_nframes = nblocks * fpb;
	s->tx_cap = fsize - s->tx_off;
	if (s->tx_cap > pp->mtu + ETH_HLEN + 4)
		s->tx_cap = pp->mtu + ETH_HLEN + 4;
	memset(rq, 0, sizeof(*rq));
	rq->tp_block_size = bsize;
	rq->tp_block_nr = nblocks;
	rq->tp_frame_size = fsize;
	rq->tp_frame_nr = s->tx_nframes;
	/* tx_nframes * tx_fsize equals the blocks' size: fpb divides bsize. */
	return (size_t)s->tx_fsize * s->tx_nframes;
}

/* The bytes one socket maps (RX ring, then TX ring), in place. */
size_t pm_pkt_sock_map_len(struct pktmap_port *p, struct pkt_priv *pp,
			   uint32_t rx_slots, uint32_t tx_slots)
{
	struct pkt_sock t = { .v2 = true };
	if (pkt_tx_vnet(p)) /* at most: tx_opts() may not get it */
		t.tx_vnet = sizeof(struct virtio_net_hdr);
	struct tpacket_req3 rq;
	size_t len = 0;
	if (p->dir & PKTMAP_DIR_RX) {
		uint32_t bs = p->region.buf_size;
		uint32_t fpb = PKT_V2_BLOCK > bs ? PKT_V2_BLOCK / bs : 1;
		size_t nf = rx_bytes(p, rx_slots, true) / bs;
		len += (nf + fpb - 1) / fpb * fpb * bs;
	}
	if (p->dir & PKTMAP_DIR_TX)
		len += tx_geometry(p, pp, &t, tx_slots, &rq);
	return len;
}

/* The socket from the broker (docs/broker.md): created for us, with a
 * locked filter that passes the interface's frames only. Returns 0 or
 * -errno with the open error set. */
static int sock_brokered(struct pktmap_port *p, struct pkt_sock *s)
{
	struct pm_bk_req req = {
		.verb = PM_BK_PKT,
		.dir = ((p->dir & PKTMAP_DIR_RX) ? PM_BK_DIR_RX : 0) |
		       ((p->dir & PKTMAP_DIR_TX) ? PM_BK_DIR_TX : 0),
	};
	const struct pkt_priv *pp = p->priv;
	char ifname[IF_NAMESIZE];
	if (!if_indextoname((unsigned)pp->ifindex, ifname))
		return pm_open_error(p, -ENODEV, "no such interface");
	snprintf(req.ifname, sizeof(req.ifname), "%s", ifname);
	char info[PM_BK_MSG_MAX];
	int ret = pm_broker_open(p);
	return ret ? ret : pm_broker_call(p, &req, NULL, 0, &s->fd, true, info,
					  sizeof(info));
}

/* The socket, TPACKET_V2 (in place) or V3. Protocol 0 until the rings
 * exist: nothing is queued to a socket that has no ring yet. */
static int sock_create(struct pktmap_port *p, struct pkt_sock *s)
{
	s->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		int ret = -errno;
		if (ret != -EPERM && ret != -EACCES)
			return pm_open_error(p, ret, "cannot create an AF_PACKET "
					     "socket: %s", strerror(-ret));
		/* Without CAP_NET_RAW: through the broker (docs/broker.md). */
		int b = sock_brokered(p, s);
		if (b == -ENOTCONN)
			return pm_open_error(p, ret, "needs CAP_NET_RAW: run as root");
		if (b)
			return b;
	}
	int ver = s->v2 ? TPACKET_V2 : TPACKET_V3;
	int ret = set_opt(s->fd, PACKET_VERSION, &ver, sizeof(ver));
	if (ret)
		return pm_open_error(p, ret, "TPACKET_V%d not supported: %s "
				     "(needs Linux 3.2+)", s->v2 ? 2 : 3,
				     strerror(-ret));
	return 0;
}

/* The in-place RX ring: fixed frames of one buffer stride; the kernel
 * puts a frame at the region's headroom (PACKET_RESERVE moves it there
 * when the link header is shorter). Returns 0 or -errno; *len its
 * bytes. */
static int rx_ring_v2(struct pktmap_port *p, struct pkt_priv *pp,
		      struct pkt_sock *s, uint32_t rx_slots, size_t *len)
{
	uint32_t bs = p->region.buf_size;
	uint32_t bsize = PKT_V2_BLOCK > bs ? PKT_V2_BLOCK : bs;
	uint32_t fpb = bsize / bs;
	uint32_t nblocks = (uint32_t)((rx_bytes(p, rx_slots, true) / bs + fpb - 1) / fpb);
	s->rx_bsize = bs;
	s->rx_nframes = nblocks * fpb;
	s->rx_out = calloc(s->rx_nframes, 1);
	if (!s->rx_out)
		return -ENOMEM;
	int reserve = (int)(pp->hroom - v2_macoff(p->linktype));
	if (reserve > 0 && set_opt(s->fd, PACKET_RESERVE, &reserve,
				   sizeof(reserve)))
		pm_log(p, PKTMAP_LOG_WARN, "%s: PACKET_RESERVE refused: "
		       "frames are moved into place", p->name);
	struct tpacket_req r2 = {
		.tp_block_size = bsize,
		.tp_block_nr = nblocks,
		.tp_frame_size = bs,
		.tp_frame_nr = s->rx_nframes,
	};
	int ret = set_opt(s->fd, PACKET_RX_RING, &r2, sizeof(r2));
	if (ret)
		return pm_open_error(p, ret, "cannot set up the kernel RX ring "
				     "(%u frames of %u bytes): %s: use fewer "
				     "@conf:rx-slots", s->rx_nframes, bs,
				     strerror(-ret));
	*len = (size_t)s->rx_nframes * bs;
	return 0;
}

/* The RX ring by copy or in blocks: TPACKET_V3 blocks (in blocks, the
 * memory of the in-place frames and the opener's timeout). Returns 0 or
 * -errno; *len its bytes. */
static int rx_ring_v3(struct pktmap_port *p, struct pkt_priv *pp,
		      struct pkt_sock *s, uint32_t rx_slots, size_t *len)
{
	struct tpacket_req3 rq;
	s->rx_bsize = PKT_RX_BLOCK;
	s->rx_nblocks = (uint32_t)((rx_bytes(p, rx_slots, s->blocks) +
				    PKT_RX_BLOCK - 1) / PKT_RX_BLOCK);
	memset(&rq, 0, sizeof(rq));
	rq.tp_block_size = s->rx_bsize;
	rq.tp_block_nr = s->rx_nblocks;
	rq.tp_frame_size = 2048; /* bookkeeping only in V3 */
	rq.tp_frame_nr = rq.tp_block_nr * (rq.tp_block_size / rq.tp_frame_size);
	rq.tp_retire_blk_tov = s->blocks && pp->block_ms ? pp->block_ms :
							   PKT_RX_TOV_MS;
	int ret = set_opt(s->fd, PACKET_RX_RING, &rq, sizeof(rq));
	if (ret)
		return pm_open_error(p, ret, "cannot set up the kernel RX ring "
				     "(%u blocks of %u KiB): %s: use fewer "
				     "@conf:rx-slots", rq.tp_block_nr,
				     rq.tp_block_size >> 10, strerror(-ret));
	*len = (size_t)s->rx_bsize * s->rx_nblocks;
	return 0;
}

/* The TX side's options, which the kernel takes only before any ring
 * exists. Returns 0 or -errno. */
static int tx_opts(struct pktmap_port *p, struct pkt_priv *pp,
		   struct pkt_sock *s)
{
	int one = 1, ret;
	/* Straight to the driver, like netmap; and a frame the kernel
	 * refuses is skipped rather than wedging the ring (tx=frames sends
	 * a refused slot's frame empty for that). */
	(void)set_opt(s->fd, PACKET_QDISC_BYPASS, &one, sizeof(one));
	ret = set_opt(s->fd, PACKET_LOSS, &one, sizeof(one));
	if (ret && pp->tx_frames)
		return pm_open_error(p, ret, "tx=frames: PACKET_LOSS: %s: open "
				     "with @conf:tx=copy", strerror(-ret));
	/* Each frame whole in the linear part (packet.h, pkt_tx_vnet()). */
	if (pkt_tx_vnet(p) &&
	    set_opt(s->fd, PACKET_VNET_HDR, &one, sizeof(one)) == 0)
		s->tx_vnet = sizeof(struct virtio_net_hdr);
	/* tx=frames: a frame's data where the slot's buffer starts. */
	if (pp->tx_frames && (ret = set_opt(s->fd, PACKET_TX_HAS_OFF, &one,
					    sizeof(one))) != 0)
		return pm_open_error(p, ret, "tx=frames: PACKET_TX_HAS_OFF: %s "
				     "(needs Linux 3.8+): open with @conf:tx=copy",
				     strerror(-ret));
	return 0;
}

/* What every TX frame's header says for good, written once: a
 * virtio_net_hdr of no offload before the frame (PACKET_VNET_HDR), in
 * TPACKET_V3 no next frame (the kernel refuses variable-sized TX slots)
 * and, with tx=frames, where the frame starts (PACKET_TX_HAS_OFF reads
 * tp_mac: the region's headroom). txsync writes only lengths
 * (tx_set_len()). */
static void tx_headers(struct pkt_priv *pp, struct pkt_sock *s)
{
	for (uint32_t f = 0; f < s->tx_nframes; f++) {
		uint8_t *h = tx_frame(s, f);
		if (s->tx_vnet)
			memset(h + s->tx_off - s->tx_vnet, 0, s->tx_vnet);
		if (!s->v2)
			((struct tpacket3_hdr *)h)->tp_next_offset = 0;
		if (pp->tx_frames) { /* TPACKET_V2: in place */
			struct tpacket2_hdr *t2 = (struct tpacket2_hdr *)h;
			t2->tp_mac = t2->tp_net = (uint16_t)(s->tx_off - s->tx_vnet);
		}
	}
}

/* The TX ring of fixed frames. Returns 0 or -errno; *len its bytes. */
static int tx_ring(struct pktmap_port *p, struct pkt_priv *pp,
		   struct pkt_sock *s, uint32_t tx_slots, size_t *len)
{
	struct tpacket_req3 rq;
	int ret;
	*len = tx_geometry(p, pp, s, tx_slots, &rq);
	if (s->v2) {
		struct tpacket_req r2 = {
			.tp_block_size = rq.tp_block_size,
			.tp_block_nr = rq.tp_block_nr,
			.tp_frame_size = rq.tp_frame_size,
			.tp_frame_nr = rq.tp_frame_nr,
		};
		ret = set_opt(s->fd, PACKET_TX_RING, &r2, sizeof(r2));
	} else {
		ret = set_opt(s->fd, PACKET_TX_RING, &rq, sizeof(rq));
	}
	if (ret)
		return pm_open_error(p, ret, "cannot set up the kernel TX ring "
				     "(%u frames of %u bytes): %s: use fewer "
				     "@conf:tx-slots", s->tx_nframes,
				     s->tx_fsize, strerror(-ret));
	return 0;
}

/* Map the socket's rings (RX, then TX), at `at` in place. In blocks,
 * PKT_BLK_SLACK bytes of zeroes follow (s->map_len counts them). */
static int sock_map(struct pktmap_port *p, struct pkt_sock *s, uint8_t *at,
		    size_t rx_len, size_t tx_len)
{
	bool want_rx = p->dir & PKTMAP_DIR_RX, want_tx = p->dir & PKTMAP_DIR_TX;
	size_t len = rx_len + tx_len;
	if (s->blocks) {
		at = mmap(NULL, len + PKT_BLK_SLACK, PROT_READ,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (at == MAP_FAILED)
			return pm_open_error(p, -errno, "cannot reserve %zu bytes "
					     "for the kernel rings: %s",
					     len + PKT_BLK_SLACK, strerror(errno));
		s->map = at;
		s->map_len = len + PKT_BLK_SLACK;
	}
	uint8_t *m = mmap(at, len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE | (at ? MAP_FIXED : 0), s->fd, 0);
	if (m == MAP_FAILED) {
		int ret = -errno;
		return pm_open_error(p, ret, "cannot map the kernel rings (%zu "
				     "bytes): %s", len, strerror(-ret));
	}
	s->map = m;
	if (!s->blocks)
		s->map_len = len;
	s->rx = want_rx ? s->map : NULL;
	s->tx = want_tx ? s->map + rx_len : NULL;
	if (want_rx && s->v2)
		s->rx_base = (uint32_t)((size_t)(s->rx - (uint8_t *)p->region.pool) /
					p->region.buf_size);
	return 0;
}

/* Bind the socket to the interface (the rings exist: frames flow from
 * here on), join the fanout group, ask for promiscuous mode. */
static int sock_bind(struct pktmap_port *p, struct pkt_priv *pp,
		     struct pkt_sock *s, bool fanout)
{
	bool want_rx = p->dir & PKTMAP_DIR_RX;
	int one = 1, ret;
	if (want_rx && (pp->rx_dir & PKTMAP_RX_OUT) == 0 &&
	    set_opt(s->fd, PACKET_IGNORE_OUTGOING, &one, sizeof(one)))
		/* Not before Linux 4.20: then the kernel filter does it. */
		pm_log(p, PKTMAP_LOG_DEBUG, "%s: PACKET_IGNORE_OUTGOING not "
		       "supported: outgoing frames are filtered out", p->name);
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

/* Create and bind the socket of one ring; in place, its rings are mapped
 * at `at`. Returns 0 or -errno with the open error recorded (what is
 * half set up is the caller's to close: s->fd, s->map, s->rx_out). */
int pm_pkt_sock_open(struct pktmap_port *p, struct pkt_priv *pp,
		     struct pkt_sock *s, uint32_t rx_slots, uint32_t tx_slots,
		     bool fanout, uint8_t *at)
{
	size_t rx_len = 0, tx_len = 0;
	int ret;

	s->v2 = at != NULL;
	s->blocks = pp->blocks && (p->dir & PKTMAP_DIR_RX);
	ret = sock_create(p, s);
	if (!ret && (p->dir & PKTMAP_DIR_TX))
		ret = tx_opts(p, pp, s);
	if (!ret && (p->dir & PKTMAP_DIR_RX))
		ret = s->v2 ? rx_ring_v2(p, pp, s, rx_slots, &rx_len) :
			      rx_ring_v3(p, pp, s, rx_slots, &rx_len);
	if (!ret && (p->dir & PKTMAP_DIR_TX))
		ret = tx_ring(p, pp, s, tx_slots, &tx_len);
	if (!ret)
		ret = sock_map(p, s, at, rx_len, tx_len);
	if (!ret && s->tx)
		tx_headers(pp, s);
	if (!ret && s->blocks)
		ret = pm_pkt_blocks_setup(p, pm_rxkring(p, (uint32_t)(s - pp->socks)),
					  s, rx_len);
	if (!ret)
		ret = sock_bind(p, pp, s, fanout);
	return ret;
}

/* Reserve an address range above the pool for the kernel rings of the
 * bound sockets, at a whole number of buffer strides from the pool, so
 * that their frames get buffer indices (a hole of the address space found
 * in /proc/self/maps). Returns the address of the first socket's map, or
 * NULL when there is none in reach (the port then copies). */
uint8_t *pm_pkt_reserve_above_pool(struct pktmap_port *p, struct pkt_priv *pp,
				   size_t total)
{
	struct pm_region *r = &p->region;
	uintptr_t pool = (uintptr_t)r->pool, bs = r->buf_size;
	uintptr_t lo = (uintptr_t)r->base + r->size;
	uintptr_t reach = pool + ((uintptr_t)UINT32_MAX - total / bs - 1) * bs;
	for (int attempt = 0; attempt < 4; attempt++) {
		FILE *f = fopen("/proc/self/maps", "re");
		if (!f)
			return NULL;
		uintptr_t from = lo, a = 0;
		unsigned long s0, e0;
		char line[512];
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%lx-%lx", &s0, &e0) != 2 || e0 <= from)
				continue;
			/* The first stride-aligned address at or after `from`. */
			uintptr_t at = pool + (from - pool + bs - 1) / bs * bs;
			if (at + total <= s0) {
				a = at;
				break;
			}
			from = e0;
		}
		fclose(f);
		if (!a)
			a = pool + (from - pool + bs - 1) / bs * bs;
		if (a > reach)
			return NULL;
		void *m = mmap((void *)a, total, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			       MAP_FIXED_NOREPLACE, -1, 0);
		if (m == (void *)a) {
			pp->resv = m;
			pp->resv_len = total;
			return m;
		}
		if (m != MAP_FAILED) /* a kernel without MAP_FIXED_NOREPLACE */
			munmap(m, total);
		/* Another thread took it meanwhile: look again. */
	}
	return NULL;
}
