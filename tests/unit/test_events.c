/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap_fd() as an event source: a program that waits with plain poll(),
 * select() or epoll (level-triggered) on the descriptor, and never calls
 * pktmap_poll(), receives every packet a writer in another process (or
 * thread) sends: exact counts, bytes and order. Also: the fd stays
 * readable while unread packets remain, is not readable when an rxsync
 * would find nothing, and a waiter does not spin (empty wake-ups are
 * bounded by the real ones). One section per back end: pipe (RX, and TX
 * space on a /T port), null, pcap, tap (root: in its own namespace).
 */
#include <errno.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "pktmap/netmap_user.h"
#include "netns.h"
#include "t.h"

enum wait_mode { W_POLL, W_SELECT, W_EPOLL, W_EPOLLET };
static const char *const mode_name[] = { "poll", "select", "epoll",
					 "epoll edge-triggered" };

/* One way of waiting on one fd. epoll keeps its set between waits, as an
 * event loop does (level-triggered: the default). */
struct waiter {
	enum wait_mode mode;
	int fd, epfd;
	short events;
};

static void waiter_init(struct waiter *w, enum wait_mode m, int fd, short events)
{
	w->mode = m;
	w->fd = fd;
	w->events = events;
	w->epfd = -1;
	if (m == W_EPOLL || m == W_EPOLLET) {
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = {
			.events = (events & POLLIN ? EPOLLIN : 0) |
				  (events & POLLOUT ? EPOLLOUT : 0) |
				  (m == W_EPOLLET ? EPOLLET : 0)
		};
		CHECK(epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl: %s",
		      strerror(errno));
	}
}

static void waiter_fini(struct waiter *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
}

/* Wait up to timeout_ms; returns POLLIN/POLLOUT bits that are ready. */
static short waiter_wait(struct waiter *w, int timeout_ms)
{
	short rev = 0;
	if (w->mode == W_POLL) {
		struct pollfd pfd = { .fd = w->fd, .events = w->events };
		int r;
		do
			r = poll(&pfd, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		return r > 0 ? (short)(pfd.revents & (POLLIN | POLLOUT)) : 0;
	}
	if (w->mode == W_SELECT) {
		fd_set rd, wr;
		FD_ZERO(&rd);
		FD_ZERO(&wr);
		if (w->events & POLLIN)
			FD_SET(w->fd, &rd);
		if (w->events & POLLOUT)
			FD_SET(w->fd, &wr);
		struct timeval tv = { .tv_sec = timeout_ms / 1000,
				      .tv_usec = (timeout_ms % 1000) * 1000 };
		int r = select(w->fd + 1, &rd, &wr, NULL, &tv);
		if (r <= 0)
			return 0;
		if (FD_ISSET(w->fd, &rd))
			rev |= POLLIN;
		if (FD_ISSET(w->fd, &wr))
			rev |= POLLOUT;
		return rev;
	}
	struct epoll_event ev;
	int r;
	do
		r = epoll_wait(w->epfd, &ev, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return 0;
	if (ev.events & EPOLLIN)
		rev |= POLLIN;
	if (ev.events & EPOLLOUT)
		rev |= POLLOUT;
	return rev;
}

/* Frame i's length: varied, 60..1514. */
static uint32_t frame_len(uint32_t i)
{
	return 60 + (i * 131u) % 1455u;
}

#define MAX_RINGS 8

struct rx_count {
	uint64_t pkts, bytes, bad, misorder, foreign;
	uint64_t wakes, empty_wakes;
	uint32_t next;
	/* per RX ring: frames, and sequence numbers going backwards */
	uint64_t ring_pkts[MAX_RINGS], ring_misorder;
	uint32_t ring_next[MAX_RINGS];
	/* when set: which of the first nseen sequence numbers came, and
	 * how many came twice or out of range */
	uint8_t *seen;
	uint32_t nseen;
	uint64_t dups;
};

/* Check and take everything on the port's RX rings (no rxsync). */
static uint32_t consume(struct pktmap_port *p, struct rx_count *c)
{
	struct netmap_if *nifp = pktmap_nifp(p);
	uint32_t n = 0;
	for (uint32_t r = 0; r < nifp->ni_rx_rings; r++) {
		struct netmap_ring *ring = NETMAP_RXRING(nifp, r);
		while (!nm_ring_empty(ring)) {
			struct netmap_slot *s = &ring->slot[ring->head];
			uint32_t seq;
			int v = t_frame_check((const uint8_t *)NETMAP_BUF(ring, s->buf_idx),
					      s->len, &seq);
			ring->head = ring->cur = nm_ring_next(ring, ring->head);
			if (v < 0) {
				c->foreign++;
				continue;
			}
			c->pkts++;
			c->bytes += s->len;
			c->bad += v == 0 || s->len != frame_len(seq);
			c->misorder += seq != c->next;
			c->next = seq + 1;
			if (r < MAX_RINGS) {
				c->ring_pkts[r]++;
				c->ring_misorder += seq < c->ring_next[r];
				c->ring_next[r] = seq + 1;
			}
			if (c->seen) {
				if (seq >= c->nseen || c->seen[seq])
					c->dups++;
				else
					c->seen[seq] = 1;
			}
			n++;
		}
	}
	return n;
}

/* The reader: wait on pktmap_fd() the way `m` says, rxsync, consume, until
 * `want` packets came or a wait times out (10 s: a lost wake-up). After
 * every packet of the first `pingpong`, tell the writer through `ack`. */
static void read_all(struct pktmap_port *p, enum wait_mode m, uint64_t want,
		     uint32_t pingpong, int ack, struct rx_count *c)
{
	struct waiter w;
	waiter_init(&w, m, pktmap_fd(p), POLLIN);
	while (c->pkts < want) {
		short rev = waiter_wait(&w, 10000);
		if (!(rev & POLLIN)) {
			CHECK(0, "%s: no wake-up after %llu of %llu packets",
			      mode_name[m], (unsigned long long)c->pkts,
			      (unsigned long long)want);
			break;
		}
		c->wakes++;
		CHECK(pktmap_rxsync(p) == 0, "rxsync");
		uint32_t got = consume(p, c);
		if (!got)
			c->empty_wakes++;
		/* Edge-triggered: sync and consume until an rxsync leaves the
		 * ring empty, which re-arms the edge (pktmap.h). */
		for (uint32_t more = got; m == W_EPOLLET && more;) {
			CHECK(pktmap_rxsync(p) == 0, "rxsync");
			more = consume(p, c);
			got += more;
		}
		for (uint32_t i = 0; ack >= 0 && i < got && c->pkts - got + i < pingpong;
		     i++) {
			char b = 1;
			CHECK(write(ack, &b, 1) == 1, "ack");
		}
	}
	waiter_fini(&w);
}

/* ---- pipe ------------------------------------------------------------ */

/* The writer process: `n` frames into pipe:NAME{0, the first `pingpong`
 * one at a time, each after the reader's ack (so the reader has gone to
 * sleep in between). Waits for space with pktmap_poll(), or on its own
 * pktmap_fd() with `m` when `tx_fd` (a /T port). Exits 0 when all left. */
static int pipe_writer(const char *name, uint32_t n, uint32_t pingpong, int ack,
		       int tx_fd, enum wait_mode m)
{
	struct pktmap_port *p = t_open_port(name, 0);
	if (!p)
		return 2;
	struct netmap_ring *ring = NETMAP_TXRING(pktmap_nifp(p), 0);
	struct waiter w;
	if (tx_fd)
		waiter_init(&w, m, pktmap_fd(p), POLLOUT);
	uint32_t i = 0;
	int rc = 0;
	while (i < n) {
		if (i < pingpong && i > 0) {
			char b;
			if (read(ack, &b, 1) != 1) {
				rc = 3;
				break;
			}
		}
		while (nm_ring_empty(ring)) {
			if (tx_fd) {
				if (!(waiter_wait(&w, 10000) & POLLOUT)) {
					fprintf(stderr, "writer: no POLLOUT in 10 s\n");
					rc = 4;
					goto out;
				}
				pktmap_txsync(p);
			} else if (pktmap_poll(p, POLLOUT, 10000) <= 0) {
				rc = 4;
				goto out;
			}
		}
		uint32_t burst = i < pingpong ? 1 : n - i;
		while (burst-- && !nm_ring_empty(ring)) {
			struct netmap_slot *s = &ring->slot[ring->head];
			s->len = (uint16_t)frame_len(i);
			t_frame((uint8_t *)NETMAP_BUF(ring, s->buf_idx), s->len, i, 0);
			ring->head = ring->cur = nm_ring_next(ring, ring->head);
			i++;
		}
		pktmap_txsync(p);
	}
out:
	if (tx_fd)
		waiter_fini(&w);
	pktmap_close(p);
	return rc;
}

static void test_pipe(enum wait_mode m, int tx_fd)
{
	char rname[96], wname[96];
	const uint32_t N = 40000, PP = 200;
	snprintf(rname, sizeof(rname), "pipe:ev%d_%d_%d}0@conf:slots=256", (int)getpid(),
		 (int)m, tx_fd);
	snprintf(wname, sizeof(wname), "pipe:ev%d_%d_%d{0%s@conf:slots=256",
		 (int)getpid(), (int)m, tx_fd, tx_fd ? "/T" : "");
	struct pktmap_port *p = t_open_port(rname, 0);
	if (!p)
		return;
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	/* Nothing yet: not readable. */
	struct waiter w;
	waiter_init(&w, m, pktmap_fd(p), POLLIN);
	CHECK(waiter_wait(&w, 0) == 0, "%s: readable before any packet", mode_name[m]);

	pid_t pid = fork();
	if (pid == 0) {
		close(sv[1]);
		_exit(pipe_writer(wname, N, PP, sv[0], tx_fd, m));
	}
	close(sv[0]);
	struct rx_count c = { 0 };
	read_all(p, m, N, PP, sv[1], &c);
	int status = -1;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer status %d", status);
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < N; i++)
		bytes += frame_len(i);
	printf("pipe %s%s: %llu packets, %llu wake-ups, %llu empty\n", mode_name[m],
	       tx_fd ? " (writer waits on its fd too)" : "",
	       (unsigned long long)c.pkts, (unsigned long long)c.wakes,
	       (unsigned long long)c.empty_wakes);
	CHECK_EQ(c.pkts, N);
	CHECK_EQ(c.bytes, bytes);
	CHECK_EQ(c.bad, 0);
	CHECK_EQ(c.misorder, 0);
	CHECK_EQ(c.foreign, 0);
	/* Each wake-up that found packets may leave one more that finds the
	 * ring empty (the one that takes the token); more means spinning. */
	CHECK(c.empty_wakes <= c.wakes - c.empty_wakes + 2,
	      "%llu empty wake-ups for %llu real ones",
	      (unsigned long long)c.empty_wakes,
	      (unsigned long long)(c.wakes - c.empty_wakes));
	/* All consumed and released: not readable. */
	pktmap_rxsync(p);
	CHECK(waiter_wait(&w, 0) == 0, "%s: readable with nothing to read", mode_name[m]);
	waiter_fini(&w);
	close(sv[1]);
	pktmap_close(p);
}

/* Unread packets keep the fd readable; a TX-only port's fd is writable
 * exactly while a txsync finds space. One thread, both ends. */
static void test_pipe_levels(void)
{
	char a_name[96], b_name[96];
	snprintf(a_name, sizeof(a_name), "pipe:evl%d{0/T@conf:slots=8", (int)getpid());
	snprintf(b_name, sizeof(b_name), "pipe:evl%d}0", (int)getpid());
	struct pktmap_port *a = t_open_port(a_name, 0), *b = t_open_port(b_name, 0);
	if (!a || !b)
		return;
	int afd = pktmap_fd(a), bfd = pktmap_fd(b);
	struct pollfd pa = { .fd = afd, .events = POLLOUT };
	struct pollfd pb = { .fd = bfd, .events = POLLIN };
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);

	CHECK(poll(&pa, 1, 0) == 1 && pa.revents == POLLOUT, "empty pipe: writable");
	CHECK(poll(&pb, 1, 0) == 0, "empty pipe: not readable");
	/* Fill the pipe: 7 usable slots. */
	uint32_t sent = 0;
	while (!nm_ring_empty(tx)) {
		struct netmap_slot *s = &tx->slot[tx->head];
		s->len = (uint16_t)frame_len(sent);
		t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len, sent, 0);
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
		sent++;
	}
	pktmap_txsync(a);
	CHECK_EQ(sent, 7);
	CHECK(nm_ring_empty(tx), "full after txsync");
	CHECK(poll(&pa, 1, 0) == 0, "full pipe: not writable (revents %#x)", pa.revents);
	CHECK(poll(&pb, 1, 0) == 1 && (pb.revents & POLLIN), "packets: readable");
	pktmap_rxsync(b);
	CHECK_EQ(nm_ring_space(rx), 7);
	/* Read 3 of 7: the fd stays readable, again and again. */
	struct rx_count c = { 0 };
	for (int k = 0; k < 3; k++) {
		rx->head = rx->cur = nm_ring_next(rx, rx->head);
		c.next++;
	}
	pktmap_rxsync(b);
	CHECK(poll(&pb, 1, 0) == 1, "4 unread: still readable");
	CHECK(poll(&pb, 1, 0) == 1, "4 unread: still readable (level)");
	/* The writer got space back from the released 3: writable. */
	CHECK(poll(&pa, 1, 1000) == 1 && pa.revents == POLLOUT,
	      "slots released: writable");
	pktmap_txsync(a);
	CHECK_EQ(nm_ring_space(tx), 3);
	consume(b, &c);
	CHECK_EQ(c.pkts, 4);
	CHECK_EQ(c.bad + c.misorder, 0);
	pktmap_rxsync(b);
	CHECK(poll(&pb, 1, 0) == 0, "all read: not readable");
	pktmap_close(a);
	pktmap_close(b);
}

/* A port used only through pktmap_poll() (never pktmap_fd()) costs its
 * writer no wake-up while it is awake: the design's "nothing for nobody". */
static void test_pipe_no_fd_no_wakeups(void)
{
	char a_name[96], b_name[96];
	snprintf(a_name, sizeof(a_name), "pipe:evn%d{0", (int)getpid());
	snprintf(b_name, sizeof(b_name), "pipe:evn%d}0", (int)getpid());
	struct pktmap_port *a = t_open_port(a_name, 0), *b = t_open_port(b_name, 0);
	if (!a || !b)
		return;
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct rx_count c = { 0 };
	for (uint32_t i = 0; i < 1000; i++) {
		struct netmap_slot *s = &tx->slot[tx->head];
		s->len = (uint16_t)frame_len(i);
		t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len, i, 0);
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
		pktmap_txsync(a);
		pktmap_rxsync(b);
		consume(b, &c);
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(a, &st);
	CHECK_EQ(c.pkts, 1000);
	CHECK_EQ(st.wakeups_sent, 0);
	pktmap_close(a);
	pktmap_close(b);
}

/* PKTMAP_OPEN_EVENTS: the reader is an event source from pktmap_open()
 * on, before any pktmap_fd() call: the same traffic as above now costs
 * the writer wake-ups (each time the reader's ring runs empty), which a
 * port opened without the flag never pays. pktmap_fd() then returns that
 * descriptor, readable exactly while packets wait. */
static void test_pipe_open_events(void)
{
	char a_name[96], b_name[96], err[300] = "";
	snprintf(a_name, sizeof(a_name), "pipe:evo%d{0", (int)getpid());
	snprintf(b_name, sizeof(b_name), "pipe:evo%d}0", (int)getpid());
	struct pktmap_port *a = t_open_port(a_name, 0), *b = NULL;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err),
				      .flags = PKTMAP_OPEN_EVENTS };
	int r = pktmap_open(&b, b_name, &o);
	CHECK(r == 0, "open %s with PKTMAP_OPEN_EVENTS: %s (%s)", b_name,
	      pktmap_strerror(r), err);
	if (!a || !b) {
		pktmap_close(a);
		return;
	}
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct rx_count c = { 0 };
	for (uint32_t i = 0; i < 1000; i++) {
		struct netmap_slot *s = &tx->slot[tx->head];
		s->len = (uint16_t)frame_len(i);
		t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len, i, 0);
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
		pktmap_txsync(a);
		pktmap_rxsync(b);
		consume(b, &c);
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(a, &st);
	CHECK_EQ(c.pkts, 1000);
	CHECK_EQ(c.bad + c.misorder, 0);
	CHECK(st.wakeups_sent > 0, "an event source from open: the writer "
	      "wakes it (%llu wake-ups)", (unsigned long long)st.wakeups_sent);
	int fd = pktmap_fd(b);
	CHECK(fd >= 0, "pktmap_fd: %s", pktmap_strerror(fd));
	CHECK_EQ(pktmap_fd(b), fd);
	struct pollfd pb = { .fd = fd, .events = POLLIN };
	pktmap_rxsync(b);
	CHECK(poll(&pb, 1, 0) == 0, "nothing sent: not readable");
	struct netmap_slot *s = &tx->slot[tx->head];
	s->len = (uint16_t)frame_len(1000);
	t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len, 1000, 0);
	tx->head = tx->cur = nm_ring_next(tx, tx->head);
	pktmap_txsync(a);
	CHECK(poll(&pb, 1, 1000) == 1 && (pb.revents & POLLIN),
	      "a packet sent: readable");
	pktmap_rxsync(b);
	consume(b, &c);
	CHECK_EQ(c.pkts, 1001);
	CHECK_EQ(c.bad + c.misorder, 0);
	pktmap_close(a);
	pktmap_close(b);
}

/* ---- null, pcap ------------------------------------------------------ */

static void test_null(enum wait_mode m)
{
	struct pktmap_port *p = t_open_port("null:", 0);
	if (!p)
		return;
	struct waiter wi, wo;
	waiter_init(&wi, m, pktmap_fd(p), POLLIN);
	waiter_init(&wo, m, pktmap_fd(p), POLLOUT);
	CHECK(waiter_wait(&wi, 0) == 0, "null: %s: never readable", mode_name[m]);
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	for (uint32_t i = 0; i < 5000;) {
		CHECK(waiter_wait(&wo, 1000) == POLLOUT, "null: %s: always writable",
		      mode_name[m]);
		while (!nm_ring_empty(tx) && i < 5000) {
			tx->slot[tx->head].len = 60;
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
			i++;
		}
		pktmap_txsync(p);
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets, 5000);
	CHECK(waiter_wait(&wi, 0) == 0, "null: never readable");
	waiter_fini(&wi);
	waiter_fini(&wo);
	pktmap_close(p);
}

static void test_pcap(enum wait_mode m)
{
	char path[96], name[128];
	const uint32_t N = 3000;
	snprintf(path, sizeof(path), "/tmp/pktmap-ev%d-%d.pcap", (int)getpid(), (int)m);
	snprintf(name, sizeof(name), "pcap:%s/T", path);
	struct pktmap_port *w = t_open_port(name, 0);
	if (!w)
		return;
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(w), 0);
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < N;) {
		struct waiter wo;
		waiter_init(&wo, m, pktmap_fd(w), POLLOUT);
		CHECK(waiter_wait(&wo, 1000) & POLLOUT, "pcap/T: writable");
		waiter_fini(&wo);
		while (!nm_ring_empty(tx) && i < N) {
			struct netmap_slot *s = &tx->slot[tx->head];
			s->len = (uint16_t)frame_len(i);
			bytes += s->len;
			t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len, i, 0);
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
			i++;
		}
		pktmap_txsync(w);
	}
	pktmap_close(w);

	snprintf(name, sizeof(name), "pcap:%s/R", path);
	struct pktmap_port *p = t_open_port(name, 0);
	if (!p) {
		unlink(path);
		return;
	}
	struct rx_count c = { 0 };
	struct waiter wi;
	waiter_init(&wi, m, pktmap_fd(p), POLLIN);
	struct pktmap_info info = { .sz = sizeof(info) };
	for (int i = 0; i < 100000; i++) {
		CHECK(waiter_wait(&wi, 1000) & POLLIN, "pcap: readable until the end");
		pktmap_rxsync(p);
		consume(p, &c);
		pktmap_info(p, &info);
		if (info.flags & PKTMAP_INFO_EOF)
			break;
	}
	CHECK(info.flags & PKTMAP_INFO_EOF, "pcap: reached the end");
	/* Ended: readable ("the source ended"), and pktmap_poll says POLLHUP. */
	CHECK(waiter_wait(&wi, 0) & POLLIN, "pcap: readable at the end");
	CHECK_EQ(pktmap_poll(p, POLLIN, 0), POLLHUP);
	printf("pcap %s: %llu packets\n", mode_name[m], (unsigned long long)c.pkts);
	CHECK_EQ(c.pkts, N);
	CHECK_EQ(c.bytes, bytes);
	CHECK_EQ(c.bad + c.misorder + c.foreign, 0);
	waiter_fini(&wi);
	pktmap_close(p);
	unlink(path);
}

/* ---- tap (root, own namespace) ------------------------------------- */

struct tap_sender {
	const char *ifname;
	uint32_t n, pingpong;
	uint32_t flows; /* frame i is of flow i % flows (0: one flow) */
	int ack;
	int rc;
};

/* The kernel side: a raw socket sending out of the TAP, in a thread. */
static void *tap_send(void *arg)
{
	struct tap_sender *ts = arg;
	static uint8_t frame[2048];
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_ifindex = (int)if_nametoindex(ts->ifname) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		ts->rc = 1;
		return NULL;
	}
	for (uint32_t i = 0; i < ts->n; i++) {
		/* The whole run in acked steps of 50 (the TAP's queue is 1000
		 * frames: more in flight would be dropped, not lost by us). */
		if (i % (i < ts->pingpong ? 1 : 50) == 0 && i > 0) {
			char b;
			if (read(ts->ack, &b, 1) != 1) {
				ts->rc = 2;
				break;
			}
		}
		uint32_t len = frame_len(i);
		t_frame(frame, len, i, ts->flows ? i % ts->flows : 0);
		if (send(fd, frame, len, 0) != (ssize_t)len) {
			ts->rc = 3;
			break;
		}
	}
	close(fd);
	return NULL;
}

/* A port that receives what the kernel sends out of `send_if` (a TAP's
 * own device, or an xdp port's veth peer): the path opens a moment after
 * the link comes up, so probes (not test frames) go first. */
static void test_kernel_rx(const char *what, struct pktmap_port *p,
			   const char *send_if, enum wait_mode m, bool ordered)
{
	const uint32_t N = 3000, PP = 100;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_ifindex = (int)if_nametoindex(send_if) };
	CHECK(bind(fd, (struct sockaddr *)&sll, sizeof(sll)) == 0, "bind");
	static uint8_t seen[3000];
	struct rx_count c = { .seen = seen, .nseen = N };
	memset(seen, 0, sizeof(seen));
	uint8_t probe[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	probe[12] = 0x88, probe[13] = 0xb5;
	for (int i = 0; i < 200 && !c.foreign; i++) {
		CHECK(send(fd, probe, 60, 0) == 60, "probe");
		pktmap_poll(p, POLLIN, 10);
		pktmap_rxsync(p);
		consume(p, &c);
	}
	close(fd);
	CHECK(c.foreign > 0, "%s: the path from %s never opened", what, send_if);
	c.foreign = 0;

	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	/* Several queues: 16 flows, which the sender's queue selection
	 * (a hash of the flow) spreads over them. */
	struct tap_sender ts = { .ifname = send_if, .n = N, .pingpong = PP,
				 .ack = sv[0], .flows = ordered ? 1 : 16 };
	pthread_t th;
	pthread_create(&th, NULL, tap_send, &ts);
	struct waiter w;
	waiter_init(&w, m, pktmap_fd(p), POLLIN);
	while (c.pkts < N) {
		if (!(waiter_wait(&w, 10000) & POLLIN)) {
			CHECK(0, "%s %s: no wake-up after %llu", what, mode_name[m],
			      (unsigned long long)c.pkts);
			break;
		}
		c.wakes++;
		pktmap_rxsync(p);
		uint64_t before = c.pkts;
		uint32_t got = consume(p, &c);
		c.empty_wakes += got == 0;
		for (uint64_t i = before; i < c.pkts; i++)
			if ((i + 1 < PP || (i + 1) % 50 == 0) && i + 1 < N) {
				char b = 1;
				CHECK(write(sv[1], &b, 1) == 1, "ack");
			}
	}
	close(sv[1]); /* a sender still waiting for an ack gives up */
	pthread_join(th, NULL);
	CHECK_EQ(ts.rc, 0);
	printf("%s %s: %llu packets (ring 0: %llu, ring 1: %llu), %llu wake-ups, "
	       "%llu empty\n", what, mode_name[m], (unsigned long long)c.pkts,
	       (unsigned long long)c.ring_pkts[0],
	       (unsigned long long)c.ring_pkts[1], (unsigned long long)c.wakes,
	       (unsigned long long)c.empty_wakes);
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < N; i++)
		bytes += frame_len(i);
	CHECK_EQ(c.pkts, N);
	CHECK_EQ(c.bytes, bytes);
	CHECK_EQ(c.bad, 0);
	/* Several queues: each in order, every ring used, together every
	 * frame exactly once (N frames, none twice or out of range). */
	if (ordered)
		CHECK_EQ(c.misorder, 0);
	CHECK_EQ(c.ring_misorder, 0);
	CHECK_EQ(c.dups, 0);
	uint32_t nrings = pktmap_nifp(p)->ni_rx_rings;
	for (uint32_t r = 0; r < nrings && r < MAX_RINGS; r++)
		CHECK(c.ring_pkts[r] > 0, "%s %s: ring %u of %u got nothing",
		      what, mode_name[m], r, nrings);
	CHECK(c.empty_wakes <= c.wakes - c.empty_wakes + 2, "%s: spinning", what);
	waiter_fini(&w);
	close(sv[0]);
}

/* A kernel port: packets an rxsync took but the application has not read
 * keep the fd readable (the kernel's own fd would not say so). */
static void test_unread(struct pktmap_port *p, const char *send_if)
{
	static uint8_t frame[2048];
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_ifindex = (int)if_nametoindex(send_if) };
	CHECK(bind(fd, (struct sockaddr *)&sll, sizeof(sll)) == 0, "bind");
	struct pollfd pfd = { .fd = pktmap_fd(p), .events = POLLIN };
	pktmap_rxsync(p);
	CHECK(poll(&pfd, 1, 0) == 0, "unread: nothing yet");
	for (uint32_t i = 0; i < 10; i++) {
		t_frame(frame, 100, i, 0);
		CHECK(send(fd, frame, 100, 0) == 100, "send");
	}
	close(fd);
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(p), 0);
	for (int i = 0; i < 100 && nm_ring_space(ring) < 10; i++) {
		CHECK(poll(&pfd, 1, 5000) == 1, "unread: frames arrive");
		pktmap_rxsync(p);
	}
	CHECK_EQ(nm_ring_space(ring), 10);
	for (int k = 0; k < 3; k++)
		ring->head = ring->cur = nm_ring_next(ring, ring->head);
	CHECK(poll(&pfd, 1, 0) == 1, "unread: 10 taken by rxsync, readable");
	pktmap_rxsync(p);
	CHECK(poll(&pfd, 1, 0) == 1, "unread: 7 left, still readable");
	ring->head = ring->cur = ring->tail;
	pktmap_rxsync(p);
	CHECK(poll(&pfd, 1, 0) == 0, "unread: all read, not readable");
}

static void test_tap(enum wait_mode m)
{
	char ifname[IFNAMSIZ], name[64], cmd[128];
	snprintf(ifname, sizeof(ifname), "pmev%d", (int)m);
	snprintf(name, sizeof(name), "tap:%s", ifname);
	struct pktmap_port *p = t_open_port(name, 0);
	if (!p)
		return;
	snprintf(cmd, sizeof(cmd), "ip link set %s up", ifname);
	t_run(cmd);
	test_kernel_rx("tap", p, ifname, m, true);
	if (m == W_POLL)
		test_unread(p, ifname);
	pktmap_close(p);
}

/* xdp:eb receives what a raw socket sends out of its veth peer ea; then
 * xdp:ea/T sends with its writer waiting for POLLOUT on its own fd. */
static void test_xdp(enum wait_mode m)
{
	struct pktmap_port *p = t_open_port("xdp:eb/R", 0);
	if (!p)
		return;
	test_kernel_rx("xdp", p, "ea", m, true);

	struct pktmap_port *t = t_open_port("xdp:ea/T", 0);
	if (!t) {
		pktmap_close(p);
		return;
	}
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(t), 0);
	struct waiter wo, wi;
	waiter_init(&wo, m, pktmap_fd(t), POLLOUT);
	waiter_init(&wi, m, pktmap_fd(p), POLLIN);
	struct rx_count c = { 0 };
	const uint32_t N = 20000;
	uint32_t sent = 0;
	while (c.pkts < N) {
		if (sent < N && (waiter_wait(&wo, 0) & POLLOUT)) {
			pktmap_txsync(t);
			/* No more in flight than the receiver's ring holds. */
			while (!nm_ring_empty(tx) && sent < N && sent - c.pkts < 512) {
				struct netmap_slot *s = &tx->slot[tx->head];
				s->len = (uint16_t)frame_len(sent);
				t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len,
					sent, 0);
				tx->head = tx->cur = nm_ring_next(tx, tx->head);
				sent++;
			}
			pktmap_txsync(t);
		}
		if (!(waiter_wait(&wi, 10000) & POLLIN)) {
			CHECK(0, "xdp tx %s: no wake-up after %llu of %u sent",
			      mode_name[m], (unsigned long long)c.pkts, sent);
			break;
		}
		pktmap_rxsync(p);
		consume(p, &c);
	}
	printf("xdp tx->rx %s: %llu of %u packets\n", mode_name[m],
	       (unsigned long long)c.pkts, sent);
	CHECK_EQ(c.pkts, N);
	CHECK_EQ(c.bad + c.misorder + c.foreign, 0);
	waiter_fini(&wo);
	waiter_fini(&wi);
	pktmap_close(t);
	pktmap_close(p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_pipe_levels();
	test_pipe_no_fd_no_wakeups();
	test_pipe_open_events();
	test_pipe(W_EPOLLET, 0);
	for (int m = W_POLL; m <= W_EPOLL; m++) {
		test_pipe((enum wait_mode)m, 0);
		test_pipe((enum wait_mode)m, 1);
		test_null((enum wait_mode)m);
		test_pcap((enum wait_mode)m);
	}
	t_need_root("test_events (tap)");
	if (t_enter_netns() != 0) {
		/* The pipe, null and pcap sections above have run: their
		 * failures fail the test; without namespaces the rest is a
		 * skip, except under CI, which may not skip. */
		if (t_done("events") || getenv("CI"))
			return 1;
		return 77;
	}
	for (int m = W_POLL; m <= W_EPOLL; m++)
		test_tap((enum wait_mode)m);
	/* The veth pair for xdp: (copy mode; frames into eb's program). */
	if (t_run("ip link add ea type veth peer name eb && ip link set ea up && "
		  "ip link set eb up") == 0) {
		for (int m = W_POLL; m <= W_EPOLL; m++)
			test_xdp((enum wait_mode)m);
	} else {
		CHECK(0, "veth pair");
	}
	/* Two queues: the fd is a level-triggered epoll set of two sockets. */
	if (t_run("ip link add fa numtxqueues 2 numrxqueues 2 type veth peer name fb "
		  "numtxqueues 2 numrxqueues 2 && ip link set fa up && "
		  "ip link set fb up") == 0) {
		for (int m = W_POLL; m <= W_EPOLL; m++) {
			struct pktmap_port *p = t_open_port("xdp:fb/R", 0);
			if (!p)
				break;
			struct pktmap_info info = { .sz = sizeof(info) };
			pktmap_info(p, &info);
			CHECK_EQ(info.rx_rings, 2);
			test_kernel_rx("xdp 2 queues", p, "fa", (enum wait_mode)m, false);
			pktmap_close(p);
		}
	} else {
		CHECK(0, "veth pair with two queues");
	}
	return t_done("events");
}
