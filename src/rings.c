// SPDX-License-Identifier: BSD-2-Clause
/*
 * A port's rings, below the back ends: the private netmap_if and rings
 * every open lays out (pm_port_make_rings), and, for back ends that own
 * their rings alone, the buffers that fill them (pm_port_own_rings) and
 * their return at close (pm_port_own_rings_put).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "log.h"
#include "name.h"
#include "port.h"
#include "region.h"
#include "util.h"

/* The netmap structures have const fields (read-only to applications);
 * the library writes them through this mirror of their layout. */
struct pm_ring_rw {
	int64_t buf_ofs;
	uint32_t num_slots;
	uint32_t nr_buf_size;
	uint16_t ringid;
	uint16_t dir;
	uint32_t head, cur, tail, flags;
	struct timeval ts;
	uint64_t offset_mask;
	uint64_t buf_align;
};

struct pm_if_rw {
	char ni_name[IFNAMSIZ];
	uint32_t ni_version, ni_flags, ni_tx_rings, ni_rx_rings;
	uint32_t ni_bufs_head, ni_host_tx_rings, ni_host_rx_rings;
	uint32_t ni_spare1[3];
	ssize_t ring_ofs[];
};

_Static_assert(offsetof(struct pm_ring_rw, buf_align) ==
		       offsetof(struct netmap_ring, buf_align), "ring mirror");
_Static_assert(offsetof(struct pm_if_rw, ring_ofs) ==
		       offsetof(struct netmap_if, ring_ofs), "if mirror");

void pm_ring_set_bufs(struct netmap_ring *ring, const void *base,
		      uint32_t stride)
{
	struct pm_ring_rw *rw = (struct pm_ring_rw *)ring;
	rw->nr_buf_size = stride;
	rw->buf_ofs = (int64_t)((const char *)base - (const char *)ring);
}

int pm_port_make_rings(struct pktmap_port *p, const char *ifname,
		       uint32_t ntx, uint32_t nrx, uint32_t nhtx, uint32_t nhrx,
		       uint32_t tx_slots, uint32_t rx_slots)
{
	const struct pm_region *r = &p->region;
	uint32_t nrings = ntx + nhtx + nrx + nhrx;
	size_t pos = pm_nifp_size(ntx, nrx, nhtx, nhrx);
	size_t size = pos + (size_t)(ntx + nhtx) * pm_ring_size(tx_slots) +
		      (size_t)(nrx + nhrx) * pm_ring_size(rx_slots);
	size = (size + 4095) & ~(size_t)4095;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return pm_open_error(p, -errno, "cannot map %zu bytes for the "
				     "rings: %s", size, strerror(errno));
	p->ringmem = mem;
	p->ringmem_size = size;
	p->krings = calloc(nrings ? nrings : 1, sizeof(*p->krings));
	if (!p->krings)
		return -ENOMEM;
	p->ntx = ntx;
	p->nrx = nrx;
	p->nhtx = nhtx;
	p->nhrx = nhrx;

	struct pm_if_rw *nif = mem;
	snprintf(nif->ni_name, sizeof(nif->ni_name), "%s", ifname);
	nif->ni_version = NETMAP_API;
	nif->ni_tx_rings = ntx;
	nif->ni_rx_rings = nrx;
	nif->ni_host_tx_rings = nhtx;
	nif->ni_host_rx_rings = nhrx;
	for (uint32_t i = 0; i < nrings; i++) {
		uint32_t tx = i < ntx + nhtx;
		uint32_t slots = tx ? tx_slots : rx_slots;
		struct pm_ring_rw *ring = (struct pm_ring_rw *)((char *)nif + pos);
		nif->ring_ofs[i] = (ssize_t)pos;
		ring->num_slots = slots;
		ring->nr_buf_size = r->buf_size;
		/* Signed: the pool is wherever the region is mapped. */
		ring->buf_ofs = (int64_t)((r->pool + r->headroom) - (char *)ring);
		ring->ringid = (uint16_t)(tx ? i : i - ntx - nhtx);
		ring->dir = tx ? NR_TX : NR_RX;
		ring->head = ring->cur = 0;
		ring->tail = tx ? slots - 1 : 0;

		struct pm_kring *k = &p->krings[i];
		k->ring = (struct netmap_ring *)ring;
		k->nslots = slots;
		k->id = i;
		k->tx = tx;
		k->host = tx ? i >= ntx : i >= ntx + nhtx + nrx;
		k->sync = tx ? p->ops->txsync : p->ops->rxsync;
		k->hwcur = k->rhead = k->rcur = 0;
		k->hwtail = k->rtail = ring->tail;
		pos += pm_ring_size(slots);
	}
	p->nifp = (struct netmap_if *)nif;
	if (pm_pub_open(p) != 0)
		return pm_open_error(p, -ENOMEM, "cannot map a page for the "
				     "counters");
	return 0;
}

int pm_port_own_rings(struct pktmap_port *p, const struct pm_conf *c,
		      const char *tag, const char *ifname, uint32_t ntx,
		      uint32_t nrx, uint32_t txs, uint32_t rxs)
{
	(void)tag; /* the rings are private now: no region object to name */
	char err[300];
	/* RX slots the back end points elsewhere (pkt:'s blocks) take no
	 * buffer of the region. */
	uint32_t rx_bufs = c->rx_no_bufs ? 0 : nrx * rxs;
	struct pm_region_params rp = {
		.bufs = 2 + ntx * txs + rx_bufs + c->extra_bufs + 64,
		.buf_size = c->buf_size,
		.obj_size = 4096,
		.hugepages = c->hugepages,
		/* A region shared by choice may also host AF_XDP ports. */
		.headroom = c->headroom ? c->headroom :
			    c->region[0] ? PM_XDP_HEADROOM : 0,
		.share = c->share,
		.share_gid = c->share_gid,
		.ring_bytes = ntx * pm_ring_size(txs) + nrx * pm_ring_size(rxs) +
			      pm_nifp_size(ntx, nrx, 0, 0),
	};
	if (c->bufs > rp.bufs)
		rp.bufs = c->bufs;
	int ret = pm_region_open(&p->region, c->region[0] ? c->region : NULL, &rp,
				 err, sizeof(err));
	if (ret)
		return pm_open_error(p, ret, "%s", err);

	struct pm_region *r = &p->region;
	ret = pm_port_make_rings(p, ifname, ntx, nrx, 0, 0, txs, rxs);
	if (ret)
		return ret;
	/* From here, pktmap_open()'s failure path gives back what the
	 * slots hold (slots not filled yet hold buffer 0: nothing). */
	p->own_rings = true;
	uint32_t total = ntx * txs + rx_bufs, k = 0;
	uint32_t *idx = malloc((size_t)(total ? total : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	pm_region_lock(r);
	ret = pm_region_alloc_bufs(r, idx, total);
	uint32_t free_bufs = pm_region_free_count(r);
	pm_region_unlock(r);
	if (ret) {
		free(idx);
		return pm_open_error(p, -ENOMEM,
				     "region '%s' has no room for the rings (%u "
				     "buffers needed, %u free)", r->name, total,
				     free_bufs);
	}
	for (uint32_t i = 0; i < (rx_bufs ? ntx + nrx : ntx); i++) {
		struct pm_kring *kr = &p->krings[i];
		for (uint32_t s = 0; s < kr->nslots; s++)
			kr->ring->slot[s].buf_idx = idx[k++];
	}
	free(idx);
	return 0;
}

/* Give the buffers of a port's own rings back to a shared region (a
 * private region dies with the port and needs nothing). Each index is
 * checked and given back once, whatever the application left in the
 * slots. */
void pm_port_own_rings_put(struct pktmap_port *p)
{
	struct pm_region *r = &p->region;
	if (!r->named || !p->krings)
		return;
	const struct pm_bufspace bs = { .nbufs = r->nbufs };
	uint8_t *seen = calloc((r->nbufs + 7) / 8, 1);
	if (!seen)
		return;
	uint32_t batch[256], k = 0;
	uint32_t n = p->ntx + p->nhtx + p->nrx + p->nhrx;
	pm_region_lock(r);
	for (uint32_t i = 0; i < n; i++) {
		struct netmap_ring *ring = p->krings[i].ring;
		for (uint32_t s = 0; s < p->krings[i].nslots; s++) {
			uint32_t b = ring->slot[s].buf_idx;
			if (!pm_buf_ok(&bs, b) || (seen[b / 8] & (1u << (b % 8))))
				continue;
			seen[b / 8] |= (uint8_t)(1u << (b % 8));
			batch[k++] = b;
			if (k == PM_ARRAY_SIZE(batch)) {
				pm_region_free_bufs(r, batch, k);
				k = 0;
			}
			ring->slot[s].buf_idx = 0;
		}
	}
	pm_region_free_bufs(r, batch, k);
	pm_region_unlock(r);
	free(seen);
}
