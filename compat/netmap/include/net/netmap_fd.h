/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The calls a netmap program makes on a netmap descriptor, answered by
 * libpktmap-netmap's /dev/netmap emulation: included by <net/netmap.h>.
 *
 * netmap's descriptor is a kernel device; pktmap's is emulated, so the
 * open, ioctl, mmap, poll, select, epoll and close a program makes on it
 * must reach the emulation. For the source files that include netmap's
 * headers (pkg-config pktmap-netmap), this header renames those calls to
 * pktmap_nmfd_*(), which serve netmap descriptors and pass every other
 * descriptor to libc. Nothing else in the program is touched: the
 * library does not replace libc's functions (`pktmap netmap-run` does
 * that, for binaries built against netmap itself, with an LD_PRELOAD
 * object).
 *
 * Define PKTMAP_NETMAP_NO_REDIRECT before including netmap's headers to
 * keep libc's names (for example in C++, where `close` may be a member
 * function); then call pktmap_nmfd_*() on netmap descriptors yourself,
 * or run the program under `pktmap netmap-run`.
 */
#ifndef PKTMAP_NET_NETMAP_FD_H
#define PKTMAP_NET_NETMAP_FD_H

/* Every header that declares one of the renamed functions, before the
 * renaming, so that their declarations keep libc's names. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

int pktmap_nmfd_open(const char *path, int flags, ...);
int pktmap_nmfd_openat(int dirfd, const char *path, int flags, ...);
int pktmap_nmfd_ioctl(int fd, unsigned long req, ...);
void *pktmap_nmfd_mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off);
int pktmap_nmfd_munmap(void *addr, size_t len);
int pktmap_nmfd_poll(struct pollfd *fds, nfds_t n, int timeout);
int pktmap_nmfd_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		      const sigset_t *mask);
int pktmap_nmfd_select(int nfds, fd_set *r, fd_set *w, fd_set *x,
		       struct timeval *tv);
int pktmap_nmfd_pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
			const struct timespec *ts, const sigset_t *mask);
int pktmap_nmfd_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int pktmap_nmfd_epoll_wait(int epfd, struct epoll_event *evs, int max,
			   int timeout);
int pktmap_nmfd_epoll_pwait(int epfd, struct epoll_event *evs, int max,
			    int timeout, const sigset_t *mask);
int pktmap_nmfd_close(int fd);
int pktmap_nmfd_dup(int fd);
int pktmap_nmfd_dup2(int fd, int to);
int pktmap_nmfd_dup3(int fd, int to, int flags);

#ifdef __cplusplus
}
#endif

#ifndef PKTMAP_NETMAP_NO_REDIRECT
#define open pktmap_nmfd_open
#define openat pktmap_nmfd_openat
#define ioctl pktmap_nmfd_ioctl
#define mmap pktmap_nmfd_mmap
#define munmap pktmap_nmfd_munmap
#define poll pktmap_nmfd_poll
#define ppoll pktmap_nmfd_ppoll
#define select pktmap_nmfd_select
#define pselect pktmap_nmfd_pselect
#define epoll_ctl pktmap_nmfd_epoll_ctl
#define epoll_wait pktmap_nmfd_epoll_wait
#define epoll_pwait pktmap_nmfd_epoll_pwait
#define close pktmap_nmfd_close
#define dup pktmap_nmfd_dup
#define dup2 pktmap_nmfd_dup2
#define dup3 pktmap_nmfd_dup3
#endif

#endif /* PKTMAP_NET_NETMAP_FD_H */
