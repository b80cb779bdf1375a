// SPDX-License-Identifier: BSD-2-Clause
/* A hostile peer sharing a pipe's region (docs/design.md
 * "Trust model"): it writes garbage, in a loop, into every byte of the
 * region it can map (header, free list, directory, the pipe's queues and
 * descriptors, the buffers), races the descriptors against rxsync, is
 * killed with SIGKILL in the middle, and holds the region's lock. The
 * partners keep running: no crash, no access outside the region, their
 * private rings keep their layout, every slot they are handed is a buffer
 * of the pool, and a lock held forever costs an error, not a hang. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "port.h"
#include "region.h"
#include "t.h"

static char pname[64], path[128];

static struct pktmap_port *open_end(const char *suffix, char *err, size_t len)
{
	char name[160];
	snprintf(name, sizeof(name), "pipe:%s%s", pname, suffix);
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = len };
	struct pktmap_port *p = NULL;
	int r = pktmap_open(&p, name, &o);
	return r == 0 ? p : NULL;
}

/* The hostile peer: take the pool's memfd the way any process of the
 * same user can (/proc/PID/fd/N of a holder), try to truncate it and the
 * rendezvous file, and scribble on both. Signals `ready` after the first
 * pass, then scribbles until killed. */
static void scribbler(int ready_fd, pid_t holder, int holder_fd)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)holder, holder_fd);
	int fd = open(proc, O_RDWR);
	int rfd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0 || rfd < 0 || fstat(fd, &st) != 0)
		_exit(2);
	/* The memory is sealed: it cannot shrink or grow. */
	if (ftruncate(fd, 0) == 0 || ftruncate(fd, st.st_size / 2) == 0 ||
	    ftruncate(fd, st.st_size * 2) == 0)
		_exit(5);
	if (ftruncate(rfd, 0) != 0) /* the rendezvous can: harmless */
		_exit(6);
	size_t size = (size_t)st.st_size;
	unsigned char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
				fd, 0);
	if (m == MAP_FAILED)
		_exit(3);
	uint64_t x = 88172645463325252ull ^ (uint64_t)getpid();
	for (uint64_t pass = 0;; pass++) {
		/* Every byte of the region, 8 at a time, in a random order of
		 * 4 KiB pages; some words get small numbers (valid-looking
		 * indices), most get noise. */
		for (size_t pg = 0; pg < size / 4096; pg++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t at = (size_t)(x % (size / 4096)) * 4096;
			uint64_t *w = (uint64_t *)(m + at);
			for (size_t i = 0; i < 512; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				w[i] = (x & 3) ? x : (x >> 40) % 8192;
			}
		}
		/* And a sweep over everything, so that no byte is missed. */
		for (size_t i = 0; i + 8 <= size; i += 8) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			*(uint64_t *)(m + i) = x;
		}
		if (pass == 0) {
			char c = 1;
			if (write(ready_fd, &c, 1) != 1)
				_exit(4);
		}
	}
}

/* What a partner may rely on, checked after every sync. */
static void check_ring(struct netmap_ring *r, uint32_t slots, int64_t buf_ofs,
		       const struct pm_region *reg, uint64_t *checked)
{
	CHECK_EQ(r->num_slots, slots);
	CHECK(r->buf_ofs == buf_ofs, "buf_ofs changed");
	for (uint32_t i = r->head; i != r->tail; i = nm_ring_next(r, i)) {
		struct netmap_slot *s = &r->slot[i];
		CHECK(s->buf_idx >= 2 && s->buf_idx < reg->nbufs, "buf_idx %u",
		      s->buf_idx);
		CHECK(s->len <= reg->buf_size - reg->headroom, "len %u", s->len);
		const char *b = NETMAP_BUF(r, s->buf_idx);
		CHECK(b >= (char *)reg->base &&
			      b + s->len <= (char *)reg->base + reg->size,
		      "buffer outside the region");
		volatile char c = s->len ? b[s->len - 1] : 0; /* mapped */
		(void)c;
		(*checked)++;
	}
}

static void test_garbage_and_kill(void)
{
	char err[300] = "";
	struct pktmap_port *a = open_end("{0@conf:slots=256", err, sizeof(err));
	CHECK(a != NULL, "open: %s", err);
	struct pktmap_port *b = open_end("}0", err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	if (!a || !b)
		return;
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);
	int64_t tx_ofs = tx->buf_ofs, rx_ofs = rx->buf_ofs;
	struct netmap_if *na = pktmap_nifp(a);
	ssize_t ring_ofs0 = na->ring_ofs[0];

	int ready[2];
	CHECK(pipe(ready) == 0, "pipe");
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		scribbler(ready[1], parent, a->region.mfd);
	char c;
	CHECK(read(ready[0], &c, 1) == 1, "scribbler ready");

	/* Race the scribbler: send, receive, release, as fast as we go. */
	uint64_t checked = 0, eproto = 0;
	int wst = 0;
	for (int round = 0; round < 20000; round++) {
		for (uint32_t k = 0; k < 16 && !nm_ring_empty(tx); k++) {
			struct netmap_slot *s = &tx->slot[tx->cur];
			s->len = 60;
			tx->head = tx->cur = nm_ring_next(tx, tx->cur);
		}
		eproto += pktmap_txsync(a) == -EPROTO;
		check_ring(tx, 256, tx_ofs, &a->region, &checked);
		eproto += pktmap_rxsync(b) == -EPROTO;
		check_ring(rx, 256, rx_ofs, &b->region, &checked);
		rx->head = rx->cur = rx->tail;
		if (round == 10000) {
			/* Killed in the middle of a pass. */
			kill(pid, SIGKILL);
			waitpid(pid, &wst, 0);
		}
	}
	/* It scribbled all along: our SIGKILL ended it, nothing before. */
	CHECK(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL,
	      "the scribbler ran until killed (status %#x)", wst);
	close(ready[0]);
	close(ready[1]);
	CHECK(na->ring_ofs[0] == ring_ofs0, "private netmap_if intact");
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(b, &st);
	struct pktmap_stats sa = { .sz = sizeof(sa) };
	pktmap_stats(a, &sa);
	CHECK(eproto > 0 && st.drop_invalid + sa.drop_invalid > 0,
	      "the garbage was seen and counted (%llu, %llu)",
	      (unsigned long long)eproto,
	      (unsigned long long)(st.drop_invalid + sa.drop_invalid));
	CHECK(checked > 0, "slots checked");
	pktmap_close(a);
	pktmap_close(b);
	struct stat sst;
	CHECK(stat(path, &sst) != 0, "region removed by the last close");

	/* The name works again, from scratch, with every buffer there. */
	a = open_end("{0@conf:slots=256", err, sizeof(err));
	b = open_end("}0", err, sizeof(err));
	CHECK(a && b, "reopen: %s", err);
	if (!a || !b)
		return;
	tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	rx = NETMAP_RXRING(pktmap_nifp(b), 0);
	uint32_t seq = 0, expect = 0;
	for (int round = 0; round < 100; round++) {
		while (!nm_ring_empty(tx)) {
			struct netmap_slot *s = &tx->slot[tx->cur];
			memcpy(NETMAP_BUF(tx, s->buf_idx), &seq, 4);
			s->len = 64;
			seq++;
			tx->head = tx->cur = nm_ring_next(tx, tx->cur);
		}
		CHECK_EQ(pktmap_txsync(a), 0);
		CHECK_EQ(pktmap_rxsync(b), 0);
		while (!nm_ring_empty(rx)) {
			uint32_t v;
			memcpy(&v, NETMAP_BUF(rx, rx->slot[rx->head].buf_idx), 4);
			CHECK(v == expect, "seq %u, expected %u", v, expect);
			expect = v + 1;
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
		}
	}
	CHECK_EQ(expect, seq);
	/* Conservation: both ends' rings hold 4 x 256 distinct buffers and
	 * the rest is on the free list. */
	static unsigned char seen[1 << 16];
	memset(seen, 0, sizeof(seen));
	uint32_t distinct = 0;
	struct pktmap_port *ends[2] = { a, b };
	for (int e = 0; e < 2; e++)
		for (int d = 0; d < 2; d++) {
			struct netmap_ring *r =
				d ? NETMAP_RXRING(pktmap_nifp(ends[e]), 0) :
				    NETMAP_TXRING(pktmap_nifp(ends[e]), 0);
			for (uint32_t s = 0; s < r->num_slots; s++)
				distinct += !seen[r->slot[s].buf_idx]++;
		}
	CHECK_EQ(distinct, 4 * 256);
	CHECK_EQ(pm_region_free_count(&a->region), a->region.nbufs - 2 - 4 * 256);
	pktmap_close(a);
	pktmap_close(b);
}

/* A process that holds the region's lock forever: an open gives up with
 * a one-line error instead of hanging. */
static void test_lock_held(void)
{
	char err[300] = "";
	struct pktmap_port *a = open_end("{1", err, sizeof(err));
	CHECK(a != NULL, "open: %s", err);
	if (!a)
		return;
	int ready[2];
	CHECK(pipe(ready) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = 0, .l_len = 1 };
		if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) != 0)
			_exit(2);
		char c = 1;
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	char c;
	CHECK(read(ready[0], &c, 1) == 1, "locker ready");
	struct pktmap_port *b = open_end("}1", err, sizeof(err));
	CHECK(b == NULL, "open refused while the lock is held");
	CHECK(strstr(err, "locked by another process") != NULL, "message: %s",
	      err);
	CHECK(strchr(err, '\n') == NULL, "one line");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	/* With the holder gone, the pipe opens. */
	b = open_end("}1", err, sizeof(err));
	CHECK(b != NULL, "open after the holder died: %s", err);
	pktmap_close(b);
	pktmap_close(a);
}

int main(void)
{
	snprintf(pname, sizeof(pname), "uth%d", (int)getpid());
	snprintf(path, sizeof(path), "/dev/shm/pktmap-%u/pipe.%s", (unsigned)geteuid(), pname);
	test_garbage_and_kill();
	test_lock_held();
	return t_done("hostile");
}
