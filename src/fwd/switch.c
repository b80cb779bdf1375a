/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch's data path (switch.h): per source ring, one batch is
 * checked, looked up, grouped per destination and copied (or, within a
 * shared region, moved) into the destinations' TX rings; then every
 * destination that got frames is txsync'ed and every port rxsync'ed.
 *
 * Nothing a client can write is followed unchecked: the ring pointers and
 * buffer geometry are read once at attach time; each RX slot is read once
 * into locals and its index and length checked against the port's pool
 * before its buffer is touched (the library's checker has already checked
 * them inside rxsync; this second check costs two compares and keeps the
 * switch safe whatever the back end); a TX slot's buffer index is checked
 * the same way before the copy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fwd.h"
#include "switch.h"
#include "util.h"

/* The switch's clock: coarse milliseconds, wrapping at 2^32. */
static uint32_t sw_now_ms(void)
{
	return (uint32_t)pm_clock_ms(CLOCK_MONOTONIC_COARSE);
}

static inline uint32_t ring_next(uint32_t i, uint32_t n)
{
	return i + 1 == n ? 0 : i + 1;
}

static inline uint32_t ring_add(uint32_t i, uint32_t d, uint32_t n)
{
	i += d;
	return i >= n ? i - n : i;
}

int sw_init(struct sw *s, const struct sw_cfg *cfg)
{
	memset(s, 0, sizeof(*s));
	if (cfg)
		s->cfg = *cfg;
	if (s->cfg.lookup) {
		s->lookup = s->cfg.lookup;
		s->lookup_ctx = s->cfg.lookup_ctx;
	} else {
		s->mac = sw_mac_new(s->cfg.mac_entries ? s->cfg.mac_entries : 4096,
				    s->cfg.aging_ms);
		if (!s->mac) {
			snprintf(s->err, sizeof(s->err),
				 "no memory for the MAC table");
			return -ENOMEM;
		}
		s->lookup = &sw_mac_lookup;
		s->lookup_ctx = s->mac;
	}
	s->now_ms = sw_now_ms();
	s->last_tick_ms = s->now_ms;
	return 0;
}

void sw_fini(struct sw *s)
{
	for (uint32_t i = 0; i < s->nports; i++)
		if (s->port[i])
			sw_detach(s, (uint16_t)i);
	sw_mac_free(s->mac);
	s->mac = NULL;
}

struct sw_port *sw_find(struct sw *s, const char *name)
{
	for (uint32_t i = 0; i < s->nports; i++)
		if (s->port[i] && strcmp(s->port[i]->name, name) == 0)
			return s->port[i];
	return NULL;
}

/* Read a ring's geometry once. */
static void ring_cache(struct sw_ring *r, struct netmap_ring *ring)
{
	r->ring = ring;
	r->base = (char *)ring + ring->buf_ofs;
	r->buf_size = ring->nr_buf_size;
	r->nslots = ring->num_slots;
}

int sw_attach(struct sw *s, struct pktmap_port *p, const char *name,
	      const char *kind, bool own, uint64_t zc_group)
{
	if (sw_find(s, name)) {
		snprintf(s->err, sizeof(s->err), "port '%s' is already attached",
			 name);
		return -EEXIST;
	}
	uint32_t id = 0;
	while (id < SW_MAX_PORTS && s->port[id])
		id++;
	if (id == SW_MAX_PORTS) {
		snprintf(s->err, sizeof(s->err), "the switch has %u ports already",
			 SW_MAX_PORTS);
		return -ENOSPC;
	}
	struct pktmap_info info = { .sz = sizeof(info) };
	int ret = pktmap_info(p, &info);
	if (ret) {
		snprintf(s->err, sizeof(s->err), "%s: %s", name,
			 pktmap_strerror(ret));
		return ret;
	}
	struct sw_port *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	struct netmap_if *nifp = pktmap_nifp(p);
	sp->port = p;
	sp->own = own;
	sp->id = (uint16_t)id;
	sp->zc_group = zc_group;
	sp->nbufs = info.bufs;
	sp->usable = info.buf_usable;
	sp->fd = -1;
	snprintf(sp->name, sizeof(sp->name), "%s", name);
	snprintf(sp->kind, sizeof(sp->kind), "%s", kind ? kind : "port");
	snprintf(sp->attached, sizeof(sp->attached), "%s", info.name);
	if (info.first_rx_ring <= info.last_rx_ring)
		for (uint32_t r = info.first_rx_ring;
		     r <= info.last_rx_ring && sp->nrx < SW_MAX_RINGS; r++)
			ring_cache(&sp->rx[sp->nrx++], NETMAP_RXRING(nifp, r));
	if (info.first_tx_ring <= info.last_tx_ring)
		for (uint32_t r = info.first_tx_ring;
		     r <= info.last_tx_ring && sp->ntx < SW_MAX_RINGS; r++)
			ring_cache(&sp->tx[sp->ntx++], NETMAP_TXRING(nifp, r));
	int fd = pktmap_fd(p);
	sp->fd = fd >= 0 ? fd : -1;
	sp->used = true;
	s->port[id] = sp;
	if (id + 1 > s->nports)
		s->nports = id + 1;
	return (int)id;
}

void sw_detach(struct sw *s, uint16_t id)
{
	if (id >= s->nports || !s->port[id])
		return;
	struct sw_port *sp = s->port[id];
	s->port[id] = NULL;
	if (s->lookup->port_gone)
		s->lookup->port_gone(s->lookup_ctx, id);
	if (sp->own)
		pktmap_close(sp->port);
	free(sp);
	while (s->nports && !s->port[s->nports - 1])
		s->nports--;
}

/* Put the frames on d's list into d's TX rings: copy, or swap buffers
 * when `swap` (source and destination share a pool; only for frames
 * that go to this one destination). Frames that do not fit are dropped
 * and counted on d. */
static void deliver(struct sw_port *d, struct sw_ring *srx, uint32_t first,
		    const struct sw_frame *f, const uint16_t *dst, bool swap)
{
	uint32_t k = 0, nl = d->nlist;
	uint64_t frames = 0, bytes = 0, moved = 0;
	bool refreshed = false;

	for (uint32_t t = 0; t < d->ntx && k < nl; t++) {
		struct sw_ring *tr = &d->tx[d->cur_tx];
		struct netmap_ring *ring = tr->ring;
		uint32_t n = tr->nslots, head = ring->head, tail = ring->tail;
		if (head >= n || tail >= n) {
			/* Not ours to fix: the next txsync reports it. */
			d->cur_tx = d->cur_tx + 1 == d->ntx ? 0 : d->cur_tx + 1;
			continue;
		}
		uint32_t space = tail >= head ? tail - head : tail + n - head;
		if (space < nl - k && !refreshed) {
			/* The tail may lag behind the room there is (a pipe
			 * reloads its reader's index only when asked for more
			 * than it knows of): submit what is there, then sync
			 * once with nothing new, which looks again. */
			refreshed = true;
			if (pktmap_txsync(d->port) == 0 && pktmap_txsync(d->port) == 0) {
				head = ring->head;
				tail = ring->tail;
				if (head >= n || tail >= n)
					continue;
				space = tail >= head ? tail - head : tail + n - head;
			}
		}
		while (space && k < nl) {
			uint32_t i = d->list[k++];
			struct netmap_slot *ts = &ring->slot[head];
			uint32_t len = f[i].len;
			if (swap && dst[i] != SW_FLOOD) {
				struct netmap_slot *rs =
					&srx->ring->slot[ring_add(first, i,
									srx->nslots)];
				uint32_t tidx = ts->buf_idx;
				if (tidx - 2u >= d->nbufs - 2u) {
					d->c.drop_invalid++;
					continue;
				}
				ts->buf_idx = rs->buf_idx;
				rs->buf_idx = tidx;
				rs->flags |= NS_BUF_CHANGED;
				ts->flags = NS_BUF_CHANGED;
				moved++;
			} else {
				uint32_t tidx = ts->buf_idx;
				if (tidx - 2u >= d->nbufs - 2u || len > d->usable) {
					d->c.drop_invalid++;
					continue;
				}
				memcpy(tr->base + (size_t)tidx * tr->buf_size,
				       f[i].buf, len);
				ts->flags = 0;
			}
			ts->len = (uint16_t)len;
			head = ring_next(head, n);
			space--;
			frames++;
			bytes += len;
		}
		ring->head = ring->cur = head;
		if (k < nl)
			d->cur_tx = d->cur_tx + 1 == d->ntx ? 0 : d->cur_tx + 1;
	}
	if (nl != k) {
		d->c.drop_nospace += nl - k;
		pktmap_set_drops(d->port, PKTMAP_DROP_NO_SPACE, d->c.drop_nospace);
	}
	d->c.tx_frames += frames;
	d->c.tx_bytes += bytes;
	d->c.tx_moved += moved;
	d->tx_dirty |= frames != 0;
	d->nlist = 0;
}

/* One batch of one source ring. Returns the frames taken. */
static uint32_t switch_ring(struct sw *s, struct sw_port *sp, struct sw_ring *r)
{
	struct netmap_ring *ring = r->ring;
	uint32_t n = r->nslots, head = ring->head, tail = ring->tail;
	if (head >= n || tail >= n)
		return 0; /* the next rxsync resets and reports the ring */
	uint32_t avail = tail >= head ? tail - head : tail + n - head;
	if (!avail)
		return 0;
	if (avail > SW_BATCH)
		avail = SW_BATCH;

	struct sw_frame f[SW_BATCH];
	uint16_t dst[SW_BATCH];
	uint32_t nf = 0, i = head;
	uint64_t bytes = 0;
	/* Frames are indexed by their distance from head, so that a slot
	 * can be found again for a buffer swap. */
	for (uint32_t k = 0; k < avail; k++, i = ring_next(i, n)) {
		const struct netmap_slot *sl = &ring->slot[i];
		uint32_t idx = sl->buf_idx, len = sl->len, fl = sl->flags;
		f[k].buf = (const uint8_t *)r->base + (size_t)idx * r->buf_size;
		f[k].len = len;
		if (pm_unlikely(idx - 2u >= sp->nbufs - 2u || len < SW_ETH_HLEN ||
				len > sp->usable || (fl & NS_MOREFRAG))) {
			/* Frames spread over slots are not switched. */
			f[k].len = 0;
			dst[k] = SW_FILTER;
			sp->c.drop_invalid++;
			continue;
		}
		bytes += len;
		nf++;
	}
	/* Compact for the lookup only when something was refused. */
	if (pm_likely(nf == avail)) {
		s->lookup->lookup(s->lookup_ctx, f, avail, sp->id, dst, s->now_ms);
	} else {
		struct sw_frame g[SW_BATCH];
		uint16_t gd[SW_BATCH], map[SW_BATCH];
		uint32_t m = 0;
		for (uint32_t k = 0; k < avail; k++)
			if (f[k].len) {
				map[m] = (uint16_t)k;
				g[m++] = f[k];
			}
		if (m)
			s->lookup->lookup(s->lookup_ctx, g, m, sp->id, gd, s->now_ms);
		for (uint32_t k = 0; k < m; k++)
			dst[map[k]] = gd[k];
	}
	sp->c.rx_frames += nf;
	sp->c.rx_bytes += bytes;

	/* Group per destination. */
	struct sw_port *touched[SW_MAX_PORTS];
	uint32_t ntouched = 0;
	for (uint32_t k = 0; k < avail; k++) {
		uint16_t d = dst[k];
		if (d < s->nports && s->port[d] && d != sp->id) {
			struct sw_port *dp = s->port[d];
			if (!dp->nlist)
				touched[ntouched++] = dp;
			dp->list[dp->nlist++] = (uint16_t)k;
		} else if (d == SW_FLOOD) {
			for (uint32_t p = 0; p < s->nports; p++) {
				struct sw_port *dp = s->port[p];
				if (!dp || p == sp->id)
					continue;
				if (!dp->nlist)
					touched[ntouched++] = dp;
				dp->list[dp->nlist++] = (uint16_t)k;
			}
		} else if (d == SW_FILTER || d == sp->id) {
			if (f[k].len) {
				sp->c.filtered++;
				pktmap_set_drops(sp->port, PKTMAP_DROP_FILTERED,
						 sp->c.filtered);
			}
		} else {
			sp->c.drop_unknown++;
		}
	}
	for (uint32_t t = 0; t < ntouched; t++) {
		struct sw_port *dp = touched[t];
		bool swap = sp->zc_group && dp->zc_group == sp->zc_group;
		deliver(dp, r, head, f, dst, swap);
	}
	ring->head = ring->cur = ring_add(head, avail, n);
	return avail;
}

int sw_round(struct sw *s)
{
	uint64_t t0 = fwd_cycles();
	uint32_t moved = 0;
	int ret = 0;

	s->now_ms = sw_now_ms();
	if (!s->cfg.no_tick && s->now_ms - s->last_tick_ms >= 1000) {
		s->last_tick_ms = s->now_ms;
		if (s->lookup->tick)
			s->lookup->tick(s->lookup_ctx, s->now_ms);
	}
	/* Fetch (and release what the last round took), switch, send. */
	for (uint32_t p = 0; p < s->nports; p++) {
		struct sw_port *sp = s->port[p];
		if (!sp || !sp->nrx)
			continue;
		int e = pktmap_rxsync(sp->port);
		if (e) {
			sp->c.sync_errors++;
			if (e != -EPROTO && e != -EINVAL && !ret)
				ret = e;
		}
	}
	for (uint32_t p = 0; p < s->nports; p++) {
		struct sw_port *sp = s->port[p];
		if (!sp)
			continue;
		for (uint32_t r = 0; r < sp->nrx; r++)
			moved += switch_ring(s, sp, &sp->rx[r]);
	}
	for (uint32_t p = 0; p < s->nports; p++) {
		struct sw_port *sp = s->port[p];
		if (!sp || !sp->ntx)
			continue;
		if (pktmap_txsync(sp->port))
			sp->c.sync_errors++;
		sp->tx_dirty = false;
	}
	s->rounds++;
	if (moved) {
		s->busy_cycles += fwd_cycles() - t0;
		s->busy_frames += moved;
	}
	return ret ? ret : (int)moved;
}

int sw_wait(struct sw *s, struct pollfd *extra, unsigned nextra, int timeout_ms)
{
	struct pollfd pfd[SW_MAX_PORTS + 64];
	unsigned n = 0;
	for (unsigned i = 0; i < nextra && n < (sizeof(pfd) / sizeof(pfd[0])); i++)
		pfd[n++] = extra[i];
	for (uint32_t p = 0; p < s->nports && n < (sizeof(pfd) / sizeof(pfd[0])); p++) {
		struct sw_port *sp = s->port[p];
		if (!sp || sp->fd < 0 || !sp->nrx)
			continue;
		pfd[n].fd = sp->fd;
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
	}
	int r = poll(pfd, n, timeout_ms);
	for (unsigned i = 0; i < nextra; i++)
		extra[i].revents = pfd[i].revents;
	return r;
}
