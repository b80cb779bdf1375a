/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Writing capture files: pcap (microsecond or nanosecond time stamps) and
 * pcapng (one interface, nanosecond time stamps), as `pktmap capture`
 * writes them. Records are gathered in one large buffer and written out
 * in large sequential writes when it fills: there is no system call per
 * packet.
 *
 * The writer knows how many bytes its file holds (written and buffered),
 * and how many a record of a given length would add, so that a caller
 * can rotate files by size before a record would cross the limit.
 *
 * Functions return 0 or a negative errno (see pktmap_strerror()); after
 * a write error every call returns that error again.
 */
#ifndef PKTMAP_PCAPFILE_PUBLIC_H
#define PKTMAP_PCAPFILE_PUBLIC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "pktmap.h"

#ifdef __cplusplus
extern "C" {
#endif

enum pktmap_pcap_format {
	PKTMAP_PCAP = 1,   /* classic libpcap format */
	PKTMAP_PCAPNG = 2, /* pcapng: SHB, one IDB, EPBs */
};

/* Options of pktmap_pcapw_open(). Zero means the default everywhere.
 * `sz` must be sizeof(struct pktmap_pcapw_opts). */
struct pktmap_pcapw_opts {
	size_t sz;
	enum pktmap_pcap_format format; /* 0: PKTMAP_PCAP */
	int nanosec;       /* pcap: nanosecond time stamps (pcapng always) */
	uint32_t linktype; /* a DLT (pktmap_info's linktype); 0 is DLT_NULL */
	uint32_t snaplen;  /* bytes kept of each packet; 0: 262144 */
	size_t buf_size;   /* write buffer; 0: 1 MiB */
};

struct pktmap_pcapw;

/* Create (or truncate) a capture file and write its header. */
PKTMAP_EXPORT int pktmap_pcapw_open(struct pktmap_pcapw **out,
				    const char *path,
				    const struct pktmap_pcapw_opts *opts);

/* The same on an open descriptor, written from its current position;
 * with own_fd nonzero the writer closes it. */
PKTMAP_EXPORT int pktmap_pcapw_open_fd(struct pktmap_pcapw **out, int fd,
				       int own_fd,
				       const struct pktmap_pcapw_opts *opts);

/* Append one packet: caplen bytes at data (cut to the snapshot length),
 * len its length on the wire, ts_ns its time in ns since the epoch. */
PKTMAP_EXPORT int pktmap_pcapw_write(struct pktmap_pcapw *w, const void *data,
				     uint32_t caplen, uint32_t len,
				     uint64_t ts_ns);

/* The same for a packet whose bytes are the concatenation of iov[0..n)
 * (the slots of an NS_MOREFRAG chain). */
PKTMAP_EXPORT int pktmap_pcapw_writev(struct pktmap_pcapw *w,
				      const struct iovec *iov, unsigned n,
				      uint32_t len, uint64_t ts_ns);

/* Append a record without copying it: the caplen bytes at data must stay
 * unchanged until the next pktmap_pcapw_flush() (or any other write or
 * close, which flush first); then all the records queued go out in large
 * writev() calls from where they are. With headroom >= 16 (bytes before
 * data the caller lets the writer use, as a buffer's headroom) a record
 * header is written there and a record is one piece of the writev. pcapng
 * records are copied, as by pktmap_pcapw_write(). */
PKTMAP_EXPORT int pktmap_pcapw_write_ref(struct pktmap_pcapw *w, void *data,
					 uint32_t caplen, uint32_t len,
					 uint64_t ts_ns, uint32_t headroom);

/* pktmap_pcapw_write_ref() for every packet of the ring slots [i, i+n):
 * one record each, time stamps from slot->ptr when ts_from_ptr (pkt:,
 * tap:, pcap: ports), else ts_ns; each record's header goes into the 16
 * bytes before its buffer (headroom must be at least 16; pcap format
 * only: -EINVAL otherwise). Stops before a slot with NS_MOREFRAG (write
 * the chain with pktmap_pcapw_writev()). The buffers must stay unchanged
 * until pktmap_pcapw_flush(). Returns the slots written or -errno. */
struct netmap_ring;
PKTMAP_EXPORT int pktmap_pcapw_write_slots(struct pktmap_pcapw *w,
					   const struct netmap_ring *ring,
					   uint32_t i, uint32_t n,
					   int ts_from_ptr, uint64_t ts_ns,
					   uint32_t headroom);

/* Bytes the file holds: its header and every record appended so far,
 * whether written out yet or still buffered. */
PKTMAP_EXPORT uint64_t pktmap_pcapw_bytes(const struct pktmap_pcapw *w);

/* Bytes a record of caplen captured bytes would add to the file. */
PKTMAP_EXPORT uint64_t pktmap_pcapw_record_bytes(const struct pktmap_pcapw *w,
						 uint32_t caplen);

/* Write out what is buffered. */
PKTMAP_EXPORT int pktmap_pcapw_flush(struct pktmap_pcapw *w);

/* Flush and close (NULL is ignored). Returns 0 or the first error the
 * writer met. */
PKTMAP_EXPORT int pktmap_pcapw_close(struct pktmap_pcapw *w);

#ifdef __cplusplus
}
#endif

#endif /* PKTMAP_PCAPFILE_PUBLIC_H */
