/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Regions: one shared mapping of interface descriptors, rings and a
 * buffer pool (src/region.c), the files and directories they live in
 * (src/userdir.c, src/groupdir.c) and the memory check made before one is
 * mapped (src/bounds.c). Knows nothing of back ends.
 */
#ifndef PKTMAP_REGION_H
#define PKTMAP_REGION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PM_DEFAULT_BUF_SIZE 2048u

struct pktmap_port;
struct pm_serve;

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
 * /dev/shm/pktmap-UID with UID = pm_name_uid() (mode 0700; made if
 * missing; a squatter's entry of that name is moved away when the caller
 * is root, any other user uses its own /dev/shm/pktmap-UID.XXXXXX
 * instead). Returns 0 with the path in out, or -errno with err set
 * (userdir.c). */
int pm_user_dir(char *out, size_t len, char *err, size_t errlen);

/* The uid our directories are named by: our effective uid as the user
 * namespace above ours knows it (/proc/self/uid_map), so that root of a
 * namespace mapped to nobody names nobody's directories, not root's
 * (one level: a nested namespace names its parent's uid). geteuid()
 * when there is no map to read. Read once (userdir.c). */
unsigned pm_name_uid(void);

/* Parse a uid_map text ("INSIDE OUTSIDE COUNT" lines): *out = the
 * outside uid of uid. 0, -ENOENT (not mapped) or -EINVAL (malformed). */
int pm_uid_map_outside(const char *map, uint32_t uid, uint32_t *out);

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

#ifdef PM_TEST_HOOKS
/* The region's header as a peer could write it: the free stack's top,
 * and region_hdr_sane() on a copy of r's header with fields set as `set`
 * says ("nbufs=3 headroom=0"; fields: magic, version, size, buf_size,
 * headroom, nbufs, free_ofs, obj_ofs, obj_end, pool_ofs, ndir): 1 sane,
 * 0 refused, -1 a field it does not know. */
uint32_t *pm_region_free_top(struct pm_region *r);
int pm_region_hdr_sane_with(const struct pm_region *r, const char *set);
#endif

#endif /* PKTMAP_REGION_H */
