/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The router's threads: each runs its stages in turn (router_stage.c)
 * and waits when a round did nothing.
 *
 * Waiting: an RX-only thread sleeps in pktmap_poll_many() on its inputs.
 * A TX-only thread sleeps on its eventfd, woken by the RX stages that
 * queue work for it (fwd.h's waiter); when an output has work but no TX
 * room (a slow or stalled peer) it retries for 20 us and then every
 * 200 us. (Pipes now wake each direction on its own, so sleeping in
 * pktmap_poll_many() with POLLOUT would also work: a follow-up.) A
 * thread that runs both stages of every port (--threads 1) waits in
 * pktmap_poll_many() for RX packets and TX room together.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "router.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

/* How long a TX-only thread whose outputs are blocked keeps retrying
 * before it sleeps, and how long it then sleeps. */
#define RT_SPIN_NS 20000ull
#define RT_BLOCKED_SLEEP_US 200

static inline bool rt_stopping(struct rt_router *rt)
{
	return run_stopping() ||
	       atomic_load_explicit(&rt->stop, memory_order_relaxed);
}

/* Work waits for TX room on one of this thread's outputs. */
static bool tx_blocked(const struct rt_port *p)
{
	return rt_tx_pending(p) || (rt_tx_space(p) == 0 && rt_tx_queued(p));
}

/* Sleep in the library's poll: for RX packets on this thread's inputs,
 * and for TX room on its outputs that wait for some (only when the
 * thread owns both halves of those ports). */
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
		if (p->tx_th == t && t->own_inputs && tx_blocked(p))
			ev |= POLLOUT;
		if (ev)
			q[nq++] = (struct pktmap_pollreq){.port = p->port,
							  .events = ev};
	}
	if (!nq)
		return 0;
	return pktmap_poll_many(q, nq, RUN_POLL_MS);
}

/* A TX-only thread with nothing to do: sleep until an RX stage queues
 * work for it; with an output blocked, retry for a while, then sleep
 * RT_BLOCKED_SLEEP_US at a time. */
static void wait_queues(struct rt_thread *t)
{
	bool blocked = false, work = false;
	uint64_t now = stats_now_ns();

	for (unsigned k = 0; k < t->ntx; k++)
		blocked |= tx_blocked(t->tx[k]);
	if (blocked) {
		if (!t->idle_since)
			t->idle_since = now;
		if (now - t->idle_since < RT_SPIN_NS)
			return;
	}
	fwd_waiter_arm(&t->wait);
	for (unsigned k = 0; k < t->ntx && !work; k++)
		work = rt_tx_space(t->tx[k]) && rt_tx_queued(t->tx[k]);
	if (work || rt_stopping(t->rt)) {
		fwd_waiter_disarm(&t->wait);
		return;
	}
	fwd_wait(&t->wait, blocked ? RT_BLOCKED_SLEEP_US : RUN_POLL_MS * 1000);
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
		atomic_store(&rt->stop, 1);
		return NULL;
	}
	while (!rt_stopping(rt)) {
		uint64_t c0 = fwd_cycles();
		uint32_t work = 0, w;

		fwd_span_round(&span);
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
		if (unlikely(t->error)) {
			atomic_store(&rt->stop, 1);
			break;
		}
		if (work) {
			uint64_t now = stats_now_ns();

			busy += fwd_cycles() - c0;
			run_pub(&t->busy_cycles, busy);
			run_pub(&t->rx_slots, rxs);
			run_pub(&t->tx_slots, txs);
			if (unlikely(!atomic_load_explicit(&t->t_first,
							   memory_order_relaxed)))
				run_pub(&t->t_first, now);
			run_pub(&t->t_last, now);
			t->idle_since = 0;
			fwd_span_busy(&span);
			continue;
		}
		fwd_span_close(&span);
		run_pub(&t->busy_cpu_ns, span.total);
		if (t->ntx && !t->nrx) {
			wait_queues(t);
			continue;
		}
		rc = wait_ports(t);
		if (rc < 0) {
			t->error = rc;
			snprintf(t->err, sizeof(t->err), "router: poll failed: %s",
				 pktmap_strerror(rc));
			atomic_store(&rt->stop, 1);
			break;
		}
	}
	fwd_span_close(&span);
	run_pub(&t->busy_cpu_ns, span.total);
	for (unsigned k = 0; k < t->nrx; k++)
		rt_rx_publish(t->rx[k]);
	for (unsigned k = 0; k < t->ntx; k++)
		rt_tx_publish(t->tx[k]);
	return NULL;
}
