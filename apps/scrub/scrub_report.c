/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub's output: counters by reason and by rule (the control
 * socket's `stats`, the summary, --json), the report line, and the
 * sampled drops (--sample-pcap).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fwd.h"
#include "fwd_cli.h"
#include "hostports.h"
#include "scrubpub.h"
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

/* Every counter at one moment: the workers' and the kernel's. */
struct snap {
	uint64_t reason[SCRUB_NREASONS];
	uint64_t passed, dropped;    /* judged = passed + dropped */
	uint64_t hits[SCRUB_MAX_RULES];
	uint32_t nrules;
	bool kernel;
	uint64_t kdeny, kban;        /* the kernel's part of deny, banned */
	uint64_t kreason[SCRUB_NREASONS]; /* the kernel's part of each */
};

/* Take s under r (the rule set in force: the caller holds a->lock or
 * the workers have stopped). */
static void snap_take(struct scrub_app *a, const struct scrub_rules *r,
		      struct snap *s)
{
	uint64_t kr[SCRUB_NREASONS] = {0};

	memset(s, 0, sizeof(*s));
	for (int k = 0; k < SCRUB_NREASONS; k++)
		s->reason[k] = scrub_report_reason(a, k);
	s->nrules = r->nrules;
	for (uint32_t i = 0; i < r->nrules; i++)
		s->hits[i] = scrub_rules_hits(r, i);
	s->kernel = scrub_kern_counts(a, r->nrules, s->hits, kr);
	memcpy(s->kreason, kr, sizeof(kr));
	s->kdeny = kr[SCRUB_DROP_DENY];
	s->kban = kr[SCRUB_DROP_BANNED];
	for (int k = 0; k < SCRUB_NREASONS; k++)
		s->reason[k] += kr[k];
	for (int k = 0; k < SCRUB_NREASONS; k++) {
		if (k == SCRUB_PASS_UNJUDGED)
			continue;
		if (scrub_dropped(k))
			s->dropped += s->reason[k];
		else
			s->passed += s->reason[k];
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

static void print_stats(struct scrub_app *a, const struct scrub_rules *r,
			const struct snap *s, FILE *f)
{
	fprintf(f, "judged %llu\npassed_total %llu\ndropped_total %llu\n",
		U(s->passed + s->dropped), U(s->passed), U(s->dropped));
	fprintf(f, "forwarded %llu\nreturned %llu\ntoo_long %llu\nkernel %s\n",
		U(dir_sum(a, 0, offsetof(struct scrub_dir, packets))),
		U(dir_sum(a, 1, offsetof(struct scrub_dir, packets))),
		U(dir_sum(a, 0, offsetof(struct scrub_dir, too_long)) +
		  dir_sum(a, 1, offsetof(struct scrub_dir, too_long))),
		s->kernel ? "yes" : "no");
	for (int k = 0; k < SCRUB_NREASONS; k++)
		fprintf(f, "reason %s %llu\n", scrub_reason_name(k),
			U(s->reason[k]));
	for (int k = 0; k < SCRUB_NREASONS && s->kernel; k++)
		fprintf(f, "kernel_reason %s %llu\n", scrub_reason_name(k),
			U(s->kreason[k]));
	fprintf(f, "reloads %llu\nreload_errors %llu\n", U(a->reloads),
		U(a->reload_errors));
	pthread_mutex_lock(&a->sample_lock);
	fprintf(f, "samples %llu\n", U(a->samples));
	pthread_mutex_unlock(&a->sample_lock);
	for (uint32_t i = 0; i < r->nrules; i++)
		fprintf(f, "rule %u %llu line %u: %s\n", i, U(s->hits[i]),
			r->rule[i].line, r->rule[i].text);
}

void scrub_report_stats(struct scrub_app *a, FILE *f)
{
	struct snap *s = malloc(sizeof(*s));

	if (!s)
		return;
	/* The rule set may be swapped while we read it: hold the writers'
	 * lock (a reload waits for us, the workers do not). */
	pthread_mutex_lock(&a->lock);
	const struct scrub_rules *r = atomic_load_explicit(&a->ctx->rules, memory_order_acquire);

	snap_take(a, r, s);
	print_stats(a, r, s, f);
	pthread_mutex_unlock(&a->lock);
	free(s);
}

void scrub_report_line(struct scrub_app *a, FILE *f)
{
	struct snap *s = malloc(sizeof(*s));

	if (!s)
		return;
	pthread_mutex_lock(&a->lock);
	snap_take(a, atomic_load_explicit(&a->ctx->rules, memory_order_acquire), s);
	pthread_mutex_unlock(&a->lock);
	const uint64_t *c = s->reason;
	uint64_t rate = c[SCRUB_DROP_PPS] + c[SCRUB_DROP_BPS];
	uint64_t named = c[SCRUB_DROP_DENY] + c[SCRUB_DROP_RULE] +
			 c[SCRUB_DROP_BANNED] + rate + c[SCRUB_DROP_SYN];

	fprintf(f, "scrub judged %llu passed %llu dropped %llu (deny %llu, "
		"rules %llu, banned %llu, rate %llu, syn %llu, malformed %llu)\n",
		U(s->passed + s->dropped), U(s->passed), U(s->dropped),
		U(c[SCRUB_DROP_DENY]), U(c[SCRUB_DROP_RULE]),
		U(c[SCRUB_DROP_BANNED]), U(rate), U(c[SCRUB_DROP_SYN]),
		U(s->dropped - named));
	fflush(f);
	free(s);
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
	struct snap *s = malloc(sizeof(*s));
	const struct scrub_rules *r = atomic_load_explicit(&a->ctx->rules, memory_order_acquire);

	if (!s)
		return;
	snap_take(a, r, s);
	fprintf(f, "{\"cmd\":\"scrub\",\"version\":\"%s\",\"in\":",
		PKTMAP_VERSION);
	stats_json_str(f, a->o.in);
	fprintf(f, ",\"out\":");
	stats_json_str(f, a->o.out);
	fprintf(f, ",\"workers\":%u,\"dry_run\":%s,\"kernel\":%s,"
		"\"judged\":%llu,\"passed\":%llu,\"dropped\":%llu,"
		"\"forwarded\":%llu,\"returned\":%llu,\"reloads\":%llu,"
		"\"reload_errors\":%llu,\"samples\":%llu,\"reasons\":{", a->nq,
		a->o.dry_run ? "true" : "false", s->kernel ? "true" : "false",
		U(s->passed + s->dropped), U(s->passed), U(s->dropped),
		U(dir_sum(a, 0, offsetof(struct scrub_dir, packets))),
		U(dir_sum(a, 1, offsetof(struct scrub_dir, packets))),
		U(a->reloads), U(a->reload_errors), U(a->samples));
	for (int k = 0; k < SCRUB_NREASONS; k++)
		fprintf(f, "%s\"%s\":%llu", k ? "," : "", scrub_reason_name(k),
			U(s->reason[k]));
	fprintf(f, "},\"kernel_drops\":{\"deny\":%llu,\"banned\":%llu},"
		"\"kernel_reasons\":{", U(s->kdeny), U(s->kban));
	for (int k = 0; k < SCRUB_NREASONS; k++)
		fprintf(f, "%s\"%s\":%llu", k ? "," : "", scrub_reason_name(k),
			U(s->kreason[k]));
	fprintf(f, "},\"in_ports\":[");
	for (unsigned q = 0; q < a->nq; q++) {
		struct pktmap_stats st = {.sz = sizeof(st)};

		pktmap_stats(a->th[q].port[0], &st);
		fprintf(f, "%s{", q ? "," : "");
		fwdcli_json_lib(f, &st);
		fputc('}', f);
	}
	fprintf(f, "],\"rules\":[");
	for (uint32_t i = 0; i < r->nrules; i++) {
		fprintf(f, "%s{\"id\":%u,\"line\":%u,\"hits\":%llu,\"text\":",
			i ? "," : "", i, r->rule[i].line, U(s->hits[i]));
		stats_json_str(f, r->rule[i].text);
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
	fflush(f);
	free(s);
}

int scrub_report_publish(struct scrub_app *a)
{
	struct snap *s = malloc(sizeof(*s));
	size_t size;
	uint8_t *img;
	int rc;

	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&a->lock);
	const struct scrub_rules *r = atomic_load_explicit(&a->ctx->rules, memory_order_acquire);

	snap_take(a, r, s);
	size = sizeof(struct sp_hdr) + SCRUB_NREASONS * 8 +
	       (size_t)r->nrules * sizeof(struct sp_rule);
	img = calloc(1, size);
	if (img) {
		struct sp_hdr *h = (struct sp_hdr *)img;
		struct sp_rule *ru = (struct sp_rule *)(img + sizeof(*h) +
							 SCRUB_NREASONS * 8);

		h->magic = SP_MAGIC;
		h->version = SP_VERSION;
		h->size = (uint32_t)size;
		h->pid = (int32_t)getpid();
		h->uid = (uint32_t)geteuid();
		h->start_ticks = hp_proc_start((int)getpid(), (unsigned)geteuid());
		h->nreasons = SCRUB_NREASONS;
		h->nrules = r->nrules;
		h->workers = a->nq;
		h->flags = (a->o.dry_run ? SP_F_DRY_RUN : 0) |
			   (s->kernel ? SP_F_KERNEL : 0);
		h->judged = s->passed + s->dropped;
		h->passed = s->passed;
		h->dropped = s->dropped;
		snprintf(h->in, sizeof(h->in), "%s", a->o.in);
		snprintf(h->out, sizeof(h->out), "%s", a->o.out);
		memcpy(img + sizeof(*h), s->reason, SCRUB_NREASONS * 8);
		for (uint32_t i = 0; i < r->nrules; i++) {
			ru[i].hits = s->hits[i];
			ru[i].line = r->rule[i].line;
			snprintf(ru[i].text, sizeof(ru[i].text), "%s", r->rule[i].text);
		}
	}
	pthread_mutex_unlock(&a->lock);
	free(s);
	if (!img)
		return -ENOMEM;
	rc = sp_write(img, size);
	free(img);
	return rc;
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
