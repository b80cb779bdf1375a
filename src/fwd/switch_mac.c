/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The learning bridge: the switch's default lookup (VALE's
 * netmap_bdg_learning). A MAC table of fixed size, set-associative: a
 * hash picks a bucket of SW_MAC_WAYS entries (one cache line), and a MAC
 * lives in one of them. A new MAC takes a free or aged way of its bucket,
 * else pushes out the way that was silent longest: the table never grows
 * and no lookup probes further than one line.
 *
 * Per frame: the source MAC is learned on its port (a MAC that shows up
 * on another port moves there); broadcast and multicast destinations,
 * and unknown or aged ones, are flooded; a destination that lives on the
 * source port is filtered (never sent back where it came from). An entry
 * ages out aging_ms after the last frame from its MAC (300 s by default,
 * as the Linux bridge).
 */
#include <stdlib.h>
#include <string.h>

#include "switch.h"

#define SW_MAC_WAYS 4u
#define SW_MAC_VALID (1ull << 63)
#define SW_MAC_MASK 0xffffffffffffull

struct sw_mac_entry {
	uint64_t key;     /* MAC in the low 48 bits | SW_MAC_VALID; 0 = free */
	uint32_t seen_ms; /* last frame from this MAC */
	uint16_t port;
	uint16_t pad;
};

struct sw_mac {
	struct sw_mac_entry *e;  /* nbuckets * SW_MAC_WAYS */
	uint32_t nbuckets, shift;
	uint32_t aging_ms;
	uint32_t last_sweep_ms;
	struct sw_mac_stats st;
};

/* The 6 bytes at p as a number (first byte lowest, so the multicast bit
 * is bit 0). Frames hold at least 14 bytes, so 8-byte loads at offsets 0
 * and 6 stay inside them. */
static inline uint64_t mac_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v & SW_MAC_MASK;
}

static inline uint64_t mac_at6(const uint8_t *p)
{
	uint64_t v = 0;
	memcpy(&v, p, 6);
	return v;
}

static inline struct sw_mac_entry *bucket(const struct sw_mac *t, uint64_t key)
{
	uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> t->shift;
	return &t->e[h * SW_MAC_WAYS];
}

static inline bool aged(const struct sw_mac *t, const struct sw_mac_entry *e,
			uint32_t now)
{
	return now - e->seen_ms > t->aging_ms;
}

struct sw_mac *sw_mac_new(uint32_t entries, uint32_t aging_ms)
{
	struct sw_mac *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	uint32_t nb = 4, bits = 2;
	while (nb * SW_MAC_WAYS < entries && bits < 24)
		nb <<= 1, bits++;
	t->nbuckets = nb;
	t->shift = 64 - bits;
	t->aging_ms = aging_ms ? aging_ms : 300000;
	t->st.capacity = (uint64_t)nb * SW_MAC_WAYS;
	if (posix_memalign((void **)&t->e, 64,
			   (size_t)nb * SW_MAC_WAYS * sizeof(*t->e)) != 0) {
		free(t);
		return NULL;
	}
	memset(t->e, 0, (size_t)nb * SW_MAC_WAYS * sizeof(*t->e));
	return t;
}

void sw_mac_free(struct sw_mac *t)
{
	if (!t)
		return;
	free(t->e);
	free(t);
}

void sw_mac_stats(const struct sw_mac *t, struct sw_mac_stats *st)
{
	*st = t->st;
}

/* Learn `mac` (a key without the valid bit) on `port`. */
static void learn(struct sw_mac *t, uint64_t mac, uint16_t port, uint32_t now)
{
	uint64_t key = mac | SW_MAC_VALID;
	struct sw_mac_entry *b = bucket(t, key), *victim = NULL;
	for (uint32_t w = 0; w < SW_MAC_WAYS; w++) {
		struct sw_mac_entry *e = &b[w];
		if (e->key == key) {
			if (e->port != port) {
				e->port = port;
				t->st.moved++;
			}
			e->seen_ms = now;
			return;
		}
	}
	/* A free way, else an aged one, else the one silent longest. */
	uint32_t best = 0;
	for (uint32_t w = 0; w < SW_MAC_WAYS; w++) {
		struct sw_mac_entry *e = &b[w];
		uint32_t score = !e->key ? UINT32_MAX :
				 aged(t, e, now) ? UINT32_MAX - 1 :
						   now - e->seen_ms;
		if (!victim || score > best) {
			victim = e;
			best = score;
		}
	}
	if (!victim->key)
		t->st.entries++;
	else if (aged(t, victim, now))
		t->st.aged++;
	else
		t->st.evicted++;
	victim->key = key;
	victim->port = port;
	victim->seen_ms = now;
	t->st.learned++;
}

/* The port of `mac`, or -1. An aged entry is removed here. */
static int find(struct sw_mac *t, uint64_t mac, uint32_t now)
{
	uint64_t key = mac | SW_MAC_VALID;
	struct sw_mac_entry *b = bucket(t, key);
	for (uint32_t w = 0; w < SW_MAC_WAYS; w++) {
		struct sw_mac_entry *e = &b[w];
		if (e->key == key) {
			if (aged(t, e, now)) {
				e->key = 0;
				t->st.entries--;
				t->st.aged++;
				return -1;
			}
			return e->port;
		}
	}
	return -1;
}

void sw_mac_learn(struct sw_mac *t, const uint8_t *mac, uint16_t port,
		  uint32_t now_ms)
{
	learn(t, mac_at6(mac), port, now_ms);
}

int sw_mac_find(struct sw_mac *t, const uint8_t *mac, uint32_t now_ms)
{
	return find(t, mac_at6(mac), now_ms);
}

/* The lookup of one batch. Frames of a batch mostly share their source
 * and often their destination: the last answer of each is reused, so a
 * steady flow costs two compares per frame and one table access per
 * batch. */
static void mac_lookup(void *ctx, const struct sw_frame *f, uint32_t n,
		       uint16_t src, uint16_t *dst, uint32_t now)
{
	struct sw_mac *t = ctx;
	uint64_t last_src = ~0ull, last_dst = ~0ull;
	uint16_t last_out = SW_FLOOD;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t d = mac_at(f[i].buf);
		uint64_t s = mac_at(f[i].buf + 6);
		if (s != last_src) {
			/* A multicast source is not an address: not learned. */
			if (!(s & 1))
				learn(t, s, src, now);
			last_src = s;
			last_dst = ~0ull; /* the source may have moved */
		}
		if (d != last_dst) {
			last_dst = d;
			if (d & 1) {
				last_out = SW_FLOOD;
			} else {
				int p = find(t, d, now);
				last_out = p < 0 ? SW_FLOOD :
					   (uint16_t)p == src ? SW_FILTER :
								(uint16_t)p;
			}
		}
		dst[i] = last_out;
	}
}

static void mac_port_gone(void *ctx, uint16_t port)
{
	struct sw_mac *t = ctx;
	uint64_t n = (uint64_t)t->nbuckets * SW_MAC_WAYS;
	for (uint64_t i = 0; i < n; i++) {
		if (t->e[i].key && t->e[i].port == port) {
			t->e[i].key = 0;
			t->st.entries--;
		}
	}
}

/* Remove aged entries (so that the counts say what the table holds). */
static void mac_tick(void *ctx, uint32_t now)
{
	struct sw_mac *t = ctx;
	uint64_t n = (uint64_t)t->nbuckets * SW_MAC_WAYS;
	for (uint64_t i = 0; i < n; i++) {
		if (t->e[i].key && aged(t, &t->e[i], now)) {
			t->e[i].key = 0;
			t->st.entries--;
			t->st.aged++;
		}
	}
	t->last_sweep_ms = now;
}

const struct sw_lookup_ops sw_mac_lookup = {
	.name = "learning bridge",
	.lookup = mac_lookup,
	.port_gone = mac_port_gone,
	.tick = mac_tick,
};
