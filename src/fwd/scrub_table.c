/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's address tables (scrub.h): token buckets and automatic bans of
 * a worker's sources, SYN buckets of its destinations; and the manual
 * ban list shared, read-only, by every worker.
 *
 * A table is set-associative: an address hashes (keyed: the key is
 * random, so a flood cannot aim its sources at one set) to a set of
 * SCRUB_WAYS entries, and a new address takes a free entry or evicts the
 * least recently seen one, preferring one that is not banned. Its memory
 * is fixed when it is made, however many sources come.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "scrub.h"

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static inline uint64_t hash16(const uint8_t a[16], uint64_t seed)
{
	uint64_t h, l;

	memcpy(&h, a, 8);
	memcpy(&l, a + 8, 8);
	return mix(mix(h ^ seed) ^ l ^ (seed >> 1));
}

int scrub_table_init(struct scrub_table *t, uint32_t entries, uint64_t seed)
{
	uint32_t sets = 1;

	memset(t, 0, sizeof(*t));
	while ((uint64_t)sets * SCRUB_WAYS < entries && sets < (1u << 30))
		sets <<= 1;
	t->e = calloc((size_t)sets * SCRUB_WAYS, sizeof(*t->e));
	if (!t->e)
		return -ENOMEM;
	t->nsets = sets;
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)(uintptr_t)t ^ 0x9e3779b97f4a7c15ull;
	t->seed = seed | 1;
	return 0;
}

void scrub_table_free(struct scrub_table *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}

static inline struct scrub_entry *set_of(struct scrub_table *t,
					 const uint8_t a[16])
{
	return &t->e[(hash16(a, t->seed) & (t->nsets - 1)) * SCRUB_WAYS];
}

struct scrub_entry *scrub_table_find(struct scrub_table *t,
				     const uint8_t a[16])
{
	struct scrub_entry *s = set_of(t, a);

	for (unsigned i = 0; i < SCRUB_WAYS; i++)
		if (s[i].last_ns && !memcmp(s[i].addr, a, 16))
			return &s[i];
	return NULL;
}

struct scrub_entry *scrub_table_get(struct scrub_table *t,
				    const uint8_t a[16], uint64_t now_ns,
				    double ptok, double btok)
{
	struct scrub_entry *s = set_of(t, a), *victim = NULL;

	for (unsigned i = 0; i < SCRUB_WAYS; i++) {
		struct scrub_entry *e = &s[i];

		if (!e->last_ns) {
			if (!victim || victim->last_ns)
				victim = e;
			continue;
		}
		if (!memcmp(e->addr, a, 16))
			return e;
		if (victim && !victim->last_ns)
			continue;
		/* the oldest, a ban in force only when all are */
		bool vb = victim && victim->ban_until > now_ns;
		bool eb = e->ban_until > now_ns;

		if (!victim || (vb && !eb) ||
		    (vb == eb && e->last_ns < victim->last_ns))
			victim = e;
	}
	if (victim->last_ns) {
		t->evictions++;
		if (victim->ban_until > now_ns)
			t->evicted_banned++;
	}
	memcpy(victim->addr, a, 16);
	victim->last_ns = now_ns ? now_ns : 1;
	victim->ban_until = victim->ban_at = 0;
	victim->ptok = ptok;
	victim->btok = btok;
	return victim;
}

/* ---- The manual ban list ---- */

static int by_addr(const void *a, const void *b)
{
	return memcmp(((const struct scrub_ban *)a)->addr,
		      ((const struct scrub_ban *)b)->addr, 16);
}

static const struct scrub_ban *find(const struct scrub_ban *v, uint32_t n,
				    const uint8_t a[16])
{
	struct scrub_ban key;

	if (!n)
		return NULL;
	memcpy(key.addr, a, 16);
	return bsearch(&key, v, n, sizeof(*v), by_addr);
}

bool scrub_bans_has(const struct scrub_bans *b, const uint8_t a[16],
		    uint64_t now_ns)
{
	const struct scrub_ban *e = b ? find(b->ban, b->nban, a) : NULL;

	return e && e->until_ns > now_ns;
}

uint64_t scrub_bans_unbanned(const struct scrub_bans *b, const uint8_t a[16])
{
	const struct scrub_ban *e = b ? find(b->unban, b->nunban, a) : NULL;

	return e ? e->until_ns : 0;
}

void scrub_bans_free(struct scrub_bans *b)
{
	if (!b)
		return;
	free(b->ban);
	free(b->unban);
	free(b);
}

/* Copy v[0..n) without addr (and, when `live`, without entries that
 * ended by now), then add (addr, t) when add. */
static int copy_list(const struct scrub_ban *v, uint32_t n,
		     const uint8_t a[16], bool live, uint64_t now,
		     bool add, uint64_t t, struct scrub_ban **out,
		     uint32_t *nout)
{
	struct scrub_ban *c = malloc(((size_t)n + 1) * sizeof(*c));
	uint32_t k = 0;

	if (!c)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if ((add || live) && !memcmp(v[i].addr, a, 16))
			continue;
		if (live && v[i].until_ns <= now)
			continue;
		c[k++] = v[i];
	}
	if (add) {
		memcpy(c[k].addr, a, 16);
		c[k++].until_ns = t;
	}
	qsort(c, k, sizeof(*c), by_addr);
	*out = c;
	*nout = k;
	return 0;
}

int scrub_bans_edit(const struct scrub_bans *old, const uint8_t a[16],
		    bool ban, uint64_t until, uint64_t now_ns,
		    struct scrub_bans **out)
{
	struct scrub_bans *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	/* A ban or an unban replaces the address's manual ban. Unbans are
	 * kept (a worker may meet an automatic ban made before one long
	 * after; one made after it holds). */
	rc = copy_list(old ? old->ban : NULL, old ? old->nban : 0, a, true,
		       now_ns, ban, until, &b->ban, &b->nban);
	if (!rc)
		rc = copy_list(old ? old->unban : NULL, old ? old->nunban : 0, a,
			       false, now_ns, !ban, now_ns ? now_ns : 1,
			       &b->unban, &b->nunban);
	if (rc) {
		scrub_bans_free(b);
		return rc;
	}
	*out = b;
	return 0;
}
