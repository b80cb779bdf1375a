// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the capture-file reader and writer (src/capfile.c,
 * src/capfile_write.c).
 *
 * For any input:
 *  - reading it from memory never crashes, never reads outside it (every
 *    record's bytes lie inside the input) and ends in EOF or an error
 *    of one line;
 *  - reading it through a descriptor with a tiny buffer (every refill,
 *    move and growth path) gives exactly the same packets and outcome;
 *  - writing the packets read with the writer (pcap or pcapng, chosen
 *    by the input) and reading that back gives the same packets.
 *
 * Build and run (tests/fuzz/run.sh does this, seeded with the shared
 * captures):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -I src tests/fuzz/fuzz_pcapfile.c src/capfile.c src/capfile_write.c \
 *     -o fuzz_pcapfile
 *   ./fuzz_pcapfile -max_len=65536 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capfile.h"

#define MAX_PKTS 4096

struct got {
	int ret;          /* last pm_pcapr_next() result, or the open error */
	uint32_t linktype;
	size_t n;
	uint32_t caplen[MAX_PKTS], len[MAX_PKTS];
	uint64_t ts[MAX_PKTS], sum[MAX_PKTS];
};

static uint64_t hash(const uint8_t *d, uint32_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 1099511628211ull;
	return h;
}

static void one_line(const char *s)
{
	if (!memchr(s, 0, 256) || strchr(s, '\n'))
		__builtin_trap();
}

/* Read everything from r into g; mem/size bound the record pointers
 * (NULL: not from memory). */
static void read_into(struct pm_pcapr *r, struct got *g, const uint8_t *mem,
		      size_t size)
{
	struct pm_pcap_rec rec;
	int ret;
	g->linktype = pm_pcapr_linktype(r);
	while ((ret = pm_pcapr_next(r, &rec)) == 1) {
		if (mem && (rec.data < mem || rec.caplen > size ||
			    rec.data + rec.caplen > mem + size))
			__builtin_trap();
		if (rec.caplen > PM_PCAP_MAX_CAPLEN_ANY)
			__builtin_trap();
		if (g->n < MAX_PKTS) {
			g->caplen[g->n] = rec.caplen;
			g->len[g->n] = rec.len;
			g->ts[g->n] = rec.ts_ns;
			g->sum[g->n] = hash(rec.data, rec.caplen);
		}
		g->n++;
	}
	g->ret = ret;
	if (ret < 0) {
		one_line(pm_pcapr_error(r));
		if (!strstr(pm_pcapr_error(r), "offset"))
			__builtin_trap();
		if (pm_pcapr_next(r, &rec) != ret) /* errors stick */
			__builtin_trap();
	} else if (ret != 0) {
		__builtin_trap();
	}
}

static int memfd_with(const void *d, size_t n)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (n && write(fd, d, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static struct got a, b, c;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct pm_pcapr *r;

	memset(&a, 0, sizeof(a));
	a.ret = pm_pcapr_open_mem(&r, data, size, err, sizeof(err));
	if (a.ret) {
		one_line(err);
	} else {
		read_into(r, &a, data, size);
		pm_pcapr_close(r);
	}

	/* The same through a descriptor and a small, growing buffer. */
	int fd = memfd_with(data, size);
	if (fd < 0)
		return 0;
	memset(&b, 0, sizeof(b));
	size_t bufsz = 1 + (size ? data[size - 1] % 64 : 0);
	b.ret = pm_pcapr_open_fd_buf(&r, fd, true, bufsz, err, sizeof(err));
	if (b.ret) {
		one_line(err);
	} else {
		read_into(r, &b, NULL, 0);
		pm_pcapr_close(r);
	}
	if (a.ret != b.ret || a.n != b.n || a.linktype != b.linktype)
		__builtin_trap();
	size_t m = a.n < MAX_PKTS ? a.n : MAX_PKTS;
	for (size_t i = 0; i < m; i++)
		if (a.caplen[i] != b.caplen[i] || a.len[i] != b.len[i] ||
		    a.ts[i] != b.ts[i] || a.sum[i] != b.sum[i])
			__builtin_trap();
	if (a.ret < 0 && a.n == 0)
		return 0;

	/* Write what was read, read it back. */
	if (pm_pcapr_open_mem(&r, data, size, err, sizeof(err)) != 0)
		__builtin_trap();
	int wfd = memfd_create("fuzzw", MFD_CLOEXEC);
	if (wfd < 0) {
		pm_pcapr_close(r);
		return 0;
	}
	struct pm_pcapw *w;
	bool ng = size && (data[0] & 1);
	struct pm_pcapw_opts wo = {
		.format = ng ? PM_PCAP_FMT_PCAPNG : PM_PCAP_FMT_PCAP,
		.nanosec = 1,
		.linktype = pm_pcapr_linktype(r),
		.buf_size = 1 + (size > 1 ? data[1] % 128 : 0),
	};
	if (pm_pcapw_open_fd(&w, wfd, false, &wo) != 0) {
		/* Only a link type pcapng cannot hold may be refused. */
		if (!ng || pm_pcapr_linktype(r) <= 0xffff)
			__builtin_trap();
		pm_pcapr_close(r);
		close(wfd);
		return 0;
	}
	struct pm_pcap_rec rec;
	while (pm_pcapr_next(r, &rec) == 1)
		if (pm_pcapw_write(w, rec.data, rec.caplen, rec.len, rec.ts_ns) != 0)
			__builtin_trap();
	pm_pcapr_close(r);
	if (pm_pcapw_close(w) != 0)
		__builtin_trap();
	lseek(wfd, 0, SEEK_SET);
	memset(&c, 0, sizeof(c));
	if (pm_pcapr_open_fd(&r, wfd, true, err, sizeof(err)) != 0)
		__builtin_trap();
	read_into(r, &c, NULL, 0);
	pm_pcapr_close(r);
	if (c.ret != 0 || c.n != a.n || c.linktype != a.linktype)
		__builtin_trap();
	for (size_t i = 0; i < m; i++) {
		uint32_t cap = a.caplen[i] < PM_PCAP_WRITE_SNAPLEN ?
				       a.caplen[i] :
				       PM_PCAP_WRITE_SNAPLEN;
		uint32_t len = a.len[i] > a.caplen[i] ? a.len[i] : a.caplen[i];
		/* pcap holds 32-bit seconds: compare times it can hold. */
		bool ts_ok = ng || a.ts[i] < 4294967296ull * 1000000000u;
		if (c.caplen[i] != cap || c.len[i] != len ||
		    (ts_ok && c.ts[i] != a.ts[i]) ||
		    (cap == a.caplen[i] && c.sum[i] != a.sum[i]))
			__builtin_trap();
	}
	return 0;
}
