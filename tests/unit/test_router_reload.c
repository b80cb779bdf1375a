// SPDX-License-Identifier: BSD-2-Clause
/* The router's routes reloaded while it forwards (rt_reload_routes(),
 * src/fwd/router_reload.c), driven as a library over three pipes of one
 * region: a peer thread sends numbered IPv4 frames to 10.1.0.1 into port
 * 0 while the main thread switches the routes 16 times between "10/8 to
 * port 1" and "10/8 to port 2"; two peer threads read ports 1 and 2.
 * Checked: every reload returns 0; every frame the router took went to
 * port 1 or 2 or was counted dropped on a full queue (nothing "no
 * route", nothing lost, nothing twice, in order at each port); once a
 * reload has returned, the frames sent after it all go where it says
 * (200 frames, exactly, to the right port, none to the other); a bad
 * routes file and a reload in another mode are refused with the old
 * table kept; buffers are conserved. Under ASan (CI's unit suite) a
 * table freed while a stage still read it would be a use after free,
 * and the tables a run made a leak; run it under ThreadSanitizer too. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "router.h"
#include "t.h"

#define NPORTS 3
#define N_TRAFFIC 50000ull
#define N_AFTER 200ull
#define RELOADS 16

struct peer {
	char name[96];
	struct pktmap_port *port;
	_Atomic uint64_t count;    /* sent, or received */
	_Atomic uint64_t target;   /* sender: send up to this many */
	uint64_t next, backwards, bad;
	atomic_int stop;
	int err;
};

static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};

	nanosleep(&ts, NULL);
}

/* A 60-byte IPv4/UDP frame to 10.1.0.1, TTL 64, sequence number seq. */
static void frame(char *b, uint64_t seq)
{
	static const unsigned char head[34] = {
		0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 6, 0x08, 0x00,
		0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0,
		10, 0, 0, 1, 10, 1, 0, 1,
	};

	memset(b, 0, 60);
	memcpy(b, head, sizeof(head));
	memcpy(b + 42, &seq, 8);
}

static void *sender(void *arg)
{
	struct peer *p = arg;
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(p->port), 0);
	uint64_t sent = 0;

	while (!atomic_load(&p->stop)) {
		uint64_t target = atomic_load(&p->target);

		while (sent < target && !nm_ring_empty(tx)) {
			struct netmap_slot *s = &tx->slot[tx->head];

			frame(NETMAP_BUF(tx, s->buf_idx), sent++);
			s->len = 60;
			s->flags = 0;
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
		}
		pktmap_txsync(p->port);
		atomic_store(&p->count, sent);
		if (sent == target)
			nap_us(500);
		else
			pktmap_poll(p->port, POLLOUT, 5);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct peer *p = arg;
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(p->port), 0);

	while (!atomic_load(&p->stop)) {
		pktmap_poll(p->port, POLLIN, 5);
		pktmap_rxsync(p->port);
		while (!nm_ring_empty(rx)) {
			struct netmap_slot *s = &rx->slot[rx->head];
			const unsigned char *b =
				(const unsigned char *)NETMAP_BUF(rx, s->buf_idx);
			uint64_t seq;

			memcpy(&seq, b + 42, 8);
			if (s->len != 60 || b[22] != 63)
				p->bad++;
			else if (seq < p->next)
				p->backwards++;
			p->next = seq + 1;
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
			atomic_fetch_add(&p->count, 1);
		}
	}
	return NULL;
}

static void write_routes(const char *path, int out)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL, "%s: %s", path, strerror(errno));
	if (f) {
		fprintf(f, "# test_router_reload\n10.0.0.0/8 %d\n", out);
		fclose(f);
	}
}

static uint64_t full_drops(const struct rt_router *rt);
static uint64_t queued(const struct rt_router *rt);

/* Wait (up to 60 s: a failure, not a measure) until the router has taken
 * all the sender sent, sent all it queued, and the receivers have all it
 * sent. */
static void settle(struct rt_router *rt, struct peer *peers)
{
	for (int i = 0; i < 60000; i++) {
		uint64_t got = atomic_load(&peers[1].count) +
			       atomic_load(&peers[2].count);

		if (rt_total_received(rt) == atomic_load(&peers[0].count) &&
		    queued(rt) + full_drops(rt) == rt_total_received(rt) &&
		    rt_total_sent(rt) == queued(rt) && got == queued(rt))
			return;
		nap_us(1000);
	}
	CHECK(0, "not settled: sent %llu, router in %llu out %llu",
	      (unsigned long long)atomic_load(&peers[0].count),
	      (unsigned long long)rt_total_received(rt),
	      (unsigned long long)rt_total_sent(rt));
}

static uint64_t full_drops(const struct rt_router *rt)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < NPORTS * NPORTS; k++)
		n += atomic_load(&rt->qs[k].full);
	return n;
}

static uint64_t queued(const struct rt_router *rt)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < NPORTS * NPORTS; k++)
		n += atomic_load(&rt->qs[k].enq);
	return n;
}

/* Reload under traffic, then one reload whose effect is counted. */
static void reloads(struct rt_router *rt, struct peer *peers,
		    const char *routes, const char *bad)
{
	uint64_t got1, got2;

	/* the traffic in slices, one a reload: a reload waits for every
	 * RX thread, and an idle one comes round only within its poll
	 * timeout, by which time a whole burst would have gone by */
	for (int k = 0; k < RELOADS; k++) {
		atomic_store(&peers[0].target, N_TRAFFIC / RELOADS * (k + 1));
		write_routes(routes, 2 - k % 2);
		CHECK(rt_reload_routes(rt, routes) == 0, "reload %d: %s", k,
		      rt->err);
	}
	while (atomic_load(&peers[0].count) < N_TRAFFIC)
		nap_us(1000);
	settle(rt, peers);
	got1 = atomic_load(&peers[1].count);
	got2 = atomic_load(&peers[2].count);
	printf("  under traffic: %d reloads; port 1 got %llu, port 2 %llu, "
	       "%llu dropped on full queues\n", RELOADS,
	       (unsigned long long)got1, (unsigned long long)got2,
	       (unsigned long long)full_drops(rt));
	CHECK_EQ(got1 + got2 + full_drops(rt), N_TRAFFIC);
	CHECK_EQ(atomic_load(&rt->ports[0].rxs.no_route), 0);

	/* the last reload above said port 1; now port 2, then a bad file
	 * (refused: port 2 stays) */
	write_routes(routes, 2);
	CHECK(rt_reload_routes(rt, routes) == 0, "reload: %s", rt->err);
	write_routes(bad, 7);
	CHECK_EQ(rt_reload_routes(rt, bad), -EINVAL);
	CHECK(strstr(rt->err, bad) && strstr(rt->err, ":2:"),
	      "the error names the file and line: %s", rt->err);
	atomic_store(&peers[0].target, N_TRAFFIC + N_AFTER);
	while (atomic_load(&peers[0].count) < N_TRAFFIC + N_AFTER)
		nap_us(1000);
	settle(rt, peers);
	CHECK_EQ(atomic_load(&peers[1].count), got1);
	CHECK_EQ(atomic_load(&peers[2].count), got2 + N_AFTER);
	printf("  after the last reload: %llu of %llu to port 2, none to 1\n",
	       (unsigned long long)(atomic_load(&peers[2].count) - got2),
	       (unsigned long long)N_AFTER);
}

static void run(unsigned threads)
{
	static struct rt_router rt;
	struct rt_opts o;
	struct peer peers[NPORTS];
	pthread_t pt[NPORTS];
	char names[NPORTS][96], routes[64], bad[64], region[32];
	int pid = (int)getpid();

	snprintf(region, sizeof(region), "trr%d%u", pid, threads);
	snprintf(routes, sizeof(routes), "/tmp/pktmap-rr%d.routes", pid);
	snprintf(bad, sizeof(bad), "/tmp/pktmap-rr%d.bad", pid);
	write_routes(routes, 1);
	memset(&o, 0, sizeof(o));
	memset(peers, 0, sizeof(peers));
	o.nports = NPORTS;
	for (unsigned k = 0; k < NPORTS; k++) {
		snprintf(names[k], sizeof(names[k]), "pipe:rr%d{%u@mem:%s", pid,
			 k, region);
		o.port[k] = names[k];
	}
	o.mode = RT_LPM;
	o.routes = routes;
	o.threads = threads;
	o.queue = 4096;
	CHECK(rt_setup(&rt, &o) == 0, "setup: %s", rt.err);
	for (unsigned k = 0; k < NPORTS; k++) {
		struct pktmap_open_opts po = {.sz = sizeof(po)};

		snprintf(peers[k].name, sizeof(peers[k].name),
			 "pipe:rr%d}%u@mem:%s", pid, k, region);
		peers[k].err = pktmap_open(&peers[k].port, peers[k].name, &po);
		CHECK(peers[k].err == 0, "open %s: %d", peers[k].name,
		      peers[k].err);
	}
	if (peers[0].err || peers[1].err || peers[2].err)
		goto out;
	for (unsigned k = 0; k < NPORTS; k++)
		pthread_create(&pt[k], NULL, k ? receiver : sender, &peers[k]);
	CHECK_EQ(rt_start(&rt), 0);
	reloads(&rt, peers, routes, bad);
	rt_stop(&rt);
	rt_join(&rt);
	rt_account(&rt);
	for (unsigned k = 0; k < NPORTS; k++) {
		atomic_store(&peers[k].stop, 1);
		pthread_join(pt[k], NULL);
	}
	for (unsigned k = 1; k < NPORTS; k++) {
		CHECK_EQ(peers[k].bad, 0);
		CHECK_EQ(peers[k].backwards, 0);
	}
	CHECK(rt.bufs.ok, "buffers not conserved");
	for (unsigned k = 0; k < rt.nthreads; k++)
		CHECK(!rt.th[k].error, "thread %u: %s", k, rt.th[k].err);
out:
	for (unsigned k = 0; k < NPORTS; k++)
		if (peers[k].port)
			pktmap_close(peers[k].port);
	rt_teardown(&rt);
	unlink(routes);
	unlink(bad);
}

/* A reload in another mode than lpm is refused, the router unchanged. */
static void not_lpm(void)
{
	static struct rt_router rt;
	struct rt_opts o;
	char name[96];

	memset(&o, 0, sizeof(o));
	snprintf(name, sizeof(name), "pipe:rn%d{0", (int)getpid());
	o.port[0] = name;
	o.nports = 1;
	o.mode = RT_STATIC;
	CHECK(rt_setup(&rt, &o) == 0, "setup: %s", rt.err);
	CHECK_EQ(rt_reload_routes(&rt, "/nonexistent"), -ENOTSUP);
	CHECK(strstr(rt.err, "mode static") != NULL, "%s", rt.err);
	rt_teardown(&rt);
}

int main(void)
{
	not_lpm();
	run(2);
	run(4);
	return t_done("router_reload");
}
