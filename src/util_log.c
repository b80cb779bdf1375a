// SPDX-License-Identifier: BSD-2-Clause
/*
 * Logging and error words, at the bottom of the library: every layer above
 * (the checker, the back ends, the public entry points) reports through
 * these. Lines go to the port's callback when it has one, else to the
 * process-wide sink of pktmap_set_log(); the library never prints.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "port.h"
#include "util.h"

/* The default log sink, set by pktmap_set_log(). Process-wide by design,
 * like libbpf_set_print(): a port may carry its own instead. */
static pktmap_log_fn default_log;
static void *default_log_ctx;
static int default_log_level = PKTMAP_LOG_INFO;

void pktmap_set_log(pktmap_log_fn fn, void *ctx, enum pktmap_log_level max)
{
	default_log = fn;
	default_log_ctx = ctx;
	default_log_level = (int)max;
}

__attribute__((format(printf, 3, 0)))
static void vlog(const struct pktmap_port *p, enum pktmap_log_level lvl,
		 const char *fmt, va_list ap)
{
	pktmap_log_fn fn = p && p->log ? p->log : default_log;
	void *ctx = p && p->log ? p->log_ctx : default_log_ctx;
	int max = p && p->log ? p->log_level : default_log_level;
	if (!fn || (int)lvl > max)
		return;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	fn(ctx, lvl, line);
}

void pm_log(const struct pktmap_port *p, enum pktmap_log_level lvl,
	    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(p, lvl, fmt, ap);
	va_end(ap);
}

void pm_log_ratelimited(struct pktmap_port *p, struct pm_ratelimit *rl,
			const char *fmt, ...)
{
	int64_t t = pm_clock_sec(CLOCK_MONOTONIC_COARSE);
	t = t ? t : 1;
	int64_t last = atomic_load_explicit(&rl->last, memory_order_relaxed);
	/* Two threads may report at once: the one that moves `last` logs. */
	if ((last && t - last < 1) ||
	    !atomic_compare_exchange_strong_explicit(&rl->last, &last, t,
						     memory_order_relaxed,
						     memory_order_relaxed)) {
		atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
		return;
	}
	char line[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	uint64_t sup = atomic_exchange_explicit(&rl->suppressed, 0,
						memory_order_relaxed);
	if (sup)
		pm_log(p, PKTMAP_LOG_WARN, "%s (and %llu more like it)", line,
		       (unsigned long long)sup);
	else
		pm_log(p, PKTMAP_LOG_WARN, "%s", line);
}

int pm_open_error(struct pktmap_port *p, int err, const char *fmt, ...)
{
	char what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* Said once: to the caller's errbuf when it gave one, else to the
	 * log. */
	if (p->errbuf && p->errbuf_len)
		snprintf(p->errbuf, p->errbuf_len, "%s: %s", p->name, what);
	else
		pm_log(p, PKTMAP_LOG_ERR, "%s: %s", p->name, what);
	return err < 0 ? err : -err;
}

const char *pktmap_strerror(int err)
{
	if (err > 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case -EPROTO:
		return "the peer sharing this ring broke the ring protocol";
	case -EINVAL:
		return "invalid argument, or a ring index out of range";
	case -ENODATA:
		return "the source has ended";
	default: {
		/* strerror() is not thread-safe; strerrordesc_np() is. */
		const char *s = strerrordesc_np(-err);
		return s ? s : "unknown error";
	}
	}
}
