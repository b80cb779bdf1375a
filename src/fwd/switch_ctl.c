/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch's control socket, server side (protocol: src/vale_proto.h;
 * the client side is the vale back end, src/ports/vale.c). A client
 * asking for a port gets a pipe of its own, in a region of its own, whose
 * other end the switch attaches; the connection stays open while the
 * client holds the port, and its end (close, exit, SIGKILL) detaches the
 * port and frees the pipe. Requests also list, detach and attach ports.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"
#include "switch_srv.h"
#include "vale_proto.h" /* src/ */

/* Hold the lock file: a second switch of that name fails here, and a
 * socket left by a killed one is stale. Returns 0 or -errno (s->err). */
static int take_lock(struct sws *s, const char *dir)
{
	struct sockaddr_un sa;
	if (!vale_sockaddr(&sa, dir, s->o.name, "lock")) {
		snprintf(s->err, sizeof(s->err), "switch %s: name too long",
			 s->o.name);
		return -ENAMETOOLONG;
	}
	snprintf(s->lockpath, sizeof(s->lockpath), "%s", sa.sun_path);
	s->lockfd = open(s->lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			 0600);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1 };
	if (s->lockfd >= 0 && fcntl(s->lockfd, F_OFD_SETLK, &fl) == 0)
		return 0;
	int e = errno;
	if (s->lockfd >= 0 && (e == EAGAIN || e == EACCES)) {
		snprintf(s->err, sizeof(s->err), "switch %s is already running "
			 "(see 'pktmap switch --list %s')", s->o.name, s->o.name);
		e = EADDRINUSE;
	} else {
		snprintf(s->err, sizeof(s->err), "switch %s: cannot lock %s: %s",
			 s->o.name, s->lockpath, strerror(e));
	}
	if (s->lockfd >= 0)
		close(s->lockfd);
	s->lockfd = -1;
	s->lockpath[0] = 0;
	return -e;
}

/* Take the switch's name: the lock file first (held for the switch's
 * life), then the socket's path. Both are in our own directory, where
 * no other user can create a name. */
static int take_name(struct sws *s)
{
	char dir[64], err[300];
	struct sockaddr_un sa;
	int ret = -ENOENT;
	/* Again when our directory went with our other processes' last
	 * file between the two calls (src/region.c removes it when empty);
	 * bounded, never lost that often even with every core busy. */
	for (int attempt = 0; attempt < 1000 && ret == -ENOENT; attempt++) {
		ret = pktmap_user_dir(dir, sizeof(dir), err, sizeof(err));
		if (ret != 0) {
			snprintf(s->err, sizeof(s->err), "switch %s: %s",
				 s->o.name, err);
			return ret;
		}
		ret = take_lock(s, dir);
	}
	if (ret)
		return ret;
	vale_sockaddr(&sa, dir, s->o.name, "sock");
	snprintf(s->sockpath, sizeof(s->sockpath), "%s", sa.sun_path);
	unlink(s->sockpath); /* a killed switch's; we hold the name */
	return 0;
}

/* A failed step of sws__listen(): "switch NAME: what: why". */
static int listen_fail(struct sws *s, const char *what)
{
	int e = errno;
	snprintf(s->err, sizeof(s->err), "switch %s: %s: %s", s->o.name, what,
		 strerror(e));
	return -e;
}

int sws__listen(struct sws *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ret = take_name(s);
	if (ret)
		return ret;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->sockpath);
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				   strlen(s->sockpath) + 1);
	s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0)
		return listen_fail(s, "socket");
	if (bind(s->lfd, (struct sockaddr *)&sa, sl) != 0) {
		char what[160];
		snprintf(what, sizeof(what), "cannot bind %s", s->sockpath);
		ret = listen_fail(s, what);
		close(s->lfd);
		s->lfd = -1;
		s->sockpath[0] = 0;
		return ret;
	}
	if (listen(s->lfd, 64) != 0)
		return listen_fail(s, "listen");
	if (getrandom(&s->nonce, sizeof(s->nonce), 0) != sizeof(s->nonce))
		s->nonce = (uint32_t)getpid() * 2654435761u;
	return 0;
}

unsigned sws__ctl_fds(struct sws *s, struct pollfd *pfd)
{
	unsigned n = 0;
	pfd[n].fd = s->lfd;
	pfd[n].events = POLLIN;
	pfd[n++].revents = 0;
	for (unsigned i = 0; i < s->nconn; i++) {
		pfd[n].fd = s->conn[i].fd;
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
	}
	return n;
}

static void conn_drop(struct sws *s, unsigned i)
{
	struct sws_conn *c = &s->conn[i];
	if (c->port >= 0)
		sws_detach(s, (uint16_t)c->port);
	if (c->fd >= 0)
		close(c->fd);
	s->conn[i] = s->conn[--s->nconn];
}

void sws__ctl_close(struct sws *s)
{
	while (s->nconn)
		conn_drop(s, s->nconn - 1);
	if (s->lfd >= 0)
		close(s->lfd);
	s->lfd = -1;
	if (s->sockpath[0])
		unlink(s->sockpath);
	s->sockpath[0] = 0;
	if (s->lockfd >= 0) {
		unlink(s->lockpath);
		close(s->lockfd);
		/* the user's directory, if that was its last file */
		*strrchr(s->lockpath, '/') = 0;
		pm_user_dir_drop(s->lockpath);
	}
	s->lockfd = -1;
}

static void port_counters(const struct sw_counters *c, struct vale_counters *vc)
{
	vc->rx_frames = c->rx_frames;
	vc->rx_bytes = c->rx_bytes;
	vc->tx_frames = c->tx_frames;
	vc->tx_bytes = c->tx_bytes;
	vc->drop_nospace = c->drop_nospace;
	vc->drop_invalid = c->drop_invalid;
	vc->drop_unknown = c->drop_unknown;
	vc->filtered = c->filtered;
	vc->sync_errors = c->sync_errors;
	vc->tx_moved = c->tx_moved;
}

static bool port_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > VALE_PORT_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
		      c == ':' || c == '^'))
			return false;
	}
	return true;
}

static void reply(int fd, struct vale_rep *rp)
{
	rp->magic = VALE_MAGIC;
	rp->version = VALE_VERSION;
	(void)send(fd, rp, sizeof(*rp), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void reply_err(int fd, int status, const char *msg)
{
	struct vale_rep rp = { .op = VALE_ERR, .status = status };
	snprintf(rp.msg, sizeof(rp.msg), "%s", msg);
	reply(fd, &rp);
}

static void reply_ok(int fd)
{
	struct vale_rep rp = { .op = VALE_OK };
	reply(fd, &rp);
}

/* Is the port name free? Otherwise tell the client who holds it. */
static bool open_check(struct sws *s, struct sws_conn *c,
		       const struct vale_req *rq)
{
	char msg[300];
	if (!port_name_ok(rq->port)) {
		reply_err(c->fd, -EINVAL, "bad port name (letters, digits, _ . - "
			  "only)");
		return false;
	}
	struct sw_port *old = sw_find(&s->sw, rq->port);
	if (!old)
		return true;
	if (old->pid)
		snprintf(msg, sizeof(msg), "port '%s' is in use (by pid %d)",
			 rq->port, old->pid);
	else
		snprintf(msg, sizeof(msg), "port '%s' is in use (%s)", rq->port,
			 old->attached);
	reply_err(c->fd, -EBUSY, msg);
	return false;
}

/* Open our end of the client's pipe on every thread (thread t opens
 * ring t) and attach it: one id on all. Returns the id, or -1 with the
 * client told why. */
static int open_pipe(struct sws *s, struct sws_conn *c,
		     const struct vale_req *rq, const char *pipe, char *name,
		     size_t namelen)
{
	char msg[300];
	/* Never waits on a lock: the client may hold its region's. */
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = msg,
				      .errbuf_len = sizeof(msg),
				      .flags = PKTMAP_OPEN_NOWAIT };
	if (rq->slots >= 4 && rq->slots <= 65536)
		o.slots = rq->slots;
	if (rq->region[0]) {
		/* Trusted clients share one region: room for 16 ports. */
		o.region = rq->region;
		o.bufs = 16 * 4 * (o.slots ? o.slots : 1024) + 64;
	}
	int ret = 0, id = -1;
	unsigned t;
	for (t = 0; t < s->nthreads && ret >= 0; t++) {
		struct pktmap_port *p;
		if (s->nthreads == 1)
			snprintf(name, namelen, "pipe:%s{0", pipe);
		else
			snprintf(name, namelen, "pipe:%s{0-%u@conf:rings=%u", pipe,
				 t, s->nthreads);
		ret = pktmap_open(&p, name, &o);
		if (ret == -EBUSY)
			s->busy++;
		if (ret) {
			reply_err(c->fd, ret, msg);
			break;
		}
		ret = sw_attach(sws_ctx(s, t), p, rq->port, "client", true,
				rq->region[0] ? sws__port_group(p) : 0);
		if (ret < 0 || (id >= 0 && ret != id)) {
			pktmap_close(p);
			reply_err(c->fd, ret < 0 ? ret : -EPROTO, sws_ctx(s, t)->err);
			ret = -1;
			break;
		}
		id = ret;
	}
	if (ret < 0) {
		while (t-- > 0 && id >= 0)
			sw_detach(sws_ctx(s, t), (uint16_t)id);
		return -1;
	}
	return id;
}

/* VALE_OPEN: a pipe of its own for the client's port. */
static void serve_open(struct sws *s, struct sws_conn *c,
		       const struct vale_req *rq)
{
	char pipe[64], name[200];
	if (!open_check(s, c, rq))
		return;
	unsigned seq = s->seq++;
	snprintf(pipe, sizeof(pipe), "vs%d.%u.%08x", (int)getpid(), seq,
		 s->nonce ^ (seq * 2654435761u));
	int id = open_pipe(s, c, rq, pipe, name, sizeof(name));
	if (id < 0)
		return;
	c->port = id;
	s->sw.port[id]->pid = c->pid;
	snprintf(s->sw.port[id]->attached, sizeof(s->sw.port[id]->attached),
		 "pid %d via %s", c->pid, name);
	struct vale_rep rp = { .op = VALE_OK };
	snprintf(rp.pipe, sizeof(rp.pipe), "%s", pipe);
	reply(c->fd, &rp);
}

static void serve_list(struct sws *s, int fd)
{
	for (uint32_t i = 0; i < s->sw.nports; i++) {
		struct sw_port *sp = s->sw.port[i];
		if (!sp)
			continue;
		struct vale_rep rp = { .op = VALE_PORT };
		snprintf(rp.port, sizeof(rp.port), "%s", sp->name);
		snprintf(rp.kind, sizeof(rp.kind), "%s", sp->kind);
		snprintf(rp.attached, sizeof(rp.attached), "%s", sp->attached);
		rp.pid = sp->pid;
		rp.zerocopy = sp->zc_group != 0;
		struct sw_counters sc;
		sws_counters(s, sp->id, &sc);
		port_counters(&sc, &rp.c);
		reply(fd, &rp);
	}
	struct vale_rep rp = { .op = VALE_END };
	struct sw_mac_stats ms = { 0 };
	if (sws_mac(s))
		sw_mac_stats(sws_mac(s), &ms);
	rp.mac_entries = ms.entries;
	rp.mac_capacity = ms.capacity;
	rp.mac_learned = ms.learned;
	rp.mac_moved = ms.moved;
	rp.mac_aged = ms.aged;
	rp.switch_pid = (int32_t)getpid();
	for (uint32_t i = 0; i < s->sw.nports; i++)
		rp.nports += s->sw.port[i] != NULL;
	reply(fd, &rp);
}

/* VALE_DETACH: a client's port ends its connection with it. */
static void serve_detach(struct sws *s, struct sws_conn *c,
			 const struct vale_req *rq)
{
	struct sw_port *sp = sw_find(&s->sw, rq->port);
	if (!sp) {
		char msg[400];
		snprintf(msg, sizeof(msg), "no port '%s' on %s", rq->port,
			 s->o.name);
		reply_err(c->fd, -ENOENT, msg);
		return;
	}
	uint16_t id = sp->id;
	for (unsigned j = 0; j < s->nconn; j++) {
		if (s->conn[j].port == id) {
			close(s->conn[j].fd);
			s->conn[j].fd = -1;
		}
	}
	sws_detach(s, id);
	reply_ok(c->fd);
}

/* VALE_ATTACH: the switch opens a port itself (vale-ctl -a). */
static void serve_attach(struct sws *s, struct sws_conn *c,
			 const struct vale_req *rq)
{
	char msg[400];
	int ret = sws_attach_name(s, rq->arg, rq->port[0] ? rq->port : NULL,
				  PKTMAP_OPEN_NOWAIT, msg, sizeof(msg));
	if (ret == -EBUSY)
		s->busy++;
	if (ret)
		reply_err(c->fd, ret, msg);
	else
		reply_ok(c->fd);
}

/* One request on connection i. Returns false when the connection ends. */
static bool serve_one(struct sws *s, unsigned i)
{
	struct sws_conn *c = &s->conn[i];
	struct vale_req rq;
	ssize_t n = recv(c->fd, &rq, sizeof(rq), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false; /* closed: the client is gone */
	if (vale_req_take(&rq, n)) {
		reply_err(c->fd, -EPROTO, "bad request (another pktmap version?)");
		return false;
	}
	switch (rq.op) {
	case VALE_OPEN:
		if (c->port >= 0) {
			reply_err(c->fd, -EBUSY, "this connection holds a port");
			return false;
		}
		serve_open(s, c, &rq);
		return c->port >= 0;
	case VALE_LIST:
		serve_list(s, c->fd);
		return true;
	case VALE_DETACH:
		serve_detach(s, c, &rq);
		return true;
	case VALE_ATTACH:
		serve_attach(s, c, &rq);
		return true;
	default:
		reply_err(c->fd, -EINVAL, "unknown request");
		return false;
	}
}

/* May uid open one more connection? Otherwise msg says why not. */
static bool conn_room(struct sws *s, unsigned uid, char *msg, size_t len)
{
	unsigned mine = 0;
	for (unsigned i = 0; i < s->nconn; i++)
		mine += s->conn[i].uid == uid;
	if (mine >= SWS_MAX_CONNS_UID)
		snprintf(msg, len, "uid %u holds %u connections, the limit per "
			 "user: close ports it does not use", uid, mine);
	else if (s->nconn == SWS_MAX_CONNS)
		snprintf(msg, len, "the switch holds %u connections, its limit: "
			 "close ports you do not use", s->nconn);
	else
		return true;
	return false;
}

static void accept_all(struct sws *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
		    (cr.uid != geteuid() && cr.uid != 0)) {
			reply_err(fd, -EPERM, "this switch serves its own user only");
			close(fd);
			continue;
		}
		char msg[200];
		if (!conn_room(s, (unsigned)cr.uid, msg, sizeof(msg))) {
			reply_err(fd, -EUSERS, msg);
			close(fd);
			continue;
		}
		s->conn[s->nconn++] = (struct sws_conn){ .fd = fd, .port = -1,
							  .pid = cr.pid,
							  .uid = (unsigned)cr.uid };
	}
}

void sws__serve(struct sws *s, struct pollfd *pfd, unsigned n)
{
	/* Connections first, from the last (conn_drop() moves the last
	 * one into the hole), then new ones. A connection whose fd is -1
	 * was ended by a detach request. */
	for (unsigned k = n; k-- > 1;) {
		unsigned i = k - 1;
		if (i >= s->nconn)
			continue;
		if (s->conn[i].fd >= 0 &&
		    (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) ||
		     serve_one(s, i)))
			continue;
		conn_drop(s, i);
	}
	for (unsigned i = s->nconn; i-- > 0;)
		if (s->conn[i].fd < 0)
			conn_drop(s, i);
	if (pfd[0].revents & POLLIN)
		accept_all(s);
}
