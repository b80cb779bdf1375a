/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker's log: one line to stderr (the journal under systemd) for
 * every grant, refusal, revocation, release, attach and detach.
 */
#include <stdarg.h>
#include <stdio.h>

#include "broker.h"
#include "cli.h"

void broker_log(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	cli_one_line(line);
	fprintf(stderr, "pktmap broker: %s\n", line);
}
