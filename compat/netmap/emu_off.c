/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The emulation's buffer offsets (NETMAP_REQ_OPT_OFFSETS).
 *
 * The low bits of slot->ptr (ring->offset_mask) say where a packet starts
 * in its buffer. pktmap's back ends move packets that start at the
 * buffer's first byte, so the emulation moves the bytes at each sync: a
 * TX packet from its offset down to the start before the txsync, an RX
 * packet up to the offset the program left in that slot after the rxsync.
 * A copy, paid only by programs that ask for offsets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

struct nme_off_ring {
	struct netmap_ring *ring;
	/* The ring's layout as it was set up: the program can write the
	 * ring's num_slots, buf_ofs and nr_buf_size, so they are not read
	 * back from it. */
	uint32_t nslots;
	char *bufs;      /* buffer 0 */
	uint32_t stride; /* bytes from one buffer to the next */
	bool tx;
	uint32_t done;   /* TX: moved down up to here; RX: offsets read to here */
	uint32_t seen;   /* RX: moved up to here */
	uint64_t *want;  /* RX: the offset the program set, per slot */
};

struct nme_off {
	uint64_t mask;
	uint64_t max;    /* the largest offset (nro_max_offset) */
	uint32_t usable; /* bytes from NETMAP_BUF() a buffer holds */
	uint32_t bufs;   /* buffer indices 2 .. bufs-1 are the region's */
	uint32_t n;
	struct nme_off_ring r[];
};

static uint32_t off_next(const struct nme_off_ring *r, uint32_t i)
{
	return i + 1 == r->nslots ? 0 : i + 1;
}

static char *off_buf(const struct nme_off_ring *r, uint32_t idx)
{
	return r->bufs + (size_t)idx * r->stride;
}

/* Is idx a buffer of the region (the checker's rule)? */
static bool off_buf_ok(const struct nme_off *o, uint32_t idx)
{
	return idx - 2u < o->bufs - 2u;
}

/* Before a txsync: packets in [done, head) move to the buffer's start.
 * Each slot is the program's to write until the sync: its values are
 * read once and checked before a byte moves. A slot that names no
 * buffer of the region stays as it is, for the sync's checker to
 * refuse; one whose packet ends past its buffer gets len 0, which the
 * checker drops. */
void nme_off_tx(struct nme_file *f)
{
	struct nme_off *o = f->off;
	for (uint32_t k = 0; o && k < o->n; k++) {
		struct nme_off_ring *r = &o->r[k];
		struct netmap_ring *ring = r->ring;
		uint32_t head = ring->head;
		if (!r->tx || head >= r->nslots)
			continue;
		for (uint32_t i = r->done; i != head; i = off_next(r, i)) {
			struct netmap_slot *s = &ring->slot[i];
			uint64_t at = s->ptr & o->mask;
			uint32_t len = s->len, idx = s->buf_idx;
			if (!at || !off_buf_ok(o, idx))
				continue;
			if (at > o->max || len > o->usable - at) {
				s->len = 0; /* past the buffer: the checker drops it */
				continue;
			}
			char *b = off_buf(r, idx);
			memmove(b, b + at, len);
		}
		r->done = head;
	}
}

/* Before an rxsync: remember the offsets the program set in the slots it
 * gives back. */
void nme_off_rx_pre(struct nme_file *f)
{
	struct nme_off *o = f->off;
	for (uint32_t k = 0; o && k < o->n; k++) {
		struct nme_off_ring *r = &o->r[k];
		struct netmap_ring *ring = r->ring;
		uint32_t head = ring->head;
		if (r->tx || head >= r->nslots)
			continue;
		for (uint32_t i = r->done; i != head; i = off_next(r, i))
			r->want[i] = ring->slot[i].ptr & o->mask;
		r->done = head;
	}
}

/* After an rxsync: new packets in [seen, tail) move up to their offset. */
void nme_off_rx_post(struct nme_file *f)
{
	struct nme_off *o = f->off;
	for (uint32_t k = 0; o && k < o->n; k++) {
		struct nme_off_ring *r = &o->r[k];
		struct netmap_ring *ring = r->ring;
		uint32_t tail = ring->tail;
		if (r->tx || tail >= r->nslots)
			continue;
		for (uint32_t i = r->seen; i != tail; i = off_next(r, i)) {
			struct netmap_slot *s = &ring->slot[i];
			uint64_t at = r->want[i];
			uint32_t len = s->len, idx = s->buf_idx;
			if (at && at <= o->max && len <= o->usable - at &&
			    off_buf_ok(o, idx)) {
				char *b = off_buf(r, idx);
				memmove(b + at, b, len);
			} else {
				at = 0; /* no room past it: the packet stays first */
			}
			s->ptr = (s->ptr & ~o->mask) | at;
		}
		r->seen = tail;
	}
}

/* The largest frame an offset must leave room for, and the largest
 * buffer a region gives (emu_name.c asks for one that fits). */
#define NME_OFF_FRAME 1514u
#define NME_OFF_BUF_MAX 65536u

static uint64_t off_mask(uint32_t bits)
{
	return bits == 0 || bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

int nme_off_check(struct nmreq_opt_offsets *opt, const char *name)
{
	uint32_t bits = opt->nro_offset_bits;
	if (bits > 64)
		return nme_fail(EINVAL, "%s: offsets of %u bits (at most 64)", name,
				bits);
	if (opt->nro_max_offset < opt->nro_initial_offset)
		opt->nro_max_offset = opt->nro_initial_offset;
	if (opt->nro_max_offset > off_mask(bits))
		return nme_fail(EINVAL, "%s: offsets up to %llu do not fit in %u bits",
				name, (unsigned long long)opt->nro_max_offset,
				bits);
	if (opt->nro_max_offset > NME_OFF_BUF_MAX - NME_OFF_FRAME)
		return nme_fail(EINVAL, "%s: offsets up to %llu leave no room for a "
				"%u-byte frame in a buffer (at most %u bytes)", name,
				(unsigned long long)opt->nro_max_offset,
				NME_OFF_FRAME, NME_OFF_BUF_MAX);
	return 0;
}

/* Set up offsets for f's bound rings: mask, the initial offset in every
 * slot. Returns 0 or -1 with errno and the reason. */
int nme_off_setup(struct nme_file *f, struct nmreq_opt_offsets *opt,
		     const struct pktmap_info *info)
{
	uint32_t bits = opt->nro_offset_bits;
	uint64_t mask = off_mask(bits);
	uint32_t usable = info->buf_usable ? info->buf_usable : info->buf_size;
	if (nme_off_check(opt, f->name))
		return -1;
	/* (overflow-safe: max + frame may wrap, usable - frame may not) */
	if (usable < NME_OFF_FRAME || opt->nro_max_offset > usable - NME_OFF_FRAME)
		return nme_fail(EINVAL, "%s: offsets up to %llu leave no room for a "
				"%u-byte frame in buffers of %u bytes", f->name,
				(unsigned long long)opt->nro_max_offset,
				NME_OFF_FRAME, usable);
	struct netmap_if *nifp = f->nifp;
	uint32_t ntx = nifp->ni_tx_rings + nifp->ni_host_tx_rings;
	uint32_t nall = ntx + nifp->ni_rx_rings + nifp->ni_host_rx_rings;
	struct nme_off *o = calloc(1, sizeof(*o) + nall * sizeof(o->r[0]));
	if (!o)
		return nme_fail(ENOMEM, "%s: out of memory", f->name);
	o->mask = mask;
	o->max = opt->nro_max_offset;
	o->usable = usable;
	o->bufs = info->bufs;
	for (uint32_t i = 0; i < nall; i++) {
		if (!nifp->ring_ofs[i])
			continue;
		struct nme_off_ring *r = &o->r[o->n];
		r->ring = (struct netmap_ring *)(void *)((char *)nifp +
							 nifp->ring_ofs[i]);
		r->tx = i < ntx;
		r->nslots = r->ring->num_slots;
		r->bufs = NETMAP_BUF(r->ring, 0);
		r->stride = r->ring->nr_buf_size;
		if (!r->tx) {
			r->want = calloc(r->nslots, sizeof(*r->want));
			if (!r->want) {
				for (uint32_t k = 0; k < o->n; k++)
					free(o->r[k].want);
				free(o);
				return nme_fail(ENOMEM, "%s: out of memory", f->name);
			}
		}
		o->n++;
		struct netmap_ring *ring = r->ring;
		*(uint64_t *)(void *)&ring->offset_mask = mask;
		*(uint64_t *)(void *)&ring->buf_align = 1;
		for (uint32_t k = 0; k < r->nslots; k++) {
			struct netmap_slot *s = &ring->slot[k];
			s->ptr = (s->ptr & ~mask) | opt->nro_initial_offset;
			if (r->want)
				r->want[k] = opt->nro_initial_offset;
		}
		r->done = ring->head;
		r->seen = ring->tail;
	}
	opt->nro_offset_bits = bits == 0 ? 64 : bits;
	f->off = o;
	return 0;
}

void nme_off_free(struct nme_file *f)
{
	if (!f->off)
		return;
	for (uint32_t k = 0; k < f->off->n; k++)
		free(f->off->r[k].want);
	free(f->off);
	f->off = NULL;
}
