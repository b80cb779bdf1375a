// SPDX-License-Identifier: BSD-2-Clause
/*
 * Handing a region's sealed memfd to the members of the group it is
 * shared with, over an abstract unix socket (share.c).
 */
#ifndef PKTMAP_SHARE_H
#define PKTMAP_SHARE_H

#include <stdint.h>
#include <sys/types.h>

/* How long a joiner waits for one holder's answer before trying the
 * next. */
#define PM_SHARE_WAIT_MS 1000

struct pm_serve;

/* Serve the sealed memfd mfd, from a thread of its own, to our uid and to
 * members of group gid. Returns 0 with the server in *out and the random
 * part of its socket's name in *nonce, or -errno. */
int pm_share_serve(int mfd, uint32_t gid, struct pm_serve **out,
		   uint32_t *nonce);

/* Stop serving (waits for the thread) and free s; NULL is fine. */
void pm_share_stop(struct pm_serve *s);

/* Ask the holder (pid, nonce) for its memfd. Returns the descriptor
 * (sealed against shrinking and growing), or -errno: -ECONNREFUSED for
 * no such holder, -ETIMEDOUT when it did not answer, -EPERM for a memfd
 * that is not sealed. */
int pm_share_fetch(int32_t pid, uint32_t nonce);

#endif
