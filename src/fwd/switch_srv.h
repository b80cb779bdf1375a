/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch as a component (`pktmap switch NAME` runs one): the data
 * path of switch.c on one or more threads, and the control socket that
 * clients attach through (the protocol: src/vale_proto.h, whose client
 * half is the vale back end, src/ports/vale.c).
 *
 *   switch_srv.c    set up and tear down; the main loop; with threads,
 *                   the forwarding threads and their park/unpark protocol
 *   switch_ctl.c    the control socket's server: the switch's name (lock
 *                   file, socket), requests (open, list, detach, attach)
 *   switch_ports.c  ports by name and by client, detaching (the closing
 *                   thread), counters summed over the threads
 *   switch.c, switch_mac.c   the data path and the learning bridge
 *
 * Each file uses only those below it in this list. Like the router: the
 * caller owns struct sws, passes options in, gives a stop flag; nothing
 * here prints or exits, failures are -errno with one line in err.
 *
 * Threads (nthreads > 1). Thread t owns ring t of every client pipe, in
 * a context of its own (ctx(t); ctx(0) is `sw`); the MAC table is shared
 * and thread 0 ages it. The thread that called sws_run() serves the
 * control socket and runs the report callback; to change or read the
 * threads' contexts it parks them all between two rounds (pause_all())
 * and lets them go again (resume_all()):
 *
 *   main: pause_req = 1, write every wake eventfd, wait parked == n
 *   thread: sees pause_req between rounds, parked++, waits pause_req == 0
 *   main: serves, reads counters; pause_req = 0, broadcast
 *
 * With one thread the caller's thread forwards and serves between rounds.
 */
#ifndef PKTMAP_FWD_SWITCH_SRV_H
#define PKTMAP_FWD_SWITCH_SRV_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "switch.h"

#define SWS_MAX_CONNS (SW_MAX_PORTS + 16)
/* Connections one uid may hold: the switch serves its own uid and root,
 * and neither can take every connection from the other. */
#define SWS_MAX_CONNS_UID SW_MAX_PORTS
/* Ports detached but not yet closed (the closing thread's queue). */
#define SWS_MAX_REAP 1024
/* Ports that left during the run, remembered for the summary. */
#define SWS_MAX_GONE 1024
#define SWS_MAX_THREADS 8

struct sws;

/* What the caller asks for. */
struct sws_opts {
	const char *name;            /* "vale0" (vale_name_ok()) */
	unsigned nthreads;           /* forwarding threads, 1 to 8 */
	int cpu;                     /* thread t on CPU cpu + t (nthreads > 1;
				      * with one the caller pins itself), -1 */
	uint32_t mac_entries;        /* learning bridge: table size */
	uint32_t aging_ms;           /* learning bridge: aging */
	/* Called from sws_run() every interval_ns (0: never), the threads
	 * parked: the caller reads the counters and prints. */
	uint64_t interval_ns;
	void (*report)(void *ctx, struct sws *s);
	void *report_ctx;
	/* Called once from sws_run() when the data path is up (the control
	 * socket listening, every forwarding thread started), with
	 * report_ctx; NULL: not called. */
	void (*ready)(void *ctx);
	const atomic_int *stop;      /* the caller's stop flag, or NULL */
};

/* A control connection: a client holding a port, or a request. */
struct sws_conn {
	int fd;
	int port;                    /* the port it holds, or -1 */
	int pid;
	unsigned uid;
};

/* Closing a client's port may wait for a lock the client holds (its
 * region's, up to the library's 5 s deadline): the forwarding thread
 * never does it. A detached port is queued here and closed by a thread
 * of its own. */
struct sws_reaper {
	pthread_t tid;
	bool started, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pktmap_port *q[SWS_MAX_REAP];
	unsigned n;
	_Atomic uint64_t closed;     /* ports closed so far */
};

/* A port that left during the run, for the summary. */
struct sws_gone {
	char name[64];
	char kind[16];
	struct sw_counters c;
};

struct sws {
	struct sws_opts o;
	struct sw sw;                /* thread 0's: names, kinds, pids */
	struct sw *xs[SWS_MAX_THREADS]; /* thread t's (xs[0] = &sw) */
	struct sw_mac *mac;          /* the shared table (nthreads > 1) */
	unsigned nthreads;           /* contexts set up */
	/* The forwarding threads and their park/unpark protocol. */
	pthread_t tid[SWS_MAX_THREADS];
	int wake[SWS_MAX_THREADS];   /* eventfds: look at pause_req */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_int pause_req;
	unsigned parked;             /* threads parked (or ended) */
	int error;                   /* a thread's failed sync */
	atomic_int stop;             /* sws_stop() or a thread's error */
	/* The control socket. */
	int lfd;                     /* listening socket */
	int lockfd;                  /* .NAME.lock, held while running */
	char sockpath[108], lockpath[108];
	struct sws_reaper reaper;
	struct sws_conn conn[SWS_MAX_CONNS];
	unsigned nconn;
	unsigned seq;                /* pipes made */
	uint32_t nonce;
	/* Ports that left; epoch[id] counts the ports detached from id (a
	 * caller keeping per-port state by id sees a new port there). */
	struct sws_gone gone[SWS_MAX_GONE];
	unsigned ngone;
	uint32_t epoch[SW_MAX_PORTS];
	/* Requests refused rather than waited on: the port they asked for
	 * could not be opened without waiting on a lock another process
	 * holds (PKTMAP_OPEN_NOWAIT; a client can hold its @mem: region's). */
	uint64_t busy;
	char err[512];               /* the last failure: a whole line */
};

/* Set up the contexts, the MAC table, the control socket (the switch's
 * name: -EADDRINUSE when a switch of that name runs) and the closing
 * thread. Returns 0, or -errno with s->err; sws_teardown() either way. */
int sws_setup(struct sws *s, const struct sws_opts *o);
/* Open `name` and attach it as `as` (NULL: what follows the back end in
 * the name), with the open flags `flags` (PKTMAP_OPEN_NOWAIT for a
 * client's request: the switch never waits on a lock a client can
 * hold). Returns 0, or -errno with a one-line message in err. */
int sws_attach_name(struct sws *s, const char *name, const char *as,
		    uint32_t flags, char *err, unsigned errlen);
/* Forward and serve until sws_stop(), the caller's flag or an error.
 * Returns 0 or -errno (s->err says why). */
int sws_run(struct sws *s);
/* Ask sws_run() to return (any thread; signal-safe). */
void sws_stop(struct sws *s);
/* Detach every port, remove the socket and the lock, free everything. */
void sws_teardown(struct sws *s);

/* Reading the switch (from the report callback, or once sws_run() has
 * returned): thread t's context; a port's counters summed over the
 * threads; the MAC table. */
static inline struct sw *sws_ctx(struct sws *s, unsigned t)
{
	return t ? s->xs[t] : &s->sw;
}
void sws_counters(struct sws *s, uint16_t id, struct sw_counters *c);
struct sw_mac *sws_mac(struct sws *s);
/* Detach port id, remembering its counters among the gone. */
void sws_detach(struct sws *s, uint16_t id);

/* Between the component's files (switch_srv.c -> switch_ctl.c ->
 * switch_ports.c). */
int sws__listen(struct sws *s);
unsigned sws__ctl_fds(struct sws *s, struct pollfd *pfd);
void sws__serve(struct sws *s, struct pollfd *pfd, unsigned n);
void sws__ctl_close(struct sws *s);
int sws__reaper_start(struct sws *s);
void sws__reaper_stop(struct sws *s);
/* The zero-copy group of a port opened in a named region: one per
 * memory (fwd_memory_group()), 0 for none. */
uint64_t sws__port_group(struct pktmap_port *p);

#endif /* PKTMAP_FWD_SWITCH_SRV_H */
