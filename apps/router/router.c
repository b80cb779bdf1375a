/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap router: forward among N ports, MapRouter's way (router.h). This
 * file is the command line and the main thread: it sets the router up,
 * prints a line per interval, decides when to stop, and prints the
 * summary; the output is in router_stats.c. The router itself (stages,
 * queues, threads, classification) is the forwarding component's
 * (src/fwd/router*.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cmds.h"
#include "fwd_cli.h"
#include "notify.h"
#include "router.h"
#include "router_conf.h"
#include "router_stats.h"
#include "run.h"

/* The command's options: the router's own, and what the command does
 * around it. */
struct router_cli {
	struct rt_opts rt;
	uint64_t count;              /* stop after this many sent, 0 = never */
	double interval, idle, duration;
	bool json, quiet;
	int verbose;
	const char *config;          /* --config FILE, or NULL */
	struct router_conf conf;     /* its settings (rt's strings point in) */
	int argc;                    /* the command line, read again by a */
	char **argv;                 /* reload */
};

void usage_router(void)
{
	printf(
"usage: pktmap router -i PORT -i PORT ... [options]\n"
"       pktmap router --config FILE [options]\n"
"\n"
"Forward among N ports (MapRouter): per input an RX stage classifies each\n"
"frame and queues (buffer, length) on the lock-free queue of its (input,\n"
"output) pair; per output a TX stage serves its queues round-robin and\n"
"sends the freed buffers back to their input on a recycle queue. Ports in\n"
"one region (pipes and xdp ports named with the same @mem:NAME) forward\n"
"zero-copy; between regions the TX stage copies. A full queue drops only\n"
"that output's frames: an input never waits for an output.\n"
"\n"
"  -c, --config FILE     the options from FILE, one \"KEY VALUE\" line each\n"
"                        (port, mode, routes, map, outputs, threads,\n"
"                        affinity, batch, queue, stash, seed, copy,\n"
"                        interval, quiet, verbose; '#' comments; routes\n"
"                        relative to FILE's directory); SIGHUP reads it\n"
"                        again and applies new routes (lpm)\n"
"  -i, --port PORT       a port, 1 to 16 of them; its index is its order\n"
"  -m, --mode MODE       static (default): input i to output (i+1) mod N,\n"
"                        or --map; random: a random output for each frame\n"
"                        (the paper's experiment); hash: a flow hash of\n"
"                        addresses and ports; lpm: IPv4 longest-prefix\n"
"                        match (--routes), TTL - 1; l2: learning bridge\n"
"  -r, --routes FILE     lpm: lines \"10.1.0.0/16 2\" (prefix, output index;\n"
"                        \"default 1\"); '#' comments\n"
"      --map LIST        static: the output of each input, \"1,0,3,2\"\n"
"      --outputs LIST    random, hash: choose among these ports only (\"2,3\";\n"
"                        default: all)\n"
"  -p, --threads N       threads (default 2): RX stages spread over the first\n"
"                        ceil(N/2), TX stages over the rest; 1 runs all;\n"
"                        at most 2 per port\n"
"  -a, --affinity LIST   pin thread K to the K-th CPU of LIST (0,1 or 0-3),\n"
"                        wrapping around\n"
"  -b, --batch N         slots per stage step (default 256)\n"
"      --queue N         forward queue capacity, a power of two (default\n"
"                        1024 up to 4 ports, 512 up to 8, 256 beyond)\n"
"      --stash N         free buffers per input (default ports x queue +\n"
"                        2 x batch: no stalled output can exhaust them)\n"
"      --seed N          random: the generator's seed\n"
"  -n, --count N         stop once about N frames were sent\n"
"      --duration SEC    stop after SEC seconds\n"
"      --idle SEC        stop when nothing arrived for SEC seconds after the\n"
"                        first frame\n"
"      --copy            copy frames even between ports of one region\n"
"  -T, --interval SEC    seconds between report lines, 0 = none (default 1)\n"
"      --json            print the summary as one JSON object on stdout\n"
"                        (report lines then go to stderr)\n"
"  -q, --quiet           no start line, report lines or human summary\n"
"  -v, --verbose         more library messages (twice: debug)\n"
"\n"
"Ports in one region must be created big enough for all of them: the\n"
"router asks for room for its ports when it creates the region (start it\n"
"before its peers, or give @conf:bufs=N). Pipes in one region are told\n"
"apart by name and number: pipe:r{0@mem:rt, pipe:r{1@mem:rt, ...\n"
"At exit every buffer is accounted for (free + in flight = total) and the\n"
"exit status is 1 if one is missing. Run by systemd (pktmap-router@.service,\n"
"pktmap-service(7)) it says READY=1 once forwarding.\n");
}

static const struct option longopts[] = {
	{"config", required_argument, NULL, 'c'},
	{"port", required_argument, NULL, 'i'},
	{"mode", required_argument, NULL, 'm'},
	{"routes", required_argument, NULL, 'r'},
	{"map", required_argument, NULL, OPT_MAP},
	{"outputs", required_argument, NULL, OPT_OUTPUTS},
	{"threads", required_argument, NULL, 'p'},
	{"affinity", required_argument, NULL, 'a'},
	{"batch", required_argument, NULL, 'b'},
	{"queue", required_argument, NULL, OPT_QUEUE},
	{"stash", required_argument, NULL, OPT_STASH},
	{"seed", required_argument, NULL, OPT_SEED},
	{"count", required_argument, NULL, 'n'},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"idle", required_argument, NULL, OPT_IDLE},
	{"copy", no_argument, NULL, OPT_COPY},
	{"interval", required_argument, NULL, 'T'},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int parse_mode(const char *s, enum rt_mode *m)
{
	static const enum rt_mode all[] = {RT_STATIC, RT_RANDOM, RT_HASH,
					   RT_LPM, RT_L2};

	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		if (strcmp(s, rt_mode_name(all[k])) == 0) {
			*m = all[k];
			return 0;
		}
	}
	return -1;
}

/* "1,0,3,2": a list of port indices into v[]; returns how many. */
static int parse_list(const char *s, int *v_out, char *err, unsigned len)
{
	const char *p = s;
	unsigned n = 0;

	while (*p) {
		char *e;
		unsigned long v;

		if (*p < '0' || *p > '9' || n == RT_MAX_PORTS)
			goto bad;
		v = strtoul(p, &e, 10);
		if (v >= RT_MAX_PORTS)
			goto bad;
		v_out[n++] = (int)v;
		p = e;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
	}
	if (n == 0)
		goto bad;
	return (int)n;
bad:
	snprintf(err, len, "'%s' is not a list of port indices (1,0,3,2)", s);
	return -1;
}

/* -b, --queue and --stash: a size with its own lower bound. Returns 0 or
 * 1 with the message printed. */
static int parse_size(int c, const char *arg, struct rt_opts *o)
{
	char err[256];
	uint64_t v;
	int bad;

	bad = cli_parse_u64(arg, c == OPT_STASH ? (1u << 24) : 65536, &v, err,
			    sizeof(err));
	if (!bad && v < (c == 'b' ? 1 : 2)) {
		snprintf(err, sizeof(err), "is too small");
		bad = 1;
	}
	if (!bad && c == OPT_QUEUE && (v & (v - 1))) {
		snprintf(err, sizeof(err), "must be a power of two");
		bad = 1;
	}
	if (c == 'b')
		o->batch = (uint32_t)v;
	else if (c == OPT_QUEUE)
		o->queue = (uint32_t)v;
	else
		o->stash = (uint32_t)v;
	if (bad)
		cli_err("router: %s: %s %s", c == 'b' ? "-b" :
			c == OPT_QUEUE ? "--queue" : "--stash", arg, err);
	return bad;
}

/* The options that take a list: --map, --outputs, -a. *nmap is the
 * length of --map's. Returns 0 or 1 with the message printed. */
static int parse_lists(int c, const char *arg, struct rt_opts *o, int *nmap)
{
	char err[256];
	int k;

	switch (c) {
	case OPT_MAP:
		*nmap = parse_list(arg, o->map, err, sizeof(err));
		o->map_set = *nmap >= 0;
		if (!o->map_set)
			cli_err("router: --map: %s", err);
		return !o->map_set;
	case OPT_OUTPUTS:
		k = parse_list(arg, o->outs, err, sizeof(err));
		o->nouts = k < 0 ? 0 : (unsigned)k;
		if (k < 0)
			cli_err("router: --outputs: %s", err);
		return k < 0;
	default: /* -a */
		k = fwdcli_parse_cpus(arg, o->cpus, RT_MAX_THREADS, err,
				    sizeof(err));
		o->ncpus = k < 0 ? 0 : (unsigned)k;
		if (k < 0)
			cli_err("router: -a: %s", err);
		return k < 0 || cli_cpus_ok("router: -a:", 0, o->ncpus, o->cpus);
	}
}

static int parse_opt(int c, const char *arg, char **argv,
		     struct router_cli *cl, int *nmap);

/* --config FILE: its settings, in the file's order, as if given on the
 * command line at this point; a value's error names the file and line.
 * Returns 0 or EXIT_USAGE with the message printed. */
static int parse_config(const char *path, char **argv, struct router_cli *cl,
			int *nmap)
{
	char err[600], where[300];

	if (cl->config) {
		cli_err("router: --config given twice");
		return EXIT_USAGE;
	}
	cl->config = path;
	if (router_conf_read(path, &cl->conf, err, sizeof(err))) {
		cli_err("%s", err);
		return EXIT_USAGE;
	}
	for (unsigned k = 0; k < cl->conf.n; k++) {
		const struct router_conf_item *it = &cl->conf.item[k];
		int rc;

		snprintf(where, sizeof(where), "%s:%u", path, it->line);
		cli_err_where(where);
		rc = parse_opt(it->opt, it->value, argv, cl, nmap);
		cli_err_where(NULL);
		if (rc)
			return EXIT_USAGE;
	}
	return 0;
}

/* One option. Returns 0, -1 for --help (printed), or EXIT_USAGE with the
 * message printed. */
static int parse_opt(int c, const char *arg, char **argv,
		     struct router_cli *cl, int *nmap)
{
	struct rt_opts *o = &cl->rt;
	char err[256];
	uint64_t v;
	int bad = 0;

	switch (c) {
	case 'i':
		if (o->nports == RT_MAX_PORTS) {
			cli_err("router: at most %d ports", RT_MAX_PORTS);
			return EXIT_USAGE;
		}
		o->port[o->nports++] = arg;
		break;
	case 'm':
		if (parse_mode(arg, &o->mode)) {
			cli_err("router: -m: no mode '%s' (static, random, "
				"hash, lpm, l2)", arg);
			return EXIT_USAGE;
		}
		break;
	case 'r': o->routes = arg; break;
	case 'c': return parse_config(arg, argv, cl, nmap);
	case OPT_MAP:
	case OPT_OUTPUTS:
	case 'a':
		bad = parse_lists(c, arg, o, nmap);
		break;
	case 'p':
		bad = cli_opt_u64("router: -p: threads", arg, 1, RT_MAX_THREADS,
				  &v);
		o->threads = (unsigned)v;
		break;
	case 'b':
	case OPT_QUEUE:
	case OPT_STASH:
		bad = parse_size(c, arg, o);
		break;
	case OPT_SEED:
		bad = cli_opt_u64("router: --seed:", arg, 0, UINT64_MAX, &o->seed);
		break;
	case 'n':
		bad = cli_opt_u64("router: -n: count", arg, 0, UINT64_MAX,
				  &cl->count);
		break;
	case 'T':
	case OPT_DURATION:
	case OPT_IDLE:
		bad = cli_parse_seconds(arg, 86400 * 365,
					c == 'T' ? &cl->interval :
					c == OPT_IDLE ? &cl->idle : &cl->duration,
					err, sizeof(err));
		if (bad)
			cli_err("router: %s: %s", c == 'T' ? "-T" :
				c == OPT_IDLE ? "--idle" : "--duration", err);
		break;
	case OPT_COPY: o->copy = true; break;
	case OPT_JSON: cl->json = true; break;
	case 'q': cl->quiet = true; break;
	case 'v': cl->verbose++; break;
	case 'h': usage_router(); return -1;
	default:
		cli_opt_error("router", c, argv);
		return EXIT_USAGE;
	}
	return bad ? EXIT_USAGE : 0;
}

/* --map and --outputs against the mode and the ports (nmap: --map's
 * length). Returns 0 or EXIT_USAGE with the message printed. */
static int check_port_lists(const struct rt_opts *o, int nmap)
{
	if (o->map_set) {
		if (o->mode != RT_STATIC) {
			cli_err("router: --map is for --mode static");
			return EXIT_USAGE;
		}
		if ((unsigned)nmap != o->nports) {
			cli_err("router: --map: %d outputs for %u ports", nmap,
				o->nports);
			return EXIT_USAGE;
		}
		for (unsigned i = 0; i < o->nports; i++) {
			if ((unsigned)o->map[i] >= o->nports) {
				cli_err("router: --map: output %d of input %u: "
					"there are %u ports", o->map[i], i,
					o->nports);
				return EXIT_USAGE;
			}
		}
	}
	if (o->nouts) {
		if (o->mode != RT_RANDOM && o->mode != RT_HASH) {
			cli_err("router: --outputs is for --mode random and hash");
			return EXIT_USAGE;
		}
		for (unsigned i = 0; i < o->nouts; i++) {
			if ((unsigned)o->outs[i] >= o->nports) {
				cli_err("router: --outputs: port %d: there are %u "
					"ports", o->outs[i], o->nports);
				return EXIT_USAGE;
			}
		}
	}
	return 0;
}

/* The options together: what one needs of another. Returns 0 or
 * EXIT_USAGE with the message printed. */
static int check_opts(const struct rt_opts *o, int nmap)
{
	if (o->nports == 0) {
		cli_err("router: no port given: use -i PORT for each (see "
			"'pktmap help router')");
		return EXIT_USAGE;
	}
	if (o->mode == RT_LPM && !o->routes) {
		cli_err("router: --mode lpm needs --routes FILE");
		return EXIT_USAGE;
	}
	if (o->mode != RT_LPM && o->routes) {
		cli_err("router: --routes is for --mode lpm");
		return EXIT_USAGE;
	}
	if (check_port_lists(o, nmap))
		return EXIT_USAGE;
	unsigned first;
	int again = fwd_repeated_port(o->port, o->nports, &first);

	if (again >= 0) {
		cli_err("router: -i %s: repeated port (ports %u and %d are one): "
			"give each port once", o->port[again], first, again);
		return EXIT_USAGE;
	}
	if (o->threads > 2 * o->nports) {
		cli_err("router: -p: %u threads for %u ports: at most %u (one "
			"per stage)", o->threads, o->nports, 2 * o->nports);
		return EXIT_USAGE;
	}
	if (o->stash && o->batch && o->stash < 2 * o->batch) {
		cli_err("router: --stash %u: at least twice the batch (%u)",
			o->stash, 2 * o->batch);
		return EXIT_USAGE;
	}
	return 0;
}

/* The command line into *cl. Returns 0, -1 for --help, or EXIT_USAGE
 * with the message printed. */
static int parse(int argc, char **argv, struct router_cli *cl)
{
	int c, st, nmap = 0;

	memset(cl, 0, sizeof(*cl));
	cl->interval = 1;
	cl->argc = argc;
	cl->argv = argv;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":c:i:m:r:p:a:b:n:T:qvh", longopts,
				NULL)) != -1) {
		st = parse_opt(c, optarg, argv, cl, &nmap);
		if (st)
			return st;
	}
	if (optind < argc) {
		cli_err("router: unexpected argument '%s' (ports are given with "
			"-i)", argv[optind]);
		return EXIT_USAGE;
	}
	return check_opts(&cl->rt, nmap);
}

static void announce(struct rt_router *rt)
{
	FILE *e = stderr;

	fprintf(e, "router: %u port%s, mode %s, %u thread%s:", rt->n,
		rt->n == 1 ? "" : "s", rt_mode_name(rt->o->mode), rt->nthreads,
		rt->nthreads == 1 ? "" : "s");
	if (rt->all_zc)
		fprintf(e, " zero-copy (all in region '%s')\n",
			rt->ports[0].info.region);
	else if (rt->o->copy)
		fprintf(e, " copying (--copy)\n");
	else if (!rt->any_zc)
		fprintf(e, " copying (the ports are in different regions: name "
			"them all with @mem:NAME for zero-copy)\n");
	else
		fprintf(e, " zero-copy within regions, copying between them\n");
	for (unsigned i = 0; i < rt->n; i++)
		fprintf(e, "router:   port %u %s (region '%s', %s)\n", i,
			rt->ports[i].info.name, rt->ports[i].info.region,
			rt->ports[i].info.mode_name);
}

/* SIGHUP with --config: reload it (the main thread, between ticks). */
static volatile sig_atomic_t reload_asked;

static void on_sighup(int sig)
{
	(void)sig;
	reload_asked = 1;
}

/* What a reload cannot change while the router runs (its ports, threads
 * and queues are built for them): the name of the first that differs
 * between the running settings a and the file's b, or NULL. */
static const char *fixed_changed(const struct rt_opts *a,
				 const struct rt_opts *b)
{
	if (a->nports != b->nports)
		return "port";
	for (unsigned i = 0; i < a->nports; i++)
		if (strcmp(a->port[i], b->port[i]) != 0)
			return "port";
	if (a->mode != b->mode)
		return "mode";
	if (a->map_set != b->map_set ||
	    memcmp(a->map, b->map, sizeof(a->map)) != 0)
		return "map";
	if (a->nouts != b->nouts || memcmp(a->outs, b->outs, sizeof(a->outs)))
		return "outputs";
	if (a->threads != b->threads)
		return "threads";
	if (a->ncpus != b->ncpus || memcmp(a->cpus, b->cpus, sizeof(a->cpus)))
		return "affinity";
	if (a->batch != b->batch || a->queue != b->queue ||
	    a->stash != b->stash)
		return a->batch != b->batch ? "batch" :
		       a->queue != b->queue ? "queue" : "stash";
	if (a->seed != b->seed)
		return "seed";
	if (a->copy != b->copy)
		return "copy";
	return NULL;
}

/* Read --config again and apply what can change while running: lpm's
 * routes (the file `routes` names, read again even when its name did
 * not change). A file with errors, or changes to what cannot change, is
 * refused with one line, and the router forwards on as it was. Tells
 * systemd RELOADING=1 first and READY=1 after, either way. */
static void reload(struct rt_router *rt, const struct router_cli *o)
{
	struct router_cli n;
	const char *what;
	int rc;

	notify_reloading();
	rc = parse(o->argc, o->argv, &n);
	if (rc) {
		cli_err("router: reload of %s refused: the router goes on as it "
			"was", o->config);
		notify_status("reload of %s refused (see the log)", o->config);
	} else if ((what = fixed_changed(&o->rt, &n.rt)) != NULL) {
		cli_err("router: reload of %s refused: '%s' changed, and only "
			"routes reload: restart the router to apply it",
			o->config, what);
		notify_status("reload refused: '%s' changed (restart to apply)",
			      what);
	} else if (o->rt.mode == RT_LPM &&
		   (rc = rt_reload_routes(rt, n.rt.routes)) != 0) {
		cli_err("router: reload of %s refused: %s", o->config, rt->err);
		notify_status("reload refused: %s", rt->err);
	} else {
		fprintf(stderr, "router: reloaded %s", o->config);
		if (o->rt.mode == RT_LPM)
			fprintf(stderr, ": %u routes from %s", rt->lpm_live->nroutes,
				n.rt.routes);
		fprintf(stderr, "\n");
		notify_status("forwarding (reloaded %s)", o->config);
	}
	router_conf_free(&n.conf);
	notify_ready();
}

/* The main thread while the stages run: report lines, and the end. */
static void watch(struct rt_router *rt, const struct router_cli *o, FILE *out)
{
	uint64_t tick = 100000000ull, step = (uint64_t)(o->interval * 1e9);
	uint64_t start = stats_now_ns(), next_line = start + step, wake = start;
	uint64_t seen = 0, last_change = start;
	bool started = false;
	struct router_report rep;

	router_report_init(rt, &rep);
	for (;;) {
		struct timespec ts;
		uint64_t now, moved;

		wake += tick;
		ts.tv_sec = (time_t)(wake / 1000000000u);
		ts.tv_nsec = (long)(wake % 1000000000u);
		while (!run_stopping() &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		if (reload_asked && !run_stopping()) {
			reload_asked = 0;
			reload(rt, o);
		}
		now = stats_now_ns();
		if (run_stopping()) {
			rt->end = "signal";
			return;
		}
		if (rt_stopping(rt)) {
			rt->end = "error";
			return;
		}
		if (step && now >= next_line) {
			if (!o->quiet)
				router_interval(rt, &rep, out);
			next_line += step;
			if (next_line < now)
				next_line = now + step;
		}
		moved = rt_total_received(rt);
		if (moved != seen) {
			seen = moved;
			last_change = now;
			started = true;
		}
		if (o->count && rt_total_sent(rt) >= o->count) {
			rt->end = "count";
			return;
		}
		if (o->duration > 0 && now - start >= (uint64_t)(o->duration * 1e9)) {
			rt->end = "duration";
			return;
		}
		if (o->idle > 0 && started &&
		    now - last_change >= (uint64_t)(o->idle * 1e9)) {
			rt->end = "idle";
			return;
		}
	}
}

int cmd_router(int argc, char **argv)
{
	struct router_cli o;
	struct rt_router *rt;
	struct run r;
	int status = parse(argc, argv, &o), rc;

	if (status) {
		router_conf_free(&o.conf);
		return status < 0 ? 0 : status;
	}
	if (run_init(&r, "router", o.rt.port[0], 1, -1, o.interval, o.verbose,
		     o.json, o.quiet)) {
		router_conf_free(&o.conf);
		return EXIT_RUNTIME;
	}
	fwdcli_soft_sigterm();
	if (o.config) {
		/* no SA_RESTART: the main thread's wait returns at once */
		struct sigaction sa = {.sa_handler = on_sighup};

		sigaction(SIGHUP, &sa, NULL);
	}
	o.rt.stop = &run_stop_flag;
	rt = aligned_alloc(64, (sizeof(*rt) + 63) & ~(size_t)63);
	if (!rt) {
		cli_err("router: out of memory");
		run_fini(&r);
		router_conf_free(&o.conf);
		return EXIT_RUNTIME;
	}
	rc = rt_setup(rt, &o.rt);
	if (rc) {
		cli_err("router: %s", rt->err);
		status = rc == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
		goto out;
	}
	if (!o.quiet)
		announce(rt);
	rc = rt_start(rt);
	if (rc) {
		cli_err("router: %s", rt->err);
		status = EXIT_RUNTIME;
	} else {
		notify_status("forwarding: %u ports, mode %s, %u threads", rt->n,
			      rt_mode_name(o.rt.mode), rt->nthreads);
		notify_ready();
		watch(rt, &o, r.stats.out);
	}
	notify_stopping();
	rt_stop(rt);
	rt_join(rt);
	rt_account(rt);
	if (!o.quiet)
		router_summary(rt, r.stats.out);
	if (o.json)
		router_json(rt);
	for (unsigned k = 0; k < rt->nthreads; k++) {
		if (rt->th[k].error) {
			cli_err("%s", rt->th[k].err);
			status = EXIT_RUNTIME;
		}
	}
	if (!rt->bufs.ok) {
		cli_err("router: buffers not conserved: total %llu, free %llu, "
			"in flight %llu, %llu bad, %llu duplicate",
			(unsigned long long)rt->bufs.total,
			(unsigned long long)rt->bufs.free,
			(unsigned long long)(rt->bufs.fwd_queued +
					     rt->bufs.recycling),
			(unsigned long long)rt->bufs.bad,
			(unsigned long long)rt->bufs.duplicate);
		status = EXIT_RUNTIME;
	}
out:
	rt_teardown(rt);
	free(rt);
	run_fini(&r);
	router_conf_free(&o.conf);
	return status;
}
