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

/* A listening socket (close-on-exec, nonblocking) at a fresh name of
 * ours. Returns it, with the random part of its name in *nonce, or
 * -errno. */
int pm_share_listen(uint32_t *nonce);

/* The most descriptors one message of pm_share_send() carries. */
#define PM_SHARE_MAX_FDS 2

/* Send len bytes of data and n descriptors (0 to PM_SHARE_MAX_FDS) in one
 * message on the unix socket sock, never blocking, never raising SIGPIPE,
 * with system calls only. Returns 0 or -errno (-EIO when cut short). */
int pm_share_send(int sock, const void *data, size_t len, const int *fds,
		  int n);

/* Take one message (up to len bytes) off sock, never blocking, with
 * system calls only: the descriptors it carries go to fds[0..n) (n at
 * most PM_SHARE_MAX_FDS; -1 where none came; close-on-exec), any more
 * are dropped. Returns its length (0 at end of stream) or -errno. */
ssize_t pm_share_recv(int sock, void *data, size_t len, int *fds, int n);

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
