/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What pktmap capture prints: the report line every -T seconds and the
 * summary at the end (standard error), and the summary as one JSON
 * object (--json, standard output). The workers publish their counters
 * with relaxed stores once per batch; this reads them.
 */
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "stats.h"

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void sum(const struct capture *cap, struct cap_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < cap->nworkers; i++) {
		struct cap_worker *w = &cap->w[i];
		uint64_t tf = ld(&w->c.t_first), tl = ld(&w->c.t_last);

		t->received += ld(&w->c.received);
		t->matched += ld(&w->c.matched);
		t->written += ld(&w->c.written);
		t->bytes += ld(&w->c.bytes);
		t->files += ld(&w->c.files);
		t->drop_kernel += ld(&w->c.drop_kernel);
		t->drop_port += ld(&w->c.drop_port);
		if (tf && (!t->t_first || tf < t->t_first))
			t->t_first = tf;
		if (tl > t->t_last)
			t->t_last = tl;
	}
}

void cap_interval_line(const struct capture *cap, struct cap_totals *last,
		       double secs)
{
	struct cap_totals t;
	char rate[32];

	sum(cap, &t);
	stats_fmt_rate(rate, sizeof(rate),
		       secs > 0 ? (double)(t.received - last->received) / secs : 0,
		       "pps");
	char matched[48] = "", written[64] = "";

	if (cap->o.filter)
		snprintf(matched, sizeof(matched), ", matched %llu",
			 (unsigned long long)t.matched);
	if (cap->o.file)
		snprintf(written, sizeof(written), ", written %llu (%.1f MB)",
			 (unsigned long long)t.written, (double)t.bytes / 1e6);
	fprintf(stderr, "capture %s: %s, received %llu%s%s, dropped kernel %llu "
		"port %llu\n", cap->o.port, rate, (unsigned long long)t.received,
		matched, written, (unsigned long long)t.drop_kernel,
		(unsigned long long)t.drop_port);
	*last = t;
}

#define U(x) ((unsigned long long)(x))

void cap_summary(const struct capture *cap, const char *end)
{
	const struct capture_opts *o = &cap->o;
	struct cap_totals t;
	double secs;

	sum(cap, &t);
	secs = t.t_last > t.t_first ? (double)(t.t_last - t.t_first) / 1e9 : 0;
	if (!o->quiet) {
		fprintf(stderr, "%llu packets received on %s\n", U(t.received),
			o->port);
		if (o->filter)
			fprintf(stderr, "%llu packets matched the filter\n",
				U(t.matched));
		if (o->file)
			fprintf(stderr, "%llu packets written to %llu file%s "
				"(%llu bytes)\n", U(t.written), U(t.files),
				t.files == 1 ? "" : "s", U(t.bytes));
		fprintf(stderr, "%llu packets dropped by the kernel\n",
			U(t.drop_kernel));
		fprintf(stderr, "%llu packets dropped by the port\n",
			U(t.drop_port));
	}
	if (!o->json)
		return;
	printf("{\"cmd\":\"capture\",\"port\":");
	stats_json_str(stdout, o->port);
	printf(",\"end\":");
	stats_json_str(stdout, end);
	printf(",\"received\":%llu,\"matched\":%llu,\"written\":%llu,"
	       "\"bytes\":%llu,\"files\":%llu,\"drop_kernel\":%llu,"
	       "\"drop_port\":%llu,\"seconds\":%.6f",
	       U(t.received), U(t.matched), U(t.written), U(t.bytes),
	       U(t.files), U(t.drop_kernel), U(t.drop_port), secs);
	/* No rate from packets that all arrived at one instant (or none). */
	if (secs > 0)
		printf(",\"pps\":%.1f", (double)t.received / secs);
	else
		printf(",\"pps\":null");
	printf(",\"queues\":[");
	for (unsigned i = 0; i < cap->nworkers; i++) {
		struct cap_worker *w = &cap->w[i];

		printf("%s{\"port\":", i ? "," : "");
		stats_json_str(stdout, w->portname);
		printf(",\"received\":%llu,\"written\":%llu,\"files\":%llu}",
		       U(ld(&w->c.received)), U(ld(&w->c.written)),
		       U(ld(&w->c.files)));
	}
	printf("]}\n");
	fflush(stdout);
}
