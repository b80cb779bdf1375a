/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Internals of the pkt: back end (AF_PACKET mmap rings), shared by
 * packet.c (open, close, poll, statistics), packet_sock.c (one socket and
 * its kernel rings, the address range they are mapped in), packet_rx.c
 * (rxsync: the in-place TPACKET_V2 engine and the TPACKET_V3 copy
 * engine), packet_blocks.c (rxsync in place in TPACKET_V3 blocks, for
 * readers: rx=blocks), packet_tx.c (txsync) and packet_filter.c (the kernel filter
 * and the RX direction). How the port works is described at the top of
 * packet.c.
 */
#ifndef PKTMAP_PORTS_PACKET_H
#define PKTMAP_PORTS_PACKET_H

#include <endian.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "check.h"
#include "port.h"

#define PKT_RX_BLOCK (256u << 10)       /* V3: holds any frame up to 64 KiB */
#define PKT_RX_MIN_BYTES (4u << 20)     /* V3: kernel RX memory per ring, at least */
#define PKT_V2_MIN_BYTES (16u << 20)    /* V2: 8192 frames of 2 KiB, at least */
#define PKT_RX_TOV_MS 1                 /* V3: hand over a partial block after 1 ms */
#define PKT_BLK_SLACK (64u << 10)       /* rx=blocks: readable bytes after the
					 * map (a slot's len reaches no further) */
#define PKT_V2_BLOCK (64u << 10)        /* V2: frames per allocation unit */
#define PKT_TX_FRAME_MAX (16u << 10)    /* largest TX frame stride (jumbo) */
#define PKT_TX_BLOCK_MIN (64u << 10)
#define PKT_FANOUT_BASE 0x7000u         /* fanout id = base + ifindex */
#define PKT_TX_RETRY_MS 5               /* a TX wait the kernel refused: kick again */
#define PKT_SNAP_ALL 0xffffffffu        /* a filter's "accept": the whole frame */

/* One socket: the state of one ring pair. */
struct pkt_sock {
	int fd;
	uint8_t *map;
	size_t map_len;
	bool v2;                   /* RX in place (TPACKET_V2 frames) */
	bool blocks;               /* RX in place in TPACKET_V3 blocks */
	/* RX by copy or in blocks (TPACKET_V3) */
	uint8_t *rx;               /* first block or frame, NULL without RX */
	uint32_t rx_bsize, rx_nblocks;
	uint32_t rx_blk;           /* block being read */
	uint32_t rx_left;          /* frames of rx_blk not yet copied; 0: none */
	struct tpacket3_hdr *rx_hdr; /* next frame of rx_blk */
	/* RX in blocks: blocks are counted as they are finished (every
	 * frame handed out or dropped) and as they go back to the kernel,
	 * in order; a slot remembers how many blocks may go back once it
	 * is released. */
	uint32_t rx_nfin, rx_nret; /* free-running counts */
	uint32_t rx_ret;           /* next block to give back */
	uint32_t *rx_upto;         /* per RX slot: blocks done with it */
	struct pm_bufspace rx_bs;  /* the RX ring's indices: byte offsets */
	/* RX in place (TPACKET_V2 frames, buffers rx_base ..) */
	uint32_t rx_nframes;
	uint32_t rx_cur;           /* next frame the kernel hands over */
	uint32_t rx_base;          /* buffer index of frame 0 */
	uint8_t *rx_out;           /* per frame: 1 while the application has it */
	uint32_t *rx_dlv;          /* per RX slot: the buffer rxsync put there
				    * (in place, V2 or blocks) */
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
	uint32_t tx_vnet;          /* bytes of virtio_net_hdr before it (0, 10) */
	uint32_t tx_base;          /* tx=frames: frame i is buffer tx_base + i */
	bool tx_refused;           /* the last kick took nothing: link down or
				    * device busy (ENETDOWN, ENOBUFS) */
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
	bool blocks;               /* RX in place in V3 blocks (rx=blocks) */
	bool tx_frames;            /* TX frames are the slots' buffers (tx=frames) */
	uint32_t block_ms;         /* their timeout (tp_retire_blk_tov) */
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

static inline struct tpacket_block_desc *rx_block(struct pkt_sock *s, uint32_t b)
{
	return (struct tpacket_block_desc *)(s->rx + (size_t)b * s->rx_bsize);
}

static inline struct tpacket2_hdr *rx_frame(struct pkt_sock *s, uint32_t f)
{
	return (struct tpacket2_hdr *)(s->rx + (size_t)f * s->rx_bsize);
}

static inline uint8_t *tx_frame(struct pkt_sock *s, uint32_t f)
{
	return s->tx + (size_t)f * s->tx_fsize;
}

/* The TX frame header's fields, TPACKET_V2 or V3. */
static inline uint32_t *tx_status(struct pkt_sock *s, uint32_t f)
{
	uint8_t *h = tx_frame(s, f);
	return s->v2 ? &((struct tpacket2_hdr *)h)->tp_status :
		       &((struct tpacket3_hdr *)h)->tp_status;
}

static inline uint32_t tx_len(struct pkt_sock *s, uint32_t f)
{
	uint8_t *h = tx_frame(s, f);
	uint32_t l = s->v2 ? ((struct tpacket2_hdr *)h)->tp_len :
			     ((struct tpacket3_hdr *)h)->tp_len;
	return l >= s->tx_vnet ? l - s->tx_vnet : 0;
}

/* Does a socket of this port ask for PACKET_VNET_HDR? A TX-only one:
 * a virtio_net_hdr then precedes each TX frame (no offloads, hdr_len the
 * whole frame), so the kernel puts the whole frame in the socket
 * buffer's linear part, where it would otherwise attach the ring's page
 * as a fragment that a veth or any local delivery copies out into a new
 * page. An RX ring would get the header too. */
static inline bool pkt_tx_vnet(const struct pktmap_port *p)
{
	return !(p->dir & PKTMAP_DIR_RX);
}

/* A frame's lengths (the rest of its header and its virtio_net_hdr are
 * written once, pm_pkt_sock_open()). */
static inline void tx_set_len(struct pkt_sock *s, uint32_t f, uint32_t len)
{
	uint8_t *h = tx_frame(s, f);
	uint32_t l = len + s->tx_vnet;
	if (s->v2) {
		((struct tpacket2_hdr *)h)->tp_len = l;
		((struct tpacket2_hdr *)h)->tp_snaplen = l;
	} else {
		((struct tpacket3_hdr *)h)->tp_len = l;
		((struct tpacket3_hdr *)h)->tp_snaplen = l;
	}
	if (s->tx_vnet)
		((struct virtio_net_hdr *)(h + s->tx_off - s->tx_vnet))->hdr_len =
			htole16((uint16_t)len);
}

/* The status words are shared with the kernel: the kernel writes frame or
 * block contents, then the status (with smp_wmb); we read the status with
 * acquire before reading contents, and write contents before publishing a
 * status with release. */
static inline uint32_t status_load(const volatile uint32_t *st)
{
	return atomic_load_explicit(PM_ATOMIC(st), memory_order_acquire);
}

static inline void status_store(volatile uint32_t *st, uint32_t v)
{
	atomic_store_explicit(PM_ATOMIC(st), v, memory_order_release);
}

static inline int set_opt(int fd, int opt, const void *v, socklen_t len)
{
	return setsockopt(fd, SOL_PACKET, opt, v, len) == 0 ? 0 : -errno;
}

/* Where the kernel puts a received frame in a TPACKET_V2 frame without
 * PACKET_RESERVE: after the header and a sockaddr_ll, aligned so that the
 * network header is at a 16-byte boundary. */
static inline uint32_t v2_macoff(uint32_t linktype)
{
	return TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - (linktype == 1 ? ETH_HLEN : 0);
}

/* packet_sock.c */
size_t pm_pkt_sock_map_len(struct pktmap_port *p, struct pkt_priv *pp,
			   uint32_t rx_slots, uint32_t tx_slots);
int pm_pkt_sock_open(struct pktmap_port *p, struct pkt_priv *pp,
		     struct pkt_sock *s, uint32_t rx_slots, uint32_t tx_slots,
		     bool fanout, uint8_t *at);
uint8_t *pm_pkt_reserve_above_pool(struct pktmap_port *p, struct pkt_priv *pp,
				   size_t total);

/* packet_rx.c */
int pm_pkt_rxsync(struct pktmap_port *p, struct pm_kring *k);
bool pm_pkt_rx_ready(struct pkt_sock *s);
uint32_t pm_pkt_rx_queued(struct pkt_sock *s);

/* packet_blocks.c */
int pm_pkt_rxsync_blocks(struct pktmap_port *p, struct pm_kring *k);
int pm_pkt_blocks_setup(struct pktmap_port *p, struct pm_kring *k,
			struct pkt_sock *s, size_t rx_len);
bool pm_pkt_block_ready(struct pkt_sock *s);

/* packet_tx.c */
int pm_pkt_txsync(struct pktmap_port *p, struct pm_kring *k);

/* packet_filter.c */
int pm_pkt_rx_filter(struct pktmap_port *p, const struct sock_filter *insns,
		     unsigned n);
int pm_pkt_rx_direction(struct pktmap_port *p, unsigned dir);

#endif /* PKTMAP_PORTS_PACKET_H */
