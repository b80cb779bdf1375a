/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Internals of the pipe: back end, private to it: the layout of a pipe in
 * its region, what an open keeps of it, and what the back end's files
 * share:
 *
 *   pipe.c         open (check, join or create, claim), close, info and
 *                  the table of functions (pm_pipe_ops)
 *   pipe_where.c   a pipe by name in any memory (the locators)
 *   pipe_view.c    an end's private rings taken from the queue: at open
 *                  (resume) and at a sync that finds another binder
 *                  synced last (reload), one operation
 *   pipe_lock.c    the sync word of a direction: its lock and owner
 *   pipe_sync.c    txsync and rxsync
 *   pipe_wake.c    the wake-up FIFOs, pktmap_poll()'s arming and the
 *                  pktmap_fd() event source (its state machine)
 *   pipe_fast.h    the syncs' loops, four slots at a time
 *
 * Every TX+RX pair is a single-producer single-consumer queue of 8-byte
 * descriptors in the region (each side's rings are private:
 * docs/design.md, "Trust model"); its two indices live in a control
 * block in the region, two cache lines apart:
 *
 *     writer (txsync)                      reader (rxsync)
 *     fills RX slots [prod ...)            owns [cons, prod) once seen
 *     publishes prod (release)  ------->   loads prod (acquire)
 *     loads cons (acquire)      <-------   publishes cons (release)
 */
#ifndef PKTMAP_PORTS_PIPE_H
#define PKTMAP_PORTS_PIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "log.h"
#include "name.h"
#include "pipe_fast.h"
#include "port.h"
#include "region.h"
#include "util.h"

/* "PIP4": the queue layout of 2026-11, with claims per direction
 * (claim_id()): a library that claims whole ends ("PIP3") and this one
 * would not see each other's claims, so they refuse each other's pipes. */
#define PIPE_MAGIC 0x34504950u
#define PIPE_MAGIC_OLD 0x33504950u

/* One direction of one ring pair: end e's TX ring r into end !e's RX
 * ring r. Producer and consumer fields two cache lines apart, as
 * rte_ring's are: the line between them is a guard against the adjacent
 * line prefetcher, which would otherwise pull the other side's line
 * along with ours. */
#define PIPE_Q_ALIGN (2 * PKTMAP_CACHELINE)
struct pm_pipe_q {
	_Alignas(PIPE_Q_ALIGN) _Atomic uint32_t prod; /* written by the writer */
	uint32_t tx_hwcur;                            /* writer's, for a restart */
	/* How many opens bind the TX ring (pipe_poll_disarm()), as
	 * rx_binders counts the RX ring's. In what was padding before: a
	 * pipe of an older "PIP4" library has it zero. */
	_Atomic uint32_t tx_binders;
	_Alignas(PIPE_Q_ALIGN) _Atomic uint32_t cons; /* written by the reader */
	uint32_t rx_hwtail;                           /* reader's, for a restart */
	/* The readers' sync word (pipe_rxsync()), as tx_sync is the
	 * writers', and how many opens bind the RX ring (pipe_poll_disarm()).
	 * On the readers' line: only readers write them. In what was padding
	 * before: a pipe of the first "PIP4" library has them zero. */
	_Atomic uint64_t rx_sync;
	_Atomic uint32_t rx_binders;
	/* Who holds rx_sync, as tx_owner says for tx_sync. */
	_Atomic uint64_t rx_owner;
	_Alignas(PIPE_Q_ALIGN) _Atomic uint32_t reader_sleeping;
	_Atomic uint32_t writer_sleeping;
	/* The writers' sync word (pipe_txsync()): SYNC_PID, the pid of the
	 * process in a TX sync of this queue, or 0; SYNC_GEN, a count of the
	 * syncs that moved slots (and of the locks taken from dead holders):
	 * an open whose last sync saw another reloads its view of the ring
	 * first. Written by any of the ring's binders. (The bytes of the
	 * first PIP4 library's tx_lock and tx_gen.) */
	_Atomic uint64_t tx_sync;
	/* The holder of tx_sync as a pid cannot fake it (pipe_lock.c):
	 * OWNER_PID, its pid, and OWNER_START, the low half of its start
	 * time (field 22 of /proc/PID/stat), written by the holder just
	 * after it takes the lock and cleared (0) just before it frees it.
	 * In what was padding before: an older library leaves it 0, and a
	 * holder with no record is judged by its pid alone. */
	_Atomic uint64_t tx_owner;
};

_Static_assert(sizeof(struct pm_pipe_q) == 3 * PIPE_Q_ALIGN,
	       "the queue's layout is shared with other pktmap versions");

/* A sync word: the holder's pid in the low half, the generation above. */
#define SYNC_PID(v) ((uint32_t)(v))
#define SYNC_GEN(v) ((uint32_t)((v) >> 32))

static inline uint64_t sync_word(uint32_t gen, uint32_t pid)
{
	return (uint64_t)gen << 32 | pid;
}

/* An owner record (tx_owner, rx_owner): the pid in the low half, the
 * start time above; 0, or a start time of 0, says nothing. */
#define OWNER_PID(v) ((uint32_t)(v))
#define OWNER_START(v) ((uint32_t)((v) >> 32))

static inline uint64_t owner_record(uint32_t start, uint32_t pid)
{
	return (uint64_t)start << 32 | pid;
}

/* The control block in the region. Only nrings and nslots are read by a
 * joiner (once, then checked); every offset below is computed from them
 * privately (pipe_layout()). */
struct pm_pipe_shared {
	uint32_t magic;
	uint32_t nrings;
	uint32_t nslots;
	uint32_t pad;
};

struct pipe_layout {
	size_t q, desc, shadow, size;
};

static inline struct pipe_layout pipe_layout(uint32_t R, uint32_t S)
{
	struct pipe_layout l;
	l.q = 128;
	l.desc = l.q + 2 * (size_t)R * sizeof(struct pm_pipe_q);
	l.shadow = (l.desc + 2 * (size_t)R * S * sizeof(union pm_pipe_desc) + 127) &
		   ~(size_t)127;
	l.size = l.shadow + 2 * (size_t)R * S * sizeof(uint32_t);
	return l;
}

/* Per bound kring. For a TX ring: the queue it feeds, whose descriptor
 * array is the peer's RX storage, and the shadow of our TX slots' buffers
 * (what a restarted end resumes with). For an RX ring: the queue it
 * drains and its descriptors. */
struct pipe_kpriv {
	struct pm_pipe_q *q;
	union pm_pipe_desc *desc;     /* q's descriptors [nslots] */
	uint32_t *shadow;              /* TX: our slots' buffers [nslots] */
	uint32_t prod;                 /* TX: our copy of q->prod */
	uint32_t cons;                 /* TX: last q->cons seen (cached) */
	uint32_t gen;                  /* SYNC_GEN of q->tx_sync (TX) or
	                                * q->rx_sync (RX) after our sync */
	_Atomic uint64_t *sync;        /* &q->tx_sync (TX) or &q->rx_sync */
	_Atomic uint64_t *owner;       /* &q->tx_owner (TX) or &q->rx_owner */
	int wake_peer_fd;              /* the peer's FIFO for this direction */
	int wake_own_fd;               /* our FIFO for this direction */
	/* Event-source mode (pm_pipe_sync_event()): the state of the ring's
	 * machine (pipe_wake.c: RX_EMPTY, RX_TOKEN, RX_ARMED; TX_OPEN,
	 * TX_BLOCKED); idle counts armed empty syncs. */
	uint8_t state;
	uint8_t idle;
};

struct pipe_priv {
	struct pm_pipe_shared *sh;
	struct pm_pipe_q *q;           /* q[2][nrings] */
	union pm_pipe_desc *desc;     /* desc[2][nrings][nslots] */
	uint32_t *shadow;              /* shadow[2][nrings][nslots] */
	uint32_t end, nrings, nslots, lo, hi; /* bound ring range [lo, hi) */
	uint32_t pipe_id;
	uint32_t uid;                  /* unique in the region: claims, FIFOs */
	uint32_t pid;                  /* ours, the sync lock's holder value */
	uint64_t owner;                /* ours, an owner record (pid, start) */
	bool excl;                     /* PKTMAP_OPEN_EXCLUSIVE: claims alone */
	bool nowait;                   /* PKTMAP_OPEN_NOWAIT: locks tried once */
	uint32_t counted;              /* RX rings [lo, lo + counted) in
	                                * their q->rx_binders */
	uint32_t tx_counted;           /* TX rings [lo, lo + tx_counted) in
	                                * their q->tx_binders */
	struct pipe_kpriv *kp;         /* [2][nrings]: tx rings, then rx */
	int epfd[3];                   /* RX FIFOs, TX FIFOs, all (or -1) */
	int rx_fd, tx_fd;              /* what to sleep on per direction */
	bool ev;                       /* pktmap_fd() made this an event source */
	bool ev_tx;                    /* ... whose fd follows TX space (/T) */
};

/* The values of a "sleeping" flag: what the side that clears it owes. */
#define PIPE_WAKE_WRITE 1u /* write a byte to the sleeper's FIFO */
#define PIPE_WAKE_READ 2u  /* read the "no space" byte out of it */

static inline struct pm_pipe_q *pipe_q(struct pipe_priv *pp, uint32_t end,
				       uint32_t r)
{
	return &pp->q[end * pp->nrings + r];
}

static inline union pm_pipe_desc *pipe_desc(struct pipe_priv *pp, uint32_t end,
					     uint32_t r)
{
	return &pp->desc[((size_t)end * pp->nrings + r) * pp->nslots];
}

static inline uint32_t *pipe_shadow(struct pipe_priv *pp, uint32_t end,
				    uint32_t r)
{
	return &pp->shadow[((size_t)end * pp->nrings + r) * pp->nslots];
}

/* The claim on one direction (PIPE_TX, PIPE_RX) of ring r of one end:
 * each is taken by one binding, so that one process may send on an end
 * while another receives on it. A pipe's control block is at least 1024
 * bytes (pipe_layout() of the smallest pipe), so uid / 8 (its offset in
 * 1024-byte units) numbers pipes apart, and the claims of 64 MB of
 * pipes stay below the AF_XDP ports' (2^24). */
enum { PIPE_TX, PIPE_RX };

static inline uint32_t claim_id(uint32_t uid, uint32_t end, uint32_t dir,
				uint32_t r)
{
	return (((uid / 8) * 2 + end) * 2 + dir) * PM_MAX_RINGS + r;
}

/* Does this open bind direction dir (PIPE_TX, PIPE_RX)? */
static inline bool binds(const struct pktmap_port *p, uint32_t dir)
{
	return p->dir & (dir == PIPE_TX ? PKTMAP_DIR_TX : PKTMAP_DIR_RX);
}

/* The length rule of a descriptor a reader takes (rxsync, and a view
 * taken at open or reload: pipe_view.c): at most a buffer's usable
 * bytes. The writer's rule is pm_desc_check()'s (at least one byte too:
 * txsync never sends an empty one); an empty one read here passes, as
 * pipe_rx_fast() lets it (len_min 0), and is delivered empty. */
static inline bool pipe_rx_len_ok(const struct pm_bufspace *bs, uint32_t len)
{
	return len <= bs->usable;
}

/* The peer wrote value v, which breaks the protocol, where `what` is:
 * counted and said (at most once a second per direction). */
static inline void pipe_report_proto(struct pktmap_port *p, struct pm_kring *k,
				     const char *what, uint32_t v)
{
	pm_stat_add(&k->st->drop_invalid, 1);
	pm_log_ratelimited(p, pm_rl_slot(p, (int)k->tx),
			   "%s: %s ring %u: the peer wrote %s %u into the shared "
			   "ring: ignored",
			   p->name, k->tx ? "TX" : "RX", k->ring->ringid, what, v);
}

/* ---- pipe_where.c ---- */

/* Where this end's pipe `key` is, into regname (see pipe_where.c). */
int pm_pipe_where(struct pktmap_port *p, const struct pm_name *nm,
		  const char *key, const struct pm_region_params *rp,
		  char *regname, size_t len);
/* Point the locator of nm's pipe at region regname ("": remove it). */
void pm_pipe_locator_set(const struct pm_name *nm, const char *regname);

/* ---- pipe_lock.c ---- */

/* The lock, in one compare-and-swap, if it is free and nobody synced
 * since our last sync (the generation is ours); then our owner record.
 * Acquire: pairs with the release in sync_release(), the last holder's
 * work (and its cleared record) is seen. */
static inline bool sync_try(struct pipe_kpriv *kp, const struct pipe_priv *pp)
{
	uint64_t mine = sync_word(kp->gen, 0);
	if (!atomic_compare_exchange_strong_explicit(
		    kp->sync, &mine, sync_word(kp->gen, pp->pid),
		    memory_order_acquire, memory_order_relaxed))
		return false;
	/* Relaxed: read by a waiter after its acquire load of the word. */
	atomic_store_explicit(kp->owner, pp->owner, memory_order_relaxed);
	return true;
}

/* Unlock, with kp->gen as the generation: a sync that moved something
 * counted it up (under the lock), so the other binders reload. The
 * owner record goes first (ordered before the word by the release):
 * one left behind would name us to the next holder's waiters. */
static inline void sync_release(struct pipe_kpriv *kp)
{
	atomic_store_explicit(kp->owner, 0, memory_order_relaxed);
	atomic_store_explicit(kp->sync, sync_word(kp->gen, 0), memory_order_release);
}

int pm_pipe_lock_wait(struct pktmap_port *p, struct pm_kring *k);
/* This process's owner record (its pid and start time). */
uint64_t pm_pipe_owner_self(void);
/* The state and start time in the text of a /proc/PID/stat. */
bool pm_pipe_stat_parse(const char *st, char *state, uint32_t *start);

#ifdef PM_TEST_HOOKS
/* Tests only: the queue that TX (tx) or RX ring `ring` of p uses. */
struct pm_pipe_q *pm_pipe_queue(struct pktmap_port *p, bool tx, uint32_t ring);
#endif

/* ---- pipe_view.c ---- */

/* Where an end's view of a ring is taken from the queue: at open (a
 * resume) or at a sync (a reload). */
struct pipe_view {
	/* The pool's bounds: at open, from the region (p->bs is filled only
	 * after open returns); at a sync, p->bs. */
	struct pm_bufspace bs;
	/* At open, the buffers given to a slot so far (a bit each): a
	 * buffer that is not of the pool, or given twice, is replaced from
	 * the free list. NULL at a sync: a bad value is reported and ours
	 * stays. */
	uint8_t *seen;
};

int pm_pipe_view(struct pktmap_port *p, struct pm_kring *k,
		 const struct pipe_view *v);
int pm_pipe_resume(struct pktmap_port *p, struct pipe_priv *pp, uint32_t dir,
		   uint32_t r, uint8_t *seen);

/* ---- pipe_sync.c ---- */

int pm_pipe_txsync(struct pktmap_port *p, struct pm_kring *k);
int pm_pipe_rxsync(struct pktmap_port *p, struct pm_kring *k);

/* ---- pipe_wake.c ---- */

int pm_pipe_wakeups(struct pktmap_port *p, struct pipe_priv *pp);
void pm_pipe_wake(struct pktmap_port *p, _Atomic uint32_t *flag, int fd);

/* Wake the other side if, and only if, it announced that it sleeps. The
 * full fence pairs with the one in pipe_poll_arm(): either the sleeper
 * sees what we just published, or we see its flag. */
static inline void pipe_wake_if_sleeping(struct pktmap_port *p,
					 _Atomic uint32_t *flag, int fd)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (pm_likely(!atomic_load_explicit(flag, memory_order_relaxed)))
		return;
	pm_pipe_wake(p, flag, fd);
}

int pm_pipe_event_fd(struct pktmap_port *p);
void pm_pipe_sync_event(struct pktmap_port *p, struct pm_kring *k);
int pm_pipe_poll_arm(struct pktmap_port *p, short events);
void pm_pipe_poll_disarm(struct pktmap_port *p, short events);
int pm_pipe_poll_fd(const struct pktmap_port *p, short events, short *pev);

#endif
