/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap switch: the command line (switch.c), the control socket that
 * clients attach through and --list/-d talk to (switch_ctl.c), and the
 * report lines and summaries (switch_report.c). The data path is the
 * forwarding component's (src/fwd/switch.h).
 */
#ifndef PKTMAP_APPS_SWITCH_APP_H
#define PKTMAP_APPS_SWITCH_APP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "switch.h"     /* src/fwd */
#include "vale_proto.h" /* src */

#define SWA_MAX_ATTACH 32
#define SWA_MAX_CONNS (SW_MAX_PORTS + 16)
/* Connections one uid may hold: the switch serves its own uid and root,
 * and neither can take every connection from the other. */
#define SWA_MAX_CONNS_UID SW_MAX_PORTS
/* Ports detached but not yet closed (the reaper's queue). */
#define SWA_MAX_REAP 1024
#define SWA_MAX_GONE 1024
#define SWA_MAX_THREADS 8

/* A control connection: a client holding a port, or a request. */
struct swa_conn {
	int fd;
	int port;        /* the port it holds, or -1 */
	int pid;
	unsigned uid;
	uint64_t opened_ns;
};

/* Closing a client's port may wait for a lock the client holds (its
 * region's, up to the library's 5 s deadline): the forwarding thread
 * never does it. A detached port is queued here and closed by a thread
 * of its own. */
struct swa_reaper {
	pthread_t tid;
	bool started, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pktmap_port *q[SWA_MAX_REAP];
	unsigned n;
	_Atomic uint64_t closed;           /* ports closed so far */
};

/* A port that left during the run, for the summary. */
struct swa_gone {
	char name[64];
	char kind[16];
	struct sw_counters c;
};

struct swa {
	/* Options. */
	const char *name;                  /* "vale0" */
	const char *attach[SWA_MAX_ATTACH];/* -a, -H (expanded), -n (tap:) */
	const char *attach_as[SWA_MAX_ATTACH];
	unsigned nattach;
	double interval;
	double aging_s;
	uint64_t mac_entries;
	int cpu;                           /* --affinity, -1: none */
	unsigned nthreads;                 /* -p */
	bool json, quiet;
	int verbose;
	/* State. */
	struct sw sw;                      /* thread 0's: names, kinds, pids */
	/* With -p N > 1: thread t owns ring t of every client pipe, in a
	 * context of its own (xs[t], xs[0] = &sw); the MAC table is shared.
	 * The main thread serves the control socket and prints; it pauses
	 * the threads (all parked between rounds) to change or read their
	 * contexts. */
	struct sw *xs[SWA_MAX_THREADS];
	struct sw_mac *mac;                /* the shared table (-p > 1) */
	pthread_t tid[SWA_MAX_THREADS];
	int wake[SWA_MAX_THREADS];         /* eventfds: look at pause_req */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_int pause_req;
	unsigned parked;                   /* threads parked (or ended) */
	int error;                         /* a thread's failed sync */
	int lfd;                           /* listening socket */
	int lockfd;                        /* .NAME.lock, held while running */
	char sockpath[108], lockpath[108];
	struct swa_reaper reaper;
	struct swa_conn conn[SWA_MAX_CONNS];
	unsigned nconn;
	unsigned seq;                      /* pipes made */
	uint32_t nonce;
	struct swa_gone gone[SWA_MAX_GONE];
	unsigned ngone;
	uint64_t t_start, t_end;
	/* Interval state. */
	uint64_t last_ns;
	uint64_t last_rx[SW_MAX_PORTS], last_tx[SW_MAX_PORTS];
	uint64_t last_drop;
};

/* Listen on the switch's socket. Returns 0, or 1 with the message
 * printed (another switch of that name runs). */
int swa_listen(struct swa *a);
/* Serve what the control fds say (pfd[0] is the listening socket, then
 * one entry per connection in a->conn order). */
void swa_serve(struct swa *a, struct pollfd *pfd, unsigned n);
/* Fill pfd with the listening socket and the connections; returns the
 * count. */
unsigned swa_ctl_fds(struct swa *a, struct pollfd *pfd);
/* Close everything the control side holds (waits for the reaper). */
void swa_ctl_close(struct swa *a);
/* Detach port id, remembering its counters for the summary. */
void swa_detach(struct swa *a, uint16_t id);
/* Open `name` and attach it as `as` (NULL: derived from the name).
 * Returns 0, or -errno with a one-line message in err. */
int swa_attach_name(struct swa *a, const char *name, const char *as,
		    char *err, unsigned errlen);

/* The client side: `pktmap switch --list NAME`, `-d PORT` and `-a PORT`
 * on a running switch. Return the exit status. */
int swa_client_list(const char *sw, bool json);
int swa_client_op(const char *sw, enum vale_op op, const char *port,
		  const char *arg);
/* Is switch `sw` running (its socket answers)? */
bool swa_running(const char *sw);

/* Threads (-p): the context of thread t; a port's counters summed over
 * the threads; the MAC table; park every thread between rounds, and let
 * them go again (no-ops with one thread). */
static inline struct sw *swa_ctx(struct swa *a, unsigned t)
{
	return t ? a->xs[t] : &a->sw;
}
void swa_counters(struct swa *a, uint16_t id, struct sw_counters *c);
struct sw_mac *swa_mac(struct swa *a);
void swa_pause(struct swa *a);
void swa_resume(struct swa *a);

/* Output. */
void swa_line(struct swa *a);
void swa_summary(struct swa *a);
void swa_port_counters(const struct sw_counters *c, struct vale_counters *vc);

#endif /* PKTMAP_APPS_SWITCH_APP_H */
