/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The frames `pktmap gen` sends and `pktmap recv` checks: Ethernet + IPv4
 * (no options) + UDP, then pktmap's 16-byte payload header, then zeros up
 * to the frame length:
 *
 *   0      14           34        42      46      48     50           58
 *   | eth  | ipv4 (20)  | udp (8) | magic | stream| rsvd | seq (u64)  | 0...
 *                                   "PKTM"
 *
 * All fields are in network byte order. The filler is zero so that the UDP
 * checksum does not depend on how long the frame is beyond the length
 * fields; together with RFC 1624's incremental update that makes stamping
 * a packet a handful of adds whatever its size.
 *
 * Checksums are computed as sums of 16-bit words loaded in memory order
 * (the RFC 1071 trick): the result, stored the same way, is right on any
 * byte order.
 */
#ifndef PKTMAP_APPS_PKT_H
#define PKTMAP_APPS_PKT_H

#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PKT_IP_OFS 14
#define PKT_UDP_OFS 34
#define PKT_PAY_OFS 42
#define PKT_HDR_LEN 58     /* through the sequence number */
#define PKT_MIN_LEN 60     /* Ethernet minimum without CRC */
#define PKT_MAX_LEN 65535
/* A template is never shorter than this, so that short frames can be
 * copied as a fixed-size block. */
#define PKT_TMPL_MIN 64
#define PKT_MAGIC 0x504b544du /* "PKTM" */
/* Stream id of frames whose sequence number means nothing (gen --fast). */
#define PKT_STREAM_NOSEQ 0xffffu

/* Offsets of the fields that change from packet to packet. */
#define PKT_OFS_IPLEN 16
#define PKT_OFS_IPCSUM 24
#define PKT_OFS_SIP 26
#define PKT_OFS_DIP 30
#define PKT_OFS_SPORT 34
#define PKT_OFS_DPORT 36
#define PKT_OFS_ULEN 38
#define PKT_OFS_UCSUM 40
#define PKT_OFS_MAGIC 42
#define PKT_OFS_STREAM 46
#define PKT_OFS_SEQ 50

/* The values of one frame, host byte order. */
struct pkt_fields {
	uint32_t sip, dip;
	uint16_t sport, dport;
	uint32_t len;   /* frame length without CRC */
	uint16_t stream;
	uint64_t seq;
};

/* A frame built once; per-packet stamping updates it incrementally. */
struct pkt_tmpl {
	uint8_t *frame;     /* max(max_len, PKT_TMPL_MIN) bytes, checksums
	                     * right for `base` */
	uint32_t max_len;
	struct pkt_fields base;
	/* RFC 1624 eqn. 3 with the old values folded in ahead of time:
	 * ~HC + sum(~m) over the words that change. Adding the new words m'
	 * and complementing gives the new checksum. */
	uint64_t ip_pre;    /* IP header: total length, addresses */
	uint64_t udp_pre;   /* UDP: addresses, ports, length (twice), seq */
	uint64_t seq_pre;   /* UDP: seq only (nothing else changes) */
};

/* Build the template: MACs, fields `f` (seq ignored, 0 is used), zero
 * filler up to max_len. Returns 0 or -1 on allocation failure. */
int pkt_tmpl_init(struct pkt_tmpl *t, const uint8_t dmac[6],
		  const uint8_t smac[6], const struct pkt_fields *f,
		  uint32_t max_len);
void pkt_tmpl_free(struct pkt_tmpl *t);

/* The ones-complement sum of a buffer, folded to 16 bits, starting from
 * `sum`. Not for fast paths. */
uint16_t pkt_sum(const void *data, size_t len, uint64_t sum);

/* Check the IPv4 header and UDP checksums of a frame: 0 when both are
 * right (a UDP checksum of 0 means "none"), -1 otherwise. */
int pkt_check_csums(const uint8_t *buf, uint32_t len);

/* Print a hex dump (offset, 16 bytes, ASCII) of a frame. */
void pkt_hexdump(FILE *f, const uint8_t *buf, uint32_t len);

static inline uint64_t pkt_fold32(uint64_t s)
{
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return s;
}

static inline uint16_t pkt_fold16(uint64_t s)
{
	s = pkt_fold32(s);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* The sum of a 64-bit big-endian field's words, in memory order. */
static inline uint64_t pkt_words64(uint64_t host)
{
	uint64_t v = htobe64(host);
	return (v & 0xffffffffu) + (v >> 32);
}

static inline uint64_t pkt_words32(uint32_t host)
{
	return htobe32(host);
}

static inline uint64_t pkt_words16(uint16_t host)
{
	return htobe16(host);
}

static inline void pkt_put16(uint8_t *p, uint16_t host)
{
	uint16_t v = htobe16(host);
	memcpy(p, &v, 2);
}

static inline void pkt_put32(uint8_t *p, uint32_t host)
{
	uint32_t v = htobe32(host);
	memcpy(p, &v, 4);
}

static inline void pkt_put_csum(uint8_t *p, uint16_t mem_order)
{
	memcpy(p, &mem_order, 2);
}

/* The UDP checksum for a sum: complemented, and 0 sent as 0xffff. */
static inline uint16_t pkt_udp_csum(uint64_t sum)
{
	uint16_t c = (uint16_t)~pkt_fold16(sum);
	return c ? c : 0xffff;
}

/* Stamp a sequence number into a buffer that holds the template (or a
 * frame stamped from it, any seq): the seq and the UDP checksum. */
static inline void pkt_stamp_seq(uint8_t *buf, const struct pkt_tmpl *t,
				 uint64_t seq)
{
	uint64_t v = htobe64(seq);

	memcpy(buf + PKT_OFS_SEQ, &v, 8);
	pkt_put_csum(buf + PKT_OFS_UCSUM,
		     pkt_udp_csum(t->seq_pre + pkt_words64(seq)));
}

/* Stamp all varying fields into a buffer that holds the template's bytes
 * (headers of any earlier stamp, zeros from PKT_HDR_LEN to f->len). The
 * stream id is the template's. */
static inline void pkt_stamp(uint8_t *buf, const struct pkt_tmpl *t,
			     const struct pkt_fields *f)
{
	uint16_t iplen = (uint16_t)(f->len - PKT_IP_OFS);
	uint16_t ulen = (uint16_t)(f->len - PKT_UDP_OFS);
	uint64_t a = pkt_words32(f->sip) + pkt_words32(f->dip);
	uint64_t ip = t->ip_pre + a + pkt_words16(iplen);
	uint64_t udp = t->udp_pre + a + 2 * pkt_words16(ulen) +
		       pkt_words16(f->sport) + pkt_words16(f->dport) +
		       pkt_words64(f->seq);
	uint64_t v = htobe64(f->seq);

	pkt_put16(buf + PKT_OFS_IPLEN, iplen);
	pkt_put_csum(buf + PKT_OFS_IPCSUM, (uint16_t)~pkt_fold16(ip));
	pkt_put32(buf + PKT_OFS_SIP, f->sip);
	pkt_put32(buf + PKT_OFS_DIP, f->dip);
	pkt_put16(buf + PKT_OFS_SPORT, f->sport);
	pkt_put16(buf + PKT_OFS_DPORT, f->dport);
	pkt_put16(buf + PKT_OFS_ULEN, ulen);
	pkt_put_csum(buf + PKT_OFS_UCSUM, pkt_udp_csum(udp));
	memcpy(buf + PKT_OFS_SEQ, &v, 8);
}

/* Is this one of our frames? On yes (1) *stream and *seq are set. Only
 * plain Ethernet + IPv4 + UDP frames can be. */
static inline int pkt_parse(const uint8_t *buf, uint32_t len,
			    uint16_t *stream, uint64_t *seq)
{
	uint32_t ihl, off, magic;
	uint16_t s;
	uint64_t q;

	if (len < PKT_HDR_LEN || buf[12] != 0x08 || buf[13] != 0x00 ||
	    (buf[14] >> 4) != 4 || buf[23] != 17)
		return 0;
	ihl = (buf[14] & 0xfu) * 4u;
	off = PKT_IP_OFS + ihl + 8;
	if (ihl < 20 || len < off + 16)
		return 0;
	memcpy(&magic, buf + off, 4);
	if (be32toh(magic) != PKT_MAGIC)
		return 0;
	memcpy(&s, buf + off + 4, 2);
	memcpy(&q, buf + off + 8, 8);
	*stream = be16toh(s);
	*seq = be64toh(q);
	return 1;
}

#endif /* PKTMAP_APPS_PKT_H */
