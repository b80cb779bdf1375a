// SPDX-License-Identifier: BSD-2-Clause
/* pkt: AF_PACKET ports on a veth pair, in a namespace of the test's own.
 *
 *     [ pkt:pa ] --- veth pa <=====> veth pb --- [ pkt:pb (, -N, rings=4) ]
 *
 * Exact counts, payload intact, order kept; frames larger than a buffer
 * as NS_MOREFRAG chains both ways; fanout over several rings; the kernel's
 * own counters; the checker on TX; the open errors. Needs root.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "pktmap/pktmap.h"
#include "netns.h"
#include "t.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef uint32_t (*len_fn)(uint32_t seq);

/* Put frame seq into the TX ring, as a chain when it is larger than a
 * buffer. Returns 0 when there is no room. */
static int put_frame(struct netmap_ring *tx, uint32_t seq, uint32_t len,
		     uint32_t flows)
{
	static uint8_t frame[65536];
	uint32_t usable = 2048;
	uint32_t need = (len + usable - 1) / usable;
	if (nm_ring_space(tx) < need)
		return 0;
	t_frame(frame, len, seq, flows ? seq % flows : 0);
	for (uint32_t off = 0; off < len; off += usable) {
		struct netmap_slot *s = &tx->slot[tx->cur];
		uint32_t l = len - off < usable ? len - off : usable;
		memcpy(NETMAP_BUF(tx, s->buf_idx), frame + off, l);
		s->len = (uint16_t)l;
		s->flags = off + l < len ? NS_MOREFRAG : 0;
		tx->cur = nm_ring_next(tx, tx->cur);
	}
	tx->head = tx->cur;
	return 1;
}

/* Send one frame of len bytes and Ethernet type `type` (a VLAN TPID:
 * tagged) on a; returns how much drop_too_long went up (0 or 1) and adds
 * to *sent what tx_packets did. */
static uint64_t send_one(struct pktmap_port *a, uint32_t len, uint16_t type,
			 uint64_t *sent)
{
	struct pktmap_stats st = { .sz = sizeof(st) };
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	pktmap_stats(a, &st);
	uint64_t tl = st.drop_too_long, tp = st.tx_packets;
	while (nm_ring_space(tx) < 8)
		pktmap_txsync(a); /* the kernel gives slots back */
	uint32_t first = tx->cur;
	CHECK(put_frame(tx, 1, len, 0), "room for a frame");
	uint8_t *b = (uint8_t *)NETMAP_BUF(tx, tx->slot[first].buf_idx);
	b[12] = (uint8_t)(type >> 8), b[13] = (uint8_t)type;
	pktmap_txsync(a);
	pktmap_stats(a, &st);
	*sent += st.tx_packets - tp;
	return st.drop_too_long - tl;
}

/* Send n frames on txp while draining rxp; stop when all arrived or
 * nothing moved for 2 seconds. At most PUMP_WINDOW frames are in flight
 * to a receiver, well inside its kernel ring (64 jumbo frames are 580 KB
 * of its 2 MB): a receiver the scheduler leaves waiting loses nothing. */
#define PUMP_WINDOW 64
static void pump(struct pktmap_port *txp, struct pktmap_port *rxp, uint32_t n,
		 len_fn lf, uint32_t flows, struct t_rx *st)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(txp), 0);
	uint32_t sent = 0;
	int64_t last = now_ms();
	uint64_t seen = st->got;
	while (st->got < n && now_ms() - last < 2000) {
		uint32_t batch = 0;
		while (sent < n && batch < 256 &&
		       (!rxp || sent - st->got < PUMP_WINDOW) &&
		       put_frame(tx, sent, lf(sent), flows))
			sent++, batch++;
		pktmap_txsync(txp);
		if (rxp) {
			pktmap_poll(rxp, POLLIN, sent < n ? 0 : 5);
			t_drain(rxp, st);
		} else if (sent == n) {
			break;
		}
		if (st->got != seen || batch) {
			seen = st->got;
			last = now_ms();
		}
	}
	/* Let the kernel finish: wait until no frame is in flight. */
	for (int i = 0; i < 200 && nm_tx_pending(tx); i++) {
		pktmap_poll(txp, POLLOUT, 5);
	}
	CHECK(!nm_tx_pending(tx), "TX ring drained");
}

static uint32_t len_small(uint32_t seq) { (void)seq; return 60; }
static uint32_t len_mixed(uint32_t seq) { return 60 + (seq * 13) % 1455; }
static uint32_t len_jumbo(uint32_t seq) { return 8000 + seq % 1001; }

int main(void)
{
	t_need_root("packet");
	if (t_veth_pair_ns() != 0)
		return t_done("packet");

	struct pktmap_stats st = { .sz = sizeof(st) };
	struct pktmap_info info = { .sz = sizeof(info) };

	/* 1. pkt -> pkt, mixed sizes, exact and in order. */
	{
		struct pktmap_port *a = t_open_port("pkt:pa", PKTMAP_DIR_TX);
		struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
		if (!a || !b)
			return t_done("packet");
		CHECK(t_run("ip -d link show pb | grep -q 'promiscuity 1'") == 0,
		      "pb promiscuous while open");
		pktmap_info(b, &info);
		/* RX only: frames are read where the kernel wrote them. */
		CHECK(strcmp(info.mode_name, "copy") == 0, "mode %s",
		      info.mode_name);
		CHECK(strcmp(info.backend, "pkt") == 0, "backend %s", info.backend);
		uint64_t k0 = t_if_counter("pb", "rx_packets");
		struct t_rx rs = { 0 };
		const uint32_t N = 50000;
		pump(a, b, N, len_mixed, 0, &rs);
		CHECK_EQ(rs.got, N);
		CHECK_EQ(rs.bad, 0);
		CHECK_EQ(rs.misorder, 0);
		pktmap_stats(a, &st);
		CHECK_EQ(st.tx_packets, N);
		CHECK_EQ(st.drop_invalid + st.drop_too_long + st.drop_backend, 0);
		pktmap_stats(b, &st);
		CHECK_EQ(st.rx_packets, N + rs.foreign);
		CHECK_EQ(st.drop_backend, 0);
		/* The kernel saw exactly what we sent. */
		CHECK_EQ(t_if_counter("pb", "rx_packets") - k0, N);

		/* Timestamps are in slot->ptr (ns) and ring->ts. */
		struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
		struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);
		struct timespec t0;
		clock_gettime(CLOCK_REALTIME, &t0);
		put_frame(tx, 7, 100, 0);
		pktmap_txsync(a);
		CHECK(pktmap_poll(b, POLLIN, 1000) & POLLIN, "one frame arrives");
		if (!nm_ring_empty(rx)) {
			uint64_t ns = rx->slot[rx->head].ptr;
			int64_t d = (int64_t)ns - ((int64_t)t0.tv_sec * 1000000000 +
						   t0.tv_nsec);
			CHECK(d >= -1000000 && d < 2000000000ll, "timestamp %lld ns "
			      "off", (long long)d);
			/* ring->ts: the newest packet's time, to the µs. */
			uint32_t last = rx->tail ? rx->tail - 1 : rx->num_slots - 1;
			uint64_t lns = rx->slot[last].ptr;
			CHECK(rx->ts.tv_sec == (time_t)(lns / 1000000000u) &&
			      rx->ts.tv_usec == (suseconds_t)(lns % 1000000000u / 1000),
			      "ring ts %ld.%06ld, newest packet %llu ns",
			      (long)rx->ts.tv_sec, (long)rx->ts.tv_usec,
			      (unsigned long long)lns);
			rx->head = rx->cur = rx->tail;
		}

		/* 2. The checker on TX: a bad slot is dropped and counted. */
		pktmap_stats(a, &st);
		uint64_t inv = st.drop_invalid, sent = st.tx_packets;
		struct netmap_slot *s = &tx->slot[tx->cur];
		uint32_t keep = s->buf_idx;
		s->buf_idx = 1;
		s->len = 60;
		s->flags = 0;
		tx->head = tx->cur = nm_ring_next(tx, tx->cur);
		pktmap_txsync(a);
		s->buf_idx = keep;
		pktmap_stats(a, &st);
		CHECK_EQ(st.drop_invalid, inv + 1);
		CHECK_EQ(st.tx_packets, sent);
		pktmap_close(a);
		pktmap_close(b);
		/* Promiscuous mode went with the socket. */
		CHECK(t_run("ip -d link show pb | grep -q 'promiscuity 0'") == 0,
		      "pb left promiscuous");
	}

	/* 3. Jumbo frames: TX chains joined, RX split into chains. */
	if (t_setup("ip link set pa mtu 9000 && ip link set pb mtu 9000") == 0) {
		struct pktmap_port *a = t_open_port("pkt:pa/T", 0);
		struct pktmap_port *b = t_open_port("pkt:pb/R", 0);
		if (a && b) {
			struct t_rx rs = { 0 };
			pump(a, b, 3000, len_jumbo, 0, &rs);
			CHECK_EQ(rs.got, 3000);
			CHECK_EQ(rs.bad, 0);
			CHECK_EQ(rs.misorder, 0);
			pktmap_stats(b, &st);
			CHECK_EQ(st.drop_too_long, 0);
			CHECK_EQ(st.drop_backend, 0);
			pktmap_stats(a, &st);
			CHECK_EQ(st.tx_packets, 3000);
			/* Larger than the MTU: refused before the kernel. */
			struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
			pktmap_stats(a, &st);
			uint64_t tl = st.drop_too_long;
			put_frame(tx, 1, 9100, 0);
			pktmap_txsync(a);
			pktmap_stats(a, &st);
			CHECK_EQ(st.drop_too_long, tl + 1);
			/* At the boundary, by Ethernet type: the MTU counts
			 * from the type on; a VLAN tag (802.1Q, 802.1ad) is
			 * the kernel's to check, no other type is. */
			static const struct {
				uint32_t len;
				uint16_t type;
				uint64_t too_long;
			} mtu_cases[] = {
				{ 9014, 0x0800, 0 }, /* MTU + 14: fits */
				{ 9015, 0x0800, 1 }, /* one more */
				{ 9015, 0x8137, 1 }, /* 0x81 but not 0x8100 */
				{ 9015, 0x88b5, 1 }, /* 0x88 but not 0x88a8 */
				{ 9015, 0x12a8, 1 }, /* 0xa8 but not 0x88a8 */
				{ 9015, 0x0100, 1 }, /* 0x00 but not 0x8100 */
				{ 9018, 0x8100, 0 }, /* tagged: the kernel's */
				{ 9018, 0x88a8, 0 },
			};
			for (size_t i = 0; i < sizeof(mtu_cases) / sizeof(mtu_cases[0]); i++) {
				uint64_t sent = 0;
				uint64_t tl1 = send_one(a, mtu_cases[i].len,
							mtu_cases[i].type, &sent);
				CHECK(tl1 == mtu_cases[i].too_long,
				      "%u bytes, type %#x: too long %llu, want %llu",
				      mtu_cases[i].len, mtu_cases[i].type,
				      (unsigned long long)tl1,
				      (unsigned long long)mtu_cases[i].too_long);
			}
		}
		pktmap_close(a);
		pktmap_close(b);
		t_run("ip link set pa mtu 1500 && ip link set pb mtu 1500");
	}

	/* 3b. The MTU raised after open (within the TX frames open sized,
	 * MTU + 18 bytes): read again, and the frame that fits the new MTU
	 * exactly goes. */
	{
		struct pktmap_port *a = t_open_port("pkt:pa/T", 0);
		if (a && t_setup("ip link set pa mtu 1502 && ip link set pb mtu 1502") == 0) {
			uint64_t sent = 0;
			CHECK_EQ(send_one(a, 1516, 0x0800, &sent), 0);
			CHECK_EQ(sent, 1);
			CHECK_EQ(send_one(a, 1517, 0x0800, &sent), 1);
			CHECK_EQ(sent, 1);
		}
		pktmap_close(a);
		t_run("ip link set pa mtu 1500 && ip link set pb mtu 1500");
	}

	/* 4. Fanout: four rings in one group share the traffic. */
	{
		struct pktmap_port *a = t_open_port("pkt:pa", PKTMAP_DIR_TX);
		struct pktmap_port *b = t_open_port("pkt:pb@conf:rings=4", PKTMAP_DIR_RX);
		if (a && b) {
			pktmap_info(b, &info);
			CHECK_EQ(info.rx_rings, 4);
			struct t_rx rs = { 0 };
			const uint32_t N = 20000;
			pump(a, b, N, len_small, 64, &rs);
			CHECK_EQ(rs.got, N);
			CHECK_EQ(rs.bad, 0);
			int used = 0;
			for (int r = 0; r < 4; r++)
				used += rs.ring_got[r] > 0;
			CHECK(used >= 2, "fanout spread over %d rings", used);
		}
		pktmap_close(a);
		pktmap_close(b);
	}

	/* 5. "-N" opened apart (as two processes would) join one group. */
	{
		struct pktmap_port *a = t_open_port("pkt:pa", PKTMAP_DIR_TX);
		struct pktmap_port *b0 = t_open_port("pkt:pb-0@conf:rings=2", PKTMAP_DIR_RX);
		struct pktmap_port *b1 = t_open_port("pkt:pb-1@conf:rings=2", PKTMAP_DIR_RX);
		if (a && b0 && b1) {
			struct t_rx r0 = { 0 }, r1 = { 0 };
			struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
			const uint32_t N = 10000;
			uint32_t sent = 0;
			int64_t t0 = now_ms();
			while (r0.got + r1.got < N && now_ms() - t0 < 5000) {
				while (sent < N && put_frame(tx, sent, 60, sent % 64))
					sent++;
				pktmap_txsync(a);
				pktmap_poll(b0, POLLIN, 1);
				t_drain(b0, &r0);
				pktmap_poll(b1, POLLIN, 1);
				t_drain(b1, &r1);
			}
			CHECK_EQ(r0.got + r1.got, N);
			CHECK(r0.got > 0 && r1.got > 0, "both halves got traffic "
			      "(%llu, %llu)", (unsigned long long)r0.got,
			      (unsigned long long)r1.got);
			pktmap_info(b1, &info);
			CHECK(info.first_rx_ring == 1 && info.last_rx_ring == 1,
			      "ring 1 bound");
		}
		pktmap_close(a);
		pktmap_close(b0);
		pktmap_close(b1);
	}

	/* 6. RX and TX on one port; our own frames do not loop back. */
	{
		struct pktmap_port *a = t_open_port("pkt:pa", 0);
		struct pktmap_port *b = t_open_port("pkt:pb", 0);
		if (a && b) {
			struct t_rx rs = { 0 };
			pump(a, b, 5000, len_small, 0, &rs);
			CHECK_EQ(rs.got, 5000);
			struct t_rx self = { 0 };
			pktmap_poll(a, POLLIN, 20);
			t_drain(a, &self);
			CHECK_EQ(self.got, 0);
		}
		pktmap_close(a);
		pktmap_close(b);
	}

	/* 7. A link that is down holds frames back; they leave when it is up. */
	if (t_setup("ip link set pa down") == 0) {
		struct pktmap_port *a = t_open_port("pkt:pa", PKTMAP_DIR_TX);
		struct pktmap_port *b = t_open_port("pkt:pb", PKTMAP_DIR_RX);
		if (a && b) {
			struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
			for (uint32_t i = 0; i < 10; i++)
				put_frame(tx, i, 60, 0);
			CHECK_EQ(pktmap_txsync(a), 0);
			CHECK(nm_tx_pending(tx), "frames wait in the kernel ring");
			t_run("ip link set pa up");
			struct t_rx rs = { 0 };
			for (int i = 0; i < 200 && rs.got < 10; i++) {
				pktmap_poll(a, POLLOUT, 5);
				pktmap_poll(b, POLLIN, 5);
				t_drain(b, &rs);
			}
			CHECK_EQ(rs.got, 10);
			CHECK(!nm_tx_pending(tx), "kernel ring drained");
		}
		pktmap_close(a);
		pktmap_close(b);
	}

	/* 8. Errors: one line each, naming the remedy. */
	{
		struct pktmap_port *p = NULL;
		char err[300] = "";
		struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
					      .errbuf_len = sizeof(err) };
		CHECK_EQ(pktmap_open(&p, "pkt:nosuch0", &o), -ENODEV);
		CHECK(strstr(err, "no such interface"), "message: %s", err);
		CHECK_EQ(pktmap_open(&p, "pkt:pa-3@conf:rings=2", &o), -EINVAL);
		CHECK(strstr(err, "ring 3 does not exist"), "message: %s", err);
		CHECK(pktmap_open(&p, "pkt:pa^", &o) == -EINVAL, "no host rings");
		CHECK(pktmap_open(&p, "pkt:pa/Z", &o) == -EINVAL, "no /Z");
		o.flags = PKTMAP_OPEN_ZEROCOPY;
		CHECK_EQ(pktmap_open(&p, "pkt:pa", &o), -EOPNOTSUPP);
		CHECK(strstr(err, "zero-copy is impossible"), "message: %s", err);
		o.flags = 0;
		t_run("ip link set pb down");
		err[0] = 0;
		CHECK(pktmap_open(&p, "pkt:pb", &o) == 0, "opens a down link");
		pktmap_close(p);
	}

	/* Leave nothing behind: the namespace goes with us, but close the
	 * link anyway so a failure above shows up here too. */
	t_run("ip link del pa");
	return t_done("packet");
}
