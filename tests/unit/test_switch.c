// SPDX-License-Identifier: BSD-2-Clause
/* The switch's learning table (src/fwd/switch_mac.c): learning, a MAC
 * moving to another port, aging, a bounded size under more MACs than it
 * holds, forgetting a detached port; the data path (src/fwd/switch.c)
 * in one process over pipes: flooding, learning, no reflection, runts
 * counted as invalid, a full destination dropping only its own frames;
 * and a lookup of the caller's in place of the learning bridge (unknown
 * ports counted); the component (src/fwd/switch_srv.h) with one and two
 * threads, clients attached through the vale back end in this process:
 * frames intact and in order, the name taken once, a detach request, the
 * report run with every thread parked, nothing left behind. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

#include "switch.h"
#include "switch_srv.h"
#include "t.h"
#include "vale_proto.h"

static void mac_of(uint8_t m[6], uint32_t v)
{
	m[0] = 0x02;
	m[1] = 0;
	m[2] = (uint8_t)(v >> 24);
	m[3] = (uint8_t)(v >> 16);
	m[4] = (uint8_t)(v >> 8);
	m[5] = (uint8_t)v;
}

static void test_table(void)
{
	struct sw_mac *t = sw_mac_new(64, 1000);
	struct sw_mac_stats st;
	uint8_t a[6], b[6];
	mac_of(a, 1);
	mac_of(b, 2);

	CHECK_EQ(sw_mac_find(t, a, 0), -1);
	sw_mac_learn(t, a, 3, 0);
	sw_mac_learn(t, b, 4, 0);
	CHECK_EQ(sw_mac_find(t, a, 10), 3);
	CHECK_EQ(sw_mac_find(t, b, 10), 4);
	/* a shows up on port 5: the entry moves */
	sw_mac_learn(t, a, 5, 20);
	CHECK_EQ(sw_mac_find(t, a, 30), 5);
	sw_mac_stats(t, &st);
	CHECK_EQ(st.entries, 2);
	CHECK_EQ(st.moved, 1);
	CHECK_EQ(st.learned, 2);
	/* aging: 1000 ms after its last frame a MAC is still there, after
	 * 1001 it is gone */
	sw_mac_learn(t, b, 4, 500);
	CHECK_EQ(sw_mac_find(t, b, 1500), 4);
	CHECK_EQ(sw_mac_find(t, a, 1021), -1);
	CHECK_EQ(sw_mac_find(t, b, 1501), -1);
	sw_mac_stats(t, &st);
	CHECK_EQ(st.entries, 0);
	CHECK_EQ(st.aged, 2);
	/* refreshing keeps an entry alive past the first aging time */
	sw_mac_learn(t, a, 1, 2000);
	sw_mac_learn(t, a, 1, 2900);
	CHECK_EQ(sw_mac_find(t, a, 3800), 1);
	sw_mac_free(t);

	/* bounded: 10000 MACs into a table of 64 */
	t = sw_mac_new(64, 300000);
	for (uint32_t i = 0; i < 10000; i++) {
		mac_of(a, 100 + i);
		sw_mac_learn(t, a, (uint16_t)(i % 7), i);
	}
	sw_mac_stats(t, &st);
	CHECK_EQ(st.capacity, 64);
	CHECK(st.entries <= 64, "entries %llu", (unsigned long long)st.entries);
	CHECK_EQ(st.learned, 10000);
	CHECK_EQ(st.evicted + st.entries, 10000);
	/* the most recent MAC is always there */
	CHECK_EQ(sw_mac_find(t, a, 10000), (int)(9999 % 7));
	/* forgetting a port */
	sw_mac_learn(t, b, 9, 10000);
	CHECK_EQ(sw_mac_find(t, b, 10001), 9);
	sw_mac_lookup.port_gone(t, 9);
	CHECK_EQ(sw_mac_find(t, b, 10002), -1);
	sw_mac_free(t);
}

/* ---- the data path over pipes -------------------------------------- */

#define NP 3

struct client {
	struct pktmap_port *sw_end, *cl_end;
	char name[64];
};

static struct client cl[NP];
static uint64_t sent_by[NP]; /* frames each client put on its TX ring */

/* A frame from client c on its TX ring `ring`: dst, src, tag at 16. */
static void send_on(int c, unsigned ring, const uint8_t dst[6],
		    const uint8_t src[6], uint32_t len, uint32_t tag)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(cl[c].cl_end), ring);
	/* The tail may show less room than there is (the pipe reloads
	 * the reader's index only when asked for more). */
	if (nm_ring_space(r) == 0)
		pktmap_txsync(cl[c].cl_end);
	CHECK(nm_ring_space(r) > 0, "client %d: TX ring full", c);
	struct netmap_slot *s = &r->slot[r->head];
	uint8_t *b = (uint8_t *)NETMAP_BUF(r, s->buf_idx);
	memset(b, 0, len);
	if (len >= 12) {
		memcpy(b, dst, 6);
		memcpy(b + 6, src, 6);
	}
	if (len >= 20)
		memcpy(b + 16, &tag, 4);
	s->len = (uint16_t)len;
	r->head = r->cur = nm_ring_next(r, r->head);
	sent_by[c]++;
}

static void send_frame(int c, const uint8_t dst[6], const uint8_t src[6],
		       uint32_t len, uint32_t tag)
{
	send_on(c, 0, dst, src, len, tag);
}

/* Frames waiting for client c on RX ring `ring`; their tags in tags[]
 * when given. */
static unsigned drain_ring(int c, unsigned ring, uint32_t *tags, unsigned max)
{
	pktmap_rxsync(cl[c].cl_end);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(cl[c].cl_end), ring);
	unsigned n = 0;
	while (!nm_ring_empty(r)) {
		struct netmap_slot *s = &r->slot[r->head];
		if (tags && n < max)
			memcpy(&tags[n], NETMAP_BUF(r, s->buf_idx) + 16, 4);
		n++;
		r->head = r->cur = nm_ring_next(r, r->head);
	}
	pktmap_rxsync(cl[c].cl_end);
	return n;
}

static unsigned drain(int c, uint32_t *tags, unsigned max)
{
	return drain_ring(c, 0, tags, max);
}

static void flush(struct sw *s, int c)
{
	pktmap_txsync(cl[c].cl_end);
	CHECK(sw_round(s) >= 0, "round");
}

static void test_datapath(void)
{
	struct sw s;
	struct sw_cfg cfg = { .aging_ms = 300000 };
	CHECK_EQ(sw_init(&s, &cfg), 0);
	memset(sent_by, 0, sizeof(sent_by));
	for (int i = 0; i < NP; i++) {
		char n[96];
		snprintf(cl[i].name, sizeof(cl[i].name), "tsw%d.%d", (int)getpid(), i);
		snprintf(n, sizeof(n), "pipe:%s{0@conf:slots=64", cl[i].name);
		struct pktmap_open_opts o = { .sz = sizeof(o) };
		CHECK_EQ(pktmap_open(&cl[i].sw_end, n, &o), 0);
		snprintf(n, sizeof(n), "pipe:%s}0", cl[i].name);
		CHECK_EQ(pktmap_open(&cl[i].cl_end, n, &o), 0);
		char pn[8];
		snprintf(pn, sizeof(pn), "%c", 'a' + i);
		CHECK_EQ(sw_attach(&s, cl[i].sw_end, pn, "client", true, 0), i);
	}
	CHECK_EQ(sw_attach(&s, cl[0].sw_end, "a", "client", false, 0), -EEXIST);

	uint8_t A[6], B[6], C[6], BC[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	mac_of(A, 0xa);
	mac_of(B, 0xb);
	mac_of(C, 0xc);
	uint32_t tags[64];

	/* flooding: a broadcast from a reaches b and c, not a */
	for (uint32_t i = 0; i < 10; i++)
		send_frame(0, BC, A, 60, i);
	flush(&s, 0);
	{ unsigned got = drain(1, tags, 64); CHECK_EQ(got, 10); }
	for (uint32_t i = 0; i < 10; i++)
		CHECK_EQ(tags[i], i);
	{ unsigned got = drain(2, NULL, 0); CHECK_EQ(got, 10); }
	{ unsigned got = drain(0, NULL, 0); CHECK_EQ(got, 0); }
	/* learning: b speaks once (flooded: unknown C), then a frame to B
	 * reaches only b */
	send_frame(1, C, B, 60, 100);
	flush(&s, 1);
	{ unsigned got = drain(0, NULL, 0); CHECK_EQ(got, 1); }
	{ unsigned got = drain(2, NULL, 0); CHECK_EQ(got, 1); }
	for (uint32_t i = 0; i < 5; i++)
		send_frame(0, B, A, 60, 200 + i);
	flush(&s, 0);
	{ unsigned got = drain(1, tags, 64); CHECK_EQ(got, 5); }
	CHECK_EQ(tags[4], 204);
	{ unsigned got = drain(2, NULL, 0); CHECK_EQ(got, 0); }
	/* A is known on a: a frame from a to A is filtered */
	send_frame(0, A, A, 60, 300);
	flush(&s, 0);
	CHECK_EQ(s.port[0]->c.filtered, 1);
	{ unsigned got = drain(1, NULL, 0) + drain(2, NULL, 0); CHECK_EQ(got, 0); }
	/* runts are invalid and counted, the frames around them go */
	send_frame(2, A, C, 60, 400);
	send_frame(2, A, C, 13, 401);
	send_frame(2, A, C, 60, 402);
	flush(&s, 2);
	CHECK_EQ(s.port[2]->c.drop_invalid, 1);
	{ unsigned got = drain(0, tags, 64); CHECK_EQ(got, 2); }
	CHECK_EQ(tags[1], 402);
	/* no head-of-line blocking: b never drains; a floods 100 frames
	 * into rings of 64 slots: b's copies beyond its 63 free slots are
	 * dropped (counted on b), c gets every frame */
	uint64_t nospace0 = s.port[1]->c.drop_nospace;
	unsigned got_c = 0;
	for (uint32_t i = 0; i < 100; i++) {
		send_frame(0, BC, A, 60, 500 + i);
		if (i % 20 == 19) {
			flush(&s, 0);
			got_c += drain(2, NULL, 0);
		}
	}
	CHECK_EQ(got_c, 100);
	CHECK_EQ(s.port[1]->c.drop_nospace - nospace0, 100 - 63);
	{ unsigned got = drain(1, NULL, 0); CHECK_EQ(got, 63); }
	/* every frame taken is accounted for: each frame a client sent was
	 * switched (rx_frames) or refused as invalid, once (the only
	 * invalid frames here are the runts, refused on the way in) */
	for (int i = 0; i < NP; i++) {
		struct sw_counters *c = &s.port[i]->c;
		CHECK(c->rx_frames + c->drop_invalid == sent_by[i],
		      "port %d: %llu switched + %llu invalid, %llu sent", i,
		      (unsigned long long)c->rx_frames,
		      (unsigned long long)c->drop_invalid,
		      (unsigned long long)sent_by[i]);
	}
	for (int i = 0; i < NP; i++)
		pktmap_close(cl[i].cl_end);
	sw_fini(&s);
}

/* A lookup of our own (VALE's pluggable lookup): the frame's byte 14
 * names the output port, as an L3 lookup would from its tables. */
static unsigned gone_calls;

static void byte_lookup(void *ctx, const struct sw_frame *f, uint32_t n,
			uint16_t src, uint16_t *dst, uint32_t now_ms)
{
	(void)ctx;
	(void)src;
	(void)now_ms;
	for (uint32_t i = 0; i < n; i++)
		dst[i] = f[i].len > 14 ? f[i].buf[14] : SW_FLOOD;
}

static void byte_gone(void *ctx, uint16_t port)
{
	(void)ctx;
	(void)port;
	gone_calls++;
}

static const struct sw_lookup_ops byte_ops = {
	.name = "byte 14",
	.lookup = byte_lookup,
	.port_gone = byte_gone,
};

static void send_to(int c, uint8_t out, uint32_t tag)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(cl[c].cl_end), 0);
	if (nm_ring_space(r) == 0)
		pktmap_txsync(cl[c].cl_end);
	struct netmap_slot *s = &r->slot[r->head];
	uint8_t *b = (uint8_t *)NETMAP_BUF(r, s->buf_idx);
	memset(b, 0, 60);
	b[14] = out;
	memcpy(b + 16, &tag, 4);
	s->len = 60;
	r->head = r->cur = nm_ring_next(r, r->head);
}

static void test_custom_lookup(void)
{
	struct sw s;
	struct sw_cfg cfg = { .lookup = &byte_ops };
	CHECK_EQ(sw_init(&s, &cfg), 0);
	CHECK(s.mac == NULL, "a MAC table made for a custom lookup");
	for (int i = 0; i < NP; i++) {
		char n[96], pn[8];
		snprintf(n, sizeof(n), "pipe:tswl%d.%d{0@conf:slots=64", (int)getpid(),
			 i);
		struct pktmap_open_opts o = { .sz = sizeof(o) };
		CHECK_EQ(pktmap_open(&cl[i].sw_end, n, &o), 0);
		snprintf(n, sizeof(n), "pipe:tswl%d.%d}0", (int)getpid(), i);
		CHECK_EQ(pktmap_open(&cl[i].cl_end, n, &o), 0);
		snprintf(pn, sizeof(pn), "%c", 'a' + i);
		CHECK_EQ(sw_attach(&s, cl[i].sw_end, pn, "client", true, 0), i);
	}
	uint32_t tags[64];
	/* to port 2, to port 1, to no port (7, 200): unknown, dropped and
	 * counted on the source; to the source itself: filtered */
	send_to(0, 2, 1);
	send_to(0, 1, 2);
	send_to(0, 7, 3);
	send_to(0, 200, 4);
	send_to(0, 0, 5);
	send_to(0, 2, 6);
	flush(&s, 0);
	{ unsigned got = drain(2, tags, 64); CHECK_EQ(got, 2); }
	CHECK_EQ(tags[0], 1);
	CHECK_EQ(tags[1], 6);
	{ unsigned got = drain(1, tags, 64); CHECK_EQ(got, 1); }
	CHECK_EQ(tags[0], 2);
	CHECK_EQ(s.port[0]->c.drop_unknown, 2);
	CHECK_EQ(s.port[0]->c.filtered, 1);
	CHECK_EQ(s.port[0]->c.rx_frames, 6);
	sw_detach(&s, 1);
	CHECK_EQ(gone_calls, 1);
	/* a port that was detached is unknown too */
	send_to(0, 1, 7);
	flush(&s, 0);
	CHECK_EQ(s.port[0]->c.drop_unknown, 3);
	pktmap_close(cl[1].cl_end);
	pktmap_close(cl[0].cl_end);
	pktmap_close(cl[2].cl_end);
	sw_fini(&s);
}

/* ---- the component: sws_* with clients of the vale back end -------- */

static atomic_uint reports;
static atomic_int parked_wrong; /* reports run while a thread forwarded */
static atomic_int ext_stop;     /* the caller's stop flag */
static int run_rc;

static void on_report(void *ctx, struct sws *s)
{
	(void)ctx;
	if (s->nthreads > 1 && s->parked != s->nthreads)
		atomic_fetch_add(&parked_wrong, 1);
	atomic_fetch_add(&reports, 1);
}

static void *run_main(void *arg)
{
	run_rc = sws_run(arg);
	return NULL;
}

/* VALE_DETACH of port through the control socket, as `pktmap switch
 * NAME -d PORT` does. Returns the reply's op. */
static uint32_t request_detach(const char *sw, const char *port)
{
	char dir[64];
	CHECK_EQ(pktmap_user_dir(dir, sizeof(dir), NULL, 0), 0);
	int fd = vale_ctl_connect(dir, sw);
	CHECK(fd >= 0, "connect to %s: %d", sw, fd);
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = VALE_DETACH };
	snprintf(rq.port, sizeof(rq.port), "%s", port);
	struct vale_rep rp = { 0 };
	ssize_t n = send(fd, &rq, sizeof(rq), 0);
	CHECK_EQ(n, (ssize_t)sizeof(rq));
	n = recv(fd, &rp, sizeof(rp), 0);
	CHECK_EQ(n, (ssize_t)sizeof(rp));
	close(fd);
	return rp.op;
}

/* Frames a sends (broadcast), spread over its rings (one per thread),
 * until b has them all; each ring's in order (ring r: tags r, r + n, ...). */
static void component_traffic(unsigned nrings, unsigned n)
{
	uint8_t A[6], BC[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint32_t tags[2][256];
	unsigned got[2] = { 0, 0 }, total = 0;
	mac_of(A, 0xa);
	for (uint32_t i = 0; i < n; i++)
		send_on(0, i % nrings, BC, A, 60 + i % 64, i);
	pktmap_txsync(cl[0].cl_end);
	/* 30 s at most (the test's timeout ends it before) */
	for (int k = 0; k < 30 && total < n; k++) {
		pktmap_poll(cl[1].cl_end, POLLIN, 1000);
		for (unsigned r = 0; r < nrings; r++)
			got[r] += drain_ring(1, r, tags[r] + got[r], 256 - got[r]);
		total = got[0] + got[1];
	}
	CHECK_EQ(total, n);
	for (unsigned r = 0; r < nrings; r++) {
		CHECK_EQ(got[r], n / nrings);
		for (uint32_t i = 0; i < got[r]; i++)
			CHECK(tags[r][i] == r + i * nrings, "ring %u frame %u: tag %u",
			      r, i, tags[r][i]);
	}
}

static void test_component(unsigned nthreads, bool own_flag)
{
	static struct sws s, s2; /* large: not on the stack */
	char name[16], pn[32];
	snprintf(name, sizeof(name), "valeu%d.%u", (int)getpid() % 1000000,
		 nthreads);
	struct sws_opts o = { .name = name, .nthreads = nthreads, .cpu = -1,
			      .mac_entries = 64, .aging_ms = 300000,
			      .interval_ns = 1000000, .report = on_report,
			      .stop = own_flag ? NULL : &ext_stop };
	atomic_store(&reports, 0);
	atomic_store(&ext_stop, 0);
	/* (CHECK_EQ evaluates its arguments again on failure: each call
	 * with a side effect is made once, outside) */
	int ret = sws_setup(&s, &o);
	CHECK_EQ(ret, 0);
	/* the name is taken once; the refused switch removes nothing */
	ret = sws_setup(&s2, &o);
	CHECK_EQ(ret, -EADDRINUSE);
	CHECK(strstr(s2.err, "is already running") != NULL, "err: %s", s2.err);
	sws_teardown(&s2);
	char sock[108];
	snprintf(sock, sizeof(sock), "%s", s.sockpath);
	CHECK(access(sock, F_OK) == 0, "%s removed by the refused switch", sock);

	pthread_t tid;
	ret = pthread_create(&tid, NULL, run_main, &s);
	CHECK_EQ(ret, 0);
	struct pktmap_open_opts oo = { .sz = sizeof(oo) };
	for (int i = 0; i < 2; i++) {
		snprintf(pn, sizeof(pn), "%s:%c", name, 'a' + i);
		ret = pktmap_open(&cl[i].cl_end, pn, &oo);
		CHECK_EQ(ret, 0);
		if (ret) { /* nothing to send through: end here */
			sws_stop(&s);
			pthread_join(tid, NULL);
			sws_teardown(&s);
			return;
		}
	}
	struct pktmap_port *dup;
	snprintf(pn, sizeof(pn), "%s:a", name);
	ret = pktmap_open(&dup, pn, &oo);
	CHECK_EQ(ret, -EBUSY);
	memset(sent_by, 0, sizeof(sent_by));
	component_traffic(nthreads, 200);
	/* a report (every 1 ms) before the detach and the stop */
	while (atomic_load(&reports) < 2)
		pktmap_poll(cl[1].cl_end, POLLIN, 10);
	uint32_t op = request_detach(name, "b");
	CHECK_EQ(op, VALE_OK);
	op = request_detach(name, "nobody");
	CHECK_EQ(op, VALE_ERR);
	if (own_flag)
		sws_stop(&s);
	else
		atomic_store(&ext_stop, 1);
	pthread_join(tid, NULL);
	CHECK_EQ(run_rc, 0);
	CHECK_EQ(atomic_load(&parked_wrong), 0);
	/* a's counters summed over the threads; b's kept when it left */
	struct sw_counters c;
	sws_counters(&s, 0, &c);
	CHECK_EQ(c.rx_frames, 200);
	CHECK_EQ(s.ngone, 1);
	CHECK(strcmp(s.gone[0].name, "b") == 0, "gone: %s", s.gone[0].name);
	CHECK_EQ(s.gone[0].c.tx_frames, 200);
	CHECK_EQ(s.epoch[1], 1);
	CHECK_EQ(s.sw.port[1], NULL);
	pktmap_close(cl[0].cl_end);
	pktmap_close(cl[1].cl_end);
	sws_teardown(&s);
	CHECK(access(sock, F_OK) != 0, "%s left behind", sock);
}

/* The switch's zero-copy group is the memory its ports' buffers are in,
 * not the @mem: name: ports of one region share one group; a port of a
 * region of the same name shared with group 0 (another memory) gets
 * another, so frames between them are copied, never moved. */
static void test_memory_groups(void)
{
	if (geteuid() != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs root");
		return;
	}
	static struct sws s;
	char name[16], n[3][128], err[300];
	snprintf(name, sizeof(name), "valem%d", (int)getpid() % 1000000);
	struct sws_opts o = { .name = name, .nthreads = 1, .cpu = -1,
			      .mac_entries = 64, .aging_ms = 300000 };
	CHECK_EQ(sws_setup(&s, &o), 0);
	snprintf(n[0], sizeof(n[0]), "pipe:tsm%dx{0@conf:bufs=16384@mem:tsm%d", (int)getpid(),
		 (int)getpid());
	snprintf(n[1], sizeof(n[1]), "pipe:tsm%dy{0@mem:tsm%d", (int)getpid(),
		 (int)getpid());
	snprintf(n[2], sizeof(n[2]), "pipe:tsm%dz{0@conf:share=group:0@mem:tsm%d",
		 (int)getpid(), (int)getpid());
	const char *as[3] = { "x", "y", "z" };
	uint64_t g[3] = { 0, 0, 0 };
	for (int i = 0; i < 3; i++) {
		int ret = sws_attach_name(&s, n[i], as[i], 0, err, sizeof(err));
		CHECK(ret == 0, "attach %s: %s", n[i], err);
		struct sw_port *sp = sw_find(&s.sw, as[i]);
		g[i] = sp ? sp->zc_group : 0;
	}
	CHECK(g[0] != 0 && g[0] == g[1], "one memory, one group: %llx %llx",
	      (unsigned long long)g[0], (unsigned long long)g[1]);
	CHECK(g[2] != 0 && g[2] != g[0], "one name, two memories: %llx %llx",
	      (unsigned long long)g[2], (unsigned long long)g[0]);
	sws_teardown(&s);
}

int main(void)
{
	test_table();
	test_datapath();
	test_custom_lookup();
	test_component(1, true);
	test_component(2, false);
	test_memory_groups();
	return t_done("switch");
}
