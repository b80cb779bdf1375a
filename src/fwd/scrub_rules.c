/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's rules files (docs/scrub.md): parsed whole into a new struct
 * scrub_rules, or refused with "FILE:LINE: what" and nothing built, so a
 * reload either swaps in a complete rule set or leaves the running one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scrub.h"

#define MAX_TOKENS 16
#define MAX_FILE (1ull << 30)

/* A growing array of prefixes. */
struct pvec {
	struct scrub_prefix *v;
	size_t n, cap;
};

/* What a parse is building. */
struct build {
	struct scrub_rules *r;
	struct pvec allow, deny;
	uint32_t rule_cap, match_cap;
	const char *name;    /* the file being read (messages) */
	uint32_t line;
	const char *dir;     /* deny-file paths are relative to it */
	char *err;
	size_t errlen;
};

static int fail(struct build *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct build *b, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(b->err, b->errlen, "%s:%u: %s", b->name, b->line, msg);
	return -EINVAL;
}

static const char *const reason_names[SCRUB_NREASONS] = {
	[SCRUB_PASS] = "passed",
	[SCRUB_PASS_ALLOW] = "allowed",
	[SCRUB_PASS_RULE] = "pass_rule",
	[SCRUB_PASS_NOT_IP] = "not_ip",
	[SCRUB_PASS_UNJUDGED] = "return",
	[SCRUB_DROP_DENY] = "deny",
	[SCRUB_DROP_RULE] = "drop_rule",
	[SCRUB_DROP_BANNED] = "banned",
	[SCRUB_DROP_PPS] = "src_pps",
	[SCRUB_DROP_BPS] = "src_bps",
	[SCRUB_DROP_SYN] = "dst_syn",
	[SCRUB_DROP_SHORT] = "truncated",
	[SCRUB_DROP_IHL] = "bad_ihl",
	[SCRUB_DROP_LEN] = "bad_len",
	[SCRUB_DROP_VERSION] = "bad_version",
	[SCRUB_DROP_TTL] = "ttl0",
	[SCRUB_DROP_FRAG] = "fragment",
	[SCRUB_DROP_EXTHDR] = "bad_exthdr",
};

const char *scrub_reason_name(int reason)
{
	if (reason < 0 || reason >= SCRUB_NREASONS)
		return "?";
	return reason_names[reason];
}

int scrub_parse_addr(const char *s, uint8_t addr[16])
{
	uint8_t a4[4];

	if (inet_pton(AF_INET, s, a4) == 1) {
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, a4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, addr) == 1 ? 0 : -1;
}

/* "10.0.0.0/8", "10.1.2.3", "2001:db8::/32" into p (addr, len, v6). */
static int parse_prefix(struct build *b, const char *tok,
			struct scrub_prefix *p)
{
	char buf[64];
	const char *slash = strchr(tok, '/');
	size_t alen = slash ? (size_t)(slash - tok) : strlen(tok);
	unsigned max;

	if (alen >= sizeof(buf))
		return fail(b, "'%.40s': not an address", tok);
	memcpy(buf, tok, alen);
	buf[alen] = 0;
	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, buf, p->addr) == 1) {
		max = 32;
	} else if (inet_pton(AF_INET6, buf, p->addr) == 1) {
		max = 128;
		p->v6 = 1;
	} else {
		return fail(b, "'%.40s': not an IPv4 or IPv6 address", buf);
	}
	p->len = (uint8_t)max;
	if (slash) {
		char *end;
		unsigned long l = strtoul(slash + 1, &end, 10);

		if (end == slash + 1 || *end || l > max)
			return fail(b, "'%.40s': the prefix length must be 0..%u",
				    tok, max);
		p->len = (uint8_t)l;
	}
	bool host = false;
	uint8_t net[16];

	memcpy(net, p->addr, sizeof(net));
	for (unsigned bit = p->len; bit < max; bit++) {
		host |= (net[bit / 8] & (0x80 >> (bit % 8))) != 0;
		net[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
	}
	if (host) {
		char s[INET6_ADDRSTRLEN];

		inet_ntop(p->v6 ? AF_INET6 : AF_INET, net, s, sizeof(s));
		return fail(b, "'%.40s': host bits set (did you mean %s/%u?)",
			    tok, s, p->len);
	}
	return 0;
}

/* A new rule of this line; its id in *id. */
static int add_rule(struct build *b, uint8_t kind, const char *text,
		    uint32_t *id)
{
	struct scrub_rules *r = b->r;

	if (r->nrules == SCRUB_MAX_RULES)
		return fail(b, "more than %u rules (put long deny lists in a deny-file)",
			    SCRUB_MAX_RULES);
	if (r->nrules == b->rule_cap) {
		uint32_t cap = b->rule_cap ? 2 * b->rule_cap : 64;
		struct scrub_rule *v = realloc(r->rule, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->rule = v;
		b->rule_cap = cap;
	}
	struct scrub_rule *ru = &r->rule[r->nrules];

	memset(ru, 0, sizeof(*ru));
	ru->kind = kind;
	ru->line = b->line;
	snprintf(ru->text, sizeof(ru->text), "%s", text);
	*id = r->nrules++;
	return 0;
}

static int push_prefix(struct build *b, struct pvec *v,
		       const struct scrub_prefix *p)
{
	if (b->allow.n + b->deny.n >= SCRUB_MAX_PREFIXES)
		return fail(b, "more than %u prefixes", SCRUB_MAX_PREFIXES);
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 1024;
		struct scrub_prefix *nv = realloc(v->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n] = *p;
	v->v[v->n].order = (uint32_t)v->n;
	v->n++;
	return 0;
}

/* A number with an optional k, m or g (x1000) suffix, at most `max`. */
static int parse_num(struct build *b, const char *what, const char *tok,
		     double max, double *out)
{
	char *end;
	double v = strtod(tok, &end);

	if (end == tok || !isfinite(v) || v < 0)
		return fail(b, "%s: '%.40s' is not a number", what, tok);
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1e6, end++;
	else if (*end == 'g' || *end == 'G')
		v *= 1e9, end++;
	if (*end)
		return fail(b, "%s: '%.40s' is not a number", what, tok);
	if (v > max)
		return fail(b, "%s: %.40s is above %.0f", what, tok, max);
	*out = v;
	return 0;
}

static int parse_u32(struct build *b, const char *what, const char *tok,
		     uint32_t lo, uint32_t hi, uint32_t *out)
{
	double v;
	int rc = parse_num(b, what, tok, hi, &v);

	if (rc)
		return rc;
	if (v < lo || v != (double)(uint32_t)v)
		return fail(b, "%s: %.40s must be a whole number %u..%u", what,
			    tok, lo, hi);
	*out = (uint32_t)v;
	return 0;
}

/* "80" or "1000-2000" */
static int parse_ports(struct build *b, const char *tok, uint16_t *lo,
		       uint16_t *hi)
{
	char *end;
	unsigned long a = strtoul(tok, &end, 10), z = a;

	if (end == tok || a > 65535)
		return fail(b, "'%.40s': a port is 0..65535", tok);
	if (*end == '-') {
		const char *s = end + 1;

		z = strtoul(s, &end, 10);
		if (end == s || z > 65535 || z < a)
			return fail(b, "'%.40s': a port range is LOW-HIGH", tok);
	}
	if (*end)
		return fail(b, "'%.40s': a port is 0..65535", tok);
	*lo = (uint16_t)a;
	*hi = (uint16_t)z;
	return 0;
}

/* TCP flags by letter: F S R P A U E C. */
static int parse_flag_set(struct build *b, const char *s, size_t n,
			  uint8_t *out)
{
	static const char letters[] = "FSRPAUEC";

	*out = 0;
	if (n == 0)
		return fail(b, "flags: empty set");
	for (size_t i = 0; i < n; i++) {
		const char *c = memchr(letters, s[i] & ~0x20, 8);

		if (!c || !s[i])
			return fail(b, "flags: '%c' is not one of FSRPAUEC", s[i]);
		*out |= (uint8_t)(1u << (c - letters));
	}
	return 0;
}

/* "S" or "S/SA": the flags under the mask (after '/'; without one, the
 * set itself) equal the set. "S" matches any frame with SYN set, "S/SA"
 * a SYN without ACK. */
static int parse_flags(struct build *b, const char *tok, struct scrub_match *m)
{
	const char *slash = strchr(tok, '/');
	size_t n = slash ? (size_t)(slash - tok) : strlen(tok);
	int rc = parse_flag_set(b, tok, n, &m->flags);

	if (rc)
		return rc;
	m->flags_mask = m->flags;
	if (slash) {
		rc = parse_flag_set(b, slash + 1, strlen(slash + 1),
				    &m->flags_mask);
		if (rc)
			return rc;
		if (m->flags & ~m->flags_mask)
			return fail(b, "flags %.40s: the set must be within the mask",
				    tok);
	}
	return 0;
}

static int parse_proto(struct build *b, const char *tok, uint8_t *proto)
{
	static const struct { const char *name; uint8_t n; } names[] = {
		{"tcp", 6}, {"udp", 17}, {"icmp", 1}, {"icmp6", 58},
		{"icmpv6", 58}, {"gre", 47}, {"esp", 50}, {"sctp", 132},
	};
	uint32_t v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(tok, names[i].name)) {
			*proto = names[i].n;
			return 0;
		}
	}
	if (parse_u32(b, "proto", tok, 1, 255, &v))
		return fail(b, "proto: '%.40s' is not tcp, udp, icmp, icmp6, gre, esp, sctp or 1..255",
			    tok);
	*proto = (uint8_t)v;
	return 0;
}

/* The src or dst PREFIX of a match rule, in IPv4-mapped bits. */
static int match_addr(struct build *b, struct scrub_match *m, bool src,
		      const char *tok)
{
	struct scrub_prefix p;
	uint8_t fam;
	int rc = parse_prefix(b, tok, &p);

	if (rc)
		return rc;
	fam = p.v6 ? 6 : 4;
	if (m->family && m->family != fam)
		return fail(b, "src and dst of one rule must be one family");
	m->family = fam;
	uint8_t *a = src ? m->src : m->dst;

	if (p.v6) {
		memcpy(a, p.addr, 16);
	} else {
		memset(a, 0, 10);
		a[10] = a[11] = 0xff;
		memcpy(a + 12, p.addr, 4);
		p.len = (uint8_t)(p.len + 96);
	}
	if (src) {
		m->has_src = true;
		m->src_len = p.len;
	} else {
		m->has_dst = true;
		m->dst_len = p.len;
	}
	return 0;
}

static int match_word(struct build *b, struct scrub_match *m, const char *k,
		      const char *v)
{
	if (!strcmp(k, "proto"))
		return parse_proto(b, v, &m->proto);
	if (!strcmp(k, "src"))
		return match_addr(b, m, true, v);
	if (!strcmp(k, "dst"))
		return match_addr(b, m, false, v);
	if (!strcmp(k, "sport") || !strcmp(k, "dport")) {
		m->has_ports = true;
		return k[0] == 's' ? parse_ports(b, v, &m->sport_lo, &m->sport_hi)
				   : parse_ports(b, v, &m->dport_lo, &m->dport_hi);
	}
	if (!strcmp(k, "flags"))
		return parse_flags(b, v, m);
	return fail(b, "'%.40s': a match rule takes proto, src, dst, sport, dport, flags",
		    k);
}

/* drop|pass [proto P] [src PFX] [dst PFX] [sport N[-M]] [dport N[-M]]
 * [flags SET[/MASK]] */
static int parse_match(struct build *b, char **tok, int n, const char *text)
{
	struct scrub_rules *r = b->r;
	struct scrub_match m = {.drop = tok[0][0] == 'd', .sport_hi = 65535,
				.dport_hi = 65535};
	int rc;

	if (n % 2 == 0)
		return fail(b, "'%.40s' wants a value", tok[n - 1]);
	for (int i = 1; i < n; i += 2) {
		rc = match_word(b, &m, tok[i], tok[i + 1]);
		if (rc)
			return rc;
	}
	if ((m.has_ports || m.flags_mask) && !m.proto)
		return fail(b, "ports and flags need a proto");
	if (m.flags_mask && m.proto != 6)
		return fail(b, "flags are TCP's: proto tcp");
	if (m.has_ports && m.proto != 6 && m.proto != 17 && m.proto != 1 &&
	    m.proto != 58 && m.proto != 132)
		return fail(b, "ports need proto tcp, udp, sctp, icmp or icmp6");
	if (r->nmatch == SCRUB_MAX_MATCH)
		return fail(b, "more than %u match rules", SCRUB_MAX_MATCH);
	if (r->nmatch == b->match_cap) {
		uint32_t cap = b->match_cap ? 2 * b->match_cap : 16;
		struct scrub_match *v = realloc(r->match, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->match = v;
		b->match_cap = cap;
	}
	rc = add_rule(b, SCRUB_RULE_MATCH, text, &m.rule);
	if (rc)
		return rc;
	r->match[r->nmatch++] = m;
	return 0;
}

/* limit [packets N] [bytes N] [burst SECS] [ban SECS] */
static int parse_limit(struct build *b, char **tok, int n, const char *text)
{
	struct scrub_rules *r = b->r;
	double ban = 0;
	int rc;

	if (r->limit_rule != UINT32_MAX)
		return fail(b, "a second limit (one per file)");
	if (n % 2 == 0 || n < 3)
		return fail(b, "limit [packets N] [bytes N] [burst SECS] [ban SECS]");
	for (int i = 1; i < n; i += 2) {
		const char *k = tok[i], *v = tok[i + 1];

		if (!strcmp(k, "packets"))
			rc = parse_num(b, k, v, 1e12, &r->pps);
		else if (!strcmp(k, "bytes"))
			rc = parse_num(b, k, v, 1e13, &r->bps);
		else if (!strcmp(k, "burst"))
			rc = parse_num(b, k, v, 3600, &r->burst_s);
		else if (!strcmp(k, "ban"))
			rc = parse_num(b, k, v, 86400 * 365, &ban);
		else
			rc = fail(b, "'%.40s': limit takes packets, bytes, burst, ban", k);
		if (rc)
			return rc;
	}
	if (r->pps == 0 && r->bps == 0)
		return fail(b, "limit: packets or bytes (above 0)");
	r->ban_ns = (uint64_t)(ban * 1e9);
	return add_rule(b, SCRUB_RULE_LIMIT, text, &r->limit_rule);
}

/* syn-limit N [burst SECS] */
static int parse_syn(struct build *b, char **tok, int n, const char *text)
{
	struct scrub_rules *r = b->r;
	int rc;

	if (r->syn_rule != UINT32_MAX)
		return fail(b, "a second syn-limit (one per file)");
	if (n != 2 && !(n == 4 && !strcmp(tok[2], "burst")))
		return fail(b, "syn-limit N [burst SECS]");
	rc = parse_num(b, "syn-limit", tok[1], 1e12, &r->syn_pps);
	if (!rc && n == 4)
		rc = parse_num(b, "burst", tok[3], 3600, &r->syn_burst_s);
	if (rc)
		return rc;
	if (r->syn_pps == 0)
		return fail(b, "syn-limit: above 0");
	return add_rule(b, SCRUB_RULE_SYN, text, &r->syn_rule);
}

static int parse_deny_file(struct build *b, const char *path,
			   const char *text);

/* allow|deny PREFIX... : one rule per line. */
static int parse_list(struct build *b, char **tok, int n, const char *text)
{
	bool allow = tok[0][0] == 'a';
	uint32_t id;
	int rc;

	if (n < 2)
		return fail(b, "%s PREFIX...", tok[0]);
	rc = add_rule(b, allow ? SCRUB_RULE_ALLOW : SCRUB_RULE_DENY, text, &id);
	for (int i = 1; i < n && !rc; i++) {
		struct scrub_prefix p;

		rc = parse_prefix(b, tok[i], &p);
		if (rc)
			break;
		p.rule = id + 1;
		rc = push_prefix(b, allow ? &b->allow : &b->deny, &p);
	}
	return rc;
}

static int parse_setting(struct build *b, char **tok, int n)
{
	struct scrub_rules *r = b->r;

	if (n != 2)
		return fail(b, "%s takes one value", tok[0]);
	if (!strcmp(tok[0], "fragments")) {
		if (strcmp(tok[1], "drop") && strcmp(tok[1], "pass"))
			return fail(b, "fragments drop|pass");
		r->frag_drop = tok[1][0] == 'd';
		return 0;
	}
	if (!strcmp(tok[0], "sources"))
		return parse_u32(b, tok[0], tok[1], SCRUB_WAYS,
				 SCRUB_MAX_SOURCES, &r->sources);
	return parse_u32(b, tok[0], tok[1], SCRUB_WAYS, SCRUB_MAX_SOURCES,
			 &r->dests);
}

/* Split line (modified) into tokens; '#' starts a comment. */
static int tokenize(struct build *b, char *line, char **tok)
{
	int n = 0;
	char *save = NULL, *hash = strchr(line, '#');

	if (hash)
		*hash = 0;
	for (char *t = strtok_r(line, " \t\r\n", &save); t;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == MAX_TOKENS)
			return fail(b, "more than %d words", MAX_TOKENS);
		tok[n++] = t;
	}
	return n;
}

static int parse_line(struct build *b, char *line)
{
	char text[96], *tok[MAX_TOKENS];
	int n;

	snprintf(text, sizeof(text), "%s", line);
	text[strcspn(text, "#\r\n")] = 0;
	for (size_t l = strlen(text); l && (text[l - 1] == ' ' || text[l - 1] == '\t');)
		text[--l] = 0;
	n = tokenize(b, line, tok);
	if (n <= 0)
		return n;
	if (!strcmp(tok[0], "allow") || !strcmp(tok[0], "deny"))
		return parse_list(b, tok, n, text);
	if (!strcmp(tok[0], "drop") || !strcmp(tok[0], "pass"))
		return parse_match(b, tok, n, text);
	if (!strcmp(tok[0], "limit"))
		return parse_limit(b, tok, n, text);
	if (!strcmp(tok[0], "syn-limit"))
		return parse_syn(b, tok, n, text);
	if (!strcmp(tok[0], "deny-file")) {
		if (n != 2)
			return fail(b, "deny-file PATH");
		return parse_deny_file(b, tok[1], text);
	}
	if (!strcmp(tok[0], "fragments") || !strcmp(tok[0], "sources") ||
	    !strcmp(tok[0], "dests"))
		return parse_setting(b, tok, n);
	return fail(b, "'%.40s': not a rule (allow, deny, deny-file, drop, pass, limit, syn-limit, fragments, sources, dests)",
		    tok[0]);
}

/* Run each line of text[0..len) through fn. */
static int each_line(struct build *b, const char *text, size_t len,
		     int (*fn)(struct build *, char *, void *), void *arg)
{
	char line[SCRUB_MAX_LINE + 1];
	size_t at = 0;

	b->line = 0;
	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t l = nl ? (size_t)(nl - (text + at)) : len - at;
		int rc;

		b->line++;
		if (l > SCRUB_MAX_LINE)
			return fail(b, "line longer than %u bytes", SCRUB_MAX_LINE);
		if (memchr(text + at, 0, l))
			return fail(b, "a NUL byte");
		memcpy(line, text + at, l);
		line[l] = 0;
		rc = fn(b, line, arg);
		if (rc < 0)
			return rc;
		at += l + 1;
	}
	return 0;
}

/* Read a whole file (at most MAX_FILE bytes) into *buf. */
static int slurp(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t cap, n = 0;
	char *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > MAX_FILE) {
		close(fd);
		return -EFBIG;
	}
	cap = (size_t)st.st_size + 1;
	p = malloc(cap);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, p + n, cap - n);

		if (r < 0) {
			int e = -errno;

			free(p);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) { /* it grew since fstat: stop at the bound */
			free(p);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	*buf = p;
	*len = n;
	return 0;
}

struct deny_arg {
	uint32_t id;
};

static int deny_line(struct build *b, char *line, void *arg)
{
	struct deny_arg *a = arg;
	char *tok[MAX_TOKENS];
	int n = tokenize(b, line, tok);
	struct scrub_prefix p;
	int rc;

	if (n <= 0)
		return n;
	if (n != 1)
		return fail(b, "one prefix a line");
	rc = parse_prefix(b, tok[0], &p);
	if (rc)
		return rc;
	p.rule = a->id + 1;
	return push_prefix(b, &b->deny, &p);
}

static int parse_deny_file(struct build *b, const char *path,
			   const char *text)
{
	char full[PATH_MAX];
	const char *name = b->name;
	uint32_t line = b->line;
	struct deny_arg a;
	char *buf;
	size_t len;
	int rc;

	if (!b->dir)
		return fail(b, "deny-file: not here");
	if (path[0] == '/')
		snprintf(full, sizeof(full), "%s", path);
	else if ((size_t)snprintf(full, sizeof(full), "%s/%s", b->dir, path) >=
		 sizeof(full))
		return fail(b, "deny-file: path too long");
	rc = slurp(full, &buf, &len);
	if (rc) {
		fail(b, "deny-file %.200s: %s", full,
		     rc == -EINVAL ? "not a regular file" : strerror(-rc));
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	rc = add_rule(b, SCRUB_RULE_DENY_FILE, text, &a.id);
	if (!rc) {
		b->name = full;
		rc = each_line(b, buf, len, deny_line, &a);
		b->name = name;
		b->line = line;
	}
	free(buf);
	return rc;
}

static int main_line(struct build *b, char *line, void *arg)
{
	(void)arg;
	return parse_line(b, line);
}

void scrub_rules_free(struct scrub_rules *r)
{
	if (!r)
		return;
	scrub_pfx_free(&r->allow);
	scrub_pfx_free(&r->deny);
	free(r->match);
	free(r->rule);
	free(r->hits);
	free(r);
}

/* Defaults, then every line, then the prefix sets. */
static int build_all(struct build *b, const char *text, size_t len)
{
	struct scrub_rules *r = b->r;
	int rc;

	r->limit_rule = r->syn_rule = UINT32_MAX;
	r->frag_drop = true;
	r->sources = 1u << 20;
	r->dests = 1u << 16;
	r->burst_s = 1;
	r->syn_burst_s = 1;
	rc = each_line(b, text, len, main_line, NULL);
	if (!rc)
		rc = scrub_pfx_build(&r->allow, b->allow.v, b->allow.n);
	if (!rc)
		rc = scrub_pfx_build(&r->deny, b->deny.v, b->deny.n);
	if (rc == -ENOMEM)
		snprintf(b->err, b->errlen, "%s: out of memory", b->name);
	return rc;
}

int scrub_rules_parse(const char *text, size_t len, const char *name,
		      const char *dir, struct scrub_rules **out, char *err,
		      size_t errlen)
{
	struct build b = {.name = name, .dir = dir, .err = err,
			  .errlen = errlen};
	int rc;

	*out = NULL;
	b.r = calloc(1, sizeof(*b.r));
	if (!b.r) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	rc = build_all(&b, text, len);
	free(b.allow.v);
	free(b.deny.v);
	if (rc) {
		scrub_rules_free(b.r);
		return rc;
	}
	*out = b.r;
	return 0;
}

int scrub_rules_load(const char *path, struct scrub_rules **out, char *err,
		     size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	char *buf;
	size_t len;
	int rc;

	*out = NULL;
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	rc = slurp(path, &buf, &len);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path,
			 rc == -EINVAL ? "not a regular file" : strerror(-rc));
		return rc;
	}
	rc = scrub_rules_parse(buf, len, path, dir, out, err, errlen);
	free(buf);
	return rc;
}

int scrub_rules_hits_alloc(struct scrub_rules *r, unsigned nworkers)
{
	size_t n = (size_t)nworkers * (r->nrules ? r->nrules : 1);

	free(r->hits);
	r->hits = calloc(n, sizeof(*r->hits));
	r->nworkers = r->hits ? nworkers : 0;
	return r->hits ? 0 : -ENOMEM;
}

uint64_t scrub_rules_hits(const struct scrub_rules *r, uint32_t id)
{
	uint64_t sum = 0;

	if (id >= r->nrules || !r->hits)
		return 0;
	for (unsigned w = 0; w < r->nworkers; w++)
		sum += atomic_load_explicit(&r->hits[(size_t)w * r->nrules + id],
					    memory_order_relaxed);
	return sum;
}
