/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The emulation's waits: poll() (and select(), ppoll() through it) over
 * netmap descriptors with netmap's rules, on pktmap_poll_many(), beside
 * the kernel's wait for the other descriptors of the same call; and
 * epoll sets that hold netmap descriptors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu_priv.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* poll: netmap's rules over pktmap_poll_many() */

/* Before waiting: the syncs netmap's poll does whatever the events
 * (txsync unless NR_NO_TX_POLL, rxsync with NR_DO_RX_POLL). */
static void poll_presync(struct nme_file *f, short events)
{
	if (!(events & POLLOUT) && !(f->flags & NR_NO_TX_POLL))
		nme_f_txsync(f);
	else if (f->off)
		nme_off_tx(f); /* pktmap_poll_many() txsyncs for POLLOUT */
	if (!(events & POLLIN) && (f->flags & NR_DO_RX_POLL))
		nme_f_rxsync(f);
	else if (f->off)
		nme_off_rx_pre(f);
}

/* The slice a mixed wait (netmap and other descriptors) sleeps in each
 * half before looking at the other. */
#define NME_MIX_SLICE_MS 2

/* The descriptor a port wakes for `events` on, or -1 when there is none
 * (pktmap_fd() is readable while an rxsync would find packets, and
 * writable for TX space only on a port opened /T). */
static int port_wait_fd(struct pktmap_port *p, short events, short *ev)
{
	struct pktmap_info info = { .sz = sizeof(info) };
	int fd = pktmap_fd(p);
	if (fd < 0 || pktmap_info(p, &info) < 0)
		return -1;
	*ev = 0;
	if (events & POLLIN)
		*ev |= POLLIN;
	if (events & POLLOUT) {
		if (info.dir != PKTMAP_DIR_TX)
			return -1;
		*ev |= POLLOUT;
	}
	return fd;
}

/* Nothing is ready in a set of netmap ports and other descriptors: sleep
 * until one of them may be. On the ports' own descriptors when they can
 * say it, else in short slices on each side. Returns 0 or -1. */
static int mixed_sleep(struct pktmap_pollreq *req, nfds_t nn,
		       struct pollfd *other, nfds_t no, int left)
{
	struct pollfd stack[32];
	struct pollfd *all = nn + no <= 32 ? stack : calloc(nn + no, sizeof(*all));
	int r = 0;
	bool by_fd = all != NULL;
	for (nfds_t i = 0; by_fd && i < nn; i++) {
		all[no + i].fd = port_wait_fd(req[i].port, req[i].events,
					      &all[no + i].events);
		all[no + i].revents = 0;
		by_fd = all[no + i].fd >= 0;
	}
	if (by_fd) {
		memcpy(all, other, no * sizeof(*other));
		r = nme_libc.poll(all, no + nn, left);
	} else {
		int w = left < 0 || left > NME_MIX_SLICE_MS ? NME_MIX_SLICE_MS : left;
		r = nme_libc.poll(other, no, w);
		if (r == 0) {
			r = pktmap_poll_many(req, (unsigned)nn, w);
			if (r < 0) {
				errno = -r;
				r = -1;
			}
		}
	}
	if (all && all != stack)
		free(all);
	return r < 0 ? -1 : 0;
}

int nme_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct pktmap_pollreq stack_req[16];
	struct pollfd stack_other[16];
	nfds_t nn = 0, no = 0;
	for (nfds_t i = 0; i < n; i++) {
		if (fds[i].fd >= 0 && nme_get(fds[i].fd))
			nn++;
		else
			no++;
	}
	uint32_t stack_map_n[16], stack_map_o[16];
	struct pktmap_pollreq *req = nn <= 16 ? stack_req :
						calloc(nn, sizeof(*req));
	struct pollfd *other = no <= 16 ? stack_other : calloc(no, sizeof(*other));
	uint32_t *map_n = nn <= 16 ? stack_map_n : calloc(nn, sizeof(*map_n));
	uint32_t *map_o = no <= 16 ? stack_map_o : calloc(no, sizeof(*map_o));
	int ret = -1;
	if (!req || !other || !map_n || !map_o) {
		errno = ENOMEM;
		goto out;
	}
	nfds_t a = 0, b = 0;
	bool unbound = false;
	for (nfds_t i = 0; i < n; i++) {
		struct nme_file *f = fds[i].fd >= 0 ? nme_get(fds[i].fd) : NULL;
		fds[i].revents = 0;
		if (f) {
			if (!f->port) {
				/* netmap: poll on an unbound fd is an error */
				fds[i].revents = POLLERR;
				unbound = true;
				req[a].port = NULL;
				map_n[a++] = (uint32_t)i;
				continue;
			}
			poll_presync(f, fds[i].events);
			req[a].port = f->port;
			req[a].events = fds[i].events & (POLLIN | POLLOUT);
			req[a].revents = 0;
			map_n[a++] = (uint32_t)i;
		} else {
			other[b] = fds[i];
			map_o[b++] = (uint32_t)i;
		}
	}
	if (unbound) {
		ret = 0;
		for (nfds_t i = 0; i < n; i++)
			ret += fds[i].revents != 0;
		goto out;
	}
	int64_t deadline = timeout_ms >= 0 ? pm_clock_ms(CLOCK_MONOTONIC) + timeout_ms : -1;
	for (;;) {
		int ready = 0, left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - pm_clock_ms(CLOCK_MONOTONIC);
			left = l < 0 ? 0 : (l > 1000000 ? 1000000 : (int)l);
		}
		/* Netmap ports: wait here when they are all there is. */
		int wait = no == 0 ? left : 0;
		int r = pktmap_poll_many(req, (unsigned)nn, wait);
		if (r < 0) {
			errno = -r;
			goto out;
		}
		ready += r;
		if (no) {
			r = nme_libc.poll(other, no, 0);
			if (r < 0)
				goto out;
			ready += r;
			if (!ready && left != 0 &&
			    mixed_sleep(req, nn, other, no, left) < 0)
				goto out;
		}
		if (ready || left == 0)
			break;
	}
	ret = 0;
	for (nfds_t i = 0; i < nn; i++) {
		struct nme_file *f = nme_get(fds[map_n[i]].fd);
		if (f && f->off)
			nme_off_rx_post(f); /* what the rxsyncs in there brought */
		fds[map_n[i]].revents = req[i].revents;
	}
	for (nfds_t i = 0; i < no; i++)
		fds[map_o[i]].revents = other[i].revents;
	for (nfds_t i = 0; i < n; i++)
		ret += fds[i].revents != 0;
out:
	if (req != stack_req)
		free(req);
	if (other != stack_other)
		free(other);
	if (map_n != stack_map_n)
		free(map_n);
	if (map_o != stack_map_o)
		free(map_o);
	return ret;
}

/* ------------------------------------------------------------------ */
/* epoll: netmap descriptors registered on an epoll set are kept here
 * (their eventfd never becomes ready), and epoll_wait on that set runs
 * netmap's poll for them beside the kernel's wait for the rest. */

struct nme_ep {
	int epfd, fd;
	struct epoll_event ev;
	struct nme_ep *next;
};
static struct nme_ep *eps;

/* Count of non-netmap registrations per epoll set. */
struct nme_epset {
	int epfd;
	int others;
	struct nme_epset *next;
};
static struct nme_epset *epsets;
/* The lock of the two lists (theirs alone: the epoll side shares no
 * state with the files but their table, read lock-free). */
static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;

static struct nme_epset *epset(int epfd, bool create)
{
	for (struct nme_epset *s = epsets; s; s = s->next)
		if (s->epfd == epfd)
			return s;
	if (!create)
		return NULL;
	struct nme_epset *s = calloc(1, sizeof(*s));
	if (s) {
		s->epfd = epfd;
		s->next = epsets;
		epsets = s;
	}
	return s;
}

int nme_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	nme_libc_init();
	if (!nme_get(fd)) {
		int r = nme_libc.epoll_ctl(epfd, op, fd, ev);
		if (r == 0 && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_DEL)) {
			pthread_mutex_lock(&ep_lock);
			struct nme_epset *s = epset(epfd, op == EPOLL_CTL_ADD);
			if (s)
				s->others += op == EPOLL_CTL_ADD ? 1 : -1;
			pthread_mutex_unlock(&ep_lock);
		}
		return r;
	}
	pthread_mutex_lock(&ep_lock);
	struct nme_ep **pp = &eps, *e;
	for (; (e = *pp); pp = &e->next)
		if (e->epfd == epfd && e->fd == fd)
			break;
	int ret = 0;
	switch (op) {
	case EPOLL_CTL_ADD:
		if (e) {
			errno = EEXIST;
			ret = -1;
		} else if (!ev || !(e = calloc(1, sizeof(*e)))) {
			errno = ev ? ENOMEM : EFAULT;
			ret = -1;
		} else {
			e->epfd = epfd;
			e->fd = fd;
			e->ev = *ev;
			e->next = eps;
			eps = e;
		}
		break;
	case EPOLL_CTL_MOD:
		if (!e || !ev) {
			errno = e ? EFAULT : ENOENT;
			ret = -1;
		} else {
			e->ev = *ev;
		}
		break;
	case EPOLL_CTL_DEL:
		if (!e) {
			errno = ENOENT;
			ret = -1;
		} else {
			*pp = e->next;
			free(e);
		}
		break;
	default:
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&ep_lock);
	return ret;
}

void nme_epoll_forget(int epfd)
{
	if (!atomic_load_explicit(PM_ATOMIC(&eps), memory_order_relaxed) &&
	    !atomic_load_explicit(PM_ATOMIC(&epsets), memory_order_relaxed))
		return;
	pthread_mutex_lock(&ep_lock);
	for (struct nme_ep **pp = &eps; *pp;) {
		struct nme_ep *e = *pp;
		if (e->epfd == epfd) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
	for (struct nme_epset **pp = &epsets; *pp; pp = &(*pp)->next)
		if ((*pp)->epfd == epfd) {
			struct nme_epset *s = *pp;
			*pp = s->next;
			free(s);
			break;
		}
	pthread_mutex_unlock(&ep_lock);
}

/* A netmap descriptor closed: the kernel drops it from every epoll set. */
void nme_epoll_forget_fd(int fd)
{
	if (!atomic_load_explicit(PM_ATOMIC(&eps), memory_order_relaxed))
		return;
	pthread_mutex_lock(&ep_lock);
	for (struct nme_ep **pp = &eps; *pp;) {
		struct nme_ep *e = *pp;
		if (e->fd == fd) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&ep_lock);
}

int nme_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	struct pollfd pf[64];
	epoll_data_t data[64];
	uint32_t oneshot[64];
	int n = 0, others = 0;
	pthread_mutex_lock(&ep_lock);
	for (struct nme_ep *e = eps; e && n < 64; e = e->next) {
		if (e->epfd != epfd || !(e->ev.events & (EPOLLIN | EPOLLOUT)))
			continue;
		pf[n].fd = e->fd;
		pf[n].events = (short)(((e->ev.events & EPOLLIN) ? POLLIN : 0) |
				       ((e->ev.events & EPOLLOUT) ? POLLOUT : 0));
		data[n] = e->ev.data;
		oneshot[n] = e->ev.events & EPOLLONESHOT;
		n++;
	}
	struct nme_epset *s = epset(epfd, false);
	others = s ? s->others : 0;
	pthread_mutex_unlock(&ep_lock);
	if (n == 0)
		return -2;
	if (max <= 0) {
		errno = EINVAL;
		return -1;
	}

	int64_t deadline = timeout_ms >= 0 ? pm_clock_ms(CLOCK_MONOTONIC) + timeout_ms : -1;
	for (;;) {
		int left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - pm_clock_ms(CLOCK_MONOTONIC);
			left = l < 0 ? 0 : (l > 1000000 ? 1000000 : (int)l);
		}
		int wait = others ? 0 : left;
		int r = nme_poll(pf, (nfds_t)n, wait);
		if (r < 0)
			return -1;
		int got = 0;
		for (int i = 0; i < n && got < max; i++) {
			if (!pf[i].revents)
				continue;
			uint32_t e = 0;
			if (pf[i].revents & POLLIN)
				e |= EPOLLIN;
			if (pf[i].revents & POLLOUT)
				e |= EPOLLOUT;
			if (pf[i].revents & POLLERR)
				e |= EPOLLERR;
			if (pf[i].revents & POLLHUP)
				e |= EPOLLHUP;
			struct epoll_event out = { .events = e, .data = data[i] };
			/* the caller's array: copied out as the kernel does */
			if (nme_copyout((uintptr_t)&evs[got], &out, sizeof(out)) < 0)
				return -1;
			got++;
			if (oneshot[i]) {
				/* EPOLLONESHOT: disarmed until EPOLL_CTL_MOD */
				pthread_mutex_lock(&ep_lock);
				for (struct nme_ep *x = eps; x; x = x->next)
					if (x->epfd == epfd && x->fd == pf[i].fd)
						x->ev.events &= ~(uint32_t)(EPOLLIN | EPOLLOUT);
				pthread_mutex_unlock(&ep_lock);
			}
		}
		if (others && got < max) {
			int w = got ? 0 : (left < 0 || left > NME_MIX_SLICE_MS ?
					   NME_MIX_SLICE_MS : left);
			r = nme_libc.epoll_wait(epfd, evs + got, max - got, w);
			if (r < 0 && got == 0)
				return -1;
			if (r > 0)
				got += r;
		}
		if (got || left == 0)
			return got;
	}
}
