/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The public capture-file writer (<pktmap/pcapfile.h>): the internal
 * writer of capfile_write.c behind an exported, size-checked interface, plus
 * the byte accounting that rotation by size needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "capfile.h"
#include "util.h"
#include <pktmap/pcapfile.h>

#define PCAP_FILE_HDR 24u    /* pcap global header */
#define PCAP_REC_HDR 16u     /* pcap record header */
#define PCAPNG_FILE_HDR 60u  /* SHB (28) + IDB with if_tsresol (32) */
#define PCAPNG_EPB_OVER 32u  /* EPB header and trailer around the data */

struct pktmap_pcapw {
	struct pm_pcapw *w;
	enum pktmap_pcap_format fmt;
	uint32_t snaplen;
	uint64_t bytes;
};

/* Copy what the caller's (perhaps older, shorter) options hold. */
static int get_opts(const struct pktmap_pcapw_opts *o,
		    struct pktmap_pcapw_opts *out)
{
	memset(out, 0, sizeof(*out));
	if (!o)
		return 0;
	if (o->sz < offsetof(struct pktmap_pcapw_opts, buf_size))
		return -EINVAL;
	memcpy(out, o, o->sz < sizeof(*out) ? o->sz : sizeof(*out));
	if (out->format && out->format != PKTMAP_PCAP &&
	    out->format != PKTMAP_PCAPNG)
		return -EINVAL;
	return 0;
}

PKTMAP_EXPORT int pktmap_pcapw_open_fd(struct pktmap_pcapw **out, int fd,
				       int own_fd,
				       const struct pktmap_pcapw_opts *opts)
{
	struct pktmap_pcapw_opts o;
	struct pktmap_pcapw *pw;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	ret = get_opts(opts, &o);
	if (ret)
		return ret;
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	pw->fmt = o.format ? o.format : PKTMAP_PCAP;
	pw->snaplen = o.snaplen ? o.snaplen : PM_PCAP_WRITE_SNAPLEN;
	struct pm_pcapw_opts io = {
		.format = pw->fmt == PKTMAP_PCAPNG ? PM_PCAP_FMT_PCAPNG
						   : PM_PCAP_FMT_PCAP,
		.nanosec = o.nanosec,
		.linktype = o.linktype,
		.snaplen = pw->snaplen,
		.buf_size = o.buf_size,
	};
	ret = pm_pcapw_open_fd(&pw->w, fd, own_fd != 0, &io);
	if (ret) {
		free(pw);
		return ret;
	}
	pw->bytes = pw->fmt == PKTMAP_PCAPNG ? PCAPNG_FILE_HDR : PCAP_FILE_HDR;
	*out = pw;
	return 0;
}

PKTMAP_EXPORT int pktmap_pcapw_open(struct pktmap_pcapw **out,
				    const char *path,
				    const struct pktmap_pcapw_opts *opts)
{
	if (!out || !path)
		return -EINVAL;
	*out = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return pktmap_pcapw_open_fd(out, fd, 1, opts);
}

PKTMAP_EXPORT uint64_t pktmap_pcapw_record_bytes(const struct pktmap_pcapw *w,
						 uint32_t caplen)
{
	if (caplen > w->snaplen)
		caplen = w->snaplen;
	if (w->fmt == PKTMAP_PCAPNG)
		return PCAPNG_EPB_OVER + ((caplen + 3u) & ~3u);
	return PCAP_REC_HDR + caplen;
}

PKTMAP_EXPORT int pktmap_pcapw_writev(struct pktmap_pcapw *w,
				      const struct iovec *iov, unsigned n,
				      uint32_t len, uint64_t ts_ns)
{
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += iov[i].iov_len;
	int ret = pm_pcapw_writev(w->w, iov, n, len, ts_ns);
	if (pm_unlikely(ret))
		return ret;
	w->bytes += pktmap_pcapw_record_bytes(
		w, total > UINT32_MAX ? UINT32_MAX : (uint32_t)total);
	return 0;
}

PKTMAP_EXPORT int pktmap_pcapw_write(struct pktmap_pcapw *w, const void *data,
				     uint32_t caplen, uint32_t len,
				     uint64_t ts_ns)
{
	int ret = pm_pcapw_write(w->w, data, caplen, len, ts_ns);
	if (pm_unlikely(ret))
		return ret;
	w->bytes += pktmap_pcapw_record_bytes(w, caplen);
	return 0;
}

PKTMAP_EXPORT int pktmap_pcapw_write_ref(struct pktmap_pcapw *w, void *data,
					 uint32_t caplen, uint32_t len,
					 uint64_t ts_ns, uint32_t headroom)
{
	int ret = pm_pcapw_write_ref(w->w, data, caplen, len, ts_ns, headroom);
	if (pm_unlikely(ret))
		return ret;
	if (pm_likely(w->fmt == PKTMAP_PCAP))
		w->bytes += PCAP_REC_HDR + (caplen < w->snaplen ? caplen : w->snaplen);
	else
		w->bytes += pktmap_pcapw_record_bytes(w, caplen);
	return 0;
}

PKTMAP_EXPORT int pktmap_pcapw_write_slots(struct pktmap_pcapw *w,
					   const struct netmap_ring *ring,
					   uint32_t i, uint32_t n,
					   int ts_from_ptr, uint64_t ts_ns,
					   uint32_t headroom)
{
	uint64_t b = 0;
	int ret;
	if (w->fmt != PKTMAP_PCAP || headroom < 16)
		return -EINVAL;
	ret = pm_pcapw_write_slots(w->w, ring, i, n, ts_from_ptr != 0, ts_ns,
				   headroom, &b);
	if (ret > 0)
		w->bytes += b;
	return ret;
}

PKTMAP_EXPORT uint64_t pktmap_pcapw_bytes(const struct pktmap_pcapw *w)
{
	return w->bytes;
}

PKTMAP_EXPORT int pktmap_pcapw_flush(struct pktmap_pcapw *w)
{
	return pm_pcapw_flush(w->w);
}

PKTMAP_EXPORT int pktmap_pcapw_close(struct pktmap_pcapw *w)
{
	if (!w)
		return 0;
	int ret = pm_pcapw_close(w->w);
	free(w);
	return ret;
}
