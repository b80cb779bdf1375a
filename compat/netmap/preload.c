// SPDX-License-Identifier: BSD-2-Clause
/*
 * libpktmap-netmap-preload.so, what `pktmap netmap-run` puts in
 * LD_PRELOAD: libc's names for the calls a netmap binary makes on
 * /dev/netmap, each one the library's pktmap_nmfd_*() (interpose.c), and
 * the variants glibc's headers turn those calls into (open64, the
 * _FORTIFY_SOURCE checks). Only this object takes libc's names; a program
 * linked against libpktmap-netmap keeps libc's own.
 */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS /* define open and open64, mmap and mmap64 apart */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <unistd.h>

#define PKTMAP_NETMAP_NO_REDIRECT
#include <net/netmap_fd.h>

#define PRELOAD __attribute__((visibility("default")))

/* glibc's _FORTIFY_SOURCE entry points, which its headers do not
 * declare. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen);

/* open(2)'s optional mode argument. */
static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

PRELOAD int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return pktmap_nmfd_open(path, flags, mode);
}

PRELOAD int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return pktmap_nmfd_open(path, flags | O_LARGEFILE, mode);
}

PRELOAD int __open_2(const char *path, int flags)
{
	return pktmap_nmfd_open(path, flags);
}

PRELOAD int __open64_2(const char *path, int flags)
{
	return pktmap_nmfd_open(path, flags | O_LARGEFILE);
}

PRELOAD int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return pktmap_nmfd_openat(dirfd, path, flags, mode);
}

PRELOAD int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return pktmap_nmfd_openat(dirfd, path, flags | O_LARGEFILE, mode);
}

PRELOAD int __openat_2(int dirfd, const char *path, int flags)
{
	return pktmap_nmfd_openat(dirfd, path, flags);
}

PRELOAD int __openat64_2(int dirfd, const char *path, int flags)
{
	return pktmap_nmfd_openat(dirfd, path, flags | O_LARGEFILE);
}

PRELOAD int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return pktmap_nmfd_ioctl(fd, req, arg);
}

PRELOAD void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off)
{
	return pktmap_nmfd_mmap(addr, len, prot, flags, fd, off);
}

PRELOAD void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	return pktmap_nmfd_mmap(addr, len, prot, flags, fd, off);
}

PRELOAD int munmap(void *addr, size_t len)
{
	return pktmap_nmfd_munmap(addr, len);
}

PRELOAD int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	return pktmap_nmfd_poll(fds, n, timeout);
}

PRELOAD int __poll_chk(struct pollfd *fds, nfds_t n, int timeout,
		       size_t fdslen)
{
	(void)fdslen;
	return pktmap_nmfd_poll(fds, n, timeout);
}

PRELOAD int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		  const sigset_t *mask)
{
	return pktmap_nmfd_ppoll(fds, n, ts, mask);
}

PRELOAD int __ppoll_chk(struct pollfd *fds, nfds_t n,
			const struct timespec *ts, const sigset_t *mask,
			size_t fdslen)
{
	(void)fdslen;
	return pktmap_nmfd_ppoll(fds, n, ts, mask);
}

PRELOAD int select(int nfds, fd_set *r, fd_set *w, fd_set *x,
		   struct timeval *tv)
{
	return pktmap_nmfd_select(nfds, r, w, x, tv);
}

PRELOAD int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
		    const struct timespec *ts, const sigset_t *mask)
{
	return pktmap_nmfd_pselect(nfds, r, w, x, ts, mask);
}

PRELOAD int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return pktmap_nmfd_epoll_ctl(epfd, op, fd, ev);
}

PRELOAD int epoll_wait(int epfd, struct epoll_event *evs, int max,
		       int timeout)
{
	return pktmap_nmfd_epoll_wait(epfd, evs, max, timeout);
}

PRELOAD int epoll_pwait(int epfd, struct epoll_event *evs, int max,
			int timeout, const sigset_t *mask)
{
	return pktmap_nmfd_epoll_pwait(epfd, evs, max, timeout, mask);
}

PRELOAD int close(int fd)
{
	return pktmap_nmfd_close(fd);
}

PRELOAD int dup(int fd)
{
	return pktmap_nmfd_dup(fd);
}

PRELOAD int dup2(int fd, int to)
{
	return pktmap_nmfd_dup2(fd, to);
}

PRELOAD int dup3(int fd, int to, int flags)
{
	return pktmap_nmfd_dup3(fd, to, flags);
}
