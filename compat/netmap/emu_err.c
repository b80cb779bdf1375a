/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The /dev/netmap emulation's errors: the one-line reason of a failed
 * request, kept per thread for libnetmap's nmctx and printed otherwise.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_priv.h"

static __thread char last_err[256];
static __thread bool quiet;

const char *nme_last_error(void)
{
	return last_err;
}

void nme_quiet_errors(bool q)
{
	quiet = q;
}

/* Record the one-line reason of a failed request; the netmap module would
 * put it in the kernel log, we put it on stderr (PKTMAP_NETMAP_QUIET=1
 * silences it) unless libnetmap reports it through its nmctx. */
int nme_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	/* one line, whatever bytes a program put in the names it passed */
	for (char *c = last_err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (!quiet) {
		const char *q = getenv("PKTMAP_NETMAP_QUIET");
		if (!q || strcmp(q, "1") != 0) {
			char line[300];
			int n = snprintf(line, sizeof(line), "pktmap netmap: %s\n",
					 last_err);
			if (n > 0 && write(2, line, (size_t)n) < 0)
				n = 0;
		}
	}
	errno = err;
	return -1;
}
