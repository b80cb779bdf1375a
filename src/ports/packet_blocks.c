// SPDX-License-Identifier: BSD-2-Clause
/*
 * pkt: back end, RX in place in TPACKET_V3 blocks ("rx=blocks",
 * PKTMAP_OPEN_RX_BLOCKS): for readers (the libpcap library, pktmap
 * capture) that hand frames on and never keep or swap them.
 *
 * The socket's RX ring is TPACKET_V3: the kernel packs frames one after
 * the other in blocks (8-byte aligned) and hands a block over when it is
 * full or block-ms after its first frame. The RX ring has a geometry of
 * its own: nr_buf_size 1 and buf_ofs at the first block, so a slot's
 * buf_idx is the byte offset of its frame in the blocks and
 * NETMAP_BUF(ring, idx) is where the kernel wrote it (tp_mac). Nothing is
 * copied; a VLAN tag the kernel took out is put back in place (the 12
 * MAC bytes move 4 bytes back into the header's gap, as libpcap does).
 *
 *   block: [ desc | tpacket3_hdr sockaddr_ll .. frame | tpacket3_hdr .. frame | ... ]
 *                                              ^ NETMAP_BUF(ring, slot->buf_idx)
 *
 * A block goes back to the kernel (TP_STATUS_KERNEL) once every frame of
 * it was handed out (or dropped) and the application released the slots
 * (head moved past them), blocks in the order the kernel filled them. The
 * kernel fills blocks in order too: a block still held stops it there and
 * what arrives meanwhile is dropped (drop_backend, PACKET_STATISTICS).
 *
 * A slot released with another buffer index than the frame it was given
 * (NS_BUF_CHANGED: a swap) is refused in one line; its frame goes back
 * with its block all the same and the index the application left is not
 * taken.
 */
#include <linux/if_ether.h>
#include <stdlib.h>
#include <string.h>

#include "copy_sync.h"
#include "packet.h"

/* Give back, in order, the blocks before the upto-th finished one. */
static void blocks_return(struct pkt_sock *s, uint32_t upto)
{
	while ((int32_t)(upto - s->rx_nret) > 0) {
		struct tpacket_block_desc *bd = rx_block(s, s->rx_ret);
		status_store(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL);
		s->rx_ret = s->rx_ret + 1 == s->rx_nblocks ? 0 : s->rx_ret + 1;
		s->rx_nret++;
	}
}

/* Release [hwcur, head): each slot must still hold the frame rxsync put
 * there. Returns 0, or -EINVAL when one did not (counted, one line); the
 * blocks go back either way. */
static int blocks_release(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, head = k->rhead;
	int ret = 0;

	if (head == k->hwcur)
		return 0;
	for (uint32_t i = k->hwcur; i != head; i = i + 1 == n ? 0 : i + 1) {
		uint32_t idx = PM_READ_ONCE(ring->slot[i].buf_idx);
		if (pm_likely(idx == s->rx_dlv[i]))
			continue;
		pm_stat_add(&k->st->drop_invalid, 1);
		pm_log_ratelimited(p, pm_rl_slot(p, 0),
				   "%s: RX ring %u slot %u: buffer %u is not the "
				   "frame it was given (%u): RX slots of rx=blocks "
				   "take no other buffer (NS_BUF_CHANGED); open the "
				   "port with @conf:rx=frames to swap buffers",
				   p->name, ring->ringid, i, idx, s->rx_dlv[i]);
		ret = -EINVAL;
	}
	blocks_return(s, s->rx_upto[head == 0 ? n - 1 : head - 1]);
	k->hwcur = head;
	return ret;
}

/* The block being read is done: it may go back once the last slot handed
 * out so far is released (now, when none is out). j: the next slot. */
static void block_finish(struct pkt_sock *s, struct pm_kring *k, uint32_t j)
{
	s->rx_left = 0;
	s->rx_nfin++;
	s->rx_blk = s->rx_blk + 1 == s->rx_nblocks ? 0 : s->rx_blk + 1;
	if (j != k->hwcur)
		s->rx_upto[j == 0 ? k->nslots - 1 : j - 1] = s->rx_nfin;
	else
		blocks_return(s, s->rx_nfin);
}

/* The next block, if the kernel has handed it over and it is not one the
 * application still holds (after a whole lap). Returns 1 with rx_hdr at
 * its first frame, 0 when it was empty or malformed (finished), -1 when
 * there is none. */
static int block_open(struct pkt_sock *s, struct pm_kring *k, uint32_t j)
{
	if (s->rx_nfin - s->rx_nret >= s->rx_nblocks)
		return -1;
	struct tpacket_block_desc *bd = rx_block(s, s->rx_blk);
	if (!(status_load(&bd->hdr.bh1.block_status) & TP_STATUS_USER))
		return -1;
	uint32_t np = bd->hdr.bh1.num_pkts;
	uint32_t off = bd->hdr.bh1.offset_to_first_pkt;
	if (np == 0 || off < sizeof(*bd) ||
	    off > s->rx_bsize - sizeof(struct tpacket3_hdr)) {
		block_finish(s, k, j);
		return 0;
	}
	s->rx_left = np;
	s->rx_hdr = (struct tpacket3_hdr *)((uint8_t *)bd + off);
	return 1;
}

/* The frame under h, checked against its block (an application may
 * have written anywhere in the blocks), its VLAN tag put back. Returns
 * its first byte with *len, or NULL with the counter it goes to. */
static uint8_t *frame_take(struct pkt_sock *s, struct pm_kring *k,
			   struct tpacket3_hdr *h, uint32_t *len)
{
	const uint8_t *end = (const uint8_t *)rx_block(s, s->rx_blk) + s->rx_bsize;
	uint32_t mac = h->tp_mac, snap = h->tp_snaplen, st = h->tp_status;
	uint8_t *f = (uint8_t *)h + mac;
	bool vlan = (st & TP_STATUS_VLAN_VALID) && snap >= 12;

	/* 16 bytes before the frame are the application's (a pcap record
	 * header), past the tpacket3_hdr: the kernel leaves at least 20
	 * (its sockaddr_ll), 16 once a tag is put back. */
	if (pm_unlikely(mac < sizeof(*h) + 16 + 4 ||
			mac > (size_t)(end - (const uint8_t *)h) ||
			snap > (size_t)(end - f))) {
		pm_stat_add(&k->st->drop_backend, 1);
		return NULL;
	}
	if (pm_unlikely(snap < h->tp_len || snap + (vlan ? 4 : 0) > 65535)) {
		pm_stat_add(&k->st->drop_too_long, 1); /* the kernel cut it */
		return NULL;
	}
	if (pm_unlikely(vlan)) {
		/* As libpcap does: the wire's frame, tag after the MACs. */
		uint16_t tpid = (st & TP_STATUS_VLAN_TPID_VALID) &&
					h->hv1.tp_vlan_tpid ?
				h->hv1.tp_vlan_tpid : ETH_P_8021Q;
		uint16_t tci = (uint16_t)h->hv1.tp_vlan_tci;
		memmove(f - 4, f, 12);
		f[8] = (uint8_t)(tpid >> 8), f[9] = (uint8_t)tpid;
		f[10] = (uint8_t)(tci >> 8), f[11] = (uint8_t)tci;
		f -= 4;
		snap += 4;
	}
	*len = snap;
	return f;
}

/* On to the next frame of the block, or finish the block. */
static void frame_next(struct pkt_sock *s, struct pm_kring *k,
		       struct tpacket3_hdr *h, uint32_t j)
{
	uint32_t next = h->tp_next_offset;
	const uint8_t *end = (const uint8_t *)rx_block(s, s->rx_blk) + s->rx_bsize;
	if (--s->rx_left && next >= sizeof(*h) &&
	    next <= (size_t)(end - (const uint8_t *)h) - sizeof(*h)) {
		s->rx_hdr = (struct tpacket3_hdr *)((uint8_t *)h + next);
		return;
	}
	block_finish(s, k, j); /* the last frame, or a malformed offset */
}

/* RX in blocks: release what the application is done with (blocks go
 * back in order), then point the free slots at the frames of the blocks
 * the kernel has handed over. */
int pm_pkt_rxsync_blocks(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct netmap_ring *ring = k->ring;
	int ret = blocks_release(p, k);
	uint32_t n = k->nslots, j = k->hwtail;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, j, n);
	uint64_t pkts = 0, bytes = 0, last_ts = 0;

	while (space) {
		if (s->rx_left == 0) {
			int r = block_open(s, k, j);
			if (r < 0)
				break;
			if (r == 0)
				continue;
		}
		struct tpacket3_hdr *h = s->rx_hdr;
		uint32_t len;
		/* The frames after this one into the cache meanwhile: the
		 * kernel wrote them on another core, one after the other,
		 * and each header says where the next one starts. */
		__builtin_prefetch((uint8_t *)h + 384);
		uint8_t *f = frame_take(s, k, h, &len);
		if (pm_likely(f != NULL)) {
			struct netmap_slot *sl = &ring->slot[j];
			uint64_t ts = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec;
			uint32_t idx = (uint32_t)(f - s->rx);
			sl->buf_idx = idx;
			sl->len = (uint16_t)len;
			sl->flags = 0;
			sl->ptr = ts;
			s->rx_dlv[j] = idx;
			s->rx_upto[j] = s->rx_nfin; /* the blocks before this one */
			j = j + 1 == n ? 0 : j + 1;
			space--;
			pkts++;
			bytes += len;
			last_ts = ts;
		}
		frame_next(s, k, h, j);
	}
	k->hwtail = j;
	pm_rx_done(k, pkts, bytes, last_ts);
	return ret;
}

/* A block handed over that rxsync has not read yet (or one being read). */
bool pm_pkt_block_ready(struct pkt_sock *s)
{
	if (s->rx_left)
		return true;
	if (s->rx_nfin - s->rx_nret >= s->rx_nblocks)
		return false; /* every block is the application's */
	return status_load(&rx_block(s, s->rx_blk)->hdr.bh1.block_status) &
	       TP_STATUS_USER;
}

/* The RX ring of a socket in blocks: its own geometry (stride 1 from the
 * first block), the slot bookkeeping, what the checker allows (a monitor
 * reads the slots: any offset in the blocks; the map has PKT_BLK_SLACK
 * readable bytes after it, so a len up to 65535 stays in it). */
int pm_pkt_blocks_setup(struct pktmap_port *p, struct pm_kring *k,
			struct pkt_sock *s, size_t rx_len)
{
	(void)p;
	s->rx_dlv = calloc(k->nslots, sizeof(*s->rx_dlv));
	s->rx_upto = calloc(k->nslots, sizeof(*s->rx_upto));
	if (!s->rx_dlv || !s->rx_upto)
		return -ENOMEM;
	pm_ring_set_bufs(k->ring, s->rx, 1);
	s->rx_bs = (struct pm_bufspace){
		.nbufs = 2, /* none of the region's */
		.usable = 65535,
		.ext_lo = (uint32_t)sizeof(struct tpacket_block_desc),
		.ext_n = (uint32_t)(rx_len - sizeof(struct tpacket_block_desc)),
	};
	k->bs = &s->rx_bs;
	return 0;
}
