/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker: pktmap's XDP program kept attached ahead of the grants
 * (broker.h, docs/broker.md "What is attached when").
 *
 * Attaching an XDP program is the slow part of a grant: the kernel's
 * attach on a veth takes 10 to 25 ms, joining an attached program and
 * filling its XSKMAP about 1 ms. So the broker attaches the program (and
 * with it the XSKMAP the grants fill) to every interface its policy names
 * for xdp: when it starts and at each reload, and holds it (a descriptor
 * of its BPF link) while the policy names the interface, whether a client
 * uses it or not. An interface that is not there yet when the policy is
 * read, or that a prefix rule names, gets its hold at its first grant.
 * A program of someone else's on an interface is left alone: the hold
 * fails with the library's line, logged, and so do the grants there.
 */
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include <pktmap/broker.h>

#include "broker.h"

static struct hold *find(struct broker *b, const char *iface)
{
	for (uint32_t i = 0; i < b->nholds; i++)
		if (strcmp(b->holds[i].iface, iface) == 0)
			return &b->holds[i];
	return NULL;
}

static void drop(struct broker *b, struct hold *h, const char *why)
{
	pktmap_broker_xsk_detach(h->h);
	broker_log("let go of the XDP program on %s: %s", h->iface, why);
	*h = b->holds[--b->nholds];
}

/* Hold the program on iface; `when` says why now, for the log. */
static void hold(struct broker *b, const char *iface, int ifindex,
		 const char *when)
{
	char err[300];
	struct pktmap_broker_xsk *x = NULL;
	if (b->nholds >= BROKER_MAX_HOLDS) {
		broker_log("xdp:%s: not held %s: %u interfaces held already (its "
			   "grants attach the program themselves)", iface, when,
			   BROKER_MAX_HOLDS);
		return;
	}
	if (pktmap_broker_xdp_hold(&x, ifindex, iface, err, sizeof(err))) {
		broker_log("xdp:%s: cannot hold the XDP program %s: %s", iface, when,
			   err);
		return;
	}
	struct hold *h = &b->holds[b->nholds++];
	snprintf(h->iface, sizeof(h->iface), "%s", iface);
	h->ifindex = ifindex;
	h->h = x;
	broker_log("hold pktmap's XDP program on %s %s (%s mode)", iface, when,
		   pktmap_broker_xsk_mode(x));
}

/* Still the interface it was, with our program attached. */
static bool fresh(const struct hold *h, int ifindex)
{
	return h->ifindex == ifindex && pktmap_broker_xdp_held(h->h);
}

void broker_hold_sync(struct broker *b)
{
	for (uint32_t i = b->nholds; i-- > 0;) {
		struct hold *h = &b->holds[i];
		if (!policy_names_iface(&b->pol, POL_XDP, h->iface))
			drop(b, h, "no rule names it");
		else if (!fresh(h, (int)if_nametoindex(h->iface)))
			drop(b, h, "the interface or its program changed");
	}
	for (uint32_t i = 0; i < b->pol.n; i++) {
		const struct pol_rule *r = &b->pol.rules[i];
		if (r->backend != POL_XDP || r->own_netns || r->prefix ||
		    find(b, r->iface))
			continue;
		int ifindex = (int)if_nametoindex(r->iface);
		if (ifindex)
			hold(b, r->iface, ifindex, "ahead of its grants");
		else
			broker_log("xdp:%s: no such interface yet: the XDP program "
				   "is attached at its first grant", r->iface);
	}
}

void broker_hold_ensure(struct broker *b, const char *iface, int ifindex)
{
	struct hold *h = find(b, iface);
	if (h && fresh(h, ifindex))
		return;
	if (h)
		drop(b, h, "the interface or its program changed");
	hold(b, iface, ifindex, "at its first grant");
}

void broker_hold_drop_all(struct broker *b)
{
	while (b->nholds)
		drop(b, &b->holds[b->nholds - 1], "the broker stops");
}
