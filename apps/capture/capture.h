/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap capture: the command line and setup (capture.c), the receiving
 * and writing loop of one worker (capture_work.c), the output files with
 * their rotation (capture_out.c), and what it prints (capture_report.c).
 *
 * One worker thread drains one port: all its RX rings into one file, in
 * time-stamp order (a merge over the rings of each batch), or, with
 * --per-queue, one worker per ring, each with a port of its own
 * (PORT-I) and a file of its own.
 */
#ifndef PKTMAP_APPS_CAPTURE_H
#define PKTMAP_APPS_CAPTURE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <pcap/pcap.h>
#include <pktmap/pcapfile.h>
#include <pktmap/pktmap.h>

#include "cli.h"

#define CAP_MAX_WORKERS 64
/* Slots of the RX ring a kernel-fed port (xdp:, pkt:, tap:) gets unless
 * its name or -B says otherwise: netmap's 1024 are 1.5 ms at 0.7 Mpps,
 * less than a descheduled capture thread can miss on a busy machine. */
#define CAP_DEFAULT_SLOTS 8192
/* pkt: a TPACKET_V3 block is handed over when full or this long after
 * its first frame (a capture wants batches, not the first frame soon;
 * the 128 blocks of 32 MiB then hold 12.8 s of a slow link). */
#define CAP_BLOCK_MS 100

struct capture_opts {
	const char *port;
	const char *file;        /* -w: a name, "-" for stdout, NULL: count only */
	char *filter;            /* the FILTER words joined, or NULL */
	uint64_t count;          /* -c: stop after this many matched, 0: never */
	uint32_t snaplen;        /* -s: bytes kept per packet */
	uint64_t rotate_bytes;   /* -C: a new file before this size is passed */
	uint64_t rotate_secs;    /* -G: a new file every so many seconds */
	unsigned max_files;      /* -W: files in the -C ring, or -G's limit */
	double interval;         /* -T: seconds between report lines, 0: none */
	double idle;             /* --idle: stop after so long without packets */
	uint32_t slots;          /* -B: RX ring slots of kernel-fed ports */
	unsigned rx_dir;         /* -Q: PKTMAP_RX_*, 0: inout where possible */
	int cpu;                 /* -a: pin worker I to CPU+I, -1: no */
	bool pcapng, micro, per_queue, json, quiet;
	int verbose;
};

/* One output stream: a file, renamed and reopened as it rotates. */
struct cap_out {
	const struct capture_opts *o;
	char pattern[PATH_MAX];  /* -w, with -qN inserted for --per-queue */
	char name[PATH_MAX];     /* the file being written */
	struct pktmap_pcapw *w;
	struct pktmap_pcapw_opts wopts;
	uint64_t file_packets;   /* records in the current file */
	uint64_t period_end;     /* -G: ns time stamp that starts a new file */
	unsigned seq;            /* -C: number of the current file */
	unsigned gen_files;      /* -G: files begun so far */
	uint64_t files;          /* files opened in all */
	uint64_t bytes_closed;   /* bytes of the files closed so far */
	bool done;               /* -G -W: the last file is full */
};

/* Counters a worker publishes (relaxed) for the report lines. */
struct cap_counters {
	_Atomic uint64_t received;   /* packets taken from the rings */
	_Atomic uint64_t matched;    /* of those, passed the filter */
	_Atomic uint64_t written;    /* records appended to files */
	_Atomic uint64_t bytes;      /* file bytes of those records */
	_Atomic uint64_t drop_kernel; /* pktmap_stats drop_backend */
	_Atomic uint64_t drop_port;  /* drop_too_long + drop_invalid */
	_Atomic uint64_t files;
	_Atomic uint64_t t_first, t_last; /* CLOCK_MONOTONIC ns of data */
};

struct capture;

struct cap_worker {
	struct capture *cap;
	unsigned idx;
	char portname[256];
	struct pktmap_port *port;
	struct netmap_ring **rings;
	unsigned nrings;
	struct cap_out out;
	bool ts_from_ptr;          /* the back end stamps slot->ptr */
	uint32_t headroom;         /* bytes before a buffer the writer may use */
	bool fast;                 /* records slot run by slot run (work.c) */
	bool rx_blocks;            /* pkt: frames read in the kernel's blocks */
	bool kfilter;              /* the kernel runs the filter ... */
	uint64_t ufilter_left;     /* ... but not on these first packets */
	bool coalesce;             /* wait for batches (capture_work.c) */
	struct cap_counters c __attribute__((aligned(128)));
	pthread_t tid;
	bool started;
	const char *end;           /* "count", "eof", "files", "signal" */
	char err[512];             /* set when the worker failed */
	struct pktmap_stats lib;   /* the port's counters at the end */
};

struct capture {
	struct capture_opts o;
	struct bpf_program prog;   /* compiled FILTER; bf_len 0 when none */
	uint32_t linktype;
	unsigned nworkers;
	struct cap_worker *w;
	_Atomic uint64_t matched_total; /* for -c across workers */
};

/* Sums over the workers (capture_report.c). */
struct cap_totals {
	uint64_t received, matched, written, bytes, files;
	uint64_t drop_kernel, drop_port, t_first, t_last;
};

/* Print the report line for the interval since *last (and update it). */
void cap_interval_line(const struct capture *cap, struct cap_totals *last,
		       double secs);

/* Print the summary (unless -q) and the JSON object (with --json). */
void cap_summary(const struct capture *cap, const char *end);

/* The worker thread's body: returns NULL; failures in w->err. */
void *cap_work(void *arg);

/* Prepare an output for pattern (cap_out_start() opens it). Returns 0 or -1 with a message in err. */
int cap_out_init(struct cap_out *out, const struct capture_opts *o,
		 const char *pattern, uint32_t linktype, char *err,
		 unsigned errlen);

/* Before the capture starts: open the first file (as tcpdump does), or
 * with -G, whose file names come from the first packet's time, check
 * that the directory the pattern names now takes files. Returns 0 or a
 * negative errno with a message in err. */
int cap_out_start(struct cap_out *out, char *err, unsigned errlen);

/* Append one packet, opening or rotating the file first when its time
 * or size says so. Returns 0, 1 when -G -W's last file is done (the
 * packet was not written), or a negative errno with a message in err. */
int cap_out_write(struct cap_out *out, const struct iovec *iov, unsigned n,
		  uint32_t caplen, uint32_t len, uint64_t ts_ns, char *err,
		  unsigned errlen);

/* The same for a packet in one buffer that stays unchanged until
 * cap_out_flush(): queued by reference (written from the buffer itself),
 * its record header in the buffer's headroom when there are 16 bytes. */
int cap_out_write_ref(struct cap_out *out, void *data, uint32_t len,
		      uint32_t headroom, uint64_t ts_ns, char *err,
		      unsigned errlen);

/* Write what cap_out_write_ref() queued, before the buffers change. */
int cap_out_flush(struct cap_out *out, char *err, unsigned errlen);

/* Flush and close the current file. Returns 0 or a negative errno with a
 * message in err. */
int cap_out_close(struct cap_out *out, char *err, unsigned errlen);

/* The -w name for queue q with --per-queue: "-qN" before the extension
 * of the last path component ("out.pcap" -> "out-q1.pcap"). */
void cap_queue_pattern(const char *file, unsigned q, char *out, size_t len);

#endif /* PKTMAP_APPS_CAPTURE_H */
