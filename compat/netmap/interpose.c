/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The libc calls a netmap program makes on /dev/netmap, answered by the
 * emulation (emu.c); every other call goes to libc (libc.c) untouched.
 * They are exported as pktmap_nmfd_*() (<net/netmap_fd.h>): a program
 * built with `pkg-config pktmap-netmap` reaches them because netmap's
 * headers rename its calls, and `pktmap netmap-run` preloads preload.c, whose
 * open, ioctl, mmap, poll, ... are libc's names over these. The library
 * itself takes no libc name. Descriptors that are not netmap's cost one
 * table lookup.
 */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS /* define open and open64, mmap and mmap64 apart */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <unistd.h>

#define PKTMAP_NETMAP_NO_REDIRECT
#include <net/netmap_fd.h>

#include "emu.h"

/* glibc declares poll()'s array write-only (__attr_access), so reading
 * the events in a definition of poll() is "maybe uninitialized" to gcc at
 * -O0: it is the caller's array, initialised by the caller. (clang has
 * no such warning.) */
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/* open(2)'s optional mode argument. */
#define MODE_ARG(flags, mode)                                  \
	do {                                                   \
		if ((flags) & (O_CREAT | __O_TMPFILE)) {       \
			va_list ap;                            \
			va_start(ap, flags);                   \
			mode = (mode_t)va_arg(ap, int);        \
			va_end(ap);                            \
		}                                              \
	} while (0)

NME_EXPORT int pktmap_nmfd_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	MODE_ARG(flags, mode);
	if (nme_is_device(path))
		return nme_open(flags);
	nme_libc_init();
	return nme_libc.open(path, flags, mode);
}

NME_EXPORT int pktmap_nmfd_openat(int dirfd, const char *path, int flags,
				  ...)
{
	mode_t mode = 0;
	MODE_ARG(flags, mode);
	if (nme_is_device(path))
		return nme_open(flags);
	nme_libc_init();
	return nme_libc.openat(dirfd, path, flags, mode);
}

NME_EXPORT int pktmap_nmfd_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (nme_owns(fd))
		return nme_ioctl(fd, req, arg);
	nme_libc_init();
	return nme_libc.ioctl(fd, req, arg);
}

NME_EXPORT void *pktmap_nmfd_mmap(void *addr, size_t len, int prot, int flags,
				   int fd, off_t off)
{
	if (fd >= 0 && !(flags & MAP_ANONYMOUS) && nme_owns(fd))
		return nme_mmap(addr, len, prot, flags, fd, off);
	nme_libc_init();
	return nme_libc.mmap(addr, len, prot, flags, fd, off);
}

NME_EXPORT int pktmap_nmfd_munmap(void *addr, size_t len)
{
	if (nme_munmap(addr, len))
		return 0;
	nme_libc_init();
	return nme_libc.munmap(addr, len);
}

static bool any_ours(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (nme_owns(fds[i].fd))
			return true;
	return false;
}

NME_EXPORT int pktmap_nmfd_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (any_ours(fds, n))
		return nme_poll(fds, n, timeout);
	nme_libc_init();
	return nme_libc.poll(fds, n, timeout);
}

static int ts_to_ms(const struct timespec *ts)
{
	if (!ts)
		return -1;
	long long ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* Run a wait of ours with the caller's signal mask in place, as the
 * p-variants do. */
#define WITH_MASK(mask, call)                                           \
	({                                                              \
		sigset_t old_;                                          \
		if (mask)                                               \
			pthread_sigmask(SIG_SETMASK, mask, &old_);      \
		int r_ = (call);                                        \
		int e_ = errno;                                         \
		if (mask)                                               \
			pthread_sigmask(SIG_SETMASK, &old_, NULL);      \
		errno = e_;                                             \
		r_;                                                     \
	})

NME_EXPORT int pktmap_nmfd_ppoll(struct pollfd *fds, nfds_t n,
				 const struct timespec *ts, const sigset_t *mask)
{
	if (any_ours(fds, n))
		return WITH_MASK(mask, nme_poll(fds, n, ts_to_ms(ts)));
	nme_libc_init();
	return nme_libc.ppoll(fds, n, ts, mask);
}

/* select() over a set holding a netmap descriptor: as poll(). */
static int select_ours(int nfds, fd_set *r, fd_set *w, fd_set *x, int ms)
{
	struct pollfd stack[64];
	int n = 0;
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) ||
		    (x && FD_ISSET(fd, x)))
			n++;
	struct pollfd *p = n <= 64 ? stack : calloc((size_t)n, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	int k = 0;
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
		short ev = 0;
		if (r && FD_ISSET(fd, r))
			ev |= POLLIN;
		if (w && FD_ISSET(fd, w))
			ev |= POLLOUT;
		if (x && FD_ISSET(fd, x))
			ev |= POLLPRI;
		if (ev) {
			p[k].fd = fd;
			p[k].events = ev;
			p[k].revents = 0;
			k++;
		}
	}
	int ret = nme_poll(p, (nfds_t)n, ms);
	if (ret >= 0) {
		ret = 0;
		if (r)
			FD_ZERO(r);
		if (w)
			FD_ZERO(w);
		if (x)
			FD_ZERO(x);
		for (int i = 0; i < n; i++) {
			short rev = p[i].revents;
			if (r && (rev & (POLLIN | POLLHUP | POLLERR)) &&
			    (p[i].events & POLLIN)) {
				FD_SET(p[i].fd, r);
				ret++;
			}
			if (w && (rev & (POLLOUT | POLLERR)) &&
			    (p[i].events & POLLOUT)) {
				FD_SET(p[i].fd, w);
				ret++;
			}
			if (x && (rev & POLLPRI)) {
				FD_SET(p[i].fd, x);
				ret++;
			}
		}
	}
	if (p != stack)
		free(p);
	return ret;
}

static bool set_has_ours(int nfds, fd_set *r, fd_set *w, fd_set *x)
{
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) ||
		     (x && FD_ISSET(fd, x))) && nme_owns(fd))
			return true;
	return false;
}

NME_EXPORT int pktmap_nmfd_select(int nfds, fd_set *r, fd_set *w, fd_set *x,
				  struct timeval *tv)
{
	if (set_has_ours(nfds, r, w, x)) {
		int ms = -1;
		if (tv) {
			long long v = (long long)tv->tv_sec * 1000 +
				      (tv->tv_usec + 999) / 1000;
			ms = v > 0x7fffffff ? 0x7fffffff : (int)v;
		}
		return select_ours(nfds, r, w, x, ms);
	}
	nme_libc_init();
	return nme_libc.select(nfds, r, w, x, tv);
}

NME_EXPORT int pktmap_nmfd_pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
				   const struct timespec *ts,
				   const sigset_t *mask)
{
	if (set_has_ours(nfds, r, w, x))
		return WITH_MASK(mask, select_ours(nfds, r, w, x, ts_to_ms(ts)));
	nme_libc_init();
	return nme_libc.pselect(nfds, r, w, x, ts, mask);
}

NME_EXPORT int pktmap_nmfd_epoll_ctl(int epfd, int op, int fd,
				     struct epoll_event *ev)
{
	return nme_epoll_ctl(epfd, op, fd, ev);
}

NME_EXPORT int pktmap_nmfd_epoll_wait(int epfd, struct epoll_event *evs, int max,
				      int timeout)
{
	int r = nme_epoll_wait(epfd, evs, max, timeout);
	if (r != -2)
		return r;
	nme_libc_init();
	return nme_libc.epoll_wait(epfd, evs, max, timeout);
}

NME_EXPORT int pktmap_nmfd_epoll_pwait(int epfd, struct epoll_event *evs, int max,
				       int timeout, const sigset_t *mask)
{
	int r = WITH_MASK(mask, nme_epoll_wait(epfd, evs, max, timeout));
	if (r != -2)
		return r;
	nme_libc_init();
	return nme_libc.epoll_pwait(epfd, evs, max, timeout, mask);
}

NME_EXPORT int pktmap_nmfd_close(int fd)
{
	nme_libc_init();
	if (nme_owns(fd)) {
		/* Out of the table first (an epoll_ctl racing with the close
		 * sees a plain descriptor), then out of every epoll set, as
		 * the kernel drops a closed descriptor, then closed. */
		nme_close_table_only(fd);
		nme_epoll_forget_fd(fd);
		return nme_libc.close(fd);
	}
	nme_epoll_forget(fd);
	return nme_libc.close(fd);
}

NME_EXPORT int pktmap_nmfd_dup(int fd)
{
	nme_libc_init();
	int n = nme_libc.dup(fd);
	if (n >= 0 && nme_owns(fd))
		return nme_dup_to(fd, n);
	return n;
}

NME_EXPORT int pktmap_nmfd_dup2(int fd, int to)
{
	nme_libc_init();
	if (fd != to && nme_owns(to)) {
		nme_close_table_only(to);
		nme_epoll_forget_fd(to);
	}
	int n = nme_libc.dup2(fd, to);
	if (n >= 0 && fd != to && nme_owns(fd))
		return nme_dup_to(fd, n);
	return n;
}

NME_EXPORT int pktmap_nmfd_dup3(int fd, int to, int flags)
{
	nme_libc_init();
	if (fd != to && nme_owns(to)) {
		nme_close_table_only(to);
		nme_epoll_forget_fd(to);
	}
	int n = nme_libc.dup3(fd, to, flags);
	if (n >= 0 && nme_owns(fd))
		return nme_dup_to(fd, n);
	return n;
}
