// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cleaner: who removes a region's files when its last user has
 * dropped its privileges.
 *
 * The files of a region (its rendezvous, its pipes' wake-up FIFOs and
 * locators) are made with the opener's credentials, in the opener's own
 * directory (or, shared with a group, in the group's sticky one). A process
 * that then gives up its uid (tcpdump becomes user tcpdump after opening)
 * can no longer remove them when it is the last to close, and no other
 * process of that uid may be left to do it. So an opener that can change
 * its uid (CAP_SETUID, as root has) leaves a cleaner behind at open: a
 * small process, forked then, that keeps the opener's credentials and
 * waits, on a socket, for the opener to close the region (or to exit, or
 * to be killed: the socket's end is closed either way). It then does what
 * the last user's close does (region.c's reap: under the mutex, if nobody
 * uses the region, remove its files) and exits; if others still use it,
 * one cleaner per region waits for the last of them first (who may be
 * another user that cannot remove our files). A close that finds itself
 * the last user waits for the cleaner's answer, so that when it returns
 * nothing is left, whatever its credentials by then.
 *
 * Meanwhile the cleaner serves the region's memfd to the opener's uid (a
 * region not shared with a group; share.c): the kernel refuses it in
 * /proc/PID/fd to a process of that uid with fewer capabilities (dumpcap)
 * or when the opener is not dumpable. So an opener that holds any
 * capability, or is not dumpable, has a cleaner too. Once the memfd
 * exists the opener binds the socket and sends it and the memfd over
 * ('s'); the cleaner answers there until the close (a process, not a
 * thread of the opener's: a program that forks after opening must not
 * find itself multi-threaded).
 *
 * The cleaner is in a session of its own (no terminal signal reaches it),
 * with no descriptor of the opener's but its socket and pipe (the open
 * returns only once it has closed the rest: a description it shared
 * would keep the opener's locks), and none of its pktmap mappings (it
 * must not keep another region's memory alive).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reap.h"
#include "region.h"
#include "share.h"

/* A message to the cleaner (one datagram on its socket): 's', serve: the
 * listening socket and the memfd come with it (SCM_RIGHTS); 'c', a close. */
struct reap_word {
	char c;            /* 's' or 'c' */
	uint64_t dev, ino; /* the file the close left, zero for none */
} __attribute__((packed));

/* The cleaner runs in a copy of the opener taken at any point, maybe with
 * a lock held (compat/netmap opens ports under its own mutex, and its
 * preload replaces close, dup2, open, munmap, poll... with functions that
 * take it): in the child, descriptors and mappings are handled with the
 * system calls themselves, never through a function a preload may
 * replace. */
static void sys_close(int fd)
{
	(void)syscall(SYS_close, fd);
}

static int sys_dup2(int fd, int to)
{
	return fd == to ? to : (int)syscall(SYS_dup3, fd, to, 0);
}

static int sys_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

/* Could this process change its uid later (CAP_SETUID permitted, and so
 * effective or to be raised)? */
static bool may_change_uid(void)
{
	return (pm_caps_permitted() >> CAP_SETUID) & 1;
}

/* Unmap every shared mapping the opener had: regions, AF_XDP and packet
 * rings (a mapping keeps its socket alive, and an AF_XDP socket its
 * queue), anything else. The cleaner needs none, and must not keep a
 * region's memory or a socket alive once its users have gone. */
static void drop_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    perms[3] == 's')
			(void)syscall(SYS_munmap, lo, hi - lo);
	}
	fclose(f);
}

/* The opener's end of go closed without its word (a 'c' first): it died
 * or exec'd. A dying process's files are released after its socket's end
 * may already show EOF (the kernel does not order them), and its locks
 * with them: wait until it is gone (its pidfd says so), or, if it lives
 * on (exec), until its descriptors are closed, which the deadline covers. */
static void wait_gone(int pidfd)
{
	if (pidfd < 0)
		return;
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };
	struct timespec t = { PM_LOCK_DEADLINE_MS / 1000,
			      (PM_LOCK_DEADLINE_MS % 1000) * 1000000L };
	while (syscall(SYS_ppoll, &pf, 1, &t, NULL, 0) < 0 && errno == EINTR)
		;
}

/* The cleaner's first steps: let go of the opener's descriptors (but go,
 * now fd 3, and done, fd 4) and shared mappings: until then we share its
 * open files, and with them its locks (a peer would see a closed end
 * still claimed) and sockets (an AF_XDP queue would stay bound). Then
 * tell the opener, which waits for this, and leave its session and its
 * signals. Returns a pidfd of the opener, or -1. */
static int cleaner_setup(pid_t opener, int go, int done)
{
	int g = (int)syscall(SYS_fcntl, go, F_DUPFD, 5);
	int d = (int)syscall(SYS_fcntl, done, F_DUPFD, 5);
	if (g < 0 || d < 0 || sys_dup2(g, 3) < 0 || sys_dup2(d, 4) < 0)
		_exit(1);
	(void)syscall(SYS_close_range, 5, ~0u, 0);
	drop_mappings();
	int pidfd = (int)syscall(SYS_pidfd_open, opener, 0);
	char c = 'r';
	if (write(4, &c, 1) != 1)
		_exit(1);
	setsid();
	for (int s = 1; s < NSIG; s++)
		signal(s, s == SIGCHLD ? SIG_DFL : SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "pktmap-cleaner");
	int null = sys_open("/dev/null", O_RDWR);
	if (null < 0 || sys_dup2(null, 0) < 0 || sys_dup2(null, 1) < 0 ||
	    sys_dup2(null, 2) < 0)
		_exit(1);
	if (null > 4)
		sys_close(null);
	return pidfd;
}

/* Until EOF on the opener's socket: keep a close's word in *word, and
 * once the opener has handed us its listening socket and memfd ('s'),
 * answer the joiners of its uid there (share.c). Then let go of both:
 * the region's memory must not outlive its users for us. Returns whether
 * a close's word came. */
static bool serve_until_closed(struct reap_word *word)
{
	int lfd = -1, mfd = -1;
	bool closed = false;
	for (;;) {
		struct pollfd pf[2] = { { .fd = 3, .events = POLLIN },
					{ .fd = lfd, .events = POLLIN } };
		unsigned long npf = lfd >= 0 ? 2 : 1;
		if (syscall(SYS_ppoll, pf, npf, NULL, NULL, 0) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents & POLLIN) {
			pm_share_answer(lfd, mfd, PM_SHARE_NO_GROUP);
		} else if (pf[1].revents) {
			/* a broken listener: serve no more */
			sys_close(lfd);
			lfd = -1;
		}
		if (!pf[0].revents)
			continue;
		struct reap_word w = { 0 };
		int fds[2];
		ssize_t n = pm_share_recv(3, &w, sizeof(w), fds, 2);
		if (n == sizeof(w) && w.c == 's' && lfd < 0 && mfd < 0 &&
		    fds[0] >= 0 && fds[1] >= 0) {
			lfd = fds[0];
			mfd = fds[1];
			continue;
		}
		sys_close(fds[0]);
		sys_close(fds[1]);
		if (n == sizeof(w) && w.c == 'c') {
			*word = w;
			closed = true;
		} else if (n == 0 || (n < 0 && n != -EINTR && n != -EAGAIN)) {
			break;
		}
	}
	sys_close(lfd);
	sys_close(mfd);
	return closed;
}

/* The cleaner's life (never returns): serve and wait for EOF on go (and,
 * if the opener died, for it to be gone), then leave the region as its
 * last user would, then close done (the opener's answer). */
static void cleaner(struct pm_region *r, bool (*leave)(struct pm_region *r),
		    pid_t opener, int go, int done)
{
	int pidfd = cleaner_setup(opener, go, done);
	/* A close says which file it left: we clean that one, never a
	 * later one of the same name. */
	struct reap_word word = { 0 };
	bool closed = serve_until_closed(&word);
	if (!closed)
		wait_gone(pidfd);
	else if (word.ino == 0)
		_exit(0);
	r->fd = sys_open(r->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (r->fd >= 0 && fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() &&
	    (!closed || ((uint64_t)st.st_dev == word.dev &&
			 (uint64_t)st.st_ino == word.ino)))
		(void)leave(r);
	_exit(0);
}

/* Wait for the cleaner's first byte (it holds none of our descriptors
 * any more), or its end. */
static bool ready(int done, char *c)
{
	struct pollfd pf = { .fd = done, .events = POLLIN };
	int n;
	while ((n = poll(&pf, 1, PM_LOCK_DEADLINE_MS)) < 0 && errno == EINTR)
		;
	return n == 1 && read(done, c, 1) == 1;
}

int pm_reaper_start(struct pm_region *r, bool (*leave)(struct pm_region *r))
{
	if (!r->named ||
	    !(may_change_uid() || (!r->share && pm_share_guarded())))
		return 0;
	int go[2], done[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, go) != 0)
		return -errno;
	if (pipe2(done, O_CLOEXEC) != 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		return -e;
	}
	/* Twice, so that the cleaner is no child of ours to reap. */
	pid_t opener = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			struct pm_region copy = *r;
			sys_close(go[1]);
			sys_close(done[0]);
			cleaner(&copy, leave, opener, go[0], done[1]);
		}
		_exit(0);
	}
	int e = pid < 0 ? errno : 0;
	close(go[0]);
	close(done[1]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	char c;
	if (pid < 0 || !ready(done[0], &c)) {
		close(go[1]);
		close(done[0]);
		return pid < 0 ? -e : -ECHILD;
	}
	r->reaping = getpid();
	r->reap_go = go[1];
	r->reap_done = done[0];
	return 0;
}

int pm_reaper_serve(struct pm_region *r, uint32_t *nonce)
{
	if (r->reaping != getpid())
		return -ENOENT;
	int lfd = pm_share_listen(nonce);
	if (lfd < 0)
		return lfd;
	struct reap_word w = { 's', 0, 0 };
	int fds[2] = { lfd, r->mfd };
	int ret = pm_share_send(r->reap_go, &w, sizeof(w), fds, 2);
	close(lfd); /* the cleaner's copy listens on */
	return ret;
}

void pm_reaper_finish(struct pm_region *r, bool wait)
{
	if (!r->reaping)
		return;
	/* The cleaner's signal: our word that this is a close (our files
	 * are released: no need to wait for our end) and which file we
	 * left, then EOF. A child forked after the open neither says it
	 * nor waits: the opener still holds the cleaner's socket. */
	bool opener = r->reaping == getpid();
	struct reap_word w = { 'c', r->reap_dev, r->reap_ino };
	if (opener)
		(void)pm_share_send(r->reap_go, &w, sizeof(w), NULL, 0);
	close(r->reap_go);
	if (wait && opener) {
		struct pollfd pf = { .fd = r->reap_done, .events = POLLIN };
		while (poll(&pf, 1, PM_LOCK_DEADLINE_MS + 1000) < 0 &&
		       errno == EINTR)
			;
	}
	close(r->reap_done);
	r->reaping = 0;
}
