/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Capture files: the pcap and pcapng reader and the link-type tables
 * (capfile.h; the writer is capfile_write.c).
 *
 * Reading works on one buffer, buf[pos, end), that holds the file's bytes
 * from offset base + pos on. fill(n) makes n bytes available from pos
 * (fewer only at the end of the file): it moves the unread tail to the
 * front and read()s as much as fits, so one read() brings in about a
 * megabyte of packets. A record or block is parsed only once all of it is
 * in the buffer, so every field is read from memory that was checked to
 * exist; the buffer grows past its first size only for a record larger
 * than it, and only while it is full of bytes actually read.
 *
 * The rules on what is valid are libpcap's (1.10): the same magics and
 * versions, the same per-link-type limits on captured lengths, a pcap
 * record longer than the snapshot length cut to it, the same pcapng block
 * and option checks. Deliberate differences are listed in docs/pcap.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capfile.h"
#include "pktmap/netmap.h"
#include "util.h"

#define READ_BUF_SIZE (1u << 20)
#define SHB_MAX_LEN (1u << 20)            /* libpcap's BT_SHB_INSANE_MAX */
#define BLOCK_MAX_INITIAL (16u << 20)     /* libpcap's INITIAL_MAX_BLOCKSIZE */
#define BLOCK_OPTIONS_ROOM 131072u        /* options an EPB may carry */
#define MAX_INTERFACES 65536u

#define DLT_EN10MB 1u
#define DLT_DBUS 231u
#define DLT_USBPCAP 249u
#define DLT_EBHSCR 279u

/* ------------------------------------------------------------------ */
/* Link types */

/* The LINKTYPE_ values that are not the DLT_ value of the same link on
 * Linux (libpcap's linktype_to_dlt()/dlt_to_linktype() tables). */
static const struct { uint16_t lt, dlt; } lt_map[] = {
	{ 100, 11 }, /* ATM_RFC1483 */
	{ 101, 12 }, /* RAW */
	{ 102, 15 }, /* SLIP_BSDOS */
	{ 103, 16 }, /* PPP_BSDOS */
	{ 106, 19 }, /* ATM_CLIP */
};

uint32_t pm_pcap_linktype_to_dlt(uint32_t linktype)
{
	for (size_t i = 0; i < sizeof(lt_map) / sizeof(lt_map[0]); i++)
		if (lt_map[i].lt == linktype)
			return lt_map[i].dlt;
	return linktype;
}

uint32_t pm_pcap_dlt_to_linktype(uint32_t dlt)
{
	for (size_t i = 0; i < sizeof(lt_map) / sizeof(lt_map[0]); i++)
		if (lt_map[i].dlt == dlt)
			return lt_map[i].lt;
	return dlt;
}

uint32_t pm_pcap_max_caplen(uint32_t dlt)
{
	switch (dlt) {
	case DLT_DBUS:
		return PM_PCAP_MAX_CAPLEN_ANY;
	case DLT_EBHSCR:
		return 8u * 1024 * 1024;
	case DLT_USBPCAP:
		return 1024u * 1024;
	default:
		return PM_PCAP_MAX_CAPLEN;
	}
}

/* libpcap's pcap_adjust_snapshot(): 0 or too large means the maximum. */
static uint32_t adjust_snapshot(uint32_t dlt, uint32_t snaplen)
{
	uint32_t max = pm_pcap_max_caplen(dlt);
	return snaplen == 0 || snaplen > max ? max : snaplen;
}

/* ------------------------------------------------------------------ */
/* Reader */

struct ng_if {
	uint32_t linktype; /* DLT */
	uint32_t snapshot; /* adjusted snapshot length */
	uint64_t tsresol;  /* time stamp units per second */
	uint32_t tsshift;  /* tsresol == 1 << tsshift, when tsbinary */
	bool tsbinary;
	int64_t tsoffset;  /* seconds added to every time stamp */
};

struct pm_pcapr {
	int fd;              /* -1 for a memory source */
	bool own_fd;
	bool src_eof;        /* read() returned 0 (or a memory source) */
	const uint8_t *buf;  /* alloc, or the caller's memory */
	uint8_t *alloc;
	size_t cap;          /* size of alloc */
	size_t pos, end;     /* unread bytes are buf[pos, end) */
	uint64_t base;       /* file offset of buf[0] */
	off_t start;         /* where the file began in fd (for rewind) */
	size_t memlen;
	int state;           /* 0 reading, 1 ended, < 0 the sticky error */

	enum pm_pcap_format fmt;
	bool swapped;        /* the file (or section) is in the other order */
	uint32_t linktype;   /* DLT of the file (first interface) */
	uint32_t snaplen;    /* as the header says */

	/* pcap */
	uint32_t snapshot;   /* records longer than this are cut to it */
	uint32_t maxcap;     /* records longer than this are an error */
	uint32_t hdrsize;    /* 16, or 24 with the Kuznetzov magic */
	bool nsec;
	int lenswap;         /* 0 no, 1 caplen and len swapped, 2 maybe */

	/* pcapng */
	bool seen_idb;       /* an IDB anywhere in the file */
	uint32_t max_block;
	struct ng_if *ifs;   /* interfaces of the current section */
	uint32_t nifs, ifs_cap;

	char err[256];
};

static int rerr(struct pm_pcapr *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record an error: it becomes the reader's sticky state. */
static int rerr(struct pm_pcapr *r, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->state = code;
	return code;
}

static inline uint16_t get16(const uint8_t *p, bool swap)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap16(v) : v;
}

static inline uint32_t get32(const uint8_t *p, bool swap)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap32(v) : v;
}

static inline uint64_t get64(const uint8_t *p, bool swap)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap64(v) : v;
}

static inline uint64_t cur_off(const struct pm_pcapr *r)
{
	return r->base + r->pos;
}

/* Make `need` bytes available at buf + pos. Returns how many are (less
 * than need only at the end of the file) or a negative errno. */
static long fill(struct pm_pcapr *r, size_t need)
{
	size_t have = r->end - r->pos;
	if (pm_likely(have >= need) || r->src_eof)
		return (long)have;
	if (r->pos + need > r->cap) {
		/* Move the unread tail to the front. */
		if (have)
			memmove(r->alloc, r->alloc + r->pos, have);
		r->base += r->pos;
		r->end = have;
		r->pos = 0;
	}
	while (r->end - r->pos < need) {
		if (r->end == r->cap) {
			/* Full of real bytes and still short: grow, never
			 * beyond what this record needs. */
			size_t ncap = r->cap * 2;
			if (ncap > need)
				ncap = need;
			uint8_t *n = realloc(r->alloc, ncap);
			if (!n)
				return -ENOMEM;
			r->alloc = n;
			r->buf = n;
			r->cap = ncap;
		}
		ssize_t got = read(r->fd, r->alloc + r->end, r->cap - r->end);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (got == 0) {
			r->src_eof = true;
			break;
		}
		r->end += (size_t)got;
	}
	return (long)(r->end - r->pos);
}

static int io_error(struct pm_pcapr *r, long e)
{
	if (e == -ENOMEM)
		return rerr(r, -ENOMEM, "out of memory at offset %llu",
			    (unsigned long long)cur_off(r));
	return rerr(r, (int)e, "read error at offset %llu: %s",
		    (unsigned long long)cur_off(r), strerror((int)-e));
}

/* ---- classic pcap ---- */

static int pcap_start(struct pm_pcapr *r, uint32_t magic)
{
	long have = fill(r, 24);
	if (have < 0)
		return io_error(r, have);
	if (have < 24)
		return rerr(r, -EBADMSG,
			    "truncated pcap file header (%ld of 24 bytes)", have);
	const uint8_t *h = r->buf + r->pos;
	bool sw = r->swapped;
	uint32_t vmaj = get16(h + 4, sw), vmin = get16(h + 6, sw);
	r->snaplen = get32(h + 16, sw);
	uint32_t lt = get32(h + 20, sw);
	if (vmaj < 2)
		return rerr(r, -EINVAL, "archaic pcap version %u.%u at offset 4",
			    vmaj, vmin);
	if (!((vmaj == 2 && vmin <= 4) || (vmaj == 543 && vmin == 0)))
		return rerr(r, -EINVAL, "unsupported pcap version %u.%u at offset 4",
			    vmaj, vmin);
	r->fmt = PM_PCAP_FMT_PCAP;
	/* The low 26 bits are the link type, the top 6 the FCS length. */
	r->linktype = pm_pcap_linktype_to_dlt(lt & 0x03ffffffu);
	r->snapshot = adjust_snapshot(r->linktype, r->snaplen);
	r->maxcap = pm_pcap_max_caplen(r->linktype);
	r->nsec = magic == PCAP_MAGIC_NS;
	r->hdrsize = 16;
	if (magic == PCAP_MAGIC_KUZNETZOV) {
		r->hdrsize = 24;
		/* As libpcap: such captures may carry a made-up 14-byte
		 * Ethernet header on top of the snapshot length. */
		if (r->linktype == DLT_EN10MB)
			r->snapshot = r->snapshot <= 0x7fffffffu - 14 ?
					      r->snapshot + 14 : 0x7fffffffu;
	}
	/* Before 2.3 (and in DG/UX's 543.0) caplen and len were the other
	 * way round; 2.3 files exist both ways. */
	if (vmaj == 543 || vmin < 3)
		r->lenswap = 1;
	else if (vmin == 3)
		r->lenswap = 2;
	else
		r->lenswap = 0;
	r->pos += 24;
	return 0;
}

static int pcap_next(struct pm_pcapr *r, struct pm_pcap_rec *rec)
{
	uint32_t hs = r->hdrsize;
	uint64_t off = cur_off(r);
	long have = fill(r, hs);
	if (pm_unlikely(have < (long)hs)) {
		if (have < 0)
			return io_error(r, have);
		if (have == 0) {
			r->state = 1;
			return 0;
		}
		return rerr(r, -EBADMSG,
			    "truncated record header at offset %llu (%ld of %u bytes)",
			    (unsigned long long)off, have, hs);
	}
	const uint8_t *h = r->buf + r->pos;
	bool sw = r->swapped;
	uint32_t sec = get32(h, sw), frac = get32(h + 4, sw);
	uint32_t caplen = get32(h + 8, sw), len = get32(h + 12, sw);
	if (pm_unlikely(r->lenswap) &&
	    (r->lenswap == 1 || caplen > len)) {
		uint32_t t = caplen;
		caplen = len;
		len = t;
	}
	if (pm_unlikely(caplen > r->maxcap))
		return rerr(r, -EBADMSG,
			    "record at offset %llu claims caplen %u (limit %u)",
			    (unsigned long long)off, caplen, r->maxcap);
	have = fill(r, (size_t)hs + caplen);
	if (pm_unlikely(have < (long)(hs + caplen))) {
		if (have < 0)
			return io_error(r, have);
		return rerr(r, -EBADMSG,
			    "truncated record at offset %llu: caplen %u but only "
			    "%ld bytes follow its header",
			    (unsigned long long)off, caplen, have - (long)hs);
	}
	rec->data = r->buf + r->pos + hs;
	/* Longer than the snapshot length: libpcap hands out only that
	 * much (and skips the rest). */
	rec->caplen = caplen <= r->snapshot ? caplen : r->snapshot;
	rec->len = len;
	rec->ts_ns = (uint64_t)sec * 1000000000u +
		     (r->nsec ? (uint64_t)frac : (uint64_t)frac * 1000u);
	rec->linktype = r->linktype;
	rec->ifindex = 0;
	rec->offset = off;
	r->pos += hs + caplen;
	return 1;
}

/* ---- pcapng ---- */

/* One whole block in the buffer: body is what follows type and length,
 * up to the trailer. */
struct ng_block {
	uint32_t type;
	uint32_t len;
	const uint8_t *body;
	uint32_t blen;
	uint64_t off;
};

static const char *block_name(uint32_t type)
{
	switch (type) {
	case PCAPNG_SHB: return "section header block";
	case PCAPNG_IDB: return "interface description block";
	case PCAPNG_EPB: return "enhanced packet block";
	case PCAPNG_SPB: return "simple packet block";
	case PCAPNG_PB: return "packet block";
	default: return "block";
	}
}

/* Read the next block whole. A section header sets the byte order for
 * itself and what follows. Returns 1, 0 at the end of the file, or a
 * negative errno. `first` is the file's first block; `opening` says we
 * look for the first interface. */
static int ng_read_block(struct pm_pcapr *r, struct ng_block *b, bool first,
			 bool opening)
{
	uint64_t off = cur_off(r);
	long have = fill(r, 12);
	if (have < 0)
		return io_error(r, have);
	if (have == 0 && !first) {
		r->state = 1;
		return 0;
	}
	if (have < 8)
		return rerr(r, -EBADMSG,
			    "truncated block header at offset %llu (%ld of 8 bytes)",
			    (unsigned long long)off, have);
	const uint8_t *h = r->buf + r->pos;
	uint32_t type = get32(h, false); /* the SHB type reads the same both ways */
	if (type == PCAPNG_SHB) {
		if (have < 12)
			return rerr(r, -EBADMSG,
				    "truncated section header block at offset %llu "
				    "(%ld of 12 bytes)",
				    (unsigned long long)off, have);
		uint32_t bom = get32(h + 8, false);
		if (bom == PCAPNG_BOM)
			r->swapped = false;
		else if (bom == __builtin_bswap32(PCAPNG_BOM))
			r->swapped = true;
		else if (!opening || first)
			return rerr(r, first ? -EINVAL : -EBADMSG,
				    "section header block at offset %llu has byte-order "
				    "magic 0x%08x%s",
				    (unsigned long long)off, __builtin_bswap32(bom),
				    first ? ": not a pcapng file" : "");
	} else {
		type = get32(h, r->swapped);
	}
	uint32_t len = get32(h + 4, r->swapped);
	uint32_t limit = first ? SHB_MAX_LEN : r->max_block;
	/* libpcap lets the first section header's length be unaligned. */
	if (len < 12 || ((len & 3) && !first))
		return rerr(r, -EBADMSG,
			    "%s at offset %llu has length %u (%s)", block_name(type),
			    (unsigned long long)off, len,
			    len < 12 ? "less than 12" : "not a multiple of 4");
	if (len > limit)
		return rerr(r, -EBADMSG,
			    "%s at offset %llu claims length %u (limit %u)",
			    block_name(type), (unsigned long long)off, len, limit);
	have = fill(r, len);
	if (have < 0)
		return io_error(r, have);
	if (have < (long)len)
		return rerr(r, -EBADMSG,
			    "truncated %s at offset %llu: length %u but only %ld "
			    "bytes left",
			    block_name(type), (unsigned long long)off, len, have);
	h = r->buf + r->pos;
	uint32_t trailer = get32(h + len - 4, r->swapped);
	/* libpcap does not look at the first section header's trailer;
	 * neither do we, so that we read every file it reads. */
	if (trailer != len && !first)
		return rerr(r, -EBADMSG,
			    "%s at offset %llu: length %u in its header but %u in "
			    "its trailer",
			    block_name(type), (unsigned long long)off, len, trailer);
	b->type = type;
	b->len = len;
	b->body = h + 8;
	b->blen = len - 12;
	b->off = off;
	r->pos += len;
	return 1;
}

static int ng_short(struct pm_pcapr *r, const struct ng_block *b)
{
	return rerr(r, -EBADMSG, "%s at offset %llu is too short (%u bytes)",
		    block_name(b->type), (unsigned long long)b->off, b->len);
}

static int ng_shb(struct pm_pcapr *r, const struct ng_block *b, bool first)
{
	if (b->blen < 16)
		return ng_short(r, b);
	uint32_t vmaj = get16(b->body + 4, r->swapped);
	uint32_t vmin = get16(b->body + 6, r->swapped);
	/* 1.2 is 1.0 with more block types; later sections need only the
	 * same major version (as libpcap). The section length (body + 8)
	 * is not needed: blocks are read one after the other. */
	if (vmaj != 1 || (first && vmin != 0 && vmin != 2))
		return rerr(r, first ? -EINVAL : -EBADMSG,
			    "section header block at offset %llu: unsupported "
			    "pcapng version %u.%u",
			    (unsigned long long)b->off, vmaj, vmin);
	r->nifs = 0; /* a section has its own interfaces */
	return 0;
}

static int ng_idb(struct pm_pcapr *r, const struct ng_block *b)
{
	bool sw = r->swapped;
	unsigned long long off = (unsigned long long)b->off;
	if (b->blen < 8)
		return ng_short(r, b);
	if (r->nifs >= MAX_INTERFACES)
		return rerr(r, -EBADMSG,
			    "interface description block at offset %llu: more than "
			    "%u interfaces in a section", off, MAX_INTERFACES);
	struct ng_if ifc = {
		.linktype = pm_pcap_linktype_to_dlt(get16(b->body, sw)),
		.tsresol = 1000000,
	};
	uint32_t snaplen = get32(b->body + 4, sw);
	ifc.snapshot = adjust_snapshot(ifc.linktype, snaplen);

	const uint8_t *o = b->body + 8;
	uint32_t left = b->blen - 8;
	bool saw_res = false, saw_off = false;
	while (left) {
		if (left < 4)
			return rerr(r, -EBADMSG,
				    "interface description block at offset %llu: "
				    "option header overruns the block", off);
		uint32_t code = get16(o, sw), olen = get16(o + 2, sw);
		uint32_t padded = (olen + 3u) & ~3u;
		if (padded > left - 4)
			return rerr(r, -EBADMSG,
				    "interface description block at offset %llu: "
				    "option %u of length %u overruns the block",
				    off, code, olen);
		const uint8_t *v = o + 4;
		if (code == 0) { /* opt_endofopt */
			if (olen != 0)
				return rerr(r, -EBADMSG,
					    "interface description block at offset "
					    "%llu: end-of-options has length %u",
					    off, olen);
			break;
		} else if (code == 9) { /* if_tsresol */
			if (olen != 1 || saw_res)
				return rerr(r, -EBADMSG,
					    "interface description block at offset "
					    "%llu: %s if_tsresol", off,
					    saw_res ? "a second" : "a malformed");
			saw_res = true;
			uint8_t res = v[0];
			if (res & 0x80) {
				if ((res & 0x7f) > 63)
					return rerr(r, -EBADMSG,
						    "interface description block at "
						    "offset %llu: if_tsresol 2^-%u is "
						    "too fine", off, res & 0x7f);
				ifc.tsbinary = true;
				ifc.tsshift = res & 0x7f;
				ifc.tsresol = 1ull << ifc.tsshift;
			} else {
				if (res > 19)
					return rerr(r, -EBADMSG,
						    "interface description block at "
						    "offset %llu: if_tsresol 10^-%u is "
						    "too fine", off, res);
				ifc.tsbinary = false;
				ifc.tsresol = 1;
				for (unsigned i = 0; i < res; i++)
					ifc.tsresol *= 10;
			}
		} else if (code == 14) { /* if_tsoffset */
			if (olen != 8 || saw_off)
				return rerr(r, -EBADMSG,
					    "interface description block at offset "
					    "%llu: %s if_tsoffset", off,
					    saw_off ? "a second" : "a malformed");
			saw_off = true;
			ifc.tsoffset = (int64_t)get64(v, sw);
		}
		o += 4 + padded;
		left -= 4 + padded;
	}

	if (r->nifs == r->ifs_cap) {
		uint32_t ncap = r->ifs_cap ? r->ifs_cap * 2 : 4;
		struct ng_if *n = realloc(r->ifs, ncap * sizeof(*n));
		if (!n)
			return rerr(r, -ENOMEM, "out of memory at offset %llu", off);
		r->ifs = n;
		r->ifs_cap = ncap;
	}
	r->ifs[r->nifs++] = ifc;
	/* Room for the largest packet this link type may carry. */
	uint64_t need = 8 + 20 + (uint64_t)pm_pcap_max_caplen(ifc.linktype) +
			BLOCK_OPTIONS_ROOM + 4;
	if (need > r->max_block)
		r->max_block = (uint32_t)need;
	if (!r->seen_idb) {
		r->seen_idb = true;
		r->linktype = ifc.linktype;
		r->snaplen = snaplen;
	}
	return 0;
}

/* Time stamp units of an interface to nanoseconds since the epoch. */
static uint64_t ng_ts(const struct ng_if *ifc, uint64_t t)
{
	uint64_t sec = t / ifc->tsresol + (uint64_t)ifc->tsoffset;
	uint64_t frac = t % ifc->tsresol, ns;
	if (ifc->tsbinary)
		ns = (uint64_t)(((unsigned __int128)frac * 1000000000u) >>
				ifc->tsshift);
	else if (ifc->tsresol <= 1000000000u)
		ns = frac * (1000000000u / ifc->tsresol);
	else
		ns = frac / (ifc->tsresol / 1000000000u);
	return sec * 1000000000u + ns;
}

/* Read blocks until a packet (1), the end (0), an error (< 0), or, when
 * `opening`, the first interface description (1, rec untouched). */
static int ng_next(struct pm_pcapr *r, struct pm_pcap_rec *rec, bool opening)
{
	struct ng_block b = { 0 };
	for (;;) {
		bool first = opening && cur_off(r) == 0;
		int ret = ng_read_block(r, &b, first, opening);
		if (ret <= 0)
			return ret;
		bool sw = r->swapped;
		uint32_t ifid, caplen, len, room;
		uint64_t t;
		const uint8_t *data;
		if (first && b.type != PCAPNG_SHB)
			return rerr(r, -EINVAL, "not a pcapng file");
		switch (b.type) {
		case PCAPNG_SHB:
			/* libpcap passes over section headers between the
			 * first one and the first interface unchecked (a bad
			 * byte-order magic leaves the order as it was). */
			if (opening && !first)
				continue;
			ret = ng_shb(r, &b, first);
			if (ret)
				return ret;
			continue;
		case PCAPNG_IDB:
			ret = ng_idb(r, &b);
			if (ret)
				return ret;
			if (opening)
				return 1;
			continue;
		case PCAPNG_EPB:
		case PCAPNG_PB:
			if (b.blen < 20)
				return ng_short(r, &b);
			if (b.type == PCAPNG_EPB)
				ifid = get32(b.body, sw);
			else
				ifid = get16(b.body, sw);
			t = (uint64_t)get32(b.body + 4, sw) << 32 |
			    get32(b.body + 8, sw);
			caplen = get32(b.body + 12, sw);
			len = get32(b.body + 16, sw);
			data = b.body + 20;
			room = b.blen - 20;
			break;
		case PCAPNG_SPB:
			if (b.blen < 4)
				return ng_short(r, &b);
			/* No interface, no time, no caplen: the first
			 * interface's, zero, and min(len, its snapshot). */
			ifid = 0;
			t = 0;
			len = get32(b.body, sw);
			caplen = len;
			if (r->nifs && caplen > r->ifs[0].snapshot)
				caplen = r->ifs[0].snapshot;
			data = b.body + 4;
			room = b.blen - 4;
			break;
		default:
			continue; /* blocks we do not need */
		}
		if (opening)
			return rerr(r, -EBADMSG,
				    "%s at offset %llu comes before any interface "
				    "description block",
				    block_name(b.type), (unsigned long long)b.off);
		if (ifid >= r->nifs)
			return rerr(r, -EBADMSG,
				    "%s at offset %llu: packet on interface %u, but "
				    "the section describes %u",
				    block_name(b.type), (unsigned long long)b.off,
				    ifid, r->nifs);
		const struct ng_if *ifc = &r->ifs[ifid];
		if (caplen > ifc->snapshot)
			return rerr(r, -EBADMSG,
				    "%s at offset %llu claims caplen %u (limit %u)",
				    block_name(b.type), (unsigned long long)b.off,
				    caplen, ifc->snapshot);
		if (caplen > room)
			return rerr(r, -EBADMSG,
				    "%s at offset %llu: caplen %u overruns the block "
				    "(%u bytes of data)",
				    block_name(b.type), (unsigned long long)b.off,
				    caplen, room);
		rec->data = data;
		rec->caplen = caplen;
		rec->len = len;
		rec->ts_ns = b.type == PCAPNG_SPB ? 0 : ng_ts(ifc, t);
		rec->linktype = ifc->linktype;
		rec->ifindex = ifid;
		rec->offset = b.off;
		return 1;
	}
}

/* Parse the file header from the start. */
static int reader_start(struct pm_pcapr *r)
{
	long have = fill(r, 4);
	if (have < 0)
		return io_error(r, have);
	if (have == 0)
		return rerr(r, -EINVAL, "empty file: not a pcap or pcapng file");
	if (have < 4)
		return rerr(r, -EINVAL,
			    "file is %ld bytes: not a pcap or pcapng file", have);
	uint32_t m = get32(r->buf + r->pos, false);
	if (m == PCAPNG_SHB) {
		r->fmt = PM_PCAP_FMT_PCAPNG;
		r->max_block = BLOCK_MAX_INITIAL;
		int ret = ng_next(r, NULL, true);
		if (ret == 0)
			return rerr(r, -EBADMSG,
				    "no interface description block in the file");
		return ret < 0 ? ret : 0;
	}
	uint32_t sm = __builtin_bswap32(m);
	if (m == PCAP_MAGIC_US || m == PCAP_MAGIC_NS || m == PCAP_MAGIC_KUZNETZOV) {
		r->swapped = false;
		return pcap_start(r, m);
	}
	if (sm == PCAP_MAGIC_US || sm == PCAP_MAGIC_NS ||
	    sm == PCAP_MAGIC_KUZNETZOV) {
		r->swapped = true;
		return pcap_start(r, sm);
	}
	const uint8_t *b = r->buf + r->pos;
	return rerr(r, -EINVAL,
		    "bad magic 0x%02x%02x%02x%02x at offset 0: not a pcap or "
		    "pcapng file", b[0], b[1], b[2], b[3]);
}

static void reader_reset(struct pm_pcapr *r)
{
	r->pos = 0;
	r->base = 0;
	r->state = 0;
	r->err[0] = 0;
	r->nifs = 0;
	r->seen_idb = false;
	r->swapped = false;
	if (r->fd >= 0) {
		r->end = 0;
		r->src_eof = false;
	}
}

static int reader_new(struct pm_pcapr **out, int fd, bool own_fd,
		      size_t buf_size, const void *mem, size_t memlen, char *err,
		      size_t errlen)
{
	*out = NULL;
	struct pm_pcapr *r = calloc(1, sizeof(*r));
	if (!r) {
		if (own_fd && fd >= 0)
			close(fd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->fd = fd;
	r->own_fd = own_fd;
	if (fd >= 0) {
		r->cap = buf_size ? buf_size : READ_BUF_SIZE;
		r->alloc = malloc(r->cap);
		r->buf = r->alloc;
		off_t s = lseek(fd, 0, SEEK_CUR);
		r->start = s > 0 ? s : 0;
		if (!r->alloc) {
			pm_pcapr_close(r);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	} else {
		r->buf = mem;
		r->memlen = r->end = memlen;
		r->src_eof = true;
	}
	int ret = reader_start(r);
	if (ret < 0) {
		snprintf(err, errlen, "%s", r->err);
		pm_pcapr_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

int pm_pcapr_open_fd_buf(struct pm_pcapr **out, int fd, bool own_fd,
			 size_t buf_size, char *err, size_t errlen)
{
	if (fd < 0) {
		*out = NULL;
		snprintf(err, errlen, "bad file descriptor");
		return -EBADF;
	}
	return reader_new(out, fd, own_fd, buf_size, NULL, 0, err, errlen);
}

int pm_pcapr_open_fd(struct pm_pcapr **out, int fd, bool own_fd, char *err,
		     size_t errlen)
{
	return pm_pcapr_open_fd_buf(out, fd, own_fd, 0, err, errlen);
}

int pm_pcapr_open_mem(struct pm_pcapr **out, const void *buf, size_t len,
		      char *err, size_t errlen)
{
	return reader_new(out, -1, false, 0, buf ? buf : "", buf ? len : 0, err,
			  errlen);
}

int pm_pcapr_open(struct pm_pcapr **out, const char *path, char *err,
		  size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		*out = NULL;
		snprintf(err, errlen, "cannot open: %s", strerror(e));
		return -e;
	}
	return reader_new(out, fd, true, 0, NULL, 0, err, errlen);
}

int pm_pcapr_next(struct pm_pcapr *r, struct pm_pcap_rec *rec)
{
	if (pm_unlikely(r->state))
		return r->state < 0 ? r->state : 0;
	if (r->fmt == PM_PCAP_FMT_PCAP)
		return pcap_next(r, rec);
	return ng_next(r, rec, false);
}

int pm_pcapr_rewind(struct pm_pcapr *r)
{
	if (r->fd >= 0 && lseek(r->fd, r->start, SEEK_SET) < 0)
		return -errno;
	reader_reset(r);
	r->base = 0;
	return reader_start(r);
}

const char *pm_pcapr_error(const struct pm_pcapr *r)
{
	return r->err;
}

enum pm_pcap_format pm_pcapr_format(const struct pm_pcapr *r)
{
	return r->fmt;
}

uint32_t pm_pcapr_linktype(const struct pm_pcapr *r)
{
	return r->linktype;
}

uint32_t pm_pcapr_snaplen(const struct pm_pcapr *r)
{
	return r->snaplen;
}

uint64_t pm_pcapr_offset(const struct pm_pcapr *r)
{
	return cur_off(r);
}

void pm_pcapr_close(struct pm_pcapr *r)
{
	if (!r)
		return;
	if (r->own_fd && r->fd >= 0)
		close(r->fd);
	free(r->alloc);
	free(r->ifs);
	free(r);
}
