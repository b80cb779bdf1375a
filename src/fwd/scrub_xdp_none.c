/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's kernel fast path in a build without AF_XDP (meson
 * -Dxdp=disabled): there is no xdp: port to attach to, so attaching says
 * so and scrub judges every frame in user space.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "scrub_xdp.h"

int scrub_xdp_attach(struct pktmap_port *xdp_port, struct scrub_xdp **out,
		     char *err, size_t errlen)
{
	(void)xdp_port;
	*out = NULL;
	if (err && errlen)
		snprintf(err, errlen, "this pktmap was built without AF_XDP "
			 "(meson -Dxdp=disabled): no kernel path");
	return -EOPNOTSUPP;
}

int scrub_xdp_load(struct scrub_xdp *x, const struct scrub_xdp_prefix *prefixes,
		   size_t n)
{
	(void)x;
	(void)prefixes;
	(void)n;
	return -EOPNOTSUPP;
}

int scrub_xdp_ban(struct scrub_xdp *x, int family, const uint8_t addr[16],
		  uint64_t until_ns, uint32_t rule)
{
	(void)x;
	(void)family;
	(void)addr;
	(void)until_ns;
	(void)rule;
	return -EOPNOTSUPP;
}

int scrub_xdp_unban(struct scrub_xdp *x, int family, const uint8_t addr[16])
{
	(void)x;
	(void)family;
	(void)addr;
	return -EOPNOTSUPP;
}

uint64_t scrub_xdp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int scrub_xdp_rule_counts(struct scrub_xdp *x, uint64_t *pkts,
			  uint64_t *bytes, uint32_t nrules)
{
	(void)x;
	(void)pkts;
	(void)bytes;
	(void)nrules;
	return -EOPNOTSUPP;
}

void scrub_xdp_detach(struct scrub_xdp *x)
{
	(void)x;
}
