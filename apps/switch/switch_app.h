/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap switch: a thin command line over the switch component
 * (src/fwd/switch_srv.h: the data path, the threads and the control
 * socket's server). Here: the options and the main steps (switch.c), the
 * report lines and summaries (switch_report.c), and the requests to a
 * running switch: --list, -d, -a (switch_client.c). switch.c uses the
 * other two; they use only the component.
 */
#ifndef PKTMAP_APPS_SWITCH_APP_H
#define PKTMAP_APPS_SWITCH_APP_H

#include <stdbool.h>
#include <stdint.h>

#include "switch_srv.h" /* src/fwd */
#include "vale_proto.h" /* src */

#define SWA_MAX_ATTACH 32

struct swa {
	/* Options. */
	const char *name;                  /* "vale0" */
	const char *attach[SWA_MAX_ATTACH];/* -a, -H (expanded), -n (tap:) */
	const char *attach_as[SWA_MAX_ATTACH];
	unsigned nattach;
	const char *detach;                /* -d */
	bool list;                         /* -l */
	double interval;
	double aging_s;
	uint64_t mac_entries;
	uint64_t nthreads;                 /* -p */
	int cpu;                           /* --affinity, -1: none */
	bool json, quiet;
	int verbose;
	/* The switch. */
	struct sws srv;
	uint64_t t_start, t_end;
	/* Interval state, per port id (epoch: sws.epoch[id] when read). */
	uint64_t last_ns;
	uint64_t last_rx[SW_MAX_PORTS], last_tx[SW_MAX_PORTS];
	uint32_t last_epoch[SW_MAX_PORTS];
	uint64_t last_drop;
};

/* Requests to a running switch: `pktmap switch --list NAME`, `-d PORT`
 * and `-a PORT`. Return the exit status. */
int swa_client_list(const char *sw, bool json);
int swa_client_op(const char *sw, enum vale_op op, const char *port,
		  const char *arg);
/* Is switch `sw` running (its socket answers)? */
bool swa_running(const char *sw);

/* Output: a report line (the component's report callback: ctx is the
 * struct swa), the summary at the end. */
void swa_line(void *ctx, struct sws *s);
void swa_summary(struct swa *a);

#endif /* PKTMAP_APPS_SWITCH_APP_H */
