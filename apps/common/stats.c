/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Interval lines, the human summary and the JSON summary of gen and recv.
 * Rates over the whole run use the time from the first thread's start to
 * the last packet any thread moved, so an idle tail (recv --idle, a gen
 * that waited for its peer to drain) does not dilute them.
 */
#include <string.h>
#include <time.h>

#include "stats.h"
#include "util.h"

uint64_t stats_now_ns(void)
{
	return pm_clock_ns(CLOCK_MONOTONIC);
}

void stats_run_init(struct stats_run *r, const char *cmd, const char *port,
		    struct stats_thread *th, unsigned nthreads, bool json,
		    bool quiet)
{
	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->port = port;
	r->th = th;
	r->nthreads = nthreads;
	r->json = json;
	r->quiet = quiet;
	r->out = json ? stderr : stdout;
	r->last_ns = stats_now_ns();
}

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void add_lib(struct pktmap_stats *a, const struct pktmap_stats *b)
{
	a->tx_packets += b->tx_packets;
	a->tx_bytes += b->tx_bytes;
	a->rx_packets += b->rx_packets;
	a->rx_bytes += b->rx_bytes;
	a->tx_syncs += b->tx_syncs;
	a->rx_syncs += b->rx_syncs;
	a->drop_invalid += b->drop_invalid;
	a->drop_too_long += b->drop_too_long;
	a->drop_backend += b->drop_backend;
	a->invalid_ring += b->invalid_ring;
	a->poll_sleeps += b->poll_sleeps;
	a->wakeups_sent += b->wakeups_sent;
}

/* Add one thread's counters. The fields the worker sets as it ends
 * (pending, lib) are read only when `final`, after it was joined. */
static void sum_one(struct stats_total *t, struct stats_thread *th,
		    bool final)
{
	uint64_t f = ld(&th->t_first), l = ld(&th->t_last);

	t->packets += ld(&th->packets);
	t->bytes += ld(&th->bytes);
	t->syncs += ld(&th->syncs);
	t->gaps += ld(&th->gaps);
	t->reordered += ld(&th->reordered);
	t->bad += ld(&th->bad);
	t->bad_csum += ld(&th->bad_csum);
	if (f && (!t->t_first || f < t->t_first))
		t->t_first = f;
	if (l > t->t_last)
		t->t_last = l;
	if (final) {
		t->pending += th->pending;
		add_lib(&t->lib, &th->lib);
	}
}

void stats_sum(const struct stats_run *r, struct stats_total *t, bool final)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < r->nthreads; i++)
		sum_one(t, &r->th[i], final);
}

void stats_fmt_rate(char *out, unsigned len, double v, const char *unit)
{
	const char *prefix = "";

	if (v >= 1e9) {
		v /= 1e9;
		prefix = "G";
	} else if (v >= 1e6) {
		v /= 1e6;
		prefix = "M";
	} else if (v >= 1e3) {
		v /= 1e3;
		prefix = "k";
	}
	snprintf(out, len, "%.3f %s%s", v, prefix, unit);
}

void stats_interval(struct stats_run *r)
{
	struct stats_total t;
	uint64_t now = stats_now_ns();
	double dt = (double)(now - r->last_ns) / 1e9;
	uint64_t dp, db, ds;
	char pps[32], bps[32];

	stats_sum(r, &t, false);
	dp = t.packets - r->last.packets;
	db = t.bytes - r->last.bytes;
	ds = t.syncs - r->last.syncs;
	r->last = t;
	r->last_ns = now;
	if (r->quiet || dt <= 0)
		return;
	stats_fmt_rate(pps, sizeof(pps), (double)dp / dt, "pps");
	stats_fmt_rate(bps, sizeof(bps), (double)db * 8 / dt, "bps");
	fprintf(r->out, "%s %s  %s  %s  batch %.1f", r->cmd, r->port, pps, bps,
		ds ? (double)dp / (double)ds : 0.0);
	if (r->recv && r->verify && (t.gaps || t.reordered || t.bad))
		fprintf(r->out, "  gaps %llu reordered %llu bad %llu",
			(unsigned long long)t.gaps,
			(unsigned long long)t.reordered,
			(unsigned long long)t.bad);
	fputc('\n', r->out);
	fflush(r->out);
}

/* Rates over [t_first, t_last] of a total. */
struct rates {
	double seconds, pps, bps, bps_line, batch;
};

static void rates_of(const struct stats_total *t, struct rates *x)
{
	x->seconds = t->t_last > t->t_first
			     ? (double)(t->t_last - t->t_first) / 1e9
			     : 0.0;
	x->pps = x->seconds > 0 ? (double)t->packets / x->seconds : 0.0;
	x->bps = x->seconds > 0 ? (double)t->bytes * 8 / x->seconds : 0.0;
	x->bps_line = x->seconds > 0
			      ? (double)(t->bytes + STATS_WIRE_OVERHEAD * t->packets) *
					8 / x->seconds
			      : 0.0;
	x->batch = t->syncs ? (double)t->packets / (double)t->syncs : 0.0;
}

static void thread_total(struct stats_thread *th, struct stats_total *t)
{
	memset(t, 0, sizeof(*t));
	sum_one(t, th, true);
}

static void human(struct stats_run *r, const struct stats_total *t)
{
	struct rates x;
	char pps[32], bps[32], line[32];
	FILE *o = r->out;

	rates_of(t, &x);
	stats_fmt_rate(pps, sizeof(pps), x.pps, "pps");
	stats_fmt_rate(bps, sizeof(bps), x.bps, "bps");
	stats_fmt_rate(line, sizeof(line), x.bps_line, "bps");
	fprintf(o, "%s %s  %llu packets, %llu bytes in %.3f s (%s)\n", r->cmd,
		r->port, (unsigned long long)t->packets,
		(unsigned long long)t->bytes, x.seconds,
		r->end_reason ? r->end_reason : "done");
	fprintf(o, "%s %s  %s, %s of frames, %s on the wire, batch %.1f "
		"(%llu syncs)\n", r->cmd, r->port, pps, bps, line, x.batch,
		(unsigned long long)t->syncs);
	if (r->recv && r->verify)
		fprintf(o, "%s %s  gaps %llu, reordered %llu, bad %llu%s", r->cmd,
			r->port, (unsigned long long)t->gaps,
			(unsigned long long)t->reordered,
			(unsigned long long)t->bad, r->csum ? "" : "\n");
	if (r->recv && r->verify && r->csum)
		fprintf(o, ", bad checksums %llu\n",
			(unsigned long long)t->bad_csum);
	if (!r->recv && t->pending)
		fprintf(o, "%s %s  %llu packets still queued at exit\n", r->cmd,
			r->port, (unsigned long long)t->pending);
	if (t->lib.drop_invalid || t->lib.drop_too_long || t->lib.drop_backend ||
	    t->lib.invalid_ring)
		fprintf(o, "%s %s  port dropped %llu invalid, %llu too long, "
			"%llu in the back end; %llu syncs refused\n", r->cmd,
			r->port, (unsigned long long)t->lib.drop_invalid,
			(unsigned long long)t->lib.drop_too_long,
			(unsigned long long)t->lib.drop_backend,
			(unsigned long long)t->lib.invalid_ring);
	if (r->nthreads < 2)
		return;
	for (unsigned i = 0; i < r->nthreads; i++) {
		struct stats_total tt;

		thread_total(&r->th[i], &tt);
		rates_of(&tt, &x);
		stats_fmt_rate(pps, sizeof(pps), x.pps, "pps");
		fprintf(o, "  thread %u %s  %llu packets, %s, batch %.1f\n", i,
			r->th[i].port, (unsigned long long)tt.packets, pps,
			x.batch);
	}
}

void stats_json_str(FILE *o, const char *s)
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

/* The counters shared by the run and each thread. */
static void json_counts(struct stats_run *r, FILE *o,
			const struct stats_total *t)
{
	struct rates x;

	rates_of(t, &x);
	fprintf(o, "\"packets\":%llu,\"bytes\":%llu,\"seconds\":%.6f,"
		"\"pps\":%.1f,\"bps\":%.1f,\"bps_line\":%.1f,"
		"\"avg_batch\":%.2f,\"syncs\":%llu", U(t->packets), U(t->bytes),
		x.seconds, x.pps, x.bps, x.bps_line, x.batch, U(t->syncs));
	if (r->recv)
		fprintf(o, ",\"gaps\":%llu,\"reordered\":%llu,\"bad\":%llu,"
			"\"bad_csum\":%llu", U(t->gaps), U(t->reordered),
			U(t->bad), U(t->bad_csum));
	else
		fprintf(o, ",\"pending\":%llu", U(t->pending));
	fprintf(o, ",\"drops\":%llu,\"drop_invalid\":%llu,"
		"\"drop_too_long\":%llu,\"drop_backend\":%llu,"
		"\"invalid_ring\":%llu",
		U(t->lib.drop_invalid + t->lib.drop_too_long + t->lib.drop_backend),
		U(t->lib.drop_invalid), U(t->lib.drop_too_long),
		U(t->lib.drop_backend), U(t->lib.invalid_ring));
}

static void json(struct stats_run *r, const struct stats_total *t)
{
	FILE *o = stdout;

	fprintf(o, "{\"cmd\":");
	stats_json_str(o, r->cmd);
	fprintf(o, ",\"port\":");
	stats_json_str(o, r->port);
	fprintf(o, ",\"version\":\"%s\",\"end\":", PKTMAP_VERSION);
	stats_json_str(o, r->end_reason ? r->end_reason : "done");
	fprintf(o, ",\"verify\":%s,", r->recv && r->verify ? "true" : "false");
	json_counts(r, o, t);
	fprintf(o, ",\"threads\":[");
	for (unsigned i = 0; i < r->nthreads; i++) {
		struct stats_total tt;

		thread_total(&r->th[i], &tt);
		fprintf(o, "%s{\"id\":%u,\"port\":", i ? "," : "", i);
		stats_json_str(o, r->th[i].port);
		fputc(',', o);
		json_counts(r, o, &tt);
		fputc('}', o);
	}
	fprintf(o, "]}\n");
	fflush(o);
}

void stats_summary(struct stats_run *r)
{
	struct stats_total t;

	stats_sum(r, &t, true);
	if (!r->quiet)
		human(r, &t);
	if (r->json)
		json(r, &t);
	fflush(r->out);
}
