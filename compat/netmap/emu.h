/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The /dev/netmap emulation: what netmap's kernel module does for a
 * program, done over pktmap ports. One copy serves both ways a netmap
 * program runs on pktmap: linked against libpktmap-netmap (whose
 * libnetmap calls open/ioctl/mmap exactly as netmap's does) or started by
 * `pktmap netmap-run` with the same library in LD_PRELOAD. interpose.c
 * routes the libc calls here; docs/netmap.md describes the behaviour.
 */
#ifndef PKTMAP_COMPAT_NETMAP_EMU_H
#define PKTMAP_COMPAT_NETMAP_EMU_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/types.h>

#define NME_EXPORT __attribute__((visibility("default")))

/* The libc functions the emulation stands in front of (interpose.c),
 * looked up in libc itself (libc.c). */
struct nme_libc {
	int (*open)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *,
		     const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *,
		       const struct timespec *, const sigset_t *);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
};
extern struct nme_libc nme_libc;
void nme_libc_init(void);

/* True if `path` names the netmap device. */
bool nme_is_device(const char *path);
/* open("/dev/netmap"): a new, unbound netmap file descriptor, or -1 with
 * errno. */
int nme_open(int oflags);
/* Is fd one of ours? (cheap: one load) */
bool nme_owns(int fd);
int nme_ioctl(int fd, unsigned long req, void *arg);
void *nme_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
/* munmap of a mapping nme_mmap() returned: 1 handled, 0 not ours. */
int nme_munmap(void *addr, size_t len);
/* dup on one of ours (the real fd is duplicated too). */
int nme_dup_to(int oldfd, int newfd);
/* fd is about to be closed, or replaced by dup2/dup3: out of the table,
 * the real fd kept (the caller closes it, after nme_epoll_forget_fd). */
void nme_close_table_only(int fd);
/* poll() over a set with at least one of ours. */
int nme_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
int nme_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/* epoll_wait on an epoll set: returns -2 when it holds none of ours. */
int nme_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms);
/* An epoll fd is being closed: forget what was registered on it. */
void nme_epoll_forget(int epfd);
/* A netmap descriptor is being closed: drop it from every epoll set. */
void nme_epoll_forget_fd(int fd);

/* The last error of this thread, one line ("" if none), and whether the
 * caller (libnetmap) reports it itself instead of the emulation printing
 * it. */
const char *nme_last_error(void);
void nme_quiet_errors(bool quiet);

/* emu_req.c: the program's memory, read and written as the kernel's
 * copy_from_user()/copy_to_user() do. Return 0, or -1 with errno EFAULT
 * when an address is not mapped (or not writable, out). */
int nme_copyin(void *dst, uint64_t src, size_t len);
int nme_copyout(uint64_t dst, const void *src, size_t len);

#endif /* PKTMAP_COMPAT_NETMAP_EMU_H */
