// SPDX-License-Identifier: BSD-2-Clause
/*
 * @conf keys (conf.h): the common table, and the one reader of a key's
 * value that every back end's table goes through.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>

#include "name.h"
#include "util.h"

#define F(field) offsetof(struct pm_conf, field)
#define TEXT_MAX(field) (uint32_t)(sizeof(((struct pm_conf *)0)->field) - 1)

static const struct pm_conf_key common_keys[] = {
	{ "rings", PM_CONF_PAIR, F(tx_rings), F(rx_rings), 1, PM_MAX_RINGS, NULL,
	  NULL, "ring pairs: TX rings and as many RX rings", PM_CK_RINGS },
	{ "tx-rings", PM_CONF_U32, F(tx_rings), 0, 1, PM_MAX_RINGS, NULL, NULL,
	  "TX rings", PM_CK_RINGS },
	{ "rx-rings", PM_CONF_U32, F(rx_rings), 0, 1, PM_MAX_RINGS, NULL, NULL,
	  "RX rings", PM_CK_RINGS },
	{ "slots", PM_CONF_PAIR, F(tx_slots), F(rx_slots), 4, PM_MAX_SLOTS, NULL,
	  NULL, "slots of every ring, TX and RX", PM_CK_SLOTS },
	{ "tx-slots", PM_CONF_U32, F(tx_slots), 0, 4, PM_MAX_SLOTS, NULL, NULL,
	  "slots of a TX ring", PM_CK_SLOTS },
	{ "rx-slots", PM_CONF_U32, F(rx_slots), 0, 4, PM_MAX_SLOTS, NULL, NULL,
	  "slots of an RX ring", PM_CK_SLOTS },
	{ "bufs", PM_CONF_U32, F(bufs), 0, 3, 1u << 26, NULL, NULL,
	  "buffers of the region, at least (the rings need some)",
	  PM_CK_BUFS },
	{ "buf-size", PM_CONF_U32, F(buf_size), 0, 256, 65536, NULL, NULL,
	  "bytes of a buffer", PM_CK_BUF_SIZE },
	{ "extra-bufs", PM_CONF_U32, F(extra_bufs), 0, 0, 1u << 24, NULL, NULL,
	  "buffers besides the rings' (netmap's extra buffers)",
	  PM_CK_EXTRA_BUFS },
	{ "hugepages", PM_CONF_INT, F(hugepages), 0, 0, 1, NULL, NULL,
	  "1: the region in hugetlbfs pages", PM_CK_HUGEPAGES },
	{ "region", PM_CONF_TEXT, F(region), 0, 1, TEXT_MAX(region), NULL, "NAME",
	  "the port's buffers in region NAME (as @mem:NAME)", PM_CK_REGION },
	{ "share", PM_CONF_GROUP, F(share), F(share_gid), 0, 0, NULL, "group:G",
	  "the members of group G (a name or a GID) may open this pipe or "
	  "region", PM_CK_SHARE },
	{ "spin-us", PM_CONF_INT, F(spin_us), 0, 0, 1000000, NULL, NULL,
	  "microseconds pktmap_poll() spins before it sleeps (default 50; "
	  "pkt: 0)", PM_CK_SPIN },
	{ "broker", PM_CONF_TEXT, F(broker), 0, 1, TEXT_MAX(broker), NULL, "PATH",
	  "without a capability, ask the pktmap broker at PATH (default "
	  "/run/pktmap/broker.sock; no: never ask)", PM_CK_BROKER },
};

int pm_parse_u32(const char *s, size_t n, uint32_t *out)
{
	if (n == 0 || n > 10)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

const struct pm_conf_key *pm_conf_key_at(const struct pm_conf_keys *keys,
					 unsigned i)
{
	for (size_t c = 0; c < PM_ARRAY_SIZE(common_keys); c++)
		if ((keys->common & common_keys[c].ck) && i-- == 0)
			return &common_keys[c];
	for (const struct pm_conf_key *k = keys->own; k && k->name; k++)
		if (i-- == 0)
			return k;
	return NULL;
}

/* 'unknown key "K" for BACKEND: (accepted: K1, K2, ...)'. */
static int unknown_key(const struct pm_conf_keys *keys, const char *backend,
		       const char *key, char *what, size_t wlen)
{
	char safe[64];
	pm_printable(safe, sizeof(safe), key);
	int n = snprintf(what, wlen, "unknown key \"%s\" for %s: (accepted:",
			 safe, backend);
	const struct pm_conf_key *k;
	for (unsigned i = 0; (k = pm_conf_key_at(keys, i)) != NULL; i++)
		if (n >= 0 && (size_t)n < wlen)
			n += snprintf(what + n, wlen - (size_t)n, "%s %s",
				      i ? "," : "", k->name);
	if (n >= 0 && (size_t)n < wlen)
		snprintf(what + n, wlen - (size_t)n, ")");
	return -EINVAL;
}

/* The value, printable and cut short, for a message. */
static void value_for_msg(char *out, size_t len, const char *val, size_t vlen)
{
	char raw[40];
	snprintf(raw, sizeof(raw), "%.*s", (int)(vlen < 32 ? vlen : 32), val);
	pm_printable(out, len, raw);
}

/* PM_CONF_WORD: one of k->words. */
static int set_word(const struct pm_conf_key *k, const char *val, size_t vlen,
		    int *field, char *what, size_t wlen)
{
	const struct pm_conf_word *w;
	for (w = k->words; w->word; w++)
		if (strlen(w->word) == vlen && memcmp(w->word, val, vlen) == 0) {
			*field = w->value;
			return 0;
		}
	char v[40];
	value_for_msg(v, sizeof(v), val, vlen);
	int n = snprintf(what, wlen, "'@conf:%s=%s': expected", k->name, v);
	for (w = k->words; w->word && n >= 0 && (size_t)n < wlen; w++)
		n += snprintf(what + n, wlen - (size_t)n, "%s %s%s%s%s",
			      w == k->words ? "" : " or", w->word,
			      w->note ? " (" : "", w->note ? w->note : "",
			      w->note ? ")" : "");
	return -EINVAL;
}

/* PM_CONF_GROUP: share=group:NAME (or group:GID): the region's files
 * belong to that group, mode 0660. */
static int set_group(const char *val, size_t vlen, bool *share, uint32_t *gid,
		     char *what, size_t wlen)
{
	char g[64], safe[64];
	uint32_t v;
	if (vlen <= 6 || vlen - 6 >= sizeof(g) || strncmp(val, "group:", 6) != 0) {
		snprintf(what, wlen, "'@conf:share=': expected group:NAME");
		return -EINVAL;
	}
	memcpy(g, val + 6, vlen - 6);
	g[vlen - 6] = 0;
	pm_printable(safe, sizeof(safe), g);
	struct group gr, *res = NULL;
	char buf[1024];
	if (pm_parse_u32(g, strlen(g), &v) == 0) {
		/* (gid_t)-1 means "no change" to fchown(): not a group anyone
		 * can share with. */
		if (v == UINT32_MAX) {
			snprintf(what, wlen, "'@conf:share=group:%s': not a group "
				 "id (at most 4294967294)", safe);
			return -EINVAL;
		}
	} else if (getgrnam_r(g, &gr, buf, sizeof(buf), &res) == 0 && res) {
		v = (uint32_t)res->gr_gid;
	} else {
		snprintf(what, wlen, "'@conf:share=group:%s': no such group", safe);
		return -EINVAL;
	}
	*share = true;
	*gid = v;
	return 0;
}

int pm_conf_set(const struct pm_conf_keys *keys, const char *backend,
		const char *key, const char *val, size_t vlen,
		struct pm_conf *c, char *what, size_t wlen)
{
	const struct pm_conf_key *k = NULL;
	for (unsigned i = 0; (k = pm_conf_key_at(keys, i)) != NULL; i++)
		if (strcmp(k->name, key) == 0)
			break;
	if (!k)
		return unknown_key(keys, backend, key, what, wlen);
	char *at = (char *)c + k->off;
	uint32_t v;
	switch (k->kind) {
	case PM_CONF_WORD:
		return set_word(k, val, vlen, (int *)(void *)at, what, wlen);
	case PM_CONF_GROUP:
		return set_group(val, vlen, (bool *)(void *)at,
				 (uint32_t *)(void *)((char *)c + k->off2), what,
				 wlen);
	case PM_CONF_TEXT:
		if (vlen < k->min || vlen > k->max) {
			snprintf(what, wlen, "'@conf:%s=': %u to %u characters",
				 k->name, k->min, k->max);
			return -EINVAL;
		}
		memcpy(at, val, vlen);
		at[vlen] = 0;
		return 0;
	default:
		break;
	}
	if (pm_parse_u32(val, vlen, &v) || v < k->min || v > k->max) {
		snprintf(what, wlen, "'@conf:%s': needs a number from %u to %u",
			 k->name, k->min, k->max);
		return -EINVAL;
	}
	if (k->kind == PM_CONF_INT)
		*(int *)(void *)at = (int)v;
	else
		*(uint32_t *)(void *)at = v;
	if (k->kind == PM_CONF_PAIR)
		*(uint32_t *)(void *)((char *)c + k->off2) = v;
	return 0;
}
