/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap gen: send IPv4/UDP frames on a port as fast as it takes them, or
 * at a given rate. This file is the command line and the setup; the
 * sending loop is in gen_work.c.
 */
#include <getopt.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "gen.h"

void usage_gen(void)
{
	printf(
"usage: pktmap gen -i PORT [options]\n"
"\n"
"Send IPv4/UDP frames on PORT. Each frame carries pktmap's payload header\n"
"(magic \"PKTM\", stream id, sequence number) for `pktmap recv --verify`.\n"
"\n"
"  -i, --port PORT       port to send on (pipe:x{0, null:, pcap:out.pcap, ...)\n"
"  -l, --length SIZE     frame length without CRC, 60 (default) to the port's\n"
"                        buffer size (on an interface: its MTU + 14); A-B\n"
"                        picks a random length in [A, B]\n"
"  -b, --batch N         slots filled per ring per sync (default 512; fewer\n"
"                        when the ring has less room)\n"
"  -n, --count N         packets to send in all, 0 = until Ctrl-C (default)\n"
"  -R, --rate PPS        packets per second in all (k, M, G suffixes; 0, the\n"
"                        default: as fast as the port takes them)\n"
"  -s, --src IP[:PORT]   source address or range, with an optional port or\n"
"                        range: 10.0.0.1-10.0.0.9:1234-1240 (default\n"
"                        10.0.0.1:1234)\n"
"  -d, --dst IP[:PORT]   destination, likewise (default 10.1.0.1:4321)\n"
"  -S, --src-mac MAC     source MAC (default 02:00:00:00:00:01)\n"
"  -D, --dst-mac MAC     destination MAC (default ff:ff:ff:ff:ff:ff)\n"
"  -p, --threads N       sending threads; thread I opens ring I of the port\n"
"                        (PORT-I); one thread uses all rings\n"
"  -a, --affinity CPU    pin thread I to CPU+I (CPUs the process may run on)\n"
"  -T, --interval SEC    seconds between report lines, 0 = none (default 1)\n"
"  -w, --wait SEC        wait before sending, for a link to come up\n"
"                        (default 0)\n"
"      --fast            write frames into the buffers once and afterwards\n"
"                        only set slot lengths: the fastest mode, but frames\n"
"                        carry no sequence numbers and, on ports that swap\n"
"                        buffers (pipes), what the peer last left in them\n"
"      --json            print the summary as one JSON object on stdout\n"
"                        (report lines then go to stderr)\n"
"  -q, --quiet           no report lines and no human summary\n"
"  -v, --verbose         more library messages (twice: debug)\n"
"\n"
"Stream id = thread index (with several rings per thread: thread * rings +\n"
"ring); sequence numbers count from 0 in each stream. bps counts the bits of\n"
"the frames; \"on the wire\" adds 24 bytes per frame (preamble, CRC, gap).\n"
"Ends after COUNT packets or at Ctrl-C (a second Ctrl-C quits at once),\n"
"waits up to 2 s for queued frames to leave, prints a summary.\n");
}

static const struct option longopts[] = {
	{"port", required_argument, NULL, 'i'},
	{"length", required_argument, NULL, 'l'},
	{"batch", required_argument, NULL, 'b'},
	{"count", required_argument, NULL, 'n'},
	{"rate", required_argument, NULL, 'R'},
	{"src", required_argument, NULL, 's'},
	{"dst", required_argument, NULL, 'd'},
	{"src-mac", required_argument, NULL, 'S'},
	{"dst-mac", required_argument, NULL, 'D'},
	{"threads", required_argument, NULL, 'p'},
	{"affinity", required_argument, NULL, 'a'},
	{"interval", required_argument, NULL, 'T'},
	{"wait", required_argument, NULL, 'w'},
	{"fast", no_argument, NULL, 'F'},
	{"json", no_argument, NULL, 'J'},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Parse the command line into o. Returns 0, or an exit status. */
static int parse(int argc, char **argv, struct gen_opts *o)
{
	static const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x01};
	char err[256];
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->len.lo = o->len.hi = PKT_MIN_LEN;
	o->batch = 512;
	o->src = (struct cli_addr){0x0a000001, 0x0a000001, 1234, 1234};
	o->dst = (struct cli_addr){0x0a010001, 0x0a010001, 4321, 4321};
	memcpy(o->smac, smac, 6);
	memset(o->dmac, 0xff, 6);
	o->threads = 1;
	o->cpu = -1;
	o->interval = 1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:l:b:n:R:s:d:S:D:p:a:T:w:qvh",
				longopts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'i': o->port = optarg; break;
		case 'l':
			bad = cli_parse_range(optarg, PKT_MIN_LEN, PKT_MAX_LEN,
					      &o->len, err, sizeof(err));
			if (bad)
				cli_err("gen: -l: frame length %s", err);
			break;
		case 'b':
			bad = cli_opt_u64("gen: -b: batch", optarg,
					  1, 65536, &v);
			o->batch = (uint32_t)v;
			break;
		case 'n':
			bad = cli_opt_u64("gen: -n: count", optarg,
					  0, UINT64_MAX, &o->count);
			break;
		case 'R':
			bad = cli_opt_u64("gen: -R: rate", optarg,
					  0, UINT64_MAX / 2, &o->rate);
			break;
		case 's':
		case 'd':
			bad = cli_parse_addr(optarg, c == 's' ? &o->src : &o->dst,
					     err, sizeof(err));
			if (bad)
				cli_err("gen: -%c: %s", c, err);
			break;
		case 'S':
		case 'D':
			bad = cli_parse_mac(optarg, c == 'S' ? o->smac : o->dmac,
					    err, sizeof(err));
			if (bad)
				cli_err("gen: -%c: %s", c, err);
			break;
		case 'p':
			bad = cli_opt_u64("gen: -p: threads", optarg,
					  1, RUN_MAX_THREADS, &v);
			o->threads = (unsigned)v;
			break;
		case 'a':
			bad = cli_opt_u64("gen: -a: CPU", optarg,
					  0, CPU_SETSIZE - RUN_MAX_THREADS, &v);
			o->cpu = (int)v;
			break;
		case 'T':
		case 'w':
			bad = cli_parse_seconds(optarg, 86400,
						c == 'T' ? &o->interval : &o->wait,
						err, sizeof(err));
			if (bad)
				cli_err("gen: -%c: %s", c, err);
			break;
		case 'F': o->fast = true; break;
		case 'J': o->json = true; break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose++; break;
		case 'h': usage_gen(); return -1;
		default:
			cli_opt_error("gen", c, argv);
			return EXIT_USAGE;
		}
		if (bad)
			return EXIT_USAGE;
	}
	if (optind < argc) {
		cli_err("gen: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->port) {
		cli_err("gen: no port given: use -i PORT (see 'pktmap help gen')");
		return EXIT_USAGE;
	}
	if (o->cpu >= 0 && cli_cpus_ok("gen: -a:", o->cpu, o->threads, NULL))
		return EXIT_USAGE;
	if (o->rate && o->rate < o->threads) {
		cli_err("gen: -R: rate %llu is lower than the number of threads",
			(unsigned long long)o->rate);
		return EXIT_USAGE;
	}
	return 0;
}

/* Set up thread i's rings and templates on its open port. Returns 0 or an
 * exit status (message printed). */
static int setup_thread(const struct gen_opts *o, struct run_worker *w,
			struct gen_thread *g)
{
	struct pktmap_info info = {.sz = sizeof(info)};
	struct netmap_if *nifp = pktmap_nifp(w->port);
	int rc = pktmap_info(w->port, &info);

	if (rc < 0) {
		cli_err("gen: %s: %s", w->st->port, pktmap_strerror(rc));
		return EXIT_RUNTIME;
	}
	if (info.buf_usable < PKT_TMPL_MIN) {
		cli_err("gen: %s: buffers of %u bytes are too small: gen needs "
			"%u", w->st->port, info.buf_usable, PKT_TMPL_MIN);
		return EXIT_USAGE;
	}
	if (o->len.hi > info.buf_usable) {
		cli_err("gen: -l: frame length %llu does not fit the buffers of "
			"%s (%u bytes)", (unsigned long long)o->len.hi,
			w->st->port, info.buf_usable);
		return EXIT_USAGE;
	}
	/* gen's frames carry no VLAN tag: above the interface's MTU + 14
	 * every one would be dropped (counted as too long). */
	if (info.sz >= offsetof(struct pktmap_info, tx_max_len) +
			sizeof(info.tx_max_len) &&
	    info.tx_max_len && o->len.hi > info.tx_max_len) {
		cli_err("gen: -l: frame length %llu is more than %s sends: at "
			"most %u (MTU %u + 14 bytes of Ethernet header)",
			(unsigned long long)o->len.hi, w->st->port,
			info.tx_max_len, info.tx_max_len - 14);
		return EXIT_USAGE;
	}
	if (info.last_tx_ring < info.first_tx_ring || info.tx_slots == 0) {
		cli_err("gen: %s: the port has no TX ring", w->st->port);
		return EXIT_USAGE;
	}
	g->o = o;
	g->nrings = info.last_tx_ring - info.first_tx_ring + 1;
	g->rings = calloc(g->nrings, sizeof(*g->rings));
	if (!g->rings)
		goto nomem;
	g->vary = o->len.lo != o->len.hi || o->src.ip_lo != o->src.ip_hi ||
		  o->dst.ip_lo != o->dst.ip_hi ||
		  o->src.port_lo != o->src.port_hi ||
		  o->dst.port_lo != o->dst.port_hi;
	g->sip = o->src.ip_lo;
	g->dip = o->dst.ip_lo;
	g->sport = o->src.port_lo;
	g->dport = o->dst.port_lo;
	g->rng = 0x9e3779b97f4a7c15ull * (w->idx + 1);
	for (unsigned k = 0; k < g->nrings; k++) {
		struct gen_ring *gr = &g->rings[k];
		struct pkt_fields f = {
			.sip = o->src.ip_lo, .dip = o->dst.ip_lo,
			.sport = o->src.port_lo, .dport = o->dst.port_lo,
			.len = (uint32_t)o->len.lo,
			.stream = (uint16_t)(o->fast ? PKT_STREAM_NOSEQ
						     : w->idx * g->nrings + k),
		};

		gr->ring = NETMAP_TXRING(nifp, info.first_tx_ring + k);
		gr->wlen = calloc(gr->ring->num_slots, sizeof(*gr->wlen));
		if (!gr->wlen || pkt_tmpl_init(&gr->tmpl, o->dmac, o->smac, &f,
					       (uint32_t)o->len.hi))
			goto nomem;
	}
	return 0;
nomem:
	cli_err("gen: out of memory");
	return EXIT_RUNTIME;
}

static void free_thread(struct gen_thread *g)
{
	for (unsigned k = 0; g->rings && k < g->nrings; k++) {
		free(g->rings[k].wlen);
		pkt_tmpl_free(&g->rings[k].tmpl);
	}
	free(g->rings);
}

int cmd_gen(int argc, char **argv)
{
	struct gen_opts o;
	struct gen_thread *g = NULL;
	struct run r;
	int status = parse(argc, argv, &o);

	if (status)
		return status < 0 ? 0 : status;
	if (run_init(&r, "gen", o.port, o.threads, o.cpu, o.interval,
		     o.verbose, o.json, o.quiet))
		return EXIT_RUNTIME;
	r.fn = gen_work;
	status = run_open(&r, PKTMAP_DIR_TX);
	if (status)
		goto out;
	g = calloc(o.threads, sizeof(*g));
	if (!g) {
		cli_err("gen: out of memory");
		status = EXIT_RUNTIME;
		goto out;
	}
	for (unsigned i = 0; i < o.threads; i++) {
		status = setup_thread(&o, &r.w[i], &g[i]);
		if (status)
			goto out;
		g[i].limited = o.count != 0;
		g[i].count = o.count / o.threads + (i < o.count % o.threads);
		g[i].rate = o.rate / o.threads + (i < o.rate % o.threads);
		r.w[i].arg = &g[i];
	}
	run_wait(o.wait);
	status = run_go(&r);
out:
	for (unsigned i = 0; g && i < o.threads; i++)
		free_thread(&g[i]);
	free(g);
	run_fini(&r);
	return status;
}
