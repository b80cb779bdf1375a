/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The broker's wire protocol (docs/broker.md, "Protocol"): one request is
 * one SOCK_SEQPACKET message of at most PM_BK_MSG_MAX bytes, a line
 *
 *   VERB key=value key=value ...
 *
 * with up to PM_BK_MAX_FDS descriptors attached (SCM_RIGHTS: the region
 * for `xsk`, the client's network namespace when ns=1). The answer is one
 * message too: "ok ..." (with the granted descriptor attached), or
 * "refused: WHY" where WHY names the policy rule. Shared by the library
 * (the client) and `pktmap broker`; read once, checked here, then used.
 */
#ifndef PKTMAP_BROKER_PROTO_H
#define PKTMAP_BROKER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_BK_MSG_MAX 512
#define PM_BK_MAX_FDS 2
#define PM_BK_IFNAMSIZ 16
/* The default socket, where the library looks for the broker. */
#define PM_BK_SOCKET "/run/pktmap/broker.sock"

enum pm_bk_verb {
	PM_BK_XSK = 1,  /* an AF_XDP socket bound to if/q with the client's UMEM */
	PM_BK_ATTACH,   /* steer queue q to this connection's socket (XSKMAP) */
	PM_BK_PKT,      /* an AF_PACKET socket for if */
	PM_BK_TAP,      /* the TAP device if */
};

/* Modes (xdp:): bits. */
#define PM_BK_MODE_COPY 1u
#define PM_BK_MODE_ZC   2u
#define PM_BK_MODE_LIVE 4u
/* Directions: bits. */
#define PM_BK_DIR_RX 1u
#define PM_BK_DIR_TX 2u

struct pm_bk_req {
	enum pm_bk_verb verb;
	char ifname[PM_BK_IFNAMSIZ];
	uint32_t queue;
	uint32_t mode;      /* PM_BK_MODE_*: xsk; 0 = whatever the driver has */
	uint32_t dir;       /* PM_BK_DIR_* */
	uint64_t umem_off;  /* xsk: where the UMEM starts in the region fd */
	uint64_t umem_len;  /* xsk: its bytes */
	uint32_t chunk;     /* xsk: buffer size (2048 or 4096) */
	uint32_t rx, tx, fq, cq; /* xsk: ring sizes (powers of two) */
	bool sg;            /* xsk: multi-buffer frames */
	bool share;         /* xsk: share the UMEM of this connection's first */
	bool ns;            /* a network namespace descriptor is attached */
};

/* Parse one request (buf[0..len), no terminating 0 needed). Returns 0, or
 * -EINVAL with a one-line reason in err. */
int pm_bk_req_parse(const char *buf, size_t len, struct pm_bk_req *r,
		    char *err, size_t errlen);
/* Write r as a request line into buf. Returns its length, or -ENOSPC. */
int pm_bk_req_format(const struct pm_bk_req *r, char *buf, size_t len);
/* "xsk", "attach", ... */
const char *pm_bk_verb_name(enum pm_bk_verb v);

#endif /* PKTMAP_BROKER_PROTO_H */
