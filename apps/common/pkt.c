/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Frame templates, full checksums and hex dumps. The per-packet stamping
 * is inline in pkt.h.
 */
#include <ctype.h>
#include <stdlib.h>

#include "pkt.h"

uint16_t pkt_sum(const void *data, size_t len, uint64_t sum)
{
	const uint8_t *p = data;
	uint16_t w;

	for (; len >= 2; len -= 2, p += 2) {
		memcpy(&w, p, 2);
		sum += w;
	}
	if (len) {
		uint8_t last[2] = {p[0], 0};

		memcpy(&w, last, 2);
		sum += w;
	}
	return pkt_fold16(sum);
}

/* The ones-complement negation of a sum of words, as a 16-bit value. */
static uint64_t neg(uint64_t words)
{
	return 0xffffu - pkt_fold16(words);
}

/* The UDP pseudo-header sum (addresses, protocol, UDP length). */
static uint64_t pseudo_sum(const uint8_t *frame, uint16_t ulen)
{
	uint8_t ph[12];

	memcpy(ph, frame + PKT_OFS_SIP, 8);
	ph[8] = 0;
	ph[9] = 17;
	pkt_put16(ph + 10, ulen);
	return pkt_sum(ph, sizeof(ph), 0);
}

int pkt_tmpl_init(struct pkt_tmpl *t, const uint8_t dmac[6],
		  const uint8_t smac[6], const struct pkt_fields *f,
		  uint32_t max_len)
{
	uint16_t iplen = (uint16_t)(f->len - PKT_IP_OFS);
	uint16_t ulen = (uint16_t)(f->len - PKT_UDP_OFS);
	uint16_t hc_ip, hc_udp;
	uint8_t *b;

	memset(t, 0, sizeof(*t));
	if (max_len < f->len)
		max_len = f->len;
	b = calloc(1, max_len < PKT_TMPL_MIN ? PKT_TMPL_MIN : max_len);
	if (!b)
		return -1;
	t->frame = b;
	t->max_len = max_len;
	t->base = *f;
	t->base.seq = 0;

	memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	b[12] = 0x08; /* IPv4 */
	b[13] = 0x00;
	b[14] = 0x45; /* version 4, 5 words of header */
	pkt_put16(b + PKT_OFS_IPLEN, iplen);
	pkt_put16(b + 20, 0x4000); /* don't fragment */
	b[22] = 64;                /* TTL */
	b[23] = 17;                /* UDP */
	pkt_put32(b + PKT_OFS_SIP, f->sip);
	pkt_put32(b + PKT_OFS_DIP, f->dip);
	hc_ip = (uint16_t)~pkt_sum(b + PKT_IP_OFS, 20, 0);
	pkt_put_csum(b + PKT_OFS_IPCSUM, hc_ip);

	pkt_put16(b + PKT_OFS_SPORT, f->sport);
	pkt_put16(b + PKT_OFS_DPORT, f->dport);
	pkt_put16(b + PKT_OFS_ULEN, ulen);
	pkt_put32(b + PKT_OFS_MAGIC, PKT_MAGIC);
	pkt_put16(b + PKT_OFS_STREAM, f->stream);
	/* reserved and seq stay zero, and so does the filler */
	hc_udp = pkt_udp_csum(pkt_sum(b + PKT_UDP_OFS, PKT_HDR_LEN - PKT_UDP_OFS,
				      pseudo_sum(b, ulen)));
	pkt_put_csum(b + PKT_OFS_UCSUM, hc_udp);

	/* ~HC + sum(~m) for the words a stamp replaces (RFC 1624 eqn. 3). */
	t->ip_pre = neg(hc_ip) + neg(pkt_words32(f->sip)) +
		    neg(pkt_words32(f->dip)) + neg(pkt_words16(iplen));
	t->seq_pre = neg(hc_udp) + neg(pkt_words64(0));
	/* The addresses appear once (pseudo header), the length twice. */
	t->udp_pre = t->seq_pre + neg(pkt_words32(f->sip)) +
		     neg(pkt_words32(f->dip)) + 2 * neg(pkt_words16(ulen)) +
		     neg(pkt_words16(f->sport)) + neg(pkt_words16(f->dport));
	return 0;
}

void pkt_tmpl_free(struct pkt_tmpl *t)
{
	free(t->frame);
	t->frame = NULL;
}

int pkt_check_csums(const uint8_t *buf, uint32_t len)
{
	uint32_t ihl, iplen, ulen;
	uint16_t ucsum;

	if (len < PKT_IP_OFS + 20 || buf[12] != 0x08 || buf[13] != 0x00)
		return -1;
	ihl = (buf[14] & 0xfu) * 4u;
	if (ihl < 20 || len < PKT_IP_OFS + ihl)
		return -1;
	if (pkt_sum(buf + PKT_IP_OFS, ihl, 0) != 0xffff)
		return -1;
	iplen = (uint32_t)buf[16] << 8 | buf[17];
	if (iplen < ihl + 8 || PKT_IP_OFS + iplen > len || buf[23] != 17)
		return -1;
	ulen = (uint32_t)buf[PKT_IP_OFS + ihl + 4] << 8 | buf[PKT_IP_OFS + ihl + 5];
	if (ulen < 8 || ulen > iplen - ihl)
		return -1;
	memcpy(&ucsum, buf + PKT_IP_OFS + ihl + 6, 2);
	if (ucsum == 0)
		return 0;
	{
		uint8_t ph[12];

		memcpy(ph, buf + PKT_IP_OFS + 12, 8);
		ph[8] = 0;
		ph[9] = 17;
		pkt_put16(ph + 10, (uint16_t)ulen);
		if (pkt_sum(buf + PKT_IP_OFS + ihl, ulen,
			    pkt_sum(ph, sizeof(ph), 0)) != 0xffff)
			return -1;
	}
	return 0;
}

void pkt_hexdump(FILE *f, const uint8_t *buf, uint32_t len)
{
	for (uint32_t off = 0; off < len; off += 16) {
		char hex[16 * 3 + 2], asc[17];
		uint32_t n = len - off < 16 ? len - off : 16;
		int h = 0;

		for (uint32_t i = 0; i < 16; i++) {
			if (i < n)
				h += snprintf(hex + h, sizeof(hex) - (size_t)h,
					      "%02x%s", buf[off + i],
					      i == 7 ? "  " : " ");
			else
				h += snprintf(hex + h, sizeof(hex) - (size_t)h,
					      "%s", i == 7 ? "    " : "   ");
			asc[i] = i < n ? (isprint(buf[off + i]) ? (char)buf[off + i]
								: '.')
				       : '\0';
		}
		asc[16] = '\0';
		fprintf(f, "  %04x  %s %s\n", off, hex, asc);
	}
}
