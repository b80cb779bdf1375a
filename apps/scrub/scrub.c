/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub: the traffic cleaner (docs/scrub.md). This file is the
 * command line, the opening of the ports (one pair per queue) and the
 * main thread's loop (report lines, SIGHUP reloads); the control socket
 * is scrub_ctl.c, the output scrub_report.c, the engine and the worker
 * loop src/fwd/scrub*.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "fwd_cli.h"
#include "notify.h"
#include "run.h"
#include "scrub_app.h"
#include "scrubpub.h"

void usage_scrub(void)
{
	printf(
"usage: pktmap scrub -i PORT [-o PORT] -c RULES [options]\n"
"\n"
"Clean traffic: every frame PORT -i receives is judged by the rules file\n"
"(docs/scrub.md: allow and deny prefixes, protocol/port/flag matches,\n"
"per-source packet and byte rates with bans, per-destination SYN rates,\n"
"malformed frames); what passes goes out of -o. What -o receives goes\n"
"back out of -i unjudged (the protected side's replies). Without -o,\n"
"clean frames go to -i's host stack through its host rings (PORT^) and\n"
"the host's own frames go out of -i. Non-IP frames pass.\n"
"\n"
"  -i, --in PORT         the side the traffic to clean arrives on\n"
"  -o, --out PORT        the protected side (default: -i's host rings)\n"
"  -c, --rules FILE      the rules file (required)\n"
"  -q, --queues N        workers, one per queue pair (PORT-0 .. PORT-N-1);\n"
"                        default: the interface's RX queues for xdp: and\n"
"                        pkt: ports named without a queue, else 1\n"
"  -b, --batch N         slots judged per direction per round (default 512)\n"
"  -a, --affinity CPU    pin worker k to CPU + k\n"
"      --dry-run         judge and count, but pass every frame\n"
"      --sample-pcap FILE  write dropped frames to FILE (pcap), one in N\n"
"      --sample N        the N of --sample-pcap (default 100)\n"
"      --control PATH    a control socket (unix stream, mode 0600):\n"
"                        reload, stats, ban ADDR SECS, unban ADDR, rules\n"
"      --check           read the rules file, say what it holds, exit\n"
"      --copy            copy frames even when the ports share a region\n"
"      --no-kernel       on an xdp: input, judge everything in user space\n"
"                        (by default the allow and deny lists and the bans\n"
"                        also go into pktmap's scrub XDP program, which\n"
"                        drops listed sources before any copy)\n"
"      --idle SEC        stop when nothing moved for SEC seconds after the\n"
"                        first frame (default 0: never)\n"
"      --clock manual    time stands still; the control socket's\n"
"                        'tick SECS' moves it (for tests)\n"
"  -T, --interval SEC    seconds between report lines, 0 = none (default 1)\n"
"      --json            print the summary as one JSON object on stdout\n"
"      --quiet           no start line, report lines or human summary\n"
"  -v, --verbose         more library messages (twice: debug)\n"
"\n"
"SIGHUP reloads the rules file: a bad file is refused (FILE:LINE: what)\n"
"and the running rules stay. Ends at Ctrl-C or SIGTERM, after --idle, or\n"
"at the end of a capture file, with counters by reason and by rule.\n"
"Exit status: 0; 1 for a run-time failure (a bad rules file at start\n"
"too); 2 for a usage error.\n");
}

enum {
	OPT_DRY = 256, OPT_SAMPLE_PCAP, OPT_SAMPLE, OPT_CONTROL, OPT_CHECK,
	OPT_COPY, OPT_IDLE, OPT_CLOCK, OPT_JSON, OPT_QUIET, OPT_NO_KERNEL
};

static const struct option longopts[] = {
	{"in", required_argument, NULL, 'i'},
	{"out", required_argument, NULL, 'o'},
	{"rules", required_argument, NULL, 'c'},
	{"queues", required_argument, NULL, 'q'},
	{"batch", required_argument, NULL, 'b'},
	{"affinity", required_argument, NULL, 'a'},
	{"dry-run", no_argument, NULL, OPT_DRY},
	{"sample-pcap", required_argument, NULL, OPT_SAMPLE_PCAP},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	{"control", required_argument, NULL, OPT_CONTROL},
	{"check", no_argument, NULL, OPT_CHECK},
	{"copy", no_argument, NULL, OPT_COPY},
	{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
	{"idle", required_argument, NULL, OPT_IDLE},
	{"clock", required_argument, NULL, OPT_CLOCK},
	{"interval", required_argument, NULL, 'T'},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* One option; 0, EXIT_USAGE, or -1 for --help. */
static int option(struct scrub_opts *o, int c, char **argv)
{
	uint64_t v;

	switch (c) {
	case 'i': o->in = optarg; return 0;
	case 'o': o->out = optarg; return 0;
	case 'c': o->rules = optarg; return 0;
	case 'q':
		if (cli_opt_u64("scrub: -q: queues", optarg, 1,
				SCRUB_APP_MAX_QUEUES, &v))
			return EXIT_USAGE;
		o->queues = (unsigned)v;
		return 0;
	case 'b':
		if (cli_opt_u64("scrub: -b: batch", optarg, 1, 65536, &v))
			return EXIT_USAGE;
		o->batch = (uint32_t)v;
		return 0;
	case 'a':
		if (cli_opt_u64("scrub: -a: CPU", optarg, 0, CPU_SETSIZE - 1, &v))
			return EXIT_USAGE;
		o->cpu = (int)v;
		return 0;
	case OPT_SAMPLE:
		return cli_opt_u64("scrub: --sample:", optarg, 1, UINT32_MAX,
				   &o->sample_every) ? EXIT_USAGE : 0;
	case OPT_SAMPLE_PCAP: o->sample_path = optarg; return 0;
	case OPT_CONTROL: o->control = optarg; return 0;
	case OPT_DRY: o->dry_run = true; return 0;
	case OPT_CHECK: o->check = true; return 0;
	case OPT_COPY: o->copy = true; return 0;
	case OPT_NO_KERNEL: o->no_kernel = true; return 0;
	case OPT_JSON: o->json = true; return 0;
	case OPT_QUIET: o->quiet = true; return 0;
	case 'v': o->verbose++; return 0;
	case OPT_CLOCK:
		if (strcmp(optarg, "manual") && strcmp(optarg, "monotonic")) {
			cli_err("scrub: --clock: '%s': manual or monotonic", optarg);
			return EXIT_USAGE;
		}
		o->manual_clock = optarg[0] == 'm' && optarg[1] == 'a';
		return 0;
	case 'T':
	case OPT_IDLE:
		return cli_opt_seconds(c == 'T' ? "scrub: -T:" : "scrub: --idle:",
				       optarg, 86400,
				       c == 'T' ? &o->interval : &o->idle)
			       ? EXIT_USAGE : 0;
	case 'h': usage_scrub(); return -1;
	default:
		cli_opt_error("scrub", c, argv);
		return EXIT_USAGE;
	}
}

/* What the options say together. */
static int check_opts(struct scrub_opts *o, int argc, char **argv)
{
	if (optind < argc) {
		cli_err("scrub: '%s': ports are given with -i and -o (see "
			"'pktmap help scrub')", argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->rules) {
		cli_err("scrub: no rules file: -c FILE (see 'pktmap help scrub')");
		return EXIT_USAGE;
	}
	if (o->check)
		return 0;
	if (!o->in) {
		cli_err("scrub: no port: -i PORT [-o PORT] (see 'pktmap help scrub')");
		return EXIT_USAGE;
	}
	if (o->out && fwd_same_port(o->in, o->out)) {
		cli_err("scrub: %s: -i and -o are one port", o->out);
		return EXIT_USAGE;
	}
	if (o->sample_every && !o->sample_path) {
		cli_err("scrub: --sample N needs --sample-pcap FILE");
		return EXIT_USAGE;
	}
	if (!o->out) {
		if (o->queues > 1) {
			cli_err("scrub: -q %u: on the host's rings there is one "
				"worker (an interface has one host ring pair)",
				o->queues);
			return EXIT_USAGE;
		}
		o->queues = 1;
		if (cli_insert_after_port(o->in, "^", o->host_name,
					  sizeof(o->host_name))) {
			cli_err("scrub: %s: not a port name that has host rings",
				o->in);
			return EXIT_USAGE;
		}
		o->out = o->host_name;
	}
	if (o->cpu >= 0 &&
	    cli_cpus_ok("scrub: -a:", o->cpu, o->queues ? o->queues : 1, NULL))
		return EXIT_USAGE;
	return 0;
}

static int parse(int argc, char **argv, struct scrub_opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->cpu = -1;
	o->interval = 1;
	o->batch = 512;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:o:c:q:b:a:T:vh", longopts,
				NULL)) != -1) {
		int rc = option(o, c, argv);

		if (rc)
			return rc;
	}
	if (o->sample_path && !o->sample_every)
		o->sample_every = 100;
	return check_opts(o, argc, argv);
}

/* RX queues of the interface an xdp: or pkt: name opens whole; 1 for
 * anything else. */
static unsigned auto_queues(const char *name)
{
	struct pktmap_name pn = {.sz = sizeof(pn)};
	char path[400];
	unsigned n = 0;
	struct dirent *e;
	DIR *d;

	if (pktmap_name_parse(name, &pn, NULL, 0) || pn.ring >= 0 ||
	    (strcmp(pn.backend, "xdp") && strcmp(pn.backend, "pkt")) ||
	    strchr(pn.body, '/'))
		return 1;
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", pn.body);
	d = opendir(path);
	if (!d)
		return 1;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "rx-", 3);
	closedir(d);
	if (n > SCRUB_APP_MAX_QUEUES)
		n = SCRUB_APP_MAX_QUEUES;
	return n ? n : 1;
}

/* A worker's automatic ban: into the kernel's map too. */
static void on_ban(void *user, const uint8_t addr[16], uint64_t until_ns)
{
	scrub_kern_ban(user, addr, true, until_ns);
}

/* Open the two ports of every queue and set up the workers. Returns 0
 * or an exit status (printed). */
static int open_all(struct scrub_app *a, struct scrub_rules *r)
{
	const struct scrub_opts *o = &a->o;
	char err[512];

	for (unsigned q = 0; q < a->nq; q++) {
		struct scrub_thread *t = &a->th[q];
		const char *names[2] = {o->in, o->out};

		for (int i = 0; i < 2; i++) {
			struct pktmap_open_opts oo = {.sz = sizeof(oo)};
			char name[300], kname[340];

			if (cli_thread_port(names[i], a->nq, q, name, sizeof(name)) ||
			    (i == 0 && a->kern_wanted &&
			     scrub_kern_name(name, kname, sizeof(kname)) < 0)) {
				cli_err("scrub: port name too long: %s", names[i]);
				return EXIT_USAGE;
			}
			oo.bufs = fwd_region_bufs(names, 2, (unsigned)i, 0);
			if (i == 0 && a->kern_wanted)
				memcpy(name, kname, sizeof(name) - 1);
			int rc = fwdcli_open("scrub", name, &oo, &t->port[i]);

			if (rc)
				return rc;
			a->ports[2 * q + (unsigned)i] = t->port[i];
		}
		t->ctx = a->ctx;
		t->id = q;
		t->batch = o->batch;
		t->dry_run = o->dry_run;
		t->copy = o->copy;
		t->idle_ns = (uint64_t)(o->idle * 1e9);
		t->stop = &run_stop_flag;
		t->manual_ns = o->manual_clock ? &a->manual_ns : NULL;
		t->sample_every = o->sample_every;
		t->sample = o->sample_path ? scrub_report_sample : NULL;
		t->on_ban = a->kern_wanted ? on_ban : NULL;
		t->user = a;
		if (scrub_thread_setup(t, r->sources, r->dests, err, sizeof(err))) {
			cli_err("scrub: %s", err);
			return EXIT_RUNTIME;
		}
	}
	return 0;
}

static void *worker_main(void *arg)
{
	scrub_thread_work(arg);
	return NULL;
}

/* SIGHUP: the main thread reloads at its next turn. */
static atomic_int scrub_hup;

static void on_hup(int sig)
{
	(void)sig;
	atomic_store_explicit(&scrub_hup, 1, memory_order_relaxed);
}

/* Start the workers; report, reload on SIGHUP, until they all ended. */
static int go(struct scrub_app *a, struct run *r)
{
	pthread_t tid[SCRUB_APP_MAX_QUEUES];
	uint64_t step = (uint64_t)(a->o.interval * 1e9), next, next_tick = 0;
	bool pub_warned = false;
	unsigned started = 0;
	int status = 0;

	for (unsigned q = 0; q < a->nq; q++) {
		int rc = run_thread(&tid[q], a->o.cpu < 0 ? -1 : a->o.cpu + (int)q,
				    worker_main, &a->th[q]);

		if (rc) {
			cli_err("scrub: cannot start worker %u: %s", q, strerror(rc));
			atomic_store_explicit(&run_stop_flag, 1, memory_order_relaxed);
			status = EXIT_RUNTIME;
			break;
		}
		started++;
	}
	sigset_t hup;

	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	pthread_sigmask(SIG_UNBLOCK, &hup, NULL);
	notify_ready();
	next = stats_now_ns() + step;
	while (started) {
		struct timespec ts = {0, 20 * 1000000};
		bool all_done = true;

		nanosleep(&ts, NULL);
		if (atomic_exchange_explicit(&scrub_hup, 0, memory_order_relaxed)) {
			notify_reloading();
			if (scrub_app_reload(a))
				cli_err("scrub: reload refused, the running rules "
					"stay: %s", a->last_error);
			notify_ready();
		}
		for (unsigned q = 0; q < started; q++)
			if (!a->th[q].end)
				all_done = false;
		if (all_done || run_stopping())
			break;
		if (stats_now_ns() >= next_tick) {
			scrub_kern_tick(a);
			if (scrub_report_publish(a) && !pub_warned) {
				cli_err("scrub: cannot publish the counters for top "
					"and metrics (%s%s%u.%d)", SP_DIR "/", SP_PREFIX,
					(unsigned)geteuid(), (int)getpid());
				pub_warned = true;
			}
			next_tick = stats_now_ns() + 1000000000ull;
		}
		if (step && stats_now_ns() >= next) {
			if (!a->o.quiet)
				scrub_report_line(a, r->stats.out);
			next += step;
		}
	}
	/* one worker ending (eof, idle, an error) ends them all */
	for (unsigned q = 0; q < started; q++)
		scrub_thread_stop(&a->th[q]);
	notify_stopping();
	for (unsigned q = 0; q < started; q++)
		pthread_join(tid[q], NULL);
	sp_remove();
	for (unsigned q = 0; q < started; q++) {
		if (a->th[q].error) {
			cli_err("scrub: worker %u: a sync failed: %s", q,
				pktmap_strerror(a->th[q].error));
			status = EXIT_RUNTIME;
		}
	}
	return status;
}

/* --check: what the file holds. */
static int check_only(struct scrub_rules *rules)
{
	printf("%u rules, %u allow and %u deny prefixes, %u match rules\n",
	       rules->nrules, rules->allow.nprefixes, rules->deny.nprefixes,
	       rules->nmatch);
	for (uint32_t i = 0; i < rules->nrules; i++)
		printf("rule %u line %u: %s\n", i, rules->rule[i].line,
		       rules->rule[i].text);
	scrub_rules_free(rules);
	return 0;
}

static void close_all(struct scrub_app *a)
{
	scrub_kern_detach(a);
	free(a->kbans);
	for (unsigned q = 0; q < a->nq; q++)
		scrub_thread_free(&a->th[q]);
	for (unsigned i = 0; i < 2 * SCRUB_APP_MAX_QUEUES; i++)
		if (a->ports[i])
			pktmap_close(a->ports[i]);
	if (a->ctx) {
		scrub_ctx_fini(a->ctx);
		free(a->ctx);
	}
	free(a->th);
	if (a->sample && pktmap_pcapw_close(a->sample))
		cli_err("scrub: %s: writing failed", a->o.sample_path);
	pthread_mutex_destroy(&a->lock);
	pthread_mutex_destroy(&a->sample_lock);
	pthread_mutex_destroy(&a->kern_lock);
}

/* Rules, context, sample file, ports, control socket. */
static int prepare(struct scrub_app *a)
{
	struct scrub_rules *rules;
	char err[512];
	int rc = scrub_rules_load(a->o.rules, &rules, err, sizeof(err));

	if (rc) {
		cli_err("scrub: %s", err);
		return EXIT_RUNTIME;
	}
	if (a->o.check)
		return check_only(rules) ? EXIT_RUNTIME : -1;
	a->nq = a->o.queues ? a->o.queues : auto_queues(a->o.in);
	a->th = calloc(a->nq, sizeof(*a->th));
	a->ctx = aligned_alloc(64, sizeof(*a->ctx));
	if (!a->th || !a->ctx || scrub_ctx_init(a->ctx, rules, a->nq)) {
		if (a->ctx)
			memset(a->ctx, 0, sizeof(*a->ctx));
		cli_err("scrub: out of memory");
		return EXIT_RUNTIME;
	}
	if (a->o.sample_path) {
		struct pktmap_pcapw_opts wo = {.sz = sizeof(wo), .linktype = 1};

		rc = pktmap_pcapw_open(&a->sample, a->o.sample_path, &wo);
		if (rc) {
			cli_err("scrub: --sample-pcap: %s: %s", a->o.sample_path,
				pktmap_strerror(rc));
			return EXIT_RUNTIME;
		}
	}
	char kname[340];

	/* (a dry run drops nothing: not in the kernel either) */
	a->kern_wanted = !a->o.no_kernel && !a->o.dry_run &&
			 scrub_kern_name(a->o.in, kname, sizeof(kname)) == 1;
	if (a->kern_wanted)
		a->kbans = calloc(SCRUB_KERN_MAX_BANS, sizeof(*a->kbans));
	rc = open_all(a, rules);
	if (rc)
		return rc;
	if (scrub_kern_attach(a, rules))
		return EXIT_RUNTIME;
	if (a->o.control && scrub_ctl_start(a))
		return EXIT_RUNTIME;
	return 0;
}

int cmd_scrub(int argc, char **argv)
{
	struct scrub_app *a = calloc(1, sizeof(*a));
	struct run r;
	int status;

	if (!a) {
		cli_err("scrub: out of memory");
		return EXIT_RUNTIME;
	}
	status = parse(argc, argv, &a->o);
	if (status) {
		free(a);
		return status < 0 ? 0 : status;
	}
	a->ctl_fd = -1;
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->sample_lock, NULL);
	pthread_mutex_init(&a->kern_lock, NULL);
	if (run_init(&r, "scrub", a->o.in ? a->o.in : "-", 1, a->o.cpu,
		     a->o.interval, a->o.verbose, a->o.json, a->o.quiet)) {
		free(a);
		return EXIT_RUNTIME;
	}
	fwdcli_soft_sigterm();
	struct sigaction sa = {.sa_handler = on_hup};
	sigset_t hup;

	/* SIGHUP goes to the main thread only: the threads started from now
	 * on inherit it blocked (a worker's poll is never interrupted), and
	 * go() unblocks it here once they run. */
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &hup, NULL);
	/* (a clock: relaxed, as every read of it) */
	atomic_store_explicit(&a->manual_ns, 1000000000ull, memory_order_relaxed);
	status = prepare(a);
	if (status == 0) {
		if (!a->o.quiet)
			fprintf(stderr, "scrub: %s -> %s: %u worker%s, %s%s\n",
				a->o.in, a->o.out, a->nq, a->nq > 1 ? "s" : "",
				a->th[0].zerocopy ? "zero-copy" : "copied",
				a->o.dry_run ? ", dry run (nothing dropped)" : "");
		status = go(a, &r);
		scrub_ctl_stop(a);
		if (!a->o.quiet)
			scrub_report_summary(a, r.stats.out);
		if (a->o.json)
			scrub_report_json(a, stdout);
	} else {
		scrub_ctl_stop(a);
	}
	close_all(a);
	run_fini(&r);
	free(a);
	return status < 0 ? 0 : status;
}
