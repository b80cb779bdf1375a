// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: memif's control channel (src/ports/memif_ctl.c), the
 * parser of every message a peer sends, as a server or as a client, in
 * any order, with whatever descriptor rides along. It must never crash,
 * read or write outside what it mapped, leak a descriptor, or connect
 * rings that lie outside the regions given.
 *
 * Input: one byte (bit 0: play the server; bit 1: the port has a
 * secret), then 128-byte control messages. The last byte of each
 * message picks the descriptor it carries: bits 0-1: none, a memfd, an
 * eventfd, a pipe; bit 2: the memfd is not sealed; bit 3: it is smaller
 * than ADD_REGION says; bit 4: it is a hugetlb memfd (when the machine
 * has huge pages); bit 5: it is filled with the memif ring cookie (so
 * that rings anywhere in it pass CONNECT's check). The memfd's size is
 * what ADD_REGION says, at most 1 MiB. Seeds (tests/fuzz/seeds/memif,
 * made by mkseeds.py there): a whole server and a whole client
 * handshake.
 *
 * The data path's hooks are this file's: attach() reads every
 * descriptor of every ring a server connected (a ring outside its
 * region faults here), as memif.c's rings_attach() and the syncs would.
 * memif_ctl.c is included, so that its static parser is the one fuzzed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ports/memif_ctl.c"

static volatile uint64_t sink;

static void attach(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	if (!mi->server)
		return;
	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < (d ? mi->run_s2c : mi->run_c2s); i++) {
			struct mif_ring_req *rq = &mi->req[d][i];
			if (rq->region >= mi->nreg)
				__builtin_trap();
			const struct mif_ring *r = (const struct mif_ring *)
				(mi->reg[rq->region].base + rq->offset);
			sink += r->cookie + r->head + r->tail;
			for (uint32_t k = 0; k < (1u << mi->run_log2); k++)
				sink += r->desc[k].offset + r->desc[k].length;
		}
}

static void detach(struct pktmap_port *p)
{
	(void)p;
}

static void quiet(void *ctx, enum pktmap_log_level lvl, const char *line)
{
	(void)ctx;
	(void)lvl;
	if (!memchr(line, 0, 4096) || strchr(line, '\n'))
		__builtin_trap();
}

/* The descriptor message m carries, as its last byte says. */
static int carried(const struct mif_msg *m)
{
	uint8_t how = m->pad[sizeof(m->pad) - 1];
	switch (how & 3) {
	case 1: {
		uint64_t size = m->type == MIF_MSG_ADD_REGION ? m->add_region.size : 4096;
		if (size > (1u << 20))
			size = 1u << 20;
		if (how & 8)
			size /= 2;
		int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING |
					      ((how & 16) ? MFD_HUGETLB : 0));
		if (fd < 0)
			fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && ftruncate(fd, (off_t)size) != 0 && (how & 16)) {
			close(fd);
			fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
			(void)!ftruncate(fd, (off_t)size);
		}
		if (fd >= 0 && (how & 32)) {
			uint32_t *w = mmap(NULL, size, PROT_READ | PROT_WRITE,
					   MAP_SHARED, fd, 0);
			if (w != MAP_FAILED) {
				for (size_t i = 0; i < size / 4; i++)
					w[i] = MIF_COOKIE;
				munmap(w, size);
			}
		}
		if (fd >= 0 && !(how & 4))
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
		return fd;
	}
	case 2:
		return eventfd(0, EFD_CLOEXEC);
	case 3: {
		int pf[2];
		if (pipe2(pf, O_CLOEXEC) != 0)
			return -1;
		close(pf[1]);
		return pf[0];
	}
	}
	return -1;
}

/* Descriptors open now: none may be left after a port's end. */
static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int fds0 = open_fds();
	static struct pm_ring_stats st[4];
	static struct pm_kring kr[4];
	static struct mif_q q[4];
	static struct pktmap_port port;
	static struct mif_priv mi;
	memset(&port, 0, sizeof(port));
	memset(&mi, 0, sizeof(mi));
	memset(q, 0, sizeof(q));
	memset(kr, 0, sizeof(kr));
	for (int i = 0; i < 4; i++) {
		kr[i].st = &st[i];
		q[i].ifd = -1;
	}
	struct pktmap_port *p = &port;
	snprintf(p->name, sizeof(p->name), "memif:fuzz");
	p->log = quiet;
	p->log_level = PKTMAP_LOG_DEBUG;
	p->priv = &mi;
	p->ntx = p->nrx = 2;
	p->krings = kr;
	p->region.fd = p->region.mfd = -1;
	mi.server = data[0] & 1;
	if (data[0] & 2)
		snprintf(mi.secret, sizeof(mi.secret), "s3cret");
	mi.nq = 2;
	mi.log2 = 10;
	mi.q = q;
	mi.attach = attach;
	mi.detach = detach;
	mi.lfd = mi.rfd = mi.dirfd = -1;
	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < PM_MAX_RINGS; i++)
			mi.req[d][i].fd = -1;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sp) != 0)
		return 0;
	mi.cfd = sp[0];
	mi.epfd = epoll_create1(EPOLL_CLOEXEC);
	mi.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (!mi.server && mif_pool_create(p, 16, 2048) != 0)
		__builtin_trap();
	mi.deadline_ms = mif_now_ms() + 1000000;
	atomic_store(&mi.state, MIF_HELLO);
	for (size_t at = 1; at + sizeof(struct mif_msg) <= size;
	     at += sizeof(struct mif_msg)) {
		struct mif_msg m;
		memcpy(&m, data + at, sizeof(m));
		if (mi.cfd < 0)
			break; /* disconnected: the peer is gone */
		handle_one(p, &m, carried(&m));
		char junk[256];
		while (read(sp[1], junk, sizeof(junk)) > 0)
			; /* what we answered */
	}
	if (atomic_load(&mi.state) != MIF_DOWN)
		mif_disconnect(p, "the fuzzer is done", false);
	ep_close(&mi, &mi.cfd);
	close(sp[1]);
	close(mi.epfd);
	close(mi.tfd);
	if (p->region.base) {
		munmap(p->region.base, p->region.size);
		close(p->region.mfd);
	}
	if (open_fds() != fds0)
		__builtin_trap(); /* a descriptor of the peer's kept */
	return 0;
}
