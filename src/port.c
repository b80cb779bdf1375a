/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The public entry points, at the top of the library: arguments are
 * checked here once, then the back end's function runs (libuv's shape).
 * Also counters, info and the poll loop that every back end shares.
 * Logging is below (util_log.c), the rings in rings.c, the back-end table
 * in backends.c.
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "monitor.h"
#include "name.h"
#include "port.h"
#include "pub.h"
#include "region.h"
#include "util.h"

/* Which rings a registration binds (netmap's NR_REG_* semantics). Ring
 * indices are kring positions for TX and positions among RX rings. */
static int bind_rings(struct pktmap_port *p, const struct pm_name *nm)
{
	uint32_t tx_lo = 0, tx_hi = p->ntx, rx_lo = 0, rx_hi = p->nrx;
	switch (p->reg) {
	case NR_REG_SW:
		tx_lo = p->ntx, tx_hi = p->ntx + p->nhtx;
		rx_lo = p->nrx, rx_hi = p->nrx + p->nhrx;
		break;
	case NR_REG_NIC_SW:
		tx_hi = p->ntx + p->nhtx;
		rx_hi = p->nrx + p->nhrx;
		break;
	case NR_REG_ONE_NIC:
	case NR_REG_PIPE_MASTER:
	case NR_REG_PIPE_SLAVE:
		if (nm->ring >= 0) {
			uint32_t r = (uint32_t)nm->ring;
			if (r >= p->ntx && r >= p->nrx)
				return pm_open_error(p, -EINVAL,
						     "ring %u does not exist (the port "
						     "has %u TX and %u RX rings)",
						     r, p->ntx, p->nrx);
			tx_lo = r < p->ntx ? r : p->ntx;
			tx_hi = r < p->ntx ? r + 1 : p->ntx;
			rx_lo = r < p->nrx ? r : p->nrx;
			rx_hi = r < p->nrx ? r + 1 : p->nrx;
		}
		break;
	case NR_REG_ONE_SW: {
		uint32_t r = (uint32_t)nm->ring;
		if (r >= p->nhtx && r >= p->nhrx)
			return pm_open_error(p, -EINVAL,
					     "host ring %u does not exist", r);
		tx_lo = p->ntx + r, tx_hi = tx_lo + 1;
		rx_lo = p->nrx + r, rx_hi = rx_lo + 1;
		break;
	}
	default:
		break;
	}
	if (!(p->dir & PKTMAP_DIR_TX))
		tx_hi = tx_lo;
	if (!(p->dir & PKTMAP_DIR_RX))
		rx_hi = rx_lo;
	/* Empty ranges are represented as first > last. */
	p->first_tx = tx_lo;
	p->last_tx = tx_hi - 1;
	p->first_rx = rx_lo;
	p->last_rx = rx_hi - 1;
	if (tx_hi == tx_lo)
		p->first_tx = 1, p->last_tx = 0;
	if (rx_hi == rx_lo)
		p->first_rx = 1, p->last_rx = 0;
	return 0;
}

/* netmap's extra buffers: n buffers from the region, linked through their
 * first 4 bytes from nifp->ni_bufs_head (0 ends the list). */
static int extra_bufs_get(struct pktmap_port *p, uint32_t n)
{
	uint32_t *idx = calloc(n, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	int ret = pm_region_lock(&p->region);
	if (ret) {
		free(idx);
		return pm_open_error(p, ret, "region '%s' is locked by another "
				     "process: no extra buffers (%s)",
				     p->region.name, pktmap_strerror(ret));
	}
	ret = pm_region_alloc_bufs(&p->region, idx, n);
	pm_region_unlock(&p->region);
	if (ret) {
		free(idx);
		return pm_open_error(p, ret,
				     "no room for %u extra buffers in region '%s' "
				     "(give it more with @conf:bufs=)", n,
				     p->region.name);
	}
	/* memcpy: a back end may place frames at any byte (pkt: puts
	 * them 2 bytes off so that the IP header is aligned). */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t next = i + 1 < n ? idx[i + 1] : 0;
		memcpy(pm_region_buf(&p->region, idx[i]), &next, sizeof(next));
	}
	p->nifp->ni_bufs_head = idx[0];
	p->extra_bufs = n;
	free(idx);
	return 0;
}

/* Give back what is left on the extra-buffer list (the application may
 * have taken some, or rewired it: each index is checked). */
static void extra_bufs_put(struct pktmap_port *p)
{
	uint32_t b = p->nifp->ni_bufs_head, n = 0, batch[64], k = 0;
	/* Not had (a nowait region another process has locked): the
	 * buffers stay out until the region is made again. */
	if (pm_region_lock(&p->region) != 0)
		return;
	while (pm_buf_ok(&p->bs, b) && n++ < p->extra_bufs) {
		batch[k++] = b;
		memcpy(&b, pm_region_buf(&p->region, b), sizeof(b));
		if (k == PM_ARRAY_SIZE(batch)) {
			pm_region_free_bufs(&p->region, batch, k);
			k = 0;
		}
	}
	pm_region_free_bufs(&p->region, batch, k);
	p->nifp->ni_bufs_head = 0;
	pm_region_unlock(&p->region);
}

/* A kernel descriptor (a socket, a TAP) is readable while the kernel
 * holds frames an rxsync would take; packets an rxsync already took into
 * the ring and the application has not read yet do not show there. For
 * those the port's fd becomes an epoll set of the kernel's fd and an
 * eventfd that rxsync keeps non-zero exactly while the ring has unread
 * packets (two system calls per batch, only in this mode). A port that
 * does not receive keeps the kernel's fd itself: its POLLOUT is exact. */
static int unread_set_open(struct pktmap_port *p, int fd)
{
	if (!(p->dir & PKTMAP_DIR_RX) || p->first_rx > p->last_rx)
		return fd;
	p->ev_set = epoll_create1(EPOLL_CLOEXEC);
	p->ev_unread = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN };
	if (p->ev_set < 0 || p->ev_unread < 0 ||
	    epoll_ctl(p->ev_set, EPOLL_CTL_ADD, fd, &ev) != 0 ||
	    epoll_ctl(p->ev_set, EPOLL_CTL_ADD, p->ev_unread, &ev) != 0)
		return -errno;
	return p->ev_set;
}

/* After an rxsync in that mode: the count follows "packets unread". */
static void unread_update(struct pktmap_port *p)
{
	bool unread = false;
	for (uint32_t i = p->first_rx; i <= p->last_rx && i != UINT32_MAX; i++) {
		struct pm_kring *k = pm_rxkring(p, i);
		if (k->rcur != k->hwtail) {
			unread = true;
			break;
		}
	}
	if (unread == p->ev_unread_set)
		return;
	uint64_t v = 1;
	ssize_t r = unread ? write(p->ev_unread, &v, sizeof(v)) :
			     read(p->ev_unread, &v, sizeof(v));
	(void)r;
	p->ev_unread_set = unread;
}

/* Switch the port into event-source mode (pktmap_fd(), pktmap.h): the
 * back end's event descriptor, or an epoll set over the kernel's that
 * also follows packets left unread; every sync from now on keeps it
 * exact. Returns the descriptor or -errno. */
static int port_events(struct pktmap_port *p)
{
	if (p->event_fd >= 0)
		return p->event_fd;
	int fd = p->ops->event_fd ? p->ops->event_fd(p) : p->fd;
	if (fd >= 0 && !p->ops->sync_event && !(p->ops->caps & PM_CAP_FD_EXACT) &&
	    !p->fd_exact)
		fd = unread_set_open(p, fd);
	if (fd < 0)
		return fd;
	p->event_fd = fd;
	p->events = p->ops->sync_event != NULL;
	return fd;
}

int pktmap_fd(struct pktmap_port *p)
{
	if (!p)
		return -EINVAL;
	if (p->event_fd >= 0)
		return p->event_fd;
	/* Opened without PKTMAP_OPEN_EVENTS: the first call makes the port
	 * an event source, as pktmap 1.0 documented. */
	return port_events(p);
}

#define OPT(o, field, dflt)                                                  \
	((o) && (o)->sz >= offsetof(struct pktmap_open_opts, field) +         \
				   sizeof((o)->field) ? (o)->field : (dflt))

/* A port with nothing open yet: every descriptor -1, the caller's log
 * and error buffer from opts. NULL when out of memory. */
static struct pktmap_port *port_new(const char *name,
				    const struct pktmap_open_opts *opts)
{
	struct pktmap_port *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->fd = -1;
	p->event_fd = -1;
	pthread_mutex_init(&p->kstats_lock, NULL);
	p->ev_set = p->ev_unread = -1;
	p->broker_fd = -1;
	p->region.fd = p->region.mfd = -1;
	p->log = OPT(opts, log, NULL);
	p->log_ctx = OPT(opts, log_ctx, NULL);
	p->log_level = PKTMAP_LOG_INFO;
	p->errbuf = OPT(opts, errbuf, NULL);
	p->errbuf_len = OPT(opts, errbuf_len, 0);
	if (p->errbuf && p->errbuf_len)
		p->errbuf[0] = 0;
	p->linktype = 1;
	pm_printable(p->name, sizeof(p->name), name ? name : "(null)");
	return p;
}

/* Options from the program fill what the name leaves unset. */
static void conf_from_opts(struct pm_conf *c, const struct pktmap_open_opts *opts)
{
	if (!c->tx_rings)
		c->tx_rings = OPT(opts, rings, 0);
	if (!c->rx_rings)
		c->rx_rings = OPT(opts, rings, 0);
	if (!c->tx_slots)
		c->tx_slots = OPT(opts, slots, 0);
	if (!c->rx_slots)
		c->rx_slots = OPT(opts, slots, 0);
	if (!c->bufs)
		c->bufs = OPT(opts, bufs, 0);
	if (!c->buf_size)
		c->buf_size = OPT(opts, buf_size, 0);
	if (!c->extra_bufs)
		c->extra_bufs = OPT(opts, extra_bufs, 0);
	if (c->hugepages < 0)
		c->hugepages = OPT(opts, hugepages, 0) > 0;
	if (!c->block_ms)
		c->block_ms = OPT(opts, rx_block_ms, 0);
	if (!c->region[0] && OPT(opts, region, NULL))
		snprintf(c->region, sizeof(c->region), "%s", opts->region);
}

/* What a monitor's queue needs of the public API (src/monitor.c is a
 * layer below this file). */
static const struct pm_api mon_api = {
	.open = pktmap_open,
	.close = pktmap_close,
	.txsync = pktmap_txsync,
};

/* Take apart whatever of p is made, from port_new()'s empty port to a
 * whole open, and free it: the one teardown of pktmap_open()'s failures
 * and of pktmap_close(). The back end's close runs once p->ops is set,
 * also after a failed open (port.h says what it must handle). */
static void port_free(struct pktmap_port *p)
{
	if (p->mon)
		pm_monitor_close(p);
	if (p->extra_bufs && p->nifp)
		extra_bufs_put(p);
	if (p->ops && p->ops->close)
		p->ops->close(p);
	pm_broker_close(p);
	if (p->own_rings)
		pm_port_own_rings_put(p);
	if (p->ev_set >= 0)
		close(p->ev_set);
	if (p->ev_unread >= 0)
		close(p->ev_unread);
	pm_region_close(&p->region);
	if (p->ringmem)
		munmap(p->ringmem, p->ringmem_size);
	pm_pub_close(p);
	free(p->krings);
	pthread_mutex_destroy(&p->kstats_lock);
	free(p);
}

int pktmap_open(struct pktmap_port **out, const char *name,
		const struct pktmap_open_opts *opts)
{
	char err[400];
	struct pm_name nm;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts && opts->sz < offsetof(struct pktmap_open_opts, flags))
		return -EINVAL;
	struct pktmap_port *p = port_new(name, opts);
	if (!p)
		return -ENOMEM;
	ret = pm_name_parse(name, &nm, err, sizeof(err));
	if (ret) {
		if (p->errbuf && p->errbuf_len)
			snprintf(p->errbuf, p->errbuf_len, "%s", err);
		else
			pm_log(p, PKTMAP_LOG_ERR, "%s", err);
		port_free(p);
		return ret;
	}
	p->reg = nm.reg;
	p->dir = nm.dir ? nm.dir : OPT(opts, dir, 0);
	if (nm.dir && OPT(opts, dir, 0) && (nm.dir & OPT(opts, dir, 0)) == 0) {
		ret = pm_open_error(p, -EINVAL,
				    "the name says /%s but the program opens it "
				    "for %s only",
				    nm.dir == PKTMAP_DIR_RX ? "R" : "T",
				    nm.dir == PKTMAP_DIR_RX ? "sending" : "receiving");
		port_free(p);
		return ret;
	}
	if (!p->dir)
		p->dir = PKTMAP_DIR_BOTH;
	if (nm.mon) {
		ret = pm_monitor_open(p, &nm, opts, out, &mon_api);
		port_free(p);
		return ret;
	}
	/* From here on port_free() runs the back end's close, whatever its
	 * open left (port.h). */
	p->ops = pm_backend_find(nm.backend);
	nm.flags |= OPT(opts, flags, 0);
	struct pm_conf *c = &nm.conf;
	conf_from_opts(c, opts);
	p->spin_us = c->spin_us >= 0 ? (uint32_t)c->spin_us : PM_DEFAULT_SPIN_US;
	memcpy(p->broker, c->broker, sizeof(p->broker));
	ret = p->ops->open(p, &nm, opts);
	if (ret) {
		if (p->errbuf && p->errbuf_len && !p->errbuf[0])
			snprintf(p->errbuf, p->errbuf_len, "%s: %s", p->name,
				 pktmap_strerror(ret));
		port_free(p);
		return ret;
	}
	p->bs.nbufs = p->region.nbufs;
	if (!p->bs.usable)
		p->bs.usable = p->region.buf_size - p->region.headroom;
	if (p->bs.usable > 65535)
		p->bs.usable = 65535; /* slot->len is 16 bits */
	ret = bind_rings(p, &nm);
	if (ret == 0 && c->extra_bufs)
		ret = extra_bufs_get(p, c->extra_bufs);
	if (ret == 0 && (nm.flags & PKTMAP_OPEN_EVENTS)) {
		int fd = port_events(p);
		if (fd < 0)
			ret = pm_open_error(p, fd, "cannot make the port an event "
					    "source: %s", pktmap_strerror(fd));
	}
	if (ret) {
		port_free(p);
		return ret;
	}
	struct pktmap_info info = { .sz = sizeof(info) };
	pktmap_info(p, &info);
	pm_pub_ready(p, &info);
	*out = p;
	return 0;
}

void pktmap_close(struct pktmap_port *p)
{
	if (p)
		port_free(p);
}

struct netmap_if *pktmap_nifp(const struct pktmap_port *p)
{
	return p ? p->nifp : NULL;
}

/* Check and sync the bound rings of one direction; the first error wins. */
static int sync_rings(struct pktmap_port *p, bool tx)
{
	uint32_t lo = tx ? p->first_tx : p->first_rx;
	uint32_t hi = tx ? p->last_tx : p->last_rx;
	/* Someone monitors the port (src/monitor.c): one load a sync. */
	const uint64_t mon = PM_READ_ONCE(p->stats->mon);
	int ret = 0;
	for (uint32_t i = lo; i <= hi && i != UINT32_MAX; i++) {
		struct pm_kring *k = tx ? pm_txkring(p, i) : pm_rxkring(p, i);
		pm_stat_add(&k->st->syncs, 1);
		int r = pm_sync_prologue(p, k);
		if (pm_likely(r == 0))
			r = pm_likely(!mon) ? k->sync(p, k) :
					   pm_monitor_sync(p, k, &mon_api);
		pm_sync_epilogue(k);
		if (pm_unlikely(p->events))
			p->ops->sync_event(p, k);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

int pktmap_txsync(struct pktmap_port *p)
{
	return sync_rings(p, true);
}

/* Read what the kernel dropped (only the process holding the socket
 * can) into *st and the published page. wait: take the lock; else give
 * up when another thread holds it. */
static void kernel_drops(struct pktmap_port *p, struct pktmap_stats *st, bool wait)
{
	if (wait)
		pthread_mutex_lock(&p->kstats_lock);
	else if (pthread_mutex_trylock(&p->kstats_lock) != 0)
		return;
	uint64_t own = st->drop_backend;
	p->ops->stats(p, st);
	atomic_store_explicit(PM_ATOMIC(&p->stats->drop_kernel),
			      st->drop_backend - own, memory_order_relaxed);
	pthread_mutex_unlock(&p->kstats_lock);
}

/* Every 256 rxsyncs, look at the clock; once a second, publish the
 * kernel's drops (pktmap top shows them while the program runs). */
static void kernel_drops_tick(struct pktmap_port *p)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec == p->kstats_sec)
		return;
	p->kstats_sec = now.tv_sec;
	struct pktmap_stats st = { .sz = sizeof(st) };
	kernel_drops(p, &st, false);
}

int pktmap_rxsync(struct pktmap_port *p)
{
	int ret = sync_rings(p, false);
	if (pm_unlikely(p->ev_unread >= 0))
		unread_update(p);
	if (p->ops->stats && pm_unlikely((++p->rx_calls & 255) == 0))
		kernel_drops_tick(p);
	return ret;
}

/* poll() wakes when tail has moved past cur, the application's wake-up
 * point (netmap's rule), not merely past head. */
static inline bool poll_ready(const struct netmap_ring *r)
{
	return r->cur != r->tail;
}

/* Sync one request and compute its revents. */
static short poll_check(struct pktmap_pollreq *q)
{
	struct pktmap_port *p = q->port;
	short rev = 0;
	if (q->events & POLLOUT) {
		if (pktmap_txsync(p) < 0)
			rev |= POLLERR;
		for (uint32_t i = p->first_tx; i <= p->last_tx && i != UINT32_MAX; i++)
			if (poll_ready(pm_txkring(p, i)->ring)) {
				rev |= POLLOUT;
				break;
			}
	}
	if (q->events & POLLIN) {
		if (pktmap_rxsync(p) < 0)
			rev |= POLLERR;
		for (uint32_t i = p->first_rx; i <= p->last_rx && i != UINT32_MAX; i++)
			if (poll_ready(pm_rxkring(p, i)->ring)) {
				rev |= POLLIN;
				break;
			}
		if (!(rev & POLLIN) && (pm_info_flags(p) & PKTMAP_INFO_EOF))
			rev |= POLLHUP;
	}
	return rev;
}

/* Before sleeping, look again for a short while (adaptive spinning, as a
 * futex-based mutex does): a peer a few microseconds from its next batch
 * costs no system call on either side. Returns the ready count. */
static int poll_spin(struct pktmap_pollreq *reqs, unsigned n, uint32_t spin_us,
		     int64_t deadline_ms)
{
	int64_t until = (int64_t)pm_clock_ns(CLOCK_MONOTONIC) + (int64_t)spin_us * 1000;
	if (deadline_ms >= 0 && until > deadline_ms * 1000000)
		until = deadline_ms * 1000000;
	for (;;) {
		for (int k = 0; k < 32; k++) {
			int ready = 0;
			for (unsigned i = 0; i < n; i++) {
				reqs[i].revents = poll_check(&reqs[i]);
				ready += reqs[i].revents != 0;
			}
			if (ready)
				return ready;
			pm_cpu_relax();
		}
		if ((int64_t)pm_clock_ns(CLOCK_MONOTONIC) >= until)
			return 0;
	}
}

/* After a sleep (or a failed one): disarm what poll_arm armed. */
static void poll_disarm(struct pktmap_pollreq *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (reqs[i].port->ops->poll_disarm)
			reqs[i].port->ops->poll_disarm(reqs[i].port, reqs[i].events);
}

int pktmap_poll_many(struct pktmap_pollreq *reqs, unsigned n, int timeout_ms)
{
	struct pollfd pfd_stack[16];
	short pev;
	int ready;

	/* Arguments first: a bad call allocates nothing. */
	if (!reqs || n == 0)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (!reqs[i].port)
			return -EINVAL;
	struct pollfd *pfd = n <= 16 ? pfd_stack : calloc(n, sizeof(*pfd));
	if (!pfd)
		return -ENOMEM;
	int64_t deadline = timeout_ms >= 0 ? pm_clock_ms(CLOCK_MONOTONIC) + timeout_ms : -1;
	for (;;) {
		ready = 0;
		for (unsigned i = 0; i < n; i++) {
			reqs[i].revents = poll_check(&reqs[i]);
			ready += reqs[i].revents != 0;
		}
		if (ready)
			break;
		uint32_t spin = 0;
		for (unsigned i = 0; i < n; i++)
			if (reqs[i].port->spin_us > spin)
				spin = reqs[i].port->spin_us;
		if (spin && timeout_ms != 0) {
			ready = poll_spin(reqs, n, spin, deadline);
			if (ready)
				break;
		}
		int left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - pm_clock_ms(CLOCK_MONOTONIC);
			if (l <= 0)
				break;
			left = l > 1000000 ? 1000000 : (int)l;
		}
		/* Arm every wake-up, then look once more: a peer that
		 * published just before we armed is seen here. */
		int armed_ready = 0;
		for (unsigned i = 0; i < n; i++) {
			struct pktmap_port *p = reqs[i].port;
			pev = POLLIN;
			pfd[i].fd = p->ops->poll_fd ?
					    p->ops->poll_fd(p, reqs[i].events, &pev) :
					    p->fd;
			pfd[i].events = pev;
			pfd[i].revents = 0;
			if (p->ops->poll_arm &&
			    p->ops->poll_arm(p, reqs[i].events))
				armed_ready = 1;
		}
		if (!armed_ready) {
			for (unsigned i = 0; i < n; i++) {
				int cap = reqs[i].port->poll_cap_ms;
				if (cap > 0 && (left < 0 || left > cap))
					left = cap;
				pm_stat_inc(&reqs[i].port->stats->poll_sleeps, 1);
			}
			if (poll(pfd, n, left) < 0) {
				/* EINTR: let the caller see its signal. */
				ready = errno == EINTR ? 0 : -errno;
				poll_disarm(reqs, n);
				break;
			}
		}
		poll_disarm(reqs, n);
	}
	if (pfd != pfd_stack)
		free(pfd);
	return ready;
}

int pktmap_poll(struct pktmap_port *p, short events, int timeout_ms)
{
	struct pktmap_pollreq q = { .port = p, .events = events };
	if (!p)
		return -EINVAL;
	int r = pktmap_poll_many(&q, 1, timeout_ms);
	return r < 0 ? r : q.revents;
}

static const char *mode_name(enum pktmap_mode m)
{
	switch (m) {
	case PKTMAP_MODE_ZEROCOPY: return "zerocopy";
	case PKTMAP_MODE_COPY: return "copy";
	case PKTMAP_MODE_LIVE: return "live";
	default: return "emulated";
	}
}

int pktmap_info(const struct pktmap_port *p, struct pktmap_info *out)
{
	if (!p || !out || out->sz < sizeof(out->sz))
		return -EINVAL;
	struct pktmap_info info;
	memset(&info, 0, sizeof(info));
	info.sz = sizeof(info);
	snprintf(info.name, sizeof(info.name), "%s", p->name);
	snprintf(info.backend, sizeof(info.backend), "%s", p->ops->desc.name);
	snprintf(info.region, sizeof(info.region), "%s", p->region.name);
	info.mode = p->mode;
	info.reg = p->reg;
	info.dir = p->dir;
	info.tx_rings = p->ntx;
	info.rx_rings = p->nrx;
	info.host_tx_rings = p->nhtx;
	info.host_rx_rings = p->nhrx;
	info.first_tx_ring = p->first_tx;
	info.last_tx_ring = p->last_tx;
	info.first_rx_ring = p->first_rx;
	info.last_rx_ring = p->last_rx;
	if (p->ntx + p->nhtx)
		info.tx_slots = p->krings[0].nslots;
	if (p->nrx + p->nhrx)
		info.rx_slots = pm_rxkring((struct pktmap_port *)p, 0)->nslots;
	info.buf_size = p->region.buf_size;
	info.buf_usable = p->bs.usable;
	info.bufs = p->region.nbufs;
	info.linktype = p->linktype;
	info.flags = pm_info_flags(p);
	info.tx_max_len = p->tx_max_len;
	struct stat mst;
	if (p->region.mfd >= 0 && fstat(p->region.mfd, &mst) == 0) {
		info.region_dev = (uint64_t)mst.st_dev;
		info.region_ino = (uint64_t)mst.st_ino;
	}
	if (p->ops->info)
		p->ops->info(p, &info);
	info.mode_name = mode_name(info.mode);
	/* An older caller's smaller structure gets the fields it knows; sz
	 * says how much was filled. */
	info.sz = out->sz < sizeof(info) ? out->sz : sizeof(info);
	memcpy(out, &info, info.sz);
	return 0;
}

int pktmap_set_rx_filter(struct pktmap_port *p, const void *insns, unsigned n)
{
	if (!p || (n && !insns) || n > 4096 || !(p->dir & PKTMAP_DIR_RX))
		return -EINVAL;
	if (!p->ops->rx_filter)
		return -EOPNOTSUPP;
	return p->ops->rx_filter(p, insns, n);
}

int pktmap_set_rx_direction(struct pktmap_port *p, unsigned dir)
{
	if (!p || dir < PKTMAP_RX_IN || dir > PKTMAP_RX_INOUT ||
	    !(p->dir & PKTMAP_DIR_RX))
		return -EINVAL;
	if (!p->ops->rx_direction)
		return dir == PKTMAP_RX_IN ? 0 : -EOPNOTSUPP;
	return p->ops->rx_direction(p, dir);
}

int pktmap_set_drops(struct pktmap_port *p, enum pktmap_drop_reason why,
		     uint64_t total)
{
	if (!p || !p->stats)
		return -EINVAL;
	uint64_t *c = why == PKTMAP_DROP_NO_SPACE ? &p->stats->drop_nospace :
		      why == PKTMAP_DROP_FILTERED ? &p->stats->drop_filtered : NULL;
	if (!c)
		return -EINVAL;
	atomic_store_explicit(PM_ATOMIC(c), total, memory_order_relaxed);
	return 0;
}

/* Add up the counters of rings [lo, hi] of one direction (first > last:
 * none bound). syncs: every bound ring is synced by each call. */
static void sum_rings(const struct pktmap_port *p, uint32_t base, uint32_t lo,
		      uint32_t hi, uint64_t *pkts, uint64_t *bytes,
		      uint64_t *syncs, struct pktmap_stats *st)
{
	for (uint32_t i = lo; i <= hi && i != UINT32_MAX; i++) {
		const struct pm_ring_stats *r = p->krings[base + i].st;
		*pkts += pm_stat_read(&r->packets);
		*bytes += pm_stat_read(&r->bytes);
		uint64_t s = pm_stat_read(&r->syncs);
		*syncs = s > *syncs ? s : *syncs;
		st->drop_invalid += pm_stat_read(&r->drop_invalid);
		st->drop_too_long += pm_stat_read(&r->drop_too_long);
		st->drop_backend += pm_stat_read(&r->drop_backend);
		st->rx_copied += pm_stat_read(&r->copied);
		st->rx_lent += pm_stat_read(&r->lent);
	}
}

int pktmap_stats(const struct pktmap_port *p, struct pktmap_stats *out)
{
	if (!p || !out || out->sz < sizeof(out->sz))
		return -EINVAL;
	/* Each counter is read with one relaxed atomic load: the sync calls
	 * of other threads may be running. Unbound rings count nothing. */
	struct pktmap_stats st;
	memset(&st, 0, sizeof(st));
	sum_rings(p, 0, p->first_tx, p->last_tx, &st.tx_packets, &st.tx_bytes,
		  &st.tx_syncs, &st);
	sum_rings(p, p->ntx + p->nhtx, p->first_rx, p->last_rx, &st.rx_packets,
		  &st.rx_bytes, &st.rx_syncs, &st);
	const struct pm_port_stats *ps = p->stats;
	st.invalid_ring = pm_stat_read(&ps->invalid_ring);
	st.poll_sleeps = pm_stat_read(&ps->poll_sleeps);
	st.wakeups_sent = pm_stat_read(&ps->wakeups_sent);
	if (p->ops->stats)
		kernel_drops((struct pktmap_port *)p, &st, true);
	/* As pktmap_info(): an older caller gets the counters it knows. */
	st.sz = out->sz < sizeof(st) ? out->sz : sizeof(st);
	memcpy(out, &st, st.sz);
	return 0;
}
