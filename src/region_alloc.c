/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What is inside a region (region.h): the object directory (objects found
 * or made by key, under the region's lock), the free-buffer stack, and
 * the sizes of an interface and its rings. Every value a peer may have
 * written (directory entries, the stack) is read once and checked against
 * the private bounds taken at open (region.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "pktmap/netmap.h"
#include "region.h"
#include "region_hdr.h"

/* Find key in the object directory a peer may have written: its entry
 * (offset and size checked against the private bounds of the object
 * area) in *ofs and *size, or *ofs = 0 when its entry is out of bounds.
 * Returns the entry's index, or -1 when there is none; *ndir is how many
 * entries the directory holds. */
static int dir_find(struct pm_region *r, const char *key, uint32_t *ndir,
		    uint64_t *ofs, uint64_t *size)
{
	struct pm_region_hdr *h = r->hdr;
	uint32_t n = PM_READ_ONCE(h->ndir);
	*ndir = n > PM_REGION_DIR ? PM_REGION_DIR : n;
	for (uint32_t i = 0; i < *ndir; i++) {
		struct pm_region_dirent *d = &h->dir[i];
		if (strncmp(d->key, key, sizeof(d->key)) != 0)
			continue;
		uint64_t o = PM_READ_ONCE(d->ofs), sz = PM_READ_ONCE(d->size);
		bool inside = o >= r->obj_ofs && o <= r->obj_end &&
			      sz <= r->obj_end - o;
		*ofs = inside ? o : 0;
		*size = sz;
		return (int)i;
	}
	return -1;
}

uint64_t pm_region_lookup(struct pm_region *r, const char *key, size_t *size)
{
	uint32_t ndir;
	uint64_t ofs, sz;
	if (dir_find(r, key, &ndir, &ofs, &sz) < 0 || ofs == 0)
		return 0;
	*size = sz;
	return ofs;
}

uint64_t pm_region_object(struct pm_region *r, const char *key, size_t size,
			  bool *created)
{
	struct pm_region_hdr *h = r->hdr;
	uint32_t ndir;
	uint64_t ofs, sz;
	*created = false;
	if (dir_find(r, key, &ndir, &ofs, &sz) >= 0)
		return sz < size ? 0 : ofs;
	if (ndir >= PM_REGION_DIR || strlen(key) >= sizeof(h->dir[0].key))
		return 0;
	uint64_t next = PM_READ_ONCE(h->obj_next);
	if (next < r->obj_ofs || next > r->obj_end)
		return 0;
	ofs = align_up(next, 128);
	if (ofs + size > r->obj_end)
		return 0;
	h->obj_next = ofs + size;
	struct pm_region_dirent *d = &h->dir[ndir];
	snprintf(d->key, sizeof(d->key), "%s", key);
	d->ofs = ofs;
	d->size = size;
	h->ndir = ndir + 1;
	memset((char *)r->base + ofs, 0, size);
	*created = true;
	return ofs;
}

int pm_region_alloc_bufs(struct pm_region *r, uint32_t *idx, uint32_t n)
{
	struct pm_region_hdr *h = r->hdr;
	uint32_t *stack = (uint32_t *)((char *)r->base + r->free_ofs);
	struct pm_bufspace bs = { .nbufs = r->nbufs, .usable = 0 };
	uint32_t top = PM_READ_ONCE(h->free_top);
	if (top > r->nbufs - 2)
		top = 0; /* corrupt (the stack holds 2 .. nbufs-1 at most):
			  * treat as empty */
	uint32_t got = 0;
	while (got < n && top > 0) {
		uint32_t b = stack[--top];
		if (pm_buf_ok(&bs, b))
			idx[got++] = b;
	}
	if (got < n) {
		/* Put back what we took: all or nothing. */
		while (got > 0)
			stack[top++] = idx[--got];
		h->free_top = top;
		return -ENOMEM;
	}
	h->free_top = top;
	return 0;
}

void pm_region_free_bufs(struct pm_region *r, const uint32_t *idx, uint32_t n)
{
	struct pm_region_hdr *h = r->hdr;
	uint32_t *stack = (uint32_t *)((char *)r->base + r->free_ofs);
	struct pm_bufspace bs = { .nbufs = r->nbufs, .usable = 0 };
	uint32_t top = PM_READ_ONCE(h->free_top);
	if (top > r->nbufs - 2)
		top = 0;
	for (uint32_t i = 0; i < n && top < r->nbufs - 2; i++) {
		if (pm_buf_ok(&bs, idx[i]))
			stack[top++] = idx[i];
	}
	h->free_top = top;
}

uint32_t pm_region_free_count(struct pm_region *r)
{
	uint32_t top = PM_READ_ONCE(r->hdr->free_top);
	return top > r->nbufs - 2 ? 0 : top;
}

size_t pm_ring_size(uint32_t slots)
{
	return align_up(sizeof(struct netmap_ring) +
			(size_t)slots * sizeof(struct netmap_slot), 128);
}

size_t pm_nifp_size(uint32_t ntx, uint32_t nrx, uint32_t nhtx, uint32_t nhrx)
{
	size_t n = (size_t)ntx + nrx + nhtx + nhrx;
	return align_up(sizeof(struct netmap_if) + n * sizeof(ssize_t), 128);
}

#ifdef PM_TEST_HOOKS
uint32_t *pm_region_free_top(struct pm_region *r)
{
	return &r->hdr->free_top;
}
#endif
