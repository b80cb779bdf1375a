/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker (docs/broker.md): its clients and what they were granted.
 * broker.c runs the socket and the loop, broker_grant.c answers requests
 * and takes grants back, policy.c decides.
 */
#ifndef PKTMAP_APPS_BROKER_H
#define PKTMAP_APPS_BROKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker_proto.h"
#include "policy.h"

/* Bounds: what one client, one user, everybody may hold at once. */
#define BROKER_MAX_GRANTS 64u      /* per connection */
#define BROKER_MAX_CLIENTS 4096u   /* connections */
#define BROKER_MAX_PER_UID 64u     /* connections of one uid (not root) */

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

struct broker {
	struct policy pol;
	const char *policy_path;
	int self_ns;             /* our network namespace, to go back to */
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
/* One line to stderr: "pktmap broker: ...". */
void broker_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* PKTMAP_APPS_BROKER_H */
