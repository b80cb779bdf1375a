// SPDX-License-Identifier: BSD-2-Clause
/* Each back end owns its @conf keys (src/conf.h): every key of its table
 * parses, into the field this test expects; every key of another back end
 * that it does not list is refused with one line that lists those it
 * does; and pktmap-ports(7) and the back ends' pages list exactly the
 * tables' keys.
 *
 *   test_conf          the checks
 *   test_conf --man    print the @conf block of pktmap-ports(7) the
 *                      tables make (paste it between its markers)
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <pktmap/pktmap.h>

#include "name.h"
#include "port.h"
#include "t.h"
#include "util.h"

/* A name of each back end that parses without @conf, and the page of
 * docs/ that lists its keys (NULL: pktmap-ports(7) only). */
static const struct {
	const char *backend, *name, *doc;
} bases[] = {
	{ "null", "null:", NULL },
	{ "pipe", "pipe:a{0", NULL },
	{ "pcap", "pcap:/tmp/x.pcap", "docs/pcap.md" },
	{ "pkt", "pkt:eth0", "docs/packet.md" },
	{ "tap", "tap:t0", "docs/tap.md" },
	{ "xdp", "xdp:eth0", "docs/xdp.md" },
	{ "vale", "vale0:a", "docs/switch.md" },
	{ "memif", "memif:/x", "docs/memif.md" },
};

/* Where each key goes, written out here (not taken from the tables):
 * a table that sends a key to the wrong field fails. */
#define F(f) offsetof(struct pm_conf, f)
#define NONE ((size_t)-1)
static const struct {
	const char *key;
	size_t off, off2;
} fields[] = {
	{ "rings", F(tx_rings), F(rx_rings) },
	{ "tx-rings", F(tx_rings), NONE },
	{ "rx-rings", F(rx_rings), NONE },
	{ "slots", F(tx_slots), F(rx_slots) },
	{ "tx-slots", F(tx_slots), NONE },
	{ "rx-slots", F(rx_slots), NONE },
	{ "bufs", F(bufs), NONE },
	{ "buf-size", F(buf_size), NONE },
	{ "extra-bufs", F(extra_bufs), NONE },
	{ "hugepages", F(hugepages), NONE },
	{ "region", F(region), NONE },
	{ "share", F(share), F(share_gid) },
	{ "spin-us", F(spin_us), NONE },
	{ "tx", NONE, NONE }, /* xdp: tx_live, pkt: tx_frames (below) */
	{ "prog", F(xdp_prog), NONE },
	{ "host-rings", F(host_tx_rings), F(host_rx_rings) },
	{ "host-tx-rings", F(host_tx_rings), NONE },
	{ "host-rx-rings", F(host_rx_rings), NONE },
	{ "rx", F(rx_blocks), NONE },
	{ "block-ms", F(block_ms), NONE },
	{ "loop", F(loop), NONE },
	{ "linktype", F(linktype), NONE },
	{ "nanosec", F(nanosec), NONE },
	{ "role", F(role), NONE },
	{ "secret", F(secret), NONE },
	{ "broker", F(broker), NONE },
	{ "abstract", F(abstract), NONE },
};

static size_t field_of(const char *backend, const char *key, size_t *off2)
{
	*off2 = NONE;
	if (strcmp(key, "tx") == 0)
		return strcmp(backend, "xdp") == 0 ? F(tx_live) :
		       strcmp(backend, "pkt") == 0 ? F(tx_frames) : NONE;
	for (size_t i = 0; i < PM_ARRAY_SIZE(fields); i++)
		if (strcmp(fields[i].key, key) == 0) {
			*off2 = fields[i].off2;
			return fields[i].off;
		}
	return NONE;
}

static const char *base_of(const char *backend)
{
	for (size_t i = 0; i < PM_ARRAY_SIZE(bases); i++)
		if (strcmp(bases[i].backend, backend) == 0)
			return bases[i].name;
	return NULL;
}

static uint32_t u32_at(const struct pm_conf *c, size_t off)
{
	uint32_t v;
	memcpy(&v, (const char *)c + off, sizeof(v));
	return v;
}

static int int_at(const struct pm_conf *c, size_t off)
{
	int v;
	memcpy(&v, (const char *)c + off, sizeof(v));
	return v;
}

/* A value key k takes (the first word, a number at its top, a text of
 * its longest), into val; what the field then holds into *want. */
static void good_value(const struct pm_conf_key *k, char *val, size_t len,
		       long long *want)
{
	switch (k->kind) {
	case PM_CONF_WORD:
		snprintf(val, len, "%s", k->words[0].word);
		*want = k->words[0].value;
		break;
	case PM_CONF_TEXT:
		memset(val, 's', k->max);
		val[k->max] = 0;
		*want = k->max;
		break;
	case PM_CONF_GROUP:
		snprintf(val, len, "group:0");
		*want = 0;
		break;
	default:
		snprintf(val, len, "%u", k->max);
		*want = k->max;
	}
}

/* Every key of back end d parses, into its field: each word of a word
 * key, numbers at both ends of their range. */
static void check_takes(const struct pm_port_ops *ops)
{
	const char *be = ops->desc.name, *base = base_of(be);
	const struct pm_conf_key *k;
	char name[PM_NAME_MAX], err[400], val[80];
	struct pm_name nm;
	for (unsigned i = 0; (k = pm_conf_key_at(ops->conf, i)) != NULL; i++) {
		size_t off2, off = field_of(be, k->name, &off2);
		CHECK(off != NONE, "%s: key '%s' has no field in this test", be,
		      k->name);
		if (off == NONE)
			continue;
		long long want;
		good_value(k, val, sizeof(val), &want);
		snprintf(name, sizeof(name), "%s@conf:%s=%s", base, k->name, val);
		int r = pm_name_parse(name, &nm, err, sizeof(err));
		CHECK(r == 0, "'%s' should parse: %s", name, err);
		if (r)
			continue;
		const struct pm_conf *c = &nm.conf;
		switch (k->kind) {
		case PM_CONF_TEXT:
			CHECK(strcmp((const char *)c + off, val) == 0, "'%s': '%s'",
			      name, (const char *)c + off);
			break;
		case PM_CONF_GROUP:
			CHECK(c->share && c->share_gid == 0, "'%s'", name);
			break;
		case PM_CONF_WORD:
			for (const struct pm_conf_word *w = k->words; w->word; w++) {
				snprintf(name, sizeof(name), "%s@conf:%s=%s", base,
					 k->name, w->word);
				CHECK(pm_name_parse(name, &nm, err, sizeof(err)) == 0,
				      "'%s': %s", name, err);
				CHECK_EQ(int_at(c, off), w->value);
			}
			break;
		case PM_CONF_INT:
			CHECK_EQ(int_at(c, off), want);
			break;
		default:
			CHECK_EQ(u32_at(c, off), want);
			if (off2 != NONE)
				CHECK_EQ(u32_at(c, off2), want);
			/* the bottom of the range too */
			snprintf(name, sizeof(name), "%s@conf:%s=%u", base, k->name,
				 k->min);
			CHECK(pm_name_parse(name, &nm, err, sizeof(err)) == 0,
			      "'%s': %s", name, err);
			CHECK_EQ(u32_at(c, off), k->min);
			/* one below it, one above the top: refused */
			for (int e = 0; e < 2; e++) {
				if (e == 0 && k->min == 0)
					continue;
				snprintf(name, sizeof(name), "%s@conf:%s=%llu", base,
					 k->name, e ? (unsigned long long)k->max + 1 :
						      (unsigned long long)k->min - 1);
				CHECK(pm_name_parse(name, &nm, err, sizeof(err)) ==
					      -EINVAL && strstr(err, "needs a number"),
				      "'%s': %s", name, err);
			}
		}
	}
}

/* "k1, k2, ...": the keys back end ops takes, as its refusals list them. */
static void list_keys(const struct pm_port_ops *ops, const char *sep,
		      const char *quote, char *out, size_t len)
{
	const struct pm_conf_key *k;
	size_t n = 0;
	out[0] = 0;
	for (unsigned i = 0; (k = pm_conf_key_at(ops->conf, i)) != NULL; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s%s%s", i ? sep : "",
				      quote, k->name, quote);
}

static bool takes(const struct pm_port_ops *ops, const char *key)
{
	const struct pm_conf_key *k;
	for (unsigned i = 0; (k = pm_conf_key_at(ops->conf, i)) != NULL; i++)
		if (strcmp(k->name, key) == 0)
			return true;
	return false;
}

/* Every key of another back end that ops does not list (with a value
 * its owner takes) is refused: -EINVAL and exactly the one line. */
static void check_refuses(const struct pm_port_ops *ops)
{
	const struct pktmap_backend_desc *d;
	const struct pm_conf_key *k;
	char name[PM_NAME_MAX], err[400], want[400], list[300], val[80];
	struct pm_name nm;
	list_keys(ops, ", ", "", list, sizeof(list));
	for (unsigned b = 0; (d = pktmap_backend(b)) != NULL; b++) {
		const struct pm_port_ops *other = pm_backend_find(d->name);
		for (unsigned i = 0; (k = pm_conf_key_at(other->conf, i)); i++) {
			if (takes(ops, k->name))
				continue;
			long long dummy;
			good_value(k, val, sizeof(val), &dummy);
			snprintf(name, sizeof(name), "%s@conf:%s=%s",
				 base_of(ops->desc.name), k->name, val);
			snprintf(want, sizeof(want), "%s: unknown key \"%s\" for "
				 "%s: (accepted: %s)", name, k->name,
				 ops->desc.name, list);
			int r = pm_name_parse(name, &nm, err, sizeof(err));
			CHECK(r == -EINVAL && strcmp(err, want) == 0,
			      "'%s': %d '%s', want '%s'", name, r, err, want);
		}
	}
}

/* One refusal written out in full: the line's form, whatever the tables
 * say. */
static void check_one_line(void)
{
	char err[400];
	struct pm_name nm;
	const char *name = "pipe:a{0@conf:block-ms=4";
	CHECK(pm_name_parse(name, &nm, err, sizeof(err)) == -EINVAL &&
		      strcmp(err, "pipe:a{0@conf:block-ms=4: unknown key "
			     "\"block-ms\" for pipe: (accepted: rings, tx-rings, "
			     "rx-rings, slots, tx-slots, rx-slots, bufs, buf-size, "
			     "extra-bufs, hugepages, region, share, spin-us)") == 0,
	      "%s", err);
	name = "xdp:eth0@conf:tx=frames";
	CHECK(pm_name_parse(name, &nm, err, sizeof(err)) == -EINVAL &&
		      strcmp(err, "xdp:eth0@conf:tx=frames: '@conf:tx=frames': "
			     "expected live (BPF_PROG_RUN live frames) or xsk "
			     "(AF_XDP)") == 0,
	      "%s", err);
	name = "memif:/x@conf:region=r";
	CHECK(pm_name_parse(name, &nm, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "unknown key \"region\" for memif: (accepted: "
			     "rings, tx-rings, rx-rings, buf-size, spin-us, "
			     "slots, tx-slots, rx-slots, role, secret, "
			     "abstract)"),
	      "%s", err);
	/* a key's name with control characters: still one line */
	name = "null:@conf:a\nb=1";
	CHECK(pm_name_parse(name, &nm, err, sizeof(err)) == -EINVAL &&
		      strchr(err, '\n') == NULL && strstr(err, "\"a?b\""),
	      "%s", err);
}

/* text with every run of blanks one space. */
static void squeeze(char *text)
{
	char *o = text;
	for (char *s = text; *s; s++) {
		bool blank = *s == ' ' || *s == '\t' || *s == '\n';
		if (blank && (o == text || o[-1] == ' '))
			continue;
		*o++ = blank ? ' ' : *s;
	}
	*o = 0;
}

static char *slurp(const char *rel)
{
	const char *root = getenv("PKTMAP_SOURCE_ROOT");
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root ? root : PKTMAP_SOURCE_ROOT,
		 rel);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* scdoc text: '_' and '*' are markup. */
static void man_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '_' || *s == '*')
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* One key of pktmap-ports(7): its value, its range (and its back end,
 * for an own key: owner), then what it does. */
static void man_key(FILE *f, const struct pm_conf_key *k, const char *owner)
{
	fprintf(f, "\n\t*%s*=", k->name);
	if (k->kind == PM_CONF_WORD)
		for (const struct pm_conf_word *w = k->words; w->word; w++)
			fprintf(f, "%s*%s*", w == k->words ? "" : "|", w->word);
	else
		fprintf(f, "_%s_", k->arg ? k->arg : "N");
	if (k->kind == PM_CONF_TEXT)
		fprintf(f, " (%s%s1 to %u characters)", owner ? owner : "",
			owner ? ": " : "", k->max);
	else if (k->kind != PM_CONF_WORD && k->kind != PM_CONF_GROUP)
		fprintf(f, " (%s%s%u to %u)", owner ? owner : "",
			owner ? ": " : "", k->min, k->max);
	else if (owner)
		fprintf(f, " (%s)", owner);
	fprintf(f, "\n\t\t");
	man_text(f, k->help);
	for (const struct pm_conf_word *w = k->words;
	     k->kind == PM_CONF_WORD && w->word; w++)
		if (w->note) {
			fprintf(f, "; %s: ", w->word);
			man_text(f, w->note);
		}
	fprintf(f, "\n");
}

/* The block of pktmap-ports(7) between its two markers, from the tables:
 * every key once, in the order the back ends list them (the common keys
 * first), then each back end's keys. */
static void man_block(FILE *f)
{
	const struct pktmap_backend_desc *d;
	const struct pm_conf_key *k, *done[64];
	unsigned ndone = 0;
	fprintf(f, "*@conf:*_KEY=VALUE,..._\n"
		   "\tThe keys of a back end are listed below; any other key it "
		   "refuses\n\twith one line that lists its keys.\n");
	for (unsigned b = 0; (d = pktmap_backend(b)) != NULL; b++) {
		const struct pm_port_ops *ops = pm_backend_find(d->name);
		for (unsigned i = 0; (k = pm_conf_key_at(ops->conf, i)); i++) {
			bool dup = false;
			for (unsigned j = 0; j < ndone; j++)
				dup |= done[j] == k;
			if (dup || ndone == PM_ARRAY_SIZE(done))
				continue;
			done[ndone++] = k;
			man_key(f, k, k->ck ? NULL : d->name);
		}
	}
	fprintf(f, "\n\tThe keys of each back end:\n\n");
	for (unsigned b = 0; (d = pktmap_backend(b)) != NULL; b++) {
		char list[400];
		list_keys(pm_backend_find(d->name), ", ", "", list, sizeof(list));
		fprintf(f, "\t- *%s*: %s\n", d->name, list);
	}
}

#define MAN "docs/man/pktmap-ports.7.scd"
#define MAN_BEGIN "; @conf keys: begin (tests/unit/test_conf.c --man)\n"
#define MAN_END "; @conf keys: end\n"

/* pktmap-ports(7) holds man_block()'s text, byte for byte, between its
 * markers. */
static void check_man(void)
{
	static char want[1 << 16];
	FILE *f = fmemopen(want, sizeof(want) - 1, "w");
	CHECK(f != NULL, "fmemopen");
	if (!f)
		return;
	man_block(f);
	fclose(f);
	char *page = slurp(MAN);
	CHECK(page != NULL, "cannot read %s", MAN);
	char *a = page ? strstr(page, MAN_BEGIN) : NULL;
	char *z = a ? strstr(a, MAN_END) : NULL;
	CHECK(a && z, "%s: no '%s' ... '%s'", MAN, MAN_BEGIN, MAN_END);
	if (!a || !z)
		return;
	a += strlen(MAN_BEGIN);
	*z = 0;
	CHECK(strcmp(a, want) == 0, "%s: the @conf block is not the tables': "
	      "run build/tests/test_conf --man and paste its output between the "
	      "markers; it is:\n%s\nthe tables say:\n%s", MAN, a, want);
}

/* Each back end's page says "`@conf` keys of `B:`: `k1`, `k2`, ... ."
 * with exactly its keys. */
static void check_pages(void)
{
	for (size_t i = 0; i < PM_ARRAY_SIZE(bases); i++) {
		if (!bases[i].doc)
			continue;
		const struct pm_port_ops *ops = pm_backend_find(bases[i].backend);
		char list[600], want[700];
		list_keys(ops, ", ", "`", list, sizeof(list));
		snprintf(want, sizeof(want), "`@conf` keys of `%s:`: %s.",
			 bases[i].backend, list);
		char *page = slurp(bases[i].doc);
		CHECK(page != NULL, "cannot read %s", bases[i].doc);
		if (!page)
			continue;
		squeeze(page);
		CHECK(strstr(page, want) != NULL, "%s does not say: %s",
		      bases[i].doc, want);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--man") == 0) {
		printf("%s", MAN_BEGIN);
		man_block(stdout);
		printf("%s", MAN_END);
		return 0;
	}
	const struct pktmap_backend_desc *d;
	for (unsigned b = 0; (d = pktmap_backend(b)) != NULL; b++) {
		const struct pm_port_ops *ops = pm_backend_find(d->name);
		CHECK(ops && ops->conf, "%s: no @conf table", d->name);
		CHECK(base_of(d->name) != NULL, "%s: no name in this test's table",
		      d->name);
		if (!ops || !ops->conf || !base_of(d->name))
			continue;
		/* a back end lists a key once (pm_conf_set takes the first) */
		const struct pm_conf_key *k, *k2;
		for (unsigned i = 0; (k = pm_conf_key_at(ops->conf, i)); i++)
			for (unsigned j = i + 1; (k2 = pm_conf_key_at(ops->conf, j));
			     j++)
				CHECK(strcmp(k->name, k2->name) != 0,
				      "%s lists '%s' twice", d->name, k->name);
		check_takes(ops);
		check_refuses(ops);
	}
	check_one_line();
	check_man();
	check_pages();
	return t_done("conf");
}
