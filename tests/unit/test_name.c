// SPDX-License-Identifier: BSD-2-Clause
/* Port-name parsing: netmap's grammar, and one-line errors for the rest. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <pktmap/pktmap.h>

#include "name.h"
#include "port.h"
#include "t.h"
#include "util.h"

struct name_case {
	const char *name;
	int ok;
	const char *backend, *body;
	uint32_t reg;
	int ring, pipe_id;
	uint32_t dir;
	const char *errpart; /* for failures: a piece of the message */
};

static const struct name_case cases[] = {
	{ "pipe:a{0", 1, "pipe", "a", NR_REG_PIPE_MASTER, -1, 0, 0, NULL },
	{ "pipe:a}3", 1, "pipe", "a", NR_REG_PIPE_SLAVE, -1, 3, 0, NULL },
	{ "pipe:my-pipe{2-1", 1, "pipe", "my-pipe", NR_REG_PIPE_MASTER, 1, 2, 0, NULL },
	{ "pipe:a{", 1, "pipe", "a", NR_REG_PIPE_MASTER, -1, 0, 0, NULL },
	{ "pipe:a{0/T", 1, "pipe", "a", NR_REG_PIPE_MASTER, -1, 0, PKTMAP_DIR_TX, NULL },
	{ "null:", 1, "null", "", NR_REG_ALL_NIC, -1, -1, 0, NULL },
	/* a dash not followed by digits only is part of the name */
	{ "pkt:br-lan", 1, "pkt", "br-lan", NR_REG_ALL_NIC, -1, -1, 0, NULL },
	{ "pkt:br-1x", 1, "pkt", "br-1x", NR_REG_ALL_NIC, -1, -1, 0, NULL },
	/* a group by name (root is group 0 everywhere) or by number */
	{ "pipe:x{0@conf:share=group:root", 1, "pipe", "x", NR_REG_PIPE_MASTER, -1,
	  0, 0, NULL },
	{ "pipe:x{0@conf:share=group:nosuchgroup_pm", 0, NULL, NULL, 0, 0, 0, 0,
	  "no such group" },
	{ "pipe:x{0@conf:share=group:4294967295", 0, NULL, NULL, 0, 0, 0, 0,
	  "not a group id" },
	{ "null:-1", 1, "null", "", NR_REG_ONE_NIC, 1, -1, 0, NULL },
	{ "pcap:/tmp/x.pcap", 1, "pcap", "/tmp/x.pcap", NR_REG_ALL_NIC, -1, -1, 0, NULL },
	{ "pcap:/tmp/x-1.pcap/R", 1, "pcap", "/tmp/x-1.pcap", NR_REG_ALL_NIC, -1, -1,
	  PKTMAP_DIR_RX, NULL },
	{ "pcap:a@b.pcap", 1, "pcap", "a@b.pcap", NR_REG_ALL_NIC, -1, -1, 0, NULL },
	{ "pcap:/tmp/T", 1, "pcap", "/tmp", NR_REG_ALL_NIC, -1, -1, PKTMAP_DIR_TX, NULL },
	/* netmap's VALE grammar: "vale" and anything up to ':' is a switch */
	{ "vale0:a", 1, "vale0", "a", NR_REG_ALL_NIC, -1, -1, 0, NULL },
	{ "valeX_1:port.2@mem:z", 1, "valeX_1", "port.2", NR_REG_ALL_NIC, -1, -1, 0,
	  NULL },
	{ "vale0:a/T", 1, "vale0", "a", NR_REG_ALL_NIC, -1, -1, PKTMAP_DIR_TX, NULL },
	{ "vale0:a-1", 0, NULL, NULL, 0, 0, 0, 0, "single ring" },
	{ "vale0:a^", 0, NULL, NULL, 0, 0, 0, 0, "host rings" },
	{ "valeabcdefghijklm:a", 0, NULL, NULL, 0, 0, 0, 0, "at most 11 more" },
	{ "eth0", 0, NULL, NULL, 0, 0, 0, 0, "no back end" },
	{ "", 0, NULL, NULL, 0, 0, 0, 0, "empty" },
	{ "nosuch:x", 0, NULL, NULL, 0, 0, 0, 0, "unknown back end 'nosuch'" },
	{ "pipe:", 0, NULL, NULL, 0, 0, 0, 0, "needs an interface or pipe name" },
	{ "pipe:x", 0, NULL, NULL, 0, 0, 0, 0, "NAME{N" },
	{ "pipe:x^", 0, NULL, NULL, 0, 0, 0, 0, "host rings" },
	{ "pipe:x{0@conf:bogus=1", 0, NULL, NULL, 0, 0, 0, 0, "unknown key" },
	{ "pipe:x{0@conf:slots=abc", 0, NULL, NULL, 0, 0, 0, 0, "needs a number" },
	{ "pipe:x{0@conf:rings=0", 0, NULL, NULL, 0, 0, 0, 0, "needs a number" },
	{ "pipe:x{0@conf:slots", 0, NULL, NULL, 0, 0, 0, 0, "key=value" },
	{ "pipe:x{0/Q", 0, NULL, NULL, 0, 0, 0, 0, "unknown flags" },
	{ "pipe:x{0/ZC", 0, NULL, NULL, 0, 0, 0, 0, "cannot both" },
	{ "pipe:x{99999", 0, NULL, NULL, 0, 0, 0, 0, "bad pipe number" },
	{ "pipe:x{0-", 0, NULL, NULL, 0, 0, 0, 0, "bad ring number" },
	{ "null:{0", 0, NULL, NULL, 0, 0, 0, 0, "pipe back end" },
	{ "pcap:", 0, NULL, NULL, 0, 0, 0, 0, "needs a file name" },
	{ "pcap:x@conf:loop=2", 0, NULL, NULL, 0, 0, 0, 0, "needs a number" },
	{ "xdp:eth0@conf:tx=livex,slots=8", 0, NULL, NULL, 0, 0, 0, 0,
	  "'@conf:tx=livex': expected live" },
	{ "xdp:eth0@conf:tx=", 0, NULL, NULL, 0, 0, 0, 0, "'@conf:tx=': expected" },
	{ "pkt:eth0@conf:rx=block", 0, NULL, NULL, 0, 0, 0, 0,
	  "'@conf:rx=block': expected blocks (RX in place in the kernel's "
	  "TPACKET_V3 blocks) or frames (TPACKET_V2 frames)" },
	{ "pkt:eth0@conf:block-ms=0", 0, NULL, NULL, 0, 0, 0, 0,
	  "'@conf:block-ms': needs a number from 1 to 60000" },
	{ "pipe:a b{0", 0, NULL, NULL, 0, 0, 0, 0, "bad character" },
	/* memif: a socket path or @abstract name, then /ID (the back end's) */
	{ "memif:/run/m.sock/3/R", 1, "memif", "/run/m.sock/3", NR_REG_ALL_NIC, -1,
	  -1, PKTMAP_DIR_RX, NULL },
	{ "memif:@vpp/m@conf:role=server", 1, "memif", "@vpp/m", NR_REG_ALL_NIC, -1,
	  -1, 0, NULL },
	{ "memif:/x@conf:role=master", 0, NULL, NULL, 0, 0, 0, 0, "server or client" },
	{ "memif:/x@conf:secret=0123456789012345678901234", 0, NULL, NULL, 0, 0, 0,
	  0, "1 to 24 characters" },
	{ "memif:/x@conf:abstract=2", 0, NULL, NULL, 0, 0, 0, 0, "needs a number" },
};

/* The limits, each at its bound and one past: PREFIX, N times FILL,
 * SUFFIX. errpart NULL: it parses. */
struct limit_case {
	const char *prefix;
	size_t n;
	char fill;
	const char *suffix, *errpart;
};

static const struct limit_case limits[] = {
	{ "pkt:", 15, 'a', "", NULL },
	{ "pkt:", 16, 'a', "", "interface names are at most 15 characters" },
	{ "pipe:", 48, 'a', "{0", NULL },
	{ "pipe:", 49, 'a', "{0", "name too long" },
	{ "vale", 11, 'a', ":p", NULL },
	{ "vale", 12, 'a', ":p", "at most 11 more" },
	{ "memif:/x@conf:secret=", 24, 's', "", NULL },
	{ "memif:/x@conf:secret=", 25, 's', "", "1 to 24 characters" },
	{ "pipe:x{0@conf:slots=", 7, '0', "512", NULL },   /* 10 digits */
	{ "pipe:x{0@conf:slots=", 8, '0', "512", "needs a number" },
	{ "pipe:x{0@conf:slots=", 0, '0', "65536", NULL },
	{ "pipe:x{0@conf:slots=", 0, '0', "65537", "needs a number" },
	{ "pipe:x{0@conf:slots=", 0, '0', "4294967808", "needs a number" }, /* 2^32 + 512 */
	{ "pipe:x{0@conf:tx-slots=", 0, '0', "4", NULL },
	{ "pipe:x{0@conf:tx-slots=", 0, '0', "3", "needs a number" },
	{ "pipe:x{0@conf:rings=", 0, '0', "64", NULL },
	{ "pipe:x{0@conf:rings=", 0, '0', "65", "needs a number" },
	{ "pipe:x{", 0, '0', "4095", NULL },
	{ "pipe:x{", 0, '0', "4096", "bad pipe number" },
	{ "pipe:x{0-", 0, '0', "63", NULL },
	{ "pipe:x{0-", 0, '0', "64", "bad ring number" },
	{ "null:", 0, '0', "-63", NULL },
	{ "null:", 0, '0', "-64", "" },
	/* the whole name: 255 characters, then 256 (PM_NAME_MAX) */
	{ "pipe:x{0@conf:rings=", 2, '0', "1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1", NULL },
	{ "pipe:x{0@conf:rings=", 3, '0', "1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,rings=1,"
	  "rings=1", "" },
};

static int nlogged;

static void count_log(void *ctx, enum pktmap_log_level level, const char *msg)
{
	(void)ctx;
	(void)msg;
	nlogged += level == PKTMAP_LOG_ERR;
}

int main(void)
{
	char err[400];
	struct pm_name nm;
	for (size_t i = 0; i < PM_ARRAY_SIZE(limits); i++) {
		const struct limit_case *c = &limits[i];
		char name[PM_NAME_MAX + 64];
		size_t pl = strlen(c->prefix);
		memcpy(name, c->prefix, pl);
		memset(name + pl, c->fill, c->n);
		snprintf(name + pl + c->n, sizeof(name) - pl - c->n, "%s", c->suffix);
		err[0] = 0;
		int r = pm_name_parse(name, &nm, err, sizeof(err));
		if (!c->errpart)
			CHECK(r == 0, "limit: '%s' (%zu) should parse: %s", name,
			      strlen(name), err);
		else
			CHECK(r == -EINVAL && strstr(err, c->errpart),
			      "limit: '%s' (%zu) should fail with '%s': %d %s",
			      name, strlen(name), c->errpart, r, err);
	}
	for (size_t i = 0; i < PM_ARRAY_SIZE(cases); i++) {
		const struct name_case *c = &cases[i];
		err[0] = 0;
		int r = pm_name_parse(c->name, &nm, err, sizeof(err));
		if (c->ok) {
			CHECK(r == 0, "'%s' should parse: %s", c->name, err);
			if (r)
				continue;
			CHECK(strcmp(nm.backend, c->backend) == 0, "'%s' backend %s",
			      c->name, nm.backend);
			CHECK(strcmp(nm.body, c->body) == 0, "'%s' body '%s'", c->name,
			      nm.body);
			CHECK(nm.reg == c->reg, "'%s' reg %u", c->name, nm.reg);
			CHECK(nm.ring == c->ring, "'%s' ring %d", c->name, nm.ring);
			CHECK(nm.pipe_id == c->pipe_id, "'%s' pipe %d", c->name,
			      nm.pipe_id);
			CHECK(nm.dir == c->dir, "'%s' dir %u", c->name, nm.dir);
		} else {
			CHECK(r == -EINVAL, "'%s' should fail", c->name);
			CHECK(strstr(err, c->errpart) != NULL,
			      "'%s' message '%s' lacks '%s'", c->name, err, c->errpart);
			CHECK(strchr(err, '\n') == NULL, "'%s': one line", c->name);
		}
	}
	/* Options. */
	CHECK(pm_name_parse("pipe:q{1@conf:rings=4,slots=512,buf-size=4096,"
			    "extra-bufs=8@mem:shared",
			    &nm, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ(nm.conf.tx_rings, 4);
	CHECK_EQ(nm.conf.rx_rings, 4);
	CHECK_EQ(nm.conf.tx_slots, 512);
	CHECK_EQ(nm.conf.buf_size, 4096);
	CHECK_EQ(nm.conf.extra_bufs, 8);
	CHECK(strcmp(nm.conf.region, "shared") == 0, "region %s", nm.conf.region);
	CHECK(pm_name_parse("pcap:/tmp/a.pcap@conf:loop=1", &nm, err,
			    sizeof(err)) == 0, "%s", err);
	CHECK_EQ(nm.conf.loop, 1);
	CHECK(strcmp(nm.body, "/tmp/a.pcap") == 0, "body %s", nm.body);
	CHECK_EQ(nm.conf.tx_live, -1);
	CHECK(pm_name_parse("xdp:eth0@conf:slots=64,tx=live", &nm, err,
			    sizeof(err)) == 0, "%s", err);
	CHECK_EQ(nm.conf.tx_live, 1);
	CHECK_EQ(nm.conf.tx_slots, 64);
	CHECK(pm_name_parse("xdp:eth0@conf:tx=xsk", &nm, err, sizeof(err)) == 0,
	      "%s", err);
	CHECK_EQ(nm.conf.tx_live, 0);
	CHECK_EQ(nm.conf.rx_blocks, -1);
	CHECK_EQ(nm.conf.block_ms, 0);
	CHECK(pm_name_parse("pkt:eth0@conf:rx=blocks,block-ms=250", &nm, err,
			    sizeof(err)) == 0, "%s", err);
	CHECK_EQ(nm.conf.rx_blocks, 1);
	CHECK_EQ(nm.conf.block_ms, 250);
	CHECK(pm_name_parse("pkt:eth0@conf:rx=frames", &nm, err, sizeof(err)) == 0,
	      "%s", err);
	CHECK_EQ(nm.conf.rx_blocks, 0);
	CHECK_EQ(nm.conf.tx_frames, -1);
	CHECK(pm_name_parse("pkt:eth0@conf:tx=frames", &nm, err, sizeof(err)) == 0,
	      "%s", err);
	CHECK_EQ(nm.conf.tx_frames, 1);
	CHECK_EQ(nm.conf.tx_live, -1);
	CHECK(pm_name_parse("pkt:eth0@conf:tx=copy", &nm, err, sizeof(err)) == 0,
	      "%s", err);
	CHECK_EQ(nm.conf.tx_frames, 0);
	CHECK(pm_name_parse("memif:/m.sock@conf:role=server,secret=s3,abstract=1",
			    &nm, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ(nm.conf.role, 1);
	CHECK_EQ(nm.conf.abstract, 1);
	CHECK(strcmp(nm.conf.secret, "s3") == 0, "secret %s", nm.conf.secret);
	CHECK(pm_name_parse("memif:/m.sock", &nm, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ(nm.conf.role, -1);
	CHECK_EQ(nm.conf.abstract, -1);
	CHECK(pm_name_parse("null:@3", &nm, err, sizeof(err)) == 0, "%s", err);
	CHECK(strcmp(nm.conf.region, "mem3") == 0, "region %s", nm.conf.region);

	/* The exported parser: what apps derive names from. */
	static const struct {
		const char *name, *port, *region;
		uint32_t bufs;
	} pub[] = {
		{ "pipe:x{0@conf:rings=2", "pipe:x{0", "", 0 },
		{ "xdp:eth0/R@mem:x", "xdp:eth0", "x", 0 },
		{ "xdp:eth0-1/Z@conf:bufs=9000@mem:rt", "xdp:eth0-1", "rt", 9000 },
		{ "pipe:a-b}3-1@mem:m", "pipe:a-b}3-1", "m", 0 },
		{ "pcap:/tmp/a@b/c.pcap/T@mem:q", "pcap:/tmp/a@b/c.pcap", "q", 0 },
		{ "null:", "null:", "", 0 },
	};
	for (size_t i = 0; i < sizeof(pub) / sizeof(pub[0]); i++) {
		struct pktmap_name pn = { .sz = sizeof(pn) };
		CHECK(pktmap_name_parse(pub[i].name, &pn, err, sizeof(err)) == 0,
		      "%s: %s", pub[i].name, err);
		CHECK(pn.port_len == strlen(pub[i].port) &&
		      strncmp(pub[i].name, pub[i].port, pn.port_len) == 0,
		      "%s: port part %u chars, want '%s'", pub[i].name,
		      pn.port_len, pub[i].port);
		CHECK(strcmp(pn.region, pub[i].region) == 0, "%s: region '%s'",
		      pub[i].name, pn.region);
		CHECK_EQ(pn.bufs, pub[i].bufs);
	}
	{
		struct pktmap_name pn = { .sz = sizeof(pn) };
		err[0] = 0;
		CHECK(pktmap_name_parse("nosuch:x", &pn, err, sizeof(err)) == -EINVAL,
		      "unknown back end refused");
		CHECK(strstr(err, "nosuch") != NULL, "error names it: %s", err);
		/* An older caller's smaller structure: nothing past its end
		 * is written. */
		struct pktmap_name old;
		memset(&old, 0xa5, sizeof(old));
		old.sz = offsetof(struct pktmap_name, body);
		CHECK(pktmap_name_parse("xdp:eth0", &old, NULL, 0) == 0,
		      "small sz parses");
		CHECK(strcmp(old.backend, "xdp") == 0, "backend filled");
		CHECK((unsigned char)old.body[0] == 0xa5 &&
		      (unsigned char)old.region[0] == 0xa5,
		      "nothing written past sz");
	}

	/* An open error is said once: to errbuf when one is given (not also
	 * to the log), to the log otherwise. */
	{
		struct pktmap_port *port;
		struct pktmap_open_opts o = { .sz = sizeof(o), .log = count_log };
		char eb[256] = "";
		o.errbuf = eb;
		o.errbuf_len = sizeof(eb);
		nlogged = 0;
		CHECK(pktmap_open(&port, "nosuch:x", &o) < 0, "bad name refused");
		CHECK(pktmap_open(&port, "pipe:said-once", &o) < 0, "no {N refused");
		CHECK(eb[0] != 0, "errbuf filled: %s", eb);
		CHECK_EQ(nlogged, 0);
		o.errbuf = NULL;
		o.errbuf_len = 0;
		CHECK(pktmap_open(&port, "nosuch:x", &o) < 0, "bad name refused");
		CHECK(pktmap_open(&port, "pipe:said-once", &o) < 0, "no {N refused");
		CHECK_EQ(nlogged, 2);
	}
	return t_done("name");
}
