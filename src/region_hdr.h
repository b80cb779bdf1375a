/* SPDX-License-Identifier: BSD-2-Clause
 *
 * A region's layout: its header at offset 0 of the mapping (the object
 * directory and the free-buffer stack's top), the lock bytes of its file.
 * Private to src/region.c (the region's life) and src/region_alloc.c
 * (what is inside it); everyone else goes through region.h.
 */
#ifndef PKTMAP_REGION_HDR_H
#define PKTMAP_REGION_HDR_H

#include <stddef.h>
#include <stdint.h>

#define PM_REGION_MAGIC 0x31524d544b50ull /* "PKTMR1" */
#define PM_REGION_VERSION 1
#define PM_REGION_DIR 64
#define PM_HDR_SIZE 8192
#define PM_LOCK_MUTEX 0
#define PM_LOCK_USERS 1
#define PM_LOCK_REAPER 2 /* held by the one cleaner that waits (region_reap) */
#define PM_LOCK_CLAIM_BASE 4096

struct pm_region_dirent {
	char key[48];
	uint64_t ofs;
	uint64_t size;
};

struct pm_region_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hugepages;
	uint64_t size;
	uint32_t buf_size, headroom, nbufs, pad0;
	uint64_t pool_ofs;
	uint64_t free_ofs;   /* uint32_t stack of free buffer indices */
	uint32_t free_top;   /* entries on the stack */
	uint32_t ndir;
	uint64_t obj_ofs, obj_next, obj_end;
	struct pm_region_dirent dir[PM_REGION_DIR];
};

_Static_assert(sizeof(struct pm_region_hdr) <= PM_HDR_SIZE, "header size");

static inline size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

#endif /* PKTMAP_REGION_HDR_H */
