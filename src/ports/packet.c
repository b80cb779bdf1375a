/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt:IFACE and pkt:IFACE-N: AF_PACKET sockets with mmap rings. It works
 * on every interface the kernel has. One socket per ring pair.
 *
 * RX in place (the default; mode "copy": the kernel's one copy only). The
 * socket has a TPACKET_V2 RX ring of fixed frames, one buffer stride
 * (nr_buf_size) each, mapped right after the port's region so that every
 * frame IS a buffer of the port's index space: the region's headroom is
 * where the kernel puts the frame (tp_mac), the tpacket header sits in the
 * bytes before it, and NETMAP_BUF(ring, idx) of frame k's index is the
 * frame the kernel wrote. rxsync points the RX slots at the frames the
 * kernel handed over (TP_STATUS_USER), nothing is copied; releasing a slot
 * (head moving past it) hands its frame back (TP_STATUS_KERNEL).
 *
 *   region: [ hdr | rings | pool: buf 0 .. nbufs-1 ][ socket 0: frame 0 .. ][ TX ring ] ...
 *   frame:  [ tpacket2_hdr, sockaddr_ll ... | frame (at the headroom) ...... ]
 *
 * A slot may come back with another buffer (NS_BUF_CHANGED, zero-copy
 * forwarding: the application took the frame): the frame is then "lent"
 * (counted in rx_lent) and goes back to the kernel when the application
 * releases it in any RX slot of the port; the buffer it left is kept.
 * While frames are lent, the next frames are copied into the buffers left
 * (rx_copied) and go back to the kernel at once, so that the application
 * trades buffers of its own rather than take more of the kernel's; in
 * place again once they are all back. The kernel fills its frames in
 * order: one still lent when the kernel comes round to it (8192 frames
 * later by default) holds the kernel there (drops, in drop_backend). A frame the kernel wrote
 * elsewhere than the headroom (a VLAN tag to put back, another link
 * header length) is moved within its own frame.
 *
 * RX by copy (mode "emulated"): when the region is shared (@mem:, other
 * processes cannot see this process's kernel ring), the buffer stride is
 * not a power of two from 2 KiB to 64 KiB, the MTU does not fit a buffer,
 * or the address space right after the region is taken. The socket then
 * has a TPACKET_V3 RX ring: the kernel fills blocks of frames and hands a
 * whole block over when it is full or after 1 ms; rxsync copies frames out
 * of the blocks into the port's RX slots and gives a block back as soon as
 * its last frame is copied.
 *
 * TX (both modes, one copy): a TX ring of fixed frames: txsync copies each
 * submitted packet into a free frame, marks it TP_STATUS_SEND_REQUEST and
 * kicks the kernel with one sendto(MSG_DONTWAIT) per sync.
 * PACKET_QDISC_BYPASS hands frames straight to the driver. Sent frames
 * come back (TP_STATUS_AVAILABLE) and are reaped in later syncs; the TX
 * ring's tail reflects the free frames, so a full kernel ring is
 * backpressure, not loss.
 *
 *     TX ring:   hwcur ......... head            (slots to copy out)
 *     frames:    reap [in flight: SEND_REQUEST/SENDING) fill [free ...)
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
 */
#include <arpa/inet.h>
#include <linux/filter.h>
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

#define PKT_RX_BLOCK (256u << 10)       /* V3: holds any frame up to 64 KiB */
#define PKT_RX_MIN_BYTES (4u << 20)     /* V3: kernel RX memory per ring, at least */
#define PKT_V2_MIN_BYTES (16u << 20)    /* V2: 8192 frames of 2 KiB, at least */
#define PKT_RX_TOV_MS 1                 /* V3: hand over a partial block after 1 ms */
#define PKT_V2_BLOCK (64u << 10)        /* V2: frames per allocation unit */
#define PKT_TX_FRAME_MAX (16u << 10)    /* largest TX frame stride (jumbo) */
#define PKT_TX_BLOCK_MIN (64u << 10)
#define PKT_FANOUT_BASE 0x7000u         /* fanout id = base + ifindex */
#define PKT_SNAP_ALL 0xffffffffu        /* a filter's "accept": the whole frame */

/* One socket: the state of one ring pair. */
struct pkt_sock {
	int fd;
	uint8_t *map;
	size_t map_len;
	bool v2;                   /* RX in place (TPACKET_V2 frames) */
	/* RX by copy (TPACKET_V3 blocks) */
	uint8_t *rx;               /* first block or frame, NULL without RX */
	uint32_t rx_bsize, rx_nblocks;
	uint32_t rx_blk;           /* block being read */
	uint32_t rx_left;          /* frames of rx_blk not yet copied; 0: none */
	struct tpacket3_hdr *rx_hdr; /* next frame of rx_blk */
	/* RX in place (TPACKET_V2 frames, buffers rx_base ..) */
	uint32_t rx_nframes;
	uint32_t rx_cur;           /* next frame the kernel hands over */
	uint32_t rx_base;          /* buffer index of frame 0 */
	uint8_t *rx_out;           /* per frame: 1 while the application has it */
	uint32_t *rx_dlv;          /* per RX slot: the buffer rxsync put there */
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
	int epfd;                  /* several sockets, or TX waits */
	uint32_t ep_base;          /* what the sockets are registered for idle */
	uint32_t ep_events;        /* ... and now */
	bool inplace;              /* RX frames are buffers of the index space */
	uint32_t hroom;            /* where the kernel puts a frame (= headroom) */
	uint8_t *resv;             /* the address range the rings are mapped in */
	size_t resv_len;
	uint32_t *spare;           /* region buffers left in RX slots */
	uint32_t nspare, spare_cap;
	uint64_t lent_out;         /* frames the application took, not back */
	unsigned rx_dir;           /* PKTMAP_RX_* */
	struct sock_filter *filt;  /* the application's kernel filter */
	unsigned filt_len;
};

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
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

static struct tpacket2_hdr *rx_frame(struct pkt_sock *s, uint32_t f)
{
	return (struct tpacket2_hdr *)(s->rx + (size_t)f * s->rx_bsize);
}

static uint8_t *tx_frame(struct pkt_sock *s, uint32_t f)
{
	return s->tx + (size_t)f * s->tx_fsize;
}

/* The TX frame header's fields, TPACKET_V2 or V3. */
static uint32_t *tx_status(struct pkt_sock *s, uint32_t f)
{
	uint8_t *h = tx_frame(s, f);
	return s->v2 ? &((struct tpacket2_hdr *)h)->tp_status :
		       &((struct tpacket3_hdr *)h)->tp_status;
}

static uint32_t tx_len(struct pkt_sock *s, uint32_t f)
{
	uint8_t *h = tx_frame(s, f);
	return s->v2 ? ((struct tpacket2_hdr *)h)->tp_len :
		       ((struct tpacket3_hdr *)h)->tp_len;
}

static void tx_set_len(struct pkt_sock *s, uint32_t f, uint32_t len)
{
	uint8_t *h = tx_frame(s, f);
	if (s->v2) {
		((struct tpacket2_hdr *)h)->tp_len = len;
		((struct tpacket2_hdr *)h)->tp_snaplen = len;
	} else {
		((struct tpacket3_hdr *)h)->tp_len = len;
		((struct tpacket3_hdr *)h)->tp_snaplen = len;
		((struct tpacket3_hdr *)h)->tp_next_offset = 0;
	}
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

/* Where the kernel puts a received frame in a TPACKET_V2 frame without
 * PACKET_RESERVE: after the header and a sockaddr_ll, aligned so that the
 * network header is at a 16-byte boundary. */
static uint32_t v2_macoff(uint32_t linktype)
{
	return TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - (linktype == 1 ? ETH_HLEN : 0);
}

/* Kernel RX memory of one ring: twice the slots' buffers, at least 16 MiB
 * of fixed frames in place (8192 frames: 40 ms at 200 kpps for a reader
 * that is descheduled), 4 MiB of V3 blocks by copy. */
static size_t rx_bytes(const struct pktmap_port *p, uint32_t rx_slots,
		       bool v2)
{
	size_t bytes = (size_t)rx_slots * p->region.buf_size * 2;
	size_t min = v2 ? PKT_V2_MIN_BYTES : PKT_RX_MIN_BYTES;
	return bytes < min ? min : bytes;
}

/* The TX ring's geometry for a socket (s->tx_* filled). Returns its
 * bytes. */
static size_t tx_geometry(struct pkt_priv *pp, struct pkt_sock *s,
			  uint32_t tx_slots, struct tpacket_req3 *rq)
{
	s->tx_off = (s->v2 ? TPACKET2_HDRLEN : TPACKET3_HDRLEN) -
		    sizeof(struct sockaddr_ll);
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
	memset(rq, 0, sizeof(*rq));
	rq->tp_block_size = bsize;
	rq->tp_block_nr = nblocks;
	rq->tp_frame_size = fsize;
	rq->tp_frame_nr = s->tx_nframes;
	/* tx_nframes * tx_fsize equals the blocks' size: fpb divides bsize. */
	return (size_t)s->tx_fsize * s->tx_nframes;
}

/* The bytes one socket maps (RX ring, then TX ring), in place. */
static size_t sock_map_len(struct pktmap_port *p, struct pkt_priv *pp,
			   uint32_t rx_slots, uint32_t tx_slots)
{
	struct pkt_sock t = { .v2 = true };
	struct tpacket_req3 rq;
	size_t len = 0;
	if (p->dir & PKTMAP_DIR_RX) {
		uint32_t bs = p->region.buf_size;
		uint32_t fpb = PKT_V2_BLOCK > bs ? PKT_V2_BLOCK / bs : 1;
		size_t nf = rx_bytes(p, rx_slots, true) / bs;
		len += (nf + fpb - 1) / fpb * fpb * bs;
	}
	if (p->dir & PKTMAP_DIR_TX)
		len += tx_geometry(pp, &t, tx_slots, &rq);
	return len;
}

/* Create and bind the socket of one ring; in place, its rings are mapped
 * at `at`. Returns 0 or -errno with the open error recorded. */
static int pkt_sock_open(struct pktmap_port *p, struct pkt_priv *pp,
			 struct pkt_sock *s, uint32_t rx_slots,
			 uint32_t tx_slots, bool fanout, uint8_t *at)
{
	bool want_rx = p->dir & PKTMAP_DIR_RX, want_tx = p->dir & PKTMAP_DIR_TX;
	int one = 1, ret;

	s->v2 = at != NULL;
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
	int ver = s->v2 ? TPACKET_V2 : TPACKET_V3;
	ret = set_opt(s->fd, PACKET_VERSION, &ver, sizeof(ver));
	if (ret)
		return pm_open_error(p, ret, "TPACKET_V%d not supported: %s "
				     "(needs Linux 3.2+)", s->v2 ? 2 : 3,
				     strerror(-ret));

	struct tpacket_req3 rq;
	size_t rx_len = 0;
	if (want_rx && s->v2) {
		/* Fixed frames of one buffer stride; the kernel puts a
		 * frame at the region's headroom (PACKET_RESERVE moves it
		 * there when the link header is shorter). */
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
		ret = set_opt(s->fd, PACKET_RX_RING, &r2, sizeof(r2));
		if (ret)
			return pm_open_error(p, ret, "cannot set up the kernel RX ring "
					     "(%u frames of %u bytes): %s: use fewer "
					     "@conf:rx-slots", s->rx_nframes, bs,
					     strerror(-ret));
		rx_len = (size_t)s->rx_nframes * bs;
	} else if (want_rx) {
		s->rx_bsize = PKT_RX_BLOCK;
		s->rx_nblocks = (uint32_t)((rx_bytes(p, rx_slots, false) + PKT_RX_BLOCK - 1) /
					   PKT_RX_BLOCK);
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
		rx_len = (size_t)s->rx_bsize * s->rx_nblocks;
	}
	size_t tx_len = 0;
	if (want_tx) {
		tx_len = tx_geometry(pp, s, tx_slots, &rq);
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
		/* Straight to the driver, like netmap; and a frame the
		 * kernel refuses is skipped rather than wedging the ring. */
		(void)set_opt(s->fd, PACKET_QDISC_BYPASS, &one, sizeof(one));
		(void)set_opt(s->fd, PACKET_LOSS, &one, sizeof(one));
	}

	s->map_len = rx_len + tx_len;
	s->map = mmap(at, s->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE | (at ? MAP_FIXED : 0), s->fd, 0);
	if (s->map == MAP_FAILED) {
		ret = -errno;
		s->map = NULL;
		return pm_open_error(p, ret, "cannot map the kernel rings (%zu "
				     "bytes): %s", s->map_len, strerror(-ret));
	}
	s->rx = want_rx ? s->map : NULL;
	s->tx = want_tx ? s->map + rx_len : NULL;
	if (want_rx && s->v2)
		s->rx_base = (uint32_t)((size_t)(s->rx - (uint8_t *)p->region.pool) /
					p->region.buf_size);

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

/* Reserve an address range above the pool for the kernel rings of the
 * bound sockets, at a whole number of buffer strides from the pool, so
 * that their frames get buffer indices (a hole of the address space found
 * in /proc/self/maps). Returns the address of the first socket's map, or
 * NULL when there is none in reach (the port then copies). */
static uint8_t *reserve_above_pool(struct pktmap_port *p, struct pkt_priv *pp,
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

static int pkt_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o)
{
	(void)o;
	struct pm_conf conf = nm->conf;
	const struct pm_conf *c = &conf;
	struct ifreq ifr;
	int ret;

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
	uint32_t R = c->tx_rings ? c->tx_rings : (c->rx_rings ? c->rx_rings : 1);
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;

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

	pp->ifindex = (int)if_nametoindex(nm->body);
	if (pp->ifindex == 0)
		return pm_open_error(p, -ENODEV, "no such interface: check 'ip link' "
				     "(or the network namespace)");
	pp->mtu = 1500;
	if (pm_if_ioctl(nm->body, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		pp->mtu = (uint32_t)ifr.ifr_mtu;
	p->linktype = 1;
	if (pm_if_ioctl(nm->body, SIOCGIFHWADDR, &ifr) == 0)
		p->linktype = linktype_of(ifr.ifr_hwaddr.sa_family);
	if (pm_if_ioctl(nm->body, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP))
		/* Decided: warn and go on. The socket works as soon as the
		 * link comes up; refusing would make scripts racy. */
		pm_log(p, PKTMAP_LOG_WARN, "%s: interface is down: no packets will "
		       "flow until 'ip link set %s up'", p->name, nm->body);

	/* RX in place when the frames can be buffers of a private region:
	 * a power-of-two stride (the kernel's frames are evenly spaced
	 * only then) that holds the largest frame after the headroom. */
	uint32_t bs = c->buf_size ? c->buf_size : PM_DEFAULT_BUF_SIZE;
	uint32_t hroom = v2_macoff(p->linktype);
	pp->inplace = (p->dir & PKTMAP_DIR_RX) && !c->region[0] &&
		      bs >= 2048 && bs <= (64u << 10) && (bs & (bs - 1)) == 0 &&
		      hroom + pp->mtu + ETH_HLEN + 4 <= bs;
	if (pp->inplace) {
		conf.headroom = hroom;
		conf.buf_size = bs; /* 2 KiB frames unless asked otherwise */
	}

	/* The region: private unless @mem: names one. */
	ret = pm_port_own_rings(p, c, "pkt", nm->body, R, R, txs, rxs);
	if (ret)
		return ret;
	pp->hroom = p->region.headroom;

	uint8_t *at = NULL;
	size_t one_len = 0;
	if (pp->inplace) {
		one_len = sock_map_len(p, pp, rxs, txs);
		at = reserve_above_pool(p, pp, one_len * (pp->hi - pp->lo));
		if (!at) {
			pp->inplace = false;
			pm_log(p, PKTMAP_LOG_INFO, "%s: no address range in reach of "
			       "the buffer indices: RX frames are copied", p->name);
		}
	}
	/* The socket wakes a sleeper for every frame: no spinning before
	 * sleeping unless the name asks for it (@conf:spin-us). */
	if (!c->spin_set)
		p->spin_us = 0;
	p->mode = pp->inplace && !(p->dir & PKTMAP_DIR_TX) ? PKTMAP_MODE_COPY :
							      PKTMAP_MODE_EMULATED;

	/* Fanout whenever traffic is meant to be split: several rings, or
	 * one ring of several opened on its own. */
	bool fanout = R > 1;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *s = &pp->socks[r];
		ret = pkt_sock_open(p, pp, s, rxs, txs, fanout,
				    at ? at + (size_t)(r - pp->lo) * one_len : NULL);
		if (ret)
			return ret;
		pm_txkring(p, r)->priv = s;
		pm_rxkring(p, r)->priv = s;
		if (s->v2) {
			struct pm_kring *k = pm_rxkring(p, r);
			s->rx_dlv = malloc(k->nslots * sizeof(*s->rx_dlv));
			if (!s->rx_dlv)
				return -ENOMEM;
			for (uint32_t i = 0; i < k->nslots; i++)
				s->rx_dlv[i] = k->ring->slot[i].buf_idx;
		}
	}
	if (pp->inplace) {
		/* Every index of the range is mapped memory: each map is a
		 * whole number of strides, one after the other. */
		p->bs.ext_lo = pp->socks[pp->lo].rx_base;
		p->bs.ext_n = (uint32_t)(pp->resv_len / p->region.buf_size);
		pp->spare_cap = p->region.nbufs;
		pp->spare = malloc((size_t)pp->spare_cap * sizeof(*pp->spare));
		if (!pp->spare)
			return -ENOMEM;
	}

	/* pktmap_fd(): with one socket, the socket (POLLIN for RX, POLLOUT
	 * for TX, level-triggered); with several, an epoll set of them,
	 * readable while one has a frame (pktmap_poll() adds EPOLLOUT while
	 * it waits for TX space). */
	if (pp->hi - pp->lo == 1) {
		p->fd = pp->socks[pp->lo].fd;
		/* In place a frame stays TP_STATUS_USER until its slot is
		 * released: the socket is readable while the ring holds
		 * unread packets too, and its POLLOUT is the TX ring's. */
		p->fd_exact = pp->inplace || !(p->dir & PKTMAP_DIR_RX);
	} else {
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

/* RX by copy: give back released slots, then copy frames out of the
 * kernel's blocks into the free slots. A block goes back to the kernel as
 * soon as its last frame has been copied. */
static int rxsync_copy(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots;
	/* Released slots come back with the buffers the application put
	 * there (it may swap them): they must be ours before we fill them. */
	int ret = pm_rx_release(p, k);

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
				pm_stat_add(&k->st->drop_backend, 1);
			else
				pm_stat_add(&k->st->drop_too_long, 1);
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
		pm_count(k, pkts, bytes);
		ring->ts.tv_sec = (time_t)(last_ts / 1000000000ull);
		ring->ts.tv_usec = (suseconds_t)(last_ts % 1000000000ull / 1000);
	}
	return ret;
}

/* The socket whose RX frames include buffer idx, or NULL. */
static struct pkt_sock *frame_owner(struct pkt_priv *pp, struct pkt_sock *s,
				    uint32_t idx)
{
	if (idx - s->rx_base < s->rx_nframes)
		return s;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *o = &pp->socks[r];
		if (o->rx && idx - o->rx_base < o->rx_nframes)
			return o;
	}
	return NULL;
}

/* Put the frame the kernel wrote at tp_mac (possibly without its VLAN
 * tag) at the headroom of its own frame, whole. Returns its length, or 0
 * when it does not fit. */
static uint32_t frame_fixup(struct pkt_priv *pp, struct pkt_sock *s,
			    struct tpacket2_hdr *h, uint32_t st)
{
	uint8_t *dst = (uint8_t *)h + pp->hroom;
	const uint8_t *data = (const uint8_t *)h + h->tp_mac;
	uint32_t snap = h->tp_snaplen;
	bool vlan = (st & TP_STATUS_VLAN_VALID) && snap >= 12;
	uint32_t flen = snap + (vlan ? 4 : 0);

	if (h->tp_mac < sizeof(*h) || h->tp_mac + snap > s->rx_bsize ||
	    pp->hroom + flen > s->rx_bsize)
		return 0;
	if (!vlan) {
		memmove(dst, data, snap);
		return flen;
	}
	/* Put back the 802.1Q tag the kernel (or the NIC) took out, as
	 * libpcap does: the wire's frame. */
	uint16_t tpid = (st & TP_STATUS_VLAN_TPID_VALID) && h->tp_vlan_tpid ?
				h->tp_vlan_tpid : ETH_P_8021Q;
	uint16_t tci = h->tp_vlan_tci;
	uint8_t mac[12];
	memcpy(mac, data, 12);
	memmove(dst + 16, data + 12, snap - 12);
	memcpy(dst, mac, 12);
	dst[12] = (uint8_t)(tpid >> 8), dst[13] = (uint8_t)tpid;
	dst[14] = (uint8_t)(tci >> 8), dst[15] = (uint8_t)tci;
	return flen;
}

/* RX in place: hand released frames back to the kernel (keep buffers that
 * replaced them), then point the free slots at the frames the kernel has
 * handed over. */
static int rxsync_inplace(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct pkt_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, head = k->rhead;
	const struct pm_bufspace pool = { .nbufs = p->region.nbufs };
	int ret = 0;

	for (uint32_t i = k->hwcur; i != head; i = i + 1 == n ? 0 : i + 1) {
		uint32_t idx = PM_READ_ONCE(ring->slot[i].buf_idx);
		uint32_t d = s->rx_dlv[i];
		if (pm_unlikely(idx != d) && frame_owner(pp, s, d)) {
			/* The application took the frame (NS_BUF_CHANGED). */
			pp->lent_out++;
			pm_stat_add(&k->st->lent, 1);
		}
		struct pkt_sock *o = frame_owner(pp, s, idx);
		if (pm_likely(o != NULL)) {
			uint32_t f = idx - o->rx_base;
			if (o->rx_out[f]) { /* twice in the ring: once back */
				o->rx_out[f] = 0;
				status_store(&rx_frame(o, f)->tp_status,
					     TP_STATUS_KERNEL);
				if (idx != d && pp->lent_out)
					pp->lent_out--; /* a lent frame is back */
			}
		} else if (pm_buf_ok(&pool, idx) && pp->nspare < pp->spare_cap) {
			/* A buffer of the region: one the application left,
			 * or a copy's coming back. */
			pp->spare[pp->nspare++] = idx;
		} else {
			pm_slot_reject(p, k, i, idx, ring->slot[i].len,
				       PM_SLOT_BAD_IDX);
			head = i;
			ret = -EINVAL;
			break;
		}
	}
	k->hwcur = head;

	uint32_t j = k->hwtail, nf = s->rx_nframes;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, j, n);
	uint64_t pkts = 0, bytes = 0, last_ts = 0;

	while (space) {
		uint32_t f = s->rx_cur;
		if (s->rx_out[f])
			break; /* still lent: the kernel waits there too */
		struct tpacket2_hdr *h = rx_frame(s, f);
		uint32_t st = status_load(&h->tp_status);
		if (!(st & TP_STATUS_USER))
			break;
		s->rx_cur = f + 1 == nf ? 0 : f + 1;
		uint32_t flen = h->tp_snaplen;
		if (pm_unlikely(h->tp_mac != pp->hroom ||
				(st & TP_STATUS_VLAN_VALID) ||
				flen > p->bs.usable)) {
			flen = frame_fixup(pp, s, h, st);
			if (!flen || flen > p->bs.usable) {
				pm_stat_add(&k->st->drop_too_long, 1);
				status_store(&h->tp_status, TP_STATUS_KERNEL);
				continue;
			}
		}
		if (pm_unlikely(h->tp_snaplen < h->tp_len)) {
			pm_stat_add(&k->st->drop_too_long, 1); /* the kernel cut it */
			status_store(&h->tp_status, TP_STATUS_KERNEL);
			continue;
		}
		struct netmap_slot *sl = &ring->slot[j];
		uint64_t ts = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec;
		if (pm_likely(pp->lent_out == 0 || pp->nspare == 0)) {
			sl->buf_idx = s->rx_base + f;
			s->rx_out[f] = 1;
		} else {
			/* While the application holds frames it took, copy
			 * into the buffers it left instead: it cannot take
			 * more of the kernel's, and the frame goes back now. */
			uint32_t b = pp->spare[--pp->nspare];
			memcpy(pm_region_buf(&p->region, b),
			       (const uint8_t *)h + pp->hroom, flen);
			status_store(&h->tp_status, TP_STATUS_KERNEL);
			sl->buf_idx = b;
			pm_stat_add(&k->st->copied, 1);
		}
		s->rx_dlv[j] = sl->buf_idx;
		sl->len = (uint16_t)flen;
		sl->flags = 0;
		sl->ptr = ts;
		j = j + 1 == n ? 0 : j + 1;
		space--;
		pkts++;
		bytes += flen;
		last_ts = ts;
	}
	k->hwtail = j;
	if (pkts) {
		pm_count(k, pkts, bytes);
		ring->ts.tv_sec = (time_t)(last_ts / 1000000000ull);
		ring->ts.tv_usec = (suseconds_t)(last_ts % 1000000000ull / 1000);
	}
	return ret;
}

static int pkt_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	return s->v2 ? rxsync_inplace(p, k) : rxsync_copy(p, k);
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
static void tx_reap(struct pm_kring *k, struct pkt_sock *s)
{
	while (s->tx_inflight) {
		uint32_t *stp = tx_status(s, s->tx_reap);
		uint32_t st = status_load(stp);
		if (st & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))
			break;
		if (pm_unlikely(st & TP_STATUS_WRONG_FORMAT)) {
			/* Counted as sent when queued: move it to drops. */
			pm_count(k, (uint64_t)-1, -(uint64_t)tx_len(s, s->tx_reap));
			pm_stat_add(&k->st->drop_backend, 1);
			status_store(stp, TP_STATUS_AVAILABLE);
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

	tx_reap(k, s);
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
		uint8_t *dst = tx_frame(s, s->tx_fill) + s->tx_off;
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
			pm_stat_add(&k->st->drop_too_long, 1);
			continue;
		}
		if (flen < ETH_HLEN && p->linktype == 1) {
			pm_stat_add(&k->st->drop_invalid, 1);
			pm_log_ratelimited(p, &p->rl_slot, "%s: TX ring %u: frame of "
					   "%u bytes is shorter than an Ethernet "
					   "header: dropped", p->name,
					   ring->ringid, flen);
			continue;
		}
		tx_set_len(s, s->tx_fill, flen);
		status_store(tx_status(s, s->tx_fill), TP_STATUS_SEND_REQUEST);
		s->tx_fill = s->tx_fill + 1 == s->tx_nframes ? 0 : s->tx_fill + 1;
		s->tx_inflight++;
		pkts++;
		bytes += flen;
	}
	k->hwcur = i;
	pm_count(k, pkts, bytes);

	/* Kick when the newest frame has not been taken yet (new frames, or
	 * frames a busy device refused last time). */
	if (s->tx_inflight) {
		uint32_t last = s->tx_fill ? s->tx_fill - 1 : s->tx_nframes - 1;
		if (status_load(tx_status(s, last)) & TP_STATUS_SEND_REQUEST) {
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
			tx_reap(k, s);
		}
	}
	uint32_t busy = s->tx_inflight < n - 1 ? s->tx_inflight : n - 1;
	k->hwtail = pm_ring_add(k->hwcur, n - 1 - busy, n);
	return ret;
}

/* Frames the kernel has handed over that rxsync has not taken yet. */
static bool rx_ready(struct pkt_sock *s)
{
	if (s->v2)
		return !s->rx_out[s->rx_cur] &&
		       (status_load(&rx_frame(s, s->rx_cur)->tp_status) &
			TP_STATUS_USER);
	return s->rx_left ||
	       (status_load(&rx_block(s, s->rx_blk)->hdr.bh1.block_status) &
		TP_STATUS_USER);
}

/* Anything to do on the bound rings right now? */
static int pkt_ready(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pkt_sock *s = &pp->socks[r];
		if ((events & POLLIN) && s->rx && rx_ready(s))
			return 1;
		if ((events & POLLOUT) && s->tx &&
		    (s->tx_inflight < s->tx_nframes ||
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

/* One socket: pktmap_poll() sleeps on it for what it waits for (the
 * kernel's poll says POLLIN while the RX ring holds a frame, POLLOUT while
 * the TX ring has a free one). Several: on the epoll set, for POLLIN. */
static int pkt_poll_fd(const struct pktmap_port *p, short events, short *pev)
{
	const struct pkt_priv *pp = p->priv;
	if (pp->epfd < 0)
		*pev = (short)(events & (POLLIN | POLLOUT));
	return p->fd;
}

/* Register the sockets for what the caller waits for, then look once
 * more: a frame handed over before the registration is seen here, one
 * handed over after it wakes the socket. */
static int pkt_poll_arm(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
	if (pp->epfd >= 0 && (events & POLLOUT)) {
		uint32_t want = pp->ep_base;
		if ((events & POLLIN) && (p->dir & PKTMAP_DIR_RX))
			want |= EPOLLIN;
		if (p->dir & PKTMAP_DIR_TX)
			want |= EPOLLOUT;
		ep_set(pp, want);
	}
	return pkt_ready(p, events);
}

/* Back to what a plain poll() on pktmap_fd() waits for. */
static void pkt_poll_disarm(struct pktmap_port *p, short events)
{
	struct pkt_priv *pp = p->priv;
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

/* Frames in the kernel's ring that rxsync has not taken yet (a filter
 * attached now has not seen them). */
static uint32_t rx_queued(struct pkt_sock *s)
{
	uint32_t q = 0;
	if (!s->rx)
		return 0;
	if (s->v2) {
		for (uint32_t f = s->rx_cur; q < s->rx_nframes;
		     f = f + 1 == s->rx_nframes ? 0 : f + 1, q++)
			if (s->rx_out[f] ||
			    !(status_load(&rx_frame(s, f)->tp_status) & TP_STATUS_USER))
				break;
		return q;
	}
	q = s->rx_left;
	uint32_t b = s->rx_left ? s->rx_blk + 1 : s->rx_blk;
	for (uint32_t i = 0; i < s->rx_nblocks; i++, b++) {
		if (b >= s->rx_nblocks)
			b -= s->rx_nblocks;
		struct tpacket_block_desc *bd = rx_block(s, b);
		if (!(status_load(&bd->hdr.bh1.block_status) & TP_STATUS_USER) ||
		    (b == s->rx_blk && s->rx_left))
			break;
		q += bd->hdr.bh1.num_pkts;
	}
	return q;
}

/* Give the sockets the direction and the application's filter: the
 * kernel runs it before a frame takes a slot of its ring. Returns the
 * frames already queued (not filtered), or -errno. */
static int apply_filter(struct pktmap_port *p)
{
	struct pkt_priv *pp = p->priv;
	int ignore = pp->rx_dir == PKTMAP_RX_IN, ret = 0;
	bool prefix = pp->rx_dir == PKTMAP_RX_OUT;
	for (uint32_t r = pp->lo; r < pp->hi; r++)
		if (set_opt(pp->socks[r].fd, PACKET_IGNORE_OUTGOING, &ignore,
			    sizeof(ignore)) && ignore)
			prefix = true; /* before Linux 4.20 */

	unsigned n = (prefix ? 3 : 0) + (pp->filt_len ? pp->filt_len : 1);
	struct sock_filter *prog = calloc(n, sizeof(*prog)), *f = prog;
	if (!prog)
		return -ENOMEM;
	if (prefix) {
		bool out = pp->rx_dir == PKTMAP_RX_OUT;
		*f++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS,
						    (uint32_t)SKF_AD_OFF + SKF_AD_PKTTYPE);
		*f++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						    PACKET_OUTGOING, out ? 1 : 0,
						    out ? 0 : 1);
		*f++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	}
	if (pp->filt_len) {
		memcpy(f, pp->filt, pp->filt_len * sizeof(*f));
		/* A filter's "accept N bytes" becomes "the whole frame": the
		 * slot carries the captured length only, so the application
		 * cuts to its snapshot length itself. */
		for (unsigned i = 0; i < pp->filt_len; i++)
			if (f[i].code == (BPF_RET | BPF_K) && f[i].k)
				f[i].k = PKT_SNAP_ALL;
	} else {
		*f = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, PKT_SNAP_ALL);
	}
	struct sock_fprog fp = { .len = (unsigned short)n, .filter = prog };
	uint32_t queued = 0;
	for (uint32_t r = pp->lo; r < pp->hi && !ret; r++) {
		int fd = pp->socks[r].fd;
		if (!prefix && !pp->filt_len) {
			int dummy = 0;
			if (setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &dummy,
				       sizeof(dummy)) && errno != ENOENT)
				ret = -errno;
		} else if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp,
				      sizeof(fp))) {
			ret = -errno;
		}
		queued += rx_queued(&pp->socks[r]);
	}
	free(prog);
	return ret ? ret : (int)(queued > INT32_MAX ? INT32_MAX : queued);
}

/* Does the program compare with a VLAN TPID? The kernel runs a socket
 * filter on the frame with its tag taken out (libpcap compiles for that
 * with the kernel's VLAN extensions); the RX slots get the tag back, and
 * such a program is for those. */
static bool tests_vlan(const struct sock_filter *insns, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (BPF_CLASS(insns[i].code) == BPF_JMP &&
		    BPF_SRC(insns[i].code) == BPF_K &&
		    (insns[i].k == ETH_P_8021Q || insns[i].k == ETH_P_8021AD ||
		     insns[i].k == 0x9100))
			return true;
	return false;
}

static int pkt_rx_filter(struct pktmap_port *p, const struct sock_filter *insns,
			 unsigned n)
{
	struct pkt_priv *pp = p->priv;
	struct sock_filter *copy = NULL;
	if (tests_vlan(insns, n)) {
		pm_log(p, PKTMAP_LOG_DEBUG, "%s: the filter tests a VLAN tag, "
		       "which the kernel sees taken out: not in the kernel",
		       p->name);
		n = 0; /* none in the kernel: the caller filters */
		free(pp->filt);
		pp->filt = NULL;
		pp->filt_len = 0;
		int ret = apply_filter(p);
		return ret < 0 ? ret : -EOPNOTSUPP;
	}
	if (n) {
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, insns, n * sizeof(*copy));
	}
	free(pp->filt);
	pp->filt = copy;
	pp->filt_len = n;
	int ret = apply_filter(p);
	if (ret < 0)
		pm_log(p, PKTMAP_LOG_INFO, "%s: the kernel refused the filter "
		       "(%s)", p->name, strerror(-ret));
	return ret;
}

static int pkt_rx_direction(struct pktmap_port *p, unsigned dir)
{
	struct pkt_priv *pp = p->priv;
	unsigned old = pp->rx_dir;
	pp->rx_dir = dir;
	int ret = apply_filter(p);
	if (ret < 0) {
		pp->rx_dir = old;
		(void)apply_filter(p);
	}
	return ret < 0 ? ret : 0;
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
	.open = pkt_open,
	.txsync = pkt_txsync,
	.rxsync = pkt_rxsync,
	.poll_arm = pkt_poll_arm,
	.poll_disarm = pkt_poll_disarm,
	.poll_fd = pkt_poll_fd,
	.rx_filter = pkt_rx_filter,
	.rx_direction = pkt_rx_direction,
	.stats = pkt_stats,
	.close = pkt_close,
};
