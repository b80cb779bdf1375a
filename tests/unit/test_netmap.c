// SPDX-License-Identifier: BSD-2-Clause
/* The /dev/netmap emulation and libnetmap (compat/netmap) in one process,
 * so that CI runs them under ASan and UBSan: both ends of a pipe opened
 * with nmport_open, packets through NIOC*SYNC and poll/select/epoll, dup
 * and close, the mapping of one memory, port info, and bad requests with
 * netmap's errno. Built as a netmap program is (pkg-config
 * pktmap-netmap): netmap's headers send its open, ioctl, mmap, poll...
 * to libpktmap-netmap's pktmap_nmfd_*(). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <unistd.h>

#include <libnetmap.h>

#include "t.h"

static char name_a[64], name_b[64];
static char last_error[512];

static void keep_error(struct nmctx *ctx, const char *msg)
{
	(void)ctx;
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

/* Open `spec` (an interface that does not exist) and check that the
 * refusal names the pktmap port it was mapped to. */
static void mapped(const char *spec, const char *want)
{
	last_error[0] = 0;
	struct nmport_d *d = nmport_open(spec);
	CHECK(d == NULL, "%s: opened", spec);
	if (d)
		nmport_close(d);
	CHECK(strstr(last_error, want) != NULL, "%s: want '%s' in: %s", spec,
	      want, last_error);
}

/* Send n numbered 64-byte packets from tx to rx, waiting with `how`. */
static void roundtrip(struct nmport_d *tx, struct nmport_d *rx, int n,
		      const char *how)
{
	struct netmap_ring *t = NETMAP_TXRING(tx->nifp, tx->first_tx_ring);
	struct netmap_ring *r = NETMAP_RXRING(rx->nifp, rx->first_rx_ring);
	int sent = 0, got = 0, bad = 0, ep = -1;
	if (!strcmp(how, "epoll")) {
		ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = rx->fd };
		CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, rx->fd, &ev) == 0, "epoll_ctl");
		CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, rx->fd, &ev) < 0 &&
		      errno == EEXIST, "second ADD: EEXIST");
	}
	while (got < n) {
		/* reclaim what the receiver gave back, then fill */
		CHECK(ioctl(tx->fd, NIOCTXSYNC, NULL) == 0, "NIOCTXSYNC");
		while (sent < n && !nm_ring_empty(t)) {
			struct netmap_slot *s = &t->slot[t->head];
			memcpy(NETMAP_BUF(t, s->buf_idx), &sent, sizeof(sent));
			s->len = 64;
			t->head = t->cur = nm_ring_next(t, t->head);
			sent++;
		}
		CHECK(ioctl(tx->fd, NIOCTXSYNC, NULL) == 0, "NIOCTXSYNC");
		int ready;
		if (!strcmp(how, "poll")) {
			struct pollfd p = { .fd = rx->fd, .events = POLLIN };
			ready = poll(&p, 1, 5000);
			CHECK(ready != 1 || p.revents == POLLIN, "revents %x", p.revents);
		} else if (!strcmp(how, "select")) {
			fd_set rs;
			FD_ZERO(&rs);
			FD_SET(rx->fd, &rs);
			struct timeval tv = { .tv_sec = 5 };
			ready = select(rx->fd + 1, &rs, NULL, NULL, &tv);
			CHECK(ready != 1 || FD_ISSET(rx->fd, &rs), "select set");
		} else {
			struct epoll_event ev;
			ready = epoll_wait(ep, &ev, 1, 5000);
			CHECK(ready != 1 || ev.data.fd == rx->fd, "epoll data");
		}
		if (ready != 1) {
			CHECK(0, "%s: nothing ready after %d of %d", how, got, n);
			break;
		}
		while (!nm_ring_empty(r)) {
			int seq;
			struct netmap_slot *s = &r->slot[r->head];
			memcpy(&seq, NETMAP_BUF(r, s->buf_idx), sizeof(seq));
			bad += seq != got || s->len != 64;
			got++;
			r->head = r->cur = nm_ring_next(r, r->head);
		}
		/* give the slots back before the sender (this thread too)
		 * looks for room */
		CHECK(ioctl(rx->fd, NIOCRXSYNC, NULL) == 0, "NIOCRXSYNC");
	}
	CHECK(ioctl(rx->fd, NIOCRXSYNC, NULL) == 0, "NIOCRXSYNC");
	CHECK_EQ(got, n);
	CHECK_EQ(bad, 0);
	if (ep >= 0)
		close(ep);
}

static int ctrl(int fd, const char *name, uint16_t version, uint16_t type,
		void *body)
{
	struct nmreq_header h;
	memset(&h, 0, sizeof(h));
	h.nr_version = version;
	h.nr_reqtype = type;
	h.nr_body = (uintptr_t)body;
	snprintf(h.nr_name, sizeof(h.nr_name), "%s", name);
	return ioctl(fd, NIOCCTRL, &h);
}

int main(void)
{
	setenv("PKTMAP_NETMAP_QUIET", "1", 1);
	nmctx_get()->error = keep_error;

	/* netmap's names -> pktmap's (the interface does not exist, so the
	 * refusal says which port was tried) */
	mapped("netmap:nmtnone0", "xdp:nmtnone0");
	mapped("netmap:nmtnone0-3", "xdp:nmtnone0-3");
	mapped("netmap:nmtnone0^", "xdp:nmtnone0^");
	mapped("netmap:nmtnone0^1", "xdp:nmtnone0^1");
	mapped("netmap:nmtnone0*", "xdp:nmtnone0*");
	mapped("netmap:nmtnone0/R", "xdp:nmtnone0/R");
	mapped("netmap:nmtnone0-1/Tx@7", "xdp:nmtnone0-1/T@7");
	mapped("netmap:nmtnone0@conf:slots=512", "xdp:nmtnone0@conf:tx-slots=512,rx-slots=512");
	setenv("PKTMAP_NETMAP_MAP", "pkt", 1);
	mapped("netmap:nmtnone0", "pkt:nmtnone0");
	setenv("PKTMAP_NETMAP_MAP", "bogus", 1);
	mapped("netmap:nmtnone0", "PKTMAP_NETMAP_MAP=bogus: use xdp or pkt");
	unsetenv("PKTMAP_NETMAP_MAP");
	mapped("valenone0:a", "valenone0:a: switch 'valenone0' is not running");
	mapped("netmap:nmtnone0/t", "no port 'xdp:nmtnone0' is open");
	mapped("netmap:nmtnone0/rt", "no port 'xdp:nmtnone0' is open");
	mapped("netmap:nmtnone0/z", "zero-copy monitors (/z) are not available");
	mapped("netmap:nmtnone0@extmem:file=/x", "extmem");
	nmctx_get()->verbose = 0;
	snprintf(name_a, sizeof(name_a), "netmap:unm%d{0", (int)getpid());
	snprintf(name_b, sizeof(name_b), "netmap:unm%d}0", (int)getpid());

	struct nmport_d *a = nmport_open(name_a);
	struct nmport_d *b = nmport_open(name_b);
	CHECK(a && b, "open both ends: %s", strerror(errno));
	if (!a || !b)
		return t_done("netmap");
	CHECK(a->mem == b->mem, "the two ends of a pipe share one memory");
	CHECK_EQ(a->reg.nr_mem_id, b->reg.nr_mem_id);
	CHECK_EQ(a->first_tx_ring, 0);
	CHECK_EQ(a->last_tx_ring, 0);
	CHECK_EQ(a->first_rx_ring, 0);
	CHECK_EQ(a->last_rx_ring, 0);
	CHECK(a->nifp != b->nifp, "each open has its own netmap_if");
	CHECK(strcmp(a->hdr.nr_name, name_a + 7) == 0, "nr_name without netmap:");

	roundtrip(a, b, 5000, "poll");
	roundtrip(b, a, 5000, "select");
	roundtrip(a, b, 5000, "epoll");

	/* nmport_inject: one short packet, one longer than a buffer (an
	 * NS_MOREFRAG chain of two) */
	static char big[3000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)i;
	CHECK_EQ(nmport_inject(a, "hello", 5), 5);
	CHECK_EQ(nmport_inject(a, big, sizeof(big)), (int)sizeof(big));
	CHECK(ioctl(a->fd, NIOCTXSYNC, NULL) == 0 && ioctl(b->fd, NIOCRXSYNC, NULL) == 0,
	      "sync");
	struct netmap_ring *rr = NETMAP_RXRING(b->nifp, b->first_rx_ring);
	CHECK_EQ(nm_ring_space(rr), 3);
	if (nm_ring_space(rr) == 3) {
		struct netmap_slot *s0 = &rr->slot[rr->head];
		struct netmap_slot *s1 = &rr->slot[nm_ring_next(rr, rr->head)];
		struct netmap_slot *s2 = &rr->slot[nm_ring_next(rr, nm_ring_next(rr, rr->head))];
		CHECK(s0->len == 5 && !memcmp(NETMAP_BUF(rr, s0->buf_idx), "hello", 5),
		      "first packet");
		CHECK(s1->flags & NS_MOREFRAG, "a long packet is a chain");
		CHECK(!(s2->flags & NS_MOREFRAG), "ending in one slot");
		CHECK_EQ(s1->len + s2->len, (int)sizeof(big));
		CHECK(!memcmp(NETMAP_BUF(rr, s1->buf_idx), big, s1->len) &&
		      !memcmp(NETMAP_BUF(rr, s2->buf_idx), big + s1->len, s2->len),
		      "the chain carries the bytes");
		rr->head = rr->cur = rr->tail;
		CHECK(ioctl(b->fd, NIOCRXSYNC, NULL) == 0, "give them back");
	}

	/* nmport_clone: the same request, not open; opening it binds the
	 * same rings as the original (netmap's rule for two opens of one
	 * port), with a netmap_if of its own; "/x" is then refused, and
	 * closing the clone leaves the original working */
	struct nmport_d *cl = nmport_clone(a);
	CHECK(cl != NULL, "clone");
	if (cl) {
		CHECK(cl->fd == -1 && cl->nifp == NULL && !cl->register_done,
		      "a clone is not open");
		CHECK(!strcmp(cl->hdr.nr_name, a->hdr.nr_name) &&
		      cl->reg.nr_mode == a->reg.nr_mode &&
		      cl->hdr.nr_body == (uintptr_t)&cl->reg, "same request");
		CHECK(nmport_open_desc(cl) == 0, "the clone binds the open end: %s",
		      strerror(errno));
		if (cl->nifp) {
			CHECK(cl->nifp != a->nifp, "a netmap_if of its own");
			CHECK(NETMAP_TXRING(cl->nifp, 0) == NETMAP_TXRING(a->nifp, 0) &&
			      NETMAP_RXRING(cl->nifp, 0) == NETMAP_RXRING(a->nifp, 0),
			      "the same rings");
			CHECK_EQ(cl->reg.nr_extra_bufs, 0);
		}
		char xname[80];
		snprintf(xname, sizeof(xname), "%s/x", name_a);
		struct nmport_d *x = nmport_open(xname);
		CHECK(x == NULL && errno == EBUSY, "/x on bound rings: EBUSY");
		if (x)
			nmport_close(x);
		nmport_close(cl);
		roundtrip(a, b, 1000, "poll");
	}

	/* dup shares the open: close the original, the copy still works */
	int fd2 = dup(b->fd);
	CHECK(fd2 >= 0, "dup");
	int fd3 = fcntl(fd2, F_GETFD); /* an ordinary descriptor to the kernel */
	CHECK(fd3 >= 0, "fcntl on the dup");
	CHECK(ioctl(fd2, NIOCRXSYNC, NULL) == 0, "sync through the dup");

	/* close takes a netmap descriptor off the epoll sets it is on, as
	 * the kernel does: the set reports it while open, nothing after */
	{
		int ep = epoll_create1(0), fd4 = dup(b->fd);
		struct epoll_event ev = { .events = EPOLLOUT, .data.fd = fd4 };
		CHECK(ep >= 0 && fd4 >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd4, &ev) == 0,
		      "a dup on an epoll set: %s", strerror(errno));
		CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 1);
		CHECK(ev.data.fd == fd4 && (ev.events & EPOLLOUT), "room to send");
		CHECK_EQ(close(fd4), 0);
		CHECK_EQ(epoll_wait(ep, &ev, 1, 0), 0);
		close(ep);
	}

	/* a second mapping of the same memory is the same address */
	void *m = mmap(NULL, b->reg.nr_memsize, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd2, 0);
	CHECK(m == a->mem->mem, "one mapping per memory");
	CHECK(munmap(m, b->reg.nr_memsize) == 0, "munmap of it");
	CHECK(mmap(NULL, b->reg.nr_memsize + 1, PROT_READ, MAP_SHARED, fd2, 0) ==
	      MAP_FAILED && errno == EINVAL, "mmap larger than nr_memsize");
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, 4096) == MAP_FAILED &&
	      errno == EINVAL, "mmap at an offset");

	/* the legacy API: NIOCGINFO and NIOCREGIF with struct nmreq, on a
	 * pipe of its own; NETMAP_NO_TX_POLL in nr_ringid */
	{
		char lname[32];
		snprintf(lname, sizeof(lname), "unl%d{3", (int)getpid() % 100000);
		int lfd = open("/dev/netmap", O_RDWR);
		struct nmreq nmr;
		memset(&nmr, 0, sizeof(nmr));
		snprintf(nmr.nr_name, sizeof(nmr.nr_name), "%s", lname);
		nmr.nr_version = 11;
		nmr.nr_ringid = NETMAP_NO_TX_POLL;
		nmr.nr_flags = NR_REG_ALL_NIC;
		nmr.nr_arg3 = 100;
		CHECK(lfd >= 0 && ioctl(lfd, NIOCREGIF, &nmr) == 0,
		      "NIOCREGIF: %s", strerror(errno));
		CHECK_EQ(nmr.nr_tx_rings, 1);
		CHECK_EQ(nmr.nr_rx_rings, 1);
		CHECK_EQ(nmr.nr_arg3, 100);
		CHECK(nmr.nr_memsize > nmr.nr_offset, "nr_memsize, nr_offset");
		char *lm = mmap(NULL, nmr.nr_memsize, PROT_READ | PROT_WRITE,
				MAP_SHARED, lfd, 0);
		CHECK(lm != MAP_FAILED, "mmap after NIOCREGIF");
		if (lm != MAP_FAILED) {
			struct netmap_if *ni = NETMAP_IF(lm, nmr.nr_offset);
			CHECK(ni->ni_bufs_head != 0, "extra buffers listed");
			CHECK(ni->ring_ofs[0] != 0 && ni->ring_ofs[1] != 0,
			      "both rings bound");
			munmap(lm, nmr.nr_memsize);
		}
		struct nmreq gi;
		memset(&gi, 0, sizeof(gi));
		snprintf(gi.nr_name, sizeof(gi.nr_name), "%s", lname);
		gi.nr_version = 14;
		CHECK(ioctl(lfd, NIOCGINFO, &gi) == 0 && gi.nr_tx_slots == nmr.nr_tx_slots &&
		      gi.nr_arg2 == nmr.nr_arg2, "NIOCGINFO of the bound port");
		gi.nr_version = 9;
		CHECK(ioctl(lfd, NIOCGINFO, &gi) < 0 && errno == EINVAL &&
		      gi.nr_version == NETMAP_API, "NIOCGINFO, API 9: EINVAL");
		nmr.nr_cmd = NETMAP_BDG_LIST;
		CHECK(ioctl(lfd, NIOCREGIF, &nmr) < 0 && errno == EINVAL,
		      "legacy vale-ctl list of a name that is no valeX:PORT: "
		      "EINVAL");
		close(lfd);
	}

	/* port info on an unbound descriptor */
	int fd = open("/dev/netmap", O_RDWR);
	CHECK(fd >= 0, "open /dev/netmap");
	struct nmreq_port_info_get pi;
	memset(&pi, 0, sizeof(pi));
	CHECK(ctrl(fd, name_a + 7, NETMAP_API, NETMAP_REQ_PORT_INFO_GET, &pi) == 0,
	      "info on a port this process has bound: %s", strerror(errno));
	CHECK_EQ(pi.nr_mem_id, a->reg.nr_mem_id);
	CHECK_EQ(pi.nr_tx_slots, a->reg.nr_tx_slots);
	CHECK_EQ(pi.nr_memsize, a->reg.nr_memsize);
	struct nmreq_register r;
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	CHECK(ctrl(fd, "x", 99, NETMAP_REQ_REGISTER, &r) < 0 && errno == EINVAL,
	      "wrong nr_version: EINVAL");
	CHECK(ctrl(fd, "x", NETMAP_API, 77, &r) < 0 && errno == EINVAL,
	      "unknown reqtype: EINVAL");
	CHECK(ctrl(fd, "valenone1:x", NETMAP_API, NETMAP_REQ_REGISTER, &r) < 0 &&
	      errno == ENXIO, "vale port of a switch not running: ENXIO");
	CHECK(ctrl(fd, "valenone1:x", NETMAP_API, NETMAP_REQ_VALE_LIST, &r) < 0 &&
	      errno == ENXIO, "vale-ctl request, switch not running: ENXIO");
	CHECK(ctrl(fd, "valenone1:x", NETMAP_API,
		   NETMAP_REQ_VALE_POLLING_ENABLE, &r) < 0 &&
	      errno == EOPNOTSUPP, "vale-ctl polling: EOPNOTSUPP");
	CHECK(ioctl(fd, NIOCTXSYNC, NULL) < 0 && errno == ENXIO,
	      "sync unbound: ENXIO");
	CHECK(ioctl(fd, 0x1234, NULL) < 0 && errno == ENOTTY, "other ioctl: ENOTTY");
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECK(poll(&p, 1, 0) == 1 && p.revents == POLLERR, "poll unbound: POLLERR");
	CHECK(close(fd) == 0, "close");
	CHECK(ioctl(fd, NIOCTXSYNC, NULL) < 0 && errno == EBADF, "closed: EBADF");

	/* the last close of an open closes the port: the end can be
	 * opened again */
	CHECK(close(b->fd) == 0, "close the original");
	b->fd = -1;
	CHECK(ioctl(fd2, NIOCTXSYNC, NULL) == 0, "the dup still syncs");
	CHECK(close(fd2) == 0, "close the dup");
	nmport_undo_mmap(b);
	nmport_undo_prepare(b);
	struct nmport_d *c = nmport_open(name_b);
	CHECK(c != NULL, "the slave end again after the last close: %s",
	      strerror(errno));
	if (c) {
		roundtrip(a, c, 2000, "poll");
		nmport_close(c);
	}
	nmport_close(a);
	return t_done("netmap");
}
