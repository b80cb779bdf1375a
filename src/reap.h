// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cleaner of a region opened by a process that may drop its
 * privileges (reap.c).
 */
#ifndef PKTMAP_REAP_H
#define PKTMAP_REAP_H

#include <stdbool.h>
#include <stdint.h>

struct pm_region;

/* Before the open of a named region by a process that can change its
 * uid, or, not shared with a group, that some process of its uid may be
 * refused in /proc (pm_share_guarded()): fork the cleaner (and set
 * r->reaping to our pid), which will call leave(r) (region.c: under the
 * mutex, the last user removes the files; if others still use the
 * region, wait for the last of them) once the opener has closed.
 * Returns 0 (also when none is needed) or -errno. */
int pm_reaper_start(struct pm_region *r, bool (*leave)(struct pm_region *r));

/* Once r->mfd is the region's memory: listen at a fresh name (its random
 * part in *nonce) and hand the socket and the memfd to our cleaner, which
 * serves the memfd there to our uid and root until we close (share.c).
 * Returns 0, -ENOENT without a cleaner of ours, or -errno. */
int pm_reaper_serve(struct pm_region *r, uint32_t *nonce);

/* At close, after our own leave: tell the cleaner, and when wait is set
 * (we were the last user, so it has files to remove) wait until it is
 * done (at most the lock deadline and a second). */
void pm_reaper_finish(struct pm_region *r, bool wait);

#endif
