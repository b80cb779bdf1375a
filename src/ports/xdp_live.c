/* SPDX-License-Identifier: BSD-2-Clause
 *
 * TX of the xdp: back end through BPF_PROG_RUN in live-frames mode
 * (xdp:IFACE@conf:tx=live): instead of an AF_XDP socket, whose copy mode
 * builds an skb per frame, txsync copies the submitted frames into slots
 * of a BPF array map mapped into the process, and one BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES and repeat = N has the kernel run
 * bpf/pktmap_tx.bpf.c N times: frame k becomes slot k's bytes and is
 * redirected to the interface (ndo_xdp_xmit, batches of 64, no skb).
 *
 *   TX slot --memcpy--> pktmap_tx_frames[k] --BPF_PROG_RUN--> device
 *
 * When the call returns the kernel has copied every frame, so the slots
 * are free at once: tail follows head. What became of each frame is in
 * the queue's control block (also mapped): sent (the device took it),
 * dropped (the kernel freed it: a full device ring, a veth whose peer
 * runs no XDP program), refused by the program; the tracepoint programs
 * of the same object fill in what BPF_PROG_RUN does not report. So
 * tx_packets counts what the device took and drop_backend the rest.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xdp.h"

extern const unsigned char pm_xdp_tx_bpf_obj[];
extern const size_t pm_xdp_tx_bpf_obj_len;

#define LIVE_MAX 2040u   /* bytes of a frame slot (bpf/pktmap_tx.bpf.c) */
#define LIVE_SLOT 2048u  /* the slot with its header */
#define LIVE_TMPL 64u    /* the frame each run starts from, resized */
#define LIVE_BATCH 64u   /* frames per flush to the device */
#define LIVE_META 8u     /* struct live_meta: queue, cookie */

/* bpf/pktmap_tx.bpf.c's struct live_ctl, 128 bytes per queue. */
struct live_ctl {
	uint32_t next, end, base, ifindex, batch, pad;
	uint64_t redirected, bad;
	uint64_t sent, sent_bytes;
	uint64_t dropped, dropped_bytes;
	uint64_t pad2[7];
};

struct live_frame {
	uint32_t len, pad;
	uint8_t d[LIVE_MAX];
};

struct pm_xdp_live {
	int prog_fd;
	int frames_fd, ctl_fd, mark_fd;
	int hold_link, hold_ns;    /* see hold_dispatcher() */
	int tp_fd[2];              /* the tracepoints' links */
	uint8_t *frames;
	size_t frames_len;
	struct live_ctl *ctl;
	size_t ctl_len;
	uint32_t nslots;           /* frame slots per queue */
	uint64_t drops;            /* atomic: read by pktmap_stats() */
	uint32_t cookie;
	/* What each run starts from: the metadata (queue, cookie), then a
	 * frame the program resizes and overwrites. */
	uint8_t tmpl[PM_MAX_RINGS][LIVE_META + LIVE_TMPL];
};

static int live_error(struct pktmap_port *p, int err, const char *what)
{
	if (err == -EPERM || err == -EACCES)
		return pm_open_error(p, err, "needs CAP_NET_RAW and CAP_BPF: run "
				     "as root");
	return pm_open_error(p, err, "tx=live: %s: %s", what, strerror(-err));
}

static size_t page_up(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static int dup_fd(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* Set the object's read-only `pm_cookie` (its .rodata). */
static int set_cookie(struct bpf_object *obj, uint32_t cookie)
{
	struct bpf_map *m;
	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);
		size_t len = strlen(n);
		if (len < 7 || strcmp(n + len - 7, ".rodata") != 0)
			continue;
		size_t sz = 0;
		const void *v = bpf_map__initial_value(m, &sz);
		if (!v || sz < sizeof(cookie) || sz > 64)
			return -ENOENT;
		uint8_t data[64];
		memcpy(data, v, sz);
		memcpy(data, &cookie, sizeof(cookie)); /* its only variable */
		return bpf_map__set_initial_value(m, data, sz);
	}
	return -ENOENT;
}

/* Load the object: pktmap_tx, its maps, and the tracepoint programs,
 * attached. */
static int load(struct pktmap_port *p, struct pm_xdp_live *lv, uint32_t nb)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "pktmap_tx");
	struct bpf_object *obj = bpf_object__open_mem(pm_xdp_tx_bpf_obj,
						      pm_xdp_tx_bpf_obj_len, &oo);
	if (!obj)
		return live_error(p, -errno, "cannot open the embedded program");
	struct bpf_map *frames = bpf_object__find_map_by_name(obj, "pktmap_tx_frames");
	struct bpf_map *ctl = bpf_object__find_map_by_name(obj, "pktmap_tx_ctl");
	struct bpf_map *mark = bpf_object__find_map_by_name(obj, "pktmap_tx_mark");
	struct bpf_program *tx = bpf_object__find_program_by_name(obj, "pktmap_tx");
	struct bpf_program *xm = bpf_object__find_program_by_name(obj, "pktmap_tx_xmit");
	struct bpf_program *re = bpf_object__find_program_by_name(obj, "pktmap_tx_rerr");
	int ret = -ENOENT;
	if (!frames || !ctl || !mark || !tx || !xm || !re)
		goto out;
	ret = set_cookie(obj, lv->cookie);
	ret = ret ? ret : bpf_map__set_max_entries(frames, nb * lv->nslots);
	ret = ret ? ret : bpf_object__load(obj);
	if (ret)
		goto out;
	lv->prog_fd = dup_fd(bpf_program__fd(tx));
	lv->frames_fd = dup_fd(bpf_map__fd(frames));
	lv->ctl_fd = dup_fd(bpf_map__fd(ctl));
	lv->mark_fd = dup_fd(bpf_map__fd(mark));
	lv->tp_fd[0] = bpf_raw_tracepoint_open("xdp_devmap_xmit", bpf_program__fd(xm));
	lv->tp_fd[1] = lv->tp_fd[0] < 0 ? -1 :
		bpf_raw_tracepoint_open("xdp_redirect_err", bpf_program__fd(re));
	if (lv->tp_fd[0] < 0 || lv->tp_fd[1] < 0) {
		ret = -errno;
		bpf_object__close(obj);
		return live_error(p, ret, "cannot attach the drop counters to the "
				  "xdp tracepoints");
	}
	ret = lv->prog_fd < 0 || lv->frames_fd < 0 || lv->ctl_fd < 0 ||
	      lv->mark_fd < 0 ? -errno : 0;
out:
	bpf_object__close(obj);
	if (ret == -EINVAL || ret == -ENOENT)
		return pm_open_error(p, ret, "tx=live: the kernel refuses the TX "
				     "program%s%s (needs Linux 5.18+: "
				     "bpf_xdp_store_bytes, live frames): drop "
				     "@conf:tx=live to send through AF_XDP",
				     pm_xdp_libbpf_last()[0] ? ": " : "",
				     pm_xdp_libbpf_last());
	return ret ? live_error(p, ret, "cannot load the TX program") : 0;
}

/* One BPF_PROG_RUN of pktmap_tx for queue qid: `repeat` frames. */
static int live_run(struct pm_xdp_live *lv, struct xdp_priv *xp, uint32_t qid,
		    uint32_t repeat)
{
	struct xdp_md ctx = { .data = LIVE_META, .data_end = LIVE_META + LIVE_TMPL,
			      .ingress_ifindex = (uint32_t)xp->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, ro, .data_in = lv->tmpl[qid],
		    .data_size_in = LIVE_META + LIVE_TMPL, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx),
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .repeat = repeat,
		    .batch_size = LIVE_BATCH);
	int r = bpf_prog_test_run_opts(lv->prog_fd, &ro);
	return r < 0 ? -errno : 0;
}

/* Run once with nothing to send (the program refuses the frame): does
 * this kernel have live frames? Leaves the counters at zero. */
static int live_probe(struct pktmap_port *p, struct xdp_priv *xp,
		      struct pm_xdp_live *lv)
{
	struct live_ctl *c = &lv->ctl[xp->q[0].qid];
	c->next = c->end = 0;
	int ret = live_run(lv, xp, xp->q[0].qid, 1);
	uint64_t bad = c->bad;
	c->bad = 0;
	if (ret == -EINVAL || ret == -EOPNOTSUPP)
		return pm_open_error(p, ret, "tx=live: this kernel has no "
				     "BPF_PROG_RUN live frames "
				     "(BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18+): "
				     "drop @conf:tx=live to send through AF_XDP");
	if (ret)
		return live_error(p, ret, "BPF_PROG_RUN");
	if (bad != 1)
		return pm_open_error(p, -EPROTO, "tx=live: the probe run did not "
				     "run the TX program: drop @conf:tx=live");
	return 0;
}

static int live_map(struct pktmap_port *p, struct pm_xdp_live *lv, uint32_t nb)
{
	lv->frames_len = page_up((size_t)nb * lv->nslots * LIVE_SLOT);
	lv->ctl_len = page_up(PM_MAX_RINGS * sizeof(struct live_ctl));
	void *f = mmap(NULL, lv->frames_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       lv->frames_fd, 0);
	if (f == MAP_FAILED)
		return live_error(p, -errno, "cannot map the frame slots");
	lv->frames = f;
	void *c = mmap(NULL, lv->ctl_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       lv->ctl_fd, 0);
	if (c == MAP_FAILED)
		return live_error(p, -errno, "cannot map the control blocks");
	lv->ctl = c;
	return 0;
}

/* The kernel puts a program run with BPF_PROG_RUN (repeat > 1) into its
 * XDP dispatcher for the length of the call, and takes it out after, each
 * time waiting for an RCU grace period: two per sync, milliseconds on a
 * busy machine, whatever the batch. A program attached to a device stays
 * in the dispatcher, and a run then only counts one more user. So the
 * program is attached, in generic mode through a BPF link, to the
 * loopback device of a network namespace of its own, made for that by a
 * short-lived thread (unshare): `lo` there is down and nothing can reach
 * it, and the program passes anything without our metadata. The port
 * holds the link and the namespace (a descriptor each); both go when it
 * closes or the process dies. Needs CAP_SYS_ADMIN. */
struct hold_arg {
	int prog_fd, link_fd, ns_fd, err;
};

static void *hold_main(void *arg)
{
	struct hold_arg *h = arg;
	if (unshare(CLONE_NEWNET) != 0) {
		h->err = -errno;
		return NULL;
	}
	h->ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int lo = (int)if_nametoindex("lo");
	if (h->ns_fd < 0 || lo == 0) {
		h->err = -errno;
		return NULL;
	}
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_SKB_MODE);
	h->link_fd = bpf_link_create(h->prog_fd, lo, BPF_XDP, &o);
	if (h->link_fd < 0)
		h->err = h->link_fd;
	return NULL;
}

static int hold_dispatcher(struct pm_xdp_live *lv)
{
	struct hold_arg h = { .prog_fd = lv->prog_fd, .link_fd = -1, .ns_fd = -1 };
	pthread_t t;
	if (pthread_create(&t, NULL, hold_main, &h) != 0)
		return -EAGAIN;
	pthread_join(t, NULL);
	if (h.err || h.link_fd < 0) {
		if (h.link_fd >= 0)
			close(h.link_fd);
		if (h.ns_fd >= 0)
			close(h.ns_fd);
		return h.err ? h.err : -EIO;
	}
	lv->hold_link = h.link_fd;
	lv->hold_ns = h.ns_fd;
	return 0;
}

static int live_txsync(struct pktmap_port *p, struct pm_kring *k);

int pm_xdp_live_open(struct pktmap_port *p, struct xdp_priv *xp,
		     uint32_t tx_slots)
{
	uint32_t nb = xp->hi - xp->lo;
	if (xp->sg)
		return pm_open_error(p, -EMSGSIZE, "tx=live sends frames of up to "
				     "%u bytes, and the MTU of %s allows more: "
				     "lower it or drop @conf:tx=live", LIVE_MAX,
				     xp->ifname);
	if (nb == 0)
		return pm_open_error(p, -EINVAL, "tx=live applies to the NIC rings, "
				     "not to the host rings");
	struct pm_xdp_live *lv = calloc(1, sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	xp->live = lv;
	lv->frames_fd = lv->ctl_fd = lv->mark_fd = -1;
	lv->tp_fd[0] = lv->tp_fd[1] = -1;
	lv->prog_fd = lv->hold_link = lv->hold_ns = -1;
	lv->nslots = tx_slots;
	if (getrandom(&lv->cookie, sizeof(lv->cookie), 0) != sizeof(lv->cookie))
		lv->cookie = (uint32_t)getpid() * 2654435761u;
	for (uint32_t qid = 0; qid < PM_MAX_RINGS; qid++) {
		memcpy(lv->tmpl[qid], &qid, 4);
		memcpy(lv->tmpl[qid] + 4, &lv->cookie, 4);
	}

	pm_xdp_libbpf_enter(p);
	int ret = load(p, lv, nb);
	pm_xdp_libbpf_leave();
	if (ret)
		return ret;
	ret = live_map(p, lv, nb);
	if (ret)
		return ret;
	for (uint32_t j = 0; j < nb; j++) {
		struct live_ctl *c = &lv->ctl[xp->q[j].qid];
		c->base = j * lv->nslots;
		c->ifindex = (uint32_t)xp->ifindex;
		c->batch = LIVE_BATCH;
	}
	ret = live_probe(p, xp, lv);
	if (ret)
		return ret;
	ret = hold_dispatcher(lv);
	if (ret)
		pm_log(p, PKTMAP_LOG_WARN, "%s: cannot keep the TX program in the "
		       "kernel's XDP dispatcher (%s: needs CAP_SYS_ADMIN): each "
		       "sync waits for two RCU grace periods, milliseconds",
		       p->name, strerror(-ret));
	for (uint32_t j = 0; j < nb; j++)
		pm_txkring(p, xp->lo + j)->sync = live_txsync;
	return 0;
}

/* What one run did, from the queue's counters before and after. */
static void live_account(struct pktmap_port *p, struct pm_kring *k,
			 struct xdp_priv *xp,
			 struct pm_xdp_live *lv, const struct live_ctl *c,
			 const struct live_ctl *before, uint32_t nf, int err)
{
	uint64_t red = c->redirected - before->redirected;
	uint64_t sent = c->sent - before->sent;
	uint64_t dropped = c->dropped - before->dropped;
	uint64_t bad = c->bad - before->bad;
	/* Frames never run (the call failed), and redirected frames the
	 * kernel did not report: dropped too, so that every frame counts. */
	uint64_t ran = c->next < nf ? c->next : nf;
	uint64_t lost = (nf - ran) + (red > sent + dropped ? red - sent - dropped : 0);
	pm_count(k, sent, c->sent_bytes - before->sent_bytes);
	uint64_t drops = dropped + bad + lost;
	if (pm_likely(drops == 0 && !err))
		return;
	pm_stat_inc(&lv->drops, drops);
	if (err && err != -ENODEV)
		pm_log_ratelimited(p, &p->rl_ring, "%s: BPF_PROG_RUN: %s: %llu "
				   "frames not sent (counted in drop_backend)",
				   p->name, strerror(-err),
				   (unsigned long long)(nf - ran));
	else
		pm_log_ratelimited(p, &p->rl_ring, "%s: the kernel dropped %llu of "
				   "%u frames redirected to %s (a veth delivers "
				   "only to a peer with NAPI on: an XDP program "
				   "there, or GRO: ethtool -K PEER gro on; a full "
				   "device ring drops too): counted in "
				   "drop_backend", p->name,
				   (unsigned long long)drops, nf, xp->ifname);
}

/* Copy [hwcur, head) into the frame slots, send them with one run, and
 * hand every slot back at once: the kernel copied the frames. */
static int live_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct xdp_priv *xp = p->priv;
	struct pm_xdp_live *lv = xp->live;
	struct xdp_queue *q = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, head = k->rhead;
	const uint32_t j = (uint32_t)(q - xp->q);
	struct live_frame *fr = (struct live_frame *)(lv->frames +
						      (size_t)j * lv->nslots * LIVE_SLOT);
	uint32_t i = k->hwcur, nf = 0, chain_at = i;
	bool chain = false; /* inside an NS_MOREFRAG chain */

	if (pm_unlikely(q->dead))
		return -ENODEV;
	/* Above it the device would drop the frame (a veth, counted as a
	 * back-end drop): too long, as on the AF_XDP path. */
	pm_xdp_tx_tick(xp, q);
	const uint32_t most = atomic_load_explicit(PM_ATOMIC(&xp->mtu),
						   memory_order_relaxed) + 14;
	while (i != head) {
		const struct netmap_slot *s = &ring->slot[i];
		if (!chain)
			chain_at = i;
		uint32_t idx = s->buf_idx, len = s->len;
		bool more = s->flags & NS_MOREFRAG;
		enum pm_slot_verdict v = pm_slot_check(&p->bs, idx, len, 1);
		if (pm_unlikely(v != PM_SLOT_OK)) {
			pm_slot_reject(p, k, i, idx, len, v);
		} else if (pm_unlikely(chain || more || len > LIVE_MAX)) {
			/* A chain is one frame too long, counted at its end. */
			if (!more)
				pm_stat_inc(&k->st->drop_too_long, 1);
		} else if (pm_unlikely(len < 14)) {
			pm_slot_reject(p, k, i, idx, len, PM_SLOT_BAD_LEN);
		} else if (pm_unlikely(len > most &&
				       pm_xdp_above_mtu(xp, (const uint8_t *)
							pm_region_buf(&p->region, idx),
							len, len))) {
			pm_stat_inc(&k->st->drop_too_long, 1);
		} else {
			fr[nf].len = len;
			memcpy(fr[nf].d, pm_region_buf(&p->region, idx), len);
			nf++;
		}
		chain = more;
		i = i + 1 == n ? 0 : i + 1;
	}
	/* A chain not yet submitted whole waits for its end (unless it
	 * fills the ring), so that its tail is never sent as a frame. */
	uint32_t done = head;
	if (chain && pm_ring_dist(chain_at, head, n) < n - 1)
		done = chain_at;
	if (nf) {
		struct live_ctl *c = &lv->ctl[q->qid];
		struct live_ctl before = *c;
		c->next = 0;
		c->end = nf;
		int err = live_run(lv, xp, q->qid, nf);
		live_account(p, k, xp, lv, c, &before, nf, err);
		if (err == -ENODEV) { /* the interface went away */
			q->dead = true;
			pm_xdp_queue_gone(p, q);
			k->hwcur = done;
			return -ENODEV;
		}
	}
	k->hwcur = done;
	k->hwtail = done == 0 ? n - 1 : done - 1;
	return 0;
}

uint64_t pm_xdp_live_drops(const struct xdp_priv *xp)
{
	return xp->live ? pm_stat_read(&xp->live->drops) : 0;
}

void pm_xdp_live_close(struct xdp_priv *xp)
{
	struct pm_xdp_live *lv = xp->live;
	if (!lv)
		return;
	for (int t = 0; t < 2; t++)
		if (lv->tp_fd[t] >= 0)
			close(lv->tp_fd[t]);
	if (lv->frames)
		munmap(lv->frames, lv->frames_len);
	if (lv->ctl)
		munmap(lv->ctl, lv->ctl_len);
	if (lv->hold_link >= 0)
		close(lv->hold_link);
	if (lv->hold_ns >= 0)
		close(lv->hold_ns);
	if (lv->prog_fd >= 0)
		close(lv->prog_fd);
	if (lv->frames_fd >= 0)
		close(lv->frames_fd);
	if (lv->ctl_fd >= 0)
		close(lv->ctl_fd);
	if (lv->mark_fd >= 0)
		close(lv->mark_fd);
	free(lv);
	xp->live = NULL;
}
