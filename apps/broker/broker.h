/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker (docs/broker.md): its clients and what they were granted.
 * broker.c runs the socket and the loop, broker_grant.c answers requests
 * and takes grants back, policy.c decides.
 */
#ifndef PKTMAP_APPS_BROKER_H
#define PKTMAP_APPS_BROKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker_proto.h"
#include "policy.h"

/* Bounds: what one client, one user, everybody may hold at once. */
#define BROKER_MAX_GRANTS 64u      /* per connection */
#define BROKER_MAX_CLIENTS 4096u   /* connections */
#define BROKER_MAX_PER_UID 64u     /* connections of one uid (not root) */
#define BROKER_MAX_HOLDS 256u      /* interfaces the XDP program is held on */

struct pktmap_broker_xsk;

struct grant {
	enum pol_backend backend;
	char iface[PM_BK_IFNAMSIZ];
	int ifindex;
	uint32_t queue;          /* xdp: */
	uint32_t mode;           /* xdp: PM_BK_MODE_* asked */
	uint32_t dir;
	uint64_t umem;           /* xdp: bytes registered */
	int fd;                  /* xdp: our copy of the socket; else -1 */
	int lock_fd;             /* pkt: the filter's switch; else -1 */
	struct pktmap_broker_xsk *xsk; /* xdp: once attached */
	bool zc;                 /* xdp: bound in zero-copy mode */
	bool revoked;
	bool own_netns;          /* xdp: in the client's network namespace */
	uint64_t netns;          /* ... its inode, for the log */
	uint32_t rule_line;
};

struct client {
	int fd;
	pid_t pid;
	struct pol_client who;
	char name[64];           /* "uid 1000 (alice) pid 123": for the log */
	struct grant grants[BROKER_MAX_GRANTS];
	uint32_t ngrants;
};

/* pktmap's XDP program held on an interface of our network namespace
 * while the policy names it, grants or not (broker_hold.c). */
struct hold {
	char iface[PM_BK_IFNAMSIZ];
	int ifindex;
	struct pktmap_broker_xsk *h;
};

struct broker {
	struct policy pol;
	const char *policy_path;
	int self_ns;             /* our network namespace, to go back to */
	struct hold holds[BROKER_MAX_HOLDS];
	uint32_t nholds;
	int close_fd;            /* the closer's pipe (broker_close.c), or -1 */
	pthread_t closer;
};

/* Answer one request of c (buf[0..len), fds attached: nfds of them, each
 * ours to close). Writes the answer line to ans and the descriptor to
 * send (or -1) to *out_fd (ours to close after sending). */
void broker_request(struct broker *b, struct client *c, const char *buf,
		    size_t len, int *fds, int nfds, char *ans, size_t anslen,
		    int *out_fd);
/* Take back what c holds that the policy no longer allows (all when
 * `all`: the client left). Returns how many grants it took back. */
uint32_t broker_revoke(struct broker *b, struct client *c, bool all);
/* Hold pktmap's XDP program on every interface an xdp: rule of our
 * network namespace names by name (attached now where it is not: a grant
 * then only fills its XSKMAP), and let go of the holds of interfaces no
 * rule names any more or that changed (the kernel detaches the program
 * when its last grant went too). At start and after each reload, after
 * the revocations. Logs each attach and detach. */
void broker_hold_sync(struct broker *b);
/* Before a grant on iface (ifindex) of our namespace: hold the program
 * there if no hold does (the slow path, once: an interface that appeared
 * after the policy was read, or one a prefix rule names). */
void broker_hold_ensure(struct broker *b, const char *iface, int ifindex);
/* Let go of every hold (the broker stops). */
void broker_hold_drop_all(struct broker *b);
/* Start the thread that closes departed clients' AF_XDP sockets (their
 * release waits for an RCU grace period: not on the broker's thread).
 * Without it (logged), broker_close_later() closes at once. */
void broker_closer_start(struct broker *b);
/* Close fd aside (-1 is ignored): the caller never touches it again. */
void broker_close_later(struct broker *b, int fd);
/* Wait (up to a second) until every descriptor handed over so far is
 * closed. True when some were still open and now are all closed: a
 * queue they held may be free now. */
bool broker_closer_wait(struct broker *b);
/* Every descriptor handed over closed, the thread gone. */
void broker_closer_stop(struct broker *b);
/* One line to stderr: "pktmap broker: ...". */
void broker_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* PKTMAP_APPS_BROKER_H */
