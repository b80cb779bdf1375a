/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap capture: receive on a port, keep the packets a tcpdump filter
 * expression selects (compiled by the system libpcap, run with its
 * bpf_filter()), and write them to pcap or pcapng files, rotated by size
 * or time as tcpdump does. This file is the command line, the setup and
 * the threads; the loop is in capture_work.c, the files in capture_out.c,
 * the report lines and the summary in capture_report.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "cmds.h"
#include "run.h"
#include "stats.h"

void usage_capture(void)
{
	printf(
"usage: pktmap capture -i PORT [-w FILE] [options] [FILTER...]\n"
"\n"
"Receive on PORT and write the packets FILTER selects (a tcpdump filter\n"
"expression, compiled by the system libpcap) to a capture file.\n"
"\n"
"  -i, --port PORT       port to capture on (xdp:eth0, pkt:eth0, pipe:x}0, ...)\n"
"  -w, --write FILE      write to FILE (\"-\": standard output), opened before\n"
"                        the capture starts; without -w packets are only\n"
"                        counted\n"
"  -c, --count N         stop after N packets matched the filter (0, the\n"
"                        default: no limit)\n"
"  -s, --snaplen N       bytes kept of each packet (default and 0: 262144)\n"
"  -B, --ring-slots N    RX ring slots for xdp:, pkt: and tap: ports unless\n"
"                        the port name sets them (default 8192)\n"
"  -Q, --direction D     in, out or inout: the frames the interface receives,\n"
"                        sends, or both (pkt: ports; default inout there, as\n"
"                        tcpdump; other ports see what arrives: in)\n"
"      --pcapng          write pcapng (default: pcap with ns time stamps)\n"
"      --micro           pcap with microsecond time stamps (old readers)\n"
"  -C, --file-size SIZE  start a new file before FILE passes SIZE: millions\n"
"                        of bytes, or with a k, m, g suffix KiB, MiB, GiB;\n"
"                        files are FILE, FILE1, FILE2, ... as tcpdump's\n"
"  -G, --rotate SEC      start a new file every SEC seconds of packet time;\n"
"                        FILE is a strftime(3) pattern (\"cap-%%H%%M%%S.pcap\")\n"
"  -W, --file-count N    with -C: a ring of N files FILE0..; with -G: stop\n"
"                        after N files\n"
"      --per-queue       one file per RX ring (FILE-qN.ext), one thread each;\n"
"                        default: all rings merged into one file by time\n"
"  -a, --affinity CPU    pin worker I to CPU+I\n"
"  -T, --interval SEC    a report line every SEC seconds (default 0: none)\n"
"      --idle SEC        stop when nothing arrived for SEC seconds after the\n"
"                        first packet\n"
"      --json            print the summary as one JSON object on stdout\n"
"  -q, --quiet           no summary lines\n"
"  -v, --verbose         more library messages (twice: debug)\n"
"\n"
"FILTER runs in the kernel where the port has a kernel filter (pkt:), else\n"
"here. Packets are written from the port's buffers (writev), not copied.\n"
"Time stamps are the back end's when it stamps frames (pkt:, tap:, pcap:),\n"
"else the time of the sync that received the packet. Ends after -c, at the\n"
"end of a capture file port, after --idle, after -G -W's last file, or at\n"
"Ctrl-C; then prints packets received, matched, written and dropped (by\n"
"the kernel or device, and by the port) on standard error.\n");
}

enum {
	OPT_PCAPNG = 256,
	OPT_MICRO,
	OPT_PER_QUEUE,
	OPT_IDLE,
	OPT_JSON,
};

static const struct option longopts[] = {
	{"port", required_argument, NULL, 'i'},
	{"write", required_argument, NULL, 'w'},
	{"count", required_argument, NULL, 'c'},
	{"snaplen", required_argument, NULL, 's'},
	{"ring-slots", required_argument, NULL, 'B'},
	{"direction", required_argument, NULL, 'Q'},
	{"file-size", required_argument, NULL, 'C'},
	{"rotate", required_argument, NULL, 'G'},
	{"file-count", required_argument, NULL, 'W'},
	{"affinity", required_argument, NULL, 'a'},
	{"interval", required_argument, NULL, 'T'},
	{"pcapng", no_argument, NULL, OPT_PCAPNG},
	{"micro", no_argument, NULL, OPT_MICRO},
	{"per-queue", no_argument, NULL, OPT_PER_QUEUE},
	{"idle", required_argument, NULL, OPT_IDLE},
	{"json", no_argument, NULL, OPT_JSON},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* tcpdump's -C: millions of bytes, or KiB/MiB/GiB with a suffix. */
static int parse_size(const char *s, uint64_t *out, char *err, unsigned len)
{
	char *e;
	double v;
	uint64_t mul = 1000000;

	errno = 0;
	v = strtod(s, &e);
	if ((!isdigit((unsigned char)s[0]) && s[0] != '.') || e == s || errno ||
	    !isfinite(v) || v <= 0) {
		snprintf(err, len, "'%s' is not a positive size", s);
		return -1;
	}
	switch (*e) {
	case 'k': case 'K': mul = 1024; e++; break;
	case 'm': case 'M': mul = 1024 * 1024; e++; break;
	case 'g': case 'G': mul = 1024 * 1024 * 1024; e++; break;
	default: break;
	}
	if (*e || strpbrk(s, "xX") || v * (double)mul > 1e18 ||
	    v * (double)mul < 1) {
		snprintf(err, len, "'%s' is not a size", s);
		return -1;
	}
	*out = (uint64_t)(v * (double)mul);
	return 0;
}

/* The FILTER words joined by spaces, as tcpdump does. */
static char *join(int argc, char **argv)
{
	size_t n = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		n += strlen(argv[i]) + 1;
	s = malloc(n);
	if (!s)
		return NULL;
	s[0] = 0;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/* -Q: in, out or inout. */
static int parse_direction(const char *s, unsigned *dir)
{
	if (strcmp(s, "in") == 0)
		*dir = PKTMAP_RX_IN;
	else if (strcmp(s, "out") == 0)
		*dir = PKTMAP_RX_OUT;
	else if (strcmp(s, "inout") == 0)
		*dir = PKTMAP_RX_INOUT;
	else {
		cli_err("capture: -Q: direction '%s': give in, out or inout", s);
		return 1;
	}
	return 0;
}

/* The options that take a number checked beyond its range: -s, -B, -C
 * and -G. Returns 0, or 1 with the message printed. */
static int parse_number(int c, const char *arg, struct capture_opts *o)
{
	char err[256];
	uint64_t v;
	int bad = 0;

	switch (c) {
	case 's':
		bad = cli_parse_u64(arg, 262144, &v, err, sizeof(err));
		o->snaplen = v ? (uint32_t)v : 262144;
		if (bad)
			cli_err("capture: -s: snapshot length %s", err);
		break;
	case 'B':
		bad = cli_parse_u64(arg, 1u << 20, &v, err, sizeof(err));
		if (!bad && (v < 64 || (v & (v - 1)))) {
			snprintf(err, sizeof(err),
				 "must be a power of two, at least 64");
			bad = 1;
		}
		o->slots = (uint32_t)v;
		if (bad)
			cli_err("capture: -B: ring slots %s", err);
		break;
	case 'C':
		bad = parse_size(arg, &o->rotate_bytes, err, sizeof(err));
		if (bad)
			cli_err("capture: -C: %s", err);
		break;
	case 'G':
		bad = cli_parse_u64(arg, 100u * 365 * 86400, &o->rotate_secs,
				    err, sizeof(err));
		if (!bad && !o->rotate_secs) {
			snprintf(err, sizeof(err), "must be at least 1");
			bad = 1;
		}
		if (bad)
			cli_err("capture: -G: seconds %s", err);
		break;
	}
	return bad;
}

/* One option. Returns 0, -1 for --help (printed), or EXIT_USAGE with the
 * message printed. */
static int parse_opt(int c, const char *arg, char **argv,
		     struct capture_opts *o)
{
	uint64_t v;
	int bad = 0;

	switch (c) {
	case 'i': o->port = arg; break;
	case 'w':
		o->file = arg;
		if (!arg[0]) {
			cli_err("capture: -w: give a file name (\"-\": standard "
				"output)");
			bad = 1;
		}
		break;
	case 'c':
		bad = cli_opt_u64("capture: -c: count", arg, 0, UINT64_MAX,
				  &o->count);
		break;
	case 's': case 'B': case 'C': case 'G':
		bad = parse_number(c, arg, o);
		break;
	case 'Q':
		bad = parse_direction(arg, &o->rx_dir);
		break;
	case 'W':
		bad = cli_opt_u64("capture: -W: file count", arg, 1, 1000000, &v);
		o->max_files = (unsigned)v;
		break;
	case 'a':
		bad = cli_opt_u64("capture: -a: CPU", arg, 0,
				  CPU_SETSIZE - CAP_MAX_WORKERS, &v);
		o->cpu = (int)v;
		break;
	case 'T':
	case OPT_IDLE:
		bad = cli_opt_seconds(c == 'T' ? "capture: -T:" : "capture: --idle:",
				      arg, 86400,
				      c == 'T' ? &o->interval : &o->idle);
		break;
	case OPT_PCAPNG: o->pcapng = true; break;
	case OPT_MICRO: o->micro = true; break;
	case OPT_PER_QUEUE: o->per_queue = true; break;
	case OPT_JSON: o->json = true; break;
	case 'q': o->quiet = true; break;
	case 'v': o->verbose++; break;
	case 'h': usage_capture(); return -1;
	default:
		cli_opt_error("capture", c, argv);
		return EXIT_USAGE;
	}
	return bad ? EXIT_USAGE : 0;
}

/* The options together: what one needs of another. Returns 0 or
 * EXIT_USAGE with the message printed. */
static int check_opts(const struct capture_opts *o)
{
	bool to_stdout = o->file && strcmp(o->file, "-") == 0;

	if (!o->port) {
		cli_err("capture: no port given: use -i PORT (see 'pktmap help "
			"capture')");
		return EXIT_USAGE;
	}
	if (o->pcapng && o->micro) {
		cli_err("capture: --micro is for pcap: pcapng files carry "
			"nanoseconds");
		return EXIT_USAGE;
	}
	if ((o->rotate_bytes || o->rotate_secs || o->max_files ||
	     o->per_queue) && !o->file) {
		cli_err("capture: -C, -G, -W and --per-queue need a file (-w FILE)");
		return EXIT_USAGE;
	}
	if (o->max_files && !o->rotate_bytes && !o->rotate_secs) {
		cli_err("capture: -W needs -C or -G");
		return EXIT_USAGE;
	}
	if (to_stdout && (o->rotate_bytes || o->rotate_secs || o->per_queue)) {
		cli_err("capture: standard output cannot be rotated or split "
			"per queue");
		return EXIT_USAGE;
	}
	if (o->json && to_stdout) {
		cli_err("capture: --json and -w - both want standard output");
		return EXIT_USAGE;
	}
	return 0;
}

/* The command line into *o. Returns 0, -1 for --help, or an exit status
 * with the message printed. */
static int parse(int argc, char **argv, struct capture_opts *o)
{
	int c, st;

	memset(o, 0, sizeof(*o));
	o->cpu = -1;
	o->snaplen = 262144;
	o->slots = CAP_DEFAULT_SLOTS;
	opterr = 0;
	/* Options may follow the filter words, as with tcpdump ("--" ends
	 * them) */
	while ((c = getopt_long(argc, argv, ":i:w:c:s:B:Q:C:G:W:a:T:qvh", longopts,
				NULL)) != -1) {
		st = parse_opt(c, optarg, argv, o);
		if (st)
			return st;
	}
	st = check_opts(o);
	if (st)
		return st;
	if (o->cpu >= 0 && cli_cpus_ok("capture: -a:", o->cpu, 1, NULL))
		return EXIT_USAGE;
	if (optind < argc) {
		o->filter = join(argc - optind, argv + optind);
		if (!o->filter) {
			cli_err("capture: out of memory");
			return EXIT_RUNTIME;
		}
	}
	return 0;
}

static int open_port(const char *name, uint32_t slots,
		     struct pktmap_port **port)
{
	struct pktmap_open_opts oo;
	char errbuf[512] = "", be[16];
	int rc;

	memset(&oo, 0, sizeof(oo));
	oo.sz = sizeof(oo);
	oo.dir = PKTMAP_DIR_RX;
	/* Deep rings where the kernel fills them (a name's @conf wins);
	 * a pipe's size is its creator's. */
	cli_backend_of(name, be, sizeof(be));
	if (strcmp(be, "xdp") == 0 || strcmp(be, "pkt") == 0 ||
	    strcmp(be, "tap") == 0)
		oo.slots = slots;
	/* pkt: read in the kernel's TPACKET_V3 blocks where it wrote the
	 * frames (capture keeps no buffer and swaps none), a block handed
	 * over when full or CAP_BLOCK_MS after its first frame. */
	oo.flags = PKTMAP_OPEN_RX_BLOCKS;
	oo.rx_block_ms = CAP_BLOCK_MS;
	oo.errbuf = errbuf;
	oo.errbuf_len = sizeof(errbuf);
	rc = pktmap_open(port, name, &oo);
	if (rc < 0) {
		*port = NULL;
		if (errbuf[0])
			cli_err("capture: %s", errbuf);
		else
			cli_err("capture: %s: %s", name, pktmap_strerror(rc));
		return rc == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
	}
	return 0;
}

/* The number of RX rings the port binds, and its link type. */
static int port_facts(struct pktmap_port *port, const char *name,
		      struct pktmap_info *info)
{
	info->sz = sizeof(*info);
	int rc = pktmap_info(port, info);

	if (rc < 0) {
		cli_err("capture: %s: %s", name, pktmap_strerror(rc));
		return EXIT_RUNTIME;
	}
	if (info->last_rx_ring < info->first_rx_ring || info->rx_slots == 0) {
		cli_err("capture: %s: the port has no RX ring", name);
		return EXIT_USAGE;
	}
	return 0;
}

static int compile_filter(struct capture *cap)
{
	pcap_t *dead;

	if (!cap->o.filter)
		return 0;
	dead = pcap_open_dead((int)cap->linktype, (int)cap->o.snaplen);
	if (!dead) {
		cli_err("capture: libpcap: cannot make a handle to compile with");
		return EXIT_RUNTIME;
	}
	if (pcap_compile(dead, &cap->prog, cap->o.filter, 1,
			 PCAP_NETMASK_UNKNOWN) < 0) {
		cli_err("capture: filter '%s': %s", cap->o.filter,
			pcap_geterr(dead));
		pcap_close(dead);
		return EXIT_USAGE;
	}
	pcap_close(dead);
	return 0;
}

/* The direction (-Q), where the port has one. */
static int port_rx_setup(struct capture *cap, struct cap_worker *w)
{
	unsigned dir = cap->o.rx_dir ? cap->o.rx_dir : PKTMAP_RX_INOUT;
	int rc = pktmap_set_rx_direction(w->port, dir);

	if (rc < 0 && (cap->o.rx_dir || rc != -EOPNOTSUPP)) {
		cli_err("capture: %s: -Q %s: %s", w->portname,
			dir == PKTMAP_RX_IN ? "in" : dir == PKTMAP_RX_OUT ? "out" :
									  "inout",
			rc == -EOPNOTSUPP ? "this port sees only the frames that "
					    "arrive on it (use -Q in)"
					  : pktmap_strerror(rc));
		return EXIT_USAGE;
	}
	return 0;
}

/* The filter into the kernel, where the port has a kernel filter; the
 * packets queued before it are filtered here. */
static void kernel_filter(struct capture *cap)
{
	for (unsigned i = 0; cap->prog.bf_len && i < cap->nworkers; i++) {
		struct cap_worker *w = &cap->w[i];
		int rc = pktmap_set_rx_filter(w->port, cap->prog.bf_insns,
					      cap->prog.bf_len);

		if (rc >= 0) {
			w->kfilter = true;
			w->ufilter_left = (uint64_t)rc;
			for (unsigned k = 0; k < w->nrings; k++)
				w->ufilter_left += nm_ring_space(w->rings[k]);
		}
	}
}

/* Open the worker ports: one for all rings, or with --per-queue one per
 * RX ring (PORT-I). */
static int setup_workers(struct capture *cap)
{
	const struct capture_opts *o = &cap->o;
	struct pktmap_port *first;
	struct pktmap_info info;
	char err[512];
	int st;

	st = open_port(o->port, o->slots, &first);
	if (st)
		return st;
	st = port_facts(first, o->port, &info);
	if (st) {
		pktmap_close(first);
		return st;
	}
	cap->linktype = info.linktype;
	unsigned nrings = info.last_rx_ring - info.first_rx_ring + 1;
	cap->nworkers = o->per_queue ? nrings : 1;
	if (cap->nworkers > CAP_MAX_WORKERS || nrings > CAP_MAX_WORKERS) {
		cli_err("capture: %s: %u rings: at most %u are supported",
			o->port, nrings, CAP_MAX_WORKERS);
		pktmap_close(first);
		return EXIT_USAGE;
	}
	/* --per-queue: worker I on CPU+I */
	if (o->cpu >= 0 && cli_cpus_ok("capture: -a:", o->cpu, cap->nworkers,
				       NULL)) {
		pktmap_close(first);
		return EXIT_USAGE;
	}
	cap->w = aligned_alloc(128, sizeof(*cap->w) * cap->nworkers);
	if (!cap->w) {
		pktmap_close(first);
		cli_err("capture: out of memory");
		return EXIT_RUNTIME;
	}
	memset(cap->w, 0, sizeof(*cap->w) * cap->nworkers);
	bool stamps = strcmp(info.backend, "pkt") == 0 ||
		      strcmp(info.backend, "tap") == 0 ||
		      strcmp(info.backend, "pcap") == 0;
	if (cap->nworkers > 1)
		pktmap_close(first); /* reopened ring by ring */
	for (unsigned i = 0; i < cap->nworkers; i++) {
		struct cap_worker *w = &cap->w[i];
		char pattern[PATH_MAX];

		w->cap = cap;
		w->idx = i;
		w->ts_from_ptr = stamps;
		/* wake-ups for a few frames at a time: xdp: on veth, and
		 * pkt: in place (TPACKET_V2 wakes its reader every frame) */
		w->coalesce = (strcmp(info.backend, "xdp") == 0 ||
			       strcmp(info.backend, "pkt") == 0) &&
			      !(info.flags & PKTMAP_INFO_RX_BLOCKS);
		if (cli_thread_port(o->port, cap->nworkers, i, w->portname,
				    sizeof(w->portname))) {
			cli_err("capture: port name too long: %s", o->port);
			return EXIT_USAGE;
		}
		if (cap->nworkers == 1) {
			w->port = first;
		} else {
			st = open_port(w->portname, o->slots, &w->port);
			if (st)
				return st;
			st = port_facts(w->port, w->portname, &info);
			if (st)
				return st;
		}
		w->nrings = info.last_rx_ring - info.first_rx_ring + 1;
		w->rings = calloc(w->nrings, sizeof(*w->rings));
		if (!w->rings) {
			cli_err("capture: out of memory");
			return EXIT_RUNTIME;
		}
		for (unsigned k = 0; k < w->nrings; k++)
			w->rings[k] = NETMAP_RXRING(pktmap_nifp(w->port),
						    info.first_rx_ring + k);
		/* In blocks the 16 bytes before each frame are the
		 * reader's (PKTMAP_INFO_RX_BLOCKS). */
		w->rx_blocks = info.flags & PKTMAP_INFO_RX_BLOCKS;
		w->headroom = w->rx_blocks ? 16 : info.buf_size - info.buf_usable;
		w->fast = o->file && !o->pcapng && !o->rotate_bytes &&
			  !o->rotate_secs && (!o->count || cap->nworkers == 1) &&
			  w->nrings == 1 && w->headroom >= 16;
		st = port_rx_setup(cap, w);
		if (st)
			return st;
		if (!o->file)
			continue;
		if (o->per_queue)
			cap_queue_pattern(o->file, i, pattern, sizeof(pattern));
		else
			snprintf(pattern, sizeof(pattern), "%s", o->file);
		if (cap_out_init(&w->out, o, pattern, cap->linktype, err,
				 sizeof(err))) {
			cli_err("capture: %s", err);
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* Open the output files (or with -G check where they go) before the
 * capture starts, so that a file that cannot be written fails the
 * command before "listening" rather than at the first packet. Returns 0
 * or EXIT_RUNTIME with the message printed. */
static int start_outputs(struct capture *cap)
{
	char err[PATH_MAX + 128];

	for (unsigned i = 0; cap->o.file && i < cap->nworkers; i++) {
		if (cap_out_start(&cap->w[i].out, err, sizeof(err))) {
			cli_err("capture: -w: %s", err);
			return EXIT_RUNTIME;
		}
	}
	return 0;
}

/* Start the workers (signals blocked in them, so the main thread takes
 * Ctrl-C), report until all have ended. Returns the exit status. */
static int go(struct capture *cap)
{
	const struct capture_opts *o = &cap->o;
	struct cap_totals last = {0};
	int status = 0;
	const char *end = "signal";

	for (unsigned i = 0; i < cap->nworkers; i++) {
		struct cap_worker *w = &cap->w[i];
		int rc = run_thread(&w->tid, o->cpu >= 0 ? o->cpu + (int)i : -1,
				    cap_work, w);

		if (rc) {
			cli_err("capture: cannot start worker %u: %s", i,
				strerror(rc));
			atomic_store_explicit(&run_stop_flag, 1, memory_order_relaxed);
			status = EXIT_RUNTIME;
			break;
		}
		w->started = true;
	}

	if (o->interval > 0) {
		uint64_t step = (uint64_t)(o->interval * 1e9);
		uint64_t t0 = stats_now_ns(), next = t0 + step, prev = t0;

		for (;;) {
			struct timespec ts = {(time_t)(next / 1000000000u),
					      (long)(next % 1000000000u)};
			bool all_done = true;

			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					       NULL) == EINTR &&
			       !run_stopping())
				;
			for (unsigned i = 0; i < cap->nworkers; i++)
				if (cap->w[i].started &&
				    pthread_tryjoin_np(cap->w[i].tid, NULL) != 0)
					all_done = false;
				else
					cap->w[i].started = false;
			if (all_done)
				break;
			uint64_t now = stats_now_ns();
			cap_interval_line(cap, &last, (double)(now - prev) / 1e9);
			prev = now;
			next += step;
			while (next <= now)
				next += step;
		}
	}
	for (unsigned i = 0; i < cap->nworkers; i++) {
		struct cap_worker *w = &cap->w[i];

		if (w->started)
			pthread_join(w->tid, NULL);
		w->started = false;
		if (w->err[0]) {
			cli_err("capture: %s", w->err);
			status = EXIT_RUNTIME;
			end = "error";
		} else if (w->end && strcmp(end, "error") != 0) {
			end = w->end;
		}
	}
	cap_summary(cap, end);
	return status;
}

int cmd_capture(int argc, char **argv)
{
	struct capture *cap = calloc(1, sizeof(*cap));
	struct run_log log;
	int status;

	if (!cap) {
		cli_err("capture: out of memory");
		return EXIT_RUNTIME;
	}
	status = parse(argc, argv, &cap->o);
	if (status) {
		free(cap->o.filter);
		free(cap);
		return status < 0 ? 0 : status;
	}
	run_setup(&log, cap->o.verbose);

	status = setup_workers(cap);
	if (!status)
		status = compile_filter(cap);
	if (!status)
		status = start_outputs(cap);
	if (!status) {
		kernel_filter(cap);
		/* As tcpdump's line: the port, direction and filter are set. */
		bool kf = cap->prog.bf_len && cap->w[0].kfilter;
		const char *how = cap->w[0].rx_blocks ?
			(kf ? " (TPACKET_V3 blocks, filter in the kernel)" :
			      " (TPACKET_V3 blocks)") :
			(kf ? " (filter in the kernel)" : "");
		if (!cap->o.quiet)
			fprintf(stderr, "pktmap capture: listening on %s%s\n",
				cap->o.port, how);
		status = go(cap);
	}
	for (unsigned i = 0; cap->w && i < cap->nworkers; i++) {
		char err[PATH_MAX + 128];

		/* the workers close theirs; this is for a failed start */
		cap_out_close(&cap->w[i].out, err, sizeof(err));
		if (cap->w[i].port)
			pktmap_close(cap->w[i].port);
		free(cap->w[i].rings);
	}
	pcap_freecode(&cap->prog);
	free(cap->w);
	free(cap->o.filter);
	free(cap);
	pktmap_set_log(NULL, NULL, PKTMAP_LOG_ERR);
	return status;
}
