/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap recv: receive on a port, count, and check the sequence numbers
 * `pktmap gen` puts in its frames. This file is the command line and the
 * setup; the receiving loop is in recv_work.c.
 */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "recv.h"

void usage_recv(void)
{
	printf(
"usage: pktmap recv -i PORT [options]\n"
"\n"
"Receive on PORT, count packets and bytes, and check the frames of\n"
"`pktmap gen`: per stream, sequence numbers not seen (gaps; a late arrival\n"
"fills its gap again), lower than expected (reordered or duplicated), and\n"
"frames that are not gen's (bad).\n"
"\n"
"  -i, --port PORT       port to receive on (pipe:x}0, pcap:in.pcap, ...)\n"
"  -b, --batch N         slots consumed per ring per sync, at most: 1 to\n"
"                        65536 (default: all that are there)\n"
"  -n, --count N         stop after N packets (k, M, G suffixes; 0, the\n"
"                        default: no limit)\n"
"  -p, --threads N       receiving threads; thread I opens ring I (PORT-I)\n"
"  -a, --affinity CPU    pin thread I to CPU+I (CPUs the process may run on)\n"
"  -T, --interval SEC    seconds between report lines, 0 = none (default 1)\n"
"      --idle SEC        stop when nothing arrived for SEC seconds after\n"
"                        the first packet (default 0: never)\n"
"      --fast            do not read the frames, only count slots and bytes\n"
"      --verify          check gen's payload headers (the default unless\n"
"                        --fast); --no-verify turns it off\n"
"      --csum            also check the IPv4 and UDP checksums\n"
"      --dump N          hex-dump the first N packets\n"
"      --json            print the summary as one JSON object on stdout\n"
"                        (report lines and dumps then go to stderr)\n"
"  -q, --quiet           no report lines and no human summary\n"
"  -v, --verbose         more library messages (twice: debug)\n"
"\n"
"A packet spread over several slots (NS_MOREFRAG) counts once. Gaps are\n"
"counted from the first sequence number seen in each stream. bps counts the\n"
"bits of the frames; \"on the wire\" adds 24 bytes per frame. Ends after\n"
"COUNT packets, at the end of a capture file, after --idle, or at Ctrl-C;\n"
"exit status 0 unless the port failed.\n");
}

enum {
	OPT_IDLE = 256,
	OPT_FAST,
	OPT_VERIFY,
	OPT_NO_VERIFY,
	OPT_CSUM,
	OPT_DUMP,
	OPT_JSON,
};

static const struct option longopts[] = {
	{"port", required_argument, NULL, 'i'},
	{"batch", required_argument, NULL, 'b'},
	{"count", required_argument, NULL, 'n'},
	{"threads", required_argument, NULL, 'p'},
	{"affinity", required_argument, NULL, 'a'},
	{"interval", required_argument, NULL, 'T'},
	{"idle", required_argument, NULL, OPT_IDLE},
	{"fast", no_argument, NULL, OPT_FAST},
	{"verify", no_argument, NULL, OPT_VERIFY},
	{"no-verify", no_argument, NULL, OPT_NO_VERIFY},
	{"csum", no_argument, NULL, OPT_CSUM},
	{"dump", required_argument, NULL, OPT_DUMP},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int parse(int argc, char **argv, struct recv_opts *o)
{
	int verify = -1; /* -1: the default */
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->threads = 1;
	o->cpu = -1;
	o->interval = 1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:b:n:p:a:T:qvh", longopts,
				NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'i': o->port = optarg; break;
		case 'b':
			bad = cli_opt_u64("recv: -b: batch", optarg,
					  1, 65536, &v);
			o->batch = (uint32_t)v;
			break;
		case 'n':
			bad = cli_opt_u64("recv: -n: count", optarg,
					  0, UINT64_MAX, &o->count);
			break;
		case 'p':
			bad = cli_opt_u64("recv: -p: threads", optarg,
					  1, RUN_MAX_THREADS, &v);
			o->threads = (unsigned)v;
			break;
		case 'a':
			bad = cli_opt_u64("recv: -a: CPU", optarg,
					  0, CPU_SETSIZE - RUN_MAX_THREADS, &v);
			o->cpu = (int)v;
			break;
		case 'T':
		case OPT_IDLE:
			bad = cli_opt_seconds(c == 'T' ? "recv: -T:" :
							"recv: --idle:",
					      optarg, 86400,
					      c == 'T' ? &o->interval : &o->idle);
			break;
		case OPT_DUMP:
			bad = cli_opt_u64("recv: --dump:", optarg,
					  0, INT64_MAX, &o->dump);
			break;
		case OPT_FAST: o->fast = true; break;
		case OPT_VERIFY: verify = 1; break;
		case OPT_NO_VERIFY: verify = 0; break;
		case OPT_CSUM: o->csum = true; break;
		case OPT_JSON: o->json = true; break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose++; break;
		case 'h': usage_recv(); return -1;
		default:
			cli_opt_error("recv", c, argv);
			return EXIT_USAGE;
		}
		if (bad)
			return EXIT_USAGE;
	}
	if (optind < argc) {
		cli_err("recv: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->port) {
		cli_err("recv: no port given: use -i PORT (see 'pktmap help recv')");
		return EXIT_USAGE;
	}
	if (o->cpu >= 0 && cli_cpus_ok("recv: -a:", o->cpu, o->threads, NULL))
		return EXIT_USAGE;
	if (o->fast && (verify == 1 || o->csum)) {
		cli_err("recv: --fast does not read frames: it cannot be combined "
			"with --verify or --csum");
		return EXIT_USAGE;
	}
	o->verify = verify < 0 ? !o->fast : verify;
	return 0;
}

static int setup_thread(const struct recv_opts *o, struct run_worker *w,
			struct recv_thread *t, struct recv_shared *sh)
{
	struct pktmap_info info = {.sz = sizeof(info)};
	struct netmap_if *nifp = pktmap_nifp(w->port);
	int rc = pktmap_info(w->port, &info);

	if (rc < 0) {
		cli_err("recv: %s: %s", w->st->port, pktmap_strerror(rc));
		return EXIT_RUNTIME;
	}
	if (info.last_rx_ring < info.first_rx_ring || info.rx_slots == 0) {
		cli_err("recv: %s: the port has no RX ring", w->st->port);
		return EXIT_USAGE;
	}
	t->o = o;
	t->sh = sh;
	t->nrings = info.last_rx_ring - info.first_rx_ring + 1;
	t->rings = calloc(t->nrings, sizeof(*t->rings));
	if (!t->rings) {
		cli_err("recv: out of memory");
		return EXIT_RUNTIME;
	}
	for (unsigned k = 0; k < t->nrings; k++)
		t->rings[k] = NETMAP_RXRING(nifp, info.first_rx_ring + k);
	return 0;
}

int cmd_recv(int argc, char **argv)
{
	struct recv_opts o;
	struct recv_thread *t = NULL;
	struct recv_shared sh;
	struct run r;
	int status = parse(argc, argv, &o);

	if (status)
		return status < 0 ? 0 : status;
	if (run_init(&r, "recv", o.port, o.threads, o.cpu, o.interval,
		     o.verbose, o.json, o.quiet))
		return EXIT_RUNTIME;
	r.fn = recv_work;
	r.stats.recv = true;
	r.stats.verify = o.verify;
	r.stats.csum = o.csum;
	atomic_init(&sh.total, 0);
	atomic_init(&sh.dump_left, (int64_t)o.dump);
	status = run_open(&r, PKTMAP_DIR_RX);
	if (status)
		goto out;
	t = calloc(o.threads, sizeof(*t));
	if (!t) {
		cli_err("recv: out of memory");
		status = EXIT_RUNTIME;
		goto out;
	}
	for (unsigned i = 0; i < o.threads; i++) {
		status = setup_thread(&o, &r.w[i], &t[i], &sh);
		if (status)
			goto out;
		r.w[i].arg = &t[i];
	}
	status = run_go(&r);
out:
	for (unsigned i = 0; t && i < o.threads; i++)
		free(t[i].rings);
	free(t);
	run_fini(&r);
	return status;
}
