/* SPDX-License-Identifier: BSD-2-Clause
 *
 * valeX:Y: a port of the software switch `pktmap switch valeX` (netmap's
 * VALE in a process). The switch name is "vale" followed by anything up
 * to the ':' (netmap's grammar), Y names the port.
 *
 * Opening asks the running switch for port Y over its control socket
 * (the protocol: src/vale_proto.h, below both this back end and the
 * switch's server, src/fwd/switch_ctl.c). The switch makes a pipe in a
 * region of its own for this port alone and holds one end; this port is the other end, so the
 * data path is the pipe's (its checker, its wake-ups, zero-copy between
 * the client and the switch) and the switch copies each frame once into
 * the destination's buffers: a client shares memory with the switch only,
 * never with another client. Clients that trust each other may name one
 * region ("vale0:a@mem:R") and the switch then moves buffers between them
 * instead of copying.
 *
 * The control socket stays open for the life of the port: when it closes
 * (pktmap_close(), exit, SIGKILL) the switch detaches the port and frees
 * its pipe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "name.h"
#include "port.h"
#include "region.h"
#include "util.h"
#include "vale_proto.h"

struct vale_priv {
	int sock;
	char pipe[64];
};

/* How long an open waits for the switch's answer. */
#define VALE_REPLY_MS 5000

static int vale_connect(struct pktmap_port *p, const char *sw)
{
	char dir[64], err[300];
	int ret = pm_user_dir(dir, sizeof(dir), err, sizeof(err));
	if (ret)
		return pm_open_error(p, ret, "switch '%s': %s", sw, err);
	int fd = vale_ctl_connect(dir, sw);
	if (fd == -ENAMETOOLONG)
		return pm_open_error(p, fd, "switch name too long");
	if (fd == -ECONNREFUSED)
		return pm_open_error(p, fd, "switch '%s' is not running: start it "
				     "with 'pktmap switch %s'", sw, sw);
	/* Only a switch of our own user. */
	if (fd == -EPERM)
		return pm_open_error(p, fd, "the socket of switch '%s' belongs to "
				     "another user: not attaching", sw);
	if (fd < 0)
		return pm_open_error(p, fd, "cannot reach switch '%s': %s", sw,
				     strerror(-fd));
	return fd;
}

static int vale_open(struct pktmap_port *p, const struct pm_name *nm,
		     const struct pktmap_open_opts *o)
{
	const char *sw = nm->backend;
	if (!vale_name_ok(sw))
		return pm_open_error(p, -EINVAL,
				     "'%s' is not a switch name (vale followed by "
				     "up to 11 letters, digits, '_', '.', '-')", sw);
	if (nm->reg != NR_REG_ALL_NIC)
		return pm_open_error(p, -EINVAL,
				     "a switch port is valeX:PORT, without ring "
				     "or host-ring suffixes");
	struct vale_priv *vp = calloc(1, sizeof(*vp));
	if (!vp)
		return -ENOMEM;
	vp->sock = -1;
	p->priv2 = vp;

	int fd = vale_connect(p, sw);
	if (fd < 0)
		return fd;
	vp->sock = fd;

	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = VALE_OPEN };
	rq.slots = nm->conf.tx_slots ? nm->conf.tx_slots : nm->conf.rx_slots;
	snprintf(rq.port, sizeof(rq.port), "%s", nm->body);
	snprintf(rq.region, sizeof(rq.region), "%s", nm->conf.region);
	/* A switch that refuses the connection (a limit) says why before
	 * it closes it: read that reply whether or not the send got in. */
	int send_err = send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) ==
				       (ssize_t)sizeof(rq) ? 0 : errno;
	struct vale_rep rp;
	ssize_t n = recv(fd, &rp, sizeof(rp), send_err ? MSG_DONTWAIT : 0);
	if (n < 0 && errno == ECONNRESET) /* closed unread: the reply is queued */
		n = recv(fd, &rp, sizeof(rp), MSG_DONTWAIT);
	if (send_err && n != (ssize_t)sizeof(rp))
		return pm_open_error(p, -send_err, "switch '%s': cannot send the "
				     "request: %s", sw, strerror(send_err));
	if (n < 0 || vale_rep_take(&rp, n) ||
	    (rp.op != VALE_OK && rp.op != VALE_ERR))
		return pm_open_error(p, n < 0 ? -errno : -EPROTO,
				     "switch '%s' did not answer (%s): is it "
				     "stuck? restart 'pktmap switch %s'",
				     sw, n < 0 ? strerror(errno) : "bad reply",
				     sw);
	if (rp.op == VALE_ERR) {
		char safe[256];
		pm_printable(safe, sizeof(safe), rp.msg);
		return pm_open_error(p, rp.status < 0 ? rp.status : -EIO,
				     "switch '%s': %s", sw, safe);
	}
	snprintf(vp->pipe, sizeof(vp->pipe), "%s", rp.pipe);

	/* Our end of the pipe the switch made for us. */
	struct pm_name pn = *nm;
	snprintf(pn.backend, sizeof(pn.backend), "pipe");
	snprintf(pn.body, sizeof(pn.body), "%s", vp->pipe);
	pn.reg = NR_REG_PIPE_SLAVE;
	pn.pipe_id = 0;
	pn.ring = -1;
	pn.conf.tx_rings = pn.conf.rx_rings = 0;
	pn.conf.tx_slots = pn.conf.rx_slots = 0;
	int ret = pm_pipe_ops.open(p, &pn, o);
	if (ret)
		return ret;
	/* The switch copies between clients (unless they share a region). */
	p->mode = nm->conf.region[0] ? PKTMAP_MODE_ZEROCOPY : PKTMAP_MODE_COPY;
	return 0;
}

static int vale_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	return pm_pipe_ops.txsync(p, k);
}

static int vale_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	return pm_pipe_ops.rxsync(p, k);
}

static int vale_poll_arm(struct pktmap_port *p, short events)
{
	return pm_pipe_ops.poll_arm(p, events);
}

static void vale_poll_disarm(struct pktmap_port *p, short events)
{
	pm_pipe_ops.poll_disarm(p, events);
}

static int vale_poll_fd(const struct pktmap_port *p, short events, short *pev)
{
	return pm_pipe_ops.poll_fd(p, events, pev);
}

static int vale_event_fd(struct pktmap_port *p)
{
	return pm_pipe_ops.event_fd(p);
}

static void vale_sync_event(struct pktmap_port *p, struct pm_kring *k)
{
	pm_pipe_ops.sync_event(p, k);
}

static void vale_info(const struct pktmap_port *p, struct pktmap_info *info)
{
	if (pm_pipe_ops.info)
		pm_pipe_ops.info(p, info);
	/* The peer is the switch: gone when its socket closed. */
	const struct vale_priv *vp = p->priv2;
	char b;
	if (vp && vp->sock >= 0 &&
	    recv(vp->sock, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
		info->flags |= PKTMAP_INFO_PEER_GONE;
}

static void vale_close(struct pktmap_port *p)
{
	if (p->priv)
		pm_pipe_ops.close(p);
	struct vale_priv *vp = p->priv2;
	if (!vp)
		return;
	if (vp->sock >= 0)
		close(vp->sock);
	free(vp);
	p->priv2 = NULL;
}

/* The switch makes the client's pipe: the client chooses its ring size
 * and whether it shares a region with the switch, nothing else. */
static const struct pm_conf_keys vale_conf = {
	.common = PM_CK_SLOTS | PM_CK_REGION | PM_CK_SPIN,
};

const struct pm_port_ops pm_vale_ops = {
	.desc = {
		.name = "vale",
		.syntax = "valeX:PORT",
		.mode = "copy",
		.summary = "a port of the software switch 'pktmap switch valeX' "
			   "(learning bridge); each client isolated, one copy",
	},
	.caps = 0,
	.conf = &vale_conf,
	.open = vale_open,
	.txsync = vale_txsync,
	.rxsync = vale_rxsync,
	.poll_arm = vale_poll_arm,
	.poll_disarm = vale_poll_disarm,
	.poll_fd = vale_poll_fd,
	.event_fd = vale_event_fd,
	.sync_event = vale_sync_event,
	.info = vale_info,
	.close = vale_close,
};
