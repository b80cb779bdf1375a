/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Monitors (src/monitor.c): "PORT/r", "/t", "/rt" open a monitor of an
 * open port PORT (a copy of each frame it receives, transmits, or both),
 * "/z" is refused. pm_monitor_open() serves pktmap_open() for such a
 * name (p: the open so far, for its error line). pm_monitor_sync() is
 * the sync of ring k of a port whose published monitor word is set.
 * pm_monitor_close() ends either side.
 */
#ifndef PKTMAP_MONITOR_H
#define PKTMAP_MONITOR_H

#include "name.h"
#include "port.h"

/* The public calls a monitor makes on its queue, handed down by port.c
 * (the layer above monitor.c). */
struct pm_api {
	int (*open)(struct pktmap_port **out, const char *name,
		    const struct pktmap_open_opts *opts);
	void (*close)(struct pktmap_port *p);
	int (*txsync)(struct pktmap_port *p);
};
int pm_monitor_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *opts, struct pktmap_port **out,
		    const struct pm_api *api);
int pm_monitor_sync(struct pktmap_port *p, struct pm_kring *k,
		    const struct pm_api *api);
void pm_monitor_close(struct pktmap_port *p);

#endif /* PKTMAP_MONITOR_H */
