/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's hot reload (scrub.h, struct scrub_ctx): the rule set and the
 * manual ban list are each one pointer the workers read at the start of
 * a batch. A swap stores the new pointer, bumps the generation, and waits
 * (the writer, never a worker) until every worker is between batches or
 * has entered a batch after the bump; then nobody holds the old set and
 * it is freed. A worker's batch is therefore judged wholly by the set it
 * took at its start: never a mix, never none (the pointer is never NULL).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "scrub.h"

int scrub_ctx_init(struct scrub_ctx *c, struct scrub_rules *rules,
		   unsigned nworkers)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (nworkers == 0 || nworkers > SCRUB_MAX_WORKERS) {
		scrub_rules_free(rules);
		return -EINVAL;
	}
	rc = scrub_rules_hits_alloc(rules, nworkers);
	if (rc) {
		scrub_rules_free(rules);
		return rc;
	}
	c->nworkers = nworkers;
	for (unsigned i = 0; i < SCRUB_MAX_WORKERS; i++)
		atomic_init(&c->w[i].epoch, SCRUB_IDLE);
	atomic_init(&c->rules, rules);
	atomic_init(&c->bans, NULL);
	atomic_init(&c->gen, 1);
	return 0;
}

void scrub_ctx_fini(struct scrub_ctx *c)
{
	/* (the workers have stopped: relaxed) */
	scrub_rules_free(atomic_load_explicit(&c->rules, memory_order_relaxed));
	scrub_bans_free(atomic_load_explicit(&c->bans, memory_order_relaxed));
	atomic_store_explicit(&c->rules, NULL, memory_order_relaxed);
	atomic_store_explicit(&c->bans, NULL, memory_order_relaxed);
}

/* After a pointer swap: wait until no worker can still be in a batch
 * that began before it. Workers finish a batch in microseconds, so the
 * writer (the control thread) polls with short naps. */
static void wait_readers(struct scrub_ctx *c)
{
	/* seq_cst: the bump must not pass the pointer store before it, nor
	 * the epoch loads after it (the fence below orders the loads). */
	uint64_t g = atomic_fetch_add_explicit(&c->gen, 1,
					       memory_order_seq_cst) + 1;

	/* Pairs with the fence in scrub_ctx_enter(). */
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned i = 0; i < c->nworkers; i++) {
		for (;;) {
			uint64_t e = atomic_load_explicit(&c->w[i].epoch,
							  memory_order_acquire);

			if (e == SCRUB_IDLE || e >= g)
				break;
			struct timespec ts = {0, 50000};

			nanosleep(&ts, NULL);
		}
	}
}

int scrub_ctx_swap_rules(struct scrub_ctx *c, struct scrub_rules *r)
{
	struct scrub_rules *old;
	int rc = scrub_rules_hits_alloc(r, c->nworkers);

	if (rc) {
		scrub_rules_free(r);
		return rc;
	}
	old = atomic_exchange_explicit(&c->rules, r, memory_order_acq_rel);
	wait_readers(c);
	scrub_rules_free(old);
	return 0;
}

int scrub_ctx_ban(struct scrub_ctx *c, const uint8_t addr[16], bool ban,
		  uint64_t until_ns, uint64_t now_ns)
{
	/* (only the writer, this thread, stores it: relaxed) */
	struct scrub_bans *old = atomic_load_explicit(&c->bans,
						      memory_order_relaxed);
	struct scrub_bans *b;
	int rc = scrub_bans_edit(old, addr, ban, until_ns, now_ns, &b);

	if (rc)
		return rc;
	atomic_store_explicit(&c->bans, b, memory_order_release);
	wait_readers(c);
	scrub_bans_free(old);
	return 0;
}
