/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch's control protocol, shared by the vale back end (the client
 * side of "vale0:a", src/ports/vale.c, in the core library) and the
 * switch's server (src/fwd/switch_ctl.c, in the forwarding component
 * above it; `pktmap switch` runs it). It sits in src/, below both. Only
 * structures and inline helpers: nothing here is a symbol of the library.
 *
 * A switch NAME listens on the unix socket .NAME.sock in its user's own
 * directory, /dev/shm/pktmap-UID (SOCK_SEQPACKET: one message per request
 * or reply), and holds a lock on .NAME.lock there for its life (that
 * lock, not the socket, says "running"). No other user can create an
 * entry in that directory (mode 0700, see src/userdir.c), so no other
 * user can take a switch's name first, as one could an abstract socket
 * name. Both sides still check the other's credentials (SO_PEERCRED): a
 * client attaches only to a switch of its own uid, a switch serves only
 * its own uid (and root).
 *
 *   client                                    switch
 *   VALE_OPEN {port, region, slots}  ----->   makes pipe "vsPID.N.R" in a
 *                                             region of its own for this
 *                                             port, opens end {0
 *                                   <-----   VALE_OK {pipe}
 *   opens pipe:vsPID.N.R}0, keeps the socket: its close (also by
 *   SIGKILL) detaches the port and frees the pipe.
 *
 *   VALE_LIST  ----->  one VALE_PORT message per port, then VALE_END
 *   VALE_DETACH {port}, VALE_ATTACH {port name}  ----->  VALE_OK / VALE_ERR
 */
#ifndef PKTMAP_VALE_PROTO_H
#define PKTMAP_VALE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define VALE_MAGIC 0x454c4156u /* "VALE" */
#define VALE_VERSION 1u

enum vale_op {
	VALE_OPEN = 1,   /* attach a client port */
	VALE_LIST = 2,   /* list ports and counters */
	VALE_DETACH = 3, /* detach a port by name */
	VALE_ATTACH = 4, /* the switch opens a port (a NIC, host rings, ...) */
	VALE_OK = 16,
	VALE_ERR = 17,
	VALE_PORT = 18,  /* one port of a list */
	VALE_END = 19,   /* end of a list (with the switch's totals) */
};

/* Longest switch name ("vale0") and port name ("a"). */
#define VALE_SW_MAX 15
#define VALE_PORT_MAX 63

struct vale_req {
	uint32_t magic, version, op;
	uint32_t slots;      /* OPEN: ring size wanted, 0 = default */
	char port[VALE_PORT_MAX + 1];
	char region[64];     /* OPEN: "@mem:" region for trusted zero-copy */
	char arg[256];       /* ATTACH: the port name to open */
};

/* Counters of one port, as the switch keeps them. rx: frames the switch
 * took from the port; tx: frames it put into the port. */
struct vale_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t drop_nospace;  /* to this port: its TX ring was full */
	uint64_t drop_invalid;  /* from this port: bad descriptor or frame */
	uint64_t drop_unknown;  /* from this port: the lookup named no port */
	uint64_t filtered;      /* from this port: destination on this port */
	uint64_t sync_errors;   /* syncs that failed: the peer broke the ring
				 * protocol (reported by the pipe's checker) */
	uint64_t tx_moved;      /* of tx_frames: buffers moved, not copied */
};

struct vale_rep {
	uint32_t magic, version, op;
	int32_t status;        /* 0 or -errno */
	char msg[256];         /* VALE_ERR: one line */
	char pipe[64];         /* VALE_OK to OPEN: the pipe to open, end }0 */
	/* VALE_PORT */
	char port[VALE_PORT_MAX + 1];
	char kind[16];         /* "client", "nic", "host", "tap", ... */
	char attached[128];    /* what it is: the pktmap name opened */
	int32_t pid;           /* client's pid (0 for ports the switch opened) */
	uint32_t zerocopy;     /* shares a region with other ports */
	struct vale_counters c;
	/* VALE_END */
	uint64_t mac_entries, mac_capacity, mac_learned, mac_moved, mac_aged;
	uint32_t nports;
	int32_t switch_pid;
};

/* Take a request of n bytes received into *rq: it must be one whole
 * request of this version; its strings are cut to their fields (a peer
 * need not end them). The op is the caller's to check. The switch reads
 * a request only through this. Returns 0, or -EPROTO. */
static inline int vale_req_take(struct vale_req *rq, ssize_t n)
{
	if (n != (ssize_t)sizeof(*rq) || rq->magic != VALE_MAGIC ||
	    rq->version != VALE_VERSION)
		return -EPROTO;
	rq->port[sizeof(rq->port) - 1] = 0;
	rq->region[sizeof(rq->region) - 1] = 0;
	rq->arg[sizeof(rq->arg) - 1] = 0;
	return 0;
}

/* Take a reply of n bytes received into *rp, as vale_req_take() does a
 * request: one whole reply of this version with a known op, strings cut
 * to their fields. Every client reads a reply only through this.
 * Returns 0, or -EPROTO. */
static inline int vale_rep_take(struct vale_rep *rp, ssize_t n)
{
	if (n != (ssize_t)sizeof(*rp) || rp->magic != VALE_MAGIC ||
	    rp->version != VALE_VERSION)
		return -EPROTO;
	rp->msg[sizeof(rp->msg) - 1] = 0;
	rp->pipe[sizeof(rp->pipe) - 1] = 0;
	rp->port[sizeof(rp->port) - 1] = 0;
	rp->kind[sizeof(rp->kind) - 1] = 0;
	rp->attached[sizeof(rp->attached) - 1] = 0;
	return rp->op >= VALE_OK && rp->op <= VALE_END ? 0 : -EPROTO;
}

/* The socket address (or, with suffix "lock", the lock file) of switch
 * `sw` in the user directory `dir`; returns the address length for
 * bind()/connect(), or 0 when the name is too long. */
static inline socklen_t vale_sockaddr(struct sockaddr_un *sa, const char *dir,
				      const char *sw, const char *suffix)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/.%s.%s", dir,
			 sw, suffix);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
}

/* Connect to switch `sw` of the user directory `dir` as a client: only a
 * switch of our own uid (SO_PEERCRED), replies awaited up to 5 s. Returns
 * the socket, or -ECONNREFUSED (not running), -EPERM (the socket is
 * another user's), -ENAMETOOLONG or another -errno. */
static inline int vale_ctl_connect(const char *dir, const char *sw)
{
	struct sockaddr_un sa;
	socklen_t sl = vale_sockaddr(&sa, dir, sw, "sock");
	if (!sl)
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sl) != 0) {
		int e = errno;
		close(fd);
		return e == ENOENT || e == ECONNREFUSED ? -ECONNREFUSED : -e;
	}
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
	    cr.uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	struct timeval tv = { 5, 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Is `s` a switch name: "vale" followed by up to 11 characters of
 * [A-Za-z0-9_.-] (netmap: "vale" followed by anything up to ':')? */
static inline int vale_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 4 || n > VALE_SW_MAX || strncmp(s, "vale", 4) != 0)
		return 0;
	for (size_t i = 4; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

#endif /* PKTMAP_VALE_PROTO_H */
