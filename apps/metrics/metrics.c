/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap metrics: the command line, and the exposition in Prometheus'
 * text format (version 0.0.4, which Prometheus and OpenMetrics scrapers
 * read). One sample per bound ring and direction; drops by reason.
 */
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "hostports.h"
#include "metrics.h"
#include "scrubpub.h"

#define U(x) ((unsigned long long)(x))

void usage_metrics(void)
{
	printf("usage: pktmap metrics [--listen [ADDR:]PORT]\n"
	       "\n"
	       "The counters of every pktmap port open on this host in the\n"
	       "Prometheus text format (root: every user's ports; others:\n"
	       "their own). Metric names and labels are stable; see\n"
	       "docs/metrics.md for them and for example queries.\n"
	       "\n"
	       "  --listen [ADDR:]PORT  serve them over HTTP at /metrics\n"
	       "                        instead of printing them once. ADDR\n"
	       "                        defaults to 127.0.0.1 (loopback);\n"
	       "                        0.0.0.0 or [::] to serve the network.\n"
	       "                        PORT 0 picks a free port. The address\n"
	       "                        is printed once listening.\n");
}

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *name, const char *v)
{
	fprintf(f, "%s=\"", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* The labels every sample of a port carries: port, process, pid. */
static void port_labels(FILE *f, const struct hp_port *p)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", p->pid);
	label(f, "port", p->name);
	fputc(',', f);
	label(f, "process", p->program);
	fputc(',', f);
	label(f, "pid", pid);
}

static void ring_labels(FILE *f, const struct hp_port *p, const struct hp_ring *r)
{
	char ring[24];
	snprintf(ring, sizeof(ring), "%s%u", r->host ? "host" : "", r->id);
	port_labels(f, p);
	fputc(',', f);
	label(f, "ring", ring);
	fputc(',', f);
	label(f, "direction", r->tx ? "tx" : "rx");
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One counter of every bound ring: the field at `ofs` of pm_ring_stats. */
static void ring_family(FILE *f, const struct hp_list *l, const char *name,
			const char *help, size_t ofs)
{
	family(f, name, "counter", help);
	for (unsigned i = 0; i < l->n; i++)
		for (uint32_t k = 0; k < l->v[i].nrings; k++) {
			const struct hp_ring *r = &l->v[i].rings[k];
			if (!r->bound)
				continue;
			fprintf(f, "%s{", name);
			ring_labels(f, &l->v[i], r);
			fprintf(f, "} %llu\n",
				U(*(const uint64_t *)((const char *)&r->c + ofs)));
		}
}

static void drop_sample(FILE *f, const struct hp_port *p, const struct hp_ring *r,
			const char *reason, uint64_t v)
{
	fputs("pktmap_port_drops_total{", f);
	if (r) {
		ring_labels(f, p, r);
	} else {
		port_labels(f, p);
		fputs(",ring=\"all\",direction=\"all\"", f);
	}
	fputc(',', f);
	label(f, "reason", reason);
	fprintf(f, "} %llu\n", U(v));
}

static void drops_family(FILE *f, const struct hp_list *l)
{
	family(f, "pktmap_port_drops_total", "counter",
	       "Frames a port dropped, by reason (docs/metrics.md).");
	for (unsigned i = 0; i < l->n; i++) {
		const struct hp_port *p = &l->v[i];
		for (uint32_t k = 0; k < p->nrings; k++) {
			const struct hp_ring *r = &p->rings[k];
			if (!r->bound)
				continue;
			drop_sample(f, p, r, "invalid", r->c.drop_invalid);
			drop_sample(f, p, r, "too_long", r->c.drop_too_long);
			drop_sample(f, p, r, "backend", r->c.drop_backend);
		}
		drop_sample(f, p, NULL, "kernel", p->port.drop_kernel);
		drop_sample(f, p, NULL, "no_space", p->port.drop_nospace);
		drop_sample(f, p, NULL, "filtered", p->port.drop_filtered);
	}
}

/* A per-port counter or gauge: the value fn gives. */
static void port_family(FILE *f, const struct hp_list *l, const char *name,
			const char *type, const char *help,
			long long (*fn)(const struct hp_port *))
{
	family(f, name, type, help);
	for (unsigned i = 0; i < l->n; i++) {
		fprintf(f, "%s{", name);
		port_labels(f, &l->v[i]);
		fprintf(f, "} %lld\n", fn(&l->v[i]));
	}
}

static long long v_invalid_ring(const struct hp_port *p) { return (long long)p->port.invalid_ring; }
static long long v_sleeps(const struct hp_port *p) { return (long long)p->port.poll_sleeps; }
static long long v_wakeups(const struct hp_port *p) { return (long long)p->port.wakeups_sent; }
static long long v_opened(const struct hp_port *p) { return (long long)p->open_sec; }
static long long v_mon_drops(const struct hp_port *p) { return (long long)p->port.mon_drops; }

static void info_family(FILE *f, const struct hp_list *l)
{
	family(f, "pktmap_port_info", "gauge",
	       "1 for each open port: its back end, mode and owner.");
	for (unsigned i = 0; i < l->n; i++) {
		const struct hp_port *p = &l->v[i];
		char uid[16];
		snprintf(uid, sizeof(uid), "%u", p->uid);
		fputs("pktmap_port_info{", f);
		port_labels(f, p);
		fputc(',', f);
		label(f, "backend", p->backend);
		fputc(',', f);
		label(f, "mode", p->mode);
		fputc(',', f);
		label(f, "region", p->region);
		fputc(',', f);
		label(f, "uid", uid);
		fputs("} 1\n", f);
	}
}

/* The labels of a scrub's samples: pid, input. */
static void scrub_labels(FILE *f, const struct sp_proc *p)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", p->h.pid);
	label(f, "pid", pid);
	fputc(',', f);
	label(f, "in", p->h.in);
}

/* pktmap scrub's counters by reason and by rule (apps/common/scrubpub.h). */
static int scrub_families(FILE *f)
{
	struct sp_list l;
	if (sp_scan(&l) != 0)
		return -1;
	family(f, "pktmap_scrub_frames_total", "counter",
	       "Frames pktmap scrub judged, by reason (docs/scrub.md).");
	for (unsigned i = 0; i < l.n; i++) {
		const struct sp_proc *p = &l.v[i];
		for (uint32_t k = 0; k < p->h.nreasons; k++) {
			fputs("pktmap_scrub_frames_total{", f);
			scrub_labels(f, p);
			fputc(',', f);
			label(f, "reason", sp_reason_name(k));
			fprintf(f, "} %llu\n", U(p->reason[k]));
		}
	}
	family(f, "pktmap_scrub_rule_hits_total", "counter",
	       "Frames each rule of pktmap scrub decided, since its rules "
	       "were loaded (docs/scrub.md).");
	for (unsigned i = 0; i < l.n; i++) {
		const struct sp_proc *p = &l.v[i];
		for (uint32_t r = 0; r < p->h.nrules; r++) {
			char id[16], line[16];
			snprintf(id, sizeof(id), "%u", r);
			snprintf(line, sizeof(line), "%u", p->rule[r].line);
			fputs("pktmap_scrub_rule_hits_total{", f);
			scrub_labels(f, p);
			fputc(',', f);
			label(f, "rule", id);
			fputc(',', f);
			label(f, "line", line);
			fputc(',', f);
			label(f, "text", p->rule[r].text);
			fprintf(f, "} %llu\n", U(p->rule[r].hits));
		}
	}
	sp_free(&l);
	return 0;
}

int metrics_write(FILE *f)
{
	struct hp_list l;
	if (hp_scan(&l) != 0)
		return -1;
	family(f, "pktmap_ports", "gauge", "Ports open on the host (that this "
	       "user may see).");
	fprintf(f, "pktmap_ports %u\n", l.n);
	family(f, "pktmap_ports_skipped", "gauge", "Counters files this scan "
	       "left unread: over its bounds (docs/metrics.md).");
	fprintf(f, "pktmap_ports_skipped %u\n", l.skipped);
	info_family(f, &l);
	port_family(f, &l, "pktmap_port_open_time_seconds", "gauge",
		    "When the port was opened (Unix time).", v_opened);
	ring_family(f, &l, "pktmap_port_packets_total",
		    "Packets a ring moved (tx: sent, rx: received).",
		    offsetof(struct pm_ring_stats, packets));
	ring_family(f, &l, "pktmap_port_bytes_total",
		    "Bytes of the frames a ring moved.",
		    offsetof(struct pm_ring_stats, bytes));
	ring_family(f, &l, "pktmap_port_syncs_total",
		    "Sync calls on a ring (packets / syncs: the batch).",
		    offsetof(struct pm_ring_stats, syncs));
	drops_family(f, &l);
	port_family(f, &l, "pktmap_port_invalid_rings_total", "counter",
		    "Syncs refused: head or cur out of range.", v_invalid_ring);
	port_family(f, &l, "pktmap_port_poll_sleeps_total", "counter",
		    "Times pktmap_poll() slept.", v_sleeps);
	port_family(f, &l, "pktmap_port_wakeups_total", "counter",
		    "Times the port woke a sleeping peer.", v_wakeups);
	port_family(f, &l, "pktmap_port_monitor_drops_total", "counter",
		    "Frames a monitor of the port (/r, /t, /rt) had no room "
		    "for: the port moved them, the monitor missed them.",
		    v_mon_drops);
	hp_free(&l);
	return scrub_families(f);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int cmd_metrics(int argc, char **argv)
{
	const char *listen = NULL;
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
			usage_metrics();
			return 0;
		}
		if (!strcmp(argv[a], "--listen") && a + 1 < argc) {
			listen = argv[++a];
			continue;
		}
		if (!strcmp(argv[a], "--listen")) {
			cli_err("metrics: --listen needs [ADDR:]PORT");
			return EXIT_USAGE;
		}
		cli_err("metrics: unexpected argument '%s' (see pktmap metrics "
			"--help)", argv[a]);
		return EXIT_USAGE;
	}
	if (!listen) {
		if (metrics_write(stdout) != 0) {
			cli_err("metrics: out of memory");
			return EXIT_RUNTIME;
		}
		return fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return metrics_serve(listen, &stop, metrics_write);
}
