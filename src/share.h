// SPDX-License-Identifier: BSD-2-Clause
/*
 * Handing a region's sealed memfd to the members of the group it is
 * shared with, or to our own uid when /proc may refuse it, over an
 * abstract unix socket (share.c).
 */
#ifndef PKTMAP_SHARE_H
#define PKTMAP_SHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* How long a joiner waits for one holder's answer before trying the
 * next. */
#define PM_SHARE_WAIT_MS 1000

/* The gid of no group: serve our uid (and root) only. */
#define PM_SHARE_NO_GROUP UINT32_MAX

struct pm_serve;

/* This process's permitted capabilities (bit CAP_X), all of them for
 * root if the kernel will not say. */
uint64_t pm_caps_permitted(void);

/* Could a process of our own uid be refused our memfd in /proc/PID/fd
 * (we hold capabilities, or are not dumpable)? Then a region not shared
 * with a group is served too, by our cleaner (reap.c). */
bool pm_share_guarded(void);

/* A listening socket (close-on-exec) at a fresh name of ours. Returns it,
 * with the random part of its name in *nonce, or -errno. */
int pm_share_listen(uint32_t *nonce);

/* Accept one caller on lfd (nonblocking: none waiting is fine) and, if it
 * is our uid, root or a member of group gid (none for PM_SHARE_NO_GROUP),
 * pass it mfd; then close the connection. Nothing but system calls when
 * gid is PM_SHARE_NO_GROUP. */
void pm_share_answer(int lfd, int mfd, uint32_t gid);

/* Serve the sealed memfd mfd, from a thread of its own, to our uid, root
 * and members of group gid. Returns 0 with the server in *out and the
 * random part of its socket's name in *nonce, or -errno. */
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
