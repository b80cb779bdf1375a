/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Output files of pktmap capture, named and rotated as tcpdump does:
 *
 *   -w F               F
 *   -w F -C N          F, F1, F2, ...        (a new file before N is passed)
 *   -w F -C N -W K     F0 .. F(K-1), then F0 again (digits of K-1, padded)
 *   -w F -G S          strftime(F) at the time stamp that opens each file
 *   -w F -G S -C N     strftime(F), then strftime(F)1, ... within a period
 *   -w F -G S -W K     stops after K files
 *
 * Rotation is decided per packet, before it is written, from its own time
 * stamp and the size its record would make the file: every packet lands
 * in exactly one file whole, and none is lost at a boundary (the ring
 * keeps filling while one file is closed and the next opened).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "util.h"

void cap_queue_pattern(const char *file, unsigned q, char *out, size_t len)
{
	const char *slash = strrchr(file, '/');
	const char *base = slash ? slash + 1 : file;
	const char *dot = strrchr(base, '.');

	if (!dot || dot == base)
		snprintf(out, len, "%s-q%u", file, q);
	else
		snprintf(out, len, "%.*s-q%u%s", (int)(dot - file), file, q, dot);
}

/* Digits tcpdump pads -C file numbers to with -W K: those of K-1. */
static int wdigits(unsigned k)
{
	int c = 0;

	for (k = k ? k - 1 : 0; k > 0; k /= 10)
		c++;
	return c;
}

int cap_out_init(struct cap_out *out, const struct capture_opts *o,
		 const char *pattern, uint32_t linktype, char *err,
		 unsigned errlen)
{
	memset(out, 0, sizeof(*out));
	out->o = o;
	if (snprintf(out->pattern, sizeof(out->pattern), "%s", pattern) >=
	    (int)sizeof(out->pattern)) {
		snprintf(err, errlen, "file name too long: %s", pattern);
		return -1;
	}
	out->wopts.sz = sizeof(out->wopts);
	out->wopts.format = o->pcapng ? PKTMAP_PCAPNG : PKTMAP_PCAP;
	out->wopts.nanosec = !o->micro;
	out->wopts.linktype = linktype;
	out->wopts.snaplen = o->snaplen;
	return 0;
}

/* The name of the next file, for a file opened at time stamp ts_ns. */
static int make_name(struct cap_out *out, uint64_t ts_ns, char *err,
		     unsigned errlen)
{
	const struct capture_opts *o = out->o;
	char base[PATH_MAX];
	int digits = o->rotate_bytes && o->max_files ? wdigits(o->max_files) : 0;

	if (o->rotate_secs) {
		time_t t = (time_t)(ts_ns / 1000000000u);
		struct tm tm;

		localtime_r(&t, &tm);
		/* The -G pattern is the user's strftime format, as tcpdump's. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		size_t n = strftime(base, sizeof(base), out->pattern, &tm);
#pragma GCC diagnostic pop
		if (n == 0) {
			snprintf(err, errlen, "%s: the -G file name is empty "
				 "or too long once expanded", out->pattern);
			return -1;
		}
	} else {
		snprintf(base, sizeof(base), "%s", out->pattern);
	}
	int n = out->seq == 0 && digits == 0
			? snprintf(out->name, sizeof(out->name), "%s", base)
			: snprintf(out->name, sizeof(out->name), "%s%0*u", base,
				   digits, out->seq);
	if (n >= (int)sizeof(out->name)) {
		snprintf(err, errlen, "file name too long: %s", base);
		return -1;
	}
	return 0;
}

static int open_file(struct cap_out *out, uint64_t ts_ns, char *err,
		     unsigned errlen)
{
	int rc;

	if (strcmp(out->pattern, "-") == 0) {
		snprintf(out->name, sizeof(out->name), "(standard output)");
		rc = pktmap_pcapw_open_fd(&out->w, STDOUT_FILENO, 0, &out->wopts);
	} else {
		if (make_name(out, ts_ns, err, errlen))
			return -EINVAL;
		rc = pktmap_pcapw_open(&out->w, out->name, &out->wopts);
	}
	if (rc) {
		snprintf(err, errlen, "%s: %s", out->name, pktmap_strerror(rc));
		out->w = NULL;
		return rc;
	}
	out->file_packets = 0;
	out->files++;
	return 0;
}

int cap_out_start(struct cap_out *out, char *err, unsigned errlen)
{
	struct timespec now;
	char dir[PATH_MAX];
	const char *slash;

	clock_gettime(CLOCK_REALTIME, &now);
	if (!out->o->rotate_secs)
		return open_file(out, 0, err, errlen);
	/* -G: the first file's name and period come from the first
	 * packet's time; its directory, as the pattern names it now, must
	 * take a file. */
	if (make_name(out, (uint64_t)now.tv_sec * 1000000000u, err, errlen))
		return -EINVAL;
	slash = strrchr(out->name, '/');
	snprintf(dir, sizeof(dir), "%.*s",
		 slash ? (int)(slash == out->name ? 1 : slash - out->name) : 1,
		 slash ? out->name : ".");
	if (access(dir, W_OK | X_OK) != 0) {
		int rc = -errno;

		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	return 0;
}

int cap_out_close(struct cap_out *out, char *err, unsigned errlen)
{
	int rc;

	if (!out->w)
		return 0;
	out->bytes_closed += pktmap_pcapw_bytes(out->w);
	rc = pktmap_pcapw_close(out->w);
	out->w = NULL;
	if (rc) {
		snprintf(err, errlen, "%s: %s", out->name, pktmap_strerror(rc));
		return rc;
	}
	return 0;
}

/* Close the current file and open the next one for time stamp ts_ns. */
static int rotate(struct cap_out *out, uint64_t ts_ns, char *err,
		  unsigned errlen)
{
	int rc = cap_out_close(out, err, errlen);

	return rc ? rc : open_file(out, ts_ns, err, errlen);
}

/* Open the first file, or the next one when the packet's time or size
 * says so. Returns 0, 1 when -G -W's last file is done, or -errno. */
static int before_record(struct cap_out *out, uint32_t caplen, uint64_t ts_ns,
			 char *err, unsigned errlen)
{
	const struct capture_opts *o = out->o;
	const uint64_t sec = 1000000000u;
	int rc;

	if (pm_unlikely(out->done))
		return 1;
	if (pm_unlikely(!out->w)) {
		/* the first file: its period starts with this packet */
		out->period_end = (ts_ns / sec + o->rotate_secs) * sec;
		out->gen_files = 1;
		return open_file(out, ts_ns, err, errlen);
	}
	if (o->rotate_secs && ts_ns >= out->period_end) {
		if (o->max_files && out->gen_files >= o->max_files) {
			out->done = true;
			rc = cap_out_close(out, err, errlen);
			return rc ? rc : 1;
		}
		out->period_end = (ts_ns / sec + o->rotate_secs) * sec;
		out->gen_files++;
		out->seq = 0;
		return rotate(out, ts_ns, err, errlen);
	}
	if (o->rotate_bytes && out->file_packets &&
	    pktmap_pcapw_bytes(out->w) +
			    pktmap_pcapw_record_bytes(out->w, caplen) >
		    o->rotate_bytes) {
		out->seq++;
		if (o->max_files && !o->rotate_secs && out->seq >= o->max_files)
			out->seq = 0;
		return rotate(out, ts_ns, err, errlen);
	}
	return 0;
}

int cap_out_write(struct cap_out *out, const struct iovec *iov, unsigned n,
		  uint32_t caplen, uint32_t len, uint64_t ts_ns, char *err,
		  unsigned errlen)
{
	int rc = before_record(out, caplen, ts_ns, err, errlen);

	if (pm_unlikely(rc != 0))
		return rc;
	rc = n == 1 ? pktmap_pcapw_write(out->w, iov[0].iov_base, caplen, len,
					 ts_ns)
		    : pktmap_pcapw_writev(out->w, iov, n, len, ts_ns);
	if (pm_unlikely(rc != 0)) {
		snprintf(err, errlen, "%s: %s", out->name, pktmap_strerror(rc));
		return rc;
	}
	out->file_packets++;
	return 0;
}

int cap_out_write_ref(struct cap_out *out, void *data, uint32_t len,
		      uint32_t headroom, uint64_t ts_ns, char *err,
		      unsigned errlen)
{
	const struct capture_opts *o = out->o;
	int rc;

	/* No file yet, or rotation asked for: look first. */
	if (pm_unlikely(!out->w || o->rotate_secs || o->rotate_bytes ||
			out->done)) {
		rc = before_record(out, len, ts_ns, err, errlen);
		if (rc)
			return rc;
	}
	rc = pktmap_pcapw_write_ref(out->w, data, len, len, ts_ns, headroom);
	if (pm_unlikely(rc != 0)) {
		snprintf(err, errlen, "%s: %s", out->name, pktmap_strerror(rc));
		return rc;
	}
	out->file_packets++;
	return 0;
}

int cap_out_flush(struct cap_out *out, char *err, unsigned errlen)
{
	int rc = out->w ? pktmap_pcapw_flush(out->w) : 0;

	if (rc)
		snprintf(err, errlen, "%s: %s", out->name, pktmap_strerror(rc));
	return rc;
}
