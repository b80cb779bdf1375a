/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Helpers shared by `pktmap bridge` and `pktmap router`.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fwd_cli.h"

static void on_sigterm(int sig)
{
	(void)sig;
	atomic_store_explicit(&run_stop_flag, 1, memory_order_relaxed);
}

void fwdcli_soft_sigterm(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigterm; /* no SA_RESTART: waits return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
}

int fwdcli_open(const char *cmd, const char *name,
	     struct pktmap_open_opts *o, struct pktmap_port **out)
{
	char errbuf[512] = "";
	int rc;

	o->sz = sizeof(*o);
	o->errbuf = errbuf;
	o->errbuf_len = sizeof(errbuf);
	rc = pktmap_open(out, name, o);
	o->errbuf = NULL;
	o->errbuf_len = 0;
	if (rc == 0)
		return 0;
	*out = NULL;
	if (errbuf[0])
		cli_err("%s: %s", cmd, errbuf);
	else
		cli_err("%s: %s: %s", cmd, name, pktmap_strerror(rc));
	/* a name the library cannot parse is a usage error */
	return rc == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
}

int fwdcli_parse_cpus(const char *s, int *cpus, unsigned max, char *err,
		   unsigned errlen)
{
	const char *p = s;
	unsigned n = 0;

	if (!*p)
		goto bad;
	while (*p) {
		char *e;
		unsigned long lo, hi;

		if (!isdigit((unsigned char)*p))
			goto bad;
		lo = strtoul(p, &e, 10);
		hi = lo;
		p = e;
		if (*p == '-') {
			if (!isdigit((unsigned char)p[1]))
				goto bad;
			hi = strtoul(p + 1, &e, 10);
			p = e;
		}
		if (lo > hi || hi >= CPU_SETSIZE) {
			snprintf(err, errlen, "'%s': CPUs go from 0 to %d, ranges "
				 "upwards", s, CPU_SETSIZE - 1);
			return -1;
		}
		for (unsigned long c = lo; c <= hi; c++) {
			if (n == max) {
				snprintf(err, errlen, "'%s': more than %u CPUs", s,
					 max);
				return -1;
			}
			cpus[n++] = (int)c;
		}
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	return (int)n;
bad:
	snprintf(err, errlen, "'%s' is not a CPU list (0,1 or 0-3)", s);
	return -1;
}

#define U(x) ((unsigned long long)(x))

void fwdcli_json_lib(FILE *o, const struct pktmap_stats *s)
{
	fprintf(o, "\"lib_tx_packets\":%llu,\"lib_rx_packets\":%llu,"
		"\"tx_syncs\":%llu,\"rx_syncs\":%llu,\"drop_invalid\":%llu,"
		"\"drop_too_long\":%llu,\"drop_backend\":%llu,"
		"\"invalid_ring\":%llu,\"poll_sleeps\":%llu,\"wakeups_sent\":%llu",
		U(s->tx_packets), U(s->rx_packets), U(s->tx_syncs),
		U(s->rx_syncs), U(s->drop_invalid), U(s->drop_too_long),
		U(s->drop_backend), U(s->invalid_ring), U(s->poll_sleeps),
		U(s->wakeups_sent));
}

