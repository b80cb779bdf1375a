/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The single-producer single-consumer queue's slow path (spsc.h has the
 * fast path inline): creating, initialising, freeing.
 */
#include <stdlib.h>
#include <string.h>

#include <pktmap/spsc.h>

struct pktmap_spsc *pktmap_spsc_init(void *mem, uint32_t cap,
				     uint32_t elem_size)
{
	if (cap < 2 || (cap & (cap - 1)) || elem_size == 0)
		return NULL;
	struct pktmap_spsc *q = (struct pktmap_spsc *)mem;
	memset(q, 0, sizeof(*q));
	q->mask = cap - 1;
	q->elem_size = elem_size;
	atomic_init(&q->prod, 0);
	atomic_init(&q->cons, 0);
	return q;
}

struct pktmap_spsc *pktmap_spsc_create(uint32_t cap, uint32_t elem_size)
{
	size_t sz = (pktmap_spsc_size(cap, elem_size) + PKTMAP_CACHELINE - 1) &
		    ~(size_t)(PKTMAP_CACHELINE - 1);
	void *mem = aligned_alloc(PKTMAP_CACHELINE, sz);
	if (!mem)
		return NULL;
	struct pktmap_spsc *q = pktmap_spsc_init(mem, cap, elem_size);
	if (!q)
		free(mem);
	return q;
}

void pktmap_spsc_free(struct pktmap_spsc *q)
{
	free(q);
}

