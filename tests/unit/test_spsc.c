// SPDX-License-Identifier: BSD-2-Clause
/* The SPSC queue: boundaries on one thread, then a producer and a
 * consumer thread moving 20 million elements in random batch sizes, every
 * element checked in order. Also run under ThreadSanitizer by CI. */
#include <pthread.h>
#include <stdint.h>

#include "pktmap/spsc.h"
#include "t.h"

struct desc {
	uint32_t buf_idx;
	uint16_t len;
	uint16_t port;
	uint64_t seq;
};

#define TOTAL 20000000ull

static void *producer(void *arg)
{
	struct pktmap_spsc *q = arg;
	struct desc d[64];
	uint64_t seq = 0, rnd = 12345;
	while (seq < TOTAL) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t n = 1 + (uint32_t)((rnd >> 33) % 64);
		if (n > TOTAL - seq)
			n = (uint32_t)(TOTAL - seq);
		for (uint32_t i = 0; i < n; i++)
			d[i] = (struct desc){ .buf_idx = (uint32_t)(seq + i),
					      .len = (uint16_t)(seq + i),
					      .seq = seq + i };
		uint32_t done = 0;
		while (done < n)
			done += pktmap_spsc_enqueue(q, d + done, n - done);
		seq += n;
	}
	return NULL;
}

int main(void)
{
	/* Boundaries. */
	CHECK(pktmap_spsc_create(3, 8) == NULL, "capacity must be a power of two");
	CHECK(pktmap_spsc_create(0, 8) == NULL, "zero capacity");
	struct pktmap_spsc *q = pktmap_spsc_create(8, sizeof(struct desc));
	CHECK(q != NULL, "create");
	struct desc in[20], out[20];
	for (int i = 0; i < 20; i++)
		in[i] = (struct desc){ .buf_idx = (uint32_t)i, .seq = (uint64_t)i };
	CHECK_EQ(pktmap_spsc_dequeue(q, out, 4), 0);
	CHECK_EQ(pktmap_spsc_enqueue(q, in, 20), 8); /* full at capacity */
	CHECK_EQ(pktmap_spsc_enqueue(q, in, 1), 0);
	CHECK_EQ(pktmap_spsc_count(q), 8);
	CHECK_EQ(pktmap_spsc_dequeue(q, out, 3), 3);
	CHECK(out[0].seq == 0 && out[2].seq == 2, "order");
	CHECK_EQ(pktmap_spsc_enqueue(q, in + 8, 5), 3); /* wraps around */
	CHECK_EQ(pktmap_spsc_dequeue(q, out, 20), 8);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(out[i].seq, (uint64_t)(i + 3));
	CHECK_EQ(pktmap_spsc_count(q), 0);
	pktmap_spsc_free(q);

	/* Two threads; indices wrap the 32-bit space? Start near it. */
	q = pktmap_spsc_create(1024, sizeof(struct desc));
	atomic_store(&q->prod, 0xfffff000u);
	atomic_store(&q->cons, 0xfffff000u);
	q->cons_cache = q->prod_cache = 0xfffff000u;
	pthread_t th;
	pthread_create(&th, NULL, producer, q);
	uint64_t expect = 0, bad = 0, rnd = 777;
	struct desc d[64];
	while (expect < TOTAL) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t n = pktmap_spsc_dequeue(q, d, 1 + (uint32_t)((rnd >> 33) % 64));
		for (uint32_t i = 0; i < n; i++, expect++)
			bad += d[i].seq != expect || d[i].buf_idx != (uint32_t)expect ||
			       d[i].len != (uint16_t)expect;
	}
	pthread_join(th, NULL);
	CHECK_EQ(bad, 0);
	CHECK_EQ(expect, TOTAL);
	CHECK_EQ(pktmap_spsc_count(q), 0);
	pktmap_spsc_free(q);
	return t_done("spsc");
}
