/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap switch's output: one line per interval with each port's rates,
 * and at the end a summary per port (those that left during the run
 * too), human or JSON.
 */
#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "switch/switch_app.h"

#define U(x) ((unsigned long long)(x))

static uint64_t drops_of(const struct sw_counters *c)
{
	return c->drop_nospace + c->drop_invalid + c->drop_unknown;
}

/* Port i's frames since the last line (from 0 when a new port took id i
 * since). */
static void port_delta(struct swa *a, uint16_t i, const struct sw_counters *c,
		       uint64_t *rx, uint64_t *tx)
{
	if (a->last_epoch[i] != a->srv.epoch[i]) {
		a->last_epoch[i] = a->srv.epoch[i];
		a->last_rx[i] = a->last_tx[i] = 0;
	}
	*rx = c->rx_frames - a->last_rx[i];
	*tx = c->tx_frames - a->last_tx[i];
	a->last_rx[i] = c->rx_frames;
	a->last_tx[i] = c->tx_frames;
}

void swa_line(void *ctx, struct sws *s)
{
	struct swa *a = ctx;
	uint64_t now = stats_now_ns();
	double dt = (double)(now - a->last_ns) / 1e9;
	if (dt <= 0)
		return;
	FILE *o = a->json ? stderr : stdout;
	char line[2048];
	size_t len = 0;
	uint64_t drops = 0;
	unsigned nports = 0;
	len += (size_t)snprintf(line + len, sizeof(line) - len, "%s:", a->name);
	for (uint32_t i = 0; i < s->sw.nports; i++) {
		struct sw_port *sp = s->sw.port[i];
		if (!sp)
			continue;
		nports++;
		char rx[32], tx[32];
		struct sw_counters c;
		uint64_t drx, dtx;
		sws_counters(s, (uint16_t)i, &c);
		port_delta(a, (uint16_t)i, &c, &drx, &dtx);
		stats_fmt_rate(rx, sizeof(rx), (double)drx / dt, "pps");
		stats_fmt_rate(tx, sizeof(tx), (double)dtx / dt, "pps");
		drops += drops_of(&c);
		if (len < sizeof(line) - 1)
			len += (size_t)snprintf(line + len, sizeof(line) - len,
						"  %s in %s out %s", sp->name, rx, tx);
	}
	for (unsigned g = 0; g < s->ngone; g++)
		drops += drops_of(&s->gone[g].c);
	struct sw_mac_stats ms = { 0 };
	if (sws_mac(s))
		sw_mac_stats(sws_mac(s), &ms);
	if (!a->quiet)
		fprintf(o, "%s%s  | %u port%s, %llu MACs, drops +%llu\n", line,
			nports ? "" : " no ports", nports,
			nports == 1 ? "" : "s", U(ms.entries),
			U(drops - a->last_drop));
	fflush(o);
	a->last_drop = drops;
	a->last_ns = now;
}

static void human_port(FILE *o, const char *name, const char *kind,
		       const struct sw_counters *c, bool gone)
{
	fprintf(o, "  %-12s %-6s in %llu frames %llu bytes, out %llu frames "
		"%llu bytes; drops: no space %llu, invalid %llu, unknown port "
		"%llu; filtered %llu%s\n", name, kind, U(c->rx_frames),
		U(c->rx_bytes), U(c->tx_frames), U(c->tx_bytes),
		U(c->drop_nospace), U(c->drop_invalid), U(c->drop_unknown),
		U(c->filtered), gone ? " (left)" : "");
}

static void json_port(FILE *o, bool first, const char *name, const char *kind,
		      const struct sw_counters *c, bool gone)
{
	fprintf(o, "%s{\"port\":", first ? "" : ",");
	stats_json_str(o, name);
	fprintf(o, ",\"kind\":");
	stats_json_str(o, kind);
	fprintf(o, ",\"left\":%s,\"rx_frames\":%llu,\"rx_bytes\":%llu,"
		"\"tx_frames\":%llu,\"tx_bytes\":%llu,\"drop_nospace\":%llu,"
		"\"drop_invalid\":%llu,\"drop_unknown\":%llu,\"filtered\":%llu,"
		"\"sync_errors\":%llu,\"tx_moved\":%llu}",
		gone ? "true" : "false", U(c->rx_frames), U(c->rx_bytes),
		U(c->tx_frames), U(c->tx_bytes), U(c->drop_nospace),
		U(c->drop_invalid), U(c->drop_unknown), U(c->filtered),
		U(c->sync_errors), U(c->tx_moved));
}

/* The switch's totals: frames and busy cycles over the threads. */
struct totals {
	double secs, cpf;
	uint64_t frames, cycles, rounds;
	struct sw_mac_stats ms;
};

static void totals_of(struct swa *a, struct totals *tt)
{
	struct sws *s = &a->srv;
	memset(tt, 0, sizeof(*tt));
	if (sws_mac(s))
		sw_mac_stats(sws_mac(s), &tt->ms);
	tt->secs = (double)(a->t_end - a->t_start) / 1e9;
	for (unsigned t = 0; t < s->nthreads; t++) {
		tt->frames += sws_ctx(s, t)->busy_frames;
		tt->cycles += sws_ctx(s, t)->busy_cycles;
		tt->rounds += sws_ctx(s, t)->rounds;
	}
	/* With threads: the mean of their costs, weighted by frames. */
	tt->cpf = tt->frames ? (double)tt->cycles / (double)tt->frames : 0;
}

static void summary_human(struct swa *a, const struct totals *tt)
{
	struct sws *s = &a->srv;
	const struct sw_mac_stats *ms = &tt->ms;
	FILE *o = a->json ? stderr : stdout;
	fprintf(o, "switch %s: %.1f s; %llu frames switched, %.1f TSC "
		"cycles per frame of switch work; MAC table %llu of %llu "
		"(learned %llu, moved %llu, aged %llu, evicted %llu)\n",
		a->name, tt->secs, U(tt->frames), tt->cpf, U(ms->entries),
		U(ms->capacity), U(ms->learned), U(ms->moved), U(ms->aged),
		U(ms->evicted));
	if (s->busy)
		fprintf(o, "  %llu requests refused: their port's lock was held "
			"by another process (not waited for)\n", U(s->busy));
	for (unsigned g = 0; g < s->ngone; g++)
		human_port(o, s->gone[g].name, s->gone[g].kind, &s->gone[g].c,
			   true);
	for (uint32_t i = 0; i < s->sw.nports; i++) {
		if (!s->sw.port[i])
			continue;
		struct sw_counters c;
		sws_counters(s, (uint16_t)i, &c);
		human_port(o, s->sw.port[i]->name, s->sw.port[i]->kind, &c, false);
	}
}

static void summary_json(struct swa *a, const struct totals *tt)
{
	struct sws *s = &a->srv;
	const struct sw_mac_stats *ms = &tt->ms;
	FILE *o = stdout;
	fprintf(o, "{\"cmd\":\"switch\",\"switch\":");
	stats_json_str(o, a->name);
	fprintf(o, ",\"nthreads\":%u,\"seconds\":%.6f,\"frames\":%llu,"
		"\"busy_cycles\":%llu,\"cycles_per_frame\":%.2f,\"rounds\":%llu,\"mac_entries\":%llu,"
		"\"mac_capacity\":%llu,\"mac_learned\":%llu,\"mac_moved\":%llu,"
		"\"mac_aged\":%llu,\"mac_evicted\":%llu,\"busy_refused\":%llu,",
		s->nthreads, tt->secs, U(tt->frames), U(tt->cycles), tt->cpf,
		U(tt->rounds), U(ms->entries), U(ms->capacity), U(ms->learned),
		U(ms->moved), U(ms->aged), U(ms->evicted), U(s->busy));
	for (unsigned t = 0; t < s->nthreads; t++)
		fprintf(o, "%s%llu", t ? "," : "\"frames_per_thread\":[",
			U(sws_ctx(s, t)->busy_frames));
	fprintf(o, "],\"ports\":[");
	bool first = true;
	for (unsigned g = 0; g < s->ngone; g++, first = false)
		json_port(o, first, s->gone[g].name, s->gone[g].kind,
			  &s->gone[g].c, true);
	for (uint32_t i = 0; i < s->sw.nports; i++) {
		if (!s->sw.port[i])
			continue;
		struct sw_counters c;
		sws_counters(s, (uint16_t)i, &c);
		json_port(o, first, s->sw.port[i]->name, s->sw.port[i]->kind, &c,
			  false);
		first = false;
	}
	fprintf(o, "]}\n");
	fflush(o);
}

void swa_summary(struct swa *a)
{
	struct totals tt;
	totals_of(a, &tt);
	if (!a->quiet)
		summary_human(a, &tt);
	if (a->json)
		summary_json(a, &tt);
}
