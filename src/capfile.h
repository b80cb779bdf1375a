/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Capture files: a reader of pcap and pcapng, a writer of pcap (and of
 * a minimal pcapng). Standalone: no port, region or ring knowledge, so it
 * can be fuzzed on its own and reused by `pktmap capture` and a
 * libpcap-compatible library.
 *
 * The reader agrees with libpcap on what a file contains (packets, their
 * captured and original lengths, link types, where a file is corrupt) and
 * differs only where docs/pcap.md says so. It reads through one large
 * buffer refilled with read(), so there is no system call per packet; a
 * record's bytes are handed out in place, valid until the next call.
 * Nothing it reads can make it read outside that buffer, and the buffer
 * only grows (up to the format's per-record limit) when it is full of
 * bytes the file really holds, so a corrupt length never causes a large
 * allocation.
 *
 * Errors are sticky and carry one line naming the byte offset:
 * "truncated record header at offset 1480 (7 of 16 bytes)".
 */
#ifndef PKTMAP_SRC_CAPFILE_H
#define PKTMAP_SRC_CAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum pm_pcap_format {
	PM_PCAP_FMT_PCAP = 1,   /* classic libpcap format */
	PM_PCAP_FMT_PCAPNG = 2, /* pcapng */
};

/* The formats' magic numbers and pcapng block types (reader and writer). */
#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAP_MAGIC_KUZNETZOV 0xa1b2cd34u /* 8 more bytes per record */
#define PCAPNG_SHB 0x0a0d0d0au
#define PCAPNG_IDB 0x00000001u
#define PCAPNG_PB 0x00000002u /* obsolete Packet Block */
#define PCAPNG_SPB 0x00000003u
#define PCAPNG_EPB 0x00000006u
#define PCAPNG_BOM 0x1a2b3c4du

/* The largest captured length any link type may have (DLT_DBUS), the
 * usual one, and the snapshot length the writer puts in its header. */
#define PM_PCAP_MAX_CAPLEN_ANY (128u * 1024 * 1024)
#define PM_PCAP_MAX_CAPLEN 262144u
#define PM_PCAP_WRITE_SNAPLEN 262144u

/* One packet as the reader returns it. */
struct pm_pcap_rec {
	const uint8_t *data; /* caplen bytes, valid until the next call */
	uint32_t caplen;     /* bytes captured (in data) */
	uint32_t len;        /* length of the packet on the wire */
	uint64_t ts_ns;      /* time stamp, nanoseconds since the epoch */
	uint32_t linktype;   /* DLT of the packet (its interface's, pcapng) */
	uint32_t ifindex;    /* pcapng interface within its section; else 0 */
	uint64_t offset;     /* byte offset of the record or block in the file */
};

struct pm_pcapr;

/* Open a capture file and read its header (for pcapng, up to the first
 * interface description, so that the link type is known). Returns 0, or
 * a negative errno with a one-line message in err: -EINVAL for something
 * that is not a capture file we can read, -EBADMSG for a corrupt one,
 * -ENOMEM, or what open()/read() failed with. */
int pm_pcapr_open(struct pm_pcapr **out, const char *path, char *err,
		  size_t errlen);
/* The same on an open descriptor, read from its current position. With
 * own_fd the reader closes it. */
int pm_pcapr_open_fd(struct pm_pcapr **out, int fd, bool own_fd, char *err,
		     size_t errlen);
/* The same with a read buffer of buf_size bytes (0: 1 MiB). A small one
 * only costs more read() calls: tests and fuzzers use it to exercise the
 * refill. */
int pm_pcapr_open_fd_buf(struct pm_pcapr **out, int fd, bool own_fd,
			 size_t buf_size, char *err, size_t errlen);
/* The same on bytes in memory (not copied: they must outlive the reader). */
int pm_pcapr_open_mem(struct pm_pcapr **out, const void *buf, size_t len,
		      char *err, size_t errlen);

/* Read the next packet into *rec. Returns 1 for a packet, 0 at the end of
 * the file, or a negative errno (-EBADMSG: corrupt or truncated; see
 * pm_pcapr_error()). After an error every call returns it again. May
 * block in read() on a pipe or FIFO; never on a regular file. */
int pm_pcapr_next(struct pm_pcapr *r, struct pm_pcap_rec *rec);

/* Go back to the first packet. -ESPIPE for a pipe. */
int pm_pcapr_rewind(struct pm_pcapr *r);

/* The last error as one line ("" when none). */
const char *pm_pcapr_error(const struct pm_pcapr *r);

/* What the header says. For pcapng: the first interface's link type and
 * snapshot length. The link type is a DLT (libpcap's linktype_to_dlt()). */
enum pm_pcap_format pm_pcapr_format(const struct pm_pcapr *r);
uint32_t pm_pcapr_linktype(const struct pm_pcapr *r);
uint32_t pm_pcapr_snaplen(const struct pm_pcapr *r);
/* Byte offset of the next thing to read. */
uint64_t pm_pcapr_offset(const struct pm_pcapr *r);

/* Close the reader (and its descriptor if it owns it). NULL is ignored. */
void pm_pcapr_close(struct pm_pcapr *r);

/* Writer options. Zero means the default everywhere. */
struct pm_pcapw_opts {
	enum pm_pcap_format format; /* 0: pcap */
	int nanosec;                /* pcap: 1 ns time stamps (a1b23c4d), 0 us */
	uint32_t linktype;          /* a DLT; 0 is DLT_NULL; pcapng: < 65536 */
	uint32_t snaplen;           /* 0: PM_PCAP_WRITE_SNAPLEN */
	size_t buf_size;            /* write buffer; 0: 1 MiB */
};

struct pm_pcapw;

/* Create (or truncate) a capture file and write its header. Returns 0 or
 * a negative errno. */
int pm_pcapw_open(struct pm_pcapw **out, const char *path,
		  const struct pm_pcapw_opts *o);
/* The same on an open descriptor; with own_fd the writer closes it. */
int pm_pcapw_open_fd(struct pm_pcapw **out, int fd, bool own_fd,
		     const struct pm_pcapw_opts *o);

/* Append one packet whose bytes are the concatenation of iov[0..n). Bytes
 * beyond the snapshot length are not written (the record says how long
 * the packet was: max(len, bytes given)). Buffered; the buffer is written
 * out in large writes when it fills. Returns 0 or a negative errno; after
 * a write error every call returns it again. */
int pm_pcapw_writev(struct pm_pcapw *w, const struct iovec *iov, unsigned n,
		    uint32_t len, uint64_t ts_ns);
int pm_pcapw_write(struct pm_pcapw *w, const void *data, uint32_t caplen,
		   uint32_t len, uint64_t ts_ns);

/* Write out what is buffered. Returns 0 or a negative errno. */
int pm_pcapw_flush(struct pm_pcapw *w);

/* Records queued by reference between flushes, and iovec pieces a
 * writev() takes. */
#define PM_PCAPW_REF_MAX 4096u
#define PM_PCAPW_REF_IOV 1024u
/* Append a pcap record whose caplen bytes at data stay where they are
 * until the next pm_pcapw_flush() (or any write or close, which flushes
 * first): no copy, they go out with writev(). With headroom >= 16 the
 * record header is written into the 16 bytes before data. pcapng records
 * are copied as pm_pcapw_write() does. */
int pm_pcapw_write_ref(struct pm_pcapw *w, uint8_t *data, uint32_t caplen,
		       uint32_t len, uint64_t ts_ns, uint32_t headroom);

struct netmap_ring;
/* pm_pcapw_write_ref() for the packets of ring slots [i, i+n) (pcap
 * format, headroom >= 16): time stamps from slot->ptr when ts_from_ptr,
 * else ts_ns. Stops before a slot with NS_MOREFRAG. Returns the slots
 * written (their file bytes added to *bytes), or a negative errno. */
int pm_pcapw_write_slots(struct pm_pcapw *w, const struct netmap_ring *ring,
			 uint32_t i, uint32_t n, bool ts_from_ptr,
			 uint64_t ts_ns, uint32_t headroom, uint64_t *bytes);

/* Flush and close. Returns 0 or the first error the writer met. */
int pm_pcapw_close(struct pm_pcapw *w);

/* libpcap's mappings between the link-type values of files (LINKTYPE_*)
 * and of the API (DLT_*), which differ for a handful of old types. */
uint32_t pm_pcap_linktype_to_dlt(uint32_t linktype);
uint32_t pm_pcap_dlt_to_linktype(uint32_t dlt);
/* The largest captured length libpcap accepts for a DLT. */
uint32_t pm_pcap_max_caplen(uint32_t dlt);

#endif /* PKTMAP_SRC_CAPFILE_H */
