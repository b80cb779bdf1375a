/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Capture files: the pcap and pcapng writer (capfile.h; the reader is
 * capfile.c). Records go into one buffer written out when full, or, by
 * reference (pm_pcapw_write_ref), from the caller's buffers with
 * writev() at the next flush.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capfile.h"
#include "pktmap/netmap.h"
#include "util.h"

#define WRITE_BUF_SIZE (1u << 20)

struct pm_pcapw {
	int fd;
	bool own_fd;
	enum pm_pcap_format fmt;
	bool nsec;
	uint32_t snaplen;
	int err;        /* sticky negative errno */
	uint8_t *buf;
	size_t cap, used;
	/* Records by reference (pm_pcapw_write_ref): written with writev()
	 * from the caller's buffers at the next flush. */
	struct iovec *iov;
	unsigned niov;
	uint8_t (*hdr)[16];     /* their headers, when not in the headroom */
	unsigned nhdr;
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write the records queued by reference: writev() of up to IOV_MAX
 * pieces a call, partial writes resumed. */
static int flush_refs(struct pm_pcapw *w)
{
	struct iovec *v = w->iov;
	unsigned n = w->niov;
	w->niov = 0;
	w->nhdr = 0;
	while (n) {
		unsigned k = n < PM_PCAPW_REF_IOV ? n : PM_PCAPW_REF_IOV;
		ssize_t r = writev(w->fd, v, (int)k);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return w->err = -errno;
		}
		if (r == 0)
			return w->err = -EIO;
		while (n && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++, n--;
		}
		if (n && r) {
			v->iov_base = (uint8_t *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
	return 0;
}

int pm_pcapw_flush(struct pm_pcapw *w)
{
	if (w->err)
		return w->err;
	if (w->niov)
		return flush_refs(w); /* nothing is buffered meanwhile */
	if (w->used) {
		int ret = write_all(w->fd, w->buf, w->used);
		w->used = 0;
		if (ret)
			return w->err = ret;
	}
	return 0;
}

/* Append bytes to the buffer, writing it out each time it fills. */
static int put(struct pm_pcapw *w, const void *src, size_t n)
{
	const uint8_t *p = src;
	while (n) {
		if (w->used == w->cap) {
			int ret = pm_pcapw_flush(w);
			if (ret)
				return ret;
		}
		size_t k = w->cap - w->used;
		if (k > n)
			k = n;
		memcpy(w->buf + w->used, p, k);
		w->used += k;
		p += k;
		n -= k;
	}
	return 0;
}

static void le32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* files are written in host order (as libpcap) */
}

static int write_header(struct pm_pcapw *w, uint32_t dlt)
{
	uint32_t lt = pm_pcap_dlt_to_linktype(dlt);
	if (w->fmt == PM_PCAP_FMT_PCAP) {
		uint8_t h[24];
		le32(h, w->nsec ? PCAP_MAGIC_NS : PCAP_MAGIC_US);
		uint16_t v[2] = { 2, 4 };
		memcpy(h + 4, v, 4);
		le32(h + 8, 0);  /* thiszone */
		le32(h + 12, 0); /* sigfigs */
		le32(h + 16, w->snaplen);
		le32(h + 20, lt);
		return put(w, h, sizeof(h));
	}
	uint8_t shb[28], idb[32];
	uint16_t ver[2] = { 1, 0 };
	uint64_t seclen = UINT64_MAX; /* unknown */
	le32(shb, PCAPNG_SHB);
	le32(shb + 4, sizeof(shb));
	le32(shb + 8, PCAPNG_BOM);
	memcpy(shb + 12, ver, 4);
	memcpy(shb + 16, &seclen, 8);
	le32(shb + 24, sizeof(shb));
	uint16_t lt16[2] = { (uint16_t)lt, 0 };
	uint16_t opt[2] = { 9, 1 }; /* if_tsresol: 10^-9 */
	le32(idb, PCAPNG_IDB);
	le32(idb + 4, sizeof(idb));
	memcpy(idb + 8, lt16, 4);
	le32(idb + 12, w->snaplen);
	memcpy(idb + 16, opt, 4);
	le32(idb + 20, 9); /* the value byte, then padding */
	le32(idb + 24, 0); /* opt_endofopt */
	le32(idb + 28, sizeof(idb));
	int ret = put(w, shb, sizeof(shb));
	return ret ? ret : put(w, idb, sizeof(idb));
}

int pm_pcapw_writev(struct pm_pcapw *w, const struct iovec *iov, unsigned n,
		    uint32_t len, uint64_t ts_ns)
{
	if (pm_unlikely(w->err))
		return w->err;
	if (pm_unlikely(w->niov) && flush_refs(w))
		return w->err;
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += iov[i].iov_len;
	uint32_t caplen = total > w->snaplen ? w->snaplen : (uint32_t)total;
	if (len < total)
		len = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
	uint8_t h[28];
	size_t hl, pad = 0;
	if (w->fmt == PM_PCAP_FMT_PCAP) {
		uint64_t sec = ts_ns / 1000000000u, ns = ts_ns % 1000000000u;
		le32(h, (uint32_t)sec);
		le32(h + 4, (uint32_t)(w->nsec ? ns : ns / 1000u));
		le32(h + 8, caplen);
		le32(h + 12, len);
		hl = 16;
	} else {
		pad = (4 - (caplen & 3)) & 3;
		le32(h, PCAPNG_EPB);
		le32(h + 4, 32 + caplen + (uint32_t)pad);
		le32(h + 8, 0); /* interface */
		le32(h + 12, (uint32_t)(ts_ns >> 32));
		le32(h + 16, (uint32_t)ts_ns);
		le32(h + 20, caplen);
		le32(h + 24, len);
		hl = 28;
	}
	int ret = put(w, h, hl);
	size_t left = caplen;
	for (unsigned i = 0; i < n && left && !ret; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
		ret = put(w, iov[i].iov_base, k);
		left -= k;
	}
	if (!ret && w->fmt == PM_PCAP_FMT_PCAPNG) {
		uint8_t t[8] = { 0 };
		le32(t + 4, 32 + caplen + (uint32_t)pad);
		ret = put(w, t + 4 - pad, pad + 4);
	}
	return ret;
}

int pm_pcapw_write(struct pm_pcapw *w, const void *data, uint32_t caplen,
		   uint32_t len, uint64_t ts_ns)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = caplen };
	return pm_pcapw_writev(w, &iov, 1, len, ts_ns);
}

/* pm_pcapw_write_ref()'s rare cases: an error, copied records to write
 * first, no arrays yet, full arrays. Returns 0 or the error. */
static int ref_prepare(struct pm_pcapw *w)
{
	if (w->err)
		return w->err;
	if (w->used && pm_pcapw_flush(w))
		return w->err; /* records stay in order */
	if (!w->iov) {
		w->iov = malloc(PM_PCAPW_REF_MAX * 2 * sizeof(*w->iov));
		w->hdr = malloc(PM_PCAPW_REF_MAX * sizeof(*w->hdr));
		if (!w->iov || !w->hdr)
			return w->err = -ENOMEM;
	}
	if (w->niov + 2 > PM_PCAPW_REF_MAX * 2 && flush_refs(w))
		return w->err;
	return 0;
}

int pm_pcapw_write_ref(struct pm_pcapw *w, uint8_t *data, uint32_t caplen,
		       uint32_t len, uint64_t ts_ns, uint32_t headroom)
{
	if (w->fmt != PM_PCAP_FMT_PCAP)
		return pm_pcapw_write(w, data, caplen, len, ts_ns);
	if (pm_unlikely(w->err || w->used || !w->iov ||
		     w->niov + 2 > PM_PCAPW_REF_MAX * 2) &&
	    ref_prepare(w))
		return w->err;
	if (caplen > w->snaplen)
		caplen = w->snaplen;
	if (len < caplen)
		len = caplen;
	/* Files are in host order, as libpcap writes them. */
	uint32_t sec = (uint32_t)(ts_ns / 1000000000u);
	uint32_t ns = (uint32_t)(ts_ns - (uint64_t)sec * 1000000000u);
	uint32_t rec[4] = { sec, w->nsec ? ns : ns / 1000u, caplen, len };
	struct iovec *v = w->iov + w->niov;
	if (headroom >= 16) {
		memcpy(data - 16, rec, 16);
		v->iov_base = data - 16;
		v->iov_len = 16u + caplen;
		w->niov++;
	} else {
		uint8_t *h = w->hdr[w->nhdr++];
		memcpy(h, rec, 16);
		v[0].iov_base = h;
		v[0].iov_len = 16;
		v[1].iov_base = data;
		v[1].iov_len = caplen;
		w->niov += 2;
	}
	return 0;
}

int pm_pcapw_write_slots(struct pm_pcapw *w, const struct netmap_ring *ring,
			 uint32_t i, uint32_t n, bool ts_from_ptr,
			 uint64_t ts_ns, uint32_t headroom, uint64_t *bytes)
{
	if (w->fmt != PM_PCAP_FMT_PCAP || headroom < 16)
		return -EINVAL;
	uint32_t k = 0, lim = ring->num_slots, snap = w->snaplen;
	uint64_t b = 0;
	while (k < n) {
		if (pm_unlikely(w->err || w->used || !w->iov ||
			     w->niov + 2 > PM_PCAPW_REF_MAX * 2) &&
		    ref_prepare(w))
			return w->err;
		/* Records to the end of the batch or of the arrays. */
		uint32_t room = PM_PCAPW_REF_MAX * 2 - w->niov, m = n - k;
		if (m > room)
			m = room;
		struct iovec *v = w->iov + w->niov;
		uint32_t done = 0;
		for (; done < m; done++) {
			const struct netmap_slot *s = &ring->slot[i];
			if (pm_unlikely(s->flags & NS_MOREFRAG))
				break;
			uint8_t *data = (uint8_t *)ring + ring->buf_ofs +
				(size_t)s->buf_idx * ring->nr_buf_size;
			uint32_t len = s->len, cap = len < snap ? len : snap;
			uint64_t ts = ts_from_ptr ? s->ptr : ts_ns;
			uint32_t sec = (uint32_t)(ts / 1000000000u);
			uint32_t ns = (uint32_t)(ts - (uint64_t)sec * 1000000000u);
			uint32_t rec[4] = { sec, w->nsec ? ns : ns / 1000u, cap, len };
			memcpy(data - 16, rec, 16);
			v[done].iov_base = data - 16;
			v[done].iov_len = 16u + cap;
			b += 16u + cap;
			if (++i == lim)
				i = 0;
		}
		w->niov += done;
		k += done;
		if (done < m)
			break; /* a chain: the caller's */
	}
	*bytes = b;
	return (int)k;
}

int pm_pcapw_open_fd(struct pm_pcapw **out, int fd, bool own_fd,
		     const struct pm_pcapw_opts *o)
{
	struct pm_pcapw_opts def = { 0 };
	if (!o)
		o = &def;
	*out = NULL;
	if (fd < 0)
		return -EBADF;
	if ((o->format && o->format != PM_PCAP_FMT_PCAP &&
	     o->format != PM_PCAP_FMT_PCAPNG) ||
	    (o->format == PM_PCAP_FMT_PCAPNG &&
	     pm_pcap_dlt_to_linktype(o->linktype) > 0xffff)) {
		if (own_fd)
			close(fd);
		return -EINVAL;
	}
	struct pm_pcapw *w = calloc(1, sizeof(*w));
	if (w)
		w->cap = o->buf_size ? o->buf_size : WRITE_BUF_SIZE;
	if (!w || !(w->buf = malloc(w->cap))) {
		free(w);
		if (own_fd)
			close(fd);
		return -ENOMEM;
	}
	w->fd = fd;
	w->own_fd = own_fd;
	w->fmt = o->format ? o->format : PM_PCAP_FMT_PCAP;
	w->nsec = o->nanosec != 0;
	w->snaplen = o->snaplen ? o->snaplen : PM_PCAP_WRITE_SNAPLEN;
	int ret = write_header(w, o->linktype);
	if (!ret)
		ret = pm_pcapw_flush(w); /* a valid file at once */
	if (ret) {
		(void)pm_pcapw_close(w);
		return ret;
	}
	*out = w;
	return 0;
}

int pm_pcapw_open(struct pm_pcapw **out, const char *path,
		  const struct pm_pcapw_opts *o)
{
	*out = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return pm_pcapw_open_fd(out, fd, true, o);
}

int pm_pcapw_close(struct pm_pcapw *w)
{
	if (!w)
		return 0;
	int ret = pm_pcapw_flush(w);
	if (w->own_fd && close(w->fd) != 0 && !ret)
		ret = -errno;
	free(w->buf);
	free(w->iov);
	free(w->hdr);
	free(w);
	return ret;
}
