// SPDX-License-Identifier: BSD-2-Clause
/* null: counts and checks every TX slot, produces nothing. */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "port.h"
#include "region.h"
#include "t.h"

int main(void)
{
	struct pktmap_port *p = NULL;
	char err[300] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	CHECK(pktmap_open(&p, "null:@conf:slots=64", &o) == 0, "open: %s", err);
	if (!p)
		return t_done("null");
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(p), 0);
	CHECK_EQ(tx->num_slots, 64);
	CHECK_EQ(nm_ring_space(tx), 63);
	uint64_t pkts = 0, bytes = 0;
	for (int round = 0; round < 1000; round++) {
		CHECK(pktmap_poll(p, POLLOUT, 0) == POLLOUT, "always writable");
		uint32_t n = nm_ring_space(tx);
		for (uint32_t i = 0; i < n; i++) {
			tx->slot[tx->cur].len = (uint16_t)(60 + i);
			bytes += 60 + i;
			tx->cur = nm_ring_next(tx, tx->cur);
		}
		pkts += n;
		tx->head = tx->cur;
		CHECK(pktmap_txsync(p) == 0, "txsync");
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets, pkts);
	CHECK_EQ(st.tx_bytes, bytes);
	CHECK_EQ(st.drop_invalid, 0);
	CHECK(pktmap_rxsync(p) == 0 && nm_ring_empty(rx), "nothing received");
	CHECK(pktmap_poll(p, POLLIN, 10) == 0, "POLLIN times out");

	/* The checker runs here too. */
	tx->slot[tx->cur].len = 3000;
	tx->head = tx->cur = nm_ring_next(tx, tx->cur);
	pktmap_txsync(p);
	pktmap_stats(p, &st);
	CHECK_EQ(st.drop_invalid, 1);
	CHECK_EQ(st.tx_packets, pkts);
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	CHECK(strcmp(info.backend, "null") == 0, "backend");

	/* sz: an older caller's smaller structs get the fields they know and
	 * nothing past them; sz says how much was filled. */
	{
		struct pktmap_stats small;
		memset(&small, 0xa5, sizeof(small));
		small.sz = offsetof(struct pktmap_stats, rx_packets);
		CHECK_EQ(pktmap_stats(p, &small), 0);
		CHECK_EQ(small.sz, offsetof(struct pktmap_stats, rx_packets));
		CHECK_EQ(small.tx_packets, pkts);
		CHECK(small.rx_packets == 0xa5a5a5a5a5a5a5a5ull,
		      "nothing written past sz");
		struct pktmap_info si;
		memset(&si, 0xa5, sizeof(si));
		si.sz = offsetof(struct pktmap_info, region);
		CHECK_EQ(pktmap_info(p, &si), 0);
		CHECK(strcmp(si.backend, "null") == 0, "backend in a small info");
		CHECK((unsigned char)si.region[0] == 0xa5, "nothing past sz");
		si.sz = 1; /* not even room for sz */
		CHECK_EQ(pktmap_info(p, &si), -EINVAL);
	}
	/* pktmap_poll_many() refuses bad arguments before anything else. */
	{
		struct pktmap_pollreq q[40];
		memset(q, 0, sizeof(q));
		CHECK_EQ(pktmap_poll_many(NULL, 1, 0), -EINVAL);
		CHECK_EQ(pktmap_poll_many(q, 0, 0), -EINVAL);
		for (unsigned i = 0; i < 39; i++) {
			q[i].port = p;
			q[i].events = POLLOUT;
		}
		/* one NULL port among 40 (more than fit on the stack) */
		CHECK_EQ(pktmap_poll_many(q, 40, 0), -EINVAL);
		q[39].port = p;
		q[39].events = POLLOUT;
		CHECK_EQ(pktmap_poll_many(q, 40, 0), 40);
	}
	pktmap_close(p);

	/* Extra buffers, linked from ni_bufs_head through their first word. */
	CHECK(pktmap_open(&p, "null:@conf:extra-bufs=100", &o) == 0, "%s", err);
	if (p) {
		struct netmap_if *nifp = pktmap_nifp(p);
		struct netmap_ring *r = NETMAP_TXRING(nifp, 0);
		pktmap_info(p, &info);
		uint32_t n = 0, b = nifp->ni_bufs_head;
		while (b && n < 1000) {
			CHECK(b >= 2 && b < info.bufs, "extra buffer %u", b);
			for (uint32_t s = 0; s < r->num_slots; s++)
				CHECK(r->slot[s].buf_idx != b, "extra %u also in a ring", b);
			b = *(uint32_t *)NETMAP_BUF(r, b);
			n++;
		}
		CHECK_EQ(n, 100);
		pktmap_close(p);
	}

	/* Ports in a shared region give their ring buffers back at close. */
	char name[96], name2[96];
	snprintf(name, sizeof(name), "null:@conf:bufs=8192@mem:utnull%d",
		 (int)getpid());
	snprintf(name2, sizeof(name2), "null:@conf:slots=128@mem:utnull%d",
		 (int)getpid());
	struct pktmap_port *a = NULL, *b = NULL;
	CHECK(pktmap_open(&a, name, &o) == 0, "%s", err);
	if (a) {
		uint32_t before = pm_region_free_count(&a->region);
		for (int i = 0; i < 3; i++) {
			CHECK(pktmap_open(&b, name2, &o) == 0, "%s", err);
			CHECK_EQ(pm_region_free_count(&a->region), before - 256);
			pktmap_close(b);
			CHECK_EQ(pm_region_free_count(&a->region), before);
		}
		/* What the application leaves in the slots is checked before
		 * it goes back (pm_port_own_rings_put): 0, 1, an index past
		 * the pool and one given twice go nowhere; the buffers they
		 * replaced are lost to this region until it is rebuilt. */
		CHECK(pktmap_open(&b, name2, &o) == 0, "%s", err);
		if (b) {
			struct netmap_ring *t = NETMAP_TXRING(pktmap_nifp(b), 0);
			struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(b), 0);
			uint32_t nb = b->region.nbufs;
			t->slot[0].buf_idx = 0;
			t->slot[1].buf_idx = 1;
			t->slot[2].buf_idx = nb;          /* one past the pool */
			t->slot[3].buf_idx = 0xffffffffu;
			t->slot[4].buf_idx = r->slot[9].buf_idx; /* twice */
			pktmap_close(b);
			CHECK_EQ(pm_region_free_count(&a->region), before - 5);
		}
		pktmap_close(a);
	}
	return t_done("null");
}
