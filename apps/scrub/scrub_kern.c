/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub's kernel fast path (the forwarding component's scrub_xdp.h):
 * on an xdp: input
 * the allow and deny lists and the bans also go into the maps of
 * pktmap's scrub XDP program, so listed and banned sources are dropped in
 * XDP before any copy; the kernel's per-rule counts are added to the
 * workers' own (a frame dropped there never reaches a worker, so nothing
 * is counted twice). The kernel's rule ids are the rule set's; bans are
 * counted apart (SCRUB_XDP_BANNED). When the whole rule set is
 * representable there, the kernel also applies the limits (and, in host
 * mode, passes clean frames to the stack itself): the set is marked
 * kern_judged before it is swapped in, and the workers skip the limits
 * for what the kernel judged. The kernel counts by reason too; its
 * counts since the first load are added to the workers'.
 *
 * Kernel bans are CLOCK_MONOTONIC deadlines; with --clock manual a ban's
 * remaining time is carried over to the kernel's clock. Bans the kernel
 * holds are remembered (up to SCRUB_KERN_MAX_BANS) so that expired ones
 * are removed from its map (scrub_kern_tick).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fwd.h"
#include "scrub_app.h"

#if __has_include("scrub_xdp.h")
#include "scrub_xdp.h"
#define HAVE_SCRUB_XDP 1
_Static_assert(SCRUB_KERN_NCOUNTS == SCRUB_XDP_NCOUNTS,
	       "scrub_app.h's count of the kernel's counters");
#else
#define HAVE_SCRUB_XDP 0
#endif

int scrub_kern_name(const char *in, char *out, size_t outlen)
{
	struct pktmap_name pn = {.sz = sizeof(pn)};
	const char *conf, *mem;
	int n;

	if (!HAVE_SCRUB_XDP || pktmap_name_parse(in, &pn, NULL, 0) ||
	    strcmp(pn.backend, "xdp") || pn.reg == NR_REG_SW) {
		n = snprintf(out, outlen, "%s", in);
		return n < 0 || (size_t)n >= outlen ? -1 : 0;
	}
	conf = strstr(in + pn.port_len, "@conf:");
	mem = strstr(in + pn.port_len, "@mem:");
	if (conf)
		n = snprintf(out, outlen, "%.*sprog=scrub,%s",
			     (int)(conf + 6 - in), in, conf + 6);
	else if (mem)
		n = snprintf(out, outlen, "%.*s@conf:prog=scrub%s",
			     (int)(mem - in), in, mem);
	else
		n = snprintf(out, outlen, "%s@conf:prog=scrub", in);
	return n < 0 || (size_t)n >= outlen ? -1 : 1;
}

#if HAVE_SCRUB_XDP

/* The kernel's address form: IPv4 in addr[0..4). */
static int to_kern(const uint8_t a[16], uint8_t out[16])
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	memset(out, 0, 16);
	if (!memcmp(a, mapped, 12)) {
		memcpy(out, a + 12, 4);
		return 4;
	}
	memcpy(out, a, 16);
	return 6;
}

/* Take the rule counts as they are now as the new rule set's zero
 * (under kern_lock); the reasons' zero is the first load's. */
static void baseline(struct scrub_app *a)
{
	if (scrub_xdp_rule_counts(a->kern, a->kern_base, NULL, SCRUB_XDP_NCOUNTS))
		return;
	if (!a->kern_loaded &&
	    scrub_xdp_reason_counts(a->kern, a->kern_rbase, NULL, SCRUB_NREASONS))
		return;
	a->kern_loaded = true;
}

int scrub_kern_load(struct scrub_app *a, struct scrub_rules *r)
{
	int rc;

	r->kern_judged = false;
	if (!a->kern)
		return 0;
	pthread_mutex_lock(&a->kern_lock);
	/* host mode: -o is -i's host rings */
	rc = scrub_xdp_load_rules(a->kern, r, a->o.out == a->o.host_name);
	if (rc >= 0) {
		r->kern_judged = rc == 1;
		baseline(a);
	}
	pthread_mutex_unlock(&a->kern_lock);
	return rc < 0 ? rc : 0;
}

int scrub_kern_attach(struct scrub_app *a, struct scrub_rules *r)
{
	char err[300];
	int rc;

	if (!a->kern_wanted)
		return 0;
	rc = scrub_xdp_attach(a->th[0].port[0], &a->kern, err, sizeof(err));
	if (rc) {
		cli_err("scrub: the kernel path on %s: %s", a->o.in, err);
		return -1;
	}
	rc = scrub_kern_load(a, r);
	if (rc) {
		cli_err("scrub: the kernel path on %s: loading the lists: %s",
			a->o.in, strerror(-rc));
		return -1;
	}
	return 0;
}

void scrub_kern_detach(struct scrub_app *a)
{
	scrub_xdp_detach(a->kern);
	a->kern = NULL;
}

/* Remember a kernel ban, forgetting the expired ones (unbanned in the
 * kernel) when the list is full. */
static void remember(struct scrub_app *a, const uint8_t k[16], int fam,
		     uint64_t until)
{
	for (uint32_t i = 0; i < a->nkbans; i++) {
		if (a->kbans[i].family == fam && !memcmp(a->kbans[i].addr, k, 16)) {
			a->kbans[i].until = until;
			return;
		}
	}
	if (a->nkbans == SCRUB_KERN_MAX_BANS || !a->kbans)
		return; /* the kernel keeps it until an unban; user space too */
	memcpy(a->kbans[a->nkbans].addr, k, 16);
	a->kbans[a->nkbans].family = fam;
	a->kbans[a->nkbans++].until = until;
}

void scrub_kern_ban(struct scrub_app *a, const uint8_t addr[16], bool on,
		    uint64_t until_ns)
{
	uint8_t k[16];
	int fam;

	if (!a->kern)
		return;
	fam = to_kern(addr, k);
	pthread_mutex_lock(&a->kern_lock);
	if (on) {
		uint64_t now = scrub_app_now(a), left = until_ns > now ?
			       until_ns - now : 0, kt = scrub_xdp_now_ns() + left;

		if (scrub_xdp_ban(a->kern, fam, k, kt, SCRUB_XDP_BANNED) == 0)
			remember(a, k, fam, kt);
	} else {
		scrub_xdp_unban(a->kern, fam, k);
	}
	pthread_mutex_unlock(&a->kern_lock);
}

void scrub_kern_tick(struct scrub_app *a)
{
	uint64_t now;
	uint32_t k = 0;

	if (!a->kern)
		return;
	now = scrub_xdp_now_ns();
	pthread_mutex_lock(&a->kern_lock);
	for (uint32_t i = 0; i < a->nkbans; i++) {
		if (a->kbans[i].until <= now)
			scrub_xdp_unban(a->kern, a->kbans[i].family, a->kbans[i].addr);
		else
			a->kbans[k++] = a->kbans[i];
	}
	a->nkbans = k;
	pthread_mutex_unlock(&a->kern_lock);
}

int scrub_kern_counts(struct scrub_app *a, uint32_t nrules, uint64_t *rule,
		      uint64_t *reason)
{
	uint64_t *now = a->kern_now, rnow[SCRUB_NREASONS];
	int ok = 0;

	if (!a->kern)
		return 0;
	pthread_mutex_lock(&a->kern_lock);
	if (a->kern_loaded &&
	    !scrub_xdp_rule_counts(a->kern, now, NULL, SCRUB_XDP_NCOUNTS) &&
	    !scrub_xdp_reason_counts(a->kern, rnow, NULL, SCRUB_NREASONS)) {
		for (uint32_t i = 0; i < SCRUB_XDP_MAX_RULES && i < nrules; i++)
			rule[i] += now[i] - a->kern_base[i];
		for (int k = 0; k < SCRUB_NREASONS; k++)
			reason[k] += rnow[k] - a->kern_rbase[k];
		ok = 1;
	}
	pthread_mutex_unlock(&a->kern_lock);
	return ok;
}

#else /* no kernel path in this build */

int scrub_kern_load(struct scrub_app *a, const struct scrub_rules *r)
{
	(void)a;
	(void)r;
	return 0;
}

int scrub_kern_attach(struct scrub_app *a, struct scrub_rules *r)
{
	(void)a;
	(void)r;
	return 0;
}

void scrub_kern_detach(struct scrub_app *a)
{
	(void)a;
}

void scrub_kern_ban(struct scrub_app *a, const uint8_t addr[16], bool on,
		    uint64_t until_ns)
{
	(void)a;
	(void)addr;
	(void)on;
	(void)until_ns;
}

void scrub_kern_tick(struct scrub_app *a)
{
	(void)a;
}

int scrub_kern_counts(struct scrub_app *a, uint32_t nrules, uint64_t *rule,
		      uint64_t *reason)
{
	(void)a;
	(void)nrules;
	(void)rule;
	(void)reason;
	return 0;
}

#endif
