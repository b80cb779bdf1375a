/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's packet header parser (scrub.h, scrub_parse()): every byte it
 * reads is inside the frame, every length field is checked against what
 * the frame holds before it is used. A frame is read once, here; the
 * judge uses only struct scrub_pkt.
 */
#include <string.h>

#include "scrub.h"

#define ETH_HLEN 14
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define IP6_MAX_EXT 8          /* extension headers followed at most */

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Ports and flags of the L4 header at l4[0..room). */
static int parse_l4(struct scrub_pkt *p, const uint8_t *l4, uint32_t room)
{
	switch (p->proto) {
	case 6: /* TCP */
		if (room < 20)
			return SCRUB_DROP_SHORT;
		if ((l4[12] >> 4) < 5 || (uint32_t)(l4[12] >> 4) * 4 > room)
			return SCRUB_DROP_LEN;
		p->tcp_flags = l4[13];
		break;
	case 17: /* UDP */
		if (room < 8)
			return SCRUB_DROP_SHORT;
		/* (a first fragment holds part of what the length says) */
		if (rd16(l4 + 4) < 8 || (!p->frag && rd16(l4 + 4) > room))
			return SCRUB_DROP_LEN;
		break;
	case 1:  /* ICMP: type and code in the port fields */
	case 58: /* ICMPv6 */
		if (room < 4)
			return SCRUB_DROP_SHORT;
		p->sport = l4[0];
		p->dport = l4[1];
		p->l4 = true;
		return SCRUB_PASS;
	default:
		return SCRUB_PASS;
	}
	p->sport = rd16(l4);
	p->dport = rd16(l4 + 2);
	p->l4 = true;
	return SCRUB_PASS;
}

static void map_v4(uint8_t dst[16], const uint8_t *a)
{
	memset(dst, 0, 10);
	dst[10] = dst[11] = 0xff;
	memcpy(dst + 12, a, 4);
}

static int parse_v4(struct scrub_pkt *p, const uint8_t *ip, uint32_t room,
		    bool frag_drop)
{
	uint32_t ihl, tot;
	uint16_t off;

	if (room < 20)
		return SCRUB_DROP_SHORT;
	if ((ip[0] >> 4) != 4)
		return SCRUB_DROP_VERSION;
	ihl = (uint32_t)(ip[0] & 0xf) * 4;
	if (ihl < 20 || ihl > room)
		return SCRUB_DROP_IHL;
	tot = rd16(ip + 2);
	if (tot < ihl || tot > room)
		return SCRUB_DROP_LEN;
	if (ip[8] == 0)
		return SCRUB_DROP_TTL;
	p->family = 4;
	p->proto = ip[9];
	map_v4(p->src, ip + 12);
	map_v4(p->dst, ip + 16);
	off = rd16(ip + 6);
	if (off & 0x3fff) { /* MF or an offset */
		p->frag = true;
		if (frag_drop)
			return SCRUB_DROP_FRAG;
		if (off & 0x1fff)
			return SCRUB_PASS; /* no L4 header in this one */
	}
	return parse_l4(p, ip + ihl, tot - ihl);
}

/* Follow the extension headers from `nh` at ip[40..]. */
static int parse_v6_ext(struct scrub_pkt *p, const uint8_t *ip, uint32_t end,
			uint8_t nh, bool frag_drop)
{
	uint32_t at = 40;

	for (int k = 0; k <= IP6_MAX_EXT; k++) {
		uint32_t hl;

		switch (nh) {
		case 0:   /* hop-by-hop */
		case 43:  /* routing */
		case 60:  /* destination options */
			if (end - at < 8)
				return SCRUB_DROP_SHORT;
			hl = ((uint32_t)ip[at + 1] + 1) * 8;
			break;
		case 51:  /* AH */
			if (end - at < 8)
				return SCRUB_DROP_SHORT;
			hl = ((uint32_t)ip[at + 1] + 2) * 4;
			break;
		case 44:  /* fragment */
			if (end - at < 8)
				return SCRUB_DROP_SHORT;
			p->frag = true;
			if (frag_drop)
				return SCRUB_DROP_FRAG;
			hl = 8;
			if (rd16(ip + at + 2) & 0xfff8) {
				p->proto = ip[at];
				return SCRUB_PASS; /* not the first: no L4 */
			}
			break;
		default:
			p->proto = nh;
			return parse_l4(p, ip + at, end - at);
		}
		if (hl > end - at)
			return SCRUB_DROP_EXTHDR;
		nh = ip[at];
		at += hl;
	}
	return SCRUB_DROP_EXTHDR;
}

static int parse_v6(struct scrub_pkt *p, const uint8_t *ip, uint32_t room,
		    bool frag_drop)
{
	uint32_t plen;

	if (room < 40)
		return SCRUB_DROP_SHORT;
	if ((ip[0] >> 4) != 6)
		return SCRUB_DROP_VERSION;
	plen = rd16(ip + 4);
	if (plen > room - 40)
		return SCRUB_DROP_LEN;
	if (ip[7] == 0)
		return SCRUB_DROP_TTL;
	p->family = 6;
	/* (bpf/pktmap_scrub.bpf.c's v6_ext(): what the kernel sends up) */
	p->ext = ip[6] == 0 || ip[6] == 43 || ip[6] == 44 || ip[6] == 50 ||
		 ip[6] == 51 || ip[6] == 60 || ip[6] == 135 || ip[6] == 139 ||
		 ip[6] == 140 || ip[6] == 253 || ip[6] == 254;
	memcpy(p->src, ip + 8, 16);
	memcpy(p->dst, ip + 24, 16);
	return parse_v6_ext(p, ip, 40 + plen, ip[6], frag_drop);
}

int scrub_parse(const uint8_t *f, uint32_t len, bool frag_drop,
		struct scrub_pkt *p)
{
	uint32_t at = 12;
	uint16_t type;

	memset(p, 0, offsetof(struct scrub_pkt, src));
	p->len = len;
	if (len < ETH_HLEN)
		return SCRUB_DROP_SHORT;
	type = rd16(f + at);
	for (int tags = 0; tags < 2 && (type == ETHERTYPE_VLAN ||
					type == ETHERTYPE_QINQ); tags++) {
		if (len < at + 6)
			return SCRUB_DROP_SHORT;
		at += 4;
		type = rd16(f + at);
	}
	at += 2;
	if (type == ETHERTYPE_IPV4)
		return parse_v4(p, f + at, len - at, frag_drop);
	if (type == ETHERTYPE_IPV6)
		return parse_v6(p, f + at, len - at, frag_drop);
	return SCRUB_PASS_NOT_IP;
}
