/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The router's forwarding decisions, one frame at a time, in the RX
 * stage (static and random are decided inline in router_stage.c):
 *
 *  hash  a flow hash of the IPv4 addresses, protocol and TCP/UDP ports
 *        (of the MAC addresses for anything else) spread over the ports
 *        (or --outputs); a flow always takes the same output, so it stays
 *        in order.
 *  lpm   IPv4 longest-prefix match on the destination (router_lpm.h),
 *        TTL decrement with an incremental checksum update; frames with
 *        no route, TTL <= 1 or that are not IPv4 are dropped and counted.
 *        The header checksum is not verified (a host does that).
 *  l2    a learning bridge: the source MAC is learned on the input; a
 *        known unicast destination goes to its port (dropped if that is
 *        the input); broadcast, multicast and unknown destinations are
 *        flooded to every other port (router_stage.c copies the frame
 *        for all outputs but the first, which gets the buffer itself).
 *
 * The MAC table is shared by the RX stages of all threads without locks:
 * an entry is one 64-bit atomic word (MAC << 16 | valid | port), read and
 * written whole, so a reader sees an old entry or a new one, never half of
 * each. Two inputs learning into the same set at once may overwrite each
 * other's entry; the next frame from that MAC learns it again (a cache,
 * as a switch's table is). Entries do not age; a MAC seen on another port
 * moves there.
 */
#include <stdlib.h>
#include <string.h>

#include "router.h"

#define L2_SETS 4096u
#define L2_WAYS 4u
#define L2_VALID 0x8000u

const char *rt_mode_name(enum rt_mode m)
{
	switch (m) {
	case RT_STATIC: return "static";
	case RT_RANDOM: return "random";
	case RT_HASH: return "hash";
	case RT_LPM: return "lpm";
	case RT_L2: return "l2";
	}
	return "?";
}

static inline uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t mac_at(const uint8_t *p)
{
	return (uint64_t)be32_at(p) << 16 | (uint64_t)p[4] << 8 | p[5];
}

/* A 64-bit finaliser (splitmix64's): every input bit moves every output
 * bit, so the top bits taken below are well spread. */
static inline uint64_t mix64(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

/* h's top 32 bits scaled to [0, n): no division. */
static inline int spread(uint64_t h, unsigned n)
{
	return (int)(((h >> 32) * n) >> 32);
}

static int hash_out(const uint8_t *f, uint32_t len, unsigned n)
{
	uint8_t pad[12];
	uint64_t a, b;

	if (len < 12) {
		/* a runt: hash what there is, never read past it */
		memset(pad, 0, sizeof(pad));
		memcpy(pad, f, len);
		f = pad;
	}

	if (len >= 34 && f[12] == 0x08 && f[13] == 0x00 && (f[14] >> 4) == 4) {
		uint32_t ihl = (f[14] & 0xfu) * 4u;
		uint8_t proto = f[23];
		/* the ports, in the first fragment of TCP and UDP only */
		bool ports = (proto == 6 || proto == 17) &&
			     !(((uint32_t)f[20] << 8 | f[21]) & 0x1fff) &&
			     ihl >= 20 && len >= 14 + ihl + 4;

		a = (uint64_t)be32_at(f + 26) << 32 | be32_at(f + 30);
		b = (uint64_t)proto << 32 | (ports ? be32_at(f + 14 + ihl) : 0);
	} else {
		a = mac_at(f);
		b = mac_at(f + 6);
	}
	return spread(mix64(a ^ mix64(b)), n);
}

static int lpm_out(const struct rt_lpm *lpm, uint8_t *f, uint32_t len)
{
	uint32_t ihl;
	int hop;

	if (len < 34 || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4)
		return RT_DROP_NOT_IP;
	ihl = (f[14] & 0xfu) * 4u;
	if (ihl < 20 || len < 14 + ihl)
		return RT_DROP_NOT_IP;
	hop = rt_lpm_lookup(lpm, be32_at(f + 30));
	if (hop < 0)
		return RT_DROP_NO_ROUTE;
	if (f[22] <= 1)
		return RT_DROP_TTL;
	rt_ip_dec_ttl(f + 14);
	return hop;
}

int rt_l2_init(struct rt_router *rt)
{
	rt->l2 = calloc(L2_SETS * L2_WAYS, sizeof(*rt->l2));
	return rt->l2 ? 0 : -1;
}

void rt_l2_free(struct rt_router *rt)
{
	free(rt->l2);
	rt->l2 = NULL;
}

static inline _Atomic uint64_t *l2_set(struct rt_router *rt, uint64_t mac)
{
	return &rt->l2[(mix64(mac) >> 52) % L2_SETS * L2_WAYS];
}

static void l2_learn(struct rt_router *rt, uint64_t mac, unsigned port)
{
	_Atomic uint64_t *set = l2_set(rt, mac);
	uint64_t want = mac << 16 | L2_VALID | port;
	unsigned victim = L2_WAYS;

	for (unsigned w = 0; w < L2_WAYS; w++) {
		uint64_t e = atomic_load_explicit(&set[w], memory_order_relaxed);

		if ((e & L2_VALID) && (e >> 16) == mac) {
			if (e != want) /* moved: write only on a change */
				atomic_store_explicit(&set[w], want,
						      memory_order_relaxed);
			return;
		}
		if (!(e & L2_VALID) && victim == L2_WAYS)
			victim = w;
	}
	if (victim == L2_WAYS)
		victim = (unsigned)(mix64(mac) >> 20) % L2_WAYS;
	atomic_store_explicit(&set[victim], want, memory_order_relaxed);
}

static int l2_lookup(struct rt_router *rt, uint64_t mac)
{
	_Atomic uint64_t *set = l2_set(rt, mac);

	for (unsigned w = 0; w < L2_WAYS; w++) {
		uint64_t e = atomic_load_explicit(&set[w], memory_order_relaxed);

		if ((e & L2_VALID) && (e >> 16) == mac)
			return (int)(e & 0xff);
	}
	return -1;
}

static int l2_out(struct rt_router *rt, unsigned in, const uint8_t *f,
		  uint32_t len)
{
	int out;

	if (len < 14)
		return RT_DROP_FILTERED;
	if (!(f[6] & 1)) /* a unicast source */
		l2_learn(rt, mac_at(f + 6), in);
	if (f[0] & 1) /* broadcast or multicast */
		return RT_FLOOD;
	out = l2_lookup(rt, mac_at(f));
	if (out < 0)
		return RT_FLOOD;
	return (unsigned)out == in ? RT_DROP_FILTERED : out;
}

int rt_classify(struct rt_port *p, uint8_t *frame, uint32_t len)
{
	struct rt_router *rt = p->rt;

	switch (rt->o->mode) {
	case RT_HASH:
		return rt->outs[hash_out(frame, len, rt->nouts)];
	case RT_LPM:
		return lpm_out(p->rx.lpm, frame, len);
	case RT_L2:
		return l2_out(rt, p->id, frame, len);
	case RT_STATIC:
		return rt->static_out[p->id];
	case RT_RANDOM:
		break;
	}
	/* random is decided in the RX stage, which owns the generator */
	return 0;
}
