/* SPDX-License-Identifier: BSD-2-Clause
 *
 * IPv4 longest-prefix match for `pktmap router --mode lpm`, DIR-24-8
 * (Gupta, Lin, McKeown, "Routing lookups in hardware at memory access
 * speeds", 1998; the layout of DPDK's rte_lpm):
 *
 *   tbl24: 2^24 entries of 16 bits, indexed by the top 24 bits of the
 *          address. 0 = no route; bit 15 clear = next hop + 1; bit 15 set
 *          = the low 15 bits name a tbl8 group.
 *   tbl8:  groups of 256 entries (same encoding, never extended), indexed
 *          by the last 8 bits, for the /25../32 prefixes under a /24.
 *
 * A lookup is one memory access for every route of /24 or shorter and two
 * otherwise. The table is built once from a list of routes (inserted from
 * the shortest prefix to the longest, so a longer one overwrites what it
 * covers) and only read afterwards, by any number of threads.
 */
#ifndef PKTMAP_FWD_ROUTER_LPM_H
#define PKTMAP_FWD_ROUTER_LPM_H

#include <stddef.h>
#include <stdint.h>

#define RT_LPM_EXT 0x8000u
#define RT_LPM_MAX_HOP 0x7ffeu    /* hops 0..32766 */
#define RT_LPM_MAX_GROUPS 0x8000u /* tbl8 groups, 16 MiB at most */

struct rt_lpm {
	uint16_t *tbl24;      /* 1 << 24 entries */
	uint16_t *tbl8;       /* ngroups * 256 entries */
	uint32_t ngroups, cap;
	uint32_t nroutes;
};

/* One route: prefix (host order, host bits zero), length 0..32, hop. */
struct rt_route {
	uint32_t prefix;
	uint32_t len;
	uint32_t hop;
	uint32_t order;       /* position in the input: a later duplicate wins */
};

/* Build the table from routes[0..n) (sorted in place). Returns 0, -ENOMEM,
 * or -ENOSPC when the routes need more than RT_LPM_MAX_GROUPS groups. */
int rt_lpm_build(struct rt_lpm *t, struct rt_route *routes, uint32_t n);
void rt_lpm_free(struct rt_lpm *t);

/* The next hop of `dst` (host order), or -1 when no route covers it. */
static inline int rt_lpm_lookup(const struct rt_lpm *t, uint32_t dst)
{
	uint32_t e = t->tbl24[dst >> 8];

	if (e & RT_LPM_EXT)
		e = t->tbl8[((e & ~RT_LPM_EXT) << 8) | (dst & 0xff)];
	return (int)e - 1;
}

/* Parse one line of a routes file: "10.1.0.0/16 2", "0.0.0.0/0 1",
 * "default 1", "10.2.3.4 0" (a /32); '#' starts a comment. Returns 1 with
 * *r set, 0 for a blank or comment line, -1 with a message in err. Hops
 * must be below max_hop. */
int rt_lpm_parse_line(const char *line, uint32_t max_hop, struct rt_route *r,
		      char *err, size_t errlen);

/* Read a routes file. On success *routes (malloc'ed) and *n are set and 0
 * is returned; -1 with "FILE:LINE: message" in err otherwise. */
int rt_lpm_read(const char *path, uint32_t max_hop, struct rt_route **routes,
		uint32_t *n, char *err, size_t errlen);

/* Decrement the TTL of the IPv4 header at `ip` and update its checksum
 * incrementally, RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m being the
 * 16-bit word that holds TTL and protocol. Byte-wise, so right on any
 * byte order and alignment. */
static inline void rt_ip_dec_ttl(uint8_t *ip)
{
	uint32_t m = (uint32_t)ip[8] << 8 | ip[9];
	uint32_t m2 = m - 0x100;
	uint32_t hc = (uint32_t)ip[10] << 8 | ip[11];
	uint32_t sum = (~hc & 0xffff) + (~m & 0xffff) + m2;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	hc = ~sum & 0xffff;
	ip[8] = (uint8_t)(m2 >> 8);
	ip[10] = (uint8_t)(hc >> 8);
	ip[11] = (uint8_t)hc;
}

#endif /* PKTMAP_FWD_ROUTER_LPM_H */
