// SPDX-License-Identifier: BSD-2-Clause
/*
 * pkt: RX in place in the kernel's TPACKET_V3 blocks (@conf:rx=blocks,
 * PKTMAP_OPEN_RX_BLOCKS), root, in a network namespace of its own with a
 * veth pair pa -- pb (frames sent on pa with a pkt: TX port arrive on pb):
 *
 *  1. frames of 60..1514 bytes, one in five VLAN-tagged (802.1Q and
 *     802.1ad: the receiving veth takes the tag out, the port puts it
 *     back), read where the kernel wrote them (the RX ring's nr_buf_size
 *     is 1, buf_idx a byte offset): every frame, every byte, in order,
 *     time stamps nondecreasing and within the test's run, counts exact;
 *  2. a reader that holds its first frames (head does not move) while
 *     everything else arrives: their bytes stay intact while the kernel
 *     fills the other blocks (the held block is not given back early),
 *     rxsync never hands a held block out twice after a lap, the kernel
 *     counts what it could not keep: received + dropped == sent; after
 *     the release traffic flows again;
 *  3. an application that leaves a foreign buf_idx in an RX slot
 *     (NS_BUF_CHANGED): the rxsync that releases it returns -EINVAL and
 *     counts one drop_invalid, and the port goes on: three times the
 *     ring's memory afterwards, every frame, no kernel drop (the blocks
 *     all came back);
 *  4. a monitor (pkt:pb/r) of such a port gets a copy of every frame;
 *  5. who gets blocks: the open flag, the name (which wins), not @mem:
 *     regions; a port open both ways reads blocks and sends as ever;
 *  6. two rings (PACKET_FANOUT): each its own blocks, every frame whole.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "pktmap/netmap_user.h"
#include "netns.h"
#include "t.h"

#define ETYPE 0x88b5u /* local experimental: the host stack ignores it */
#define MEM (16u << 20) /* the ring memory of the ports opened here */

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Frame `seq`: its length without a tag (60..1514, or `fixed`), one in
 * five tagged. Returns its bytes on the wire. */
static uint32_t mk_frame(uint8_t *b, uint32_t seq, uint32_t fixed)
{
	uint32_t len = fixed ? fixed : 60 + (seq * 37) % 1455, off = 12;
	static const uint8_t mac[12] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
	memcpy(b, mac, 12);
	if (seq % 5 == 3) {
		uint16_t tpid = seq % 10 == 3 ? 0x88a8 : 0x8100;
		uint16_t tci = (uint16_t)((seq % 8) << 13 | (100 + seq % 50));
		b[12] = (uint8_t)(tpid >> 8), b[13] = (uint8_t)tpid;
		b[14] = (uint8_t)(tci >> 8), b[15] = (uint8_t)tci;
		off = 16;
		/* The kernel sends 4 bytes over the MTU for 802.1Q only. */
		if (tpid == 0x88a8 && len > 1510)
			len = 1510;
		len += 4;
	}
	b[off] = ETYPE >> 8, b[off + 1] = ETYPE & 0xff;
	b[off + 2] = (uint8_t)(seq >> 24), b[off + 3] = (uint8_t)(seq >> 16);
	b[off + 4] = (uint8_t)(seq >> 8), b[off + 5] = (uint8_t)seq;
	for (uint32_t i = off + 6; i < len; i++)
		b[i] = (uint8_t)(seq * 7 + i);
	return len;
}

/* The sequence number of a received frame, or -1 when it is not ours. */
static int64_t seq_of(const uint8_t *b, uint32_t len)
{
	uint32_t off = 12;
	if (len < 22)
		return -1;
	if ((b[12] == 0x81 && b[13] == 0x00) || (b[12] == 0x88 && b[13] == 0xa8))
		off = 16;
	if (((uint32_t)b[off] << 8 | b[off + 1]) != ETYPE)
		return -1;
	return (int64_t)((uint32_t)b[off + 2] << 24 | (uint32_t)b[off + 3] << 16 |
			 (uint32_t)b[off + 4] << 8 | b[off + 5]);
}

/* Queue frames [seq, seq + n) on txp; wait until the kernel took them. */
static void send_frames(struct pktmap_port *txp, uint32_t seq, uint32_t n,
			uint32_t fixed)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(txp), 0);
	uint32_t end = seq + n;
	while (seq < end) {
		while (seq < end && nm_ring_space(tx)) {
			struct netmap_slot *s = &tx->slot[tx->head];
			s->len = (uint16_t)mk_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx),
						    seq, fixed);
			s->flags = 0;
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
			seq++;
		}
		pktmap_txsync(txp);
		if (seq < end && !nm_ring_space(tx))
			CHECK(pktmap_poll(txp, POLLOUT, 5000) & POLLOUT, "TX room");
	}
	for (int i = 0; i < 500 && nm_tx_pending(tx); i++)
		pktmap_poll(txp, POLLOUT, 10);
	CHECK(!nm_tx_pending(tx), "TX ring drained");
}

struct rx {
	uint64_t got, bad, misorder, dup, badts;
	int64_t last; /* sequence number of the last frame, -1 */
	uint64_t last_ts, t0;
	uint32_t fixed; /* the lengths the sender used */
	bool gaps_ok;   /* frames may be missing (kernel drops) */
};

/* Check one slot: bytes, order, time stamp. */
static void take(struct rx *r, struct netmap_ring *ring, const struct netmap_slot *s)
{
	const uint8_t *b = (const uint8_t *)NETMAP_BUF(ring, s->buf_idx);
	int64_t seq = seq_of(b, s->len);
	uint8_t want[1600];
	if (seq < 0)
		return;
	r->got++;
	uint32_t wl = mk_frame(want, (uint32_t)seq, r->fixed);
	if (wl != s->len || memcmp(want, b, wl) != 0) {
		if (r->bad++ < 3)
			fprintf(stderr, "frame %lld: %u bytes, want %u%s\n",
				(long long)seq, s->len, wl,
				wl == s->len ? " (bytes differ)" : "");
	}
	if (seq <= r->last)
		r->dup++;
	else if (seq != r->last + 1 && !r->gaps_ok)
		r->misorder++;
	r->last = seq;
	if (s->ptr < r->last_ts || s->ptr < r->t0 || s->ptr > realtime_ns())
		r->badts++;
	r->last_ts = s->ptr;
}

static void rx_init(struct rx *r, uint32_t fixed)
{
	memset(r, 0, sizeof(*r));
	r->last = -1;
	r->fixed = fixed;
	r->t0 = realtime_ns() - 1000000; /* the clocks' granularity */
}

static void consume(struct pktmap_port *b, struct rx *r)
{
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	for (; !nm_ring_empty(ring); ring->head = ring->cur = nm_ring_next(ring, ring->head))
		take(r, ring, &ring->slot[ring->head]);
}

/* Take frames until `want` arrived (a block is handed over when full or
 * 1 ms after its first frame; the bound only ends a failing test). */
static void drain_until(struct pktmap_port *b, struct rx *r, uint64_t want)
{
	for (int64_t end = now_ms() + 10000; r->got < want && now_ms() < end;) {
		pktmap_poll(b, POLLIN, 100);
		consume(b, r);
	}
}

static void stats_of(struct pktmap_port *p, struct pktmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	CHECK(pktmap_stats(p, st) == 0, "stats");
}

/* Frames pa sent that never reached pb's socket (veth's backlog). */
static uint64_t backlog_dropped(void)
{
	return t_if_counter("pa", "tx_dropped");
}

/* 1. Every frame, every byte, in order, VLAN tags back. */
static void test_frames(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb@conf:rx=blocks", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	CHECK(info.flags & PKTMAP_INFO_RX_BLOCKS, "info flags %#x", info.flags);
	CHECK(strcmp(info.mode_name, "copy") == 0, "mode %s", info.mode_name);
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	CHECK_EQ(ring->nr_buf_size, 1);
	/* The RX slots take no buffer of the region. */
	CHECK(info.bufs < info.tx_slots + info.rx_slots, "%u buffers", info.bufs);
	struct rx r;
	rx_init(&r, 0);
	const uint32_t N = 3 * MEM / 900; /* the blocks go round three times */
	for (uint32_t sent = 0; sent < N; sent += 256) {
		send_frames(a, sent, 256, 0);
		drain_until(b, &r, sent + 256);
	}
	CHECK_EQ(r.got, N / 256 * 256 + (N % 256 ? 256 : 0));
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	CHECK_EQ(r.dup, 0);
	CHECK_EQ(r.badts, 0);
	struct pktmap_stats st;
	stats_of(b, &st);
	CHECK_EQ(st.drop_backend, 0);
	CHECK_EQ(st.rx_copied, 0);
	CHECK_EQ(st.rx_packets, r.got);
	printf("blocks: %llu frames of 60..1518 bytes (one in five tagged), "
	       "every byte, in order\n", (unsigned long long)r.got);
	pktmap_close(b);
}

/* 2. Held frames stay intact; the kernel stops at their block. */
static void test_hold(struct pktmap_port *a)
{
	/* Slots for every frame 16 MiB of blocks hold, so that rxsync
	 * reads the blocks all the way round to the held one. */
	struct pktmap_port *b = t_open_port("pkt:pb@conf:rx=blocks,rx-slots=16384,"
					    "buf-size=256", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	const uint32_t H = 50, S = 3 * MEM / 1600 / 256 * 256;
	struct rx r;
	rx_init(&r, 1514);
	r.gaps_ok = true;
	uint64_t bd0 = backlog_dropped();
	send_frames(a, 0, H, 1514);
	for (int64_t end = now_ms() + 10000; nm_ring_space(ring) < H && now_ms() < end;)
		pktmap_poll(b, POLLIN, 100);
	CHECK_EQ(nm_ring_space(ring), H);
	/* Hold them: head stays, rxsync runs while the rest arrives. */
	for (uint32_t sent = H; sent < H + S; sent += 256) {
		send_frames(a, sent, 256, 1514);
		pktmap_rxsync(b);
	}
	struct pktmap_stats st;
	int64_t end = now_ms() + 10000;
	do {
		pktmap_poll(b, POLLIN, 10);
		stats_of(b, &st);
	} while (nm_ring_space(ring) + st.drop_backend + (backlog_dropped() - bd0) <
		 H + S && now_ms() < end);
	uint32_t held_bad = 0;
	for (uint32_t i = 0, k = ring->head; i < H; i++, k = nm_ring_next(ring, k)) {
		uint8_t want[1600];
		uint32_t wl = mk_frame(want, i, 1514);
		const struct netmap_slot *s = &ring->slot[k];
		held_bad += s->len != wl ||
			    memcmp(NETMAP_BUF(ring, s->buf_idx), want, wl) != 0;
	}
	CHECK_EQ(held_bad, 0);
	CHECK(st.drop_backend > 0, "the kernel had to stop at the held block");
	consume(b, &r); /* now release everything */
	drain_until(b, &r, H + S - st.drop_backend - (backlog_dropped() - bd0));
	pktmap_rxsync(b);
	consume(b, &r);
	stats_of(b, &st);
	uint64_t backlog = backlog_dropped() - bd0;
	CHECK(r.got + st.drop_backend + backlog == H + S,
	      "received %llu + socket drops %llu + backlog drops %llu != %u sent",
	      (unsigned long long)r.got, (unsigned long long)st.drop_backend,
	      (unsigned long long)backlog, H + S);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.dup, 0);
	CHECK_EQ(r.badts, 0);
	uint64_t kept = r.got;
	/* Released: traffic flows again, nothing lost. */
	r.gaps_ok = false;
	r.last = H + S - 1;
	send_frames(a, H + S, 1000, 1514);
	drain_until(b, &r, kept + 1000);
	CHECK_EQ(r.got, kept + 1000);
	CHECK_EQ(r.misorder, 0);
	CHECK_EQ(r.bad, 0);
	printf("held reader: %u held intact, %u sent, %llu kept, %llu dropped "
	       "by the socket, %llu before it; then 1000 of 1000\n", H, H + S,
	       (unsigned long long)kept, (unsigned long long)st.drop_backend,
	       (unsigned long long)backlog);
	pktmap_close(b);
}

/* 3. A foreign buffer index left in a slot. */
static void test_foreign(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb@conf:rx=blocks", PKTMAP_DIR_RX);
	if (!b)
		return;
	struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
	struct rx r;
	rx_init(&r, 0);
	send_frames(a, 0, 100, 0);
	for (int64_t end = now_ms() + 10000; nm_ring_space(ring) < 100 && now_ms() < end;)
		pktmap_poll(b, POLLIN, 100);
	CHECK_EQ(nm_ring_space(ring), 100);
	struct netmap_slot *s = &ring->slot[ring->head];
	s->buf_idx = 7; /* a buffer of the region, not the frame */
	s->flags |= NS_BUF_CHANGED;
	ring->slot[nm_ring_next(ring, ring->head)].buf_idx = 0xfffffff0u;
	r.got = 100;
	r.last = 99;
	ring->head = ring->cur = ring->tail;
	CHECK_EQ(pktmap_rxsync(b), -EINVAL);
	struct pktmap_stats st;
	stats_of(b, &st);
	CHECK_EQ(st.drop_invalid, 2);
	const uint32_t N = 3 * MEM / 900;
	for (uint32_t sent = 100; sent < 100 + N; sent += 256) {
		send_frames(a, sent, 256, 0);
		drain_until(b, &r, sent + 256);
	}
	CHECK_EQ(r.got, 100 + (N + 255) / 256 * 256);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.misorder, 0);
	stats_of(b, &st);
	CHECK_EQ(st.drop_backend, 0);
	CHECK_EQ(st.drop_invalid, 2);
	printf("foreign buffers: refused (-EINVAL, 2 counted), then %llu frames, "
	       "no kernel drop\n", (unsigned long long)r.got - 100);
	pktmap_close(b);
}

/* A child in a network namespace of its own, with a veth pb there too,
 * holds pkt:pb open until told (a byte on *go) to close: another port of
 * the same name, which a monitor here must not take for ours. */
static pid_t other_netns_port(int *go)
{
	int ready[2];
	if (pipe(ready) || pipe(go))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		struct pktmap_port *o = NULL;
		char c = 'e';
		if (t_enter_netns() == 0 &&
		    t_run("ip link add pa type veth peer name pb && "
			  "ip link set pa up && ip link set pb up") == 0 &&
		    pktmap_open(&o, "pkt:pb", NULL) == 0)
			c = 'r';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(2);
		pktmap_close(o);
		_exit(0);
	}
	char c = 0;
	CHECK(read(ready[0], &c, 1) == 1 && c == 'r', "pkt:pb open in another "
	      "network namespace");
	close(ready[0]);
	close(ready[1]);
	return pid;
}

/* 4. A monitor of a port in blocks; a port of the same name in another
 * network namespace is another port. */
static void test_monitor(struct pktmap_port *a)
{
	int go[2];
	pid_t other = other_netns_port(go);
	struct pktmap_port *b = t_open_port("pkt:pb@conf:rx=blocks", PKTMAP_DIR_RX);
	struct pktmap_port *m = b ? t_open_port("pkt:pb/r", 0) : NULL;
	if (other > 0) {
		int status = 0;
		CHECK(write(go[1], "g", 1) == 1 && waitpid(other, &status, 0) == other &&
		      WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the other namespace's port: status %d", status);
		close(go[0]);
		close(go[1]);
	}
	if (!m) {
		if (b)
			pktmap_close(b);
		return;
	}
	struct rx r, rm;
	rx_init(&r, 0);
	rx_init(&rm, 0);
	/* The monitor's queue has 1024 slots: batches it can hold. */
	for (uint32_t sent = 0; sent < 2000; sent += 200) {
		send_frames(a, sent, 200, 0);
		drain_until(b, &r, sent + 200);
		for (int64_t end = now_ms() + 10000; rm.got < r.got && now_ms() < end;) {
			pktmap_poll(m, POLLIN, 100);
			consume(m, &rm);
		}
	}
	CHECK_EQ(r.got, 2000);
	CHECK_EQ(rm.got, 2000);
	CHECK_EQ(rm.bad, 0); /* whole: 1518 bytes fit the queue's buffers */
	CHECK_EQ(rm.misorder, 0);
	printf("monitor: %llu of %llu frames, every byte\n",
	       (unsigned long long)rm.got, (unsigned long long)r.got);
	pktmap_close(m);
	pktmap_close(b);
}

/* 5. Who gets blocks: the flag or the name (the name wins), readers of
 * a region of their own; RX and TX both: blocks for RX, TX as ever. */
static bool blocks_of(const char *name, uint32_t flags, uint32_t dir,
		      const char **mode)
{
	struct pktmap_port *p = NULL;
	char err[300] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .dir = dir, .flags = flags,
				      .errbuf = err, .errbuf_len = sizeof(err),
				      .log = t_log_cb, .rx_block_ms = 5 };
	int r = pktmap_open(&p, name, &o);
	CHECK(r == 0, "open %s: %s", name, err);
	if (r)
		return false;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	*mode = info.mode_name;
	bool b = info.flags & PKTMAP_INFO_RX_BLOCKS;
	CHECK_EQ(NETMAP_RXRING(pktmap_nifp(p), 0)->nr_buf_size, b ? 1 : info.buf_size);
	pktmap_close(p);
	return b;
}

static void test_open_forms(struct pktmap_port *a)
{
	char shm[64];
	const char *mode = "";
	snprintf(shm, sizeof(shm), "pkt:pb@conf:rx=blocks@mem:pkbl%d", (int)getpid());
	CHECK(!blocks_of("pkt:pb", 0, PKTMAP_DIR_RX, &mode), "default: frames");
	CHECK(blocks_of("pkt:pb", PKTMAP_OPEN_RX_BLOCKS, PKTMAP_DIR_RX, &mode),
	      "the flag");
	CHECK(strcmp(mode, "copy") == 0, "mode %s", mode);
	CHECK(!blocks_of("pkt:pb@conf:rx=frames", PKTMAP_OPEN_RX_BLOCKS,
			 PKTMAP_DIR_RX, &mode), "the name wins");
	CHECK(!blocks_of(shm, 0, PKTMAP_DIR_RX, &mode), "@mem: copies");
	CHECK(!blocks_of("pkt:pb", PKTMAP_OPEN_RX_BLOCKS, PKTMAP_DIR_TX, &mode),
	      "TX only: no RX");
	/* Both ways (the libpcap library): blocks for RX, TX copies. */
	struct pktmap_port *b = NULL;
	struct pktmap_open_opts o = { .sz = sizeof(o), .flags = PKTMAP_OPEN_RX_BLOCKS,
				      .log = t_log_cb };
	CHECK_EQ(pktmap_open(&b, "pkt:pb", &o), 0);
	if (!b)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(b, &info);
	CHECK(info.flags & PKTMAP_INFO_RX_BLOCKS, "flags %#x", info.flags);
	CHECK(strcmp(info.mode_name, "emulated") == 0, "mode %s", info.mode_name);
	struct rx r;
	rx_init(&r, 0);
	send_frames(a, 0, 300, 0);
	drain_until(b, &r, 300);
	CHECK_EQ(r.got, 300);
	CHECK_EQ(r.bad, 0);
	/* ... and it sends, from the region's buffers: pb -> pa. */
	struct pktmap_port *ra = t_open_port("pkt:pa@conf:rx=blocks", PKTMAP_DIR_RX);
	if (ra) {
		struct rx back;
		rx_init(&back, 0);
		send_frames(b, 0, 300, 0);
		drain_until(ra, &back, 300);
		CHECK_EQ(back.got, 300);
		CHECK_EQ(back.bad, 0);
		CHECK_EQ(back.misorder, 0);
		pktmap_close(ra);
	}
	printf("open forms: flag, name, @mem:, TX only; both ways: 300 in, "
	       "300 out\n");
	pktmap_close(b);
}

/* 6. Two rings (two sockets in a fanout group): each RX ring its own
 * blocks, every frame whole on one of them. */
static void test_rings(struct pktmap_port *a)
{
	struct pktmap_port *b = t_open_port("pkt:pb@conf:rings=2,rx=blocks",
					    PKTMAP_DIR_RX);
	if (!b)
		return;
	struct netmap_if *nifp = pktmap_nifp(b);
	struct netmap_ring *r0 = NETMAP_RXRING(nifp, 0), *r1 = NETMAP_RXRING(nifp, 1);
	CHECK(r0->nr_buf_size == 1 && r1->nr_buf_size == 1, "geometry");
	CHECK((char *)r0 + r0->buf_ofs != (char *)r1 + r1->buf_ofs, "own blocks");
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	const uint32_t N = 2000;
	uint64_t got[2] = { 0, 0 }, bad = 0;
	for (uint32_t seq = 0; seq < N;) {
		for (; seq < N && nm_ring_space(tx); seq++) {
			struct netmap_slot *s = &tx->slot[tx->head];
			s->len = (uint16_t)(60 + seq % 900);
			t_frame((uint8_t *)NETMAP_BUF(tx, s->buf_idx), s->len, seq, seq % 16);
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
		}
		pktmap_txsync(a);
		pktmap_poll(a, POLLOUT, 100);
	}
	for (int64_t end = now_ms() + 10000; got[0] + got[1] < N && now_ms() < end;) {
		pktmap_poll(b, POLLIN, 100);
		for (int k = 0; k < 2; k++) {
			struct netmap_ring *ring = NETMAP_RXRING(nifp, k);
			for (; !nm_ring_empty(ring);
			     ring->head = ring->cur = nm_ring_next(ring, ring->head)) {
				const struct netmap_slot *s = &ring->slot[ring->head];
				uint32_t seq;
				int v = t_frame_check((const uint8_t *)NETMAP_BUF(ring, s->buf_idx),
						      s->len, &seq);
				if (v < 0)
					continue;
				got[k]++;
				bad += v == 0 || s->len != 60 + seq % 900;
			}
		}
	}
	CHECK_EQ(got[0] + got[1], N);
	CHECK(got[0] && got[1], "16 flows over both rings (%llu, %llu)",
	      (unsigned long long)got[0], (unsigned long long)got[1]);
	CHECK_EQ(bad, 0);
	printf("two rings: %llu + %llu frames, each ring its own blocks\n",
	       (unsigned long long)got[0], (unsigned long long)got[1]);
	pktmap_close(b);
}

/* The tpacket3_hdr of the frame at f (len bytes in its slot): the
 * kernel's header before it, found by its own tp_mac and tp_snaplen (a
 * tag put back moved the frame 4 bytes earlier). */
static struct tpacket3_hdr *hdr_of(uint8_t *f, uint32_t len)
{
	for (uint32_t m = sizeof(struct tpacket3_hdr); m < 512; m++) {
		struct tpacket3_hdr *h = (struct tpacket3_hdr *)(f - m);
		if (((uintptr_t)h & 3) == 0 &&
		    ((h->tp_mac == m && h->tp_snaplen == len) ||
		     (h->tp_mac == m - 4 && h->tp_snaplen == len - 4)))
			return h;
	}
	return NULL;
}

/* 8. The application can write anywhere in the blocks, also on the
 * headers of frames rxsync has not read yet: a frame whose header says
 * its data starts inside the header, or runs past its block, or is
 * shorter than the frame was (tp_snaplen < tp_len), is dropped and
 * counted; the frames after it arrive. */
static void test_scribbled(struct pktmap_port *a)
{
	static const struct {
		const char *what;
		int field; /* 0 tp_mac, 1 tp_snaplen */
		uint32_t value;
		int too_long; /* drop_too_long, else drop_backend */
	} sc[] = {
		{ "data inside the header", 0, 0, 0 },
		{ "data just before the 20 bytes", 0, sizeof(struct tpacket3_hdr) + 19, 0 },
		{ "longer than the block", 1, 0x7fffffff, 0 },
		{ "cut by the kernel", 1, 59, 1 },
	};
	for (size_t c = 0; c < sizeof(sc) / sizeof(sc[0]); c++) {
		/* a block retires when full or after 1 s: the 20 frames,
		 * sent at once, are in one */
		struct pktmap_port *b = t_open_port("pkt:pb@conf:rx=blocks,rx-slots=8,block-ms=1000",
						    PKTMAP_DIR_RX);
		if (!b)
			return;
		struct netmap_ring *ring = NETMAP_RXRING(pktmap_nifp(b), 0);
		/* 20 frames of 60 bytes in one block; 7 fit the ring */
		send_frames(a, 0, 20, 60);
		for (int64_t end = now_ms() + 10000; nm_ring_space(ring) < 7 && now_ms() < end;)
			pktmap_poll(b, POLLIN, 100);
		CHECK_EQ(nm_ring_space(ring), 7);
		struct netmap_slot *s0 = &ring->slot[ring->head];
		struct tpacket3_hdr *h = hdr_of((uint8_t *)NETMAP_BUF(ring, s0->buf_idx),
						s0->len);
		CHECK(h != NULL, "%s: the first frame's header", sc[c].what);
		for (int i = 0; h && i < 7; i++) /* to the 8th: not read yet */
			h = h->tp_next_offset ?
				    (struct tpacket3_hdr *)((uint8_t *)h + h->tp_next_offset) : NULL;
		CHECK(h != NULL, "%s: the 8th frame's header", sc[c].what);
		if (!h) {
			pktmap_close(b);
			return;
		}
		if (sc[c].field == 0)
			h->tp_mac = (uint16_t)sc[c].value;
		else
			h->tp_snaplen = sc[c].value;
		struct pktmap_stats st0, st;
		stats_of(b, &st0);
		struct rx r;
		rx_init(&r, 60);
		r.gaps_ok = true;
		consume(b, &r); /* the 7, then the rest */
		drain_until(b, &r, 19);
		stats_of(b, &st);
		CHECK(r.got == 19 && r.bad == 0 &&
			      st.drop_backend - st0.drop_backend == (sc[c].too_long ? 0 : 1) &&
			      st.drop_too_long - st0.drop_too_long == (sc[c].too_long ? 1 : 0),
		      "%s: %llu of 19 frames, %llu bad, drops backend %llu, too long %llu",
		      sc[c].what, (unsigned long long)r.got, (unsigned long long)r.bad,
		      (unsigned long long)(st.drop_backend - st0.drop_backend),
		      (unsigned long long)(st.drop_too_long - st0.drop_too_long));
		pktmap_close(b);
	}
}

/* 7. VLAN tags (802.1Q and 802.1ad, their bytes in network order) back
 * in the other RX engines too: frames in place (TPACKET_V2, RX only and
 * both ways) and copies out of V3 blocks into a shared region (@mem:). */
static void test_vlan_engines(struct pktmap_port *a)
{
	char shm[64];
	snprintf(shm, sizeof(shm), "pkt:pb@mem:utvl%d", (int)getpid());
	const struct {
		const char *name;
		unsigned dir;
	} m[] = {
		{ "pkt:pb", PKTMAP_DIR_RX },
		{ "pkt:pb", PKTMAP_DIR_BOTH },
		{ shm, PKTMAP_DIR_RX },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct pktmap_port *b = t_open_port(m[i].name, m[i].dir);
		if (!b)
			continue;
		struct pktmap_info info = { .sz = sizeof(info) };
		pktmap_info(b, &info);
		struct rx r;
		rx_init(&r, 0);
		const uint32_t N = 1000; /* 200 tagged */
		for (uint32_t sent = 0; sent < N; sent += 250) {
			send_frames(a, sent, 250, 0);
			drain_until(b, &r, sent + 250);
		}
		CHECK(r.got == N && r.bad == 0 && r.misorder == 0 && r.dup == 0,
		      "%s (%s): %llu of %u frames, %llu bad, %llu out of order",
		      m[i].name, info.mode_name, (unsigned long long)r.got, N,
		      (unsigned long long)r.bad, (unsigned long long)r.misorder);
		printf("%s: %u frames (one in five tagged), every byte\n",
		       info.mode_name, N);
		pktmap_close(b);
	}
}

int main(void)
{
	t_need_root("pkt_blocks");
	if (t_veth_pair_ns() != 0)
		return t_done("pkt_blocks");
	struct pktmap_port *a = t_open_port("pkt:pa", PKTMAP_DIR_TX);
	if (!a)
		return t_done("pkt_blocks");
	test_frames(a);
	test_hold(a);
	test_foreign(a);
	test_monitor(a);
	test_open_forms(a);
	test_rings(a);
	test_vlan_engines(a);
	test_scribbled(a);
	pktmap_close(a);
	return t_done("pkt_blocks");
}
