/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's rule set into the kernel path (scrub_xdp.h): the allow and deny
 * sets of a struct scrub_rules (scrub.h) as prefixes for
 * scrub_xdp_load(). The sets are kept as ranges of the address space,
 * each with the rule of the longest prefix over it; each range with a
 * rule becomes the fewest prefixes that cover exactly it, so the
 * kernel's longest match finds the rule the engine's lookup finds, for
 * every address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"
#include "scrub_xdp.h"

__extension__ typedef unsigned __int128 u128;

struct pvec {
	struct scrub_xdp_prefix *v;
	size_t n, cap;
};

static int push(struct pvec *pv, unsigned family, u128 addr, unsigned len,
		uint8_t action, uint32_t rule)
{
	if (pv->n == pv->cap) {
		size_t cap = pv->cap ? pv->cap * 2 : 1024;
		struct scrub_xdp_prefix *v = realloc(pv->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pv->v = v;
		pv->cap = cap;
	}
	struct scrub_xdp_prefix *p = &pv->v[pv->n++];
	unsigned nb = family == 4 ? 4 : 16;
	memset(p, 0, sizeof(*p));
	p->family = (uint8_t)family;
	p->len = (uint8_t)len;
	p->action = action;
	p->rule = rule;
	for (unsigned i = 0; i < nb; i++)
		p->addr[i] = (uint8_t)(addr >> (8 * (nb - 1 - i)));
	return 0;
}

/* [lo, hi] (inclusive, addresses of `bits` bits) as aligned blocks. */
static int cover(struct pvec *pv, unsigned family, unsigned bits, u128 lo,
		 u128 hi, uint8_t action, uint32_t rule)
{
	for (;;) {
		unsigned k = 0; /* the block is 2^k addresses */
		while (k < bits && !((lo >> k) & 1)) {
			/* (the low k + 1 bits of lo are 0: no overflow) */
			u128 m = k + 1 == 128 ? ~(u128)0 :
				 ((u128)1 << (k + 1)) - 1;
			if (lo + m > hi)
				break;
			k++;
		}
		if (k == 128) /* ::/0 */
			return push(pv, family, 0, 0, action, rule);
		int ret = push(pv, family, lo, bits - k, action, rule);
		u128 last = lo + (((u128)1 << k) - 1);
		if (ret || last >= hi)
			return ret;
		lo = last + 1;
	}
}

/* Every range of set s with a rule, as prefixes of `action`. */
static int from_set(struct pvec *pv, const struct scrub_pfx *s, uint8_t action)
{
	int ret = 0;
	for (uint32_t i = 0; i < s->n4 && ret == 0; i++) {
		if (!s->v4_rule[i])
			continue;
		u128 hi = i + 1 < s->n4 ? (u128)s->v4_start[i + 1] - 1 : 0xffffffffu;
		ret = cover(pv, 4, 32, s->v4_start[i], hi, action,
			    s->v4_rule[i] - 1);
	}
	for (uint32_t i = 0; i < s->n6 && ret == 0; i++) {
		if (!s->v6_rule[i])
			continue;
		u128 lo = (u128)s->v6_start[2 * i] << 64 | s->v6_start[2 * i + 1];
		u128 hi = ~(u128)0;
		if (i + 1 < s->n6)
			hi = ((u128)s->v6_start[2 * i + 2] << 64 |
			      s->v6_start[2 * i + 3]) - 1;
		ret = cover(pv, 6, 128, lo, hi, action, s->v6_rule[i] - 1);
	}
	return ret;
}

_Static_assert(SCRUB_NREASONS <= SCRUB_XDP_NREASONS, "the program's reasons");
_Static_assert(SCRUB_PASS == 0 && SCRUB_PASS_ALLOW == 1 &&
	       SCRUB_PASS_NOT_IP == 3 && SCRUB_DROP_DENY == 5 &&
	       SCRUB_DROP_BANNED == 7 && SCRUB_DROP_PPS == 8 &&
	       SCRUB_DROP_BPS == 9 && SCRUB_DROP_SYN == 10,
	       "bpf/pktmap_scrub.bpf.c's R_* values");

/* The set's limits; judge: representable in the kernel. */
static void limits_of(const struct scrub_rules *r, bool host,
		      struct scrub_xdp_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->judge = r->nmatch == 0 &&
		   (r->bps == 0 || r->bps >= SCRUB_XDP_MIN_BPS);
	l->host = host;
	if (r->limit_rule != UINT32_MAX) {
		l->pps = r->pps;
		l->bps = r->bps;
		l->burst_s = r->burst_s;
		l->ban_ns = r->ban_ns;
		l->limit_rule = r->limit_rule;
	}
	if (r->syn_rule != UINT32_MAX) {
		l->syn_pps = r->syn_pps;
		l->syn_burst_s = r->syn_burst_s;
		l->syn_rule = r->syn_rule;
	}
	l->sources = r->sources;
	l->dests = r->dests;
}

int scrub_xdp_load_rules(struct scrub_xdp *x, const struct scrub_rules *r,
			 bool host)
{
	struct pvec pv = { NULL, 0, 0 };
	struct scrub_xdp_limits l;
	limits_of(r, host, &l);
	int ret = scrub_xdp_set_limits(x, &l);
	if (ret) { /* not representable, or no memory for the tables: the
		    * lists only (the workers keep the limits) */
		l.judge = false;
		ret = scrub_xdp_set_limits(x, &l);
	}
	if (ret == 0)
		ret = from_set(&pv, &r->allow, SCRUB_XDP_ALLOW);
	if (ret == 0)
		ret = from_set(&pv, &r->deny, SCRUB_XDP_DENY);
	if (ret == 0)
		ret = scrub_xdp_load(x, pv.v, pv.n);
	free(pv.v);
	return ret ? ret : l.judge ? 1 : 0;
}
