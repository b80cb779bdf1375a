/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Helpers for tests of back ends that need real interfaces: the test moves
 * itself into a fresh network namespace (unshare), so every veth or TAP it
 * makes vanishes with the process, even if it crashes; and test frames
 * (IPv4/UDP with a sequence number and a checkable payload).
 */
#ifndef PKTMAP_TEST_NETNS_H
#define PKTMAP_TEST_NETNS_H

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "t.h"

/* Exit 77 (skip) without root, or fail under CI=true, which may not skip. */
static inline void t_need_root(const char *name)
{
	if (geteuid() == 0)
		return;
	const char *ci = getenv("CI");
	if (ci && strcmp(ci, "true") == 0) {
		fprintf(stderr, "%s: needs root, and CI may not skip\n", name);
		exit(1);
	}
	fprintf(stderr, "%s: skipped: needs root\n", name);
	exit(77);
}

static inline int t_run(const char *cmd)
{
	int r = system(cmd);
	if (r != 0)
		fprintf(stderr, "command failed (%d): %s\n", r, cmd);
	return r;
}

/* Run a setup command a test section depends on: its failure is a
 * failed check (a section never skips silently). Returns t_run()'s. */
static inline int t_setup(const char *cmd)
{
	int r = t_run(cmd);
	CHECK(r == 0, "setup failed: %s", cmd);
	return r;
}

static inline void t_write_file(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, v, strlen(v)) < 0) {
		}
		close(fd);
	}
}

/* Enter a new network namespace with its own /sys view, and quiet it
 * (no IPv6 autoconfiguration chatter on the links we make). Returns 0, or
 * -1 when namespaces are unavailable (the caller skips or fails). */
static inline int t_enter_netns(void)
{
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) {
		perror("unshare(CLONE_NEWNET|CLONE_NEWNS)");
		return -1;
	}
	/* Private mounts, then a sysfs that shows this namespace's devices. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL) != 0) {
		perror("mount sysfs");
		return -1;
	}
	/* The new sysfs hides a bpffs the host may have at /sys/fs/bpf
	 * (systemd mounts one), while /proc/mounts still lists it: iproute2's
	 * loader (`ip link set ... xdp obj`) then finds no usable bpffs and
	 * fails. A bpffs of our own there makes both hosts alike; it goes
	 * with the namespace. (Without one, only `ip ... obj` needs it.) */
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL) != 0)
		perror("mount bpf /sys/fs/bpf");
	t_write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	t_write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	return 0;
}

/* The pkt: tests' world: a namespace of their own (t_enter_netns())
 * holding a veth pair pa <-> pb, both up. Returns 0, or nonzero after a
 * failed check (the test ends with t_done()); without namespaces it
 * exits: 1 in CI, which may not skip, else 77. */
static inline int t_veth_pair_ns(void)
{
	if (t_enter_netns() != 0)
		exit(getenv("CI") ? 1 : 77);
	return t_setup("ip link add pa type veth peer name pb && "
		       "ip link set pa up && ip link set pb up");
}

static inline uint64_t t_if_counter(const char *ifname, const char *what)
{
	char path[128], buf[32];
	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", ifname,
		 what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

static inline int t_if_exists(const char *ifname)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/net/%s", ifname);
	return access(path, F_OK) == 0;
}

/* Log callback for test ports: library messages go to stderr, prefixed. */
static inline void t_log_cb(void *ctx, enum pktmap_log_level lvl, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "  [lib %d] %s\n", (int)lvl, msg);
}

/* Opens NAME in direction DIR (0 = the default) with open flags FLAGS
 * (PKTMAP_OPEN_*) and t_log_cb; a failure is a failed CHECK naming the
 * port and the library's error text. */
static inline struct pktmap_port *t_open_port_flags(const char *name,
						    uint32_t dir, uint32_t flags)
{
	struct pktmap_port *p = NULL;
	char err[300] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .dir = dir, .flags = flags,
				      .errbuf = err, .errbuf_len = sizeof(err),
				      .log = t_log_cb };
	int r = pktmap_open(&p, name, &o);
	CHECK(r == 0, "open %s: %s (%s)", name, pktmap_strerror(r), err);
	return r == 0 ? p : NULL;
}

/* t_open_port_flags() without flags. */
static inline struct pktmap_port *t_open_port(const char *name, uint32_t dir)
{
	return t_open_port_flags(name, dir, 0);
}

#define T_MAGIC 0x706b746du /* "pktm" */
#define T_HDR 46            /* Ethernet 14 + IPv4 20 + UDP 8 + magic 4 */

/* Build test frame `seq` of `len` bytes (>= T_HDR + 4) in buf. `flow`
 * varies the UDP source port so that hashing spreads flows. */
static inline void t_frame(uint8_t *b, uint32_t len, uint32_t seq, uint32_t flow)
{
	static const uint8_t dst[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t src[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	b[12] = 0x08, b[13] = 0x00;
	uint8_t *ip = b + 14;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	uint16_t tot = (uint16_t)(len - 14);
	ip[2] = (uint8_t)(tot >> 8), ip[3] = (uint8_t)tot;
	ip[8] = 64, ip[9] = 17;
	ip[12] = 10, ip[13] = 0, ip[14] = 0, ip[15] = 1;
	ip[16] = 10, ip[17] = 0, ip[18] = 0, ip[19] = 2;
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8), ip[11] = (uint8_t)sum;
	uint8_t *udp = ip + 20;
	uint16_t sport = (uint16_t)(1024 + flow), ulen = (uint16_t)(tot - 20);
	udp[0] = (uint8_t)(sport >> 8), udp[1] = (uint8_t)sport;
	udp[2] = 0x12, udp[3] = 0x34;
	udp[4] = (uint8_t)(ulen >> 8), udp[5] = (uint8_t)ulen;
	udp[6] = udp[7] = 0;
	uint32_t m = T_MAGIC;
	memcpy(b + 42, &m, 4);
	memcpy(b + 46, &seq, 4);
	for (uint32_t i = 50; i < len; i++)
		b[i] = (uint8_t)(seq * 7 + i);
}

/* A test frame? Then its sequence number in *seq, and whether the
 * payload is intact (1) or not (0). -1: not one of ours. */
static inline int t_frame_check(const uint8_t *b, uint32_t len, uint32_t *seq)
{
	uint32_t m;
	if (len < 50 || b[12] != 0x08 || b[13] != 0x00)
		return -1;
	memcpy(&m, b + 42, 4);
	if (m != T_MAGIC)
		return -1;
	memcpy(seq, b + 46, 4);
	uint32_t tot = (uint32_t)(b[16] << 8 | b[17]);
	if (tot + 14 != len)
		return 0;
	for (uint32_t i = 50; i < len; i++)
		if (b[i] != (uint8_t)(*seq * 7 + i))
			return 0;
	return 1;
}

#define T_MAX_RINGS 64

/* What t_drain() counted of the test frames it took off a port. */
struct t_rx {
	uint64_t got, bad;       /* test frames; of those, with a bad payload */
	uint64_t foreign;        /* other frames (the kernel's own) */
	uint64_t misorder;       /* sequence number not the previous one + 1 */
	uint32_t next;           /* the sequence number expected next */
	/* per RX ring: frames, and sequence numbers going backwards */
	uint64_t ring_got[T_MAX_RINGS], ring_misorder;
	uint32_t ring_next[T_MAX_RINGS];
};

/* Sync p and take everything off its RX rings, joining chains into
 * frames and counting them into *st. A chain is always delivered whole:
 * one cut at a ring's tail fails the test. */
static inline void t_drain(struct pktmap_port *p, struct t_rx *st)
{
	static uint8_t frame[65536];
	struct netmap_if *nifp = pktmap_nifp(p);
	pktmap_rxsync(p);
	for (uint32_t r = 0; r < nifp->ni_rx_rings; r++) {
		struct netmap_ring *ring = NETMAP_RXRING(nifp, r);
		uint32_t flen = 0;
		while (!nm_ring_empty(ring)) {
			struct netmap_slot *s = &ring->slot[ring->head];
			if (flen + s->len <= sizeof(frame))
				memcpy(frame + flen, NETMAP_BUF(ring, s->buf_idx),
				       s->len);
			flen += s->len;
			ring->head = ring->cur = nm_ring_next(ring, ring->head);
			if (s->flags & NS_MOREFRAG)
				continue;
			uint32_t seq;
			int v = flen <= sizeof(frame) ?
					t_frame_check(frame, flen, &seq) : -1;
			flen = 0;
			if (v < 0) {
				st->foreign++;
				continue;
			}
			st->got++;
			st->bad += v == 0;
			st->misorder += seq != st->next;
			st->next = seq + 1;
			if (r < T_MAX_RINGS) {
				st->ring_got[r]++;
				st->ring_misorder += seq < st->ring_next[r];
				st->ring_next[r] = seq + 1;
			}
		}
		CHECK(flen == 0, "a chain was cut at the ring's tail");
	}
}

#endif
