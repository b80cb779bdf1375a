/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What pktmap top shows: rates from two scans, the filter, the order, and
 * the two ways of printing it (a table that fits 80 columns, JSON).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "scrub.h"
#include "scrubpub.h"
#include "stats.h"
#include "top.h"

#define U(x) ((unsigned long long)(x))

static double per_s(uint64_t now, uint64_t before, double dt)
{
	/* A counter never goes back; if it looks so, it is another port. */
	return now >= before && dt > 0 ? (double)(now - before) / dt : 0;
}

static bool row_passes(const struct top_opts *o, const struct hp_port *p)
{
	if (!o->filter || !o->filter[0])
		return true;
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", p->pid);
	return strstr(p->name, o->filter) || strstr(p->program, o->filter) ||
	       strstr(p->cmdline, o->filter) || strcmp(pid, o->filter) == 0;
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct top_row *x = a, *y = b;
	double kx = 0, ky = 0;
	switch (*(const enum top_sort *)ctx) {
	case TOP_SORT_RATE:
		kx = x->r.rx_pps + x->r.tx_pps, ky = y->r.rx_pps + y->r.tx_pps;
		break;
	case TOP_SORT_DROPS:
		kx = x->r.drops * 1e12 + (double)hp_drops(x->p);
		ky = y->r.drops * 1e12 + (double)hp_drops(y->p);
		break;
	case TOP_SORT_NAME: {
		int c = strcmp(x->p->name, y->p->name);
		if (c)
			return c;
		break;
	}
	case TOP_SORT_PID:
		break;
	}
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->p->pid != y->p->pid)
		return x->p->pid < y->p->pid ? -1 : 1;
	return strcmp(x->p->key, y->p->key);
}

int top_rows(const struct top_opts *o, const struct hp_list *cur,
	     const struct hp_list *prev, double dt, struct top_row **rows)
{
	*rows = NULL;
	if (!cur->n)
		return 0;
	struct top_row *v = calloc(cur->n, sizeof(*v));
	if (!v)
		return -1;
	int n = 0;
	for (unsigned i = 0; i < cur->n; i++) {
		const struct hp_port *p = &cur->v[i];
		if (!row_passes(o, p))
			continue;
		struct top_row *r = &v[n++];
		r->p = p;
		r->prev = prev ? hp_find(prev, p) : NULL;
		if (!r->prev || dt <= 0)
			continue;
		const struct hp_port *q = r->prev;
		r->have_rate = true;
		r->r.rx_pps = per_s(p->rx_packets, q->rx_packets, dt);
		r->r.tx_pps = per_s(p->tx_packets, q->tx_packets, dt);
		r->r.bps = per_s(p->rx_bytes + p->tx_bytes, q->rx_bytes + q->tx_bytes,
				 dt) * 8;
		r->r.drops = per_s(hp_drops(p), hp_drops(q), dt);
	}
	enum top_sort by = o->sort;
	qsort_r(v, (size_t)n, sizeof(*v), row_cmp, &by);
	*rows = v;
	return n;
}

/* "1.23M", "12.3k", "999": a rate in 6 columns or fewer. */
static void fmt_si(char *out, size_t len, double v)
{
	const char *sfx[] = { "", "k", "M", "G", "T" };
	int i = 0;
	while (v >= 999.5 && i < 4)
		v /= 1000, i++;
	if (i == 0)
		snprintf(out, len, "%.0f", v);
	else
		snprintf(out, len, v < 9.995 ? "%.2f%s" : v < 99.95 ? "%.1f%s" :
					      "%.0f%s", v, sfx[i]);
}

/* Columns: 6+1+14+1+17+1+8+1+7+1+7+1+7+1+6 = 79. */
#define ROW_FMT "%6s %-14.14s %-17.17s %-8.8s %7s %7s %7s "
#define PORT_W 17

/* A port name cut to the column by its middle: both the back end and
 * the end ("{0", "}1", "-3") stay readable. */
static const char *cut_name(char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);
	if (n <= PORT_W)
		return name;
	snprintf(buf, len, "%.*s~%s", PORT_W / 2, name, name + n - (PORT_W - 1 - PORT_W / 2));
	return buf;
}

static void print_drops(FILE *f, const struct top_opts *o, double rate,
			uint64_t total, const char *text)
{
	const char *on = "", *off = "";
	if (o->color && rate > 0)
		on = "\x1b[1;31m", off = "\x1b[0m";
	else if (o->color && total)
		on = "\x1b[33m", off = "\x1b[0m";
	fprintf(f, "%s%6s%s", on, text, off);
}

/* One ring's line under its port. */
static void ring_line(FILE *f, const struct top_opts *o, const struct hp_port *p,
		      const struct hp_port *q, uint32_t i, double dt)
{
	const struct hp_ring *r = &p->rings[i];
	const struct hp_ring *qr = q && q->nrings == p->nrings ? &q->rings[i] : NULL;
	uint64_t drops = r->c.drop_invalid + r->c.drop_too_long + r->c.drop_backend;
	char what[32], rx[16] = "", tx[16] = "", bps[16] = "", dr[16];
	snprintf(what, sizeof(what), "  %s %sring %u", r->tx ? "tx" : "rx",
		 r->host ? "host " : "", r->id);
	double rate = 0;
	if (qr) {
		double pps = per_s(r->c.packets, qr->c.packets, dt);
		fmt_si(r->tx ? tx : rx, 16, pps);
		fmt_si(bps, sizeof(bps), per_s(r->c.bytes, qr->c.bytes, dt) * 8);
		rate = per_s(drops, qr->c.drop_invalid + qr->c.drop_too_long +
					    qr->c.drop_backend, dt);
		fmt_si(dr, sizeof(dr), rate);
	} else {
		fmt_si(r->tx ? tx : rx, 16, (double)r->c.packets);
		fmt_si(dr, sizeof(dr), (double)drops);
	}
	fprintf(f, ROW_FMT, "", "", what, "", rx, tx, bps);
	print_drops(f, o, rate, drops, dr);
}

static void port_line(FILE *f, const struct top_opts *o, const struct top_row *row)
{
	const struct hp_port *p = row->p;
	char pid[16], rx[16], tx[16], bps[16] = "", dr[16];
	snprintf(pid, sizeof(pid), "%d", p->pid);
	if (row->have_rate) {
		fmt_si(rx, sizeof(rx), row->r.rx_pps);
		fmt_si(tx, sizeof(tx), row->r.tx_pps);
		fmt_si(bps, sizeof(bps), row->r.bps);
		fmt_si(dr, sizeof(dr), row->r.drops);
	} else { /* one scan: totals */
		fmt_si(rx, sizeof(rx), (double)p->rx_packets);
		fmt_si(tx, sizeof(tx), (double)p->tx_packets);
		fmt_si(dr, sizeof(dr), (double)hp_drops(p));
	}
	char name[PORT_W + 1];
	fprintf(f, ROW_FMT, pid, p->program, cut_name(name, sizeof(name), p->name),
		p->mode, rx, tx, bps);
	print_drops(f, o, row->r.drops, hp_drops(p), dr);
}

void top_text(FILE *f, const struct top_opts *o, const struct top_row *rows,
	      int n, double dt, unsigned max_lines, bool live)
{
	const char *eol = live ? "\x1b[K\n" : "\n";
	static const char *sorts[] = { "rate", "drops", "name", "pid" };
	unsigned lines = 0;
	if (live) {
		fprintf(f, "pktmap top: %d port%s, sort %s, every %.1f s  "
			   "(q quit, r/d/n/p sort, e rings)%s", n, n == 1 ? "" : "s",
			sorts[o->sort], o->interval, eol);
		lines++;
	}
	bool rates = dt > 0;
	fprintf(f, "%6s %-14s %-17s %-8s %7s %7s %7s %6s%s", "PID", "PROGRAM",
		"PORT", "MODE", rates ? "RX/s" : "RX", rates ? "TX/s" : "TX",
		rates ? "bit/s" : "", rates ? "DROP/s" : "DROPS", eol);
	lines++;
	for (int i = 0; i < n && (!max_lines || lines < max_lines); i++) {
		port_line(f, o, &rows[i]);
		fputs(eol, f);
		lines++;
		if (!o->rings)
			continue;
		const struct hp_port *p = rows[i].p;
		for (uint32_t k = 0; k < p->nrings && (!max_lines || lines < max_lines); k++) {
			if (!p->rings[k].bound)
				continue;
			ring_line(f, o, p, rows[i].prev, k, rows[i].have_rate ? dt : 0);
			fputs(eol, f);
			lines++;
		}
	}
}

static void json_ring(FILE *f, const struct hp_ring *r)
{
	fprintf(f, "{\"ring\":%u,\"direction\":\"%s\",\"host\":%s,"
		   "\"packets\":%llu,\"bytes\":%llu,\"syncs\":%llu,"
		   "\"drops\":{\"invalid\":%llu,\"too_long\":%llu,\"backend\":%llu}}",
		r->id, r->tx ? "tx" : "rx", r->host ? "true" : "false",
		U(r->c.packets), U(r->c.bytes), U(r->c.syncs),
		U(r->c.drop_invalid), U(r->c.drop_too_long), U(r->c.drop_backend));
}

static void json_port(FILE *f, const struct top_row *row, double dt)
{
	const struct hp_port *p = row->p;
	fprintf(f, "{\"pid\":%d,\"uid\":%u", p->pid, p->uid);
	const struct { const char *key, *val; } strs[] = {
		{ "program", p->program }, { "comm", p->comm },
		{ "cmdline", p->cmdline }, { "port", p->name },
		{ "backend", p->backend }, { "mode", p->mode },
		{ "region", p->region },
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		fprintf(f, ",\"%s\":", strs[i].key);
		stats_json_str(f, strs[i].val);
	}
	fprintf(f, ",\"started\":%lld", (long long)p->start_sec);
	fprintf(f, ",\"opened\":%lld,"
		   "\"tx\":{\"packets\":%llu,\"bytes\":%llu,\"syncs\":%llu},"
		   "\"rx\":{\"packets\":%llu,\"bytes\":%llu,\"syncs\":%llu},"
		   "\"drops\":{\"invalid\":%llu,\"too_long\":%llu,\"backend\":%llu,"
		   "\"kernel\":%llu,\"no_space\":%llu,\"filtered\":%llu,\"total\":%llu},"
		   "\"invalid_ring\":%llu,\"poll_sleeps\":%llu,\"wakeups_sent\":%llu,"
		   "\"monitor_drops\":%llu",
		(long long)p->open_sec, U(p->tx_packets), U(p->tx_bytes),
		U(p->tx_syncs), U(p->rx_packets), U(p->rx_bytes), U(p->rx_syncs),
		U(p->drop_invalid), U(p->drop_too_long), U(p->drop_backend),
		U(p->port.drop_kernel), U(p->port.drop_nospace),
		U(p->port.drop_filtered), U(hp_drops(p)), U(p->port.invalid_ring),
		U(p->port.poll_sleeps), U(p->port.wakeups_sent),
		U(p->port.mon_drops));
	if (row->have_rate && dt > 0)
		fprintf(f, ",\"rate\":{\"rx_pps\":%.1f,\"tx_pps\":%.1f,"
			   "\"bps\":%.1f,\"drops\":%.1f}", row->r.rx_pps,
			row->r.tx_pps, row->r.bps, row->r.drops);
	fputs(",\"rings\":[", f);
	int k = 0;
	for (uint32_t i = 0; i < p->nrings; i++)
		if (p->rings[i].bound) {
			fputs(k++ ? "," : "", f);
			json_ring(f, &p->rings[i]);
		}
	fputs("]}", f);
}

/* One scrub's counters as JSON. */
static void json_scrub(FILE *f, const struct sp_proc *p)
{
	fprintf(f, "{\"pid\":%d,\"uid\":%u,\"in\":", p->h.pid, p->h.uid);
	stats_json_str(f, p->h.in);
	fputs(",\"out\":", f);
	stats_json_str(f, p->h.out);
	fprintf(f, ",\"workers\":%u,\"dry_run\":%s,\"kernel\":%s,"
		"\"judged\":%llu,\"passed\":%llu,\"dropped\":%llu,\"reasons\":{",
		p->h.workers, p->h.flags & SP_F_DRY_RUN ? "true" : "false",
		p->h.flags & SP_F_KERNEL ? "true" : "false", U(p->h.judged),
		U(p->h.passed), U(p->h.dropped));
	for (uint32_t k = 0; k < p->h.nreasons; k++)
		fprintf(f, "%s\"%s\":%llu", k ? "," : "", sp_reason_name(k),
			U(p->reason[k]));
	fputs("},\"rules\":[", f);
	for (uint32_t i = 0; i < p->h.nrules; i++) {
		fprintf(f, "%s{\"id\":%u,\"line\":%u,\"hits\":%llu,\"text\":",
			i ? "," : "", i, p->rule[i].line, U(p->rule[i].hits));
		stats_json_str(f, p->rule[i].text);
		fputc('}', f);
	}
	fputs("]}", f);
}

void top_json(FILE *f, const struct top_row *rows, int n, double dt,
	      unsigned skipped, const struct sp_list *scrub)
{
	fprintf(f, "{\"time\":%lld,\"interval\":%.3f,\"skipped\":%u,\"ports\":[",
		(long long)time(NULL), dt, skipped);
	for (int i = 0; i < n; i++) {
		fputs(i ? ",\n" : "\n", f);
		json_port(f, &rows[i], dt);
	}
	fputs("\n],\"scrub\":[", f);
	for (unsigned i = 0; scrub && i < scrub->n; i++) {
		fputs(i ? ",\n" : "\n", f);
		json_scrub(f, &scrub->v[i]);
	}
	fputs("\n]}\n", f);
}

void top_scrub_text(FILE *f, const struct sp_list *l, unsigned max, bool live)
{
	for (unsigned i = 0; l && i < l->n && i < max; i++) {
		const struct sp_proc *p = &l->v[i];
		char line[256], more[80];
		int n = snprintf(line, sizeof(line), "scrub %d %s: judged %llu "
				 "passed %llu dropped %llu", p->h.pid, p->h.in,
				 U(p->h.judged), U(p->h.passed), U(p->h.dropped));

		for (uint32_t k = SCRUB_DROP_FIRST; k < p->h.nreasons &&
		     n > 0 && (size_t)n < sizeof(line); k++) {
			if (!p->reason[k])
				continue;
			snprintf(more, sizeof(more), ", %s %llu", sp_reason_name(k),
				 U(p->reason[k]));
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%s", more);
		}
		cli_one_line(line);
		line[79] = 0;
		fprintf(f, "%s%s\n", line, live ? "\x1b[K" : "");
	}
}
