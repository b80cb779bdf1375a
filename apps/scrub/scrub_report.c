/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub's output: counters by reason and by rule (the control
 * socket's `stats`, the summary, --json), the report line, and the
 * sampled drops (--sample-pcap).
 */
#include <stdio.h>
#include <string.h>

#include "fwd.h"
#include "scrub_app.h"
#include "stats.h"

#define U(x) ((unsigned long long)(x))

static uint64_t ld(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

uint64_t scrub_report_reason(struct scrub_app *a, int reason)
{
	uint64_t sum = 0;

	for (unsigned q = 0; q < a->nq; q++)
		sum += ld(&a->th[q].w.reason[reason]);
	return sum;
}

/* Frames judged, passed and dropped over every worker. */
static void totals(struct scrub_app *a, uint64_t *passed, uint64_t *dropped)
{
	*passed = *dropped = 0;
	for (int k = 0; k < SCRUB_NREASONS; k++) {
		if (k == SCRUB_PASS_UNJUDGED)
			continue;
		if (scrub_dropped(k))
			*dropped += scrub_report_reason(a, k);
		else
			*passed += scrub_report_reason(a, k);
	}
}

static uint64_t dir_sum(struct scrub_app *a, unsigned d,
			size_t off)
{
	uint64_t sum = 0;

	for (unsigned q = 0; q < a->nq; q++)
		if (d < a->th[q].ndir)
			sum += ld((const _Atomic uint64_t *)
				  ((const char *)&a->th[q].dir[d] + off));
	return sum;
}

void scrub_report_stats(struct scrub_app *a, FILE *f)
{
	uint64_t passed, dropped;

	totals(a, &passed, &dropped);
	fprintf(f, "judged %llu\npassed_total %llu\ndropped_total %llu\n",
		U(passed + dropped), U(passed), U(dropped));
	fprintf(f, "forwarded %llu\nreturned %llu\ntoo_long %llu\n",
		U(dir_sum(a, 0, offsetof(struct scrub_dir, packets))),
		U(dir_sum(a, 1, offsetof(struct scrub_dir, packets))),
		U(dir_sum(a, 0, offsetof(struct scrub_dir, too_long)) +
		  dir_sum(a, 1, offsetof(struct scrub_dir, too_long))));
	for (int k = 0; k < SCRUB_NREASONS; k++)
		fprintf(f, "reason %s %llu\n", scrub_reason_name(k),
			U(scrub_report_reason(a, k)));
	/* The rule set may be swapped while we read it: hold the writers'
	 * lock (a reload waits for us, the workers do not). */
	pthread_mutex_lock(&a->lock);
	fprintf(f, "reloads %llu\nreload_errors %llu\n", U(a->reloads),
		U(a->reload_errors));
	pthread_mutex_lock(&a->sample_lock);
	fprintf(f, "samples %llu\n", U(a->samples));
	pthread_mutex_unlock(&a->sample_lock);
	const struct scrub_rules *r = atomic_load(&a->ctx->rules);

	for (uint32_t i = 0; i < r->nrules; i++)
		fprintf(f, "rule %u %llu line %u: %s\n", i,
			U(scrub_rules_hits(r, i)), r->rule[i].line,
			r->rule[i].text);
	pthread_mutex_unlock(&a->lock);
}

void scrub_report_line(struct scrub_app *a, FILE *f)
{
	uint64_t passed, dropped;

	totals(a, &passed, &dropped);
	fprintf(f, "scrub judged %llu passed %llu dropped %llu (deny %llu, "
		"rules %llu, banned %llu, rate %llu, syn %llu, malformed %llu)\n",
		U(passed + dropped), U(passed), U(dropped),
		U(scrub_report_reason(a, SCRUB_DROP_DENY)),
		U(scrub_report_reason(a, SCRUB_DROP_RULE)),
		U(scrub_report_reason(a, SCRUB_DROP_BANNED)),
		U(scrub_report_reason(a, SCRUB_DROP_PPS) +
		  scrub_report_reason(a, SCRUB_DROP_BPS)),
		U(scrub_report_reason(a, SCRUB_DROP_SYN)),
		U(dropped - scrub_report_reason(a, SCRUB_DROP_DENY) -
		  scrub_report_reason(a, SCRUB_DROP_RULE) -
		  scrub_report_reason(a, SCRUB_DROP_BANNED) -
		  scrub_report_reason(a, SCRUB_DROP_PPS) -
		  scrub_report_reason(a, SCRUB_DROP_BPS) -
		  scrub_report_reason(a, SCRUB_DROP_SYN)));
	fflush(f);
}

void scrub_report_summary(struct scrub_app *a, FILE *f)
{
	const char *end = a->nq ? a->th[0].end : NULL;

	fprintf(f, "scrub %s -> %s (%s)%s\n", a->o.in, a->o.out,
		end ? end : "done", a->o.dry_run ? ", dry run" : "");
	scrub_report_stats(a, f);
	fflush(f);
}

void scrub_report_json(struct scrub_app *a, FILE *f)
{
	uint64_t passed, dropped;

	totals(a, &passed, &dropped);
	fprintf(f, "{\"cmd\":\"scrub\",\"version\":\"%s\",\"in\":",
		PKTMAP_VERSION);
	stats_json_str(f, a->o.in);
	fprintf(f, ",\"out\":");
	stats_json_str(f, a->o.out);
	fprintf(f, ",\"workers\":%u,\"dry_run\":%s,\"judged\":%llu,"
		"\"passed\":%llu,\"dropped\":%llu,\"forwarded\":%llu,"
		"\"returned\":%llu,\"reloads\":%llu,\"reload_errors\":%llu,"
		"\"samples\":%llu,\"reasons\":{", a->nq,
		a->o.dry_run ? "true" : "false", U(passed + dropped), U(passed),
		U(dropped), U(dir_sum(a, 0, offsetof(struct scrub_dir, packets))),
		U(dir_sum(a, 1, offsetof(struct scrub_dir, packets))),
		U(a->reloads), U(a->reload_errors), U(a->samples));
	for (int k = 0; k < SCRUB_NREASONS; k++)
		fprintf(f, "%s\"%s\":%llu", k ? "," : "", scrub_reason_name(k),
			U(scrub_report_reason(a, k)));
	fprintf(f, "},\"rules\":[");
	const struct scrub_rules *r = atomic_load(&a->ctx->rules);

	for (uint32_t i = 0; i < r->nrules; i++) {
		fprintf(f, "%s{\"id\":%u,\"line\":%u,\"hits\":%llu,\"text\":",
			i ? "," : "", i, r->rule[i].line, U(scrub_rules_hits(r, i)));
		stats_json_str(f, r->rule[i].text);
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
	fflush(f);
}

void scrub_report_sample(void *user, unsigned worker, const uint8_t *frame,
			 uint32_t len, int reason)
{
	struct scrub_app *a = user;
	struct timespec ts;

	(void)worker;
	(void)reason;
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&a->sample_lock);
	if (pktmap_pcapw_write(a->sample, frame, len, len,
			       (uint64_t)ts.tv_sec * 1000000000ull +
			       (uint64_t)ts.tv_nsec) == 0)
		a->samples++;
	pthread_mutex_unlock(&a->sample_lock);
}
