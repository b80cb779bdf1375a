// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cleaner of a region opened by a process that may drop its
 * privileges (reap.c), and the step of leaving a region it shares with
 * region.c's close.
 */
#ifndef PKTMAP_REAP_H
#define PKTMAP_REAP_H

#include <stdbool.h>

struct pm_region;

/* After a successful open of a named region by a process that can change
 * its uid: fork the cleaner (and set r->reaping to our pid). Returns 0
 * (also when none is needed) or -errno. */
int pm_reaper_start(struct pm_region *r);

/* At close, after our own leave: tell the cleaner, and when wait is set
 * (we were the last user, so it has files to remove) wait until it is
 * done (at most the lock deadline and a second). */
void pm_reaper_finish(struct pm_region *r, bool wait);

/* Leave the region as a user: under the mutex, the last user (nobody
 * holds it any more) removes its files. Returns true when we were the
 * last. r->fd is the rendezvous file (region.c). */
bool pm_region_leave(struct pm_region *r);

#endif
