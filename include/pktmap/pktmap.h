/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap: netmap's data model and API on stock Linux, with no kernel module.
 *
 * A *port* is opened by name ("pipe:a{0", "null:", "pcap:in.pcap",
 * "xdp:eth0-2", ...). It exposes netmap's `struct netmap_if` and rings,
 * whose buffers live in a *region*; the application fills and drains slots with the inline
 * helpers of <pktmap/netmap_user.h> and moves whole batches across with
 * pktmap_txsync(), pktmap_rxsync() or pktmap_poll().
 *
 * Conventions: functions that can fail return 0 (or a count) on success and
 * a negative errno on failure; pktmap_strerror() turns that into words.
 * The library never prints and never exits: messages go to a log callback
 * the application installs (pktmap_set_log() or the open options).
 * Threads: on one port, one thread may call pktmap_rxsync() and use the
 * RX rings while another calls pktmap_txsync() and uses the TX rings
 * (each may pktmap_poll() for its own direction), and any thread may call
 * pktmap_stats() and pktmap_info() at any time. Two threads on one
 * direction of a port are not allowed: open one port per ring pair ("-N")
 * to give each thread its own. (docs/design.md, "Threads".)
 *
 * Trust: each open's netmap_if and rings are private to the process; a
 * peer sharing the region reaches only the buffer pool and the pipes'
 * descriptor queues, and everything read from those is checked inside the
 * sync call. Regions belong to the user who made them unless the port
 * name says @conf:share=group:NAME. (docs/design.md, "Trust model".)
 */
#ifndef PKTMAP_PKTMAP_H
#define PKTMAP_PKTMAP_H

#include <stddef.h>
#include <stdint.h>

#include "netmap.h"
#include "netmap_user.h"
#include <pktmap/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PKTMAP_EXPORT __attribute__((visibility("default")))

/* The cache line every pktmap layout aligns to (the queue of spsc.h, the
 * library's shared and published structures): the one definition. */
#define PKTMAP_CACHELINE 64


struct pktmap_port;

/* Log levels, lowest is most severe. */
enum pktmap_log_level {
	PKTMAP_LOG_ERR = 0,
	PKTMAP_LOG_WARN = 1,
	PKTMAP_LOG_INFO = 2,
	PKTMAP_LOG_DEBUG = 3,
};

/* A log callback receives one line, without its trailing newline. */
typedef void (*pktmap_log_fn)(void *ctx, enum pktmap_log_level level,
			      const char *msg);

/* Directions a port is opened for (the "/R" and "/T" suffixes). */
#define PKTMAP_DIR_RX 0x1u
#define PKTMAP_DIR_TX 0x2u
#define PKTMAP_DIR_BOTH (PKTMAP_DIR_RX | PKTMAP_DIR_TX)

/* Open flags. */
#define PKTMAP_OPEN_ZEROCOPY 0x1u  /* fail unless the port is zero-copy */
#define PKTMAP_OPEN_COPY 0x2u      /* force copy mode where there is a choice */
#define PKTMAP_OPEN_BUSY_POLL 0x4u /* busy-poll the device where supported */
/* Make the port an event source at open (see pktmap_fd()): the mode
 * change done explicitly, once, by the call that owns the port. */
#define PKTMAP_OPEN_EVENTS 0x8u
/* pkt: ports, for readers: RX slots point at the frames inside the
 * kernel's TPACKET_V3 blocks, where the kernel wrote them (no copy). The
 * RX rings then have their own geometry (nr_buf_size 1, buf_ofs at the
 * blocks), and a slot released with another buffer (NS_BUF_CHANGED) is
 * refused: no swapping. "@conf:rx=blocks" / "rx=frames" in the name win
 * over the flag. Other back ends ignore it. (docs/packet.md) */
#define PKTMAP_OPEN_RX_BLOCKS 0x10u
/* Bind the rings alone (netmap's NR_EXCLUSIVE, "/x"): refused while
 * another open binds them, and other opens are refused while this one
 * does. Pipes: their rings are otherwise shared by every open that
 * binds them, whose syncs take turns. (docs/netmap.md) */
#define PKTMAP_OPEN_EXCLUSIVE 0x20u
/* pkt: ports, for senders that write into their TX slots' buffers and
 * swap none (pktmap gen): each TX slot's buffer is a frame of the
 * kernel's TX ring, sent where it was written (no copy). A slot whose
 * buffer was swapped (another index than its own) is refused, and gets
 * its own back. "@conf:tx=frames" / "tx=copy" in the name win over the
 * flag. Other back ends ignore it. (docs/packet.md) */
#define PKTMAP_OPEN_TX_FRAMES 0x40u
/* Pipes, for programs that must never wait on another process (a
 * switch opening a client's port, a port opening its monitor's queue):
 * a lock another process holds (the region's, a ring's sync turn) is
 * tried once, never waited for. The open fails with -EBUSY; a sync
 * that cannot have its turn returns -EBUSY and moves nothing; a close
 * that cannot have the region's lock leaves the region's files to its
 * last user ('pktmap ports --gc' removes them once nobody holds it).
 * Other back ends ignore it. (docs/netmap.md) */
#define PKTMAP_OPEN_NOWAIT 0x80u

/*
 * Options for pktmap_open(). Zero means "the default" everywhere; values
 * given in the port name ("@conf:rings=2,slots=512") override these.
 * `sz` must be set to sizeof(struct pktmap_open_opts) so the structure can
 * grow without breaking callers.
 */
struct pktmap_open_opts {
	size_t sz;
	uint32_t dir;        /* PKTMAP_DIR_*; 0 = both */
	uint32_t flags;      /* PKTMAP_OPEN_* */
	uint32_t rings;      /* ring pairs to create (back ends that create) */
	uint32_t slots;      /* slots per ring */
	uint32_t bufs;       /* buffers in a region this open creates */
	uint32_t buf_size;   /* buffer stride in bytes (default 2048) */
	uint32_t extra_bufs; /* extra buffers linked from ni_bufs_head */
	int hugepages;       /* back a new region with hugepages */
	const char *region;  /* region name to create or join ("@mem:NAME") */
	pktmap_log_fn log;   /* per-port log callback (else the default) */
	void *log_ctx;
	char *errbuf;        /* if set, receives the one-line open error */
	size_t errbuf_len;
	/* With PKTMAP_OPEN_RX_BLOCKS: a block the kernel has begun is
	 * handed over when full or this many ms after its first frame
	 * (libpcap's read timeout; 0: 1 ms; "@conf:block-ms=" wins). */
	uint32_t rx_block_ms;
};

/* How a port moves packets. */
enum pktmap_mode {
	PKTMAP_MODE_ZEROCOPY = 0, /* buffers shared end to end */
	PKTMAP_MODE_COPY = 1,     /* the kernel copies once (AF_XDP copy mode) */
	PKTMAP_MODE_EMULATED = 2, /* a socket or file interface, one copy */
	PKTMAP_MODE_LIVE = 3,     /* xdp: TX through BPF_PROG_RUN live frames */
};

#define PKTMAP_INFO_EOF 0x1u       /* the source has ended (pcap file read) */
#define PKTMAP_INFO_PEER_GONE 0x2u /* pipe: the other end is not open */
/* pkt: RX slots point into the kernel's blocks (PKTMAP_OPEN_RX_BLOCKS):
 * the RX rings' nr_buf_size is 1 (buf_size and buf_usable describe the
 * TX buffers), a frame may be up to 65535 bytes, the 16 bytes before it
 * may be written (a pcap record header), nothing else. */
#define PKTMAP_INFO_RX_BLOCKS 0x4u

struct pktmap_info {
	size_t sz;
	char name[256];     /* the name the port was opened with */
	char backend[16];   /* "pipe", "null", "pcap", "xdp", ... */
	char region[64];    /* the region the buffers live in */
	enum pktmap_mode mode;
	const char *mode_name; /* "zerocopy", "copy", "emulated", "live" */
	uint32_t reg;       /* NR_REG_* */
	uint32_t dir;       /* PKTMAP_DIR_* the port was opened for */
	uint32_t tx_rings, rx_rings, host_tx_rings, host_rx_rings;
	uint32_t first_tx_ring, last_tx_ring; /* bound rings, inclusive, */
	uint32_t first_rx_ring, last_rx_ring; /* as netmap's nm_desc */
	uint32_t tx_slots, rx_slots;
	uint32_t buf_size;   /* stride between buffers (ring->nr_buf_size) */
	uint32_t buf_usable; /* bytes of packet one buffer can hold */
	uint32_t bufs;       /* buffers in the region */
	uint32_t linktype;   /* DLT of the frames (1 = Ethernet) */
	uint32_t flags;      /* PKTMAP_INFO_* */
	/* The longest frame without a VLAN tag TX sends: an interface's MTU
	 * + 14 as it was at open (pkt:, xdp:, tap:), 0 where the buffers
	 * alone bound it (buf_usable). A longer frame is counted in
	 * drop_too_long, never handed to a kernel that drops it silently.
	 * Added in 1.0 after the fields above (sz says whether it is
	 * there). */
	uint32_t tx_max_len;
	/* Which memory the buffers are in (the device and inode of the
	 * region's memory, 0 when the back end has none): two ports with
	 * the same pair share one buffer pool, so that a buffer index means
	 * the same buffer to both (zero-copy between them). The region's
	 * name does not say it: a region shared with a group and a private
	 * one may have the same name. Added in 1.0 after the fields above
	 * (sz says whether they are there). */
	uint64_t region_dev, region_ino;
};

/* Counters. Every packet that enters a sync call is counted exactly once:
 * as sent/received or under one drop reason. */
struct pktmap_stats {
	size_t sz;
	uint64_t tx_packets, tx_bytes;
	uint64_t rx_packets, rx_bytes;
	uint64_t tx_syncs, rx_syncs;
	uint64_t drop_invalid;   /* slots the checker rejected */
	uint64_t drop_too_long;  /* frames longer than the port can carry */
	uint64_t drop_backend;   /* lost by the kernel or device (reported) */
	uint64_t invalid_ring;   /* syncs refused: head or cur out of range */
	uint64_t poll_sleeps;    /* times pktmap_poll() slept */
	uint64_t wakeups_sent;   /* times this port woke a sleeping peer */
	uint64_t rx_copied;      /* pkt: frames copied into a buffer the
				  * application left in an RX slot */
	uint64_t rx_lent;        /* pkt: RX slots released with another
				  * buffer than the frame (NS_BUF_CHANGED) */
	/* Ports with a peer (memif): its comings and goings, and what it
	 * got wrong beyond the descriptors drop_invalid counts (ring
	 * indices that cannot be, malformed or refused control messages, a
	 * handshake not finished in time). Added in 1.0 after the fields
	 * above: a caller built with an older struct gets what its sz
	 * holds. */
	uint64_t peer_connects;
	uint64_t peer_disconnects;
	uint64_t peer_errors;
};

/* Frames a program drops on its own account (a forwarder with no room
 * towards a destination, its filter), beyond what the port counts. */
enum pktmap_drop_reason {
	PKTMAP_DROP_NO_SPACE = 1,   /* no room where the frame was going */
	PKTMAP_DROP_FILTERED = 2,   /* the program's filter refused it */
};

/* Open a port by name. On success *out holds the port and 0 is returned;
 * on failure a negative errno, and a one-line message naming the port,
 * the problem and the remedy goes to opts->errbuf when given, else to the
 * log callback (said once, never both). */
PKTMAP_EXPORT int pktmap_open(struct pktmap_port **out, const char *name,
			      const struct pktmap_open_opts *opts);

/* Close a port: rings and buffers go back to the region, the region is
 * unmapped, and removed when this was its last user. */
PKTMAP_EXPORT void pktmap_close(struct pktmap_port *port);

/* The port's interface descriptor. */
PKTMAP_EXPORT struct netmap_if *pktmap_nifp(const struct pktmap_port *port);

/* Submit the TX slots before head and reclaim sent ones, on every bound TX
 * ring. Never blocks. Returns 0, or -EINVAL when a ring's head or cur was
 * out of range (that ring is reset to its last valid state). */
PKTMAP_EXPORT int pktmap_txsync(struct pktmap_port *port);

/* Release the RX slots before head and fetch new packets, on every bound
 * RX ring. Never blocks. Returns 0 or a negative errno as pktmap_txsync. */
PKTMAP_EXPORT int pktmap_rxsync(struct pktmap_port *port);

/* The port as an event source, for an external event loop (poll, select,
 * epoll; pktmap_poll() is the simpler way and needs none of this):
 *
 *  - readable while an rxsync would find packets: packets arrived since
 *    the last rxsync, or it left some unread past cur (pipe); a capture
 *    file is always readable (a packet, or its end: PKTMAP_INFO_EOF);
 *  - writable while a txsync would find TX space. On a pipe this holds
 *    for a port opened for TX only ("/T"); a pipe port open both ways
 *    always reports POLLOUT (wait with pktmap_poll(POLLOUT) there);
 *  - no call is needed besides rxsync/txsync: each sync re-arms the
 *    wake-up when it leaves nothing to do.
 *
 * Level-triggered use is exact. Edge-triggered users (EPOLLET) must, after
 * each wake-up, rxsync and consume until an rxsync leaves the ring empty
 * (or txsync until it shows no space) before waiting again; that last,
 * empty sync is what re-arms the edge.
 *
 * Being an event source is a mode of the port, with a cost (a pipe's
 * writer then wakes this reader whenever its ring runs empty, even if it
 * never sleeps; a kernel socket's rxsync keeps an eventfd up to date).
 * Ask for it at open with PKTMAP_OPEN_EVENTS: pktmap_fd() then only
 * returns the descriptor. On a port opened without it, the first
 * pktmap_fd() switches the port into this mode (as in pktmap 1.0): call
 * it from the thread that owns the port, not beside a running sync.
 * Returns the fd or -errno. */
PKTMAP_EXPORT int pktmap_fd(struct pktmap_port *port);

/* One entry of pktmap_poll_many(). */
struct pktmap_pollreq {
	struct pktmap_port *port;
	short events;  /* POLLIN: RX packets wanted; POLLOUT: TX space */
	short revents; /* POLLIN, POLLOUT, POLLHUP (source ended), POLLERR */
};

/* Sync the way netmap's poll() does (txsync for POLLOUT, rxsync for
 * POLLIN) and, if nothing is ready, sleep until something is or
 * timeout_ms passes (-1: forever). Returns the number of ready entries
 * (0 on timeout) or a negative errno. Peers are woken only when they sleep. */
PKTMAP_EXPORT int pktmap_poll_many(struct pktmap_pollreq *reqs, unsigned n,
				   int timeout_ms);

/* pktmap_poll_many() on one port: returns its revents, 0 on timeout, or a
 * negative errno. */
PKTMAP_EXPORT int pktmap_poll(struct pktmap_port *port, short events,
			      int timeout_ms);

/* Describe the port. `info->sz` must be set by the caller: a caller built
 * against an older, smaller struct gets the fields it knows, and sz is set
 * to the bytes filled. */
PKTMAP_EXPORT int pktmap_info(const struct pktmap_port *port,
			      struct pktmap_info *info);

/* Publish the running total of frames the program dropped for `why` on
 * this port (a counter: pass the total so far, never less than before).
 * Every open port publishes its counters where `pktmap top` and `pktmap
 * metrics` read them (docs/metrics.md); this adds the program's own
 * drops to the port's. Any thread may call it; it costs one store.
 * Returns 0, or -EINVAL for a bad port or reason. */
PKTMAP_EXPORT int pktmap_set_drops(struct pktmap_port *port,
				   enum pktmap_drop_reason why, uint64_t total);

/* Read the port's counters. `stats->sz` must be set by the caller (a
 * smaller, older struct gets the counters it knows, as pktmap_info()). */
PKTMAP_EXPORT int pktmap_stats(const struct pktmap_port *port,
			       struct pktmap_stats *stats);

/* Which received frames a port's RX rings see (pkt: ports): the frames
 * the interface receives (IN, the default), those it sends (OUT: other
 * programs' and the host's, never this port's own), or both (INOUT, as
 * libpcap's default). Other back ends have IN only (-EOPNOTSUPP). */
#define PKTMAP_RX_IN 1u
#define PKTMAP_RX_OUT 2u
#define PKTMAP_RX_INOUT 3u
PKTMAP_EXPORT int pktmap_set_rx_direction(struct pktmap_port *port,
					  unsigned dir);

/* Have the kernel run a classic BPF program (struct sock_filter[n], the
 * layout of libpcap's struct bpf_insn; n = 0 removes it) on every frame
 * before it reaches the RX rings (pkt: ports; SO_ATTACH_FILTER). A
 * nonzero "ret #k" accepts the whole frame: cut to a snapshot length
 * yourself. Returns the frames already queued, which the filter has not
 * seen (filter those yourself), -EOPNOTSUPP where the back end has no
 * kernel filter, or another negative errno (the kernel refused it). */
PKTMAP_EXPORT int pktmap_set_rx_filter(struct pktmap_port *port,
				       const void *insns, unsigned n);

/* Words for a negative errno returned by this library. */
PKTMAP_EXPORT const char *pktmap_strerror(int err);

/* The version of the library the program runs with, "MAJOR.MINOR.PATCH"
 * (PKTMAP_VERSION is that of the headers it was built with). */
PKTMAP_EXPORT const char *pktmap_version(void);

/* Install the default log callback for ports opened without one. NULL
 * silences the library (the initial state). */
PKTMAP_EXPORT void pktmap_set_log(pktmap_log_fn fn, void *ctx,
				  enum pktmap_log_level max_level);

/* A back end as `pktmap ports` lists it. */
struct pktmap_backend_desc {
	const char *name;    /* "pipe" */
	const char *syntax;  /* "pipe:NAME{N | pipe:NAME}N" */
	const char *mode;    /* "zerocopy" */
	const char *summary; /* one line */
};

/* A port name taken apart by the library's own parser (the grammar of
 * pktmap_open(): BACKEND:BODY[-N|^|^N|*|{N|}N[-R]][/FLAGS][@conf:..][@mem:..]),
 * for programs that derive names from names. `sz` must be set by the
 * caller. */
struct pktmap_name {
	size_t sz;
	char backend[16];    /* "xdp" */
	char body[256];      /* the interface, pipe name or file path */
	uint32_t reg;        /* NR_REG_* */
	int ring;            /* the one ring selected, or -1 */
	int pipe_id;         /* {N / }N: N, or -1 */
	uint32_t dir;        /* PKTMAP_DIR_* from /R, /T (0: not said) */
	uint32_t flags;      /* PKTMAP_OPEN_* from /Z, /C */
	uint32_t port_len;   /* chars of BACKEND:BODY and its ring selector:
			      * where /FLAGS and @options begin in the name */
	char region[64];     /* @mem:NAME, or "" */
	uint32_t bufs;       /* @conf:bufs=N, or 0 when not given */
};

/* Parse `name` as pktmap_open() would. Returns 0, or -EINVAL with the
 * one-line reason in errbuf (when given). */
PKTMAP_EXPORT int pktmap_name_parse(const char *name, struct pktmap_name *out,
				    char *errbuf, size_t errlen);

/* The i-th back end, or NULL past the last. */
PKTMAP_EXPORT const struct pktmap_backend_desc *pktmap_backend(unsigned i);

/* The caller's own directory, /dev/shm/pktmap-EUID (mode 0700, made if
 * missing): the files of its private regions and pipes and its switches'
 * sockets live there, where no other user can create a name first. A
 * squatter's entry of that name is moved away when the caller is root;
 * for another user it is an error (-EPERM, with the squatter's uid in
 * errbuf). Returns 0 with the path in out, or -errno. */
PKTMAP_EXPORT int pktmap_user_dir(char *out, size_t len, char *errbuf,
				  size_t errlen);

/* A named region, as pktmap_regions() reports it. */
struct pktmap_region_desc {
	char name[64];    /* as in "@mem:NAME" (pipes: "pipe.PIPENAME") */
	char path[128];   /* its file: /dev/shm/pktmap-UID/NAME, or with
			   * share=, /dev/shm/pktmap-gGID/NAME */
	uint64_t size;    /* bytes of its memory (the sealed memfd's) */
	int in_use;       /* some process has it open */
	int removed;      /* gc: it was unused and has been removed */
};

/* List up to `max` of the caller's named regions (files owned by its
 * effective uid; other users' are neither listed nor touched) into out[]
 * and return how many there are (which may exceed max). With gc nonzero,
 * regions no process holds (left by a process that was killed) are
 * removed, each file by its exact name. Never waits for a lock. */
PKTMAP_EXPORT int pktmap_regions(struct pktmap_region_desc *out, unsigned max,
				 int gc);

#ifdef __cplusplus
}
#endif

#endif /* PKTMAP_PKTMAP_H */
