/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's judge (scrub.h): one frame, the checks in the order scrub.h
 * lists, a counter for the reason and one for the rule that decided.
 */
#include <errno.h>
#include <string.h>

#include "scrub.h"

int scrub_worker_init(struct scrub_worker *w, unsigned id, uint32_t sources,
		      uint32_t dests, uint64_t seed)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->id = id;
	rc = scrub_table_init(&w->src, sources, seed);
	if (!rc)
		rc = scrub_table_init(&w->dst, dests, seed ? seed + 1 : 0);
	if (rc)
		scrub_worker_free(w);
	return rc;
}

void scrub_worker_free(struct scrub_worker *w)
{
	scrub_table_free(&w->src);
	scrub_table_free(&w->dst);
}

static inline void bump(_Atomic uint64_t *c, uint64_t by)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
			      memory_order_relaxed);
}

static inline void hit(struct scrub_worker *w, const struct scrub_rules *r,
		       uint32_t rule)
{
	if (r->hits && w->id < r->nworkers)
		bump(&r->hits[(size_t)w->id * r->nrules + rule], 1);
}

/* Do the first `bits` bits of a and b agree? */
static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full))
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff00 >> rest);

	return ((a[full] ^ b[full]) & mask) == 0;
}

static bool matches(const struct scrub_match *m, const struct scrub_pkt *p)
{
	if (m->family && m->family != p->family)
		return false;
	if (m->proto && m->proto != p->proto)
		return false;
	if (m->has_src && !prefix_eq(p->src, m->src, m->src_len))
		return false;
	if (m->has_dst && !prefix_eq(p->dst, m->dst, m->dst_len))
		return false;
	if ((m->has_ports || m->flags_mask) && !p->l4)
		return false; /* a later fragment: no ports to match */
	if (m->has_ports &&
	    (p->sport < m->sport_lo || p->sport > m->sport_hi ||
	     p->dport < m->dport_lo || p->dport > m->dport_hi))
		return false;
	return (p->tcp_flags & m->flags_mask) == m->flags;
}

/* Refill a bucket at `rate` per second, at most rate * burst_s. */
static inline double refill(double tok, double rate, double burst_s,
			    uint64_t last, uint64_t now)
{
	double cap = rate * burst_s;

	if (now > last)
		tok += (double)(now - last) * 1e-9 * rate;
	return tok < cap ? tok : cap;
}

/* Is the source banned? An automatic ban made before an unban of its
 * address is lifted. */
static bool banned(struct scrub_worker *w, const struct scrub_bans *b,
		   const struct scrub_pkt *p, uint64_t now)
{
	struct scrub_entry *e;

	if (b && scrub_bans_has(b, p->src, now))
		return true;
	if (!w->src.bans)
		return false; /* no automatic ban ever: skip the lookup */
	e = scrub_table_find(&w->src, p->src);
	if (!e || e->ban_until <= now)
		return false;
	if (b && b->nunban && scrub_bans_unbanned(b, p->src) >= e->ban_at) {
		e->ban_until = e->ban_at = 0;
		return false;
	}
	return true;
}

/* The source's buckets: SCRUB_PASS, or the rate it is over (and a ban
 * when the rule says so). */
static int source_limit(struct scrub_worker *w, const struct scrub_rules *r,
			const struct scrub_pkt *p, uint64_t now)
{
	double pcap = r->pps * r->burst_s, bcap = r->bps * r->burst_s;
	struct scrub_entry *e = scrub_table_get(&w->src, p->src, now, pcap,
						bcap);
	int why = SCRUB_PASS;

	if (r->pps) {
		e->ptok = refill(e->ptok, r->pps, r->burst_s, e->last_ns, now);
		if (e->ptok < 1)
			why = SCRUB_DROP_PPS;
	}
	if (r->bps) {
		e->btok = refill(e->btok, r->bps, r->burst_s, e->last_ns, now);
		if (why == SCRUB_PASS && e->btok < p->len)
			why = SCRUB_DROP_BPS;
	}
	if (now > e->last_ns)
		e->last_ns = now;
	if (why == SCRUB_PASS) {
		if (r->pps)
			e->ptok -= 1;
		if (r->bps)
			e->btok -= p->len;
	} else if (r->ban_ns) {
		e->ban_at = now;
		e->ban_until = now + r->ban_ns;
		w->src.bans++;
		w->new_ban = true;
		memcpy(w->ban_addr, p->src, 16);
		w->ban_until = e->ban_until;
	}
	return why;
}

static int syn_limit(struct scrub_worker *w, const struct scrub_rules *r,
		     const struct scrub_pkt *p, uint64_t now)
{
	double cap = r->syn_pps * r->syn_burst_s;
	struct scrub_entry *e = scrub_table_get(&w->dst, p->dst, now, cap, 0);

	e->ptok = refill(e->ptok, r->syn_pps, r->syn_burst_s, e->last_ns, now);
	if (now > e->last_ns)
		e->last_ns = now;
	if (e->ptok < 1)
		return SCRUB_DROP_SYN;
	e->ptok -= 1;
	return SCRUB_PASS;
}

/* The checks after the headers; the reason, the rule in *rule (or
 * UINT32_MAX). */
static int decide(struct scrub_worker *w, const struct scrub_rules *r,
		  const struct scrub_bans *b, const struct scrub_pkt *p,
		  uint64_t now, uint32_t *rule)
{
	uint32_t id;
	int why;

	if (r->allow.nprefixes && (id = scrub_pfx_lookup(&r->allow, p->src))) {
		*rule = id - 1;
		return SCRUB_PASS_ALLOW;
	}
	if (banned(w, b, p, now))
		return SCRUB_DROP_BANNED;
	if (r->deny.nprefixes && (id = scrub_pfx_lookup(&r->deny, p->src))) {
		*rule = id - 1;
		return SCRUB_DROP_DENY;
	}
	for (uint32_t i = 0; i < r->nmatch; i++) {
		if (matches(&r->match[i], p)) {
			*rule = r->match[i].rule;
			return r->match[i].drop ? SCRUB_DROP_RULE : SCRUB_PASS_RULE;
		}
	}
	if (r->kern_judged && !p->frag && !p->ext)
		return SCRUB_PASS; /* the kernel applied the limits */
	if (r->syn_pps && p->proto == 6 && p->l4 &&
	    (p->tcp_flags & 0x12) == 0x02) {
		why = syn_limit(w, r, p, now);
		if (why != SCRUB_PASS) {
			*rule = r->syn_rule;
			return why;
		}
	}
	if (r->limit_rule != UINT32_MAX) {
		why = source_limit(w, r, p, now);
		if (why != SCRUB_PASS) {
			*rule = r->limit_rule;
			return why;
		}
	}
	return SCRUB_PASS;
}

int scrub_judge(struct scrub_worker *w, const struct scrub_rules *r,
		const struct scrub_bans *b, const uint8_t *frame,
		uint32_t len, uint64_t now_ns)
{
	struct scrub_pkt p;
	uint32_t rule = UINT32_MAX;
	int why;

	w->new_ban = false;
	why = scrub_parse(frame, len, r->frag_drop, &p);
	if (why == SCRUB_PASS)
		why = decide(w, r, b, &p, now_ns, &rule);
	bump(&w->reason[why], 1);
	bump(scrub_dropped(why) ? &w->bytes_dropped : &w->bytes_passed, len);
	if (rule != UINT32_MAX)
		hit(w, r, rule);
	return why;
}
