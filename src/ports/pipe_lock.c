/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The sync word of one direction of a pipe's queue (q->tx_sync, the
 * writers'; q->rx_sync, the readers'): several opens may bind a ring
 * (pipe.c's claims), and their syncs take turns under it. Its low half
 * is the lock, the pid of the process inside a sync, or 0; its high half
 * the generation, counted up by every sync that moved slots and by a
 * takeover from a dead holder, so that a binder whose last sync saw
 * another generation reloads its view first (pipe_view.c). A lone binder
 * pays one compare-and-swap (sync_try()) and one store (sync_release())
 * per sync, both in pipe.h; this file is the contended path.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pipe.h"

/* Has process pid died (gone, or a zombie nobody reaped)? */
static bool pid_gone(uint32_t pid)
{
	if (kill((pid_t)pid, 0) != 0)
		return errno == ESRCH;
	char path[32], st[64] = "";
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	const char *e = strrchr(st, ')'); /* after "pid (comm)" */
	return n && e && (e[2] == 'Z' || e[2] == 'X');
}

/* Take ring k's sync lock: wait for its holder, or take it from a
 * holder that died (its sync left the queue as resumable as a closed
 * end's: pm_pipe_view() takes it up). 0, 1 when
 * taken from a dead holder, -EBUSY (said) after PM_LOCK_DEADLINE_MS of
 * a live holder, or at once when the port was opened with
 * PKTMAP_OPEN_NOWAIT (not said: the caller counts it). */
int pm_pipe_lock_wait(struct pktmap_port *p, struct pm_kring *k)
{
	struct pipe_priv *pp = p->priv;
	_Atomic uint64_t *w = sync_of(k);
	struct timespec t0, now, pause = { 0, 20000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint64_t v = atomic_load(w);
		uint32_t h = SYNC_PID(v);
		if (h == 0 || (h != pp->pid && pid_gone(h))) {
			/* A dead holder's view is the queue's: the others
			 * reload (a new generation). */
			if (atomic_compare_exchange_strong(
				    w, &v, sync_word(SYNC_GEN(v) + (h != 0), pp->pid)))
				return h != 0;
			continue;
		}
		if (pp->nowait)
			return -EBUSY;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 +
		    (now.tv_nsec - t0.tv_nsec) / 1000000 >= PM_LOCK_DEADLINE_MS) {
			pm_log_ratelimited(p, pm_rl_slot(p, (int)k->tx), "%s: %s "
					   "ring %u: process %u has been syncing "
					   "it for %d ms: stop it", p->name,
					   k->tx ? "TX" : "RX", k->ring->ringid,
					   h, PM_LOCK_DEADLINE_MS);
			return -EBUSY;
		}
		nanosleep(&pause, NULL);
	}
}
