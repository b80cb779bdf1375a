// SPDX-License-Identifier: BSD-2-Clause
/* xdp: AF_XDP ports on veth pairs, in a network namespace of the test's
 * own (everything it makes vanishes with the process).
 *
 *     [ xdp:xa ] --- veth xa <=====> veth xb --- [ xdp:xb ]
 *     [ xdp:qa ] --- veth qa <=====> veth qb --- [ xdp:qb ]   (2 queues)
 *
 * Exact counts, payload intact, order kept; xdp -> kernel counted by the
 * peer's counters; two ports sharing one region (and one UMEM) bouncing
 * frames by swapping buffers, within a port and across ports, with every
 * buffer given back at close; rebinding a queue right after a close; a
 * program left behind by a killed process is replaced; the open errors;
 * an interface deleted under open ports; and nothing (program, lock
 * file) is left behind. Needs root.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <time.h>

#include "name.h"
#include "netns.h"
#include "port.h"
#include "region.h"
#include "t.h"

static char logbuf[8192];

static void log_cb(void *ctx, enum pktmap_log_level lvl, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "  [lib %d] %s\n", (int)lvl, msg);
	size_t n = strlen(logbuf);
	snprintf(logbuf + n, sizeof(logbuf) - n, "%s\n", msg);
}

static int try_open(struct pktmap_port **p, const char *name, uint32_t dir,
		    char *err, size_t errlen)
{
	struct pktmap_open_opts o = { .sz = sizeof(o), .dir = dir, .errbuf = err,
				      .errbuf_len = errlen, .log = log_cb };
	err[0] = 0;
	return pktmap_open(p, name, &o);
}

static struct pktmap_port *open_port(const char *name, uint32_t dir)
{
	struct pktmap_port *p = NULL;
	char err[300];
	int r = try_open(&p, name, dir, err, sizeof(err));
	CHECK(r == 0, "open %s: %s (%s)", name, pktmap_strerror(r), err);
	return p;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Fill up to `max` free slots of TX ring r with test frames from *seq. */
static uint32_t fill_tx(struct pktmap_port *p, uint32_t r, uint32_t len,
			uint32_t *seq, uint32_t max)
{
	struct netmap_ring *ring = NETMAP_TXRING(pktmap_nifp(p), r);
	uint32_t n = 0;
	while (n < max && !nm_ring_empty(ring)) {
		struct netmap_slot *s = &ring->slot[ring->head];
		t_frame((uint8_t *)NETMAP_BUF(ring, s->buf_idx), len, (*seq)++, r);
		s->len = (uint16_t)len;
		ring->head = ring->cur = nm_ring_next(ring, ring->head);
		n++;
	}
	return n;
}

struct rxstate {
	uint64_t got, bad, misorder, foreign;
	uint32_t next;
	uint64_t per_ring[PM_MAX_RINGS];
};

static void check_rx(struct rxstate *st, uint32_t r, const uint8_t *b,
		     uint32_t len, bool order)
{
	uint32_t seq;
	int v = t_frame_check(b, len, &seq);
	if (v < 0) {
		st->foreign++;
		return;
	}
	st->got++;
	st->per_ring[r]++;
	if (v == 0)
		st->bad++;
	if (order && seq != st->next)
		st->misorder++;
	st->next = seq + 1;
}

static void drain(struct pktmap_port *p, struct rxstate *st, bool order)
{
	struct netmap_if *nifp = pktmap_nifp(p);
	pktmap_rxsync(p);
	for (uint32_t r = 0; r < nifp->ni_rx_rings; r++) {
		struct netmap_ring *ring = NETMAP_RXRING(nifp, r);
		while (!nm_ring_empty(ring)) {
			struct netmap_slot *s = &ring->slot[ring->head];
			check_rx(st, r, (uint8_t *)NETMAP_BUF(ring, s->buf_idx),
				 s->len, order);
			ring->head = ring->cur = nm_ring_next(ring, ring->head);
		}
	}
}

/* Send `count` frames from ring r of tx, receive them on rx (if any). */
static void run_traffic(struct pktmap_port *tx, uint32_t r,
			struct pktmap_port *rx, uint32_t count, uint32_t len,
			struct rxstate *st)
{
	uint32_t seq = 0, sent = 0;
	int64_t end = now_ms() + 20000;
	while ((sent < count || (rx && st->got < count)) && now_ms() < end) {
		/* At most 128 frames in flight, half of veth's XDP queue (256
		 * frames): a receiver the scheduler leaves waiting loses none. */
		bool room = !rx || sent - st->got < 128;
		if (sent < count && room) {
			uint32_t batch = count - sent < 64 ? count - sent : 64;
			sent += fill_tx(tx, r, len, &seq, batch);
			pktmap_txsync(tx);
		}
		if (rx) {
			drain(rx, st, true);
			if ((sent == count || !room) && st->got < count)
				pktmap_poll(rx, POLLIN, 10);
		} else if (sent == count) {
			break;
		}
		if (sent < count && nm_ring_empty(NETMAP_TXRING(pktmap_nifp(tx), r)))
			pktmap_poll(tx, POLLOUT, 10);
	}
	CHECK_EQ(sent, count);
}

/* Wait until every TX slot has come back (completions reaped). */
static void tx_settle(struct pktmap_port *p)
{
	int64_t end = now_ms() + 3000;
	struct netmap_if *nifp = pktmap_nifp(p);
	for (;;) {
		bool pending = false;
		pktmap_txsync(p);
		for (uint32_t r = 0; r < nifp->ni_tx_rings; r++)
			if (nm_tx_pending(NETMAP_TXRING(nifp, r)))
				pending = true;
		if (!pending || now_ms() > end)
			break;
		pktmap_poll(p, POLLOUT, 5);
	}
}

static uint32_t prog_id(const char *ifname)
{
	uint32_t id = 0;
	int ifindex = (int)if_nametoindex(ifname);
	if (ifindex)
		bpf_xdp_query_id(ifindex, 0, &id);
	return id;
}

static void expect_error(const char *name, uint32_t dir, const char *text)
{
	struct pktmap_port *p = NULL;
	char err[400];
	int r = try_open(&p, name, dir, err, sizeof(err));
	CHECK(r < 0, "open %s should fail", name);
	CHECK(strstr(err, text) != NULL, "%s: error '%s' lacks '%s'", name, err,
	      text);
	CHECK(strchr(err, '\n') == NULL, "one line: %s", err);
	fprintf(stderr, "  error as expected: %s\n", err);
	if (p)
		pktmap_close(p);
}

static uint32_t free_bufs(struct pktmap_port *p)
{
	pm_region_lock(&p->region);
	uint32_t n = pm_region_free_count(&p->region);
	pm_region_unlock(&p->region);
	return n;
}

/* A forwarder step: move what rx received into tx's TX ring r by
 * swapping buffer indices (zero-copy), as a netmap bridge does. */
static uint32_t forward(struct pktmap_port *rx, struct pktmap_port *tx)
{
	struct netmap_ring *in = NETMAP_RXRING(pktmap_nifp(rx), 0);
	struct netmap_ring *out = NETMAP_TXRING(pktmap_nifp(tx), 0);
	uint32_t moved = 0;
	pktmap_rxsync(rx);
	while (!nm_ring_empty(in) && !nm_ring_empty(out)) {
		struct netmap_slot *a = &in->slot[in->head];
		struct netmap_slot *b = &out->slot[out->head];
		uint32_t t = b->buf_idx;
		b->buf_idx = a->buf_idx;
		b->len = a->len;
		b->flags = NS_BUF_CHANGED;
		a->buf_idx = t;
		a->flags = NS_BUF_CHANGED;
		in->head = in->cur = nm_ring_next(in, in->head);
		out->head = out->cur = nm_ring_next(out, out->head);
		moved++;
	}
	pktmap_txsync(tx);
	return moved;
}

static void test_basic(void)
{
	/* xdp -> xdp, one queue, frames of several sizes. */
	struct pktmap_port *rx = open_port("xdp:xb", PKTMAP_DIR_RX);
	struct pktmap_port *tx = open_port("xdp:xa", PKTMAP_DIR_TX);
	if (!rx || !tx)
		goto out;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(rx, &info);
	CHECK(strcmp(info.backend, "xdp") == 0, "backend %s", info.backend);
	CHECK(strcmp(info.mode_name, "copy") == 0, "veth is copy mode: %s",
	      info.mode_name);
	CHECK_EQ(info.buf_usable, 2048 - 256);
	CHECK_EQ(info.rx_rings, 1);
	CHECK(prog_id("xb") != 0, "program attached to xb");
	CHECK(prog_id("xa") == 0, "no program for a TX-only port");

	/* NETMAP_BUF() is the frame's first byte: the UMEM address of a
	 * buffer is idx * buf_size + 256. */
	struct netmap_ring *ring = NETMAP_TXRING(pktmap_nifp(tx), 0);
	CHECK_EQ((char *)NETMAP_BUF(ring, 2) - (char *)tx->region.pool,
		 2 * 2048 + 256);

	uint32_t lens[] = { 60, 1514, 1000, 61 };
	for (unsigned i = 0; i < 4; i++) {
		struct rxstate st = { 0 };
		run_traffic(tx, 0, rx, 20000, lens[i], &st);
		CHECK_EQ(st.got, 20000);
		CHECK_EQ(st.bad, 0);
		CHECK_EQ(st.misorder, 0);
	}
	struct pktmap_stats s = { .sz = sizeof(s) };
	pktmap_stats(tx, &s);
	CHECK_EQ(s.tx_packets, 80000);
	CHECK_EQ(s.drop_backend, 0);
	pktmap_stats(rx, &s);
	CHECK_EQ(s.drop_backend, 0);
	CHECK(s.rx_packets >= 80000, "rx_packets %llu",
	      (unsigned long long)s.rx_packets);

	/* The checker on TX: a bad length is dropped and counted. */
	ring->slot[ring->head].len = 3000;
	ring->head = ring->cur = nm_ring_next(ring, ring->head);
	pktmap_txsync(tx);
	pktmap_stats(tx, &s);
	CHECK_EQ(s.drop_invalid, 1);

	/* One buffer in two slots of a batch: the first is sent, the
	 * second refused (the kernel holds that buffer). */
	uint32_t a = ring->head, b = nm_ring_next(ring, a), dseq = 0;
	uint32_t own_b = ring->slot[b].buf_idx;
	CHECK_EQ(fill_tx(tx, 0, 60, &dseq, 2), 2);
	ring->slot[b].buf_idx = ring->slot[a].buf_idx;
	pktmap_txsync(tx);
	tx_settle(tx);
	pktmap_stats(tx, &s);
	CHECK_EQ(s.tx_packets, 80001);
	CHECK_EQ(s.drop_invalid, 2);
	ring->slot[b].buf_idx = own_b;

	/* Busy polling (best effort) changes nothing visible but speed. */
	pktmap_close(rx);
	rx = NULL;
	{
		char err[300] = "";
		struct pktmap_open_opts o = { .sz = sizeof(o), .dir = PKTMAP_DIR_RX,
					      .flags = PKTMAP_OPEN_BUSY_POLL,
					      .errbuf = err, .errbuf_len = sizeof(err),
					      .log = log_cb };
		CHECK(pktmap_open(&rx, "xdp:xb", &o) == 0, "busy poll: %s", err);
		if (rx) {
			struct rxstate bst = { 0 };
			run_traffic(tx, 0, rx, 5000, 60, &bst);
			CHECK_EQ(bst.got, 5000);
		}
	}

	/* xdp -> the peer's kernel stack (no program on xb any more). */
	pktmap_close(rx);
	rx = NULL;
	CHECK(prog_id("xb") == 0, "program detached at close");
	uint64_t before = t_if_counter("xb", "rx_packets");
	struct rxstate st = { 0 };
	run_traffic(tx, 0, NULL, 50000, 60, &st);
	tx_settle(tx);
	uint64_t after = t_if_counter("xb", "rx_packets");
	CHECK_EQ(after - before, 50000);
out:
	pktmap_close(rx);
	pktmap_close(tx);
}

static void test_multiqueue(void)
{
	/* A veth with two queues: TX queue q of qa lands on RX queue q of qb. */
	struct pktmap_port *rx = open_port("xdp:qb", PKTMAP_DIR_RX);
	struct pktmap_port *tx = open_port("xdp:qa", PKTMAP_DIR_TX);
	if (!rx || !tx)
		goto out;
	CHECK_EQ(pktmap_nifp(rx)->ni_rx_rings, 2);
	struct rxstate st = { 0 };
	for (uint32_t r = 0; r < 2; r++) {
		uint32_t seq = 0, sent = 0;
		int64_t end = now_ms() + 10000;
		while (sent < 10000 && now_ms() < end) {
			/* At most 128 in flight, as in run_traffic(). */
			uint32_t flying = sent - (uint32_t)(st.got - 10000u * r);
			uint32_t room = flying < 128 ? 128 - flying : 0;
			if (room > 10000 - sent)
				room = 10000 - sent;
			sent += fill_tx(tx, r, 128, &seq, room);
			pktmap_txsync(tx);
			if (!room)
				pktmap_poll(rx, POLLIN, 10);
			drain(rx, &st, false);
		}
		end = now_ms() + 3000;
		while (st.got < 10000u * (r + 1) && now_ms() < end) {
			pktmap_poll(rx, POLLIN, 10);
			drain(rx, &st, false);
		}
	}
	CHECK_EQ(st.got, 20000);
	CHECK_EQ(st.bad, 0);
	CHECK_EQ(st.per_ring[0], 10000);
	CHECK_EQ(st.per_ring[1], 10000);
	pktmap_close(rx);
	rx = NULL;

	/* One queue only: the other keeps feeding the host stack. */
	rx = open_port("xdp:qb-1", PKTMAP_DIR_RX);
	if (!rx)
		goto out;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(rx, &info);
	CHECK_EQ(info.first_rx_ring, 1);
	CHECK_EQ(info.last_rx_ring, 1);
	uint64_t host0 = t_if_counter("qb", "rx_packets");
	memset(&st, 0, sizeof(st));
	uint32_t seq = 0;
	fill_tx(tx, 0, 100, &seq, 100); /* to queue 0: the host's */
	fill_tx(tx, 1, 100, &seq, 100); /* to queue 1: ours */
	pktmap_txsync(tx);
	int64_t end = now_ms() + 3000;
	while (st.got < 100 && now_ms() < end) {
		pktmap_poll(rx, POLLIN, 10);
		drain(rx, &st, false);
	}
	tx_settle(tx);
	CHECK_EQ(st.got, 100);
	CHECK_EQ(st.per_ring[1], 100);
	CHECK(t_if_counter("qb", "rx_packets") - host0 >= 100,
	      "queue 0 reached the host stack");
out:
	pktmap_close(rx);
	pktmap_close(tx);
}

static void test_shared_region(void)
{
	char na[64], nb[64];
	snprintf(na, sizeof(na), "xdp:xa@mem:xt%d@conf:bufs=30000", getpid());
	snprintf(nb, sizeof(nb), "xdp:xb@mem:xt%d", getpid());
	struct pktmap_port *a = open_port(na, PKTMAP_DIR_BOTH);
	if (!a)
		return;
	uint32_t f0 = free_bufs(a);
	logbuf[0] = 0;
	struct pktmap_port *b = open_port(nb, PKTMAP_DIR_BOTH);
	if (!b) {
		pktmap_close(a);
		return;
	}
	CHECK(strstr(logbuf, "UMEM shared with xa") != NULL,
	      "one UMEM for the two ports of the region: %s", logbuf);
	CHECK(f0 > free_bufs(b), "b took buffers");

	/* a sends; b bounces every frame back by swapping its RX buffer into
	 * its own TX ring; a receives. */
	struct rxstate st = { 0 };
	uint32_t seq = 0, sent = 0, count = 20000;
	int64_t end = now_ms() + 20000;
	while (st.got < count && now_ms() < end) {
		if (sent < count) {
			sent += fill_tx(a, 0, 200, &seq,
					count - sent < 64 ? count - sent : 64);
			pktmap_txsync(a);
		}
		forward(b, b);
		drain(a, &st, true);
	}
	CHECK_EQ(st.got, count);
	CHECK_EQ(st.bad, 0);
	CHECK_EQ(st.misorder, 0);

	/* Across ports: what b receives goes out of a, by swapping b's RX
	 * buffers into a's TX slots, and comes back to b. */
	memset(&st, 0, sizeof(st));
	struct rxstate st2 = { 0 };
	seq = sent = 0;
	count = 5000;
	end = now_ms() + 20000;
	struct netmap_ring *brx = NETMAP_RXRING(pktmap_nifp(b), 0);
	uint32_t second = 0;
	while (second < count && now_ms() < end) {
		if (sent < count) {
			sent += fill_tx(a, 0, 300, &seq,
					count - sent < 32 ? count - sent : 32);
			pktmap_txsync(a);
		}
		/* First arrival (seq < count) goes back through a; the
		 * second is counted. Frames keep their sequence numbers. */
		pktmap_rxsync(b);
		struct netmap_ring *atx = NETMAP_TXRING(pktmap_nifp(a), 0);
		while (!nm_ring_empty(brx)) {
			struct netmap_slot *s = &brx->slot[brx->head];
			uint8_t *buf = (uint8_t *)NETMAP_BUF(brx, s->buf_idx);
			uint32_t sq;
			int v = t_frame_check(buf, s->len, &sq);
			bool first = v > 0 && buf[0] == 0x02;
			if (first && nm_ring_empty(atx))
				break;
			if (first) {
				buf[0] = 0x06; /* mark: the second trip */
				struct netmap_slot *t = &atx->slot[atx->head];
				uint32_t x = t->buf_idx;
				t->buf_idx = s->buf_idx;
				t->len = s->len;
				t->flags = NS_BUF_CHANGED;
				s->buf_idx = x;
				s->flags = NS_BUF_CHANGED;
				atx->head = atx->cur = nm_ring_next(atx, atx->head);
			} else {
				second++;
				st2.bad += v != 1;
			}
			brx->head = brx->cur = nm_ring_next(brx, brx->head);
		}
		pktmap_txsync(a);
		drain(a, &st, false);
	}
	CHECK_EQ(second, count);
	CHECK_EQ(st2.bad, 0);

	/* Every buffer b took comes back, whatever moved between the
	 * ports; and a can be closed and reopened to the same count. */
	tx_settle(a);
	tx_settle(b);
	pktmap_close(b);
	CHECK_EQ(free_bufs(a), f0);
	/* Rebinding the same queues at once (the kernel frees a closed
	 * socket's queue in deferred work). */
	b = open_port(nb, PKTMAP_DIR_BOTH);
	if (b) {
		uint32_t f1 = free_bufs(b);
		pktmap_close(a);
		a = open_port(na, PKTMAP_DIR_BOTH);
		CHECK_EQ(free_bufs(b), f1);
	}
	pktmap_close(a);
	pktmap_close(b);
}

static void test_stale_program(void)
{
	/* A process killed while it has the port open leaves nothing: its
	 * program hangs on a BPF link that dies with its descriptors. */
	int pfd[2];
	if (pipe(pfd) != 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct pktmap_port *p = NULL;
		char err[300];
		close(pfd[0]);
		int r = try_open(&p, "xdp:xb", PKTMAP_DIR_RX, err, sizeof(err));
		char c = r == 0 ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	char c = 0;
	CHECK(read(pfd[0], &c, 1) == 1 && c == 'y', "child opened xdp:xb");
	close(pfd[0]);
	uint32_t left = prog_id("xb");
	CHECK(left != 0, "the child's program is attached");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* The last fput of the link may run a moment after the exit. */
	int64_t end = now_ms() + 5000;
	while (prog_id("xb") != 0 && now_ms() < end)
		poll(NULL, 0, 10);
	CHECK(prog_id("xb") == 0, "nothing stays behind after SIGKILL");

	/* One attached without a link (an older pktmap's) is replaced. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "ip link set dev xb xdpdrv obj '%s/bpf/"
		 "pktmap_xdp.bpf.o' sec xdp.frags", getenv("PKTMAP_BUILD_ROOT") ?
		 getenv("PKTMAP_BUILD_ROOT") : ".");
	/* (ip may attach nothing while other namespaces come and go.) */
	for (int i = 0; i < 5 && getenv("PKTMAP_BUILD_ROOT") && !prog_id("xb"); i++)
		(void)t_run(cmd);
	if (prog_id("xb")) {
		left = prog_id("xb");
		logbuf[0] = 0;
		struct pktmap_port *rx = open_port("xdp:xb", PKTMAP_DIR_RX);
		CHECK(strstr(logbuf, "replacing the pktmap XDP program") != NULL,
		      "replacement is reported: %s", logbuf);
		CHECK(prog_id("xb") != left && prog_id("xb") != 0, "a new program");
		struct pktmap_port *tx = open_port("xdp:xa", PKTMAP_DIR_TX);
		if (rx && tx) {
			struct rxstate st = { 0 };
			run_traffic(tx, 0, rx, 1000, 60, &st);
			CHECK_EQ(st.got, 1000);
		}
		pktmap_close(rx);
		pktmap_close(tx);
		CHECK(prog_id("xb") == 0, "detached at close");
	} else {
		CHECK(0, "cannot attach a pktmap program without a link: %s", cmd);
	}
}

static void test_errors(void)
{
	expect_error("xdp:nosuch9", PKTMAP_DIR_RX, "xdp:nosuch9: no such interface");
	expect_error("xdp:xa/Z", PKTMAP_DIR_RX,
		     "driver veth has no zero-copy AF_XDP support: drop /Z to run "
		     "in copy mode");
	expect_error("xdp:xa-3", PKTMAP_DIR_RX, "queue 3 does not exist");
	expect_error("xdp:xa^1", PKTMAP_DIR_RX, "host ring 1 does not exist");
	expect_error("xdp:xa@conf:buf-size=8192", PKTMAP_DIR_RX,
		     "2048 or 4096");
	if (t_setup("ip link set xa mtu 40000") == 0) {
		expect_error("xdp:xa", PKTMAP_DIR_RX,
			     "MTU 40000: frames up to 40018 bytes need more than 17 "
			     "buffers of 1792 bytes");
		t_run("ip link set xa mtu 1500");
	}
	struct pktmap_port *p4 = open_port("xdp:xa@conf:buf-size=4096", PKTMAP_DIR_RX);
	if (p4) {
		struct pktmap_info info = { .sz = sizeof(info) };
		pktmap_info(p4, &info);
		CHECK_EQ(info.buf_usable, 4096 - 256);
	}
	pktmap_close(p4);
	/* Another program on the interface is not ours to replace. */
	struct bpf_insn pass[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 2 }, /* r0 = XDP_PASS */
		{ .code = 0x95 },                         /* exit */
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "other_xdp", "GPL", pass, 2,
			       NULL);
	int xb = (int)if_nametoindex("xb");
	CHECK(fd >= 0, "load a foreign program: %d", fd);
	int att = fd >= 0 ? bpf_xdp_attach(xb, fd, XDP_FLAGS_SKB_MODE, NULL) : -1;
	CHECK(att == 0, "attach the foreign program to xb: %d", att);
	if (att == 0) {
		expect_error("xdp:xb", PKTMAP_DIR_RX,
			     "another XDP program ('other_xdp'");
		CHECK(prog_id("xb") != 0, "the foreign program stays");
		bpf_xdp_detach(xb, XDP_FLAGS_SKB_MODE, NULL);
	}
	if (fd >= 0)
		close(fd);
	/* Busy: two ports on one queue. */
	struct pktmap_port *p = open_port("xdp:xa", PKTMAP_DIR_RX);
	expect_error("xdp:xa", PKTMAP_DIR_RX, "is busy");
	pktmap_close(p);
	CHECK(prog_id("xa") == 0, "nothing left on xa");
}

/* ---- live-frames TX (@conf:tx=live) */

static uint64_t drop_backend(struct pktmap_port *p)
{
	struct pktmap_stats s = { .sz = sizeof(s) };
	pktmap_stats(p, &s);
	return s.drop_backend;
}

/* BPF objects (programs, maps, links) and network namespaces this
 * process holds descriptors of. */
static int bpf_fds(void)
{
	char path[64], target[64];
	int n = 0;
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t l = readlink(path, target, sizeof(target) - 1);
		if (l <= 0)
			continue;
		target[l] = 0;
		n += strncmp(target, "anon_inode:bpf-", 15) == 0 ||
		     strncmp(target, "net:[", 5) == 0;
	}
	return n;
}

/* Send `count` frames of lengths lo..hi (varying) from TX ring r, `batch`
 * per txsync, receiving on rx until every frame arrived or was counted
 * dropped (by either port). Returns the drops. */
static uint64_t live_traffic(struct pktmap_port *tx, uint32_t r,
			     struct pktmap_port *rx, uint32_t count, uint32_t lo,
			     uint32_t hi, uint32_t batch, struct rxstate *st)
{
	struct netmap_ring *ring = NETMAP_TXRING(pktmap_nifp(tx), r);
	uint64_t d0 = drop_backend(tx) + drop_backend(rx), drops = 0;
	uint32_t seq = st->next, sent = 0;
	while (sent < count) {
		for (uint32_t b = 0; b < batch && sent < count; b++, sent++) {
			uint32_t len = lo + (seq * 37u) % (hi - lo + 1);
			fill_tx(tx, r, len, &seq, 1);
		}
		pktmap_txsync(tx);
		/* The kernel copied the frames: every slot is free again. */
		CHECK_EQ(nm_ring_space(ring), ring->num_slots - 1);
		drain(rx, st, true);
	}
	int64_t end = now_ms() + 10000;
	while (now_ms() < end) {
		drain(rx, st, true);
		drops = drop_backend(tx) + drop_backend(rx) - d0;
		if (st->got + drops >= count)
			break;
		pktmap_poll(rx, POLLIN, 10);
	}
	return drops;
}

static void test_live(void)
{
	int fds0 = bpf_fds();
	struct pktmap_port *rx = open_port("xdp:xb@conf:rx-slots=4096", PKTMAP_DIR_RX);
	struct pktmap_port *tx = open_port("xdp:xa@conf:tx=live", PKTMAP_DIR_TX);
	if (!rx || !tx)
		goto out;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(tx, &info);
	CHECK(strcmp(info.mode_name, "live") == 0, "mode %s", info.mode_name);
	CHECK_EQ(info.mode, PKTMAP_MODE_LIVE);
	CHECK(prog_id("xa") == 0, "no XDP program attached for TX");

	/* Every frame, every byte, in order; a frame the kernel dropped
	 * (a receiver starved of CPU) is counted, never silent. */
	uint32_t lens[][2] = { { 60, 60 }, { 1514, 1514 }, { 60, 1514 } };
	uint32_t batches[] = { 1, 64, 1023 };
	uint64_t total = 0;
	for (unsigned i = 0; i < 3; i++) {
		struct rxstate st = { 0 };
		uint64_t d = live_traffic(tx, 0, rx, 20000, lens[i][0], lens[i][1],
					  batches[i], &st);
		fprintf(stderr, "  live %u-%u, batch %u: %llu received, %llu "
			"dropped (counted)\n", lens[i][0], lens[i][1], batches[i],
			(unsigned long long)st.got, (unsigned long long)d);
		CHECK_EQ(st.got + d, 20000);
		CHECK_EQ(st.bad, 0);
		CHECK_EQ(st.foreign, 0);
		CHECK(st.misorder <= d, "%llu out of order, %llu dropped",
		      (unsigned long long)st.misorder, (unsigned long long)d);
		total += 20000;
	}
	struct pktmap_stats s = { .sz = sizeof(s) };
	pktmap_stats(tx, &s);
	CHECK(s.tx_packets + s.drop_backend == total, "tx %llu + dropped %llu "
	      "of %llu", (unsigned long long)s.tx_packets,
	      (unsigned long long)s.drop_backend, (unsigned long long)total);

	/* The checker: bad lengths and chains are dropped and counted,
	 * nothing reaches the kernel. */
	struct netmap_ring *ring = NETMAP_TXRING(pktmap_nifp(tx), 0);
	uint64_t sent0 = s.tx_packets, inv0 = s.drop_invalid;
	uint32_t bad_lens[] = { 3000, 10, 100, 100 };
	for (unsigned i = 0; i < 4; i++) {
		struct netmap_slot *sl = &ring->slot[ring->head];
		sl->len = (uint16_t)bad_lens[i];
		sl->flags = i == 2 ? NS_MOREFRAG : 0; /* a chain of two */
		ring->head = ring->cur = nm_ring_next(ring, ring->head);
	}
	pktmap_txsync(tx);
	pktmap_stats(tx, &s);
	CHECK_EQ(s.drop_invalid - inv0, 2);
	CHECK_EQ(s.drop_too_long, 1);
	CHECK_EQ(s.tx_packets, sent0);
	ring->slot[(ring->head + ring->num_slots - 2) % ring->num_slots].flags = 0;
	/* A chain submitted in two syncs waits for its end; its tail is
	 * never sent as a frame of its own. */
	ring->slot[ring->head].len = 100;
	ring->slot[ring->head].flags = NS_MOREFRAG;
	ring->head = ring->cur = nm_ring_next(ring, ring->head);
	pktmap_txsync(tx);
	CHECK(nm_tx_pending(ring), "the chain's first slot waits");
	uint32_t seq0 = 0;
	fill_tx(tx, 0, 100, &seq0, 1);
	pktmap_txsync(tx);
	CHECK(!nm_tx_pending(ring), "the whole chain went");
	pktmap_stats(tx, &s);
	CHECK_EQ(s.drop_too_long, 2);
	CHECK_EQ(s.tx_packets, sent0);
	ring->slot[(ring->head + ring->num_slots - 2) % ring->num_slots].flags = 0;

	/* No XDP program on the peer: a veth drops what is redirected to
	 * it, after our program ran. Counted, and said once. */
	pktmap_close(rx);
	rx = NULL;
	logbuf[0] = 0;
	uint64_t peer0 = t_if_counter("xb", "rx_packets");
	uint64_t dr0 = drop_backend(tx);
	uint32_t seq = 0;
	fill_tx(tx, 0, 60, &seq, 1000);
	pktmap_txsync(tx);
	pktmap_stats(tx, &s);
	CHECK_EQ(s.drop_backend - dr0, 1000);
	CHECK_EQ(s.tx_packets, sent0);
	CHECK_EQ(t_if_counter("xb", "rx_packets") - peer0, 0);
	CHECK(strstr(logbuf, "the kernel dropped 1000 of 1000 frames redirected "
		     "to xa (a veth delivers only to a peer with NAPI on: an "
		     "XDP program there, or GRO") != NULL, "log: %s", logbuf);
	pktmap_close(tx);
	tx = NULL;

	/* Two queues, one run each per sync: each queue's own frames (the
	 * run's metadata names the queue), each frame once. */
	rx = open_port("xdp:qb@conf:rx-slots=4096", PKTMAP_DIR_RX);
	tx = open_port("xdp:qa@conf:tx=live", PKTMAP_DIR_TX);
	if (!rx || !tx)
		goto out;
	static uint8_t seen[2000];
	memset(seen, 0, sizeof(seen));
	uint64_t d0 = drop_backend(tx) + drop_backend(rx), got = 0, dup = 0, d = 0;
	uint64_t per_q[2] = { 0, 0 };
	seq = 0;
	fill_tx(tx, 0, 100, &seq, 1000);
	fill_tx(tx, 1, 200, &seq, 1000);
	pktmap_txsync(tx);
	int64_t end = now_ms() + 10000;
	struct netmap_if *nifp = pktmap_nifp(rx);
	while (got + d < 2000 && now_ms() < end) {
		pktmap_poll(rx, POLLIN, 10);
		for (uint32_t r = 0; r < nifp->ni_rx_rings; r++) {
			struct netmap_ring *in = NETMAP_RXRING(nifp, r);
			for (; !nm_ring_empty(in); in->head = in->cur = nm_ring_next(in, in->head)) {
				struct netmap_slot *sl = &in->slot[in->head];
				uint32_t sq = UINT32_MAX;
				int v = t_frame_check((uint8_t *)NETMAP_BUF(in, sl->buf_idx),
						      sl->len, &sq);
				CHECK(v == 1 && sq < 2000 && sl->len == (sq < 1000 ? 100u : 200u),
				      "frame %d seq %u len %u", v, sq, sl->len);
				if (v == 1 && sq < 2000) {
					dup += seen[sq]++ != 0;
					per_q[sq >= 1000]++;
				}
				got++;
			}
		}
		d = drop_backend(tx) + drop_backend(rx) - d0;
	}
	CHECK_EQ(got + d, 2000);
	CHECK_EQ(dup, 0);
	/* (A lost frame is counted, but a queue whose frames all went
	 * missing had its runs read another queue's slots.) */
	CHECK(per_q[0] > 0 && per_q[1] > 0, "queue 0 sent %llu, queue 1 %llu",
	      (unsigned long long)per_q[0], (unsigned long long)per_q[1]);
out:
	pktmap_close(rx);
	pktmap_close(tx);
	CHECK(prog_id("xa") == 0 && prog_id("xb") == 0, "no XDP program left");
	CHECK_EQ(bpf_fds(), fds0);
	expect_error("xdp:xa@conf:tx=fast", PKTMAP_DIR_TX,
		     "'@conf:tx=fast': expected live (BPF_PROG_RUN live frames) "
		     "or xsk (AF_XDP)");
	expect_error("xdp:xa^@conf:tx=live", PKTMAP_DIR_TX,
		     "tx=live applies to the NIC rings");
	expect_error("xdp:nosuch9@conf:tx=live", PKTMAP_DIR_TX,
		     "xdp:nosuch9@conf:tx=live: no such interface");
	CHECK_EQ(bpf_fds(), fds0);
}

/* ---- host rings: the machine's own ping and TCP through the application */

static atomic_int bridge_stop;

/* Move what arrived on one ring to the other by swapping buffers (the
 * host and NIC rings of one port share its region). */
static void bridge_rings(struct netmap_ring *in, struct netmap_ring *out)
{
	while (!nm_ring_empty(in) && !nm_ring_empty(out)) {
		struct netmap_slot *a = &in->slot[in->head];
		struct netmap_slot *b = &out->slot[out->head];
		uint32_t t = b->buf_idx;
		b->buf_idx = a->buf_idx;
		b->len = a->len;
		b->flags = NS_BUF_CHANGED;
		a->buf_idx = t;
		a->flags = NS_BUF_CHANGED;
		in->head = in->cur = nm_ring_next(in, in->head);
		out->head = out->cur = nm_ring_next(out, out->head);
	}
}

/* netmap's "bridge xdp:yb xdp:yb^" in one port: NIC rings <-> host rings. */
static void *bridge_main(void *arg)
{
	struct pktmap_port *p = arg;
	struct netmap_if *nifp = pktmap_nifp(p);
	uint32_t n = nifp->ni_rx_rings;
	while (!atomic_load(&bridge_stop)) {
		pktmap_poll(p, POLLIN, 20);
		for (uint32_t r = 0; r < n; r++)
			bridge_rings(NETMAP_RXRING(nifp, r), NETMAP_TXRING(nifp, n));
		bridge_rings(NETMAP_RXRING(nifp, n), NETMAP_TXRING(nifp, 0));
		pktmap_txsync(p);
	}
	return NULL;
}

static uint16_t csum16(const uint8_t *b, size_t len)
{
	uint32_t sum = 0;
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)(b[len - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One ICMP echo to addr; 1 if the reply came within a second. */
static int ping_once(const char *addr, uint16_t seq)
{
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd < 0)
		return 0;
	struct timeval tv = { .tv_sec = 1 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	uint8_t req[64] = { 8, 0, 0, 0, 0x70, 0x6b, (uint8_t)(seq >> 8),
			    (uint8_t)seq };
	uint16_t c = csum16(req, sizeof(req));
	req[2] = (uint8_t)(c >> 8), req[3] = (uint8_t)c;
	struct sockaddr_in to = { .sin_family = AF_INET };
	inet_pton(AF_INET, addr, &to.sin_addr);
	int ok = 0;
	if (sendto(fd, req, sizeof(req), 0, (struct sockaddr *)&to, sizeof(to)) > 0) {
		uint8_t buf[256];
		ssize_t n;
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
			uint32_t hl = (buf[0] & 15u) * 4;
			if ((size_t)n >= hl + 8 && buf[hl] == 0 && buf[hl + 4] == 0x70 &&
			    buf[hl + 5] == 0x6b && buf[hl + 7] == (uint8_t)seq) {
				ok = 1;
				break;
			}
		}
	}
	close(fd);
	return ok;
}

/* Child side of the host-ring test: a network namespace of its own with
 * veth ya in it, and a TCP echo server on 10.9.0.1:5001. */
static void peer_main(int ready, int go)
{
	char c = 1;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNET) != 0)
		_exit(1);
	if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
		_exit(1);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(5001) };
	inet_pton(AF_INET, "10.9.0.1", &a.sin_addr);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 1) != 0)
		_exit(1);
	if (write(ready, &c, 1) != 1)
		_exit(1);
	int s = accept(ls, NULL, NULL);
	char buf[65536];
	ssize_t n;
	while (s >= 0 && (n = read(s, buf, sizeof(buf))) > 0)
		if (write(s, buf, (size_t)n) != n)
			break;
	pause(); /* the namespace (and ya) lives until the test kills us */
	_exit(0);
}

static void test_host_rings(void)
{
	int ready[2], go[2];
	char cmd[320], c = 0;
	if (pipe(ready) || pipe(go))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		peer_main(ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	CHECK(read(ready[0], &c, 1) == 1, "peer namespace");
	/* veth hands XDP the peer's frames with the checksum left to
	 * offload (a wire never does): the peer computes its own. */
	snprintf(cmd, sizeof(cmd),
		 "ip link add ya type veth peer name yb && ip link set ya netns %d "
		 "&& nsenter -t %d -n sh -c 'ip addr add 10.9.0.1/24 dev ya && "
		 "ip link set dev ya up && ethtool -K ya tx off >/dev/null'",
		 (int)pid, (int)pid);
	CHECK(t_run(cmd) == 0, "peer set up");
	CHECK(t_run("ip addr add 10.9.0.2/24 dev yb && ip link set dev yb up") == 0,
	      "yb up");
	CHECK(write(go[1], &c, 1) == 1 && read(ready[0], &c, 1) == 1,
	      "peer listening");

	/* NIC rings and host rings in one port, bridged by a thread. */
	struct pktmap_port *p = open_port("xdp:yb*", PKTMAP_DIR_BOTH);
	if (!p)
		goto out;
	CHECK_EQ(pktmap_nifp(p)->ni_host_rx_rings, 1);
	CHECK(t_run("tc filter show dev yb egress | grep -q pktmap_host_eg") == 0,
	      "TC egress program attached");
	CHECK(t_run("ethtool -k yb | grep -q 'tx-checksumming: off'") == 0,
	      "checksum offload off while the host rings are open");
	CHECK(t_run("ip -d link show dev yb | grep -q 'gso_max_segs 1 '") == 0,
	      "one segment per skb while the host rings are open");
	pthread_t th;
	atomic_store(&bridge_stop, 0);
	pthread_create(&th, NULL, bridge_main, p);

	int pings = 0;
	for (uint16_t i = 1; i <= 5; i++)
		pings += ping_once("10.9.0.1", i);
	CHECK_EQ(pings, 5);

	/* TCP: 4 MB echoed back byte for byte. */
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(5001) };
	inet_pton(AF_INET, "10.9.0.1", &a.sin_addr);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	size_t total = (size_t)1 << (getenv("TCPMB_SHIFT") ? atoi(getenv("TCPMB_SHIFT")) : 22), sent = 0, got = 0;
	int bad = 0;
	int cr = connect(s, (struct sockaddr *)&a, sizeof(a));
	CHECK(cr == 0, "connect: %s", strerror(errno));
	if (cr == 0) {
		static uint8_t out[4096], in[65536];
		int64_t end = now_ms() + 30000;
		while (got < total && now_ms() < end) {
			if (sent < total) {
				for (size_t k = 0; k < sizeof(out); k++)
					out[k] = (uint8_t)((sent + k) * 13);
				size_t want = total - sent < sizeof(out) ?
						      total - sent : sizeof(out);
				ssize_t n = send(s, out, want, MSG_DONTWAIT);
				if (n > 0)
					sent += (size_t)n;
				else if (n < 0 && errno != EAGAIN)
					break;
			}
			ssize_t n = recv(s, in, sizeof(in), sent < total ? MSG_DONTWAIT : 0);
			if (n == 0 || (n < 0 && errno != EAGAIN) ||
			    (n < 0 && sent == total))
				break; /* closed, failed, or 5 s of silence */
			for (ssize_t k = 0; k < n; k++)
				bad += in[k] != (uint8_t)((got + (size_t)k) * 13);
			if (n > 0)
				got += (size_t)n;
		}
	}
	close(s);
	CHECK(got == total, "TCP: %zu of %zu bytes echoed (%zu sent)", got, total,
	      sent);
	CHECK_EQ(bad, 0);

	atomic_store(&bridge_stop, 1);
	pthread_join(th, NULL);
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	fprintf(stderr, "  bridge: %llu frames received, %llu sent; dropped %llu "
		"invalid, %llu too long, %llu in the kernel\n",
		(unsigned long long)st.rx_packets, (unsigned long long)st.tx_packets,
		(unsigned long long)st.drop_invalid,
		(unsigned long long)st.drop_too_long,
		(unsigned long long)st.drop_backend);
	if (got != total) {
		t_run("nstat -a | grep -E 'Tcp|IpOut|IpIn'");
		snprintf(cmd, sizeof(cmd), "nsenter -t %d -n nstat -a | grep -E "
			 "'Tcp|IpOut|IpIn'", (int)pid);
		t_run(cmd);
	}
	pktmap_close(p);
	CHECK(t_run("tc filter show dev yb egress | grep -q pktmap") != 0,
	      "TC program detached");
	CHECK(t_run("tc qdisc show dev yb | grep -q clsact") != 0,
	      "clsact qdisc removed");
	CHECK(t_run("ethtool -k yb | grep -q 'tx-checksumming: on'") == 0,
	      "checksum offload restored");
	CHECK(t_run("ip -d link show dev yb | grep -q 'gso_max_segs 65535'") == 0,
	      "gso_max_segs restored");
	CHECK(prog_id("yb") == 0, "XDP program detached");

	/* Without the application nothing passes: netmap mode. */
	p = open_port("xdp:yb*", PKTMAP_DIR_BOTH);
	CHECK(ping_once("10.9.0.1", 99) == 0, "no bridge, no ping");
	pktmap_close(p);
	CHECK(ping_once("10.9.0.1", 100) == 1, "the host stack has the link back");

	/* A process killed with the host rings open leaves its TC program;
	 * the next one replaces it and says so. */
	int sync[2];
	if (pipe(sync) == 0) {
		pid_t k = fork();
		if (k == 0) {
			struct pktmap_port *q = NULL;
			char err[300];
			c = try_open(&q, "xdp:yb^", PKTMAP_DIR_BOTH, err,
				     sizeof(err)) == 0;
			if (write(sync[1], &c, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		CHECK(read(sync[0], &c, 1) == 1 && c == 1, "child has yb^");
		kill(k, SIGKILL);
		waitpid(k, NULL, 0);
		close(sync[0]);
		close(sync[1]);
		CHECK(t_run("tc filter show dev yb egress | grep -q pktmap_host_eg") ==
			      0, "the TC program stays behind");
		logbuf[0] = 0;
		p = open_port("xdp:yb^", PKTMAP_DIR_BOTH);
		CHECK(strstr(logbuf, "replacing the pktmap TC egress program"),
		      "replacement reported: %s", logbuf);
		pktmap_close(p);
		CHECK(t_run("tc filter show dev yb egress | grep -q pktmap") != 0,
		      "TC program detached");
	}
out:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	t_run("ip link del yb 2>/dev/null");
}

/* Frames larger than a buffer: NS_MOREFRAG chains both ways (AF_XDP
 * multi-buffer), with a 9000-byte MTU. */
static void test_multibuffer(void)
{
	if (t_setup("ip link set dev xa mtu 9000 && ip link set dev xb mtu 9000"))
		return;
	struct pktmap_port *rx = open_port("xdp:xb", PKTMAP_DIR_RX);
	struct pktmap_port *tx = open_port("xdp:xa", PKTMAP_DIR_TX);
	static uint8_t frame[9100], got[9100];
	uint32_t lens[] = { 60, 1792, 1793, 5000, 9014 };
	uint32_t sent = 0, ok = 0, bad = 0, total = 0;
	if (!rx || !tx)
		goto out;
	struct netmap_ring *t = NETMAP_TXRING(pktmap_nifp(tx), 0);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(rx), 0);
	uint32_t usable = 2048 - 256, glen = 0;
	int64_t end = now_ms() + 10000;
	total = 2000;
	while ((sent < total || ok + bad < total) && now_ms() < end) {
		/* Send one frame as a chain, when the ring has room for it. */
		uint32_t len = lens[sent % 5], nfr = (len + usable - 1) / usable;
		if (sent < total && nm_ring_space(t) >= nfr) {
			t_frame(frame, len, sent, 0);
			for (uint32_t f = 0, o = 0; f < nfr; f++) {
				struct netmap_slot *sl = &t->slot[t->head];
				uint32_t l = len - o < usable ? len - o : usable;
				memcpy(NETMAP_BUF(t, sl->buf_idx), frame + o, l);
				sl->len = (uint16_t)l;
				sl->flags = f + 1 < nfr ? NS_MOREFRAG : 0;
				o += l;
				t->head = t->cur = nm_ring_next(t, t->head);
			}
			sent++;
		}
		pktmap_txsync(tx);
		pktmap_rxsync(rx);
		while (!nm_ring_empty(r)) {
			struct netmap_slot *sl = &r->slot[r->head];
			if (glen + sl->len <= sizeof(got))
				memcpy(got + glen, NETMAP_BUF(r, sl->buf_idx), sl->len);
			glen += sl->len;
			r->head = r->cur = nm_ring_next(r, r->head);
			if (sl->flags & NS_MOREFRAG)
				continue;
			uint32_t seq;
			int v = t_frame_check(got, glen, &seq);
			if (v == 1 && glen == lens[seq % 5])
				ok++;
			else if (v >= 0)
				bad++;
			glen = 0;
		}
	}
	CHECK_EQ(sent, total);
	CHECK_EQ(ok, total);
	CHECK_EQ(bad, 0);
	CHECK_EQ(glen, 0);
out:
	pktmap_close(rx);
	pktmap_close(tx);
	t_run("ip link set dev xa mtu 1500 && ip link set dev xb mtu 1500");
}

/* The sender of test_sleep: waits until the sleeper has been asleep a
 * while (it cannot see the sleep itself: a late start only makes poll
 * return at once, a missed wake-up makes it time out), then sends. */
struct sleep_sender {
	struct pktmap_port *tx; /* opened by the main thread (CHECK is not
				 * thread-safe) */
	int go;                 /* a pipe's read end: one byte a round */
	uint32_t frames;
};

static void *sleep_send(void *arg)
{
	struct sleep_sender *ss = arg;
	struct pktmap_port *tx = ss->tx;
	uint32_t seq = 0;
	char c;
	while (read(ss->go, &c, 1) == 1) {
		usleep(200 * 1000);
		uint32_t sent = 0;
		while (sent < ss->frames) {
			sent += fill_tx(tx, 0, 60, &seq, ss->frames - sent);
			pktmap_txsync(tx);
		}
		tx_settle(tx);
	}
	return NULL;
}

static void test_sleep(void)
{
	/* A port that receives and transmits sleeps in pktmap_poll() for
	 * input: its socket joins the epoll set only for the sleep (it
	 * leaves it after), so each round re-joins. Every round must wake
	 * on the frames and get all of them. A missed wake-up would still
	 * return, at the 60 s timeout (poll looks once more then): a round
	 * must end well before it (the frames go 0.2 s after the start). */
	struct pktmap_port *p = open_port("xdp:xb", PKTMAP_DIR_RX | PKTMAP_DIR_TX);
	struct pktmap_port *tx = open_port("xdp:xa", PKTMAP_DIR_TX);
	int go[2];
	if (!p || !tx || pipe(go) != 0) {
		pktmap_close(p);
		pktmap_close(tx);
		return;
	}
	struct sleep_sender ss = { .tx = tx, .go = go[0], .frames = 100 };
	pthread_t th;
	pthread_create(&th, NULL, sleep_send, &ss);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(p), 0);
	uint32_t seq_ok = 0;
	for (int round = 0; round < 3; round++) {
		CHECK_EQ(write(go[1], "x", 1), 1);
		uint32_t got = 0;
		int64_t t0 = now_ms();
		while (got < ss.frames) {
			int rev = pktmap_poll(p, POLLIN, 60000);
			CHECK(rev > 0 && (rev & POLLIN), "round %d: woke with %d "
			      "after %u frames", round, rev, got);
			if (rev <= 0)
				break;
			pktmap_rxsync(p);
			while (!nm_ring_empty(r)) {
				struct netmap_slot *sl = &r->slot[r->head];
				uint32_t seq;
				int v = t_frame_check((uint8_t *)NETMAP_BUF(r, sl->buf_idx),
						      sl->len, &seq);
				if (v == 1 && seq == round * ss.frames + got)
					seq_ok++;
				got += v >= 0; /* not the kernel's own frames */
				r->head = r->cur = nm_ring_next(r, r->head);
			}
		}
		CHECK_EQ(got, ss.frames);
		CHECK(now_ms() - t0 < 30000, "round %d: no wake-up (%lld ms)",
		      round, (long long)(now_ms() - t0));
	}
	CHECK_EQ(seq_ok, 3 * ss.frames);
	close(go[1]);
	pthread_join(th, NULL);
	close(go[0]);
	pktmap_close(tx);
	pktmap_close(p);
}

static void test_device_gone(void)
{
	/* The interface disappears under open ports: a reader sees the end
	 * of the source (POLLHUP), a writer an error; close still works. */
	if (t_setup("ip link add xc type veth peer name xd && "
		  "ip link set dev xc up && ip link set dev xd up"))
		return;
	struct pktmap_port *rx = open_port("xdp:xd", PKTMAP_DIR_RX);
	struct pktmap_port *tx = open_port("xdp:xc", PKTMAP_DIR_TX);
	t_run("ip link del xc");
	if (rx) {
		int rev = 0;
		int64_t end = now_ms() + 3000;
		while (!(rev & POLLHUP) && now_ms() < end)
			rev = pktmap_poll(rx, POLLIN, 100);
		CHECK(rev > 0 && (rev & POLLHUP), "POLLHUP after the device went "
		      "away: %d", rev);
	}
	if (tx) {
		uint32_t seq = 0;
		fill_tx(tx, 0, 60, &seq, 8);
		CHECK_EQ(pktmap_txsync(tx), -ENODEV);
	}
	pktmap_close(rx);
	pktmap_close(tx);

	/* The same for a live-frames writer: its frames counted dropped. */
	if (t_run("ip link add xg type veth peer name xh && "
		  "ip link set dev xg up && ip link set dev xh up"))
		return;
	tx = open_port("xdp:xg@conf:tx=live", PKTMAP_DIR_TX);
	t_run("ip link del xg");
	if (tx) {
		uint32_t seq = 0;
		fill_tx(tx, 0, 60, &seq, 8);
		CHECK_EQ(pktmap_txsync(tx), -ENODEV);
		struct pktmap_stats s = { .sz = sizeof(s) };
		pktmap_stats(tx, &s);
		CHECK_EQ(s.drop_backend, 8);
		fill_tx(tx, 0, 60, &seq, 8);
		CHECK_EQ(pktmap_txsync(tx), -ENODEV);
	}
	pktmap_close(tx);
}

int main(void)
{
	t_need_root("xdp");
	if (t_enter_netns() != 0)
		return getenv("CI") ? 1 : 77;
	if (t_run("ip link add xa type veth peer name xb && ip link set xa up && "
		  "ip link set xb up && ip link add name qa numtxqueues 2 "
		  "numrxqueues 2 type veth peer name qb numtxqueues 2 "
		  "numrxqueues 2 && ip link set dev qa up && ip link set dev qb up"))
		return 1;
	test_errors();
	test_basic();
	test_live();
	test_multiqueue();
	test_shared_region();
	test_stale_program();
	test_sleep();
	test_device_gone();
	test_multibuffer();
	test_host_rings();
	CHECK(prog_id("xa") == 0 && prog_id("xb") == 0 && prog_id("qa") == 0 &&
	      prog_id("qb") == 0, "no XDP program left");
	struct stat ns;
	char cmd[128];
	stat("/proc/self/ns/net", &ns);
	snprintf(cmd, sizeof(cmd),
		 "ls /dev/shm | grep -Eq '^pktmap-xdp(host)?\\.%lu\\.'",
		 (unsigned long)ns.st_ino);
	CHECK(t_run(cmd) != 0, "no lock file left");
	t_run("ip link del xa; ip link del qa");
	return t_done("xdp");
}
