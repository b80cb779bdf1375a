/* SPDX-License-Identifier: BSD-2-Clause
 *
 * A single-producer single-consumer lock-free queue of fixed-size
 * elements. The fast path (enqueue, dequeue, their helpers) is inline
 * here; creating and freeing are in the library (src/spsc.c). One thread enqueues, one thread dequeues; no
 * locks, no atomic read-modify-write, one cache-line transfer per batch
 * in the common case.
 *
 * Shape (libxdp's xsk rings, DPDK's rte_ring SP/SC): free-running 32-bit
 * indices masked on access; the producer's and the consumer's state on
 * separate cache lines; each side keeps a cached copy of the other side's
 * index and reloads it only when the queue looks full (producer) or empty
 * (consumer). Capacity is a power of two.
 *
 *     struct pktmap_spsc *q = pktmap_spsc_create(1024, sizeof(struct desc));
 *     n = pktmap_spsc_enqueue(q, descs, 32);   // producer: 0..32 taken
 *     n = pktmap_spsc_dequeue(q, descs, 32);   // consumer: 0..32 given
 *
 * For memory private to one process (its threads): every call reads the
 * queue's mask and element size from the queue itself and trusts them, so
 * whoever can write the queue's memory can make a call copy outside it.
 * Do not place one where another process could write it (docs/design.md,
 * "Trust model": what crosses between processes is checked, as the
 * pipes' descriptor queues are, src/ports/pipe_sync.c). pktmap_spsc_init()
 * lays a queue out in memory the caller provides (pktmap_spsc_size()
 * bytes, cache-line aligned), for example inside a larger structure of
 * its own.
 */
#ifndef PKTMAP_SPSC_H
#define PKTMAP_SPSC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pktmap.h"

/* C++ has std::atomic where C has _Atomic: the same size, alignment and
 * lock-free operations for a uint32_t, so C and C++ code share a queue. */
#ifdef __cplusplus
#include <atomic>
#define PKTMAP_SPSC_ATOMIC_U32 std::atomic<uint32_t>
#define PKTMAP_SPSC_ALIGN alignas(PKTMAP_CACHELINE)
using std::atomic_load_explicit;
using std::atomic_store_explicit;
using std::memory_order_acquire;
using std::memory_order_relaxed;
using std::memory_order_release;
extern "C" {
#else
#include <stdatomic.h>
#define PKTMAP_SPSC_ATOMIC_U32 _Atomic uint32_t
#define PKTMAP_SPSC_ALIGN _Alignas(PKTMAP_CACHELINE)
#endif

/* The queue's alignment: pktmap's cache line (the older name is kept
 * for programs that use it). */
#define PKTMAP_SPSC_LINE PKTMAP_CACHELINE

struct pktmap_spsc {
	/* Read-only after init. */
	PKTMAP_SPSC_ALIGN uint32_t mask;
	uint32_t elem_size;
	/* Producer's line: its index and its cached view of the consumer. */
	PKTMAP_SPSC_ALIGN PKTMAP_SPSC_ATOMIC_U32 prod;
	uint32_t cons_cache;
	/* Consumer's line. */
	PKTMAP_SPSC_ALIGN PKTMAP_SPSC_ATOMIC_U32 cons;
	uint32_t prod_cache;
	PKTMAP_SPSC_ALIGN unsigned char ring[];
};

/* Bytes needed for a queue of `cap` (a power of two) elements. */
static inline size_t pktmap_spsc_size(uint32_t cap, uint32_t elem_size)
{
	return sizeof(struct pktmap_spsc) + (size_t)cap * elem_size;
}

/* Initialise a queue in `mem` (pktmap_spsc_size() bytes, aligned to
 * PKTMAP_CACHELINE; private memory, see above). Returns NULL unless cap
 * is a power of two >= 2. */
PKTMAP_EXPORT struct pktmap_spsc *pktmap_spsc_init(void *mem, uint32_t cap,
						   uint32_t elem_size);
/* A queue on the heap (NULL: bad cap, or no memory); pktmap_spsc_free(). */
PKTMAP_EXPORT struct pktmap_spsc *pktmap_spsc_create(uint32_t cap,
						     uint32_t elem_size);
/* Free a queue pktmap_spsc_create() made (NULL: nothing). */
PKTMAP_EXPORT void pktmap_spsc_free(struct pktmap_spsc *q);

static inline uint32_t pktmap_spsc_capacity(const struct pktmap_spsc *q)
{
	return q->mask + 1;
}

/* Copy n elements between the ring (at index i) and a flat array. */
static inline void pktmap_spsc_copy_(struct pktmap_spsc *q, uint32_t i, void *obj,
				 uint32_t n, int to_ring)
{
	uint32_t cap = q->mask + 1, es = q->elem_size;
	uint32_t off = i & q->mask;
	uint32_t first = cap - off < n ? cap - off : n;
	unsigned char *r = q->ring + (size_t)off * es, *o = (unsigned char *)obj;
	if (to_ring) {
		memcpy(r, o, (size_t)first * es);
		memcpy(q->ring, o + (size_t)first * es, (size_t)(n - first) * es);
	} else {
		memcpy(o, r, (size_t)first * es);
		memcpy(o + (size_t)first * es, q->ring, (size_t)(n - first) * es);
	}
}

/* Producer: free slots, reloading the consumer index only when the cached
 * view says fewer than `want` are free. */
static inline uint32_t pktmap_spsc_free_slots(struct pktmap_spsc *q, uint32_t want)
{
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_relaxed);
	uint32_t free_n = q->mask + 1 - (prod - q->cons_cache);
	if (free_n < want) {
		/* Pairs with the release store of cons in pktmap_spsc_dequeue():
		 * the consumer is done reading the slots before cons. */
		q->cons_cache = atomic_load_explicit(&q->cons, memory_order_acquire);
		free_n = q->mask + 1 - (prod - q->cons_cache);
	}
	return free_n;
}

/* Producer: enqueue up to n elements from obj[]; returns how many were
 * taken (all of them unless the queue filled up). Never blocks. */
static inline uint32_t pktmap_spsc_enqueue(struct pktmap_spsc *q, const void *obj,
				       uint32_t n)
{
	uint32_t free_n = pktmap_spsc_free_slots(q, n);
	if (n > free_n)
		n = free_n;
	if (n == 0)
		return 0;
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_relaxed);
	pktmap_spsc_copy_(q, prod, (void *)obj, n, 1);
	/* Pairs with the acquire load of prod in pktmap_spsc_avail(): the
	 * elements are written before they are published. */
	atomic_store_explicit(&q->prod, prod + n, memory_order_release);
	return n;
}

/* Consumer: elements ready, reloading the producer index only when the
 * cached view says fewer than `want` are there. */
static inline uint32_t pktmap_spsc_avail(struct pktmap_spsc *q, uint32_t want)
{
	uint32_t cons = atomic_load_explicit(&q->cons, memory_order_relaxed);
	uint32_t n = q->prod_cache - cons;
	if (n < want) {
		/* Pairs with the release store of prod in pktmap_spsc_enqueue(). */
		q->prod_cache = atomic_load_explicit(&q->prod, memory_order_acquire);
		n = q->prod_cache - cons;
	}
	return n;
}

/* Consumer: dequeue up to n elements into obj[]; returns how many. */
static inline uint32_t pktmap_spsc_dequeue(struct pktmap_spsc *q, void *obj, uint32_t n)
{
	uint32_t avail = pktmap_spsc_avail(q, n);
	if (n > avail)
		n = avail;
	if (n == 0)
		return 0;
	uint32_t cons = atomic_load_explicit(&q->cons, memory_order_relaxed);
	pktmap_spsc_copy_(q, cons, obj, n, 0);
	/* Pairs with the acquire load of cons in pktmap_spsc_free_slots(): our
	 * reads of these slots are done before the producer may reuse them. */
	atomic_store_explicit(&q->cons, cons + n, memory_order_release);
	return n;
}

/* Either side: elements in the queue right now (a snapshot). */
static inline uint32_t pktmap_spsc_count(struct pktmap_spsc *q)
{
	return atomic_load_explicit(&q->prod, memory_order_acquire) -
	       atomic_load_explicit(&q->cons, memory_order_acquire);
}

#ifdef __cplusplus
}
#endif

#endif /* PKTMAP_SPSC_H */
