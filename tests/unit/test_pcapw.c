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
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pktmap/pcapfile.h>

#include "pcapfile.h"
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

	snprintf(path, sizeof(path), "%s/bad", dir);
	CHECK_EQ(pktmap_pcapw_open(&w, path, &bad), -EINVAL);
	CHECK(w == NULL, "no writer on error");
	bad.format = 0;
	bad.sz = 4; /* shorter than any version of the structure */
	CHECK_EQ(pktmap_pcapw_open(&w, path, &bad), -EINVAL);
	CHECK_EQ(pktmap_pcapw_open(&w, "/nonexistent/dir/f.pcap", NULL),
		 -ENOENT);
	CHECK_EQ(pktmap_pcapw_close(NULL), 0);
	/* A full disk: the error comes back, and again. */
	if (access("/dev/full", W_OK) == 0) {
		uint8_t b[64] = {0};
		int rc = pktmap_pcapw_open(&w, "/dev/full", NULL);

		CHECK(rc == -ENOSPC, "open /dev/full: %d", rc);
		if (!rc)
			pktmap_pcapw_close(w);
		(void)b;
	}
	unlink(path);
	rmdir(dir);
	return t_done("pcapw");
}
