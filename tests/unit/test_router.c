// SPDX-License-Identifier: BSD-2-Clause
/* The forwarding component's router (src/fwd/router*.c), driven directly
 * as a library: its buffer protocol, in one process and
 * under stress: three ports over pipes in one region, a peer thread on the
 * far end of each that sends numbered frames and receives (sometimes
 * slowly, sometimes not at all for a while), queues and stashes made small
 * so that queues fill, frames are dropped and inputs run out of buffers
 * and wait for the recycle queues. The stress is made to happen, not
 * waited for: the last peer receives nothing until a queue of the router
 * has been full (its port's pipe fills, then the router's queues to it),
 * so a queue fills whatever the machine's speed or load. Checked: per stream the sequence
 * numbers a peer receives only go up (no reordering, no duplicates, no
 * foreign frame), the counters add up, and at exit every buffer is
 * accounted for (free + in flight = total, no index twice). Run it under
 * ThreadSanitizer too: the queues are the only thing the threads share. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "router.h"
#include "t.h"

#define NPORTS 3
#define PER_PEER 100000ull

struct peer {
	unsigned id;
	char name[96];
	uint64_t sent, received, bad, backwards;
	uint64_t next[NPORTS]; /* per stream: lowest seq still possible */
	atomic_int done_sending;
	atomic_int stop;
	int err;
	const struct rt_router *rt;
};

/* Peers that sent all their frames (reset by each run). */
static atomic_uint senders_done;

/* Has any queue of the router been full? Until then the last peer holds
 * its reception: its port's pipe fills, the router can send no more to
 * it, and the queues to that port fill (the others drain, so an input's
 * stash, 160 buffers, outlasts one queue of 64), however fast or slow the
 * threads run (no timing involved). It lets go once all peers have sent
 * every frame, so a router that never fills a queue fails the check in
 * run() instead of hanging. */
static bool stress_done(const struct peer *p)
{
	const struct rt_router *rt = p->rt;

	for (unsigned k = 0; k < NPORTS * NPORTS; k++)
		if (atomic_load(&rt->qs[k].full))
			return true;
	return atomic_load(&senders_done) == NPORTS;
}

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
}

static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};

	nanosleep(&ts, NULL);
}

static void receive(struct peer *p, struct netmap_ring *rx)
{
	while (!nm_ring_empty(rx)) {
		struct netmap_slot *s = &rx->slot[rx->head];
		const char *b = NETMAP_BUF(rx, s->buf_idx);
		uint32_t stream;
		uint64_t seq;

		memcpy(&stream, b, 4);
		memcpy(&seq, b + 8, 8);
		if (s->len != 60 || stream >= NPORTS) {
			p->bad++;
		} else {
			if (seq < p->next[stream])
				p->backwards++;
			p->next[stream] = seq + 1;
		}
		p->received++;
		rx->head = rx->cur = nm_ring_next(rx, rx->head);
	}
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	struct pktmap_open_opts o = {.sz = sizeof(o)};
	struct pktmap_port *port;
	uint64_t rs = 0x9e3779b97f4a7c15ull * (p->id + 1);
	bool stressed = p->id != NPORTS - 1;

	if (pktmap_open(&port, p->name, &o)) {
		p->err = 1;
		return NULL;
	}
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(port), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(port), 0);

	while (!atomic_load(&p->stop)) {
		uint32_t burst = 1 + rnd(&rs) % 128;

		while (burst-- && p->sent < PER_PEER && !nm_ring_empty(tx)) {
			struct netmap_slot *s = &tx->slot[tx->head];
			char *b = NETMAP_BUF(tx, s->buf_idx);
			uint32_t stream = p->id;

			memcpy(b, &stream, 4);
			memcpy(b + 8, &p->sent, 8);
			s->len = 60;
			s->flags = 0;
			p->sent++;
			tx->head = tx->cur = nm_ring_next(tx, tx->head);
		}
		pktmap_txsync(port);
		if (p->sent == PER_PEER && !atomic_load(&p->done_sending)) {
			atomic_store(&p->done_sending, 1);
			atomic_fetch_add(&senders_done, 1);
		}
		if (!stressed) {
			/* The last peer receives nothing until a queue has
			 * been full (stress_done()); it keeps sending. */
			stressed = stress_done(p);
			if (!stressed) {
				if (p->sent == PER_PEER || nm_ring_empty(tx))
					nap_us(1000); /* wait for the router */
				continue;
			}
		}
		/* peer 2 reads slowly; every peer sometimes not at all */
		if (rnd(&rs) % 8 != 0 || p->id != 2) {
			pktmap_rxsync(port);
			receive(p, rx);
		}
		if (rnd(&rs) % 512 == 0)
			nap_us(rnd(&rs) % 3000);
		else if (p->sent == PER_PEER)
			pktmap_poll(port, POLLIN, 5);
	}
	pktmap_rxsync(port);
	receive(p, rx);
	pktmap_rxsync(port);
	pktmap_close(port);
	return NULL;
}

/* With two processes running at once (concurrent()): each tells the
 * other when its router is set up and waits to hear the same, so that
 * both have their pipes open before either sends. */
static int meet_fd[2] = { -1, -1 };

static void meet(void)
{
	char c = 1;

	if (meet_fd[0] < 0)
		return;
	CHECK_EQ(write(meet_fd[1], &c, 1), 1);
	CHECK_EQ(read(meet_fd[0], &c, 1), 1);
}

static void run(unsigned threads, enum rt_mode mode)
{
	char region[32];
	static struct rt_router rt;
	struct rt_opts o;
	atomic_int stop = 0;
	struct peer peers[NPORTS];
	pthread_t pt[NPORTS];
	char names[NPORTS][96];

	snprintf(region, sizeof(region), "trt%d%u%d", (int)getpid(), threads,
		 (int)mode);
	memset(&o, 0, sizeof(o));
	o.nports = NPORTS;
	for (unsigned k = 0; k < NPORTS; k++) {
		snprintf(names[k], sizeof(names[k]), "pipe:q%d{%u@mem:%s",
			 (int)getpid(), k, region);
		o.port[k] = names[k];
	}
	o.mode = mode;
	o.threads = threads;
	o.batch = 32;
	o.queue = 64;      /* queues fill up */
	o.stash = 160;     /* < 3 x 64 + 2 x 32: inputs can run dry */
	/* Odd runs stop through the caller's flag, even ones with rt_stop(). */
	o.stop = threads % 2 ? &stop : NULL;
	CHECK(rt_setup(&rt, &o) == 0, "setup: %s", rt.err);
	meet();
	atomic_store(&senders_done, 0);
	for (unsigned k = 0; k < NPORTS; k++) {
		memset(&peers[k], 0, sizeof(peers[k]));
		peers[k].id = k;
		peers[k].rt = &rt;
		snprintf(peers[k].name, sizeof(peers[k].name),
			 "pipe:q%d}%u@mem:%s", (int)getpid(), k, region);
		pthread_create(&pt[k], NULL, peer_main, &peers[k]);
	}
	CHECK_EQ(rt_start(&rt), 0);
	for (unsigned k = 0; k < NPORTS; k++)
		while (!atomic_load(&peers[k].done_sending) && !peers[k].err)
			nap_us(1000);
	nap_us(200000); /* let the queues drain (not all: peer 2 dawdles) */
	if (o.stop) {
		atomic_store(&stop, 1);
		/* the threads notice the caller's flag by themselves: rt_join
		 * returns (else the test times out) with the router's own
		 * flag (rt_stop() or a thread's error) never raised */
		rt_join(&rt);
		CHECK(!atomic_load(&rt.stop), "stopped by the caller's flag, "
		      "not by its own");
	} else {
		rt_stop(&rt);
		rt_join(&rt);
	}
	rt_account(&rt);
	for (unsigned k = 0; k < NPORTS; k++) {
		atomic_store(&peers[k].stop, 1);
		pthread_join(pt[k], NULL);
	}

	uint64_t in = rt_total_received(&rt), out = rt_total_sent(&rt), got = 0;
	uint64_t enq = 0, full = 0, other = 0;

	for (unsigned k = 0; k < NPORTS; k++) {
		struct peer *p = &peers[k];

		CHECK(!p->err, "peer %u could not open %s", k, p->name);
		CHECK_EQ(p->sent, PER_PEER);
		CHECK_EQ(p->bad, 0);
		CHECK_EQ(p->backwards, 0);
		got += p->received;
		other += atomic_load(&rt.ports[k].rxs.no_route) +
			 atomic_load(&rt.ports[k].rxs.filtered) +
			 atomic_load(&rt.ports[k].rxs.ttl) +
			 atomic_load(&rt.ports[k].rxs.not_ip);
		for (unsigned j = 0; j < NPORTS; j++) {
			enq += atomic_load(&rt.qs[k * NPORTS + j].enq);
			full += atomic_load(&rt.qs[k * NPORTS + j].full);
		}
	}
	printf("  %u threads, %s: router in %llu, queued %llu, full %llu, "
	       "out %llu; peers got %llu; buffers %llu = %llu free + %llu "
	       "queued + %llu recycling; %llu dropped at exit\n", threads,
	       rt_mode_name(mode), (unsigned long long)in,
	       (unsigned long long)enq, (unsigned long long)full,
	       (unsigned long long)out, (unsigned long long)got,
	       (unsigned long long)rt.bufs.total,
	       (unsigned long long)rt.bufs.free,
	       (unsigned long long)rt.bufs.fwd_queued,
	       (unsigned long long)rt.bufs.recycling,
	       (unsigned long long)rt.bufs.dropped_at_exit);
	CHECK_EQ(in, NPORTS * PER_PEER);
	if (mode != RT_L2)
		CHECK_EQ(enq + full + other, in);   /* each frame once */
	else /* a flooded frame is queued (or dropped) once per output */
		CHECK(enq + full + other >= in, "frames lost in the RX stage");
	/* Totals: a frame queued is sent or still queued at exit; a pipe
	 * loses nothing, so the peers (which drain their rings after the
	 * router stopped) got every frame sent. */
	CHECK(enq == out + rt.bufs.dropped_at_exit,
	      "queued %llu != sent %llu + dropped at exit %llu",
	      (unsigned long long)enq, (unsigned long long)out,
	      (unsigned long long)rt.bufs.dropped_at_exit);
	CHECK(got == out, "peers got %llu, the router sent %llu",
	      (unsigned long long)got, (unsigned long long)out);
	CHECK(full > 0, "no queue ever filled: the stress did not happen");
	CHECK(rt.bufs.ok, "buffers not conserved");
	CHECK_EQ(rt.bufs.duplicate, 0);
	CHECK_EQ(rt.bufs.bad, 0);
	CHECK_EQ(rt.bufs.total, NPORTS * 160);
	for (unsigned k = 0; k < rt.nthreads; k++)
		CHECK(!rt.th[k].error, "thread %u: %s", k, rt.th[k].err);
	rt_teardown(&rt);
}

/* Errors come back as -errno and one line in rt->err; nothing is left
 * open. */
static void setup_errors(void)
{
	static struct rt_router rt;
	struct rt_opts o;
	char name[96];

	memset(&o, 0, sizeof(o));
	o.nports = 1;
	o.port[0] = "nosuch:x";
	CHECK_EQ(rt_setup(&rt, &o), -EINVAL);
	CHECK(strstr(rt.err, "nosuch") != NULL, "error names the port: %s", rt.err);
	rt_teardown(&rt);

	snprintf(name, sizeof(name), "pipe:e%d{0", (int)getpid());
	o.port[0] = name;
	o.mode = RT_LPM;
	CHECK_EQ(rt_setup(&rt, &o), -EINVAL);
	CHECK(strstr(rt.err, "routes") != NULL, "needs routes: %s", rt.err);
	rt_teardown(&rt);

	/* one port twice: refused before anything is opened */
	o.mode = RT_STATIC;
	o.nports = 2;
	o.port[1] = name;
	CHECK_EQ(rt_setup(&rt, &o), -EINVAL);
	CHECK(strstr(rt.err, "repeated port") != NULL, "repeated: %s", rt.err);
	rt_teardown(&rt);
	o.nports = 1;
	o.mode = RT_LPM;

	o.routes = "/nonexistent/routes";
	CHECK_EQ(rt_setup(&rt, &o), -EINVAL);
	CHECK(strstr(rt.err, "/nonexistent/routes") != NULL, "names the file: %s",
	      rt.err);
	rt_teardown(&rt);

	o.mode = RT_STATIC;
	o.routes = NULL;
	o.nports = 0;
	CHECK_EQ(rt_setup(&rt, &o), -EINVAL);
	rt_teardown(&rt);
	/* the pipe was opened and closed: a fresh open of the same end works */
	struct pktmap_port *p;
	struct pktmap_open_opts oo = {.sz = sizeof(oo)};
	CHECK_EQ(pktmap_open(&p, name, &oo), 0);
	pktmap_close(p);
}

/* Two copies at once, as two runs of the suite do: each process names
 * its own memory and pipes (with its pid), and both routers forward,
 * their pipes open at the same time, with every frame and buffer
 * accounted for in each. */
static void concurrent(void)
{
	int ab[2], ba[2];

	CHECK(pipe(ab) == 0 && pipe(ba) == 0, "pipe: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();

	CHECK(pid >= 0, "fork: %s", strerror(errno));
	/* Each keeps only its ends: a process that dies ends the other's
	 * wait (read() returns 0, a failed check) rather than hanging it. */
	if (pid == 0) {
		close(ab[1]);
		close(ba[0]);
		meet_fd[0] = ab[0];
		meet_fd[1] = ba[1];
		t_checks = t_failed = 0; /* its own checks only */
		run(2, RT_RANDOM);
		_exit(t_done("router (second process)") == 0 ? 0 : 1);
	}
	close(ab[0]);
	close(ba[1]);
	meet_fd[0] = ba[0];
	meet_fd[1] = ab[1];
	run(2, RT_RANDOM);
	int st = 0;

	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the second process failed (status %#x)", st);
	meet_fd[0] = meet_fd[1] = -1;
	close(ab[1]);
	close(ba[0]);
}

int main(void)
{
	setup_errors();
	run(2, RT_RANDOM);
	run(1, RT_STATIC);
	run(4, RT_HASH);
	run(6, RT_L2);
	concurrent();
	return t_done("router");
}
