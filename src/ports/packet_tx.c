/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt: back end, TX (both RX modes): a TX ring of fixed frames:
 * txsync copies each submitted packet into a free frame, marks it
 * TP_STATUS_SEND_REQUEST and kicks the kernel with one
 * sendto(MSG_DONTWAIT) per sync. PACKET_QDISC_BYPASS hands frames straight
 * to the driver. Sent frames come back (TP_STATUS_AVAILABLE) and are
 * reaped in later syncs; the TX ring's tail reflects the free frames, so a
 * full kernel ring is backpressure, not loss.
 *
 *     TX ring:   hwcur ......... head            (slots to copy out)
 *     frames:    reap [in flight: SEND_REQUEST/SENDING) fill [free ...)
 *
 * tx=frames (docs/packet.md): nothing is copied. TX slot i's buffer is
 * the kernel's frame i, written by the application where the kernel
 * reads it, so fill == hwcur always: every slot txsync takes hands its
 * frame to the kernel, in order, and the slots the application gets back
 * are those whose frames the kernel is done with. A slot that cannot go
 * (a swapped buffer, a bad length, a chain's later slots) sends its frame
 * empty, which the kernel skips (PACKET_LOSS: shorter than a link
 * header); a chain is joined into its first slot's frame.
 */
#include <linux/if_ether.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>

#include "copy_sync.h"
#include "packet.h"

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

/* Would the kernel skip this frame of flen bytes at dst silently? Above
 * the MTU and not VLAN-tagged (the MTU read again first; such a frame
 * has its Ethernet type at dst[12]). */
static bool above_mtu(struct pktmap_port *p, struct pkt_priv *pp,
		      const uint8_t *dst, uint32_t flen)
{
	return flen > pp->mtu + ETH_HLEN &&
	       flen > pkt_refresh_mtu(p, pp) + ETH_HLEN &&
	       !((dst[12] == 0x81 && dst[13] == 0x00) ||
		 (dst[12] == 0x88 && dst[13] == 0xa8));
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

/* Hand frame f to the kernel with `len` bytes (tx=frames: 0 sends it
 * empty, which the kernel skips). */
static inline void frame_queue(struct pkt_sock *s, uint32_t f, uint32_t len)
{
	tx_set_len(s, f, len);
	status_store(tx_status(s, f), TP_STATUS_SEND_REQUEST);
	s->tx_inflight++;
}

/* By copy: hand the frame just written at tx_fill to the kernel. */
static inline void tx_queue(struct pkt_sock *s, uint32_t flen)
{
	frame_queue(s, s->tx_fill, flen);
	s->tx_fill = s->tx_fill + 1 == s->tx_nframes ? 0 : s->tx_fill + 1;
}

/* One frame from slot i, a chain joined, into the free kernel frame:
 * queued, or refused (bad slots, too long, too short) and counted.
 * Returns the slot after it, or i when the rest of the chain is not
 * submitted yet. `*flen` is the length queued, 0 if none. */
static uint32_t tx_copy_frame(struct pktmap_port *p, struct pm_kring *k,
			      uint32_t i, uint32_t head, uint32_t *flenp)
{
	struct pkt_sock *s = k->priv;
	struct pkt_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, e;
	*flenp = 0;
	if (!pm_tx_chain_end(ring, i, head, n, &e))
		return i; /* the rest of the chain is not submitted yet */
	uint8_t *dst = tx_frame(s, s->tx_fill) + s->tx_off;
	uint32_t flen = 0;
	bool drop = false, invalid = false;
	for (uint32_t x = i; x != e; x = x + 1 == n ? 0 : x + 1) {
		uint32_t idx, len;
		if (pm_unlikely(!pm_tx_slot_take(p, k, x, &idx, &len))) {
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
	if (invalid)
		return e; /* counted by pm_slot_reject */
	/* What the kernel would refuse (it would skip the frame silently):
	 * frames above the MTU that are not VLAN-tagged, and frames shorter
	 * than an Ethernet header. */
	if (!drop && above_mtu(p, pp, dst, flen))
		drop = true;
	if (drop) {
		pm_stat_add(&k->st->drop_too_long, 1);
		return e;
	}
	if (flen < ETH_HLEN && p->linktype == 1) {
		pm_stat_add(&k->st->drop_invalid, 1);
		pm_log_ratelimited(p, &p->rl_slot, "%s: TX ring %u: frame of "
				   "%u bytes is shorter than an Ethernet "
				   "header: dropped", p->name, ring->ringid, flen);
		return e;
	}
	tx_queue(s, flen);
	*flenp = flen;
	return e;
}

/* tx=frames: the frame of slot i after anything but one valid frame in
 * its own buffer: a chain joined into the first slot's frame, or
 * refused; the chain's other frames go out empty. Returns the slot after
 * the chain, or i when the rest of it is not submitted yet. `*flenp` is
 * the length queued, 0 if none. */
static uint32_t tx_frames_slow(struct pktmap_port *p, struct pm_kring *k,
			       uint32_t i, uint32_t head, uint32_t *flenp)
{
	struct pkt_sock *s = k->priv;
	struct pkt_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, e, flen = 0;
	bool drop = false, invalid = false;
	*flenp = 0;
	if (!pm_tx_chain_end(ring, i, head, n, &e))
		return i;
	uint8_t *dst = tx_frame(s, i) + s->tx_off;
	for (uint32_t x = i; x != e; x = x + 1 == n ? 0 : x + 1) {
		struct netmap_slot *sl = &ring->slot[x];
		uint32_t idx = PM_READ_ONCE(sl->buf_idx);
		uint32_t len = PM_READ_ONCE(sl->len);
		if (pm_unlikely(idx != s->tx_base + x)) {
			/* A swap: the slot gets its own frame back. */
			pm_stat_add(&k->st->drop_invalid, 1);
			pm_log_ratelimited(p, &p->rl_slot, "%s: TX ring %u slot "
					   "%u: buffer %u is not the slot's own "
					   "(tx=frames: no swapping; open with "
					   "@conf:tx=copy to swap): slot dropped",
					   p->name, ring->ringid, x, idx);
			sl->buf_idx = s->tx_base + x;
			sl->flags |= NS_BUF_CHANGED;
			invalid = true;
		} else if (pm_unlikely(pm_desc_check(&p->bs, len) != PM_SLOT_OK)) {
			pm_slot_reject(p, k, x, idx, len, PM_SLOT_BAD_LEN);
			invalid = true;
		} else if (invalid || drop || flen + len > s->tx_cap) {
			drop = true; /* no more copying */
		} else {
			if (x != i)
				memcpy(dst + flen, tx_frame(s, x) + s->tx_off, len);
			flen += len;
		}
		if (x != i)
			frame_queue(s, x, 0); /* the chain's others: skipped */
	}
	/* Refused slots are counted already; then, as tx_copy_frame(), what
	 * the kernel would skip silently. */
	if (invalid) {
		flen = 0;
	} else if (drop || above_mtu(p, pp, dst, flen)) {
		pm_stat_add(&k->st->drop_too_long, 1);
		flen = 0;
	} else if (flen < ETH_HLEN) {
		pm_stat_add(&k->st->drop_invalid, 1);
		flen = 0;
	}
	frame_queue(s, i, flen);
	*flenp = flen;
	return e;
}

/* tx=frames: hand the submitted slots' frames to the kernel in place
 * (the common one, one valid slot of at most `most` bytes, inline).
 * Returns the slot it stopped at; the frame after it is the next to
 * fill. */
static uint32_t txsync_frames(struct pktmap_port *p, struct pm_kring *k,
			      uint32_t most, uint64_t *pktsp, uint64_t *bytesp)
{
	struct pkt_sock *s = k->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	uint64_t pkts = 0, bytes = 0;
	while (i != head) {
		const struct netmap_slot *sl = &ring->slot[i];
		uint32_t idx = PM_READ_ONCE(sl->buf_idx);
		uint32_t len = PM_READ_ONCE(sl->len), flen;
		if (pm_likely(idx == s->tx_base + i &&
			      !(PM_READ_ONCE(sl->flags) & NS_MOREFRAG) &&
			      len >= ETH_HLEN && len <= most)) {
			frame_queue(s, i, len);
			pkts++;
			bytes += len;
			i = i + 1 == n ? 0 : i + 1;
			continue;
		}
		uint32_t e = tx_frames_slow(p, k, i, head, &flen);
		if (e == i)
			break;
		pkts += flen != 0;
		bytes += flen;
		i = e;
	}
	s->tx_fill = i; /* slot i is frame i */
	*pktsp = pkts;
	*bytesp = bytes;
	return i;
}

/* By copy: submitted packets (chains joined) into free kernel frames,
 * the common one (one valid slot, an Ethernet frame of at most `most`
 * bytes) inline, anything else through tx_copy_frame(). Returns the slot
 * it stopped at. */
static uint32_t txsync_copy(struct pktmap_port *p, struct pm_kring *k,
			    uint32_t most, uint64_t *pktsp, uint64_t *bytesp)
{
	struct pkt_sock *s = k->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	uint64_t pkts = 0, bytes = 0;
	while (i != head && s->tx_inflight < s->tx_nframes) {
		const struct netmap_slot *sl = &ring->slot[i];
		uint32_t idx = PM_READ_ONCE(sl->buf_idx);
		uint32_t len = PM_READ_ONCE(sl->len), flen;
		if (pm_likely(!(PM_READ_ONCE(sl->flags) & NS_MOREFRAG) &&
			      pm_slot_check(&p->bs, idx, len, 1) == PM_SLOT_OK &&
			      len >= ETH_HLEN && len <= most)) {
			memcpy(tx_frame(s, s->tx_fill) + s->tx_off,
			       pm_region_buf(&p->region, idx), len);
			tx_queue(s, len);
			pkts++;
			bytes += len;
			i = i + 1 == n ? 0 : i + 1;
			continue;
		}
		uint32_t e = tx_copy_frame(p, k, i, head, &flen);
		if (e == i)
			break;
		pkts += flen != 0;
		bytes += flen;
		i = e;
	}
	*pktsp = pkts;
	*bytesp = bytes;
	return i;
}

/* Move the submitted packets into the kernel's frames (in place with
 * tx=frames, else by copy), kick the kernel once, and offer as many
 * slots as there are free frames. */
int pm_pkt_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pkt_sock *s = k->priv;
	struct pkt_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots;
	uint64_t pkts, bytes;
	int ret = 0;

	tx_reap(k, s);
	const uint32_t most = s->tx_cap < pp->mtu + ETH_HLEN ?
			      s->tx_cap : pp->mtu + ETH_HLEN;
	k->hwcur = pp->tx_frames ? txsync_frames(p, k, most, &pkts, &bytes) :
				   txsync_copy(p, k, most, &pkts, &bytes);
	pm_count(k, pkts, bytes);

	/* Kick when the newest frame has not been taken yet (new frames, or
	 * frames a busy device refused last time). */
	s->tx_refused = false;
	if (s->tx_inflight) {
		uint32_t last = s->tx_fill ? s->tx_fill - 1 : s->tx_nframes - 1;
		if (status_load(tx_status(s, last)) & TP_STATUS_SEND_REQUEST) {
			/* ENOBUFS: the device queue is busy, the frame stays
			 * queued for the next kick. ENETDOWN: the same until
			 * the link is up again (backpressure, not an error). */
			int err = sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 ?
				  errno : 0;
			s->tx_refused = err == ENETDOWN || err == ENOBUFS;
			if (err && err != ENOBUFS && err != EAGAIN && err != EINTR) {
				if (err != ENETDOWN)
					ret = -err;
				pm_log_ratelimited(p, &p->rl_ring, "%s: TX ring %u: "
						   "send failed: %s%s", p->name,
						   ring->ringid, strerror(err),
						   err == ENETDOWN ?
						   ": frames wait for the link" : "");
			}
			tx_reap(k, s);
		}
	}
	uint32_t busy = s->tx_inflight < n - 1 ? s->tx_inflight : n - 1;
	k->hwtail = pm_ring_add(k->hwcur, n - 1 - busy, n);
	return ret;
}
