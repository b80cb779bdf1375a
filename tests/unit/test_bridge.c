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
