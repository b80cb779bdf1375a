/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap bridge A B: forward everything A receives to B and everything B
 * receives to A, in one thread (netmap's bridge). Zero-copy when A and B
 * share a region, a copy otherwise; it says which when it starts. Given
 * one port, A is bridged with its host rings (A^). This file is the
 * command line, the setup and the output; the loop is the forwarding
 * component's (src/fwd/bridge.c).
 */
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "cli.h"
#include "cmds.h"
#include "fwd_cli.h"
#include "run.h"

struct bridge_opts {
	const char *port[2];
	char host_name[300];    /* B = A^ when one port is given */
	uint32_t batch;         /* slots moved per direction per round */
	uint64_t count;         /* stop after this many packets, 0 = never */
	int cpu;                /* -1: not pinned */
	double interval, idle;
	bool copy;              /* copy even when zero-copy is possible */
	bool json, quiet;
	int verbose;
};

/* The command's options, kept in the loop's context. */
static inline const struct bridge_opts *opts_of(const struct bridge *b)
{
	return b->user;
}

void usage_bridge(void)
{
	printf(
"usage: pktmap bridge [options] PORT_A [PORT_B]\n"
"       pktmap bridge [options] -i PORT_A [-i PORT_B]\n"
"\n"
"Forward every frame PORT_A receives to PORT_B and every frame PORT_B\n"
"receives to PORT_A, in one thread. When both ports live in one region\n"
"(both ends of a pipe; ports named with the same @mem:NAME) the bridge is\n"
"zero-copy: the RX slot and the TX slot swap buffers. Otherwise each frame\n"
"is copied. It says which when it starts. With one port, PORT_A is\n"
"bridged with its host rings (PORT_A^), where the back end has them.\n"
"\n"
"  -i, --port PORT       a port (twice, or give them as arguments)\n"
"  -b, --batch N         slots moved per direction per round (default 512)\n"
"  -n, --count N         stop after N frames (both directions together)\n"
"  -a, --affinity CPU    pin the forwarding thread to CPU\n"
"  -T, --interval SEC    seconds between report lines, 0 = none (default 1)\n"
"      --idle SEC        stop when nothing moved for SEC seconds after the\n"
"                        first frame (default 0: never)\n"
"      --copy            copy frames even when the ports share a region\n"
"      --json            print the summary as one JSON object on stdout\n"
"                        (report lines then go to stderr)\n"
"  -q, --quiet           no start line, report lines or human summary\n"
"  -v, --verbose         more library messages (twice: debug)\n"
"\n"
"A frame spread over several slots (NS_MOREFRAG) moves whole; one that can\n"
"never fit the other port's TX ring is dropped and counted. Ends at Ctrl-C\n"
"or SIGTERM (a second Ctrl-C quits at once), after COUNT frames, after\n"
"--idle, or at the end of a capture file; waits up to 1 s for the TX rings\n"
"to drain and prints per-direction counters.\n");
}

enum { OPT_IDLE = 256, OPT_COPY, OPT_JSON };

static const struct option longopts[] = {
	{"port", required_argument, NULL, 'i'},
	{"batch", required_argument, NULL, 'b'},
	{"count", required_argument, NULL, 'n'},
	{"affinity", required_argument, NULL, 'a'},
	{"interval", required_argument, NULL, 'T'},
	{"idle", required_argument, NULL, OPT_IDLE},
	{"copy", no_argument, NULL, OPT_COPY},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int add_port(struct bridge_opts *o, int *np, const char *name)
{
	if (*np == 2) {
		cli_err("bridge: more than two ports (see 'pktmap help bridge')");
		return EXIT_USAGE;
	}
	o->port[(*np)++] = name;
	return 0;
}


static int parse(int argc, char **argv, struct bridge_opts *o)
{
	uint64_t v;
	int c, np = 0;

	memset(o, 0, sizeof(*o));
	o->batch = 512;
	o->cpu = -1;
	o->interval = 1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:b:n:a:T:qvh", longopts,
				NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'i':
			if (add_port(o, &np, optarg))
				return EXIT_USAGE;
			break;
		case 'b':
			bad = cli_opt_u64("bridge: -b: batch", optarg,
					  1, 65536, &v);
			o->batch = (uint32_t)v;
			break;
		case 'n':
			bad = cli_opt_u64("bridge: -n: count", optarg,
					  0, UINT64_MAX, &o->count);
			break;
		case 'a':
			bad = cli_opt_u64("bridge: -a: CPU", optarg,
					  0, CPU_SETSIZE - 1, &v);
			o->cpu = (int)v;
			break;
		case 'T':
		case OPT_IDLE:
			bad = cli_opt_seconds(c == 'T' ? "bridge: -T:" :
							"bridge: --idle:",
					      optarg, 86400,
					      c == 'T' ? &o->interval : &o->idle);
			break;
		case OPT_COPY: o->copy = true; break;
		case OPT_JSON: o->json = true; break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose++; break;
		case 'h': usage_bridge(); return -1;
		default:
			cli_opt_error("bridge", c, argv);
			return EXIT_USAGE;
		}
		if (bad)
			return EXIT_USAGE;
	}
	for (; optind < argc; optind++)
		if (add_port(o, &np, argv[optind]))
			return EXIT_USAGE;
	if (o->cpu >= 0 && cli_cpus_ok("bridge: -a:", o->cpu, 1, NULL))
		return EXIT_USAGE;
	if (np == 0) {
		cli_err("bridge: no port given: pktmap bridge PORT_A [PORT_B] "
			"(see 'pktmap help bridge')");
		return EXIT_USAGE;
	}
	if (np == 2 && fwd_same_port(o->port[0], o->port[1])) {
		cli_err("bridge: %s: repeated port (A and B are one): give two "
			"ports, or one for its host rings", o->port[1]);
		return EXIT_USAGE;
	}
	if (np == 1) {
		if (cli_insert_after_port(o->port[0], "^", o->host_name,
					  sizeof(o->host_name))) {
			cli_err("bridge: port name too long: %s", o->port[0]);
			return EXIT_USAGE;
		}
		o->port[1] = o->host_name;
	}
	return 0;
}

struct worker {
	struct bridge *b;
	sem_t done;
	int pin_err;
};

static void *thread_main(void *arg)
{
	struct worker *w = arg;

	w->pin_err = fwd_pin(opts_of(w->b)->cpu);
	if (!w->pin_err)
		bridge_work(w->b);
	sem_post(&w->done);
	return NULL;
}

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* The report line of the last interval. */
struct last {
	uint64_t ns, pkts[2], bytes[2];
};

static void interval(struct bridge *b, struct last *l, FILE *out)
{
	uint64_t now = stats_now_ns();
	double dt = (double)(now - l->ns) / 1e9;
	char pps[2][32], bps[2][32];

	for (int i = 0; i < 2; i++) {
		uint64_t p = ld(&b->dir[i].c.packets), y = ld(&b->dir[i].c.bytes);

		stats_fmt_rate(pps[i], sizeof(pps[i]),
			       dt > 0 ? (double)(p - l->pkts[i]) / dt : 0, "pps");
		stats_fmt_rate(bps[i], sizeof(bps[i]),
			       dt > 0 ? (double)(y - l->bytes[i]) * 8 / dt : 0,
			       "bps");
		l->pkts[i] = p;
		l->bytes[i] = y;
	}
	l->ns = now;
	fprintf(out, "bridge A->B %s %s | B->A %s %s\n", pps[0], bps[0], pps[1],
		bps[1]);
	fflush(out);
}

#define U(x) ((unsigned long long)(x))

static double seconds_of(struct bridge *b)
{
	uint64_t f = ld(&b->t_first), l = ld(&b->t_last);

	return l > f ? (double)(l - f) / 1e9 : 0.0;
}

static void summary_human(struct bridge *b, FILE *o)
{
	double s = seconds_of(b);
	uint64_t pk = ld(&b->dir[0].c.packets) + ld(&b->dir[1].c.packets);
	uint64_t busy = ld(&b->busy_cycles);
	char pps[32], bps[32];

	fprintf(o, "bridge %s <-> %s  %llu frames in %.3f s (%s), %s\n",
		b->info[0].name, b->info[1].name, U(pk), s,
		b->end ? b->end : "done", b->zerocopy ? "zero-copy" : "copied");
	for (int i = 0; i < 2; i++) {
		struct bridge_dir *d = &b->dir[i];
		uint64_t p = ld(&d->c.packets), y = ld(&d->c.bytes);
		uint64_t r = ld(&d->c.rounds), sl = ld(&d->c.slots);

		stats_fmt_rate(pps, sizeof(pps), s > 0 ? (double)p / s : 0, "pps");
		stats_fmt_rate(bps, sizeof(bps), s > 0 ? (double)y * 8 / s : 0,
			       "bps");
		fprintf(o, "bridge %s  %llu frames, %llu bytes, %s, %s, batch "
			"%.1f, dropped %llu\n", d->label, U(p), U(y), pps, bps,
			r ? (double)sl / (double)r : 0.0, U(ld(&d->c.drops)));
	}
	if (pk)
		fprintf(o, "bridge busy %.1f ns of CPU per frame (%.1f TSC cycles "
			"of wall time)\n", (double)ld(&b->busy_cpu_ns) / (double)pk,
			(double)busy / (double)pk);
	for (int i = 0; i < 2; i++) {
		struct pktmap_stats st = {.sz = sizeof(st)};

		pktmap_stats(b->port[i], &st);
		if (st.drop_invalid || st.drop_too_long || st.drop_backend ||
		    st.invalid_ring)
			fprintf(o, "bridge %s  port dropped %llu invalid, %llu too "
				"long, %llu in the back end; %llu syncs refused\n",
				b->info[i].name, U(st.drop_invalid),
				U(st.drop_too_long), U(st.drop_backend),
				U(st.invalid_ring));
	}
}

static void summary_json(struct bridge *b)
{
	FILE *o = stdout;
	double s = seconds_of(b);
	uint64_t pk = 0, by = 0, dr = 0, busy = ld(&b->busy_cycles);

	for (int i = 0; i < 2; i++) {
		pk += ld(&b->dir[i].c.packets);
		by += ld(&b->dir[i].c.bytes);
		dr += ld(&b->dir[i].c.drops);
	}
	fprintf(o, "{\"cmd\":\"bridge\",\"version\":\"%s\",\"mode\":\"%s\","
		"\"region\":", PKTMAP_VERSION, b->zerocopy ? "zerocopy" : "copy");
	stats_json_str(o, b->zerocopy ? b->info[0].region : "");
	fprintf(o, ",\"end\":");
	stats_json_str(o, b->end ? b->end : "done");
	fprintf(o, ",\"packets\":%llu,\"bytes\":%llu,\"drops\":%llu,"
		"\"seconds\":%.6f,\"pps\":%.1f,\"busy_cycles\":%llu,"
		"\"cycles_per_packet\":%.2f,\"busy_cpu_ns\":%llu,"
		"\"cpu_ns_per_packet\":%.3f,\"directions\":[", U(pk), U(by),
		U(dr), s, s > 0 ? (double)pk / s : 0.0, U(busy),
		pk ? (double)busy / (double)pk : 0.0, U(ld(&b->busy_cpu_ns)),
		pk ? (double)ld(&b->busy_cpu_ns) / (double)pk : 0.0);
	for (int i = 0; i < 2; i++) {
		struct bridge_dir *d = &b->dir[i];
		uint64_t p = ld(&d->c.packets), r = ld(&d->c.rounds);
		struct pktmap_stats st = {.sz = sizeof(st)};

		pktmap_stats(d->to, &st);
		fprintf(o, "%s{\"dir\":\"%s\",\"from\":", i ? "," : "", d->label);
		stats_json_str(o, b->info[i].name);
		fprintf(o, ",\"to\":");
		stats_json_str(o, b->info[1 - i].name);
		fprintf(o, ",\"packets\":%llu,\"bytes\":%llu,\"slots\":%llu,"
			"\"tx_slots\":%llu,\"rounds\":%llu,\"avg_batch\":%.2f,\"drops\":%llu,"
			"\"pps\":%.1f,\"tx_port\":{", U(p), U(ld(&d->c.bytes)),
			U(ld(&d->c.slots)), U(ld(&d->c.tx_slots)), U(r),
			r ? (double)ld(&d->c.slots) / (double)r : 0.0,
			U(ld(&d->c.drops)), s > 0 ? (double)p / s : 0.0);
		fwdcli_json_lib(o, &st);
		fprintf(o, "}}");
	}
	fprintf(o, "]}\n");
	fflush(o);
}

/* Start the loop in its own thread (pinned if asked), print the report
 * lines until it ends. Returns the exit status. */
static int go(struct bridge *b, struct run *r)
{
	const struct bridge_opts *o = opts_of(b);
	struct worker w = {.b = b};
	uint64_t step = (uint64_t)(o->interval * 1e9), next;
	struct last l = {0};
	sigset_t block, old;
	pthread_t tid;
	int rc;

	sem_init(&w.done, 0, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&tid, NULL, thread_main, &w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		cli_err("bridge: cannot start the forwarding thread: %s",
			strerror(rc));
		return EXIT_RUNTIME;
	}
	l.ns = stats_now_ns();
	next = l.ns + step;
	for (;;) {
		struct timespec ts;

		if (step) {
			ts.tv_sec = (time_t)(next / 1000000000u);
			ts.tv_nsec = (long)(next % 1000000000u);
			if (sem_clockwait(&w.done, CLOCK_MONOTONIC, &ts) == 0)
				break;
		} else if (sem_wait(&w.done) == 0) {
			break;
		}
		if (step && stats_now_ns() >= next) {
			if (!o->quiet)
				interval(b, &l, r->stats.out);
			next += step;
			if (next < stats_now_ns())
				next = stats_now_ns() + step;
		}
	}
	pthread_join(tid, NULL);
	sem_destroy(&w.done);
	if (w.pin_err) {
		cli_err("bridge: cannot pin the forwarding thread to CPU %d: %s",
			o->cpu, strerror(w.pin_err));
		return EXIT_RUNTIME;
	}
	if (!o->quiet)
		summary_human(b, r->stats.out);
	if (o->json)
		summary_json(b);
	if (b->error) {
		cli_err("bridge: a sync failed: %s", pktmap_strerror(b->error));
		return EXIT_RUNTIME;
	}
	return 0;
}

int cmd_bridge(int argc, char **argv)
{
	struct bridge_opts o;
	struct bridge b;
	struct run r;
	int status = parse(argc, argv, &o);

	if (status)
		return status < 0 ? 0 : status;
	if (run_init(&r, "bridge", o.port[0], 1, o.cpu, o.interval, o.verbose,
		     o.json, o.quiet))
		return EXIT_RUNTIME;
	fwdcli_soft_sigterm();
	memset(&b, 0, sizeof(b));
	b.user = &o;
	b.batch = o.batch;
	b.count = o.count;
	b.idle_ns = (uint64_t)(o.idle * 1e9);
	b.stop = &run_stop_flag;
	for (int i = 0; i < 2 && !status; i++) {
		struct pktmap_open_opts oo = {.sz = sizeof(oo)};

		oo.bufs = fwd_region_bufs(o.port, 2, (unsigned)i, 0);

		status = fwdcli_open("bridge", o.port[i], &oo, &b.port[i]);
	}
	if (!status) {
		char err[400];

		if (bridge_setup(&b, o.copy, err, sizeof(err))) {
			cli_err("bridge: %s", err);
			status = EXIT_USAGE;
		}
	}
	if (status)
		goto out;
	if (!o.quiet) {
		if (b.zerocopy)
			fprintf(stderr, "bridge: %s <-> %s: zero-copy (both in "
				"region '%s')\n", b.info[0].name, b.info[1].name,
				b.info[0].region);
		else if (o.copy)
			fprintf(stderr, "bridge: %s <-> %s: copying (--copy)\n",
				b.info[0].name, b.info[1].name);
		else if (!strcmp(b.info[0].backend, "memif") ||
			 !strcmp(b.info[1].backend, "memif"))
			/* memif refuses @mem: (its pool is the peer's or
			 * its own), so do not suggest it */
			fprintf(stderr, "bridge: %s <-> %s: copying (a memif "
				"port has a buffer pool of its own)\n",
				b.info[0].name, b.info[1].name);
		else
			fprintf(stderr, "bridge: %s <-> %s: copying (the ports "
				"are in different regions: name both with "
				"@mem:NAME for zero-copy)\n", b.info[0].name,
				b.info[1].name);
	}
	status = go(&b, &r);
out:
	for (int i = 0; i < 2; i++)
		if (b.port[i])
			pktmap_close(b.port[i]);
	run_fini(&r);
	return status;
}
