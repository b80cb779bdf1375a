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

/* This process's permitted capabilities (bit CAP_X), all of them for
 * root if the kernel will not say. */
uint64_t pm_caps_permitted(void);

/* After a successful open of a named region by a process that can change
 * its uid: fork the cleaner (and set r->reaping to our pid), which will
 * call leave(r) (region.c: under the mutex, the last user removes the
 * files; if others still use the region, wait for the last of them) once
 * the opener has closed. Returns 0 (also when none is
 * needed) or -errno. */
int pm_reaper_start(struct pm_region *r, bool (*leave)(struct pm_region *r));

/* At close, after our own leave: tell the cleaner, and when wait is set
 * (we were the last user, so it has files to remove) wait until it is
 * done (at most the lock deadline and a second). */
void pm_reaper_finish(struct pm_region *r, bool wait);

#endif
