/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker: answering requests (broker.h). Each request is parsed
 * (pm_bk_req_parse), checked against the policy with the client's
 * credentials, then served:
 *
 *   xsk     an AF_XDP socket: we register the client's region (our own
 *           mapping of the memfd it passed, unmapped once pinned) as the
 *           UMEM, size the rings and bind it to the granted queue; the
 *           client only maps the rings. It never holds an unbound socket.
 *   attach  the queue steered to that socket (XSKMAP) by pktmap's XDP
 *           program, which the broker holds on the interface already
 *           (broker_hold.c) or attaches now and holds from then on.
 *   pkt     an AF_PACKET socket with a locked filter that passes the
 *           granted interface's frames only (the client binds it).
 *   tap     the TAP device, attached.
 *
 * Every grant and refusal is one log line naming the client and the rule.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/if_xdp.h>
#include <linux/magic.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <pktmap/broker.h>

#include "broker.h"
#include "broker_netns.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif

static void refuse(struct client *c, const char *what, const char *why,
		   char *ans, size_t anslen)
{
	broker_log("refuse %s %s: %s", c->name, what, why);
	snprintf(ans, anslen, "refused: %s", why);
}

/* Register the client's pool as the UMEM of fd: our mapping of its memfd,
 * unmapped once the kernel pinned the pages (we never touch them). */
static int umem_reg(int fd, int region_fd, const struct pm_bk_req *r,
		    char *err, size_t errlen)
{
	struct stat st;
	struct statfs sf;
	if (fstat(region_fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    fstatfs(region_fd, &sf) != 0 ||
	    (sf.f_type != TMPFS_MAGIC && sf.f_type != HUGETLBFS_MAGIC)) {
		snprintf(err, errlen, "the region is not a memfd or /dev/shm file");
		return -EINVAL;
	}
	if ((uint64_t)st.st_size < r->umem_off + r->umem_len) {
		snprintf(err, errlen, "the region has %lld bytes, not %llu",
			 (long long)st.st_size,
			 (unsigned long long)(r->umem_off + r->umem_len));
		return -EINVAL;
	}
	size_t len = (size_t)st.st_size;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd, 0);
	if (m == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the region: %s", strerror(errno));
		return -errno;
	}
	struct xdp_umem_reg mr;
	memset(&mr, 0, sizeof(mr));
	mr.addr = (uint64_t)(uintptr_t)(m + r->umem_off);
	mr.len = r->umem_len;
	mr.chunk_size = r->chunk;
	int ret = setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) ? -errno : 0;
	if (ret)
		snprintf(err, errlen, "cannot register the UMEM: %s", strerror(-ret));
	munmap(m, len);
	return ret;
}

static int ring(int fd, int opt, uint32_t n)
{
	int v = (int)n;
	return setsockopt(fd, SOL_XDP, opt, &v, sizeof(v)) ? -errno : 0;
}

/* A bound AF_XDP socket as r asks, or -errno with err set (-EBUSY: the
 * queue is in use). */
static int make_xsk(const struct pm_bk_req *r, int region_fd, int share_fd,
		    int ifindex, uint32_t mode_flag, bool *zc, char *err,
		    size_t errlen)
{
	int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0), ret;
	if (fd < 0) {
		snprintf(err, errlen, "socket(AF_XDP): %s", strerror(errno));
		return -errno;
	}
	if (share_fd < 0 && (ret = umem_reg(fd, region_fd, r, err, errlen)))
		goto fail;
	if ((ret = ring(fd, XDP_UMEM_FILL_RING, r->fq)) ||
	    (ret = ring(fd, XDP_UMEM_COMPLETION_RING, r->cq)) ||
	    ((r->dir & PM_BK_DIR_RX) && (ret = ring(fd, XDP_RX_RING, r->rx))) ||
	    ((r->dir & PM_BK_DIR_TX) && (ret = ring(fd, XDP_TX_RING, r->tx)))) {
		snprintf(err, errlen, "cannot size the rings: %s", strerror(-ret));
		goto fail;
	}
	struct sockaddr_xdp sa = {
		.sxdp_family = AF_XDP,
		.sxdp_ifindex = (uint32_t)ifindex,
		.sxdp_queue_id = r->queue,
	};
	if (share_fd >= 0) {
		sa.sxdp_flags = XDP_SHARED_UMEM;
		sa.sxdp_shared_umem_fd = (uint32_t)share_fd;
	} else {
		sa.sxdp_flags = (uint16_t)(XDP_USE_NEED_WAKEUP | mode_flag |
					   (r->sg ? XDP_USE_SG : 0));
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		ret = -errno;
		snprintf(err, errlen, ret == -EBUSY ? "queue %u of %s is in use" :
			 "cannot bind to queue %u of %s: %s", r->queue, r->ifname,
			 strerror(-ret));
		goto fail;
	}
	struct xdp_options o = { 0 };
	socklen_t olen = sizeof(o);
	*zc = getsockopt(fd, SOL_XDP, XDP_OPTIONS, &o, &olen) == 0 &&
	      (o.flags & XDP_OPTIONS_ZEROCOPY);
	return fd;
fail:
	close(fd);
	return ret;
}

/* The bind mode: what was asked, else what the rule allows. */
static uint32_t mode_flag_of(uint32_t asked, uint32_t allowed)
{
	if (asked == PM_BK_MODE_ZC || (!asked && !(allowed & PM_BK_MODE_COPY)))
		return XDP_ZEROCOPY;
	if (asked == PM_BK_MODE_COPY || (!asked && !(allowed & PM_BK_MODE_ZC)))
		return XDP_COPY;
	return 0;
}

static struct grant *grant_new(struct client *c, enum pol_backend be,
			       const char *iface, int ifindex, uint32_t dir,
			       uint32_t line)
{
	struct grant *g = &c->grants[c->ngrants++];
	memset(g, 0, sizeof(*g));
	g->backend = be;
	snprintf(g->iface, sizeof(g->iface), "%s", iface);
	g->ifindex = ifindex;
	g->dir = dir;
	g->fd = g->lock_fd = -1;
	g->rule_line = line;
	return g;
}

static void do_xsk(struct broker *b, struct client *c,
		   const struct pm_bk_req *r, int region_fd, char *ans,
		   size_t anslen)
{
	char what[64], why[300];
	snprintf(what, sizeof(what), "xdp:%s-%u", r->ifname, r->queue);
	struct pol_ask a = { POL_XDP, r->ifname, r->queue, r->mode, r->dir,
			     r->umem_len, false };
	int ri = policy_check(&b->pol, &c->who, &a, why, sizeof(why));
	if (ri < 0)
		return refuse(c, what, why, ans, anslen);
	int share_fd = -1;
	for (uint32_t i = 0; r->share && i < c->ngrants && share_fd < 0; i++)
		if (c->grants[i].backend == POL_XDP && c->grants[i].fd >= 0 &&
		    !c->grants[i].revoked && strcmp(c->grants[i].iface, r->ifname) == 0)
			share_fd = c->grants[i].fd;
	if (r->share && share_fd < 0)
		return refuse(c, what, "share=1: no socket of this interface on "
			      "this connection to share the UMEM of", ans, anslen);
	int ifindex = (int)if_nametoindex(r->ifname);
	if (!ifindex) {
		snprintf(ans, anslen, "error: no such interface");
		return;
	}
	bool zc = false;
	const struct pol_rule *rule = &b->pol.rules[ri];
	int fd = make_xsk(r, region_fd, share_fd, ifindex,
			  mode_flag_of(r->mode, rule->modes), &zc, why, sizeof(why));
	/* Busy: maybe a socket of a client gone is still being closed
	 * (broker_close.c); once it is, the queue may be free. */
	if (fd == -EBUSY && broker_closer_wait(b))
		fd = make_xsk(r, region_fd, share_fd, ifindex,
			      mode_flag_of(r->mode, rule->modes), &zc, why,
			      sizeof(why));
	if (fd == -EBUSY) {
		snprintf(ans, anslen, "busy: %s", why);
		return;
	}
	if (fd < 0) {
		broker_log("error %s %s: %s", c->name, what, why);
		snprintf(ans, anslen, "error: %s", why);
		return;
	}
	struct grant *g = grant_new(c, POL_XDP, r->ifname, ifindex, r->dir,
				    rule->line);
	g->queue = r->queue;
	g->mode = r->mode;
	g->umem = r->umem_len;
	g->fd = fd;
	g->zc = zc;
	broker_log("grant %s %s %s, UMEM %llu kB (%s:%u)", c->name, what,
		   zc ? "zero-copy" : "copy", (unsigned long long)(r->umem_len >> 10),
		   b->pol.file, rule->line);
	snprintf(ans, anslen, "ok zc=%d", zc);
	/* The socket goes to the client, our copy stays for the XSKMAP. */
}

static void do_attach(struct broker *b, struct client *c,
		      const struct pm_bk_req *r, char *ans, size_t anslen)
{
	struct grant *g = NULL;
	for (uint32_t i = 0; i < c->ngrants && !g; i++)
		if (c->grants[i].backend == POL_XDP && c->grants[i].queue == r->queue &&
		    c->grants[i].fd >= 0 && !c->grants[i].xsk && !c->grants[i].revoked)
			g = &c->grants[i];
	char what[64], err[300];
	snprintf(what, sizeof(what), "attach queue %u", r->queue);
	if (!g)
		return refuse(c, what, "no socket of that queue granted on this "
			      "connection", ans, anslen);
	snprintf(what, sizeof(what), "xdp:%s-%u", g->iface, g->queue);
	/* Held already (broker_hold.c), the attach below only joins it. */
	broker_hold_ensure(b, g->iface, g->ifindex);
	int ret = pktmap_broker_xsk_attach(&g->xsk, g->ifindex, g->iface, g->queue,
					   g->fd, g->zc, err, sizeof(err));
	if (ret) {
		broker_log("error %s %s: %s", c->name, what, err);
		snprintf(ans, anslen, "error: %s", err);
		return;
	}
	broker_log("steer %s %s to its socket (XDP program in %s mode)", c->name,
		   what, pktmap_broker_xsk_mode(g->xsk));
	snprintf(ans, anslen, "ok %s", pktmap_broker_xsk_mode(g->xsk));
}

/* attach ns=1: the client's own socket, bound in its own namespace. */
static void do_attach_ns(struct broker *b, struct client *c,
			 const struct pm_bk_req *r, int sock, int nsfd,
			 char *ans, size_t anslen)
{
	char what[96], why[300];
	uint64_t ino = 0;
	struct xsk_bound xb;
	snprintf(what, sizeof(what), "attach queue %u in a network namespace",
		 r->queue);
	if (netns_owned_by(nsfd, c->who.uid, &ino, why, sizeof(why)))
		return refuse(c, what, why, ans, anslen);
	if (setns(nsfd, CLONE_NEWNET) != 0) {
		snprintf(ans, anslen, "error: setns: %s", strerror(errno));
		return;
	}
	int ret = xsk_bound_in(sock, &xb, why, sizeof(why));
	if (ret == -ENOENT) {
		/* The kernel cannot say: the request's word (broker_netns.c) */
		snprintf(xb.ifname, sizeof(xb.ifname), "%s", r->ifname);
		xb.ifindex = (int)if_nametoindex(r->ifname);
		xb.queue = r->queue;
		ret = xb.ifindex ? 0 : -ENODEV;
		snprintf(why, sizeof(why), "no interface %s in the namespace",
			 r->ifname);
	}
	snprintf(what, sizeof(what), "xdp:%s-%u (netns %llu)", xb.ifname, xb.queue,
		 (unsigned long long)ino);
	struct pol_ask a = { POL_XDP, xb.ifname, xb.queue, 0, PM_BK_DIR_RX,
			     xb.umem, true };
	int ri = -1;
	if (!ret && xb.queue != r->queue)
		snprintf(why, sizeof(why), "the socket is bound to queue %u, not %u",
			 xb.queue, r->queue), ret = -EINVAL;
	if (!ret && (ri = policy_check(&b->pol, &c->who, &a, why, sizeof(why))) < 0)
		ret = -EACCES;
	struct pktmap_broker_xsk *h = NULL;
	char err[300];
	if (!ret && c->ngrants < BROKER_MAX_GRANTS)
		ret = pktmap_broker_xsk_attach(&h, xb.ifindex, xb.ifname, xb.queue,
					       sock, 0, err, sizeof(err));
	else if (!ret)
		snprintf(why, sizeof(why), "too many grants on one connection"),
		ret = -ENOSPC;
	if (setns(b->self_ns, CLONE_NEWNET) != 0)
		broker_log("cannot go back to our network namespace: %s",
			   strerror(errno));
	if (ret == -EACCES || ret == -ENOSPC || (ret && !h && ri < 0))
		return refuse(c, what, why, ans, anslen);
	if (ret) {
		broker_log("error %s %s: %s", c->name, what, err);
		snprintf(ans, anslen, "error: %s", err);
		return;
	}
	struct grant *g = grant_new(c, POL_XDP, xb.ifname, xb.ifindex,
				    PM_BK_DIR_RX, b->pol.rules[ri].line);
	g->queue = xb.queue;
	g->umem = xb.umem;
	g->fd = dup(sock);
	g->xsk = h;
	g->own_netns = true;
	g->netns = ino;
	broker_log("steer %s %s to its socket, UMEM %llu kB (XDP program in %s "
		   "mode) (%s:%u)", c->name, what, (unsigned long long)(xb.umem >> 10),
		   pktmap_broker_xsk_mode(h), b->pol.file, g->rule_line);
	snprintf(ans, anslen, "ok %s", pktmap_broker_xsk_mode(h));
}

static void do_pkt(struct broker *b, struct client *c, const struct pm_bk_req *r,
		   char *ans, size_t anslen, int *out_fd)
{
	char what[64], why[300];
	snprintf(what, sizeof(what), "pkt:%s (%s)", r->ifname,
		 r->dir == PM_BK_DIR_RX ? "rx" : r->dir == PM_BK_DIR_TX ? "tx" :
		 "rx,tx");
	struct pol_ask a = { .backend = POL_PKT, .iface = r->ifname, .dir = r->dir };
	int ri = policy_check(&b->pol, &c->who, &a, why, sizeof(why));
	if (ri < 0)
		return refuse(c, what, why, ans, anslen);
	int ifindex = (int)if_nametoindex(r->ifname);
	if (!ifindex) {
		snprintf(ans, anslen, "error: no such interface");
		return;
	}
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	int lock = fd < 0 ? -errno : pktmap_broker_pkt_lock(fd, ifindex, why,
							    sizeof(why));
	if (fd < 0)
		snprintf(why, sizeof(why), "socket(AF_PACKET): %s", strerror(-lock));
	if (lock < 0) {
		if (fd >= 0)
			close(fd);
		broker_log("error %s %s: %s", c->name, what, why);
		snprintf(ans, anslen, "error: %s", why);
		return;
	}
	struct grant *g = grant_new(c, POL_PKT, r->ifname, ifindex, r->dir,
				    b->pol.rules[ri].line);
	g->lock_fd = lock;
	broker_log("grant %s %s (%s:%u)", c->name, what, b->pol.file, g->rule_line);
	snprintf(ans, anslen, "ok");
	*out_fd = fd;
}

/* Bring a TAP device we made up (the client could not). */
static void tap_up(const char *ifname)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		(void)ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
}

static void do_tap(struct broker *b, struct client *c, const struct pm_bk_req *r,
		   char *ans, size_t anslen, int *out_fd)
{
	char what[64], why[300];
	snprintf(what, sizeof(what), "tap:%s", r->ifname);
	struct pol_ask a = { .backend = POL_TAP, .iface = r->ifname, .dir = r->dir };
	int ri = policy_check(&b->pol, &c->who, &a, why, sizeof(why));
	if (ri < 0)
		return refuse(c, what, why, ans, anslen);
	bool existed = if_nametoindex(r->ifname) != 0;
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", r->ifname);
	ifr.ifr_flags = (short)(IFF_TAP | IFF_NO_PI);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
		snprintf(why, sizeof(why), "%s: %s", fd < 0 ? "/dev/net/tun" :
			 "TUNSETIFF", strerror(errno));
		if (fd >= 0)
			close(fd);
		broker_log("error %s %s: %s", c->name, what, why);
		snprintf(ans, anslen, "error: %s", why);
		return;
	}
	if (!existed)
		tap_up(r->ifname);
	struct grant *g = grant_new(c, POL_TAP, r->ifname, 0, r->dir,
				    b->pol.rules[ri].line);
	(void)g;
	broker_log("grant %s %s (%s:%u)", c->name, what, b->pol.file,
		   b->pol.rules[ri].line);
	snprintf(ans, anslen, "ok");
	*out_fd = fd;
}

void broker_request(struct broker *b, struct client *c, const char *buf,
		    size_t len, int *fds, int nfds, char *ans, size_t anslen,
		    int *out_fd)
{
	struct pm_bk_req r;
	char err[200];
	*out_fd = -1;
	if (pm_bk_req_parse(buf, len, &r, err, sizeof(err))) {
		refuse(c, "a request", err, ans, anslen);
	} else if (nfds != (r.verb == PM_BK_XSK && !r.share) + 2 * r.ns) {
		snprintf(err, sizeof(err), "%s: %d descriptors attached, %d expected",
			 pm_bk_verb_name(r.verb), nfds,
			 (r.verb == PM_BK_XSK && !r.share) + 2 * r.ns);
		refuse(c, "a request", err, ans, anslen);
	} else if (r.ns && r.verb != PM_BK_ATTACH) {
		refuse(c, "a request", "ns=1 goes with attach only (a program in "
		       "a network namespace of its own opens the rest itself)",
		       ans, anslen);
	} else if (r.ns) {
		do_attach_ns(b, c, &r, fds[0], fds[1], ans, anslen);
	} else if (c->ngrants >= BROKER_MAX_GRANTS && r.verb != PM_BK_ATTACH) {
		refuse(c, pm_bk_verb_name(r.verb), "too many grants on one "
		       "connection", ans, anslen);
	} else if (r.verb == PM_BK_XSK) {
		do_xsk(b, c, &r, r.share ? -1 : fds[0], ans, anslen);
	} else if (r.verb == PM_BK_ATTACH) {
		do_attach(b, c, &r, ans, anslen);
	} else if (r.verb == PM_BK_PKT) {
		do_pkt(b, c, &r, ans, anslen, out_fd);
	} else {
		do_tap(b, c, &r, ans, anslen, out_fd);
	}
	if (r.verb == PM_BK_XSK && !strncmp(ans, "ok", 2))
		*out_fd = dup(c->grants[c->ngrants - 1].fd);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

/* Is g still allowed? */
static bool still_allowed(struct broker *b, struct client *c, struct grant *g,
			  char *why, size_t whylen)
{
	struct pol_ask a = { g->backend, g->iface, g->queue, g->mode, g->dir,
			     g->umem, g->own_netns };
	return policy_check(&b->pol, &c->who, &a, why, whylen) >= 0;
}

uint32_t broker_revoke(struct broker *b, struct client *c, bool all)
{
	char why[300];
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->ngrants; i++) {
		struct grant *g = &c->grants[i];
		if (!g->revoked && !all && still_allowed(b, c, g, why, sizeof(why)))
			continue;
		if (!g->revoked) {
			pktmap_broker_xsk_detach(g->xsk);
			g->xsk = NULL;
			if (g->lock_fd >= 0 && !all)
				(void)pktmap_broker_pkt_revoke(g->lock_fd);
			g->revoked = true;
			n++;
			if (g->backend == POL_XDP)
				broker_log("%s %s xdp:%s-%u%s%s", all ? "free" : "revoke",
					   c->name, g->iface, g->queue, all ? "" : ": ",
					   all ? "" : why);
			else
				broker_log("%s %s %s:%s%s%s", all ? "free" : "revoke",
					   c->name, policy_backend_name(g->backend),
					   g->iface, all ? "" : ": ", all ? "" : why);
		}
		if (all) {
			/* (the last reference to the socket: its release is slow) */
			broker_close_later(b, g->fd);
			if (g->lock_fd >= 0)
				close(g->lock_fd);
			g->fd = g->lock_fd = -1;
		}
	}
	if (all)
		c->ngrants = 0;
	return n;
}
