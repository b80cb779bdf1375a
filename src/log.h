/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Logging from inside the library: the port's log callback, rate-limited
 * lines and the one-line open error (src/util_log.c, below everything
 * else in the library).
 */
#ifndef PKTMAP_LOG_H
#define PKTMAP_LOG_H

#include <stdatomic.h>
#include <stdint.h>

#include "pktmap/pktmap.h"

struct pktmap_port;

/* At most one log line a second; any thread may use it. */
struct pm_ratelimit {
	_Atomic int64_t last;
	_Atomic uint64_t suppressed;
};

/* Logging from inside the library (through the port's callback):
 * src/util_log.c, below everything else in the library. */
void pm_log(const struct pktmap_port *p, enum pktmap_log_level lvl,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* At most one line a second per limiter; the count of the lines held
 * back is appended to the next one. */
void pm_log_ratelimited(struct pktmap_port *p, struct pm_ratelimit *rl,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Record the one-line open error "NAME: what: remedy" and return err. */
int pm_open_error(struct pktmap_port *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* PKTMAP_LOG_H */
