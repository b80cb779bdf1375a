/* SPDX-License-Identifier: BSD-2-Clause
 *
 * tap:NAME and tap:NAME-N: a TAP device as a port, the host stack's side
 * of an Ethernet link. What the kernel sends out of the TAP device arrives
 * on the port's RX rings; what the application sends appears to the kernel
 * as received on the device. One copy each way (reported as "emulated").
 *
 * The device is attached to if it exists (a persistent TAP made with
 * `ip tuntap add`), else created, brought up, and removed again on close:
 * a TAP that no file descriptor holds and that is not persistent vanishes
 * with its last descriptor. With @conf:rings=N the device is multi-queue
 * (IFF_MULTI_QUEUE) and each ring pair is one queue's descriptor; the
 * kernel spreads what it sends over the queues by flow hash.
 *
 * rxsync reads as many frames as the RX ring has room for, one read() (or
 * readv() across several slots, for frames larger than a buffer) each,
 * until the device has nothing more (EAGAIN). txsync writes every
 * submitted frame, chains joined with writev(). A TAP device never blocks
 * a writer: a write the kernel refuses is counted as a backend drop.
 */
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "broker_proto.h"
#include "check.h"
#include "copy_sync.h"
#include "ifnet.h"
#include "log.h"
#include "name.h"
#include "port.h"
#include "region.h"
#include "util.h"

#define TAP_MAX_IOV 64
#define TAP_SCRATCH 65536u
#define TAP_ETH_HLEN 14

struct tap_priv {
	int *fds;              /* one per ring, -1 when not open */
	uint32_t nrings, lo, hi;
	int epfd;
	bool created;          /* this port made the device */
	uint32_t maxframe;     /* largest frame the device may send us */
	int ctl_fd;            /* for ioctls on the device (MTU) */
	uint64_t tx_dropped0;  /* the device's tx_dropped when we opened */
	char ifname[IFNAMSIZ];
	uint8_t scratch[TAP_SCRATCH]; /* the tail of an unexpectedly long frame */
};

/* The device's tx_dropped from /proc/self/net/dev, which always shows the
 * caller's network namespace (a sysfs mount may show another one).
 * Returns 0 when the device is not listed. */
static uint64_t if_tx_dropped(const char *ifname)
{
	FILE *f = fopen("/proc/self/net/dev", "re");
	char line[512];
	uint64_t v = 0;
	size_t n = strlen(ifname);
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *s = line;
		while (*s == ' ')
			s++;
		if (strncmp(s, ifname, n) != 0 || s[n] != ':')
			continue;
		/* rx: bytes packets errs drop fifo frame compressed multicast,
		 * tx: bytes packets errs drop ... */
		unsigned long long f_[12];
		if (sscanf(s + n + 1, "%llu %llu %llu %llu %llu %llu %llu %llu "
			   "%llu %llu %llu %llu", &f_[0], &f_[1], &f_[2], &f_[3],
			   &f_[4], &f_[5], &f_[6], &f_[7], &f_[8], &f_[9], &f_[10],
			   &f_[11]) == 12)
			v = f_[11];
		break;
	}
	fclose(f);
	return v;
}

/* Read the MTU again (it may have changed since open): the largest frame
 * the device can carry is MTU + Ethernet header + one VLAN tag, as GSO is
 * off (no IFF_VNET_HDR). Returns the new limit. */
static uint32_t tap_refresh_mtu(struct tap_priv *tp)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tp->ifname);
	if (tp->ctl_fd >= 0 && ioctl(tp->ctl_fd, SIOCGIFMTU, &ifr) == 0 &&
	    ifr.ifr_mtu > 0)
		tp->maxframe = (uint32_t)ifr.ifr_mtu + TAP_ETH_HLEN + 4;
	return tp->maxframe;
}

/* The device from the broker (docs/broker.md): it attaches it, creating
 * it (up) when it does not exist; the device is ours to close. */
static int tap_brokered(struct pktmap_port *p, struct tap_priv *tp)
{
	struct pm_bk_req req = { .verb = PM_BK_TAP,
				 .dir = PM_BK_DIR_RX | PM_BK_DIR_TX };
	snprintf(req.ifname, sizeof(req.ifname), "%s", tp->ifname);
	char info[PM_BK_MSG_MAX];
	int fd, ret = pm_broker_open(p);
	if (!ret)
		ret = pm_broker_call(p, &req, NULL, 0, &fd, true, info, sizeof(info));
	if (ret)
		return ret;
	tp->created = false; /* the broker made it, and brought it up */
	return fd;
}

/* Attach one descriptor (queue) to the device. */
static int tap_attach(struct pktmap_port *p, struct tap_priv *tp, bool mq)
{
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		if (e == -ENOENT)
			return pm_open_error(p, e, "/dev/net/tun does not exist: "
					     "load the tun module (modprobe tun)");
		if (e == -EACCES || e == -EPERM)
			return pm_open_error(p, e, "cannot open /dev/net/tun: needs "
					     "CAP_NET_ADMIN: run as root");
		return pm_open_error(p, e, "cannot open /dev/net/tun: %s",
				     strerror(-e));
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tp->ifname);
	ifr.ifr_flags = (short)(IFF_TAP | IFF_NO_PI | (mq ? IFF_MULTI_QUEUE : 0));
	if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
		int e = -errno;
		close(fd);
		if (e == -EPERM && !mq && (e = tap_brokered(p, tp)) != -ENOTCONN)
			return e;
		if (e == -ENOTCONN)
			e = -EPERM;
		if (e == -EPERM)
			return pm_open_error(p, e, "needs CAP_NET_ADMIN to create or "
					     "attach to a TAP device: run as root");
		if (e == -EBUSY)
			return pm_open_error(p, e, "the TAP device is in use by another "
					     "program (single-queue TAPs take one "
					     "reader)");
		if (e == -EINVAL)
			return pm_open_error(p, e, "'%s' exists but is not a %sTAP "
					     "device: pick another name%s",
					     tp->ifname, mq ? "multi-queue " : "",
					     mq ? " or open it without @conf:rings" : "");
		return pm_open_error(p, e, "TUNSETIFF: %s", strerror(-e));
	}
	return fd;
}

static int tap_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	struct ifreq ifr;
	int ret;

	if (nm->flags & PKTMAP_OPEN_ZEROCOPY)
		return pm_open_error(p, -EOPNOTSUPP, "zero-copy is impossible on "
				     "tap: ports (read and write copy once)");
	if (c->tx_rings && c->rx_rings && c->tx_rings != c->rx_rings)
		return pm_open_error(p, -EINVAL, "tap: ports have one TX and one RX "
				     "ring per queue: give @conf:rings=N");
	uint32_t R = c->tx_rings ? c->tx_rings : (c->rx_rings ? c->rx_rings : 1);
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;

	struct tap_priv *tp = calloc(1, sizeof(*tp));
	if (!tp)
		return -ENOMEM;
	p->priv = tp;
	tp->epfd = -1;
	tp->ctl_fd = -1;
	tp->nrings = R;
	tp->lo = nm->ring >= 0 ? (uint32_t)nm->ring : 0;
	tp->hi = nm->ring >= 0 ? tp->lo + 1 : R;
	snprintf(tp->ifname, sizeof(tp->ifname), "%s", nm->body);
	if (tp->lo >= R)
		return pm_open_error(p, -EINVAL, "ring %u does not exist: the port "
				     "has %u ring%s (use @conf:rings=N)", tp->lo, R,
				     R == 1 ? "" : "s");
	tp->fds = calloc(R, sizeof(*tp->fds));
	if (!tp->fds)
		return -ENOMEM;
	for (uint32_t r = 0; r < R; r++)
		tp->fds[r] = -1;

	ret = pm_port_own_rings(p, c, "tap", nm->body, R, R, txs, rxs);
	if (ret)
		return ret;
	p->mode = PKTMAP_MODE_EMULATED;

	tp->created = if_nametoindex(tp->ifname) == 0;
	for (uint32_t r = tp->lo; r < tp->hi; r++) {
		int fd = tap_attach(p, tp, R > 1);
		if (fd < 0)
			return fd;
		tp->fds[r] = fd;
	}
	memset(&ifr, 0, sizeof(ifr));
	if (pm_if_ioctl(tp->ifname, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		if (tp->created) {
			ifr.ifr_flags |= IFF_UP;
			ret = pm_if_ioctl(tp->ifname, SIOCSIFFLAGS, &ifr);
			if (ret)
				return pm_open_error(p, ret, "cannot bring the new TAP "
						     "device up: %s", strerror(-ret));
		} else {
			pm_log(p, PKTMAP_LOG_WARN, "%s: the TAP device is down: "
			       "nothing is received and writes fail until 'ip link "
			       "set %s up'", p->name, tp->ifname);
		}
	}
	tp->ctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tp->maxframe = 1500 + TAP_ETH_HLEN + 4;
	tap_refresh_mtu(tp);
	p->tx_max_len = tp->maxframe - 4; /* MTU + 14: the VLAN tag's 4 aside */
	tp->tx_dropped0 = if_tx_dropped(tp->ifname);

	if (tp->hi - tp->lo == 1) {
		p->fd = tp->fds[tp->lo];
	} else {
		tp->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (tp->epfd < 0)
			return pm_open_error(p, -errno, "epoll_create1: %s",
					     strerror(errno));
		for (uint32_t r = tp->lo; r < tp->hi; r++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = r };
			if (epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->fds[r], &ev) != 0)
				return pm_open_error(p, -errno, "epoll_ctl: %s",
						     strerror(errno));
		}
		p->fd = tp->epfd;
	}
	return 0;
}

/* Release slots, then read frames into free slots until the device has
 * none or the ring is full. */
static int tap_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct tap_priv *tp = p->priv;
	struct netmap_ring *ring = k->ring;
	int fd = tp->fds[k->ring->ringid];
	uint32_t n = k->nslots, usable = p->bs.usable;
	int ret = pm_rx_release(p, k);

	/* Slots a largest frame may need: read only when that many are
	 * free, so no frame is ever cut. */
	uint32_t per = (tp->maxframe + usable - 1) / usable;
	if (per > TAP_MAX_IOV - 1)
		per = TAP_MAX_IOV - 1;
	uint32_t j = k->hwtail;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, j, n);
	uint64_t pkts = 0, bytes = 0, ts = 0;
	struct iovec iov[TAP_MAX_IOV];

	while (space >= per && ret == 0) {
		uint32_t x = j;
		for (uint32_t v = 0; v < per; v++) {
			uint32_t idx = PM_READ_ONCE(ring->slot[x].buf_idx);
			if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
				pm_slot_reject(p, k, x, idx, 0, PM_SLOT_BAD_IDX);
				ret = -EINVAL;
				break;
			}
			iov[v].iov_base = pm_region_buf(&p->region, idx);
			iov[v].iov_len = usable;
			x = x + 1 == n ? 0 : x + 1;
		}
		if (ret)
			break;
		/* A last iovec catches a frame larger than planned (the MTU
		 * grew since open), so that nothing is ever cut. */
		iov[per].iov_base = tp->scratch;
		iov[per].iov_len = TAP_SCRATCH;
		ssize_t got = readv(fd, iov, (int)per + 1);
		if (got <= 0) {
			if (got < 0 && errno != EAGAIN && errno != EINTR) {
				ret = -errno;
				pm_log_ratelimited(p, &p->rl_ring, "%s: RX ring %u: read "
						   "failed: %s", p->name, ring->ringid,
						   strerror(errno));
			}
			break;
		}
		uint32_t cap = per * usable;
		if (pm_unlikely((uint32_t)got > cap)) {
			uint32_t extra = (uint32_t)got - cap;
			uint32_t more = (extra + usable - 1) / usable;
			bool fits = per + more <= space;
			tap_refresh_mtu(tp);
			per = (tp->maxframe + usable - 1) / usable;
			if (per > TAP_MAX_IOV - 1)
				per = TAP_MAX_IOV - 1;
			if (!fits) {
				pm_stat_add(&k->st->drop_too_long, 1);
				continue;
			}
			for (uint32_t v = 0; v < more; v++) {
				uint32_t idx = PM_READ_ONCE(ring->slot[x].buf_idx);
				if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
					pm_slot_reject(p, k, x, idx, 0, PM_SLOT_BAD_IDX);
					ret = -EINVAL;
					break;
				}
				uint32_t l = extra - v * usable < usable ?
						     extra - v * usable : usable;
				memcpy(pm_region_buf(&p->region, idx),
				       tp->scratch + v * usable, l);
				x = x + 1 == n ? 0 : x + 1;
			}
			if (ret)
				break; /* the frame is lost: counted as invalid */
		}
		if (!ts) {
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			ts = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		}
		uint32_t left = (uint32_t)got;
		do {
			struct netmap_slot *s = &ring->slot[j];
			uint32_t l = left < usable ? left : usable;
			left -= l;
			s->len = (uint16_t)l;
			s->flags = left ? NS_MOREFRAG : 0;
			s->ptr = ts;
			j = j + 1 == n ? 0 : j + 1;
			space--;
		} while (left);
		pkts++;
		bytes += (uint64_t)got;
	}
	k->hwtail = j;
	pm_rx_done(k, pkts, bytes, ts);
	return ret;
}

/* Write every submitted frame: one write() a frame, writev() for chains. */
static int tap_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct tap_priv *tp = p->priv;
	struct netmap_ring *ring = k->ring;
	int fd = tp->fds[k->ring->ringid];
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	uint64_t pkts = 0, bytes = 0;
	struct iovec iov[TAP_MAX_IOV];

	while (i != head) {
		uint32_t e;
		if (!pm_tx_chain_end(ring, i, head, n, &e))
			break; /* the rest of the chain is not submitted yet */
		uint32_t niov = 0, flen = 0;
		bool invalid = false, drop = false;
		for (uint32_t x = i; x != e; x = x + 1 == n ? 0 : x + 1) {
			uint32_t idx, len;
			if (pm_unlikely(!pm_tx_slot_take(p, k, x, &idx, &len))) {
				invalid = true;
				continue;
			}
			if (niov == TAP_MAX_IOV) {
				drop = true;
				continue;
			}
			iov[niov].iov_base = pm_region_buf(&p->region, idx);
			iov[niov].iov_len = len;
			niov++;
			flen += len;
		}
		i = e;
		if (invalid)
			continue;
		if (drop || (flen > tp->maxframe && flen > tap_refresh_mtu(tp))) {
			pm_stat_add(&k->st->drop_too_long, 1);
			continue;
		}
		ssize_t w = niov == 1 ? write(fd, iov[0].iov_base, iov[0].iov_len) :
					writev(fd, iov, (int)niov);
		if (w < 0) {
			/* EIO: the device is down; EINVAL: not a frame. The
			 * frame is lost either way; do not stall the ring. */
			pm_stat_add(&k->st->drop_backend, 1);
			pm_log_ratelimited(p, &p->rl_ring, "%s: TX ring %u: write "
					   "failed: %s: frame dropped", p->name,
					   ring->ringid, strerror(errno));
			continue;
		}
		pkts++;
		bytes += flen;
	}
	k->hwcur = i;
	k->hwtail = pm_ring_add(i, n - 1, n);
	pm_count(k, pkts, bytes);
	return 0;
}

static int tap_poll_arm(struct pktmap_port *p, short events)
{
	struct tap_priv *tp = p->priv;
	/* Writes to a TAP never block: TX always has room after a sync. */
	if ((events & POLLOUT) && (p->dir & PKTMAP_DIR_TX))
		return 1;
	(void)tp;
	return 0;
}

static void tap_stats(const struct pktmap_port *p, struct pktmap_stats *st)
{
	struct tap_priv *tp = p->priv;
	/* Frames the kernel could not queue to us (its queue to the reader
	 * was full): the device's tx_dropped, since this port opened. */
	uint64_t d = if_tx_dropped(tp->ifname);
	if (d > tp->tx_dropped0)
		st->drop_backend += d - tp->tx_dropped0;
}

static void tap_close(struct pktmap_port *p)
{
	struct tap_priv *tp = p->priv;
	if (!tp)
		return;
	if (tp->fds) {
		for (uint32_t r = 0; r < tp->nrings; r++) {
			if (tp->fds[r] < 0)
				continue;
			/* Ours: make sure nothing keeps it once we are gone. */
			if (tp->created)
				(void)ioctl(tp->fds[r], TUNSETPERSIST, 0);
			close(tp->fds[r]);
		}
		free(tp->fds);
	}
	if (tp->epfd >= 0)
		close(tp->epfd);
	if (tp->ctl_fd >= 0)
		close(tp->ctl_fd);
	free(tp);
	p->priv = NULL;
	p->fd = -1;
}

/* The common keys, all of them. */
static const struct pm_conf_keys tap_conf = {
	.common = PM_CK_ALL | PM_CK_BROKER,
};

const struct pm_port_ops pm_tap_ops = {
	.desc = {
		.name = "tap",
		.syntax = "tap:NAME[-N][@conf:rings=N]",
		.mode = "emulated",
		.summary = "a TAP device (created and removed if missing): the host "
			   "stack's side of a link; one copy",
	},
	.caps = PM_CAP_ONE_RING,
	.conf = &tap_conf,
	.open = tap_open,
	.txsync = tap_txsync,
	.rxsync = tap_rxsync,
	.poll_arm = tap_poll_arm,
	.stats = tap_stats,
	.close = tap_close,
};
