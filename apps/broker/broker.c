/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker: root opens the privileged parts of xdp:, pkt: and tap:
 * ports for unprivileged programs, as its policy allows (docs/broker.md).
 *
 * One SOCK_SEQPACKET Unix socket (/run/pktmap/broker.sock, or the one
 * socket activation passes); every client is known by SO_PEERCRED and
 * SO_PEERGROUPS when it connects; each request is one message, read once
 * (bounded, with at most PM_BK_MAX_FDS descriptors; more, or a truncated
 * message, is refused) and answered with one message. A connection that
 * closes frees what it was granted. pktmap's XDP program is attached to
 * the policy's xdp: interfaces before the first client and stays while
 * the policy names them (broker_hold.c). SIGHUP reads the policy again and
 * takes back what it no longer allows; SIGTERM and SIGINT stop and
 * detach what the broker attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker.h"
#include "cli.h"
#include "cmds.h"
#include "notify.h"

#define DEFAULT_POLICY "/etc/pktmap/broker.conf"

void usage_broker(void)
{
	printf("usage: pktmap broker [--socket PATH] [--policy FILE] [--group NAME]\n"
	       "       pktmap broker --check [--policy FILE]\n"
	       "\n"
	       "Open the privileged parts of xdp:, pkt: and tap: ports for programs\n"
	       "without capabilities, as the policy allows (run as root). The library\n"
	       "asks by itself when an open lacks a capability (docs/broker.md).\n"
	       "\n"
	       "  --socket PATH  the socket (default %s; socket activation passes it)\n"
	       "  --policy FILE  who may open what (default %s)\n"
	       "  --group NAME   the socket's group, mode 0660 (default pktmap when\n"
	       "                 that group exists, else the socket is 0666 and the\n"
	       "                 policy alone decides)\n"
	       "  --check        parse the policy, print its rules' count, exit\n"
	       "\n"
	       "SIGHUP reloads the policy and revokes what it no longer allows.\n",
	       PM_BK_SOCKET, DEFAULT_POLICY);
}

struct opts {
	const char *sock;
	const char *policy;
	const char *group;
	bool check;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"socket", required_argument, NULL, 's'},
		{"policy", required_argument, NULL, 'p'},
		{"group", required_argument, NULL, 'g'},
		{"check", no_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	o->sock = PM_BK_SOCKET;
	o->policy = DEFAULT_POLICY;
	o->group = NULL;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->sock = optarg; break;
		case 'p': o->policy = optarg; break;
		case 'g': o->group = optarg; break;
		case 'c': o->check = true; break;
		case 'h': usage_broker(); return -1;
		default:
			cli_err("broker: see 'pktmap help broker'");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_err("broker: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (strlen(o->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		cli_err("broker: --socket: path too long");
		return EXIT_USAGE;
	}
	return 0;
}

/* The listening socket: activated, or made at o->sock (its directory made
 * 0755 when missing; a stale socket replaced, anything else left alone). */
static int listen_on(const struct opts *o)
{
	int n = listen_fds();
	if (n < 0) {
		cli_err("broker: socket activation: %s", strerror(-n));
		return -1;
	}
	if (n > 0) {
		int type = 0;
		socklen_t tl = sizeof(type);
		if (getsockopt(NOTIFY_LISTEN_FDS_START, SOL_SOCKET, SO_TYPE, &type,
			       &tl) != 0 || type != SOCK_SEQPACKET) {
			cli_err("broker: the activated socket is not a SOCK_SEQPACKET "
				"socket (the unit says ListenSequentialPacket=)");
			return -1;
		}
		broker_log("listening on the socket systemd passed, pid %d",
			   (int)getpid());
		return NOTIFY_LISTEN_FDS_START;
	}
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(dir, sizeof(dir), "%s", o->sock);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			cli_err("broker: %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	struct stat st;
	if (lstat(o->sock, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			cli_err("broker: %s exists and is not a socket", o->sock);
			return -1;
		}
		unlink(o->sock);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->sock);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	mode_t old = umask(0177);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, 128) != 0) {
		umask(old);
		cli_err("broker: %s: %s", o->sock, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	umask(old);
	struct group *gr = getgrnam(o->group ? o->group : "pktmap");
	if (o->group && !gr) {
		cli_err("broker: --group: no group '%s'", o->group);
		close(fd);
		return -1;
	}
	if ((gr && chown(o->sock, 0, gr->gr_gid) != 0) ||
	    chmod(o->sock, gr ? 0660 : 0666) != 0) {
		cli_err("broker: %s: %s", o->sock, strerror(errno));
		close(fd);
		return -1;
	}
	broker_log("listening on %s (mode %s), pid %d", o->sock,
		   gr ? "0660" : "0666: no group pktmap, the policy decides",
		   (int)getpid());
	return fd;
}

/* SO_PEERCRED and SO_PEERGROUPS of a new connection. */
static int identify(struct client *c)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0)
		return -errno;
	c->pid = uc.pid;
	c->who.uid = uc.uid;
	c->who.gid = uc.gid;
	len = sizeof(c->who.groups);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, c->who.groups, &len) == 0)
		c->who.ngroups = len / sizeof(gid_t);
	else
		c->who.ngroups = 0; /* too many groups: the primary one counts */
	struct passwd *pw = getpwuid(uc.uid);
	snprintf(c->name, sizeof(c->name), "uid %u%s%.20s%s pid %d",
		 (unsigned)uc.uid, pw ? " (" : "", pw ? pw->pw_name : "",
		 pw ? ")" : "", (int)uc.pid);
	return 0;
}

struct server {
	struct broker b;
	int lfd, sfd;
	struct client **cl;
	struct pollfd *pfd;
	uint32_t n;
};

static uint32_t count_uid(const struct server *s, uid_t uid)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->n; i++)
		k += s->cl[i]->who.uid == uid;
	return k;
}

static void accept_one(struct server *s)
{
	int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct client *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	const char *no = NULL;
	if (identify(c) != 0)
		no = "no credentials";
	else if (s->n >= BROKER_MAX_CLIENTS)
		no = "too many connections";
	else if (c->who.uid != 0 && count_uid(s, c->who.uid) >= BROKER_MAX_PER_UID)
		no = "too many connections of this user";
	if (no) {
		char ans[100];
		snprintf(ans, sizeof(ans), "refused: %s", no);
		(void)send(fd, ans, strlen(ans), MSG_DONTWAIT | MSG_NOSIGNAL);
		broker_log("refuse %s: %s", c->name[0] ? c->name : "a client", no);
		close(fd);
		free(c);
		return;
	}
	s->cl[s->n] = c;
	s->pfd[2 + s->n] = (struct pollfd){ .fd = fd, .events = POLLIN };
	s->n++;
}

static void drop(struct server *s, uint32_t i)
{
	struct client *c = s->cl[i];
	broker_revoke(&s->b, c, true);
	close(c->fd);
	free(c);
	s->n--;
	s->cl[i] = s->cl[s->n];
	s->pfd[2 + i] = s->pfd[2 + s->n];
}

/* One message of client i, answered. Returns -1 when it must go. */
static int serve(struct server *s, uint32_t i)
{
	struct client *c = s->cl[i];
	union {
		char buf[CMSG_SPACE(sizeof(int) * PM_BK_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	char buf[PM_BK_MSG_MAX + 1], ans[PM_BK_MSG_MAX];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	int fds[PM_BK_MAX_FDS], nfds = 0;
	bool junk = false;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		size_t k = h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS ?
			   (h->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;
		for (size_t j = 0; j < k; j++) {
			int d;
			memcpy(&d, CMSG_DATA(h) + j * sizeof(int), sizeof(d));
			if (nfds < PM_BK_MAX_FDS)
				fds[nfds++] = d;
			else
				close(d), junk = true;
		}
	}
	if (n == 0 && nfds == 0)
		return -1; /* gone */
	int out = -1;
	if (junk || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n > PM_BK_MSG_MAX) {
		for (int j = 0; j < nfds; j++)
			close(fds[j]);
		broker_log("refuse %s: a request longer than %d bytes or with more "
			   "than %d descriptors", c->name, PM_BK_MSG_MAX, PM_BK_MAX_FDS);
		snprintf(ans, sizeof(ans), "refused: a request is at most %d bytes "
			 "with %d descriptors", PM_BK_MSG_MAX, PM_BK_MAX_FDS);
	} else {
		broker_request(&s->b, c, buf, (size_t)n, fds, nfds, ans, sizeof(ans),
			       &out);
	}
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} om;
	struct iovec oiov = { .iov_base = ans, .iov_len = strlen(ans) };
	struct msghdr om_h = { .msg_iov = &oiov, .msg_iovlen = 1 };
	if (out >= 0) {
		memset(&om, 0, sizeof(om));
		om_h.msg_control = om.buf;
		om_h.msg_controllen = sizeof(om.buf);
		struct cmsghdr *h = CMSG_FIRSTHDR(&om_h);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &out, sizeof(int));
	}
	ssize_t w = sendmsg(c->fd, &om_h, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (out >= 0)
		close(out);
	return w == (ssize_t)oiov.iov_len ? 0 : -1;
}

static void reload(struct server *s)
{
	struct policy np;
	char err[300];
	if (policy_load(&np, s->b.policy_path, err, sizeof(err)) != 0) {
		broker_log("reload failed, the policy in force stays: %s", err);
		return;
	}
	policy_free(&s->b.pol);
	s->b.pol = np;
	uint32_t revoked = 0;
	for (uint32_t i = 0; i < s->n; i++)
		revoked += broker_revoke(&s->b, s->cl[i], false);
	broker_hold_sync(&s->b);
	/* (after the revocations: whoever reads the log sees them first) */
	broker_log("reloaded %s: %u rules, %u grants revoked", s->b.policy_path,
		   np.n, revoked);
}

/* SIGHUP, SIGTERM, SIGINT through a signalfd. Returns 1 to stop. */
static int on_signal(struct server *s)
{
	struct signalfd_siginfo si;
	if (read(s->sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	if (si.ssi_signo != SIGHUP)
		return 1;
	notify_reloading();
	reload(s);
	notify_ready();
	return 0;
}

static int run(struct server *s)
{
	s->cl = calloc(BROKER_MAX_CLIENTS, sizeof(*s->cl));
	s->pfd = calloc(BROKER_MAX_CLIENTS + 2, sizeof(*s->pfd));
	if (!s->cl || !s->pfd) {
		cli_err("broker: out of memory");
		return EXIT_RUNTIME;
	}
	s->pfd[0] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
	s->pfd[1] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
	notify_ready();
	for (;;) {
		if (poll(s->pfd, 2 + s->n, -1) < 0) {
			if (errno == EINTR)
				continue;
			cli_err("broker: poll: %s", strerror(errno));
			return EXIT_RUNTIME;
		}
		if ((s->pfd[1].revents & POLLIN) && on_signal(s))
			break;
		for (uint32_t i = s->n; i-- > 0;) {
			short ev = s->pfd[2 + i].revents;
			if (!ev)
				continue;
			s->pfd[2 + i].revents = 0;
			if (((ev & POLLIN) && serve(s, i) < 0) ||
			    (!(ev & POLLIN) && (ev & (POLLHUP | POLLERR))))
				drop(s, i);
		}
		if (s->pfd[0].revents & POLLIN)
			accept_one(s);
	}
	notify_stopping();
	while (s->n)
		drop(s, s->n - 1);
	broker_hold_drop_all(&s->b);
	broker_closer_stop(&s->b);
	broker_log("stopped");
	return 0;
}

int cmd_broker(int argc, char **argv)
{
	struct opts o = {0};
	int ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret < 0 ? 0 : ret;
	struct server s = { .lfd = -1, .sfd = -1 };
	char err[300];
	s.b.policy_path = o.policy;
	s.b.self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (policy_load(&s.b.pol, o.policy, err, sizeof(err)) != 0) {
		cli_err("broker: %s", err);
		return EXIT_RUNTIME;
	}
	if (o.check) {
		printf("%s: %u rules\n", o.policy, s.b.pol.n);
		policy_free(&s.b.pol);
		return 0;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	s.sfd = signalfd(-1, &set, SFD_CLOEXEC);
	broker_closer_start(&s.b);
	/* The XDP program on the policy's interfaces before any client */
	broker_hold_sync(&s.b);
	s.lfd = listen_on(&o);
	if (s.lfd < 0 || s.sfd < 0) {
		broker_hold_drop_all(&s.b);
		broker_closer_stop(&s.b);
		policy_free(&s.b.pol);
		return EXIT_RUNTIME;
	}
	broker_log("policy %s: %u rules", o.policy, s.b.pol.n);
	ret = run(&s);
	/* (run() did both unless it failed: then nothing is left either) */
	broker_hold_drop_all(&s.b);
	broker_closer_stop(&s.b);
	close(s.lfd);
	close(s.sfd);
	if (s.lfd != NOTIFY_LISTEN_FDS_START)
		unlink(o.sock);
	free(s.cl);
	free(s.pfd);
	policy_free(&s.b.pol);
	if (s.b.self_ns >= 0)
		close(s.b.self_ns);
	return ret;
}
