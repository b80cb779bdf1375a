/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap switch NAME: netmap's VALE in a process. Clients attach by
 * opening NAME:PORT (the vale back end); NICs, host rings and taps are
 * attached with -a, -H and -n as vale-ctl does. This file is the command
 * line: it parses the options, sets up the switch component
 * (src/fwd/switch_srv.h: the data path, the threads, the control socket's
 * server), attaches the ports asked for and runs it until a signal. The
 * output is in switch_report.c, the requests to a running switch (--list,
 * -d, -a) in switch_client.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "fwd_cli.h"
#include "notify.h"
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
"      --affinity CPU    pin forwarding thread T to CPU+T (CPUs the process\n"
"                        may run on)\n"
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

/* -H IF: the interface and its host rings (vale-ctl -h). */
static int add_host(struct swa *a, const char *ifname)
{
	static char names[SWA_MAX_ATTACH][2][64];
	unsigned k = a->nattach / 2 % SWA_MAX_ATTACH;
	snprintf(names[k][0], 64, "xdp:%s", ifname);
	snprintf(names[k][1], 64, "xdp:%s^", ifname);
	return add_attach(a, names[k][0], NULL) ||
	       add_attach(a, names[k][1], NULL) ? EXIT_USAGE : 0;
}

/* -n TAP: a persistent port, the tap device (vale-ctl -n). */
static int add_tap(struct swa *a, const char *tap)
{
	static char names[SWA_MAX_ATTACH][64];
	unsigned k = a->nattach % SWA_MAX_ATTACH;
	snprintf(names[k], 64, "tap:%s", tap);
	return add_attach(a, names[k], NULL);
}

static int opt_aging(struct swa *a, const char *arg)
{
	if (cli_opt_seconds("switch: --aging-s", arg, 86400 * 24, &a->aging_s))
		return EXIT_USAGE;
	if (a->aging_s < 0.001) {
		cli_err("switch: --aging-s: must be more than 0");
		return EXIT_USAGE;
	}
	return 0;
}

static int opt_affinity(struct swa *a, const char *arg)
{
	uint64_t cpu;
	if (cli_opt_u64("switch: --affinity", arg, 0, 4095, &cpu))
		return EXIT_USAGE;
	a->cpu = (int)cpu;
	return 0;
}

/* One option. Returns 0, or EXIT_USAGE with the message printed. */
static int apply_opt(struct swa *a, int c, char **argv)
{
	switch (c) {
	case 'a':
		return add_attach(a, optarg, NULL);
	case 'H':
		return add_host(a, optarg);
	case 'n':
		return add_tap(a, optarg);
	case 'd':
		a->detach = optarg;
		return 0;
	case 'l':
		a->list = true;
		return 0;
	case OPT_AGING:
		return opt_aging(a, optarg);
	case OPT_MACS:
		return cli_opt_u64("switch: --mac-entries", optarg, 16, 1u << 24,
				   &a->mac_entries) ? EXIT_USAGE : 0;
	case 'p':
		return cli_opt_u64("switch: -p: threads", optarg, 1,
				   SWS_MAX_THREADS, &a->nthreads) ? EXIT_USAGE : 0;
	case OPT_AFFINITY:
		return opt_affinity(a, optarg);
	case 'T':
		return cli_opt_seconds("switch: -T: interval", optarg, 3600,
				       &a->interval) ? EXIT_USAGE : 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case 'q':
		a->quiet = true;
		return 0;
	case 'v':
		a->verbose++;
		return 0;
	default:
		cli_opt_error("switch", c, argv);
		return EXIT_USAGE;
	}
}

/* The command line into a. Returns -1 to go on, or the exit status
 * (--help: 0; a bad option: EXIT_USAGE, the message printed). */
static int parse_opts(struct swa *a, int argc, char **argv)
{
	int c;
	memset(a, 0, sizeof(*a));
	a->interval = 1;
	a->aging_s = 300;
	a->mac_entries = 4096;
	a->nthreads = 1;
	a->cpu = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":a:H:n:d:lp:T:qvh", longopts,
				NULL)) != -1) {
		if (c == 'h') {
			usage_switch();
			return 0;
		}
		if (apply_opt(a, c, argv))
			return EXIT_USAGE;
	}
	if (optind != argc - 1) {
		cli_err("switch: give one switch name, e.g. 'pktmap switch vale0' "
			"(see 'pktmap help switch')");
		return EXIT_USAGE;
	}
	if (a->cpu >= 0 && cli_cpus_ok("switch: --affinity:", a->cpu,
				       (unsigned)a->nthreads, NULL))
		return EXIT_USAGE;
	a->name = argv[optind];
	if (!vale_name_ok(a->name)) {
		cli_err("switch: '%s' is not a switch name: 'vale' followed by up "
			"to 11 letters, digits, '_', '.', '-' (vale0, valeX)",
			a->name);
		return EXIT_USAGE;
	}
	return -1;
}

/* --list, -d, or -a on a running switch (vale-ctl). Returns -1 when the
 * command is to run a switch, or the exit status. */
static int client_request(struct swa *a)
{
	if (a->list)
		return swa_client_list(a->name, a->json);
	if (a->detach)
		return swa_client_op(a->name, VALE_DETACH, a->detach, NULL);
	if (!a->nattach || !swa_running(a->name))
		return -1;
	for (unsigned i = 0; i < a->nattach; i++) {
		int r = swa_client_op(a->name, VALE_ATTACH, NULL, a->attach[i]);
		if (r)
			return r;
	}
	return 0;
}

/* Attach the ports of -a, -H, -n and pin the thread (--affinity with one
 * thread). Returns 0 or the exit status, the message printed. */
static int attach_all(struct swa *a)
{
	for (unsigned i = 0; i < a->nattach; i++) {
		char err[512];
		int ret = sws_attach_name(&a->srv, a->attach[i], a->attach_as[i],
					  0, err, sizeof(err));
		if (ret) {
			cli_err("switch %s: %s", a->name, err);
			return ret == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
		}
	}
	if (a->cpu >= 0 && a->nthreads == 1) {
		int e = fwd_pin(a->cpu);
		if (e) {
			cli_err("switch: --affinity %d: %s", a->cpu, strerror(e));
			return EXIT_USAGE;
		}
	}
	return 0;
}

static void print_ready(struct swa *a)
{
	if (a->quiet)
		return;
	FILE *o = a->json ? stderr : stdout;
	fprintf(o, "switch %s: ready (pid %d), %u port%s attached, %u "
		"thread%s; clients open %s:PORT; MAC table %llu, aging "
		"%.3g s\n", a->name, (int)getpid(), a->nattach,
		a->nattach == 1 ? "" : "s", (unsigned)a->nthreads,
		a->nthreads > 1 ? "s" : "", a->name,
		(unsigned long long)a->mac_entries, a->aging_s);
	fflush(o);
}

/* sws_run()'s ready callback: the ports attached, the threads running,
 * the control socket listening. */
static void on_ready(void *ctx)
{
	struct swa *a = ctx;

	notify_status("switch %s: %u port%s attached, clients open %s:PORT",
		      a->name, a->nattach, a->nattach == 1 ? "" : "s", a->name);
	notify_ready();
}

/* Set the switch up, attach, run until a signal, print the summary. */
static int serve(struct swa *a)
{
	struct sws_opts o = {
		.name = a->name,
		.nthreads = (unsigned)a->nthreads,
		.cpu = a->cpu,
		.mac_entries = (uint32_t)a->mac_entries,
		.aging_ms = (uint32_t)(a->aging_s * 1000 + 0.5),
		.interval_ns = (uint64_t)(a->interval * 1e9),
		.report = swa_line,
		.report_ctx = a,
		.ready = on_ready,
		.stop = &run_stop_flag,
	};
	int rc = sws_setup(&a->srv, &o) ? EXIT_RUNTIME : 0;
	if (rc)
		cli_err("%s", a->srv.err);
	else
		rc = attach_all(a);
	if (!rc) {
		print_ready(a);
		a->t_start = a->last_ns = stats_now_ns();
		if (sws_run(&a->srv)) {
			cli_err("%s", a->srv.err);
			rc = EXIT_RUNTIME;
		}
		notify_stopping();
		a->t_end = stats_now_ns();
		swa_summary(a);
	}
	sws_teardown(&a->srv);
	return rc;
}

int cmd_switch(int argc, char **argv)
{
	struct swa *a = &A;
	int rc = parse_opts(a, argc, argv);
	if (rc < 0)
		rc = client_request(a);
	if (rc >= 0)
		return rc;
	struct run r;
	if (run_init(&r, "switch", a->name, 1, a->cpu, a->interval, a->verbose,
		     a->json, a->quiet))
		return EXIT_RUNTIME;
	fwdcli_soft_sigterm();
	rc = serve(a);
	run_fini(&r);
	return rc;
}
