// SPDX-License-Identifier: BSD-2-Clause
/* A switch client for tests/system/switch_pipe.sh, on the public API.
 *
 *   switch_client PORT learn MAC   send one broadcast frame from MAC (the
 *                                  switch learns MAC on PORT), print
 *                                  "ready", then receive: a line
 *                                  "received N" whenever N reaches a
 *                                  multiple of 100, "total N" at SIGTERM
 *   switch_client PORT garbage K M send K runts (1 to 13 bytes) and a chain
 *                                  of M slots with NS_MOREFRAG set ending
 *                                  in a runt: K + M + 1 slots the switch
 *                                  must count as invalid and drop; print
 *                                  "sent", then wait for SIGTERM
 *   switch_client PORT scribble N  write random bytes over every shared
 *                                  mapping of the port (its pipe's pool
 *                                  and descriptor queues: all a client
 *                                  shares with the switch), N passes,
 *                                  syncing between them; print "done",
 *                                  then wait for SIGTERM
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int parse_mac(const char *s, uint8_t m[6])
{
	unsigned v[6];
	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		m[i] = (uint8_t)v[i];
	return 0;
}

/* Put one slot on the TX ring (waiting for room). */
static void put(struct pktmap_port *p, const uint8_t *frame, uint32_t len,
		uint16_t flags)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(p), 0);
	while (nm_ring_space(r) == 0 && !stop)
		pktmap_poll(p, POLLOUT, 100);
	struct netmap_slot *s = &r->slot[r->head];
	memcpy(NETMAP_BUF(r, s->buf_idx), frame, len);
	s->len = (uint16_t)len;
	s->flags = flags;
	r->head = r->cur = nm_ring_next(r, r->head);
}

static void flush_tx(struct pktmap_port *p)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(p), 0);
	pktmap_txsync(p);
	for (int i = 0; i < 200 && nm_tx_pending(r) && !stop; i++) {
		pktmap_poll(p, POLLOUT, 10);
		pktmap_txsync(p);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: switch_client PORT learn MAC | "
				"PORT garbage K M\n");
		return 2;
	}
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	char err[512] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *p;
	if (pktmap_open(&p, argv[1], &o)) {
		fprintf(stderr, "switch_client: %s\n", err);
		return 1;
	}
	uint8_t frame[64] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	frame[12] = 0x88;
	frame[13] = 0xb5; /* local experimental ethertype */

	if (strcmp(argv[2], "learn") == 0) {
		if (parse_mac(argv[3], frame + 6)) {
			fprintf(stderr, "switch_client: bad MAC %s\n", argv[3]);
			return 2;
		}
		put(p, frame, 60, 0);
		flush_tx(p);
		printf("ready\n");
		fflush(stdout);
		uint64_t n = 0;
		struct netmap_if *nifp = pktmap_nifp(p);
		while (!stop) {
			pktmap_poll(p, POLLIN, 100);
			/* every RX ring: a switch with threads uses several */
			for (uint32_t k = 0; k < nifp->ni_rx_rings; k++) {
				struct netmap_ring *r = NETMAP_RXRING(nifp, k);
				while (!nm_ring_empty(r)) {
					r->head = r->cur = nm_ring_next(r, r->head);
					if (++n % 100 == 0) {
						printf("received %llu\n",
						       (unsigned long long)n);
						fflush(stdout);
					}
				}
			}
		}
		printf("total %llu\n", (unsigned long long)n);
	} else if (strcmp(argv[2], "garbage") == 0 && argc == 5) {
		int k = atoi(argv[3]), m = atoi(argv[4]);
		for (int i = 0; i < k; i++)
			put(p, frame, 1 + (uint32_t)i % 13, 0);
		for (int i = 0; i < m; i++)
			put(p, frame, 60, NS_MOREFRAG);
		put(p, frame, 5, 0);
		flush_tx(p);
		printf("sent\n");
		fflush(stdout);
		while (!stop)
			pause();
	} else if (strcmp(argv[2], "scribble") == 0) {
		int passes = atoi(argv[3]);
		uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
		for (int pass = 0; pass < passes && !stop; pass++) {
			FILE *m = fopen("/proc/self/maps", "r");
			char line[512];
			while (m && fgets(line, sizeof(line), m)) {
				unsigned long lo, hi;
				char perm[8];
				if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 ||
				    perm[1] != 'w' || perm[3] != 's')
					continue;
				for (uint64_t *q = (uint64_t *)lo; q < (uint64_t *)hi; q++) {
					x ^= x << 13;
					x ^= x >> 7;
					x ^= x << 17;
					*q = x;
				}
			}
			if (m)
				fclose(m);
			pktmap_txsync(p);
			pktmap_rxsync(p);
		}
		printf("done\n");
		fflush(stdout);
		while (!stop)
			pause();
	} else {
		fprintf(stderr, "switch_client: unknown mode %s\n", argv[2]);
		return 2;
	}
	pktmap_close(p);
	return 0;
}
