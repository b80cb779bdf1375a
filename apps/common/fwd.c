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
#include "fwd.h"

static void on_sigterm(int sig)
{
	(void)sig;
	atomic_store(&run_stop_flag, 1);
}

void fwd_soft_sigterm(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigterm; /* no SA_RESTART: waits return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
}

int fwd_open(const char *cmd, const char *name,
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

uint32_t fwd_region_bufs(const char *const *names, unsigned n, unsigned i,
			 uint32_t extra)
{
	struct pktmap_name mine = {.sz = sizeof(mine)};
	uint64_t total = 0;

	if (pktmap_name_parse(names[i], &mine, NULL, 0) || !mine.region[0] ||
	    mine.bufs)
		return 0;
	for (unsigned k = 0; k < n; k++) {
		struct pktmap_name other = {.sz = sizeof(other)};

		if (pktmap_name_parse(names[k], &other, NULL, 0) == 0 &&
		    strcmp(mine.region, other.region) == 0)
			total += FWD_BUFS_PER_PORT + extra;
	}
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int fwd_parse_cpus(const char *s, int *cpus, unsigned max, char *err,
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

int fwd_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET((unsigned)cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int fwd_waiter_init(struct fwd_waiter *w)
{
	atomic_init(&w->sleeping, 0);
	w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return w->fd < 0 ? -errno : 0;
}

void fwd_waiter_fini(struct fwd_waiter *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

void fwd_wait(struct fwd_waiter *w, int64_t timeout_us)
{
	struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
	struct timespec ts, *tp = NULL;
	uint64_t v;

	if (timeout_us >= 0) {
		ts.tv_sec = (time_t)(timeout_us / 1000000);
		ts.tv_nsec = (long)(timeout_us % 1000000) * 1000;
		tp = &ts;
	}
	(void)ppoll(&pfd, 1, tp, NULL);
	atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
	if (read(w->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
}

void fwd_wake_slow(struct fwd_waiter *w)
{
	uint64_t one = 1;

	if (atomic_exchange_explicit(&w->sleeping, 0, memory_order_relaxed) &&
	    write(w->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return;
}

void fwd_json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

#define U(x) ((unsigned long long)(x))

void fwd_json_lib(FILE *o, const struct pktmap_stats *s)
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

bool fwd_same_region(const struct pktmap_info *a, const struct pktmap_info *b)
{
	return strcmp(a->region, "(private)") != 0 &&
	       strcmp(a->region, b->region) == 0 && a->buf_size == b->buf_size;
}
