/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What the forwarding commands (bridge, router) share on top of the
 * forwarding component (src/fwd/fwd.h): opening a port with its error on
 * one line, SIGTERM, CPU lists, bits of JSON output. Names are fwdcli_*:
 * fwd_* is the component's prefix.
 */
#ifndef PKTMAP_APPS_FWD_H
#define PKTMAP_APPS_FWD_H

#include <stdint.h>
#include <stdio.h>

#include <pktmap/pktmap.h>

#include "fwd.h"
#include "run.h"

/* Open `name` with the options `o` (o->errbuf is set here: the library
 * then says the open error only there) and print the error once, as
 * "pktmap: <cmd>: <error>". Returns 0 or an exit status. */
int fwdcli_open(const char *cmd, const char *name,
	     struct pktmap_open_opts *o, struct pktmap_port **out);

/* After run_init(): SIGTERM only asks to stop, however often it comes
 * (`timeout` and service managers send it twice: to the process and to
 * its group); a second SIGINT still quits at once. A forwarder that is
 * giving its buffers back must not be cut short by the duplicate. */
void fwdcli_soft_sigterm(void);

/* Parse a CPU list "0,2,4-7" into cpus[] (at most max). Returns the count,
 * or -1 with a message in err. */
int fwdcli_parse_cpus(const char *s, int *cpus, unsigned max, char *err,
		   unsigned errlen);

/* The library's counters of a port as JSON members (no braces). */
void fwdcli_json_lib(FILE *o, const struct pktmap_stats *s);

#endif /* PKTMAP_APPS_FWD_H */
