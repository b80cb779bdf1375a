/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The router's output: a line per interval (rates in and out, per port),
 * the summary at the end (ports, queues, buffers, threads) and the same
 * as one JSON object. The counters are published by the stages with
 * relaxed stores (one writer each) and read here.
 */
#include <string.h>

#include "fwd_cli.h"
#include "router_stats.h"
#include "stats.h"

#define U(x) ((unsigned long long)(x))

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* Frames dropped by input p's RX stage, for any reason. */
static uint64_t rx_dropped(struct rt_router *rt, struct rt_port *p)
{
	struct rt_rxstats *s = &p->rxs;
	uint64_t d = ld(&s->no_route) + ld(&s->ttl) + ld(&s->not_ip) +
		     ld(&s->filtered) + ld(&s->chain_drop);

	for (unsigned o = 0; o < rt->n; o++)
		d += ld(&rt->qs[p->id * rt->n + o].full);
	return d;
}

static uint64_t total_dropped(struct rt_router *rt)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < rt->n; i++)
		t += rx_dropped(rt, &rt->ports[i]) +
		     ld(&rt->ports[i].txs.too_long);
	return t;
}

void router_report_init(struct rt_router *rt, struct router_report *r)
{
	memset(r, 0, sizeof(*r));
	r->ns = stats_now_ns();
	(void)rt;
}

void router_interval(struct rt_router *rt, struct router_report *r, FILE *out)
{
	uint64_t now = stats_now_ns(), rx = 0, tx = 0, drop;
	double dt = (double)(now - r->ns) / 1e9;
	char a[32], b[32], c[32];

	if (dt <= 0)
		return;
	for (unsigned i = 0; i < rt->n; i++) {
		rx += ld(&rt->ports[i].rxs.packets);
		tx += ld(&rt->ports[i].txs.packets);
	}
	drop = total_dropped(rt);
	uint64_t prx = 0, ptx = 0;

	for (unsigned i = 0; i < rt->n; i++) {
		prx += r->rx[i];
		ptx += r->tx[i];
	}
	stats_fmt_rate(a, sizeof(a), (double)(rx - prx) / dt, "pps");
	stats_fmt_rate(b, sizeof(b), (double)(tx - ptx) / dt, "pps");
	stats_fmt_rate(c, sizeof(c), (double)(drop - r->drop) / dt, "pps");
	fprintf(out, "router  in %s  out %s  dropped %s |", a, b, c);
	for (unsigned i = 0; i < rt->n; i++) {
		uint64_t pr = ld(&rt->ports[i].rxs.packets);
		uint64_t pt = ld(&rt->ports[i].txs.packets);

		fprintf(out, " %u: %.2f/%.2f", i,
			(double)(pr - r->rx[i]) / dt / 1e6,
			(double)(pt - r->tx[i]) / dt / 1e6);
		r->rx[i] = pr;
		r->tx[i] = pt;
	}
	fprintf(out, " Mpps in/out\n");
	fflush(out);
	r->drop = drop;
	r->ns = now;
}

static double seconds(struct rt_router *rt)
{
	return rt->t_last > rt->t_first
		       ? (double)(rt->t_last - rt->t_first) / 1e9
		       : 0.0;
}

static const char *zc_word(struct rt_router *rt)
{
	return rt->all_zc ? "zero-copy" : rt->any_zc ? "partly zero-copy"
						     : "copying";
}

/* Cost per frame of the threads that run RX (resp. TX) stages: TSC
 * cycles of wall time and ns of CPU time in their busy rounds. */
struct cost {
	double rx_cyc, tx_cyc, rx_ns, tx_ns;
	uint64_t busy, cpu_ns;
};

static void costs(struct rt_router *rt, struct cost *c)
{
	uint64_t b[2] = {0, 0}, ns[2] = {0, 0}, s[2] = {0, 0};

	memset(c, 0, sizeof(*c));
	for (unsigned k = 0; k < rt->nthreads; k++) {
		struct rt_thread *t = &rt->th[k];
		int tx = t->nrx == 0; /* one thread does both: counted as RX */

		b[tx] += ld(&t->busy_cycles);
		ns[tx] += ld(&t->busy_cpu_ns);
		s[tx] += tx ? ld(&t->tx_slots) : ld(&t->rx_slots);
	}
	c->busy = b[0] + b[1];
	c->cpu_ns = ns[0] + ns[1];
	if (s[0]) {
		c->rx_cyc = (double)b[0] / (double)s[0];
		c->rx_ns = (double)ns[0] / (double)s[0];
	}
	if (s[1]) {
		c->tx_cyc = (double)b[1] / (double)s[1];
		c->tx_ns = (double)ns[1] / (double)s[1];
	}
}
/* Frames input port i dropped because an output queue was full. */
static uint64_t port_full(struct rt_router *rt, unsigned i)
{
	uint64_t full = 0;

	for (unsigned k = 0; k < rt->n; k++)
		full += ld(&rt->qs[i * rt->n + k].full);
	return full;
}


void router_summary(struct rt_router *rt, FILE *o)
{
	uint64_t in = rt_total_received(rt), out = rt_total_sent(rt);
	double s = seconds(rt);
	struct cost c;
	struct rt_bufs *b = &rt->bufs;
	char rate[32];

	stats_fmt_rate(rate, sizeof(rate), s > 0 ? (double)out / s : 0, "pps");
	fprintf(o, "router  %u port%s, mode %s, %u thread%s, %s\n", rt->n,
		rt->n == 1 ? "" : "s", rt_mode_name(rt->o->mode), rt->nthreads,
		rt->nthreads == 1 ? "" : "s", zc_word(rt));
	fprintf(o, "router  %llu frames in, %llu out, %llu dropped in %.3f s "
		"(%s): %s out\n", U(in), U(out), U(total_dropped(rt)), s,
		rt->end ? rt->end : "done", rate);
	for (unsigned i = 0; i < rt->n; i++) {
		struct rt_port *p = &rt->ports[i];
		struct rt_rxstats *x = &p->rxs;
		uint64_t full = port_full(rt, i);
		fprintf(o, "port %u %s  in %llu, out %llu; dropped: queue full "
			"%llu", i, p->info.name, U(ld(&x->packets)),
			U(ld(&p->txs.packets)), U(full));
		if (rt->o->mode == RT_LPM)
			fprintf(o, ", no route %llu, ttl %llu, not ipv4 %llu",
				U(ld(&x->no_route)), U(ld(&x->ttl)),
				U(ld(&x->not_ip)));
		if (rt->o->mode == RT_L2)
			fprintf(o, ", same port %llu; flooded %llu (copies "
				"without a buffer %llu)", U(ld(&x->filtered)),
				U(ld(&x->flooded)), U(ld(&x->no_buf)));
		if (ld(&p->txs.too_long) || ld(&x->chain_drop))
			fprintf(o, ", too long %llu, broken chains %llu",
				U(ld(&p->txs.too_long)), U(ld(&x->chain_drop)));
		if (p->tx_left)
			fprintf(o, "; %llu left in TX at exit", U(p->tx_left));
		if (p->lib.drop_invalid || p->lib.drop_backend ||
		    p->lib.drop_too_long || p->lib.invalid_ring)
			fprintf(o, "; port dropped %llu invalid, %llu too long, "
				"%llu in the back end", U(p->lib.drop_invalid),
				U(p->lib.drop_too_long), U(p->lib.drop_backend));
		fputc('\n', o);
	}
	fprintf(o, "queues  (input -> output: queued / dropped full / sent)\n");
	for (unsigned i = 0; i < rt->n; i++) {
		for (unsigned k = 0; k < rt->n; k++) {
			struct rt_qstats *q = &rt->qs[i * rt->n + k];

			if (ld(&q->enq) || ld(&q->full))
				fprintf(o, "  %u -> %u: %llu / %llu / %llu\n", i, k,
					U(ld(&q->enq)), U(ld(&q->full)),
					U(ld(&q->sent)));
		}
	}
	fprintf(o, "buffers total %llu = free %llu + in flight %llu (queued "
		"%llu, recycling %llu): %s; %llu queued frames dropped at exit\n",
		U(b->total), U(b->free), U(b->fwd_queued + b->recycling),
		U(b->fwd_queued), U(b->recycling),
		b->ok ? "conserved" : "NOT CONSERVED", U(b->dropped_at_exit));
	if (b->bad || b->duplicate)
		fprintf(o, "buffers %llu bad and %llu duplicate indices\n",
			U(b->bad), U(b->duplicate));
	costs(rt, &c);
	for (unsigned k = 0; k < rt->nthreads; k++) {
		struct rt_thread *t = &rt->th[k];

		fprintf(o, "thread %u (CPU %d):", k, t->cpu);
		for (unsigned x = 0; x < t->nrx; x++)
			fprintf(o, " rx%u", t->rx[x]->id);
		for (unsigned x = 0; x < t->ntx; x++)
			fprintf(o, " tx%u", t->tx[x]->id);
		fprintf(o, "  busy %.1f ms of CPU\n",
			(double)ld(&t->busy_cpu_ns) / 1e6);
	}
	if (c.rx_ns || c.tx_ns)
		fprintf(o, "cost    %.1f ns of CPU per frame in the RX stages, %.1f "
			"in the TX stages (busy rounds; %.1f and %.1f TSC cycles of "
			"wall time)\n", c.rx_ns, c.tx_ns, c.rx_cyc, c.tx_cyc);
	fflush(o);
}

void router_json(struct rt_router *rt)
{
	FILE *o = stdout;
	struct rt_bufs *b = &rt->bufs;
	uint64_t out = rt_total_sent(rt);
	double s = seconds(rt);
	struct cost c;

	costs(rt, &c);
	fprintf(o, "{\"cmd\":\"router\",\"version\":\"%s\",\"mode\":\"%s\","
		"\"nports\":%u,\"nthreads\":%u,\"zerocopy\":\"%s\",\"end\":",
		PKTMAP_VERSION, rt_mode_name(rt->o->mode), rt->n, rt->nthreads,
		rt->all_zc ? "all" : rt->any_zc ? "some" : "none");
	stats_json_str(o, rt->end ? rt->end : "done");
	fprintf(o, ",\"rx_packets\":%llu,\"tx_packets\":%llu,\"dropped\":%llu,"
		"\"seconds\":%.6f,\"pps\":%.1f,\"busy_cycles\":%llu,"
		"\"rx_cycles_per_packet\":%.2f,\"tx_cycles_per_packet\":%.2f,"
		"\"busy_cpu_ns\":%llu,\"rx_cpu_ns_per_packet\":%.3f,"
		"\"tx_cpu_ns_per_packet\":%.3f,"
		"\"batch\":%u,\"queue\":%u,\"stash\":%u,"
		"\"buffers_total\":%llu,\"buffers_free\":%llu,"
		"\"buffers_in_flight\":%llu,\"buffers_queued\":%llu,"
		"\"buffers_recycling\":%llu,\"dropped_at_exit\":%llu,"
		"\"buffers_bad\":%llu,\"buffers_duplicate\":%llu,"
		"\"conserved\":%s,\"ports\":[",
		U(rt_total_received(rt)), U(out), U(total_dropped(rt)), s,
		s > 0 ? (double)out / s : 0.0, U(c.busy), c.rx_cyc, c.tx_cyc,
		U(c.cpu_ns), c.rx_ns, c.tx_ns, rt->batch,
		rt->qcap, rt->stash, U(b->total), U(b->free),
		U(b->fwd_queued + b->recycling), U(b->fwd_queued),
		U(b->recycling), U(b->dropped_at_exit), U(b->bad),
		U(b->duplicate), b->ok ? "true" : "false");
	for (unsigned i = 0; i < rt->n; i++) {
		struct rt_port *p = &rt->ports[i];
		struct rt_rxstats *x = &p->rxs;
		uint64_t full = port_full(rt, i);
		fprintf(o, "%s{\"id\":%u,\"name\":", i ? "," : "", i);
		stats_json_str(o, p->info.name);
		fprintf(o, ",\"region\":");
		stats_json_str(o, p->info.region);
		fprintf(o, ",\"rx_packets\":%llu,\"rx_bytes\":%llu,"
			"\"tx_packets\":%llu,\"tx_bytes\":%llu,\"queue_full\":%llu,"
			"\"no_route\":%llu,\"ttl\":%llu,\"not_ip\":%llu,"
			"\"filtered\":%llu,\"flooded\":%llu,\"no_buf\":%llu,"
			"\"chain_drop\":%llu,\"too_long\":%llu,\"stalls\":%llu,"
			"\"lost\":%llu,\"tx_left\":%llu,",
			U(ld(&x->packets)), U(ld(&x->bytes)),
			U(ld(&p->txs.packets)), U(ld(&p->txs.bytes)), U(full),
			U(ld(&x->no_route)), U(ld(&x->ttl)), U(ld(&x->not_ip)),
			U(ld(&x->filtered)), U(ld(&x->flooded)),
			U(ld(&x->no_buf)), U(ld(&x->chain_drop)),
			U(ld(&p->txs.too_long)), U(ld(&x->stalls)),
			U(ld(&p->txs.lost)), U(p->tx_left));
		fwdcli_json_lib(o, &p->lib);
		fputc('}', o);
	}
	fprintf(o, "],\"queues\":[");
	for (unsigned i = 0, first = 1; i < rt->n; i++) {
		for (unsigned k = 0; k < rt->n; k++, first = 0) {
			struct rt_qstats *q = &rt->qs[i * rt->n + k];

			fprintf(o, "%s{\"in\":%u,\"out\":%u,\"queued\":%llu,"
				"\"full\":%llu,\"sent\":%llu,\"zerocopy\":%s}",
				first ? "" : ",", i, k, U(ld(&q->enq)),
				U(ld(&q->full)), U(ld(&q->sent)),
				rt->zc[i][k] ? "true" : "false");
		}
	}
	fprintf(o, "],\"threads\":[");
	for (unsigned k = 0; k < rt->nthreads; k++) {
		struct rt_thread *t = &rt->th[k];

		fprintf(o, "%s{\"id\":%u,\"cpu\":%d,\"rx\":[", k ? "," : "", k,
			t->cpu);
		for (unsigned x = 0; x < t->nrx; x++)
			fprintf(o, "%s%u", x ? "," : "", t->rx[x]->id);
		fprintf(o, "],\"tx\":[");
		for (unsigned x = 0; x < t->ntx; x++)
			fprintf(o, "%s%u", x ? "," : "", t->tx[x]->id);
		fprintf(o, "],\"busy_cycles\":%llu,\"busy_cpu_ns\":%llu,"
			"\"rx_slots\":%llu,\"tx_slots\":%llu}",
			U(ld(&t->busy_cycles)), U(ld(&t->busy_cpu_ns)),
			U(ld(&t->rx_slots)), U(ld(&t->tx_slots)));
	}
	fprintf(o, "]}\n");
	fflush(o);
}
