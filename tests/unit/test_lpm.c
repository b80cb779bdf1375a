// SPDX-License-Identifier: BSD-2-Clause
/* The router's DIR-24-8 longest-prefix match (src/fwd/router_lpm.c) against
 * a brute-force reference on random tables, the routes-file parser, and
 * the incremental TTL/checksum update against a full recomputation. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "router_lpm.h"
#include "t.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

static uint32_t mask_of(uint32_t len)
{
	return len ? 0xffffffffu << (32 - len) : 0;
}

/* The reference: the longest matching prefix, the later one among equal
 * prefixes. */
static int brute(const struct rt_route *r, uint32_t n, uint32_t dst)
{
	int best = -1, hop = -1;
	uint32_t order = 0;

	for (uint32_t i = 0; i < n; i++) {
		if ((dst & mask_of(r[i].len)) != r[i].prefix)
			continue;
		if ((int)r[i].len > best ||
		    ((int)r[i].len == best && r[i].order > order)) {
			best = (int)r[i].len;
			order = r[i].order;
			hop = (int)r[i].hop;
		}
	}
	return hop;
}

/* A random prefix length, most of them where real tables have them. */
static uint32_t rnd_len(void)
{
	uint32_t x = rnd() % 100;

	if (x < 5)
		return rnd() % 8;
	if (x < 60)
		return 8 + rnd() % 17;  /* 8..24 */
	return 25 + rnd() % 8;          /* 25..32 */
}

static void random_table(uint32_t nroutes, uint32_t nlookups, uint32_t nhops,
			 int clustered, uint32_t min_len)
{
	struct rt_route *r = calloc(nroutes, sizeof(*r));
	struct rt_route *ref = calloc(nroutes, sizeof(*r));
	struct rt_lpm t;
	uint32_t bad = 0, hits = 0;

	for (uint32_t i = 0; i < nroutes; i++) {
		uint32_t len = rnd_len(), a = rnd();

		while (len < min_len)
			len = rnd_len();

		/* Clustered tables put many prefixes under a few /16s, so
		 * that /25+ routes share tbl8 groups and nest. */
		if (clustered)
			a = (0x0a000000u | (rnd() % 4) << 16) | (a & 0xffff);
		r[i] = (struct rt_route){a & mask_of(len), len, rnd() % nhops, i};
	}
	memcpy(ref, r, nroutes * sizeof(*r));
	CHECK_EQ(rt_lpm_build(&t, r, nroutes), 0);
	for (uint32_t k = 0; k < nlookups; k++) {
		uint32_t dst = rnd();

		if (k % 4 == 1) {
			/* the edges of a prefix, and just outside them */
			const struct rt_route *p = &ref[rnd() % nroutes];
			uint32_t last = p->prefix | ~mask_of(p->len);

			switch (rnd() % 4) {
			case 0: dst = p->prefix; break;
			case 1: dst = last; break;
			case 2: dst = p->prefix - 1; break;
			default: dst = last + 1; break;
			}
		} else if (clustered && k % 4 == 2) {
			dst = 0x0a000000u | (rnd() % 4) << 16 | (rnd() & 0xffff);
		}
		int want = brute(ref, nroutes, dst), got = rt_lpm_lookup(&t, dst);

		hits += want >= 0;
		if (got != want && bad++ < 5)
			fprintf(stderr, "lookup %08x: got %d, want %d\n", dst, got,
				want);
	}
	CHECK(bad == 0, "%u of %u lookups differ (%u routes)", bad, nlookups,
	      nroutes);
	CHECK(hits > 0, "no lookup matched anything");
	if (min_len)
		CHECK(hits < nlookups, "every lookup matched: misses untested");
	printf("  %u routes (%s), %u tbl8 groups, %u lookups (%u matched): "
	       "%u wrong\n", nroutes, clustered ? "clustered" : "spread",
	       t.ngroups, nlookups, hits, bad);
	rt_lpm_free(&t);
	free(r);
	free(ref);
}

static void fixed_cases(void)
{
	struct rt_route r[] = {
		{0x0a000000, 8, 1, 0},   /* 10/8 -> 1 */
		{0x0a010000, 16, 2, 1},  /* 10.1/16 -> 2 */
		{0x0a010200, 24, 3, 2},  /* 10.1.2/24 -> 3 */
		{0x0a010280, 25, 4, 3},  /* 10.1.2.128/25 -> 4 */
		{0x0a010281, 32, 5, 4},  /* 10.1.2.129/32 -> 5 */
		{0x0a010000, 16, 6, 5},  /* 10.1/16 again: the later wins */
		{0x00000000, 0, 7, 6},   /* default -> 7 */
	};
	struct rt_lpm t;

	CHECK_EQ(rt_lpm_build(&t, r, 7), 0);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0b000001), 7);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a020304), 1);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a01ff01), 6);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a010201), 3);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a01027f), 3);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a010280), 4);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a010281), 5);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a010282), 4);
	CHECK_EQ(rt_lpm_lookup(&t, 0x0a0102ff), 4);
	CHECK_EQ(t.ngroups, 1);
	rt_lpm_free(&t);

	/* Empty: nothing matches. */
	CHECK_EQ(rt_lpm_build(&t, NULL, 0), 0);
	CHECK_EQ(rt_lpm_lookup(&t, 0), -1);
	CHECK_EQ(rt_lpm_lookup(&t, 0xffffffff), -1);
	rt_lpm_free(&t);

	/* A /32 alone: its group inherits "no route". */
	struct rt_route h = {0xc0a80101, 32, 0, 0};
	CHECK_EQ(rt_lpm_build(&t, &h, 1), 0);
	CHECK_EQ(rt_lpm_lookup(&t, 0xc0a80101), 0);
	CHECK_EQ(rt_lpm_lookup(&t, 0xc0a80100), -1);
	CHECK_EQ(rt_lpm_lookup(&t, 0xc0a80102), -1);
	rt_lpm_free(&t);

	/* More /25s in distinct /24s than there are tbl8 groups. */
	uint32_t n = RT_LPM_MAX_GROUPS + 1;
	struct rt_route *many = calloc(n, sizeof(*many));
	for (uint32_t i = 0; i < n; i++)
		many[i] = (struct rt_route){i << 8, 25, 0, i};
	CHECK_EQ(rt_lpm_build(&t, many, n), -ENOSPC);
	CHECK_EQ(rt_lpm_build(&t, many, n - 1), 0);
	CHECK_EQ(rt_lpm_lookup(&t, (n - 2) << 8), 0);
	CHECK_EQ(rt_lpm_lookup(&t, (n - 2) << 8 | 0x80), -1);
	rt_lpm_free(&t);
	free(many);
}

static void parsing(void)
{
	static const struct {
		const char *line;
		int rc;
		uint32_t prefix, len, hop;
	} cases[] = {
		{"10.1.0.0/16 2", 1, 0x0a010000, 16, 2},
		{"  10.1.0.0/16\t3   # comment", 1, 0x0a010000, 16, 3},
		{"default 1", 1, 0, 0, 1},
		{"0.0.0.0/0 0\n", 1, 0, 0, 0},
		{"192.168.1.7 3", 1, 0xc0a80107, 32, 3},
		{"# only a comment", 0, 0, 0, 0},
		{"   \n", 0, 0, 0, 0},
		{"", 0, 0, 0, 0},
		{"10.1.0.0/16", -1, 0, 0, 0},         /* no port */
		{"10.1.0.0/16 4", -1, 0, 0, 0},       /* port out of range */
		{"10.1.0.1/16 1", -1, 0, 0, 0},       /* host bits set */
		{"10.1.0.0/33 1", -1, 0, 0, 0},
		{"10.1.0/16 1", -1, 0, 0, 0},
		{"256.1.0.0/16 1", -1, 0, 0, 0},
		{"10.1.0.0/16 1 extra", -1, 0, 0, 0},
		{"10.1.0.0/16 -1", -1, 0, 0, 0},
		{"10.1.0.0/16x 1", -1, 0, 0, 0},
		{"defaults 1", -1, 0, 0, 0},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rt_route r = {0};
		int rc = rt_lpm_parse_line(cases[i].line, 4, &r, err, sizeof(err));

		CHECK(rc == cases[i].rc, "'%s': rc %d, want %d (%s)",
		      cases[i].line, rc, cases[i].rc, rc < 0 ? err : "");
		if (rc == 1 && cases[i].rc == 1)
			CHECK(r.prefix == cases[i].prefix && r.len == cases[i].len &&
			      r.hop == cases[i].hop, "'%s': %08x/%u %u",
			      cases[i].line, r.prefix, r.len, r.hop);
		if (rc < 0)
			CHECK(!strchr(err, '\n'), "'%s': message on one line",
			      cases[i].line);
	}

	/* A file: errors name the line. */
	char path[] = "/tmp/test_lpm.XXXXXX";
	int fd = mkstemp(path);
	const char *text = "# routes\n10.0.0.0/8 0\n\ndefault 1\n10.1.0.0/16 9\n";
	struct rt_route *routes = NULL;
	uint32_t n = 0;

	CHECK(fd >= 0, "mkstemp");
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
	close(fd);
	CHECK_EQ(rt_lpm_read(path, 10, &routes, &n, err, sizeof(err)), 0);
	CHECK_EQ(n, 3);
	free(routes);
	CHECK_EQ(rt_lpm_read(path, 4, &routes, &n, err, sizeof(err)), -1);
	CHECK(strstr(err, ":5: ") != NULL, "line number in '%s'", err);
	unlink(path);
	CHECK_EQ(rt_lpm_read("/nonexistent/routes", 4, &routes, &n, err,
			     sizeof(err)), -1);
}

static uint16_t ip_csum(const uint8_t *ip)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		if (i != 10)
			s += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void ttl(void)
{
	uint32_t bad = 0;

	for (uint32_t k = 0; k < 200000; k++) {
		uint8_t ip[20];
		uint16_t c;

		for (int i = 0; i < 20; i++)
			ip[i] = (uint8_t)rnd();
		ip[0] = 0x45;
		if (k < 512) {
			/* every TTL, and headers whose sums sit at the edges */
			ip[8] = (uint8_t)(k % 254 + 2);
			if (k & 1)
				memset(ip + 12, 0, 8);
			else
				memset(ip + 12, 0xff, 8);
		}
		if (ip[8] < 2)
			ip[8] = 2;
		c = ip_csum(ip);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
		uint8_t before = ip[8];
		rt_ip_dec_ttl(ip);
		c = ip_csum(ip);
		/* 0x0000 and 0xffff are the same sum: a receiver accepts both */
		if (ip[8] != before - 1 ||
		    (((uint32_t)ip[10] << 8 | ip[11]) != c &&
		     !(((ip[10] << 8 | ip[11]) == 0xffff && c == 0) ||
		       ((ip[10] << 8 | ip[11]) == 0 && c == 0xffff))))
			bad++;
	}
	CHECK(bad == 0, "%u TTL/checksum updates wrong", bad);
}

int main(void)
{
	fixed_cases();
	parsing();
	ttl();
	random_table(100, 20000, 4, 0, 0);
	random_table(2000, 50000, 16, 0, 12);
	random_table(3000, 50000, 4, 1, 0);
	random_table(3000, 50000, 8, 1, 20);
	random_table(5000, 20000, 200, 0, 0);
	return t_done("lpm");
}
