// SPDX-License-Identifier: BSD-2-Clause
/*
 * Handing a sealed memfd to another user (@conf:share=group:G).
 *
 * A process of another uid cannot take a memfd from /proc/PID/fd (the
 * kernel lets only the same user, or root, do that), and a region whose
 * memory is a file the group can open is a region the group can
 * truncate under its partners (SIGBUS for them). So every holder of a
 * shared region serves its sealed memfd: a thread of its own listens on
 * an abstract unix socket named with a random nonce (nothing to remove,
 * gone with the process, not taken first by anyone; but anyone can read
 * it in /proc/net/unix), checks each caller with SO_PEERCRED and
 * SO_PEERGROUPS (the holder's own uid, root, or a member of group G: the
 * one guard) and passes the memfd with SCM_RIGHTS. The joiner
 * accepts it only if it is sealed against shrinking and growing (the
 * caller, region.c, also checks which memfd and its size).
 *
 * Abstract names belong to a network namespace: the partners of a shared
 * region must be in one (they already share /dev/shm).
 *
 * A region not shared with a group is served the same way, to our own uid
 * (and root) only, for a holder that some process of its own uid may be
 * refused in /proc: one that holds capabilities (the kernel lets a caller
 * into /proc/PID/fd only if it has every capability the holder has, so
 * dumpcap, root without capabilities, cannot join root's full pipe) or
 * that is not dumpable. The joiner asks there when /proc says no. That
 * serving is no thread of the holder's (a thread in every process with
 * capabilities makes each of them multi-threaded, and a program that
 * forks after opening a port then forks a multi-threaded process, which
 * ThreadSanitizer does not support): the holder binds the socket and
 * hands it and the memfd to its cleaner, a process (reap.c), which
 * answers with pm_share_answer(). Its calls are the system calls
 * themselves: the cleaner is a copy of the holder taken at any point,
 * whose libc may hold locks, under a preload that replaces close and
 * poll (reap.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "share.h"

struct pm_serve {
	int lfd;          /* the listening socket */
	int stop[2];      /* a byte (or EOF) on stop[0] ends the thread */
	int mfd;          /* what is served */
	uint32_t gid;     /* who besides our uid may have it */
	pid_t pid;        /* the process that runs the thread */
	pthread_t thread;
};

static socklen_t share_addr(struct sockaddr_un *a, uint32_t nonce, int32_t pid)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
			 "pktmap.share.%d.%08x", (int)pid, (unsigned)nonce);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* May the process at the other end of c have the memory: our uid, root
 * (which could take it from /proc anyway), or a member (primary or
 * supplementary) of the group the region is shared with, if any? Without
 * a group, only system calls (the cleaner's case); a long list of groups
 * takes malloc (the serving thread's). */
static bool peer_allowed(int c, uint32_t gid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (syscall(SYS_getsockopt, c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return false;
	if (cr.uid == geteuid() || cr.uid == 0)
		return true;
	if (gid == PM_SHARE_NO_GROUP)
		return false;
	if (cr.gid == gid)
		return true;
	gid_t few[64], *groups = few;
	len = sizeof(few);
	int ret = getsockopt(c, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	if (ret != 0 && errno == ERANGE && (groups = malloc(len)) != NULL)
		ret = getsockopt(c, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	bool member = false;
	for (size_t i = 0; ret == 0 && i < len / sizeof(gid_t); i++)
		member |= groups[i] == gid;
	if (groups != few)
		free(groups);
	return member;
}

/* Room for the most descriptors one message carries. */
union share_cmsg {
	struct cmsghdr h;
	char buf[CMSG_SPACE(PM_SHARE_MAX_FDS * sizeof(int))];
};

int pm_share_send(int sock, const void *data, size_t len, const int *fds,
		  int n)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	union share_cmsg u;
	memset(&u, 0, sizeof(u));
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (n > 0) {
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
	}
	long sent = syscall(SYS_sendmsg, sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	return sent == (long)len ? 0 : sent < 0 ? -errno : -EIO;
}

ssize_t pm_share_recv(int sock, void *data, size_t len, int *fds, int n)
{
	size_t room = (size_t)n * sizeof(int);
	struct iovec iov = { .iov_base = data, .iov_len = len };
	union share_cmsg u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = CMSG_SPACE(room) };
	for (int i = 0; i < n; i++)
		fds[i] = -1;
	long got = syscall(SYS_recvmsg, sock, &m,
			   MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (got < 0)
		return -errno;
	/* Descriptors beyond n were not installed (MSG_CTRUNC): the kernel
	 * drops them. */
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
		size_t k = cm->cmsg_len - CMSG_LEN(0);
		memcpy(fds, CMSG_DATA(cm), k < room ? k : room);
	}
	return got;
}

void pm_share_answer(int lfd, int mfd, uint32_t gid)
{
	int c = (int)syscall(SYS_accept4, lfd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	/* Never blocks: one byte into an empty socket. A caller that does not
	 * read costs it nothing. */
	if (peer_allowed(c, gid))
		(void)pm_share_send(c, "m", 1, &mfd, 1);
	(void)syscall(SYS_close, c);
}

/* The serving thread: answer every caller at once, until told to stop. */
static void *serve_main(void *arg)
{
	struct pm_serve *s = arg;
	for (;;) {
		struct pollfd pf[2] = { { .fd = s->lfd, .events = POLLIN },
					{ .fd = s->stop[0], .events = POLLIN } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			break;
		pm_share_answer(s->lfd, s->mfd, s->gid);
	}
	return NULL;
}

static void serve_free(struct pm_serve *s)
{
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stop[0] >= 0)
		close(s->stop[0]);
	if (s->stop[1] >= 0)
		close(s->stop[1]);
	free(s);
}

/* Bind a fresh random name (a taken one is someone else's: draw again). */
static int share_bind(int lfd, uint32_t *nonce)
{
	for (int tries = 0; tries < 8; tries++) {
		struct sockaddr_un a;
		if (getrandom(nonce, sizeof(*nonce), 0) != sizeof(*nonce))
			return -EIO;
		socklen_t al = share_addr(&a, *nonce, (int32_t)getpid());
		if (bind(lfd, (struct sockaddr *)&a, al) == 0)
			return listen(lfd, 64) == 0 ? 0 : -errno;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

int pm_share_listen(uint32_t *nonce)
{
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			 0);
	if (lfd < 0)
		return -errno;
	int ret = share_bind(lfd, nonce);
	if (ret) {
		close(lfd);
		return ret;
	}
	return lfd;
}

uint64_t pm_caps_permitted(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0)
		return geteuid() == 0 ? ~(uint64_t)0 : 0;
	return d[0].permitted | (uint64_t)d[1].permitted << 32;
}

bool pm_share_guarded(void)
{
	return pm_caps_permitted() != 0 || prctl(PR_GET_DUMPABLE) != 1;
}

int pm_share_serve(int mfd, uint32_t gid, struct pm_serve **out,
		   uint32_t *nonce)
{
	struct pm_serve *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lfd = s->stop[0] = s->stop[1] = -1;
	s->mfd = mfd;
	s->gid = gid;
	s->pid = getpid();
	int ret = s->lfd = pm_share_listen(nonce);
	if (ret >= 0)
		ret = pipe2(s->stop, O_CLOEXEC) != 0 ? -errno : 0;
	if (ret) {
		serve_free(s);
		return ret;
	}
	/* The thread takes no signal: the application's handlers run in
	 * its own threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&s->thread, NULL, serve_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		serve_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void pm_share_stop(struct pm_serve *s)
{
	if (!s)
		return;
	/* A child forked after the open has no thread to stop. */
	if (s->pid == getpid()) {
		char byte = 's';
		if (write(s->stop[1], &byte, 1) == 1)
			pthread_join(s->thread, NULL);
	}
	serve_free(s);
}

/* Read one byte and the descriptor it carries, waiting at most
 * PM_SHARE_WAIT_MS: a holder that accepts and says nothing is skipped. */
static int recv_fd(int c)
{
	struct pollfd pf = { .fd = c, .events = POLLIN };
	int n;
	while ((n = poll(&pf, 1, PM_SHARE_WAIT_MS)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return n == 0 ? -ETIMEDOUT : -errno;
	char byte;
	int fd;
	if (pm_share_recv(c, &byte, 1, &fd, 1) != 1 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	return fd;
}

int pm_share_fetch(int32_t pid, uint32_t nonce)
{
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	struct sockaddr_un a;
	socklen_t al = share_addr(&a, nonce, pid);
	int fd = connect(c, (struct sockaddr *)&a, al) == 0 ? recv_fd(c) : -errno;
	close(c);
	if (fd < 0)
		return fd;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
				 (F_SEAL_SHRINK | F_SEAL_GROW)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}
