/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The @conf keys of port names ("pipe:a{0@conf:rings=2,slots=256"): which
 * keys a back end takes, how each value is read and where it goes in
 * struct pm_conf. Each back end names its keys in its ops (.conf): the
 * common keys it takes (PM_CK_* bits of the one common table, conf.c)
 * and a table of its own. The name parser sets a key only through
 * pm_conf_set(), so a key its back end does not list is refused with one
 * line that lists the keys it does list. pktmap-ports(7) shows the tables
 * (tests/unit/test_conf.c checks that it does, key for key).
 */
#ifndef PKTMAP_CONF_H
#define PKTMAP_CONF_H

#include <stddef.h>
#include <stdint.h>

struct pm_conf;

/* How a key's value is read, and what it sets. */
enum pm_conf_kind {
	PM_CONF_U32,   /* a number min..max into the uint32_t at off */
	PM_CONF_PAIR,  /* the same into the uint32_t at off and at off2 */
	PM_CONF_INT,   /* a number min..max into the int at off */
	PM_CONF_WORD,  /* one of words[] into the int at off: its value */
	PM_CONF_TEXT,  /* 1 to max characters into the char[max + 1] at off */
	PM_CONF_GROUP, /* group:NAME or group:GID into share, share_gid */
};

/* One value of a PM_CONF_WORD key, and what it means (NULL: nothing to
 * add to the word). */
struct pm_conf_word {
	const char *word;
	int value;
	const char *note;
};

struct pm_conf_key {
	const char *name;
	enum pm_conf_kind kind;
	size_t off, off2;       /* fields of struct pm_conf */
	uint32_t min, max;      /* numbers; PM_CONF_TEXT: max characters */
	const struct pm_conf_word *words; /* PM_CONF_WORD: ended by NULL */
	const char *arg;        /* the value's form in help ("NAME"); NULL: N */
	const char *help;       /* what the key does: one line */
	uint32_t ck;            /* a common key's PM_CK_* bit; own keys 0 */
};

/* The common keys (conf.c's table), in groups a back end takes or not. */
#define PM_CK_RINGS 0x001     /* rings, tx-rings, rx-rings */
#define PM_CK_SLOTS 0x002     /* slots, tx-slots, rx-slots */
#define PM_CK_BUFS 0x004      /* bufs */
#define PM_CK_BUF_SIZE 0x008  /* buf-size */
#define PM_CK_EXTRA_BUFS 0x010 /* extra-bufs */
#define PM_CK_HUGEPAGES 0x020 /* hugepages */
#define PM_CK_REGION 0x040    /* region */
#define PM_CK_SHARE 0x080     /* share */
#define PM_CK_SPIN 0x100      /* spin-us */
#define PM_CK_ALL 0x1ff
#define PM_CK_BROKER 0x200    /* broker (xdp:, pkt:, tap:; not in ALL) */

/* The keys of one back end: the common ones of mask `common`, then
 * own[] (ended by an entry with a NULL name; NULL: none). */
struct pm_conf_keys {
	uint32_t common;
	const struct pm_conf_key *own;
};

/* The i-th key `keys` takes, common keys first, in table order; NULL
 * past the last. */
const struct pm_conf_key *pm_conf_key_at(const struct pm_conf_keys *keys,
					 unsigned i);

/* Set key to the value val[0..vlen) in c, for a back end that takes
 * `keys` (its name `backend`, for the message). Returns 0, or -EINVAL
 * with one line in what saying why (a key the back end does not take:
 * 'unknown key "K" for BACKEND: (accepted: K1, K2, ...)'; a bad value:
 * what the key takes). */
int pm_conf_set(const struct pm_conf_keys *keys, const char *backend,
		const char *key, const char *val, size_t vlen,
		struct pm_conf *c, char *what, size_t wlen);

/* A decimal number of 1 to 10 digits that fits 32 bits, s[0..n). Returns
 * 0, or -1 for anything else. */
int pm_parse_u32(const char *s, size_t n, uint32_t *out);

#endif
