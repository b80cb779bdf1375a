// SPDX-License-Identifier: BSD-2-Clause
/* The forwarding component's bridge (src/fwd/bridge.c), driven directly as
 * a library: two pipes, the bridge on their master ends in a thread of
 * its own, this thread on the slave ends sending numbered frames both
 * ways and reading them back. Checked: every frame arrives once, in order
 * and intact, in both directions; zero-copy is chosen for ports in one
 * region and copying otherwise (or when asked); the counters add up; the
 * loop stops on the caller's flag, on bridge_stop() and at its count; a
 * port without the rings it needs is refused with -EINVAL and a message
 * naming it, nothing printed. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "t.h"

#define N 20000u

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct pktmap_port *open_port(const char *name)
{
	/* room in a shared region for both pipes (the first open makes it) */
	struct pktmap_open_opts o = {.sz = sizeof(o), .bufs = 4 * FWD_BUFS_PER_PORT};
	struct pktmap_port *p = NULL;
	char err[300] = "";
	o.errbuf = err;
	o.errbuf_len = sizeof(err);
	CHECK(pktmap_open(&p, name, &o) == 0, "open %s: %s", name, err);
	return p;
}

static void *loop_main(void *arg)
{
	bridge_work(arg);
	return NULL;
}

/* Send up to `room` numbered frames on side s (tag s) and read what
 * arrived on it from the other side. */
struct side {
	struct pktmap_port *p;
	uint64_t sent, got, bad, next;
	uint32_t tag;
};

static void pump(struct side *s)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(s->p), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(s->p), 0);
	while (s->sent < N && !nm_ring_empty(tx)) {
		struct netmap_slot *sl = &tx->slot[tx->head];
		char *b = NETMAP_BUF(tx, sl->buf_idx);
		memset(b, 0, 64);
		memcpy(b, &s->tag, 4);
		memcpy(b + 8, &s->sent, 8);
		sl->len = (uint16_t)(60 + s->sent % 64);
		s->sent++;
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
	}
	pktmap_txsync(s->p);
	pktmap_rxsync(s->p);
	while (!nm_ring_empty(rx)) {
		struct netmap_slot *sl = &rx->slot[rx->head];
		const char *b = NETMAP_BUF(rx, sl->buf_idx);
		uint32_t tag;
		uint64_t seq;
		memcpy(&tag, b, 4);
		memcpy(&seq, b + 8, 8);
		/* the other side's frames, in order, with their length */
		if (tag != (s->tag ^ 1) || seq != s->next ||
		    sl->len != 60 + seq % 64)
			s->bad++;
		s->next = seq + 1;
		s->got++;
		rx->head = rx->cur = nm_ring_next(rx, rx->head);
	}
}

/* same_region: both pipes named with one @mem:; with two_memories, B's
 * region, of the same name, is shared with group 0: another memory (the
 * group's directory), which the bridge must not swap buffers with. */
static void run(const char *how, bool same_region, bool copy, int stop_by,
		bool two_memories)
{
	char a[96], b[96], sa[96], sb[96], region[32] = "", bregion[64];
	atomic_int stop = 0;
	struct bridge br;
	char err[400];

	if (same_region)
		snprintf(region, sizeof(region), "@mem:tbr%d%s", (int)getpid(), how);
	snprintf(a, sizeof(a), "pipe:tba%d%s{0%s", (int)getpid(), how, region);
	snprintf(bregion, sizeof(bregion), "%s%s", two_memories ?
		 "@conf:share=group:0" : "", region);
	snprintf(b, sizeof(b), "pipe:tbb%d%s{0%s", (int)getpid(), how, bregion);
	snprintf(sa, sizeof(sa), "pipe:tba%d%s}0%s", (int)getpid(), how, region);
	snprintf(sb, sizeof(sb), "pipe:tbb%d%s}0%s", (int)getpid(), how, bregion);
	memset(&br, 0, sizeof(br));
	br.batch = 64;
	br.stop = &stop;
	br.count = stop_by == 2 ? 2 * N : 0;
	br.port[0] = open_port(a);
	br.port[1] = open_port(b);
	struct side A = {.p = open_port(sa), .tag = 0};
	struct side B = {.p = open_port(sb), .tag = 1};
	if (!br.port[0] || !br.port[1] || !A.p || !B.p)
		goto out;
	CHECK(bridge_setup(&br, copy, err, sizeof(err)) == 0, "%s: setup: %s",
	      how, err);
	CHECK(br.zerocopy == (same_region && !copy && !two_memories),
	      "%s: zero-copy %d", how, br.zerocopy);

	pthread_t th;
	pthread_create(&th, NULL, loop_main, &br);
	uint64_t end = now_ms() + 60000;
	while ((A.got < N || B.got < N) && now_ms() < end)
		pump(&A), pump(&B);
	if (stop_by == 0)
		atomic_store(&stop, 1);
	else if (stop_by == 1)
		bridge_stop(&br);
	pthread_join(th, NULL);

	printf("  %s: A->B %llu of %llu, B->A %llu of %llu, %s, end %s\n", how,
	       (unsigned long long)B.got, (unsigned long long)A.sent,
	       (unsigned long long)A.got, (unsigned long long)B.sent,
	       br.zerocopy ? "zero-copy" : "copying", br.end ? br.end : "?");
	CHECK_EQ(A.sent, N);
	CHECK_EQ(B.sent, N);
	CHECK_EQ(B.got, N);
	CHECK_EQ(A.got, N);
	CHECK_EQ(A.bad + B.bad, 0);
	CHECK_EQ(br.error, 0);
	CHECK(strcmp(br.end, stop_by == 2 ? "count" : "signal") == 0, "%s: end %s",
	      how, br.end);
	CHECK_EQ(atomic_load(&br.dir[0].c.packets), N);
	CHECK_EQ(atomic_load(&br.dir[1].c.packets), N);
	CHECK_EQ(atomic_load(&br.dir[0].c.drops) + atomic_load(&br.dir[1].c.drops), 0);
out:
	pktmap_close(A.p);
	pktmap_close(B.p);
	pktmap_close(br.port[0]);
	pktmap_close(br.port[1]);
}

/* One bridge over pipe A (64 slots) and pipe B (16 slots), or the null
 * port when `null_b` (16 slots: it takes every frame and leaves the TX
 * slots as they are), in one region (zero-copy). The peers' ends are
 * g->sa and g->sb. */
struct rig {
	struct bridge br;
	struct pktmap_port *sa, *sb;
	uint32_t k; /* slots put so far */
	atomic_int stop, done;
};

static bool rig_open(struct rig *g, const char *tag, bool null_b)
{
	char a[96], b[96], sa[96], sb[96], err[400] = "";
	int pid = (int)getpid();

	snprintf(a, sizeof(a), "pipe:tc%s%d{0@conf:slots=64@mem:tbc%d%s", tag, pid, pid, tag);
	snprintf(sa, sizeof(sa), "pipe:tc%s%d}0@mem:tbc%d%s", tag, pid, pid, tag);
	if (null_b)
		snprintf(b, sizeof(b), "null:@conf:slots=16@mem:tbc%d%s", pid, tag);
	else
		snprintf(b, sizeof(b), "pipe:td%s%d{0@conf:slots=16@mem:tbc%d%s", tag, pid, pid, tag);
	snprintf(sb, sizeof(sb), "pipe:td%s%d}0@mem:tbc%d%s", tag, pid, pid, tag);
	memset(g, 0, sizeof(*g));
	g->br.batch = 64;
	g->br.stop = &g->stop;
	g->br.port[0] = open_port(a);
	g->br.port[1] = open_port(b);
	g->sa = open_port(sa);
	g->sb = null_b ? NULL : open_port(sb);
	if (!g->br.port[0] || !g->br.port[1] || !g->sa || (!null_b && !g->sb))
		return false;
	CHECK(bridge_setup(&g->br, false, err, sizeof(err)) == 0, "setup: %s", err);
	CHECK(g->br.zerocopy, "zero-copy");
	return g->br.zerocopy;
}

static void *rig_main(void *arg)
{
	struct rig *g = arg;

	bridge_work(&g->br);
	atomic_store(&g->done, 1);
	return NULL;
}

/* Run the bridge to br.count frames; a bridge that stops moving before
 * is stopped after 20 s (that bound only ends a failing run) and the
 * check of its end fails. */
static void rig_work(struct rig *g)
{
	pthread_t th;

	pthread_create(&th, NULL, rig_main, g);
	for (uint64_t end = now_ms() + 20000; !atomic_load(&g->done) && now_ms() < end;) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	atomic_store(&g->stop, 1);
	pthread_join(th, NULL);
	CHECK(g->br.end && strcmp(g->br.end, "count") == 0, "end %s", g->br.end);
}

static void rig_close(struct rig *g)
{
	pktmap_close(g->sa);
	pktmap_close(g->sb);
	pktmap_close(g->br.port[0]);
	pktmap_close(g->br.port[1]);
}

/* Put a chain of n slots (n = 1: a frame) on A's peer; the last one
 * ends it unless `open`. Slot lengths 60 + k, k counting all slots. */
static void put_chain(struct rig *g, uint32_t n, bool open)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(g->sa), 0);

	for (uint32_t i = 0; i < n; i++) {
		struct netmap_slot *sl = &tx->slot[tx->head];
		sl->len = (uint16_t)(60 + g->k++ % 64);
		sl->flags = i + 1 < n || open ? NS_MOREFRAG : 0;
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
	}
	CHECK(pktmap_txsync(g->sa) >= 0, "txsync");
}

/* Zero-copy swaps mark the TX slot NS_BUF_CHANGED, keep a chain whole
 * with its NS_MOREFRAG, drop a chain that never fits B's TX ring (16
 * slots: 15 do fit) and a chain that never ends before A's RX ring is
 * full (63 slots), and forward a chain that ends on the last slot that
 * has arrived. */
static void flags_and_chains(void)
{
	struct rig g;

	/* 1. 15 frames swapped into the null port's TX ring (it takes
	 * them and leaves the slots alone): each TX slot the bridge filled
	 * says NS_BUF_CHANGED. (A pipe marks its slots itself, both ways: it
	 * cannot show what the bridge did.) */
	if (rig_open(&g, "f", true)) {
		for (int i = 0; i < 15; i++)
			put_chain(&g, 1, false);
		g.br.count = 15;
		rig_work(&g);
		struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(g.br.port[1]), 0);
		uint32_t marked = 0;
		for (uint32_t i = 0; i < tx->num_slots; i++)
			marked += !!(tx->slot[i].flags & NS_BUF_CHANGED);
		CHECK(marked == 15, "null's TX ring: %u of 15 slots NS_BUF_CHANGED",
		      marked);
	}
	rig_close(&g);

	/* 2. Chains: of 16 (dropped: B's ring holds 15), then of 15, ending
	 * on the last slot that has arrived: sent whole, NS_MOREFRAG on all
	 * its slots but the last. */
	if (rig_open(&g, "c", false)) {
		put_chain(&g, 16, false);
		put_chain(&g, 15, false);
		g.br.count = 2;
		rig_work(&g);
		CHECK_EQ(atomic_load(&g.br.dir[0].c.drops), 1);
		CHECK_EQ(atomic_load(&g.br.dir[0].c.packets), 1);
		CHECK_EQ(atomic_load(&g.br.dir[0].c.tx_slots), 15);
		struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(g.sb), 0);
		pktmap_rxsync(g.sb);
		uint32_t got = 0, bad = 0;
		for (; !nm_ring_empty(rx); rx->head = rx->cur = nm_ring_next(rx, rx->head)) {
			const struct netmap_slot *sl = &rx->slot[rx->head];
			bad += !!(sl->flags & NS_MOREFRAG) != (got < 14) ||
			       sl->len != 60 + 16 + got;
			got++;
		}
		CHECK(got == 15 && bad == 0, "B's peer: %u slots, %u wrong", got, bad);
	}
	rig_close(&g);

	/* 3. A chain that never ends and fills A's ring (63 of 64 slots):
	 * let go, one drop, nothing sent. */
	if (rig_open(&g, "o", false)) {
		put_chain(&g, 63, true);
		g.br.count = 1;
		rig_work(&g);
		CHECK_EQ(atomic_load(&g.br.dir[0].c.drops), 1);
		CHECK_EQ(atomic_load(&g.br.dir[0].c.tx_slots), 0);
	}
	rig_close(&g);
}

/* A port opened for one direction only cannot be bridged. */
static void setup_errors(void)
{
	char a[96], b[96];
	struct bridge br;
	char err[400] = "";

	snprintf(a, sizeof(a), "pipe:tbe%d{0/T", (int)getpid());
	snprintf(b, sizeof(b), "pipe:tbf%d{0", (int)getpid());
	memset(&br, 0, sizeof(br));
	br.port[0] = open_port(a);
	br.port[1] = open_port(b);
	if (br.port[0] && br.port[1]) {
		CHECK_EQ(bridge_setup(&br, false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "no RX ring") && strstr(err, a), "message: %s",
		      err);
	}
	pktmap_close(br.port[0]);
	pktmap_close(br.port[1]);
}

int main(void)
{
	setup_errors();
	flags_and_chains();
	run("zc", true, false, 0, false);
	run("cp", false, false, 1, false);
	run("fc", true, true, 2, false);
	/* one region name, two memories: copied, every frame intact */
	if (geteuid() == 0)
		run("mm", true, false, 0, true);
	else
		CHECK(getenv("CI") == NULL, "CI=true: the two-memories case "
		      "needs root (group 0)");
	return t_done("bridge");
}
