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
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
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

/* A request the kernel would copy in: addresses that are not mapped
 * are EFAULT, never a fault in the program (netmap-run or linked alike).
 * Returns how many checks failed. */
static int bad_pointers(const char *pipe)
{
	int fails = t_failed;
	int fd = open("/dev/netmap", O_RDWR);
	CHECK(fd >= 0, "open /dev/netmap");
	void *bad = (void *)(uintptr_t)0x10;
	CHECK(ioctl(fd, NIOCREGIF, bad) < 0 && errno == EFAULT, "NIOCREGIF 0x10");
	CHECK(ioctl(fd, NIOCGINFO, bad) < 0 && errno == EFAULT, "NIOCGINFO 0x10");
	CHECK(ioctl(fd, NIOCCTRL, bad) < 0 && errno == EFAULT, "NIOCCTRL 0x10");
	CHECK(ioctl(fd, NIOCCTRL, NULL) < 0 && errno == EFAULT, "NIOCCTRL NULL");
	/* a header whose last bytes are on a page that is not mapped */
	long pg = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(two != MAP_FAILED && munmap(two + pg, (size_t)pg) == 0, "a hole");
	struct nmreq_header h;
	memset(&h, 0, sizeof(h));
	h.nr_version = NETMAP_API;
	h.nr_reqtype = NETMAP_REQ_REGISTER;
	snprintf(h.nr_name, sizeof(h.nr_name), "%s", pipe);
	char *edge = two + pg - offsetof(struct nmreq_header, nr_body);
	memcpy(edge, &h, offsetof(struct nmreq_header, nr_body));
	CHECK(ioctl(fd, NIOCCTRL, edge) < 0 && errno == EFAULT,
	      "NIOCCTRL, a header across the end of the mapping");
	/* the body, the options, an option's next */
	struct nmreq_register r;
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	h.nr_body = 0x10;
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EFAULT, "nr_body 0x10");
	h.nr_body = (uintptr_t)(two + pg - 8);
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EFAULT,
	      "nr_body across the end of the mapping");
	h.nr_body = (uintptr_t)&r;
	h.nr_options = 0x10;
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EFAULT, "nr_options 0x10");
	struct nmreq_opt_extmem ext;
	memset(&ext, 0, sizeof(ext));
	ext.nro_opt.nro_reqtype = NETMAP_REQ_OPT_EXTMEM;
	ext.nro_opt.nro_next = 0x10;
	h.nr_options = (uintptr_t)&ext;
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EFAULT, "nro_next 0x10");
	struct nmreq_opt_offsets *off = (void *)(two + pg - sizeof(struct nmreq_option));
	memset(off, 0, sizeof(struct nmreq_option));
	off->nro_opt.nro_reqtype = NETMAP_REQ_OPT_OFFSETS;
	h.nr_options = (uintptr_t)off;
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EFAULT,
	      "an offsets option across the end of the mapping");
	/* an option chain that loops: EINVAL, as netmap's EMSGSIZE-free
	 * check for it */
	ext.nro_opt.nro_next = (uintptr_t)&ext;
	h.nr_options = (uintptr_t)&ext;
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EINVAL, "a loop of options");
	h.nr_options = 0;
	/* an answer that cannot be written back: EFAULT */
	char *ro = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED, "mmap");
	h.nr_reqtype = NETMAP_REQ_PORT_HDR_GET;
	memcpy(ro, &h, sizeof(h));
	((struct nmreq_header *)(void *)ro)->nr_body = (uintptr_t)(ro + 512);
	CHECK(mprotect(ro, (size_t)pg, PROT_READ) == 0, "mprotect");
	CHECK(ioctl(fd, NIOCCTRL, ro) < 0 && errno == EFAULT,
	      "a request in read-only memory");
	/* and the good request still works on this descriptor */
	h.nr_reqtype = NETMAP_REQ_REGISTER;
	h.nr_body = (uintptr_t)&r;
	CHECK(ioctl(fd, NIOCCTRL, &h) == 0, "register after them: %s",
	      strerror(errno));
	CHECK(r.nr_tx_rings == 1 && r.nr_memsize > 0, "the answer copied back");
	munmap(ro, (size_t)pg);
	munmap(two, (size_t)pg);
	close(fd);
	return t_failed - fails;
}

/* The same, where process_vm_readv/writev are refused (a seccomp filter,
 * as a container may have): the emulation copies through a pipe. In a
 * child, which exits with the number of failed checks. */
static void bad_pointers_no_vm(const char *pipe)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		};
		struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
					   .filter = f };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
			perror("seccomp");
			_exit(100);
		}
		char x;
		struct iovec l = { &x, 1 }, rm = { &x, 1 };
		if (process_vm_readv(getpid(), &l, 1, &rm, 1, 0) >= 0 || errno != EPERM)
			_exit(101);
		_exit(bad_pointers(pipe) ? 1 : 0);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "without process_vm_readv: status %#x", st);
}

/* Buffer offsets (NETMAP_REQ_OPT_OFFSETS): a largest offset that would
 * wrap (max + a frame past 2^64) is refused; a TX slot naming no buffer
 * of the region is refused by the sync, before any byte moves; one whose
 * offset is past nro_max_offset is not sent. */
/* One frame waits in rx: 60 bytes of c (the part after the sender's
 * offset); given back. */
static void expect_frame(struct netmap_ring *rx, char c, const char *what)
{
	CHECK_EQ(nm_ring_space(rx), 1);
	if (nm_ring_space(rx) == 1) {
		struct netmap_slot *rs = &rx->slot[rx->head];
		char want[60];
		memset(want, c, sizeof(want));
		CHECK(rs->len == 60 && !memcmp(NETMAP_BUF(rx, rs->buf_idx), want, 60),
		      "%s", what);
		rx->head = rx->cur = rx->tail;
	}
}

static void offsets(const char *pipe, const char *peer)
{
	int fd = open("/dev/netmap", O_RDWR), pfd = open("/dev/netmap", O_RDWR);
	struct nmreq_register r, pr;
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	pr = r;
	struct nmreq_opt_offsets off;
	memset(&off, 0, sizeof(off));
	off.nro_opt.nro_reqtype = NETMAP_REQ_OPT_OFFSETS;
	off.nro_offset_bits = 64;
	off.nro_max_offset = UINT64_MAX - 1000;
	struct nmreq_header h;
	memset(&h, 0, sizeof(h));
	h.nr_version = NETMAP_API;
	h.nr_reqtype = NETMAP_REQ_REGISTER;
	h.nr_body = (uintptr_t)&r;
	h.nr_options = (uintptr_t)&off;
	snprintf(h.nr_name, sizeof(h.nr_name), "%s", pipe);
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EINVAL &&
	      off.nro_opt.nro_status == EINVAL, "nro_max_offset 2^64-1000");
	off.nro_max_offset = 1800; /* + 1514 > 2048: refused by the buffers */
	off.nro_opt.nro_status = 0;
	h.nr_name[strlen(h.nr_name) - 1] = '9'; /* a pipe that creates none */
	off.nro_max_offset = 65536 - 1514 + 1;
	CHECK(ioctl(fd, NIOCCTRL, &h) < 0 && errno == EINVAL,
	      "an offset that leaves no room in a 64 KiB buffer");
	snprintf(h.nr_name, sizeof(h.nr_name), "%s", pipe);
	off.nro_max_offset = 100;
	CHECK(ioctl(fd, NIOCCTRL, &h) == 0, "offsets up to 100: %s",
	      strerror(errno));
	h.nr_options = 0;
	h.nr_body = (uintptr_t)&pr;
	snprintf(h.nr_name, sizeof(h.nr_name), "%s", peer);
	CHECK(ioctl(pfd, NIOCCTRL, &h) == 0, "the peer: %s", strerror(errno));
	char *m = mmap(NULL, r.nr_memsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "mmap");
	if (m == MAP_FAILED)
		return;
	struct netmap_if *nifp = NETMAP_IF(m, r.nr_offset);
	struct netmap_if *pnifp = NETMAP_IF(m, pr.nr_offset);
	struct netmap_ring *t = NETMAP_TXRING(nifp, 0);
	struct netmap_ring *rx = NETMAP_RXRING(pnifp, 0);
	/* a slot whose buffer is none of the region's */
	struct netmap_slot *s = &t->slot[t->head];
	uint32_t good = s->buf_idx;
	s->buf_idx = 0x7ffffff0;
	s->ptr = 50;
	s->len = 60;
	t->head = t->cur = nm_ring_next(t, t->head);
	CHECK(ioctl(fd, NIOCTXSYNC, NULL) == 0,
	      "a TX slot with buf_idx 0x7ffffff0 at an offset: %s", strerror(errno));
	CHECK(ioctl(pfd, NIOCRXSYNC, NULL) == 0, "rxsync");
	CHECK_EQ(nm_ring_space(rx), 0); /* dropped by the checker */
	/* a good slot goes, its bytes from the offset; then one past
	 * nro_max_offset (inside the buffer) is not sent */
	s->buf_idx = good; /* the dropped slot gets its buffer back */
	s = &t->slot[t->head];
	good = s->buf_idx;
	s->ptr = 50;
	s->len = 60;
	t->head = t->cur = nm_ring_next(t, t->head);
	memset(NETMAP_BUF(t, good), 'a', 50);
	memset(NETMAP_BUF(t, good) + 50, 'b', 60);
	CHECK(ioctl(fd, NIOCTXSYNC, NULL) == 0, "a good slot: %s",
	      strerror(errno));
	CHECK(ioctl(pfd, NIOCRXSYNC, NULL) == 0, "rxsync");
	expect_frame(rx, 'b', "the frame from its offset");
	s = &t->slot[t->head];
	s->ptr = 101;
	s->len = 60;
	t->head = t->cur = nm_ring_next(t, t->head);
	ioctl(fd, NIOCTXSYNC, NULL);
	CHECK(ioctl(pfd, NIOCRXSYNC, NULL) == 0, "rxsync");
	CHECK_EQ(nm_ring_space(rx), 0);
	/* an offset near 2^64 (at + len wraps): not sent either */
	s = &t->slot[t->head];
	s->ptr = UINT64_MAX - 10;
	s->len = 60;
	t->head = t->cur = nm_ring_next(t, t->head);
	ioctl(fd, NIOCTXSYNC, NULL);
	CHECK(ioctl(pfd, NIOCRXSYNC, NULL) == 0, "rxsync");
	CHECK_EQ(nm_ring_space(rx), 0);
	/* the program writes over the ring's layout (num_slots, buf_ofs):
	 * the emulation moves the bytes by the layout it set up */
	s = &t->slot[t->head];
	memset(NETMAP_BUF(t, s->buf_idx), 'c', 50);
	memset(NETMAP_BUF(t, s->buf_idx) + 50, 'd', 60);
	s->ptr = 50;
	s->len = 60;
	uint32_t ns = t->num_slots, nh = t->head + 1 == ns ? 0 : t->head + 1;
	int64_t bo = t->buf_ofs;
	*(uint32_t *)(void *)&t->num_slots = UINT32_MAX;
	*(int64_t *)(void *)&t->buf_ofs = INT64_MIN / 2;
	t->head = t->cur = nh;
	CHECK(ioctl(fd, NIOCTXSYNC, NULL) == 0, "a ring whose layout was written "
	      "over: %s", strerror(errno));
	*(uint32_t *)(void *)&t->num_slots = ns;
	*(int64_t *)(void *)&t->buf_ofs = bo;
	CHECK(ioctl(pfd, NIOCRXSYNC, NULL) == 0, "rxsync");
	expect_frame(rx, 'd', "the frame from its offset, by the layout set up");
	munmap(m, r.nr_memsize);
	close(fd);
	close(pfd);
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

	/* bad addresses in requests: EFAULT; offsets that do not fit */
	{
		char bp[40], bq[40];
		snprintf(bp, sizeof(bp), "unb%d{0", (int)getpid() % 100000);
		CHECK_EQ(bad_pointers(bp), 0);
		snprintf(bp, sizeof(bp), "unc%d{0", (int)getpid() % 100000);
		bad_pointers_no_vm(bp);
		snprintf(bp, sizeof(bp), "uno%d{0", (int)getpid() % 100000);
		snprintf(bq, sizeof(bq), "uno%d}0", (int)getpid() % 100000);
		offsets(bp, bq);
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
