/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The router's threads: each runs its stages in turn (router_stage.c)
 * and waits when a round did nothing.
 *
 * Waiting. An RX-only thread, and a thread that runs both stages of its
 * ports (--threads 1), sleep in pktmap_poll_many() on their inputs
 * (POLLIN) and on their blocked outputs (POLLOUT). A TX-only thread
 * sleeps on its eventfd, woken by the RX stages that queue work for it
 * (fwd.h's waiter); when an output has queued work but no TX room (a slow
 * or stalled peer) it sleeps in pktmap_poll_many(POLLOUT) on those
 * outputs instead, woken when the back end frees room. Polling one
 * direction of a port while another thread polls the other is safe for
 * pipes (each direction has its own wake-up); other back ends share one
 * event source per port, so there the TX-only thread polls only ports
 * whose RX stage it also runs, and otherwise rechecks every
 * RT_RECHECK_US. An output whose TX ring holds frames the back end has not
 * taken yet (pending) but has room is synced again every RT_RECHECK_US
 * (an AF_XDP socket may need another kick).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "router.h"
#include "util.h"

/* Here, below router_core.c (which starts the threads), so that the
 * threads' loop does not call back up into it. */
bool rt_stopping(const struct rt_router *rt)
{
	return fwd_stopping(&rt->stop, rt->o ? rt->o->stop : NULL);
}

/* How long a TX-only thread sleeps on its eventfd while some outputs are
 * blocked or hold frames the back end has not taken, before it looks at
 * them again. */
#define RT_RECHECK_US 200

/* Work waits for TX room on this output. */
static bool tx_blocked(const struct rt_port *p)
{
	return rt_tx_space(p) == 0 && rt_tx_queued(p);
}

/* Can this thread sleep in POLLOUT on p while another thread may poll
 * p's RX side? */
static bool pollout_ok(const struct rt_thread *t, const struct rt_port *p)
{
	return p->rx_th == t || strcmp(p->info.backend, "pipe") == 0;
}

/* Sleep in the library's poll: for RX packets on this thread's inputs,
 * and for TX room on its blocked outputs. */
static int wait_ports(struct rt_thread *t)
{
	struct rt_router *rt = t->rt;
	struct pktmap_pollreq q[RT_MAX_PORTS];
	unsigned nq = 0;

	for (unsigned o = 0; o < rt->n; o++) {
		struct rt_port *p = &rt->ports[o];
		short ev = 0;

		if (p->rx_th == t)
			ev |= POLLIN;
		/* (pending frames with room would make POLLOUT ready at
		 * once: only a thread that runs everything waits on them) */
		if (p->tx_th == t && pollout_ok(t, p) &&
		    (tx_blocked(p) || (rt->nthreads == 1 && rt_tx_pending(p))))
			ev |= POLLOUT;
		if (ev)
			q[nq++] = (struct pktmap_pollreq){.port = p->port,
							  .events = ev};
	}
	if (!nq)
		return 0;
	return pktmap_poll_many(q, nq, FWD_POLL_MS);
}

/* A TX-only thread with nothing to do. */
static int wait_queues(struct rt_thread *t)
{
	struct pktmap_pollreq q[RT_MAX_PORTS];
	unsigned nq = 0;
	bool recheck = false, others = false, work = false;

	for (unsigned k = 0; k < t->ntx; k++) {
		struct rt_port *p = t->tx[k];

		if (tx_blocked(p) && pollout_ok(t, p))
			q[nq++] = (struct pktmap_pollreq){.port = p->port,
							  .events = POLLOUT};
		else if (tx_blocked(p) || rt_tx_pending(p))
			recheck = true;
		else
			others = true;
	}
	if (nq && !recheck && !others)
		/* Every output waits for room: nothing else can be done
		 * until the back end frees some. */
		return pktmap_poll_many(q, nq, FWD_POLL_MS) < 0 ? -EIO : 0;
	/* Others may get work meanwhile: sleep where the RX stages wake us,
	 * and look at the blocked ones again soon. */
	fwd_waiter_arm(&t->wait);
	for (unsigned k = 0; k < t->ntx && !work; k++)
		work = rt_tx_space(t->tx[k]) && rt_tx_queued(t->tx[k]);
	if (work || rt_stopping(t->rt)) {
		fwd_waiter_disarm(&t->wait);
		return 0;
	}
	fwd_wait(&t->wait, nq || recheck ? RT_RECHECK_US : FWD_POLL_MS * 1000);
	return 0;
}

/* Once a round: move this thread's RX stages to the routes table a
 * reload published (router_reload.c), and say so. */
static void rt_lpm_adopt(struct rt_thread *t)
{
	struct rt_router *rt = t->rt;
	/* pairs with the release store of the generation in
	 * rt_reload_routes(), router_reload.c */
	uint32_t g = atomic_load_explicit(&rt->lpm_gen, memory_order_acquire);
	const struct rt_lpm *l;

	if (pm_likely(g == t->lpm_gen))
		return;
	l = atomic_load_explicit(&rt->lpm_next, memory_order_relaxed);
	for (unsigned k = 0; k < t->nrx; k++)
		t->rx[k]->rx.lpm = l;
	t->lpm_gen = g;
	/* pairs with the acquire load in router_reload.c's moved(): every
	 * read of the old table by this thread's stages happened before */
	atomic_store_explicit(&t->lpm_seen, g, memory_order_release);
}

void *rt_thread_main(void *arg)
{
	struct rt_thread *t = arg;
	struct rt_router *rt = t->rt;
	uint64_t busy = 0, rxs = 0, txs = 0;
	struct fwd_span span = {0};
	int rc;

	rc = fwd_pin(t->cpu);
	if (rc) {
		t->error = -rc;
		snprintf(t->err, sizeof(t->err), "router: cannot pin thread %u "
			 "to CPU %d: %s", t->id, t->cpu, strerror(rc));
		atomic_store_explicit(&rt->stop, 1, memory_order_relaxed);
		return NULL;
	}
	while (!rt_stopping(rt)) {
		uint64_t c0 = fwd_cycles();
		uint32_t work = 0, w;

		fwd_span_round(&span);
		rt_lpm_adopt(t);
		for (unsigned k = 0; k < t->nrx; k++) {
			w = rt_rx_step(t->rx[k]);
			rxs += w;
			work += w;
		}
		for (unsigned k = 0; k < t->ntx; k++) {
			w = rt_tx_step(t->tx[k]);
			txs += w;
			work += w;
		}
		if (pm_unlikely(t->error)) {
			atomic_store_explicit(&rt->stop, 1, memory_order_relaxed);
			break;
		}
		if (work) {
			uint64_t now = fwd_now_ns();

			busy += fwd_cycles() - c0;
			fwd_pub(&t->busy_cycles, busy);
			fwd_pub(&t->rx_slots, rxs);
			fwd_pub(&t->tx_slots, txs);
			if (pm_unlikely(!atomic_load_explicit(&t->t_first,
							   memory_order_relaxed)))
				fwd_pub(&t->t_first, now);
			fwd_pub(&t->t_last, now);
			fwd_span_busy(&span);
			continue;
		}
		fwd_span_close(&span);
		fwd_pub(&t->busy_cpu_ns, span.total);
		if (t->ntx && !t->nrx)
			rc = wait_queues(t);
		else
			rc = wait_ports(t);
		if (rc < 0) {
			t->error = rc;
			snprintf(t->err, sizeof(t->err), "router: poll failed: %s",
				 pktmap_strerror(rc));
			atomic_store_explicit(&rt->stop, 1, memory_order_relaxed);
			break;
		}
	}
	fwd_span_close(&span);
	fwd_pub(&t->busy_cpu_ns, span.total);
	for (unsigned k = 0; k < t->nrx; k++)
		rt_rx_publish(t->rx[k]);
	for (unsigned k = 0; k < t->ntx; k++)
		rt_tx_publish(t->tx[k]);
	return NULL;
}
