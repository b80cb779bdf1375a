/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's rules engine (src/fwd/scrub.h), driven directly: the rules
 * parser and its file:line errors, the prefix sets against a brute-force
 * longest match (and a million prefixes), the packet parser's reasons,
 * every rule kind with exact counts, token buckets and bans under an
 * injected clock, table eviction, manual bans, and hot reload under
 * traffic (every batch judged by exactly one rule set).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scrub.h"
#include "t.h"

#define SEC 1000000000ull

/* ---- frames ---- */

struct fr {
	uint8_t b[256];
	uint32_t len;
};

static void eth(struct fr *f, uint16_t type)
{
	memset(f->b, 0, sizeof(f->b));
	memset(f->b, 0x02, 12);
	f->b[12] = (uint8_t)(type >> 8);
	f->b[13] = (uint8_t)type;
	f->len = 14;
}

/* IPv4 + TCP (proto 6) or UDP (17) or ICMP (1), payload bytes after. */
static struct fr v4(const char *src, const char *dst, uint8_t proto,
		    uint16_t sport, uint16_t dport, uint8_t flags,
		    uint32_t payload)
{
	struct fr f;
	uint8_t *ip;
	uint32_t l4 = proto == 6 ? 20 : proto == 17 ? 8 : 8;

	eth(&f, 0x0800);
	ip = f.b + 14;
	ip[0] = 0x45;
	uint16_t tot = (uint16_t)(20 + l4 + payload);

	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[8] = 64;
	ip[9] = proto;
	inet_pton(AF_INET, src, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	uint8_t *t = ip + 20;

	t[0] = (uint8_t)(sport >> 8);
	t[1] = (uint8_t)sport;
	t[2] = (uint8_t)(dport >> 8);
	t[3] = (uint8_t)dport;
	if (proto == 6) {
		t[12] = 5 << 4;
		t[13] = flags;
	} else if (proto == 17) {
		t[4] = (uint8_t)((8 + payload) >> 8);
		t[5] = (uint8_t)(8 + payload);
	}
	f.len = 14 + tot;
	return f;
}

static struct fr v6(const char *src, const char *dst, uint8_t proto,
		    uint16_t sport, uint16_t dport, uint8_t flags)
{
	struct fr f;
	uint8_t *ip;
	uint32_t l4 = proto == 6 ? 20 : 8;

	eth(&f, 0x86dd);
	ip = f.b + 14;
	ip[0] = 0x60;
	ip[5] = (uint8_t)l4;
	ip[6] = proto;
	ip[7] = 64;
	inet_pton(AF_INET6, src, ip + 8);
	inet_pton(AF_INET6, dst, ip + 24);
	uint8_t *t = ip + 40;

	t[0] = (uint8_t)(sport >> 8);
	t[1] = (uint8_t)sport;
	t[2] = (uint8_t)(dport >> 8);
	t[3] = (uint8_t)dport;
	if (proto == 6) {
		t[12] = 5 << 4;
		t[13] = flags;
	} else {
		t[5] = 8;
	}
	f.len = 14 + 40 + l4;
	return f;
}

static struct scrub_rules *rules(const char *text)
{
	struct scrub_rules *r = NULL;
	char err[512] = "";
	int rc = scrub_rules_parse(text, strlen(text), "t.rules", NULL, &r,
				   err, sizeof(err));

	CHECK(rc == 0, "%s", err);
	if (r)
		CHECK_EQ(scrub_rules_hits_alloc(r, 1), 0);
	return r;
}

static int judge(struct scrub_worker *w, const struct scrub_rules *r,
		 const struct fr *f, uint64_t now)
{
	return scrub_judge(w, r, NULL, f->b, f->len, now);
}

/* ---- parser errors ---- */

static void expect_error(const char *text, const char *want)
{
	struct scrub_rules *r = (void *)1;
	char err[512] = "";
	int rc = scrub_rules_parse(text, strlen(text), "x.rules", NULL, &r,
				   err, sizeof(err));

	CHECK(rc == -EINVAL && r == NULL, "accepted '%s'", text);
	CHECK(strstr(err, want) != NULL, "'%s': got '%s', want '%s'", text,
	      err, want);
}

static void test_errors(void)
{
	expect_error("deny 10.0.0.0/8\nbogus 1\n", "x.rules:2: 'bogus': not a rule");
	expect_error("\n\n\ndeny 10.0.0.1/8", "x.rules:4: '10.0.0.1/8': host bits set");
	expect_error("allow 10.0.0.0/33", "x.rules:1: '10.0.0.0/33': the prefix length must be 0..32");
	expect_error("deny 2001:db8::/129", "x.rules:1:");
	expect_error("deny 300.1.1.1", "x.rules:1: '300.1.1.1': not an IPv4 or IPv6");
	expect_error("drop dport 80", "x.rules:1: ports and flags need a proto");
	expect_error("drop proto udp flags S", "x.rules:1: flags are TCP's");
	expect_error("drop proto tcp flags SX", "x.rules:1: flags: 'X'");
	expect_error("drop proto tcp flags SA/S", "within the mask");
	expect_error("drop proto tcp dport 70000", "x.rules:1: '70000': a port");
	expect_error("drop proto tcp dport 90-80", "a port range");
	expect_error("drop proto tcp dport", "wants a value");
	expect_error("drop src 10.0.0.0/8 dst 2001:db8::/32", "one family");
	expect_error("limit", "x.rules:1: limit [packets N]");
	expect_error("limit packets -1", "is not a number");
	expect_error("limit packets 10x", "is not a number");
	expect_error("limit packets 1\nlimit bytes 5", "x.rules:2: a second limit");
	expect_error("syn-limit 0", "syn-limit: above 0");
	expect_error("fragments maybe", "fragments drop|pass");
	expect_error("deny-file /etc/hosts", "deny-file: not here");
	char big[2000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	expect_error(big, "x.rules:1: line longer than 1024 bytes");
	/* 4097 rules */
	size_t n = 4097 * 20;
	char *many = malloc(n + 1), *p = many;

	for (int i = 0; i < 4097; i++)
		p += sprintf(p, "deny 10.%d.%d.0/24\n", i / 256, i % 256);
	expect_error(many, "x.rules:4097: more than 4096 rules");
	free(many);
}

/* "sources 1" is below the minimum, not above: check the real wording. */
static void test_error_wording(void)
{
	struct scrub_rules *r;
	char err[256];

	CHECK(scrub_rules_parse("sources 1", 9, "x", NULL, &r, err,
				sizeof(err)) == -EINVAL, "sources 1");
	CHECK(strstr(err, "x:1: sources: 1 must be a whole number 4..") != NULL,
	      "%s", err);
	CHECK(scrub_rules_parse("deny 10.0.0.0/8\n\0\n", 19, "x", NULL, &r, err,
				sizeof(err)) == -EINVAL, "NUL");
	CHECK(strstr(err, "x:2: a NUL byte") != NULL, "%s", err);
}

/* ---- prefix sets ---- */

/* Brute force: the rule of the longest prefix of p[0..n) holding a
 * (later wins among equal ones). */
static uint32_t brute(const struct scrub_prefix *p, size_t n,
		      const uint8_t a16[16])
{
	uint32_t best = 0;
	int best_len = -1;
	bool is4 = a16[10] == 0xff && a16[11] == 0xff && !a16[0];

	for (size_t i = 0; i < n; i++) {
		const uint8_t *a = is4 ? a16 + 12 : a16;
		unsigned bits = p[i].len, full = bits / 8, rest = bits % 8;

		if (p[i].v6 == is4)
			continue;
		if (memcmp(a, p[i].addr, full))
			continue;
		if (rest && ((a[full] ^ p[i].addr[full]) & (0xff00 >> rest)))
			continue;
		if ((int)bits >= best_len) {
			best_len = (int)bits;
			best = p[i].rule;
		}
	}
	return best;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void random_prefix(struct scrub_prefix *p, bool v6, uint32_t rule)
{
	unsigned max = v6 ? 128 : 32;

	memset(p, 0, sizeof(*p));
	p->v6 = v6;
	p->len = (uint8_t)(rnd() % (max + 1));
	/* few distinct high bits, so prefixes nest and repeat */
	for (unsigned i = 0; i < max / 8; i++)
		p->addr[i] = (uint8_t)(i < 2 ? rnd() % 3 : rnd());
	for (unsigned bit = p->len; bit < max; bit++)
		p->addr[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
	p->rule = rule;
}

static void addr_near(uint8_t a[16], const struct scrub_prefix *p)
{
	memset(a, 0, 16);
	if (p->v6) {
		memcpy(a, p->addr, 16);
		for (int i = p->len / 8; i < 16; i++)
			a[i] = (uint8_t)(a[i] ^ (rnd() % 4 == 0 ? rnd() : 0));
	} else {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, p->addr, 4);
		for (int i = 12 + p->len / 8; i < 16; i++)
			a[i] = (uint8_t)(a[i] ^ (rnd() % 4 == 0 ? rnd() : 0));
	}
}

static void test_pfx_small(void)
{
	struct scrub_prefix p[8] = {0};
	struct scrub_pfx s;
	uint8_t a[16];

	/* 10.0.0.0/8 -> 1, 10.1.0.0/16 -> 2, 10.1.2.3/32 -> 3,
	 * 0.0.0.0/0 -> 4, 255.255.255.255/32 -> 5, dup 10.1.0.0/16 -> 6 */
	const char *v[] = {"10.0.0.0", "10.1.0.0", "10.1.2.3", "0.0.0.0",
			   "255.255.255.255", "10.1.0.0"};
	uint8_t len[] = {8, 16, 32, 0, 32, 16};

	for (int i = 0; i < 6; i++) {
		inet_pton(AF_INET, v[i], p[i].addr);
		p[i].len = len[i];
		p[i].rule = (uint32_t)i + 1;
		p[i].order = (uint32_t)i;
	}
	CHECK_EQ(scrub_pfx_build(&s, p, 6), 0);
	struct { const char *a; uint32_t want; } q[] = {
		{"10.1.2.3", 3}, {"10.1.2.4", 6}, {"10.1.2.2", 6},
		{"10.2.0.0", 1}, {"9.255.255.255", 4}, {"11.0.0.0", 4},
		{"255.255.255.255", 5}, {"255.255.255.254", 4}, {"0.0.0.0", 4},
		{"10.255.255.255", 1}, {"10.1.255.255", 6},
	};
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		CHECK(scrub_parse_addr(q[i].a, a) == 0, "%s", q[i].a);
		CHECK(scrub_pfx_lookup(&s, a) == q[i].want, "%s: %u, want %u",
		      q[i].a, scrub_pfx_lookup(&s, a), q[i].want);
	}
	scrub_parse_addr("2001:db8::1", a);
	CHECK_EQ(scrub_pfx_lookup(&s, a), 0); /* no IPv6 prefix */
	scrub_pfx_free(&s);
	/* an empty set */
	CHECK_EQ(scrub_pfx_build(&s, p, 0), 0);
	CHECK_EQ(scrub_pfx_lookup(&s, a), 0);
	scrub_parse_addr("1.2.3.4", a);
	CHECK_EQ(scrub_pfx_lookup(&s, a), 0);
	scrub_pfx_free(&s);
}

/* Random nested and repeated prefixes of both families against the
 * brute force. */
static void test_pfx_random(void)
{
	enum { N = 3000, Q = 20000 };
	struct scrub_prefix *p = calloc(N, sizeof(*p)), *copy = calloc(N, sizeof(*p));
	struct scrub_pfx s;
	int bad = 0;

	for (int i = 0; i < N; i++) {
		random_prefix(&p[i], i % 3 == 0, (uint32_t)i + 1);
		p[i].order = (uint32_t)i;
	}
	memcpy(copy, p, N * sizeof(*p));
	CHECK_EQ(scrub_pfx_build(&s, copy, N), 0);
	for (int k = 0; k < Q; k++) {
		uint8_t a[16];
		uint32_t got, want;

		addr_near(a, &p[rnd() % N]);
		got = scrub_pfx_lookup(&s, a);
		want = brute(p, N, a);
		if (got != want && bad++ < 5)
			CHECK(got == want, "query %d: %u, want %u", k, got, want);
	}
	CHECK_EQ(bad, 0);
	scrub_pfx_free(&s);
	free(p);
	free(copy);
}

/* ---- a million prefixes ---- */

struct hset {
	uint64_t *k;
	uint32_t *v;
	size_t cap;
};

static size_t hslot(const struct hset *h, uint64_t k)
{
	size_t i = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (h->cap - 1);

	while (h->k[i] && h->k[i] != k)
		i = (i + 1) & (h->cap - 1);
	return i;
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 1M IPv4 prefixes (/8../32) with their own rule each: every lookup
 * agrees with an exact-match table tried at every length; then 1M lines
 * through the parser (a deny-file's text), time printed, not asserted. */
static void test_million(void)
{
	enum { N = 1000000 };
	struct scrub_prefix *p = malloc(N * sizeof(*p));
	struct hset h = {.cap = 1u << 22};
	struct scrub_pfx s;
	int bad = 0;

	h.k = calloc(h.cap, sizeof(*h.k));
	h.v = calloc(h.cap, sizeof(*h.v));
	for (uint32_t i = 0; i < N; i++) {
		uint32_t len = 8 + (uint32_t)(rnd() % 25);
		uint32_t a = (uint32_t)rnd() & (len == 32 ? ~0u : ~(~0u >> len));
		uint64_t key = (uint64_t)a << 8 | len | 1ull << 40;

		memset(&p[i], 0, sizeof(p[i]));
		p[i].len = (uint8_t)len;
		p[i].addr[0] = (uint8_t)(a >> 24);
		p[i].addr[1] = (uint8_t)(a >> 16);
		p[i].addr[2] = (uint8_t)(a >> 8);
		p[i].addr[3] = (uint8_t)a;
		p[i].rule = i + 1;
		p[i].order = i;
		size_t slot = hslot(&h, key);

		h.k[slot] = key;
		h.v[slot] = i + 1; /* a later duplicate wins */
	}
	double t0 = secs();

	CHECK_EQ(scrub_pfx_build(&s, p, N), 0);
	printf("1M prefixes: built in %.3f s, %u ranges\n", secs() - t0, s.n4);
	for (int q = 0; q < 1000000; q++) {
		uint32_t a = (uint32_t)rnd(), want = 0;
		uint8_t a16[16] = {[10] = 0xff, [11] = 0xff};

		if (q % 2) /* inside a prefix half the time */
			a = (uint32_t)p[rnd() % N].addr[0] << 24 |
			    (uint32_t)p[rnd() % N].addr[1] << 16 | (a & 0xffff);
		for (int len = 32; len >= 8 && !want; len--) {
			uint32_t m = len == 32 ? a : a & ~(~0u >> len);
			uint64_t key = (uint64_t)m << 8 | (uint64_t)len | 1ull << 40;
			size_t slot = hslot(&h, key);

			if (h.k[slot] == key)
				want = h.v[slot];
		}
		a16[12] = (uint8_t)(a >> 24);
		a16[13] = (uint8_t)(a >> 16);
		a16[14] = (uint8_t)(a >> 8);
		a16[15] = (uint8_t)a;
		uint32_t got = scrub_pfx_lookup(&s, a16);

		if (got != want && bad++ < 5)
			CHECK(got == want, "%08x: %u, want %u", a, got, want);
	}
	CHECK_EQ(bad, 0);
	scrub_pfx_free(&s);

	/* the same through the rules loader: a deny-file of 1M lines */
	char dir[] = "/tmp/scrub_test.XXXXXX", path[300], list[300];
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/big.rules", dir);
	snprintf(list, sizeof(list), "%s/big.txt", dir);
	f = fopen(list, "w");
	for (uint32_t i = 0; i < N; i++)
		fprintf(f, "%u.%u.%u.%u/%u\n", p[i].addr[0], p[i].addr[1],
			p[i].addr[2], p[i].addr[3], p[i].len);
	fprintf(f, "2001:db8::/32\n");
	fclose(f);
	f = fopen(path, "w");
	fprintf(f, "deny-file big.txt\n");
	fclose(f);

	struct scrub_rules *r = NULL;
	char err[256] = "";

	t0 = secs();
	int rc = scrub_rules_load(path, &r, err, sizeof(err));

	CHECK(rc == 0, "%s", err);
	printf("1M prefixes: read, parsed and built in %.3f s\n", secs() - t0);
	if (r) {
		uint8_t a16[16] = {[10] = 0xff, [11] = 0xff};

		CHECK_EQ(r->deny.nprefixes, N + 1);
		CHECK_EQ(r->nrules, 1);
		memcpy(a16 + 12, p[N - 1].addr, 4);
		CHECK_EQ(scrub_pfx_lookup(&r->deny, a16), 1);
		scrub_parse_addr("2001:db8:5::1", a16);
		CHECK_EQ(scrub_pfx_lookup(&r->deny, a16), 1);
	}
	scrub_rules_free(r);
	unlink(list);
	unlink(path);
	rmdir(dir);
	free(h.k);
	free(h.v);
	free(p);
}

/* ---- the packet parser ---- */

static void test_parse(void)
{
	struct scrub_pkt p;
	struct fr f = v4("1.2.3.4", "5.6.7.8", 6, 1234, 80, 0x02, 0);

	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_PASS);
	CHECK_EQ(p.family, 4);
	CHECK_EQ(p.proto, 6);
	CHECK_EQ(p.sport, 1234);
	CHECK_EQ(p.dport, 80);
	CHECK_EQ(p.tcp_flags, 0x02);
	CHECK(p.l4, "l4");
	/* truncated everywhere */
	for (uint32_t l = 0; l < f.len; l++) {
		int why = scrub_parse(f.b, l, true, &p);

		CHECK(why == SCRUB_DROP_SHORT || why == SCRUB_DROP_LEN ||
		      why == SCRUB_DROP_IHL, "len %u: %d", l, why);
	}
	/* bad IHL */
	f.b[14] = 0x44;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_IHL);
	f.b[14] = 0x4f; /* 60 bytes > what is there */
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_IHL);
	f.b[14] = 0x55;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_VERSION);
	f.b[14] = 0x45;
	/* total length beyond the frame, and below the header */
	f.b[17] = 200;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_LEN);
	f.b[16] = 0;
	f.b[17] = 19;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_LEN);
	f.b[17] = 40;
	/* TCP data offset below 5 */
	f.b[14 + 20 + 12] = 0x40;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_LEN);
	f.b[14 + 20 + 12] = 0x50;
	/* TTL 0 */
	f.b[14 + 8] = 0;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_TTL);
	f.b[14 + 8] = 1;
	/* fragments: MF, an offset; pass policy keeps going */
	f.b[14 + 6] = 0x20;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_FRAG);
	CHECK_EQ(scrub_parse(f.b, f.len, false, &p), SCRUB_PASS);
	CHECK(p.frag && p.l4, "first fragment has ports");
	f.b[14 + 6] = 0x00;
	f.b[14 + 7] = 0x10;
	CHECK_EQ(scrub_parse(f.b, f.len, false, &p), SCRUB_PASS);
	CHECK(p.frag && !p.l4, "later fragment has no ports");
	f.b[14 + 7] = 0;
	/* DF alone is not a fragment */
	f.b[14 + 6] = 0x40;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_PASS);
	/* UDP length */
	f = v4("1.2.3.4", "5.6.7.8", 17, 1, 2, 0, 10);
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_PASS);
	f.b[14 + 20 + 5] = 7;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_LEN);
	f.b[14 + 20 + 5] = 19;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_LEN);
	/* VLAN, QinQ */
	f = v4("1.2.3.4", "5.6.7.8", 17, 1, 2, 0, 0);
	memmove(f.b + 16, f.b + 12, f.len - 12);
	f.b[12] = 0x81;
	f.b[13] = 0x00;
	f.len += 4;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_PASS);
	CHECK_EQ(p.dport, 2);
	/* not IP */
	eth(&f, 0x0806);
	f.len = 60;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_PASS_NOT_IP);
	CHECK_EQ(scrub_parse(f.b, 13, true, &p), SCRUB_DROP_SHORT);
	/* IPv6: good, hop limit 0, payload length, a fragment header, an
	 * extension header beyond the frame */
	f = v6("2001:db8::1", "2001:db8::2", 17, 53, 53, 0);
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_PASS);
	CHECK_EQ(p.family, 6);
	CHECK_EQ(p.dport, 53);
	f.b[14 + 7] = 0;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_TTL);
	f.b[14 + 7] = 1;
	f.b[14 + 5] = 9;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_LEN);
	f.b[14 + 5] = 8;
	f.b[14] = 0x40;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_VERSION);
	f.b[14] = 0x60;
	f.b[14 + 6] = 44; /* a fragment header in the 8 bytes */
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_FRAG);
	f.b[14 + 6] = 60; /* dest options of (0 + 1) * 8 = 8 bytes: ok, then
			   * next header = byte 0 = 0 (hop-by-hop) beyond */
	f.b[14 + 40] = 0;
	f.b[14 + 40 + 1] = 0;
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_SHORT);
	f.b[14 + 40 + 1] = 5; /* 48 bytes: beyond the payload */
	CHECK_EQ(scrub_parse(f.b, f.len, true, &p), SCRUB_DROP_EXTHDR);
}

/* ---- every rule kind, exact counts ---- */

static void test_rules(void)
{
	struct scrub_rules *r = rules(
		"# a rules file\n"
		"allow 10.9.0.0/16 2001:db8:1::/48\n"
		"deny 10.0.0.0/8\n"
		"deny 2001:db8::/32\n"
		"drop proto udp dport 19\n"
		"drop proto tcp flags F/FSRPAU   # FIN alone\n"
		"pass proto tcp src 192.0.2.0/24 dport 22\n"
		"drop proto tcp dport 22\n"
		"drop proto icmp\n"
		"fragments pass\n");
	struct scrub_worker w;
	int counts[SCRUB_NREASONS] = {0};

	if (!r)
		return;
	CHECK_EQ(r->nrules, 8);
	CHECK_EQ(scrub_worker_init(&w, 0, 1024, 64, 1), 0);
	struct { struct fr f; int why; } c[] = {
		{v4("10.9.1.1", "1.1.1.1", 17, 1, 19, 0, 0), SCRUB_PASS_ALLOW},
		{v4("10.1.1.1", "1.1.1.1", 17, 1, 53, 0, 0), SCRUB_DROP_DENY},
		{v4("11.1.1.1", "1.1.1.1", 17, 1, 19, 0, 0), SCRUB_DROP_RULE},
		{v4("11.1.1.1", "1.1.1.1", 17, 1, 20, 0, 0), SCRUB_PASS},
		{v4("11.1.1.1", "1.1.1.1", 6, 1, 80, 0x01, 0), SCRUB_DROP_RULE},
		{v4("11.1.1.1", "1.1.1.1", 6, 1, 80, 0x11, 0), SCRUB_PASS},
		{v4("192.0.2.7", "1.1.1.1", 6, 1, 22, 0x02, 0), SCRUB_PASS_RULE},
		{v4("192.0.3.7", "1.1.1.1", 6, 1, 22, 0x02, 0), SCRUB_DROP_RULE},
		{v4("11.1.1.1", "1.1.1.1", 1, 8, 0, 0, 0), SCRUB_DROP_RULE},
		{v6("2001:db8:1::5", "2001:db8::9", 17, 1, 19, 0), SCRUB_PASS_ALLOW},
		{v6("2001:db8:2::5", "2001:db8::9", 17, 1, 53, 0), SCRUB_DROP_DENY},
		{v6("2001:db9::5", "2001:db8::9", 17, 1, 19, 0), SCRUB_DROP_RULE},
		{v6("2001:db9::5", "2001:db8::9", 6, 1, 22, 0x10), SCRUB_DROP_RULE},
		{v6("2001:db9::5", "2001:db8::9", 6, 1, 23, 0x10), SCRUB_PASS},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int why = judge(&w, r, &c[i].f, SEC);

		CHECK(why == c[i].why, "frame %zu: %s, want %s", i,
		      scrub_reason_name(why), scrub_reason_name(c[i].why));
		counts[c[i].why]++;
	}
	for (int k = 0; k < SCRUB_NREASONS; k++)
		CHECK(atomic_load(&w.reason[k]) == (uint64_t)counts[k],
		      "%s: %llu, want %d", scrub_reason_name(k),
		      (unsigned long long)atomic_load(&w.reason[k]), counts[k]);
	/* by rule: allow 2, deny v4 1, deny v6 1, udp 19: 2, FIN 1, ssh pass
	 * 1, ssh drop 2, icmp 1 */
	uint64_t want[] = {2, 1, 1, 2, 1, 1, 2, 1};

	for (uint32_t i = 0; i < 8; i++)
		CHECK(scrub_rules_hits(r, i) == want[i], "rule %u (%s): %llu, want %llu",
		      i, r->rule[i].text,
		      (unsigned long long)scrub_rules_hits(r, i),
		      (unsigned long long)want[i]);
	CHECK_EQ(r->rule[1].line, 3);
	CHECK(!strcmp(r->rule[1].text, "deny 10.0.0.0/8"), "%s", r->rule[1].text);
	scrub_worker_free(&w);
	scrub_rules_free(r);
}

/* ---- rates, bans, SYN, under the injected clock ---- */

static void test_limits(void)
{
	struct scrub_rules *r = rules("limit packets 10 bytes 100k burst 1 ban 60\n"
				      "syn-limit 5\n");
	struct scrub_worker w;
	struct fr a = v4("1.1.1.1", "9.9.9.9", 17, 1, 2, 0, 0);
	struct fr b = v4("1.1.1.2", "9.9.9.9", 17, 1, 2, 0, 1000);
	int pass = 0, drop = 0;

	if (!r)
		return;
	CHECK_EQ(scrub_worker_init(&w, 0, 1024, 64, 1), 0);
	/* a: 10 packets at t=1 s pass, the 11th is over and bans a */
	for (int i = 0; i < 10; i++)
		CHECK_EQ(judge(&w, r, &a, 1 * SEC), SCRUB_PASS);
	CHECK_EQ(judge(&w, r, &a, 1 * SEC), SCRUB_DROP_PPS);
	CHECK(w.new_ban, "a ban was made");
	CHECK_EQ(w.ban_until, 61 * SEC);
	/* banned until 61 s, even with tokens back */
	CHECK_EQ(judge(&w, r, &a, 30 * SEC), SCRUB_DROP_BANNED);
	CHECK_EQ(judge(&w, r, &a, 61 * SEC - 1), SCRUB_DROP_BANNED);
	CHECK_EQ(judge(&w, r, &a, 61 * SEC), SCRUB_PASS);
	CHECK_EQ(atomic_load(&w.reason[SCRUB_DROP_PPS]), 1);
	CHECK_EQ(atomic_load(&w.reason[SCRUB_DROP_BANNED]), 2);
	/* b: 1042-byte frames against 100000 bytes/s, no ban: 95 pass at
	 * once, then every one is over; half a second later 47 more */
	scrub_rules_free(r);
	r = rules("limit bytes 100k\n");
	for (int i = 0; i < 200; i++) {
		int why = judge(&w, r, &b, 100 * SEC);

		pass += why == SCRUB_PASS;
		drop += why == SCRUB_DROP_BPS;
	}
	CHECK_EQ(pass, 95);
	CHECK_EQ(drop, 105);
	pass = 0;
	for (int i = 0; i < 100; i++)
		pass += judge(&w, r, &b, 100 * SEC + SEC / 2) == SCRUB_PASS;
	CHECK_EQ(pass, 48); /* 50000 + the 960 left over */
	CHECK_EQ(scrub_rules_hits(r, 0), 105 + 52);
	/* SYN: 5 a second per destination, burst 1 s; other destinations
	 * have their own; SYN-ACK is not counted */
	scrub_rules_free(r);
	r = rules("syn-limit 5\n");
	struct fr syn = v4("2.2.2.2", "8.8.8.8", 6, 1, 80, 0x02, 0);
	struct fr syn2 = v4("2.2.2.3", "8.8.8.9", 6, 1, 80, 0x02, 0);
	struct fr synack = v4("2.2.2.2", "8.8.8.8", 6, 1, 80, 0x12, 0);

	pass = 0;
	for (int i = 0; i < 8; i++)
		pass += judge(&w, r, &syn, 200 * SEC) == SCRUB_PASS;
	CHECK_EQ(pass, 5);
	CHECK_EQ(judge(&w, r, &syn2, 200 * SEC), SCRUB_PASS);
	CHECK_EQ(judge(&w, r, &synack, 200 * SEC), SCRUB_PASS);
	/* 0.4 s later: 2 tokens back */
	CHECK_EQ(judge(&w, r, &syn, 200 * SEC + 400000000), SCRUB_PASS);
	CHECK_EQ(judge(&w, r, &syn, 200 * SEC + 400000000), SCRUB_PASS);
	CHECK_EQ(judge(&w, r, &syn, 200 * SEC + 400000000), SCRUB_DROP_SYN);
	CHECK_EQ(atomic_load(&w.reason[SCRUB_DROP_SYN]), 4);
	CHECK_EQ(scrub_rules_hits(r, 0), 4);
	scrub_worker_free(&w);
	scrub_rules_free(r);
}

/* A table of 8 entries under 100000 sources: memory fixed, the oldest
 * evicted, a banned source kept while others can go. */
static void test_eviction(void)
{
	struct scrub_table t;
	uint8_t a[16] = {0};

	CHECK_EQ(scrub_table_init(&t, 8, 7), 0);
	CHECK_EQ(t.nsets, 2);
	for (uint32_t i = 0; i < 100000; i++) {
		memcpy(a, &i, 4);
		struct scrub_entry *e = scrub_table_get(&t, a, i + 1, 1, 1);

		CHECK(e >= t.e && e < t.e + 8, "entry in the table");
		if (i == 5) {
			e->ban_until = ~0ull;
			e->ban_at = 6;
		}
	}
	CHECK_EQ(t.evictions, 100000 - 8);
	uint32_t five = 5;

	memcpy(a, &five, 4);
	CHECK(scrub_table_find(&t, a) != NULL, "the banned source stays");
	CHECK_EQ(t.evicted_banned, 0);
	scrub_table_free(&t);

	/* one set: its three oldest banned, ten new sources take the fourth
	 * way each in turn; when all four are banned, the oldest goes */
	CHECK_EQ(scrub_table_init(&t, 4, 7), 0);
	CHECK_EQ(t.nsets, 1);
	for (uint32_t i = 0; i < 4; i++) {
		memcpy(a, &i, 4);
		struct scrub_entry *e = scrub_table_get(&t, a, i + 1, 1, 1);

		if (i < 3) {
			e->ban_until = 1000;
			e->ban_at = i + 1;
		}
	}
	for (uint32_t i = 100; i < 110; i++) {
		memcpy(a, &i, 4);
		scrub_table_get(&t, a, i, 1, 1);
	}
	for (uint32_t i = 0; i < 3; i++) {
		memcpy(a, &i, 4);
		CHECK(scrub_table_find(&t, a) != NULL, "banned source %u stays", i);
	}
	CHECK_EQ(t.evicted_banned, 0);
	CHECK_EQ(t.evictions, 10);
	memcpy(a, &(uint32_t){109}, 4);
	scrub_table_find(&t, a)->ban_until = 1000;
	memcpy(a, &(uint32_t){200}, 4);
	scrub_table_get(&t, a, 300, 1, 1);
	CHECK_EQ(t.evicted_banned, 1);
	memcpy(a, &(uint32_t){0}, 4);
	CHECK(scrub_table_find(&t, a) == NULL, "the oldest banned one went");
	scrub_table_free(&t);
}

/* Manual bans through the context; an unban also lifts an automatic
 * ban made before it. */
static void test_manual_bans(void)
{
	struct scrub_ctx *c = aligned_alloc(64, sizeof(*c));
	struct scrub_worker w;
	struct fr f = v4("3.3.3.3", "9.9.9.9", 17, 1, 2, 0, 0);
	uint8_t a[16];

	CHECK_EQ(scrub_ctx_init(c, rules("limit packets 1 ban 100\n"), 1), 0);
	CHECK_EQ(scrub_worker_init(&w, 0, 64, 64, 1), 0);
	scrub_parse_addr("3.3.3.3", a);
	CHECK_EQ(scrub_ctx_ban(c, a, true, 50 * SEC, 10 * SEC), 0);
	struct scrub_view v = scrub_ctx_enter(c, 0);

	CHECK_EQ(scrub_judge(&w, v.rules, v.bans, f.b, f.len, 20 * SEC),
		 SCRUB_DROP_BANNED);
	CHECK_EQ(scrub_judge(&w, v.rules, v.bans, f.b, f.len, 50 * SEC),
		 SCRUB_PASS);
	/* over: an automatic ban to 150 s */
	CHECK_EQ(scrub_judge(&w, v.rules, v.bans, f.b, f.len, 50 * SEC),
		 SCRUB_DROP_PPS);
	CHECK_EQ(scrub_judge(&w, v.rules, v.bans, f.b, f.len, 60 * SEC),
		 SCRUB_DROP_BANNED);
	scrub_ctx_leave(c, 0);
	CHECK_EQ(scrub_ctx_ban(c, a, false, 0, 70 * SEC), 0);
	v = scrub_ctx_enter(c, 0);
	CHECK_EQ(scrub_judge(&w, v.rules, v.bans, f.b, f.len, 80 * SEC),
		 SCRUB_PASS);
	scrub_ctx_leave(c, 0);
	scrub_worker_free(&w);
	scrub_ctx_fini(c);
	free(c);
}

/* ---- reload under traffic ---- */

/* Set A drops UDP port 1 and passes port 2; set B the reverse. Workers
 * judge batches of alternating frames; in every batch all verdicts must
 * come from one set (so a port-1 drop and a port-2 drop never meet in
 * one batch), and the set must be the one the swap order allows. */
struct rl {
	struct scrub_ctx *c;
	unsigned id;
	atomic_int *stop;
	uint64_t batches, mixed, a_batches, b_batches;
};

static void *reload_worker(void *arg)
{
	struct rl *x = arg;
	struct scrub_worker w;
	struct fr f1 = v4("4.4.4.4", "9.9.9.9", 17, 1, 1, 0, 0);
	struct fr f2 = v4("4.4.4.4", "9.9.9.9", 17, 1, 2, 0, 0);

	if (scrub_worker_init(&w, x->id, 64, 64, 1))
		return NULL;
	while (!atomic_load(x->stop)) {
		struct scrub_view v = scrub_ctx_enter(x->c, x->id);
		int d1 = 0, d2 = 0;

		for (int i = 0; i < 32; i++) {
			d1 += scrub_dropped(scrub_judge(&w, v.rules, v.bans, f1.b,
							f1.len, 1));
			d2 += scrub_dropped(scrub_judge(&w, v.rules, v.bans, f2.b,
							f2.len, 1));
		}
		scrub_ctx_leave(x->c, x->id);
		x->batches++;
		if (d1 == 32 && d2 == 0)
			x->a_batches++;
		else if (d1 == 0 && d2 == 32)
			x->b_batches++;
		else
			x->mixed++;
	}
	scrub_worker_free(&w);
	return NULL;
}

static void test_reload(void)
{
	struct scrub_ctx *c = aligned_alloc(64, sizeof(*c));
	atomic_int stop = 0;
	struct rl x[2];
	pthread_t th[2];
	const char *A = "drop proto udp dport 1\n", *B = "drop proto udp dport 2\n";

	CHECK_EQ(scrub_ctx_init(c, rules(A), 2), 0);
	for (unsigned i = 0; i < 2; i++) {
		x[i] = (struct rl){.c = c, .id = i, .stop = &stop};
		pthread_create(&th[i], NULL, reload_worker, &x[i]);
	}
	for (int k = 0; k < 400; k++) {
		struct scrub_rules *r = rules(k % 2 ? A : B);

		CHECK_EQ(scrub_ctx_swap_rules(c, r), 0);
	}
	/* after the last swap (set A), every new batch is A's */
	struct rl probe = {.c = c, .id = 0};
	(void)probe;
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < 2; i++) {
		CHECK(x[i].batches > 0, "worker %u ran", i);
		CHECK_EQ(x[i].mixed, 0);
	}
	printf("reload: %llu + %llu batches, %llu A, %llu B\n",
	       (unsigned long long)x[0].batches, (unsigned long long)x[1].batches,
	       (unsigned long long)(x[0].a_batches + x[1].a_batches),
	       (unsigned long long)(x[0].b_batches + x[1].b_batches));
	/* the old sets were freed while workers ran: ASan would see a use
	 * after free; the running set is the last one swapped in (A) */
	struct scrub_worker w;
	struct fr f1 = v4("4.4.4.4", "9.9.9.9", 17, 1, 1, 0, 0);

	CHECK_EQ(scrub_worker_init(&w, 0, 64, 64, 1), 0);
	struct scrub_view v = scrub_ctx_enter(c, 0);

	CHECK_EQ(scrub_judge(&w, v.rules, v.bans, f1.b, f1.len, 1),
		 SCRUB_DROP_RULE);
	scrub_ctx_leave(c, 0);
	scrub_worker_free(&w);
	scrub_ctx_fini(c);
	free(c);
}

/* A bad file through scrub_rules_load: nothing built, file:line. */
static void test_load(void)
{
	char dir[] = "/tmp/scrub_test.XXXXXX", path[300], deny[300];
	struct scrub_rules *r;
	char err[512];
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/a.rules", dir);
	snprintf(deny, sizeof(deny), "%s/list.txt", dir);
	f = fopen(deny, "w");
	fprintf(f, "# a list\n10.0.0.0/8\n\n2001:db8::/32\n");
	fclose(f);
	f = fopen(path, "w");
	fprintf(f, "deny-file list.txt\n");
	fclose(f);
	CHECK(scrub_rules_load(path, &r, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(r->deny.nprefixes, 2);
		CHECK_EQ(r->nrules, 1);
		scrub_rules_free(r);
	}
	f = fopen(deny, "a");
	fprintf(f, "10.0.0.1/8\n");
	fclose(f);
	CHECK(scrub_rules_load(path, &r, err, sizeof(err)) == -EINVAL, "bad");
	CHECK(strstr(err, "/list.txt:5: '10.0.0.1/8': host bits set") != NULL,
	      "%s", err);
	CHECK(r == NULL, "nothing built");
	f = fopen(path, "w");
	fprintf(f, "deny-file missing.txt\n");
	fclose(f);
	CHECK(scrub_rules_load(path, &r, err, sizeof(err)) == -EINVAL, "missing");
	CHECK(strstr(err, "a.rules:1: deny-file ") != NULL, "%s", err);
	unlink(deny);
	unlink(path);
	rmdir(dir);
	CHECK(scrub_rules_load(path, &r, err, sizeof(err)) == -ENOENT, "gone");
}

int main(void)
{
	test_errors();
	test_error_wording();
	test_pfx_small();
	test_pfx_random();
	test_parse();
	test_rules();
	test_limits();
	test_eviction();
	test_manual_bans();
	test_reload();
	test_load();
	test_million();
	return t_done("scrub");
}
