/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Reloading the router's routes while it forwards (router.h,
 * rt_reload_routes()): the RX stages read the lpm table through a
 * pointer of their port (p->rx.lpm) that only their thread writes. A
 * reload builds the new table aside, publishes it with a new generation
 * number, and each thread, at the start of its next round, points its
 * stages at it and says so (lpm_seen). Once every thread with RX stages
 * has, no stage can be reading the old table and it is freed: a frame is
 * classified wholly on the old table or wholly on the new one, and the
 * fast path pays one load of the generation a round.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "router.h"

/* Has every thread with RX stages moved to generation g? */
static bool moved(struct rt_router *rt, uint32_t g)
{
	for (unsigned k = 0; k < rt->nthreads; k++) {
		struct rt_thread *t = &rt->th[k];

		if (t->started && t->nrx &&
		    atomic_load_explicit(&t->lpm_seen, memory_order_acquire) != g)
			return false;
	}
	return true;
}

/* Free a table that no stage reads any more (not the one rt_setup()
 * built, which is part of *rt). */
static void table_free(struct rt_router *rt, struct rt_lpm *t)
{
	if (!t || t == &rt->lpm)
		return;
	rt_lpm_free(t);
	free(t);
}

/* How long a reload waits for the threads before it keeps the old table
 * until rt_teardown() rather than free it. */
#define RT_RELOAD_WAIT_NS 10000000000ull

/* Wait until every RX thread has moved to generation g, or the router
 * stops (its threads may then be anywhere in a round until joined), or
 * RT_RELOAD_WAIT_NS passed (a thread held up in a sync: the library's
 * own waits end within seconds; the old table is then kept until
 * rt_teardown()). Returns true when they have moved. A thread looks at the
 * generation at the start of each round, and a round ends within one
 * poll timeout, so this normally waits FWD_POLL_MS at most; it looks
 * every millisecond. */
static bool wait_moved(struct rt_router *rt, uint32_t g)
{
	struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
	uint64_t end = fwd_now_ns() + RT_RELOAD_WAIT_NS;

	while (!moved(rt, g)) {
		if (rt_stopping(rt))
			return false;
		if (fwd_now_ns() > end)
			return false;
		nanosleep(&ms, NULL);
	}
	return true;
}

/* Read and build the table of `path` into a new *out. Returns 0 or
 * -errno with rt->err set. */
static int build(struct rt_router *rt, const char *path, struct rt_lpm **out)
{
	struct rt_route *routes = NULL;
	struct rt_lpm *t;
	uint32_t nr = 0;
	char err[400];
	int rc;

	if (rt_lpm_read(path, rt->n, &routes, &nr, err, sizeof(err))) {
		snprintf(rt->err, sizeof(rt->err), "routes: %s", err);
		return -EINVAL;
	}
	t = malloc(sizeof(*t));
	rc = t ? rt_lpm_build(t, routes, nr) : -ENOMEM;
	free(routes);
	if (rc) {
		free(t);
		snprintf(rt->err, sizeof(rt->err), "%s: %s", path,
			 rc == -ENOSPC ? "too many prefixes longer than /24 "
					 "(at most 32768 /24s with longer ones)"
				       : "out of memory");
		return rc == -ENOSPC ? -EINVAL : rc;
	}
	*out = t;
	return 0;
}

int rt_reload_routes(struct rt_router *rt, const char *path)
{
	struct rt_lpm *t, *old = rt->lpm_live;
	uint32_t g;
	int rc;

	if (rt->o->mode != RT_LPM) {
		snprintf(rt->err, sizeof(rt->err), "routes are for mode lpm "
			 "(this router runs mode %s)", rt_mode_name(rt->o->mode));
		return -ENOTSUP;
	}
	if (rt->nretired == RT_LPM_RETIRED_MAX) {
		snprintf(rt->err, sizeof(rt->err), "%u earlier tables still wait "
			 "for a thread held up: restart the router",
			 RT_LPM_RETIRED_MAX);
		return -EBUSY;
	}
	rc = build(rt, path, &t);
	if (rc)
		return rc;
	g = atomic_load_explicit(&rt->lpm_gen, memory_order_relaxed) + 1;
	atomic_store_explicit(&rt->lpm_next, t, memory_order_relaxed);
	/* pairs with the acquire load in rt_lpm_adopt() */
	atomic_store_explicit(&rt->lpm_gen, g, memory_order_release);
	rt->lpm_live = t;
	if (wait_moved(rt, g))
		table_free(rt, old);
	else /* room checked above */
		rt->lpm_retired[rt->nretired++] = old;
	return 0;
}

void rt_reload_free(struct rt_router *rt)
{
	for (unsigned k = 0; k < rt->nretired; k++)
		table_free(rt, rt->lpm_retired[k]);
	rt->nretired = 0;
	if (rt->lpm_live != &rt->lpm)
		table_free(rt, rt->lpm_live);
	rt->lpm_live = &rt->lpm;
}
