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
/* The kernel's counters (scrub_xdp.h: one per rule id, then one for
 * bans, SCRUB_XDP_NCOUNTS), and the kernel bans remembered so that
 * expired ones leave its map. */
#define SCRUB_KERN_NCOUNTS 4097u
#define SCRUB_KERN_MAX_BANS 65536u

struct scrub_xdp;

struct scrub_kban {
	uint8_t addr[16];
	int family;
	uint64_t until;      /* CLOCK_MONOTONIC */
};

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
	bool dry_run, check, copy, manual_clock, json, quiet, no_kernel;
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
	/* The kernel path (scrub_kern.c): under kern_lock. */
	bool kern_wanted;            /* an xdp: input, no --no-kernel */
	struct scrub_xdp *kern;
	pthread_mutex_t kern_lock;
	bool kern_loaded;
	uint64_t kern_base[SCRUB_KERN_NCOUNTS];  /* the set's zero */
	uint64_t kern_now[SCRUB_KERN_NCOUNTS];
	uint64_t kern_rbase[SCRUB_NREASONS];     /* the reasons' zero */
	struct scrub_kban *kbans;
	uint32_t nkbans;
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
static inline uint64_t scrub_app_now(struct scrub_app *a)
{
	return a->o.manual_clock ?
		atomic_load_explicit(&a->manual_ns, memory_order_relaxed) :
		fwd_now_ns();
}

/* scrub_kern.c: the kernel fast path on an xdp: input (nothing in a
 * build without it). */
/* The name to open the input with: with @conf:prog=scrub when it is an
 * xdp: port with NIC rings (returns 1), else unchanged (0); -1 when it
 * does not fit. */
int scrub_kern_name(const char *in, char *out, size_t outlen);
/* Take the interface's maps and load r's lists: 0 or -1 (printed). */
int scrub_kern_attach(struct scrub_app *a, struct scrub_rules *r);
/* Load a new rule set's lists and limits (before it is swapped in: sets
 * r->kern_judged when the kernel judges completely): 0 or -errno (the
 * kernel keeps the old ones; r->kern_judged false). */
int scrub_kern_load(struct scrub_app *a, struct scrub_rules *r);
void scrub_kern_detach(struct scrub_app *a);
/* Ban (until_ns, the workers' clock) or unban addr in the kernel too. */
void scrub_kern_ban(struct scrub_app *a, const uint8_t addr[16], bool on,
		    uint64_t until_ns);
/* Remove expired bans from the kernel's map (once a second). */
void scrub_kern_tick(struct scrub_app *a);
/* What the kernel decided: added to rule[0..nrules) and
 * reason[0..SCRUB_NREASONS). Returns 1 when there is a kernel path,
 * else 0. */
int scrub_kern_counts(struct scrub_app *a, uint32_t nrules, uint64_t *rule,
		      uint64_t *reason);

/* scrub_report.c */
/* Counters as "NAME VALUE" lines (reasons, then rules) into f. */
void scrub_report_stats(struct scrub_app *a, FILE *f);
void scrub_report_summary(struct scrub_app *a, FILE *f);
void scrub_report_json(struct scrub_app *a, FILE *f);
/* Publish the counters for top and metrics (apps/common/scrubpub.h):
 * 0 or -errno. */
int scrub_report_publish(struct scrub_app *a);
/* The interval line. */
void scrub_report_line(struct scrub_app *a, FILE *f);
/* The workers' sample callback (scrub_sample_fn). */
void scrub_report_sample(void *user, unsigned worker, const uint8_t *frame,
			 uint32_t len, int reason);
/* Sum of one reason over the workers. */
uint64_t scrub_report_reason(struct scrub_app *a, int reason);

#endif /* PKTMAP_APPS_SCRUB_APP_H */
