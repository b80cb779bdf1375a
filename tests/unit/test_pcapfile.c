// SPDX-License-Identifier: BSD-2-Clause
/* The capture-file reader and writer (src/capfile.c, src/capfile_write.c)
 * and the pcap:FILE port (src/ports/pcap.c).
 *
 * 1. Every file of the shared corpus reads as libpcap reads it
 *    (EXPECTED.tsv: packets, caplen and len sums, link type).
 * 2. Through the port: the same packets come out of pcap:FILE/R, records
 *    longer than a buffer as NS_MOREFRAG chains, then EOF and POLLHUP.
 * 3. pcap:FILE/T then pcap:FILE/R gives back the same bytes, in order,
 *    with their time stamps, in us, ns and pcapng files.
 * 4. Corrupt files: every truncation (or ~200 of them) and hundreds of
 *    random byte flips of real files: no crash (run under ASan), the
 *    packets before the damage come out unchanged, and an error names
 *    its offset.
 * 5. Hand-made pcapng: sections in both byte orders, per-interface link
 *    types, time stamp resolutions, SPB, obsolete PB, unknown blocks.
 * 6. Open errors: both directions, missing file, bad magic, caplen limit.
 *
 * The corpus is $PKTMAP_PCAPS, else tests/data/pcaps in the source tree
 * (README.md there says where each file comes from); without it the test
 * fails (it does not skip).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capfile.h"
#include "port.h"
#include "t.h"
#include "util.h"

#ifndef PKTMAP_SOURCE_ROOT
#define PKTMAP_SOURCE_ROOT "."
#endif

static char pcaps[512];
static char tmpdir[256];

/* ------------------------------------------------------------------ */
/* Helpers */

struct pkt {
	uint8_t *data;
	uint32_t caplen, len, linktype;
	uint64_t ts, offset;
};

struct pkts {
	struct pkt *v;
	size_t n, cap;
	uint64_t caplen_sum, len_sum;
};

static void pkts_add(struct pkts *ps, const uint8_t *d, uint32_t caplen,
		     uint32_t len, uint64_t ts, uint32_t lt, uint64_t off)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		ps->v = realloc(ps->v, ps->cap * sizeof(*ps->v));
		if (!ps->v)
			abort();
	}
	struct pkt *p = &ps->v[ps->n++];
	p->data = malloc(caplen ? caplen : 1);
	if (!p->data)
		abort();
	memcpy(p->data, d, caplen);
	p->caplen = caplen;
	p->len = len;
	p->ts = ts;
	p->linktype = lt;
	p->offset = off;
	ps->caplen_sum += caplen;
	ps->len_sum += len;
}

static void pkts_free(struct pkts *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].data);
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

/* Read a whole reader into ps. Returns what the last next() returned. */
static int read_all(struct pm_pcapr *r, struct pkts *ps)
{
	struct pm_pcap_rec rec;
	int ret;
	while ((ret = pm_pcapr_next(r, &rec)) == 1)
		pkts_add(ps, rec.data, rec.caplen, rec.len, rec.ts_ns, rec.linktype,
			 rec.offset);
	return ret;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int spit(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int ok = fwrite(b, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void corpus_path(char *out, size_t len, const char *file)
{
	snprintf(out, len, "%s/%s", pcaps, file);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* What the port logs, for checking messages. */
static char last_log[512];
static int log_lines;
static void log_cb(void *ctx, enum pktmap_log_level lvl, const char *msg)
{
	(void)ctx;
	(void)lvl;
	snprintf(last_log, sizeof(last_log), "%s", msg);
	log_lines++;
}

static int port_open(struct pktmap_port **p, const char *name, uint32_t dir,
		     char *err, size_t errlen)
{
	struct pktmap_open_opts o = { .sz = sizeof(o), .dir = dir, .errbuf = err,
				      .errbuf_len = errlen, .log = log_cb };
	err[0] = 0;
	return pktmap_open(p, name, &o);
}

/* Drain an RX port to its end: packets (chains joined) into ps. frags
 * receives the number of slots of each packet. Returns the first nonzero
 * rxsync result (0 if none). */
static int drain(struct pktmap_port *p, struct pkts *ps, uint32_t *frags,
		 size_t nfrags, int use_poll)
{
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(p), 0);
	static uint8_t buf[1 << 20];
	size_t have = 0;
	uint32_t nf = 0;
	int first_err = 0;
	for (int round = 0; round < 10000000; round++) {
		if (use_poll) {
			int ev = pktmap_poll(p, POLLIN, 2000);
			if (ev & POLLHUP)
				break;
			if (!(ev & POLLIN)) {
				CHECK(0, "poll returned %d before the end", ev);
				break;
			}
		} else {
			int r = pktmap_rxsync(p);
			if (r && !first_err)
				first_err = r;
		}
		while (!nm_ring_empty(rx)) {
			struct netmap_slot *s = &rx->slot[rx->cur];
			if (have + s->len <= sizeof(buf))
				memcpy(buf + have, NETMAP_BUF(rx, s->buf_idx), s->len);
			have += s->len;
			nf++;
			if (!(s->flags & NS_MOREFRAG)) {
				if (frags && ps->n < nfrags)
					frags[ps->n] = nf;
				pkts_add(ps, buf, (uint32_t)have, (uint32_t)have, s->ptr,
					 0, 0);
				have = 0;
				nf = 0;
			}
			rx->head = rx->cur = nm_ring_next(rx, rx->cur);
		}
		struct pktmap_info info = { .sz = sizeof(info) };
		pktmap_info(p, &info);
		if (!use_poll && (info.flags & PKTMAP_INFO_EOF) && nm_ring_empty(rx)) {
			/* One more sync: the ring is empty and the file done. */
			int r = pktmap_rxsync(p);
			if (r && !first_err)
				first_err = r;
			if (nm_ring_empty(rx))
				break;
		}
	}
	CHECK_EQ(have, 0);
	return first_err;
}

/* ------------------------------------------------------------------ */
/* 1. The corpus against EXPECTED.tsv */

struct expected {
	char file[128];
	uint64_t packets, caplen_sum, len_sum;
	uint32_t linktype;
};

static struct expected expect[128];
static int nexpect;

static int load_expected(void)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/EXPECTED.tsv", pcaps);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[512];
	while (fgets(line, sizeof(line), f) && nexpect < 128) {
		struct expected *e = &expect[nexpect];
		unsigned long long a, b, c;
		char status[32];
		if (strncmp(line, "file\t", 5) == 0)
			continue;
		if (sscanf(line, "%127s %llu %llu %llu %u %31s", e->file, &a, &b, &c,
			   &e->linktype, status) != 6)
			continue;
		e->packets = a;
		e->caplen_sum = b;
		e->len_sum = c;
		nexpect++;
	}
	fclose(f);
	return 0;
}

static const struct expected *find_expected(const char *file)
{
	for (int i = 0; i < nexpect; i++)
		if (strcmp(expect[i].file, file) == 0)
			return &expect[i];
	return NULL;
}

static void test_corpus(void)
{
	int fails_before = t_failed;
	for (int i = 0; i < nexpect; i++) {
		const struct expected *e = &expect[i];
		char path[700], err[256];
		corpus_path(path, sizeof(path), e->file);
		struct pm_pcapr *r;
		int ret = pm_pcapr_open(&r, path, err, sizeof(err));
		CHECK(ret == 0, "%s: %s", e->file, err);
		if (ret)
			continue;
		struct pkts ps = { 0 };
		ret = read_all(r, &ps);
		int ok = ret == 0 && ps.n == e->packets &&
			 ps.caplen_sum == e->caplen_sum && ps.len_sum == e->len_sum &&
			 pm_pcapr_linktype(r) == e->linktype;
		CHECK(ok,
		      "%s: got ret %d (%s) packets %zu caplen %llu len %llu "
		      "linktype %u; want %llu %llu %llu %u",
		      e->file, ret, pm_pcapr_error(r), ps.n,
		      (unsigned long long)ps.caplen_sum,
		      (unsigned long long)ps.len_sum, pm_pcapr_linktype(r),
		      (unsigned long long)e->packets,
		      (unsigned long long)e->caplen_sum,
		      (unsigned long long)e->len_sum, e->linktype);
		printf("%s corpus %-40s %4zu packets %7llu/%7llu bytes linktype %u\n",
		       ok ? "ok  " : "FAIL", e->file, ps.n,
		       (unsigned long long)ps.caplen_sum,
		       (unsigned long long)ps.len_sum, pm_pcapr_linktype(r));

		/* The same from memory, and after a rewind. */
		size_t len;
		uint8_t *b = slurp(path, &len);
		struct pm_pcapr *m = NULL;
		CHECK(b && pm_pcapr_open_mem(&m, b, len, err, sizeof(err)) == 0,
		      "%s from memory: %s", e->file, err);
		if (b && m) {
			struct pkts ms = { 0 };
			CHECK_EQ(read_all(m, &ms), 0);
			CHECK(ms.n == ps.n && ms.caplen_sum == ps.caplen_sum,
			      "%s: memory read differs", e->file);
			pkts_free(&ms);
			CHECK_EQ(pm_pcapr_rewind(m), 0);
			CHECK_EQ(read_all(m, &ms), 0);
			CHECK_EQ(ms.n, ps.n);
			pkts_free(&ms);
			pm_pcapr_close(m);
		}
		CHECK_EQ(pm_pcapr_rewind(r), 0);
		struct pkts again = { 0 };
		CHECK_EQ(read_all(r, &again), 0);
		CHECK(again.n == ps.n && again.len_sum == ps.len_sum,
		      "%s: rewind", e->file);
		pkts_free(&again);
		free(b);
		pkts_free(&ps);
		pm_pcapr_close(r);
	}
	printf("%s corpus: %d files against EXPECTED.tsv\n",
	       t_failed == fails_before ? "ok  " : "FAIL", nexpect);
}

/* ------------------------------------------------------------------ */
/* 2. Reading through the port */

static void test_port_read(const char *file, const char *conf, int use_poll)
{
	char path[700], name[800], err[400];
	corpus_path(path, sizeof(path), file);
	const struct expected *e = find_expected(file);
	CHECK(e != NULL, "%s not in EXPECTED.tsv", file);
	if (!e)
		return;
	int fails_before = t_failed;

	struct pm_pcapr *r;
	struct pkts want = { 0 };
	if (pm_pcapr_open(&r, path, err, sizeof(err)) == 0) {
		read_all(r, &want);
		pm_pcapr_close(r);
	}

	snprintf(name, sizeof(name), "pcap:%s%s", path, conf);
	struct pktmap_port *p = NULL;
	int ret = port_open(&p, name, PKTMAP_DIR_RX, err, sizeof(err));
	CHECK(ret == 0, "open %s: %s", name, err);
	if (ret) {
		pkts_free(&want);
		return;
	}
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	CHECK_EQ(info.linktype, e->linktype);
	CHECK(strcmp(info.mode_name, "emulated") == 0, "mode %s", info.mode_name);
	CHECK(!(info.flags & PKTMAP_INFO_EOF), "EOF before reading");

	uint32_t frags[1024] = { 0 };
	struct pkts got = { 0 };
	ret = drain(p, &got, frags, 1024, use_poll);
	CHECK_EQ(ret, 0);
	CHECK_EQ(got.n, e->packets);
	CHECK_EQ(got.caplen_sum, e->caplen_sum);
	pktmap_info(p, &info);
	CHECK(info.flags & PKTMAP_INFO_EOF, "EOF at the end");
	CHECK(pktmap_poll(p, POLLIN, 100) == POLLHUP, "POLLHUP at the end");
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	CHECK_EQ(st.rx_packets, e->packets);
	CHECK_EQ(st.rx_bytes, e->caplen_sum);

	uint32_t usable = info.buf_usable, chains = 0;
	for (size_t i = 0; i < got.n && i < want.n; i++) {
		const struct pkt *a = &got.v[i], *b = &want.v[i];
		CHECK(a->caplen == b->caplen && !memcmp(a->data, b->data, a->caplen),
		      "%s packet %zu: bytes differ", file, i);
		CHECK(a->ts == b->ts, "%s packet %zu: ts %llu != %llu", file, i,
		      (unsigned long long)a->ts, (unsigned long long)b->ts);
		if (i < 1024) {
			uint32_t need = b->caplen ? (b->caplen + usable - 1) / usable : 1;
			CHECK(frags[i] == need, "%s packet %zu: %u slots, want %u", file,
			      i, frags[i], need);
			chains += need > 1;
		}
	}
	printf("%s port   %-40s %4zu packets, %u chains%s\n",
	       t_failed == fails_before ? "ok  " : "FAIL", file, got.n, chains,
	       use_poll ? ", by poll" : "");
	pkts_free(&got);
	pkts_free(&want);
	pktmap_close(p);
}

/* A file that fills the ring many times over, and loop=1. */
static void test_port_loop(void)
{
	char path[700], name[800], err[400];
	corpus_path(path, sizeof(path), "HSRP_failover.pcap");
	snprintf(name, sizeof(name), "pcap:%s@conf:loop=1,slots=16", path);
	struct pktmap_port *p = NULL;
	CHECK(port_open(&p, name, PKTMAP_DIR_RX, err, sizeof(err)) == 0,
	      "open %s: %s", name, err);
	if (!p)
		return;
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(p), 0);
	uint64_t n = 0;
	for (int i = 0; i < 100 && n < 39 * 5; i++) {
		CHECK(pktmap_poll(p, POLLIN, 1000) == POLLIN, "looping never ends");
		n += nm_ring_space(rx);
		rx->head = rx->cur = rx->tail;
	}
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	CHECK(n >= 39 * 5 && !(info.flags & PKTMAP_INFO_EOF),
	      "loop: %llu packets", (unsigned long long)n);
	printf("%s port   loop=1 over a 39-packet file: %llu packets\n",
	       n >= 39 * 5 ? "ok  " : "FAIL", (unsigned long long)n);
	pktmap_close(p);
}

/* ------------------------------------------------------------------ */
/* 3. Write, then read back */

/* Put one packet on a TX ring as a chain, syncing when it is full. */
static void tx_put(struct pktmap_port *p, const uint8_t *d, uint32_t len,
		   uint64_t ts, uint32_t usable)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	uint32_t need = (len + usable - 1) / usable;
	while (nm_ring_space(tx) < need)
		CHECK_EQ(pktmap_txsync(p), 0);
	for (uint32_t off = 0, f = 0; off < len; f++) {
		struct netmap_slot *s = &tx->slot[tx->cur];
		uint32_t chunk = len - off < usable ? len - off : usable;
		memcpy(NETMAP_BUF(tx, s->buf_idx), d + off, chunk);
		s->len = (uint16_t)chunk;
		s->ptr = f == 0 ? ts : 0;
		off += chunk;
		s->flags = off < len ? NS_MOREFRAG : 0;
		tx->cur = nm_ring_next(tx, tx->cur);
	}
	tx->head = tx->cur;
}

static void test_roundtrip(const char *suffix, int nanosec, const char *conf)
{
	static const uint32_t sizes[] = { 1,    14,   60,    61,    1500, 2047,
					  2048, 2049, 4096,  7026,  9000, 65535,
					  65536, 100000, 262144 };
	char path[300], name[400], err[400];
	snprintf(path, sizeof(path), "%s/rt%s", tmpdir, suffix);
	snprintf(name, sizeof(name), "pcap:%s%s", path, conf);
	int fails_before = t_failed;

	struct pktmap_port *p = NULL;
	CHECK(port_open(&p, name, PKTMAP_DIR_TX, err, sizeof(err)) == 0,
	      "open %s: %s", name, err);
	if (!p)
		return;
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	uint32_t usable = info.buf_usable;

	struct pkts sent = { 0 };
	uint8_t *d = malloc(300000);
	uint64_t t0 = (uint64_t)1700000000 * 1000000000u + 123456789;
	struct timespec before;
	clock_gettime(CLOCK_REALTIME, &before);
	const int N = 600;
	for (int i = 0; i < N; i++) {
		uint32_t len = i < (int)PM_ARRAY_SIZE(sizes) ? sizes[i] :
							      1 + (uint32_t)(rnd() % 3000);
		for (uint32_t j = 0; j < len; j++)
			d[j] = (uint8_t)(rnd() >> 24);
		/* Every 7th packet without a time: the port stamps it. */
		uint64_t ts = i % 7 == 3 ? 0 : t0 + (uint64_t)i * 1000001;
		pkts_add(&sent, d, len, len, ts, 0, 0);
		tx_put(p, d, len, ts, usable);
		if (i % 5 == 0)
			CHECK_EQ(pktmap_txsync(p), 0);
	}
	/* A chain submitted in two halves is still one record. */
	{
		uint32_t len = 5 * usable + 17;
		for (uint32_t j = 0; j < len; j++)
			d[j] = (uint8_t)j;
		pkts_add(&sent, d, len, len, t0, 0, 0);
		struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
		while (nm_ring_space(tx) < 6)
			pktmap_txsync(p);
		for (uint32_t f = 0; f < 6; f++) {
			struct netmap_slot *s = &tx->slot[tx->cur];
			uint32_t chunk = f < 5 ? usable : 17;
			memcpy(NETMAP_BUF(tx, s->buf_idx), d + f * usable, chunk);
			s->len = (uint16_t)chunk;
			s->ptr = f == 0 ? t0 : 0;
			s->flags = f < 5 ? NS_MOREFRAG : 0;
			tx->cur = nm_ring_next(tx, tx->cur);
			if (f == 2) {
				tx->head = tx->cur;
				CHECK_EQ(pktmap_txsync(p), 0);
			}
		}
		tx->head = tx->cur;
	}
	CHECK_EQ(pktmap_txsync(p), 0);
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets, sent.n);
	CHECK_EQ(st.tx_bytes, sent.caplen_sum);
	CHECK_EQ(st.drop_invalid, 0);
	pktmap_close(p);
	struct timespec after;
	clock_gettime(CLOCK_REALTIME, &after);

	/* Back through the reader: lengths, link type, time stamps. */
	struct pm_pcapr *r;
	struct pkts got = { 0 };
	CHECK(pm_pcapr_open(&r, path, err, sizeof(err)) == 0, "%s: %s", path, err);
	if (r) {
		CHECK_EQ(read_all(r, &got), 0);
		CHECK_EQ(pm_pcapr_linktype(r), strstr(conf, "linktype=12") ? 12 : 1);
		CHECK_EQ(pm_pcapr_format(r), strstr(suffix, "pcapng") ?
						     PM_PCAP_FMT_PCAPNG :
						     PM_PCAP_FMT_PCAP);
		pm_pcapr_close(r);
	}
	CHECK_EQ(got.n, sent.n);
	uint64_t lo = (uint64_t)before.tv_sec * 1000000000u + (uint64_t)before.tv_nsec;
	uint64_t hi = (uint64_t)after.tv_sec * 1000000000u + (uint64_t)after.tv_nsec;
	uint64_t unit = nanosec ? 1 : 1000;
	for (size_t i = 0; i < got.n && i < sent.n; i++) {
		const struct pkt *a = &got.v[i], *b = &sent.v[i];
		uint32_t want_cap = b->caplen > 262144 ? 262144 : b->caplen;
		CHECK(a->caplen == want_cap && a->len == b->len &&
			      !memcmp(a->data, b->data, want_cap),
		      "%s packet %zu (%u bytes): differs", suffix, i, b->caplen);
		if (b->ts)
			CHECK(a->ts == b->ts / unit * unit, "%s packet %zu: ts %llu, want %llu",
			      suffix, i, (unsigned long long)a->ts,
			      (unsigned long long)b->ts);
		else
			CHECK(a->ts + unit > lo && a->ts <= hi,
			      "%s packet %zu: stamped %llu, not in [%llu, %llu]", suffix,
			      i, (unsigned long long)a->ts, (unsigned long long)lo,
			      (unsigned long long)hi);
	}

	/* And through an RX port, with a small ring (many syncs, wraps). */
	snprintf(name, sizeof(name), "pcap:%s/R@conf:slots=256", path);
	CHECK(port_open(&p, name, 0, err, sizeof(err)) == 0, "open %s: %s", name,
	      err);
	if (p) {
		struct pkts back = { 0 };
		CHECK_EQ(drain(p, &back, NULL, 0, 0), 0);
		CHECK_EQ(back.n, got.n);
		for (size_t i = 0; i < back.n && i < got.n; i++)
			CHECK(back.v[i].caplen == got.v[i].caplen &&
				      back.v[i].ts == got.v[i].ts &&
				      !memcmp(back.v[i].data, got.v[i].data,
					      got.v[i].caplen),
			      "%s: port read %zu differs", suffix, i);
		pkts_free(&back);
		pktmap_close(p);
	}
	printf("%s write  %-40s %zu packets (1 to 262144 bytes) back identical\n",
	       t_failed == fails_before ? "ok  " : "FAIL", name, sent.n);
	pkts_free(&got);
	pkts_free(&sent);
	free(d);
	unlink(path);
}

/* Bad TX slots are dropped, counted once per packet. */
static void test_tx_checker(void)
{
	char name[400], err[400];
	snprintf(name, sizeof(name), "pcap:%s/bad.pcap/T@conf:slots=64", tmpdir);
	struct pktmap_port *p = NULL;
	CHECK(port_open(&p, name, 0, err, sizeof(err)) == 0, "open: %s", err);
	if (!p)
		return;
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
	struct netmap_slot *s = &tx->slot[tx->cur];
	s->len = 60; /* good */
	s->flags = 0;
	tx->cur = nm_ring_next(tx, tx->cur);
	s = &tx->slot[tx->cur];
	s->len = 0; /* bad: a chain with an empty fragment */
	s->flags = NS_MOREFRAG;
	tx->cur = nm_ring_next(tx, tx->cur);
	s = &tx->slot[tx->cur];
	s->len = 60;
	s->flags = 0;
	tx->cur = nm_ring_next(tx, tx->cur);
	s = &tx->slot[tx->cur];
	uint32_t keep = s->buf_idx;
	s->buf_idx = 1; /* bad index */
	s->len = 60;
	s->flags = 0;
	tx->cur = nm_ring_next(tx, tx->cur);
	tx->head = tx->cur;
	pktmap_txsync(p);
	s->buf_idx = keep;
	struct pktmap_stats st = { .sz = sizeof(st) };
	pktmap_stats(p, &st);
	CHECK_EQ(st.tx_packets, 1);
	CHECK_EQ(st.drop_invalid, 2);
	CHECK_EQ(nm_ring_space(tx), 63);
	pktmap_close(p);
	printf("%s write  bad TX slots dropped and counted once a packet\n",
	       st.tx_packets == 1 && st.drop_invalid == 2 ? "ok  " : "FAIL");
}

/* A write error (file size limit: EFBIG) comes back from txsync. */
static void test_tx_error(void)
{
	char name[400], err[400];
	snprintf(name, sizeof(name), "pcap:%s/full.pcap/T", tmpdir);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_IGN);
	lim.rlim_cur = 16u << 20; /* the region (a memfd) counts too */
	lim.rlim_max = old.rlim_max;
	setrlimit(RLIMIT_FSIZE, &lim);
	struct pktmap_port *p = NULL;
	CHECK(port_open(&p, name, 0, err, sizeof(err)) == 0, "open: %s", err);
	int got = 0;
	log_lines = 0;
	if (p) {
		struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p), 0);
		for (int round = 0; round < 100 && !got; round++) {
			/* space counts from head (netmap's rule): take it once */
			for (uint32_t n = nm_ring_space(tx); n; n--) {
				tx->slot[tx->cur].len = 1500;
				tx->slot[tx->cur].flags = 0;
				tx->cur = nm_ring_next(tx, tx->cur);
			}
			tx->head = tx->cur;
			got = pktmap_txsync(p);
		}
		CHECK(got == -EFBIG, "txsync returned %d, want -EFBIG", got);
		CHECK(pktmap_txsync(p) == -EFBIG, "the error sticks");
		CHECK(log_lines == 1 && strstr(last_log, "cannot write"),
		      "one log line, got %d: %s", log_lines, last_log);
		pktmap_close(p);
	}
	setrlimit(RLIMIT_FSIZE, &old);
	printf("%s write  a full disk (EFBIG) is returned by txsync and logged once\n",
	       got == -EFBIG ? "ok  " : "FAIL");
}

/* ------------------------------------------------------------------ */
/* 4. Corrupt files */

/* Record end offsets of a clean file: end[i] is where packet i's bytes
 * end (the next record's offset for pcap; for pcapng an upper bound). */
static void corrupt_one(const char *file)
{
	char path[700], err[256];
	corpus_path(path, sizeof(path), file);
	size_t len;
	uint8_t *orig = slurp(path, &len);
	CHECK(orig != NULL, "cannot read %s", path);
	if (!orig)
		return;
	int fails_before = t_failed;
	struct pm_pcapr *r;
	struct pkts ref = { 0 };
	if (pm_pcapr_open_mem(&r, orig, len, err, sizeof(err)) == 0) {
		read_all(r, &ref);
		pm_pcapr_close(r);
	}
	bool ng = orig[0] == 0x0a;
	/* Packet i is certainly complete in a prefix of length end[i]
	 * (the offset of the next packet, or the file's end), and
	 * certainly not in one shorter than start[i] + 1. */
	uint64_t *end = calloc(ref.n + 1, sizeof(*end));
	for (size_t i = 0; i < ref.n; i++)
		end[i] = i + 1 < ref.n ? ref.v[i + 1].offset : len;

	/* Truncations: all lengths of small files, ~200 of larger ones,
	 * plus every record boundary and its neighbours. */
	size_t step = len <= 4096 ? 1 : len / 200;
	int cuts = 0, clean_err = 0;
	for (size_t cut = 0; cut <= len; cut += step) {
		for (int pass = 0; pass < 2; pass++) {
			size_t c = cut;
			if (pass == 1) {
				if (!ref.n)
					break;
				size_t k = rnd() % ref.n;
				c = (size_t)ref.v[k].offset + (rnd() % 3) - 1;
				if (c > len)
					continue;
			}
			uint8_t *b = malloc(c ? c : 1); /* exact size: ASan sees overruns */
			memcpy(b, orig, c);
			cuts++;
			int ret = pm_pcapr_open_mem(&r, b, c, err, sizeof(err));
			if (ret) {
				CHECK(err[0] != 0, "%s cut %zu: open error without words",
				      file, c);
				CHECK(ref.n == 0 || c <= ref.v[0].offset,
				      "%s cut %zu: open fails after the first packet: %s",
				      file, c, err);
				clean_err++;
				free(b);
				continue;
			}
			struct pkts got = { 0 };
			ret = read_all(r, &got);
			size_t sure = 0, maybe = 0;
			for (size_t i = 0; i < ref.n; i++) {
				sure += end[i] <= c;
				maybe += ref.v[i].offset < c;
			}
			if (!ng)
				maybe = sure; /* pcap: exactly the whole records */
			CHECK(got.n >= sure && got.n <= maybe,
			      "%s cut %zu: %zu packets, want %zu..%zu (%s)", file, c,
			      got.n, sure, maybe, pm_pcapr_error(r));
			for (size_t i = 0; i < got.n && i < ref.n; i++)
				CHECK(got.v[i].caplen == ref.v[i].caplen &&
					      !memcmp(got.v[i].data, ref.v[i].data,
						      ref.v[i].caplen),
				      "%s cut %zu: packet %zu differs", file, c, i);
			if (ret < 0) {
				clean_err++;
				CHECK(strstr(pm_pcapr_error(r), "offset") != NULL,
				      "%s cut %zu: error without an offset: %s", file, c,
				      pm_pcapr_error(r));
				CHECK(pm_pcapr_next(r, &(struct pm_pcap_rec){ 0 }) == ret,
				      "%s: errors stick", file);
			} else {
				CHECK(ret == 0, "%s cut %zu: ret %d", file, c, ret);
			}
			pkts_free(&got);
			pm_pcapr_close(r);
			free(b);
		}
	}

	/* Byte flips: the packets wholly before the first damaged byte are
	 * unchanged; beyond it anything goes except a crash. */
	int flips = 0;
	uint8_t *b = malloc(len);
	for (int it = 0; it < 300; it++) {
		memcpy(b, orig, len);
		size_t first = len;
		int k = 1 + (int)(rnd() % 4);
		for (int j = 0; j < k; j++) {
			size_t at = rnd() % len;
			uint8_t old = b[at];
			switch (rnd() % 3) {
			case 0: b[at] = (uint8_t)rnd(); break;
			case 1: b[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
			default: /* a length-ish value over 4 bytes */
				if (at + 4 <= len) {
					uint32_t v = (uint32_t[]){ 0, 12, 0xffffffffu,
								   262145, 65536,
								   0x80000000u }[rnd() % 6];
					memcpy(b + at, &v, 4);
				}
			}
			(void)old;
			first = at < first ? at : first;
		}
		flips++;
		if (pm_pcapr_open_mem(&r, b, len, err, sizeof(err)) != 0) {
			CHECK(err[0], "%s flip: open error without words", file);
			/* Only damage in the headers (before the first packet
			 * ends) may keep the file from opening. */
			CHECK(ref.n == 0 || first < end[0],
			      "%s flip at %zu: open fails past the first packet: %s",
			      file, first, err);
			continue;
		}
		struct pkts got = { 0 };
		int ret = read_all(r, &got);
		size_t sure = 0;
		for (size_t i = 0; i < ref.n; i++)
			sure += end[i] <= first;
		/* Every packet wholly before the first damaged byte is read,
		 * whatever happens after it (an error, or for pcapng a later
		 * block that still parses), in pcap and pcapng alike. */
		CHECK(got.n >= sure,
		      "%s flip at %zu: %zu packets, want at least %zu (%s)", file,
		      first, got.n, sure, ret < 0 ? pm_pcapr_error(r) : "no error");
		for (size_t i = 0; i < got.n && i < sure; i++)
			CHECK(got.v[i].caplen == ref.v[i].caplen &&
				      !memcmp(got.v[i].data, ref.v[i].data,
					      ref.v[i].caplen),
			      "%s flip at %zu: packet %zu differs", file, first, i);
		if (ret < 0)
			CHECK(pm_pcapr_error(r)[0], "%s flip: error without words",
			      file);
		pkts_free(&got);
		pm_pcapr_close(r);
	}
	free(b);

	/* The fd path (the refilled buffer, 1 MiB or tiny) on a few
	 * truncations too. */
	for (int i = 0; i < 40; i++) {
		size_t c = i == 0 ? len : rnd() % (len + 1);
		int fd = memfd_create("cut", MFD_CLOEXEC);
		if (fd < 0 || write(fd, orig, c) != (ssize_t)c) {
			CHECK(0, "memfd");
			break;
		}
		lseek(fd, 0, SEEK_SET);
		size_t bufsz = i % 2 ? 1 + rnd() % 100 : 0;
		/* The fd path opens exactly when the memory path does (a cut
		 * inside the file header), and always the whole file. */
		struct pm_pcapr *rm;
		int mo = pm_pcapr_open_mem(&rm, orig, c, err, sizeof(err));
		if (mo == 0)
			pm_pcapr_close(rm);
		if (pm_pcapr_open_fd_buf(&r, fd, true, bufsz, err, sizeof(err)) != 0) {
			CHECK(mo != 0 && c < len, "%s fd cut %zu: open fails: %s",
			      file, c, err);
			continue;
		}
		CHECK(mo == 0, "%s fd cut %zu: opens, but not from memory", file, c);
		struct pkts got = { 0 };
		int ret = read_all(r, &got);
		size_t sure = 0;
		for (size_t k = 0; k < ref.n; k++)
			sure += end[k] <= c;
		CHECK(got.n >= sure && (ret == 0 || ret == -EBADMSG),
		      "%s fd cut %zu: %zu packets ret %d", file, c, got.n, ret);
		if (c == len)
			CHECK(ret == 0 && got.n == ref.n, "%s via fd", file);
		for (size_t k = 0; k < got.n && k < ref.n; k++)
			CHECK(got.v[k].caplen == ref.v[k].caplen &&
				      !memcmp(got.v[k].data, ref.v[k].data,
					      ref.v[k].caplen),
			      "%s fd cut %zu (buffer %zu): packet %zu differs", file,
			      c, bufsz, k);
		pkts_free(&got);
		pm_pcapr_close(r);
	}
	printf("%s damage %-40s %d truncations (%d clean errors), %d flips\n",
	       t_failed == fails_before ? "ok  " : "FAIL", file, cuts, clean_err,
	       flips);
	free(end);
	pkts_free(&ref);
	free(orig);
}

/* A corrupt file through the port: the packets before the damage, one
 * log line with the offset, EOF, and -EIO once. */
static void test_port_corrupt(void)
{
	char src[700], path[300], name[400], err[400];
	corpus_path(src, sizeof(src), "HSRP_failover.pcap");
	size_t len;
	uint8_t *b = slurp(src, &len);
	if (!b) {
		CHECK(0, "cannot read %s", src);
		return;
	}
	/* Give the 11th record an impossible caplen. */
	struct pm_pcapr *r;
	CHECK(pm_pcapr_open_mem(&r, b, len, err, sizeof(err)) == 0, "%s", err);
	struct pm_pcap_rec rec;
	uint64_t off10 = 0;
	for (int i = 0; i <= 10 && pm_pcapr_next(r, &rec) == 1; i++)
		off10 = rec.offset;
	pm_pcapr_close(r);
	uint32_t huge = 10000000;
	memcpy(b + off10 + 8, &huge, 4);
	snprintf(path, sizeof(path), "%s/corrupt.pcap", tmpdir);
	spit(path, b, len);
	free(b);

	snprintf(name, sizeof(name), "pcap:%s/R", path);
	struct pktmap_port *p = NULL;
	CHECK(port_open(&p, name, 0, err, sizeof(err)) == 0, "open: %s", err);
	if (!p)
		return;
	log_lines = 0;
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(p), 0);
	int r1 = pktmap_rxsync(p);
	uint32_t n = nm_ring_space(rx);
	rx->head = rx->cur = rx->tail;
	int r2 = pktmap_rxsync(p);
	int r3 = pktmap_rxsync(p);
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	char want[64];
	snprintf(want, sizeof(want), "record at offset %llu claims caplen 10000000",
		 (unsigned long long)off10);
	CHECK(r1 == 0 && n == 10, "first sync: %d, %u packets", r1, n);
	CHECK(r2 == -EIO && r3 == 0, "then -EIO once: %d %d", r2, r3);
	CHECK(info.flags & PKTMAP_INFO_EOF, "EOF");
	CHECK(log_lines == 1 && strstr(last_log, want), "log (%d): %s", log_lines,
	      last_log);
	CHECK(pktmap_poll(p, POLLIN, 100) == POLLHUP, "POLLHUP");
	pktmap_close(p);
	printf("%s port   corrupt file: 10 packets, then \"%s\"\n",
	       r1 == 0 && n == 10 && r2 == -EIO ? "ok  " : "FAIL", last_log);
	unlink(path);
}

/* ------------------------------------------------------------------ */
/* 5. Hand-made files */

struct wbuf {
	uint8_t b[1 << 16];
	size_t n;
	bool swap;
};

static void w8(struct wbuf *w, const void *p, size_t n)
{
	memcpy(w->b + w->n, p, n);
	w->n += n;
}
static void w16(struct wbuf *w, uint16_t v)
{
	v = w->swap ? __builtin_bswap16(v) : v;
	w8(w, &v, 2);
}
static void w32(struct wbuf *w, uint32_t v)
{
	v = w->swap ? __builtin_bswap32(v) : v;
	w8(w, &v, 4);
}
static void w64(struct wbuf *w, uint64_t v)
{
	v = w->swap ? __builtin_bswap64(v) : v;
	w8(w, &v, 8);
}
/* Open a block; returns its start, closed by blk_end(). */
static size_t blk(struct wbuf *w, uint32_t type)
{
	size_t at = w->n;
	w32(w, type);
	w32(w, 0);
	return at;
}
static void blk_end(struct wbuf *w, size_t at)
{
	while (w->n & 3)
		w->b[w->n++] = 0;
	uint32_t len = (uint32_t)(w->n - at + 4);
	uint32_t v = w->swap ? __builtin_bswap32(len) : len;
	memcpy(w->b + at + 4, &v, 4);
	w32(w, len);
}
static void shb(struct wbuf *w, bool swap)
{
	w->swap = swap;
	size_t at = blk(w, 0x0a0d0d0a);
	w32(w, 0x1a2b3c4d);
	w16(w, 1);
	w16(w, 0);
	w64(w, UINT64_MAX);
	blk_end(w, at);
}
static void idb(struct wbuf *w, uint16_t lt, uint32_t snap, int tsresol,
		int64_t tsoffset)
{
	size_t at = blk(w, 1);
	w16(w, lt);
	w16(w, 0);
	w32(w, snap);
	w16(w, 2); /* if_name: ignored */
	w16(w, 3);
	w8(w, "ab\0\0", 4);
	if (tsresol >= 0) {
		w16(w, 9);
		w16(w, 1);
		uint8_t v[4] = { (uint8_t)tsresol, 0, 0, 0 };
		w8(w, v, 4);
	}
	if (tsoffset) {
		w16(w, 14);
		w16(w, 8);
		w64(w, (uint64_t)tsoffset);
	}
	w32(w, 0); /* opt_endofopt */
	blk_end(w, at);
}
static void epb(struct wbuf *w, uint32_t ifid, uint64_t t, uint32_t caplen,
		uint32_t len, uint8_t fill)
{
	size_t at = blk(w, 6);
	w32(w, ifid);
	w32(w, (uint32_t)(t >> 32));
	w32(w, (uint32_t)t);
	w32(w, caplen);
	w32(w, len);
	for (uint32_t i = 0; i < caplen; i++)
		w->b[w->n++] = fill;
	blk_end(w, at);
}

static void test_pcapng_made(void)
{
	static struct wbuf w;
	memset(&w, 0, sizeof(w));
	int fails_before = t_failed;

	/* Section 1, little-endian: Ethernet with ns stamps, RAW (101)
	 * with 2^-10 s stamps and a 100 s offset, an unknown block. */
	shb(&w, false);
	idb(&w, 1, 0, 9, 0);
	idb(&w, 101, 64, 0x80 | 10, 100);
	epb(&w, 0, 1700000000123456789ull, 60, 60, 0xa1);
	epb(&w, 1, (5ull << 10) | 512, 20, 40, 0xa2); /* 105.5 s */
	{ size_t at = blk(&w, 0x0badf00d); w32(&w, 7); blk_end(&w, at); }
	/* Simple packet block: interface 0's snaplen (0 = 262144) */
	{ size_t at = blk(&w, 3); w32(&w, 30);
	  for (int i = 0; i < 30; i++) w.b[w.n++] = 0xa3;
	  blk_end(&w, at); }
	/* Section 2, big-endian: ms stamps, snaplen 50; SPB cut to it; an
	 * obsolete packet block. */
	shb(&w, true);
	idb(&w, 105, 50, 3, 0);
	epb(&w, 0, 1234, 10, 10, 0xa4);
	{ size_t at = blk(&w, 3); w32(&w, 80);
	  for (int i = 0; i < 52; i++) w.b[w.n++] = 0xa5;
	  blk_end(&w, at); }
	{ size_t at = blk(&w, 2); w16(&w, 0); w16(&w, 0); w32(&w, 0);
	  w32(&w, 2000); w32(&w, 8); w32(&w, 9);
	  for (int i = 0; i < 8; i++) w.b[w.n++] = 0xa6;
	  blk_end(&w, at); }

	struct pm_pcapr *r;
	char err[256];
	struct pkts ps = { 0 };
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(pm_pcapr_linktype(r), 1);
		CHECK_EQ(pm_pcapr_format(r), PM_PCAP_FMT_PCAPNG);
		CHECK_EQ(read_all(r, &ps), 0);
		pm_pcapr_close(r);
	}
	CHECK_EQ(ps.n, 6);
	if (ps.n == 6) {
		const struct pkt *v = ps.v;
		CHECK(v[0].ts == 1700000000123456789ull && v[0].linktype == 1 &&
			      v[0].caplen == 60 && v[0].data[0] == 0xa1, "epb 0");
		CHECK(v[1].ts == 105500000000ull && v[1].linktype == 12 &&
			      v[1].caplen == 20 && v[1].len == 40, "epb 1: ts %llu lt %u",
		      (unsigned long long)v[1].ts, v[1].linktype);
		CHECK(v[2].caplen == 30 && v[2].ts == 0 && v[2].data[29] == 0xa3,
		      "spb");
		CHECK(v[3].ts == 1234000000ull && v[3].linktype == 105 &&
			      v[3].data[0] == 0xa4, "big-endian section: ts %llu",
		      (unsigned long long)v[3].ts);
		CHECK(v[4].caplen == 50 && v[4].len == 80, "spb cut to snaplen: %u",
		      v[4].caplen);
		CHECK(v[5].caplen == 8 && v[5].len == 9 && v[5].ts == 2000000000ull &&
			      v[5].data[0] == 0xa6, "obsolete packet block");
	}
	pkts_free(&ps);

	/* A packet on an interface the section does not describe. */
	size_t good = w.n;
	w.swap = true;
	epb(&w, 1, 0, 4, 4, 0);
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(read_all(r, &ps), -EBADMSG);
		char want[80];
		snprintf(want, sizeof(want), "enhanced packet block at offset %zu", good);
		CHECK(strstr(pm_pcapr_error(r), want), "error: %s",
		      pm_pcapr_error(r));
		CHECK_EQ(ps.n, 6);
		pm_pcapr_close(r);
		pkts_free(&ps);
	}
	/* caplen above the interface's snaplen (50) */
	w.n = good;
	epb(&w, 0, 0, 51, 51, 0);
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(read_all(r, &ps), -EBADMSG);
		CHECK(strstr(pm_pcapr_error(r), "claims caplen 51 (limit 50)"),
		      "error: %s", pm_pcapr_error(r));
		pm_pcapr_close(r);
		pkts_free(&ps);
	}
	/* Header and trailer lengths disagree. */
	w.n = good;
	epb(&w, 0, 0, 4, 4, 0);
	w.b[w.n - 1] ^= 0x10; /* big-endian: low byte of the trailer */
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(read_all(r, &ps), -EBADMSG);
		CHECK(strstr(pm_pcapr_error(r), "in its trailer"), "error: %s",
		      pm_pcapr_error(r));
		pm_pcapr_close(r);
		pkts_free(&ps);
	}
	/* caplen within the snaplen but past the block's data: the
	 * block's own length bounds it. */
	for (uint32_t over = 21; over <= 40; over += 19) {
		w.n = good;
		size_t at = blk(&w, 6);
		w32(&w, 0); w32(&w, 0); w32(&w, 0);
		w32(&w, over); w32(&w, over);
		for (int i = 0; i < 20; i++)
			w.b[w.n++] = 0xa7;
		blk_end(&w, at);
		CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
		if (r) {
			char want[80];
			snprintf(want, sizeof(want), "caplen %u overruns the block "
				 "(20 bytes of data)", over);
			CHECK_EQ(read_all(r, &ps), -EBADMSG);
			CHECK(strstr(pm_pcapr_error(r), want), "error: %s",
			      pm_pcapr_error(r));
			CHECK_EQ(ps.n, 6);
			pm_pcapr_close(r);
			pkts_free(&ps);
		}
	}
	/* Versions: 1.0 and 1.2 are read, 1.1 and 2.0 are not; a later
	 * section needs only major version 1. */
	static const struct { uint16_t maj, min; int ret; } vers[] = {
		{ 1, 0, 0 }, { 1, 2, 0 }, { 1, 1, -EINVAL }, { 1, 3, -EINVAL },
		{ 2, 0, -EINVAL }, { 0, 0, -EINVAL },
	};
	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		memset(&w, 0, sizeof(w));
		shb(&w, false);
		memcpy(w.b + 12, &vers[i].maj, 2);
		memcpy(w.b + 14, &vers[i].min, 2);
		idb(&w, 1, 0, -1, 0);
		epb(&w, 0, 0, 4, 4, 0);
		int rc = pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err));
		CHECK(rc == vers[i].ret && (rc == 0 || strstr(err, "unsupported pcapng version")),
		      "version %u.%u: %d %s", vers[i].maj, vers[i].min, rc,
		      rc ? err : "");
		if (rc == 0)
			pm_pcapr_close(r);
	}
	/* A file that ends inside the first section header's 12 bytes. */
	memset(&w, 0, sizeof(w));
	shb(&w, false);
	for (size_t cut = 8; cut < 12; cut++) {
		uint8_t *b = malloc(cut); /* exact size: ASan sees overruns */
		memcpy(b, w.b, cut);
		int rc = pm_pcapr_open_mem(&r, b, cut, err, sizeof(err));
		CHECK(rc < 0 && strstr(err, "truncated section header block"),
		      "%zu bytes: %d %s", cut, rc, err);
		free(b);
	}
	/* A packet before any interface. */
	memset(&w, 0, sizeof(w));
	shb(&w, false);
	epb(&w, 0, 0, 4, 4, 0);
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == -EBADMSG &&
		      strstr(err, "before any interface"),
	      "packet before IDB: %s", err);
	printf("%s pcapng two sections, both byte orders, per-interface link "
	       "types and resolutions, SPB, PB, errors\n",
	       t_failed == fails_before ? "ok  " : "FAIL");
}

/* Classic pcap corner cases: errors with offsets, the caplen rules, the
 * largest records via the fd path, a record too long for the ring. */
static void test_pcap_made(void)
{
	static struct wbuf w;
	char err[256];
	struct pm_pcapr *r;
	struct pkts ps = { 0 };
	int fails_before = t_failed;

	CHECK(pm_pcapr_open_mem(&r, "hello, world", 12, err, sizeof(err)) ==
			      -EINVAL &&
		      !strcmp(err, "bad magic 0x68656c6c at offset 0: not a pcap or "
				   "pcapng file"),
	      "bad magic: %s", err);
	CHECK(pm_pcapr_open_mem(&r, "", 0, err, sizeof(err)) == -EINVAL, "empty");

	/* Big-endian µs file, snaplen 100, then: a record cut to the
	 * snaplen, one at the 262144 limit, one above it. */
	memset(&w, 0, sizeof(w));
	w.swap = true;
	w32(&w, 0xa1b2c3d4);
	w16(&w, 2);
	w16(&w, 4);
	w32(&w, 0);
	w32(&w, 0);
	w32(&w, 100);
	w32(&w, 0x04000001); /* Ethernet, FCS bits set */
	w32(&w, 1);
	w32(&w, 500000);
	w32(&w, 150);
	w32(&w, 150);
	for (int i = 0; i < 150; i++)
		w.b[w.n++] = (uint8_t)i;
	size_t third = w.n;
	w32(&w, 2);
	w32(&w, 0);
	w32(&w, 300000);
	w32(&w, 300000);
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(pm_pcapr_linktype(r), 1);
		CHECK_EQ(read_all(r, &ps), -EBADMSG);
		CHECK(ps.n == 1 && ps.v[0].caplen == 100 && ps.v[0].len == 150 &&
			      ps.v[0].ts == 1500000000ull && ps.v[0].data[99] == 99,
		      "cut to snaplen");
		char want[80];
		snprintf(want, sizeof(want),
			 "record at offset %zu claims caplen 300000 (limit 262144)",
			 third);
		CHECK(!strcmp(pm_pcapr_error(r), want), "error: %s",
		      pm_pcapr_error(r));
		pm_pcapr_close(r);
		pkts_free(&ps);
	}
	w.n = third + 7;
	CHECK(pm_pcapr_open_mem(&r, w.b, w.n, err, sizeof(err)) == 0, "%s", err);
	if (r) {
		CHECK_EQ(read_all(r, &ps), -EBADMSG);
		char want[80];
		snprintf(want, sizeof(want),
			 "truncated record header at offset %zu (7 of 16 bytes)", third);
		CHECK(!strcmp(pm_pcapr_error(r), want), "error: %s",
		      pm_pcapr_error(r));
		pm_pcapr_close(r);
		pkts_free(&ps);
	}

	/* Records of 262144 bytes (and a 2 MiB D-Bus one, whose link type
	 * allows it) through a file, the refilled 1 MiB buffer, and the
	 * port: with 64 slots the big ones can never fit and are dropped. */
	char path[300], name[400];
	snprintf(path, sizeof(path), "%s/big.pcap", tmpdir);
	for (int dbus = 0; dbus < 2; dbus++) {
		struct pm_pcapw *wr;
		struct pm_pcapw_opts wo = { .linktype = dbus ? 231 : 1,
					    .snaplen = dbus ? 4u << 20 : 0 };
		CHECK(pm_pcapw_open(&wr, path, &wo) == 0, "create %s", path);
		if (!wr)
			return;
		uint32_t big = dbus ? 2u << 20 : 262144;
		uint8_t *d = malloc(big);
		for (uint32_t i = 0; i < big; i++)
			d[i] = (uint8_t)(i * 7);
		for (int i = 0; i < 9; i++) {
			uint32_t n = i % 3 == 1 ? big : 100 + (uint32_t)i;
			d[0] = (uint8_t)i;
			CHECK_EQ(pm_pcapw_write(wr, d, n, n, (uint64_t)i), 0);
		}
		CHECK_EQ(pm_pcapw_close(wr), 0);
		CHECK(pm_pcapr_open(&r, path, err, sizeof(err)) == 0, "%s", err);
		if (r) {
			CHECK_EQ(read_all(r, &ps), 0);
			CHECK_EQ(ps.n, 9);
			for (size_t i = 0; i < ps.n; i++) {
				uint32_t n = i % 3 == 1 ? big : 100 + (uint32_t)i;
				d[0] = (uint8_t)i;
				CHECK(ps.v[i].caplen == n &&
					      !memcmp(ps.v[i].data, d, n),
				      "big record %zu", i);
			}
			pm_pcapr_close(r);
			pkts_free(&ps);
		}
		snprintf(name, sizeof(name), "pcap:%s/R@conf:slots=64", path);
		struct pktmap_port *p = NULL;
		CHECK(port_open(&p, name, 0, err, sizeof(err)) == 0, "%s", err);
		if (p) {
			CHECK_EQ(drain(p, &ps, NULL, 0, 0), 0);
			CHECK_EQ(ps.n, 6);
			struct pktmap_stats st = { .sz = sizeof(st) };
			pktmap_stats(p, &st);
			CHECK_EQ(st.drop_too_long, 3);
			pktmap_close(p);
			pkts_free(&ps);
		}
		/* In 64 KiB buffers a 262144-byte record takes 5 slots. */
		snprintf(name, sizeof(name), "pcap:%s/R@conf:buf-size=65536,slots=8",
			 path);
		CHECK(port_open(&p, name, 0, err, sizeof(err)) == 0, "%s", err);
		if (p) {
			uint32_t fr[16];
			CHECK_EQ(drain(p, &ps, fr, 16, 0), 0);
			CHECK_EQ(ps.n, dbus ? 6 : 9);
			if (!dbus && ps.n == 9)
				CHECK(fr[1] == 5 && ps.v[1].caplen == big &&
					      !memcmp(ps.v[1].data + 1, d + 1, big - 1),
				      "262144 bytes in 5 slots of 65535: %u", fr[1]);
			pktmap_close(p);
			pkts_free(&ps);
		}
		free(d);
	}
	unlink(path);
	printf("%s pcap   bad magic, caplen above snaplen and limit, truncated "
	       "header, 262144-byte and 2 MiB records\n",
	       t_failed == fails_before ? "ok  " : "FAIL");
}

/* ------------------------------------------------------------------ */
/* 6. Open errors */

static void test_open_errors(void)
{
	struct pktmap_port *p = NULL;
	char err[400];
	int fails_before = t_failed;
	int r = port_open(&p, "pcap:x", 0, err, sizeof(err));
	CHECK(r == -EINVAL && !strcmp(err, "pcap:x: a capture file is read (/R) "
					   "or written (/T), not both"),
	      "both: %d %s", r, err);
	r = port_open(&p, "pcap:x/RT", 0, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "not both"), "/RT: %d %s", r, err);
	char name[400];
	snprintf(name, sizeof(name), "pcap:%s/no/such.pcap/R", tmpdir);
	r = port_open(&p, name, 0, err, sizeof(err));
	char want[500];
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory",
		 name);
	CHECK(r == -ENOENT && !strncmp(err, want, strlen(want)), "missing: %d %s", r, err);
	snprintf(name, sizeof(name), "pcap:%s/no/such.pcap", tmpdir);
	r = port_open(&p, name, PKTMAP_DIR_TX, err, sizeof(err));
	CHECK(r == -ENOENT && strstr(err, "cannot create"), "create: %d %s", r,
	      err);
	snprintf(name, sizeof(name), "pcap:%s/EXPECTED.tsv/R", pcaps);
	r = port_open(&p, name, 0, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "bad magic 0x66696c65 at offset 0"),
	      "not pcap: %d %s", r, err);
	snprintf(name, sizeof(name), "pcap:%s/x.pcap/Z", tmpdir);
	r = port_open(&p, name, PKTMAP_DIR_TX, err, sizeof(err));
	CHECK(r == -EOPNOTSUPP, "/Z: %d %s", r, err);
	printf("%s open   both directions, missing file, not a capture file, /Z\n",
	       t_failed == fails_before ? "ok  " : "FAIL");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *env = getenv("PKTMAP_PCAPS");
	const char *root = getenv("PKTMAP_SOURCE_ROOT");
	if (env && *env)
		snprintf(pcaps, sizeof(pcaps), "%s", env);
	else
		snprintf(pcaps, sizeof(pcaps), "%s/tests/data/pcaps",
			 root && *root ? root : PKTMAP_SOURCE_ROOT);
	if (load_expected() != 0 || nexpect == 0) {
		fprintf(stderr,
			"FAIL: no capture corpus at %s (EXPECTED.tsv): set "
			"PKTMAP_PCAPS to the directory of tests/data/pcaps\n",
			pcaps);
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pktmap-test-pcap.%d", getpid());
	if (mkdir(tmpdir, 0700) != 0) {
		fprintf(stderr, "FAIL: mkdir %s: %s\n", tmpdir, strerror(errno));
		return 1;
	}

	test_corpus();

	test_port_read("HSRP_failover.pcap", "", 0);
	test_port_read("gso-ipv6-vxlan-ipv4.pcap", "", 0);
	test_port_read("pimv2-oobr-2.pcap", "", 1);
	test_port_read("tcp-handshake-nano.pcap", "", 0);
	test_port_read("of13_ericsson.pcapng", "@conf:slots=32", 1);
	test_port_read("vsock-1.pcapng", "@conf:buf-size=256", 0);
	test_port_read("pimv2-oobr-2.pcap", "@conf:buf-size=65536", 0);
	test_port_loop();

	test_roundtrip(".pcap", 1, "/T");
	test_roundtrip("-us.pcap", 0, "/T@conf:nanosec=0,slots=256");
	test_roundtrip("-ns.pcap", 1, "/T@conf:nanosec=1,linktype=12");
	test_roundtrip(".pcapng", 1, "/T@conf:buf-size=1024");
	test_tx_checker();
	test_tx_error();

	static const char *damaged[] = {
		"HSRP_failover.pcap",   "gso-ipv6-vxlan-ipv4.pcap",
		"tcp-handshake-nano.pcap", "pktap-heap-overflow.pcap",
		"vrrp-vrrp_print-oobr.pcap", "bgp-role.pcapng",
		"of13_ericsson.pcapng", "vsock-1.pcapng",
		"hdlc_slarp.pcapng",
	};
	for (size_t i = 0; i < PM_ARRAY_SIZE(damaged); i++)
		corrupt_one(damaged[i]);
	test_port_corrupt();
	test_pcapng_made();
	test_pcap_made();
	test_open_errors();

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return t_done("pcapfile");
}
