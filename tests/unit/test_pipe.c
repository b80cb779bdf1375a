// SPDX-License-Identifier: BSD-2-Clause
/* Pipes: zero-copy delivery, order, counters, backpressure, chains, the
 * checker at the boundary, two processes, a peer that scribbles on the
 * shared ring, a peer killed with SIGKILL, and cleanup. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "port.h"
#include "ports/pipe.h"
#include "region.h"
#include "region_hdr.h"
#include "t.h"

static char pname[64];

static struct pktmap_port *open_end(const char *suffix, int expect_ok)
{
	char name[128], err[300] = "";
	snprintf(name, sizeof(name), "pipe:%s%s", pname, suffix);
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *p = NULL;
	int r = pktmap_open(&p, name, &o);
	if (expect_ok)
		CHECK(r == 0, "open %s: %s", name, err);
	return r == 0 ? p : NULL;
}

/* Fill up to n slots of TX ring `ring` with frames carrying seq numbers;
 * returns count. */
static uint32_t send_seq_ring(struct pktmap_port *p, uint32_t ring, uint32_t *seq,
			      uint32_t n, uint32_t len)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(p), ring);
	uint32_t sent = 0;
	while (sent < n && !nm_ring_empty(r)) {
		struct netmap_slot *s = &r->slot[r->cur];
		char *b = NETMAP_BUF(r, s->buf_idx);
		uint32_t l = len ? len : 60 + (*seq % 1400);
		memset(b, (int)(*seq & 0xff), l);
		memcpy(b, seq, sizeof(*seq));
		s->len = (uint16_t)l;
		(*seq)++;
		sent++;
		r->head = r->cur = nm_ring_next(r, r->cur);
	}
	return sent;
}

static uint32_t send_seq(struct pktmap_port *p, uint32_t *seq, uint32_t n,
			 uint32_t len)
{
	return send_seq_ring(p, 0, seq, n, len);
}

/* Drain RX ring `ring`, checking seq order and payload; returns packets. */
static uint32_t recv_check_ring(struct pktmap_port *p, uint32_t ring,
				uint32_t *expect, uint64_t *bytes)
{
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(p), ring);
	uint32_t got = 0;
	while (!nm_ring_empty(r)) {
		struct netmap_slot *s = &r->slot[r->head];
		const unsigned char *b = (const unsigned char *)NETMAP_BUF(r, s->buf_idx);
		uint32_t seq;
		memcpy(&seq, b, sizeof(seq));
		CHECK(seq == *expect, "seq %u, expected %u", seq, *expect);
		CHECK(s->len == 60 + (seq % 1400), "len %u for seq %u", s->len, seq);
		CHECK(b[s->len - 1] == (seq & 0xff), "payload byte");
		*expect = seq + 1;
		*bytes += s->len;
		got++;
		r->head = r->cur = nm_ring_next(r, r->head);
	}
	return got;
}

static uint32_t recv_check(struct pktmap_port *p, uint32_t *expect,
			   uint64_t *bytes)
{
	return recv_check_ring(p, 0, expect, bytes);
}

static void test_basic(void)
{
	struct pktmap_port *a = open_end("{0", 1), *b = open_end("}0", 1);
	if (!a || !b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	CHECK(pktmap_info(a, &info) == 0, "info");
	CHECK(strcmp(info.backend, "pipe") == 0, "backend %s", info.backend);
	CHECK(strcmp(info.mode_name, "zerocopy") == 0, "mode %s", info.mode_name);
	CHECK_EQ(info.tx_slots, 1024);
	CHECK_EQ(info.buf_usable, 2048);
	CHECK(!(info.flags & PKTMAP_INFO_PEER_GONE), "peer present");

	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);
	CHECK_EQ(nm_ring_space(tx), 1023);

	/* Zero-copy: the buffer we fill is the one the reader gets. */
	uint32_t first_buf = tx->slot[tx->cur].buf_idx;
	uint32_t seq = 0, expect = 0;
	uint64_t rbytes = 0, sbytes = 0;
	uint32_t total = 0, sent = 0;
	for (int round = 0; round < 300; round++) {
		uint32_t s0 = seq;
		sent += send_seq(a, &seq, 1 + (uint32_t)(round * 37) % 900, 0);
		for (uint32_t x = s0; x < seq; x++)
			sbytes += 60 + (x % 1400);
		CHECK(pktmap_txsync(a) == 0, "txsync");
		if (round == 0) {
			CHECK(pktmap_rxsync(b) == 0, "rxsync");
			CHECK(rx->slot[rx->head].buf_idx == first_buf,
			      "zero-copy: rx got buffer %u, sent %u",
			      rx->slot[rx->head].buf_idx, first_buf);
			CHECK(rx->slot[rx->head].flags & NS_BUF_CHANGED, "flag");
		}
		CHECK(pktmap_rxsync(b) == 0, "rxsync");
		total += recv_check(b, &expect, &rbytes);
		CHECK(pktmap_rxsync(b) == 0, "release");
	}
	CHECK_EQ(total, sent);
	CHECK_EQ(rbytes, sbytes);
	struct pktmap_stats sa = { .sz = sizeof(sa) }, sb = { .sz = sizeof(sb) };
	pktmap_stats(a, &sa);
	pktmap_stats(b, &sb);
	CHECK_EQ(sa.tx_packets, sent);
	CHECK_EQ(sa.tx_bytes, sbytes);
	CHECK_EQ(sb.rx_packets, sent);
	CHECK_EQ(sb.rx_bytes, sbytes);
	CHECK_EQ(sa.drop_invalid + sb.drop_invalid, 0);

	/* Backpressure: with nobody reading, the writer's tail stops and
	 * nothing is dropped. */
	uint32_t q = 0;
	for (int i = 0; i < 5; i++) {
		q += send_seq(a, &seq, 100000, 0);
		pktmap_txsync(a);
	}
	CHECK_EQ(q, 1023);
	CHECK(nm_ring_empty(tx), "writer blocked");
	CHECK(pktmap_poll(a, POLLOUT, 0) == 0, "no POLLOUT while full");
	/* Full and cur at tail: poll sleeps (it does not spin) until the
	 * timeout. */
	struct pktmap_stats s0 = { .sz = sizeof(s0) };
	pktmap_stats(a, &s0);
	CHECK(pktmap_poll(a, POLLOUT, 30) == 0, "POLLOUT times out while full");
	pktmap_stats(a, &sa);
	CHECK_EQ(sa.poll_sleeps, s0.poll_sleeps + 1);
	CHECK_EQ(pktmap_poll(b, POLLIN, 0), POLLIN);
	uint32_t got = recv_check(b, &expect, &rbytes);
	CHECK_EQ(got, 1023);
	pktmap_rxsync(b);
	CHECK_EQ(pktmap_poll(a, POLLOUT, 0), POLLOUT);

	/* Same counters seen from both sides after the storm. */
	pktmap_stats(a, &sa);
	pktmap_stats(b, &sb);
	CHECK_EQ(sa.tx_packets, sb.rx_packets);
	CHECK_EQ(sa.tx_bytes, sb.rx_bytes);

	/* A second open of the same end binds the same rings (netmap's
	 * shared bindings); one that asks to bind them alone is refused. */
	char err[300] = "", name[128];
	snprintf(name, sizeof(name), "pipe:%s{0", pname);
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *c = NULL;
	CHECK_EQ(pktmap_open(&c, name, &o), 0);
	pktmap_close(c);
	c = NULL;
	o.flags = PKTMAP_OPEN_EXCLUSIVE;
	struct pktmap_port *c2 = NULL;
	CHECK_EQ(pktmap_open(&c2, name, &o), -EBUSY);
	CHECK(strstr(err, "ring 0 is bound by another open") &&
	      strstr(err, "this one asks to bind it alone (/x)"),
	      "message: %s", err);
	pktmap_close(c2);

	pktmap_close(a);
	CHECK(pktmap_info(b, &info) == 0 && (info.flags & PKTMAP_INFO_PEER_GONE),
	      "peer gone after close");
	pktmap_close(b);
	char path[128];
	snprintf(path, sizeof(path), "/dev/shm/pktmap-%u/pipe.%s", (unsigned)geteuid(), pname);
	struct stat st;
	CHECK(stat(path, &st) != 0, "region removed after the last close");
}

static void test_checker_and_chains(void)
{
	struct pktmap_port *a = open_end("{1", 1), *b = open_end("}1", 1);
	if (!a || !b)
		return;
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);

	/* Bad slots are dropped and counted; good ones go through. */
	uint32_t i = tx->cur;
	uint32_t saved = tx->slot[nm_ring_next(tx, i)].buf_idx;
	tx->slot[i].len = 60;
	tx->slot[i = nm_ring_next(tx, i)].buf_idx = 0; /* reserved index */
	tx->slot[i].len = 60;
	tx->slot[i = nm_ring_next(tx, i)].len = 5000; /* too long */
	tx->slot[i = nm_ring_next(tx, i)].len = 0;    /* empty frame */
	tx->slot[i = nm_ring_next(tx, i)].len = 61;
	tx->head = tx->cur = nm_ring_next(tx, i);
	CHECK(pktmap_txsync(a) == 0, "txsync with bad slots");
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(a, &st);
	CHECK_EQ(st.drop_invalid, 3);
	CHECK_EQ(st.tx_packets, 2);
	pktmap_rxsync(b);
	CHECK_EQ(nm_ring_space(rx), 2);
	CHECK_EQ(rx->slot[rx->cur].len, 60);
	CHECK_EQ(rx->slot[nm_ring_next(rx, rx->cur)].len, 61);
	rx->head = rx->cur = rx->tail;
	pktmap_rxsync(b);
	/* Repair the slot we broke (an application's job). */
	for (uint32_t s = 0; s < 1024; s++)
		if (tx->slot[s].buf_idx == 0)
			tx->slot[s].buf_idx = saved;

	/* head beyond tail: refused, ring reset. */
	uint32_t h = tx->head;
	tx->head = tx->tail == 0 ? 1 : (tx->tail + 1) % 1024;
	CHECK(pktmap_txsync(a) == -EINVAL, "head beyond tail refused");
	CHECK_EQ(tx->head, h);
	pktmap_stats(a, &st);
	CHECK_EQ(st.invalid_ring, 1);

	/* A chain is delivered only whole. */
	uint32_t c = tx->cur;
	for (int k = 0; k < 3; k++) {
		tx->slot[c].len = 100;
		tx->slot[c].flags = k < 2 ? NS_MOREFRAG : 0;
		c = nm_ring_next(tx, c);
	}
	tx->head = tx->cur = (tx->cur + 2) % 1024; /* two of three */
	pktmap_txsync(a);
	pktmap_rxsync(b);
	CHECK(nm_ring_empty(rx), "half a chain is not delivered");
	tx->head = tx->cur = c;
	pktmap_txsync(a);
	pktmap_rxsync(b);
	CHECK_EQ(nm_ring_space(rx), 3);
	CHECK(rx->slot[rx->cur].flags & NS_MOREFRAG, "first has MOREFRAG");
	pktmap_stats(b, &st);
	CHECK_EQ(st.rx_packets, 3); /* 2 singles + 1 chain */
	CHECK_EQ(st.rx_bytes, 60 + 61 + 300);
	pktmap_close(a);
	pktmap_close(b);
}

/* Two processes: the child sends N packets as fast as it can, the parent
 * receives them with a sleeping poll. */
static void test_two_processes(void)
{
	const uint32_t N = 2000000;
	struct pktmap_port *b = open_end("}2", 1);
	int ready[2], go[2];
	char c = 0;
	if (!b || pipe(ready) || pipe(go))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct pktmap_port *a = open_end("{2", 1);
		uint32_t seq = 0;
		/* Opened: say so, then wait until the reader has slept once
		 * on the empty ring. */
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		while (a && seq < N) {
			if (pktmap_poll(a, POLLOUT, 5000) <= 0)
				_exit(3);
			send_seq(a, &seq, N - seq, 0);
			pktmap_txsync(a);
		}
		/* Wait until everything is consumed before leaving. */
		while (a && nm_tx_pending(NETMAP_TXRING(pktmap_nifp(a), 0)))
			pktmap_poll(a, POLLOUT, 100);
		pktmap_close(a);
		_exit(a ? 0 : 2);
	}
	uint32_t expect = 0, got = 0;
	uint64_t bytes = 0;
	/* The writer is open and sends nothing yet: the reader's poll must
	 * sleep (counted once) and time out, not spin or see a hang-up. */
	struct pktmap_stats s0 = { .sz = sizeof(s0) };
	CHECK(read(ready[0], &c, 1) == 1, "child opened its end");
	pktmap_stats(b, &s0);
	CHECK_EQ(pktmap_poll(b, POLLIN, 20), 0);
	struct pktmap_stats s1 = { .sz = sizeof(s1) };
	pktmap_stats(b, &s1);
	CHECK_EQ(s1.poll_sleeps, s0.poll_sleeps + 1);
	CHECK(write(go[1], "g", 1) == 1, "go");
	uint64_t polls = 0;
	while (got < N) {
		int r = pktmap_poll(b, POLLIN, 5000);
		polls++;
		CHECK(r > 0, "poll returned %d after %u packets", r, got);
		if (r <= 0)
			break;
		got += recv_check(b, &expect, &bytes);
	}
	pktmap_rxsync(b);
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d",
	      status);
	CHECK_EQ(got, N);
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(b, &st);
	CHECK_EQ(st.rx_packets, N);
	CHECK(st.poll_sleeps - s1.poll_sleeps <= polls,
	      "%llu sleeps in %llu polls: at most one each",
	      (unsigned long long)(st.poll_sleeps - s1.poll_sleeps),
	      (unsigned long long)polls);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	pktmap_close(b);
}

/* Count buffers held by the pipe's rings: conservation. */
static uint32_t distinct_bufs(struct pktmap_port *a, struct pktmap_port *b)
{
	static unsigned char seen[1 << 16];
	memset(seen, 0, sizeof(seen));
	uint32_t n = 0;
	struct pktmap_port *ends[2] = { a, b };
	for (int e = 0; e < 2; e++) {
		struct netmap_if *nifp = pktmap_nifp(ends[e]);
		for (int d = 0; d < 2; d++) {
			struct netmap_ring *r = d ? NETMAP_RXRING(nifp, 0) :
						    NETMAP_TXRING(nifp, 0);
			for (uint32_t s = 0; s < r->num_slots; s++) {
				uint32_t idx = r->slot[s].buf_idx;
				if (idx < sizeof(seen) && !seen[idx]++)
					n++;
			}
		}
	}
	return n;
}

/* A writer killed with SIGKILL in the middle: the reader keeps running,
 * a new writer takes over the end, no buffer is lost. */
static void test_sigkill(void)
{
	struct pktmap_port *b = open_end("}3", 1);
	if (!b)
		return;
	int go[2];
	CHECK(pipe(go) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		struct pktmap_port *a = open_end("{3", 1);
		uint32_t seq = 0;
		send_seq(a, &seq, 500, 0);
		pktmap_txsync(a);
		send_seq(a, &seq, 100, 0); /* filled, never submitted */
		char c = 1;
		if (write(go[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char c;
	CHECK(read(go[0], &c, 1) == 1, "child ready");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(go[0]);
	close(go[1]);

	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	CHECK(info.flags & PKTMAP_INFO_PEER_GONE, "peer gone after SIGKILL");
	uint32_t expect = 0;
	uint64_t bytes = 0;
	pktmap_rxsync(b);
	CHECK_EQ(recv_check(b, &expect, &bytes), 500);
	pktmap_rxsync(b);

	/* A new writer opens the same end and carries on. */
	struct pktmap_port *a = open_end("{3", 1);
	if (!a)
		return;
	CHECK_EQ(distinct_bufs(a, b), 4 * 1024);
	uint32_t seq = 500;
	send_seq(a, &seq, 10, 0);
	pktmap_txsync(a);
	pktmap_rxsync(b);
	CHECK_EQ(recv_check(b, &expect, &bytes), 10);
	pktmap_rxsync(b);
	CHECK_EQ(distinct_bufs(a, b), 4 * 1024);
	pktmap_close(a);
	pktmap_close(b);
}

/* Distinct buffers in ring `ring` of each port of ps[] (TX when tx[i]),
 * every one a buffer of the pool: conservation across the processes
 * that held them. */
static uint32_t distinct_in(struct pktmap_port **ps, const int *tx, int n,
			    uint32_t ring)
{
	static unsigned char seen[1 << 16];
	memset(seen, 0, sizeof(seen));
	uint32_t d = 0;
	for (int i = 0; i < n; i++) {
		struct netmap_if *nifp = pktmap_nifp(ps[i]);
		struct netmap_ring *r = tx[i] ? NETMAP_TXRING(nifp, ring) :
						NETMAP_RXRING(nifp, ring);
		for (uint32_t s = 0; s < r->num_slots; s++) {
			uint32_t idx = r->slot[s].buf_idx;
			CHECK(idx >= 2 && idx < ps[i]->region.nbufs, "buffer %u", idx);
			if (idx < sizeof(seen) && !seen[idx]++)
				d++;
		}
	}
	return d;
}

/* A child binding one direction of a pipe end: tell the parent it is
 * open (ready), wait for go, then send or receive n frames in order on
 * ring `ring`; its exit status says whether every check passed. With n 0
 * it sends until it is killed. */
static void split_child(const char *suffix, int tx, uint32_t ring, uint32_t n,
			int ready, int go)
{
	struct pktmap_port *p = open_end(suffix, 1);
	char c = p ? 'r' : 'e';
	if (write(ready, &c, 1) != 1 || !p || read(go, &c, 1) != 1)
		_exit(2);
	uint32_t seq = 0, expect = 0, got = 0;
	uint64_t bytes = 0;
	while (tx && (n == 0 || seq < n)) {
		if (pktmap_poll(p, POLLOUT, 10000) <= 0)
			_exit(3);
		send_seq_ring(p, ring, &seq, n ? n - seq : 64, 0);
		pktmap_txsync(p);
	}
	while (tx && nm_tx_pending(NETMAP_TXRING(pktmap_nifp(p), ring)))
		pktmap_poll(p, POLLOUT, 100);
	while (!tx && got < n) {
		if (pktmap_poll(p, POLLIN, 10000) <= 0)
			_exit(3);
		got += recv_check_ring(p, ring, &expect, &bytes);
	}
	if (!tx) {
		pktmap_rxsync(p);
		CHECK_EQ(got, n);
		CHECK(nm_ring_empty(NETMAP_RXRING(pktmap_nifp(p), ring)),
		      "nothing after the last frame");
	}
	pktmap_close(p);
	_exit(t_failed ? 1 : 0);
}

static pid_t split_fork(const char *suffix, int tx, uint32_t ring, uint32_t n,
			int *ready, int *go)
{
	pid_t pid = fork();
	if (pid == 0)
		split_child(suffix, tx, ring, n, ready[1], go[0]);
	char c = 0;
	CHECK(read(ready[0], &c, 1) == 1 && c == 'r', "child %s opened", suffix);
	return pid;
}

static void wait_ok(pid_t pid, const char *what)
{
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %d",
	      what, status);
}

/* Send n frames on TX ring `ring` of tx while receiving n on RX ring
 * `ring` of rx, each in order. */
static void send_and_receive(struct pktmap_port *tx, struct pktmap_port *rx,
			     uint32_t ring, uint32_t n, uint32_t *seq,
			     uint32_t *expect)
{
	uint32_t sent = 0, got = 0;
	uint64_t bytes = 0;
	while (sent < n || got < n) {
		struct pktmap_pollreq q[2] = {
			{ .port = tx, .events = sent < n ? POLLOUT : 0 },
			{ .port = rx, .events = got < n ? POLLIN : 0 },
		};
		int r = pktmap_poll_many(q, 2, 10000);
		CHECK(r > 0, "poll: %d (sent %u, got %u)", r, sent, got);
		if (r <= 0)
			return;
		sent += send_seq_ring(tx, ring, seq, n - sent, 0);
		pktmap_txsync(tx);
		got += recv_check_ring(rx, ring, expect, &bytes);
	}
	pktmap_rxsync(rx); /* release the last frames: the writer waits */
	CHECK_EQ(got, n);
}

/* One pipe end bound by two processes, one per direction (/T, /R), on
 * ring 1 of two; the other end by two opens of this process. Frames
 * cross both ways with exact counts and order; a third binder of the RX
 * ring is refused with EBUSY, one of the TX ring is not; every buffer is accounted for. */
static void test_split_processes(void)
{
	const uint32_t N = 100000;
	struct pktmap_port *pr = open_end("}11-1/R@conf:rings=2,slots=64", 1);
	struct pktmap_port *pt = open_end("}11-1/T", 1);
	int ready[2], go[2];
	if (!pr || !pt || pipe(ready) || pipe(go)) {
		pktmap_close(pt);
		pktmap_close(pr);
		return;
	}
	pid_t a = split_fork("{11-1/T", 1, 1, N, ready, go);
	pid_t b = split_fork("{11-1/R", 0, 1, N, ready, go);

	char err[300] = "", name[128];
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	/* The rings the children bind may be bound again (shared bindings,
	 * test_shared_rx), but not alone. */
	const char *busy[2] = { "{11-1/R", "{11-1" };
	for (int i = 0; i < 2; i++) {
		struct pktmap_port *y = NULL;
		snprintf(name, sizeof(name), "pipe:%s%s", pname, busy[i]);
		CHECK(pktmap_open(&y, name, &o) == 0, "shared %s: %s", name, err);
		pktmap_close(y);
	}
	o.flags = PKTMAP_OPEN_EXCLUSIVE;
	for (int i = 0; i < 2; i++) {
		struct pktmap_port *x = NULL;
		err[0] = 0;
		snprintf(name, sizeof(name), "pipe:%s%s", pname, busy[i]);
		CHECK(pktmap_open(&x, name, &o) == -EBUSY, "%s refused", name);
		CHECK(strstr(err, "ring 1 is bound by another open"),
		      "%s: %s", name, err);
		pktmap_close(x);
	}
	struct pktmap_port *r0 = open_end("{11-0", 1); /* claims are per ring */
	pktmap_close(r0);
	/* A TX ring may have several binders (test_shared_tx). */
	struct pktmap_port *t2 = open_end("{11-1/T", 1);
	pktmap_close(t2);

	uint32_t free0 = pm_region_free_count(&pr->region);
	CHECK(write(go[1], "gg", 2) == 2, "go");
	uint32_t seq = 0, expect = 0;
	send_and_receive(pt, pr, 1, N, &seq, &expect);
	wait_ok(a, "the /T binder");
	wait_ok(b, "the /R binder");
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(pt, &st);
	CHECK_EQ(st.tx_packets, N);
	pktmap_stats(pr, &st);
	CHECK_EQ(st.rx_packets, N);

	/* Both directions of the end again, in one open: every buffer of
	 * ring 1 is where it should be, none lost, none taken anew. */
	struct pktmap_port *w = open_end("{11-1", 1);
	if (w) {
		struct pktmap_port *ps[4] = { w, w, pt, pr };
		int tx[4] = { 1, 0, 1, 0 };
		CHECK_EQ(distinct_in(ps, tx, 4, 1), 4 * 64);
		CHECK_EQ(pm_region_free_count(&pr->region), free0);
	}
	pktmap_close(w);
	pktmap_close(pt);
	pktmap_close(pr);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

/* The /T binder of an end killed with SIGKILL mid-traffic: the /R binder
 * of the same end (another process) goes on receiving, every frame the
 * dead one submitted arrives, a new /T binder resumes, and no buffer is
 * lost. */
static void test_split_sigkill(void)
{
	const uint32_t N = 50000;
	struct pktmap_port *p = open_end("}12@conf:slots=64", 1);
	int ready[2], go[2];
	if (!p || pipe(ready) || pipe(go)) {
		pktmap_close(p);
		return;
	}
	pid_t a = split_fork("{12/T", 1, 0, 0, ready, go); /* sends until killed */
	pid_t b = split_fork("{12/R", 0, 0, 2 * N, ready, go);
	uint32_t free0 = pm_region_free_count(&p->region);
	CHECK(write(go[1], "gg", 2) == 2, "go");
	/* a's frames arrive; a is killed mid-traffic. */
	uint32_t seq = 0, expect = 0, from_a = 0;
	uint64_t bytes = 0;
	while (from_a < 1000) {
		CHECK(pktmap_poll(p, POLLIN, 10000) > 0, "a sends");
		from_a += recv_check(p, &expect, &bytes);
	}
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	/* Every frame a submitted is in the queue: take them all. */
	pktmap_rxsync(p);
	from_a += recv_check(p, &expect, &bytes);
	pktmap_rxsync(p);
	CHECK(expect == from_a && from_a >= 1000, "from a: %u, last %u", from_a,
	      expect);
	struct pktmap_port *a2 = open_end("{12/T", 1);
	if (a2) {
		/* b goes on: N more from us, while a2 carries on a's sequence. */
		uint32_t aseq = expect;
		send_seq(a2, &aseq, 10, 0);
		pktmap_txsync(a2);
		uint32_t sent = 0;
		while (sent < 2 * N) {
			CHECK(pktmap_poll(p, POLLOUT, 10000) > 0, "b reads");
			sent += send_seq(p, &seq, 2 * N - sent, 0);
			pktmap_txsync(p);
		}
		pktmap_rxsync(p);
		CHECK_EQ(recv_check(p, &expect, &bytes), 10);
		pktmap_rxsync(p);
	}
	wait_ok(b, "the /R binder");
	struct pktmap_port *b2 = open_end("{12/R", 1);
	if (a2 && b2) {
		struct pktmap_port *ps[4] = { a2, b2, p, p };
		int tx[4] = { 1, 0, 1, 0 };
		CHECK_EQ(distinct_in(ps, tx, 4, 0), 4 * 64);
		CHECK_EQ(pm_region_free_count(&p->region), free0);
	}
	pktmap_close(b2);
	pktmap_close(a2);
	pktmap_close(p);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

/* A binder of TX ring 0 of end "{" that sends when told: it reads a
 * command and a sequence number from cmd, syncs (to see the others'
 * sends), fills up to 50 frames from that number, syncs, and writes the
 * next number back. 'K' does the same with pm_pipe_tx_stall set: the
 * sync stops itself inside, holding the sync lock. 'Q' writes its
 * tx_packets back and exits. */
static void turn_child(const char *suffix, int cmd, int reply)
{
	struct pktmap_port *p = open_end(suffix, 1);
	uint32_t m[2] = { p ? 'r' : 'e', 0 };
	if (write(reply, m, sizeof(m)) != sizeof(m) || !p)
		_exit(2);
	while (read(cmd, m, sizeof(m)) == sizeof(m) && m[0] != 'Q') {
		pktmap_txsync(p);
		send_seq(p, &m[1], 50, 0);
		pm_pipe_tx_stall = m[0] == 'K';
		pktmap_txsync(p);
		if (write(reply, m, sizeof(m)) != sizeof(m))
			_exit(3);
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	m[1] = (uint32_t)st.tx_packets;
	if (write(reply, m, sizeof(m)) != sizeof(m))
		_exit(3);
	pktmap_close(p);
	_exit(0);
}

struct turn_proc {
	pid_t pid;
	int cmd, reply;
};

/* A binder of RX ring 0 of end "{" that receives when told: it reads
 * a command and the sequence number it should see first, syncs (to take
 * the ring as the others left it), checks every frame in order, and
 * writes back the number after the last. 'R' releases what it read and
 * syncs again to give it back; 'H' holds it (no release); 'K' sets
 * pm_pipe_rx_stall first: the sync stops itself inside, holding the sync
 * lock. 'Q' writes its rx_packets back and exits. */
static void turn_rx_child(const char *suffix, int cmd, int reply)
{
	struct pktmap_port *p = open_end(suffix, 1);
	uint32_t m[2] = { p ? 'r' : 'e', 0 };
	if (write(reply, m, sizeof(m)) != sizeof(m) || !p)
		_exit(2);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(p), 0);
	while (read(cmd, m, sizeof(m)) == sizeof(m) && m[0] != 'Q') {
		pm_pipe_rx_stall = m[0] == 'K';
		pktmap_rxsync(p);
		uint64_t bytes = 0;
		uint32_t head = r->head;
		recv_check(p, &m[1], &bytes);
		if (m[0] == 'H')
			r->head = r->cur = head;
		else
			pktmap_rxsync(p);
		if (write(reply, m, sizeof(m)) != sizeof(m))
			_exit(3);
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	m[1] = (uint32_t)st.rx_packets;
	if (write(reply, m, sizeof(m)) != sizeof(m))
		_exit(3);
	pktmap_close(p);
	_exit(t_failed ? 1 : 0);
}

static int turn_fork_as(struct turn_proc *c, const char *suffix,
			void (*child)(const char *, int, int))
{
	int cmd[2], reply[2];
	if (pipe(cmd) || pipe(reply))
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		close(cmd[1]);
		close(reply[0]);
		child(suffix, cmd[0], reply[1]);
	}
	close(cmd[0]);
	close(reply[1]);
	c->cmd = cmd[1];
	c->reply = reply[0];
	uint32_t m[2] = { 0, 0 };
	CHECK(read(c->reply, m, sizeof(m)) == sizeof(m) && m[0] == 'r',
	      "child %s opened", suffix);
	return m[0] == 'r' ? 0 : -1;
}

static int turn_fork(struct turn_proc *c, const char *suffix)
{
	return turn_fork_as(c, suffix, turn_child);
}

/* Tell c to send from *seq; returns 0 and moves *seq on its answer. */
static int turn(struct turn_proc *c, uint32_t what, uint32_t *seq)
{
	uint32_t m[2] = { what, *seq };
	if (write(c->cmd, m, sizeof(m)) != sizeof(m) ||
	    read(c->reply, m, sizeof(m)) != sizeof(m))
		return -1;
	*seq = m[1];
	return 0;
}

static void turn_end(struct turn_proc *c, uint64_t *tx_packets)
{
	uint32_t m[2] = { 'Q', 0 };
	CHECK(write(c->cmd, m, sizeof(m)) == sizeof(m) &&
	      read(c->reply, m, sizeof(m)) == sizeof(m), "child's count");
	*tx_packets += m[1];
	wait_ok(c->pid, "a binder");
	close(c->cmd);
	close(c->reply);
}

/* Send c the 'K' command (its sync stops itself inside, holding the
 * lock), wait until it has stopped, and kill it there. */
static void kill_inside_sync(struct turn_proc *c, uint32_t seq)
{
	uint32_t m[2] = { 'K', seq };
	CHECK(write(c->cmd, m, sizeof(m)) == sizeof(m), "stall");
	int status = 0;
	waitpid(c->pid, &status, WUNTRACED);
	CHECK(WIFSTOPPED(status), "stopped inside its sync: %d", status);
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	close(c->cmd);
	close(c->reply);
}

/* Every buffer of ring 0 of pipe NAME in p's region is in a slot of its
 * four rings (p binds end "}" both ways), none lost, none taken anew. */
static void conserved(struct pktmap_port *p, const char *suffix,
		      uint32_t free0)
{
	struct pktmap_port *w = open_end(suffix, 1);
	if (!w)
		return;
	struct pktmap_port *ps[4] = { w, w, p, p };
	int tx[4] = { 1, 0, 1, 0 };
	CHECK_EQ(distinct_in(ps, tx, 4, 0), 4 * 64);
	CHECK_EQ(pm_region_free_count(&p->region), free0);
	pktmap_close(w);
}

/* n processes bind the same TX ring and send in turns (each syncs when
 * its turn comes, as netmap programs sharing a ring must take turns):
 * the receiver gets every frame, bytes and order intact, and the counts
 * add up exactly. */
static void test_shared_tx(uint32_t n)
{
	const uint32_t N = 20000;
	char rx[64], tx[32];
	snprintf(rx, sizeof(rx), "}%u@conf:slots=64", 20 + n);
	snprintf(tx, sizeof(tx), "{%u/T", 20 + n);
	struct pktmap_port *p = open_end(rx, 1);
	struct turn_proc c[3];
	uint32_t forked = 0;
	while (p && forked < n && turn_fork(&c[forked], tx) == 0)
		forked++;
	uint32_t free0 = p ? pm_region_free_count(&p->region) : 0;
	uint32_t seq = 0, expect = 0, got = 0;
	uint64_t bytes = 0, sent = 0;
	for (uint32_t t = 0; forked == n && seq < N; t++) {
		uint32_t before = seq;
		CHECK(turn(&c[t % n], 'S', &seq) == 0 && seq <= before + 50,
		      "turn %u", t);
		pktmap_rxsync(p);
		got += recv_check(p, &expect, &bytes);
	}
	pktmap_rxsync(p);
	got += recv_check(p, &expect, &bytes);
	pktmap_rxsync(p);
	for (uint32_t i = 0; i < forked; i++)
		turn_end(&c[i], &sent);
	CHECK(seq >= N && got == seq && expect == seq && sent == seq,
	      "%u processes: sent %u (counted %llu), received %u", n, seq,
	      (unsigned long long)sent, got);
	if (p && forked == n) {
		snprintf(tx, sizeof(tx), "{%u", 20 + n);
		conserved(p, tx, free0);
	}
	pktmap_close(p);
}

/* Two binders of one TX ring; the second, replaced each round, stops
 * inside its sync holding the sync lock and is killed there, 20 times:
 * the first takes the lock from the dead one and goes on; the frames of
 * the killed sync never arrive (it published nothing), every other frame
 * does, once, in order; every buffer is accounted for. */
static void test_shared_tx_sigkill(void)
{
	struct pktmap_port *p = open_end("}24@conf:slots=64", 1);
	struct turn_proc a, b;
	if (!p || turn_fork(&a, "{24/T"))
		return;
	uint32_t free0 = pm_region_free_count(&p->region);
	uint32_t seq = 0, expect = 0, got = 0;
	uint64_t bytes = 0, sent = 0;
	for (int round = 0; round < 20; round++) {
		if (turn_fork(&b, "{24/T"))
			break;
		uint32_t s2 = seq;
		kill_inside_sync(&b, seq);
		/* a sends from the same number: b's frames must not arrive. */
		for (int t = 0; t < 3; t++)
			CHECK(turn(&a, 'S', &s2) == 0, "a's turn");
		seq = s2;
		pktmap_rxsync(p);
		got += recv_check(p, &expect, &bytes);
		pktmap_rxsync(p);
		got += recv_check(p, &expect, &bytes);
	}
	pktmap_rxsync(p);
	turn_end(&a, &sent);
	CHECK(seq > 20 * 50 && got == seq && expect == seq && sent == seq,
	      "sent %u (a counted %llu), received %u", seq,
	      (unsigned long long)sent, got);
	conserved(p, "{24", free0);
	pktmap_close(p);
}

/* PKTMAP_OPEN_NOWAIT and a ring's sync turn: another binder of TX ring 0
 * stops inside its sync, holding the turn, alive. A NOWAIT binder's
 * txsync returns -EBUSY (and moves nothing) instead of waiting, and a
 * NOWAIT open of that ring is refused with one line; once the holder is
 * gone the same binder's sync goes through and its frames arrive. */
static void count_waits(void *ctx, enum pktmap_log_level lvl, const char *line)
{
	(void)lvl;
	if (strstr(line, "has been syncing it"))
		(*(int *)ctx)++;
}

static void test_nowait_sync(void)
{
	struct pktmap_port *p = open_end("}25@conf:slots=64", 1);
	char name[128], err[300] = "";
	int waited = 0; /* lines of a sync that waited for the turn */
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err),
				      .flags = PKTMAP_OPEN_NOWAIT,
				      .log = count_waits, .log_ctx = &waited };
	struct pktmap_port *q = NULL, *q2 = NULL;
	struct turn_proc b;
	snprintf(name, sizeof(name), "pipe:%s{25/T", pname);
	if (!p || pktmap_open(&q, name, &o) != 0 || turn_fork(&b, "{25/T")) {
		CHECK(0, "setup: %s", err);
		pktmap_close(q);
		pktmap_close(p);
		return;
	}
	uint32_t bseq = 0, seq = 1000, expect = 0, got = 0;
	uint64_t bytes = 0;
	CHECK(turn(&b, 'S', &bseq) == 0, "b's turn");
	uint32_t m[2] = { 'K', bseq };
	CHECK(write(b.cmd, m, sizeof(m)) == sizeof(m), "stall");
	int status = 0;
	waitpid(b.pid, &status, WUNTRACED);
	CHECK(WIFSTOPPED(status), "b stopped inside its sync: %d", status);
	/* (a binder fills its slots only after a sync that had its turn) */
	CHECK_EQ(pktmap_txsync(q), -EBUSY);
	CHECK_EQ(pktmap_txsync(q), -EBUSY);
	CHECK_EQ(pktmap_open(&q2, name, &o), -EBUSY);
	CHECK(strstr(err, "does not wait") && !strchr(err, '\n'), "%s", err);
	CHECK_EQ(waited, 0);
	kill(b.pid, SIGKILL);
	waitpid(b.pid, NULL, 0);
	close(b.cmd);
	close(b.reply);
	/* the holder is gone: b's frames are the 50 of its first turn (the
	 * stopped sync published nothing); its turn is ours now */
	pktmap_rxsync(p);
	got += recv_check(p, &expect, &bytes);
	CHECK_EQ(got, 50);
	expect = 1000;
	CHECK_EQ(pktmap_txsync(q), 0);
	CHECK_EQ(send_seq(q, &seq, 10, 0), 10);
	CHECK_EQ(pktmap_txsync(q), 0);
	pktmap_rxsync(p);
	CHECK_EQ(recv_check(p, &expect, &bytes), 10);
	pktmap_close(q);
	pktmap_close(p);
}

/* The /proc/PID/stat text the lock waiter reads: state and start time
 * counted from the last ')' (a command name may hold ") Z 1 ..."). */
static void test_stat_parse(void)
{
	static const struct {
		const char *st;
		bool ok;
		char state;
		uint32_t start;
	} t[] = {
		{ "42 (sleep) S 1 42 1 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 "
		  "1234567 8224768 224", true, 'S', 1234567 },
		{ "42 (a) Z 1 2) R 1 42 1 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 "
		  "7654321 0", true, 'R', 7654321 },
		{ "42 (x) Z 1 2 3", true, 'Z', 0 },  /* no field 22: none */
		{ "42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5 6",
		  true, 'S', 0 },                    /* not a number: none */
		{ "42 (x)", false, 0, 0 },
		{ "42 (x)  S", false, 0, 0 },
		{ "42 x S 1", false, 0, 0 },
		{ "", false, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char state = 0;
		uint32_t start = 99;
		bool ok = pm_pipe_stat_parse(t[i].st, &state, &start);
		CHECK(ok == t[i].ok, "%s: %d", t[i].st, ok);
		if (ok && t[i].ok) {
			CHECK(state == t[i].state, "%s: state %c", t[i].st, state);
			CHECK(start == t[i].start, "%s: start %u", t[i].st, start);
		}
	}
}

/* Set TX ring 0's sync word of q to a holder pid h (generation kept)
 * with owner record rec, as a holder killed inside its sync leaves them,
 * and sync. */
static int sync_held_by(struct pktmap_port *q, uint32_t h, uint64_t rec)
{
	struct pm_pipe_q *pq = pm_pipe_queue(q, true, 0);
	uint64_t w = atomic_load(&pq->tx_sync);
	atomic_store(&pq->tx_owner, rec);
	atomic_store(&pq->tx_sync, sync_word(SYNC_GEN(w), h));
	return pktmap_txsync(q);
}

/* The sync lock's holder is known by its pid and its start time: a live
 * process with the holder's pid but another start time is not the holder
 * (the holder died and its pid went to another process, here our child
 * or we ourselves), and the lock is taken over at once; with the
 * holder's start time it is the holder (-EBUSY at once, the open being
 * PKTMAP_OPEN_NOWAIT). Without a record that names the pid, the pid
 * alone decides, as before records. Return codes only: no timing. */
static void test_lock_owner(void)
{
	struct pktmap_port *p = open_end("}27@conf:slots=64", 1), *q = NULL;
	char name[128], err[300] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err),
				      .flags = PKTMAP_OPEN_NOWAIT };
	snprintf(name, sizeof(name), "pipe:%s{27/T", pname);
	int fds[2];
	if (!p || pktmap_open(&q, name, &o) != 0 || pipe(fds) != 0) {
		CHECK(0, "setup: %s", err);
		pktmap_close(p);
		return;
	}
	pid_t child = fork();
	if (child == 0) { /* a live process: its record, then wait */
		uint64_t rec = pm_pipe_owner_self();
		if (write(fds[1], &rec, sizeof(rec)) != sizeof(rec))
			_exit(1);
		pause();
		_exit(0);
	}
	uint64_t rec = 0, self = pm_pipe_owner_self();
	CHECK(read(fds[0], &rec, sizeof(rec)) == sizeof(rec), "child's record");
	close(fds[0]);
	close(fds[1]);
	uint32_t c = (uint32_t)child, cs = OWNER_START(rec);
	CHECK(OWNER_PID(rec) == c && cs != 0, "child's start time: %u", cs);
	/* the holder lives: its pid, its start time */
	CHECK_EQ(sync_held_by(q, c, rec), -EBUSY);
	/* its pid reused: the same pid, another start time */
	CHECK_EQ(sync_held_by(q, c, owner_record(cs + 1, c)), 0);
	struct pm_pipe_q *pq = pm_pipe_queue(q, true, 0);
	CHECK_EQ(SYNC_PID(atomic_load(&pq->tx_sync)), 0); /* and freed */
	CHECK_EQ(atomic_load(&pq->tx_owner), 0);
	/* no record, or one of another pid: the pid alone (alive) */
	CHECK_EQ(sync_held_by(q, c, 0), -EBUSY);
	CHECK_EQ(sync_held_by(q, c, owner_record(cs + 1, c + 1)), -EBUSY);
	/* our own pid, reused from a holder that died */
	uint32_t me = OWNER_PID(self);
	CHECK_EQ(sync_held_by(q, me, owner_record(OWNER_START(self) + 1, me)), 0);
	CHECK_EQ(sync_held_by(q, me, self), -EBUSY);
	/* a dead holder (the child, reaped) is taken over as before */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK_EQ(sync_held_by(q, c, rec), 0);
	/* and the pipe still carries frames */
	uint32_t seq = 0, expect = 0;
	uint64_t bytes = 0;
	CHECK_EQ(send_seq(q, &seq, 10, 0), 10);
	CHECK_EQ(pktmap_txsync(q), 0);
	pktmap_rxsync(p);
	CHECK_EQ(recv_check(p, &expect, &bytes), 10);
	pktmap_close(q);
	pktmap_close(p);
}

/* n processes bind the same RX ring and receive in turns (each syncs
 * when its turn comes): every frame reaches exactly one of them, bytes
 * and order intact, their counts add up; a frame one holds unreleased is
 * seen by the next (one ring, as on netmap), which releases it; every
 * buffer is accounted for. */
static void test_shared_rx(uint32_t n)
{
	const uint32_t N = 20000;
	char tx[64], rx[32];
	snprintf(tx, sizeof(tx), "}%u@conf:slots=64", 30 + n);
	snprintf(rx, sizeof(rx), "{%u/R", 30 + n);
	struct pktmap_port *p = open_end(tx, 1);
	struct turn_proc c[3];
	uint32_t forked = 0;
	while (p && forked < n && turn_fork_as(&c[forked], rx, turn_rx_child) == 0)
		forked++;
	uint32_t free0 = p ? pm_region_free_count(&p->region) : 0;
	uint32_t seq = 0, expect = 0, held = 0;
	uint64_t got = 0;
	for (uint32_t t = 0; forked == n && seq < N; t++) {
		uint32_t k = 1 + (t * 7) % 50, from = expect;
		pktmap_txsync(p);
		send_seq(p, &seq, k, 0);
		pktmap_txsync(p);
		/* Every fifth turn holds its frames: the next turn sees them
		 * again, from the same number, and releases them. */
		uint32_t what = t % 5 == 4 ? 'H' : 'R';
		CHECK(turn(&c[t % n], what, &expect) == 0 && expect == seq,
		      "turn %u (%c): read up to %u, sent %u", t, what, expect, seq);
		if (what == 'H') {
			held += seq - from;
			expect = from;
		}
	}
	if (p)
		pktmap_txsync(p);
	/* A frame counts where a sync took it from the queue: once. */
	for (uint32_t i = 0; i < forked; i++)
		turn_end(&c[i], &got);
	CHECK(seq >= N && expect == seq && got == seq && held > 0,
	      "%u processes: sent %u, received %llu (%u seen twice)", n, seq,
	      (unsigned long long)got, held);
	if (p && forked == n) {
		snprintf(rx, sizeof(rx), "{%u", 30 + n);
		conserved(p, rx, free0);
	}
	pktmap_close(p);
}

/* Two binders of one RX ring; the second, replaced each round, stops
 * inside its sync holding the sync lock, with new frames taken and not
 * yet shown, and is killed there, 20 times: the first takes the lock
 * from the dead one and gets those frames, once, in order; every buffer
 * is accounted for. */
static void test_shared_rx_sigkill(void)
{
	struct pktmap_port *p = open_end("}34@conf:slots=64", 1);
	struct turn_proc a, b;
	if (!p || turn_fork_as(&a, "{34/R", turn_rx_child))
		return;
	uint32_t free0 = pm_region_free_count(&p->region);
	uint32_t seq = 0, expect = 0;
	uint64_t counted = 0;
	for (int round = 0; round < 20; round++) {
		if (turn_fork_as(&b, "{34/R", turn_rx_child))
			break;
		pktmap_txsync(p);
		send_seq(p, &seq, 40, 0);
		pktmap_txsync(p);
		kill_inside_sync(&b, expect);
		CHECK(turn(&a, 'R', &expect) == 0 && expect == seq,
		      "round %d: a read up to %u, sent %u", round, expect, seq);
	}
	pktmap_txsync(p);
	turn_end(&a, &counted);
	CHECK(seq == 20 * 40 && expect == seq && counted == seq,
	      "sent %u, a received %llu", seq, (unsigned long long)counted);
	conserved(p, "{34", free0);
	pktmap_close(p);
}

/* Open pipe:NAME SUFFIX with open flags; the error, if any, in err. */
static int open_flags(struct pktmap_port **p, const char *suffix,
		      uint32_t flags, char *err, size_t errlen)
{
	char name[128];
	snprintf(name, sizeof(name), "pipe:%s%s", pname, suffix);
	struct pktmap_open_opts o = { .sz = sizeof(o), .flags = flags,
				      .errbuf = err, .errbuf_len = errlen };
	err[0] = 0;
	return pktmap_open(p, name, &o);
}

/* /x (PKTMAP_OPEN_EXCLUSIVE) across processes, both ways: a child binds
 * TX ring 0 of "{25" (shared, then alone); the other binding is refused
 * in one line that says why, and accepted once the child is gone. */
static void test_shared_tx_exclusive(void)
{
	for (int child_excl = 0; child_excl < 2; child_excl++) {
		int ready[2], go[2];
		if (pipe(ready) || pipe(go))
			return;
		pid_t pid = fork();
		if (pid == 0) {
			char e[300];
			struct pktmap_port *c = NULL;
			int r = open_flags(&c, "{25/T@conf:slots=64", child_excl ?
					   PKTMAP_OPEN_EXCLUSIVE : 0, e, sizeof(e));
			char k = r == 0 ? 'r' : 'e';
			if (write(ready[1], &k, 1) != 1 || read(go[0], &k, 1) != 1)
				_exit(2);
			pktmap_close(c);
			_exit(r == 0 ? 0 : 1);
		}
		char k = 0, err[300];
		CHECK(read(ready[0], &k, 1) == 1 && k == 'r', "child bound");
		struct pktmap_port *x = NULL;
		CHECK_EQ(open_flags(&x, "{25/T", child_excl ? 0 :
				    PKTMAP_OPEN_EXCLUSIVE, err, sizeof(err)), -EBUSY);
		CHECK(strstr(err, "TX ring 0 is bound by another open") &&
		      strstr(err, child_excl ? "that asked to bind it alone (/x)" :
					       "this one asks to bind it alone (/x)") &&
		      !strchr(err, '\n'), "refused: %s", err);
		pktmap_close(x);
		CHECK(write(go[1], "g", 1) == 1, "go");
		wait_ok(pid, "the child binder");
		x = NULL;
		CHECK_EQ(open_flags(&x, "{25/T", PKTMAP_OPEN_EXCLUSIVE, err,
				    sizeof(err)), 0);
		pktmap_close(x);
		close(ready[0]);
		close(ready[1]);
		close(go[0]);
		close(go[1]);
	}
}

/* A pipe made by a pktmap that claimed whole ends ("PIP3" in its control
 * block) is refused in one line, not joined with claims it cannot see. */
static void test_old_pipe(void)
{
	struct pktmap_port *a = open_end("{13", 1);
	if (!a)
		return;
	char key[64], err[300] = "", name[128];
	snprintf(key, sizeof(key), "p:%s{13", pname);
	size_t size = 0;
	uint64_t ofs = pm_region_lookup(&a->region, key, &size);
	CHECK(ofs != 0, "control block of %s", key);
	if (!ofs) {
		pktmap_close(a);
		return;
	}
	uint32_t *magic = pm_region_ptr(&a->region, ofs);
	uint32_t keep = *magic;
	*magic = 0x33504950u; /* "PIP3" */
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *b = NULL;
	snprintf(name, sizeof(name), "pipe:%s}13", pname);
	CHECK(pktmap_open(&b, name, &o) == -EPROTO, "old pipe refused");
	CHECK(strstr(err, "older pktmap") != NULL, "message: %s", err);
	pktmap_close(b);
	*magic = keep;
	pktmap_close(a);
}

/* A peer that writes garbage into the shared control block and ring. */
static void test_garbage_peer(void)
{
	struct pktmap_port *a = open_end("{4", 1), *b = open_end("}4", 1);
	if (!a || !b)
		return;
	uint32_t seq = 0;
	send_seq(a, &seq, 10, 0);
	pktmap_txsync(a);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);
	/* The writer side corrupts descriptor 5 of the queue into the
	 * reader's ring (as a malicious process sharing the region could). */
	pm_pipe_peer_desc(b, 0)[5 * 2] = 0xdeadbeef;
	CHECK(pktmap_rxsync(b) == -EPROTO, "garbage detected");
	CHECK_EQ(nm_ring_space(rx), 5); /* the good ones before it */
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(b, &st);
	CHECK(st.drop_invalid >= 1, "counted");
	pktmap_close(a);
	pktmap_close(b);
}

/* A binder that takes another binder's view of a shared RX ring reads
 * each descriptor once and checks it: one a peer scribbled on after the
 * first binder received it never reaches the second's slots. */
static void test_garbage_view(void)
{
	struct pktmap_port *t = open_end("}41/T", 1), *a = open_end("{41/R", 1);
	struct pktmap_port *b = open_end("{41/R", 1);
	if (t && a && b) {
		uint32_t seq = 0;
		send_seq(t, &seq, 10, 0);
		pktmap_txsync(t);
		pktmap_rxsync(a); /* a holds all ten */
		CHECK_EQ(nm_ring_space(NETMAP_RXRING(pktmap_nifp(a), 0)), 10);
		pm_pipe_peer_desc(a, 0)[5 * 2] = 0xdeadbeef;
		pktmap_rxsync(b); /* b takes a's view */
		struct netmap_ring *rb = NETMAP_RXRING(pktmap_nifp(b), 0);
		uint32_t bad = 0;
		for (uint32_t i = 0; i < rb->num_slots; i++)
			bad += rb->slot[i].buf_idx == 0xdeadbeef;
		CHECK_EQ(bad, 0);
		CHECK(nm_ring_space(rb) <= 5, "%u slots shown", nm_ring_space(rb));
		struct pktmap_stats st = { .sz = sizeof(st) };
		pktmap_stats(b, &st);
		CHECK(st.drop_invalid >= 1, "counted");
	}
	pktmap_close(b);
	pktmap_close(a);
	pktmap_close(t);
}

/* The next binder of an end resumes its RX ring from the descriptors in
 * shared memory, which a peer may have scribbled on while the end was
 * closed: 0, 1, past the pool, 2^32-1 and an index twice are each
 * replaced by a buffer of the pool, no slot's buffer twice. */
static void test_garbage_resume(void)
{
	struct pktmap_port *a = open_end("{42", 1), *b = open_end("}42", 1);
	if (!a || !b) {
		pktmap_close(a);
		pktmap_close(b);
		return;
	}
	size_t off = (size_t)((char *)pm_pipe_peer_desc(a, 0) - (char *)a->region.base);
	uint32_t nb = a->region.nbufs;
	pktmap_close(a);
	uint32_t *d = (uint32_t *)((char *)b->region.base + off);
	d[0 * 2] = 0;
	d[1 * 2] = 1;
	d[2 * 2] = nb;
	d[3 * 2] = 0xffffffffu;
	d[4 * 2] = d[5 * 2];
	a = open_end("{42", 1);
	if (a) {
		struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(a), 0);
		static uint8_t seen[1u << 16];
		uint32_t bad = 0, twice = 0;
		memset(seen, 0, sizeof(seen));
		for (uint32_t i = 0; i < rx->num_slots; i++) {
			uint32_t idx = rx->slot[i].buf_idx;
			if (idx < 2 || idx >= nb || idx >= sizeof(seen)) {
				bad++;
				continue;
			}
			twice += seen[idx]++ != 0;
		}
		CHECK(bad == 0 && twice == 0, "resumed RX ring: %u bad, %u twice",
		      bad, twice);
		/* and it works */
		uint32_t seq = 0, expect = 0;
		uint64_t bytes = 0;
		send_seq(b, &seq, 10, 0);
		pktmap_txsync(b);
		pktmap_rxsync(a);
		CHECK_EQ(recv_check(a, &expect, &bytes), 10);
	}
	pktmap_close(a);
	pktmap_close(b);
}

/* A reader that swaps a received buffer out (zero-copy: into its own TX
 * slot, kept there) gives the writer the one it swapped in: the buffer
 * it kept is never the writer's again, however many frames follow. */
static void test_swapped_release(void)
{
	struct pktmap_port *a = open_end("{43@conf:slots=16", 1), *b = open_end("}43", 1);
	if (a && b) {
		uint32_t seq = 0, expect = 0;
		uint64_t bytes = 0;
		send_seq(a, &seq, 1, 0);
		pktmap_txsync(a);
		pktmap_rxsync(b);
		struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);
		struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(b), 0);
		CHECK_EQ(nm_ring_space(rx), 1);
		struct netmap_slot *rs = &rx->slot[rx->head], *ts = &tx->slot[tx->head];
		uint32_t x = rs->buf_idx;
		rs->buf_idx = ts->buf_idx;
		rs->flags |= NS_BUF_CHANGED;
		ts->buf_idx = x;
		ts->flags |= NS_BUF_CHANGED;
		memset(NETMAP_BUF(tx, x), 'Z', 64);
		rx->head = rx->cur = nm_ring_next(rx, rx->head);
		pktmap_rxsync(b);
		expect = 1;
		uint32_t got = 0;
		for (int round = 0; round < 4; round++) {
			pktmap_txsync(a); /* the slots b gave back */
			send_seq(a, &seq, 15, 0);
			pktmap_txsync(a);
			pktmap_rxsync(b);
			got += recv_check(b, &expect, &bytes);
			pktmap_rxsync(b);
		}
		CHECK_EQ(got, 60);
		const char *z = NETMAP_BUF(tx, x);
		uint32_t changed = 0;
		for (int i = 0; i < 64; i++)
			changed += z[i] != 'Z';
		CHECK(changed == 0, "the buffer kept was written by the writer "
		      "(%u bytes changed)", changed);
	}
	pktmap_close(a);
	pktmap_close(b);
}

/* A reader sleeping in poll is woken by the writer. */
struct waiter {
	struct pktmap_port *p;
	int rev;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	w->rev = pktmap_poll(w->p, POLLIN, 10000);
	return NULL;
}

static void test_wakeup(void)
{
	struct pktmap_port *a = open_end("{5", 1), *b = open_end("}5", 1);
	if (!a || !b)
		return;
	struct waiter w = { .p = b };
	pthread_t th;
	pthread_create(&th, NULL, waiter_main, &w);
	/* Wait until the waiter has said it sleeps (10 s at most): only then
	 * does the send below test that a sleeping reader is woken. */
	struct pktmap_stats st = { .sz = sizeof(st) };
	for (int i = 0; i < 10000; i++) {
		pktmap_stats(b, &st);
		if (st.poll_sleeps)
			break;
		usleep(1000);
	}
	CHECK_EQ(st.poll_sleeps, 1);
	uint32_t seq = 0;
	send_seq(a, &seq, 1, 0);
	pktmap_txsync(a);
	pthread_join(th, NULL);
	CHECK_EQ(w.rev, POLLIN);
	pktmap_stats(a, &st);
	CHECK_EQ(st.wakeups_sent, 1); /* the sleeper woken, once */
	/* With the reader awake and not polling, no wake-ups are sent. */
	uint64_t before = st.wakeups_sent;
	for (int i = 0; i < 100; i++) {
		send_seq(a, &seq, 1, 0);
		pktmap_txsync(a);
		pktmap_rxsync(b);
		NETMAP_RXRING(pktmap_nifp(b), 0)->head =
			NETMAP_RXRING(pktmap_nifp(b), 0)->tail;
		NETMAP_RXRING(pktmap_nifp(b), 0)->cur =
			NETMAP_RXRING(pktmap_nifp(b), 0)->tail;
	}
	pktmap_stats(a, &st);
	CHECK_EQ(st.wakeups_sent, before);
	pktmap_close(a);
	pktmap_close(b);
}

/* Several ring pairs, each end opened per ring by its own thread. */
static void test_multi_ring(void)
{
	struct pktmap_port *a0 = open_end("{6-0@conf:rings=2,slots=256", 1);
	struct pktmap_port *a1 = open_end("{6-1", 1);
	struct pktmap_port *b = open_end("}6", 1);
	if (!a0 || !a1 || !b) {
		pktmap_close(a0);
		pktmap_close(a1);
		pktmap_close(b);
		return;
	}
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	CHECK_EQ(info.rx_rings, 2);
	CHECK_EQ(info.first_rx_ring, 0);
	CHECK_EQ(info.last_rx_ring, 1);
	pktmap_info(a1, &info);
	CHECK_EQ(info.first_tx_ring, 1);
	CHECK_EQ(info.last_tx_ring, 1);
	CHECK_EQ(info.tx_slots, 256);
	struct netmap_ring *t1 = NETMAP_TXRING(pktmap_nifp(a1), 1);
	t1->slot[t1->cur].len = 99;
	t1->head = t1->cur = nm_ring_next(t1, t1->cur);
	pktmap_txsync(a1);
	pktmap_rxsync(b);
	CHECK_EQ(nm_ring_space(NETMAP_RXRING(pktmap_nifp(b), 0)), 0);
	CHECK_EQ(nm_ring_space(NETMAP_RXRING(pktmap_nifp(b), 1)), 1);
	pktmap_close(a0);
	pktmap_close(a1);
	pktmap_close(b);
}

/* One port, two threads: one sleeps for RX packets, one for TX space
 * (the router's two stages). Each wake-up reaches the thread it is for. */
struct sleeper {
	struct pktmap_port *p;
	short events;
	int rev;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	s->rev = pktmap_poll(s->p, s->events, 5000);
	return NULL;
}

static void wait_sleeping(struct pktmap_port *p, uint64_t n)
{
	struct pktmap_stats st = { .sz = sizeof(st) };
	for (int i = 0; i < 2000; i++) {
		pktmap_stats(p, &st);
		if (st.poll_sleeps >= n)
			return;
		usleep(1000);
	}
}

static void test_two_directions(void)
{
	struct pktmap_port *a = open_end("{7@conf:slots=64,spin-us=0", 1);
	struct pktmap_port *b = open_end("}7", 1);
	if (!a || !b) {
		pktmap_close(a);
		pktmap_close(b);
		return;
	}
	uint32_t seq = 0;
	while (send_seq(a, &seq, 1000, 0))
		pktmap_txsync(a); /* fill a -> b */
	struct sleeper in = { .p = a, .events = POLLIN };
	struct sleeper out = { .p = a, .events = POLLOUT };
	pthread_t t1, t2;
	pthread_create(&t1, NULL, sleeper_main, &in);
	wait_sleeping(a, 1);
	pthread_create(&t2, NULL, sleeper_main, &out);
	wait_sleeping(a, 2);
	/* b sends one packet to a: only the RX sleeper may wake. */
	uint32_t bseq = 0;
	send_seq(b, &bseq, 1, 0);
	pktmap_txsync(b);
	pthread_join(t1, NULL);
	CHECK_EQ(in.rev, POLLIN);
	/* b drains: now the TX sleeper wakes. */
	pktmap_rxsync(b);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(b), 0);
	r->head = r->cur = r->tail;
	pktmap_rxsync(b);
	pthread_join(t2, NULL);
	CHECK_EQ(out.rev, POLLOUT);
	pktmap_close(a);
	pktmap_close(b);
}

/* Two binders of one TX ring, both waiting for room: A (a thread here)
 * sleeps; B (another process) waits too, times out and disarms. A must
 * still be woken when the reader frees the ring: B's disarm cleared the
 * shared "writer sleeping" flag under A, the reader sent no wake-up, and
 * A slept until its own timeout (10 s here). */
struct tx_waiter {
	struct pktmap_port *p;
	int rev;
};

static void *tx_waiter_main(void *arg)
{
	struct tx_waiter *w = arg;
	w->rev = pktmap_poll(w->p, POLLOUT, 10000);
	return NULL;
}

static void test_shared_tx_wakeup(void)
{
	struct pktmap_port *rx = open_end("}15@conf:slots=64", 1);
	struct pktmap_port *a = open_end("{15/T", 1);
	int go[2], res[2];
	if (!rx || !a || pipe(go) || pipe(res)) {
		pktmap_close(a);
		pktmap_close(rx);
		return;
	}
	/* B first, before any thread: it opens the same TX ring and waits
	 * for its turn. */
	pid_t pid = fork();
	if (pid == 0) {
		struct pktmap_port *b = open_end("{15/T", 1);
		char c = b ? 'r' : 'e';
		if (write(res[1], &c, 1) != 1 || !b || read(go[0], &c, 1) != 1)
			_exit(2);
		pktmap_txsync(b); /* B sees the ring A filled */
		int r = pktmap_poll(b, POLLOUT, 1);
		c = (char)r;
		_exit(write(res[1], &c, 1) == 1 && r == 0 ? 0 : 3);
	}
	char c = 0;
	CHECK(read(res[0], &c, 1) == 1 && c == 'r', "B opened {15/T");
	uint32_t seq = 0;
	CHECK_EQ(send_seq(a, &seq, 64, 0), 63);
	pktmap_txsync(a);
	struct tx_waiter w = { .p = a };
	pthread_t th;
	pthread_create(&th, NULL, tx_waiter_main, &w);
	/* A has armed its wake-up and found no room once it counts a sleep
	 * (10 s at most). */
	struct pktmap_stats st = { .sz = sizeof(st) };
	for (int i = 0; i < 10000; i++) {
		pktmap_stats(a, &st);
		if (st.poll_sleeps)
			break;
		usleep(1000);
	}
	CHECK_EQ(st.poll_sleeps, 1);
	/* B waits for room too, finds none, and disarms. */
	CHECK(write(go[1], "g", 1) == 1, "go");
	CHECK(read(res[0], &c, 1) == 1 && c == 0, "B's poll: no room (%d)", c);
	wait_ok(pid, "B");
	/* The reader frees the whole ring: it must wake A, once. */
	uint32_t expect = 0;
	uint64_t bytes = 0;
	pktmap_rxsync(rx);
	CHECK_EQ(recv_check(rx, &expect, &bytes), 63);
	pktmap_rxsync(rx);
	pktmap_stats(rx, &st);
	CHECK_EQ(st.wakeups_sent, 1);
	pthread_join(th, NULL);
	CHECK_EQ(w.rev, POLLOUT);
	pktmap_close(a);
	pktmap_close(rx);
	close(go[0]);
	close(go[1]);
	close(res[0]);
	close(res[1]);
}

/* An end's RX binder sleeps while its TX binder (another open) polls for
 * POLLIN and POLLOUT on a full ring: the TX binder must not touch the
 * reader's flag or FIFO, so the reader is still woken by the next frame. */
static void test_split_wakeup(void)
{
	struct pktmap_port *r = open_end("{14/R@conf:slots=64", 1);
	struct pktmap_port *t = open_end("{14/T", 1);
	struct pktmap_port *peer = open_end("}14/T", 1);
	if (!r || !t || !peer) {
		pktmap_close(peer);
		pktmap_close(t);
		pktmap_close(r);
		return;
	}
	struct waiter w = { .p = r };
	pthread_t th;
	pthread_create(&th, NULL, waiter_main, &w);
	wait_sleeping(r, 1);
	uint32_t seq = 0;
	while (send_seq(t, &seq, 1000, 0)) /* nobody reads }14: it fills */
		pktmap_txsync(t);
	CHECK_EQ(pktmap_poll(t, POLLIN | POLLOUT, 5), 0);
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(t, &st);
	CHECK_EQ(st.poll_sleeps, 1); /* it armed and slept */
	uint32_t pseq = 0;
	send_seq(peer, &pseq, 1, 0);
	pktmap_txsync(peer);
	pthread_join(th, NULL);
	CHECK_EQ(w.rev, POLLIN);
	/* Woken by the frame, not found after its poll timed out: the
	 * reader's flag was still up when the peer looked. */
	pktmap_stats(peer, &st);
	CHECK_EQ(st.wakeups_sent, 1);
	pktmap_close(peer);
	pktmap_close(t);
	pktmap_close(r);
}

/* Two pipes with different names share one @mem: region and stay apart. */
static void test_shared_region(void)
{
	char n[4][128], err[300] = "";
	const char *ends[4] = { "a{0", "a}0", "b{0", "b}0" };
	struct pktmap_port *p[4] = { 0 };
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	for (int i = 0; i < 4; i++) {
		snprintf(n[i], sizeof(n[i]), "pipe:%s%s@conf:bufs=16384@mem:%sm",
			 pname, ends[i], pname);
		CHECK(pktmap_open(&p[i], n[i], &o) == 0, "open %s: %s", n[i], err);
	}
	if (p[0] && p[1] && p[2] && p[3]) {
		struct pktmap_info ia = { .sz = sizeof(ia) }, ib = { .sz = sizeof(ib) };
		pktmap_info(p[0], &ia);
		pktmap_info(p[2], &ib);
		CHECK(strcmp(ia.region, ib.region) == 0, "one region");
		uint32_t seq = 0, expect = 0;
		uint64_t bytes = 0;
		send_seq(p[0], &seq, 7, 0);
		pktmap_txsync(p[0]);
		pktmap_rxsync(p[3]);
		CHECK(nm_ring_empty(NETMAP_RXRING(pktmap_nifp(p[3]), 0)),
		      "pipe b gets nothing of pipe a");
		pktmap_rxsync(p[1]);
		CHECK_EQ(recv_check(p[1], &expect, &bytes), 7);
		pktmap_rxsync(p[1]);
		/* A 2048-byte frame fits past the AF_XDP headroom. */
		CHECK(ia.buf_usable >= 2048, "usable %u", ia.buf_usable);
		struct netmap_ring *t = NETMAP_TXRING(pktmap_nifp(p[0]), 0);
		struct netmap_slot *s = &t->slot[t->cur];
		memset(NETMAP_BUF(t, s->buf_idx), 0xab, 2048);
		s->len = 2048;
		t->head = t->cur = nm_ring_next(t, t->cur);
		CHECK_EQ(pktmap_txsync(p[0]), 0);
		CHECK_EQ(pktmap_rxsync(p[1]), 0);
		struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(p[1]), 0);
		CHECK_EQ(nm_ring_space(r), 1);
		CHECK_EQ(r->slot[r->head].len, 2048);
		CHECK_EQ((unsigned char)NETMAP_BUF(r, r->slot[r->head].buf_idx)[2047],
			 0xab);
	}
	for (int i = 0; i < 4; i++)
		pktmap_close(p[i]);
}

/* @mem:NAME means that memory: an end that names m1 is refused a pipe
 * of its name that lives in m2 (one line naming both), never given it;
 * with no @mem: it joins the pipe where it is; an end of another name
 * is free to be made in m1. */
static void test_mem_means_mem(void)
{
	char n[4][160], err[300] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	snprintf(n[0], sizeof(n[0]), "pipe:%szz}0@mem:%sm2", pname, pname);
	snprintf(n[1], sizeof(n[1]), "pipe:%szz}0@mem:%sm1", pname, pname);
	snprintf(n[2], sizeof(n[2]), "pipe:%szz{0", pname);
	snprintf(n[3], sizeof(n[3]), "pipe:%szz{0@mem:%sm1", pname, pname);
	CHECK(pktmap_open(&a, n[0], &o) == 0, "open %s: %s", n[0], err);
	CHECK_EQ(pktmap_open(&b, n[1], &o), -EEXIST);
	char m1[64], m2[64];
	snprintf(m1, sizeof(m1), "'%sm1'", pname);
	snprintf(m2, sizeof(m2), "'%sm2'", pname);
	CHECK(strstr(err, m1) && strstr(err, m2) && !strchr(err, '\n'),
	      "one line naming both memories: %s", err);
	/* the other end, with @mem:m1, is refused too */
	CHECK_EQ(pktmap_open(&d, n[3], &o), -EEXIST);
	/* no @mem: the pipe where it is, and frames cross */
	CHECK(pktmap_open(&c, n[2], &o) == 0, "open %s: %s", n[2], err);
	if (a && c) {
		struct pktmap_info ia = { .sz = sizeof(ia) }, ic = { .sz = sizeof(ic) };
		pktmap_info(a, &ia);
		pktmap_info(c, &ic);
		CHECK(strcmp(ia.region, ic.region) == 0, "%s joined %s's memory: "
		      "%s, %s", n[2], n[0], ic.region, ia.region);
		uint32_t seq = 0, expect = 0;
		uint64_t bytes = 0;
		CHECK_EQ(send_seq(c, &seq, 5, 0), 5);
		pktmap_txsync(c);
		pktmap_rxsync(a);
		CHECK_EQ(recv_check(a, &expect, &bytes), 5);
	}
	pktmap_close(c);
	pktmap_close(a);
	/* gone from m2: now m1 may have a pipe of that name */
	CHECK(pktmap_open(&b, n[1], &o) == 0, "open %s: %s", n[1], err);
	pktmap_close(b);
}

/* The region's mutex held by another open file description of its file
 * for 3 ms, as 'pktmap ports' holds it while it looks (a thread lets
 * it go; joined by brief_hold_end(), or detached). */
struct brief_hold {
	struct pm_region *r;
	int fd;
	pthread_t t;
};

static void *brief_release(void *arg)
{
	struct brief_hold *h = arg;
	usleep(3000);
	(void)pm_ofd_lock(h->fd, F_UNLCK, PM_LOCK_MUTEX, 0);
	close(h->fd);
	return NULL;
}

static void brief_hold(struct brief_hold *h)
{
	h->fd = open(h->r->path, O_RDWR | O_CLOEXEC);
	CHECK(h->fd >= 0 && pm_ofd_lock(h->fd, F_WRLCK, PM_LOCK_MUTEX, 1) == 0,
	      "hold %s: %s", h->r->path, strerror(errno));
	CHECK_EQ(pthread_create(&h->t, NULL, brief_release, h), 0);
}

static void brief_hold_end(struct brief_hold *h)
{
	pthread_join(h->t, NULL);
}

/* PKTMAP_OPEN_NOWAIT: a region lock held elsewhere (here by another open
 * file description of this process, as another process would) fails the
 * open at once with -EBUSY and one line, and leaves nothing; once it is
 * free the same open works. */
static void test_nowait(void)
{
	char err[300] = "", name[128];
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err),
				      .flags = PKTMAP_OPEN_NOWAIT };
	struct pktmap_port *a = open_end("nw{0", 1), *b = NULL;
	if (!a)
		return;
	snprintf(name, sizeof(name), "pipe:%snw}0", pname);
	CHECK_EQ(pm_region_lock(&a->region), 0);
	CHECK_EQ(pktmap_open(&b, name, &o), -EBUSY);
	CHECK(strstr(err, "does not wait") && !strchr(err, '\n'), "%s", err);
	pm_region_unlock(&a->region);
	CHECK(pktmap_open(&b, name, &o) == 0, "open %s: %s", name, err);
	pktmap_close(b);
	/* A hold of a moment (anyone listing regions takes each mutex):
	 * the NOWAIT open waits it out, and so does a NOWAIT close, which
	 * as the last user removes the region's file. */
	struct brief_hold h = { .r = &a->region };
	brief_hold(&h);
	CHECK(pktmap_open(&b, name, &o) == 0, "open past a brief hold: %s", err);
	brief_hold_end(&h);
	char path[sizeof(a->region.path)];
	snprintf(path, sizeof(path), "%s", a->region.path);
	pktmap_close(a);
	struct brief_hold h2 = { .r = b ? &b->region : NULL };
	if (b)
		brief_hold(&h2);
	pktmap_close(b);
	if (b)
		brief_hold_end(&h2);
	CHECK(access(path, F_OK) != 0, "%s removed past a brief hold", path);
}

/* The two-threads-per-port contract: on each end one thread owns the TX
 * ring and another the RX ring, while a fifth thread reads both ports'
 * counters. Every frame arrives, in order, and the counters add up. (CI
 * runs this under ThreadSanitizer.) */
struct dir_job {
	struct pktmap_port *p;
	uint32_t n;
	uint32_t got;
	int ok;
};

static void *tx_main(void *arg)
{
	struct dir_job *j = arg;
	uint32_t seq = 0;
	j->ok = 1;
	while (seq < j->n) {
		if (pktmap_poll(j->p, POLLOUT, 10000) <= 0) {
			j->ok = 0;
			break;
		}
		send_seq(j->p, &seq, j->n - seq, 0);
		pktmap_txsync(j->p);
	}
	while (j->ok && nm_tx_pending(NETMAP_TXRING(pktmap_nifp(j->p), 0)))
		if (pktmap_poll(j->p, POLLOUT, 10000) <= 0)
			j->ok = 0;
	return NULL;
}

static void *rx_main(void *arg)
{
	struct dir_job *j = arg;
	uint32_t expect = 0;
	j->ok = 1;
	while (j->got < j->n) {
		if (pktmap_poll(j->p, POLLIN, 10000) <= 0) {
			j->ok = 0;
			break;
		}
		struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(j->p), 0);
		while (!nm_ring_empty(r)) {
			const struct netmap_slot *s = &r->slot[r->head];
			uint32_t seq;
			memcpy(&seq, NETMAP_BUF(r, s->buf_idx), sizeof(seq));
			if (seq != expect || s->len != 60 + (seq % 1400))
				j->ok = 0;
			expect = seq + 1;
			j->got++;
			r->head = r->cur = nm_ring_next(r, r->head);
		}
	}
	pktmap_rxsync(j->p);
	return NULL;
}

static _Atomic int stats_stop;

static void *stats_main(void *arg)
{
	struct pktmap_port **ports = arg;
	uint64_t last = 0;
	while (!atomic_load(&stats_stop)) {
		for (int i = 0; i < 2; i++) {
			struct pktmap_stats st = { .sz = sizeof(st) };
			struct pktmap_info info = { .sz = sizeof(info) };
			pktmap_stats(ports[i], &st);
			pktmap_info(ports[i], &info);
			if (i == 0 && st.tx_packets < last)
				return (void *)1; /* counters never go back */
			if (i == 0)
				last = st.tx_packets;
		}
	}
	return NULL;
}

static void test_threads(void)
{
	const uint32_t N = 300000, M = 200000;
	struct pktmap_port *a = open_end("{8@conf:slots=256", 1);
	struct pktmap_port *b = open_end("}8", 1);
	if (!a || !b) {
		pktmap_close(a);
		pktmap_close(b);
		return;
	}
	struct dir_job atx = { .p = a, .n = N }, brx = { .p = b, .n = N };
	struct dir_job btx = { .p = b, .n = M }, arx = { .p = a, .n = M };
	struct pktmap_port *ports[2] = { a, b };
	pthread_t t[5];
	atomic_store(&stats_stop, 0);
	pthread_create(&t[0], NULL, tx_main, &atx);
	pthread_create(&t[1], NULL, rx_main, &brx);
	pthread_create(&t[2], NULL, tx_main, &btx);
	pthread_create(&t[3], NULL, rx_main, &arx);
	pthread_create(&t[4], NULL, stats_main, ports);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	atomic_store(&stats_stop, 1);
	void *sr;
	pthread_join(t[4], &sr);
	CHECK(sr == NULL, "a counter went backwards");
	CHECK(atx.ok && btx.ok && brx.ok && arx.ok, "threads ok");
	CHECK_EQ(brx.got, N);
	CHECK_EQ(arx.got, M);
	struct pktmap_stats sa = { .sz = sizeof(sa) }, sb = { .sz = sizeof(sb) };
	pktmap_stats(a, &sa);
	pktmap_stats(b, &sb);
	CHECK_EQ(sa.tx_packets, N);
	CHECK_EQ(sb.rx_packets, N);
	CHECK_EQ(sb.tx_packets, M);
	CHECK_EQ(sa.rx_packets, M);
	CHECK_EQ(sa.drop_invalid + sb.drop_invalid, 0);
	pktmap_close(a);
	pktmap_close(b);
}

/* A pipe the region cannot hold is refused with a clear error and leaves
 * nothing behind: the same name opens afterwards with fewer slots, and no
 * buffer is missing. */
static void test_create_rollback(void)
{
	char n1[160], n2[160], err[300] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *big = NULL, *small = NULL, *other = NULL, *keep = NULL;
	/* A region made by a small pipe, then a second pipe too big for it. */
	snprintf(n1, sizeof(n1), "pipe:%sk{0@conf:slots=16,bufs=200@mem:%srb",
		 pname, pname);
	CHECK(pktmap_open(&keep, n1, &o) == 0, "open %s: %s", n1, err);
	if (!keep)
		return;
	uint32_t free0 = pm_region_free_count(&keep->region);
	snprintf(n2, sizeof(n2), "pipe:%sr{0@conf:slots=64@mem:%srb", pname, pname);
	CHECK(pktmap_open(&big, n2, &o) == -ENOMEM, "too big: %s", err);
	CHECK(strstr(err, "out of buffers") != NULL, "message: %s", err);
	CHECK(strstr(err, "corrupt") == NULL && strstr(err, "invalid") == NULL,
	      "not blamed on a peer: %s", err);
	CHECK_EQ(pm_region_free_count(&keep->region), free0);
	/* The same name, sized to fit: opens, both ends, no "invalid". */
	snprintf(n2, sizeof(n2), "pipe:%sr{0@conf:slots=16@mem:%srb", pname, pname);
	CHECK(pktmap_open(&small, n2, &o) == 0, "then: %s", err);
	snprintf(n2, sizeof(n2), "pipe:%sr}0@mem:%srb", pname, pname);
	CHECK(pktmap_open(&other, n2, &o) == 0, "other end: %s", err);
	CHECK_EQ(pm_region_free_count(&keep->region), free0 - 4 * 16);
	pktmap_close(other);
	pktmap_close(small);
	pktmap_close(big);
	pktmap_close(keep);
}

/* Extra buffers belong to each open: two ports on two rings of one pipe
 * end each get their own list, and closing one leaves the other's alone. */
static uint32_t extra_list(struct pktmap_port *p, uint32_t *out, uint32_t max)
{
	struct netmap_if *nifp = pktmap_nifp(p);
	struct netmap_ring *r = NETMAP_TXRING(nifp, 0); /* any ring: one pool */
	uint32_t n = 0;
	for (uint32_t b = nifp->ni_bufs_head; b && n < max;
	     b = *(uint32_t *)NETMAP_BUF(r, b))
		out[n++] = b;
	return n;
}

static void test_extra_bufs(void)
{
	struct pktmap_port *r0 = open_end("{9-0@conf:rings=2,slots=64,extra-bufs=8,bufs=2000", 1);
	struct pktmap_port *r1 = open_end("{9-1@conf:extra-bufs=8", 1);
	if (!r0 || !r1) {
		pktmap_close(r0);
		pktmap_close(r1);
		return;
	}
	CHECK(pktmap_nifp(r0) != pktmap_nifp(r1), "a netmap_if per open");
	uint32_t a[16], b[16];
	uint32_t na = extra_list(r0, a, 16), nb = extra_list(r1, b, 16);
	CHECK_EQ(na, 8);
	CHECK_EQ(nb, 8);
	for (uint32_t i = 0; i < na; i++)
		for (uint32_t j = 0; j < nb; j++)
			CHECK(a[i] != b[j], "buffer %u on both lists", a[i]);
	uint32_t free0 = pm_region_free_count(&r0->region);
	pktmap_close(r1);
	/* r1's 8 came back; r0's list is intact and still r0's. */
	CHECK_EQ(pm_region_free_count(&r0->region), free0 + 8);
	uint32_t a2[16];
	CHECK_EQ(extra_list(r0, a2, 16), 8);
	CHECK(memcmp(a, a2, sizeof(uint32_t) * 8) == 0, "r0's list unchanged");
	pktmap_close(r0);
}

int main(void)
{
	snprintf(pname, sizeof(pname), "ut%d", (int)getpid());
	test_basic();
	test_checker_and_chains();
	test_two_processes();
	test_sigkill();
	test_split_processes();
	test_split_sigkill();
	test_shared_tx(2);
	test_shared_tx(3);
	test_shared_tx_sigkill();
	test_shared_tx_exclusive();
	test_nowait_sync();
	test_lock_owner();
	test_stat_parse();
	test_shared_rx(2);
	test_shared_rx(3);
	test_shared_rx_sigkill();
	test_old_pipe();
	test_garbage_peer();
	test_garbage_view();
	test_garbage_resume();
	test_swapped_release();
	test_wakeup();
	test_multi_ring();
	test_shared_region();
	test_mem_means_mem();
	test_nowait();
	test_two_directions();
	test_split_wakeup();
	test_shared_tx_wakeup();
	test_threads();
	test_create_rollback();
	test_extra_bufs();
	return t_done("pipe");
}
