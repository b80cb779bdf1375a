/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The library asks `pktmap broker` (docs/broker.md): an xdp:, pkt: or tap:
 * open that lacks a capability sends its request over the broker's
 * socket (@conf:broker=PATH, else $PKTMAP_BROKER, else PM_BK_SOCKET;
 * "no" never asks) and receives a ready descriptor. One connection per port, kept
 * open as long as the port: when it closes (pktmap_close(), or the
 * process dies), the broker frees what it granted.
 *
 * The broker's answer is read once, bounded and checked: one message of
 * at most PM_BK_MSG_MAX bytes, "ok ...", "busy: ..." or "refused: ...",
 * with exactly the descriptors expected (others are closed).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker_proto.h"
#include "log.h"
#include "port.h"
#include "util.h"

/* How long the broker may take to answer one request. */
#define BROKER_ANSWER_S 10

/* The broker the port names (@conf:broker), else the one the
 * environment names (PKTMAP_BROKER: for programs whose port names the
 * user does not write, netmap's under netmap-run; not taken by a setuid
 * program), else "". */
static const char *named(const struct pktmap_port *p)
{
	if (p->broker[0])
		return p->broker;
	const char *e = secure_getenv("PKTMAP_BROKER");
	return e && e[0] && strlen(e) < sizeof(p->broker) ? e : "";
}

bool pm_broker_wanted(const struct pktmap_port *p)
{
	return strcmp(named(p), "no") != 0;
}

const char *pm_broker_path(const struct pktmap_port *p)
{
	return named(p)[0] ? named(p) : PM_BK_SOCKET;
}

static int broker_connect(struct pktmap_port *p)
{
	const char *path = pm_broker_path(p);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = { .tv_sec = BROKER_ANSWER_S };
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int ret = -errno;
		close(fd);
		return ret;
	}
	p->broker_fd = fd;
	return 0;
}

int pm_broker_open(struct pktmap_port *p)
{
	if (p->broker_fd >= 0)
		return 0;
	if (!pm_broker_wanted(p))
		return -ENOTCONN;
	int ret = broker_connect(p);
	if (ret == 0)
		return 0;
	/* No broker where none was named: the capability's own message. */
	if (!named(p)[0] && (ret == -ENOENT || ret == -ECONNREFUSED))
		return -ENOTCONN;
	return pm_open_error(p, ret, "the broker (%s) is not there: %s",
			     pm_broker_path(p), strerror(-ret));
}

static int send_req(int fd, const char *line, size_t len, const int *fds,
		    int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PM_BK_MAX_FDS)];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = (void *)line, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		memset(&c, 0, sizeof(c));
		m.msg_control = c.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

/* One answer: its text in ans (0-terminated, no newline), its descriptor
 * (at most one is taken, the rest closed) in *fd_out or -1. */
static int recv_ans(int fd, char *ans, size_t alen, int *fd_out)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PM_BK_MAX_FDS)];
		struct cmsghdr align;
	} c;
	char buf[PM_BK_MSG_MAX];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	*fd_out = -1;
	ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int d;
			memcpy(&d, CMSG_DATA(h) + i * sizeof(int), sizeof(d));
			if (*fd_out < 0)
				*fd_out = d;
			else
				close(d);
		}
	}
	if (n == 0)
		return -ECONNRESET;
	if ((m.msg_flags & MSG_TRUNC) || (size_t)n >= sizeof(buf))
		n = 0; /* not a well-formed answer */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == 0))
		n--;
	pm_printable(ans, alen, n ? (buf[n] = 0, buf) : "");
	return 0;
}

int pm_broker_call(struct pktmap_port *p, const struct pm_bk_req *r,
		   const int *fds, int nfds, int *fd_out, bool want_fd,
		   char *info, size_t infolen)
{
	char line[PM_BK_MSG_MAX], ans[PM_BK_MSG_MAX];
	int ret, len = pm_bk_req_format(r, line, sizeof(line));
	if (len < 0)
		return len;
	*fd_out = -1;
	if ((ret = pm_broker_open(p)) != 0)
		return ret == -ENOTCONN ? -EPERM : ret;
	ret = send_req(p->broker_fd, line, (size_t)len, fds, nfds);
	if (!ret)
		ret = recv_ans(p->broker_fd, ans, sizeof(ans), fd_out);
	if (ret)
		return pm_open_error(p, ret, "the broker (%s) did not answer: %s",
				     pm_broker_path(p), strerror(-ret));
	if (strncmp(ans, "ok", 2) == 0 && (ans[2] == 0 || ans[2] == ' ') &&
	    (*fd_out >= 0) == want_fd) {
		snprintf(info, infolen, "%s", ans[2] ? ans + 3 : "");
		p->brokered = true;
		return 0;
	}
	if (*fd_out >= 0)
		close(*fd_out);
	*fd_out = -1;
	if (strncmp(ans, "busy: ", 6) == 0) {
		snprintf(info, infolen, "%s", ans + 6);
		return -EBUSY;
	}
	if (strncmp(ans, "refused: ", 9) == 0)
		return pm_open_error(p, -EACCES, "refused by the broker: %s",
				     ans + 9);
	if (strncmp(ans, "error: ", 7) == 0)
		return pm_open_error(p, -EIO, "the broker failed: %s", ans + 7);
	return pm_open_error(p, -EPROTO, "the broker (%s) answered something "
			     "that is not an answer", pm_broker_path(p));
}

void pm_broker_close(struct pktmap_port *p)
{
	if (p->broker_fd >= 0)
		close(p->broker_fd);
	p->broker_fd = -1;
}
