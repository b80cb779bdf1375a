// SPDX-License-Identifier: BSD-2-Clause
/*
 * A hostile memif peer, for tests/system/memif_hostile.sh. It speaks the
 * protocol far enough to reach the part it attacks, then misbehaves:
 *
 *   memif_hostile silent SOCKET    connects and says nothing
 *   memif_hostile badsize SOCKET   sends a 50-byte control message
 *   memif_hostile unsealed SOCKET  hands over a region it could truncate
 *   memif_hostile flood SOCKET     connects, then floods the control socket
 *   memif_hostile garbage SOCKET   connects, then writes 160 bad descriptors
 *                                  (region, offset, length, flags) on its
 *                                  C2S ring, then a head a ring too far
 *   memif_hostile punch SOCKET     connects with a hugetlb region sealed
 *                                  against shrinking, then punches a hole
 *                                  over all of it and takes every free
 *                                  huge page (needs root and free huge
 *                                  pages)
 *   memif_hostile server SOCKET    a server: takes one client, then writes
 *                                  32 bad S2C descriptors and moves the
 *                                  indices of both rings past the end
 *
 * It exits 0 when the pktmap side ended the connection as it should (a
 * DISCONNECT or the socket closed), 1 otherwise, 2 on a setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../unit/hugepages.h"
#include "../unit/memif_raw.h"

#define LOG2 8u
#define RING (1u << LOG2)
#define BUF 2048u

static int cfd = -1;

static void die(const char *what)
{
	fprintf(stderr, "memif_hostile: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void sendm(uint16_t type, const void *body, size_t len, int fd)
{
	if (mif_raw_send(cfd, type, body, len, fd) < 0 && errno != EPIPE)
		die("sendmsg");
}

/* The next message (its type), 0 when the peer closed, -1 on time-out.
 * A descriptor it carries goes to *fd. */
static int recvm(struct mif_msg *m, int *fd, int ms)
{
	struct pollfd p = { cfd, POLLIN, 0 };
	if (poll(&p, 1, ms) <= 0)
		return -1;
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	ssize_t n = recvmsg(cfd, &mh, 0);
	if (n <= 0)
		return 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (fd && c && c->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	return m->type;
}

static void expect(int type)
{
	struct mif_msg m;
	int t = recvm(&m, NULL, 5000);
	if (t != type) {
		fprintf(stderr, "memif_hostile: expected message %d, got %d\n", type, t);
		exit(2);
	}
}

/* Wait for the pktmap side to end the connection: a DISCONNECT or EOF. */
static int ended(int ms)
{
	struct mif_msg m;
	for (;;) {
		int t = recvm(&m, NULL, ms);
		if (t == 0 || t == MIF_MSG_DISCONNECT) {
			if (t)
				printf("disconnected: %.96s\n", m.disconnect.string);
			return 0;
		}
		if (t < 0) {
			fprintf(stderr, "memif_hostile: still connected\n");
			return 1;
		}
	}
}


static int memfd(size_t size, unsigned seals, char **base, bool huge)
{
	int fd = memfd_create("hostile", MFD_ALLOW_SEALING |
					 (huge ? MFD_HUGETLB : 0));
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0 ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals) != 0))
		die("memfd");
	*base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*base == MAP_FAILED)
		die("mmap");
	return fd;
}

/* Client, after HELLO: INIT, ADD_REGION, two ADD_RINGs, CONNECT. Region
 * 0: the C2S ring, the S2C ring, then RING buffers per ring. */
static struct mif_ring *client_connect(char **base, uint64_t *size, int *rfd,
				       bool huge)
{
	struct mif_init in = { .version = MIF_VERSION };
	sendm(MIF_MSG_INIT, &in, sizeof(in), -1);
	expect(MIF_MSG_ACK);
	uint64_t rb = mif_ring_bytes(LOG2);
	/* On huge pages the buffers get a page of their own, after the
	 * rings' page: punch() takes that one only. */
	uint64_t bufs = huge ? T_HUGE : 2 * rb;
	*size = bufs + 2ull * RING * BUF;
	if (huge)
		*size = (*size + T_HUGE - 1) / T_HUGE * T_HUGE;
	int fd = memfd(*size, F_SEAL_SHRINK, base, huge);
	if (rfd)
		*rfd = fd;
	struct mif_add_region ar = { .index = 0, .size = *size };
	sendm(MIF_MSG_ADD_REGION, &ar, sizeof(ar), fd);
	expect(MIF_MSG_ACK);
	for (int d = 0; d < 2; d++) {
		struct mif_ring *r = (struct mif_ring *)(*base + d * rb);
		r->cookie = MIF_COOKIE;
		for (uint32_t i = 0; i < RING; i++) {
			r->desc[i].offset = (uint32_t)(bufs + (d * RING + i) * BUF);
			r->desc[i].length = BUF;
		}
		struct mif_add_ring ring = { .flags = d ? 0 : MIF_ADD_RING_C2S,
					     .offset = (uint32_t)(d * rb),
					     .log2_ring_size = LOG2 };
		sendm(MIF_MSG_ADD_RING, &ring, sizeof(ring), eventfd(0, 0));
		expect(MIF_MSG_ACK);
	}
	sendm(MIF_MSG_CONNECT, "hostile", 8, -1);
	expect(MIF_MSG_CONNECTED);
	return (struct mif_ring *)*base;
}

/* 160 descriptors, 32 of each kind of lie, published a batch at a time;
 * then a head more than a ring ahead. */
static int garbage(void)
{
	char *base;
	uint64_t size;
	struct mif_ring *r = client_connect(&base, &size, NULL, false);
	uint16_t head = 0;
	for (int kind = 0; kind < 5; kind++) {
		for (int i = 0; i < 32; i++, head++) {
			struct mif_desc *d = &r->desc[head & (RING - 1)];
			d->region = kind == 0 ? 3 : 0;
			d->offset = kind == 1 ? (uint32_t)size - 10 : d->offset;
			d->length = kind == 2 ? 0 : kind == 3 ? 1u << 20 : 100;
			d->flags = kind == 4 ? 0x80 : 0;
		}
		__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
		for (int t = 0; t < 5000 && __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) != head; t++)
			usleep(1000);
		if (r->tail != head) {
			fprintf(stderr, "memif_hostile: the server took nothing\n");
			return 1;
		}
	}
	__atomic_store_n(&r->head, (uint16_t)(head + 3 * RING), __ATOMIC_RELEASE);
	return ended(10000);
}

/* A hugetlb region, sealed against shrinking as the server asks: a page
 * of rings, a page of buffers. Once connected, the buffers' page punched
 * out and every free huge page taken; then one descriptor posted, so
 * that the server's copy of it finds no page (SIGBUS, before issue 30).
 * The server touches that page only for the descriptor, after every
 * page is gone: had it touched a punched page before the grab, the
 * kernel would have given it a fresh one and there would be nothing to
 * catch (the whole region punched at once left that window open). The
 * server must hang up. */
static int punch(void)
{
	char *base;
	uint64_t size;
	int fd;
	struct mif_ring *r = client_connect(&base, &size, &fd, true);
	/* Fault the buffers' page in, so that the punch frees a page (an
	 * untouched one is only a reservation, which the punch keeps). */
	memset(base + T_HUGE, 0, size - T_HUGE);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)T_HUGE, (off_t)(size - T_HUGE)) != 0)
		die("fallocate");
	size_t len;
	void *grab = t_huge_grab(&len);
	if (grab == MAP_FAILED || t_huge_free() != 0) {
		fprintf(stderr, "memif_hostile: could not take every free huge "
			"page (%zu bytes)\n", len);
		return 2;
	}
	printf("punched %llu bytes, took %zu huge pages\n",
	       (unsigned long long)(size - T_HUGE), len / T_HUGE);
	fflush(stdout);
	r->desc[0].length = 60;
	__atomic_store_n(&r->head, (uint16_t)1, __ATOMIC_RELEASE);
	return ended(30000);
}

/* Server: take one client, map its region 0 and rings, then lie. */
static int server(const char *path)
{
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(lfd, 1) != 0)
		die("listen");
	cfd = accept(lfd, NULL, NULL);
	if (cfd < 0)
		die("accept");
	struct mif_hello h = { .min_version = MIF_VERSION, .max_version = MIF_VERSION,
			       .max_region = 3, .max_log2_ring_size = 10 };
	sendm(MIF_MSG_HELLO, &h, sizeof(h), -1);
	struct mif_msg m;
	char *reg[4] = { 0 };
	struct mif_ring *ring[2] = { 0 };
	uint32_t nreg = 0;
	for (;;) {
		int fd = -1, t = recvm(&m, &fd, 5000);
		if (t == MIF_MSG_ADD_REGION && nreg < 4) {
			reg[nreg] = mmap(NULL, m.add_region.size, PROT_READ | PROT_WRITE,
					 MAP_SHARED, fd, 0);
			if (reg[nreg++] == MAP_FAILED)
				die("mmap");
		} else if (t == MIF_MSG_ADD_RING && m.add_ring.region < nreg) {
			int c2s = m.add_ring.flags & MIF_ADD_RING_C2S;
			if (m.add_ring.index == 0)
				ring[!c2s] = (struct mif_ring *)(reg[m.add_ring.region] +
								 m.add_ring.offset);
		} else if (t == MIF_MSG_CONNECT) {
			sendm(MIF_MSG_CONNECTED, "hostile", 8, -1);
			break;
		} else if (t != MIF_MSG_INIT) {
			fprintf(stderr, "memif_hostile: handshake: message %d\n", t);
			return 2;
		}
		sendm(MIF_MSG_ACK, NULL, 0, -1);
	}
	unlink(path);
	struct mif_ring *s2c = ring[1], *c2s = ring[0];
	if (s2c) {
		/* Wait for the client's buffers, then fill 32 with lies. */
		for (int t = 0; t < 5000 && (uint16_t)(s2c->head - s2c->tail) < 32; t++)
			usleep(1000);
		uint16_t tail = s2c->tail;
		for (int i = 0; i < 32; i++, tail++) {
			struct mif_desc *d = &s2c->desc[tail & 1023];
			d->length = i < 16 ? 1u << 20 : 60;
			d->flags = i < 16 ? 0 : 0x40;
		}
		__atomic_store_n(&s2c->tail, tail, __ATOMIC_RELEASE);
		usleep(300000);
		__atomic_store_n(&s2c->tail, (uint16_t)(tail + 5000), __ATOMIC_RELEASE);
	}
	if (c2s) {
		usleep(300000);
		__atomic_store_n(&c2s->tail, (uint16_t)(c2s->head + 5000),
				 __ATOMIC_RELEASE);
	}
	return ended(10000);
}

static void client(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	cfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("connect");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: memif_hostile silent|badsize|unsealed|flood|"
			"garbage|punch|server SOCKET\n");
		return 2;
	}
	const char *mode = argv[1];
	if (strcmp(mode, "server") == 0)
		return server(argv[2]);
	client(argv[2]);
	if (strcmp(mode, "silent") == 0)
		return ended(10000);
	expect(MIF_MSG_HELLO);
	if (strcmp(mode, "badsize") == 0) {
		char junk[50] = "not a memif message";
		if (send(cfd, junk, sizeof(junk), 0) < 0)
			die("send");
		return ended(5000);
	}
	struct mif_init in = { .version = MIF_VERSION };
	if (strcmp(mode, "unsealed") == 0) {
		sendm(MIF_MSG_INIT, &in, sizeof(in), -1);
		expect(MIF_MSG_ACK);
		char *base;
		int fd = memfd(1 << 20, 0, &base, false);
		struct mif_add_region ar = { .index = 0, .size = 1 << 20 };
		sendm(MIF_MSG_ADD_REGION, &ar, sizeof(ar), fd);
		int r = ended(5000);
		/* It was refused before the server mapped it: cut it anyway. */
		if (ftruncate(fd, 0) != 0)
			die("ftruncate");
		return r;
	}
	if (strcmp(mode, "flood") == 0) {
		/* A connected interface, then ACKs it never asked for: the
		 * first is a protocol error; keep sending until it hangs up. */
		char *base;
		uint64_t size;
		client_connect(&base, &size, NULL, false);
		for (int i = 0; i < 100000; i++) {
			struct mif_msg m;
			memset(&m, 0, sizeof(m));
			m.type = MIF_MSG_ACK;
			if (send(cfd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				break;
		}
		return ended(10000);
	}
	if (strcmp(mode, "garbage") == 0)
		return garbage();
	if (strcmp(mode, "punch") == 0)
		return punch();
	fprintf(stderr, "memif_hostile: unknown mode %s\n", mode);
	return 2;
}
