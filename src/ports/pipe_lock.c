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
 *
 * A waiter takes the lock over from a holder that died. A pid alone
 * cannot say so: a pid is reused, and a holder killed inside its sync
 * whose pid went to another process would look alive forever (5 s, then
 * EBUSY). So the holder also leaves an owner record beside the word
 * (q->tx_owner, q->rx_owner): its pid and its start time, field 22 of
 * /proc/PID/stat, read once at open (pm_pipe_owner_self()). A live
 * process with the holder's pid and another start time is not the
 * holder. The record is written just after the compare-and-swap that
 * takes the word and cleared just before the store that frees it (or,
 * on a takeover, before the word changes hands), so a record that names
 * the word's pid is that holder's: one left by an earlier process of the
 * same pid never is.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pipe.h"

/* The state (field 3) and start time (field 22, the low half: clock
 * ticks since boot) in the text of a /proc/PID/stat, st (NUL-ended);
 * false when st does not hold them. The kernel wrote it, but the command
 * name, in parentheses, is whatever the process set (prctl): it may hold
 * spaces and ')', so the fields are counted from the last ')'. A start
 * time that is not a number is 0: none. */
bool pm_pipe_stat_parse(const char *st, char *state, uint32_t *start)
{
	const char *e = strrchr(st, ')');
	if (!e || e[1] != ' ' || !e[2] || e[2] == ' ')
		return false;
	*state = e[2];
	*start = 0;
	/* e + 2 is field 3; field 22 is 19 spaces on. */
	const char *c = e + 2;
	for (int i = 0; i < 19 && c; i++) {
		c = strchr(c, ' ');
		c = c ? c + 1 : NULL;
	}
	if (c && *c >= '0' && *c <= '9')
		*start = (uint32_t)strtoull(c, NULL, 10);
	return true;
}

/* pm_pipe_stat_parse() of process pid's /proc/PID/stat; false when it
 * cannot be read (gone, or /proc hides it). */
static bool proc_stat(uint32_t pid, char *state, uint32_t *start)
{
	char path[32], st[1024];
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = 0;
	return pm_pipe_stat_parse(st, state, start);
}

uint64_t pm_pipe_owner_self(void)
{
	uint32_t pid = (uint32_t)getpid(), start = 0;
	char state;
	if (!proc_stat(pid, &state, &start))
		start = 0;
	return owner_record(start, pid);
}

/* Has the holder h of a sync word died (gone, a zombie nobody reaped,
 * or a process that started at another time than the one whose owner
 * record rec is: its pid reused)? A record that names another pid, or
 * no start time, says nothing: then the pid alone decides, as before
 * records (a holder between its compare-and-swap and its record, or an
 * older library). Our own pid is a holder that died only when the
 * record says so (another thread of ours, or a child that syncs our
 * open after fork(), may hold it). */
static bool holder_gone(const struct pipe_priv *pp, uint32_t h, uint64_t rec)
{
	uint32_t rstart = OWNER_PID(rec) == h ? OWNER_START(rec) : 0;
	if (h == pp->pid)
		return rstart && rstart != OWNER_START(pp->owner);
	if (kill((pid_t)h, 0) != 0 && errno == ESRCH)
		return true;
	char state;
	uint32_t start;
	if (!proc_stat(h, &state, &start))
		return false;
	if (state == 'Z' || state == 'X')
		return true;
	return rstart && start && start != rstart;
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
	struct pipe_kpriv *kp = k->priv;
	_Atomic uint64_t *w = kp->sync;
	struct timespec t0, now, pause = { 0, 20000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		/* Acquire: pairs with the release in sync_release() (and a
		 * takeover's), so that the record read next is the holder's or
		 * newer, never one its predecessor cleared. */
		uint64_t v = atomic_load_explicit(w, memory_order_acquire);
		uint32_t h = SYNC_PID(v);
		uint64_t rec = atomic_load_explicit(kp->owner, memory_order_relaxed);
		if (h == 0 || holder_gone(pp, h, rec)) {
			/* A dead holder's view is the queue's: the others
			 * reload (a new generation). Its record goes before
			 * the word changes hands (release), then ours. */
			if (h != 0)
				atomic_store_explicit(kp->owner, 0, memory_order_relaxed);
			if (!atomic_compare_exchange_strong_explicit(
				    w, &v, sync_word(SYNC_GEN(v) + (h != 0), pp->pid),
				    memory_order_acq_rel, memory_order_relaxed))
				continue;
			atomic_store_explicit(kp->owner, pp->owner, memory_order_relaxed);
			return h != 0;
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
