// SPDX-License-Identifier: BSD-2-Clause
/*
 * memif's control channel: the listening socket (server) or the connect()
 * retries (client), the handshake of memif.h, the peer's regions and
 * rings (server), our own rings' memory (client), and disconnect.
 *
 * Nothing here blocks: the sockets are non-blocking, each look at the
 * control channel reads at most MIF_MSGS_PER_SERVICE messages, and every
 * handshake step has a deadline (MIF_HANDSHAKE_MS). A peer that sends
 * something malformed, out of order or out of bounds is disconnected
 * with one log line saying what it did; the port stays open and waits
 * for the next peer. mif_service() runs from inside a sync call, holding
 * both direction locks, so the rings can be attached and detached there.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "memif.h"
#include "util.h"

int64_t mif_now_ms(void)
{
	return pm_clock_ms(CLOCK_MONOTONIC);
}

/* Arm the timer (mi->tfd, in p->fd's epoll set) to fire in us
 * microseconds (at least 1), once. */
void mif_arm_timer(struct mif_priv *mi, int64_t us)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (us < 1)
		us = 1;
	its.it_value.tv_sec = us / 1000000;
	its.it_value.tv_nsec = (us % 1000000) * 1000;
	(void)timerfd_settime(mi->tfd, 0, &its, NULL);
}

void mif_arm_ctl_timer(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	int st = atomic_load_explicit(&mi->state, memory_order_acquire);
	int64_t now = mif_now_ms();
	if (st == MIF_DOWN && !mi->server)
		mif_arm_timer(mi, (mi->next_try_ms - now) * 1000);
	else if (st != MIF_UP && st != MIF_DOWN)
		mif_arm_timer(mi, (mi->deadline_ms - now + 1) * 1000);
}

static void ep_add(struct mif_priv *mi, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	(void)epoll_ctl(mi->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Close fd, taking it out of the epoll set first: the peer may hold the
 * same file (an eventfd we exchanged), and epoll forgets a file only
 * when every descriptor of it everywhere is closed. */
static void ep_close(struct mif_priv *mi, int *fd)
{
	if (*fd < 0)
		return;
	(void)epoll_ctl(mi->epfd, EPOLL_CTL_DEL, *fd, NULL);
	close(*fd);
	*fd = -1;
}

static int mif_send(struct mif_priv *mi, const struct mif_msg *m, int fd)
{
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	ssize_t n = sendmsg(mi->cfd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n == (ssize_t)sizeof(*m))
		return 0;
	return n < 0 ? -errno : -EPROTO;
}

static int send_simple(struct mif_priv *mi, uint16_t type)
{
	struct mif_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	return mif_send(mi, &m, -1);
}

/* Read one message. Returns 1 with *fd the descriptor it carried (or
 * -1), 0 when nothing is waiting, -EPROTO for a malformed one (any
 * descriptors it carried closed), another -errno when the channel broke. */
static int mif_recv(struct mif_priv *mi, struct mif_msg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	*fd = -1;
	ssize_t n = recvmsg(mi->cfd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = f;
			else
				close(f); /* one descriptor a message, at most */
		}
	}
	if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPROTO;
	}
	return 1;
}

/* The peer must run as our user (or root): it maps our memory or hands
 * us its own. */
static int peer_ok(struct mif_priv *mi, char *why, size_t wl)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);
	if (getsockopt(mi->cfd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0) {
		snprintf(why, wl, "cannot read the peer's credentials: %s",
			 strerror(errno));
		return -1;
	}
	if (cr.uid != geteuid() && cr.uid != 0) {
		snprintf(why, wl, "the peer (pid %d) runs as uid %u, not as us "
			 "(uid %u) or root: refused", (int)cr.pid, (unsigned)cr.uid,
			 (unsigned)geteuid());
		return -1;
	}
	return 0;
}

static void set_state(struct pktmap_port *p, int s)
{
	struct mif_priv *mi = mif(p);
	atomic_store_explicit(&mi->state, s, memory_order_release);
	if (s == MIF_UP)
		atomic_fetch_and_explicit(PM_ATOMIC(&p->info_flags),
					  ~PKTMAP_INFO_PEER_GONE, memory_order_relaxed);
	else
		pm_info_set(p, PKTMAP_INFO_PEER_GONE);
}

/* ------------------------------------------------------------------ */
/* Client: our rings' memory, the connect() retries, the steps. */

/* A sealed memfd of `size` bytes, mapped. Returns the fd or -errno. */
static int sealed_memfd(const char *tag, size_t size, char **base)
{
	int fd = memfd_create(tag, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	*base = m;
	return fd;
}

int mif_pool_create(struct pktmap_port *p, uint32_t nbufs, uint32_t buf_size)
{
	struct pm_region *r = &p->region;
	size_t size = (size_t)nbufs * buf_size;
	char *base = NULL;
	int fd = sealed_memfd("pktmap-memif-pool", size, &base);
	if (fd < 0)
		return pm_open_error(p, fd, "cannot create the buffer pool (%zu "
				     "bytes): %s", size, strerror(-fd));
	r->fd = r->mfd = fd;
	r->base = base;
	r->size = size;
	r->pool = base;
	r->buf_size = buf_size;
	r->headroom = 0;
	r->nbufs = nbufs;
	r->sealed = true;
	snprintf(r->name, sizeof(r->name), "(memif)");
	return 0;
}

/* After HELLO: our rings for the sizes agreed, in one new sealed memfd
 * (a peer of an earlier connection cannot reach them), and an eventfd
 * per ring. */
static int cli_rings_make(struct pktmap_port *p, char *why, size_t wl)
{
	struct mif_priv *mi = mif(p);
	uint64_t rb = mif_ring_bytes(mi->run_log2);
	size_t size = (size_t)((mi->run_c2s + mi->run_s2c) * rb);
	size = (size + 4095) & ~(size_t)4095;
	int fd = sealed_memfd("pktmap-memif-rings", size, &mi->rbase);
	if (fd < 0) {
		snprintf(why, wl, "cannot create the rings' memory: %s",
			 strerror(-fd));
		return -1;
	}
	mi->rfd = fd;
	mi->rsize = size;
	for (uint32_t i = 0; i < mi->run_c2s + mi->run_s2c; i++) {
		struct mif_ring *r = (struct mif_ring *)(mi->rbase + i * rb);
		r->cookie = MIF_COOKIE;
		/* The rings we read (S2C) are polled unless poll() sleeps. */
		r->flags = i >= mi->run_c2s ? MIF_RING_MASK_INT : 0;
		/* TX kring i is C2S ring i; RX kring i is S2C ring i. */
		struct mif_q *q = i < mi->run_c2s ? &mi->q[i] :
						   &mi->q[p->ntx + i - mi->run_c2s];
		q->ifd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->ifd < 0) {
			snprintf(why, wl, "eventfd: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The next of INIT's followers: ADD_REGION 0 (rings), ADD_REGION 1
 * (pool), ADD_RING for every ring, then CONNECT. One per ACK. */
static int cli_send_step(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	struct mif_msg m;
	memset(&m, 0, sizeof(m));
	uint32_t s = mi->step++;
	uint32_t nr = mi->run_c2s + mi->run_s2c;
	if (s < 2) {
		m.type = MIF_MSG_ADD_REGION;
		m.add_region.index = (uint16_t)s;
		m.add_region.size = s == 0 ? mi->rsize : p->region.size;
		return mif_send(mi, &m, s == 0 ? mi->rfd : p->region.mfd);
	}
	if (s < 2 + nr) {
		uint32_t i = s - 2;
		bool c2s = i < mi->run_c2s;
		struct mif_q *q = c2s ? &mi->q[i] : &mi->q[p->ntx + i - mi->run_c2s];
		m.type = MIF_MSG_ADD_RING;
		m.add_ring.flags = c2s ? MIF_ADD_RING_C2S : 0;
		m.add_ring.index = (uint16_t)(c2s ? i : i - mi->run_c2s);
		m.add_ring.region = 0;
		m.add_ring.offset = (uint32_t)(i * mif_ring_bytes(mi->run_log2));
		m.add_ring.log2_ring_size = (uint8_t)mi->run_log2;
		return mif_send(mi, &m, q->ifd);
	}
	m.type = MIF_MSG_CONNECT;
	snprintf((char *)m.if_name, sizeof(m.if_name), "pktmap");
	atomic_store_explicit(&mi->state, MIF_CONNECTING, memory_order_release);
	return mif_send(mi, &m, -1);
}

static int cli_hello(struct pktmap_port *p, const struct mif_msg *m, char *why,
		     size_t wl)
{
	struct mif_priv *mi = mif(p);
	const struct mif_hello *h = &m->hello;
	if (h->min_version > MIF_VERSION || h->max_version < MIF_VERSION) {
		snprintf(why, wl, "the server speaks memif %u.%u to %u.%u, we 2.0",
			 h->min_version >> 8, h->min_version & 0xff,
			 h->max_version >> 8, h->max_version & 0xff);
		return -1;
	}
	if (h->max_region < 1) {
		snprintf(why, wl, "the server takes one region, we need two");
		return -1;
	}
	memcpy(mi->peer_name, h->name, MIF_NAME_SZ);
	mi->peer_name[MIF_NAME_SZ] = 0;
	pm_printable(mi->peer_name, sizeof(mi->peer_name), mi->peer_name);
	mi->run_c2s = h->max_c2s_ring + 1u < mi->nq ? h->max_c2s_ring + 1u : mi->nq;
	mi->run_s2c = h->max_s2c_ring + 1u < mi->nq ? h->max_s2c_ring + 1u : mi->nq;
	mi->run_log2 = h->max_log2_ring_size < mi->log2 ? h->max_log2_ring_size :
							  mi->log2;
	if (mi->run_log2 < 1) {
		snprintf(why, wl, "the server allows rings of %u descriptor",
			 1u << mi->run_log2);
		return -1;
	}
	if (cli_rings_make(p, why, wl))
		return -1;
	struct mif_msg r;
	memset(&r, 0, sizeof(r));
	r.type = MIF_MSG_INIT;
	r.init.version = MIF_VERSION;
	r.init.id = mi->id;
	r.init.mode = 0;
	memcpy(r.init.secret, mi->secret, strlen(mi->secret));
	snprintf((char *)r.init.name, sizeof(r.init.name), "pktmap");
	int ret = mif_send(mi, &r, -1);
	if (ret) {
		snprintf(why, wl, "cannot send INIT: %s", strerror(-ret));
		return -1;
	}
	mi->step = 0;
	atomic_store_explicit(&mi->state, MIF_SETUP, memory_order_release);
	return 0;
}

static int cli_msg(struct pktmap_port *p, const struct mif_msg *m, int fd,
		   char *why, size_t wl)
{
	struct mif_priv *mi = mif(p);
	int st = atomic_load_explicit(&mi->state, memory_order_acquire);
	if (fd >= 0) {
		close(fd);
		snprintf(why, wl, "the server sent a file descriptor with "
			 "message %u", m->type);
		return -1;
	}
	if (st == MIF_HELLO && m->type == MIF_MSG_HELLO)
		return cli_hello(p, m, why, wl);
	if (st == MIF_SETUP && m->type == MIF_MSG_ACK) {
		int ret = cli_send_step(p);
		if (ret)
			snprintf(why, wl, "cannot send: %s", strerror(-ret));
		return ret ? -1 : 0;
	}
	if (st == MIF_CONNECTING && m->type == MIF_MSG_CONNECTED) {
		mi->attach(p);
		set_state(p, MIF_UP);
		pm_stat_inc(&mi->connects, 1);
		pm_log(p, PKTMAP_LOG_INFO, "%s: connected to %s (%s): %u+%u "
		       "rings of %u", p->name, mi->where, mi->peer_name,
		       mi->run_c2s, mi->run_s2c, 1u << mi->run_log2);
		return 0;
	}
	snprintf(why, wl, "unexpected message type %u in handshake step %d",
		 m->type, st);
	return -1;
}

static void cli_try_connect(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	mi->next_try_ms = mif_now_ms() + MIF_RETRY_MS;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&mi->addr, mi->addrlen) != 0) {
		int e = errno;
		close(fd);
		if (e != mi->down_errno)
			pm_log(p, PKTMAP_LOG_INFO, "%s: waiting for a memif server "
			       "at %s (%s); retrying every %d ms", p->name,
			       mi->where, strerror(e), MIF_RETRY_MS);
		mi->down_errno = e;
		return;
	}
	mi->down_errno = 0;
	mi->cfd = fd;
	char why[200];
	if (peer_ok(mi, why, sizeof(why))) {
		pm_log_ratelimited(p, &mi->rl, "%s: %s", p->name, why);
		pm_stat_inc(&mi->peer_errors, 1);
		close(mi->cfd);
		mi->cfd = -1;
		return;
	}
	ep_add(mi, fd);
	mi->deadline_ms = mif_now_ms() + MIF_HANDSHAKE_MS;
	atomic_store_explicit(&mi->state, MIF_HELLO, memory_order_release);
}

/* ------------------------------------------------------------------ */
/* Server: the peer's regions and rings, checked before they are used. */

/* Map a region the peer hands over: it must be a memfd sealed against
 * shrinking (else the peer could cut it under us: SIGBUS), at least as
 * large as it says. The peer can still punch holes in it, and on
 * hugetlbfs take the free huge pages: the mapping is guarded (guard.h),
 * so that a page lost is a disconnect, not our death. */
static int srv_add_region(struct pktmap_port *p, const struct mif_msg *m,
			  int fd, char *why, size_t wl)
{
	struct mif_priv *mi = mif(p);
	uint16_t idx = m->add_region.index;
	uint64_t size = m->add_region.size;
	struct stat st;
	if (fd < 0) {
		snprintf(why, wl, "ADD_REGION without a file descriptor");
		return -1;
	}
	int ok = idx == mi->nreg && idx < MIF_MAX_REGIONS;
	if (!ok) {
		snprintf(why, wl, "ADD_REGION %u out of order or beyond %u", idx,
			 MIF_MAX_REGIONS);
	} else if (size == 0 || size > MIF_MAX_REGION_SIZE) {
		snprintf(why, wl, "region %u of %llu bytes", idx,
			 (unsigned long long)size);
		ok = 0;
	} else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		   (uint64_t)st.st_size < size) {
		snprintf(why, wl, "region %u: its file is not a regular file of "
			 "at least %llu bytes", idx, (unsigned long long)size);
		ok = 0;
	} else {
		int seals = fcntl(fd, F_GET_SEALS);
		if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
			snprintf(why, wl, "region %u is not a memfd sealed against "
				 "shrinking (F_SEAL_SHRINK): the peer could cut it "
				 "while we read it (a DPDK peer: use zero-copy=no)",
				 idx);
			ok = 0;
		}
	}
	if (!ok) {
		close(fd);
		return -1;
	}
	void *b = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED) {
		snprintf(why, wl, "cannot map region %u (%llu bytes): %s", idx,
			 (unsigned long long)size, strerror(errno));
		close(fd);
		return -1;
	}
	int g = pm_guard_add(b, size, fd, &mi->lost);
	if (g < 0) {
		snprintf(why, wl, "cannot guard region %u: %s", idx, strerror(-g));
		munmap(b, size);
		close(fd);
		return -1;
	}
	mi->reg[idx].base = b;
	mi->reg[idx].size = size;
	mi->reg[idx].guard = g + 1;
	mi->regfd[idx] = fd;
	mi->nreg++;
	return 0;
}

/* An eventfd of the peer's, made non-blocking so that a write to it can
 * never hang us. Anything else is refused. */
static int is_eventfd(int fd)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	if (strcmp(link, "anon_inode:[eventfd]") != 0)
		return 0;
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

static int srv_add_ring(struct pktmap_port *p, const struct mif_msg *m, int fd,
			char *why, size_t wl)
{
	struct mif_priv *mi = mif(p);
	const struct mif_add_ring *a = &m->add_ring;
	int c2s = (a->flags & MIF_ADD_RING_C2S) != 0;
	struct mif_ring_req *rq = a->index < mi->nq ? &mi->req[!c2s][a->index] : NULL;
	if (fd < 0 || !is_eventfd(fd))
		snprintf(why, wl, "ADD_RING %s %u without an eventfd",
			 c2s ? "C2S" : "S2C", a->index);
	else if (!rq || rq->set)
		snprintf(why, wl, "ADD_RING %s %u: no such ring here (%u per "
			 "direction) or given twice", c2s ? "C2S" : "S2C",
			 a->index, mi->nq);
	else if (a->flags & ~MIF_ADD_RING_C2S)
		snprintf(why, wl, "ADD_RING with unknown flags 0x%x", a->flags);
	else if (a->log2_ring_size < 1 || a->log2_ring_size > MIF_MAX_LOG2)
		snprintf(why, wl, "ring of 2^%u descriptors", a->log2_ring_size);
	else if (a->region >= mi->nreg ||
		 (uint64_t)a->offset + mif_ring_bytes(a->log2_ring_size) >
			 mi->reg[a->region].size || (a->offset & 15))
		snprintf(why, wl, "ring %s %u at offset %u of region %u lies "
			 "outside the regions given", c2s ? "C2S" : "S2C",
			 a->index, a->offset, a->region);
	else {
		rq->set = true;
		rq->region = a->region;
		rq->offset = a->offset;
		rq->log2 = a->log2_ring_size;
		rq->fd = fd;
		return 0;
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

/* CONNECT: the rings given must be 0..n-1 in each direction, all of one
 * size, each with the memif cookie. */
static int srv_connect(struct pktmap_port *p, char *why, size_t wl)
{
	struct mif_priv *mi = mif(p);
	uint32_t n[2] = { 0, 0 };
	int log2 = -1;
	for (int d = 0; d < 2; d++) {
		while (n[d] < mi->nq && mi->req[d][n[d]].set)
			n[d]++;
		for (uint32_t i = n[d]; i < mi->nq; i++)
			if (mi->req[d][i].set) {
				snprintf(why, wl, "%s rings are not 0..N-1",
					 d ? "S2C" : "C2S");
				return -1;
			}
		for (uint32_t i = 0; i < n[d]; i++) {
			struct mif_ring_req *rq = &mi->req[d][i];
			if (log2 >= 0 && rq->log2 != log2) {
				snprintf(why, wl, "rings of different sizes");
				return -1;
			}
			log2 = rq->log2;
			struct mif_ring *r = (struct mif_ring *)(mi->reg[rq->region].base +
								 rq->offset);
			if (PM_READ_ONCE(r->cookie) != MIF_COOKIE) {
				snprintf(why, wl, "ring %s %u has no memif cookie",
					 d ? "S2C" : "C2S", i);
				return -1;
			}
		}
	}
	if (!n[0] && !n[1]) {
		snprintf(why, wl, "CONNECT without rings");
		return -1;
	}
	mi->run_c2s = n[0];
	mi->run_s2c = n[1];
	mi->run_log2 = (uint32_t)log2;
	mi->attach(p);
	struct mif_msg m;
	memset(&m, 0, sizeof(m));
	m.type = MIF_MSG_CONNECTED;
	snprintf((char *)m.if_name, sizeof(m.if_name), "pktmap");
	int ret = mif_send(mi, &m, -1);
	if (ret) {
		snprintf(why, wl, "cannot send CONNECTED: %s", strerror(-ret));
		return -1;
	}
	set_state(p, MIF_UP);
	pm_stat_inc(&mi->connects, 1);
	pm_log(p, PKTMAP_LOG_INFO, "%s: %s connected: %u+%u rings of %u",
	       p->name, mi->peer_name, mi->run_c2s, mi->run_s2c, 1u << mi->run_log2);
	return 0;
}

static int srv_init(struct pktmap_port *p, const struct mif_msg *m, char *why,
		    size_t wl)
{
	struct mif_priv *mi = mif(p);
	const struct mif_init *in = &m->init;
	char sec[MIF_SECRET_SZ + 1];
	memcpy(sec, in->secret, MIF_SECRET_SZ);
	sec[MIF_SECRET_SZ] = 0;
	memcpy(mi->peer_name, in->name, MIF_NAME_SZ);
	mi->peer_name[MIF_NAME_SZ] = 0;
	pm_printable(mi->peer_name, sizeof(mi->peer_name), mi->peer_name);
	if (in->version != MIF_VERSION)
		snprintf(why, wl, "the client speaks memif %u.%u, we 2.0",
			 in->version >> 8, in->version & 0xff);
	else if (in->id != mi->id)
		snprintf(why, wl, "the client asks for interface id %u, this is %u",
			 in->id, mi->id);
	else if (in->mode != 0)
		snprintf(why, wl, "the client asks for mode %u; only Ethernet (0)",
			 in->mode);
	else if (strcmp(sec, mi->secret) != 0)
		snprintf(why, wl, "the client's secret does not match");
	else {
		int ret = send_simple(mi, MIF_MSG_ACK);
		if (ret)
			snprintf(why, wl, "cannot send ACK: %s", strerror(-ret));
		atomic_store_explicit(&mi->state, MIF_SETUP, memory_order_release);
		return ret ? -1 : 0;
	}
	return -1;
}

static int srv_msg(struct pktmap_port *p, const struct mif_msg *m, int fd,
		   char *why, size_t wl)
{
	struct mif_priv *mi = mif(p);
	int st = atomic_load_explicit(&mi->state, memory_order_acquire), ret = -1;
	if (st == MIF_HELLO && m->type == MIF_MSG_INIT && fd < 0)
		return srv_init(p, m, why, wl);
	if (st == MIF_SETUP && m->type == MIF_MSG_ADD_REGION)
		ret = srv_add_region(p, m, fd, why, wl);
	else if (st == MIF_SETUP && m->type == MIF_MSG_ADD_RING)
		ret = srv_add_ring(p, m, fd, why, wl);
	else if (st == MIF_SETUP && m->type == MIF_MSG_CONNECT && fd < 0)
		return srv_connect(p, why, wl);
	else {
		if (fd >= 0)
			close(fd);
		snprintf(why, wl, "unexpected message type %u in handshake step %d",
			 m->type, st);
		return -1;
	}
	if (ret == 0) {
		ret = send_simple(mi, MIF_MSG_ACK);
		if (ret)
			snprintf(why, wl, "cannot send ACK: %s", strerror(-ret));
	}
	return ret ? -1 : 0;
}

/* Refuse a connection: one DISCONNECT with the reason, then close. */
static void refuse(int fd, const char *reason)
{
	struct mif_msg m;
	memset(&m, 0, sizeof(m));
	m.type = MIF_MSG_DISCONNECT;
	snprintf((char *)m.disconnect.string, sizeof(m.disconnect.string), "%s",
		 reason);
	(void)send(fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

static void srv_accept(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	for (int i = 0; i < 8; i++) {
		int fd = accept4(mi->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (mi->cfd >= 0) {
			refuse(fd, "interface already connected");
			pm_stat_inc(&mi->peer_errors, 1);
			pm_log_ratelimited(p, &mi->rl, "%s: refused a second client "
					   "on %s: the interface is connected",
					   p->name, mi->where);
			continue;
		}
		mi->cfd = fd;
		char why[200];
		if (peer_ok(mi, why, sizeof(why))) {
			pm_log_ratelimited(p, &mi->rl, "%s: %s", p->name, why);
			pm_stat_inc(&mi->peer_errors, 1);
			refuse(fd, "permission denied");
			mi->cfd = -1;
			continue;
		}
		struct mif_msg m;
		memset(&m, 0, sizeof(m));
		m.type = MIF_MSG_HELLO;
		snprintf((char *)m.hello.name, sizeof(m.hello.name), "pktmap");
		m.hello.min_version = m.hello.max_version = MIF_VERSION;
		m.hello.max_region = MIF_MAX_REGIONS - 1;
		m.hello.max_c2s_ring = (uint16_t)(mi->nq - 1);
		m.hello.max_s2c_ring = (uint16_t)(mi->nq - 1);
		m.hello.max_log2_ring_size = (uint8_t)mi->log2;
		if (mif_send(mi, &m, -1) != 0) {
			close(fd);
			mi->cfd = -1;
			continue;
		}
		ep_add(mi, fd);
		snprintf(mi->peer_name, sizeof(mi->peer_name), "a client");
		mi->deadline_ms = mif_now_ms() + MIF_HANDSHAKE_MS;
		atomic_store_explicit(&mi->state, MIF_HELLO, memory_order_release);
	}
}

/* ------------------------------------------------------------------ */

/* Frames lost with a peer so far, all rings (counted in drop_backend). */
static uint64_t mif_lost(const struct pktmap_port *p)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < p->ntx + p->nrx; i++)
		n += pm_stat_read(&p->krings[i].st->drop_backend);
	return n;
}

void mif_disconnect(struct pktmap_port *p, const char *why, bool tell)
{
	struct mif_priv *mi = mif(p);
	int st = atomic_load_explicit(&mi->state, memory_order_acquire);
	uint64_t lost0 = mif_lost(p);
	if (st == MIF_UP)
		mi->detach(p);
	if (tell && mi->cfd >= 0) {
		struct mif_msg m;
		memset(&m, 0, sizeof(m));
		m.type = MIF_MSG_DISCONNECT;
		snprintf((char *)m.disconnect.string, sizeof(m.disconnect.string),
			 "%s", why);
		(void)mif_send(mi, &m, -1);
	}
	ep_close(mi, &mi->cfd);
	for (uint32_t i = 0; i < p->ntx + p->nrx; i++)
		ep_close(mi, &mi->q[i].ifd);
	for (uint32_t i = 0; i < mi->nreg; i++) {
		pm_guard_del(mi->reg[i].guard - 1);
		mi->reg[i].guard = 0;
		munmap(mi->reg[i].base, mi->reg[i].size);
		close(mi->regfd[i]);
	}
	mi->nreg = 0;
	atomic_store_explicit(&mi->lost, 0, memory_order_relaxed);
	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < mi->nq; i++) {
			if (mi->req[d][i].set && mi->req[d][i].fd >= 0)
				close(mi->req[d][i].fd);
			mi->req[d][i].set = false;
			mi->req[d][i].fd = -1;
		}
	if (mi->rbase) {
		munmap(mi->rbase, mi->rsize);
		close(mi->rfd);
		mi->rbase = NULL;
		mi->rfd = -1;
	}
	set_state(p, MIF_DOWN);
	mi->next_try_ms = mif_now_ms() + MIF_RETRY_MS;
	if (st == MIF_DOWN)
		return;
	pm_stat_inc(&mi->disconnects, 1);
	uint64_t lost = mif_lost(p) - lost0;
	/* A peer failing the same way again and again (a client retrying
	 * every 100 ms against a server that says "ID not found") gets one
	 * line a second; another reason is said at once. */
	int64_t now = mif_now_ms();
	if (st != MIF_UP && strcmp(why, mi->last_why) == 0 &&
	    now - mi->last_why_ms < 1000) {
		mi->why_repeats++;
		return;
	}
	char more[48] = "";
	if (mi->why_repeats)
		snprintf(more, sizeof(more), " (and %u more like it)", mi->why_repeats);
	snprintf(mi->last_why, sizeof(mi->last_why), "%s", why);
	mi->last_why_ms = now;
	mi->why_repeats = 0;
	pm_log(p, st == MIF_UP ? PKTMAP_LOG_INFO : PKTMAP_LOG_WARN,
	       "%s: %s: %s%s%s; %llu frame%s in flight lost (counted in "
	       "drop_backend)", p->name, mi->where, st == MIF_UP ?
	       "disconnected: " : "handshake failed: ", why, more,
	       (unsigned long long)lost, lost == 1 ? "" : "s");
}

static void handle_one(struct pktmap_port *p, const struct mif_msg *m, int fd)
{
	struct mif_priv *mi = mif(p);
	char why[240] = "";
	if (m->type == MIF_MSG_DISCONNECT) {
		if (fd >= 0)
			close(fd);
		char s[97];
		memcpy(s, m->disconnect.string, 96);
		s[96] = 0;
		pm_printable(s, sizeof(s), s);
		snprintf(why, sizeof(why), "the peer said: %s", s[0] ? s : "bye");
		mif_disconnect(p, why, false);
		return;
	}
	int st = atomic_load_explicit(&mi->state, memory_order_acquire);
	int ret;
	if (st == MIF_UP) {
		if (fd >= 0)
			close(fd);
		snprintf(why, sizeof(why), "message type %u after CONNECT", m->type);
		ret = -1;
	} else {
		ret = mi->server ? srv_msg(p, m, fd, why, sizeof(why)) :
				   cli_msg(p, m, fd, why, sizeof(why));
	}
	if (ret) {
		pm_stat_inc(&mi->peer_errors, 1);
		mif_disconnect(p, why, true);
	}
}

void mif_service(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	int64_t now = mif_now_ms();
	atomic_store_explicit(&mi->ctl_due, 0, memory_order_relaxed);
	atomic_store_explicit(PM_ATOMIC(&mi->next_service_ms),
			      now + MIF_SERVICE_MS, memory_order_relaxed);
	if (atomic_exchange_explicit(&mi->fault, 0, memory_order_relaxed) &&
	    atomic_load_explicit(&mi->state, memory_order_acquire) != MIF_DOWN) {
		pm_stat_inc(&mi->peer_errors, 1);
		mif_disconnect(p, "the peer broke the ring protocol", true);
	}
	if (atomic_load_explicit(&mi->lost, memory_order_relaxed) &&
	    atomic_load_explicit(&mi->state, memory_order_acquire) != MIF_DOWN) {
		pm_stat_inc(&mi->peer_errors, 1);
		mif_disconnect(p, "the peer took back memory of a region it gave "
			       "us (punched a hole in it: SIGBUS, caught)", true);
	}
	if (mi->server)
		srv_accept(p);
	else if (atomic_load_explicit(&mi->state, memory_order_acquire) ==
		 MIF_DOWN && now >= mi->next_try_ms)
		cli_try_connect(p);
	for (int i = 0; mi->cfd >= 0 && i < MIF_MSGS_PER_SERVICE; i++) {
		struct mif_msg m;
		int fd;
		int r = mif_recv(mi, &m, &fd);
		if (r == 0)
			break;
		if (r < 0) {
			char why[120];
			if (r == -EPROTO) {
				pm_stat_inc(&mi->peer_errors, 1);
				snprintf(why, sizeof(why), "a malformed control "
					 "message (not 128 bytes, or truncated)");
			} else {
				snprintf(why, sizeof(why), "the control channel "
					 "closed (%s)", strerror(-r));
			}
			mif_disconnect(p, why, r == -EPROTO);
			break;
		}
		handle_one(p, &m, fd);
		if (i + 1 == MIF_MSGS_PER_SERVICE)
			/* more next time */
			atomic_store_explicit(&mi->ctl_due, 1,
					      memory_order_relaxed);
	}
	int st = atomic_load_explicit(&mi->state, memory_order_acquire);
	if (st != MIF_DOWN && st != MIF_UP && now > mi->deadline_ms) {
		pm_stat_inc(&mi->peer_errors, 1);
		mif_disconnect(p, "the peer did not finish the handshake in "
			       "3000 ms", true);
	}
	if (mi->events)
		mif_arm_ctl_timer(p);
}

/* Parse SOCKET[/ID]: a path, "@NAME" (an abstract name), or a path used
 * as an abstract name with @conf:abstract=1 (DPDK's socket-abstract). */
static int parse_where(struct pktmap_port *p, const char *body, int abstract)
{
	struct mif_priv *mi = mif(p);
	char b[PM_NAME_MAX];
	snprintf(b, sizeof(b), "%s", body);
	char *sl = strrchr(b, '/');
	if (sl && sl != b && sl[1] && strspn(sl + 1, "0123456789") == strlen(sl + 1)) {
		unsigned long v = strtoul(sl + 1, NULL, 10);
		if (strlen(sl + 1) > 10 || v > UINT32_MAX)
			return pm_open_error(p, -EINVAL, "interface id '%s' is not a "
					     "32-bit number", sl + 1);
		mi->id = (uint32_t)v;
		*sl = 0;
	}
	const char *name = b;
	bool abs = abstract == 1;
	if (b[0] == '@') {
		abs = true;
		name = b + 1;
	}
	size_t n = strlen(name);
	if (n == 0 || n >= sizeof(mi->addr.sun_path) - 1)
		return pm_open_error(p, -EINVAL, "the socket name must have 1 to %zu "
				     "characters", sizeof(mi->addr.sun_path) - 2);
	mi->addr.sun_family = AF_UNIX;
	memcpy(mi->addr.sun_path + (abs ? 1 : 0), name, n);
	/* An abstract name is as long as it is (no trailing zeros), as
	 * DPDK and VPP bind and connect it. */
	mi->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	snprintf(mi->where, sizeof(mi->where), "%s%s id %u", abs ? "@" : "", name,
		 mi->id);
	return 0;
}

/* Open the directory of the socket path once, and name the socket
 * through it: *via is "/proc/self/fd/DIR/NAME" when that fits in a
 * socket address (else the path as given). A server removes a stale
 * socket and its own at close with unlinkat() in that directory, after
 * fstatat() there: another user who may write a directory of the path
 * and swaps it for a symbolic link between the look and the unlink (or
 * between the bind and the close) cannot make us delete a file of ours
 * elsewhere (issue 30). */
static int sock_dir_open(struct pktmap_port *p, struct sockaddr_un *via,
			 socklen_t *vialen)
{
	struct mif_priv *mi = mif(p);
	char dir[sizeof(mi->addr.sun_path)];
	snprintf(dir, sizeof(dir), "%s", mi->addr.sun_path);
	char *sl = strrchr(dir, '/');
	const char *base = sl ? sl + 1 : dir;
	snprintf(mi->base, sizeof(mi->base), "%s", base);
	if (!sl)
		snprintf(dir, sizeof(dir), ".");
	else if (sl == dir)
		dir[1] = 0;
	else
		*sl = 0;
	if (!mi->base[0] || strcmp(mi->base, ".") == 0 ||
	    strcmp(mi->base, "..") == 0)
		return pm_open_error(p, -EINVAL, "%s: the socket needs a file "
				     "name", mi->addr.sun_path);
	mi->dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* A directory named through a link of ours or root's (/var/run ->
	 * /run) is followed; one another user made is not. */
	struct stat ls;
	if (mi->dirfd < 0 && errno == ENOTDIR && lstat(dir, &ls) == 0 &&
	    S_ISLNK(ls.st_mode) && (ls.st_uid == 0 || ls.st_uid == geteuid()))
		mi->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (mi->dirfd < 0 && errno == ENOTDIR && lstat(dir, &ls) == 0 &&
		 S_ISLNK(ls.st_mode))
		errno = ELOOP;
	if (mi->dirfd < 0)
		return pm_open_error(p, -errno, "cannot open the socket's "
				     "directory %s: %s%s", dir, strerror(errno),
				     errno == ELOOP ? " (a symbolic link of "
				     "another user's: name the directory "
				     "itself)" : "");
	*via = mi->addr;
	*vialen = mi->addrlen;
	struct sockaddr_un v = { .sun_family = AF_UNIX };
	int n = snprintf(v.sun_path, sizeof(v.sun_path), "/proc/self/fd/%d/%s",
			 mi->dirfd, mi->base);
	char pd[32];
	snprintf(pd, sizeof(pd), "/proc/self/fd/%d", mi->dirfd);
	struct stat st;
	if (n > 0 && (size_t)n < sizeof(v.sun_path) && stat(pd, &st) == 0 &&
	    S_ISDIR(st.st_mode)) {
		*via = v;
		*vialen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				      (size_t)n + 1);
	}
	return 0;
}

/* A path socket left by a dead server of ours is removed; one a live
 * server listens on, or a file that is not a socket, is an error. */
static int srv_bind_path(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	const char *path = mi->addr.sun_path;
	struct sockaddr_un via;
	socklen_t vialen = 0;
	int ret = sock_dir_open(p, &via, &vialen);
	if (ret)
		return ret;
	struct stat st;
	if (fstatat(mi->dirfd, mi->base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return pm_open_error(p, -EEXIST, "%s exists and is not a "
					     "socket: remove it or pick another name",
					     path);
		int t = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		int r = t >= 0 ? connect(t, (struct sockaddr *)&via, vialen) : 0;
		int e = errno;
		if (t >= 0)
			close(t);
		if (r == 0 || e != ECONNREFUSED)
			return pm_open_error(p, -EADDRINUSE, "%s is in use by another "
					     "memif server: stop it or pick another "
					     "socket", path);
		if (st.st_uid != geteuid())
			return pm_open_error(p, -EPERM, "%s is a dead socket of uid "
					     "%u: not ours to remove", path,
					     (unsigned)st.st_uid);
		struct stat again;
		if (fstatat(mi->dirfd, mi->base, &again, AT_SYMLINK_NOFOLLOW) == 0 &&
		    again.st_dev == st.st_dev && again.st_ino == st.st_ino)
			(void)unlinkat(mi->dirfd, mi->base, 0);
	}
	if (bind(mi->lfd, (struct sockaddr *)&via, vialen) != 0)
		return pm_open_error(p, -errno, "cannot bind %s: %s", path,
				     strerror(errno));
	if (fstatat(mi->dirfd, mi->base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISSOCK(st.st_mode)) {
		mi->bound = true;
		mi->sock_dev = st.st_dev;
		mi->sock_ino = st.st_ino;
	}
	return 0;
}

int mif_ctl_open(struct pktmap_port *p, const char *body, int abstract)
{
	struct mif_priv *mi = mif(p);
	int ret = parse_where(p, body, abstract);
	if (ret)
		return ret;
	mi->epfd = epoll_create1(EPOLL_CLOEXEC);
	mi->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (mi->epfd < 0 || mi->tfd < 0)
		return pm_open_error(p, -errno, "epoll/timerfd: %s", strerror(errno));
	ep_add(mi, mi->tfd);
	p->fd = mi->epfd;
	set_state(p, MIF_DOWN);
	if (!mi->server) {
		cli_try_connect(p);
		return 0;
	}
	mi->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (mi->lfd < 0)
		return pm_open_error(p, -errno, "socket: %s", strerror(errno));
	if (mi->addr.sun_path[0]) {
		ret = srv_bind_path(p);
		if (ret)
			return ret;
	} else if (bind(mi->lfd, (struct sockaddr *)&mi->addr, mi->addrlen) != 0) {
		return pm_open_error(p, -errno, "cannot bind the abstract socket "
				     "%s: %s", mi->where,
				     errno == EADDRINUSE ? "in use by another "
				     "server" : strerror(errno));
	}
	if (listen(mi->lfd, 8) != 0)
		return pm_open_error(p, -errno, "listen: %s", strerror(errno));
	ep_add(mi, mi->lfd);
	return 0;
}

void mif_ctl_close(struct pktmap_port *p)
{
	struct mif_priv *mi = mif(p);
	if (atomic_load_explicit(&mi->state, memory_order_acquire) != MIF_DOWN)
		mif_disconnect(p, "the pktmap port was closed", true);
	ep_close(mi, &mi->cfd);
	if (mi->lfd >= 0) {
		close(mi->lfd);
		mi->lfd = -1;
	}
	/* Remove our socket file, and only ours: the same inode, in the
	 * directory we bound it in. */
	struct stat st;
	if (mi->bound && mi->dirfd >= 0 &&
	    fstatat(mi->dirfd, mi->base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISSOCK(st.st_mode) && st.st_dev == mi->sock_dev &&
	    st.st_ino == mi->sock_ino)
		(void)unlinkat(mi->dirfd, mi->base, 0);
	mi->bound = false;
	if (mi->dirfd >= 0)
		close(mi->dirfd);
	mi->dirfd = -1;
	if (mi->tfd >= 0)
		close(mi->tfd);
	if (mi->epfd >= 0)
		close(mi->epfd);
	mi->tfd = mi->epfd = -1;
	p->fd = -1;
}
