/* SPDX-License-Identifier: BSD-2-Clause
 *
 * A pipe's wake-ups. A reader sleeping in pktmap_poll() is woken through
 * a named FIFO, and only when it said it sleeps: it sets its "sleeping"
 * flag, fences and looks at the ring once more (pipe_poll_arm()); a
 * writer publishes, fences and looks at the flag
 * (pipe_wake_if_sleeping(), pipe.h): the Dekker pair, so no wake-up is
 * lost and none is sent to a peer that is awake. The same holds the
 * other way for a writer waiting for space. One FIFO per ring and
 * direction, so that a thread sleeping for packets and one sleeping for
 * space never take each other's wake-up.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipe.h"

/* The wake-up FIFO of one end's ring r, for one direction: 'r' wakes the
 * end's reader (packets arrived), 't' its writer (space was freed). */
static void fifo_path(char *out, size_t len, const struct pipe_priv *pp,
		      const struct pm_region *reg, uint32_t end, uint32_t r,
		      char dir)
{
	snprintf(out, len, "%s.w%u.%u.%u%c", reg->path, pp->uid, end, r, dir);
}

static int open_fifo(struct pktmap_port *p, struct pipe_priv *pp, uint32_t end,
		     uint32_t r, char dir)
{
	char path[200], why[300];
	const struct pm_region *reg = &p->region;
	fifo_path(path, sizeof(path), pp, reg, end, r, dir);
	if (mkfifo(path, reg->share ? 0660 : 0600) == 0) {
		if (reg->share && (chown(path, (uid_t)-1, (gid_t)reg->share_gid) != 0 ||
				   chmod(path, 0660) != 0))
			return pm_open_error(p, -errno, "cannot give %s to group "
					     "%u: %s", path, reg->share_gid,
					     strerror(errno));
	} else if (errno != EEXIST) {
		return pm_open_error(p, -errno, "cannot create %s: %s", path,
				     strerror(errno));
	}
	/* O_RDWR on a FIFO never blocks on Linux and keeps it open; a
	 * symbolic link planted at the path is refused (O_NOFOLLOW), and
	 * so is a FIFO that is not ours. */
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return pm_open_error(p, -errno, "cannot open %s: %s%s", path,
				     strerror(errno),
				     errno == ELOOP ? " (a symbolic link: remove it)" :
						      "");
	int ret = pm_file_trusted(fd, path, true, reg->share, reg->share_gid, why,
				  sizeof(why));
	if (ret) {
		close(fd);
		return pm_open_error(p, ret, "%s", why);
	}
	return fd;
}


/* The wake-up FIFOs of the bound rings (of the directions bound: the
 * other direction's may belong to another process), and the pollable
 * fds over them: per direction (the FIFO itself for one ring, else an
 * epoll set), and one over everything for pktmap_fd(). */
int pm_pipe_wakeups(struct pktmap_port *p, struct pipe_priv *pp)
{
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pipe_kpriv *tk = &pp->kp[r], *rk = &pp->kp[pp->nrings + r];
		/* One FIFO per direction, so that a thread sleeping for RX and
		 * one sleeping for TX space on the same port never take each
		 * other's wake-up. */
		if (binds(p, PIPE_TX)) {
			tk->wake_own_fd = open_fifo(p, pp, pp->end, r, 't');
			if (tk->wake_own_fd < 0)
				return tk->wake_own_fd; /* open_fifo() said why */
			tk->wake_peer_fd = open_fifo(p, pp, !pp->end, r, 'r');
			if (tk->wake_peer_fd < 0)
				return tk->wake_peer_fd;
		}
		if (binds(p, PIPE_RX)) {
			rk->wake_own_fd = open_fifo(p, pp, pp->end, r, 'r');
			if (rk->wake_own_fd < 0)
				return rk->wake_own_fd;
			rk->wake_peer_fd = open_fifo(p, pp, !pp->end, r, 't');
			if (rk->wake_peer_fd < 0)
				return rk->wake_peer_fd;
		}
	}
	for (int set = 0; set < 3; set++) {
		pp->epfd[set] = epoll_create1(EPOLL_CLOEXEC);
		if (pp->epfd[set] < 0)
			return pm_open_error(p, -errno, "epoll_create1: %s",
					     strerror(errno));
		for (uint32_t r = pp->lo; r < pp->hi; r++) {
			for (int d = 0; d < 2; d++) {
				/* set 0: RX wake-ups, 1: TX, 2: both */
				if ((set != 2 && set != d) ||
				    !binds(p, d ? PIPE_TX : PIPE_RX))
					continue;
				int fd = pp->kp[d == 0 ? pp->nrings + r : r].wake_own_fd;
				struct epoll_event ev = { .events = EPOLLIN, .data.u32 = r };
				if (epoll_ctl(pp->epfd[set], EPOLL_CTL_ADD, fd, &ev) != 0)
					return pm_open_error(p, -errno, "epoll_ctl: %s",
							     strerror(errno));
			}
		}
	}
	bool one = pp->hi - pp->lo == 1;
	pp->rx_fd = one && binds(p, PIPE_RX) ? pp->kp[pp->nrings + pp->lo].wake_own_fd :
					       pp->epfd[0];
	pp->tx_fd = one && binds(p, PIPE_TX) ? pp->kp[pp->lo].wake_own_fd :
					       pp->epfd[1];
	p->fd = pp->epfd[2];
	return 0;
}

/* The other side announced that it sleeps (pipe_wake_if_sleeping() saw
 * its flag): clear the flag, and pay what it says is owed. */
void pm_pipe_wake(struct pktmap_port *p, _Atomic uint32_t *flag, int fd)
{
	uint32_t how = atomic_exchange_explicit(flag, 0, memory_order_relaxed);
	char one = 1;
	ssize_t r = 0;
	if (how == PIPE_WAKE_WRITE)
		r = write(fd, &one, 1);
	else if (how == PIPE_WAKE_READ) /* a writer's fd that shows no space */
		r = read(fd, &one, 1);
	if (r < 0 && errno != EAGAIN)
		pm_log(p, PKTMAP_LOG_WARN, "%s: wake-up failed: %s", p->name,
		       strerror(errno));
	if (how)
		pm_stat_inc(&p->stats->wakeups_sent, 1);
}

/* ---- pktmap_fd() as an event source ---------------------------------
 *
 * Once pktmap_fd() was called, every sync keeps the fd's state equal to
 * what the next sync would find, with no pktmap_poll(). Each bound ring
 * runs a small state machine, kp->state, after each of its syncs: the
 * sync's outcome is an event, looked up with the state in a const
 * transition table ({state, event} -> {next state, action}); an action
 * may look at shared memory and answer with a further event (its
 * outcome), which is looked up in turn, until one answers EV_DONE.
 *
 * RX: the fd is the ring's 'r' FIFO; it holds one byte (a token) exactly
 * while packets are unread past cur or have arrived since.
 *
 *   RX_EMPTY  no token, our "sleeping" flag clear
 *   RX_TOKEN  the token is in the FIFO, or on its way (the writer took
 *             our flag and writes it)
 *   RX_ARMED  no token; our flag is set (PIPE_WAKE_WRITE): the writer
 *             that clears it owes the token
 *
 *   state     event       next      action
 *   EMPTY     UNREAD      TOKEN     write the token
 *   EMPTY     NOTHING     ARMED     set the flag, fence, look at prod:
 *                                   UNREAD if it moved
 *   TOKEN     UNREAD      TOKEN     -
 *   TOKEN     NOTHING     TOKEN     read the token: GOT_BYTE, or not
 *                                   there yet (it will wake the app)
 *   TOKEN     GOT_BYTE    EMPTY     the ring's event again (NOTHING)
 *   ARMED     UNREAD      ARMED     take the flag back: FLAG_BACK if it
 *                                   was still ours, else FLAG_TAKEN
 *   ARMED     NOTHING     ARMED     flag still set: count; every 64th,
 *                                   take it back and drain the FIFO
 *                                   (FLAG_BACK: a stray byte, a dead
 *                                   owner's, never keeps the fd
 *                                   readable); flag gone: FLAG_TAKEN
 *   ARMED     FLAG_BACK   EMPTY     the ring's event again
 *   ARMED     FLAG_TAKEN  TOKEN     the ring's event again
 *
 * Arming is the Dekker pair of pipe_wake_if_sleeping(): a writer that
 * published before the flag was seen is caught by the look at prod, one
 * that publishes after sees the flag and writes the token. While the
 * flag stays set, syncs cost one load; a writer whose reader keeps
 * finding packets pays nothing. Whoever clears the flag moves the one
 * byte, so the FIFO holds at most one.
 *
 * TX (ports opened /T only): the fd is the ring's 't' FIFO, sized to one
 * page so that a single byte makes it full, i.e. not writable.
 *
 *   TX_OPEN     no byte of ours: the fd is writable
 *   TX_BLOCKED  our "no space" byte is in the FIFO and our flag says
 *               PIPE_WAKE_READ: the reader that frees slots and clears
 *               the flag reads the byte out
 *
 *   state     event       next      action
 *   OPEN      SPACE       OPEN      -
 *   OPEN      FULL        BLOCKED   write the byte, set the flag, fence,
 *                                   look at cons: SPACE if it moved
 *   BLOCKED   SPACE       OPEN      take the flag back; if it was still
 *                                   ours, read the byte out
 *   BLOCKED   FULL        BLOCKED   flag still set: -; the reader took
 *                                   it (and reads the byte): FLAG_TAKEN
 *   BLOCKED   FLAG_TAKEN  OPEN      the ring's event again (FULL)
 *
 * Whoever clears the flag takes exactly one byte, so the count of bytes
 * is "1 while blocked" (after a FLAG_TAKEN, the reader's read takes one
 * of two bytes for a moment). Pairs not listed cannot happen: their
 * entries do nothing. */

/* Take one byte out of a FIFO; true when there was one. */
static bool fifo_take(int fd)
{
	char b;
	return read(fd, &b, 1) == 1;
}

static void fifo_put(struct pktmap_port *p, int fd)
{
	char b = 1;
	if (write(fd, &b, 1) < 0 && errno != EAGAIN)
		pm_log(p, PKTMAP_LOG_WARN, "%s: wake-up failed: %s", p->name,
		       strerror(errno));
}

static void fifo_drain(int fd)
{
	char buf[256];
	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

enum { RX_EMPTY, RX_TOKEN, RX_ARMED, RX_NSTATES };
enum { TX_OPEN, TX_BLOCKED, TX_NSTATES };

/* Events: what a sync found in the ring (UNREAD, NOTHING; SPACE, FULL),
 * or what an action found out. EV_DONE ends the run. */
enum {
	EV_DONE,
	EV_UNREAD, EV_NOTHING,  /* RX: packets for the reader, or none */
	EV_SPACE, EV_FULL,      /* TX: space past cur, or none */
	EV_GOT_BYTE,            /* the token was read out of the FIFO */
	EV_FLAG_BACK,           /* we cleared our own flag */
	EV_FLAG_TAKEN,          /* the peer cleared it: it moves the byte */
	EV_N
};

/* Actions (what a transition does), each answering an event. */
enum {
	A_NONE,     /* EV_DONE */
	A_AGAIN,    /* the ring's event once more, in the new state */
	A_PUT,      /* RX: write the token */
	A_ARM,      /* RX: set the flag, fence, look at prod */
	A_TAKE,     /* RX: read the token out */
	A_UNFLAG,   /* RX: take our flag back */
	A_IDLE,     /* RX: armed and nothing: count, now and then drain */
	A_BLOCK,    /* TX: write the byte, set the flag, fence, look at cons */
	A_UNBLOCK,  /* TX: take our flag back, and our byte with it */
	A_CHECK,    /* TX: is our flag still set? */
};

struct pipe_step {
	uint8_t next, act;
};

static const struct pipe_step rx_table[RX_NSTATES][EV_N] = {
	[RX_EMPTY] = {
		[EV_UNREAD] = { RX_TOKEN, A_PUT },
		[EV_NOTHING] = { RX_ARMED, A_ARM },
		[EV_GOT_BYTE] = { RX_EMPTY, A_NONE },     /* cannot happen */
		[EV_FLAG_BACK] = { RX_EMPTY, A_NONE },    /* cannot happen */
		[EV_FLAG_TAKEN] = { RX_EMPTY, A_NONE },   /* cannot happen */
	},
	[RX_TOKEN] = {
		[EV_UNREAD] = { RX_TOKEN, A_NONE },
		[EV_NOTHING] = { RX_TOKEN, A_TAKE },
		[EV_GOT_BYTE] = { RX_EMPTY, A_AGAIN },
		[EV_FLAG_BACK] = { RX_TOKEN, A_NONE },    /* cannot happen */
		[EV_FLAG_TAKEN] = { RX_TOKEN, A_NONE },   /* cannot happen */
	},
	[RX_ARMED] = {
		[EV_UNREAD] = { RX_ARMED, A_UNFLAG },
		[EV_NOTHING] = { RX_ARMED, A_IDLE },
		[EV_GOT_BYTE] = { RX_ARMED, A_NONE },     /* cannot happen */
		[EV_FLAG_BACK] = { RX_EMPTY, A_AGAIN },
		[EV_FLAG_TAKEN] = { RX_TOKEN, A_AGAIN },
	},
};

static const struct pipe_step tx_table[TX_NSTATES][EV_N] = {
	[TX_OPEN] = {
		[EV_SPACE] = { TX_OPEN, A_NONE },
		[EV_FULL] = { TX_BLOCKED, A_BLOCK },
		[EV_FLAG_TAKEN] = { TX_OPEN, A_NONE },    /* cannot happen */
	},
	[TX_BLOCKED] = {
		[EV_SPACE] = { TX_OPEN, A_UNBLOCK },
		[EV_FULL] = { TX_BLOCKED, A_CHECK },
		[EV_FLAG_TAKEN] = { TX_OPEN, A_AGAIN },
	},
};

/* Would a txsync on k show space past cur, given the reader's cons? */
static bool tx_has_space(struct pm_kring *k, struct pipe_kpriv *kp)
{
	uint32_t n = k->nslots;
	uint32_t cons = atomic_load_explicit(&kp->q->cons, memory_order_relaxed);
	if (cons >= n)
		return true; /* let the sync report it */
	uint32_t d = pm_ring_dist(kp->prod, cons, n);
	uint32_t space = d ? d - 1 : n - 1;
	return space > pm_ring_dist(k->hwcur, k->rcur, n);
}

/* The RX actions; *ring is the ring's event, which an action that looks
 * at prod again may change. */
static int rx_act(struct pktmap_port *p, struct pm_kring *k,
		  struct pipe_kpriv *kp, int act, int *ring)
{
	_Atomic uint32_t *flag = &kp->q->reader_sleeping;
	switch (act) {
	case A_AGAIN:
		return *ring;
	case A_PUT:
		fifo_put(p, kp->wake_own_fd);
		return EV_DONE;
	case A_ARM:
		atomic_store_explicit(flag, PIPE_WAKE_WRITE, memory_order_relaxed);
		kp->idle = 0;
		/* Pairs with the fence in pipe_wake_if_sleeping(). */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&kp->q->prod, memory_order_relaxed) ==
		    k->hwtail)
			return EV_DONE;
		return *ring = EV_UNREAD;
	case A_TAKE:
		return fifo_take(kp->wake_own_fd) ? EV_GOT_BYTE : EV_DONE;
	case A_UNFLAG:
		/* If the writer cleared it first, its byte is on the way and
		 * we must not add a second. */
		return atomic_exchange_explicit(flag, 0, memory_order_relaxed) ==
				       PIPE_WAKE_WRITE ?
			       EV_FLAG_BACK :
			       EV_FLAG_TAKEN;
	case A_IDLE:
		if (!atomic_load_explicit(flag, memory_order_relaxed))
			return EV_FLAG_TAKEN;
		if (pm_likely(++kp->idle & 63))
			return EV_DONE;
		/* Take our flag back before draining, so that a real wake-up
		 * is never read away. */
		if (!atomic_exchange_explicit(flag, 0, memory_order_relaxed))
			return EV_FLAG_TAKEN;
		fifo_drain(kp->wake_own_fd);
		return EV_FLAG_BACK;
	default:
		return EV_DONE;
	}
}

/* The TX actions, as rx_act(). */
static int tx_act(struct pktmap_port *p, struct pm_kring *k,
		  struct pipe_kpriv *kp, int act, int *ring)
{
	_Atomic uint32_t *flag = &kp->q->writer_sleeping;
	switch (act) {
	case A_AGAIN:
		return *ring;
	case A_BLOCK:
		/* One byte per flag set; if the reader just took the last
		 * flag, its read takes one of the two bytes and one stays. */
		fifo_put(p, kp->wake_own_fd);
		atomic_store_explicit(flag, PIPE_WAKE_READ, memory_order_relaxed);
		/* Pairs with the fence in pipe_wake_if_sleeping(). */
		atomic_thread_fence(memory_order_seq_cst);
		return tx_has_space(k, kp) ? (*ring = EV_SPACE) : EV_DONE;
	case A_UNBLOCK:
		/* Else the reader took the flag and reads the byte. */
		if (atomic_exchange_explicit(flag, 0, memory_order_relaxed) ==
		    PIPE_WAKE_READ)
			(void)fifo_take(kp->wake_own_fd);
		return EV_DONE;
	case A_CHECK:
		return atomic_load_explicit(flag, memory_order_relaxed) ==
				       PIPE_WAKE_READ ?
			       EV_DONE :
			       EV_FLAG_TAKEN;
	default:
		return EV_DONE;
	}
}

/* Run ring k's machine from the event its sync found. Every chain of
 * the tables ends within a few steps; the bound is a guard only. */
static void pipe_event_run(struct pktmap_port *p, struct pm_kring *k,
			   struct pipe_kpriv *kp, int ev)
{
	int ring = ev;
	for (int n = 0; ev != EV_DONE && n < 16; n++) {
		const struct pipe_step *t = k->tx ? &tx_table[kp->state][ev] :
						    &rx_table[kp->state][ev];
		kp->state = t->next;
		ev = k->tx ? tx_act(p, k, kp, t->act, &ring) :
			     rx_act(p, k, kp, t->act, &ring);
	}
}

/* The event a sync of k found: RX, packets unread past cur (or arrived);
 * TX, space past cur. */
static int pipe_ring_event(const struct pm_kring *k)
{
	bool any = k->rcur != k->hwtail;
	if (k->tx)
		return any ? EV_SPACE : EV_FULL;
	return any ? EV_UNREAD : EV_NOTHING;
}

void pm_pipe_sync_event(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_priv *pp = p->priv;
	if (!k->tx || pp->ev_tx)
		pipe_event_run(p, k, k->priv, pipe_ring_event(k));
}

/* pktmap_fd(): from now on the fd follows the rings (see above). */
int pm_pipe_event_fd(struct pktmap_port *p)
{
	struct pipe_priv *pp = p->priv;
	pp->ev = true;
	pp->ev_tx = p->dir == PKTMAP_DIR_TX;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pipe_kpriv *tk = &pp->kp[r], *rk = &pp->kp[pp->nrings + r];
		if (p->dir & PKTMAP_DIR_RX) {
			/* Start clean: no flag of ours, no stray byte. */
			atomic_store_explicit(&rk->q->reader_sleeping, 0,
					      memory_order_relaxed);
			fifo_drain(rk->wake_own_fd);
			rk->state = RX_EMPTY;
			pm_pipe_sync_event(p, pm_rxkring(p, r));
		}
		if (pp->ev_tx) {
			/* One byte must fill the FIFO: one page. */
			if (fcntl(tk->wake_own_fd, F_SETPIPE_SZ, 4096) < 0)
				return -errno;
			atomic_store_explicit(&tk->q->writer_sleeping, 0,
					      memory_order_relaxed);
			fifo_drain(tk->wake_own_fd);
			tk->state = TX_OPEN;
			pm_pipe_sync_event(p, pm_txkring(p, r));
			if (pp->hi - pp->lo > 1) {
				struct epoll_event ev = { .events = EPOLLOUT,
							  .data.u32 = r };
				if (epoll_ctl(pp->epfd[1], EPOLL_CTL_MOD,
					      tk->wake_own_fd, &ev) != 0)
					return -errno;
			}
		}
	}
	return pp->ev_tx ? pp->tx_fd : pp->rx_fd;
}

/* The events of `events` this open can wait for: the flags and FIFOs of
 * a direction it does not bind may be another process's. */
static short pipe_bound_events(const struct pktmap_port *p, short events)
{
	return (short)(events & ((p->dir & PKTMAP_DIR_RX ? POLLIN : 0) |
				 (p->dir & PKTMAP_DIR_TX ? POLLOUT : 0)));
}

/* Announce that we are about to sleep, then look once more. */
int pm_pipe_poll_arm(struct pktmap_port *p, short events)
{
	struct pipe_priv *pp = p->priv;
	events = pipe_bound_events(p, events);
	/* An event source arms in every sync (pm_pipe_sync_event()): its fd
	 * already says what the rings hold. */
	short own = (short)((pp->ev ? POLLIN : 0) | (pp->ev_tx ? POLLOUT : 0));
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		if (events & POLLIN & ~own)
			atomic_store_explicit(&pipe_q(pp, !pp->end, r)->reader_sleeping,
					      PIPE_WAKE_WRITE, memory_order_relaxed);
		if (events & POLLOUT & ~own)
			atomic_store_explicit(&pipe_q(pp, pp->end, r)->writer_sleeping,
					      PIPE_WAKE_WRITE, memory_order_relaxed);
	}
	/* Pairs with the fence in pipe_wake_if_sleeping(). */
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		struct pm_kring *rx = pm_rxkring(p, r), *tx = pm_txkring(p, r);
		if ((events & POLLIN) && p->dir & PKTMAP_DIR_RX &&
		    atomic_load_explicit(&pipe_q(pp, !pp->end, r)->prod,
					 memory_order_relaxed) != rx->hwtail)
			return 1;
		if ((events & POLLOUT) && p->dir & PKTMAP_DIR_TX) {
			/* Ready when a txsync would move tail past cur (netmap's
			 * "wake me when more than [head, cur) is free"). */
			if (tx_has_space(tx, tx->priv))
				return 1;
		}
	}
	return 0;
}

/* Stop announcing sleep for `events`, and drain those FIFOs only. */
void pm_pipe_poll_disarm(struct pktmap_port *p, short events)
{
	struct pipe_priv *pp = p->priv;
	char buf[256];
	events = pipe_bound_events(p, events);
	if (pp->ev)
		events &= (short)~POLLIN;
	if (pp->ev_tx)
		events &= (short)~POLLOUT;
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		if (events & POLLIN) {
			/* Another binder of the ring may sleep on the flag:
			 * then it stays, and the writer's next sync clears it
			 * (with one wake-up too many, drained here next time). */
			struct pm_pipe_q *q = pipe_q(pp, !pp->end, r);
			if (atomic_load_explicit(&q->rx_binders,
						 memory_order_relaxed) <= 1)
				atomic_store_explicit(&q->reader_sleeping, 0,
						      memory_order_relaxed);
			while (read(pp->kp[pp->nrings + r].wake_own_fd, buf,
				    sizeof(buf)) == sizeof(buf))
				;
		}
		if (events & POLLOUT) {
			/* Likewise: another binder of the TX ring may sleep on
			 * the flag (a binder whose wait timed out cleared it
			 * under a sleeping one, which then slept until its own
			 * timeout). */
			struct pm_pipe_q *q = pipe_q(pp, pp->end, r);
			if (atomic_load_explicit(&q->tx_binders,
						 memory_order_relaxed) <= 1)
				atomic_store_explicit(&q->writer_sleeping, 0,
						      memory_order_relaxed);
			while (read(pp->kp[r].wake_own_fd, buf, sizeof(buf)) ==
			       sizeof(buf))
				;
		}
	}
}

/* The fd to sleep on for `events`. */
int pm_pipe_poll_fd(const struct pktmap_port *p, short events, short *pev)
{
	const struct pipe_priv *pp = p->priv;
	if (pp->ev_tx) { /* /T event source: writable means space */
		if (pp->hi - pp->lo == 1)
			*pev = POLLOUT;
		return pp->tx_fd;
	}
	events = pipe_bound_events(p, events);
	if ((events & (POLLIN | POLLOUT)) == POLLIN)
		return pp->rx_fd;
	if ((events & (POLLIN | POLLOUT)) == POLLOUT)
		return pp->tx_fd;
	return p->fd;
}
