// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the capture-file reader against the system libpcap.
 *
 * Both read the same bytes (libpcap through fmemopen()); they must agree
 * on whether the file opens, the link type, how many packets come out,
 * each packet's captured and original length and bytes, and whether the
 * file ends cleanly. Where docs/pcap.md lists a deliberate difference
 * (pcapng interfaces with different link types or snapshot lengths,
 * sections of different byte orders: libpcap stops, we go on) only the
 * packets libpcap delivered are compared. Time stamps are not compared
 * here (libpcap 1.10 reads pcap seconds as signed and overflows fine
 * binary resolutions; docs/pcap.md); the unit test checks them.
 *
 * Needs libpcap's headers and library (libpcap-dev):
 *   tests/fuzz/run.sh libpcap_diff 300
 * This is how the reader was checked: ~31000 truncated and mutated
 * copies of the shared captures, then libFuzzer, with no disagreement.
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capfile.h"

#define MAX_PKTS 4096

struct res {
	int open_ok, ended_ok;
	unsigned long n;
	uint32_t linktype;
	char err[PCAP_ERRBUF_SIZE + 256];
	uint32_t caplen[MAX_PKTS], len[MAX_PKTS];
	uint64_t sum[MAX_PKTS];
};

static uint64_t hash(const uint8_t *d, uint32_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 1099511628211ull;
	return h;
}

static void add(struct res *r, const uint8_t *d, uint32_t caplen, uint32_t len)
{
	if (r->n < MAX_PKTS) {
		r->caplen[r->n] = caplen;
		r->len[r->n] = len;
		r->sum[r->n] = hash(d, caplen);
	}
	r->n++;
}

static void run_libpcap(const uint8_t *b, size_t n, struct res *r)
{
	char eb[PCAP_ERRBUF_SIZE];
	FILE *f = n ? fmemopen((void *)b, n, "rb") : fopen("/dev/null", "rb");
	if (!f)
		abort();
	pcap_t *p = pcap_fopen_offline_with_tstamp_precision(
		f, PCAP_TSTAMP_PRECISION_NANO, eb);
	if (!p) {
		fclose(f);
		snprintf(r->err, sizeof(r->err), "%s", eb);
		return;
	}
	r->open_ok = 1;
	r->linktype = (uint32_t)pcap_datalink(p);
	struct pcap_pkthdr *h;
	const u_char *d;
	int x;
	while ((x = pcap_next_ex(p, &h, &d)) == 1)
		add(r, d, h->caplen, h->len);
	r->ended_ok = x == PCAP_ERROR_BREAK;
	if (x == PCAP_ERROR)
		snprintf(r->err, sizeof(r->err), "%s", pcap_geterr(p));
	pcap_close(p); /* closes f */
}

static void run_ours(const uint8_t *b, size_t n, struct res *r)
{
	struct pm_pcapr *rd;
	if (pm_pcapr_open_mem(&rd, b, n, r->err, sizeof(r->err)) != 0)
		return;
	r->open_ok = 1;
	r->linktype = pm_pcapr_linktype(rd);
	struct pm_pcap_rec rec;
	int x;
	while ((x = pm_pcapr_next(rd, &rec)) == 1)
		add(r, rec.data, rec.caplen, rec.len);
	r->ended_ok = x == 0;
	if (x < 0)
		snprintf(r->err, sizeof(r->err), "%s", pm_pcapr_error(rd));
	pm_pcapr_close(rd);
}

/* libpcap refusals that docs/pcap.md lists as deliberate differences. */
static int known_difference(const char *e)
{
	return strstr(e, "different from the type of the first") ||
	       strstr(e, "different from the snapshot length") ||
	       strstr(e, "sections with different byte orders");
}

static struct res a, b;

/* Is the file (its first section) in the other byte order than ours? */
static int file_swapped(const uint8_t *d, size_t n)
{
	uint32_t m, bom;
	if (n < 4)
		return 0;
	memcpy(&m, d, 4);
	if (m == 0x0a0d0d0a) { /* pcapng: the section's byte-order magic */
		if (n < 12)
			return 0;
		memcpy(&bom, d + 8, 4);
		return bom == 0x4d3c2b1a;
	}
	/* microsecond, nanosecond and Kuznetzov (modified) pcap magics */
	return m == 0xd4c3b2a1 || m == 0x4d3cb2a1 || m == 0x34cdb2a1;
}

/* A pcapng file whose sections change byte order before its first
 * interface: libpcap reads every block before that interface in the
 * first section's order (a section header there is a block it skips),
 * we read each section in its own order (docs/pcap.md): one of the two
 * may refuse the file at open (a length valid in one order only). */
static int order_changes_before_idb(const uint8_t *d, size_t n)
{
	uint32_t v, bom0 = 0;
	size_t at = 0;
	int swapped = 0;
	while (at + 12 <= n) {
		uint32_t type, len;
		memcpy(&type, d + at, 4);
		if (type == 0x0a0d0d0a) {
			memcpy(&v, d + at + 8, 4);
			if (v != 0x1a2b3c4d && v != 0x4d3c2b1a)
				return 0;
			if (!bom0)
				bom0 = v;
			else if (v != bom0)
				return 1;
			swapped = v == 0x4d3c2b1a;
		}
		memcpy(&len, d + at + 4, 4);
		if (swapped) {
			type = __builtin_bswap32(type);
			len = __builtin_bswap32(len);
		}
		if (type == 1 || len < 12 || len > n - at)
			return 0;
		at += len;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	run_libpcap(data, size, &a);
	run_ours(data, size, &b);
	if (a.open_ok != b.open_ok && order_changes_before_idb(data, size))
		return 0;
	if (a.open_ok != b.open_ok)
		__builtin_trap();
	if (!a.open_ok)
		return 0;
	if (a.linktype != b.linktype)
		__builtin_trap();
	int lenient = !a.ended_ok && known_difference(a.err);
	if (lenient ? b.n < a.n : (a.n != b.n || a.ended_ok != b.ended_ok))
		__builtin_trap();
	/* In files of the other byte order (only there) libpcap rewrites
	 * the pseudo-headers of pflog, Linux cooked (SLL, SLL2), USB and
	 * NFLOG packets; in every file it fixes up the original length of
	 * memory-mapped USB packets (220); we hand out the file's bytes and
	 * lengths (docs/pcap.md). Everything else is compared. */
	uint32_t lt = a.linktype;
	int pseudo = lt == 113 || lt == 117 || lt == 189 || lt == 220 ||
		     lt == 239 || lt == 276;
	int skip_bytes = pseudo && file_swapped(data, size);
	int skip_len = skip_bytes || lt == 220;
	unsigned long m = a.n < MAX_PKTS ? a.n : MAX_PKTS;
	for (unsigned long i = 0; i < m; i++)
		if (a.caplen[i] != b.caplen[i] ||
		    (!skip_len && a.len[i] != b.len[i]) ||
		    (!skip_bytes && a.sum[i] != b.sum[i]))
			__builtin_trap();
	return 0;
}
