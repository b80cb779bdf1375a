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

/* A timeout in milliseconds (rounded up, at most INT_MAX) from seconds
 * and a fraction of unit nanoseconds per second, as the kernel takes it:
 * -2 with errno EINVAL for a negative or unnormalised one. */
static int to_ms(long long sec, long long frac, long long unit)
{
	if (sec < 0 || frac < 0 || frac >= unit) {
		errno = EINVAL;
		return -2;
	}
	if (sec > 0x7fffffff / 1000)
		return 0x7fffffff;
	long long ms = sec * 1000 + (frac * 1000 + unit - 1) / unit;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* The caller's timespec (NULL: wait for ever, -1), copied in: -2 with
 * errno EFAULT or EINVAL when it cannot be read or is not a time. */
static int ts_in(const struct timespec *ts)
{
	struct timespec t;
	if (!ts)
		return -1;
	if (nme_copyin(&t, (uintptr_t)ts, sizeof(t)) < 0)
		return -2;
	return to_ms(t.tv_sec, t.tv_nsec, 1000000000);
}

/* The same for select()'s timeval. */
static int tv_in(const struct timeval *tv)
{
	struct timeval t;
	if (!tv)
		return -1;
	if (nme_copyin(&t, (uintptr_t)tv, sizeof(t)) < 0)
		return -2;
	return to_ms(t.tv_sec, t.tv_usec, 1000000);
}

static bool any_ours(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (nme_owns(fds[i].fd))
			return true;
	return false;
}

/* The caller's pollfd array, copied in as the kernel does (a bad address
 * is EFAULT, never a fault of ours): into stack when it fits, else into
 * a new array in *copy. Returns 0, or -1 with errno (EINVAL: more
 * descriptors than RLIMIT_NOFILE, as poll(2)). */
static int fds_in(const struct pollfd *fds, nfds_t n, struct pollfd *stack,
		  size_t nstack, struct pollfd **copy)
{
	*copy = stack;
	if (n > nstack) {
		long max = sysconf(_SC_OPEN_MAX);
		if (max > 0 && n > (nfds_t)max) {
			errno = EINVAL;
			return -1;
		}
		*copy = malloc(n * sizeof(*fds));
		if (!*copy) {
			errno = ENOMEM;
			return -1;
		}
	}
	if (nme_copyin(*copy, (uintptr_t)fds, n * sizeof(*fds)) == 0)
		return 0;
	if (*copy != stack)
		free(*copy);
	return -1;
}

/* poll() and ppoll() over the copy: ours waits (nme_poll) and the
 * revents go back to the caller's array; anything else is libc's, with
 * the caller's own array (the kernel checks it). */
static int poll_any(struct pollfd *fds, nfds_t n, int ms,
		    const struct timespec *ts, const sigset_t *mask, bool pvar)
{
	struct pollfd stack[64], *c;
	if (fds_in(fds, n, stack, 64, &c) < 0)
		return -1;
	int r;
	if (!any_ours(c, n)) {
		nme_libc_init();
		r = pvar ? nme_libc.ppoll(fds, n, ts, mask) :
			   nme_libc.poll(fds, n, ms);
	} else if (pvar && (ms = ts_in(ts)) == -2) {
		r = -1;
	} else {
		r = pvar ? WITH_MASK(mask, nme_poll(c, n, ms)) : nme_poll(c, n, ms);
		if (r >= 0 && nme_copyout((uintptr_t)fds, c, n * sizeof(*c)) < 0)
			r = -1;
	}
	int e = errno;
	if (c != stack)
		free(c);
	errno = e;
	return r;
}

NME_EXPORT int pktmap_nmfd_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	return poll_any(fds, n, timeout, NULL, NULL, false);
}

NME_EXPORT int pktmap_nmfd_ppoll(struct pollfd *fds, nfds_t n,
				 const struct timespec *ts, const sigset_t *mask)
{
	return poll_any(fds, n, -1, ts, mask, true);
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

/* The bytes of a set the kernel reads for nfds descriptors (whole longs),
 * of those we look at (below FD_SETSIZE). */
static size_t set_bytes(int nfds)
{
	int n = nfds < FD_SETSIZE ? nfds : FD_SETSIZE;
	size_t bits = 8 * sizeof(long);
	return ((size_t)n + bits - 1) / bits * sizeof(long);
}

/* select() and pselect(): the caller's sets copied in as the kernel does
 * (a bad address is EFAULT, never a fault of ours); a set holding a
 * descriptor of ours waits as poll() and the sets go back; anything else
 * is libc's with the caller's own arguments. ms is computed only for
 * ours, from a copy (tv or ts). */
static int select_any(int nfds, fd_set *r, fd_set *w, fd_set *x,
		      struct timeval *tv, const struct timespec *ts,
		      const sigset_t *mask, bool pvar)
{
	if (nfds < 0) {
		errno = EINVAL;
		return -1;
	}
	fd_set c[3];
	fd_set *u[3] = { r, w, x }, *k[3] = { NULL, NULL, NULL };
	size_t len = set_bytes(nfds);
	for (int i = 0; i < 3; i++) {
		if (!u[i])
			continue;
		FD_ZERO(&c[i]);
		if (nme_copyin(&c[i], (uintptr_t)u[i], len) < 0)
			return -1;
		k[i] = &c[i];
	}
	if (!set_has_ours(nfds, k[0], k[1], k[2])) {
		nme_libc_init();
		return pvar ? nme_libc.pselect(nfds, r, w, x, ts, mask) :
			      nme_libc.select(nfds, r, w, x, tv);
	}
	int ms = pvar ? ts_in(ts) : tv_in(tv);
	if (ms == -2)
		return -1;
	int ret = pvar ? WITH_MASK(mask, select_ours(nfds, k[0], k[1], k[2], ms)) :
			 select_ours(nfds, k[0], k[1], k[2], ms);
	for (int i = 0; i < 3 && ret >= 0; i++)
		if (u[i] && nme_copyout((uintptr_t)u[i], &c[i], len) < 0)
			ret = -1;
	return ret;
}

NME_EXPORT int pktmap_nmfd_select(int nfds, fd_set *r, fd_set *w, fd_set *x,
				  struct timeval *tv)
{
	return select_any(nfds, r, w, x, tv, NULL, NULL, false);
}

NME_EXPORT int pktmap_nmfd_pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
				   const struct timespec *ts,
				   const sigset_t *mask)
{
	return select_any(nfds, r, w, x, NULL, ts, mask, true);
}

NME_EXPORT int pktmap_nmfd_epoll_ctl(int epfd, int op, int fd,
				     struct epoll_event *ev)
{
	/* The event of a descriptor of ours is ours to read: copied in, as
	 * the kernel does (libc's are the kernel's). */
	struct epoll_event e;
	if (ev && nme_owns(fd)) {
		if (nme_copyin(&e, (uintptr_t)ev, sizeof(e)) < 0)
			return -1;
		ev = &e;
	}
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
