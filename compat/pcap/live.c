/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Live handles: a pcap_t served from a pktmap port.
 *
 * Receiving is netmap's loop behind libpcap's callbacks: wait in
 * pktmap_poll(), hand every packet in [head, tail) of the RX rings to the
 * callback *in place* (the pointer is into the shared buffer; nothing is
 * copied), then move head. The buffers are given back at the next sync,
 * which only happens inside the next read call, so a packet's bytes stay
 * valid until then, as libpcap promises for pcap_next_ex().
 *
 * Filters run in the kernel where the port has a kernel filter (pkt:,
 * SO_ATTACH_FILTER, as libpcap does): only the packets already queued
 * when the filter was set are filtered here too. Elsewhere, and for
 * programs that test a VLAN tag (the kernel sees frames with the tag
 * taken out, we hand them over with the tag put back), they run here,
 * per packet, with the system libpcap's bpf_filter(). pcap_stats() reports ps_recv as libpcap on Linux does (packets that
 * passed the filter, plus those the kernel dropped), ps_drop from the
 * port's drop_backend counter.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "util.h"

#define PMC_ARENA_SLOTS 256
/* Ring sizes for kernel-fed ports (see ring_slots()). */
#define PMC_MIN_SLOTS 8192u
#define PMC_MAX_SLOTS 65536u
#define PMC_MAXSNAP 262144
/* The longest a wait sleeps before it looks at breakloop again (a
 * breakloop from another thread interrupts no system call). */
#define PMC_SLICE_MS 100
/* Batching for ports that deliver a few packets at a time (xdp: on veth
 * wakes its reader every two or three frames, pkt: in place at every
 * frame): after a batch of fewer
 * than PMC_COALESCE_MIN, the next read lets the ring fill for
 * PMC_COALESCE_NS first, as TPACKET_V3's block timeout does in libpcap.
 * Not in immediate mode, where a tool asked for each packet at once. */
#define PMC_COALESCE_MIN 64
#define PMC_COALESCE_NS 50000
/* Internal: the port's source has ended (a pcap: file port). */
#define PMC_EOF (-100)

/* ------------------------------------------------------------------ */
/* The arena of live handles */

static _Atomic(struct pmc *) arena;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

struct pmc *pmc_of(pcap_t *p)
{
	struct pmc *a = atomic_load_explicit(&arena, memory_order_acquire);
	uintptr_t off = (uintptr_t)p - (uintptr_t)a;

	if (!a || off >= PMC_ARENA_SLOTS * sizeof(struct pmc) ||
	    off % sizeof(struct pmc))
		return NULL;
	return (struct pmc *)(void *)p;
}

static struct pmc *pmc_alloc(char *errbuf)
{
	struct pmc *a, *h = NULL;

	pthread_mutex_lock(&arena_lock);
	a = atomic_load_explicit(&arena, memory_order_relaxed);
	if (!a) {
		void *m = mmap(NULL, PMC_ARENA_SLOTS * sizeof(struct pmc),
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED) {
			a = m;
			/* Pairs with the acquire load in pmc_of(). */
			atomic_store_explicit(&arena, a, memory_order_release);
		}
	}
	for (unsigned i = 0; a && i < PMC_ARENA_SLOTS; i++) {
		if (!a[i].in_use) {
			h = &a[i];
			memset(h, 0, sizeof(*h));
			h->in_use = true;
			break;
		}
	}
	pthread_mutex_unlock(&arena_lock);
	if (!h)
		snprintf(errbuf, PCAP_ERRBUF_SIZE, "pktmap libpcap: %s",
			 a ? "too many open handles" : "out of memory");
	return h;
}

/* At exit, close the handles the tool left open (libpcap does the same
 * for interfaces it put in promiscuous mode): a tool that exit()s on an
 * error would otherwise leave an XDP program on its interface, or a
 * pipe's files in /dev/shm. */
static void close_all(void)
{
	struct pmc *a = atomic_load_explicit(&arena, memory_order_acquire);

	for (unsigned i = 0; a && i < PMC_ARENA_SLOTS; i++)
		if (a[i].in_use)
			pmc_close(&a[i]);
}

static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

static void add_exit(void)
{
	atexit(close_all);
}

static void pmc_free(struct pmc *h)
{
	pthread_mutex_lock(&arena_lock);
	h->in_use = false;
	pthread_mutex_unlock(&arena_lock);
}

/* ------------------------------------------------------------------ */
/* Which names are ours */

static bool is_backend(const char *name, size_t len)
{
	for (unsigned i = 0;; i++) {
		const struct pktmap_backend_desc *b = pktmap_backend(i);

		if (!b)
			return false;
		if (strlen(b->name) == len && strncmp(b->name, name, len) == 0)
			return true;
	}
}

/* Names libpcap serves itself and no pktmap port should take: its
 * pseudo-devices, and the loopback (an XDP program there would take
 * the host's own traffic away from it). */
static bool is_pseudo(const char *d)
{
	static const char *const exact[] = { "any", "lo" };
	static const char *const prefix[] = {
		"nflog", "nfqueue", "dbus-", "bluetooth", "usbmon", "canusb",
		"rpcap://",
	};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(d, exact[i]) == 0)
			return true;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncmp(d, prefix[i], strlen(prefix[i])) == 0)
			return true;
	return false;
}

bool pmc_device_is_ours(const char *device, char *port, size_t len)
{
	const char *colon, *map;

	if (!device || !device[0])
		return false;
	colon = strchr(device, ':');
	if (colon) {
		if (!is_backend(device, (size_t)(colon - device)))
			return false;
		snprintf(port, len, "%s", device);
		return true;
	}
	map = getenv("PKTMAP_PCAP_MAP");
	if (!map || (strcmp(map, "xdp") != 0 && strcmp(map, "pkt") != 0) ||
	    is_pseudo(device))
		return false;
	snprintf(port, len, "%s:%s", map, device);
	return true;
}

/* ------------------------------------------------------------------ */
/* Creation and activation */

pcap_t *pmc_create(const char *device, const char *port, char *errbuf)
{
	struct pmc *h = pmc_alloc(errbuf);

	if (!h)
		return NULL;
	snprintf(h->device, sizeof(h->device), "%s", device);
	snprintf(h->portname, sizeof(h->portname), "%s", port);
	h->tstamp_type = PCAP_TSTAMP_HOST;
	h->tstamp_precision = PCAP_TSTAMP_PRECISION_MICRO;
	h->direction = PCAP_D_INOUT;
	return (pcap_t *)(void *)h;
}

static int status_of(int err)
{
	switch (err) {
	case -ENODEV:
	case -ENOENT:
	case -ENXIO:
		return PCAP_ERROR_NO_SUCH_DEVICE;
	case -EPERM:
	case -EACCES:
		return PCAP_ERROR_PERM_DENIED;
	default:
		return PCAP_ERROR;
	}
}

/* RX slots for a kernel-fed port: libpcap's buffer size at an average of
 * 256 bytes a packet (TPACKET_V3 packs small frames that densely), at
 * least PMC_MIN_SLOTS; a port name's @conf wins. Pipes keep the size
 * their creator gave. pkt: gives its kernel ring 4 KiB a slot, in blocks
 * or in 2 KiB frames: bytes / 4096 slots is libpcap's memory. */
static uint32_t ring_slots(const struct pmc *h)
{
	uint32_t want = h->buffer_size > 0 ? (uint32_t)h->buffer_size / 256 : 0;
	uint32_t s = PMC_MIN_SLOTS;

	/* pkt: the same memory as libpcap's buffer (32 MiB at least). */
	if (strncmp(h->portname, "pkt:", 4) == 0)
		want = h->buffer_size > 0 ? (uint32_t)h->buffer_size / 4096 : 0;

	if (strncmp(h->portname, "xdp:", 4) != 0 &&
	    strncmp(h->portname, "pkt:", 4) != 0 &&
	    strncmp(h->portname, "tap:", 4) != 0)
		return 0;
	while (s < want && s < PMC_MAX_SLOTS)
		s <<= 1;
	return s;
}

static int open_port(struct pmc *h, uint32_t dir)
{
	struct pktmap_open_opts o;

	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.dir = dir;
	o.slots = ring_slots(h);
	/* pkt: RX in the kernel's TPACKET_V3 blocks, read where the kernel
	 * wrote them (the library never swaps or keeps a buffer), handed
	 * over when full or after the read timeout: what libpcap does.
	 * Immediate mode wants each frame at once: TPACKET_V2 frames, as
	 * libpcap. A name's @conf:rx= wins. */
	if (!h->immediate) {
		o.flags |= PKTMAP_OPEN_RX_BLOCKS;
		o.rx_block_ms = h->timeout_ms > 0 ? (uint32_t)h->timeout_ms : 0;
	}
	o.errbuf = h->errbuf;
	o.errbuf_len = sizeof(h->errbuf);
	h->errbuf[0] = 0;
	return pktmap_open(&h->port, h->portname, &o);
}

/* A plain interface name mapped to xdp: (PKTMAP_PCAP_MAP=xdp) that
 * cannot be opened for want of a privilege the tool dropped (dumpcap
 * keeps only CAP_NET_RAW and CAP_NET_ADMIN) or of locked memory: capture
 * on pkt: instead, which needs neither. Returns true with the notice in
 * errbuf and pkt:DEVICE in portname; the caller tries again. */
static bool fallback_pkt(struct pmc *h, int rc)
{
	char why[PCAP_ERRBUF_SIZE];

	if (rc != -EPERM && rc != -EACCES && rc != -ENOBUFS && rc != -ENOMEM)
		return false;
	if (strchr(h->device, ':') || strncmp(h->portname, "xdp:", 4) != 0)
		return false;
	snprintf(why, sizeof(why), "%s", h->errbuf);
	snprintf(h->portname, sizeof(h->portname), "pkt:%s", h->device);
	snprintf(h->errbuf, sizeof(h->errbuf), "%.200s; capturing on pkt:%.30s "
		 "instead", why, h->device);
	return true;
}

int pmc_activate(struct pmc *h)
{
	const struct pmc_real *r = pmc_real();
	struct pktmap_info info = {.sz = sizeof(info)};
	int rc;

	if (h->activated) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "can't perform  operation on activated capture");
		return PCAP_ERROR_ACTIVATED;
	}
	if (!r) {
		snprintf(h->errbuf, sizeof(h->errbuf), "pktmap libpcap: %s",
			 pmc_real_error());
		return PCAP_ERROR;
	}
	if (h->rfmon) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "%s: pktmap ports have no monitor mode", h->device);
		return PCAP_ERROR_RFMON_NOTSUP;
	}
	/* Both directions, so that pcap_inject() works; a port that can
	 * only receive (a capture file read with /R) is opened for that. */
	rc = open_port(h, strncmp(h->portname, "pcap:", 5) == 0
				  ? PKTMAP_DIR_RX
				  : PKTMAP_DIR_BOTH);
	if (rc == -EINVAL || rc == -EOPNOTSUPP)
		rc = open_port(h, PKTMAP_DIR_RX);
	bool fell_back = false;
	if (rc < 0 && fallback_pkt(h, rc)) {
		char notice[PCAP_ERRBUF_SIZE];

		snprintf(notice, sizeof(notice), "%s", h->errbuf);
		rc = open_port(h, PKTMAP_DIR_BOTH);
		fell_back = rc == 0;
		if (fell_back)
			snprintf(h->errbuf, sizeof(h->errbuf), "%s", notice);
		else /* say why xdp: failed, not pkt: */
			snprintf(h->portname, sizeof(h->portname), "xdp:%s",
				 h->device);
	}
	if (rc < 0) {
		h->port = NULL;
		if (!h->errbuf[0])
			snprintf(h->errbuf, sizeof(h->errbuf), "%s: %s",
				 h->portname, pktmap_strerror(rc));
		return status_of(rc);
	}
	pktmap_info(h->port, &info);
	struct netmap_if *nifp = pktmap_nifp(h->port);
	h->nrx = h->ntx = 0;
	if (info.dir & PKTMAP_DIR_RX)
		for (uint32_t i = info.first_rx_ring;
		     i <= info.last_rx_ring && h->nrx < PMC_MAX_RINGS; i++)
			h->rx[h->nrx++] = NETMAP_RXRING(nifp, i);
	if (info.dir & PKTMAP_DIR_TX)
		for (uint32_t i = info.first_tx_ring;
		     i <= info.last_tx_ring && h->ntx < PMC_MAX_RINGS; i++)
			h->tx[h->ntx++] = NETMAP_TXRING(nifp, i);
	if (!info.rx_slots)
		h->nrx = 0;
	if (!info.tx_slots)
		h->ntx = 0;
	h->buf_usable = info.buf_usable;
	h->linktype = (int)info.linktype;
	if (h->nrx && pmc_set_direction(h, h->direction) < 0 &&
	    h->direction != PCAP_D_INOUT) {
		pktmap_close(h->port);
		h->port = NULL;
		return PCAP_ERROR;
	}
	/* xdp: on veth, and pkt: in place (TPACKET_V2 wakes its reader
	 * for every frame), hand over a few frames at a time; pkt: in
	 * blocks hands over a block at a time already (a pause after a
	 * small one would only delay the next). */
	h->coalesce = !h->immediate && (strcmp(info.backend, "xdp") == 0 ||
					strcmp(info.backend, "pkt") == 0) &&
		      !(info.flags & PKTMAP_INFO_RX_BLOCKS);
	h->ts_from_ptr = strcmp(info.backend, "pkt") == 0 ||
			 strcmp(info.backend, "tap") == 0 ||
			 strcmp(info.backend, "pcap") == 0;
	if (h->snaplen <= 0 || h->snaplen > PMC_MAXSNAP)
		h->snaplen = PMC_MAXSNAP;
	h->dead = r->pcap_open_dead_with_tstamp_precision(
		h->linktype, h->snaplen, (u_int)h->tstamp_precision);
	if (!h->dead) {
		pktmap_close(h->port);
		h->port = NULL;
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "pktmap libpcap: pcap_open_dead failed");
		return PCAP_ERROR;
	}
	h->activated = true;
	pthread_once(&atexit_once, add_exit);
	/* pcap_activate() succeeded with a warning, which the tool prints. */
	return fell_back ? PCAP_WARNING : 0;
}

pcap_t *pmc_open_live(const char *device, const char *port, int snaplen,
		      int promisc, int to_ms, char *errbuf)
{
	pcap_t *p = pmc_create(device, port, errbuf);
	struct pmc *h;
	int status;

	if (!p)
		return NULL;
	h = pmc_of(p);
	h->snaplen = snaplen;
	h->promisc = promisc;
	h->timeout_ms = to_ms;
	status = pmc_activate(h);
	if (status < 0) {
		/* libpcap's pcap_open_live() words */
		const struct pmc_real *r = pmc_real();
		const char *what = r ? r->pcap_statustostr(status) : "error";

		if (status == PCAP_ERROR)
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s", h->errbuf);
		else if (status == PCAP_ERROR_NO_SUCH_DEVICE ||
			 status == PCAP_ERROR_PERM_DENIED ||
			 status == PCAP_ERROR_PROMISC_PERM_DENIED)
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s: %s (%.*s)", device,
				 what, PCAP_ERRBUF_SIZE / 2, h->errbuf);
		else
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s: %s", device, what);
		pmc_close(h);
		return NULL;
	}
	return p;
}

/* Send what inject() left pending (a peer may be slow), for a second at
 * most, then close. */
void pmc_close(struct pmc *h)
{
	const struct pmc_real *r = pmc_real();

	if (h->port) {
		for (int i = 0; i < 10; i++) {
			bool pending = false;

			for (unsigned k = 0; k < h->ntx; k++)
				pending |= nm_tx_pending(h->tx[k]);
			if (!pending || pktmap_poll(h->port, POLLOUT, 100) < 0)
				break;
		}
		pktmap_close(h->port);
	}
	if (h->dead && r)
		r->pcap_close(h->dead);
	free(h->filter);
	free(h->chain_buf);
	pmc_free(h);
}

int pmc_lookupnet(const char *device, bpf_u_int32 *net, bpf_u_int32 *mask,
		  char *errbuf)
{
	const struct pmc_real *r = pmc_real();
	char be[16], ifname[256];
	const char *colon = strchr(device, ':');
	size_t n;

	/* A port on an interface answers for that interface. */
	if (colon && (size_t)(colon - device) < sizeof(be)) {
		memcpy(be, device, (size_t)(colon - device));
		be[colon - device] = 0;
		if (strcmp(be, "xdp") == 0 || strcmp(be, "pkt") == 0) {
			n = strcspn(colon + 1, "-^/@");
			snprintf(ifname, sizeof(ifname), "%.*s", (int)n, colon + 1);
			if (r)
				return r->pcap_lookupnet(ifname, net, mask, errbuf);
		}
	} else if (!colon && r) {
		return r->pcap_lookupnet(device, net, mask, errbuf);
	}
	/* Pipes, the switch, files: no network, as libpcap says for "any". */
	*net = 0;
	*mask = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Filter and direction */

int pmc_set_filter(struct pmc *h, const struct bpf_insn *insns, u_int len)
{
	struct bpf_insn *copy = malloc((len ? len : 1) * sizeof(*copy));
	int rc;

	if (!copy) {
		snprintf(h->errbuf, sizeof(h->errbuf), "malloc: %s",
			 strerror(errno));
		return PCAP_ERROR;
	}
	memcpy(copy, insns, len * sizeof(*copy));
	free(h->filter);
	h->filter = copy;
	h->filter_len = len;
	h->kfilter = false;
	/* "accept the first N bytes" alone (tcpdump without an expression):
	 * nothing to run, the snapshot length does the cut. */
	if (len == 1 && insns[0].code == (BPF_RET | BPF_K) && insns[0].k) {
		free(h->filter);
		h->filter = NULL;
		h->filter_len = 0;
		if (h->port && h->nrx)
			(void)pktmap_set_rx_filter(h->port, NULL, 0);
		return 0;
	}
	if (!h->port || !h->nrx)
		return 0;
	rc = pktmap_set_rx_filter(h->port, insns, len);
	if (rc >= 0) {
		/* What is queued already has not met the kernel's filter. */
		uint64_t queued = (uint64_t)rc;

		for (unsigned k = 0; k < h->nrx; k++)
			queued += nm_ring_space(h->rx[k]);
		h->kfilter = true;
		h->ufilter_left = queued;
	} else if (rc != -EOPNOTSUPP) {
		/* Refused (too long, ...): no kernel filter, ours runs. */
		(void)pktmap_set_rx_filter(h->port, NULL, 0);
	}
	return 0;
}

int pmc_set_direction(struct pmc *h, pcap_direction_t d)
{
	int rc;

	h->direction = d;
	if (!h->port || !h->nrx)
		return 0;
	rc = pktmap_set_rx_direction(h->port, d == PCAP_D_IN ? PKTMAP_RX_IN :
					      d == PCAP_D_OUT ? PKTMAP_RX_OUT :
								 PKTMAP_RX_INOUT);
	if (rc == -EOPNOTSUPP) {
		/* Other ports see what arrives on them only. */
		if (d == PCAP_D_OUT) {
			snprintf(h->errbuf, sizeof(h->errbuf),
				 "Setting direction to PCAP_D_OUT is not "
				 "supported on %s", h->portname);
			return PCAP_ERROR;
		}
		return 0;
	}
	if (rc < 0) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "%s: cannot set the direction: %s", h->portname,
			 pktmap_strerror(rc));
		return PCAP_ERROR;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Receiving */

/* Wait until a packet is there. Returns 1, 0 when the timeout passed
 * (or at once in non-blocking mode), PCAP_ERROR_BREAK, PCAP_ERROR or
 * PMC_EOF. */
static int wait_rx(struct pmc *h)
{
	int64_t deadline = h->timeout_ms > 0 ? pm_clock_ms(CLOCK_MONOTONIC) + h->timeout_ms : -1;

	if (h->small_batch && !h->nonblock) {
		struct timespec d = {0, PMC_COALESCE_NS};

		h->small_batch = false;
		nanosleep(&d, NULL);
	}

	for (;;) {
		int slice = h->nonblock ? 0 : PMC_SLICE_MS, rc;

		if (atomic_exchange_explicit(&h->break_loop, 0,
					     memory_order_relaxed))
			return PCAP_ERROR_BREAK;
		if (deadline >= 0) {
			int64_t left = deadline - pm_clock_ms(CLOCK_MONOTONIC);

			if (left < slice)
				slice = left > 0 ? (int)left : 0;
		}
		rc = pktmap_poll(h->port, POLLIN, slice);
		if (rc < 0) {
			snprintf(h->errbuf, sizeof(h->errbuf), "%s: %s",
				 h->portname, pktmap_strerror(rc));
			return PCAP_ERROR;
		}
		if (rc & POLLIN)
			return 1;
		if (rc & POLLHUP)
			return PMC_EOF;
		if (h->nonblock || (deadline >= 0 && pm_clock_ms(CLOCK_MONOTONIC) >= deadline))
			return 0;
	}
}

/* An NS_MOREFRAG chain from slot i: copied into chain_buf (up to the
 * snapshot length). Returns the slots it spans, 0 when its last fragment
 * has not arrived (or no memory: the chain is then skipped whole). */
static uint32_t chain(struct pmc *h, struct netmap_ring *ring, uint32_t i,
		      uint32_t avail, uint32_t *len, uint32_t *caplen)
{
	uint32_t k = 0, total = 0, cap = 0;

	if (!h->chain_buf)
		h->chain_buf = malloc((size_t)h->snaplen);
	for (;;) {
		const struct netmap_slot *s = &ring->slot[i];
		uint32_t take = s->len;

		if (h->chain_buf && cap < (uint32_t)h->snaplen) {
			if (take > (uint32_t)h->snaplen - cap)
				take = (uint32_t)h->snaplen - cap;
			memcpy(h->chain_buf + cap, NETMAP_BUF(ring, s->buf_idx),
			       take);
			cap += take;
		}
		total += s->len;
		k++;
		if (!(s->flags & NS_MOREFRAG))
			break;
		if (k == avail)
			return 0;
		i = nm_ring_next(ring, i);
	}
	*len = total;
	*caplen = cap;
	return k;
}

/* Hand up to max packets (all there are when max <= 0) to cb. Returns
 * the number delivered, or PCAP_ERROR_BREAK when breakloop was called
 * from the callback. */
static int deliver(struct pmc *h, int max, pcap_handler cb, u_char *user)
{
	const struct pmc_real *r = pmc_real();
	const struct bpf_insn *filter = h->kfilter && !h->ufilter_left ? NULL :
									 h->filter;
	const bool nano = h->tstamp_precision == PCAP_TSTAMP_PRECISION_NANO;
	const uint32_t snap = (uint32_t)h->snaplen;
	uint64_t now = h->ts_from_ptr ? 0 : pm_clock_ns(CLOCK_REALTIME);
	struct pcap_pkthdr hdr;
	int n = 0;

	hdr.ts.tv_sec = (time_t)(now / 1000000000u);
	hdr.ts.tv_usec = (suseconds_t)(nano ? now % 1000000000u
					    : now % 1000000000u / 1000u);

	for (unsigned k = 0; k < h->nrx; k++) {
		unsigned ri = h->rx_next + k;
		struct netmap_ring *ring = h->rx[ri >= h->nrx ? ri - h->nrx : ri];
		uint32_t i = ring->head, avail = nm_ring_space(ring);

		while (avail) {
			const struct netmap_slot *s = &ring->slot[i];
			const u_char *data;
			uint32_t len, caplen, used = 1;

			if (pm_likely(!(s->flags & NS_MOREFRAG))) {
				data = (const u_char *)NETMAP_BUF(ring, s->buf_idx);
				len = s->len;
				caplen = len < snap ? len : snap;
			} else {
				used = chain(h, ring, i, avail, &len, &caplen);
				if (!used)
					break;
				data = h->chain_buf;
			}
			i += used;
			if (i >= ring->num_slots)
				i -= ring->num_slots;
			avail -= used;
			if (pm_unlikely(!data))
				continue;
			if (pm_unlikely(filter != NULL)) {
				if (h->kfilter && h->ufilter_left &&
				    !--h->ufilter_left)
					filter = NULL; /* the kernel's from now */
				if (!r->bpf_filter(h->filter, data, len, caplen)) {
					/* Seen by pktmap top as filtered. */
					pktmap_set_drops(h->port, PKTMAP_DROP_FILTERED,
							 ++h->filtered);
					continue;
				}
			}
			if (h->ts_from_ptr) { /* else: the batch's, set once */
				uint64_t ts = s->ptr;

				hdr.ts.tv_sec = (time_t)(ts / 1000000000u);
				hdr.ts.tv_usec = (suseconds_t)(
					nano ? ts % 1000000000u
					     : ts % 1000000000u / 1000u);
			}
			hdr.caplen = caplen;
			hdr.len = len;
			h->passed++;
			cb(user, &hdr, data);
			n++;
			if (pm_unlikely(atomic_load_explicit(&h->break_loop,
							  memory_order_relaxed))) {
				ring->head = ring->cur = i;
				atomic_store_explicit(&h->break_loop, 0,
						      memory_order_relaxed);
				return PCAP_ERROR_BREAK;
			}
			if (max > 0 && n >= max)
				break;
		}
		ring->head = ring->cur = i;
		if (max > 0 && n >= max)
			break;
	}
	if (++h->rx_next >= h->nrx)
		h->rx_next = 0;
	/* (Not when the caller asked for fewer: dumpcap dispatches one packet
	 * per select(), with the ring still full.) */
	h->small_batch = h->coalesce && n < PMC_COALESCE_MIN &&
			 (max <= 0 || n < max);
	return n;
}

/* Nothing left unread on the rings (the fd then depends on an rxsync;
 * with packets left it is readable anyway). */
static bool rx_drained(const struct pmc *h)
{
	for (unsigned k = 0; k < h->nrx; k++)
		if (!nm_ring_empty(h->rx[k]))
			return false;
	return true;
}

int pmc_dispatch(struct pmc *h, int cnt, pcap_handler cb, u_char *user)
{
	/* Packets left from the last sync (dumpcap takes one per select()):
	 * no sync, no wait. */
	int rc = !rx_drained(h) && !atomic_load_explicit(&h->break_loop,
							 memory_order_relaxed)
			 ? 1
			 : wait_rx(h);

	if (rc == PMC_EOF)
		return 0;
	if (rc <= 0)
		return rc;
	rc = deliver(h, cnt, cb, user);
	/* A tool that waits on the selectable fd: give the slots back now,
	 * as libpcap does at the end of a dispatch, so that the fd is
	 * readable after this call only when more packets wait (a tool in
	 * blocking mode woken for nothing would block in its next call). */
	if (h->fd_given && rc >= 0 && rx_drained(h))
		(void)pktmap_rxsync(h->port);
	return rc;
}

int pmc_loop(struct pmc *h, int cnt, pcap_handler cb, u_char *user)
{
	int n = 0;

	for (;;) {
		int rc = wait_rx(h);

		if (rc == PMC_EOF)
			return 0;
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;
		rc = deliver(h, cnt > 0 ? cnt - n : -1, cb, user);
		if (rc < 0)
			return rc;
		n += rc;
		if (cnt > 0 && n >= cnt)
			return 0;
	}
}

struct one {
	struct pmc *h;
	const u_char *data;
};

static void take_one(u_char *user, const struct pcap_pkthdr *hdr,
		     const u_char *data)
{
	struct one *o = (struct one *)(void *)user;

	o->h->next_hdr = *hdr;
	o->data = data;
}

int pmc_next_ex(struct pmc *h, struct pcap_pkthdr **hdr, const u_char **data)
{
	struct one o = {h, NULL};

	for (;;) {
		int rc = wait_rx(h);

		if (rc == PMC_EOF)
			return PCAP_ERROR_BREAK; /* as at the end of a file */
		if (rc <= 0)
			return rc;
		rc = deliver(h, 1, take_one, (u_char *)&o);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			*hdr = &h->next_hdr;
			*data = o.data;
			return 1;
		}
		if (h->nonblock)
			return 0;
		/* all filtered out: wait again */
	}
}

/* ------------------------------------------------------------------ */
/* Sending and counters */

int pmc_inject(struct pmc *h, const void *buf, size_t size)
{
	struct netmap_ring *ring;
	struct netmap_slot *s;
	int rc;

	if (!h->ntx) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "%s: this port cannot send", h->portname);
		return PCAP_ERROR;
	}
	if (size > h->buf_usable) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "%s: a %zu-byte packet does not fit a buffer (%u bytes)",
			 h->portname, size, h->buf_usable);
		return PCAP_ERROR;
	}
	ring = h->tx[h->tx_next];
	if (++h->tx_next >= h->ntx)
		h->tx_next = 0;
	for (int tries = 0; nm_ring_empty(ring); tries++) {
		rc = pktmap_poll(h->port, POLLOUT, 1000);
		if (rc < 0) {
			snprintf(h->errbuf, sizeof(h->errbuf), "%s: %s",
				 h->portname, pktmap_strerror(rc));
			return PCAP_ERROR;
		}
		if (tries == 5 && nm_ring_empty(ring)) {
			snprintf(h->errbuf, sizeof(h->errbuf),
				 "%s: no room to send for 5 seconds",
				 h->portname);
			return PCAP_ERROR;
		}
	}
	s = &ring->slot[ring->head];
	memcpy(NETMAP_BUF(ring, s->buf_idx), buf, size);
	s->len = (uint16_t)size;
	s->flags = 0;
	ring->head = ring->cur = nm_ring_next(ring, ring->head);
	rc = pktmap_txsync(h->port);
	if (rc < 0) {
		snprintf(h->errbuf, sizeof(h->errbuf), "%s: %s", h->portname,
			 pktmap_strerror(rc));
		return PCAP_ERROR;
	}
	return (int)size;
}

int pmc_stats(struct pmc *h, struct pcap_stat *ps)
{
	struct pktmap_stats st = {.sz = sizeof(st)};
	int rc = pktmap_stats(h->port, &st);

	if (rc < 0) {
		snprintf(h->errbuf, sizeof(h->errbuf), "%s: %s", h->portname,
			 pktmap_strerror(rc));
		return PCAP_ERROR;
	}
	ps->ps_recv = (u_int)(h->passed + st.drop_backend);
	ps->ps_drop = (u_int)st.drop_backend;
	ps->ps_ifdrop = (u_int)(st.drop_too_long + st.drop_invalid);
	return 0;
}
