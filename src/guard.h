/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Memory a peer can take away (issue 30). A peer that holds a writable
 * descriptor of memory we map (a member of the group a hugepage region
 * is shared with; a memif client, whose regions we map) may punch a hole
 * in it (fallocate(FALLOC_FL_PUNCH_HOLE)). On tmpfs the next touch gets
 * a zero page; on hugetlbfs it needs a free huge page, and if the peer
 * has taken them all, the touch is SIGBUS, which would kill us.
 *
 * A guarded mapping turns that SIGBUS into a mark: the library's SIGBUS
 * handler (installed at the first guard, chaining to the handler it
 * replaced for every other fault) maps private anonymous memory over the
 * lost page (the mapping's page size, aligned: 2 MiB on hugetlbfs), sets
 * the guard's `lost` word and returns; the faulting access then reads
 * zeros (or writes into memory nobody else sees) and goes on. The port
 * that owns the mapping sees the mark at its next sync and fails (pipe:
 * every sync, -EFAULT; memif server: the peer is disconnected), with
 * one log line.
 *
 * A guard is removed before its mapping is unmapped, and no thread may
 * touch the mapping after that (the handler would not know it).
 * An application that installs its own SIGBUS handler after opening such
 * a port must call the one it replaced for faults that are not its own.
 */
#ifndef PKTMAP_GUARD_H
#define PKTMAP_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Guard [base, base + size), a MAP_SHARED mapping of fd (whose page size
 * fstat says): a SIGBUS there sets *lost to 1. Returns the guard's
 * number (>= 0) or -errno (-ENOSPC: too many guards). */
int pm_guard_add(void *base, size_t size, int fd, _Atomic uint32_t *lost);

/* Remove guard g (from pm_guard_add; a negative g is ignored). */
void pm_guard_del(int g);

/* Is fd's memory made of huge pages (hugetlbfs)? */
int pm_guard_is_huge(int fd);

#endif /* PKTMAP_GUARD_H */
