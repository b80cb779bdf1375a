/* SPDX-License-Identifier: BSD-2-Clause
 *
 * A pipe's own cost per packet, in one thread: fill the TX ring of one
 * end (len only), txsync, rxsync the other end, read every slot's len,
 * release, rxsync. The loop keeps the ring indices in locals and writes
 * head and cur once per batch, as netmap's pkt-gen does. Run under callgrind twice with different counts
 * (bench/pipe.py, pipe_cost()): the difference divided by the packets is
 * the instructions per packet of both sync calls plus this loop, exact
 * and independent of the load on the machine.
 *
 *     pipe_cost BATCHES     (batches of 256 packets)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

int main(int argc, char **argv)
{
	long nb = argc > 1 ? atol(argv[1]) : 1000;
	char name[64], err[300];
	struct pktmap_port *a, *b;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	snprintf(name, sizeof(name), "pipe:pcost%d{0", (int)getpid());
	if (pktmap_open(&a, name, &o) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	snprintf(name, sizeof(name), "pipe:pcost%d}0", (int)getpid());
	if (pktmap_open(&b, name, &o) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	struct netmap_ring *t = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(b), 0);
	unsigned long long bytes = 0, sent = 0;
	for (long k = 0; k < nb; k++) {
		/* The ring indices in locals, written back once per batch, as
		 * netmap's pkt-gen does. */
		uint32_t room = nm_ring_space(t), cur = t->cur, n = 256;
		if (n > room)
			n = room;
		for (uint32_t i = 0; i < n; i++) {
			t->slot[cur].len = 60;
			cur = nm_ring_next(t, cur);
		}
		sent += n;
		t->head = t->cur = cur;
		pktmap_txsync(a);
		pktmap_rxsync(b);
		uint32_t h = r->head, tail = r->tail;
		while (h != tail) {
			bytes += r->slot[h].len;
			h = nm_ring_next(r, h);
		}
		r->head = r->cur = h;
		pktmap_rxsync(b);
	}
	pktmap_close(a);
	pktmap_close(b);
	/* Every batch is whole: the reader releases everything each time. */
	if (sent != (unsigned long long)nb * 256 || bytes != sent * 60) {
		fprintf(stderr, "pipe_cost: sent %llu, %llu bytes, expected %llu "
			"packets\n", sent, bytes, (unsigned long long)nb * 256);
		return 1;
	}
	return 0;
}
