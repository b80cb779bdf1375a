// SPDX-License-Identifier: BSD-2-Clause
/* scrub's kernel fast path (src/fwd/scrub_xdp.h) driven line by line, for
 * tests/system/scrub_xdp.sh:
 *
 *   scrub_xdp_ctl [--obj FILE IFACE] PORT
 *
 * --obj: first attach the program pktmap_scrub of the BPF object FILE to
 * IFACE (through a link, as pktmap does: PORT then joins it), a scrub
 * program of another build for the attach's checks.
 *
 * Opens PORT (an xdp: port with @conf:prog=scrub) for RX, attaches the
 * kernel path, prints "ready", then reads commands on stdin and answers
 * each with one line on stdout:
 *
 *   load FILE            lists from FILE: "deny|allow PREFIX RULE" lines
 *                        -> "loaded N"
 *   loop K FILE          load FILE K times in a row -> "loaded N"
 *   many N RULE          N IPv4 /32 deny prefixes 11.0.0.0, 11.0.0.1, ...
 *                        -> "loaded N ms T cpu-ms C" (wall and CPU time)
 *   ban ADDR SEC RULE    ban ADDR for SEC seconds (negative: a ban that
 *                        has already expired) -> "ok"
 *   unban ADDR           -> "ok"
 *   recv N FILE MS       receive until N frames arrived (or MS ms without
 *                        one), write them to FILE as a pcap -> "got K"
 *   recvm FILE MS        receive until the marker frame (source MAC
 *                        02:00:00:00:00:ee), write the frames before it
 *                        to FILE -> "got K" (MS ms without a frame: an
 *                        error)
 *   counts N             the kernel's counts of rules 0..N-1, the rules
 *                        that counted something: "counts R:PKTS:BYTES ..."
 *   rules FILE           a `pktmap scrub` rules file: its allow and deny
 *                        sets into the kernel (scrub_xdp_load_rules)
 *                        -> "rules N" (N rules)
 *   judge IN OUT         scrub's engine alone (user space) over the frames
 *                        of pcap IN under the "rules" set, time standing
 *                        still; the frames it passes into pcap OUT ->
 *                        "judged R:HITS ..." (the rules that decided
 *                        frames)
 *   quit
 *
 * Errors: "error WHAT: REASON" (the tool goes on). Exit status 0, or 1
 * when PORT does not open or attach.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <net/if.h>
#include <pktmap/pktmap.h>

#include "scrub.h"
#include "scrub_xdp.h"

/* The rule set of the last "rules" command (NULL: none). */
static struct scrub_rules *rules;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* User and system time of this process. */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* "10.0.0.0/8" or "2001:db8::/32" (no /: a host) into p. */
static int parse_prefix(const char *s, struct scrub_xdp_prefix *p)
{
	char a[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(a))
		return -1;
	memcpy(a, s, n);
	a[n] = 0;
	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, a, p->addr) == 1)
		p->family = 4;
	else if (inet_pton(AF_INET6, a, p->addr) == 1)
		p->family = 6;
	else
		return -1;
	int len = slash ? atoi(slash + 1) : (p->family == 4 ? 32 : 128);
	p->len = (uint8_t)len;
	return 0;
}

/* FILE's "deny|allow PREFIX RULE" lines; returns how many (into *out),
 * or -1 with the error answered. */
static long read_list(const char *file, struct scrub_xdp_prefix **out)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		printf("error %s: %s\n", file, strerror(errno));
		return -1;
	}
	struct scrub_xdp_prefix *v = NULL;
	size_t n = 0, cap = 0;
	char act[16], pre[64];
	unsigned rule;
	while (fscanf(f, "%15s %63s %u", act, pre, &rule) == 3) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		if (parse_prefix(pre, &v[n]) != 0) {
			printf("error %s: bad prefix %s\n", file, pre);
			fclose(f);
			free(v);
			return -1;
		}
		v[n].action = strcmp(act, "allow") == 0 ? SCRUB_XDP_ALLOW :
			      SCRUB_XDP_DENY;
		v[n++].rule = rule;
	}
	fclose(f);
	*out = v;
	return (long)n;
}

/* Load FILE `times` times in a row. */
static void cmd_load(struct scrub_xdp *x, const char *file, unsigned times)
{
	struct scrub_xdp_prefix *v = NULL;
	long n = read_list(file, &v);
	if (n < 0)
		return;
	int ret = 0;
	for (unsigned i = 0; i < times && ret == 0; i++)
		ret = scrub_xdp_load(x, v, (size_t)n);
	free(v);
	if (ret)
		printf("error load: %s\n", strerror(-ret));
	else
		printf("loaded %ld\n", n);
}

static void cmd_many(struct scrub_xdp *x, size_t n, unsigned rule)
{
	struct scrub_xdp_prefix *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++) {
		uint32_t a = htonl((11u << 24) + (uint32_t)i);
		v[i].family = 4;
		v[i].len = 32;
		v[i].rule = rule;
		memcpy(v[i].addr, &a, 4);
	}
	double t0 = now_ms(), c0 = cpu_ms();
	int ret = scrub_xdp_load(x, v, n);
	double t1 = now_ms(), c1 = cpu_ms();
	free(v);
	if (ret)
		printf("error many: %s\n", strerror(-ret));
	else
		printf("loaded %zu ms %.0f cpu-ms %.0f\n", n, t1 - t0, c1 - c0);
}

static void cmd_ban(struct scrub_xdp *x, const char *addr, double sec,
		    unsigned rule, int unban)
{
	struct scrub_xdp_prefix p;
	if (parse_prefix(addr, &p) != 0) {
		printf("error bad address %s\n", addr);
		return;
	}
	int ret;
	if (unban) {
		ret = scrub_xdp_unban(x, p.family, p.addr);
	} else {
		uint64_t now = scrub_xdp_now_ns();
		int64_t d = (int64_t)(sec * 1e9);
		ret = scrub_xdp_ban(x, p.family, p.addr, (uint64_t)((int64_t)now + d),
				    rule);
	}
	if (ret)
		printf("error ban: %s\n", strerror(-ret));
	else
		printf("ok\n");
}

static void pcap_header(FILE *f)
{
	uint32_t h[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };
	fwrite(h, sizeof(h), 1, f);
}

static const uint8_t marker_mac[6] = { 2, 0, 0, 0, 0, 0xee };

/* The frames of every RX ring, into f; returns how many (*marker set,
 * and the frames after it left, when `marker` is given and seen). */
static unsigned take(struct pktmap_port *p, FILE *f, unsigned left,
		     bool *marker)
{
	struct netmap_if *nifp = pktmap_nifp(p);
	unsigned got = 0;
	for (unsigned i = 0; i < nifp->ni_rx_rings; i++) {
		struct netmap_ring *r = NETMAP_RXRING(nifp, i);
		while (!nm_ring_empty(r) && got < left) {
			struct netmap_slot *s = &r->slot[r->head];
			const uint8_t *b = (const uint8_t *)NETMAP_BUF(r, s->buf_idx);
			if (marker && s->len >= 12 && !memcmp(b + 6, marker_mac, 6)) {
				*marker = true;
				r->head = r->cur = nm_ring_next(r, r->head);
				return got;
			}
			uint32_t rec[4] = { 0, 0, s->len, s->len };
			fwrite(rec, sizeof(rec), 1, f);
			fwrite(NETMAP_BUF(r, s->buf_idx), s->len, 1, f);
			r->head = r->cur = nm_ring_next(r, r->head);
			got++;
		}
	}
	return got;
}

static void cmd_recv(struct pktmap_port *p, unsigned n, const char *file,
		     int ms, bool until_marker)
{
	bool marker = false;
	FILE *f = fopen(file, "w");
	if (!f) {
		printf("error %s: %s\n", file, strerror(errno));
		return;
	}
	pcap_header(f);
	unsigned got = 0;
	double last = now_ms();
	while (got < n && !marker && now_ms() - last < ms) {
		pktmap_poll(p, POLLIN, 50);
		pktmap_rxsync(p);
		unsigned k = take(p, f, n - got, until_marker ? &marker : NULL);
		if (k)
			last = now_ms();
		got += k;
	}
	pktmap_rxsync(p);
	fclose(f);
	if (until_marker && !marker)
		printf("error recvm: no marker after %u frames\n", got);
	else
		printf("got %u\n", got);
}

static void cmd_counts(struct scrub_xdp *x, unsigned n)
{
	uint64_t *pk = calloc(n ? n : 1, sizeof(*pk));
	uint64_t *by = calloc(n ? n : 1, sizeof(*by));
	if (!pk || !by)
		abort();
	int ret = scrub_xdp_rule_counts(x, pk, by, n);
	if (ret) {
		printf("error counts: %s\n", strerror(-ret));
	} else {
		printf("counts");
		for (unsigned r = 0; r < n; r++)
			if (pk[r])
				printf(" %u:%llu:%llu", r, (unsigned long long)pk[r],
				       (unsigned long long)by[r]);
		printf("\n");
	}
	free(pk);
	free(by);
}

static void cmd_rules(struct scrub_xdp *x, const char *file)
{
	char err[256];
	struct scrub_rules *r;
	int ret = scrub_rules_load(file, &r, err, sizeof(err));
	if (ret) {
		printf("error rules: %s\n", err);
		return;
	}
	ret = scrub_rules_hits_alloc(r, 1);
	if (ret == 0)
		ret = scrub_xdp_load_rules(x, r, false);
	if (ret < 0) {
		printf("error rules: %s\n", strerror(-ret));
		scrub_rules_free(r);
		return;
	}
	scrub_rules_free(rules);
	rules = r;
	printf("rules %u\n", r->nrules);
}

/* The frames of pcap file f (as scrub_xdp_frames.py writes them), one by
 * one into buf; returns a length or -1 at the end. */
static int next_frame(FILE *f, uint8_t *buf, size_t cap)
{
	uint32_t rec[4];
	if (fread(rec, sizeof(rec), 1, f) != 1 || rec[2] > cap ||
	    fread(buf, 1, rec[2], f) != rec[2])
		return -1;
	return (int)rec[2];
}

static void cmd_judge(const char *in, const char *out)
{
	FILE *f = fopen(in, "r"), *o = fopen(out, "w");
	struct scrub_worker w;
	if (!rules || !f || !o || fseek(f, 24, SEEK_SET) != 0 ||
	    scrub_worker_init(&w, 0, 4096, 4096, 1) != 0) {
		printf("error judge: %s\n", rules ? "cannot open" : "no rules");
		if (f)
			fclose(f);
		if (o)
			fclose(o);
		return;
	}
	pcap_header(o);
	for (uint32_t i = 0; i < rules->nrules; i++)
		rules->hits[i] = 0;
	static uint8_t buf[65536];
	int len;
	while ((len = next_frame(f, buf, sizeof(buf))) >= 0) {
		int why = scrub_judge(&w, rules, NULL, buf, (uint32_t)len,
				      1000000000ull);
		if (!scrub_dropped(why)) {
			uint32_t rec[4] = { 0, 0, (uint32_t)len, (uint32_t)len };
			fwrite(rec, sizeof(rec), 1, o);
			fwrite(buf, 1, (size_t)len, o);
		}
	}
	fclose(f);
	fclose(o);
	scrub_worker_free(&w);
	printf("judged");
	for (uint32_t i = 0; i < rules->nrules; i++)
		if (scrub_rules_hits(rules, i))
			printf(" %u:%llu", i,
			       (unsigned long long)scrub_rules_hits(rules, i));
	printf("\n");
}

static void command(struct pktmap_port *p, struct scrub_xdp *x, char *line)
{
	char a[256], b[256];
	unsigned u, v;
	double d;
	int i;
	if (sscanf(line, "load %255s", a) == 1)
		cmd_load(x, a, 1);
	else if (sscanf(line, "loop %u %255s", &u, a) == 2)
		cmd_load(x, a, u);
	else if (sscanf(line, "many %u %u", &u, &v) == 2)
		cmd_many(x, u, v);
	else if (sscanf(line, "ban %255s %lf %u", a, &d, &u) == 3)
		cmd_ban(x, a, d, u, 0);
	else if (sscanf(line, "unban %255s", a) == 1)
		cmd_ban(x, a, 0, 0, 1);
	else if (sscanf(line, "recv %u %255s %d", &u, b, &i) == 3)
		cmd_recv(p, u, b, i, false);
	else if (sscanf(line, "recvm %255s %d", b, &i) == 2)
		cmd_recv(p, UINT32_MAX, b, i, true);
	else if (sscanf(line, "counts %u", &u) == 1)
		cmd_counts(x, u);
	else if (sscanf(line, "rules %255s", a) == 1)
		cmd_rules(x, a);
	else if (sscanf(line, "judge %255s %255s", a, b) == 2)
		cmd_judge(a, b);
	else
		printf("error unknown command: %s", line);
}

/* Attach pktmap_scrub of the object `file` to `ifname` with a link
 * (kept until exit); NULL when it cannot. */
static struct bpf_link *attach_obj(const char *file, const char *ifname)
{
	libbpf_set_print(NULL); /* one line on errors */
	struct bpf_object *obj = bpf_object__open_file(file, NULL);
	if (libbpf_get_error(obj) || bpf_object__load(obj)) {
		fprintf(stderr, "scrub_xdp_ctl: %s: cannot load\n", file);
		return NULL;
	}
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "pktmap_scrub");
	unsigned idx = if_nametoindex(ifname);
	struct bpf_link *l = prog && idx ? bpf_program__attach_xdp(prog, (int)idx) : NULL;
	if (libbpf_get_error(l)) {
		fprintf(stderr, "scrub_xdp_ctl: cannot attach %s to %s\n", file, ifname);
		return NULL;
	}
	return l;
}

int main(int argc, char **argv)
{
	struct bpf_link *other = NULL;
	if (argc == 5 && !strcmp(argv[1], "--obj")) {
		if (!(other = attach_obj(argv[2], argv[3])))
			return 1;
		argv += 3;
		argc -= 3;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: scrub_xdp_ctl [--obj FILE IFACE] PORT\n");
		return 2;
	}
	char err[256] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .dir = PKTMAP_DIR_RX,
				      .errbuf = err, .errbuf_len = sizeof(err) };
	struct pktmap_port *p;
	int ret = pktmap_open(&p, argv[1], &o);
	if (ret) {
		fprintf(stderr, "scrub_xdp_ctl: %s\n", err);
		return 1;
	}
	struct scrub_xdp *x;
	ret = scrub_xdp_attach(p, &x, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "scrub_xdp_ctl: %s\n", err);
		pktmap_close(p);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	char line[512];
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "quit", 4) != 0) {
		command(p, x, line);
		fflush(stdout);
	}
	scrub_xdp_detach(x);
	scrub_rules_free(rules);
	pktmap_close(p);
	return 0;
}
