/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What gen and recv share around their inner loops: opening one port per
 * worker thread, starting the workers (pinned if asked), the main thread's
 * reporting loop, Ctrl-C handling and the library's log callback. The
 * last two and the stop flag serve every command: bridge, router and
 * switch through run_init(), capture (workers of its own) through
 * run_setup() and run_thread().
 *
 * Threads: the main thread opens the ports, starts the workers, then only
 * prints interval lines and waits; each worker owns its port (one ring
 * pair, or all rings of the port with one thread) and its counters.
 */
#ifndef PKTMAP_APPS_RUN_H
#define PKTMAP_APPS_RUN_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

#include "stats.h"

/* How long a worker sleeps in pktmap_poll() before it looks at the stop
 * flag again. */
#define RUN_POLL_MS 200

#define RUN_MAX_THREADS 64

/* Set (to 1) by the first SIGINT or SIGTERM; workers look at it once per
 * batch. A second SIGINT ends the process at once. */
extern atomic_int run_stop_flag;

static inline bool run_stopping(void)
{
	return atomic_load_explicit(&run_stop_flag, memory_order_relaxed) != 0;
}

/* Where library messages go: "pktmap: <line>" on stderr, up to max_level.
 * (An open error given an errbuf comes back there only, and is printed
 * from it.) */
struct run_log {
	int max_level;
};

struct run;

struct run_worker {
	struct run *run;
	struct pktmap_port *port;
	struct stats_thread *st;
	unsigned idx;
	pthread_t tid;
	bool started;
	void *arg;           /* the command's per-thread state */
	const char *end;     /* why it ended: "count", "eof", "idle", ... */
	char err[512];       /* set with a nonzero return of the worker fn */
};

struct run {
	const char *cmd;     /* "gen" */
	const char *port;    /* as the user gave it */
	unsigned nthreads;
	int cpu;             /* first CPU to pin to, or -1 */
	double interval;     /* seconds between lines, 0 for none */
	struct run_worker *w;
	struct stats_thread *st;
	struct stats_run stats;
	struct run_log log;
	/* The worker body: returns 0, or nonzero with w->err set. */
	int (*fn)(struct run_worker *w);
	sem_t done;
	atomic_uint ndone;
};

/* Install the library's log callback at the level -v asks for (0:
 * warnings, 1: info, 2: debug) and the SIGINT/SIGTERM handlers that set
 * run_stop_flag. run_init() does this; a command with workers of its own
 * (capture) calls it directly. */
void run_setup(struct run_log *log, int verbose);

/* Start a worker thread running fn(arg) with SIGINT and SIGTERM blocked in
 * it (the main thread takes them, so that the library's waits in the
 * workers are not interrupted), pinned to CPU `cpu` unless it is -1.
 * Returns 0 or a positive errno. */
int run_thread(pthread_t *tid, int cpu, void *(*fn)(void *), void *arg);

/* Set up a run: run_setup(), then allocate the per-thread state. Returns
 * 0 or -1 (message printed). */
int run_init(struct run *r, const char *cmd, const char *port,
	     unsigned nthreads, int cpu, double interval, int verbose,
	     bool json, bool quiet);

/* Open the port of every thread with direction `dir` (see
 * cli_thread_port() for the names). On failure prints the open error and
 * returns -1 with nothing left open. */
int run_open(struct run *r, uint32_t dir);

/* Sleep `seconds` unless stopped first (gen -w). */
void run_wait(double seconds);

/* Start the workers, print interval lines until all have ended, then the
 * summary. Returns the exit status: 0, or 1 when a worker failed (its
 * message printed) or could not be started. */
int run_go(struct run *r);

/* Close the ports and free everything run_init() allocated. */
void run_fini(struct run *r);

/* Publish a counter (worker side). */
static inline void run_pub(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}

#endif /* PKTMAP_APPS_RUN_H */
