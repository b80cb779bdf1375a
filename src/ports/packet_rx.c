/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt: back end, RX: rxsync's two engines.
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
 */
#include <linux/if_ether.h>
#include <string.h>

#include "copy_sync.h"
#include "packet.h"

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
	pm_rx_done(k, pkts, bytes, last_ts);
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
	pm_rx_done(k, pkts, bytes, last_ts);
	return ret;
}

int pm_pkt_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	if (s->blocks)
		return pm_pkt_rxsync_blocks(p, k);
	return s->v2 ? rxsync_inplace(p, k) : rxsync_copy(p, k);
}

/* Frames the kernel has handed over that rxsync has not taken yet. */
bool pm_pkt_rx_ready(struct pkt_sock *s)
{
	if (s->v2)
		return !s->rx_out[s->rx_cur] &&
		       (status_load(&rx_frame(s, s->rx_cur)->tp_status) &
			TP_STATUS_USER);
	if (s->blocks)
		return pm_pkt_block_ready(s);
	return s->rx_left ||
	       (status_load(&rx_block(s, s->rx_blk)->hdr.bh1.block_status) &
		TP_STATUS_USER);
}

/* Frames in the kernel's ring that rxsync has not taken yet (a filter
 * attached now has not seen them). */
uint32_t pm_pkt_rx_queued(struct pkt_sock *s)
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
	/* In blocks, the blocks still held after a lap are not new. */
	uint32_t nb = s->rx_nblocks - (s->blocks ? s->rx_nfin - s->rx_nret : 0);
	for (uint32_t i = 0; i < nb; i++, b++) {
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
