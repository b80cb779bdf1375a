/* SPDX-License-Identifier: BSD-2-Clause
 *
 * memif: the shared-memory packet interface of VPP and DPDK (net_memif),
 * as a pktmap back end. This header has the wire format (written from the
 * protocol's description: version 2.0) and the state the back end's files
 * share: memif.c (open, close, the sync calls, poll) and memif_ctl.c (the
 * control channel: handshake, regions, rings, disconnect).
 *
 * The protocol in one picture. The client owns all memory; the server maps
 * what the client hands over.
 *
 *   client                      unix SOCK_SEQPACKET                 server
 *     connect() --------------------------------------------------> accept()
 *            <------------------------------------------------ HELLO (limits)
 *     INIT (version, id, secret) ---------------------------------------> ACK
 *     ADD_REGION n (memfd over SCM_RIGHTS) -----------------------------> ACK
 *     ADD_RING (C2S|S2C, index, region, offset, eventfd) ---------------> ACK
 *     CONNECT ------------------------------------------------------> CONNECTED
 *     DISCONNECT (code, reason) <------------- either way --------> DISCONNECT
 *
 * A ring is a header (cookie, flags, head, tail on their own cache lines)
 * and 2^k descriptors {flags, region, length, offset, metadata}. head and
 * tail are free-running 16-bit counters. On a C2S ring the client writes
 * frames at head and the server gives them back by moving tail; on an S2C
 * ring the client posts empty buffers at head and the server fills them
 * and moves tail. The side that reads a ring sets MEMIF_RING_FLAG_MASK_INT
 * when it polls; when clear, the writer writes to the ring's eventfd.
 */
#ifndef PKTMAP_MEMIF_H
#define PKTMAP_MEMIF_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "name.h"
#include "port.h"
#include "region.h"

#define MIF_COOKIE 0x3E31F20u
#define MIF_VERSION 0x0200u /* 2.0 */
#define MIF_NAME_SZ 32
#define MIF_SECRET_SZ 24

enum mif_msg_type {
	MIF_MSG_NONE = 0,
	MIF_MSG_ACK = 1,
	MIF_MSG_HELLO = 2,
	MIF_MSG_INIT = 3,
	MIF_MSG_ADD_REGION = 4,
	MIF_MSG_ADD_RING = 5,
	MIF_MSG_CONNECT = 6,
	MIF_MSG_CONNECTED = 7,
	MIF_MSG_DISCONNECT = 8,
};

#define MIF_ADD_RING_C2S 1u  /* add_ring.flags: the ring runs client to server */
#define MIF_DESC_NEXT 1u     /* desc.flags: the frame goes on in the next one */
#define MIF_RING_MASK_INT 1u /* ring.flags: the reader polls, no eventfd */

struct __attribute__((packed)) mif_hello {
	uint8_t name[MIF_NAME_SZ];
	uint16_t min_version, max_version;
	uint16_t max_region, max_c2s_ring, max_s2c_ring; /* highest index */
	uint8_t max_log2_ring_size;
};

struct __attribute__((packed)) mif_init {
	uint16_t version;
	uint32_t id;
	uint8_t mode; /* 0 Ethernet */
	uint8_t secret[MIF_SECRET_SZ];
	uint8_t name[MIF_NAME_SZ];
};

struct __attribute__((packed)) mif_add_region {
	uint16_t index;
	uint64_t size;
};

struct __attribute__((packed)) mif_add_ring {
	uint16_t flags;
	uint16_t index;
	uint16_t region;
	uint32_t offset;
	uint8_t log2_ring_size;
	uint16_t private_hdr_size;
};

struct __attribute__((packed)) mif_disconnect {
	uint32_t code;
	uint8_t string[96];
};

/* Every control message is 128 bytes: a 16-bit type and one body. */
struct __attribute__((packed)) mif_msg {
	uint16_t type;
	union __attribute__((packed)) {
		struct mif_hello hello;
		struct mif_init init;
		struct mif_add_region add_region;
		struct mif_add_ring add_ring;
		uint8_t if_name[MIF_NAME_SZ]; /* CONNECT, CONNECTED */
		struct mif_disconnect disconnect;
		uint8_t pad[126];
	};
};
_Static_assert(sizeof(struct mif_msg) == 128, "memif message size");

struct mif_desc {
	uint16_t flags;
	uint16_t region;
	uint32_t length;
	uint32_t offset;
	uint32_t metadata;
};
_Static_assert(sizeof(struct mif_desc) == 16, "memif descriptor size");

struct mif_ring {
	uint32_t cookie;
	uint16_t flags;
	uint16_t head;
	uint8_t pad0[PM_CACHELINE - 8];
	uint16_t tail;
	uint8_t pad1[PM_CACHELINE - 2];
	struct mif_desc desc[];
};
_Static_assert(offsetof(struct mif_ring, tail) == 64, "memif ring tail");
_Static_assert(offsetof(struct mif_ring, desc) == 128, "memif ring desc");

static inline uint64_t mif_ring_bytes(uint32_t log2)
{
	return sizeof(struct mif_ring) + ((uint64_t)sizeof(struct mif_desc) << log2);
}

#define MIF_MAX_REGIONS 16u
#define MIF_MAX_LOG2 14u         /* 16384 descriptors */
#define MIF_MAX_REGION_SIZE (1ull << 40)
#define MIF_HANDSHAKE_MS 3000    /* a peer slower than this is dropped */
#define MIF_RETRY_MS 100         /* a client tries to connect this often */
#define MIF_SERVICE_MS 4         /* the control socket is looked at this often */
#define MIF_MSGS_PER_SERVICE 32  /* at most this many control messages a look */
#define MIF_BACKOFF_MIN_US 20    /* poll's first safety tick */

enum mif_state {
	MIF_DOWN = 0,     /* no peer (a client retries, a server listens) */
	MIF_HELLO,        /* client: waits for HELLO; server: for INIT */
	MIF_SETUP,        /* regions and rings are being handed over */
	MIF_CONNECTING,   /* client: CONNECT sent, waits for CONNECTED */
	MIF_UP,
};

/* One memif ring as this side sees it: the private state of a kring. */
struct mif_q {
	struct mif_ring *r;      /* NULL while not connected */
	uint32_t size, mask;     /* descriptors */
	uint32_t nslots;         /* of the netmap ring */
	uint16_t mine;           /* the index this side writes (private copy) */
	uint16_t seen;           /* client: the peer's tail, last consumed */
	int ifd;                 /* the ring's eventfd (-1) */
	bool rx;                 /* a ring this side reads */
	uint32_t *bufs;          /* client RX: the buffer posted in each desc */
	uint32_t *slot_of;       /* client TX: the netmap slot of each desc */
};

/* What a server learned from ADD_RING, before CONNECT. */
struct mif_ring_req {
	bool set;
	uint16_t region;
	uint32_t offset;
	uint8_t log2;
	int fd;
};

struct mif_region {
	char *base;
	uint64_t size;
	int guard;                /* its SIGBUS guard (guard.h) plus one */
};

struct mif_priv {
	/* Taken by a sync of that direction (0 RX, 1 TX); the control
	 * channel changes the connection only holding both. */
	atomic_flag lk_rx __attribute__((aligned(PM_CACHELINE)));
	atomic_flag lk_tx __attribute__((aligned(PM_CACHELINE)));
	/* state is stored with release and loaded with acquire (the
	 * connection it names was set up before it); ctl_due, fault and
	 * lost are relaxed: hints to the control channel, which does its
	 * work holding both locks and looks anyway every MIF_SERVICE_MS. */
	_Atomic int state __attribute__((aligned(PM_CACHELINE)));
	_Atomic int ctl_due;      /* poll woke up on the control socket */
	_Atomic int fault;        /* a sync saw the peer break the protocol */
	/* server: a page of a region the peer gave was taken away under us
	 * (a hole punched in it; the guard's SIGBUS handler set this) */
	_Atomic uint32_t lost;
	bool events;              /* pktmap_fd() was called: RX interrupts on */
	int64_t next_service_ms;
	int64_t deadline_ms;      /* of the handshake step under way */
	int64_t next_try_ms;      /* client: next connect() */
	uint32_t backoff_us;      /* poll's safety timer */

	bool server;
	uint32_t id;
	char secret[MIF_SECRET_SZ + 1];
	struct sockaddr_un addr;
	socklen_t addrlen;
	char where[120];          /* the socket, for messages */
	bool bound;               /* a path socket this port created */
	dev_t sock_dev;
	ino_t sock_ino;
	/* A path socket's directory, opened once (O_PATH, not following a
	 * last link), and its name there: every later stat, connect, bind
	 * and unlink goes through it, so no swap of a directory on the path
	 * can move them elsewhere. */
	int dirfd;
	char base[sizeof(((struct sockaddr_un *)0)->sun_path)];

	int lfd, cfd, epfd, tfd;  /* listener, control, p->fd, timer */
	uint32_t nq, log2;        /* configured ring pairs and ring size */
	uint32_t run_c2s, run_s2c, run_log2;
	uint32_t step;            /* client: messages sent in MIF_SETUP */
	int down_errno;           /* client: last connect() failure logged */

	/* client: the rings' memfd of this connection, and the pool's */
	int rfd;
	char *rbase;
	size_t rsize;
	/* server: the peer's regions and rings */
	struct mif_region reg[MIF_MAX_REGIONS];
	int regfd[MIF_MAX_REGIONS];
	uint32_t nreg;
	struct mif_ring_req req[2][PM_MAX_RINGS]; /* [C2S, S2C][index] */

	/* memif.c's data path, for the control channel (both locks held):
	 * connect the rings of a new connection, detach them at its end
	 * (counting what was in flight). Hooks, so that the control channel
	 * depends on nothing of memif.c. */
	void (*attach)(struct pktmap_port *p);
	void (*detach)(struct pktmap_port *p);
	struct mif_q *q;          /* one per kring, in kring order */
	uint32_t nbufs_used;      /* buffers handed out from the pool */
	/* pktmap_stats' peer_*: written by the control channel (both locks
	 * held, pm_stat_inc), read by any thread (memif_stats) */
	uint64_t peer_errors;     /* protocol violations seen */
	uint64_t connects, disconnects;
	char peer_name[MIF_NAME_SZ + 1];
	char last_why[240];       /* the last handshake failure logged */
	int64_t last_why_ms;
	uint32_t why_repeats;     /* ... and how often since, not logged */
	struct pm_ratelimit rl;
};

/* memif_ctl.c */
/* Parse SOCKET[/ID], then listen (server) or try to connect (client). */
int mif_ctl_open(struct pktmap_port *p, const char *body, int abstract);
/* The port's buffer pool: a sealed memfd of nbufs buffers, as p->region. */
int mif_pool_create(struct pktmap_port *p, uint32_t nbufs, uint32_t buf_size);
void mif_ctl_close(struct pktmap_port *p);
/* Look at the control channel: accept, handshake, connect, retry, time
 * out, disconnect. Never blocks. Call holding both direction locks. */
void mif_service(struct pktmap_port *p);
/* Tear the connection down (both locks held), counting what was in flight. */
void mif_disconnect(struct pktmap_port *p, const char *why, bool tell);

/* Event-source mode (pktmap_fd()): arm the timer for the next connect()
 * try or handshake deadline, which nobody's poll_arm() does there. */
void mif_arm_ctl_timer(struct pktmap_port *p);
/* Arm the poll timer to fire once in us microseconds (at least 1). */
void mif_arm_timer(struct mif_priv *mi, int64_t us);

static inline struct mif_priv *mif(const struct pktmap_port *p)
{
	return p->priv;
}

int64_t mif_now_ms(void);

/* Offset of buffer idx in the pool region (region 1 of a client). */
static inline uint32_t mif_buf_ofs(const struct pktmap_port *p, uint32_t idx)
{
	return (uint32_t)(pm_region_buf(&p->region, idx) - (char *)p->region.base);
}

#endif /* PKTMAP_MEMIF_H */
