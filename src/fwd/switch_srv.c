/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch component (switch_srv.h): its set-up and tear-down, the
 * main loop, and with threads the forwarding threads and their
 * park/unpark protocol. The control socket is switch_ctl.c's, the ports
 * switch_ports.c's, the data path switch.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fwd.h"
#include "switch_srv.h"

/* Set up thread t's context (t > 0): the shared table, aged by thread 0,
 * and a wake-up eventfd. */
static int setup_thread(struct sws *s, const struct sw_cfg *cfg, unsigned t)
{
	struct sw_cfg tc = *cfg;
	tc.no_tick = true;
	s->xs[t] = calloc(1, sizeof(struct sw));
	s->wake[t] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!s->xs[t] || s->wake[t] < 0 || sw_init(s->xs[t], &tc)) {
		free(s->xs[t]);
		s->xs[t] = NULL;
		snprintf(s->err, sizeof(s->err), "switch %s: cannot set up "
			 "thread %u", s->o.name, t);
		return -ENOMEM;
	}
	s->nthreads = t + 1;
	return 0;
}

/* Every thread's context; with threads, one MAC table for all. */
static int setup_contexts(struct sws *s)
{
	struct sw_cfg cfg = { .mac_entries = s->o.mac_entries,
			      .aging_ms = s->o.aging_ms };
	if (s->o.nthreads > 1) {
		s->mac = sw_mac_new(cfg.mac_entries, cfg.aging_ms);
		if (!s->mac) {
			snprintf(s->err, sizeof(s->err), "switch %s: no memory for "
				 "the MAC table", s->o.name);
			return -ENOMEM;
		}
		cfg.lookup = &sw_mac_lookup;
		cfg.lookup_ctx = s->mac;
	}
	int ret = sw_init(&s->sw, &cfg);
	if (ret) {
		snprintf(s->err, sizeof(s->err), "switch %s: %s", s->o.name,
			 s->sw.err);
		return ret;
	}
	s->xs[0] = &s->sw;
	s->nthreads = 1;
	for (unsigned t = 1; t < s->o.nthreads; t++) {
		ret = setup_thread(s, &cfg, t);
		if (ret)
			return ret;
	}
	if (s->o.nthreads > 1) {
		s->wake[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->wake[0] < 0) {
			ret = -errno;
			snprintf(s->err, sizeof(s->err), "switch %s: eventfd: %s",
				 s->o.name, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int sws_setup(struct sws *s, const struct sws_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->lfd = s->lockfd = -1;
	for (unsigned t = 0; t < SWS_MAX_THREADS; t++)
		s->wake[t] = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (o->nthreads < 1 || o->nthreads > SWS_MAX_THREADS) {
		snprintf(s->err, sizeof(s->err), "switch %s: %u threads: 1 to %d",
			 o->name, o->nthreads, SWS_MAX_THREADS);
		return -EINVAL;
	}
	int ret = setup_contexts(s);
	if (!ret)
		ret = sws__listen(s);
	if (!ret)
		ret = sws__reaper_start(s);
	return ret;
}

void sws_teardown(struct sws *s)
{
	sws__ctl_close(s);
	sws__reaper_stop(s);
	for (unsigned t = s->nthreads; t-- > 1;) {
		if (s->xs[t])
			sw_fini(s->xs[t]);
		free(s->xs[t]);
		s->xs[t] = NULL;
	}
	if (s->nthreads)
		sw_fini(&s->sw);
	s->nthreads = 0;
	sw_mac_free(s->mac);
	s->mac = NULL;
	for (unsigned t = 0; t < SWS_MAX_THREADS; t++) {
		if (s->wake[t] >= 0)
			close(s->wake[t]);
		s->wake[t] = -1;
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}

void sws_stop(struct sws *s)
{
	atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
}

static bool stopping(const struct sws *s)
{
	return fwd_stopping(&s->stop, s->o.stop);
}

/* Wake every forwarding thread from its poll. */
static void wake_all(struct sws *s)
{
	for (unsigned t = 0; t < s->nthreads; t++) {
		uint64_t one = 1;
		/* The eventfd counter cannot be full: a failure is harmless. */
		(void)!write(s->wake[t], &one, sizeof(one));
	}
}

/* Park every forwarding thread between two rounds (and return once they
 * all are): the main thread may then change and read their contexts. A
 * thread that has ended counts as parked. */
static void pause_all(struct sws *s)
{
	if (s->nthreads < 2)
		return;
	pthread_mutex_lock(&s->mu);
	atomic_store_explicit(&s->pause_req, 1, memory_order_relaxed);
	wake_all(s);
	while (s->parked < s->nthreads)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static void resume_all(struct sws *s)
{
	if (s->nthreads < 2)
		return;
	pthread_mutex_lock(&s->mu);
	atomic_store_explicit(&s->pause_req, 0, memory_order_relaxed);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* A forwarding thread's side of the protocol: parked while asked. */
static void park(struct sws *s)
{
	pthread_mutex_lock(&s->mu);
	s->parked++;
	pthread_cond_broadcast(&s->cv);
	while (atomic_load_explicit(&s->pause_req, memory_order_relaxed))
		pthread_cond_wait(&s->cv, &s->mu);
	s->parked--;
	pthread_mutex_unlock(&s->mu);
}

struct sws_worker {
	struct sws *s;
	unsigned t;
};

/* A forwarding thread (nthreads > 1): rounds on its context, poll() when
 * idle, parked while the main thread asks. */
static void *worker(void *arg)
{
	struct sws_worker *w = arg;
	struct sws *s = w->s;
	struct sw *x = sws_ctx(s, w->t);
	struct pollfd pf = { .fd = s->wake[w->t], .events = POLLIN };

	if (s->o.cpu >= 0)
		(void)fwd_pin(s->o.cpu + (int)w->t);
	while (!stopping(s)) {
		if (atomic_load_explicit(&s->pause_req, memory_order_relaxed))
			park(s);
		int moved = sw_round(x);
		if (moved < 0) {
			s->error = moved;
			atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
			break;
		}
		if (moved == 0) {
			pf.revents = 0;
			sw_wait(x, &pf, 1, FWD_POLL_MS);
			uint64_t v;
			if (pf.revents & POLLIN && read(pf.fd, &v, sizeof(v)) < 0)
				continue;
		}
	}
	pthread_mutex_lock(&s->mu);
	s->parked++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Start the forwarding threads; returns how many started (all, or
 * fewer with s->err and the stop flag set). */
static unsigned start_threads(struct sws *s, struct sws_worker *w)
{
	unsigned t;
	for (t = 0; t < s->nthreads; t++) {
		w[t] = (struct sws_worker){ .s = s, .t = t };
		int e = pthread_create(&s->tid[t], NULL, worker, &w[t]);
		if (e) {
			snprintf(s->err, sizeof(s->err), "switch %s: cannot start "
				 "thread %u: %s", s->o.name, t, strerror(e));
			s->error = -e;
			atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
			break;
		}
	}
	return t;
}

/* Is it time for the report? Sets the next time when it is. */
static bool report_due(struct sws *s, uint64_t *next)
{
	if (!s->o.interval_ns || !s->o.report)
		return false;
	uint64_t now = fwd_now_ns();
	if (now < *next)
		return false;
	*next = now + s->o.interval_ns;
	return true;
}

/* nthreads > 1: the threads forward, this one serves and reports. */
static int run_threads(struct sws *s)
{
	struct sws_worker w[SWS_MAX_THREADS];
	struct pollfd pfd[SWS_MAX_CONNS + 1];
	uint64_t next = fwd_now_ns() + s->o.interval_ns;
	unsigned started = start_threads(s, w);

	if (started == s->nthreads && s->o.ready)
		s->o.ready(s->o.report_ctx);
	while (!stopping(s)) {
		unsigned n = sws__ctl_fds(s, pfd);
		if (poll(pfd, n, FWD_POLL_MS) > 0) {
			pause_all(s);
			sws__serve(s, pfd, n);
			resume_all(s);
		}
		if (report_due(s, &next)) {
			pause_all(s);
			s->o.report(s->o.report_ctx, s);
			resume_all(s);
		}
	}
	wake_all(s);
	for (unsigned t = 0; t < started; t++)
		pthread_join(s->tid[t], NULL);
	if (s->error && started == s->nthreads)
		snprintf(s->err, sizeof(s->err), "switch %s: %s", s->o.name,
			 pktmap_strerror(s->error));
	return s->error;
}

/* One thread: rounds while frames move, poll() when idle, control
 * requests between rounds, a report per interval. */
static int run_one(struct sws *s)
{
	struct pollfd pfd[SWS_MAX_CONNS + 1];
	uint64_t next = fwd_now_ns() + s->o.interval_ns;
	unsigned busy = 0;

	if (s->o.ready)
		s->o.ready(s->o.report_ctx);
	while (!stopping(s)) {
		int moved = sw_round(&s->sw);
		if (moved < 0) {
			snprintf(s->err, sizeof(s->err), "switch %s: %s",
				 s->o.name, pktmap_strerror(moved));
			return moved;
		}
		unsigned n = sws__ctl_fds(s, pfd);
		if (moved == 0) {
			busy = 0;
			if (sw_wait(&s->sw, pfd, n, FWD_POLL_MS) > 0)
				sws__serve(s, pfd, n);
		} else if (++busy % 64 == 0) {
			/* Busy: look at the control socket now and then. */
			if (poll(pfd, n, 0) > 0)
				sws__serve(s, pfd, n);
		}
		if ((moved == 0 || busy % 64 == 0) && report_due(s, &next))
			s->o.report(s->o.report_ctx, s);
	}
	return 0;
}

int sws_run(struct sws *s)
{
	return s->nthreads > 1 ? run_threads(s) : run_one(s);
}
