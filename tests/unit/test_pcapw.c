// SPDX-License-Identifier: BSD-2-Clause
/* The public capture-file writer (<pktmap/pcapfile.h>, src/pcapw.c).
 *
 * 1. pcap (us and ns) and pcapng: packets written through the public API
 *    read back with the library's reader: same bytes, lengths, time
 *    stamps (to the format's resolution), link type, snapshot cut.
 * 2. pktmap_pcapw_bytes() is the file's size after close, at every step,
 *    and pktmap_pcapw_record_bytes() what each record adds: rotation by
 *    size depends on both.
 * 3. writev (an NS_MOREFRAG chain) gives the same record as one write.
 * 4. Bad options and paths: negative errno, nothing crashes.
 * 5. Records by reference (pktmap_pcapw_write_ref, with the header in the
 *    headroom or beside it, and pktmap_pcapw_write_slots from a ring, a
 *    chain written between them): the file is byte for byte the one the
 *    copying writes make, across several writev() rounds, and
 *    pktmap_pcapw_bytes() is its size.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pktmap/netmap.h>
#include <pktmap/pcapfile.h>

#include "capfile.h"
#include "t.h"

static char dir[] = "/tmp/pktmap-pcapw.XXXXXX";

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void fill(uint8_t *p, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7);
}

static void roundtrip(enum pktmap_pcap_format fmt, int nanosec,
		      uint32_t snaplen)
{
	struct pktmap_pcapw_opts o = {.sz = sizeof(o), .format = fmt,
				      .nanosec = nanosec, .linktype = 1,
				      .snaplen = snaplen, .buf_size = 4096};
	struct pktmap_pcapw *w;
	char path[256], err[256];
	uint8_t buf[2000];
	const int n = 300;

	snprintf(path, sizeof(path), "%s/f%d%d%u", dir, fmt, nanosec, snaplen);
	CHECK_EQ(pktmap_pcapw_open(&w, path, &o), 0);
	if (!w)
		return;
	uint64_t expect = pktmap_pcapw_bytes(w);
	CHECK_EQ(expect, fmt == PKTMAP_PCAPNG ? 60 : 24);
	CHECK_EQ(file_size(path), (long long)expect); /* header written at once */
	for (int i = 0; i < n; i++) {
		uint32_t len = 60 + (uint32_t)(i * 37) % 1400;
		uint64_t ts = 1700000000123456789ull + (uint64_t)i * 1001;
		uint64_t rec = pktmap_pcapw_record_bytes(w, len);

		fill(buf, len, (uint32_t)i);
		if (i % 3 == 0) {
			struct iovec iov[3] = {{buf, 14}, {buf + 14, 20},
					       {buf + 34, len - 34}};
			CHECK_EQ(pktmap_pcapw_writev(w, iov, 3, len, ts), 0);
		} else {
			CHECK_EQ(pktmap_pcapw_write(w, buf, len, len, ts), 0);
		}
		expect += rec;
		CHECK_EQ(pktmap_pcapw_bytes(w), (long long)expect);
	}
	CHECK_EQ(pktmap_pcapw_flush(w), 0);
	CHECK_EQ(file_size(path), (long long)expect);
	CHECK_EQ(pktmap_pcapw_close(w), 0);
	CHECK_EQ(file_size(path), (long long)expect);

	struct pm_pcapr *r;
	struct pm_pcap_rec rec;
	int got = 0;

	CHECK_EQ(pm_pcapr_open(&r, path, err, sizeof(err)), 0);
	if (!r)
		return;
	CHECK_EQ(pm_pcapr_linktype(r), 1);
	while (pm_pcapr_next(r, &rec) == 1) {
		uint32_t len = 60 + (uint32_t)(got * 37) % 1400;
		uint32_t cap = snaplen && len > snaplen ? snaplen : len;
		uint64_t ts = 1700000000123456789ull + (uint64_t)got * 1001;

		if (fmt == PKTMAP_PCAP && !nanosec)
			ts -= ts % 1000;
		fill(buf, len, (uint32_t)got);
		CHECK_EQ(rec.len, len);
		CHECK_EQ(rec.caplen, cap);
		CHECK_EQ(rec.ts_ns, (long long)ts);
		CHECK(memcmp(rec.data, buf, cap) == 0, "packet %d differs", got);
		got++;
	}
	CHECK_EQ(got, n);
	CHECK(pm_pcapr_error(r)[0] == 0, "%s", pm_pcapr_error(r));
	pm_pcapr_close(r);
	unlink(path);
}

static int same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int ca, cb, same = fa && fb;

	while (same && (ca = fgetc(fa)) != EOF) {
		cb = fgetc(fb);
		same = ca == cb;
	}
	if (same)
		same = fgetc(fb) == EOF;
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* A ring of NSL slots over buffers of BS bytes, as a port lays it out. */
#define NSL 512u
#define BS 2048u
#define HR 64u /* headroom before each frame */

static void by_reference(int nanosec, uint32_t snaplen)
{
	struct pktmap_pcapw_opts o = {.sz = sizeof(o), .nanosec = nanosec,
				      .linktype = 1, .snaplen = snaplen};
	struct pktmap_pcapw *wc = NULL, *wr = NULL;
	char pc[256], pr[256];
	const uint32_t n = 9000; /* more than one writev round (4096) */
	size_t ring_sz = sizeof(struct netmap_ring) + NSL * sizeof(struct netmap_slot);
	uint8_t *mem = aligned_alloc(64, ring_sz + (size_t)NSL * BS + 64 * BS);

	if (!mem)
		return;
	struct netmap_ring *ring = (struct netmap_ring *)(void *)mem;
	int64_t ofs = (int64_t)ring_sz;
	uint32_t ns = NSL, bs = BS;
	memset(mem, 0, ring_sz);
	memcpy((void *)&ring->buf_ofs, &ofs, sizeof(ofs));
	memcpy((void *)&ring->num_slots, &ns, sizeof(ns));
	memcpy((void *)&ring->nr_buf_size, &bs, sizeof(bs));
	snprintf(pc, sizeof(pc), "%s/copy%d%u", dir, nanosec, snaplen);
	snprintf(pr, sizeof(pr), "%s/ref%d%u", dir, nanosec, snaplen);
	CHECK_EQ(pktmap_pcapw_open(&wc, pc, &o), 0);
	CHECK_EQ(pktmap_pcapw_open(&wr, pr, &o), 0);
	if (!wc || !wr)
		goto out;
	uint32_t seq = 0, i = 0;
	uint64_t ts0 = 1700000000123456789ull;
	while (seq < n) {
		/* A batch of slots, as an rxsync hands them over. */
		uint32_t batch = 1 + (seq * 7) % 300, first = i;
		if (batch > n - seq)
			batch = n - seq;
		for (uint32_t k = 0; k < batch; k++) {
			struct netmap_slot *sl = &ring->slot[i];
			uint32_t len = 60 + (seq + k) * 13 % 1400;
			sl->buf_idx = i + 1; /* buffer 0 is the spare below */
			sl->len = (uint16_t)len;
			sl->flags = 0;
			sl->ptr = ts0 + (uint64_t)(seq + k) * 1001;
			uint8_t *d = (uint8_t *)ring + ring->buf_ofs +
				     (size_t)sl->buf_idx * BS + HR;
			fill(d, len, seq + k);
			CHECK_EQ(pktmap_pcapw_write(wc, d, len, len, sl->ptr), 0);
			i = (i + 1) % NSL;
		}
		/* The buffer index includes the headroom: NETMAP_BUF is the
		 * frame (the ring's buf_ofs reaches the first frame). */
		if (seq % 3 == 0) {
			int64_t fofs = ofs + HR;
			memcpy((void *)&ring->buf_ofs, &fofs, sizeof(fofs));
			CHECK_EQ(pktmap_pcapw_write_slots(wr, ring, first, batch, 1, 0,
							  HR), (int)batch);
			memcpy((void *)&ring->buf_ofs, &ofs, sizeof(ofs));
		} else {
			for (uint32_t k = 0, j = first; k < batch; k++, j = (j + 1) % NSL) {
				struct netmap_slot *sl = &ring->slot[j];
				uint8_t *d = (uint8_t *)ring + ring->buf_ofs +
					     (size_t)sl->buf_idx * BS + HR;
				/* headroom for the header every other packet */
				CHECK_EQ(pktmap_pcapw_write_ref(wr, d, sl->len, sl->len,
								sl->ptr, k % 2 ? HR : 0),
					 0);
			}
		}
		seq += batch;
		/* now and then a chain, copied: it flushes what is queued */
		if (seq % 5 == 0 && seq < n) {
			uint8_t a[700], b[300];
			struct iovec v[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
			fill(a, sizeof(a), seq);
			fill(b, sizeof(b), seq + 1);
			CHECK_EQ(pktmap_pcapw_writev(wc, v, 2, 1000, ts0 + seq), 0);
			CHECK_EQ(pktmap_pcapw_writev(wr, v, 2, 1000, ts0 + seq), 0);
		}
		CHECK_EQ(pktmap_pcapw_flush(wr), 0); /* before the slots go back */
		CHECK_EQ(pktmap_pcapw_bytes(wr), pktmap_pcapw_bytes(wc));
	}
	uint64_t bytes = pktmap_pcapw_bytes(wr);
	CHECK_EQ(pktmap_pcapw_close(wc), 0);
	CHECK_EQ(pktmap_pcapw_close(wr), 0);
	wc = wr = NULL;
	CHECK_EQ(file_size(pr), (long long)bytes);
	CHECK(same_file(pc, pr), "records by reference differ from copied ones "
	      "(ns %d, snaplen %u)", nanosec, snaplen);
out:
	if (wc)
		pktmap_pcapw_close(wc);
	if (wr)
		pktmap_pcapw_close(wr);
	unlink(pc);
	unlink(pr);
	free(mem);
}

int main(void)
{
	struct pktmap_pcapw *w = NULL;
	struct pktmap_pcapw_opts bad = {.sz = sizeof(bad), .format = 7};
	char path[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	roundtrip(PKTMAP_PCAP, 0, 0);
	roundtrip(PKTMAP_PCAP, 1, 0);
	roundtrip(PKTMAP_PCAP, 1, 100);
	roundtrip(PKTMAP_PCAPNG, 0, 0);
	roundtrip(PKTMAP_PCAPNG, 0, 99);
	by_reference(1, 0);
	by_reference(0, 0);
	by_reference(1, 200);

	snprintf(path, sizeof(path), "%s/bad", dir);
	CHECK_EQ(pktmap_pcapw_open(&w, path, &bad), -EINVAL);
	CHECK(w == NULL, "no writer on error");
	bad.format = 0;
	bad.sz = 4; /* shorter than any version of the structure */
	CHECK_EQ(pktmap_pcapw_open(&w, path, &bad), -EINVAL);
	CHECK_EQ(pktmap_pcapw_open(&w, "/nonexistent/dir/f.pcap", NULL),
		 -ENOENT);
	CHECK_EQ(pktmap_pcapw_close(NULL), 0);
	/* A full disk: the error comes back (/dev/full is on every Linux
	 * system: its absence is a failure, not a skip). */
	CHECK(access("/dev/full", W_OK) == 0, "/dev/full: %s", strerror(errno));
	{
		int rc = pktmap_pcapw_open(&w, "/dev/full", NULL);

		CHECK(rc == -ENOSPC, "open /dev/full: %d", rc);
		if (!rc)
			pktmap_pcapw_close(w);
	}
	unlink(path);
	rmdir(dir);
	return t_done("pcapw");
}
