/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch's own cost per frame (bench/switch.py): N clients on pipes
 * and the switch's data path (src/fwd/switch.c) in one thread. Each round
 * every client puts BATCH 60-byte frames to the next client's MAC (all
 * learned: unicast, one copy each) and drains what it received; only
 * sw_round() is timed (TSC ticks over the frames it switched), so the
 * figure is the switch's work: rxsync, checks, lookup, grouping, copy,
 * txsync. Under callgrind, --toggle-collect=sw_round counts the same.
 *
 *   switch_cost PORTS FRAMES [BATCH]   prints one JSON line
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

#include "switch.h"

#define MAXP 16

static struct pktmap_port *cl[MAXP];

static void mac_of(uint8_t *m, int i)
{
	memset(m, 0, 6);
	m[0] = 0x02;
	m[5] = (uint8_t)(i + 1);
}

/* Client c puts n frames to client d's MAC (or broadcast). */
static void put(int c, int d, unsigned n)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(cl[c]), 0);
	if (nm_ring_space(r) < n)
		pktmap_txsync(cl[c]);
	while (n-- && nm_ring_space(r)) {
		struct netmap_slot *s = &r->slot[r->head];
		uint8_t *b = (uint8_t *)NETMAP_BUF(r, s->buf_idx);
		if (d < 0)
			memset(b, 0xff, 6);
		else
			mac_of(b, d);
		mac_of(b + 6, c);
		b[12] = 0x08;
		b[13] = 0x00;
		s->len = 60;
		r->head = r->cur = nm_ring_next(r, r->head);
	}
	pktmap_txsync(cl[c]);
}

static uint64_t drain(int c)
{
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(cl[c]), 0);
	uint64_t n = 0;
	pktmap_rxsync(cl[c]);
	while (!nm_ring_empty(r)) {
		n++;
		r->head = r->cur = nm_ring_next(r, r->head);
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: switch_cost PORTS FRAMES [BATCH]\n");
		return 2;
	}
	int np = atoi(argv[1]);
	uint64_t frames = strtoull(argv[2], NULL, 0);
	unsigned batch = argc > 3 ? (unsigned)atoi(argv[3]) : 256;
	if (np < 2 || np > MAXP || batch < 1 || batch > 512) {
		fprintf(stderr, "switch_cost: 2..%d ports, batch 1..512\n", MAXP);
		return 2;
	}
	struct sw s;
	struct sw_cfg cfg = { 0 };
	if (sw_init(&s, &cfg))
		return 1;
	for (int i = 0; i < np; i++) {
		char n[96], pn[8];
		struct pktmap_open_opts o = { .sz = sizeof(o) };
		struct pktmap_port *sp;
		snprintf(n, sizeof(n), "pipe:swc%d.%d{0", (int)getpid(), i);
		if (pktmap_open(&sp, n, &o))
			return 1;
		snprintf(n, sizeof(n), "pipe:swc%d.%d}0", (int)getpid(), i);
		if (pktmap_open(&cl[i], n, &o))
			return 1;
		snprintf(pn, sizeof(pn), "p%d", i);
		if (sw_attach(&s, sp, pn, "client", true, 0) < 0)
			return 1;
	}
	/* Learning: every client says hello once. */
	for (int i = 0; i < np; i++)
		put(i, -1, 1);
	sw_round(&s);
	sw_round(&s);
	for (int i = 0; i < np; i++)
		drain(i);
	s.busy_cycles = s.busy_frames = 0;

	uint64_t delivered = 0;
	while (s.busy_frames < frames) {
		for (int i = 0; i < np; i++)
			put(i, (i + 1) % np, batch);
		sw_round(&s);
		for (int i = 0; i < np; i++)
			delivered += drain(i);
	}
	uint64_t drops = 0;
	for (int i = 0; i < np; i++)
		drops += s.port[i]->c.drop_nospace;
	printf("{\"ports\":%d,\"batch\":%u,\"frames\":%llu,\"delivered\":%llu,"
	       "\"drops\":%llu,\"busy_cycles\":%llu,\"cycles_per_frame\":%.2f}\n",
	       np, batch, (unsigned long long)s.busy_frames,
	       (unsigned long long)delivered, (unsigned long long)drops,
	       (unsigned long long)s.busy_cycles,
	       (double)s.busy_cycles / (double)s.busy_frames);
	for (int i = 0; i < np; i++)
		pktmap_close(cl[i]);
	sw_fini(&s);
	return 0;
}
