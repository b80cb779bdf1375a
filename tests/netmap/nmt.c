/* SPDX-License-Identifier: BSD-2-Clause
 *
 * nmt: a netmap program written for pktmap's tests, against netmap's API
 * only (no pktmap header, no pktmap call). Built twice:
 *
 *   nmt_lib  with libnetmap (nmport_*), linked against libpktmap-netmap
 *            (what `pkg-config pktmap-netmap` gives), run directly;
 *   nmt_raw  with the raw device ABI only (open("/dev/netmap"),
 *            ioctl(NIOCCTRL), mmap, NIOC*SYNC), linking no pktmap library
 *            at all, run under `pktmap netmap-run`.
 *
 *   nmt gen  PORT COUNT LEN [WAIT [MODE]]   send COUNT numbered packets
 *   nmt recv PORT COUNT LEN [WAIT [MODE]]   check every one, in order
 *   nmt fwd  PORT_IN PORT_OUT COUNT [WAIT]  zero-copy: swap buffers
 *   nmt extra PORT COUNT LEN NBUFS [WAIT]   send from NBUFS extra buffers
 *   nmt bad  IFACE                          netmap's errno for bad requests
 *   nmt tlem A B COUNT [WAIT]               as tlem opens its ports: A and B
 *                                           twice each (one binding reads,
 *                                           one writes); copy COUNT from A
 *                                           to B
 *   nmt tlemt A B COUNT                     tlem's threads: the same four
 *                                           opens; one thread reads A and
 *                                           copies to B, syncing by ioctl
 *                                           only (TX reclaimed by a
 *                                           NIOCTXSYNC when B's ring is
 *                                           full), while a second thread
 *                                           loops NIOCRXSYNC on B's other
 *                                           binding (tlem's other
 *                                           direction)
 *   nmt excl PIPE                           "/x" (NR_EXCLUSIVE) against a
 *                                           ring already bound, and back
 *   nmt lb IN OUT N COUNT NBUFS [WAIT]      as lb: N pipes OUT{k/xT in IN's
 *                                           memory, packet s to pipe s % N,
 *                                           zero-copy, every 7th through
 *                                           one of NBUFS extra buffers
 *   nmt lgen  PORT COUNT LEN                 (nmt_lib) send with nm_inject
 *   nmt lrecv PORT COUNT LEN                 (nmt_lib) nm_dispatch/nm_nextpkt
 *   nmt lmem  PORT1 PORT2                    (nmt_lib) nm_open both: one mem?
 *   nmt lshare PORT PIPE                     (nmt_lib) PIPE in PORT's memory
 *   nmt lextra PORT NBUFS                    (nmt_lib) nm_open's nr_arg3
 *
 * NMT_OFFSET=N opens ports with buffer offsets (NETMAP_REQ_OPT_OFFSETS,
 * initial and largest offset N): packets are written and read at
 * NETMAP_BUF_OFFSET() and the receiver checks that they arrive at N.
 * WAIT is poll, select or epoll. MODE "frag": every packet goes as two
 * slots chained by NS_MOREFRAG; "stamp" and "fast" (bench/netmap.py):
 * NMT_STRIDE=N:K: recv expects packets K, K+N, K+2N... (behind nmt lb).
 * NMT_GO=FIFO: gen opens its port, says ready, and sends once a byte
 * comes through FIFO (a monitor, "PORT/t", opens in between: recv on a
 * monitor checks its copies as it checks a receiver's packets).
 * NMT_SEQ=S: gen's sequence numbers start at S (COUNT packets from S on).
 * only the sequence number is written and checked, or nothing at all. Packets: 8-byte sequence number, then
 * byte i = (seq + i) & 0xff. Exit 0 only if every check held.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#ifdef NMT_LIB
#define NETMAP_WITH_LIBS /* the old nm_open() family too */
#include <net/netmap_user.h>
#include <libnetmap.h>
#else
#include <net/netmap_user.h>
#endif

#define MAXPKT 9000

struct port {
	const char *name;
	int fd;
	struct netmap_if *nifp;
	uint16_t mem_id;
	uint32_t extra_bufs;
	unsigned first_tx, last_tx, first_rx, last_rx;
#ifdef NMT_LIB
	struct nmport_d *d;
#else
	void *mem;
	uint64_t memsize;
#endif
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "nmt: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

#ifdef NMT_LIB
static void port_open(struct port *p, const char *name, uint32_t extra)
{
	p->name = name;
	p->d = nmport_prepare(name);
	if (!p->d)
		die("%s: nmport_prepare: %s", name, strerror(errno));
	p->d->reg.nr_extra_bufs = extra;
	const char *eo = getenv("NMT_OFFSET");
	if (eo && nmport_offset(p->d, (uint64_t)atoi(eo), (uint64_t)atoi(eo), 0, 0) < 0)
		die("%s: nmport_offset: %s", name, strerror(errno));
	if (nmport_open_desc(p->d) < 0)
		die("%s: nmport_open_desc: %s", name, strerror(errno));
	p->fd = p->d->fd;
	p->nifp = p->d->nifp;
	p->mem_id = p->d->reg.nr_mem_id;
	p->extra_bufs = p->d->reg.nr_extra_bufs;
	p->first_tx = p->d->first_tx_ring;
	p->last_tx = p->d->last_tx_ring;
	p->first_rx = p->d->first_rx_ring;
	p->last_rx = p->d->last_rx_ring;
}

static void port_close(struct port *p)
{
	nmport_close(p->d);
}
#else
/* "netmap:NAME[/T|/R|/x|/r|/t|/z][@N|@conf:slots=N]": the part of libnetmap's parsing these tests
 * need, by hand. */
static void port_open(struct port *p, const char *name, uint32_t extra)
{
	struct nmreq_header h;
	struct nmreq_register r;
	char buf[NETMAP_REQ_IFNAMSIZ];
	memset(&h, 0, sizeof(h));
	memset(&r, 0, sizeof(r));
	p->name = name;
	snprintf(buf, sizeof(buf), "%s",
		 strncmp(name, "netmap:", 7) == 0 ? name + 7 : name);
	char *at = strchr(buf, '@');
	if (at && !strncmp(at, "@conf:slots=", 12)) {
		r.nr_tx_slots = r.nr_rx_slots = (uint32_t)atoi(at + 12);
		*at = 0;
	} else if (at) {
		r.nr_mem_id = (uint16_t)atoi(at + 1);
		*at = 0;
	}
	char *slash = strchr(buf, '/');
	if (slash) {
		/* monitors: copies of what the port transmits, receives */
		if (strchr(slash, 't'))
			r.nr_flags |= NR_MONITOR_TX;
		if (strchr(slash, 'r'))
			r.nr_flags |= NR_MONITOR_RX;
		if (strchr(slash, 'z'))
			r.nr_flags |= NR_ZCOPY_MON;
		if (strchr(slash, 'T'))
			r.nr_flags |= NR_TX_RINGS_ONLY;
		if (strchr(slash, 'R'))
			r.nr_flags |= NR_RX_RINGS_ONLY;
		if (strchr(slash, 'x'))
			r.nr_flags |= NR_EXCLUSIVE;
		*slash = 0;
	}
	h.nr_version = NETMAP_API;
	h.nr_reqtype = NETMAP_REQ_REGISTER;
	h.nr_body = (uintptr_t)&r;
	memcpy(h.nr_name, buf, sizeof(buf));
	r.nr_mode = NR_REG_ALL_NIC;
	r.nr_extra_bufs = extra;
	static struct nmreq_opt_offsets off;
	const char *eo = getenv("NMT_OFFSET");
	if (eo) {
		/* buffer offsets: packets start NMT_OFFSET bytes in */
		memset(&off, 0, sizeof(off));
		off.nro_opt.nro_reqtype = NETMAP_REQ_OPT_OFFSETS;
		off.nro_initial_offset = off.nro_max_offset = (uint64_t)atoi(eo);
		off.nro_offset_bits = 16;
		h.nr_options = (uintptr_t)&off;
	}
	p->fd = open(NETMAP_DEVICE_NAME, O_RDWR);
	if (p->fd < 0)
		die("%s: %s", NETMAP_DEVICE_NAME, strerror(errno));
	if (ioctl(p->fd, NIOCCTRL, &h) < 0)
		die("%s: NIOCCTRL REGISTER: %s", name, strerror(errno));
	if (eo && (off.nro_opt.nro_status || off.nro_offset_bits != 16))
		die("%s: offsets option: status %u, %u bits", name,
		    off.nro_opt.nro_status, off.nro_offset_bits);
	p->memsize = r.nr_memsize;
	p->mem = mmap(NULL, r.nr_memsize, PROT_READ | PROT_WRITE, MAP_SHARED,
		      p->fd, 0);
	if (p->mem == MAP_FAILED)
		die("%s: mmap: %s", name, strerror(errno));
	p->nifp = NETMAP_IF(p->mem, r.nr_offset);
	p->mem_id = r.nr_mem_id;
	p->extra_bufs = r.nr_extra_bufs;
	/* the bound rings are those the netmap_if lists */
	unsigned ntx = r.nr_tx_rings + p->nifp->ni_host_tx_rings;
	unsigned nrx = r.nr_rx_rings + p->nifp->ni_host_rx_rings;
	unsigned i;
	for (i = 0; i < ntx && !p->nifp->ring_ofs[i]; i++)
		;
	p->first_tx = i;
	for (; i < ntx && p->nifp->ring_ofs[i]; i++)
		;
	p->last_tx = i - 1;
	for (i = 0; i < nrx && !p->nifp->ring_ofs[ntx + i]; i++)
		;
	p->first_rx = i;
	for (; i < nrx && p->nifp->ring_ofs[ntx + i]; i++)
		;
	p->last_rx = i - 1;
}

static void port_close(struct port *p)
{
	if (munmap(p->mem, p->memsize) < 0)
		die("%s: munmap: %s", p->name, strerror(errno));
	close(p->fd);
}
#endif

/* ------------------------------------------------------------------ */
/* Waiting, three ways. */

enum wait_kind { W_POLL, W_SELECT, W_EPOLL, W_POLLMIX };
static int wait_ms = 10000; /* how long a wait may find nothing */
static enum wait_kind wait_kind = W_POLL;
static int epfd = -1;

static void wait_parse(const char *s)
{
	if (!s || !strcmp(s, "poll"))
		wait_kind = W_POLL;
	else if (!strcmp(s, "select"))
		wait_kind = W_SELECT;
	else if (!strcmp(s, "epoll"))
		wait_kind = W_EPOLL;
	else if (!strcmp(s, "pollmix"))
		wait_kind = W_POLLMIX; /* poll with an ordinary pipe too */
	else
		die("wait: poll, select, epoll or pollmix, not %s", s);
}

/* Wait until one of n ports has what evs[i] asks (POLLIN/POLLOUT), with
 * netmap's implicit syncs. Returns how many are ready. */
static int wait_ports(struct port **ps, const short *evs, int n)
{
	int ret = 0;
	if (wait_kind == W_POLL || wait_kind == W_POLLMIX) {
		struct pollfd pfd[9];
		static int idle[2] = { -1, -1 };
		for (int i = 0; i < n; i++) {
			pfd[i].fd = ps[i]->fd;
			pfd[i].events = evs[i];
			pfd[i].revents = 0;
		}
		if (wait_kind == W_POLLMIX) {
			/* an ordinary descriptor that never becomes ready */
			if (idle[0] < 0 && pipe(idle) < 0)
				die("pipe: %s", strerror(errno));
			pfd[n].fd = idle[0];
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
		}
		ret = poll(pfd, (nfds_t)(n + (wait_kind == W_POLLMIX)), wait_ms);
		if (wait_kind == W_POLLMIX && pfd[n].revents)
			die("poll: the idle pipe reported 0x%x", pfd[n].revents);
		if (ret < 0)
			die("poll: %s", strerror(errno));
		for (int i = 0; i < n; i++)
			if (pfd[i].revents & POLLERR)
				die("%s: poll: POLLERR", ps[i]->name);
	} else if (wait_kind == W_SELECT) {
		fd_set r, w;
		int maxfd = 0;
		FD_ZERO(&r);
		FD_ZERO(&w);
		for (int i = 0; i < n; i++) {
			if (evs[i] & POLLIN)
				FD_SET(ps[i]->fd, &r);
			if (evs[i] & POLLOUT)
				FD_SET(ps[i]->fd, &w);
			if (ps[i]->fd > maxfd)
				maxfd = ps[i]->fd;
		}
		struct timeval tv = { .tv_sec = wait_ms / 1000,
				      .tv_usec = (wait_ms % 1000) * 1000 };
		ret = select(maxfd + 1, &r, &w, NULL, &tv);
		if (ret < 0)
			die("select: %s", strerror(errno));
	} else {
		if (epfd < 0) {
			epfd = epoll_create1(0);
			if (epfd < 0)
				die("epoll_create1: %s", strerror(errno));
			for (int i = 0; i < n; i++) {
				struct epoll_event ev = { .events = 0,
							  .data.u32 = (uint32_t)i };
				if (epoll_ctl(epfd, EPOLL_CTL_ADD, ps[i]->fd, &ev) < 0)
					die("epoll_ctl ADD: %s", strerror(errno));
			}
		}
		for (int i = 0; i < n; i++) {
			struct epoll_event ev = {
				.events = ((evs[i] & POLLIN) ? EPOLLIN : 0u) |
					  ((evs[i] & POLLOUT) ? EPOLLOUT : 0u),
				.data.u32 = (uint32_t)i,
			};
			if (epoll_ctl(epfd, EPOLL_CTL_MOD, ps[i]->fd, &ev) < 0)
				die("epoll_ctl MOD: %s", strerror(errno));
		}
		struct epoll_event out[8];
		ret = epoll_wait(epfd, out, 8, wait_ms);
		if (ret < 0)
			die("epoll_wait: %s", strerror(errno));
	}
	return ret;
}

static int wait_one(struct port *p, short ev)
{
	return wait_ports(&p, &ev, 1);
}

/* ------------------------------------------------------------------ */

/* NMT_ETH=1: packets are Ethernet frames (broadcast from a fixed source,
 * a local ethertype), for ports that look at them (a switch); the
 * sequence number follows the 14-byte header. */
static unsigned eth_hdr(void)
{
	static int eth = -1;
	if (eth < 0)
		eth = getenv("NMT_ETH") != NULL;
	return eth ? 14 : 0;
}

static const uint8_t eth_header[14] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x88, 0xb5,
};

static void fill(uint8_t *b, uint64_t seq, unsigned len)
{
	unsigned h = eth_hdr();
	memcpy(b, eth_header, h);
	memcpy(b + h, &seq, 8);
	for (unsigned i = h + 8; i < len; i++)
		b[i] = (uint8_t)(seq + i);
}

/* NMT_GAPS=1 (a link that drops, such as a veth into a starved AF_XDP
 * socket): frames may be missing, never reordered, repeated or changed;
 * the receiver counts the missing ones and stops after 2 s of silence. */
static int gaps_allowed(void)
{
	static int g = -1;
	if (g < 0)
		g = getenv("NMT_GAPS") != NULL;
	return g;
}

/* The sequence number of a frame (after the Ethernet header, if any). */
static uint64_t seq_of(const uint8_t *b)
{
	uint64_t v;
	memcpy(&v, b + eth_hdr(), 8);
	return v;
}

static void check(const uint8_t *b, uint64_t seq, unsigned len, unsigned want)
{
	uint64_t got;
	unsigned h = eth_hdr();
	if (len != want)
		die("packet %" PRIu64 ": length %u, want %u", seq, len, want);
	if (memcmp(b, eth_header, h))
		die("packet %" PRIu64 ": Ethernet header changed", seq);
	b += h;
	len -= h;
	memcpy(&got, b, 8);
	if (got != seq)
		die("packet %" PRIu64 ": sequence number %" PRIu64 " (lost or "
		    "reordered)", seq, got);
	for (unsigned i = 8; i < len; i++)
		if (b[i] != (uint8_t)(seq + i + h))
			die("packet %" PRIu64 ": byte %u is 0x%02x, want 0x%02x",
			    seq, i + h, b[i], (uint8_t)(seq + i + h));
}

/* Wait until everything sent has left the TX rings. */
static void drain(struct port *p)
{
	for (;;) {
		if (ioctl(p->fd, NIOCTXSYNC, NULL) < 0)
			die("%s: NIOCTXSYNC: %s", p->name, strerror(errno));
		int pending = 0;
		for (unsigned r = p->first_tx; r <= p->last_tx; r++) {
			struct netmap_ring *ring = NETMAP_TXRING(p->nifp, r);
			if (nm_tx_pending(ring)) {
				pending = 1;
				ring->cur = ring->tail; /* wake me when it moves */
			}
		}
		if (!pending)
			return;
		if (wait_one(p, POLLOUT) == 0)
			die("%s: TX does not drain in 10 s", p->name);
		for (unsigned r = p->first_tx; r <= p->last_tx; r++) {
			struct netmap_ring *ring = NETMAP_TXRING(p->nifp, r);
			ring->cur = ring->head;
		}
	}
}

/* How much per-packet work: every byte and NS_MOREFRAG chains (tests),
 * every byte, only the sequence number (bench "stamp"), nothing but the
 * count (bench "fast"). */
enum mode { M_FULL, M_FRAG, M_STAMP, M_FAST };

/* NMT_RATE=PPS: no faster than that (links without flow control, such as
 * a veth into an AF_XDP socket, drop what the receiver cannot take). */
static int pace(uint64_t sent)
{
	static double rate = -1;
	static struct timespec t0;
	if (rate < 0) {
		const char *e = getenv("NMT_RATE");
		rate = e ? atof(e) : 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
	}
	if (rate <= 0)
		return 0;
	double due = (double)sent / rate;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double el = (double)(now.tv_sec - t0.tv_sec) +
		    (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
	if (due > el) {
		double d = due - el;
		struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
		nanosleep(&ts, NULL);
	}
	return 1;
}

static int gen(const char *name, uint64_t count, unsigned len, enum mode mode)
{
	int frag = mode == M_FRAG;
	struct port p;
	port_open(&p, name, 0);
	printf("ready\n");
	fflush(stdout);
	/* NMT_GO=FIFO: send once a byte comes through FIFO (a monitor of
	 * this port opens in between) */
	const char *go = getenv("NMT_GO");
	char c;
	int gofd = go ? open(go, O_RDONLY) : -1;
	if (go && (gofd < 0 || read(gofd, &c, 1) != 1))
		die("NMT_GO=%s: no go", go);
	if (gofd >= 0)
		close(gofd);
	/* NMT_SEQ=S: the sequence numbers start at S (a second sender
	 * goes on where the first stopped) */
	const char *es = getenv("NMT_SEQ");
	uint64_t seq = es ? strtoull(es, NULL, 10) : 0, seq0 = seq;
	count += seq;
	unsigned need = frag ? 2 : 1;
	while (seq < count) {
		int progress = 0;
		for (unsigned r = p.first_tx; r <= p.last_tx && seq < count; r++) {
			struct netmap_ring *ring = NETMAP_TXRING(p.nifp, r);
			if (mode >= M_STAMP) {
				uint32_t n = nm_ring_space(ring), i = ring->head;
				if (n > count - seq)
					n = (uint32_t)(count - seq);
				if (mode == M_STAMP) {
					for (uint32_t k = 0; k < n; k++) {
						struct netmap_slot *s = &ring->slot[i];
						memcpy(NETMAP_BUF_OFFSET(ring, s), &seq, 8);
						s->len = (uint16_t)len;
						i = nm_ring_next(ring, i);
						seq++;
					}
				} else {
					/* by contiguous runs of slots, as pktmap
					 * gen --fast does */
					for (uint32_t left = n; left;) {
						uint32_t run = ring->num_slots - i;
						if (run > left)
							run = left;
						struct netmap_slot *sl = &ring->slot[i];
						for (uint32_t k = 0; k < run; k++)
							sl[k].len = (uint16_t)len;
						left -= run;
						i += run;
						if (i == ring->num_slots)
							i = 0;
					}
					seq += n;
				}
				ring->head = ring->cur = i;
				progress |= n > 0;
				continue;
			}
			while (seq < count && nm_ring_space(ring) >= need) {
				uint8_t pkt[MAXPKT];
				fill(pkt, seq, len);
				uint32_t i = ring->head;
				unsigned first = frag ? len / 2 : len;
				struct netmap_slot *s = &ring->slot[i];
				memcpy(NETMAP_BUF_OFFSET(ring, s), pkt, first);
				s->len = (uint16_t)first;
				s->flags = frag ? NS_MOREFRAG : 0;
				i = nm_ring_next(ring, i);
				if (frag) {
					s = &ring->slot[i];
					memcpy(NETMAP_BUF_OFFSET(ring, s), pkt + first,
					       len - first);
					s->len = (uint16_t)(len - first);
					s->flags = 0;
					i = nm_ring_next(ring, i);
				}
				ring->head = ring->cur = i;
				seq++;
				progress = 1;
				/* paced: hand each 64 over as they are due */
				if ((seq & 63) == 0 && pace(seq))
					ioctl(p.fd, NIOCTXSYNC, NULL);
			}
		}
		if (!progress && wait_one(&p, POLLOUT) == 0)
			die("%s: no TX room for 10 s after %" PRIu64 " packets",
			    name, seq);
	}
	drain(&p);
	printf("sent %" PRIu64 "\n", seq - seq0);
	port_close(&p);
	return 0;
}

/* NMT_STRIDE=N:K (behind lb): the receiver gets packets K, K+N, K+2N... */
static uint64_t stride = 1, stride_first;

static int recv_(const char *name, uint64_t count, unsigned len, enum mode mode)
{
	const char *es = getenv("NMT_STRIDE");
	if (es && sscanf(es, "%" SCNu64 ":%" SCNu64, &stride, &stride_first) != 2)
		die("NMT_STRIDE=%s: N:K", es);
	/* NMT_OFFSET=N: the port uses buffer offsets, packets arrive at N */
	const char *eo = getenv("NMT_OFFSET");
	int rx_offset = eo ? atoi(eo) : -1;
	int frag = mode == M_FRAG;
	struct port p;
	port_open(&p, name, 0);
	printf("ready\n");
	fflush(stdout);
	uint64_t seq = 0;
	uint8_t pkt[MAXPKT];
	unsigned have = 0, frags = 0;
	uint64_t lost = 0, received = 0;
	while (seq < count) {
		if (gaps_allowed() && seq > 0)
			wait_ms = 2000;
		if (wait_one(&p, POLLIN) == 0) {
			if (gaps_allowed() && seq > 0) {
				lost += count - seq; /* the end never came */
				break;
			}
			die("%s: nothing for %d s after %" PRIu64 " packets", name,
			    wait_ms / 1000, seq);
		}
		for (unsigned r = p.first_rx; r <= p.last_rx; r++) {
			struct netmap_ring *ring = NETMAP_RXRING(p.nifp, r);
			if (mode >= M_STAMP) {
				uint32_t n = nm_ring_space(ring), i = ring->head;
				if (mode == M_STAMP) {
					for (uint32_t k = 0; k < n; k++) {
						struct netmap_slot *s = &ring->slot[i];
						uint64_t got;
						memcpy(&got, NETMAP_BUF_OFFSET(ring, s), 8);
						if (got != seq || s->len != len)
							die("packet %" PRIu64 ": sequence %"
							    PRIu64 ", length %u", seq, got,
							    s->len);
						i = nm_ring_next(ring, i);
						seq++;
					}
				} else {
					i = n ? (i + n) % ring->num_slots : i;
					seq += n;
				}
				ring->head = ring->cur = i;
				if (seq > count)
					die("more than %" PRIu64 " packets", count);
				continue;
			}
			while (!nm_ring_empty(ring)) {
				struct netmap_slot *s = &ring->slot[ring->head];
				if (have + s->len > sizeof(pkt))
					die("packet %" PRIu64 " too long", seq);
				if (rx_offset >= 0 &&
				    NETMAP_ROFFSET(ring, s) != (uint64_t)rx_offset)
					die("packet %" PRIu64 ": at offset %" PRIu64
					    ", want %d", seq, NETMAP_ROFFSET(ring, s),
					    rx_offset);
				memcpy(pkt + have, NETMAP_BUF_OFFSET(ring, s), s->len);
				have += s->len;
				frags++;
				ring->head = ring->cur = nm_ring_next(ring, ring->head);
				if (s->flags & NS_MOREFRAG)
					continue;
				if (frag && frags != 2)
					die("packet %" PRIu64 ": %u fragments, want 2",
					    seq, frags);
				if (seq >= count)
					die("more than %" PRIu64 " packets", count);
				if (gaps_allowed() && have >= eth_hdr() + 8) {
					uint64_t at = seq_of(pkt);
					if (at < seq || at >= count)
						die("packet %" PRIu64 " after %" PRIu64
						    ": reordered or repeated", at, seq);
					lost += at - seq;
					seq = at;
				}
				check(pkt, stride_first + seq * stride, have, len);
				seq++;
				received++;
				have = frags = 0;
			}
		}
	}
	/* give the last slots back, so that the sender sees them sent */
	if (ioctl(p.fd, NIOCRXSYNC, NULL) < 0)
		die("%s: NIOCRXSYNC: %s", name, strerror(errno));
	if (gaps_allowed())
		printf("received %" PRIu64 " in order, bytes ok, %" PRIu64
		       " missing\n", received, lost);
	else
		printf("received %" PRIu64 " in order, %s\n", seq,
		       mode == M_FAST ? "counted only" :
		       mode == M_STAMP ? "sequence numbers ok" : "bytes ok");
	port_close(&p);
	return 0;
}

static int fwd(const char *in, const char *out, uint64_t count)
{
	struct port a, b;
	port_open(&a, in, 0);
	port_open(&b, out, 0);
	if (a.mem_id != b.mem_id)
		die("%s (memory %u) and %s (memory %u): not one memory, no "
		    "zero-copy", in, a.mem_id, out, b.mem_id);
#ifdef NMT_LIB
	if (a.d->mem != b.d->mem)
		die("one memory id but two nmem_d");
#endif
	printf("ready zerocopy memory %u\n", a.mem_id);
	fflush(stdout);
	uint64_t done = 0, swapped = 0;
	while (done < count) {
		struct netmap_ring *rx = NETMAP_RXRING(a.nifp, a.first_rx);
		struct netmap_ring *tx = NETMAP_TXRING(b.nifp, b.first_tx);
		uint32_t n = nm_ring_space(rx), m = nm_ring_space(tx);
		if (m < n)
			n = m;
		for (uint32_t k = 0; k < n; k++) {
			struct netmap_slot *rs = &rx->slot[rx->head];
			struct netmap_slot *ts = &tx->slot[tx->head];
			uint32_t idx = ts->buf_idx;
			ts->buf_idx = rs->buf_idx;
			rs->buf_idx = idx;
			ts->len = rs->len;
			ts->flags = (uint16_t)((rs->flags & NS_MOREFRAG) | NS_BUF_CHANGED);
			rs->flags = NS_BUF_CHANGED;
			if (!(ts->flags & NS_MOREFRAG))
				done++;
			swapped++;
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
		}
		if (done >= count)
			break;
		struct port *ps[2] = { &a, &b };
		short evs[2] = { POLLIN, (short)(nm_ring_empty(tx) ? POLLOUT : 0) };
		if (wait_ports(ps, evs, 2) == 0)
			die("fwd: stuck for 10 s after %" PRIu64 " packets", done);
	}
	drain(&b);
	if (ioctl(a.fd, NIOCRXSYNC, NULL) < 0)
		die("%s: NIOCRXSYNC: %s", in, strerror(errno));
	printf("forwarded %" PRIu64 " packets, %" PRIu64 " buffers swapped\n",
	       done, swapped);
	port_close(&a);
	port_close(&b);
	return 0;
}

/* As tlem opens its two ports: for each direction, one open of the port
 * it reads and one of the port it writes, so that each port is bound
 * twice in this process and each binding uses one direction. Packets go
 * A -> B, copied (tlem copies through its delay line); the B -> A
 * bindings stay idle. */
static int tlem(const char *a_name, const char *b_name, uint64_t count)
{
	struct port pa, pb, pa2, pb2; /* read A, write B; read B, write A */
	port_open(&pa, a_name, 0);
	port_open(&pb, b_name, 0);
	port_open(&pa2, b_name, 0);
	port_open(&pb2, a_name, 0);
	/* netmap's rule: two bindings of a ring are one ring */
	if (NETMAP_RXRING(pa.nifp, pa.first_rx) != NETMAP_RXRING(pb2.nifp, pb2.first_rx) ||
	    NETMAP_TXRING(pb.nifp, pb.first_tx) != NETMAP_TXRING(pa2.nifp, pa2.first_tx))
		die("tlem: two bindings of one port have different rings");
	if (pa.fd == pb2.fd)
		die("tlem: one file descriptor for two opens");
	printf("ready bound twice\n");
	fflush(stdout);
	uint64_t done = 0;
	while (done < count) {
		struct netmap_ring *rx = NETMAP_RXRING(pa.nifp, pa.first_rx);
		struct netmap_ring *tx = NETMAP_TXRING(pb.nifp, pb.first_tx);
		uint32_t n = nm_ring_space(rx), m = nm_ring_space(tx);
		if (m < n)
			n = m;
		for (uint32_t k = 0; k < n; k++) {
			struct netmap_slot *rs = &rx->slot[rx->head];
			struct netmap_slot *ts = &tx->slot[tx->head];
			memcpy(NETMAP_BUF(tx, ts->buf_idx), NETMAP_BUF(rx, rs->buf_idx),
			       rs->len);
			ts->len = rs->len;
			ts->flags = 0;
			done++;
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
		}
		if (done >= count)
			break;
		/* the reading binding syncs RX, the writing one TX */
		if (ioctl(pb.fd, NIOCTXSYNC, NULL) < 0)
			die("%s: NIOCTXSYNC: %s", b_name, strerror(errno));
		struct port *ps[2] = { &pa, &pb };
		short evs[2] = { POLLIN, (short)(nm_ring_empty(tx) ? POLLOUT : 0) };
		if (wait_ports(ps, evs, 2) == 0)
			die("tlem: stuck for 10 s after %" PRIu64 " packets", done);
	}
	drain(&pb);
	if (ioctl(pa.fd, NIOCRXSYNC, NULL) < 0)
		die("%s: NIOCRXSYNC: %s", a_name, strerror(errno));
	struct netmap_ring *idle = NETMAP_RXRING(pa2.nifp, pa2.first_rx);
	if (ioctl(pa2.fd, NIOCRXSYNC, NULL) < 0 || !nm_ring_empty(idle))
		die("tlem: %s received something", b_name);
	printf("copied %" PRIu64 " packets, each port bound twice\n", done);
	port_close(&pa2);
	port_close(&pb2);
	port_close(&pa);
	port_close(&pb);
	return 0;
}

/* tlem's threads (nmt tlemt): each direction's thread reads one binding
 * and writes the other port's, syncing with ioctl only; TX slots come
 * back through NIOCTXSYNC when the ring is full, never through poll. The
 * B -> A direction's reader runs in a thread of its own, syncing B's
 * second binding all the while (its RX ring, the same port whose TX ring
 * the main thread fills). */
static volatile int tlemt_stop;

static void *tlemt_other(void *arg)
{
	struct port *pa2 = arg;
	while (!tlemt_stop) {
		if (ioctl(pa2->fd, NIOCRXSYNC, NULL) < 0)
			die("%s: NIOCRXSYNC: %s", pa2->name, strerror(errno));
		usleep(5); /* tlem's own wait */
	}
	return NULL;
}

static int tlemt(const char *a_name, const char *b_name, uint64_t count)
{
	struct port pa, pb, pa2, pb2;
	port_open(&pa, a_name, 0);
	port_open(&pb, b_name, 0);
	port_open(&pa2, b_name, 0);
	port_open(&pb2, a_name, 0);
	pthread_t t;
	if (pthread_create(&t, NULL, tlemt_other, &pa2))
		die("pthread_create");
	printf("ready bound twice, two threads\n");
	fflush(stdout);
	struct netmap_ring *rx = NETMAP_RXRING(pa.nifp, pa.first_rx);
	struct netmap_ring *tx = NETMAP_TXRING(pb.nifp, pb.first_tx);
	uint64_t done = 0, reclaims = 0;
	time_t last = time(NULL);
	while (done < count) {
		if (nm_ring_empty(rx) && ioctl(pa.fd, NIOCRXSYNC, NULL) < 0)
			die("%s: NIOCRXSYNC: %s", a_name, strerror(errno));
		bool moved = false;
		while (!nm_ring_empty(rx)) {
			if (nm_ring_empty(tx)) { /* full: reclaim, as tlem does */
				if (ioctl(pb.fd, NIOCTXSYNC, NULL) < 0)
					die("%s: NIOCTXSYNC: %s", b_name, strerror(errno));
				reclaims++;
				if (nm_ring_empty(tx))
					break;
			}
			struct netmap_slot *rs = &rx->slot[rx->head];
			struct netmap_slot *ts = &tx->slot[tx->head];
			memcpy(NETMAP_BUF(tx, ts->buf_idx), NETMAP_BUF(rx, rs->buf_idx),
			       rs->len);
			ts->len = rs->len;
			ts->flags = 0;
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
			done++;
			moved = true;
		}
		/* idle, or the ring stays full: send what is pending */
		if (ioctl(pb.fd, NIOCTXSYNC, NULL) < 0)
			die("%s: NIOCTXSYNC: %s", b_name, strerror(errno));
		if (moved)
			last = time(NULL);
		else
			usleep(5); /* tlem's own wait */
		if (time(NULL) - last > 10)
			die("tlemt: stuck for 10 s after %" PRIu64 " packets", done);
	}
	drain(&pb);
	if (ioctl(pa.fd, NIOCRXSYNC, NULL) < 0) /* give A's slots back */
		die("%s: NIOCRXSYNC: %s", a_name, strerror(errno));
	tlemt_stop = 1;
	pthread_join(t, NULL);
	printf("copied %" PRIu64 " packets in two threads, %s a full ring\n",
	       done, reclaims ? "TX reclaimed by NIOCTXSYNC from" : "never");
	port_close(&pa2);
	port_close(&pb2);
	port_close(&pa);
	port_close(&pb);
	return 0;
}

/* The extra buffers: a list through each buffer's first word. */
static uint32_t list_count(struct netmap_ring *ring, uint32_t head, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t b = head; b; n++) {
		if (n > max)
			die("extra buffer list longer than %u (a loop?)", max);
		if (b < 2)
			die("extra buffer list holds index %u", b);
		b = *(uint32_t *)(void *)NETMAP_BUF(ring, b);
	}
	return n;
}

#define LB_MAX 8

/* A queue of buffers waiting for room in an output ring (lb's overflow
 * queues, in extra buffers). */
struct lbq {
	uint32_t *buf, *len, head, n, cap;
};

/* Move queued buffers into q's output ring while it has room; the
 * slots' old buffers go to the free list. Returns packets moved. */
static uint64_t lb_flush(struct lbq *q, struct netmap_ring *tx,
			 struct netmap_if *nifp)
{
	uint64_t moved = 0;
	while (q->n && nm_ring_space(tx)) {
		struct netmap_slot *ts = &tx->slot[tx->head];
		*(uint32_t *)(void *)NETMAP_BUF(tx, ts->buf_idx) = nifp->ni_bufs_head;
		nifp->ni_bufs_head = ts->buf_idx;
		ts->buf_idx = q->buf[q->head];
		ts->len = (uint16_t)q->len[q->head];
		ts->flags = NS_BUF_CHANGED;
		q->head = (q->head + 1) % q->cap;
		q->n--;
		moved++;
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
	}
	return moved;
}

/* One RX packet to output k: straight into its ring (buffers swapped) if
 * it has room and nothing queued, else (and for every 7th packet) into
 * an extra buffer's place on k's queue. Returns 0 when neither can take
 * it (no room, no free extra buffer). */
static int lb_one(struct netmap_ring *rx, struct netmap_ring *tx,
		  struct lbq *q, struct netmap_if *in_nifp, uint64_t seq)
{
	struct netmap_slot *rs = &rx->slot[rx->head];
	if (!q->n && nm_ring_space(tx) && seq % 7) {
		struct netmap_slot *ts = &tx->slot[tx->head];
		uint32_t b = ts->buf_idx;
		ts->buf_idx = rs->buf_idx;
		ts->len = rs->len;
		ts->flags = NS_BUF_CHANGED;
		rs->buf_idx = b;
		tx->head = tx->cur = nm_ring_next(tx, tx->head);
	} else {
		uint32_t f = in_nifp->ni_bufs_head;
		if (!f || q->n == q->cap)
			return 0;
		in_nifp->ni_bufs_head = *(uint32_t *)(void *)NETMAP_BUF(rx, f);
		uint32_t at = (q->head + q->n++) % q->cap;
		q->buf[at] = rs->buf_idx;
		q->len[at] = rs->len;
		rs->buf_idx = f;
	}
	rs->flags = NS_BUF_CHANGED;
	rx->head = rx->cur = nm_ring_next(rx, rx->head);
	return 1;
}

/* As lb: N output pipes OUT{k in the input port's memory (lb names them
 * "OUT{k/xT@<the input's nr_mem_id>"), packet s to pipe s % N by moving
 * buffers; its receivers open OUT}k by name. */
static int lb(const char *in_name, const char *out, unsigned n, uint64_t count,
	      uint32_t nbufs)
{
	struct port in, o[LB_MAX];
	struct lbq q[LB_MAX];
	char names[LB_MAX][NETMAP_REQ_IFNAMSIZ];
	if (n < 1 || n > LB_MAX)
		die("lb: 1 to %d outputs", LB_MAX);
	port_open(&in, in_name, nbufs);
	struct netmap_ring *rx = NETMAP_RXRING(in.nifp, in.first_rx);
	if (in.extra_bufs != nbufs ||
	    list_count(rx, in.nifp->ni_bufs_head, nbufs) != nbufs)
		die("%s: %u extra buffers, asked %u", in_name, in.extra_bufs, nbufs);
	for (unsigned k = 0; k < n; k++) {
		snprintf(names[k], sizeof(names[k]), "netmap:%s{%u/xT@%u", out, k,
			 in.mem_id);
		port_open(&o[k], names[k], 0);
		if (o[k].mem_id != in.mem_id)
			die("%s: memory %u, not the input's %u: no zero-copy",
			    names[k], o[k].mem_id, in.mem_id);
		q[k].cap = nbufs;
		q[k].head = q[k].n = 0;
		q[k].buf = calloc(nbufs, sizeof(uint32_t));
		q[k].len = calloc(nbufs, sizeof(uint32_t));
		if (!q[k].buf || !q[k].len)
			die("out of memory");
	}
	printf("ready zerocopy memory %u, %u pipes\n", in.mem_id, n);
	fflush(stdout);
	uint64_t seq = 0, sent = 0, queued = 0;
	while (sent < count) {
		for (unsigned k = 0; k < n; k++)
			sent += lb_flush(&q[k], NETMAP_TXRING(o[k].nifp, o[k].first_tx),
					 in.nifp);
		while (!nm_ring_empty(rx)) {
			struct netmap_slot *rs = &rx->slot[rx->head];
			uint64_t s = seq_of((uint8_t *)NETMAP_BUF(rx, rs->buf_idx));
			if (s != seq)
				die("lb: packet %" PRIu64 " where %" PRIu64 " was due",
				    s, seq);
			unsigned k = (unsigned)(s % n);
			struct netmap_ring *tx = NETMAP_TXRING(o[k].nifp, o[k].first_tx);
			uint32_t was = q[k].n;
			if (!lb_one(rx, tx, &q[k], in.nifp, s))
				break;
			if (q[k].n > was)
				queued++;
			else
				sent++;
			seq++;
		}
		/* wait for packets (when all are taken) and for room where
		 * a ring is full */
		struct port *ps[LB_MAX + 1];
		short evs[LB_MAX + 1], any;
		int more = 0;
		ps[0] = &in;
		any = evs[0] = (short)(nm_ring_empty(rx) ? POLLIN : 0);
		for (unsigned k = 0; k < n; k++) {
			struct netmap_ring *tx = NETMAP_TXRING(o[k].nifp, o[k].first_tx);
			sent += lb_flush(&q[k], tx, in.nifp);
			if (ioctl(o[k].fd, NIOCTXSYNC, NULL) < 0)
				die("%s: NIOCTXSYNC: %s", names[k], strerror(errno));
			ps[k + 1] = &o[k];
			evs[k + 1] = (short)(!nm_ring_space(tx) ? POLLOUT : 0);
			any |= evs[k + 1];
			/* The flush filled the ring up to the tail of the last
			 * sync; this sync may show the room the receiver made
			 * since, and no wait would ever report it (POLLOUT is
			 * not asked of a ring with room): go round and flush
			 * again. Sleeping here on the input alone was lb's
			 * stall once the sender was done (tests/system/
			 * netmap_compat.sh, 5d). */
			more |= q[k].n && nm_ring_space(tx);
		}
		/* Nothing to wait for (the flush above freed extra buffers and
		 * every ring has room, or a queue can move): go round, do not
		 * sleep for nothing. */
		if (sent < count && any && !more &&
		    wait_ports(ps, evs, (int)n + 1) == 0)
			die("lb: stuck for 10 s after %" PRIu64 " packets", sent);
	}
	for (unsigned k = 0; k < n; k++)
		drain(&o[k]);
	if (ioctl(in.fd, NIOCRXSYNC, NULL) < 0)
		die("%s: NIOCRXSYNC: %s", in_name, strerror(errno));
	uint32_t back = list_count(rx, in.nifp->ni_bufs_head, nbufs);
	if (back != nbufs)
		die("lb: %u of %u extra buffers back", back, nbufs);
	printf("forwarded %" PRIu64 " to %u pipes, %" PRIu64 " through extra "
	       "buffers\n", sent, n, queued);
	for (unsigned k = 0; k < n; k++) {
		port_close(&o[k]);
		free(q[k].buf);
		free(q[k].len);
	}
	port_close(&in);
	return 0;
}

static int extra(const char *name, uint64_t count, unsigned len, uint32_t nbufs)
{
	struct port p;
	port_open(&p, name, nbufs);
	if (p.extra_bufs != nbufs)
		die("%s: asked %u extra buffers, nr_extra_bufs says %u", name,
		    nbufs, p.extra_bufs);
	struct netmap_ring *ring = NETMAP_TXRING(p.nifp, p.first_tx);
	uint32_t n = list_count(ring, p.nifp->ni_bufs_head, nbufs);
	if (n != nbufs)
		die("%s: ni_bufs_head lists %u buffers, want %u", name, n, nbufs);
	/* distinct and not any ring's */
	uint8_t *seen = calloc(1u << 24, 1);
	if (!seen)
		die("out of memory");
	for (uint32_t b = p.nifp->ni_bufs_head; b;
	     b = *(uint32_t *)(void *)NETMAP_BUF(ring, b)) {
		if (b >= (1u << 24) || seen[b]++)
			die("extra buffer %u listed twice", b);
	}
	for (uint32_t i = 0; i < ring->num_slots; i++)
		if (ring->slot[i].buf_idx < (1u << 24) && seen[ring->slot[i].buf_idx])
			die("extra buffer %u is also in slot %u", ring->slot[i].buf_idx, i);
	free(seen);
	printf("ready %u extra buffers\n", n);
	fflush(stdout);

	/* Send every packet from an extra buffer: build it there, swap it
	 * into the slot, put the slot's buffer on the list (lb's way). */
	uint64_t seq = 0;
	while (seq < count) {
		if (nm_ring_space(ring) == 0) {
			if (wait_one(&p, POLLOUT) == 0)
				die("%s: no TX room for 10 s", name);
			continue;
		}
		uint32_t b = p.nifp->ni_bufs_head;
		uint8_t *buf = (uint8_t *)NETMAP_BUF(ring, b);
		p.nifp->ni_bufs_head = *(uint32_t *)(void *)buf;
		fill(buf, seq, len);
		struct netmap_slot *s = &ring->slot[ring->head];
		uint32_t old = s->buf_idx;
		s->buf_idx = b;
		s->len = (uint16_t)len;
		s->flags = NS_BUF_CHANGED;
		*(uint32_t *)(void *)NETMAP_BUF(ring, old) = p.nifp->ni_bufs_head;
		p.nifp->ni_bufs_head = old;
		ring->head = ring->cur = nm_ring_next(ring, ring->head);
		seq++;
	}
	drain(&p);
	n = list_count(ring, p.nifp->ni_bufs_head, nbufs);
	if (n != nbufs)
		die("%s: %u extra buffers at the end, want %u", name, n, nbufs);
	printf("sent %" PRIu64 " from %u extra buffers\n", seq, nbufs);
	port_close(&p);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Bad requests get the errno netmap's module gives. */

static int expect_errno(const char *what, int r, int want)
{
	if (r == 0)
		die("%s: succeeded, want %s", what, strerror(want));
	if (errno != want)
		die("%s: %s, want %s", what, strerror(errno), strerror(want));
	printf("ok %s: %s\n", what, strerror(want));
	return 0;
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

/* NR_EXCLUSIVE ("/x"): refused on a ring another open binds, and an open
 * of a ring bound exclusively is refused; without /x, two opens share. */
static int excl(const char *pipe)
{
	struct nmreq_register r;
	int fd[3];
	for (int i = 0; i < 3; i++) {
		fd[i] = open(NETMAP_DEVICE_NAME, O_RDWR);
		if (fd[i] < 0)
			die("%s: %s", NETMAP_DEVICE_NAME, strerror(errno));
	}
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	if (ctrl(fd[0], pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r) < 0)
		die("%s: %s", pipe, strerror(errno));
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	if (ctrl(fd[1], pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r) < 0)
		die("%s, a second open: %s", pipe, strerror(errno));
	printf("ok two opens share %s\n", pipe);
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	r.nr_flags = NR_EXCLUSIVE;
	expect_errno("/x on a bound ring",
		     ctrl(fd[2], pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r), EBUSY);
	close(fd[0]);
	close(fd[1]);
	/* now unbound: /x binds, and then nobody else may */
	if (ctrl(fd[2], pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r) < 0)
		die("%s/x, unbound: %s", pipe, strerror(errno));
	printf("ok /x on an unbound ring\n");
	fd[0] = open(NETMAP_DEVICE_NAME, O_RDWR);
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	expect_errno("an open of a ring bound with /x",
		     ctrl(fd[0], pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r), EBUSY);
	close(fd[0]);
	close(fd[2]);
	printf("exclusive as netmap\n");
	return 0;
}

/* poll(), ppoll(), select(), epoll_ctl() and epoll_wait() given
 * addresses that are not mapped, or a time that is not one, around a
 * registered descriptor of ours (fd, whose TX ring has room): EFAULT or
 * EINVAL, as the kernel answers, never a crash. */
static void bad_waits(int fd)
{
	/* 0x10, hidden from the compiler (which refuses a constant bad
	 * address to poll) */
	static volatile uintptr_t nowhere = 0x10;
	long pg = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED || munmap(two + pg, (size_t)pg) != 0)
		die("mmap: %s", strerror(errno));
	/* ours last in a page, the next entry past its end */
	struct pollfd *edge = (struct pollfd *)(void *)(two + pg) - 1;
	edge->fd = fd;
	edge->events = POLLOUT;
	int r = poll((struct pollfd *)(uintptr_t)nowhere, 1, 0);
	expect_errno("poll on address 0x10", r < 0 ? r : 0, EFAULT);
	r = poll(edge, 2, 0);
	expect_errno("poll of ours, then an entry not mapped", r < 0 ? r : 0,
		     EFAULT);
	r = ppoll(edge, 1, (const struct timespec *)(uintptr_t)nowhere, NULL);
	expect_errno("ppoll of ours, timeout at 0x10", r < 0 ? r : 0, EFAULT);
	struct timespec neg = { 0, -1 };
	r = ppoll(edge, 1, &neg, NULL);
	expect_errno("ppoll of ours, a negative timeout", r < 0 ? r : 0, EINVAL);
	fd_set w;
	FD_ZERO(&w);
	FD_SET(fd, &w);
	r = select(fd + 1, NULL, (fd_set *)(uintptr_t)nowhere, NULL, NULL);
	expect_errno("select, a set at 0x10", r < 0 ? r : 0, EFAULT);
	r = select(fd + 1, NULL, &w, NULL, (struct timeval *)(uintptr_t)nowhere);
	expect_errno("select of ours, timeout at 0x10", r < 0 ? r : 0, EFAULT);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1: %s", strerror(errno));
	r = epoll_ctl(ep, EPOLL_CTL_ADD, fd, (struct epoll_event *)(uintptr_t)nowhere);
	expect_errno("epoll_ctl of ours, event at 0x10", r, EFAULT);
	struct epoll_event ev = { .events = EPOLLOUT };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
	r = epoll_wait(ep, (struct epoll_event *)(uintptr_t)nowhere, 4, 0);
	expect_errno("epoll_wait of ours into 0x10", r < 0 ? r : 0, EFAULT);
	close(ep);
	munmap(two, (size_t)pg);
}

static int bad(const char *pipe)
{
	int fd = open(NETMAP_DEVICE_NAME, O_RDWR);
	if (fd < 0)
		die("%s: %s", NETMAP_DEVICE_NAME, strerror(errno));
	struct nmreq_register r;
	memset(&r, 0, sizeof(r));
	r.nr_mode = NR_REG_ALL_NIC;
	expect_errno("NIOCTXSYNC before register",
		     ioctl(fd, NIOCTXSYNC, NULL), ENXIO);
	expect_errno("mmap before register",
		     mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED
			     ? -1 : 0, EINVAL);
	expect_errno("wrong nr_version",
		     ctrl(fd, pipe, NETMAP_API - 3, NETMAP_REQ_REGISTER, &r), EINVAL);
	expect_errno("unknown nr_reqtype", ctrl(fd, pipe, NETMAP_API, 99, &r),
		     EINVAL);
	expect_errno("no such interface",
		     ctrl(fd, "nmtnosuch0", NETMAP_API, NETMAP_REQ_REGISTER, &r),
		     ENXIO);
	char vale[32];
	snprintf(vale, sizeof(vale), "valeb%d:a", (int)getpid() % 1000000);
	expect_errno("vale port, no switch running",
		     ctrl(fd, vale, NETMAP_API, NETMAP_REQ_REGISTER, &r), ENXIO);
	struct nmreq_vale_list_body { uint16_t b; uint16_t pad; uint32_t p; } vl;
	memset(&vl, 0, sizeof(vl));
	expect_errno("vale-ctl request (VALE_LIST), no switch running",
		     ctrl(fd, vale, NETMAP_API, NETMAP_REQ_VALE_LIST, &vl),
		     ENXIO);
	r.nr_flags = NR_ZCOPY_MON;
	expect_errno("zero-copy monitor /z",
		     ctrl(fd, pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r), EOPNOTSUPP);
	r.nr_flags = 0;
	/* extmem: an option netmap has and pktmap does not */
	struct nmreq_opt_extmem ext;
	memset(&ext, 0, sizeof(ext));
	ext.nro_opt.nro_reqtype = NETMAP_REQ_OPT_EXTMEM;
	struct nmreq_header h;
	memset(&h, 0, sizeof(h));
	h.nr_version = NETMAP_API;
	h.nr_reqtype = NETMAP_REQ_REGISTER;
	h.nr_body = (uintptr_t)&r;
	h.nr_options = (uintptr_t)&ext;
	snprintf(h.nr_name, sizeof(h.nr_name), "%s", pipe);
	expect_errno("extmem option", ioctl(fd, NIOCCTRL, &h), EOPNOTSUPP);
	if (ext.nro_opt.nro_status != EOPNOTSUPP)
		die("extmem option: nro_status %u, want EOPNOTSUPP",
		    ext.nro_opt.nro_status);

	/* addresses that are not mapped: EFAULT, as the kernel's
	 * copy_from_user() gives, never a crash */
	expect_errno("NIOCREGIF on address 0x10",
		     ioctl(fd, NIOCREGIF, (void *)(uintptr_t)0x10), EFAULT);
	expect_errno("NIOCCTRL on address 0x10",
		     ioctl(fd, NIOCCTRL, (void *)(uintptr_t)0x10), EFAULT);
	h.nr_options = 0;
	h.nr_body = 0x10;
	expect_errno("nr_body 0x10", ioctl(fd, NIOCCTRL, &h), EFAULT);
	h.nr_body = (uintptr_t)&r;
	h.nr_options = 0x10;
	expect_errno("nr_options 0x10", ioctl(fd, NIOCCTRL, &h), EFAULT);

	/* A good registration, then the mistakes after it. */
	if (ctrl(fd, pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r) < 0)
		die("%s: register: %s", pipe, strerror(errno));
	expect_errno("register twice",
		     ctrl(fd, pipe, NETMAP_API, NETMAP_REQ_REGISTER, &r), EBUSY);
	expect_errno("mmap larger than nr_memsize",
		     mmap(NULL, r.nr_memsize + 4096, PROT_READ | PROT_WRITE,
			  MAP_SHARED, fd, 0) == MAP_FAILED ? -1 : 0, EINVAL);
	void *m = mmap(NULL, r.nr_memsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap of nr_memsize: %s", strerror(errno));
	struct netmap_if *nifp = NETMAP_IF(m, r.nr_offset);
	if (nifp->ni_tx_rings != r.nr_tx_rings || nifp->ni_rx_rings != r.nr_rx_rings)
		die("netmap_if rings %u/%u, register said %u/%u",
		    nifp->ni_tx_rings, nifp->ni_rx_rings, r.nr_tx_rings,
		    r.nr_rx_rings);
	if (ioctl(fd, NIOCTXSYNC, NULL) < 0 || ioctl(fd, NIOCRXSYNC, NULL) < 0)
		die("sync after register: %s", strerror(errno));
	struct nmreq_port_hdr ph = { .nr_hdr_len = 0 };
	if (ctrl(fd, pipe, NETMAP_API, NETMAP_REQ_PORT_HDR_GET, &ph) < 0 ||
	    ph.nr_hdr_len != 0)
		die("PORT_HDR_GET: %s", strerror(errno));
	printf("ok good register: memory %u, %u+%u rings, %u slots\n",
	       r.nr_mem_id, r.nr_tx_rings, r.nr_rx_rings, r.nr_tx_slots);
	bad_waits(fd);
	munmap(m, r.nr_memsize);
	close(fd);
	printf("bad requests: all as netmap\n");
	return 0;
}

#ifdef NMT_LIB
/* ------------------------------------------------------------------ */
/* The old API (NETMAP_WITH_LIBS): nm_open, nm_inject, nm_dispatch,
 * nm_nextpkt, nm_close. */

static struct nm_desc *lopen(const char *name)
{
	struct nm_desc *d = nm_open(name, NULL, 0, NULL);
	if (!d)
		die("%s: nm_open: %s", name, strerror(errno));
	if (!IS_NETMAP_DESC(d) || NETMAP_FD(d) < 0)
		die("%s: nm_open gave a bad descriptor", name);
	return d;
}

static void lwait(struct nm_desc *d, short ev)
{
	struct pollfd pfd = { .fd = NETMAP_FD(d), .events = ev };
	if (poll(&pfd, 1, 10000) <= 0)
		die("%s: poll: nothing in 10 s", d->req.nr_name);
}

static int lgen(const char *name, uint64_t count, unsigned len)
{
	struct nm_desc *d = lopen(name);
	printf("ready\n");
	uint8_t pkt[MAXPKT];
	for (uint64_t seq = 0; seq < count;) {
		fill(pkt, seq, len);
		if (nm_inject(d, pkt, len) == (int)len)
			seq++;
		else
			lwait(d, POLLOUT);
	}
	for (unsigned r = d->first_tx_ring; r <= d->last_tx_ring; r++) {
		struct netmap_ring *ring = NETMAP_TXRING(d->nifp, r);
		while (ioctl(NETMAP_FD(d), NIOCTXSYNC, NULL) == 0 &&
		       nm_tx_pending(ring)) {
			ring->cur = ring->tail;
			lwait(d, POLLOUT);
			ring->cur = ring->head;
		}
	}
	printf("sent %" PRIu64 " with nm_inject\n", count);
	return nm_close(d);
}

static uint64_t lnext;
static unsigned llen;

static void lcb(unsigned char *arg, const struct nm_pkthdr *h,
		const unsigned char *buf)
{
	(void)arg;
	if (h->buf != buf || h->slot == NULL || h->len != h->slot->len)
		die("nm_dispatch: inconsistent nm_pkthdr");
	check(buf, lnext, h->len, llen);
	lnext++;
}

static int lrecv(const char *name, uint64_t count, unsigned len)
{
	struct nm_desc *d = lopen(name);
	printf("ready\n");
	llen = len;
	uint64_t by_dispatch = 0, by_next = 0;
	while (lnext < count) {
		lwait(d, POLLIN);
		/* alternate: a dispatch of up to 64, then nm_nextpkt */
		int n = nm_dispatch(d, 64, lcb, NULL);
		if (n < 0)
			die("nm_dispatch: %d", n);
		by_dispatch += (uint64_t)n;
		struct nm_pkthdr h;
		unsigned char *b;
		while (lnext < count && (b = nm_nextpkt(d, &h)) != NULL) {
			check(b, lnext, h.len, len);
			lnext++;
			by_next++;
		}
	}
	ioctl(NETMAP_FD(d), NIOCRXSYNC, NULL);
	printf("received %" PRIu64 " in order, bytes ok (%" PRIu64
	       " by nm_dispatch, %" PRIu64 " by nm_nextpkt)\n",
	       lnext, by_dispatch, by_next);
	return nm_close(d);
}

/* As netmap's bridge decides: zero-copy iff the two descriptors map the
 * same memory. */
static int lmem(const char *a, const char *b)
{
	struct nm_desc *pa = lopen(a);
	struct nm_desc *pb = nm_open(b, NULL, NM_OPEN_NO_MMAP, pa);
	if (!pb)
		die("%s: nm_open: %s", b, strerror(errno));
	printf("zerocopy %ssupported (memory %u and %u)\n",
	       pa->mem == pb->mem ? "" : "NOT ", pa->req.nr_arg2,
	       pb->req.nr_arg2);
	nm_close(pb);
	return nm_close(pa);
}

/* As lb does: extra buffers asked in nm_open's base request (nr_arg3),
 * granted in d->req.nr_arg3, listed from ni_bufs_head. */
static int lextra(const char *name, uint32_t n)
{
	struct nmreq base;
	memset(&base, 0, sizeof(base));
	base.nr_arg3 = n;
	struct nm_desc *d = nm_open(name, &base, 0, NULL);
	if (!d)
		die("%s: nm_open: %s", name, strerror(errno));
	if (d->req.nr_arg3 != n)
		die("%s: asked %u extra buffers, nr_arg3 says %u", name, n,
		    d->req.nr_arg3);
	struct netmap_ring *ring = NETMAP_RXRING(d->nifp, d->first_rx_ring);
	uint32_t got = list_count(ring, d->nifp->ni_bufs_head, n);
	if (got != n)
		die("%s: ni_bufs_head lists %u, want %u", name, got, n);
	printf("nm_open: %u extra buffers from ni_bufs_head\n", got);
	return nm_close(d);
}

/* As lb does: open a port, then a pipe in the memory the first one got
 * ("NAME{N/xT@<nr_arg2>"): the two must share it. */
static int lshare(const char *a, const char *pipe)
{
	struct nm_desc *pa = lopen(a);
	char name[128];
	snprintf(name, sizeof(name), "netmap:%s/xT@%u", pipe, pa->req.nr_arg2);
	struct nm_desc *pb = nm_open(name, NULL, 0, pa);
	if (!pb)
		die("%s: nm_open: %s", name, strerror(errno));
	printf("zerocopy %s (memory %u and %u)\n",
	       pa->mem == pb->mem ? "enabled" : "disabled", pa->req.nr_arg2,
	       pb->req.nr_arg2);
	if (pb->first_rx_ring <= pb->last_rx_ring)
		die("%s: /T bound RX rings %u..%u", name, pb->first_rx_ring,
		    pb->last_rx_ring);
	nm_close(pb);
	return nm_close(pa);
}
#endif

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: nmt gen|recv PORT COUNT LEN [WAIT [frag]]\n"
				"       nmt fwd IN OUT COUNT [WAIT]\n"
				"       nmt extra PORT COUNT LEN NBUFS [WAIT]\n"
				"       nmt bad PIPE\n");
		return 2;
	}
	const char *role = argv[1];
	if (!strcmp(role, "bad"))
		return bad(argv[2]);
	if (!strcmp(role, "excl"))
		return excl(argv[2]);
	if (!strcmp(role, "lb") && argc >= 7) {
		wait_parse(argc > 7 ? argv[7] : NULL);
		return lb(argv[2], argv[3], (unsigned)atoi(argv[4]),
			  strtoull(argv[5], NULL, 0), (uint32_t)atoi(argv[6]));
	}
	if (!strcmp(role, "tlemt") && argc >= 5)
		return tlemt(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	if (!strcmp(role, "tlem") && argc >= 5) {
		wait_parse(argc > 5 ? argv[5] : NULL);
		return tlem(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	}
#ifdef NMT_LIB
	if (!strcmp(role, "lmem") && argc >= 4)
		return lmem(argv[2], argv[3]);
	if (!strcmp(role, "lshare") && argc >= 4)
		return lshare(argv[2], argv[3]);
	if (!strcmp(role, "lextra") && argc >= 4)
		return lextra(argv[2], (uint32_t)atoi(argv[3]));
	if (!strcmp(role, "lgen") && argc >= 5)
		return lgen(argv[2], strtoull(argv[3], NULL, 0),
			    (unsigned)atoi(argv[4]));
	if (!strcmp(role, "lrecv") && argc >= 5)
		return lrecv(argv[2], strtoull(argv[3], NULL, 0),
			     (unsigned)atoi(argv[4]));
#endif
	if (!strcmp(role, "fwd") && argc >= 5) {
		wait_parse(argc > 5 ? argv[5] : NULL);
		return fwd(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	}
	if (argc < 5)
		return 2;
	uint64_t count = strtoull(argv[3], NULL, 0);
	unsigned len = (unsigned)atoi(argv[4]);
	if (len < 8 || len > MAXPKT)
		die("length %u: 8..%u", len, MAXPKT);
	if (!strcmp(role, "extra") && argc >= 6) {
		wait_parse(argc > 6 ? argv[6] : NULL);
		return extra(argv[2], count, len, (uint32_t)atoi(argv[5]));
	}
	wait_parse(argc > 5 ? argv[5] : NULL);
	enum mode mode = M_FULL;
	if (argc > 6 && !strcmp(argv[6], "frag"))
		mode = M_FRAG;
	else if (argc > 6 && !strcmp(argv[6], "stamp"))
		mode = M_STAMP;
	else if (argc > 6 && !strcmp(argv[6], "fast"))
		mode = M_FAST;
	else if (argc > 6)
		die("mode: frag, stamp or fast, not %s", argv[6]);
	if (!strcmp(role, "gen"))
		return gen(argv[2], count, len, mode);
	if (!strcmp(role, "recv"))
		return recv_(argv[2], count, len, mode);
	return 2;
}
