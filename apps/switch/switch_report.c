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

void swa_line(struct swa *a)
{
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
	for (uint32_t i = 0; i < a->sw.nports; i++) {
		struct sw_port *sp = a->sw.port[i];
		if (!sp)
			continue;
		nports++;
		char rx[32], tx[32];
		struct sw_counters c;
		swa_counters(a, (uint16_t)i, &c);
		stats_fmt_rate(rx, sizeof(rx),
			       (double)(c.rx_frames - a->last_rx[i]) / dt, "pps");
		stats_fmt_rate(tx, sizeof(tx),
			       (double)(c.tx_frames - a->last_tx[i]) / dt, "pps");
		a->last_rx[i] = c.rx_frames;
		a->last_tx[i] = c.tx_frames;
		drops += drops_of(&c);
		if (len < sizeof(line) - 1)
			len += (size_t)snprintf(line + len, sizeof(line) - len,
						"  %s in %s out %s", sp->name, rx, tx);
	}
	for (unsigned g = 0; g < a->ngone; g++)
		drops += drops_of(&a->gone[g].c);
	struct sw_mac_stats ms = { 0 };
	if (swa_mac(a))
		sw_mac_stats(swa_mac(a), &ms);
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

void swa_summary(struct swa *a)
{
	struct sw_mac_stats ms = { 0 };
	if (swa_mac(a))
		sw_mac_stats(swa_mac(a), &ms);
	double secs = (double)(a->t_end - a->t_start) / 1e9;
	uint64_t frames = 0, cycles = 0, rounds = 0;
	for (unsigned t = 0; t < a->nthreads; t++) {
		frames += swa_ctx(a, t)->busy_frames;
		cycles += swa_ctx(a, t)->busy_cycles;
		rounds += swa_ctx(a, t)->rounds;
	}
	/* With threads: the mean of their costs, weighted by frames. */
	double cpf = frames ? (double)cycles / (double)frames : 0;
	if (!a->quiet) {
		FILE *o = a->json ? stderr : stdout;
		fprintf(o, "switch %s: %.1f s; %llu frames switched, %.1f TSC "
			"cycles per frame of switch work; MAC table %llu of %llu "
			"(learned %llu, moved %llu, aged %llu, evicted %llu)\n",
			a->name, secs, U(frames), cpf, U(ms.entries),
			U(ms.capacity), U(ms.learned), U(ms.moved), U(ms.aged),
			U(ms.evicted));
		for (unsigned g = 0; g < a->ngone; g++)
			human_port(o, a->gone[g].name, a->gone[g].kind,
				   &a->gone[g].c, true);
		for (uint32_t i = 0; i < a->sw.nports; i++) {
			if (!a->sw.port[i])
				continue;
			struct sw_counters c;
			swa_counters(a, (uint16_t)i, &c);
			human_port(o, a->sw.port[i]->name, a->sw.port[i]->kind, &c,
				   false);
		}
	}
	if (!a->json)
		return;
	FILE *o = stdout;
	fprintf(o, "{\"cmd\":\"switch\",\"switch\":");
	stats_json_str(o, a->name);
	fprintf(o, ",\"nthreads\":%u,\"seconds\":%.6f,\"frames\":%llu,"
		"\"busy_cycles\":%llu,\"cycles_per_frame\":%.2f,\"rounds\":%llu,\"mac_entries\":%llu,"
		"\"mac_capacity\":%llu,\"mac_learned\":%llu,\"mac_moved\":%llu,"
		"\"mac_aged\":%llu,\"mac_evicted\":%llu,",
		a->nthreads, secs, U(frames), U(cycles), cpf, U(rounds),
		U(ms.entries), U(ms.capacity), U(ms.learned), U(ms.moved),
		U(ms.aged), U(ms.evicted));
	for (unsigned t = 0; t < a->nthreads; t++)
		fprintf(o, "%s%llu", t ? "," : "\"frames_per_thread\":[",
			U(swa_ctx(a, t)->busy_frames));
	fprintf(o, "],\"ports\":[");
	bool first = true;
	for (unsigned g = 0; g < a->ngone; g++, first = false)
		json_port(o, first, a->gone[g].name, a->gone[g].kind,
			  &a->gone[g].c, true);
	for (uint32_t i = 0; i < a->sw.nports; i++) {
		if (!a->sw.port[i])
			continue;
		struct sw_counters c;
		swa_counters(a, (uint16_t)i, &c);
		json_port(o, first, a->sw.port[i]->name, a->sw.port[i]->kind, &c,
			  false);
		first = false;
	}
	fprintf(o, "]}\n");
	fflush(o);
}
