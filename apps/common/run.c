/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Workers, signals, logging and the reporting loop shared by gen and recv;
 * signals, logging and the stop flag by every command.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "run.h"

atomic_int run_stop_flag;

/* First SIGINT/SIGTERM: ask the workers to finish (they flush and the
 * summary is printed). A second one a second or more later (a user
 * pressing Ctrl-C again at a program that does not end): leave at once. One sooner is the same request
 * delivered twice -- `timeout -s INT` signals the program and then its
 * whole process group -- and must not cost the summary. */
static void on_signal(int sig)
{
	static struct timespec first; /* this handler's own: no race */
	struct timespec now;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
	if (!atomic_exchange_explicit(&run_stop_flag, 1, memory_order_relaxed)) {
		first = now;
		return;
	}
	if ((now.tv_sec - first.tv_sec) * 1000000000LL +
	    (now.tv_nsec - first.tv_nsec) >= 1000000000LL)
		_exit(130);
}

static void log_cb(void *ctx, enum pktmap_log_level level, const char *msg)
{
	struct run_log *l = ctx;

	if ((int)level > l->max_level)
		return;
	/* one line, whatever a name in it holds */
	cli_err("%s", msg);
}

void run_setup(struct run_log *log, int verbose)
{
	struct sigaction sa;

	log->max_level = verbose >= 2 ? PKTMAP_LOG_DEBUG
			 : verbose ? PKTMAP_LOG_INFO
				   : PKTMAP_LOG_WARN;
	pktmap_set_log(log_cb, log, (enum pktmap_log_level)log->max_level);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: waits return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int run_thread(pthread_t *tid, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t block, old;
	int rc;

	pthread_attr_init(&attr);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((unsigned)cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	/* The new thread inherits the mask. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(tid, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc;
}

int run_init(struct run *r, const char *cmd, const char *port,
	     unsigned nthreads, int cpu, double interval, int verbose,
	     bool json, bool quiet)
{
	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->port = port;
	r->nthreads = nthreads;
	r->cpu = cpu;
	r->interval = interval;
	run_setup(&r->log, verbose);

	r->w = calloc(nthreads, sizeof(*r->w));
	r->st = aligned_alloc(128, nthreads * sizeof(*r->st));
	if (!r->w || !r->st) {
		cli_err("%s: out of memory", cmd);
		free(r->w);
		free(r->st);
		return -1;
	}
	memset(r->st, 0, nthreads * sizeof(*r->st));
	for (unsigned i = 0; i < nthreads; i++) {
		r->w[i].run = r;
		r->w[i].idx = i;
		r->w[i].st = &r->st[i];
		r->st[i].id = i;
	}
	sem_init(&r->done, 0, 0);
	stats_run_init(&r->stats, cmd, port, r->st, nthreads, json, quiet);
	return 0;
}

int run_open(struct run *r, uint32_t dir)
{
	int status = EXIT_RUNTIME;
	char be[16];

	cli_backend_of(r->port, be, sizeof(be));
	if (r->nthreads > 1 && strcmp(be, "pcap") == 0) {
		cli_err("%s: %s: a capture file is a single ring: use one thread "
			"(-p 1)", r->cmd, r->port);
		return EXIT_USAGE;
	}
	for (unsigned i = 0; i < r->nthreads; i++) {
		struct run_worker *w = &r->w[i];
		struct pktmap_open_opts o;
		char errbuf[512] = "";
		int rc;

		if (cli_thread_port(r->port, r->nthreads, i, w->st->port,
				    sizeof(w->st->port))) {
			cli_err("%s: port name too long: %s", r->cmd, r->port);
			goto fail;
		}
		memset(&o, 0, sizeof(o));
		o.sz = sizeof(o);
		o.dir = dir;
		/* gen writes its slots' buffers in place and swaps none:
		 * pkt: may send them from the kernel's frames. */
		if (dir == PKTMAP_DIR_TX)
			o.flags = PKTMAP_OPEN_TX_FRAMES;
		o.errbuf = errbuf;
		o.errbuf_len = sizeof(errbuf);
		rc = pktmap_open(&w->port, w->st->port, &o);
		if (rc < 0) {
			w->port = NULL;
			if (errbuf[0])
				cli_err("%s", errbuf);
			else
				cli_err("%s: %s", w->st->port, pktmap_strerror(rc));
			/* a name the library cannot parse is a usage error */
			status = rc == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
			goto fail;
		}
	}
	return 0;
fail:
	for (unsigned i = 0; i < r->nthreads; i++) {
		if (r->w[i].port)
			pktmap_close(r->w[i].port);
		r->w[i].port = NULL;
	}
	return status;
}

void run_wait(double seconds)
{
	struct timespec ts;
	uint64_t end = stats_now_ns() + (uint64_t)(seconds * 1e9);

	ts.tv_sec = (time_t)(end / 1000000000u);
	ts.tv_nsec = (long)(end % 1000000000u);
	while (!run_stopping() &&
	       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *trampoline(void *arg)
{
	struct run_worker *w = arg;
	struct run *r = w->run;

	w->st->error = r->fn(w);
	atomic_fetch_add_explicit(&r->ndone, 1, memory_order_acq_rel);
	sem_post(&r->done);
	return NULL;
}

/* Start worker i, pinned to CPU cpu+i when asked. Returns 0 or -1 with
 * the message printed. */
static int start(struct run *r, unsigned i)
{
	struct run_worker *w = &r->w[i];
	int rc;

	rc = run_thread(&w->tid, r->cpu >= 0 ? r->cpu + (int)i : -1,
			trampoline, w);
	if (rc) {
		if (r->cpu >= 0)
			cli_err("%s: cannot start thread %u on CPU %d: %s", r->cmd,
				i, r->cpu + (int)i, strerror(rc));
		else
			cli_err("%s: cannot start thread %u: %s", r->cmd, i,
				strerror(rc));
		return -1;
	}
	w->started = true;
	return 0;
}

static void ns_to_ts(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

int run_go(struct run *r)
{
	uint64_t step = (uint64_t)(r->interval * 1e9), next;
	unsigned started = 0;
	int status = 0;

	for (unsigned i = 0; i < r->nthreads; i++) {
		if (start(r, i)) {
			atomic_store_explicit(&run_stop_flag, 1, memory_order_relaxed);
			status = EXIT_RUNTIME;
			break;
		}
		started++;
	}

	r->stats.last_ns = stats_now_ns();
	next = r->stats.last_ns + step;
	while (atomic_load_explicit(&r->ndone, memory_order_acquire) < started) {
		struct timespec ts;

		if (step) {
			ns_to_ts(next, &ts);
			sem_clockwait(&r->done, CLOCK_MONOTONIC, &ts);
		} else {
			sem_wait(&r->done);
		}
		if (step && stats_now_ns() >= next &&
		    atomic_load_explicit(&r->ndone, memory_order_acquire) < started) {
			stats_interval(&r->stats);
			next += step;
			if (next < stats_now_ns())
				next = stats_now_ns() + step;
		}
	}
	for (unsigned i = 0; i < r->nthreads; i++)
		if (r->w[i].started)
			pthread_join(r->w[i].tid, NULL);
	if (status)
		return status;

	r->stats.end_reason = run_stopping() ? "signal"
			      : r->w[0].end ? r->w[0].end
					    : "done";
	stats_summary(&r->stats);
	for (unsigned i = 0; i < r->nthreads; i++) {
		if (r->st[i].error) {
			cli_err("%s", r->w[i].err);
			status = EXIT_RUNTIME;
		}
	}
	return status;
}

void run_fini(struct run *r)
{
	for (unsigned i = 0; i < r->nthreads && r->w; i++)
		if (r->w[i].port)
			pktmap_close(r->w[i].port);
	pktmap_set_log(NULL, NULL, PKTMAP_LOG_ERR);
	sem_destroy(&r->done);
	free(r->w);
	free(r->st);
	r->w = NULL;
	r->st = NULL;
}
