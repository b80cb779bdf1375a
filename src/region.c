/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Regions: one shared mapping holding, in order, a header, the free-buffer
 * stack, an object area (interface descriptors, rings, back-end control
 * blocks) and the buffer pool. Everything inside refers to everything else
 * by offset or buffer index, so processes may map it at any address.
 *
 * A named region is the file NAME in the user's own directory (shared
 * with a group: in the group's, groupdir.c), joinable by name with no
 * broker.
 * Its memory is a memfd sealed against shrinking and growing, which
 * joiners take from a live holder (see "The sealed pool" below): through
 * /proc (refused there, from the holder's cleaner, reap.c), or, shared
 * with a group, from the holder's serving thread (share.c). The file is
 * only the rendezvous. An unnamed region is a
 * memfd private to its port.
 *
 * Lifetime is tracked with open-file-description locks, which the kernel
 * drops when a process dies, even by SIGKILL:
 *   byte 0        structure mutex (create, join, allocate, leave)
 *   byte 1        every user holds a read lock; a write lock that succeeds
 *                 means "nobody else": the last user unlinks the file, and
 *                 an opener that finds a file nobody holds rebuilds it
 *                 (buffers of crashed users come back that way)
 *   byte 4096+N   back-end claims (a pipe end, a ring) that must be unique
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "guard.h"
#include "log.h"
#include "port.h"
#include "reap.h"
#include "region.h"
#include "share.h"
#include "util.h"

#include "region_hdr.h"

int pm_ofd_lock(int fd, short type, off_t start, bool wait)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = start,
		.l_len = 1,
	};
	/* Waiting is polling with a deadline, not F_OFD_SETLKW: a process
	 * that holds the lock forever must not block us forever. */
	struct timespec t0, now, pause = { 0, 100000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EACCES && errno != EAGAIN)
			return -errno;
		if (!wait)
			return -EBUSY;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t ms = (int64_t)(now.tv_sec - t0.tv_sec) * 1000 +
			     (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= PM_LOCK_DEADLINE_MS)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 5000000)
			pause.tv_nsec *= 2;
	}
}

int pm_file_trusted(int fd, const char *path, bool fifo, bool share,
		    uint32_t share_gid, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fifo ? !S_ISFIFO(st.st_mode) : !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a %s: remove it", path,
			 fifo ? "FIFO" : "regular file");
		return -EPERM;
	}
	bool mine = st.st_uid == geteuid() && !(st.st_mode & 0077);
	bool shared = share && st.st_gid == share_gid && !(st.st_mode & 0007);
	if (!mine && !shared && st.st_uid == geteuid()) {
		snprintf(err, errlen,
			 "%s is yours but shared with group %u (mode %03o): "
			 "open it with the @conf:share=group:NAME it was "
			 "created with", path, (unsigned)st.st_gid,
			 (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	if (!mine && !shared) {
		snprintf(err, errlen,
			 "%s belongs to uid %u (group %u, mode %03o), not to you "
			 "(uid %u): refusing to use it; its owner may share it "
			 "with @conf:share=group:NAME", path, (unsigned)st.st_uid,
			 (unsigned)st.st_gid, (unsigned)(st.st_mode & 0777),
			 (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

int pm_region_lock(struct pm_region *r)
{
	return pm_ofd_lock(r->fd, F_WRLCK, PM_LOCK_MUTEX, !r->nowait);
}

/* The mutex at open and at close. A NOWAIT region (a monitor's queue,
 * opened and closed from a port's sync) tries for a moment, 100 us
 * apart and 20 ms at most, instead of once: anyone listing regions
 * ('pktmap ports', region_probe()) holds each mutex for microseconds,
 * and a single try that met such a probe failed the open, or left the
 * queue's files behind at close. Its syncs still try once. */
static int region_lock_brief(struct pm_region *r)
{
	int ret = pm_region_lock(r);
	for (int i = 0; ret == -EBUSY && i < 200; i++) {
		struct timespec pause = { 0, 100000 };
		nanosleep(&pause, NULL);
		ret = pm_region_lock(r);
	}
	return ret;
}

void pm_region_unlock(struct pm_region *r)
{
	(void)pm_ofd_lock(r->fd, F_UNLCK, PM_LOCK_MUTEX, 0);
}

int pm_region_claim(struct pm_region *r, uint32_t slot)
{
	return pm_ofd_lock(r->fd, F_WRLCK, PM_LOCK_CLAIM_BASE + (off_t)slot, 0);
}

int pm_region_claim_shared(struct pm_region *r, uint32_t slot)
{
	return pm_ofd_lock(r->fd, F_RDLCK, PM_LOCK_CLAIM_BASE + (off_t)slot, 0);
}

void pm_region_unclaim(struct pm_region *r, uint32_t slot)
{
	(void)pm_ofd_lock(r->fd, F_UNLCK, PM_LOCK_CLAIM_BASE + (off_t)slot, 0);
}

bool pm_region_claimed(struct pm_region *r, uint32_t slot)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = PM_LOCK_CLAIM_BASE + (off_t)slot,
		.l_len = 1,
	};
	if (fcntl(r->fd, F_OFD_GETLK, &fl) != 0)
		return false;
	return fl.l_type != F_UNLCK;
}

static int valid_region_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 48)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return name[0] != '.';
}

/* Lay out a new region in r->base according to p. */
static void region_init(struct pm_region *r, const struct pm_region_params *p,
			size_t free_ofs, size_t obj_ofs, size_t obj_end,
			size_t pool_ofs)
{
	struct pm_region_hdr *h = r->base;
	memset(h, 0, sizeof(*h));
	h->version = PM_REGION_VERSION;
	h->hugepages = p->hugepages > 0;
	h->size = r->size;
	h->buf_size = p->buf_size;
	h->headroom = p->headroom;
	h->nbufs = p->bufs;
	h->pool_ofs = pool_ofs;
	h->free_ofs = free_ofs;
	h->obj_ofs = obj_ofs;
	h->obj_next = obj_ofs;
	h->obj_end = obj_end;
	uint32_t *stack = (uint32_t *)((char *)r->base + free_ofs);
	uint32_t top = 0;
	/* Push high indices first so that low ones are handed out first. */
	for (uint32_t i = p->bufs; i-- > 2;)
		stack[top++] = i;
	h->free_top = top;
	atomic_thread_fence(memory_order_release);
	h->magic = PM_REGION_MAGIC;
}

static void region_set_view(struct pm_region *r, const struct pm_region_hdr *h)
{
	/* Read once, after region_hdr_sane() (or our own region_init()):
	 * from now on only these private copies are used, whatever a peer
	 * writes into the header later. */
	r->pool = (char *)r->base + h->pool_ofs;
	r->buf_size = h->buf_size;
	r->headroom = h->headroom;
	r->nbufs = h->nbufs;
	r->free_ofs = h->free_ofs;
	r->obj_ofs = h->obj_ofs;
	r->obj_end = h->obj_end;
}

/* Check that a header written by another process describes a layout that
 * fits in the file; a corrupt header must not lead us outside the map. */
static int region_hdr_sane(const struct pm_region_hdr *h, size_t fsize)
{
	if (h->magic != PM_REGION_MAGIC || h->version != PM_REGION_VERSION)
		return 0;
	if (h->size != fsize || h->buf_size < 64 || h->headroom >= h->buf_size ||
	    h->nbufs < 3)
		return 0;
	if (h->free_ofs < PM_HDR_SIZE ||
	    h->free_ofs + (uint64_t)h->nbufs * 4 > h->obj_ofs ||
	    h->obj_ofs > h->obj_end || h->obj_end > h->pool_ofs ||
	    h->pool_ofs + (uint64_t)h->nbufs * h->buf_size > fsize)
		return 0;
	return h->ndir <= PM_REGION_DIR;
}

/* ------------------------------------------------------------------ */
/* The sealed pool. A named region keeps its memory in a memfd sealed
 * against shrinking and growing, so no process, however hostile, can
 * truncate it under its partners (that would be SIGBUS for them). The
 * file is only the rendezvous: it carries the locks (mutex, users,
 * claims) and a table of the processes that hold the memfd. A joiner
 * duplicates the memfd of a live holder through /proc/PID/fd/FD (the
 * kernel checks that it may: the same uid), or, for a region shared with
 * a group, asks the holder's serving thread for it (share.c, which checks
 * the caller's uid and groups; a joiner /proc refuses asks the holder's
 * cleaner the same way, reap.c), and accepts it only if it is the very
 * memfd the table names (device and inode), of the size it names, and
 * sealed. Truncating the rendezvous only stops later joins. */

#define PM_RDV_MAGIC 0x3156445254504bull /* "PKTRDV1" */
#define PM_RDV_HOLDERS 256
#define PM_RDV_SIZE 4096
/* One byte per holder slot, far above the back ends' claims. */
#define PM_LOCK_HOLDER_BASE ((off_t)1 << 40)
#define PM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

struct pm_rdv {
	uint64_t magic;
	uint64_t size;           /* bytes of the memfd */
	uint64_t dev, ino;       /* which memfd */
	struct {
		/* shared with a group: the holder's socket (share.c),
		 * otherwise its descriptor of the memfd */
		int32_t pid, fd;
	} h[PM_RDV_HOLDERS];
	/* not shared with a group: the socket of the holder's cleaner
	 * (reap.c), for the joiners /proc refuses, or 0 for none */
	uint32_t nonce[PM_RDV_HOLDERS];
};

_Static_assert(sizeof(struct pm_rdv) <= PM_RDV_SIZE, "rendezvous size");

/* Put ourselves in a free slot of the holder table (a slot is free when
 * nobody holds its lock byte; the kernel drops that lock when a holder
 * dies). Under the mutex. */
static int rdv_register(struct pm_region *r, int32_t how, uint32_t nonce)
{
	for (int i = 0; i < PM_RDV_HOLDERS; i++) {
		if (pm_ofd_lock(r->fd, F_WRLCK, PM_LOCK_HOLDER_BASE + i, 0) != 0)
			continue;
		int32_t ent[2] = { (int32_t)getpid(), how };
		if (pwrite(r->fd, ent, sizeof(ent),
			   (off_t)offsetof(struct pm_rdv, h[i])) != sizeof(ent) ||
		    pwrite(r->fd, &nonce, sizeof(nonce),
			   (off_t)offsetof(struct pm_rdv, nonce[i])) != sizeof(nonce))
			return -EIO;
		return 0;
	}
	return -EMFILE;
}

/* Make the sealed memfd of a new region and publish it. Under the mutex,
 * with nobody else using the region. */
static int rdv_create(struct pm_region *r, size_t size, bool huge, char *err,
		      size_t errlen)
{
	r->mfd = memfd_create("pktmap", MFD_CLOEXEC | MFD_ALLOW_SEALING |
				       (huge ? MFD_HUGETLB : 0));
	if (r->mfd < 0) {
		snprintf(err, errlen, "region '%s': cannot create its memory: %s%s",
			 r->name, strerror(errno),
			 huge ? " (no hugepages reserved? see /proc/sys/vm/nr_hugepages)" :
				"");
		return -errno;
	}
	struct stat st;
	struct pm_rdv rdv;
	memset(&rdv, 0, sizeof(rdv));
	if (ftruncate(r->mfd, (off_t)size) != 0 ||
	    fcntl(r->mfd, F_ADD_SEALS, PM_SEALS) != 0 || fstat(r->mfd, &st) != 0 ||
	    ftruncate(r->fd, 0) != 0 || ftruncate(r->fd, PM_RDV_SIZE) != 0) {
		int e = errno;
		snprintf(err, errlen, "region '%s': cannot size and seal %zu bytes: "
			 "%s", r->name, size, strerror(e));
		return -e;
	}
	rdv.magic = PM_RDV_MAGIC;
	rdv.size = size;
	rdv.dev = (uint64_t)st.st_dev;
	rdv.ino = (uint64_t)st.st_ino;
	if (pwrite(r->fd, &rdv, sizeof(rdv), 0) != sizeof(rdv)) {
		snprintf(err, errlen, "region '%s': cannot write %s", r->name,
			 r->path);
		return -EIO;
	}
	r->size = size;
	return 0;
}

/* Is fd the very memfd the rendezvous names, whole and sealed? */
static bool memfd_matches(int fd, const struct pm_rdv *rdv)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_dev == rdv->dev && (uint64_t)st.st_ino == rdv->ino &&
	       (uint64_t)st.st_size == rdv->size && seals >= 0 &&
	       (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
		       (F_SEAL_SHRINK | F_SEAL_GROW);
}

/* The memfd of holder i, or -1: a region shared with a group asks the
 * holder's serving thread (share.c), any other opens the holder's
 * descriptor through /proc (the kernel allows the same uid only, and
 * only with every capability the holder has), and if refused there asks
 * the holder's cleaner (reap.c), if it has one. */
static int holder_fd(const struct pm_region *r, const struct pm_rdv *rdv, int i)
{
	if (r->share)
		return pm_share_fetch(rdv->h[i].pid, (uint32_t)rdv->h[i].fd);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)rdv->h[i].pid,
		 (int)rdv->h[i].fd);
	int fd = open(proc, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM) && rdv->nonce[i])
		fd = pm_share_fetch(rdv->h[i].pid, rdv->nonce[i]);
	return fd;
}

/* Get the memfd of a region others hold. Under the mutex. */
static int rdv_join(struct pm_region *r, char *err, size_t errlen)
{
	struct pm_rdv rdv;
	if (pread(r->fd, &rdv, sizeof(rdv), 0) != sizeof(rdv) ||
	    rdv.magic != PM_RDV_MAGIC || rdv.size < PM_HDR_SIZE ||
	    rdv.size > ((uint64_t)1 << 42)) {
		snprintf(err, errlen, "region '%s' (%s) is in use but does not say "
			 "where its memory is (written by another program?); stop "
			 "its users and run 'pktmap ports --gc'", r->name, r->path);
		return -EPROTO;
	}
	for (int i = 0; i < PM_RDV_HOLDERS; i++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = PM_LOCK_HOLDER_BASE + i, .l_len = 1 };
		if (fcntl(r->fd, F_OFD_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
			continue; /* no live holder in this slot */
		int fd = holder_fd(r, &rdv, i);
		if (fd < 0)
			continue;
		if (memfd_matches(fd, &rdv)) {
			r->mfd = fd;
			r->size = (size_t)rdv.size;
			return 0;
		}
		close(fd);
	}
	snprintf(err, errlen, "region '%s': no process that uses it could hand "
		 "over its memory (%s)", r->name, r->share ?
		 "are they in another network namespace, or not in the group?" :
		 "are they another user's, or not dumpable?");
	return -EACCES;
}

/* The layout of a new region, computed before anything is made. */
struct region_layout {
	size_t free_ofs, obj_ofs, obj_end, pool_ofs, size;
};

/* Check step: fill in the defaults of p, check every value and lay the
 * region out. Nothing is made yet (the memory it takes: region_mem_check). */
static int region_check(const char *name, struct pm_region_params *p,
			struct region_layout *l, char *err, size_t errlen)
{
	/* With headroom (an @mem: region that AF_XDP may share), buffers
	 * are 4096 bytes by default so that a 2048-byte frame still fits
	 * past the headroom, as netmap programs expect from 2048. */
	if (p->buf_size == 0)
		p->buf_size = p->headroom ? 2 * PM_DEFAULT_BUF_SIZE :
					    PM_DEFAULT_BUF_SIZE;
	if (p->buf_size < 256 || p->buf_size > 65536 ||
	    (p->buf_size & (p->buf_size - 1))) {
		snprintf(err, errlen,
			 "buf_size=%u: must be a power of two from 256 to 65536",
			 p->buf_size);
		return -EINVAL;
	}
	if (p->headroom >= p->buf_size / 2) {
		snprintf(err, errlen, "headroom %u too large for buf_size=%u",
			 p->headroom, p->buf_size);
		return -EINVAL;
	}
	if (p->bufs < 3)
		p->bufs = 3;
	if (p->bufs > (1u << 26)) {
		snprintf(err, errlen, "bufs=%u: at most %u buffers in a region",
			 p->bufs, 1u << 26);
		return -EINVAL;
	}
	bool named = name && *name;
	if (named && !valid_region_name(name)) {
		snprintf(err, errlen, "region '%s': names are 1-48 of [A-Za-z0-9_.-]",
			 name);
		return -EINVAL;
	}
	/* A named region is shared: leave room for the descriptors and rings
	 * of the ports that will join it later. */
	if (named && p->obj_size < (4u << 20))
		p->obj_size = 4u << 20;
	size_t page = p->hugepages > 0 ? (2u << 20) : 4096;
	l->free_ofs = PM_HDR_SIZE;
	l->obj_ofs = align_up(l->free_ofs + (size_t)p->bufs * 4, 4096);
	l->obj_end = align_up(l->obj_ofs + p->obj_size, 4096);
	l->pool_ofs = align_up(l->obj_end, page);
	l->size = align_up(l->pool_ofs + (size_t)p->bufs * p->buf_size, page);
	return 0;
}

/* Check step, once it is known whether this open makes the region
 * (fresh) or joins one others hold: the memory it will take. A maker
 * takes the whole region (hugepages when asked) and its private rings; a
 * joiner takes only its private rings (and, when the kernel pins the
 * region, the region against its own lock limit): the region's pages
 * exist already, so free hugepages are not its concern. */
static int region_mem_check(const char *name, const struct pm_region_params *p,
			    const struct region_layout *l, bool fresh, char *err,
			    size_t errlen)
{
	int ret;
	if (fresh)
		ret = pm_mem_check((uint64_t)l->size + p->ring_bytes,
				   p->hugepages > 0, p->pinned, err, errlen);
	else
		ret = pm_mem_check((uint64_t)p->ring_bytes +
					   (p->pinned ? l->size : 0),
				   false, p->pinned, err, errlen);
	if (ret) {
		char why[200];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "region '%s': %s",
			 name && *name ? name : "(private)", why);
	}
	return ret;
}

/* A private region: a memfd of its own. */
static int region_private(struct pm_region *r, const struct pm_region_params *p,
			  size_t size, char *err, size_t errlen)
{
	snprintf(r->name, sizeof(r->name), "(private)");
	r->fd = memfd_create("pktmap", MFD_CLOEXEC |
			     (p->hugepages > 0 ? MFD_HUGETLB : 0));
	if (r->fd < 0) {
		int ret = -errno;
		snprintf(err, errlen, "cannot create a memfd region: %s%s",
			 strerror(errno), p->hugepages > 0 ?
			 " (no hugepages reserved? see /proc/sys/vm/nr_hugepages)" : "");
		return ret;
	}
	r->mfd = r->fd;
	if (ftruncate(r->fd, (off_t)size) != 0) {
		int ret = -errno;
		snprintf(err, errlen, "cannot size a region to %zu bytes: %s", size,
			 strerror(errno));
		close(r->fd);
		r->fd = r->mfd = -1;
		return ret;
	}
	r->size = size;
	return 0;
}

/* Where the rendezvous of a named region is: our own directory, where no
 * other user can take a name first (userdir.c), or, shared with a group,
 * the group's directory, where every member finds it and nobody outside
 * the group can take a name first (groupdir.c). */
static int region_path(struct pm_region *r, const struct pm_region_params *p,
		       char *err, size_t errlen)
{
	char dir[64], why[300];
	int ret = p->share ? pm_group_dir(p->share_gid, dir, sizeof(dir), why,
					  sizeof(why)) :
			     pm_user_dir(dir, sizeof(dir), why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "region '%s': %s", r->name, why);
		return ret;
	}
	snprintf(r->path, sizeof(r->path), "%s/%s", dir, r->name);
	return 0;
}

/* A named region: create its rendezvous (O_EXCL), or open what is there
 * without following a link, then check whose it is. On failure nothing is
 * left: a file we made is removed. */
static int region_file(struct pm_region *r, const struct pm_region_params *p,
		       char *err, size_t errlen)
{
	int ret = 0;
	mode_t mode = p->share ? 0660 : 0600;
	r->fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		     mode);
	/* Our directory (or the group's), removed with another region's
	 * last file between region_path() and here: make it again (each
	 * time lost to a process that removed it empty; bounded). */
	for (int i = 0; r->fd < 0 && errno == ENOENT && i < 1000; i++) {
		if ((ret = region_path(r, p, err, errlen)) != 0)
			return ret;
		r->fd = open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
			     O_NOFOLLOW, mode);
	}
	bool made = r->fd >= 0;
	if (!made && errno == EEXIST)
		r->fd = open(r->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "region '%s': cannot open %s: %s%s", r->name,
			 r->path, strerror(errno),
			 errno == ELOOP ? " (a symbolic link: remove it)" : "");
		return ret;
	}
	char why[300];
	if (made && p->share &&
	    (fchown(r->fd, (uid_t)-1, (gid_t)p->share_gid) != 0 ||
	     fchmod(r->fd, mode) != 0)) {
		ret = -errno;
		snprintf(err, errlen, "region '%s': cannot give %s to group %u: %s",
			 r->name, r->path, p->share_gid, strerror(errno));
	} else if ((ret = pm_file_trusted(r->fd, r->path, false, p->share,
					  p->share_gid, why, sizeof(why))) != 0) {
		snprintf(err, errlen, "region '%s': %s", r->name, why);
	}
	if (ret) {
		if (made) /* ours, but not as asked: leave nothing */
			unlink(r->path);
		close(r->fd);
		r->fd = -1;
	}
	return ret;
}

/* Under the mutex: the memory of a named region, a new sealed memfd
 * (fresh: nobody else uses the file) or the one its holders have; then we
 * hold it too, and serve it (shared with a group; otherwise our cleaner
 * serves our uid, whom /proc may refuse). What the opener asked for
 * decides how, never what the file says. */
static int region_memory(struct pm_region *r, const struct pm_region_params *p,
			 size_t size, bool fresh, char *err, size_t errlen)
{
	int ret = fresh ? rdv_create(r, size, p->hugepages > 0, err, errlen) :
			  rdv_join(r, err, errlen);
	if (ret)
		return ret;
	uint32_t nonce = 0;
	if (r->share && (ret = pm_share_serve(r->mfd, r->share_gid, &r->serve,
					      &nonce)) != 0) {
		snprintf(err, errlen, "region '%s': cannot serve its memory to "
			 "group %u: %s", r->name, r->share_gid, strerror(-ret));
		return ret;
	}
	/* Our cleaner serves our own uid, if we have one (reap.c): a help,
	 * not a need: without it, joiners that /proc refuses are refused. */
	if (!r->share && pm_reaper_serve(r, &nonce) != 0)
		nonce = 0;
	ret = r->share ? rdv_register(r, (int32_t)nonce, 0) :
			 rdv_register(r, r->mfd, nonce);
	if (ret)
		snprintf(err, errlen, "region '%s': cannot register in %s: %s",
			 r->name, r->path, strerror(-ret));
	return ret;
}

/* Publish step: map the memory; lay out a fresh region, or check the
 * header of one we join against what the opener asked (p: as given,
 * def: with defaults). The header is read once into a private copy; that
 * copy is checked and is the only one the layout is taken from. */
static int region_map(struct pm_region *r, const struct pm_region_params *p,
		      const struct pm_region_params *def,
		      const struct region_layout *l, bool fresh, char *err,
		      size_t errlen)
{
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | (fresh ? MAP_POPULATE : 0), r->mfd, 0);
	if (r->base == MAP_FAILED) {
		int ret = -errno;
		r->base = NULL;
		snprintf(err, errlen, "region '%s': cannot map %zu bytes: %s",
			 r->name, r->size, strerror(errno));
		return ret;
	}
	/* Shared hugetlb memory can lose pages to a peer that punches a
	 * hole in it: a fault there must not kill us (guard.h). */
	if (r->named && pm_guard_is_huge(r->mfd)) {
		int g = pm_guard_add(r->base, r->size, r->mfd, &r->lost);
		if (g < 0) {
			snprintf(err, errlen, "region '%s': cannot guard its huge "
				 "pages: %s", r->name, strerror(-g));
			return g;
		}
		r->guard = g + 1;
	}
	struct pm_region_hdr hc;
	if (fresh)
		region_init(r, def, l->free_ofs, l->obj_ofs, l->obj_end,
			    l->pool_ofs);
	memcpy(&hc, r->base, sizeof(hc));
	if (!fresh && !region_hdr_sane(&hc, r->size)) {
		snprintf(err, errlen,
			 "region '%s' (%s) is in use but its header is invalid "
			 "(written by another program?); stop its users and "
			 "run 'pktmap ports --gc'", r->name, r->path);
		return -EPROTO;
	}
	if (!fresh && ((p->buf_size && p->buf_size != hc.buf_size) ||
		       (p->exact_headroom && p->headroom != hc.headroom))) {
		snprintf(err, errlen,
			 "region '%s' exists with buf_size=%u headroom=%u; "
			 "open it with the same settings",
			 r->name, hc.buf_size, hc.headroom);
		return -EEXIST;
	}
	r->created = fresh;
	region_set_view(r, &hc);
	r->hdr = r->base;
	return 0;
}

/* Roll-back step: undo a failed open, under the mutex; a region this
 * open made is removed. */
static void region_rollback(struct pm_region *r, bool fresh)
{
	pm_share_stop(r->serve);
	r->serve = NULL;
	pm_guard_del(r->guard - 1);
	r->guard = 0;
	if (r->base)
		munmap(r->base, r->size);
	if (r->named && fresh)
		unlink(r->path);
	pm_region_unlock(r);
	if (r->mfd >= 0 && r->mfd != r->fd)
		close(r->mfd);
	close(r->fd);
	r->fd = r->mfd = -1;
	r->base = NULL;
}

/* Acquire step: the region's file (or private memfd), locked; for a
 * named region still the file its name leads to, since a last user may
 * remove it between our open and our lock (then we open it again). */
static int region_acquire(struct pm_region *r, const struct pm_region_params *p,
			  size_t size, char *err, size_t errlen)
{
	for (int tries = 0; tries < 4; tries++) {
		int ret = r->named ? region_file(r, p, err, errlen) :
				     region_private(r, p, size, err, errlen);
		if (ret)
			return ret;
		ret = region_lock_brief(r);
		struct stat st;
		if (ret == 0 && (!r->named ||
				 (fstat(r->fd, &st) == 0 && st.st_nlink > 0)))
			return 0;
		if (ret == -EBUSY) /* nowait */
			snprintf(err, errlen, "region '%s': %s is locked by another "
				 "process, and this open does not wait for it: try "
				 "again, or see who holds it with 'fuser %s'", r->name,
				 r->path, r->path);
		else if (ret)
			snprintf(err, errlen, "region '%s': %s is locked by another "
				 "process for more than %d ms: stop it, or see who "
				 "holds it with 'fuser %s'", r->name, r->path,
				 PM_LOCK_DEADLINE_MS, r->path);
		else
			pm_region_unlock(r);
		close(r->fd);
		r->fd = r->mfd = -1;
		if (ret)
			return ret;
	}
	snprintf(err, errlen, "region '%s': %s keeps being removed as it is "
		 "opened", r->name, r->path);
	return -EAGAIN;
}

static bool region_reap(struct pm_region *r);

int pm_region_open(struct pm_region *r, const char *name,
		   const struct pm_region_params *p, char *err, size_t errlen)
{
	struct pm_region_params def = *p;
	struct region_layout l;

	memset(r, 0, sizeof(*r));
	r->fd = r->mfd = -1;
	r->nowait = p->nowait;
	int ret = region_check(name, &def, &l, err, errlen);
	if (ret)
		return ret;
	/* Everything a private region's open will map, checked before
	 * anything is; a named one's once we know whether we make it. */
	if (!(name && *name) &&
	    (ret = region_mem_check(name, &def, &l, true, err, errlen)) != 0)
		return ret;
	r->named = name && *name;
	if (r->named) {
		snprintf(r->name, sizeof(r->name), "%s", name);
		r->share = def.share;
		r->share_gid = def.share_gid;
		r->sealed = true;
		ret = region_path(r, &def, err, errlen);
		if (ret)
			return ret;
		/* The cleaner comes first: a process killed at any point
		 * after its file exists leaves nothing (reap.c). Without one,
		 * only a close that has kept its privileges removes the
		 * files: not a reason to refuse the open. */
		(void)pm_reaper_start(r, region_reap);
	}
	ret = region_acquire(r, &def, l.size, err, errlen);
	if (ret) {
		pm_reaper_finish(r, false);
		return ret;
	}
	bool fresh = !r->named ||
		     pm_ofd_lock(r->fd, F_WRLCK, PM_LOCK_USERS, 0) == 0;
	if (r->named)
		ret = region_mem_check(name, &def, &l, fresh, err, errlen);
	if (r->named && ret == 0)
		ret = region_memory(r, &def, l.size, fresh, err, errlen);
	if (ret == 0)
		ret = region_map(r, p, &def, &l, fresh, err, errlen);
	if (ret) {
		region_rollback(r, fresh);
		pm_reaper_finish(r, false);
		return ret;
	}
	if (r->named)
		(void)pm_ofd_lock(r->fd, F_RDLCK, PM_LOCK_USERS, 0);
	pm_region_unlock(r);
	return 0;
}

/* Is fname one of the wake-up FIFOs of the region whose file is `base`
 * (exactly "BASE.w<uid>.<end>.<ring><r|t>")? A prefix is not enough:
 * region "pipe.x" must not take the files of region "pipe.x.y". */
static bool is_companion(const char *fname, const char *base)
{
	size_t nl = strlen(base);
	if (strncmp(fname, base, nl) != 0)
		return false;
	const char *s = fname + nl;
	if (s[0] != '.' || s[1] != 'w')
		return false;
	s += 2;
	for (int part = 0; part < 3; part++) {
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
		if (part < 2 && *s++ != '.')
			return false;
	}
	return (s[0] == 'r' || s[0] == 't') && s[1] == 0;
}

/* Remove the region's file and the companion files back ends made for it
 * (the pipes' wake-up FIFOs, next to it, and the locators of pipes made
 * in it), each by its exact name and only if it is ours. */
static void region_unlink(struct pm_region *r)
{
	unlink(r->path);
	char dirpath[sizeof(r->path)];
	snprintf(dirpath, sizeof(dirpath), "%s", r->path);
	char *slash = strrchr(dirpath, '/');
	if (!slash)
		return;
	*slash = 0;
	const char *base = slash + 1;
	DIR *d = opendir(dirpath);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		char to[64];
		ssize_t n;
		/* a pipe's locator naming this region (src/ports/pipe.c) */
		if (strncmp(e->d_name, ".pipe.", 6) == 0 &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode) && st.st_uid == geteuid() &&
		    (n = readlinkat(dirfd(d), e->d_name, to, sizeof(to) - 1)) > 0 &&
		    (to[n] = 0, strcmp(to, r->name) == 0)) {
			unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		/* Ours; in a group's directory also a member's FIFO of this
		 * region (the group's, made for its end): the last user
		 * removes them, if the directory lets it. */
		if (!is_companion(e->d_name, base) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISFIFO(st.st_mode) ||
		    (st.st_uid != geteuid() &&
		     !(r->share && st.st_gid == r->share_gid)))
			continue;
		unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	/* The user's directory (or the group's) goes with its last file:
	 * made again by the next open, which starts over if it loses that
	 * race (region_file, the switch). */
	if (r->share)
		pm_group_dir_drop(dirpath, r->share_gid);
	else
		pm_user_dir_drop(dirpath);
}

/* Look at one candidate file: is it a region, is it in use, remove it if
 * asked and unused. Returns 1 when it is a region. */
static int region_probe(const char *dir, const char *fname, size_t prefix,
			struct pktmap_region_desc *d, int gc)
{
	struct pm_region r;
	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "%s", fname + prefix);
	snprintf(r.path, sizeof(r.path), "%s/%s", dir, fname);
	r.named = true;
	/* Only our own regions: another user's file is not ours to list,
	 * lock or remove (and its locks must not block us). */
	struct stat st;
	if (fstatat(AT_FDCWD, r.path, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return 0;
	r.fd = open(r.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r.fd < 0)
		return 0;
	char why[300];
	if (fstat(r.fd, &st) != 0 ||
	    pm_file_trusted(r.fd, r.path, false, true, (uint32_t)st.st_gid, why,
			    sizeof(why)) != 0 || st.st_uid != geteuid()) {
		close(r.fd);
		return 0;
	}
	/* In a group's directory: the group's to drop with its last file. */
	if (strncmp(dir, "/dev/shm/pktmap-g", 17) == 0) {
		r.share = true;
		r.share_gid = (uint32_t)st.st_gid;
	}
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", r.name);
	snprintf(d->path, sizeof(d->path), "%s", r.path);
	d->size = (uint64_t)st.st_size;
	struct pm_rdv rdv;
	if (pread(r.fd, &rdv, sizeof(rdv), 0) == sizeof(rdv) &&
	    rdv.magic == PM_RDV_MAGIC)
		d->size = rdv.size; /* the sealed memory, not the rendezvous */
	/* A region whose mutex is held, or that someone uses, is in use:
	 * only a file nobody holds at all is provably dead. */
	if (pm_ofd_lock(r.fd, F_WRLCK, PM_LOCK_MUTEX, 0) != 0) {
		d->in_use = 1;
	} else {
		d->in_use = pm_ofd_lock(r.fd, F_WRLCK, PM_LOCK_USERS, 0) != 0;
		if (!d->in_use && gc) {
			region_unlink(&r);
			d->removed = 1;
		}
		pm_region_unlock(&r);
	}
	close(r.fd);
	return 1;
}

/* The regions of ours in directory path whose file names start with
 * prefix, counted in *count (the first max into out). */
static void regions_in(const char *path, const char *prefix,
		       struct pktmap_region_desc *out, unsigned max, int *count,
		       int gc)
{
	DIR *dir = opendir(path);
	if (!dir)
		return;
	size_t pl = strlen(prefix);
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		if (strncmp(e->d_name, prefix, pl) != 0 || e->d_name[0] == '.' ||
		    e->d_type == DT_FIFO)
			continue;
		struct pktmap_region_desc tmp;
		struct pktmap_region_desc *d =
			out && (unsigned)*count < max ? &out[*count] : &tmp;
		*count += region_probe(path, e->d_name, pl, d, gc);
	}
	closedir(dir);
}

int pktmap_regions(struct pktmap_region_desc *out, unsigned max, int gc)
{
	/* Our own directory (files named NAME; dot files are the switch's),
	 * the groups' directories (groupdir.c), and the regions of the old
	 * layout (pktmap.NAME). */
	char own[64], err[300];
	int count = 0;
	if (pm_user_dir(own, sizeof(own), err, sizeof(err)) == 0)
		regions_in(own, "", out, max, &count, gc);
	DIR *shm = opendir("/dev/shm");
	struct dirent *e;
	while (shm && (e = readdir(shm)) != NULL) {
		char gdir[300];
		struct stat st;
		if (strncmp(e->d_name, "pktmap-g", 8) != 0 ||
		    fstatat(dirfd(shm), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || (st.st_mode & 0007))
			continue;
		snprintf(gdir, sizeof(gdir), "/dev/shm/%s", e->d_name);
		regions_in(gdir, "", out, max, &count, gc);
	}
	if (shm)
		closedir(shm);
	regions_in("/dev/shm", "pktmap.", out, max, &count, gc);
	regions_in("/dev/hugepages", "pktmap.", out, max, &count, gc);
	return count;
}

/* Leave the region as a user: under the mutex, the last user (nobody
 * holds it any more) removes its files. Returns true when we were the
 * last. Also the cleaner's work (reap.c). */
static bool region_leave(struct pm_region *r)
{
	/* If the mutex cannot be had in time, leave the files: 'pktmap
	 * ports --gc' removes them once nobody holds the region. A NOWAIT
	 * region (a monitor's queue, closed from a port's sync) still
	 * tries for a moment (region_lock_brief()). */
	if (region_lock_brief(r) != 0)
		return false;
	/* A file already removed (its name may be a new region's by now)
	 * is not ours to clean. */
	struct stat st;
	if (fstat(r->fd, &st) != 0 || st.st_nlink == 0) {
		pm_region_unlock(r);
		return false;
	}
	bool last = pm_ofd_lock(r->fd, F_WRLCK, PM_LOCK_USERS, 0) == 0;
	if (last)
		region_unlink(r);
	else
		/* Not the last: let go of our hold now, under the mutex, so
		 * that a user closing after us sees it gone (with close(fd)
		 * alone, two closers could each see the other and both leave
		 * the files). */
		(void)pm_ofd_lock(r->fd, F_UNLCK, PM_LOCK_USERS, 0);
	pm_region_unlock(r);
	return last;
}

/* The cleaner's work (reap.c), once its opener has closed: leave as the
 * last user would. If others still use the region, one cleaner (the one
 * that holds the reaper byte) waits until they have all gone and tries
 * again: the last of them may be unable to remove our files (another
 * user, in the group of a shared region in sticky /dev/shm, or one that
 * dropped its privileges and has no cleaner). A file removed meanwhile
 * ends the wait. */
static bool region_reap(struct pm_region *r)
{
	if (region_leave(r))
		return true;
	if (pm_ofd_lock(r->fd, F_WRLCK, PM_LOCK_REAPER, 0) != 0)
		return false; /* another cleaner waits */
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = PM_LOCK_USERS, .l_len = 1 };
	struct stat st;
	for (;;) {
		/* Blocks for as long as the region is used: a cleaner has
		 * nothing else to do. New users still get in meanwhile (a
		 * waiting writer does not hold readers back). */
		while (fcntl(r->fd, F_OFD_SETLKW, &fl) != 0)
			if (errno != EINTR)
				return false;
		(void)pm_ofd_lock(r->fd, F_UNLCK, PM_LOCK_USERS, 0);
		if (region_leave(r))
			return true;
		if (fstat(r->fd, &st) != 0 || st.st_nlink == 0)
			return false;
	}
}

void pm_region_close(struct pm_region *r)
{
	if (r->fd < 0)
		return;
	pm_share_stop(r->serve);
	r->serve = NULL;
	pm_guard_del(r->guard - 1);
	r->guard = 0;
	if (r->base)
		munmap(r->base, r->size);
	/* The last user removes the files; if it has since lost the right
	 * to, its cleaner does, and we wait for it (reap.c). */
	bool last = r->named && region_leave(r);
	struct stat st;
	if (fstat(r->fd, &st) == 0) { /* the file our cleaner may clean */
		r->reap_dev = (uint64_t)st.st_dev;
		r->reap_ino = (uint64_t)st.st_ino;
	}
	if (r->mfd >= 0 && r->mfd != r->fd)
		close(r->mfd);
	close(r->fd);
	r->fd = r->mfd = -1;
	r->base = NULL;
	pm_reaper_finish(r, last);
}

int pm_region_lost(struct pktmap_port *p, struct pm_region *r)
{
	uint32_t one = 1;
	if (atomic_compare_exchange_strong_explicit(&r->lost, &one, 2,
						    memory_order_relaxed,
						    memory_order_relaxed))
		pm_log(p, PKTMAP_LOG_ERR, "%s: region '%s' lost memory under us "
		       "(a process that shares it punched a hole in its huge "
		       "pages and took them): the port is broken, close it",
		       p->name, r->name);
	return -EFAULT;
}

#ifdef PM_TEST_HOOKS
int pm_region_hdr_sane_with(const struct pm_region *r, const char *set)
{
	static const struct {
		const char *name;
		size_t ofs, size;
	} f[] = {
#define PM_F(x) { #x, offsetof(struct pm_region_hdr, x), \
		  sizeof(((struct pm_region_hdr *)0)->x) }
		PM_F(magic), PM_F(version), PM_F(size), PM_F(buf_size),
		PM_F(headroom), PM_F(nbufs), PM_F(free_ofs), PM_F(obj_ofs),
		PM_F(obj_end), PM_F(pool_ofs), PM_F(ndir),
#undef PM_F
	};
	struct pm_region_hdr h;
	memcpy(&h, r->base, sizeof(h));
	for (const char *s = set; *s;) {
		char name[16];
		long long v;
		int used = 0;
		if (sscanf(s, " %15[a-z_]=%lli%n", name, &v, &used) != 2)
			return -1;
		s += used;
		size_t i = 0;
		while (i < PM_ARRAY_SIZE(f) && strcmp(f[i].name, name) != 0)
			i++;
		if (i == PM_ARRAY_SIZE(f))
			return -1;
		if (f[i].size == 8) {
			uint64_t v64 = (uint64_t)v;
			memcpy((char *)&h + f[i].ofs, &v64, 8);
		} else {
			uint32_t v32 = (uint32_t)v;
			memcpy((char *)&h + f[i].ofs, &v32, 4);
		}
	}
	return region_hdr_sane(&h, r->size);
}
#endif
