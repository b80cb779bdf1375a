/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch's control socket (protocol: src/vale_proto.h). Server
 * side: a client asking for a port gets a pipe of its own, in a region of
 * its own, whose other end the switch attaches; the connection stays open
 * while the client holds the port, and its end (close, exit, SIGKILL)
 * detaches the port and frees the pipe. Client side: --list, -d and -a on
 * a running switch.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "stats.h"
#include "switch/switch_app.h"

/* The closing thread: pktmap_close() of every queued port, in order. */
static void *reaper_main(void *arg)
{
	struct swa_reaper *rp = arg;
	pthread_mutex_lock(&rp->mu);
	for (;;) {
		while (!rp->n && !rp->stop)
			pthread_cond_wait(&rp->cv, &rp->mu);
		if (!rp->n)
			break;
		struct pktmap_port *p = rp->q[0];
		memmove(rp->q, rp->q + 1, --rp->n * sizeof(rp->q[0]));
		pthread_mutex_unlock(&rp->mu);
		pktmap_close(p);
		atomic_fetch_add(&rp->closed, 1);
		pthread_mutex_lock(&rp->mu);
	}
	pthread_mutex_unlock(&rp->mu);
	return NULL;
}

/* Hand a detached port to the reaper; never waits for the close. With
 * the queue full (a thousand closes stuck), the port is left open: its
 * memory is lost until the switch exits, the forwarding is not. */
static void reap(struct swa *a, struct pktmap_port *p)
{
	struct swa_reaper *rp = &a->reaper;
	pthread_mutex_lock(&rp->mu);
	if (rp->n < SWA_MAX_REAP)
		rp->q[rp->n++] = p;
	pthread_cond_signal(&rp->cv);
	pthread_mutex_unlock(&rp->mu);
}

/* Take the switch's name: the lock file first (held for the switch's
 * life: a second switch of that name fails here, and a socket left by a
 * killed one is stale), then the socket. Both are in our own directory,
 * where no other user can create a name. */
static int take_name(struct swa *a)
{
	char dir[64], err[300];
	struct sockaddr_un sa;
	if (pktmap_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0) {
		cli_err("switch %s: %s", a->name, err);
		return 1;
	}
	if (!vale_sockaddr(&sa, dir, a->name, "lock")) {
		cli_err("switch %s: name too long", a->name);
		return 1;
	}
	snprintf(a->lockpath, sizeof(a->lockpath), "%s", sa.sun_path);
	a->lockfd = open(a->lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			 0600);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1 };
	if (a->lockfd < 0 || fcntl(a->lockfd, F_OFD_SETLK, &fl) != 0) {
		if (a->lockfd >= 0 && (errno == EAGAIN || errno == EACCES))
			cli_err("switch %s is already running (see 'pktmap switch "
				"--list %s')", a->name, a->name);
		else
			cli_err("switch %s: cannot lock %s: %s", a->name,
				a->lockpath, strerror(errno));
		if (a->lockfd >= 0)
			close(a->lockfd);
		a->lockfd = -1;
		a->lockpath[0] = 0;
		return 1;
	}
	vale_sockaddr(&sa, dir, a->name, "sock");
	snprintf(a->sockpath, sizeof(a->sockpath), "%s", sa.sun_path);
	unlink(a->sockpath); /* a killed switch's; we hold the name */
	return 0;
}

int swa_listen(struct swa *a)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (take_name(a))
		return 1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", a->sockpath);
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				   strlen(a->sockpath) + 1);
	a->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->lfd < 0) {
		cli_err("switch %s: socket: %s", a->name, strerror(errno));
		return 1;
	}
	if (bind(a->lfd, (struct sockaddr *)&sa, sl) != 0) {
		cli_err("switch %s: cannot bind %s: %s", a->name, a->sockpath,
			strerror(errno));
		close(a->lfd);
		a->lfd = -1;
		a->sockpath[0] = 0;
		return 1;
	}
	if (listen(a->lfd, 64) != 0) {
		cli_err("switch %s: listen: %s", a->name, strerror(errno));
		return 1;
	}
	if (getrandom(&a->nonce, sizeof(a->nonce), 0) != sizeof(a->nonce))
		a->nonce = (uint32_t)getpid() * 2654435761u;
	pthread_mutex_init(&a->reaper.mu, NULL);
	pthread_cond_init(&a->reaper.cv, NULL);
	int e = pthread_create(&a->reaper.tid, NULL, reaper_main, &a->reaper);
	if (e) {
		cli_err("switch %s: cannot start its closing thread: %s", a->name,
			strerror(e));
		return 1;
	}
	a->reaper.started = true;
	return 0;
}

unsigned swa_ctl_fds(struct swa *a, struct pollfd *pfd)
{
	unsigned n = 0;
	pfd[n].fd = a->lfd;
	pfd[n].events = POLLIN;
	pfd[n++].revents = 0;
	for (unsigned i = 0; i < a->nconn; i++) {
		pfd[n].fd = a->conn[i].fd;
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
	}
	return n;
}

static void conn_drop(struct swa *a, unsigned i)
{
	struct swa_conn *c = &a->conn[i];
	if (c->port >= 0)
		swa_detach(a, (uint16_t)c->port);
	if (c->fd >= 0)
		close(c->fd);
	a->conn[i] = a->conn[--a->nconn];
}

void swa_ctl_close(struct swa *a)
{
	while (a->nconn)
		conn_drop(a, a->nconn - 1);
	if (a->lfd >= 0)
		close(a->lfd);
	a->lfd = -1;
	if (a->sockpath[0])
		unlink(a->sockpath);
	if (a->lockfd >= 0) {
		unlink(a->lockpath);
		close(a->lockfd);
	}
	a->lockfd = -1;
	if (a->reaper.started) {
		pthread_mutex_lock(&a->reaper.mu);
		a->reaper.stop = true;
		pthread_cond_signal(&a->reaper.cv);
		pthread_mutex_unlock(&a->reaper.mu);
		pthread_join(a->reaper.tid, NULL);
		a->reaper.started = false;
	}
}

void swa_port_counters(const struct sw_counters *c, struct vale_counters *vc)
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

void swa_detach(struct swa *a, uint16_t id)
{
	struct sw_port *sp = id < a->sw.nports ? a->sw.port[id] : NULL;
	if (!sp)
		return;
	if (a->ngone < SWA_MAX_GONE) {
		struct swa_gone *g = &a->gone[a->ngone++];
		snprintf(g->name, sizeof(g->name), "%s", sp->name);
		snprintf(g->kind, sizeof(g->kind), "%s", sp->kind);
		swa_counters(a, id, &g->c);
	}
	for (unsigned i = 0; i < a->nconn; i++)
		if (a->conn[i].port == id)
			a->conn[i].port = -1;
	for (unsigned t = 0; t < a->nthreads; t++) {
		/* Out of the data path now; closed by the reaper (a client's
		 * port may make pktmap_close() wait on a lock it holds). */
		struct sw *s = swa_ctx(a, t);
		struct sw_port *tp = id < s->nports ? s->port[id] : NULL;
		if (tp && tp->own && a->reaper.started) {
			tp->own = false;
			reap(a, tp->port);
		}
		sw_detach(s, id);
	}
	a->last_rx[id] = a->last_tx[id] = 0;
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

/* A nonzero id shared by the ports named with one region. */
static uint64_t region_group(const char *region)
{
	uint64_t h = 1469598103934665603ull;
	for (; *region; region++)
		h = (h ^ (unsigned char)*region) * 1099511628211ull;
	return h | 1;
}

int swa_attach_name(struct swa *a, const char *name, const char *as,
		    char *err, unsigned errlen)
{
	struct pktmap_port *p;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = errlen };
	struct pktmap_name nm = { .sz = sizeof(nm), .region = "" };
	char kind[16] = "port", pname[64];
	if (pktmap_name_parse(name, &nm, err, errlen) == 0) {
		const char *bk = nm.backend;
		bool host = nm.reg == NR_REG_SW || nm.reg == NR_REG_ONE_SW;
		snprintf(kind, sizeof(kind), "%s", host ? "host" :
			 strcmp(bk, "tap") == 0 ? "tap" :
			 (strcmp(bk, "xdp") == 0 || strcmp(bk, "pkt") == 0) ? "nic" :
			 bk);
	}
	/* The port's name on the switch: what follows the back end. */
	const char *colon = strchr(name, ':');
	snprintf(pname, sizeof(pname), "%s", as ? as : colon ? colon + 1 : name);
	pname[strcspn(pname, "@/")] = 0;
	if (sw_find(&a->sw, pname)) {
		snprintf(err, errlen, "%s: port '%s' is already attached to %s",
			 name, pname, a->name);
		return -EEXIST;
	}
	/* With threads, thread T opens queue T of an interface (NAME-T): the
	 * interface needs a queue per thread. Host rings and taps have one. */
	if (a->nthreads > 1 && (strcmp(kind, "nic") != 0 ||
				nm.reg != NR_REG_ALL_NIC)) {
		snprintf(err, errlen, "%s: with -p %u only clients and whole "
			 "interfaces (a queue per thread) can be attached: use -p 1",
			 name, a->nthreads);
		return -EOPNOTSUPP;
	}
	/* Ports named with one @mem: region share a pool: move buffers. */
	uint64_t group = nm.region[0] ? region_group(nm.region) : 0;
	int ret = 0, id = -1;
	unsigned t;
	for (t = 0; t < a->nthreads; t++) {
		char tname[300];
		if (cli_thread_port(name, a->nthreads, t, tname, sizeof(tname))) {
			snprintf(err, errlen, "%s: name too long", name);
			ret = -ENAMETOOLONG;
			break;
		}
		ret = pktmap_open(&p, tname, &o);
		if (ret)
			break;
		ret = sw_attach(swa_ctx(a, t), p, pname, kind, true, group);
		if (ret < 0 || (id >= 0 && ret != id)) {
			snprintf(err, errlen, "%s: %s", tname, swa_ctx(a, t)->err);
			pktmap_close(p);
			ret = ret < 0 ? ret : -EPROTO;
			break;
		}
		id = ret;
		ret = 0;
	}
	if (ret) {
		while (t-- > 0 && id >= 0)
			sw_detach(swa_ctx(a, t), (uint16_t)id);
		return ret;
	}
	return 0;
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

/* VALE_OPEN: a pipe of its own for the client's port. */
static void serve_open(struct swa *a, struct swa_conn *c,
		       const struct vale_req *rq)
{
	char msg[300], pipe[64], name[200];
	if (!port_name_ok(rq->port)) {
		reply_err(c->fd, -EINVAL, "bad port name (letters, digits, _ . - "
			  "only)");
		return;
	}
	struct sw_port *old = sw_find(&a->sw, rq->port);
	if (old) {
		if (old->pid)
			snprintf(msg, sizeof(msg), "port '%s' is in use (by pid %d)",
				 rq->port, old->pid);
		else
			snprintf(msg, sizeof(msg), "port '%s' is in use (%s)",
				 rq->port, old->attached);
		reply_err(c->fd, -EBUSY, msg);
		return;
	}
	unsigned seq = a->seq++;
	snprintf(pipe, sizeof(pipe), "vs%d.%u.%08x", (int)getpid(), seq,
		 a->nonce ^ (seq * 2654435761u));
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = msg,
				      .errbuf_len = sizeof(msg) };
	if (rq->slots >= 4 && rq->slots <= 65536)
		o.slots = rq->slots;
	uint64_t group = 0;
	if (rq->region[0]) {
		/* Trusted clients share one region: room for 16 ports. */
		o.region = rq->region;
		o.bufs = 16 * 4 * (o.slots ? o.slots : 1024) + 64;
		group = region_group(rq->region);
	}
	/* One ring pair per thread: thread t opens ring t of our end. */
	int ret = 0, id = -1;
	unsigned t;
	for (t = 0; t < a->nthreads && ret >= 0; t++) {
		struct pktmap_port *p;
		if (a->nthreads == 1)
			snprintf(name, sizeof(name), "pipe:%s{0", pipe);
		else
			snprintf(name, sizeof(name), "pipe:%s{0-%u@conf:rings=%u", pipe,
				 t, a->nthreads);
		ret = pktmap_open(&p, name, &o);
		if (ret) {
			reply_err(c->fd, ret, msg);
			break;
		}
		ret = sw_attach(swa_ctx(a, t), p, rq->port, "client", true, group);
		if (ret < 0 || (id >= 0 && ret != id)) {
			pktmap_close(p);
			reply_err(c->fd, ret < 0 ? ret : -EPROTO, swa_ctx(a, t)->err);
			ret = -1;
			break;
		}
		id = ret;
	}
	if (ret < 0) {
		while (t-- > 0 && id >= 0)
			sw_detach(swa_ctx(a, t), (uint16_t)id);
		return;
	}
	ret = id;
	c->port = ret;
	a->sw.port[ret]->pid = c->pid;
	snprintf(a->sw.port[ret]->attached, sizeof(a->sw.port[ret]->attached),
		 "pid %d via %s", c->pid, name);
	struct vale_rep rp = { .op = VALE_OK };
	snprintf(rp.pipe, sizeof(rp.pipe), "%s", pipe);
	reply(c->fd, &rp);
}

static void serve_list(struct swa *a, int fd)
{
	for (uint32_t i = 0; i < a->sw.nports; i++) {
		struct sw_port *sp = a->sw.port[i];
		if (!sp)
			continue;
		struct vale_rep rp = { .op = VALE_PORT };
		snprintf(rp.port, sizeof(rp.port), "%s", sp->name);
		snprintf(rp.kind, sizeof(rp.kind), "%s", sp->kind);
		snprintf(rp.attached, sizeof(rp.attached), "%s", sp->attached);
		rp.pid = sp->pid;
		rp.zerocopy = sp->zc_group != 0;
		struct sw_counters sc;
		swa_counters(a, sp->id, &sc);
		swa_port_counters(&sc, &rp.c);
		reply(fd, &rp);
	}
	struct vale_rep rp = { .op = VALE_END };
	struct sw_mac_stats ms = { 0 };
	if (swa_mac(a))
		sw_mac_stats(swa_mac(a), &ms);
	rp.mac_entries = ms.entries;
	rp.mac_capacity = ms.capacity;
	rp.mac_learned = ms.learned;
	rp.mac_moved = ms.moved;
	rp.mac_aged = ms.aged;
	rp.switch_pid = (int32_t)getpid();
	for (uint32_t i = 0; i < a->sw.nports; i++)
		rp.nports += a->sw.port[i] != NULL;
	reply(fd, &rp);
}

/* One request on connection i. Returns false when the connection ends. */
static bool serve_one(struct swa *a, unsigned i)
{
	struct swa_conn *c = &a->conn[i];
	struct vale_req rq;
	ssize_t n = recv(c->fd, &rq, sizeof(rq), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false; /* closed: the client is gone */
	if (n != (ssize_t)sizeof(rq) || rq.magic != VALE_MAGIC ||
	    rq.version != VALE_VERSION) {
		reply_err(c->fd, -EPROTO, "bad request (another pktmap version?)");
		return false;
	}
	rq.port[sizeof(rq.port) - 1] = 0;
	rq.region[sizeof(rq.region) - 1] = 0;
	rq.arg[sizeof(rq.arg) - 1] = 0;
	char msg[400];
	switch (rq.op) {
	case VALE_OPEN:
		if (c->port >= 0) {
			reply_err(c->fd, -EBUSY, "this connection holds a port");
			return false;
		}
		serve_open(a, c, &rq);
		return c->port >= 0;
	case VALE_LIST:
		serve_list(a, c->fd);
		return true;
	case VALE_DETACH: {
		struct sw_port *sp = sw_find(&a->sw, rq.port);
		if (!sp) {
			snprintf(msg, sizeof(msg), "no port '%s' on %s", rq.port,
				 a->name);
			reply_err(c->fd, -ENOENT, msg);
			return true;
		}
		uint16_t id = sp->id;
		/* A client's port: its connection ends with it. */
		for (unsigned j = 0; j < a->nconn; j++) {
			if (a->conn[j].port == id) {
				close(a->conn[j].fd);
				a->conn[j].fd = -1;
			}
		}
		swa_detach(a, id);
		struct vale_rep rp = { .op = VALE_OK };
		reply(c->fd, &rp);
		return true;
	}
	case VALE_ATTACH: {
		int ret = swa_attach_name(a, rq.arg, rq.port[0] ? rq.port : NULL,
					  msg, sizeof(msg));
		if (ret) {
			reply_err(c->fd, ret, msg);
		} else {
			struct vale_rep rp = { .op = VALE_OK };
			reply(c->fd, &rp);
		}
		return true;
	}
	default:
		reply_err(c->fd, -EINVAL, "unknown request");
		return false;
	}
}

static void accept_all(struct swa *a)
{
	for (;;) {
		int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
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
		unsigned mine = 0;
		for (unsigned i = 0; i < a->nconn; i++)
			mine += a->conn[i].uid == (unsigned)cr.uid;
		char msg[200];
		if (a->nconn == SWA_MAX_CONNS || mine >= SWA_MAX_CONNS_UID) {
			if (mine >= SWA_MAX_CONNS_UID)
				snprintf(msg, sizeof(msg), "uid %u holds %u connections, "
					 "the limit per user: close ports it does "
					 "not use", (unsigned)cr.uid, mine);
			else
				snprintf(msg, sizeof(msg), "the switch holds %u "
					 "connections, its limit: close ports you "
					 "do not use", a->nconn);
			reply_err(fd, -EUSERS, msg);
			close(fd);
			continue;
		}
		a->conn[a->nconn++] = (struct swa_conn){ .fd = fd, .port = -1,
							  .pid = cr.pid,
							  .uid = (unsigned)cr.uid };
	}
}

void swa_serve(struct swa *a, struct pollfd *pfd, unsigned n)
{
	/* Connections first, from the last (conn_drop() moves the last
	 * one into the hole), then new ones. A connection whose fd is -1
	 * was ended by a detach request. */
	for (unsigned k = n; k-- > 1;) {
		unsigned i = k - 1;
		if (i >= a->nconn)
			continue;
		if (a->conn[i].fd >= 0 &&
		    (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) ||
		     serve_one(a, i)))
			continue;
		conn_drop(a, i);
	}
	for (unsigned i = a->nconn; i-- > 0;)
		if (a->conn[i].fd < 0)
			conn_drop(a, i);
	if (pfd[0].revents & POLLIN)
		accept_all(a);
}

/* ---- client side ---------------------------------------------------- */

static int ctl_connect(const char *sw, bool quiet_if_absent)
{
	char dir[64], err[300];
	if (pktmap_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0) {
		if (!quiet_if_absent)
			cli_err("switch %s: %s", sw, err);
		return -1;
	}
	int fd = vale_ctl_connect(dir, sw);
	if (fd < 0 && !quiet_if_absent) {
		if (fd == -ECONNREFUSED)
			cli_err("switch %s is not running (start it with 'pktmap "
				"switch %s')", sw, sw);
		else if (fd == -EPERM)
			cli_err("switch %s: its socket belongs to another user",
				sw);
		else
			cli_err("switch %s: %s", sw, strerror(-fd));
	}
	return fd < 0 ? -1 : fd;
}

bool swa_running(const char *sw)
{
	int fd = ctl_connect(sw, true);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int ctl_recv(int fd, const char *sw, struct vale_rep *rp)
{
	ssize_t n = recv(fd, rp, sizeof(*rp), 0);
	if (n != (ssize_t)sizeof(*rp) || rp->magic != VALE_MAGIC) {
		cli_err("switch %s did not answer (%s)", sw,
			n < 0 ? strerror(errno) : "bad reply");
		return -1;
	}
	rp->msg[sizeof(rp->msg) - 1] = 0;
	rp->port[sizeof(rp->port) - 1] = 0;
	rp->kind[sizeof(rp->kind) - 1] = 0;
	rp->attached[sizeof(rp->attached) - 1] = 0;
	return 0;
}

#define U(x) ((unsigned long long)(x))

int swa_client_list(const char *sw, bool json)
{
	int fd = ctl_connect(sw, false);
	if (fd < 0)
		return EXIT_RUNTIME;
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = VALE_LIST };
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq)) {
		cli_err("switch %s: %s", sw, strerror(errno));
		close(fd);
		return EXIT_RUNTIME;
	}
	struct vale_rep rp;
	unsigned n = 0;
	if (json)
		printf("{\"switch\":\"%s\",\"ports\":[", sw);
	else
		printf("%-16s %-7s %12s %12s %10s %10s %10s %10s  %s\n", "PORT",
		       "KIND", "RX", "TX", "NOSPACE", "INVALID", "UNKNOWN",
		       "FILTERED", "ATTACHED");
	for (;;) {
		if (ctl_recv(fd, sw, &rp)) {
			close(fd);
			return EXIT_RUNTIME;
		}
		if (rp.op != VALE_PORT)
			break;
		if (json) {
			printf("%s{\"port\":", n ? "," : "");
			stats_json_str(stdout, rp.port);
			printf(",\"kind\":");
			stats_json_str(stdout, rp.kind);
			printf(",\"attached\":");
			stats_json_str(stdout, rp.attached);
			printf(",\"pid\":%d,\"zerocopy\":%s,\"rx_frames\":%llu,"
			       "\"rx_bytes\":%llu,\"tx_frames\":%llu,"
			       "\"tx_bytes\":%llu,\"drop_nospace\":%llu,"
			       "\"drop_invalid\":%llu,\"drop_unknown\":%llu,"
			       "\"filtered\":%llu,\"sync_errors\":%llu,"
			       "\"tx_moved\":%llu}",
			       rp.pid, rp.zerocopy ? "true" : "false",
			       U(rp.c.rx_frames), U(rp.c.rx_bytes),
			       U(rp.c.tx_frames), U(rp.c.tx_bytes),
			       U(rp.c.drop_nospace), U(rp.c.drop_invalid),
			       U(rp.c.drop_unknown), U(rp.c.filtered),
			       U(rp.c.sync_errors), U(rp.c.tx_moved));
		} else {
			printf("%-16s %-7s %12llu %12llu %10llu %10llu %10llu "
			       "%10llu  %s\n", rp.port, rp.kind, U(rp.c.rx_frames),
			       U(rp.c.tx_frames), U(rp.c.drop_nospace),
			       U(rp.c.drop_invalid), U(rp.c.drop_unknown),
			       U(rp.c.filtered), rp.attached);
		}
		n++;
	}
	close(fd);
	if (rp.op != VALE_END) {
		cli_err("switch %s: bad reply to --list", sw);
		return EXIT_RUNTIME;
	}
	if (json)
		printf("],\"nports\":%u,\"pid\":%d,\"mac_entries\":%llu,"
		       "\"mac_capacity\":%llu,\"mac_learned\":%llu,"
		       "\"mac_moved\":%llu,\"mac_aged\":%llu}\n", rp.nports,
		       rp.switch_pid, U(rp.mac_entries), U(rp.mac_capacity),
		       U(rp.mac_learned), U(rp.mac_moved), U(rp.mac_aged));
	else
		printf("switch %s (pid %d): %u port%s; MAC table %llu of %llu "
		       "(learned %llu, moved %llu, aged %llu)\n", sw,
		       rp.switch_pid, rp.nports, rp.nports == 1 ? "" : "s",
		       U(rp.mac_entries),
		       U(rp.mac_capacity), U(rp.mac_learned), U(rp.mac_moved),
		       U(rp.mac_aged));
	return 0;
}

int swa_client_op(const char *sw, enum vale_op op, const char *port,
		  const char *arg)
{
	int fd = ctl_connect(sw, false);
	if (fd < 0)
		return EXIT_RUNTIME;
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = op };
	snprintf(rq.port, sizeof(rq.port), "%s", port ? port : "");
	snprintf(rq.arg, sizeof(rq.arg), "%s", arg ? arg : "");
	struct vale_rep rp;
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq) ||
	    ctl_recv(fd, sw, &rp)) {
		close(fd);
		return EXIT_RUNTIME;
	}
	close(fd);
	if (rp.op != VALE_OK) {
		cli_err("switch %s: %s", sw, rp.msg);
		return EXIT_RUNTIME;
	}
	return 0;
}
