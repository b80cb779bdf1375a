/* SPDX-License-Identifier: BSD-2-Clause
 *
 * <net/netmap_user.h> for netmap programs built on pktmap: netmap's
 * inline ring helpers (pktmap's own, <pktmap/netmap_user.h>) and what
 * netmap's header adds around them: NETMAP_DEVICE_NAME, the buffer offset
 * macros, nm_pkt_copy(), the D/RD/ND log macros, likely/unlikely, and,
 * with NETMAP_WITH_LIBS, the old nm_open() family, served by
 * libpktmap-netmap. See docs/netmap.md.
 */
#ifndef _NET_NETMAP_USER_H_
#define _NET_NETMAP_USER_H_

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <net/if.h>

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

#include <net/netmap.h>
#include <pktmap/netmap_user.h>

#define NETMAP_DEVICE_NAME "/dev/netmap"

/* Buffer offsets (NETMAP_REQ_OPT_OFFSETS): the low bits of slot->ptr
 * selected by ring->offset_mask say where the packet starts. */
#define NETMAP_ROFFSET(ring, slot) ((slot)->ptr & (ring)->offset_mask)
#define NETMAP_WOFFSET(ring, slot, offset)                              \
	do {                                                            \
		(slot)->ptr = ((slot)->ptr & ~(ring)->offset_mask) |    \
			      ((uint64_t)(offset) & (ring)->offset_mask); \
	} while (0)
#define NETMAP_BUF_OFFSET(ring, slot) \
	(NETMAP_BUF(ring, (slot)->buf_idx) + NETMAP_ROFFSET(ring, slot))

/* Log lines as netmap's programs print them: time, function, line. */
#define D(_fmt, ...)                                                     \
	do {                                                             \
		struct timeval _t0;                                      \
		gettimeofday(&_t0, NULL);                                \
		fprintf(stderr, "%03d.%06d %s [%d] " _fmt "\n",          \
			(int)(_t0.tv_sec % 1000), (int)_t0.tv_usec,      \
			__func__, __LINE__, ##__VA_ARGS__);              \
	} while (0)

/* At most lps lines a second from this call site. */
#define RD(lps, _fmt, ...)                                               \
	do {                                                             \
		static int _t1, _cnt;                                    \
		struct timeval _t2;                                      \
		gettimeofday(&_t2, NULL);                                \
		if (_t1 != (int)_t2.tv_sec) {                            \
			_t1 = (int)_t2.tv_sec;                           \
			_cnt = 0;                                        \
		}                                                        \
		if (_cnt++ < (lps))                                      \
			D(_fmt, ##__VA_ARGS__);                          \
	} while (0)

#define ND(_fmt, ...) do {} while (0)

/* Copy a packet: whole 64-byte blocks with 8-byte moves for short
 * multiples of 64, memcpy() for everything else (it never reads or writes
 * past l bytes). */
static inline void nm_pkt_copy(const void *_src, void *_dst, int l)
{
	const uint64_t *src = (const uint64_t *)_src;
	uint64_t *dst = (uint64_t *)_dst;
	if (unlikely(l <= 0))
		return;
	if (unlikely(l >= 1024 || (l & 63))) {
		memcpy(dst, src, (size_t)l);
		return;
	}
	for (; l > 0; l -= 64) {
		dst[0] = src[0]; dst[1] = src[1]; dst[2] = src[2]; dst[3] = src[3];
		dst[4] = src[4]; dst[5] = src[5]; dst[6] = src[6]; dst[7] = src[7];
		dst += 8;
		src += 8;
	}
}

#ifdef NETMAP_WITH_LIBS
#ifndef HAVE_NETMAP_WITH_LIBS
#define HAVE_NETMAP_WITH_LIBS

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What nm_dispatch() hands its callback; starts like pcap_pkthdr. */
struct nm_pkthdr {
	struct timeval ts;
	uint32_t caplen;
	uint32_t len;
	uint64_t flags;
#define NM_MORE_PKTS 1
	struct nm_desc *d;
	struct netmap_slot *slot;
	uint8_t *buf;
};

struct nm_stat {
	unsigned int ps_recv;
	unsigned int ps_drop;
	unsigned int ps_ifdrop;
};

#define NM_ERRBUF_SIZE 512

/* An open port, as nm_open() returns it. */
struct nm_desc {
	struct nm_desc *self;   /* points to itself while open */
	int fd;
	void *mem;
	uint64_t memsize;
	int done_mmap;
	struct netmap_if *const nifp;
	uint16_t first_tx_ring, last_tx_ring, cur_tx_ring;
	uint16_t first_rx_ring, last_rx_ring, cur_rx_ring;
	struct nmreq req;       /* nr_name and what the registration gave */
	struct nm_pkthdr hdr;
	struct netmap_ring *const some_ring;
	void *const buf_start;
	void *const buf_end;
	int snaplen;
	int promisc;
	int to_ms;
	char *errbuf;
	uint32_t if_flags;
	uint32_t if_reqcap;
	uint32_t if_curcap;
	struct nm_stat st;
	char msg[NM_ERRBUF_SIZE];
	void *pktmap_port;      /* libpktmap-netmap's descriptor */
};

#define P2NMD(p) ((struct nm_desc *)(p))
#define IS_NETMAP_DESC(d) ((d) && P2NMD(d)->self == P2NMD(d))
#define NETMAP_FD(d) (P2NMD(d)->fd)

typedef void (*nm_cb_t)(unsigned char *, const struct nm_pkthdr *,
			const unsigned char *d);

/* nm_open() flags: which fields of `req` to take, and memory sharing. */
#define NM_OPEN_NO_MMAP 0x040000
#define NM_OPEN_IFNAME 0x080000
#define NM_OPEN_ARG1 0x100000
#define NM_OPEN_ARG2 0x200000
#define NM_OPEN_ARG3 0x400000
#define NM_OPEN_RING_CFG 0x800000

/* Implemented in libpktmap-netmap, over its libnetmap. */
struct nm_desc *pktmap_nm_open(const char *ifname, const struct nmreq *req,
			       uint64_t flags, const struct nm_desc *arg);
int pktmap_nm_close(struct nm_desc *d);
int pktmap_nm_mmap(struct nm_desc *d, const struct nm_desc *parent);

static inline struct nm_desc *nm_open(const char *ifname,
				      const struct nmreq *req, uint64_t flags,
				      const struct nm_desc *arg)
{
	return pktmap_nm_open(ifname, req, flags, arg);
}

static inline int nm_close(struct nm_desc *d)
{
	return pktmap_nm_close(d);
}

static inline int nm_mmap(struct nm_desc *d, const struct nm_desc *parent)
{
	return pktmap_nm_mmap(d, parent);
}

/* Copy one packet into the next free slot of a TX ring, trying the rings
 * in turn from cur_tx_ring. Returns size, or 0 when every ring is full. */
static inline int nm_inject(struct nm_desc *d, const void *buf, size_t size)
{
	unsigned n = (unsigned)(d->last_tx_ring - d->first_tx_ring + 1);
	unsigned ri = d->cur_tx_ring;
	for (unsigned c = 0; c < n; c++, ri++) {
		if (ri > d->last_tx_ring)
			ri = d->first_tx_ring;
		struct netmap_ring *ring = NETMAP_TXRING(d->nifp, ri);
		if (nm_ring_empty(ring) || size > ring->nr_buf_size)
			continue;
		uint32_t i = ring->head;
		struct netmap_slot *s = &ring->slot[i];
		memcpy(NETMAP_BUF(ring, s->buf_idx), buf, size);
		s->len = (uint16_t)size;
		s->flags = 0;
		ring->head = ring->cur = nm_ring_next(ring, i);
		d->cur_tx_ring = (uint16_t)ri;
		return (int)size;
	}
	return 0;
}

/* Hand up to cnt received packets (cnt <= 0: all there are) to cb, ring
 * after ring from cur_rx_ring, as pcap_dispatch() does. */
static inline int nm_dispatch(struct nm_desc *d, int cnt, nm_cb_t cb,
			      unsigned char *arg)
{
	int n = d->last_rx_ring - d->first_rx_ring + 1;
	int got = 0, ri = d->cur_rx_ring;
	d->hdr.buf = NULL;
	d->hdr.flags = NM_MORE_PKTS;
	d->hdr.d = d;
	if (cnt <= 0)
		cnt = -1;
	for (int c = 0; c < n && cnt != got; c++, ri++) {
		if (ri > d->last_rx_ring)
			ri = d->first_rx_ring;
		struct netmap_ring *ring = NETMAP_RXRING(d->nifp, ri);
		while (!nm_ring_empty(ring) && cnt != got) {
			uint32_t i = ring->head;
			struct netmap_slot *s = &ring->slot[i];
			unsigned char *buf = (unsigned char *)NETMAP_BUF(ring, s->buf_idx);
			d->hdr.slot = s;
			d->hdr.buf = buf;
			d->hdr.len = d->hdr.caplen = s->len;
			d->hdr.ts = ring->ts;
			cb(arg, &d->hdr, buf);
			ring->head = ring->cur = nm_ring_next(ring, i);
			got++;
		}
		d->cur_rx_ring = (uint16_t)ri;
	}
	return got;
}

/* The next received packet (NULL if none), its header in *hdr. */
static inline unsigned char *nm_nextpkt(struct nm_desc *d,
					struct nm_pkthdr *hdr)
{
	int ri = d->cur_rx_ring;
	do {
		struct netmap_ring *ring = NETMAP_RXRING(d->nifp, ri);
		if (!nm_ring_empty(ring)) {
			uint32_t i = ring->head;
			struct netmap_slot *s = &ring->slot[i];
			unsigned char *buf = (unsigned char *)NETMAP_BUF(ring, s->buf_idx);
			hdr->ts = ring->ts;
			hdr->len = hdr->caplen = s->len;
			hdr->slot = s;
			hdr->buf = buf;
			hdr->d = d;
			hdr->flags = 0;
			ring->head = ring->cur = nm_ring_next(ring, i);
			d->cur_rx_ring = (uint16_t)ri;
			return buf;
		}
		ri++;
		if (ri > d->last_rx_ring)
			ri = d->first_rx_ring;
	} while (ri != d->cur_rx_ring);
	return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* HAVE_NETMAP_WITH_LIBS */
#endif /* NETMAP_WITH_LIBS */

#endif /* _NET_NETMAP_USER_H_ */
