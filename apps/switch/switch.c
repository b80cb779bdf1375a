/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap switch NAME: netmap's VALE in a process. Clients attach by
 * opening NAME:PORT (the vale back end); NICs, host rings and taps are
 * attached with -a, -H and -n as vale-ctl does. This file is the command
 * line and the main loop; the control socket is in switch_ctl.c, the
 * output in switch_report.c, the data path in src/fwd/switch.c.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "fwd_cli.h"
#include "run.h"
#include "stats.h"
#include "switch/switch_app.h"

void usage_switch(void)
{
	printf(
"usage: pktmap switch NAME [-a PORT] [-H IF] [-n TAP] [options]\n"
"                                    run switch NAME (vale0, valeX...)\n"
"       pktmap switch --list NAME [--json]  its ports and counters\n"
"       pktmap switch NAME -d PORT      detach PORT from the running switch\n"
"       pktmap switch NAME -a PORT | -H IF | -n TAP\n"
"                                    attach to the running switch\n"
"\n"
"A learning switch (netmap's VALE) in the foreground. Processes attach by\n"
"opening the port NAME:PORT, e.g. 'pktmap gen -i vale0:a'. Each client\n"
"gets a pipe of its own in a region of its own: it shares memory with the\n"
"switch only, never with another client; the switch checks every\n"
"descriptor and copies each frame once into the destination's buffer.\n"
"Clients that trust each other may name one region (vale0:a@mem:R and\n"
"vale0:b@mem:R): between them the switch moves buffers (zero-copy).\n"
"\n"
"The learning bridge: source MACs are learned per port (a MAC seen on\n"
"another port moves there), broadcast, multicast and unknown destinations\n"
"are flooded, a frame never goes back to its source port, entries age out.\n"
"A full destination drops only its own frames.\n"
"\n"
"  -a, --attach PORT     attach a port the switch opens itself: a NIC\n"
"                        (xdp:eth1, pkt:eth1), its host rings (xdp:eth1^),\n"
"                        a tap, ... (vale-ctl -a); repeatable\n"
"  -H, --host IF         attach xdp:IF and its host rings xdp:IF^\n"
"                        (vale-ctl -h)\n"
"  -n, --persistent NAME a persistent port: the tap device NAME, created\n"
"                        and attached (vale-ctl -n)\n"
"  -d, --detach PORT     detach PORT from the running switch NAME\n"
"  -l, --list            list the ports of the running switch NAME\n"
"      --aging-s SEC     forget a MAC after SEC seconds of silence\n"
"                        (default 300, as the Linux bridge)\n"
"      --mac-entries N   MAC table size (default 4096)\n"
"  -p, --threads N       forwarding threads, 1 to 8 (default 1). With N > 1\n"
"                        each client's pipe has N ring pairs and thread T\n"
"                        switches ring T of every port; an interface\n"
"                        attached needs N queues (thread T opens IF-T);\n"
"                        no host rings or taps\n"
"      --affinity CPU    pin forwarding thread T to CPU+T\n"
"  -T, --interval SEC    seconds between report lines, 0 = none (default 1)\n"
"      --json            print the summary as one JSON object on stdout\n"
"                        (report lines then go to stderr)\n"
"  -q, --quiet           no report lines, no human summary\n"
"  -v, --verbose         more library messages\n"
"\n"
"Each report line gives every port's rates in (from the port) and out (to\n"
"it). Ends at Ctrl-C or SIGTERM: every port is detached, every pipe and\n"
"region it made removed, and a summary per port printed (frames, bytes,\n"
"drops by reason: no space, invalid, unknown port; filtered).\n");
}

enum { OPT_AGING = 256, OPT_MACS, OPT_AFFINITY, OPT_JSON };

static const struct option longopts[] = {
	{"attach", required_argument, NULL, 'a'},
	{"host", required_argument, NULL, 'H'},
	{"persistent", required_argument, NULL, 'n'},
	{"detach", required_argument, NULL, 'd'},
	{"list", no_argument, NULL, 'l'},
	{"aging-s", required_argument, NULL, OPT_AGING},
	{"mac-entries", required_argument, NULL, OPT_MACS},
	{"threads", required_argument, NULL, 'p'},
	{"affinity", required_argument, NULL, OPT_AFFINITY},
	{"interval", required_argument, NULL, 'T'},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static struct swa A; /* large (per-port interval state): not on the stack */

static int add_attach(struct swa *a, const char *name, const char *as)
{
	if (a->nattach == SWA_MAX_ATTACH) {
		cli_err("switch: at most %d ports with -a, -H, -n", SWA_MAX_ATTACH);
		return EXIT_USAGE;
	}
	a->attach_as[a->nattach] = as;
	a->attach[a->nattach++] = name;
	return 0;
}

void swa_counters(struct swa *a, uint16_t id, struct sw_counters *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned t = 0; t < a->nthreads; t++) {
		struct sw *s = swa_ctx(a, t);
		if (id >= s->nports || !s->port[id])
			continue;
		const struct sw_counters *x = &s->port[id]->c;
		c->rx_frames += x->rx_frames;
		c->rx_bytes += x->rx_bytes;
		c->tx_frames += x->tx_frames;
		c->tx_bytes += x->tx_bytes;
		c->drop_nospace += x->drop_nospace;
		c->drop_invalid += x->drop_invalid;
		c->drop_unknown += x->drop_unknown;
		c->filtered += x->filtered;
		c->sync_errors += x->sync_errors;
		c->tx_moved += x->tx_moved;
	}
}

struct sw_mac *swa_mac(struct swa *a)
{
	return a->mac ? a->mac : a->sw.mac;
}

/* Park every forwarding thread between two rounds (and return once they
 * all are): the main thread may then change and read their contexts. A
 * thread that has ended counts as parked. */
void swa_pause(struct swa *a)
{
	if (a->nthreads < 2)
		return;
	pthread_mutex_lock(&a->mu);
	atomic_store(&a->pause_req, 1);
	for (unsigned t = 0; t < a->nthreads; t++) {
		uint64_t one = 1;
		if (write(a->wake[t], &one, sizeof(one)) < 0)
			cli_err("switch: wake-up: %s", strerror(errno));
	}
	while (a->parked < a->nthreads)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
}

void swa_resume(struct swa *a)
{
	if (a->nthreads < 2)
		return;
	pthread_mutex_lock(&a->mu);
	atomic_store(&a->pause_req, 0);
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

struct swa_worker {
	struct swa *a;
	unsigned t;
};

static struct swa_worker workers[SWA_MAX_THREADS];

/* A forwarding thread (-p > 1): rounds on its context, poll() when idle,
 * parked while the main thread asks. */
static void *worker(void *arg)
{
	struct swa_worker *w = arg;
	struct swa *a = w->a;
	struct sw *s = swa_ctx(a, w->t);
	struct pollfd pf = { .fd = a->wake[w->t], .events = POLLIN };

	if (a->cpu >= 0)
		(void)fwd_pin(a->cpu + (int)w->t);
	while (!run_stopping()) {
		if (atomic_load(&a->pause_req)) {
			pthread_mutex_lock(&a->mu);
			a->parked++;
			pthread_cond_broadcast(&a->cv);
			while (atomic_load(&a->pause_req))
				pthread_cond_wait(&a->cv, &a->mu);
			a->parked--;
			pthread_mutex_unlock(&a->mu);
		}
		int moved = sw_round(s);
		if (moved < 0) {
			a->error = moved;
			atomic_store(&run_stop_flag, 1);
			break;
		}
		if (moved == 0) {
			pf.revents = 0;
			sw_wait(s, &pf, 1, FWD_POLL_MS);
			uint64_t v;
			if (pf.revents & POLLIN && read(pf.fd, &v, sizeof(v)) < 0)
				continue;
		}
	}
	pthread_mutex_lock(&a->mu);
	a->parked++;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* -p > 1: the threads forward, the main thread serves and prints. */
static int loop_threads(struct swa *a)
{
	struct pollfd pfd[SWA_MAX_CONNS + 1];
	uint64_t next_line = a->last_ns + (uint64_t)(a->interval * 1e9);
	unsigned started = 0;
	int rc = 0;

	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	for (unsigned t = 0; t < a->nthreads; t++) {
		workers[t] = (struct swa_worker){ .a = a, .t = t };
		int e = pthread_create(&a->tid[t], NULL, worker, &workers[t]);
		if (e) {
			cli_err("switch %s: cannot start thread %u: %s", a->name, t,
				strerror(e));
			atomic_store(&run_stop_flag, 1);
			rc = EXIT_RUNTIME;
			break;
		}
		started++;
	}
	while (!run_stopping()) {
		unsigned n = swa_ctl_fds(a, pfd);
		if (poll(pfd, n, FWD_POLL_MS) > 0) {
			swa_pause(a);
			swa_serve(a, pfd, n);
			swa_resume(a);
		}
		if (a->interval > 0 && stats_now_ns() >= next_line) {
			swa_pause(a);
			swa_line(a);
			swa_resume(a);
			next_line = stats_now_ns() + (uint64_t)(a->interval * 1e9);
		}
	}
	for (unsigned t = 0; t < a->nthreads; t++) {
		uint64_t one = 1;
		if (write(a->wake[t], &one, sizeof(one)) < 0)
			break;
	}
	for (unsigned t = 0; t < started; t++)
		pthread_join(a->tid[t], NULL);
	if (a->error) {
		cli_err("switch %s: %s", a->name, pktmap_strerror(a->error));
		rc = EXIT_RUNTIME;
	}
	return rc;
}

/* The main loop: rounds while frames move, poll() when idle, control
 * requests between rounds, a report line per interval. */
static int loop(struct swa *a)
{
	struct pollfd pfd[SWA_MAX_CONNS + 1];
	uint64_t next_line = a->last_ns + (uint64_t)(a->interval * 1e9);
	unsigned busy = 0;
	int rc = 0;

	while (!run_stopping()) {
		int moved = sw_round(&a->sw);
		if (moved < 0) {
			cli_err("switch %s: %s", a->name, pktmap_strerror(moved));
			rc = EXIT_RUNTIME;
			break;
		}
		unsigned n = swa_ctl_fds(a, pfd);
		if (moved == 0) {
			busy = 0;
			int r = sw_wait(&a->sw, pfd, n, FWD_POLL_MS);
			if (r > 0)
				swa_serve(a, pfd, n);
		} else if (++busy % 64 == 0) {
			/* Busy: look at the control socket now and then. */
			if (poll(pfd, n, 0) > 0)
				swa_serve(a, pfd, n);
		}
		if (a->interval > 0 && (moved == 0 || busy % 64 == 0)) {
			uint64_t now = stats_now_ns();
			if (now >= next_line) {
				swa_line(a);
				next_line = now + (uint64_t)(a->interval * 1e9);
			}
		}
	}
	return rc;
}

int cmd_switch(int argc, char **argv)
{
	struct swa *a = &A;
	const char *detach = NULL;
	bool list = false;
	uint64_t threads = 1;
	int c;

	memset(a, 0, sizeof(*a));
	a->interval = 1;
	a->aging_s = 300;
	a->mac_entries = 4096;
	a->cpu = -1;
	a->lfd = a->lockfd = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":a:H:n:d:lp:T:qvh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'a':
			if (add_attach(a, optarg, NULL))
				return EXIT_USAGE;
			break;
		case 'H': {
			static char names[SWA_MAX_ATTACH][2][64];
			unsigned k = a->nattach / 2 % SWA_MAX_ATTACH;
			snprintf(names[k][0], 64, "xdp:%s", optarg);
			snprintf(names[k][1], 64, "xdp:%s^", optarg);
			if (add_attach(a, names[k][0], NULL) ||
			    add_attach(a, names[k][1], NULL))
				return EXIT_USAGE;
			break;
		}
		case 'n': {
			static char names[SWA_MAX_ATTACH][64];
			snprintf(names[a->nattach % SWA_MAX_ATTACH], 64, "tap:%s",
				 optarg);
			if (add_attach(a, names[a->nattach % SWA_MAX_ATTACH], NULL))
				return EXIT_USAGE;
			break;
		}
		case 'd':
			detach = optarg;
			break;
		case 'l':
			list = true;
			break;
		case OPT_AGING:
			if (cli_opt_seconds("switch: --aging-s", optarg, 86400 * 24,
					    &a->aging_s))
				return EXIT_USAGE;
			if (a->aging_s < 0.001) {
				cli_err("switch: --aging-s: must be more than 0");
				return EXIT_USAGE;
			}
			break;
		case OPT_MACS:
			if (cli_opt_u64("switch: --mac-entries", optarg, 16,
					1u << 24, &a->mac_entries))
				return EXIT_USAGE;
			break;
		case 'p':
			if (cli_opt_u64("switch: -p: threads", optarg, 1,
					SWA_MAX_THREADS, &threads))
				return EXIT_USAGE;
			break;
		case OPT_AFFINITY: {
			uint64_t cpu;
			if (cli_opt_u64("switch: --affinity", optarg, 0, 4095, &cpu))
				return EXIT_USAGE;
			a->cpu = (int)cpu;
			break;
		}
		case 'T':
			if (cli_opt_seconds("switch: -T: interval", optarg, 3600,
					    &a->interval))
				return EXIT_USAGE;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'v':
			a->verbose++;
			break;
		case 'h':
			usage_switch();
			return 0;
		default:
			cli_opt_error("switch", c, argv);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_err("switch: give one switch name, e.g. 'pktmap switch vale0' "
			"(see 'pktmap help switch')");
		return EXIT_USAGE;
	}
	a->name = argv[optind];
	if (!vale_name_ok(a->name)) {
		cli_err("switch: '%s' is not a switch name: 'vale' followed by up "
			"to 11 letters, digits, '_', '.', '-' (vale0, valeX)",
			a->name);
		return EXIT_USAGE;
	}
	if (list)
		return swa_client_list(a->name, a->json);
	if (detach)
		return swa_client_op(a->name, VALE_DETACH, detach, NULL);
	if (a->nattach && swa_running(a->name)) {
		/* vale-ctl -a on a running switch. */
		for (unsigned i = 0; i < a->nattach; i++) {
			int r = swa_client_op(a->name, VALE_ATTACH, NULL,
					      a->attach[i]);
			if (r)
				return r;
		}
		return 0;
	}

	struct run r;
	if (run_init(&r, "switch", a->name, 1, a->cpu, a->interval, a->verbose,
		     a->json, a->quiet))
		return EXIT_RUNTIME;
	fwdcli_soft_sigterm();
	int rc = 0;
	a->nthreads = (unsigned)threads;
	for (unsigned t = 0; t < SWA_MAX_THREADS; t++)
		a->wake[t] = -1;
	struct sw_cfg cfg = {
		.mac_entries = (uint32_t)a->mac_entries,
		.aging_ms = (uint32_t)(a->aging_s * 1000 + 0.5),
	};
	if (a->nthreads > 1) {
		/* One table for all threads; thread 0 ages it. */
		a->mac = sw_mac_new(cfg.mac_entries, cfg.aging_ms);
		if (!a->mac) {
			cli_err("switch %s: no memory for the MAC table", a->name);
			run_fini(&r);
			return EXIT_RUNTIME;
		}
		cfg.lookup = &sw_mac_lookup;
		cfg.lookup_ctx = a->mac;
	}
	if (sw_init(&a->sw, &cfg)) {
		cli_err("switch %s: %s", a->name, a->sw.err);
		sw_mac_free(a->mac);
		run_fini(&r);
		return EXIT_RUNTIME;
	}
	a->xs[0] = &a->sw;
	for (unsigned t = 1; t < a->nthreads; t++) {
		struct sw_cfg tc = cfg;
		tc.no_tick = true;
		a->xs[t] = calloc(1, sizeof(struct sw));
		a->wake[t] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (!a->xs[t] || a->wake[t] < 0 || sw_init(a->xs[t], &tc)) {
			cli_err("switch %s: cannot set up thread %u", a->name, t);
			rc = EXIT_RUNTIME;
			a->nthreads = t;
			goto out;
		}
	}
	if (a->nthreads > 1) {
		a->wake[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (a->wake[0] < 0) {
			cli_err("switch %s: eventfd: %s", a->name, strerror(errno));
			rc = EXIT_RUNTIME;
			goto out;
		}
	}
	if (swa_listen(a)) {
		rc = EXIT_RUNTIME;
		goto out;
	}
	for (unsigned i = 0; i < a->nattach; i++) {
		char err[512];
		int ret = swa_attach_name(a, a->attach[i], a->attach_as[i], err,
					  sizeof(err));
		if (ret) {
			cli_err("switch %s: %s", a->name, err);
			rc = ret == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
			goto out;
		}
	}
	if (a->cpu >= 0 && a->nthreads == 1) {
		int e = fwd_pin(a->cpu);
		if (e) {
			cli_err("switch: --affinity %d: %s", a->cpu, strerror(e));
			rc = EXIT_USAGE;
			goto out;
		}
	}
	if (!a->quiet) {
		FILE *o = a->json ? stderr : stdout;
		fprintf(o, "switch %s: ready (pid %d), %u port%s attached, %u "
			"thread%s; clients open %s:PORT; MAC table %llu, aging "
			"%.3g s\n", a->name, (int)getpid(), a->nattach,
			a->nattach == 1 ? "" : "s", a->nthreads,
			a->nthreads > 1 ? "s" : "", a->name,
			(unsigned long long)a->mac_entries, a->aging_s);
		fflush(o);
	}
	a->t_start = a->last_ns = stats_now_ns();
	rc = a->nthreads > 1 ? loop_threads(a) : loop(a);
	a->t_end = stats_now_ns();
	swa_summary(a);
out:
	swa_ctl_close(a);
	for (unsigned t = a->nthreads; t-- > 1;) {
		if (a->xs[t])
			sw_fini(a->xs[t]);
		free(a->xs[t]);
	}
	sw_fini(&a->sw);
	sw_mac_free(a->mac);
	for (unsigned t = 0; t < SWA_MAX_THREADS; t++)
		if (a->wake[t] >= 0)
			close(a->wake[t]);
	run_fini(&r);
	return rc;
}
