/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt: RX in place (root, in a network namespace of its own):
 *
 *  1. the RX slots point at the kernel's frames: every buffer index is
 *     beyond the region's buffers (the TPACKET ring), every byte is what
 *     was sent, in order; nothing copied (rx_copied 0, rx_lent 0);
 *  2. NS_BUF_CHANGED: an application that swaps buffers out of its RX
 *     slots (keeps the kernel's frame, leaves one of its extra buffers)
 *     still gets every frame whole and in order, more frames than the
 *     kernel ring holds (the lent frames go back to the kernel when they
 *     come back in a slot), and the port counts what it did: rx_lent =
 *     the frames taken, rx_copied = the frames delivered in region
 *     buffers (copied while frames were lent);
 *  3. a reader that does not read keeps exactly the ring memory's worth
 *     of frames (16 MiB of 2 KiB frames: 8192), the first ones sent, and
 *     counts the rest as kernel drops;
 *  4. pktmap_fd() of a pkt: port opened both ways is an event source for
 *     plain poll(), select() and epoll (level-triggered, no pktmap_poll):
 *     readable when frames arrive, writable while TX has room, not
 *     readable once everything is consumed and released;
 *  5. the kernel filter and direction: a filter rejects in the kernel
 *     (no slot used), outgoing frames (other senders on the interface)
 *     are seen with PKTMAP_RX_INOUT and only they with PKTMAP_RX_OUT;
 *  6. modes say where a copy remains: RX-only in place "copy", with TX
 *     "emulated", in a shared region (@mem:) "emulated" with every frame
 *     copied into the region's buffers;
 *  7. TX in the kernel's frames (tx=frames): each TX slot's buffer is its
 *     own frame of the kernel's TX ring (consecutive indices beyond the
 *     region's buffers), mode "copy"; every frame arrives whole and in
 *     order, the counters exact, the kernel's frames going round;
 *     PKTMAP_OPEN_TX_FRAMES asks for it, "@conf:tx=copy" wins over it;
 *  8. what tx=frames refuses: a swapped buffer (drop_invalid, the slot
 *     gets its own frame back with NS_BUF_CHANGED), a zero length
 *     (drop_invalid), a frame above the MTU (drop_too_long); a chain is
 *     joined; the frames around them and after them still go, in order
 *     (the kernel skips the refused slots' empty frames);
 *  9. tx=frames with RX in place on the same port (one TPACKET_V2
 *     socket): both ways work, mode "copy"; in an @mem: region TX frames
 *     are copied (mode "emulated") and still all arrive;
 * 10. a TX wait on a link that is down sleeps (5 ms at a time: the
 *     socket would say POLLOUT all along) instead of spinning, times out
 *     with no room, and every frame goes, in order, once the link is up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "pktmap/netmap_user.h"
#include "netns.h"
#include "t.h"

#define NF_DEFAULT 8192u /* 16 MiB of 2048-byte frames */

static uint32_t len_of(uint32_t seq)
{
	return 60 + (seq * 37) % 1455;
}

/* Write test frames seq, seq + 1, ... (up to end) into tx's free slots;
 * returns the next seq. */
static uint32_t fill_frames(struct netmap_ring *tx, uint32_t seq, uint32_t end)
{
	for (; seq < end && nm_ring_space(tx); seq++) {
		struct netmap_slot *s = &tx->slot[tx->head];
		t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), len_of(seq), seq, 0);
		s->len = (uint16_t)len_of(seq);
		s->flags = 0;
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
	}
	return seq;
}

/* Queue frames [seq, seq + n) on txp and wait until the kernel took them
 * all (a veth delivers to its peer inside the send). */
static void send_frames(struct pktmap_port *txp, uint32_t seq, uint32_t n)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(txp), 0);
	uint32_t end = seq + n;
	while (seq < end) {
		seq = fill_frames(tx, seq, end);
		pktmap_txsync(txp);
		if (seq < end && !nm_ring_space(tx))
			CHECK(pktmap_poll(txp, POLLOUT, 5000) & POLLOUT, "TX room");
	}
	for (int i = 0; i < 500 && nm_tx_pending(tx); i++)
		pktmap_poll(txp, POLLOUT, 10);
	CHECK(!nm_tx_pending(tx), "TX ring drained");
}

struct rx {
	uint64_t got, bad, misorder, inplace, in_region;
	uint32_t next;
};

/* Check one received slot. */
static void take(struct rx *r, struct netmap_ring *ring, struct netmap_slot *s,
		 uint32_t region_bufs)
{
	uint32_t seq;
	int v = t_frame_check((const uint8_t *)NETMAP_BUF(ring, s->buf_idx), s->len,
			      &seq);
	if (v < 0)
		return; /* not ours */
	r->got++;
	r->bad += v == 0;
	r->misorder += seq != r->next;
	r->next = seq + 1;
	if (s->buf_idx >= region_bufs)
		r->inplace++;
	else
		r->in_region++;
}

static void stats_of(struct pktmap_port *p, struct pktmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	CHECK(pktmap_stats(p, st) == 0, "stats");
}

static int64_t now_ms(void);

/* Take what the ring holds until `want` test frames arrived: a veth hands
 * received frames to a softirq that a loaded machine may run late (the
 * bound only ends a failing test). */
static void drain_until(struct pktmap_port *b, struct rx *r, uint64_t want,
			uint32_t region_bufs)
{
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	for (int64_t end = now_ms() + 10000;;) {
		pktmap_rxsync(b);
		for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head))
			take(r, ring, &ring->slot[ring->head], region_bufs);
		if (r->got >= want || now_ms() >= end)
			break;
		pktmap_poll(b, POLLIN, 100);
	}
}

/* Send test frames [seq, seq + n) from a in bursts of 256, each taken
 * off b's ring before the next leaves: the kernel's backlog (1000
 * frames) never fills, however slow the core. */
static void send_bursts(struct pktmap_port *a, struct pktmap_port *b,
			struct rx *r, uint32_t seq, uint32_t n,
			uint32_t region_bufs)
{
	for (uint32_t end = seq + n; seq < end; seq += 256) {
		uint32_t k = end - seq < 256 ? end - seq : 256;
		send_frames(a, seq, k);
		drain_until(b, r, r->got + k, region_bufs);
	}
}

/* 1. Frames read where the kernel wrote them. */
static void test_inplace(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	CHECK(strcmp(info.mode_name, "copy") == 0, "mode %s", info.mode_name);
	struct rx r = { 0 };
	const uint32_t N = 3 * NF_DEFAULT; /* the kernel's frames go round */
	send_bursts(a, b, &r, 0, N, info.bufs);
	CHECK_EQ(r.got, N);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	CHECK_EQ(r.inplace, N); /* every frame in the kernel's ring */
	struct pktmap_stats st;
	stats_of(b, &st);
	CHECK_EQ(st.rx_copied, 0);
	CHECK_EQ(st.rx_lent, 0);
	CHECK_EQ(st.drop_backend, 0);
	printf("in place: %llu frames, all in the kernel's ring\n",
	       (unsigned long long)r.got);
	pktmap_close(b);
}

/* 2. Buffers swapped out of the RX slots. */
static void test_swap(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb@conf:extra-bufs=32", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	struct netmap_if *nifp = pktmap_nifp(b);
	struct netmap_ring *ring = NETMAP_RXRING(nifp, 0);
	/* A FIFO of the buffers the application holds: its extra buffers
	 * first, then the frames it takes. */
	uint32_t q[64], qh = 0, qn = 0;
	/* memcpy: pkt: frames sit 2 bytes off a 4-byte boundary. */
	for (uint32_t i = nifp->ni_bufs_head; i && qn < 32;
	     memcpy(&i, NETMAP_BUF(ring, i), sizeof(i)))
		q[qn++] = i;
	CHECK_EQ(qn, 32);
	struct rx r = { 0 };
	uint64_t lent = 0, swaps = 0;
	const uint32_t N = 3 * NF_DEFAULT;
	for (uint32_t sent = 0; sent < N; sent += 256) {
		send_frames(a, sent, 256);
		uint64_t want = sent + 256 < N ? sent + 256 : N;
		for (int64_t end = now_ms() + 10000;
		     r.got < want && now_ms() < end; pktmap_poll(b, POLLIN, 100)) {
			pktmap_rxsync(b);
			for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head)) {
				struct netmap_slot *s = &ring->slot[ring->head];
				take(&r, ring, s, info.bufs);
				if (r.got % 3)
					continue;
				uint32_t left = q[qh];
				qh = (qh + 1) % 64;
				q[(qh + qn - 1) % 64] = s->buf_idx;
				lent += s->buf_idx >= info.bufs; /* it takes a frame */
				s->buf_idx = left;
				s->flags |= NS_BUF_CHANGED;
				swaps++;
			}
		}
	}
	drain_until(b, &r, N, info.bufs);
	pktmap_rxsync(b);
	CHECK_EQ(r.got, N);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	struct pktmap_stats st;
	stats_of(b, &st);
	CHECK(lent > 0 && r.in_region > 0, "both paths taken (lent %llu, "
	      "copied %llu)", (unsigned long long)lent,
	      (unsigned long long)r.in_region);
	CHECK_EQ(st.rx_lent, lent);
	CHECK_EQ(st.rx_copied, r.in_region);
	CHECK_EQ(r.inplace + r.in_region, N);
	CHECK_EQ(st.drop_backend, 0);
	printf("swaps: %llu frames, %llu swaps, %llu frames lent, %llu copied "
	       "into the buffers left, %llu in place\n",
	       (unsigned long long)r.got, (unsigned long long)swaps,
	       (unsigned long long)lent, (unsigned long long)r.in_region,
	       (unsigned long long)r.inplace);
	pktmap_close(b);
}

/* Frames pa sent that the kernel dropped before pb's sockets saw them
 * (the receive backlog was full): veth counts them as pa's tx_dropped,
 * for this pair alone. */
static uint64_t backlog_dropped(void)
{
	return t_if_counter("pa", "tx_dropped");
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 3. A paused reader keeps the ring memory's worth of frames. */
static void test_retention(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	const uint32_t S = NF_DEFAULT + 1808;
	uint64_t sd0 = backlog_dropped();
	for (uint32_t sent = 0; sent < S; sent += 16)
		send_frames(a, sent, 16);
	/* Every frame sent is in the ring, a kernel drop of the socket, or
	 * dropped before it (backlog, counted on pa). */
	struct pktmap_stats st;
	int64_t end = now_ms() + 10000;
	do {
		stats_of(b, &st);
	} while (st.drop_backend + NF_DEFAULT + (backlog_dropped() - sd0) < S &&
		 now_ms() < end);
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	struct rx r = { 0 };
	for (int round = 0; round < 64; round++) {
		pktmap_rxsync(b);
		for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head))
			take(&r, ring, &ring->slot[ring->head], info.bufs);
	}
	CHECK_EQ(r.got, NF_DEFAULT); /* exactly what the ring's memory holds */
	CHECK_EQ(r.next, NF_DEFAULT); /* the first ones */
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	stats_of(b, &st);
	uint64_t backlog = backlog_dropped() - sd0;
	CHECK(st.drop_backend + NF_DEFAULT + backlog == S,
	      "kept %u + socket drops %llu + backlog drops %llu != %u sent",
	      NF_DEFAULT, (unsigned long long)st.drop_backend,
	      (unsigned long long)backlog, S);
	printf("paused reader: %u sent, %llu kept, %llu dropped by the socket, "
	       "%llu before it\n", S, (unsigned long long)r.got,
	       (unsigned long long)st.drop_backend, (unsigned long long)backlog);
	pktmap_close(b);
}

/* 4. pktmap_fd() waited on with poll, select or epoll. */
enum wait_mode { W_POLL, W_SELECT, W_EPOLL };
static const char *const mode_name[] = { "poll", "select", "epoll" };

static short wait_fd(enum wait_mode m, int fd, int epfd, short events,
		     int timeout_ms)
{
	if (m == W_POLL) {
		struct pollfd pfd = { .fd = fd, .events = events };
		return poll(&pfd, 1, timeout_ms) > 0 ? pfd.revents : 0;
	}
	if (m == W_SELECT) {
		fd_set rd, wr;
		FD_ZERO(&rd);
		FD_ZERO(&wr);
		if (events & POLLIN)
			FD_SET(fd, &rd);
		if (events & POLLOUT)
			FD_SET(fd, &wr);
		struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
		if (select(fd + 1, &rd, &wr, NULL, &tv) <= 0)
			return 0;
		return (short)((FD_ISSET(fd, &rd) ? POLLIN : 0) |
			       (FD_ISSET(fd, &wr) ? POLLOUT : 0));
	}
	struct epoll_event ev;
	if (epoll_wait(epfd, &ev, 1, timeout_ms) <= 0)
		return 0;
	return (short)((ev.events & EPOLLIN ? POLLIN : 0) |
		       (ev.events & EPOLLOUT ? POLLOUT : 0));
}

struct sender {
	struct pktmap_port *a;
	uint32_t batches, per;
	int ack; /* read end: one byte per batch received */
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	for (uint32_t b = 0; b < s->batches; b++) {
		char c;
		send_frames(s->a, b * s->per, s->per);
		if (read(s->ack, &c, 1) != 1)
			break;
	}
	return NULL;
}

static void test_events(struct pktmap_port *a, enum wait_mode m)
{
	struct pktmap_port *c = t_open_port("pkt:pb", PKTMAP_DIR_BOTH);
	if (!c)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(c, &info);
	int fd = pktmap_fd(c), epfd = -1, ack[2];
	CHECK(fd >= 0, "pktmap_fd");
	/* RX in place, TX copies: the port says emulated. */
	CHECK(strcmp(info.mode_name, "emulated") == 0, "mode %s", info.mode_name);
	if (m == W_EPOLL) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN };
		CHECK(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
	}
	CHECK(pipe(ack) == 0, "pipe");
	/* Nothing there: not readable; TX has room: writable. */
	CHECK(!(wait_fd(m == W_EPOLL ? W_POLL : m, fd, -1, POLLIN, 0) & POLLIN),
	      "%s: readable with nothing to read", mode_name[m]);
	CHECK(wait_fd(m == W_EPOLL ? W_POLL : m, fd, -1, POLLOUT, 0) & POLLOUT,
	      "%s: not writable with an empty TX ring", mode_name[m]);

	struct sender snd = { .a = a, .batches = 40, .per = 50, .ack = ack[0] };
	pthread_t th;
	pthread_create(&th, NULL, sender_main, &snd);
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(c), 0);
	struct rx r = { 0 };
	uint64_t wakes = 0, empty = 0, want = (uint64_t)snd.batches * snd.per;
	uint32_t acked = 0;
	while (r.got < want) {
		short ev = wait_fd(m, fd, epfd, POLLIN, 5000);
		if (!(ev & POLLIN)) {
			CHECK(0, "%s: no wake-up with %llu of %llu received",
			      mode_name[m], (unsigned long long)r.got,
			      (unsigned long long)want);
			break;
		}
		wakes++;
		uint64_t before = r.got;
		pktmap_rxsync(c);
		for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head))
			take(&r, ring, &ring->slot[ring->head], info.bufs);
		empty += r.got == before;
		while (acked < snd.batches && r.got >= (uint64_t)(acked + 1) * snd.per) {
			CHECK(write(ack[1], "k", 1) == 1, "ack");
			acked++;
		}
	}
	while (acked < snd.batches) { /* let the sender end on failure */
		CHECK(write(ack[1], "k", 1) == 1, "ack");
		acked++;
	}
	pthread_join(th, NULL);
	pktmap_rxsync(c); /* give the last frames back */
	CHECK_EQ(r.got, want);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	CHECK(!(wait_fd(m == W_EPOLL ? W_POLL : m, fd, -1, POLLIN, 0) & POLLIN),
	      "%s: readable after everything was consumed", mode_name[m]);
	/* A release makes one empty wake-up at most per batch. */
	CHECK(empty <= wakes - empty + 2, "%s: %llu of %llu wake-ups empty",
	      mode_name[m], (unsigned long long)empty, (unsigned long long)wakes);
	printf("%s on pktmap_fd(): %llu frames, %llu wake-ups (%llu empty)\n",
	       mode_name[m], (unsigned long long)r.got, (unsigned long long)wakes,
	       (unsigned long long)empty);
	close(ack[0]);
	close(ack[1]);
	if (epfd >= 0)
		close(epfd);
	pktmap_close(c);
}

/* Frames [seq, seq + n) sent out of ifname by a plain packet socket
 * (through the qdisc: taps see them leave). */
static void raw_send(const char *ifname, uint32_t seq, uint32_t n)
{
	static uint8_t buf[2048];
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = 6,
				   .sll_ifindex = (int)if_nametoindex(ifname) };
	CHECK(s >= 0, "packet socket: %s", strerror(errno));
	for (uint32_t i = 0; s >= 0 && i < n; i++) {
		t_frame(buf, len_of(seq + i), seq + i, 0);
		CHECK(sendto(s, buf, len_of(seq + i), 0, (struct sockaddr *)&sll,
			     sizeof(sll)) == (ssize_t)len_of(seq + i),
		      "sendto: %s", strerror(errno));
	}
	if (s >= 0)
		close(s);
}

/* A plain packet socket on ifname that watches frames arrive. */
static int observer(const char *ifname)
{
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
		       htons(ETH_P_ALL));
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)if_nametoindex(ifname) };
	int one = 1, big = 4 << 20;
	CHECK(s >= 0 && bind(s, (struct sockaddr *)&sll, sizeof(sll)) == 0,
	      "observer on %s: %s", ifname, strerror(errno));
	setsockopt(s, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	return s;
}

/* Wait (10 s at most) until the observer sees frame `seq` arrive; what
 * came before it is read and dropped. */
static bool observed(int s, uint32_t want)
{
	static uint8_t buf[2048];
	for (int64_t end = now_ms() + 10000; now_ms() < end;) {
		ssize_t n = recv(s, buf, sizeof(buf), 0);
		uint32_t seq;
		if (n < 0) {
			struct pollfd pfd = { .fd = s, .events = POLLIN };
			poll(&pfd, 1, 100);
			continue;
		}
		if (t_frame_check(buf, (uint32_t)n, &seq) == 1 && seq == want)
			return true;
	}
	return false;
}

/* 5. The kernel filter and the direction. */
static void test_filter_direction(struct pktmap_port *a)
{
	/* The observer's socket is made first: the kernel hands a frame to
	 * the newest packet socket first, so once the observer has a frame,
	 * the port's socket has had it too. */
	int obs = observer("pb");
	struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
	if (!b) {
		close(obs);
		return;
	}
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	/* Accept frames whose sequence number (bytes 46..49, host order)
	 * is even: the low byte on little-endian hosts. */
	struct sock_filter even[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 46),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 1),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 96), /* cut: the port keeps it whole */
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	CHECK_EQ(pktmap_set_rx_filter(b, even, 5), 0);
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	send_frames(a, 0, 201); /* 200, even, is the last: all are in then */
	struct rx r = { 0 };
	uint64_t odd = 0;
	for (int64_t end = now_ms() + 10000; r.got < 101 && now_ms() < end;) {
		pktmap_poll(b, POLLIN, 100);
		for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head)) {
			struct netmap_slot *s = &ring->slot[ring->head];
			uint32_t seq = 0;
			CHECK(t_frame_check((uint8_t *)NETMAP_BUF(ring, s->buf_idx),
					    s->len, &seq) == 1, "frame intact (len %u)",
			      s->len);
			odd += seq & 1;
			r.got++;
		}
	}
	CHECK_EQ(r.got, 101);
	CHECK_EQ(odd, 0);
	CHECK_EQ(pktmap_set_rx_filter(b, NULL, 0), 0);

	/* Outgoing: frames another socket sends out of pb are seen with
	 * INOUT and OUT, not with IN; frames arriving on pb with IN and
	 * INOUT. */
	static const unsigned dirs[] = { PKTMAP_RX_IN, PKTMAP_RX_INOUT, PKTMAP_RX_OUT };
	for (unsigned d = 0; d < 3; d++) {
		CHECK_EQ(pktmap_set_rx_direction(b, dirs[d]), 0);
		/* Outgoing frames reach the taps inside the send; incoming
		 * ones through veth's softirq, in order: frame 1030 last. */
		raw_send("pb", 2000, 20); /* leave by pb */
		send_frames(a, 1000, 31); /* arrive on pb */
		/* Without IN the port cannot say when the incoming frames
		 * are in: once the observer has the last one, one more frame
		 * (2020) leaves by pb, and the port reads up to it. */
		uint32_t last_seq = 1030;
		if (!(dirs[d] & PKTMAP_RX_IN)) {
			CHECK(observed(obs, 1030), "frame 1030 never arrived on pb");
			raw_send("pb", 2020, 1);
			last_seq = 2020;
		}
		uint64_t in = 0, out = 0;
		bool last = false;
		for (int64_t end = now_ms() + 10000;;) {
			pktmap_rxsync(b);
			for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head)) {
				struct netmap_slot *s = &ring->slot[ring->head];
				uint32_t seq = 0;
				if (t_frame_check((uint8_t *)NETMAP_BUF(ring, s->buf_idx),
						  s->len, &seq) != 1)
					continue;
				in += seq >= 1000 && seq < 1030;
				out += seq >= 2000 && seq < 2020;
				last |= seq == last_seq;
			}
			if (last || now_ms() >= end)
				break;
			pktmap_poll(b, POLLIN, 100);
		}
		CHECK(last, "frame %u never reached the port", last_seq);
		CHECK_EQ(in, dirs[d] & PKTMAP_RX_IN ? 30 : 0);
		CHECK_EQ(out, dirs[d] & PKTMAP_RX_OUT ? 20 : 0);
	}
	close(obs);
	/* Other back ends have no outgoing frames to show. */
	struct pktmap_port *n = t_open_port("null:", PKTMAP_DIR_RX);
	if (n) {
		CHECK_EQ(pktmap_set_rx_direction(n, PKTMAP_RX_OUT), -EOPNOTSUPP);
		CHECK_EQ(pktmap_set_rx_direction(n, PKTMAP_RX_IN), 0);
		pktmap_close(n);
	}
	printf("filter in the kernel: 100 of 200; directions in/inout/out exact\n");
	pktmap_close(b);
}

/* 6. A shared region (@mem:): other processes cannot see this one's
 * kernel ring, so RX copies into the region's buffers (mode emulated). */
static void test_shared_region(struct pktmap_port *a)
{
	char name[64];
	snprintf(name, sizeof(name), "pkt:pb@mem:pkip%d", (int)getpid());
	struct pktmap_port *b = t_open_port(name, PKTMAP_DIR_RX);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	CHECK(strcmp(info.mode_name, "emulated") == 0, "mode %s", info.mode_name);
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	struct rx r = { 0 };
	send_frames(a, 0, 500);
	/* V3 blocks are handed over when full or 1 ms after their first
	 * frame: wait for them (the bound only ends a failing test). */
	for (int64_t end = now_ms() + 10000; r.got < 500 && now_ms() < end;) {
		pktmap_poll(b, POLLIN, 100);
		for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head))
			take(&r, ring, &ring->slot[ring->head], info.bufs);
	}
	CHECK_EQ(r.got, 500);
	CHECK_EQ(r.in_region, 500); /* copied into the region's buffers */
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	printf("@mem: region: 500 frames copied into the region, mode %s\n",
	       info.mode_name);
	pktmap_close(b);
}

/* Sum of len_of() over [seq, seq + n). */
static uint64_t bytes_of(uint32_t seq, uint32_t n)
{
	uint64_t b = 0;
	for (uint32_t i = seq; i < seq + n; i++)
		b += len_of(i);
	return b;
}

/* Are p's TX slots its kernel frames: consecutive indices beyond the
 * region's buffers, slot i the frame at i? */
static bool tx_in_frames(struct pktmap_port *p)
{
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	uint32_t base = tx->slot[0].buf_idx;
	bool ok = base >= info.bufs;
	for (uint32_t i = 0; i < tx->num_slots; i++)
		ok = ok && tx->slot[i].buf_idx == base + i;
	return ok;
}

/* Send N frames from a (bursts of 256, each received before the next
 * leaves) and check that pb's reader got them all, whole, in order. */
static void send_and_check(struct pktmap_port *a, struct pktmap_port *b,
			   uint32_t N)
{
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	struct rx r = { 0 };
	send_bursts(a, b, &r, 0, N, info.bufs);
	CHECK_EQ(r.got, N);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	struct pktmap_stats st;
	stats_of(a, &st);
	CHECK_EQ(st.tx_packets, N);
	CHECK_EQ(st.tx_bytes, bytes_of(0, N));
	CHECK_EQ(st.drop_invalid + st.drop_too_long + st.drop_backend, 0);
}

/* 7. TX slots' buffers are the kernel's TX frames. */
static void test_tx_frames(void)
{
	struct pktmap_port *a = t_open_port("pkt:pa@conf:tx=frames", PKTMAP_DIR_TX);
	struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
	if (!a || !b)
		goto out;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(a, &info);
	CHECK(strcmp(info.mode_name, "copy") == 0, "tx=frames: mode %s", info.mode_name);
	CHECK(tx_in_frames(a), "tx=frames: TX slots are the kernel's frames");
	/* The kernel's 1024 frames go round three times and more. */
	send_and_check(a, b, 3 * 1024 + 17);
	pktmap_close(a);
	a = t_open_port_flags("pkt:pa", PKTMAP_DIR_TX, PKTMAP_OPEN_TX_FRAMES);
	CHECK(a && tx_in_frames(a), "PKTMAP_OPEN_TX_FRAMES: in the frames");
	if (a)
		pktmap_close(a);
	a = t_open_port_flags("pkt:pa@conf:tx=copy", PKTMAP_DIR_TX, PKTMAP_OPEN_TX_FRAMES);
	if (a) {
		pktmap_info(a, &info);
		CHECK(!tx_in_frames(a), "tx=copy wins over the flag");
		CHECK(strcmp(info.mode_name, "emulated") == 0, "tx=copy: mode %s",
		      info.mode_name);
		send_and_check(a, b, 300);
	}
	printf("tx=frames: %u frames sent from the kernel's frames, whole and "
	       "in order\n", 3 * 1024 + 17);
out:
	if (a)
		pktmap_close(a);
	if (b)
		pktmap_close(b);
}

/* 8. What tx=frames refuses, and what it joins. */
static void test_tx_frames_refused(void)
{
	struct pktmap_port *a = t_open_port("pkt:pa@conf:tx=frames", PKTMAP_DIR_TX);
	struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
	if (!a || !b)
		goto out;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	uint32_t h = tx->head, n = tx->num_slots;
	uint32_t base = tx->slot[0].buf_idx;
#define SLOT(k) (&tx->slot[(h + (k)) % n])
#define BUF(k) ((uint8_t *)NETMAP_BUF(tx, SLOT(k)->buf_idx))
	/* Test frames 0, 1 (a chain of two slots) and 2 go; 1001-1003 not. */
	t_frame(BUF(0), len_of(0), 0, 0);
	SLOT(0)->len = (uint16_t)len_of(0);
	t_frame(BUF(1), 100, 1001, 0);           /* swapped: refused */
	SLOT(1)->len = 100;
	SLOT(1)->buf_idx = SLOT(6)->buf_idx;
	SLOT(1)->flags = NS_BUF_CHANGED;
	t_frame(BUF(2), 100, 1002, 0);           /* no length: refused */
	SLOT(2)->len = 0;
	t_frame(BUF(3), 1600, 1003, 0);          /* above the MTU: dropped */
	SLOT(3)->len = 1600;
	uint8_t whole[2048];
	t_frame(whole, len_of(1), 1, 0);         /* 1, in two slots */
	memcpy(BUF(4), whole, 40);
	SLOT(4)->len = 40;
	SLOT(4)->flags = NS_MOREFRAG;
	memcpy(BUF(5), whole + 40, len_of(1) - 40);
	SLOT(5)->len = (uint16_t)(len_of(1) - 40);
	t_frame(BUF(6), len_of(2), 2, 0);
	SLOT(6)->len = (uint16_t)len_of(2);
	for (uint32_t k = 0; k < 7; k++)
		if (k != 1 && k != 4)
			SLOT(k)->flags = 0;
	tx->head = tx->cur = (h + 7) % n;
	pktmap_txsync(a);
	CHECK_EQ(SLOT(1)->buf_idx, base + (h + 1) % n); /* its own frame back */
	CHECK(SLOT(1)->flags & NS_BUF_CHANGED, "the slot is told");
#undef SLOT
#undef BUF
	struct rx r = { 0 };
	drain_until(b, &r, 3, info.bufs);
	/* Then more, through the same frames: nothing wedged. */
	send_bursts(a, b, &r, 3, 2048, info.bufs);
	CHECK_EQ(r.got, 3 + 2048);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0); /* 0, 1, 2, 3 ...: none of 1001-1003 */
	struct pktmap_stats st;
	stats_of(a, &st);
	CHECK_EQ(st.tx_packets, 3 + 2048);
	CHECK_EQ(st.tx_bytes, bytes_of(0, 3 + 2048));
	CHECK_EQ(st.drop_invalid, 2);
	CHECK_EQ(st.drop_too_long, 1);
	printf("tx=frames refusals: a swap and a zero length refused, a frame "
	       "above the MTU dropped, a chain joined; %llu frames in order\n",
	       (unsigned long long)r.got);
out:
	if (a)
		pktmap_close(a);
	if (b)
		pktmap_close(b);
}

/* 9. tx=frames beside RX in place, and where it cannot be. */
static void test_tx_frames_both(void)
{
	struct pktmap_port *a = t_open_port("pkt:pa@conf:tx=frames", 0);
	struct pktmap_port *b = t_open_port("pkt:pb", 0);
	if (!a || !b)
		goto out;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(a, &info);
	CHECK(strcmp(info.mode_name, "copy") == 0, "both ways: mode %s", info.mode_name);
	CHECK(tx_in_frames(a), "both ways: TX slots are the kernel's frames");
	send_and_check(a, b, 1500);
	/* And a receives what b sends, in place. */
	struct rx r = { 0 };
	send_frames(b, 0, 500);
	drain_until(a, &r, 500, info.bufs);
	CHECK_EQ(r.got, 500);
	CHECK_EQ(r.inplace, 500);
	CHECK_EQ(r.bad + r.misorder, 0);
	pktmap_close(a);
	char name[96];
	snprintf(name, sizeof(name), "pkt:pa@conf:tx=frames@mem:pktf%d", (int)getpid());
	a = t_open_port(name, PKTMAP_DIR_TX);
	if (a) {
		pktmap_info(a, &info);
		CHECK(strcmp(info.mode_name, "emulated") == 0, "@mem: mode %s",
		      info.mode_name);
		CHECK(!tx_in_frames(a), "@mem:: TX frames copied");
		pktmap_close(b);
		b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
		if (b)
			send_and_check(a, b, 300);
	}
	printf("tx=frames both ways with RX in place; copied in an @mem: region\n");
out:
	if (a)
		pktmap_close(a);
	if (b)
		pktmap_close(b);
}

/* 10. Waiting for TX room while the link is down. */
static void test_tx_link_down(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	t_setup("ip link set pa down");
	uint32_t n = fill_frames(tx, 0, UINT32_MAX); /* the whole ring */
	pktmap_txsync(a);
	struct pktmap_stats st0, st1;
	stats_of(a, &st0);
	int64_t t0 = now_ms();
	int r = pktmap_poll(a, POLLOUT, 300);
	int64_t waited = now_ms() - t0;
	stats_of(a, &st1);
	uint64_t sleeps = st1.poll_sleeps - st0.poll_sleeps;
	CHECK(r == 0, "no room while the link is down (poll %d)", r);
	CHECK(waited >= 250, "waited %lld ms", (long long)waited);
	/* 300 ms in 5 ms sleeps: about 60 (fewer on a loaded machine);
	 * spinning on the socket's POLLOUT never slept (0). */
	CHECK(sleeps >= 1 && sleeps <= 100, "%llu sleeps in %lld ms",
	      (unsigned long long)sleeps, (long long)waited);
	t_setup("ip link set pa up");
	for (int64_t end = now_ms() + 10000; nm_tx_pending(tx) && now_ms() < end;)
		pktmap_poll(a, POLLOUT, 100);
	CHECK(!nm_tx_pending(tx), "the frames went once the link was up");
	struct rx rr = { 0 };
	drain_until(b, &rr, n, info.bufs);
	CHECK_EQ(rr.got, n);
	CHECK_EQ(rr.bad + rr.misorder, 0);
	printf("link down: a TX wait slept %llu times in %lld ms; %u frames "
	       "in order after it came up\n", (unsigned long long)sleeps,
	       (long long)waited, n);
	pktmap_close(b);
}

int main(void)
{
	t_need_root("pkt_inplace");
	if (t_veth_pair_ns() != 0)
		return t_done("pkt_inplace");
	struct pktmap_port *a = t_open_port("pkt:pa", PKTMAP_DIR_TX);
	if (!a)
		return t_done("pkt_inplace");
	test_inplace(a);
	test_swap(a);
	test_retention(a);
	for (int m = W_POLL; m <= W_EPOLL; m++)
		test_events(a, (enum wait_mode)m);
	test_filter_direction(a);
	test_shared_region(a);
	test_tx_link_down(a);
	pktmap_close(a);
	test_tx_frames();
	test_tx_frames_refused();
	test_tx_frames_both();
	return t_done("pkt_inplace");
}
