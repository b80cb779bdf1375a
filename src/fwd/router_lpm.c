/* SPDX-License-Identifier: BSD-2-Clause
 *
 * DIR-24-8 longest-prefix match: building the table and reading routes
 * files. See router_lpm.h for the layout; the lookup is inline there.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"
#include "router_lpm.h"

#define TBL24_ENTRIES (1u << 24)

/* Shortest prefix first; among equal ones, the input order. */
static int by_len(const void *a, const void *b)
{
	const struct rt_route *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* A new tbl8 group, every entry `fill`. Returns its number or -errno. */
static int64_t group_new(struct rt_lpm *t, uint16_t fill)
{
	if (t->ngroups == RT_LPM_MAX_GROUPS)
		return -ENOSPC;
	if (t->ngroups == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 64;
		uint16_t *g;

		if (cap > RT_LPM_MAX_GROUPS)
			cap = RT_LPM_MAX_GROUPS;
		g = realloc(t->tbl8, (size_t)cap * 256 * sizeof(*g));
		if (!g)
			return -ENOMEM;
		t->tbl8 = g;
		t->cap = cap;
	}
	for (uint32_t i = 0; i < 256; i++)
		t->tbl8[(size_t)t->ngroups * 256 + i] = fill;
	return t->ngroups++;
}

int rt_lpm_build(struct rt_lpm *t, struct rt_route *routes, uint32_t n)
{
	memset(t, 0, sizeof(*t));
	t->tbl24 = calloc(TBL24_ENTRIES, sizeof(*t->tbl24));
	if (!t->tbl24)
		return -ENOMEM;
	if (n > 1)
		qsort(routes, n, sizeof(*routes), by_len);
	for (uint32_t k = 0; k < n; k++) {
		const struct rt_route *r = &routes[k];
		uint16_t v = (uint16_t)(r->hop + 1);

		if (r->len <= 24) {
			/* Shorter prefixes came first, so nothing under this
			 * range is extended yet. */
			uint32_t lo = r->prefix >> 8, cnt = 1u << (24 - r->len);

			for (uint32_t i = 0; i < cnt; i++)
				t->tbl24[lo + i] = v;
		} else {
			uint32_t i24 = r->prefix >> 8, e = t->tbl24[i24];
			uint32_t lo = r->prefix & 0xff, cnt = 1u << (32 - r->len);

			if (!(e & RT_LPM_EXT)) {
				int64_t g = group_new(t, (uint16_t)e);

				if (g < 0) {
					rt_lpm_free(t);
					return (int)g;
				}
				e = RT_LPM_EXT | (uint32_t)g;
				t->tbl24[i24] = (uint16_t)e;
			}
			uint16_t *grp = t->tbl8 + (size_t)(e & ~RT_LPM_EXT) * 256;

			for (uint32_t i = 0; i < cnt; i++)
				grp[lo + i] = v;
		}
	}
	t->nroutes = n;
	return 0;
}

void rt_lpm_free(struct rt_lpm *t)
{
	free(t->tbl24);
	free(t->tbl8);
	memset(t, 0, sizeof(*t));
}

int rt_lpm_parse_line(const char *line, uint32_t max_hop, struct rt_route *r,
		      char *err, size_t errlen)
{
	const char *p = line, *word;
	unsigned long v;
	char *e;

	while (isspace((unsigned char)*p))
		p++;
	if (!*p || *p == '#')
		return 0;
	word = p;
	if (strncmp(p, "default", 7) == 0 &&
	    (isspace((unsigned char)p[7]) || !p[7])) {
		r->prefix = 0;
		r->len = 0;
		p += 7;
	} else {
		if (pm_parse_ipv4(p, &r->prefix, &p)) {
			snprintf(err, errlen, "'%.*s' is not an IPv4 prefix "
				 "(10.1.0.0/16)", (int)strcspn(word, " \t\r\n"),
				 word);
			return -1;
		}
		r->len = 32;
		if (*p == '/') {
			if (!isdigit((unsigned char)p[1]) ||
			    (v = strtoul(p + 1, &e, 10)) > 32 || e - p > 3) {
				snprintf(err, errlen, "'%.*s': the prefix length "
					 "goes from 0 to 32",
					 (int)strcspn(word, " \t\r\n"), word);
				return -1;
			}
			r->len = (uint32_t)v;
			p = e;
		}
		if (r->len < 32 && (r->prefix & (0xffffffffu >> r->len))) {
			snprintf(err, errlen, "'%.*s' has bits set beyond its "
				 "length", (int)strcspn(word, " \t\r\n"), word);
			return -1;
		}
	}
	if (!isspace((unsigned char)*p)) {
		snprintf(err, errlen, "'%.*s': a prefix and an output port "
			 "index, separated by blanks", (int)strcspn(word, "\r\n"),
			 word);
		return -1;
	}
	while (isspace((unsigned char)*p))
		p++;
	word = p;
	if (!isdigit((unsigned char)*p) || (v = strtoul(p, &e, 10)) >= max_hop ||
	    e - p > 5) {
		snprintf(err, errlen, "'%.*s' is not an output port index (0 to "
			 "%u)", (int)strcspn(word, " \t\r\n#"), word, max_hop - 1);
		return -1;
	}
	p = e;
	while (isspace((unsigned char)*p))
		p++;
	if (*p && *p != '#') {
		snprintf(err, errlen, "unexpected '%.*s' after the port index",
			 (int)strcspn(p, "\r\n"), p);
		return -1;
	}
	r->hop = (uint32_t)v;
	return 1;
}

int rt_lpm_read(const char *path, uint32_t max_hop, struct rt_route **routes,
		uint32_t *n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct rt_route *v = NULL;
	uint32_t cnt = 0, cap = 0, lineno = 0;
	char line[512], msg[300];

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (max_hop > RT_LPM_MAX_HOP + 1)
		max_hop = RT_LPM_MAX_HOP + 1;
	while (fgets(line, sizeof(line), f)) {
		struct rt_route r;
		int rc;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line too long", path, lineno);
			goto fail;
		}
		rc = rt_lpm_parse_line(line, max_hop, &r, msg, sizeof(msg));
		if (rc < 0) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, msg);
			goto fail;
		}
		if (rc == 0)
			continue;
		if (cnt == cap) {
			struct rt_route *nv;

			cap = cap ? 2 * cap : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto fail;
			}
			v = nv;
		}
		r.order = cnt;
		v[cnt++] = r;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	fclose(f);
	*routes = v;
	*n = cnt;
	return 0;
fail:
	fclose(f);
	free(v);
	return -1;
}
