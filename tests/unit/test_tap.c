// SPDX-License-Identifier: BSD-2-Clause
/* tap: TAP devices as ports, in a namespace of the test's own.
 *
 *     [ tap:pmt0 ] <== /dev/net/tun ==> pmt0 (kernel) <-- AF_PACKET socket
 *
 * The device is created and brought up when missing and gone after
 * close; an existing persistent TAP is attached to and left in place.
 * Frames the kernel sends out of the device arrive on RX (exact count,
 * payload intact, chains for jumbo frames); frames sent on TX are counted
 * by the device as received. Needs root.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "pktmap/pktmap.h"
#include "netns.h"
#include "t.h"

/* A raw socket that sends out of `ifname`: the kernel side of the TAP. */
static int kernel_sender(const char *ifname)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_ifindex = (int)if_nametoindex(ifname) };
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The kernel sends n frames of `len` out of the TAP, frame i of flow
 * i % flows (the TAP's queue is chosen by a hash of the flow); the port
 * gets them. Keeps fewer frames in flight than the device's queue holds
 * (txqueuelen 1000). */
static void kernel_to_port_flows(struct pktmap_port *p, const char *ifname,
				 uint32_t n, uint32_t len, uint32_t flows,
				 struct t_rx *st)
{
	static uint8_t frame[65536];
	int fd = kernel_sender(ifname);
	CHECK(fd >= 0, "raw socket on %s", ifname);
	if (fd < 0)
		return;
	/* Attaching to a TAP that is already up turns its carrier on and the
	 * kernel activates the queue a moment later (linkwatch): until then
	 * the host drops what it sends. Probe until a frame gets through. */
	uint64_t foreign0 = st->foreign;
	for (int i = 0; i < 200 && st->foreign == foreign0; i++) {
		memset(frame, 0, 60);
		memset(frame, 0xff, 6);
		frame[12] = 0x88, frame[13] = 0xb5; /* local experimental */
		if (send(fd, frame, 60, 0) != 60)
			break;
		pktmap_poll(p, POLLIN, 10);
		t_drain(p, st);
	}
	CHECK(st->foreign > foreign0, "the path through %s never opened", ifname);
	uint32_t sent = 0;
	for (int idle = 0; st->got < n && idle < 200;) {
		/* At most 256 frames in flight, a quarter of the queue. */
		for (; sent < n && sent - st->got < 256; sent++) {
			t_frame(frame, len, sent, sent % flows);
			if (send(fd, frame, len, 0) != (ssize_t)len) {
				CHECK(0, "send: %s", strerror(errno));
				sent = n;
			}
		}
		uint64_t before = st->got;
		pktmap_poll(p, POLLIN, 10);
		t_drain(p, st);
		idle = st->got == before ? idle + 1 : 0;
	}
	close(fd);
}

/* The same, one flow. */
static void kernel_to_port(struct pktmap_port *p, const char *ifname, uint32_t n,
			   uint32_t len, struct t_rx *st)
{
	kernel_to_port_flows(p, ifname, n, len, 1, st);
}

static void port_to_kernel(struct pktmap_port *p, uint32_t n, uint32_t len)
{
	static uint8_t frame[65536];
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	for (uint32_t sent = 0; sent < n;) {
		pktmap_poll(p, POLLOUT, 1000);
		while (sent < n && nm_ring_space(tx) >= 8) {
			t_frame(frame, len, sent, 0);
			for (uint32_t off = 0; off < len; off += 2048) {
				struct netmap_slot *s = &tx->slot[tx->cur];
				uint32_t l = len - off < 2048 ? len - off : 2048;
				memcpy(NETMAP_BUF(tx, s->buf_idx), frame + off, l);
				s->len = (uint16_t)l;
				s->flags = off + l < len ? NS_MOREFRAG : 0;
				tx->cur = nm_ring_next(tx, tx->cur);
			}
			tx->head = tx->cur;
			sent++;
		}
	}
	pktmap_txsync(p);
}

/* A chain goes out whole, only once its last slot is submitted: with
 * head in the middle of a 9000-byte chain txsync sends nothing; with the
 * rest submitted, the one frame, whole. */
static void chain_in_two_submits(struct pktmap_port *p)
{
	static uint8_t frame[9000];
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_poll(p, POLLOUT, 1000);
	CHECK(nm_ring_space(tx) >= 5, "TX room for a chain of 5 slots");
	pktmap_stats(p, &st);
	uint64_t sent0 = st.tx_packets, k0 = t_if_counter("pmt0", "rx_packets");
	uint64_t b0 = t_if_counter("pmt0", "rx_bytes");
	t_frame(frame, sizeof(frame), 1, 0);
	uint32_t first = tx->cur;
	for (uint32_t off = 0; off < sizeof(frame); off += 2048) {
		struct netmap_slot *s = &tx->slot[tx->cur];
		uint32_t l = sizeof(frame) - off < 2048 ? sizeof(frame) - off : 2048;
		memcpy(NETMAP_BUF(tx, s->buf_idx), frame + off, l);
		s->len = (uint16_t)l;
		s->flags = off + l < sizeof(frame) ? NS_MOREFRAG : 0;
		tx->cur = nm_ring_next(tx, tx->cur);
	}
	uint32_t end = tx->cur;
	tx->head = tx->cur = (first + 3) % tx->num_slots; /* 3 of 5 slots */
	pktmap_txsync(p);
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets - sent0, 0);
	CHECK_EQ(t_if_counter("pmt0", "rx_packets") - k0, 0);
	tx->head = tx->cur = end;
	pktmap_txsync(p);
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets - sent0, 1);
	CHECK_EQ(t_if_counter("pmt0", "rx_packets") - k0, 1);
	CHECK_EQ(t_if_counter("pmt0", "rx_bytes") - b0, sizeof(frame));
}

int main(void)
{
	t_need_root("tap");
	if (t_enter_netns() != 0)
		return getenv("CI") ? 1 : 77;
	if (access("/dev/net/tun", R_OK | W_OK) != 0) {
		fprintf(stderr, "tap: /dev/net/tun missing\n");
		return getenv("CI") ? 1 : 77;
	}
	struct pktmap_stats st = { .sz = sizeof(st) };
	struct pktmap_info info = { .sz = sizeof(info) };

	/* 1. Created, up, used both ways, removed. */
	CHECK(!t_if_exists("pmt0"), "pmt0 does not exist yet");
	struct pktmap_port *p = t_open_port("tap:pmt0", 0);
	if (!p)
		return t_done("tap");
	CHECK(t_if_exists("pmt0"), "pmt0 created");
	CHECK(t_run("ip link show pmt0 | grep -q ',UP'") == 0, "pmt0 is up");
	pktmap_info(p, &info);
	CHECK(strcmp(info.mode_name, "emulated") == 0, "mode %s", info.mode_name);

	struct t_rx rs = { 0 };
	const uint32_t N = 20000;
	kernel_to_port(p, "pmt0", N, 60 + 42, &rs);
	CHECK_EQ(rs.got, N);
	CHECK_EQ(rs.bad, 0);
	CHECK_EQ(rs.misorder, 0);
	pktmap_stats(p, &st);
	CHECK_EQ(st.drop_backend, 0);
	CHECK_EQ(st.rx_packets, N + rs.foreign);

	/* What pktmap sends, the device receives: its rx_packets. */
	uint64_t k0 = t_if_counter("pmt0", "rx_packets");
	port_to_kernel(p, N, 60);
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets, N);
	CHECK_EQ(t_if_counter("pmt0", "rx_packets") - k0, N);

	/* Jumbo frames: chains on RX and, joined by writev, on TX. */
	if (t_setup("ip link set pmt0 mtu 9000") == 0) {
		struct t_rx rj = { 0 };
		kernel_to_port(p, "pmt0", 500, 9000, &rj);
		CHECK_EQ(rj.got, 500);
		CHECK_EQ(rj.bad, 0);
		pktmap_stats(p, &st);
		CHECK_EQ(st.drop_too_long, 0);
		k0 = t_if_counter("pmt0", "rx_packets");
		port_to_kernel(p, 500, 9000);
		CHECK_EQ(t_if_counter("pmt0", "rx_packets") - k0, 500);
		chain_in_two_submits(p);
	}

	/* Overflow: the host sends more than the device queues (txqueuelen
	 * 1000) while nobody reads; every frame is received or counted. */
	{
		t_run("ip link set pmt0 mtu 1500");
		pktmap_stats(p, &st);
		uint64_t rx0 = st.rx_packets, d0 = st.drop_backend;
		static uint8_t frame[128];
		int fd = kernel_sender("pmt0");
		for (uint32_t i = 0; i < 3000; i++) {
			t_frame(frame, 100, i, 0);
			if (send(fd, frame, 100, 0) != 100)
				break;
		}
		close(fd);
		struct t_rx ro = { 0 };
		for (int i = 0; i < 20; i++) {
			pktmap_poll(p, POLLIN, 10);
			t_drain(p, &ro);
		}
		pktmap_stats(p, &st);
		CHECK(st.drop_backend > d0, "some frames were dropped");
		CHECK_EQ(st.rx_packets - rx0 + st.drop_backend - d0, 3000);
	}
	pktmap_close(p);
	CHECK(!t_if_exists("pmt0"), "pmt0 removed at close");

	/* 2. An existing persistent TAP is attached to and left alone. */
	if (t_setup("ip tuntap add dev pmt1 mode tap && ip link set pmt1 up") == 0) {
		p = t_open_port("tap:pmt1", 0);
		if (p) {
			struct t_rx r1 = { 0 };
			kernel_to_port(p, "pmt1", 1000, 100, &r1);
			CHECK_EQ(r1.got, 1000);
			pktmap_close(p);
		}
		CHECK(t_if_exists("pmt1"), "a TAP we did not create stays");
		t_run("ip link del pmt1");
	}

	/* 3. Multi-queue: one descriptor per ring; 16 flows reach both
	 * rings, each in order. */
	p = t_open_port("tap:pmt2@conf:rings=2", 0);
	if (p) {
		pktmap_info(p, &info);
		CHECK_EQ(info.rx_rings, 2);
		struct t_rx r2 = { 0 };
		kernel_to_port_flows(p, "pmt2", 2000, 100, 16, &r2);
		CHECK_EQ(r2.got, 2000);
		CHECK_EQ(r2.bad, 0);
		CHECK_EQ(r2.ring_misorder, 0);
		CHECK(r2.ring_got[0] > 0 && r2.ring_got[1] > 0,
		      "both rings used: %llu and %llu frames",
		      (unsigned long long)r2.ring_got[0],
		      (unsigned long long)r2.ring_got[1]);
		printf("multi-queue: ring 0 %llu, ring 1 %llu frames\n",
		       (unsigned long long)r2.ring_got[0],
		       (unsigned long long)r2.ring_got[1]);
		pktmap_close(p);
		CHECK(!t_if_exists("pmt2"), "pmt2 removed at close");
	}

	/* 4. Errors. */
	{
		char err[300] = "";
		struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
					      .errbuf_len = sizeof(err) };
		t_run("ip link add pmv0 type veth peer name pmv1");
		CHECK_EQ(pktmap_open(&p, "tap:pmv0", &o), -EINVAL);
		CHECK(strstr(err, "not a TAP"), "message: %s", err);
		t_run("ip link del pmv0");
		struct pktmap_port *a = t_open_port("tap:pmt3", 0);
		err[0] = 0;
		CHECK_EQ(pktmap_open(&p, "tap:pmt3", &o), -EBUSY);
		CHECK(strstr(err, "in use"), "message: %s", err);
		pktmap_close(a);
	}
	return t_done("tap");
}
