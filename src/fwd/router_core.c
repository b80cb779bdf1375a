/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Setting the router up and taking it down: ports, stashes, queues,
 * threads; at the end the buffer accounting and giving every buffer back.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stdio.h>

#include "router.h"

/* Say what failed in rt->err; returns err (a negative errno). */
__attribute__((format(printf, 3, 4)))
static int fail(struct rt_router *rt, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rt->err, sizeof(rt->err), fmt, ap);
	va_end(ap);
	return err;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 2;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

/* Take the port's extra buffers off netmap's ni_bufs_head list into the
 * stash. Returns 0 or -errno. */
static int take_stash(struct rt_port *p, uint32_t want)
{
	uint32_t idx = p->nifp->ni_bufs_head, n = 0;

	p->rx.stash = malloc(want * sizeof(*p->rx.stash));
	if (!p->rx.stash)
		return fail(p->rt, -ENOMEM, "out of memory");
	while (idx >= 2 && idx < p->info.bufs && n < want) {
		p->rx.stash[n++] = idx;
		idx = *(uint32_t *)(void *)(p->buf0 + (size_t)idx * p->stride);
	}
	if (n != want) {
		/* leave the list as it was: close() gives them back */
		free(p->rx.stash);
		p->rx.stash = NULL;
		return fail(p->rt, -ENOBUFS, "%s: the port gave %u of the %u "
			    "extra buffers asked for", p->info.name, n, want);
	}
	p->nifp->ni_bufs_head = 0;
	p->rx.nstash = p->rx.total = want;
	return 0;
}

/* Give the stash back as the ni_bufs_head list, for close() to free. */
static void give_stash(struct rt_port *p)
{
	uint32_t head = 0;

	if (!p->rx.stash)
		return;
	for (uint32_t k = p->rx.nstash; k-- > 0;) {
		uint32_t idx = p->rx.stash[k];

		*(uint32_t *)(void *)(p->buf0 + (size_t)idx * p->stride) = head;
		head = idx;
	}
	p->nifp->ni_bufs_head = head;
	free(p->rx.stash);
	p->rx.stash = NULL;
}

static int open_port(struct rt_router *rt, unsigned i)
{
	const struct rt_opts *o = rt->o;
	struct rt_port *p = &rt->ports[i];
	struct pktmap_open_opts oo;
	struct netmap_ring *ring;
	int rc;

	memset(&oo, 0, sizeof(oo));
	oo.sz = sizeof(oo);
	oo.dir = PKTMAP_DIR_BOTH;
	oo.extra_bufs = rt->stash;
	oo.bufs = fwd_region_bufs(o->port, o->nports, i, rt->stash);
	oo.log = o->log;
	oo.log_ctx = o->log_ctx;
	oo.errbuf = rt->err;
	oo.errbuf_len = sizeof(rt->err);
	p->rt = rt;
	p->id = i;
	p->name = o->port[i];
	rc = pktmap_open(&p->port, p->name, &oo);
	if (rc) {
		p->port = NULL;
		if (!rt->err[0])
			fail(rt, rc, "%s: %s", p->name, pktmap_strerror(rc));
		return rc;
	}
	p->info.sz = sizeof(p->info);
	pktmap_info(p->port, &p->info);
	p->nifp = pktmap_nifp(p->port);
	p->rx_lo = p->info.first_rx_ring;
	p->rx_hi = p->info.last_rx_ring;
	p->tx_lo = p->info.first_tx_ring;
	p->tx_hi = p->info.last_tx_ring;
	if (p->rx_hi < p->rx_lo || p->info.rx_slots == 0 ||
	    p->tx_hi < p->tx_lo || p->info.tx_slots == 0) {
		return fail(rt, -EINVAL, "%s: the port must receive and send "
			    "(every port is an input and an output)", p->info.name);
	}
	ring = NETMAP_RXRING(p->nifp, p->rx_lo);
	p->buf0 = (char *)ring + ring->buf_ofs;
	p->stride = ring->nr_buf_size;
	p->usable = p->info.buf_usable;
	return take_stash(p, rt->stash);
}

/* Per-port stage memory. */
static int alloc_stages(struct rt_router *rt, struct rt_port *p)
{
	uint32_t maxslots = p->info.rx_slots;

	p->rx.stage_cap = rt->batch + maxslots;
	p->rx.stage = calloc((size_t)rt->n * p->rx.stage_cap, sizeof(struct rt_desc));
	p->rx.rep = calloc(maxslots, sizeof(uint32_t));
	p->rx.rng = (rt->o->seed ? rt->o->seed : 0x9e3779b97f4a7c15ull) *
		    (2 * p->id + 1);
	p->tx.quantum = rt->batch / rt->n < 64 ? 64 : rt->batch / rt->n;
	if (p->tx.quantum > rt->batch)
		p->tx.quantum = rt->batch;
	p->tx.descs = calloc(p->tx.quantum, sizeof(struct rt_desc));
	p->tx.recycled = calloc(p->tx.quantum, sizeof(uint32_t));
	p->tx.chain_q = -1;
	if (!p->rx.stage || !p->rx.rep || !p->tx.descs || !p->tx.recycled)
		return fail(rt, -ENOMEM, "out of memory");
	return 0;
}

/* Stages to threads: RX stages on the first ceil(T/2) threads, TX
 * stages on the others; one thread runs everything when T = 1. */
static int assign_threads(struct rt_router *rt)
{
	const struct rt_opts *o = rt->o;
	unsigned T = rt->nthreads, R = T == 1 ? 1 : (T + 1) / 2;

	for (unsigned k = 0; k < T; k++) {
		struct rt_thread *t = &rt->th[k];

		t->rt = rt;
		t->id = k;
		t->cpu = o->ncpus ? o->cpus[k % o->ncpus] : -1;
		int rc = fwd_waiter_init(&t->wait);

		if (rc)
			return fail(rt, rc, "cannot create an eventfd: %s",
				    strerror(-rc));
	}
	for (unsigned i = 0; i < rt->n; i++) {
		struct rt_port *p = &rt->ports[i];
		struct rt_thread *rx = &rt->th[i % R];
		struct rt_thread *tx = T == 1 ? &rt->th[0]
					      : &rt->th[R + i % (T - R)];

		p->rx_th = rx;
		p->tx_th = tx;
		rx->rx[rx->nrx++] = p;
		tx->tx[tx->ntx++] = p;
	}
	return 0;
}

int rt_setup(struct rt_router *rt, const struct rt_opts *o)
{
	unsigned n = o->nports;
	int status;

	memset(rt, 0, sizeof(*rt));
	for (unsigned k = 0; k < RT_MAX_THREADS; k++)
		rt->th[k].wait.fd = -1;
	rt->o = o;
	rt->n = n;
	if (n == 0 || n > RT_MAX_PORTS)
		return fail(rt, -EINVAL, "%u ports: 1 to %d", n, RT_MAX_PORTS);
	if (o->threads > 2 * n || o->threads > RT_MAX_THREADS)
		return fail(rt, -EINVAL, "%u threads for %u ports: at most %u "
			    "(one per stage)", o->threads, n, 2 * n);
	if (o->queue & (o->queue - 1))
		return fail(rt, -EINVAL, "queue %u: not a power of two", o->queue);
	if (o->mode == RT_LPM && !o->routes)
		return fail(rt, -EINVAL, "mode lpm needs a routes file");
	for (unsigned i = 0; o->map_set && i < n; i++)
		if ((unsigned)o->map[i] >= n)
			return fail(rt, -EINVAL, "map: output %d of input %u: "
				    "there are %u ports", o->map[i], i, n);
	for (unsigned i = 0; i < o->nouts; i++)
		if ((unsigned)o->outs[i] >= n)
			return fail(rt, -EINVAL, "outputs: port %d: there are "
				    "%u ports", o->outs[i], n);
	unsigned first;
	int again = fwd_repeated_port(o->port, n, &first);

	if (again >= 0)
		return fail(rt, -EINVAL, "%s: repeated port (ports %u and %d "
			    "are one): give each port once", o->port[again],
			    first, again);
	rt->batch = o->batch ? o->batch : 256;
	rt->qcap = o->queue ? o->queue : n <= 4 ? 1024 : n <= 8 ? 512 : 256;
	rt->stash = o->stash ? o->stash : n * rt->qcap + 2 * rt->batch;
	rt->nthreads = o->threads ? o->threads : (n == 1 ? 1 : 2);
	for (unsigned i = 0; i < n; i++)
		rt->static_out[i] = o->map_set ? o->map[i] : (int)((i + 1) % n);
	rt->nouts = o->nouts ? o->nouts : n;
	for (unsigned i = 0; i < rt->nouts; i++)
		rt->outs[i] = o->nouts ? o->outs[i] : (int)i;

	if (o->mode == RT_LPM) {
		struct rt_route *routes = NULL;
		uint32_t nr = 0;
		char err[512];
		int rc;

		if (rt_lpm_read(o->routes, n, &routes, &nr, err, sizeof(err)))
			return fail(rt, -EINVAL, "routes: %s", err);
		rc = rt_lpm_build(&rt->lpm, routes, nr);
		free(routes);
		if (rc)
			return fail(rt, rc == -ENOSPC ? -EINVAL : rc, "%s: %s",
				    o->routes,
				    rc == -ENOSPC ? "too many prefixes longer than /24 "
						    "(at most 32768 /24s with longer ones)"
						  : "out of memory");
	}
	rt->lpm_live = &rt->lpm;
	atomic_store_explicit(&rt->lpm_next, &rt->lpm, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		rt->ports[i].rx.lpm = &rt->lpm;
	if (o->mode == RT_L2 && rt_l2_init(rt))
		return fail(rt, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < n; i++) {
		status = open_port(rt, i);
		if (status)
			return status;
	}
	rt->all_zc = true;
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < n; j++) {
			rt->zc[i][j] = !o->copy && fwd_same_region(&rt->ports[i].info,
								   &rt->ports[j].info);
			if (i == j && n > 1)
				continue; /* says nothing of the pairs */
			rt->all_zc &= rt->zc[i][j];
			rt->any_zc |= rt->zc[i][j];
		}
	}
	rt->qs = aligned_alloc(64, (size_t)n * n * sizeof(*rt->qs));
	if (!rt->qs)
		return fail(rt, -ENOMEM, "out of memory");
	memset(rt->qs, 0, (size_t)n * n * sizeof(*rt->qs));
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < n; j++) {
			/* rec[j][i] holds at most the buffers i owns */
			rt->fwd[i][j] = pktmap_spsc_create(rt->qcap, sizeof(struct rt_desc));
			rt->rec[j][i] = pktmap_spsc_create(pow2_at_least(rt->stash),
						       sizeof(uint32_t));
			if (!rt->fwd[i][j] || !rt->rec[j][i])
				return fail(rt, -ENOMEM, "out of memory for the "
					    "queues");
		}
		status = alloc_stages(rt, &rt->ports[i]);
		if (status)
			return status;
	}
	return assign_threads(rt);
}

int rt_start(struct rt_router *rt)
{
	sigset_t block, old;
	int status = 0;

	rt->t_start = fwd_now_ns();
	/* Only the main thread takes SIGINT/SIGTERM (and SIGHUP, reload). */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (unsigned k = 0; k < rt->nthreads; k++) {
		struct rt_thread *t = &rt->th[k];
		int rc = pthread_create(&t->tid, NULL, rt_thread_main, t);

		if (rc) {
			atomic_store_explicit(&rt->stop, 1, memory_order_relaxed);
			status = fail(rt, -rc, "cannot start thread %u: %s", k,
				      strerror(rc));
			break;
		}
		t->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}

void rt_stop(struct rt_router *rt)
{
	atomic_store_explicit(&rt->stop, 1, memory_order_relaxed);
	for (unsigned k = 0; k < rt->nthreads; k++)
		fwd_wake_always(&rt->th[k].wait);
}

uint64_t rt_total_sent(const struct rt_router *rt)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < rt->n; i++)
		t += atomic_load_explicit(&rt->ports[i].txs.packets,
					  memory_order_relaxed);
	return t;
}

uint64_t rt_total_received(const struct rt_router *rt)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < rt->n; i++)
		t += atomic_load_explicit(&rt->ports[i].rxs.packets,
					  memory_order_relaxed);
	return t;
}

void rt_join(struct rt_router *rt)
{
	for (unsigned k = 0; k < rt->nthreads; k++)
		if (rt->th[k].started)
			pthread_join(rt->th[k].tid, NULL);
	rt->t_first = rt->t_last = 0;
	for (unsigned k = 0; k < rt->nthreads; k++) {
		uint64_t f = rt->th[k].t_first, l = rt->th[k].t_last;

		if (f && (!rt->t_first || f < rt->t_first))
			rt->t_first = f;
		if (l > rt->t_last)
			rt->t_last = l;
	}
}

/* The threads are gone: send what the TX rings still hold, for up to a
 * second in all (a peer that reads nothing keeps it). */
static void flush_tx(struct rt_router *rt)
{
	uint64_t end = fwd_now_ns() + 1000000000ull;

	for (;;) {
		struct pktmap_pollreq q[RT_MAX_PORTS];
		unsigned nq = 0;
		uint64_t now;

		for (unsigned i = 0; i < rt->n; i++) {
			struct rt_port *p = &rt->ports[i];
			struct pktmap_info info = {.sz = sizeof(info)};
			bool left = false;

			for (uint32_t r = p->tx_lo; r <= p->tx_hi; r++)
				left |= fwd_tx_pending(NETMAP_TXRING(p->nifp, r)) != 0;
			pktmap_info(p->port, &info);
			if (left && !(info.flags & PKTMAP_INFO_PEER_GONE))
				q[nq++] = (struct pktmap_pollreq){
					.port = p->port, .events = POLLOUT};
		}
		now = fwd_now_ns();
		if (!nq || now >= end)
			break;
		/* the threads are gone: this thread owns every ring now */
		if (pktmap_poll_many(q, nq, (int)((end - now) / 1000000u) + 1) < 0)
			break;
	}
	for (unsigned i = 0; i < rt->n; i++) {
		struct rt_port *p = &rt->ports[i];

		p->tx_left = 0;
		for (uint32_t r = p->tx_lo; r <= p->tx_hi; r++)
			p->tx_left += fwd_tx_pending(NETMAP_TXRING(p->nifp, r));
		pktmap_rxsync(p->port); /* give the last RX slots back */
		p->lib.sz = sizeof(p->lib);
		pktmap_stats(p->port, &p->lib);
	}
}

/* Mark idx in the bitmap of its region; count bad and duplicate ones. */
static void mark(uint8_t *map, uint32_t nbufs, uint32_t idx, struct rt_bufs *b)
{
	if (idx < 2 || idx >= nbufs) {
		b->bad++;
		return;
	}
	if (map[idx >> 3] & (1u << (idx & 7)))
		b->duplicate++;
	map[idx >> 3] |= (uint8_t)(1u << (idx & 7));
}

void rt_account(struct rt_router *rt)
{
	struct rt_bufs *b = &rt->bufs;
	uint8_t *map[RT_MAX_PORTS] = {0};
	unsigned n = rt->n;

	flush_tx(rt);
	memset(b, 0, sizeof(*b));
	/* Where every buffer is, before anything moves. */
	for (unsigned i = 0; i < n; i++) {
		b->total += rt->ports[i].rx.total;
		b->free += rt->ports[i].rx.nstash;
		for (unsigned o = 0; o < n; o++) {
			b->fwd_queued += pktmap_spsc_count(rt->fwd[i][o]);
			b->recycling += pktmap_spsc_count(rt->rec[o][i]);
		}
	}
	/* Then every queue back into its input's stash: a descriptor still
	 * queued is a packet dropped at exit. */
	for (unsigned i = 0; i < n; i++) {
		struct rt_port *p = &rt->ports[i];

		for (unsigned o = 0; o < n; o++) {
			struct rt_desc d;
			uint32_t idx;

			while (pktmap_spsc_dequeue(rt->fwd[i][o], &d, 1)) {
				b->dropped_at_exit++;
				if (p->rx.nstash < p->rx.total)
					p->rx.stash[p->rx.nstash++] = d.idx;
				else
					b->bad++;
			}
			while (pktmap_spsc_dequeue(rt->rec[o][i], &idx, 1)) {
				if (p->rx.nstash < p->rx.total)
					p->rx.stash[p->rx.nstash++] = idx;
				else
					b->bad++;
			}
		}
	}
	/* No index twice, in any region. */
	for (unsigned i = 0; i < n; i++) {
		struct rt_port *p = &rt->ports[i];
		unsigned home = i;

		for (unsigned k = 0; k < i; k++)
			if (fwd_same_region(&rt->ports[k].info, &p->info)) {
				home = k;
				break;
			}
		if (!map[home])
			map[home] = calloc((p->info.bufs + 7) / 8, 1);
		if (!map[home]) {
			b->bad++;
			continue;
		}
		for (uint32_t k = 0; k < p->rx.nstash; k++)
			mark(map[home], p->info.bufs, p->rx.stash[k], b);
	}
	for (unsigned i = 0; i < n; i++)
		free(map[i]);
	uint64_t now = 0;

	for (unsigned i = 0; i < n; i++)
		now += rt->ports[i].rx.nstash;
	b->ok = b->free + b->fwd_queued + b->recycling == b->total &&
		now == b->total && !b->bad && !b->duplicate;
}

void rt_teardown(struct rt_router *rt)
{
	for (unsigned i = 0; i < rt->n; i++) {
		struct rt_port *p = &rt->ports[i];

		if (p->port) {
			give_stash(p);
			pktmap_close(p->port);
		}
		free(p->rx.stash);
		free(p->rx.stage);
		free(p->rx.rep);
		free(p->tx.descs);
		free(p->tx.recycled);
		for (unsigned j = 0; j < rt->n; j++) {
			pktmap_spsc_free(rt->fwd[i][j]);
			pktmap_spsc_free(rt->rec[i][j]);
		}
	}
	for (unsigned k = 0; k < RT_MAX_THREADS; k++)
		if (rt->th[k].wait.fd >= 0)
			fwd_waiter_fini(&rt->th[k].wait);
	free(rt->qs);
	rt_reload_free(rt);
	rt_lpm_free(&rt->lpm);
	rt_l2_free(rt);
}
