/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Library internals: the region, the parsed port name, the per-ring state
 * a back end keeps (the "kring", as in netmap), and the table of functions
 * every back end provides. Nothing here is exported.
 */
#ifndef PKTMAP_INTERNAL_H
#define PKTMAP_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "pktmap/pktmap.h"
#include "check.h"
#include "pub.h"
#include "util.h"

/* pktmap.h's PKTMAP_CACHELINE, by the library's short name (memif.h). */
#define PM_CACHELINE PKTMAP_CACHELINE
#define PM_DEFAULT_BUF_SIZE 2048u
#define PM_DEFAULT_SLOTS 1024u
#define PM_MAX_RINGS 64u
#define PM_MAX_SLOTS 65536u
#define PM_NAME_MAX 256
#define PM_DEFAULT_SPIN_US 50u
/* Where AF_XDP puts a received frame in its chunk (XDP_PACKET_HEADROOM). */
#define PM_XDP_HEADROOM 256u

#define pm_likely(x) __builtin_expect(!!(x), 1)
#define pm_unlikely(x) __builtin_expect(!!(x), 0)
/* Tell the CPU we are spinning. */
static inline void pm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

#define PM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* Port names: BACKEND:BODY[-N|^|*|{N|}N][/FLAGS][@conf:k=v,...][@mem:R] */

struct pm_conf {
	uint32_t tx_rings, rx_rings;       /* 0 = back end's default */
	uint32_t host_tx_rings, host_rx_rings;
	uint32_t tx_slots, rx_slots;
	uint32_t bufs, buf_size, extra_bufs;
	int hugepages;                     /* -1 unset, 0, 1 */
	int loop;                          /* pcap: replay the file forever */
	uint32_t linktype;                 /* pcap writing: DLT (0 = Ethernet) */
	int nanosec;                       /* pcap writing: -1 unset, 0 us, 1 ns */
	uint32_t spin_us;                  /* poll: spin this long before sleeping */
	int spin_set;                      /* spin_us was given */
	int tx_live;                       /* xdp: tx=live (1), tx=xsk (0), -1 unset */
	int rx_blocks;                     /* pkt: rx=blocks (1), rx=frames (0), -1 unset */
	int tx_frames;                     /* pkt: tx=frames (1), tx=copy (0), -1 unset */
	uint32_t block_ms;                 /* pkt: block-ms (0 = unset) */
	char region[64];                   /* "" = the back end's choice */
	bool share;                        /* share=group:G given */
	uint32_t share_gid;
	uint32_t headroom;                 /* back end's own: 0 = default */
	bool rx_no_bufs;                   /* back end's own: RX slots get no
					    * buffers (pkt: rx=blocks) */
	/* memif: */
	int role;                          /* -1 unset, 0 client, 1 server */
	int abstract;                      /* -1 unset: abstract socket name */
	char secret[25];                   /* "" = none */
};

struct pm_name {
	char backend[16];
	char body[PM_NAME_MAX]; /* interface, pipe name or file path */
	uint32_t reg;           /* NR_REG_* */
	int ring;               /* NR_REG_ONE_NIC / ONE_SW: the ring; else -1 */
	int pipe_id;            /* NR_REG_PIPE_*: the pipe number */
	uint32_t dir;           /* PKTMAP_DIR_* from "/R", "/T" (0: both) */
	uint32_t flags;         /* PKTMAP_OPEN_* from "/Z", "/C" */
	uint32_t mon;           /* PM_MON_* from "/r", "/t", "/z": a monitor */
	uint32_t port_len;      /* BACKEND:BODY and its ring selector: where
				 * "/FLAGS" and "@..." options begin */
	struct pm_conf conf;
};

/* An interface ioctl (SIOCGIFMTU, SIOCSIFFLAGS, ...) on a socket of its
 * own: sets ifr->ifr_name, leaves the rest as the caller filled it (a
 * SIOCS* after a SIOCG* keeps what was read). Returns 0 or -errno. */
struct ifreq;
int pm_if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr);
/* SIOCETHTOOL with `cmd` (a struct ethtool_* starting with its .cmd) as
 * the data, read and written in place. Returns 0 or -errno. */
int pm_if_ethtool(const char *ifname, void *cmd);

/* Parse a port name. Returns 0, or -EINVAL with a one-line message in err. */
int pm_name_parse(const char *name, struct pm_name *out, char *err,
		  size_t errlen);

/* ------------------------------------------------------------------ */
/* Regions: one shared mapping of interface descriptors, rings, buffers. */

struct pm_region_hdr; /* lives at offset 0 of the mapping, see region.c */

struct pm_region {
	int fd;              /* the file: locks (and the memory, unless sealed) */
	int mfd;             /* the memory: a sealed memfd, or fd */
	bool sealed;         /* memory in a sealed memfd, fd only rendezvous */
	void *base;          /* start of the mapping */
	size_t size;
	struct pm_region_hdr *hdr;
	char *pool;          /* buffer 0 of the pool (without headroom) */
	uint32_t buf_size;   /* stride between buffers */
	uint32_t headroom;   /* bytes before the frame in each buffer */
	uint32_t nbufs;      /* buffers in the pool, including 0 and 1 */
	/* Where the free-buffer stack and the object area are: private
	 * copies taken once at open, never read back from the header. */
	uint64_t free_ofs, obj_ofs, obj_end;
	bool created;        /* this open made the region (or remade it) */
	bool named;          /* lives in /dev/shm and can be joined */
	bool share;          /* shared with the group share_gid */
	uint32_t share_gid;
	bool nowait;         /* pm_region_lock() tries once, never waits */
	struct pm_serve *serve; /* shared: hands the memfd to the group */
	pid_t reaping;       /* pid of the opener whose cleaner waits on
	                      * reap_go (reap.c), or 0 */
	int reap_go, reap_done;
	uint64_t reap_dev, reap_ino; /* the file a close left, for its cleaner */
	/* A hugetlb region others hold too: its SIGBUS guard (guard.h)
	 * plus one (0: none), and the mark the guard sets when a page of
	 * it was taken away (2 once the port said so). */
	int guard;
	_Atomic uint32_t lost;
	char name[64];
	char path[128];
};

struct pm_region_params {
	uint32_t bufs;       /* total buffers wanted */
	uint32_t buf_size;   /* stride */
	uint32_t headroom;   /* bytes reserved at the start of each buffer */
	bool exact_headroom; /* joining: refuse a region with another headroom */
	size_t obj_size;     /* bytes for descriptors, rings, control blocks */
	int hugepages;
	/* Who may use a named region besides its owner: nobody (files
	 * 0600), or with share the group share_gid (files 0660). */
	bool share;
	uint32_t share_gid;
	/* Memory the open maps besides the region (its private rings), and
	 * whether the kernel pins the region (an AF_XDP UMEM): both count in
	 * the check made before anything is mapped (pm_mem_check). */
	size_t ring_bytes;
	bool pinned;
	/* PKTMAP_OPEN_NOWAIT: the region's lock is tried, never waited
	 * for, at open, at close and by pm_region_lock(). */
	bool nowait;
};

/* Would `want` bytes more fit in what the machine, the memory cgroup and
 * RLIMIT_AS allow (hugepages: the free hugepages; pinned: RLIMIT_MEMLOCK
 * too, unless CAP_IPC_LOCK)? Returns 0, or -ENOMEM with err set to
 * "needs X of memory but Y fit (LIMIT): ..." (bounds.c). */
int pm_mem_check(uint64_t want, bool huge, bool pinned, char *err,
		 size_t errlen);

/* The caller's own directory for the files of its regions and switches,
 * /dev/shm/pktmap-EUID (mode 0700; made if missing; a squatter's entry of
 * that name is moved away when the caller is root, any other user uses
 * its own /dev/shm/pktmap-EUID.XXXXXX instead). Returns 0 with the path
 * in out, or -errno with err set (userdir.c). */
int pm_user_dir(char *out, size_t len, char *err, size_t errlen);

/* The same for the directory /dev/shm/BASEUID (pm_user_dir() is BASE
 * "pktmap-"; a squatted name makes /dev/shm/BASEUID.XXXXXX). */
int pm_owned_dir(const char *base, char *out, size_t len, char *err,
		 size_t errlen);

/* The first (by name) entry of /dev/shm whose name starts with prefix
 * and whose lstat() ok() accepts, into out as a path; false when there is
 * none (userdir.c). */
struct stat;
bool pm_shm_first(const char *prefix,
		  bool (*ok)(const struct stat *st, uint32_t arg), uint32_t arg,
		  char *out, size_t len);

/* The directory of the regions shared with group gid,
 * /dev/shm/pktmap-gGID (group gid, mode 3770; made if missing; when its
 * name is taken by anything that is not a directory of gid's, the first
 * of gid's directories /dev/shm/pktmap-gGID.XXXXXX, made if none).
 * Returns 0 with the path in out, or -errno with err set (groupdir.c). */
int pm_group_dir(uint32_t gid, char *out, size_t len, char *err,
		 size_t errlen);
/* Remove dir if it is gid's directory of the group's own name and empty
 * (its last region went); a spare stays. */
void pm_group_dir_drop(const char *dir, uint32_t gid);

/* Create or join the region `name` (NULL or "": a private memfd region).
 * Joining checks that the existing region is compatible with `p` only when
 * the caller asked for specific values. Returns 0 or -errno with err set. */
int pm_region_open(struct pm_region *r, const char *name,
		   const struct pm_region_params *p, char *err, size_t errlen);
void pm_region_close(struct pm_region *r);
/* The sync of port p on a region that lost memory under it (r->lost,
 * guard.h): one log line the first time, and -EFAULT every time. */
int pm_region_lost(struct pktmap_port *p, struct pm_region *r);

/* An open-file-description lock on the one byte at `start` of fd (F_WRLCK,
 * F_RDLCK or F_UNLCK), waiting for it or not. Dropped by the kernel when
 * the file is closed, also by a process killed with SIGKILL. Returns 0,
 * -EBUSY when held elsewhere (not waiting), or -errno. */
int pm_ofd_lock(int fd, short type, off_t start, bool wait);

/* How long a waiting lock waits before giving up with -ETIMEDOUT: a lock
 * is held for microseconds, so a holder this slow is stuck or hostile. */
#define PM_LOCK_DEADLINE_MS 5000

/* Is the open file fd one this process may trust: a regular file (or a
 * FIFO when fifo), owned by our effective uid with no access for others
 * (mode 0600), or, with share, owned by the group share_gid with no
 * access for others? Returns 0 or -EPERM with err set ("PATH belongs to
 * uid N ..."). */
int pm_file_trusted(int fd, const char *path, bool fifo, bool share,
		    uint32_t share_gid, char *err, size_t errlen);

/* Serialise structural changes (allocations, directory) among all the
 * processes of the region. Not for fast paths. Waits up to
 * PM_LOCK_DEADLINE_MS (-ETIMEDOUT), or, for a region opened with
 * nowait, not at all (-EBUSY). */
int pm_region_lock(struct pm_region *r);
void pm_region_unlock(struct pm_region *r);

/* Find or create the object `key` of `size` bytes (cache-line aligned,
 * zeroed when created). *created says which. Call under the lock.
 * Returns the offset from the region's base, or 0 when out of room. */
uint64_t pm_region_object(struct pm_region *r, const char *key, size_t size,
			  bool *created);

/* Find the object `key`: its offset (and size), or 0. Under the lock. */
uint64_t pm_region_lookup(struct pm_region *r, const char *key, size_t *size);

/* Take n buffers from the region's free list into idx[]. Under the lock.
 * Returns 0 or -ENOMEM (nothing taken). */
int pm_region_alloc_bufs(struct pm_region *r, uint32_t *idx, uint32_t n);
/* Give buffers back. Indices that are not valid buffers are ignored. */
void pm_region_free_bufs(struct pm_region *r, const uint32_t *idx, uint32_t n);
uint32_t pm_region_free_count(struct pm_region *r);

/* Take an exclusive claim on `slot` (a small integer chosen by the back end)
 * that is released automatically when the process dies. Returns 0 or
 * -EBUSY. */
int pm_region_claim(struct pm_region *r, uint32_t slot);
/* A claim several processes may hold together; it excludes (and is
 * excluded by) pm_region_claim() on the same slot. */
int pm_region_claim_shared(struct pm_region *r, uint32_t slot);
void pm_region_unclaim(struct pm_region *r, uint32_t slot);
/* True if some process (this one included) holds the claim. */
bool pm_region_claimed(struct pm_region *r, uint32_t slot);

static inline void *pm_region_ptr(const struct pm_region *r, uint64_t ofs)
{
	return (char *)r->base + ofs;
}

static inline char *pm_region_buf(const struct pm_region *r, uint32_t idx)
{
	return r->pool + (size_t)idx * r->buf_size + r->headroom;
}

/* Bytes of the object area needed for a netmap_if + rings. */
size_t pm_nifp_size(uint32_t ntx, uint32_t nrx, uint32_t nhtx, uint32_t nhrx);
size_t pm_ring_size(uint32_t slots);

/* ------------------------------------------------------------------ */
/* Ports */

/* Per-ring state, private to the process that owns the ring. hwcur and
 * hwtail are the library's own copies of the ring's boundaries (netmap's
 * nr_hwcur/nr_hwtail); rhead/rcur/rtail are what the last sync handed to
 * the application (the values the checker compares against). */
struct pm_kring {
	struct netmap_ring *ring;
	uint32_t nslots;
	uint32_t id;        /* index in the port's ring table */
	uint32_t hwcur, hwtail;
	uint32_t rhead, rcur, rtail;
	uint32_t tx;        /* 1 for a TX ring */
	uint32_t host;      /* 1 for a host ring */
	void *priv;         /* back end's per-ring state */
	/* The ring's counters, in the port's published page (pub.h): only
	 * the thread that owns the ring writes them, with pm_stat_add(). */
	struct pm_ring_stats *st;
	/* The ring's buffers when they are not the port's (pkt:'s RX
	 * blocks, a ring geometry of its own); NULL: p->bs. */
	const struct pm_bufspace *bs;
	/* This ring's sync: the back end's txsync or rxsync, unless the back
	 * end gave the ring its own (xdp's host rings, pm_ring_ops). */
	int (*sync)(struct pktmap_port *p, struct pm_kring *k);
};

/* The syncs of a kind of ring that is not the port's own (an xdp port's
 * host rings): set on its krings after pm_port_bind_krings(). */
struct pm_ring_ops {
	int (*txsync)(struct pktmap_port *p, struct pm_kring *k);
	int (*rxsync)(struct pktmap_port *p, struct pm_kring *k);
};

struct pktmap_port;
struct sock_filter;

/* The functions every back end provides (the role of a netmap driver). */
struct pm_port_ops {
	struct pktmap_backend_desc desc;
	/* Which name forms the back end accepts: PM_CAP_*. */
	uint32_t caps;
	/* Parse the body of the name, set up rings in p->region, p->nifp,
	 * p->krings. Returns 0 or -errno with a message via pm_open_error(). */
	int (*open)(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *o);
	/* Move [hwcur, ring->head) out and refresh hwtail. Called with head
	 * and cur already checked. Returns 0 or -errno. */
	int (*txsync)(struct pktmap_port *p, struct pm_kring *k);
	/* Release [hwcur, ring->head), fetch new packets into [hwtail, ...). */
	int (*rxsync)(struct pktmap_port *p, struct pm_kring *k);
	/* Before sleeping in poll: arm the wake-up for `events` and check
	 * once more (after a full barrier) whether something is ready.
	 * Returns nonzero when it is. May be NULL (always sleep on the fd). */
	int (*poll_arm)(struct pktmap_port *p, short events);
	/* After waking: disarm what poll_arm armed for `events` and drain
	 * those wake-ups (and only those: another thread may be sleeping on
	 * the other direction). May be NULL. */
	void (*poll_disarm)(struct pktmap_port *p, short events);
	/* The fd to sleep on for `events`, and the poll events to wait for
	 * on it in *pev (POLLIN unless set). May be NULL (p->fd, POLLIN). */
	int (*poll_fd)(const struct pktmap_port *p, short events, short *pev);
	/* pktmap_fd(): turn the port into an event source (the first call)
	 * and return the descriptor to hand out. From then on every sync
	 * calls sync_event. May be NULL (p->fd, which the kernel or the back
	 * end keeps readable and writable as pktmap_fd() promises). */
	int (*event_fd)(struct pktmap_port *p);
	/* After each sync of ring k once event_fd was called: keep the fd
	 * readable (or writable) exactly while an rxsync (txsync) would find
	 * something, arming the peer's wake-up when it would not. */
	void (*sync_event)(struct pktmap_port *p, struct pm_kring *k);
	/* Add back-end facts to info (mode, linktype, flags). May be NULL. */
	void (*info)(const struct pktmap_port *p, struct pktmap_info *info);
	/* Have the kernel filter received frames with a classic BPF program
	 * (struct sock_filter[n], n = 0: none). Returns the frames already
	 * queued that it has not seen, or -errno. May be NULL. */
	int (*rx_filter)(struct pktmap_port *p, const struct sock_filter *insns,
			 unsigned n);
	/* Which frames RX sees: PKTMAP_RX_*. May be NULL (only "in"). */
	int (*rx_direction)(struct pktmap_port *p, unsigned dir);
	/* Add back-end counters (kernel drops). May be NULL. */
	void (*stats)(const struct pktmap_port *p, struct pktmap_stats *st);
	void (*close)(struct pktmap_port *p);
};

#define PM_CAP_ONE_RING 0x01   /* "-N" */
#define PM_CAP_HOST 0x02       /* "^" and "*" */
#define PM_CAP_PIPE 0x04       /* "{N" and "}N" (the pipe back end) */
#define PM_CAP_PATH 0x08       /* the body is a file path */
#define PM_CAP_EMPTY_BODY 0x10 /* "null:" */
#define PM_CAP_ZEROCOPY 0x20   /* "/Z" can be honoured */
#define PM_CAP_FD_EXACT 0x40   /* p->fd already is what pktmap_fd() promises */
				/* (per port: p->fd_exact, set by open) */

/* Counters: a port may be driven by two threads (one owns the RX rings,
 * one the TX rings) while a third reads pktmap_stats() and other
 * processes read the published page (pub.h). A ring's counters (k->st)
 * are written only by the ring's owner: pm_stat_add(), a relaxed load and
 * store, no locked instruction. The port's own (p->stats: invalid rings,
 * wake-ups, sleeps) any thread may write: pm_stat_inc(). */
static inline void pm_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

static inline void pm_stat_inc(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* A sync moved pkts frames of bytes bytes on ring k. */
static inline void pm_count(struct pm_kring *k, uint64_t pkts, uint64_t bytes)
{
	pm_stat_add(&k->st->packets, pkts);
	pm_stat_add(&k->st->bytes, bytes);
}

/* At most one log line a second; any thread may use it. */
struct pm_ratelimit {
	_Atomic int64_t last;
	_Atomic uint64_t suppressed;
};

struct pktmap_port {
	const struct pm_port_ops *ops;
	struct pm_region region;
	struct netmap_if *nifp;
	struct pm_kring *krings;   /* NIC tx, host tx, NIC rx, host rx */
	uint32_t ntx, nhtx, nrx, nhrx;
	uint32_t first_tx, last_tx; /* bound ring ranges, inclusive, indices */
	uint32_t first_rx, last_rx; /* into krings (rx counted from 0)       */
	uint32_t reg, dir;
	struct pm_bufspace bs;     /* what the checker allows */
	enum pktmap_mode mode;
	uint32_t linktype;
	/* The longest untagged frame TX sends, as open found it: an
	 * interface's MTU + 14 (pkt:, xdp:, tap:); 0 where the buffers
	 * alone bound it. pktmap_info()'s tx_max_len. */
	uint32_t tx_max_len;
	uint32_t info_flags;       /* atomic: any thread may read it */
	int fd;                    /* pollable, owned by the back end */
	bool fd_exact;             /* p->fd is what pktmap_fd() promises */
	int event_fd;              /* pktmap_fd() was called: its result */
	bool events;               /* ... and sync_event runs after syncs */
	/* For back ends without sync_event (kernel descriptors): an epoll
	 * set of their fd and an eventfd that holds a count exactly while
	 * the last rxsync left packets unread (see pktmap_fd()). */
	int ev_set, ev_unread;
	bool ev_unread_set;
	uint32_t spin_us;          /* pktmap_poll() spins this long first */
	/* Set by poll_arm: sleep at most this long (ms), 0 = no bound (a
	 * kernel that gives no wake-up for what is awaited: pkt:'s TX
	 * while its link is down). */
	int poll_cap_ms;
	uint32_t extra_bufs;       /* taken for ni_bufs_head at open */
	bool own_rings;            /* rings made by pm_port_own_rings() */
	void *ringmem;             /* the private netmap_if + rings */
	size_t ringmem_size;
	/* The published page (pub.h, src/pub.c): the port's counters live
	 * there, p->stats the port's own line, each kring's st its ring's. */
	struct pm_pub_hdr *pub;
	size_t pub_size;
	struct pm_port_stats *stats;
	char pub_path[64];         /* "" when not published (private page) */
	/* The kernel's drop counters (ops->stats) are read under this lock:
	 * by pktmap_stats(), and about once a second by the RX path, which
	 * only tries it (never waits). */
	pthread_mutex_t kstats_lock;
	uint32_t rx_calls;         /* rxsyncs since the last look at the clock */
	int64_t kstats_sec;        /* when the RX path last read them */
	pktmap_log_fn log;
	void *log_ctx;
	int log_level;
	struct pm_ratelimit rl_slot, rl_ring; /* TX (and back ends' own use) */
	struct pm_ratelimit rl_rx_slot, rl_rx_ring; /* RX: the checker, pipes */
	char *errbuf;
	size_t errbuf_len;
	char name[PM_NAME_MAX];
	void *priv;                /* back end's state */
	void *priv2;               /* a back end wrapping another's (vale) */
	struct pm_mon *mon;        /* src/monitor.c: watching or watched */
};

/* info_flags: set by a sync path, read by any thread (pktmap_info()). */
static inline uint32_t pm_info_flags(const struct pktmap_port *p)
{
	return __atomic_load_n(&p->info_flags, __ATOMIC_RELAXED);
}

static inline void pm_info_set(struct pktmap_port *p, uint32_t f)
{
	__atomic_fetch_or(&p->info_flags, f, __ATOMIC_RELAXED);
}

/* The checker's rate limiters, one per direction: a flood of bad TX
 * slots does not hold back the RX thread's lines. */
static inline struct pm_ratelimit *pm_rl_slot(struct pktmap_port *p, int tx)
{
	return tx ? &p->rl_slot : &p->rl_rx_slot;
}

static inline struct pm_ratelimit *pm_rl_ring(struct pktmap_port *p, int tx)
{
	return tx ? &p->rl_ring : &p->rl_rx_ring;
}

static inline struct pm_kring *pm_txkring(struct pktmap_port *p, uint32_t i)
{
	return &p->krings[i];
}

static inline struct pm_kring *pm_rxkring(struct pktmap_port *p, uint32_t i)
{
	return &p->krings[p->ntx + p->nhtx + i];
}

/* Give one ring buffers of its own: NETMAP_BUF(ring, i) is then
 * base + i * stride (pkt:'s RX blocks: stride 1, base the blocks). */
void pm_ring_set_bufs(struct netmap_ring *ring, const void *base,
		      uint32_t stride);

/* Lay out the port's netmap_if and its rings (ntx TX, nhtx host TX, nrx
 * RX, nhrx host RX, in netmap's order) in memory private to this open: an
 * anonymous mapping no other process can write. Every layout value (ring
 * offsets, slot counts, buf_ofs towards p->region's pool) is computed here
 * and kept in p->krings; none is read back from the rings. Slots get no
 * buffers (buf_idx 0): the back end fills them. Sets p->nifp, p->krings
 * and the ring counts. Returns 0 or -errno with the open error set. */
int pm_port_make_rings(struct pktmap_port *p, const char *ifname,
		       uint32_t ntx, uint32_t nrx, uint32_t nhtx, uint32_t nhrx,
		       uint32_t tx_slots, uint32_t rx_slots);

/* For back ends that own their rings alone (null, pcap, pkt, tap): open a
 * private region (or the one @mem: names), lay out a netmap_if with ntx TX
 * and nrx RX rings filled with buffers, and bind the krings. The buffers go
 * back to a shared region at pktmap_close(). Returns 0 or -errno with the
 * open error set. */
int pm_port_own_rings(struct pktmap_port *p, const struct pm_conf *c,
		      const char *tag, const char *ifname, uint32_t ntx,
		      uint32_t nrx, uint32_t txs, uint32_t rxs);

/* Give the buffers of the rings pm_port_own_rings() filled back to a
 * shared region (pktmap_close(), a failed open). */
void pm_port_own_rings_put(struct pktmap_port *p);

/* The published counters (src/pub.c). pm_pub_open() maps the page for
 * the port's rings (called by pm_port_make_rings(), once the krings
 * exist) and points p->stats and each kring's st into it: a file in the
 * user's directory when it can, else private memory (the port works the
 * same, it is just not seen by pktmap top). pm_pub_ready() fills in who
 * and what (from `info`, the port's pktmap_info()) once the open
 * succeeded and makes the file visible; pm_pub_close() removes it.
 * pm_pub_open() returns 0 or -ENOMEM. */
int pm_pub_open(struct pktmap_port *p);
void pm_pub_ready(struct pktmap_port *p, const struct pktmap_info *info);
void pm_pub_close(struct pktmap_port *p);
/* The caller's counters directory (made if missing; taken back from a
 * squatter as pm_owned_dir() does), opened: its path in dir. Returns the
 * descriptor or -errno. */
int pm_pub_dir(char *dir, size_t len);

/* Logging from inside the library (through the port's callback):
 * src/util_log.c, below everything else in the library. */
void pm_log(const struct pktmap_port *p, enum pktmap_log_level lvl,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* At most one line a second per limiter; the count of the lines held
 * back is appended to the next one. */
void pm_log_ratelimited(struct pktmap_port *p, struct pm_ratelimit *rl,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record the one-line open error "NAME: what: remedy" and return err. */
int pm_open_error(struct pktmap_port *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Monitors (src/monitor.c): "PORT/r", "/t", "/rt" open a monitor of an
 * open port PORT (a copy of each frame it receives, transmits, or both),
 * "/z" is refused. pm_monitor_open() serves pktmap_open() for such a
 * name (p: the open so far, for its error line). pm_monitor_sync() is
 * the sync of ring k of a port whose published monitor word is set.
 * pm_monitor_close() ends either side. */
#define PM_MON_RX 1u
#define PM_MON_TX 2u
#define PM_MON_ZCOPY 4u
/* The public calls a monitor makes on its queue, handed down by port.c
 * (the layer above monitor.c). */
struct pm_api {
	int (*open)(struct pktmap_port **out, const char *name,
		    const struct pktmap_open_opts *opts);
	void (*close)(struct pktmap_port *p);
	int (*txsync)(struct pktmap_port *p);
};
int pm_monitor_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *opts, struct pktmap_port **out,
		    const struct pm_api *api);
int pm_monitor_sync(struct pktmap_port *p, struct pm_kring *k,
		    const struct pm_api *api);
void pm_monitor_close(struct pktmap_port *p);

/* The back end called `name`, or NULL (backends.c holds the table). */
const struct pm_port_ops *pm_backend_find(const char *name);

#ifdef PM_TEST_HOOKS
/* Tests only (libpktmap_internal; not in the shipped library): the
 * descriptors (8 bytes each, buf_idx first) that feed RX ring `ring` of
 * a pipe end, in the shared region: what a peer may scribble on. */
uint32_t *pm_pipe_peer_desc(struct pktmap_port *p, uint32_t ring);
/* When set, a pipe TX sync that moved slots stops itself (SIGSTOP) with
 * its descriptors written and nothing published: a test kills it there. */
extern int pm_pipe_tx_stall;
/* The same for an RX sync that received packets: it stops with its
 * releases published and its new packets not. */
extern int pm_pipe_rx_stall;
/* The region's header as a peer could write it: the free stack's top,
 * and region_hdr_sane() on a copy of r's header with fields set as `set`
 * says ("nbufs=3 headroom=0"; fields: magic, version, size, buf_size,
 * headroom, nbufs, free_ofs, obj_ofs, obj_end, pool_ofs, ndir): 1 sane,
 * 0 refused, -1 a field it does not know. */
uint32_t *pm_region_free_top(struct pm_region *r);
int pm_region_hdr_sane_with(const struct pm_region *r, const char *set);
#endif

/* The back ends. */
extern const struct pm_port_ops pm_null_ops;
extern const struct pm_port_ops pm_pipe_ops;
extern const struct pm_port_ops pm_pcap_ops;
extern const struct pm_port_ops pm_packet_ops, pm_tap_ops;
extern const struct pm_port_ops pm_xdp_ops;
extern const struct pm_port_ops pm_vale_ops;
extern const struct pm_port_ops pm_memif_ops;

#endif /* PKTMAP_INTERNAL_H */
