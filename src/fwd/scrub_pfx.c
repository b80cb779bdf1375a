/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's prefix sets (scrub.h): millions of IPv4 and IPv6 prefixes,
 * longest match, in little memory. The address space is cut into ranges
 * where the longest covering prefix does not change; the set keeps each
 * range's start and rule (adjacent ranges of one rule merged), 8 bytes a
 * range for IPv4 and 12 for IPv6, at most 2n + 1 ranges for n prefixes.
 * A lookup is the binary search for the last start <= address; IPv4
 * narrows it first with an index of the top 16 bits (the ranges that
 * start in each /16), so a lookup over a million prefixes touches a few
 * cache lines.
 *
 * Building: prefixes are nested or disjoint, so sorted by start (the
 * wider first, then input order) a stack sweep emits the ranges: the top
 * of the stack is the longest prefix covering the current position.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

__extension__ typedef unsigned __int128 u128;

struct span {
	u128 lo, hi;         /* inclusive */
	uint32_t rule, order;
};

static u128 key_of(const uint8_t *a, unsigned nbytes)
{
	u128 k = 0;

	for (unsigned i = 0; i < nbytes; i++)
		k = k << 8 | a[i];
	return k;
}

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* the wider first */
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The ranges being emitted for one family. */
struct out {
	u128 *start;
	uint32_t *rule;
	size_t n;
};

static void emit(struct out *o, u128 start, uint32_t rule)
{
	if (o->n && o->rule[o->n - 1] == rule)
		return;
	if (o->n && o->start[o->n - 1] == start) {
		/* an empty range before this one: replace it */
		o->rule[o->n - 1] = rule;
		if (o->n > 1 && o->rule[o->n - 2] == rule)
			o->n--;
		return;
	}
	o->start[o->n] = start;
	o->rule[o->n] = rule;
	o->n++;
}

/* Sweep sorted spans s[0..n) into o; `max` is the family's last
 * address. stack has room for n entries. */
static void sweep(const struct span *s, size_t n, u128 max, struct out *o,
		  const struct span **stack)
{
	size_t top = 0;

	emit(o, 0, 0);
	for (size_t i = 0; i <= n; i++) {
		bool last = i == n;

		/* close the spans that end before the next one starts (all
		 * of them after the last) */
		while (top && (last || stack[top - 1]->hi < s[i].lo)) {
			const struct span *t = stack[--top];

			if (t->hi == max)
				return; /* so do the ones below it */
			emit(o, t->hi + 1, top ? stack[top - 1]->rule : 0);
		}
		if (last)
			return;
		emit(o, s[i].lo, s[i].rule);
		stack[top++] = &s[i];
	}
}

static int build_family(const struct scrub_prefix *p, size_t n, bool v6,
			struct out *o)
{
	unsigned bits = v6 ? 128 : 32;
	u128 max = v6 ? ~(u128)0 : 0xffffffffu;
	size_t m = 0;
	struct span *s = malloc((n ? n : 1) * sizeof(*s));
	const struct span **stack = malloc((n ? n : 1) * sizeof(*stack));

	o->start = malloc((2 * n + 2) * sizeof(*o->start));
	o->rule = malloc((2 * n + 2) * sizeof(*o->rule));
	o->n = 0;
	if (!s || !stack || !o->start || !o->rule) {
		free(s);
		free(stack);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (p[i].v6 != v6)
			continue;
		unsigned host = bits - p[i].len;
		u128 lo = key_of(p[i].addr, bits / 8);
		u128 mask = host == 128 ? ~(u128)0 : (((u128)1 << host) - 1);

		lo &= ~mask;
		s[m++] = (struct span){.lo = lo, .hi = lo | (mask & max),
				       .rule = p[i].rule, .order = p[i].order};
	}
	qsort(s, m, sizeof(*s), by_start);
	sweep(s, m, max, o, stack);
	free(s);
	free(stack);
	return 0;
}

void scrub_pfx_free(struct scrub_pfx *s)
{
	free(s->v4_start);
	free(s->v4_rule);
	free(s->v4_index);
	free(s->v6_start);
	free(s->v6_rule);
	memset(s, 0, sizeof(*s));
}

/* Keep IPv4's ranges as 32-bit starts and index them by their top 16
 * bits: index[h] = the range holding h.0.0 (the search's low end). */
static int keep_v4(struct scrub_pfx *s, struct out *o)
{
	s->n4 = (uint32_t)o->n;
	s->v4_start = malloc(o->n * sizeof(*s->v4_start));
	s->v4_index = malloc(65537 * sizeof(*s->v4_index));
	if (!s->v4_start || !s->v4_index)
		return -ENOMEM;
	for (size_t i = 0; i < o->n; i++)
		s->v4_start[i] = (uint32_t)o->start[i];
	s->v4_rule = o->rule;
	o->rule = NULL;
	uint32_t r = 0;

	for (uint32_t h = 0; h < 65536; h++) {
		uint32_t a = h << 16;

		while (r + 1 < s->n4 && s->v4_start[r + 1] <= a)
			r++;
		s->v4_index[h] = r;
	}
	s->v4_index[65536] = s->n4 - 1;
	return 0;
}

static int keep_v6(struct scrub_pfx *s, struct out *o)
{
	s->n6 = (uint32_t)o->n;
	s->v6_start = malloc(o->n * 2 * sizeof(*s->v6_start));
	if (!s->v6_start)
		return -ENOMEM;
	for (size_t i = 0; i < o->n; i++) {
		s->v6_start[2 * i] = (uint64_t)(o->start[i] >> 64);
		s->v6_start[2 * i + 1] = (uint64_t)o->start[i];
	}
	s->v6_rule = o->rule;
	o->rule = NULL;
	return 0;
}

int scrub_pfx_build(struct scrub_pfx *s, struct scrub_prefix *p, size_t n)
{
	struct out o4 = {0}, o6 = {0};
	int rc;

	memset(s, 0, sizeof(*s));
	s->nprefixes = (uint32_t)n;
	rc = build_family(p, n, false, &o4);
	if (!rc)
		rc = build_family(p, n, true, &o6);
	if (!rc)
		rc = keep_v4(s, &o4);
	if (!rc)
		rc = keep_v6(s, &o6);
	free(o4.start);
	free(o4.rule);
	free(o6.start);
	free(o6.rule);
	if (rc)
		scrub_pfx_free(s);
	return rc;
}

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				      0xff, 0xff};

uint32_t scrub_pfx_lookup(const struct scrub_pfx *s, const uint8_t addr[16])
{
	if (!memcmp(addr, v4_mapped, sizeof(v4_mapped))) {
		uint32_t a = (uint32_t)addr[12] << 24 | (uint32_t)addr[13] << 16 |
			     (uint32_t)addr[14] << 8 | addr[15];
		uint32_t lo = s->v4_index[a >> 16];
		uint32_t hi = s->v4_index[(a >> 16) + 1];

		/* the last start <= a is in [lo, hi] */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo + 1) / 2;

			if (s->v4_start[mid] <= a)
				lo = mid;
			else
				hi = mid - 1;
		}
		return s->v4_rule[lo];
	}
	uint64_t ah = 0, al = 0;

	for (int i = 0; i < 8; i++) {
		ah = ah << 8 | addr[i];
		al = al << 8 | addr[8 + i];
	}
	uint32_t lo = 0, hi = s->n6 - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		uint64_t mh = s->v6_start[2 * mid], ml = s->v6_start[2 * mid + 1];

		if (mh < ah || (mh == ah && ml <= al))
			lo = mid;
		else
			hi = mid - 1;
	}
	return s->v6_rule[lo];
}
