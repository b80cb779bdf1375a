/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pipe:NAME{N and pipe:NAME}N: netmap pipes. Two ends, each with R TX and
 * R RX rings, in a region shared by the processes (or threads) that open
 * them. Ring r of one end's TX feeds ring r of the other end's RX.
 *
 * Zero-copy: txsync writes each slot's buffer into a descriptor of the
 * shared queue and takes, in exchange, the buffer the reader left in that
 * descriptor (both slots get NS_BUF_CHANGED); rxsync copies descriptors
 * into its private RX ring. Every TX+RX pair is a single-producer
 * single-consumer queue of 8-byte descriptors in the region (each side's
 * rings are private: docs/design.md, "Trust model"); its two indices
 * live in a control block in the region, two cache lines apart:
 *
 *     writer (txsync)                      reader (rxsync)
 *     fills RX slots [prod ...)            owns [cons, prod) once seen
 *     publishes prod (release)  ------->   loads prod (acquire)
 *     loads cons (acquire)      <-------   publishes cons (release)
 *
 * No slot is dropped: a full queue leaves the writer's TX ring with no
 * space (its tail stops), which is backpressure. A reader sleeping in
 * poll is woken through a named FIFO, and only when it said it sleeps
 * (a Dekker-style flag/fence pair, see pipe_poll_arm). Anything the peer
 * could have written (indices, buffer numbers, lengths) is checked before
 * it is used: a peer that breaks the protocol costs -EPROTO, not a crash.
 * The loops take four slots at a time while every value passes the
 * checks (pipe_fast.h) and fall back to one at a time before the first
 * value that does not, which the one-at-a-time loop then reports.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	_Alignas(PIPE_Q_ALIGN) _Atomic uint32_t reader_sleeping;
	_Atomic uint32_t writer_sleeping;
	/* The writers' sync word (pipe_txsync()): SYNC_PID, the pid of the
	 * process in a TX sync of this queue, or 0; SYNC_GEN, a count of the
	 * syncs that moved slots (and of the locks taken from dead holders):
	 * an open whose last sync saw another reloads its view of the ring
	 * first. Written by any of the ring's binders. (The bytes of the
	 * first PIP4 library's tx_lock and tx_gen.) */
	_Atomic uint64_t tx_sync;
};

/* A sync word: the holder's pid in the low half, the generation above. */
#define SYNC_PID(v) ((uint32_t)(v))
#define SYNC_GEN(v) ((uint32_t)((v) >> 32))

static inline uint64_t sync_word(uint32_t gen, uint32_t pid)
{
	return (uint64_t)gen << 32 | pid;
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

static struct pipe_layout pipe_layout(uint32_t R, uint32_t S)
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
	int wake_peer_fd;              /* the peer's FIFO for this direction */
	int wake_own_fd;               /* our FIFO for this direction */
	/* Event-source mode (pipe_sync_event), RX: a byte is (or is about to
	 * be) in our FIFO; our "sleeping" flag is set. TX: our FIFO holds
	 * our "no space" byte. idle counts armed empty syncs. */
	bool tok, armed, blocked;
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

static struct pm_pipe_q *pipe_q(struct pipe_priv *pp, uint32_t end, uint32_t r)
{
	return &pp->q[end * pp->nrings + r];
}

static union pm_pipe_desc *pipe_desc(struct pipe_priv *pp, uint32_t end,
				      uint32_t r)
{
	return &pp->desc[((size_t)end * pp->nrings + r) * pp->nslots];
}

static uint32_t *pipe_shadow(struct pipe_priv *pp, uint32_t end, uint32_t r)
{
	return &pp->shadow[((size_t)end * pp->nrings + r) * pp->nslots];
}

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

/* The claim on one direction (PIPE_TX, PIPE_RX) of ring r of one end:
 * each is taken by one binding, so that one process may send on an end
 * while another receives on it. A pipe's control block is at least 1024
 * bytes (pipe_layout() of the smallest pipe), so uid / 8 (its offset in
 * 1024-byte units) numbers pipes apart, and the claims of 64 MB of
 * pipes stay below the AF_XDP ports' (2^24). */
enum { PIPE_TX, PIPE_RX };

static uint32_t claim_id(uint32_t uid, uint32_t end, uint32_t dir, uint32_t r)
{
	return (((uid / 8) * 2 + end) * 2 + dir) * PM_MAX_RINGS + r;
}

/* Take the buffers of a new pipe: S per TX slot shadow and S per RX
 * descriptor, all or nothing. */
static int pipe_fill_new(struct pm_region *reg, struct pipe_priv *pp)
{
	size_t n = 2 * (size_t)pp->nrings * pp->nslots;
	uint32_t *idx = malloc(2 * n * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	int ret = pm_region_alloc_bufs(reg, idx, (uint32_t)(2 * n));
	if (ret == 0) {
		for (size_t i = 0; i < n; i++) {
			pp->desc[i].buf_idx = idx[i];
			pp->desc[i].len = 0;
			pp->desc[i].flags = 0;
			pp->shadow[i] = idx[n + i];
		}
	}
	free(idx);
	return ret;
}

/* The buffer the last owner left at *at, for slot s of k: kept when it
 * is a buffer of the pool that no slot resumed so far holds, else
 * replaced by a fresh one. Under the region lock. */
static int resume_buf(struct pktmap_port *p, struct pm_kring *k, uint32_t s,
		      uint32_t *at, uint8_t *seen)
{
	struct pm_region *reg = &p->region;
	const struct pm_bufspace bs = { .nbufs = reg->nbufs, .usable = 65535 };
	uint32_t b = PM_READ_ONCE(*at);
	if (!pm_buf_ok(&bs, b) || (seen[b / 8] & (1u << (b % 8)))) {
		if (pm_region_alloc_bufs(reg, &b, 1) != 0)
			return pm_open_error(p, -ENOMEM, "region '%s' is out of "
					     "buffers", reg->name);
		*at = b;
	}
	seen[b / 8] |= (uint8_t)(1u << (b % 8));
	k->ring->slot[s].buf_idx = b;
	return 0;
}

static int resume_invalid(struct pktmap_port *p, const struct pipe_priv *pp,
			  uint32_t r)
{
	return pm_open_error(p, -EPROTO,
			     "pipe %u ring %u: control block is invalid (written "
			     "by another program?); close every user of the pipe "
			     "so that it is rebuilt", pp->pipe_id, r);
}

/* Resume TX ring r of this end from what its last binder left in shared
 * memory (its slots' buffers are the shadow): every value is checked, a
 * buffer listed twice (or not at all) is replaced. Touches nothing of
 * the RX side, which another process may have bound. Under the region
 * lock. */
static int pipe_resume_tx(struct pktmap_port *p, struct pipe_priv *pp,
			  uint32_t r, uint8_t *seen)
{
	struct pm_kring *tx = pm_txkring(p, r);
	struct pipe_kpriv *tk = &pp->kp[r];
	uint32_t S = pp->nslots;
	uint32_t hwcur = PM_READ_ONCE(tk->q->tx_hwcur);
	uint32_t prod = atomic_load(&tk->q->prod), cons = atomic_load(&tk->q->cons);
	if (hwcur >= S || prod >= S || cons >= S)
		return resume_invalid(p, pp, r);
	for (uint32_t s = 0; s < S; s++) {
		int ret = resume_buf(p, tx, s, &tk->shadow[s], seen);
		if (ret)
			return ret;
	}
	uint32_t d = pm_ring_dist(prod, cons, S);
	tk->prod = prod;
	tk->cons = cons;
	tx->hwcur = tx->rhead = tx->rcur = hwcur;
	tx->hwtail = tx->rtail = pm_ring_add(hwcur, d ? d - 1 : S - 1, S);
	tx->ring->head = tx->ring->cur = hwcur;
	tx->ring->tail = tx->hwtail;
	return 0;
}

/* Resume RX ring r of this end, with the packets its last binder had
 * received but not released. As pipe_resume_tx(), for the RX side. */
static int pipe_resume_rx(struct pktmap_port *p, struct pipe_priv *pp,
			  uint32_t r, uint8_t *seen)
{
	struct pm_kring *rx = pm_rxkring(p, r);
	struct pipe_kpriv *rk = &pp->kp[pp->nrings + r];
	uint32_t S = pp->nslots;
	uint32_t rcons = atomic_load(&rk->q->cons);
	uint32_t rtail = PM_READ_ONCE(rk->q->rx_hwtail);
	uint32_t rprod = atomic_load(&rk->q->prod);
	if (rcons >= S || rtail >= S || rprod >= S ||
	    pm_ring_dist(rcons, rtail, S) > pm_ring_dist(rcons, rprod, S))
		return resume_invalid(p, pp, r);
	for (uint32_t s = 0; s < S; s++) {
		int ret = resume_buf(p, rx, s, &rk->desc[s].buf_idx, seen);
		if (ret)
			return ret;
	}
	for (uint32_t s = rcons; s != rtail; s = s + 1 == S ? 0 : s + 1) {
		struct netmap_slot *sl = &rx->ring->slot[s];
		uint32_t len = PM_READ_ONCE(rk->desc[s].len);
		sl->len = (uint16_t)(len <= p->region.buf_size - p->region.headroom ?
					     len : 0);
	}
	rx->hwcur = rx->rhead = rx->rcur = rcons;
	rx->hwtail = rx->rtail = rtail;
	rx->ring->head = rx->ring->cur = rcons;
	rx->ring->tail = rtail;
	return 0;
}

static _Atomic uint64_t *sync_of(struct pm_kring *k);
static int pipe_lock_wait(struct pktmap_port *p, struct pm_kring *k);
static void sync_release(struct pipe_kpriv *kp, _Atomic uint64_t *w);

/* Resume ring r of this end in direction dir under its sync lock: other
 * processes may bind the ring and sync it meanwhile. */
static int pipe_resume_locked(struct pktmap_port *p, struct pipe_priv *pp,
			      uint32_t dir, uint32_t r, uint8_t *seen)
{
	struct pm_kring *k = dir == PIPE_TX ? pm_txkring(p, r) : pm_rxkring(p, r);
	struct pipe_kpriv *kp = k->priv;
	int ret = pipe_lock_wait(p, k);
	if (ret == -EBUSY && pp->nowait)
		return pm_open_error(p, ret, "pipe %u %s ring %u: another process "
				     "is syncing it, and this open does not wait "
				     "for it: try again", pp->pipe_id,
				     dir == PIPE_TX ? "TX" : "RX", r);
	if (ret < 0)
		return ret;
	ret = dir == PIPE_TX ? pipe_resume_tx(p, pp, r, seen) :
			       pipe_resume_rx(p, pp, r, seen);
	kp->gen = SYNC_GEN(atomic_load(sync_of(k)));
	sync_release(kp, sync_of(k));
	return ret;
}

/* Pipes by name in any memory. A pipe made in a region other than its
 * own, pipe.NAME (lb makes its output pipes in its input port's memory,
 * "@mem:"), leaves a locator in the user directory: the symbolic link
 * .pipe.NAME{ID, whose target is that region's name. An end opened by
 * name looks there first, so that it joins the pipe its other end made,
 * in that memory (zero-copy with everything else in it). The directory
 * is ours alone (0700), so nobody else plants a locator; a stale one (its
 * region gone, or no such pipe in it) is ignored and replaced, and the
 * region's last user removes the locators naming it (region.c). */
static int locator_path(char *out, size_t len, const struct pm_name *nm)
{
	char dir[64], err[300];
	if (pm_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0)
		return -1;
	int n = snprintf(out, len, "%s/.pipe.%s{%d", dir, nm->body, nm->pipe_id);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Is there a file of ours at path (a region, or with link a locator)? */
static bool ours(const char *path, bool link)
{
	struct stat st;
	return lstat(path, &st) == 0 && st.st_uid == geteuid() &&
	       (link ? S_ISLNK(st.st_mode) : S_ISREG(st.st_mode));
}

/* Point the locator of nm's pipe at region regname ("": remove it). */
static void locator_set(const struct pm_name *nm, const char *regname)
{
	char path[200];
	if (locator_path(path, sizeof(path), nm) != 0)
		return;
	if (ours(path, true))
		unlink(path);
	if (regname[0])
		(void)symlink(regname, path);
}

/* Does region `name` (a file of ours) hold object `key`? */
static bool region_holds(const char *name, const char *key,
			 const struct pm_region_params *rp)
{
	char dir[64], err[300], path[200];
	if (pm_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pm_region r;
	if (!ours(path, false) || pm_region_open(&r, name, rp, err, sizeof(err)))
		return false;
	size_t size;
	bool found = false;
	if (pm_region_lock(&r) == 0) {
		found = pm_region_lookup(&r, key, &size) != 0;
		pm_region_unlock(&r);
	}
	pm_region_close(&r);
	return found;
}

/* Where the pipe `key` already is, if not in regname: the region its
 * locator names, else pipe.NAME; regname is changed to it. */
static void pipe_find(const struct pm_name *nm, const char *key,
		      const struct pm_region_params *rp, char *regname,
		      size_t len)
{
	char cand[2][64], path[200];
	cand[0][0] = 0;
	if (locator_path(path, sizeof(path), nm) == 0 && ours(path, true)) {
		ssize_t n = readlink(path, cand[0], sizeof(cand[0]) - 1);
		cand[0][n > 0 ? n : 0] = 0;
	}
	snprintf(cand[1], sizeof(cand[1]), "pipe.%s", nm->body);
	for (int i = 0; i < 2; i++) {
		if (!cand[i][0] || strcmp(cand[i], regname) == 0 ||
		    strchr(cand[i], '/') || !region_holds(cand[i], key, rp))
			continue;
		snprintf(regname, len, "%s", cand[i]);
		return;
	}
}

/* Where this end's pipe `key` is, into regname: without @mem:,
 * wherever its other end made it (pipe_find()); with @mem:NAME, in NAME
 * and nowhere else. A pipe of that name and number in another memory is
 * refused, naming both: one name is one pipe, and an end that asked for
 * one memory must not get buffers of another. */
static int pipe_where(struct pktmap_port *p, const struct pm_name *nm,
		      const char *key, const struct pm_region_params *rp,
		      char *regname, size_t len)
{
	char found[64];
	snprintf(found, sizeof(found), "%s", regname);
	pipe_find(nm, key, rp, found, sizeof(found));
	if (strcmp(found, regname) == 0)
		return 0;
	if (!nm->conf.region[0]) {
		snprintf(regname, len, "%s", found);
		return 0;
	}
	if (region_holds(regname, key, rp))
		return 0;
	return pm_open_error(p, -EEXIST,
			     "pipe %s%c%d exists in memory '%s', not in '%s' "
			     "(@mem:%s): open it with @mem:%s or with no @mem:, "
			     "or use another pipe name", nm->body,
			     nm->reg == NR_REG_PIPE_SLAVE ? '}' : '{',
			     nm->pipe_id, found, regname, regname, found);
}

/* Check what the name asks of a pipe and work out the rings (*R) and
 * slots (*S) a new pipe would get, and the region it goes in. */
static int pipe_check(struct pktmap_port *p, const struct pm_name *nm,
		      uint32_t *R, uint32_t *S, char *regname, size_t len)
{
	const struct pm_conf *c = &nm->conf;
	if ((c->tx_rings && c->rx_rings && c->tx_rings != c->rx_rings) ||
	    (c->tx_slots && c->rx_slots && c->tx_slots != c->rx_slots))
		return pm_open_error(p, -EINVAL,
				     "a pipe has as many TX as RX rings and slots");
	*R = c->tx_rings ? c->tx_rings : (c->rx_rings ? c->rx_rings : 1);
	*S = c->tx_slots ? c->tx_slots : (c->rx_slots ? c->rx_slots :
							PM_DEFAULT_SLOTS);
	if (strlen(nm->body) > 40)
		return pm_open_error(p, -EINVAL,
				     "pipe names are at most 40 characters");
	if (c->region[0])
		snprintf(regname, len, "%s", c->region);
	else
		snprintf(regname, len, "pipe.%s", nm->body);
	return 0;
}

/* What a region must hold for a pipe of R rings of S slots. */
static struct pm_region_params pipe_region_params(const struct pm_conf *c,
						  uint32_t R, uint32_t S)
{
	struct pm_region_params rp = {
		.bufs = 2 + 4 * R * S + c->extra_bufs + 64,
		.buf_size = c->buf_size,
		.obj_size = pipe_layout(R, S).size + 4096,
		.hugepages = c->hugepages,
		/* A region shared by choice (@mem:) may later host AF_XDP
		 * ports, whose frames start 256 bytes into each buffer. */
		.headroom = c->region[0] ? PM_XDP_HEADROOM : 0,
		.share = c->share,
		.share_gid = c->share_gid,
		.ring_bytes = 2 * (size_t)R * pm_ring_size(S) +
			      pm_nifp_size(R, R, 0, 0),
	};
	if (c->bufs > rp.bufs)
		rp.bufs = c->bufs;
	return rp;
}

/* Join the pipe whose control block is at ofs (found_size bytes): read
 * its two layout numbers once, check them, and take *R and *S from them.
 * Under the region lock. */
static int pipe_join(struct pktmap_port *p, const struct pipe_priv *pp,
		     const struct pm_conf *c, uint64_t ofs, size_t found_size,
		     uint32_t *R, uint32_t *S)
{
	const struct pm_region *reg = &p->region;
	const struct pm_pipe_shared *sh = pm_region_ptr(reg, ofs);
	uint32_t magic = PM_READ_ONCE(sh->magic);
	uint32_t r = PM_READ_ONCE(sh->nrings), s = PM_READ_ONCE(sh->nslots);
	if (magic == PIPE_MAGIC_OLD)
		return pm_open_error(p, -EPROTO,
				     "pipe %u in region '%s' was made by an older "
				     "pktmap (one claim per end): open it with the "
				     "same pktmap as its users, or close them first",
				     pp->pipe_id, reg->name);
	if (magic != PIPE_MAGIC || r == 0 || r > PM_MAX_RINGS || s < 4 ||
	    s > PM_MAX_SLOTS || pipe_layout(r, s).size > found_size)
		return pm_open_error(p, -EPROTO,
				     "pipe %u in region '%s': its control block is "
				     "invalid (written by another program?); close "
				     "every user of the pipe so that it is rebuilt",
				     pp->pipe_id, reg->name);
	if ((c->tx_rings && c->tx_rings != r) || (c->tx_slots && c->tx_slots != s))
		return pm_open_error(p, -EINVAL,
				     "the pipe exists with rings=%u slots=%u: open "
				     "it with the same @conf or none", r, s);
	*R = r;
	*S = s;
	return 0;
}

/* Make room for a new pipe `key` of R rings of S slots: its buffers are
 * counted first, so that a pipe that cannot be built leaves nothing
 * behind. Sets *ofs and *created. Under the region lock. */
static int pipe_reserve(struct pktmap_port *p, const struct pipe_priv *pp,
			const char *key, uint32_t R, uint32_t S, uint64_t *ofs,
			bool *created)
{
	struct pm_region *reg = &p->region;
	uint32_t need = 4 * R * S, free_bufs = pm_region_free_count(reg);
	if (free_bufs < need)
		return pm_open_error(p, -ENOMEM,
				     "region '%s' is out of buffers for pipe %u (%u "
				     "needed, %u free): give it more with "
				     "@conf:bufs=", reg->name, pp->pipe_id, need,
				     free_bufs);
	*ofs = pm_region_object(reg, key, pipe_layout(R, S).size, created);
	if (!*ofs)
		return pm_open_error(p, -ENOMEM,
				     "region '%s' has no room for pipe %u (create "
				     "the region with more @conf:bufs=)", reg->name,
				     pp->pipe_id);
	return 0;
}

/* Point pp at the pipe's control block, queues, descriptors and shadows,
 * every offset computed here from R and S. */
static void pipe_attach(struct pipe_priv *pp, const struct pm_region *reg,
			uint64_t ofs, uint32_t R, uint32_t S)
{
	struct pipe_layout lay = pipe_layout(R, S);
	pp->sh = pm_region_ptr(reg, ofs);
	pp->uid = (uint32_t)((ofs - reg->obj_ofs) / 128);
	pp->nrings = R;
	pp->nslots = S;
	pp->q = pm_region_ptr(reg, ofs + lay.q);
	pp->desc = pm_region_ptr(reg, ofs + lay.desc);
	pp->shadow = pm_region_ptr(reg, ofs + lay.shadow);
}

/* A pipe this open made: fill it with buffers, then publish its layout
 * and, last, its magic; leave a locator when it lives in another
 * region than its own. Under the region lock. */
static int pipe_publish(struct pktmap_port *p, struct pipe_priv *pp,
			const struct pm_name *nm, const char *regname)
{
	struct pm_region *reg = &p->region;
	if (pipe_fill_new(reg, pp) != 0) /* only a peer racing the free list */
		return pm_open_error(p, -ENOMEM, "region '%s' is out of buffers "
				     "for pipe %u", reg->name, pp->pipe_id);
	pp->sh->nrings = pp->nrings;
	pp->sh->nslots = pp->nslots;
	/* Pairs with a joiner's reads after it takes the region lock: the
	 * layout is there before the magic says so. */
	atomic_thread_fence(memory_order_release);
	pp->sh->magic = PIPE_MAGIC;
	if (!nm->conf.share) {
		char own[64];
		snprintf(own, sizeof(own), "pipe.%s", nm->body);
		locator_set(nm, strcmp(regname, own) ? regname : "");
	}
	return 0;
}

/* Does this open bind direction dir (PIPE_TX, PIPE_RX)? */
static bool binds(const struct pktmap_port *p, uint32_t dir)
{
	return p->dir & (dir == PIPE_TX ? PKTMAP_DIR_TX : PKTMAP_DIR_RX);
}

/* Claim the rings the name binds, [lo, hi), for this end, per direction.
 * A ring may be bound by several opens (a shared claim; their syncs take
 * turns, pipe_txsync() and pipe_rxsync()) unless one asks
 * PKTMAP_OPEN_EXCLUSIVE. An RX ring counts its binders. Under the region
 * lock. */
static int pipe_claim(struct pktmap_port *p, struct pipe_priv *pp,
		      const struct pm_name *nm)
{
	pp->lo = nm->ring >= 0 ? (uint32_t)nm->ring : 0;
	pp->hi = nm->ring >= 0 ? (uint32_t)nm->ring + 1 : pp->nrings;
	if (pp->lo >= pp->nrings)
		return pm_open_error(p, -EINVAL, "ring %u does not exist (the pipe "
				     "has %u ring pairs)", pp->lo, pp->nrings);
	for (uint32_t r = pp->lo; r < pp->hi; r++) {
		uint32_t tx = claim_id(pp->uid, pp->end, PIPE_TX, r);
		uint32_t rx = claim_id(pp->uid, pp->end, PIPE_RX, r);
		bool tx_others = binds(p, PIPE_TX) &&
				 pm_region_claimed(&p->region, tx);
		if (binds(p, PIPE_TX) &&
		    (pp->excl ? pm_region_claim(&p->region, tx) :
				pm_region_claim_shared(&p->region, tx)))
			return pm_open_error(p, -EBUSY,
				"this end's TX ring %u is bound by another open%s: "
				"close it, or bind another ring, end (%c) or pipe "
				"number", r, pp->excl ? ", and this one asks to "
				"bind it alone (/x)" : " that asked to bind it "
				"alone (/x)", pp->end ? '{' : '}');
		if (binds(p, PIPE_TX)) {
			/* As the RX ring's count below. */
			_Atomic uint32_t *nt = &pipe_q(pp, pp->end, r)->tx_binders;
			if (tx_others)
				atomic_fetch_add(nt, 1);
			else
				atomic_store(nt, 1);
			pp->tx_counted++;
		}
		if (!binds(p, PIPE_RX))
			continue;
		bool others = pm_region_claimed(&p->region, rx);
		if (pp->excl ? pm_region_claim(&p->region, rx) :
			       pm_region_claim_shared(&p->region, rx))
			return pm_open_error(p, -EBUSY,
				"this end's RX ring %u is bound by another open%s: "
				"close it, or bind another ring, end (%c) or pipe "
				"number", r, pp->excl ? ", and this one asks to "
				"bind it alone (/x)" : " that asked to bind it "
				"alone (/x)", pp->end ? '{' : '}');
		/* Exact while every binder closes; one killed leaves the count
		 * high until a binder finds itself alone again. */
		_Atomic uint32_t *nb = &pipe_q(pp, !pp->end, r)->rx_binders;
		if (others)
			atomic_fetch_add(nb, 1);
		else
			atomic_store(nb, 1);
		pp->counted++;
	}
	return 0;
}

/* This end's private rings, resumed from what the queues hold, in the
 * directions it binds. Under the region lock. */
static int pipe_rings(struct pktmap_port *p, struct pipe_priv *pp,
		      const struct pm_name *nm)
{
	uint32_t R = pp->nrings, S = pp->nslots;
	char ifname[IFNAMSIZ];
	snprintf(ifname, sizeof(ifname), "%.11s%c%u", nm->body,
		 pp->end ? '}' : '{', pp->pipe_id);
	int ret = pm_port_make_rings(p, ifname, R, R, 0, 0, S, S);
	if (ret)
		return ret;
	pp->kp = calloc(2 * R, sizeof(*pp->kp));
	if (!pp->kp)
		return -ENOMEM;
	for (uint32_t i = 0; i < 2 * R; i++)
		pp->kp[i].wake_own_fd = pp->kp[i].wake_peer_fd = -1;
	p->mode = PKTMAP_MODE_ZEROCOPY;
	uint8_t *seen = calloc((p->region.nbufs + 7) / 8, 1);
	if (!seen)
		return -ENOMEM;
	for (uint32_t r = pp->lo; r < pp->hi && ret == 0; r++) {
		struct pipe_kpriv *tk = &pp->kp[r], *rk = &pp->kp[R + r];
		tk->q = pipe_q(pp, pp->end, r);
		tk->desc = pipe_desc(pp, pp->end, r);
		tk->shadow = pipe_shadow(pp, pp->end, r);
		rk->q = pipe_q(pp, !pp->end, r);
		rk->desc = pipe_desc(pp, !pp->end, r);
		pm_txkring(p, r)->priv = tk;
		pm_rxkring(p, r)->priv = rk;
		if (binds(p, PIPE_TX))
			ret = pipe_resume_locked(p, pp, PIPE_TX, r, seen);
		if (ret == 0 && binds(p, PIPE_RX))
			ret = pipe_resume_locked(p, pp, PIPE_RX, r, seen);
	}
	free(seen);
	return ret;
}

/* Everything done under the region lock: join or create the pipe `key`,
 * publish a new one, claim this end's rings and lay them out. */
static int pipe_setup_locked(struct pktmap_port *p, struct pipe_priv *pp,
			     const struct pm_name *nm, const char *key,
			     const char *regname, uint32_t R, uint32_t S)
{
	size_t found_size = 0;
	bool created = false;
	uint64_t ofs = pm_region_lookup(&p->region, key, &found_size);
	int ret = ofs ? pipe_join(p, pp, &nm->conf, ofs, found_size, &R, &S) :
			pipe_reserve(p, pp, key, R, S, &ofs, &created);
	if (ret)
		return ret;
	pipe_attach(pp, &p->region, ofs, R, S);
	if (created && (ret = pipe_publish(p, pp, nm, regname)) != 0)
		return ret;
	ret = pipe_claim(p, pp, nm);
	return ret ? ret : pipe_rings(p, pp, nm);
}

/* The wake-up FIFOs of the bound rings (of the directions bound: the
 * other direction's may belong to another process), and the pollable
 * fds over them: per direction (the FIFO itself for one ring, else an
 * epoll set), and one over everything for pktmap_fd(). */
static int pipe_wakeups(struct pktmap_port *p, struct pipe_priv *pp)
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

/* Open one end of a pipe: check the name, find or create the region,
 * then under its lock join or create the pipe and claim this end, then
 * the wake-ups. A failure at any step is rolled back by pipe_close(),
 * which pktmap_open() calls: what was taken is in p->priv. */
static int pipe_open(struct pktmap_port *p, const struct pm_name *nm,
		     const struct pktmap_open_opts *o)
{
	const struct pm_conf *c = &nm->conf;
	char err[300], regname[64], key[48];
	uint32_t R = 1, S = PM_DEFAULT_SLOTS; /* set by pipe_check() */

	int ret = pipe_check(p, nm, &R, &S, regname, sizeof(regname));
	if (ret)
		return ret;
	struct pipe_priv *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	pp->epfd[0] = pp->epfd[1] = pp->epfd[2] = -1;
	p->priv = pp;
	pp->end = nm->reg == NR_REG_PIPE_SLAVE;
	pp->pid = (uint32_t)getpid();
	pp->excl = o && (o->flags & PKTMAP_OPEN_EXCLUSIVE);
	pp->nowait = o && (o->flags & PKTMAP_OPEN_NOWAIT);
	pp->pipe_id = (uint32_t)nm->pipe_id;

	struct pm_region_params rp = pipe_region_params(c, R, S);
	rp.nowait = pp->nowait;
	/* Several pipes (names and numbers) may share one @mem: region. */
	snprintf(key, sizeof(key), "p:%s{%u", nm->body, pp->pipe_id);
	/* An end opened by name joins its pipe wherever the other end made
	 * it (regions shared with a group are found by their name only). */
	if (!c->share &&
	    (ret = pipe_where(p, nm, key, &rp, regname, sizeof(regname))) != 0)
		return ret;
	ret = pm_region_open(&p->region, regname, &rp, err, sizeof(err));
	if (ret)
		return pm_open_error(p, ret, "%s", err);
	ret = pm_region_lock(&p->region);
	if (ret == -EBUSY) /* nowait */
		return pm_open_error(p, ret, "region '%s' is locked by another "
				     "process, and this open does not wait for "
				     "it: try again", p->region.name);
	if (ret)
		return pm_open_error(p, ret, "region '%s' is locked by another "
				     "process for more than %d ms: stop it",
				     p->region.name, PM_LOCK_DEADLINE_MS);
	ret = pipe_setup_locked(p, pp, nm, key, regname, R, S);
	pm_region_unlock(&p->region);
	return ret ? ret : pipe_wakeups(p, pp);
}

#ifdef PM_TEST_HOOKS
/* Tests only: libpktmap_internal is built with PM_TEST_HOOKS, the
 * shipped library is not. */
int pm_pipe_tx_stall, pm_pipe_rx_stall;

uint32_t *pm_pipe_peer_desc(struct pktmap_port *p, uint32_t ring)
{
	struct pipe_priv *pp = p->priv;
	if (p->ops != &pm_pipe_ops || ring >= pp->nrings)
		return NULL;
	return &pipe_desc(pp, !pp->end, ring)->buf_idx;
}
#endif

/* Wake the other side if, and only if, it announced that it sleeps. The
 * full fence pairs with the one in pipe_poll_arm(): either the sleeper
 * sees what we just published, or we see its flag. */
static void wake_if_sleeping(struct pktmap_port *p, _Atomic uint32_t *flag,
			     int fd)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (pm_likely(!atomic_load_explicit(flag, memory_order_relaxed)))
		return;
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

static void report_proto(struct pktmap_port *p, struct pm_kring *k,
			 const char *what, uint32_t v)
{
	pm_stat_add(&k->st->drop_invalid, 1);
	pm_log_ratelimited(p, pm_rl_slot(p, (int)k->tx),
			   "%s: %s ring %u: the peer wrote %s %u into the shared "
			   "ring: ignored",
			   p->name, k->tx ? "TX" : "RX", k->ring->ringid, what, v);
}

/* The writer's load of the reader's consumer index, checked and cached
 * in kp->cons. Pairs with the release store of cons in pipe_rxsync(): the
 * reader is done with the descriptors before cons. -EPROTO (reported)
 * when the peer wrote an index outside the ring. */
static inline int load_cons(struct pktmap_port *p, struct pm_kring *k,
			    uint32_t *cons)
{
	struct pipe_kpriv *kp = k->priv;
	uint32_t c = atomic_load_explicit(&kp->q->cons, memory_order_acquire);
	if (pm_unlikely(c >= k->nslots)) {
		report_proto(p, k, "consumer index", c);
		return -EPROTO;
	}
	kp->cons = *cons = c;
	return 0;
}

/* Another open synced TX ring k since we did: take its view. The slots'
 * buffers are the shadow (each checked: a bad one leaves ours), the
 * indices those its last sync published. Slots our application filled
 * on the old view are dropped, and said so: a binder syncs (or polls)
 * when its turn comes, before it fills slots. */
static void pipe_tx_reload(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	uint32_t S = k->nslots;
	uint32_t hwcur = PM_READ_ONCE(kp->q->tx_hwcur);
	uint32_t prod = atomic_load(&kp->q->prod), cons = atomic_load(&kp->q->cons);
	if (hwcur >= S || prod >= S || cons >= S) {
		report_proto(p, k, "ring index", hwcur >= S ? hwcur :
			     prod >= S ? prod : cons);
		hwcur = prod = cons = 0; /* an empty ring: nothing goes out */
	}
	for (uint32_t s = 0; s < S; s++) {
		uint32_t b = PM_READ_ONCE(kp->shadow[s]);
		if (pm_buf_ok(&p->bs, b))
			k->ring->slot[s].buf_idx = b;
		else
			report_proto(p, k, "buffer index", b);
	}
	if (k->rhead != k->hwcur)
		pm_log_ratelimited(p, pm_rl_slot(p, 1), "%s: TX ring %u: another "
				   "open synced it since this one did: the %u "
				   "slots filled before this sync are dropped "
				   "(sync or poll first, then fill)", p->name,
				   k->ring->ringid,
				   pm_ring_dist(k->hwcur, k->rhead, S));
	uint32_t d = pm_ring_dist(prod, cons, S);
	kp->prod = prod;
	kp->cons = cons;
	k->hwcur = k->rhead = k->rcur = hwcur;
	k->hwtail = k->rtail = pm_ring_add(hwcur, d ? d - 1 : S - 1, S);
	k->ring->head = k->ring->cur = hwcur;
	k->ring->tail = k->hwtail;
}

/* Another open synced RX ring k since we did: take its view, the ring
 * as that sync left it (as netmap's binders of one ring share it):
 * packets [cons, rx_hwtail) unreleased. Slots our application released
 * since our last sync count only if the other open released them too:
 * binders take turns, each syncing when its turn comes. Each descriptor
 * is read once and checked before it reaches a slot; at the first that
 * fails, our indices stay as they were (slots already filled hold
 * checked buffers). */
static void pipe_rx_reload(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	uint32_t S = k->nslots;
	uint32_t cons = atomic_load(&kp->q->cons), prod = atomic_load(&kp->q->prod);
	uint32_t tail = PM_READ_ONCE(kp->q->rx_hwtail);
	if (cons >= S || tail >= S || prod >= S ||
	    pm_ring_dist(cons, tail, S) > pm_ring_dist(cons, prod, S)) {
		report_proto(p, k, "ring index", cons >= S ? cons :
			     tail >= S ? tail : prod);
		return;
	}
	if (k->rhead != k->hwcur)
		pm_log_ratelimited(p, pm_rl_slot(p, 0), "%s: RX ring %u: another "
				   "open synced it since this one did: the %u "
				   "slots released here since are released only "
				   "if that open released them (take turns: "
				   "sync when your turn comes)", p->name,
				   k->ring->ringid,
				   pm_ring_dist(k->hwcur, k->rhead, S));
	for (uint32_t s = cons; s != tail; s = s + 1 == S ? 0 : s + 1) {
		union pm_pipe_desc d = { .word = PM_READ_ONCE(kp->desc[s].word) };
		if (!pm_buf_ok(&p->bs, d.buf_idx) || d.len > p->bs.usable) {
			report_proto(p, k, "buffer index", d.buf_idx);
			return;
		}
		struct netmap_slot *sl = &k->ring->slot[s];
		sl->buf_idx = d.buf_idx;
		sl->len = d.len;
		sl->flags = (uint16_t)((d.flags & NS_MOREFRAG) | NS_BUF_CHANGED);
	}
	k->hwcur = k->rhead = k->rcur = cons;
	k->hwtail = k->rtail = tail;
	k->ring->head = k->ring->cur = cons;
	k->ring->tail = tail;
}

/* Has process pid died (gone, or a zombie nobody reaped)? */
static bool pid_gone(uint32_t pid)
{
	if (kill((pid_t)pid, 0) != 0)
		return errno == ESRCH;
	char path[32], st[64] = "";
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	const char *e = strrchr(st, ')'); /* after "pid (comm)" */
	return n && e && (e[2] == 'Z' || e[2] == 'X');
}

/* Ring k's sync word: q->tx_sync or q->rx_sync. */
static _Atomic uint64_t *sync_of(struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	return k->tx ? &kp->q->tx_sync : &kp->q->rx_sync;
}

/* The lock, in one compare-and-swap, if it is free and nobody synced
 * since our last sync (the generation is ours). */
static inline bool sync_try(struct pipe_kpriv *kp, _Atomic uint64_t *w,
			    uint32_t pid)
{
	uint64_t mine = sync_word(kp->gen, 0);
	return atomic_compare_exchange_strong_explicit(
		w, &mine, sync_word(kp->gen, pid), memory_order_acquire,
		memory_order_relaxed);
}

/* Unlock, with kp->gen as the generation: a sync that moved something
 * counted it up (under the lock), so the other binders reload. */
static void sync_release(struct pipe_kpriv *kp, _Atomic uint64_t *w)
{
	atomic_store_explicit(w, sync_word(kp->gen, 0), memory_order_release);
}

/* Take ring k's sync lock: wait for its holder, or take it from a
 * holder that died (its sync left the queue as resumable as a closed
 * end's: pipe_tx_reload() or pipe_rx_reload() takes it up). 0, 1 when
 * taken from a dead holder, -EBUSY (said) after PM_LOCK_DEADLINE_MS of
 * a live holder, or at once when the port was opened with
 * PKTMAP_OPEN_NOWAIT (not said: the caller counts it). */
static int pipe_lock_wait(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_priv *pp = p->priv;
	_Atomic uint64_t *w = sync_of(k);
	struct timespec t0, now, pause = { 0, 20000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint64_t v = atomic_load(w);
		uint32_t h = SYNC_PID(v);
		if (h == 0 || (h != pp->pid && pid_gone(h))) {
			/* A dead holder's view is the queue's: the others
			 * reload (a new generation). */
			if (atomic_compare_exchange_strong(
				    w, &v, sync_word(SYNC_GEN(v) + (h != 0), pp->pid)))
				return h != 0;
			continue;
		}
		if (pp->nowait)
			return -EBUSY;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 +
		    (now.tv_nsec - t0.tv_nsec) / 1000000 >= PM_LOCK_DEADLINE_MS) {
			pm_log_ratelimited(p, pm_rl_slot(p, (int)k->tx), "%s: %s "
					   "ring %u: process %u has been syncing "
					   "it for %d ms: stop it", p->name,
					   k->tx ? "TX" : "RX", k->ring->ringid,
					   h, PM_LOCK_DEADLINE_MS);
			return -EBUSY;
		}
		nanosleep(&pause, NULL);
	}
}

/* The syncs' slow path (sync_try() failed): wait for the lock, and
 * reload our view when another open synced last. */
static int pipe_lock_slow(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	int ret = pipe_lock_wait(p, k);
	if (ret < 0)
		return ret;
	uint32_t gen = SYNC_GEN(atomic_load_explicit(sync_of(k),
						     memory_order_relaxed));
	if (gen != kp->gen) {
		if (k->tx)
			pipe_tx_reload(p, k);
		else
			pipe_rx_reload(p, k);
		kp->gen = gen;
	}
	return 0;
}

/* Move submitted TX slots into the queue, swapping buffers: each slot's
 * buffer goes out in a descriptor, and the slot gets the buffer the reader
 * returned in that descriptor's place. */
static int pipe_txsync_locked(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	struct pm_pipe_q *q = kp->q;
	union pm_pipe_desc *desc = kp->desc;
	uint32_t *shadow = kp->shadow;
	struct netmap_slot *slot = k->ring->slot;
	const struct pm_bufspace bs = p->bs;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead, prod = kp->prod;
	uint32_t cons = kp->cons;
	uint64_t pkts = 0, bytes = 0;
	int ret = 0;

	/* The consumer index cached by the last sync is enough unless it
	 * leaves less room than asked for (or nothing was asked: a
	 * refresh); then, and after moving slots, the shared one is read. */
	uint32_t want = pm_ring_dist(i, head, n);
	uint32_t space = n - 1 - pm_ring_dist(cons, prod, n);
	if (space < want || want == 0) {
		if (load_cons(p, k, &cons))
			return -EPROTO;
		space = n - 1 - pm_ring_dist(cons, prod, n);
	}
	uint32_t moved = 0, todo = want < space ? want : space;
	while (todo) {
		/* A run of slots and descriptors with no wrap in either. */
		uint32_t run = todo, r;
		if (run > n - i)
			run = n - i;
		if (run > n - prod)
			run = n - prod;
		struct netmap_slot *ts = &slot[i];
		union pm_pipe_desc *d = &desc[prod];
		uint32_t *sh = &shadow[i];
		uint32_t flags_or = 0;
		r = pipe_tx_fast(d, ts, sh, run, &bs, &bytes, &flags_or);
		for (; r < run; r++) {
			uint32_t idx = ts[r].buf_idx, len = ts[r].len, fl = ts[r].flags;
			/* The buffer the reader gave back here: read once. */
			uint32_t ridx = PM_READ_ONCE(d[r].buf_idx);
			if (pm_unlikely(!pm_buf_ok(&bs, idx) || len - 1 >= bs.usable ||
					!pm_buf_ok(&bs, ridx)))
				break; /* the slow path below says which */
			union pm_pipe_desc out = {
				.buf_idx = idx, .len = (uint16_t)len,
				.flags = (uint16_t)(fl & NS_MOREFRAG) };
			PM_WRITE_ONCE(d[r].word, out.word); /* one store */
			ts[r].buf_idx = ridx;
			ts[r].flags = NS_BUF_CHANGED;
			sh[r] = ridx;
			bytes += len;
			flags_or |= fl;
		}
		uint32_t frags = 0;
		if (pm_unlikely(flags_or & NS_MOREFRAG)) /* chains: count them */
			for (uint32_t x = 0; x < r; x++)
				frags += (PM_READ_ONCE(d[x].flags) & NS_MOREFRAG) != 0;
		pkts += r - frags;
		moved += r;
		todo -= r;
		i = pm_ring_add(i, r, n);
		prod = pm_ring_add(prod, r, n);
		if (pm_likely(r == run))
			continue;
		/* Slot i failed a check: a bad slot of ours is dropped (and
		 * counted), a bad buffer index from the reader stops us. */
		uint32_t idx = ts[r].buf_idx, len = ts[r].len;
		enum pm_slot_verdict v = pm_slot_check(&bs, idx, len, 1);
		if (v != PM_SLOT_OK) {
			pm_slot_reject(p, k, i, idx, len, v);
			i = i + 1 == n ? 0 : i + 1;
			todo--;
			continue;
		}
		report_proto(p, k, "buffer index", PM_READ_ONCE(d[r].buf_idx));
		ret = -EPROTO;
		break;
	}
#ifdef PM_TEST_HOOKS
	if (pm_pipe_tx_stall && moved)
		raise(SIGSTOP);
#endif
	space -= moved;
	k->hwcur = i;
	q->tx_hwcur = i;
	if (moved) {
		kp->prod = prod;
		/* Pairs with the acquire load of prod in pipe_rxsync(): the
		 * descriptors before prod are written. */
		atomic_store_explicit(&q->prod, prod, memory_order_release);
		kp->gen++; /* the other binders reload (sync_release()) */
		pm_count(k, pkts, bytes);
		wake_if_sleeping(p, &q->reader_sleeping, kp->wake_peer_fd);
		/* Look again, so that the application's tail shows the room
		 * the reader made meanwhile: a sync hands out what there is,
		 * as netmap's does (forwarders count a queue full from it).
		 * One load per batch that moved. */
		if (load_cons(p, k, &cons))
			return -EPROTO;
		space = n - 1 - pm_ring_dist(cons, prod, n);
	}
	k->hwtail = pm_ring_add(i, space, n);
	return ret;
}

/* Several opens may bind a ring (pipe_claim()); the syncs of one side
 * take turns under its sync word w (q->tx_sync or q->rx_sync), which
 * holds the pid of the syncing process, and one that finds another
 * synced last takes its view first (pipe_tx_reload(), pipe_rx_reload()).
 * A lone binder pays one compare-and-swap and one store per sync. */
static inline int pipe_sync_turn(struct pktmap_port *p, struct pm_kring *k,
				 _Atomic uint64_t *w,
				 int (*locked)(struct pktmap_port *, struct pm_kring *))
{
	struct pipe_kpriv *kp = k->priv;
	struct pipe_priv *pp = p->priv;
	if (pm_unlikely(!sync_try(kp, w, pp->pid))) {
		int ret = pipe_lock_slow(p, k);
		if (ret)
			return ret;
	}
	int ret = locked(p, k);
	sync_release(kp, w);
	/* A page of a shared hugetlb region taken away (guard.h): every
	 * sync from the one that met the loss on fails. One look, after the
	 * work: the mark never clears, and work done on a lost region reads
	 * the guard's private zeros, which the checks refuse like any
	 * other garbage. */
	if (pm_unlikely(atomic_load_explicit(&p->region.lost, memory_order_relaxed)))
		return pm_region_lost(p, &p->region);
	return ret;
}

static int pipe_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	return pipe_sync_turn(p, k, &kp->q->tx_sync, pipe_txsync_locked);
}

/* Give the released slots [i, head) back to the writer through their
 * descriptors. Usually a released slot still holds the buffer its
 * descriptor brought: then the descriptor says so already, and not
 * writing it leaves its cache line clean for the writer. The application
 * may have swapped another buffer in: the writer will take it, so it
 * must be one of the pool. Returns where it stopped: head, or a bad slot
 * (*ret -EINVAL, reported). */
static inline uint32_t rx_give_back(struct pktmap_port *p, struct pm_kring *k,
				    const struct pm_bufspace *bs, uint32_t i,
				    uint32_t head, int *ret)
{
	struct pipe_kpriv *kp = k->priv;
	union pm_pipe_desc *desc = kp->desc;
	struct netmap_slot *slot = k->ring->slot;
	uint32_t n = k->nslots;
	while (i != head) {
		/* Runs of untouched slots, four at a time. */
		uint32_t run = head > i ? head - i : n - i;
		i = pm_ring_add(i, pipe_release_same(&desc[i], &slot[i], run), n);
		if (i == head)
			break;
		uint32_t idx = slot[i].buf_idx;
		if (pm_unlikely(PM_READ_ONCE(desc[i].buf_idx) != idx)) {
			if (pm_unlikely(!pm_buf_ok(bs, idx))) {
				pm_slot_reject(p, k, i, idx, slot[i].len,
					       PM_SLOT_BAD_IDX);
				*ret = -EINVAL;
				break;
			}
			desc[i].buf_idx = idx;
		}
		i = i + 1 == n ? 0 : i + 1;
	}
	return i;
}

/* Give back released RX slots, then expose newly arrived whole packets:
 * each descriptor is read once, checked, and copied into our ring. */
static int pipe_rxsync_locked(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	struct pm_pipe_q *q = kp->q;
	union pm_pipe_desc *desc = kp->desc;
	struct netmap_slot *slot = k->ring->slot;
	const struct pm_bufspace bs = p->bs;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	int ret = 0;

	if (i != head) {
		i = rx_give_back(p, k, &bs, i, head, &ret);
		if (i != k->hwcur) {
			k->hwcur = i;
			kp->gen++; /* the other binders reload (sync_release()) */
			/* Pairs with the acquire load of cons in pipe_txsync(). */
			atomic_store_explicit(&q->cons, i, memory_order_release);
			wake_if_sleeping(p, &q->writer_sleeping, kp->wake_peer_fd);
		}
	}

	/* Pairs with the release store of prod in pipe_txsync(). */
	uint32_t prod = atomic_load_explicit(&q->prod, memory_order_acquire);
	uint32_t j = k->hwtail;
	if (pm_unlikely(prod >= n ||
			pm_ring_dist(k->hwcur, prod, n) <
				pm_ring_dist(k->hwcur, j, n))) {
		report_proto(p, k, "producer index", prod);
		return -EPROTO;
	}
	uint32_t end = j;
	uint64_t pkts = 0, bytes = 0, done_bytes = 0;
	while (j != prod) {
		uint32_t run = prod > j ? prod - j : n - j, r;
		const union pm_pipe_desc *d = &desc[j];
		struct netmap_slot *rs = &slot[j];
		uint64_t rbytes = 0, frags = 0;
		r = pipe_rx_fast(&desc[j], rs, run, &bs, &rbytes, &frags);
		for (; r < run; r++) {
			/* One load: the writer cannot change it under the check. */
			union pm_pipe_desc dd = { .word = PM_READ_ONCE(d[r].word) };
			uint32_t idx = dd.buf_idx, len = dd.len;
			uint32_t fl = dd.flags & NS_MOREFRAG;
			if (pm_unlikely(!pm_buf_ok(&bs, idx) || len > bs.usable))
				break;
			rs[r].buf_idx = idx;
			rs[r].len = (uint16_t)len;
			rs[r].flags = (uint16_t)(fl | NS_BUF_CHANGED);
			rbytes += len;
			frags += fl != 0;
		}
		if (pm_likely(frags == 0)) {
			/* No chain in this run: every slot is a whole packet. */
			pkts += r;
			bytes += rbytes;
			done_bytes = bytes;
			end = pm_ring_add(j, r, n);
		} else {
			/* Chains: a packet ends at a slot without NS_MOREFRAG. */
			for (uint32_t x = 0; x < r; x++) {
				bytes += rs[x].len;
				if (!(rs[x].flags & NS_MOREFRAG)) {
					end = pm_ring_add(j, x + 1, n);
					pkts++;
					done_bytes = bytes;
				}
			}
		}
		j = pm_ring_add(j, r, n);
		if (pm_unlikely(r != run)) {
			union pm_pipe_desc dd = { .word = PM_READ_ONCE(d[r].word) };
			uint32_t idx = dd.buf_idx, len = dd.len;
			int bad_idx = !pm_buf_ok(&bs, idx);
			report_proto(p, k, bad_idx ? "buffer index" : "length",
				     bad_idx ? idx : len);
			ret = -EPROTO;
			break;
		}
	}
	/* A chain as long as the whole ring can never complete: deliver
	 * it rather than wedge the pipe. */
	if (end == k->hwtail && j != end &&
	    pm_ring_dist(k->hwcur, j, n) == n - 1) {
		end = j;
		pkts++;
		done_bytes = bytes;
		pm_stat_add(&k->st->drop_too_long, 1);
	}
#ifdef PM_TEST_HOOKS
	if (pm_pipe_rx_stall && end != k->hwtail)
		raise(SIGSTOP);
#endif
	if (end != k->hwtail) {
		kp->gen++; /* the other binders reload (sync_release()) */
		k->hwtail = end;
		q->rx_hwtail = end;
		pm_count(k, pkts, done_bytes);
	}
	if (k->ring->flags & NR_TIMESTAMP)
		gettimeofday(&k->ring->ts, NULL);
	return ret;
}

static int pipe_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_kpriv *kp = k->priv;
	return pipe_sync_turn(p, k, &kp->q->rx_sync, pipe_rxsync_locked);
}

/* ---- pktmap_fd() as an event source ---------------------------------
 *
 * Once pktmap_fd() was called, every sync keeps the fd's state equal to
 * what the next sync would find, with no pktmap_poll():
 *
 * RX: the fd is the ring's 'r' FIFO; it holds one byte (a token) exactly
 * while packets are unread past cur or have arrived since. An rxsync that
 * leaves nothing to read takes the token out, sets the "sleeping" flag,
 * fences, and looks at prod once more (the Dekker pair of
 * wake_if_sleeping()): a writer that published before the flag was seen
 * is caught here, one that publishes after sees the flag and writes the
 * token. While the flag stays set, syncs cost one load; a writer whose
 * reader keeps finding packets pays nothing.
 *
 * TX (ports opened /T only): the fd is the ring's 't' FIFO, sized to one
 * page so that a single byte makes it full, i.e. not writable. A txsync
 * that leaves no space writes that byte and sets the flag to
 * PIPE_WAKE_READ; the reader, after releasing slots, reads the byte out
 * and the fd turns writable. Whoever clears the flag takes exactly one
 * byte, so the count of bytes is always "1 while blocked". */

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

/* Make sure the RX token is there (or on its way). */
static void rx_token_set(struct pktmap_port *p, struct pipe_kpriv *kp)
{
	if (kp->tok)
		return;
	/* Clearing our own flag: if the writer cleared it first, its byte
	 * is on the way and we must not add a second. */
	if (!kp->armed ||
	    atomic_exchange_explicit(&kp->q->reader_sleeping, 0,
				     memory_order_relaxed) == PIPE_WAKE_WRITE)
		fifo_put(p, kp->wake_own_fd);
	kp->armed = false;
	kp->tok = true;
}

static void pipe_rx_event(struct pktmap_port *p, struct pm_kring *k,
			  struct pipe_kpriv *kp)
{
	_Atomic uint32_t *flag = &kp->q->reader_sleeping;

	if (k->rcur != k->hwtail) { /* unread packets */
		rx_token_set(p, kp);
		return;
	}
	if (kp->armed) {
		if (pm_likely(atomic_load_explicit(flag, memory_order_relaxed))) {
			/* Now and then, make sure no stray byte (a dead
			 * owner's, or a wake-up from before pktmap_fd())
			 * keeps the fd readable: take our flag back first,
			 * so a real wake-up is never read away. */
			if (pm_likely(++kp->idle & 63))
				return;
			if (atomic_exchange_explicit(flag, 0, memory_order_relaxed)) {
				fifo_drain(kp->wake_own_fd);
				kp->armed = false;
			}
		}
		if (kp->armed) { /* the writer took the flag: its byte comes */
			kp->armed = false;
			kp->tok = true;
		}
	}
	if (kp->tok) {
		if (!fifo_take(kp->wake_own_fd))
			return; /* not written yet: it will wake the app */
		kp->tok = false;
	}
	atomic_store_explicit(flag, PIPE_WAKE_WRITE, memory_order_relaxed);
	kp->armed = true;
	kp->idle = 0;
	/* Pairs with the fence in wake_if_sleeping(). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&kp->q->prod, memory_order_relaxed) != k->hwtail)
		rx_token_set(p, kp);
}

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

static void pipe_tx_event(struct pktmap_port *p, struct pm_kring *k,
			  struct pipe_kpriv *kp)
{
	_Atomic uint32_t *flag = &kp->q->writer_sleeping;

	if (k->rcur != k->hwtail) { /* space */
		if (kp->blocked) {
			kp->blocked = false;
			if (atomic_exchange_explicit(flag, 0, memory_order_relaxed) ==
			    PIPE_WAKE_READ)
				(void)fifo_take(kp->wake_own_fd);
			/* else the reader took the flag and reads the byte */
		}
		return;
	}
	if (kp->blocked &&
	    atomic_load_explicit(flag, memory_order_relaxed) == PIPE_WAKE_READ)
		return; /* still blocked, the byte is in place */
	/* Block: one byte per flag set; if the reader just took the last
	 * flag, its read takes one of the two bytes and one stays. */
	fifo_put(p, kp->wake_own_fd);
	atomic_store_explicit(flag, PIPE_WAKE_READ, memory_order_relaxed);
	kp->blocked = true;
	/* Pairs with the fence in wake_if_sleeping(). */
	atomic_thread_fence(memory_order_seq_cst);
	if (tx_has_space(k, kp)) {
		kp->blocked = false;
		if (atomic_exchange_explicit(flag, 0, memory_order_relaxed) ==
		    PIPE_WAKE_READ)
			(void)fifo_take(kp->wake_own_fd);
	}
}

static void pipe_sync_event(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_priv *pp = p->priv;
	if (!k->tx)
		pipe_rx_event(p, k, k->priv);
	else if (pp->ev_tx)
		pipe_tx_event(p, k, k->priv);
}

/* pktmap_fd(): from now on the fd follows the rings (see above). */
static int pipe_event_fd(struct pktmap_port *p)
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
			pipe_rx_event(p, pm_rxkring(p, r), rk);
		}
		if (pp->ev_tx) {
			/* One byte must fill the FIFO: one page. */
			if (fcntl(tk->wake_own_fd, F_SETPIPE_SZ, 4096) < 0)
				return -errno;
			atomic_store_explicit(&tk->q->writer_sleeping, 0,
					      memory_order_relaxed);
			fifo_drain(tk->wake_own_fd);
			pipe_tx_event(p, pm_txkring(p, r), tk);
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
static int pipe_poll_arm(struct pktmap_port *p, short events)
{
	struct pipe_priv *pp = p->priv;
	events = pipe_bound_events(p, events);
	/* An event source arms in every sync (pipe_sync_event): its fd
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
	/* Pairs with the fence in wake_if_sleeping(). */
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
			struct pipe_kpriv *kp = tx->priv;
			uint32_t n = tx->nslots;
			uint32_t cons = atomic_load_explicit(&kp->q->cons,
							     memory_order_relaxed);
			if (cons >= n)
				return 1; /* let the sync report it */
			uint32_t d = pm_ring_dist(kp->prod, cons, n);
			uint32_t space = d ? d - 1 : n - 1;
			if (space > pm_ring_dist(tx->hwcur, tx->rcur, n))
				return 1;
		}
	}
	return 0;
}

/* Stop announcing sleep for `events`, and drain those FIFOs only. */
static void pipe_poll_disarm(struct pktmap_port *p, short events)
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
static int pipe_poll_fd(const struct pktmap_port *p, short events, short *pev)
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

static void pipe_info(const struct pktmap_port *p, struct pktmap_info *info)
{
	struct pipe_priv *pp = p->priv;
	struct pktmap_port *mp = (struct pktmap_port *)p;
	/* Gone: nobody binds either direction of the other end's ring. */
	if (!pm_region_claimed(&mp->region,
			       claim_id(pp->uid, !pp->end, PIPE_TX, pp->lo)) &&
	    !pm_region_claimed(&mp->region,
			       claim_id(pp->uid, !pp->end, PIPE_RX, pp->lo)))
		info->flags |= PKTMAP_INFO_PEER_GONE;
}

static void pipe_close(struct pktmap_port *p)
{
	struct pipe_priv *pp = p->priv;
	if (!pp)
		return;
	for (uint32_t r = pp->lo; r < pp->lo + pp->counted; r++) {
		_Atomic uint32_t *nb = &pipe_q(pp, !pp->end, r)->rx_binders;
		uint32_t v = atomic_load(nb);
		while (v && !atomic_compare_exchange_weak(nb, &v, v - 1))
			;
	}
	for (uint32_t r = pp->lo; r < pp->lo + pp->tx_counted; r++) {
		_Atomic uint32_t *nt = &pipe_q(pp, pp->end, r)->tx_binders;
		uint32_t v = atomic_load(nt);
		while (v && !atomic_compare_exchange_weak(nt, &v, v - 1))
			;
	}
	if (pp->kp) {
		for (uint32_t i = 0; i < 2 * pp->nrings; i++) {
			if (pp->kp[i].wake_own_fd >= 0)
				close(pp->kp[i].wake_own_fd);
			if (pp->kp[i].wake_peer_fd >= 0)
				close(pp->kp[i].wake_peer_fd);
		}
		free(pp->kp);
	}
	for (int set = 0; set < 3; set++)
		if (pp->epfd[set] >= 0)
			close(pp->epfd[set]);
	free(pp);
	p->priv = NULL;
}

const struct pm_port_ops pm_pipe_ops = {
	.desc = {
		.name = "pipe",
		.syntax = "pipe:NAME{N | pipe:NAME}N[-R]",
		.mode = "zerocopy",
		.summary = "two ends in one region, any two processes or threads; "
			   "slots move, buffers are swapped",
	},
	.caps = PM_CAP_PIPE | PM_CAP_ONE_RING | PM_CAP_ZEROCOPY,
	.open = pipe_open,
	.txsync = pipe_txsync,
	.rxsync = pipe_rxsync,
	.poll_arm = pipe_poll_arm,
	.poll_disarm = pipe_poll_disarm,
	.poll_fd = pipe_poll_fd,
	.event_fd = pipe_event_fd,
	.sync_event = pipe_sync_event,
	.info = pipe_info,
	.close = pipe_close,
};
