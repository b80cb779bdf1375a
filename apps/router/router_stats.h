/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap router's output (router_stats.c): a line per interval, the
 * summary, the JSON object; read from the counters the forwarding
 * component's stages publish (src/fwd/router.h).
 */
#ifndef PKTMAP_APPS_ROUTER_STATS_H
#define PKTMAP_APPS_ROUTER_STATS_H

#include <stdio.h>

#include "router.h"

struct router_report {
	uint64_t ns, rx[RT_MAX_PORTS], tx[RT_MAX_PORTS], drop;
};
void router_report_init(struct rt_router *rt, struct router_report *r);
void router_interval(struct rt_router *rt, struct router_report *r, FILE *out);
void router_summary(struct rt_router *rt, FILE *out);
void router_json(struct rt_router *rt);

#endif /* PKTMAP_APPS_ROUTER_STATS_H */
