/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap router: MapRouter (Xiao and Hua, "Lock-free and zero-copy
 * framework for packet forwarding based on multi-core processor", 2013)
 * on pktmap ports.
 *
 *                 fwd[i][o]: (buf_idx, len) descriptors
 *   input i  ---- RX stage ==========================> TX stage ---- output o
 *   RX ring       classify    SPSC, one per (i, o)       round-robin   TX ring
 *      ^          enqueue                                over inputs     |
 *      |                                                                 |
 *      +-- free-buffer ring <===== rec[o][i]: buffer indices <===========+
 *          (stash of i)     SPSC, one per (o, i)    (the TX slot's old buffer)
 *
 * Buffer ownership. Input i owns `total` buffers (its extra buffers,
 * netmap's ni_bufs_head, taken when it opens); the buffers in ring slots
 * belong to the rings. Each of i's buffers is in exactly one place: i's
 * stash, a fwd[i][*] queue, a rec[*][i] queue, or the hands of a stage
 * between two of those within one step. The RX stage swaps a received
 * buffer out of its RX slot for one of the stash (zero-copy) and queues
 * the received one; the TX stage swaps it into a TX slot and sends the
 * slot's previous buffer back to i on rec[o][i] (or, when o is in another
 * region, copies the bytes and sends i's own buffer back). Every exchange
 * is one for one, so for each input
 *
 *     stash + in fwd[i][*] + in rec[*][i] = total
 *
 * at every quiet point, which the router checks at exit. A full fwd[i][o]
 * drops the packet (counted for that queue) and leaves the buffer in the
 * RX slot: an input never waits for an output (no head-of-line blocking).
 * With total >= N * queue + 2 * batch, the stash cannot run dry however
 * many outputs stall.
 *
 * Threads: 2N stages (RX of every port, TX of every port) on T threads,
 * RX stages on the first ceil(T/2), TX stages on the rest (T = 1: all on
 * one). A port's RX ring is synced only by its RX stage's thread and its
 * TX ring only by its TX stage's thread.
 */
#ifndef PKTMAP_FWD_ROUTER_H
#define PKTMAP_FWD_ROUTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <pktmap/pktmap.h>
#include <pktmap/spsc.h>

#include "fwd.h"
#include "router_lpm.h"

#define RT_MAX_PORTS 16
#define RT_MAX_THREADS (2 * RT_MAX_PORTS)
#define RT_LPM_RETIRED_MAX 4 /* old tables kept for held-up threads */

enum rt_mode { RT_STATIC, RT_RANDOM, RT_HASH, RT_LPM, RT_L2 };

/* What the caller asks for. Zeros are defaults. */
struct rt_opts {
	const char *port[RT_MAX_PORTS];
	unsigned nports;
	enum rt_mode mode;
	const char *routes;          /* lpm: the routes file */
	int map[RT_MAX_PORTS];       /* static: output of each input */
	bool map_set;
	int outs[RT_MAX_PORTS];      /* random, hash: the outputs to use */
	unsigned nouts;              /* 0: every port */
	unsigned threads;            /* 0: 2 (1 with one port) */
	int cpus[RT_MAX_THREADS];    /* thread k on cpus[k % ncpus] */
	unsigned ncpus;
	uint32_t batch;              /* slots per stage per step */
	uint32_t queue;              /* fwd queue capacity (power of two) */
	uint32_t stash;              /* buffers per input, 0 = enough */
	uint64_t seed;               /* random */
	bool copy;                   /* copy even within one region */
	const atomic_int *stop;      /* the caller's stop flag, or NULL */
	pktmap_log_fn log;           /* the ports' log (NULL: the default) */
	void *log_ctx;
};

/* What travels on a forward queue. */
struct rt_desc {
	uint32_t idx;
	uint16_t len;
	uint16_t flags;              /* NS_MOREFRAG */
};

/* Counters of one (input, output) queue: the input's RX stage writes the
 * first line, the output's TX stage the second. */
struct rt_qstats {
	_Alignas(64) _Atomic uint64_t enq;  /* packets queued */
	_Atomic uint64_t full;              /* dropped: the queue was full */
	_Alignas(64) _Atomic uint64_t sent; /* packets put in TX slots */
};

/* Per input, written by its RX stage. */
struct rt_rxstats {
	_Alignas(64) _Atomic uint64_t packets, bytes, syncs;
	_Atomic uint64_t no_route;   /* lpm: no prefix covers the address */
	_Atomic uint64_t ttl;        /* lpm: TTL was 0 or 1 */
	_Atomic uint64_t not_ip;     /* lpm: not IPv4 */
	_Atomic uint64_t filtered;   /* l2: the destination is the input */
	_Atomic uint64_t no_buf;     /* a flood copy found no free buffer */
	_Atomic uint64_t flooded;    /* l2: frames sent to every other port */
	_Atomic uint64_t chain_drop; /* chains that could never complete */
	_Atomic uint64_t stalls;     /* steps that stopped on an empty stash */
};

/* Per output, written by its TX stage. */
struct rt_txstats {
	_Alignas(64) _Atomic uint64_t packets, bytes, syncs;
	_Atomic uint64_t too_long;   /* copy: frame larger than the buffer */
	_Atomic uint64_t lost;       /* recycle queue refused (a bug) */
};

struct rt_thread;
struct rt_router;

struct rt_port {
	struct rt_router *rt;
	unsigned id;
	const char *name;
	struct pktmap_port *port;
	struct pktmap_info info;
	struct netmap_if *nifp;
	char *buf0;                  /* NETMAP_BUF(ring, i) = buf0 + i * stride */
	uint32_t stride, usable;
	uint32_t rx_lo, rx_hi, tx_lo, tx_hi;
	struct rt_thread *rx_th, *tx_th;

	/* RX stage; touched only by rx_th. */
	_Alignas(64) struct {
		uint32_t *stash;     /* the free-buffer ring: a LIFO stack */
		uint32_t nstash, total;
		struct rt_desc *stage; /* [N][stage_cap]: a step's output */
		uint32_t stage_cap;
		uint32_t cnt[RT_MAX_PORTS], room[RT_MAX_PORTS];
		uint32_t *rep;       /* replacement buffers of one chain */
		const struct rt_lpm *lpm; /* lpm: the table this stage reads */
		uint64_t rng;
		uint64_t packets, bytes, syncs, no_route, ttl, not_ip;
		uint64_t filtered, no_buf, flooded, chain_drop, stalls;
		uint64_t enq[RT_MAX_PORTS], full[RT_MAX_PORTS];
		bool started;
	} rx;
	/* TX stage; touched only by tx_th. */
	_Alignas(64) struct {
		struct rt_desc *descs; /* one dequeue */
		uint32_t *recycled;    /* the buffers going back from it */
		uint32_t quantum;      /* descriptors per input per step */
		uint32_t rr;           /* the input served first next step */
		int chain_q;           /* input whose chain is half sent, or -1 */
		bool chain_drop;       /* copy: dropping the rest of a chain */
		bool blocked;          /* work waits for TX room */
		uint32_t ring;         /* TX ring being filled */
		uint64_t packets, bytes, syncs, too_long, lost;
		uint64_t sent[RT_MAX_PORTS];
	} tx;

	struct rt_rxstats rxs;
	struct rt_txstats txs;
	uint64_t tx_left;            /* frames left in TX rings at exit */
	struct pktmap_stats lib;     /* the library's counters at exit */
};

struct rt_thread {
	struct rt_router *rt;
	unsigned id;
	int cpu;
	struct rt_port *rx[RT_MAX_PORTS], *tx[RT_MAX_PORTS];
	unsigned nrx, ntx;
	struct fwd_waiter wait;      /* TX-only threads sleep here */
	_Alignas(64) _Atomic uint64_t busy_cycles, rx_slots, tx_slots;
	_Atomic uint64_t busy_cpu_ns;  /* CPU time of its busy rounds */
	_Atomic uint64_t t_first, t_last; /* ns of its first/last busy round */
	pthread_t tid;
	bool started;
	uint32_t lpm_gen;            /* the table generation its stages read */
	_Atomic uint32_t lpm_seen;   /* ... published for rt_reload_routes() */
	int error;                   /* negative errno of a failed sync */
	char err[300];
};

/* Buffer accounting at exit. */
struct rt_bufs {
	uint64_t total, free, fwd_queued, recycling;
	uint64_t dropped_at_exit;    /* descriptors still queued at exit */
	uint64_t bad, duplicate;     /* indices out of range or seen twice */
	bool ok;                     /* free + in flight == total, no dups */
};

struct rt_router {
	const struct rt_opts *o;     /* the caller's, kept for the run */
	unsigned n;
	struct rt_port ports[RT_MAX_PORTS];
	struct pktmap_spsc *fwd[RT_MAX_PORTS][RT_MAX_PORTS]; /* [in][out] */
	struct pktmap_spsc *rec[RT_MAX_PORTS][RT_MAX_PORTS]; /* [out][in] */
	struct rt_qstats *qs;                            /* [in * n + out] */
	bool zc[RT_MAX_PORTS][RT_MAX_PORTS];             /* [in][out] */
	bool all_zc, any_zc;
	uint32_t batch, qcap, stash;
	int static_out[RT_MAX_PORTS];
	int outs[RT_MAX_PORTS];      /* random, hash: choose among these */
	unsigned nouts;
	struct rt_lpm lpm;           /* the table rt_setup() built */
	/* Reloading routes (router_reload.c): the table the RX stages read
	 * (&lpm, or one a reload built), and the one published for them with
	 * its generation; tables still possibly read when the router stopped
	 * mid-reload wait for rt_teardown(). */
	struct rt_lpm *lpm_live;
	struct rt_lpm *_Atomic lpm_next;
	_Atomic uint32_t lpm_gen;
	struct rt_lpm *lpm_retired[RT_LPM_RETIRED_MAX];
	unsigned nretired;
	_Atomic uint64_t *l2;        /* l2: the MAC table */
	struct rt_thread th[RT_MAX_THREADS];
	unsigned nthreads;
	atomic_int stop;             /* rt_stop() or a thread's error */
	uint64_t t_start, t_first, t_last; /* ns */
	const char *end;             /* the caller's word for why it ended */
	struct rt_bufs bufs;
	char err[512];               /* rt_setup()/rt_start(): what failed */
};

/* router_core.c. The caller allocates `rt` (64-byte aligned) and keeps
 * `o` alive until rt_teardown().
 *   rt_setup()    open the ports, build queues, stashes and threads;
 *                 0, or -errno with a one-line message in rt->err
 *                 (-EINVAL: the options or a port name are wrong).
 *   rt_start()    start the threads; 0 or -errno (rt->err).
 *   rt_stop()     ask the threads to stop (any thread, signal-safe
 *                 apart from the eventfd write); they also stop on
 *                 o->stop or on an error of their own (th[k].error/err).
 *   rt_join()     wait for them.
 *   rt_account()  send what the TX rings hold (up to 1 s), then check
 *                 every buffer (rt->bufs.ok).
 *   rt_teardown() give the buffers back, close the ports, free.
 * rt_teardown() is safe after a failed rt_setup(). */
int rt_setup(struct rt_router *rt, const struct rt_opts *o);
int rt_start(struct rt_router *rt);
void rt_stop(struct rt_router *rt);
void rt_join(struct rt_router *rt);
void rt_account(struct rt_router *rt);
void rt_teardown(struct rt_router *rt);
/* Has it stopped (rt_stop, an error, or the caller's flag)? */
bool rt_stopping(const struct rt_router *rt);
/* Frames received and sent so far, from the published counters. */
uint64_t rt_total_sent(const struct rt_router *rt);
uint64_t rt_total_received(const struct rt_router *rt);

/* router_stage.c: one step of a stage; returns the slots it moved. */
uint32_t rt_rx_step(struct rt_port *p);
uint32_t rt_tx_step(struct rt_port *p);
/* TX room, frames not yet taken by the back end, anything queued. */
uint32_t rt_tx_space(const struct rt_port *p);
bool rt_tx_pending(const struct rt_port *p);
bool rt_tx_queued(const struct rt_port *p);
/* Publish a stage's counters for the reporter. */
void rt_rx_publish(struct rt_port *p);
void rt_tx_publish(struct rt_port *p);

/* router_thread.c */
void *rt_thread_main(void *arg);

/* router_reload.c.
 *   rt_reload_routes()  read the routes file `path` (the ports and mode
 *                 unchanged: only lpm's table is replaced), build a new
 *                 table and switch the running RX stages to it between
 *                 two of their rounds, then free the old one. Blocks until
 *                 every RX thread has moved (each looks at every round's
 *                 start, so within one poll timeout, FWD_POLL_MS). Main
 *                 thread only, after rt_start(). Returns 0, or -errno with
 *                 one line in rt->err and the old table still in use
 *                 (-EINVAL: the file is wrong; -ENOTSUP: not mode lpm;
 *                 -EBUSY: RT_LPM_RETIRED_MAX old tables are kept for
 *                 threads that did not move within 10 s).
 *   rt_reload_free()  free the tables reloads made (rt_teardown()). */
int rt_reload_routes(struct rt_router *rt, const char *path);
void rt_reload_free(struct rt_router *rt);

/* router_classify.c: the output of a frame (0..N-1), or one of these. */
#define RT_FLOOD (-1)
#define RT_DROP_NO_ROUTE (-2)
#define RT_DROP_TTL (-3)
#define RT_DROP_NOT_IP (-4)
#define RT_DROP_FILTERED (-5)
int rt_classify(struct rt_port *p, uint8_t *frame, uint32_t len);
int rt_l2_init(struct rt_router *rt);
void rt_l2_free(struct rt_router *rt);
const char *rt_mode_name(enum rt_mode m);

#endif /* PKTMAP_FWD_ROUTER_H */
