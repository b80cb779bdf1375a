/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pipe:NAME{N and pipe:NAME}N: netmap pipes. Two ends, each with R TX and
 * R RX rings, in a region shared by the processes (or threads) that open
 * them. Ring r of one end's TX feeds ring r of the other end's RX, through
 * a single-producer single-consumer queue of descriptors (pipe.h draws
 * it; pipe_sync.c moves the slots).
 *
 * This file opens one end: check the name, find the pipe's region
 * (pipe_where.c), join the pipe or create it, claim the rings this open
 * binds, resume them from the queue (pipe_view.c) and open the wake-ups
 * (pipe_wake.c); and closes it. pm_pipe_ops, at the bottom, is the back
 * end's table of functions.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipe.h"

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
		pm_pipe_locator_set(nm, strcmp(regname, own) ? regname : "");
	}
	return 0;
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
			/* Relaxed, as every use of the counts: under the
			 * region lock, and read as a hint (pm_pipe_poll_disarm()). */
			if (tx_others)
				atomic_fetch_add_explicit(nt, 1, memory_order_relaxed);
			else
				atomic_store_explicit(nt, 1, memory_order_relaxed);
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
			atomic_fetch_add_explicit(nb, 1, memory_order_relaxed);
		else
			atomic_store_explicit(nb, 1, memory_order_relaxed);
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
		tk->sync = &tk->q->tx_sync;
		tk->owner = &tk->q->tx_owner;
		rk->q = pipe_q(pp, !pp->end, r);
		rk->desc = pipe_desc(pp, !pp->end, r);
		rk->sync = &rk->q->rx_sync;
		rk->owner = &rk->q->rx_owner;
		pm_txkring(p, r)->priv = tk;
		pm_rxkring(p, r)->priv = rk;
		if (binds(p, PIPE_TX))
			ret = pm_pipe_resume(p, pp, PIPE_TX, r, seen);
		if (ret == 0 && binds(p, PIPE_RX))
			ret = pm_pipe_resume(p, pp, PIPE_RX, r, seen);
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
	pp->owner = pm_pipe_owner_self();
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
	    (ret = pm_pipe_where(p, nm, key, &rp, regname, sizeof(regname))) != 0)
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
	return ret ? ret : pm_pipe_wakeups(p, pp);
}

#ifdef PM_TEST_HOOKS
/* Tests only: libpktmap_internal is built with PM_TEST_HOOKS, the
 * shipped library is not. */
uint32_t *pm_pipe_peer_desc(struct pktmap_port *p, uint32_t ring)
{
	struct pipe_priv *pp = p->priv;
	if (p->ops != &pm_pipe_ops || ring >= pp->nrings)
		return NULL;
	return &pipe_desc(pp, !pp->end, ring)->buf_idx;
}

struct pm_pipe_q *pm_pipe_queue(struct pktmap_port *p, bool tx, uint32_t ring)
{
	struct pipe_priv *pp = p->priv;
	if (p->ops != &pm_pipe_ops || ring >= pp->nrings)
		return NULL;
	return pipe_q(pp, tx ? pp->end : !pp->end, ring);
}
#endif

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
		/* Relaxed: a count, read as a hint (pm_pipe_poll_disarm()). */
		uint32_t v = atomic_load_explicit(nb, memory_order_relaxed);
		while (v && !atomic_compare_exchange_weak_explicit(
				    nb, &v, v - 1, memory_order_relaxed,
				    memory_order_relaxed))
			;
	}
	for (uint32_t r = pp->lo; r < pp->lo + pp->tx_counted; r++) {
		_Atomic uint32_t *nt = &pipe_q(pp, pp->end, r)->tx_binders;
		uint32_t v = atomic_load_explicit(nt, memory_order_relaxed);
		while (v && !atomic_compare_exchange_weak_explicit(
				    nt, &v, v - 1, memory_order_relaxed,
				    memory_order_relaxed))
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

/* The common keys, all of them. */
static const struct pm_conf_keys pipe_conf = { .common = PM_CK_ALL };

const struct pm_port_ops pm_pipe_ops = {
	.desc = {
		.name = "pipe",
		.syntax = "pipe:NAME{N | pipe:NAME}N[-R]",
		.mode = "zerocopy",
		.summary = "two ends in one region, any two processes or threads; "
			   "slots move, buffers are swapped",
	},
	.caps = PM_CAP_PIPE | PM_CAP_ONE_RING | PM_CAP_ZEROCOPY,
	.conf = &pipe_conf,
	.open = pipe_open,
	.txsync = pm_pipe_txsync,
	.rxsync = pm_pipe_rxsync,
	.poll_arm = pm_pipe_poll_arm,
	.poll_disarm = pm_pipe_poll_disarm,
	.poll_fd = pm_pipe_poll_fd,
	.event_fd = pm_pipe_event_fd,
	.sync_event = pm_pipe_sync_event,
	.info = pipe_info,
	.close = pipe_close,
};
