/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub (docs/scrub.md): the command line (scrub.c), the control
 * socket and reloads (scrub_ctl.c), the report and the sampled drops
 * (scrub_report.c). The engine and the worker loop are the forwarding
 * component's (src/fwd/scrub.h, src/fwd/scrub_work.h).
 */
#ifndef PKTMAP_APPS_SCRUB_APP_H
#define PKTMAP_APPS_SCRUB_APP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <pktmap/pcapfile.h>

#include "scrub.h"
#include "scrub_work.h"

#define SCRUB_APP_MAX_QUEUES 64

struct scrub_opts {
	const char *in, *out;        /* -i, -o (out NULL: host mode) */
	const char *rules;           /* -c */
	const char *control;         /* --control PATH */
	const char *sample_path;     /* --sample-pcap */
	uint64_t sample_every;       /* --sample N */
	char host_name[300];         /* in^ in host mode */
	unsigned queues;             /* -q; 0: auto */
	uint32_t batch;
	int cpu;
	double interval, idle;
	bool dry_run, check, copy, manual_clock, json, quiet;
	int verbose;
};

struct scrub_app {
	struct scrub_opts o;
	struct scrub_ctx *ctx;
	struct scrub_thread *th;     /* [nq] */
	unsigned nq;
	struct pktmap_port *ports[2 * SCRUB_APP_MAX_QUEUES];
	_Atomic uint64_t manual_ns;  /* --clock manual */
	/* One writer of the rule set and ban list at a time (reload, ban). */
	pthread_mutex_t lock;
	uint64_t reloads, reload_errors;
	char last_error[512];
	/* --sample-pcap: the workers write under sample_lock. */
	pthread_mutex_t sample_lock;
	struct pktmap_pcapw *sample;
	uint64_t samples;
	/* The control socket. */
	int ctl_fd;
	pthread_t ctl_tid;
	bool ctl_started;
	atomic_int ctl_stop;
	atomic_int reload_asked;     /* SIGHUP */
};

/* scrub_ctl.c */
/* Reload the rules file: 0, or -1 with the reason in a->last_error (the
 * running rules stay). */
int scrub_app_reload(struct scrub_app *a);
/* Open the control socket and start its thread: 0 or -1 (printed). */
int scrub_ctl_start(struct scrub_app *a);
void scrub_ctl_stop(struct scrub_app *a);
/* The answer to one control request line (NUL-terminated, at most 255
 * bytes) into out. Returns 0 for "ok ...", -1 for "error ...". */
int scrub_ctl_answer(struct scrub_app *a, const char *req, char *out,
		     size_t outlen);
/* Now on the workers' clock. */
uint64_t scrub_app_now(struct scrub_app *a);

/* scrub_report.c */
/* Counters as "NAME VALUE" lines (reasons, then rules) into f. */
void scrub_report_stats(struct scrub_app *a, FILE *f);
void scrub_report_summary(struct scrub_app *a, FILE *f);
void scrub_report_json(struct scrub_app *a, FILE *f);
/* The interval line. */
void scrub_report_line(struct scrub_app *a, FILE *f);
/* The workers' sample callback (scrub_sample_fn). */
void scrub_report_sample(void *user, unsigned worker, const uint8_t *frame,
			 uint32_t len, int reason);
/* Sum of one reason over the workers. */
uint64_t scrub_report_reason(struct scrub_app *a, int reason);

#endif /* PKTMAP_APPS_SCRUB_APP_H */
