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
 *
 * Several forwarding threads may share one table: every field is a
 * relaxed atomic. Two threads learning at once may both take a way, or
 * one may read an entry half rewritten (a key with the previous port):
 * a frame then goes to a wrong port or is flooded once, which a learning
 * bridge tolerates; nothing is read or written outside the table.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "switch.h"

#define SW_MAC_WAYS 4u
#define SW_MAC_VALID (1ull << 63)
#define SW_MAC_MASK 0xffffffffffffull

struct sw_mac_entry {
	_Atomic uint64_t key;     /* MAC in the low 48 bits | SW_MAC_VALID;
				   * 0 = free */
	_Atomic uint32_t seen_ms; /* last frame from this MAC */
	_Atomic uint32_t port;
};

struct sw_mac_count {
	_Atomic uint64_t entries, learned, moved, aged, evicted;
};

struct sw_mac {
	struct sw_mac_entry *e;  /* nbuckets * SW_MAC_WAYS */
	uint32_t nbuckets, shift;
	uint32_t aging_ms;
	uint64_t capacity;
	struct sw_mac_count st;
};

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)

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

static inline bool aged(const struct sw_mac *t, struct sw_mac_entry *e,
			uint32_t now)
{
	return now - LD(e->seen_ms) > t->aging_ms;
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
	t->capacity = (uint64_t)nb * SW_MAC_WAYS;
	if (posix_memalign((void **)&t->e, 64,
			   (size_t)nb * SW_MAC_WAYS * sizeof(*t->e)) != 0) {
		free(t);
		return NULL;
	}
	for (uint64_t i = 0; i < (uint64_t)nb * SW_MAC_WAYS; i++) {
		atomic_init(&t->e[i].key, 0);
		atomic_init(&t->e[i].seen_ms, 0);
		atomic_init(&t->e[i].port, 0);
	}
	return t;
}

void sw_mac_free(struct sw_mac *t)
{
	if (!t)
		return;
	free(t->e);
	free(t);
}

void sw_mac_stats(struct sw_mac *t, struct sw_mac_stats *st)
{
	st->capacity = t->capacity;
	st->entries = LD(t->st.entries);
	st->learned = LD(t->st.learned);
	st->moved = LD(t->st.moved);
	st->aged = LD(t->st.aged);
	st->evicted = LD(t->st.evicted);
}

/* Learn `mac` (a key without the valid bit) on `port`. */
static void learn(struct sw_mac *t, uint64_t mac, uint16_t port, uint32_t now)
{
	uint64_t key = mac | SW_MAC_VALID;
	struct sw_mac_entry *b = bucket(t, key), *victim = NULL;
	for (uint32_t w = 0; w < SW_MAC_WAYS; w++) {
		struct sw_mac_entry *e = &b[w];
		if (LD(e->key) == key) {
			if (LD(e->port) != port) {
				ST(e->port, port);
				ADD(t->st.moved, 1);
			}
			if (LD(e->seen_ms) != now)
				ST(e->seen_ms, now);
			return;
		}
	}
	/* A free way, else an aged one, else the one silent longest. */
	uint32_t best = 0;
	for (uint32_t w = 0; w < SW_MAC_WAYS; w++) {
		struct sw_mac_entry *e = &b[w];
		uint32_t score = !LD(e->key) ? UINT32_MAX :
				 aged(t, e, now) ? UINT32_MAX - 1 :
						   now - LD(e->seen_ms);
		if (!victim || score > best) {
			victim = e;
			best = score;
		}
	}
	if (best == UINT32_MAX)
		ADD(t->st.entries, 1);
	else if (best == UINT32_MAX - 1)
		ADD(t->st.aged, 1);
	else
		ADD(t->st.evicted, 1);
	ST(victim->port, port);
	ST(victim->seen_ms, now);
	ST(victim->key, key);
	ADD(t->st.learned, 1);
}

/* The port of `mac`, or -1. An aged entry is removed here. */
static int find(struct sw_mac *t, uint64_t mac, uint32_t now)
{
	uint64_t key = mac | SW_MAC_VALID;
	struct sw_mac_entry *b = bucket(t, key);
	for (uint32_t w = 0; w < SW_MAC_WAYS; w++) {
		struct sw_mac_entry *e = &b[w];
		if (LD(e->key) == key) {
			if (aged(t, e, now)) {
				/* Whoever frees the entry counts it. */
				if (atomic_compare_exchange_strong_explicit(
					    &e->key, &key, 0, memory_order_relaxed,
					    memory_order_relaxed)) {
					ADD(t->st.entries, (uint64_t)-1);
					ADD(t->st.aged, 1);
				}
				return -1;
			}
			return (int)LD(e->port);
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

/* Remove entry e if it still holds `key` (another thread may have
 * replaced it meanwhile); returns whether it did. */
static bool drop_entry(struct sw_mac *t, struct sw_mac_entry *e, uint64_t key)
{
	if (!atomic_compare_exchange_strong_explicit(&e->key, &key, 0,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return false;
	ADD(t->st.entries, (uint64_t)-1);
	return true;
}

static void mac_port_gone(void *ctx, uint16_t port)
{
	struct sw_mac *t = ctx;
	uint64_t n = (uint64_t)t->nbuckets * SW_MAC_WAYS;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key = LD(t->e[i].key);
		if (key && LD(t->e[i].port) == port)
			drop_entry(t, &t->e[i], key);
	}
}

/* Remove aged entries (so that the counts say what the table holds). */
static void mac_tick(void *ctx, uint32_t now)
{
	struct sw_mac *t = ctx;
	uint64_t n = (uint64_t)t->nbuckets * SW_MAC_WAYS;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key = LD(t->e[i].key);
		if (key && aged(t, &t->e[i], now) && drop_entry(t, &t->e[i], key))
			ADD(t->st.aged, 1);
	}
}

const struct sw_lookup_ops sw_mac_lookup = {
	.name = "learning bridge",
	.lookup = mac_lookup,
	.port_gone = mac_port_gone,
	.tick = mac_tick,
};
