/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The counters every open port publishes (src/pub.h): the file appears at
 * open in the user's 0700 directory, mode 0600, with who and what; its
 * ring lines are the port's counters (equal to pktmap_stats() and to what
 * the test moved, exactly, per ring and direction); a program's own drops
 * (pktmap_set_drops) show; the file is gone at close.
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port.h"
#include "pub.h"
#include "t.h"

/* The published file of port `name` of this process: path into out. */
static int find_file(const char *name, char *out, size_t len)
{
	char dir[64], prefix[32];
	snprintf(dir, sizeof(dir), "%s/%s%u", PM_PUB_DIR, PM_PUB_PREFIX,
		 (unsigned)geteuid());
	snprintf(prefix, sizeof(prefix), "%d.", (int)getpid());
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;
	while (d && (e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		char path[320];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY);
		struct pm_pub_hdr h;
		if (fd >= 0 && read(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) &&
		    h.magic == PM_PUB_MAGIC && strcmp(h.name, name) == 0) {
			snprintf(out, len, "%s", path);
			found++;
		}
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	return found;
}

/* Map a published file read-only. */
static const struct pm_pub_hdr *map_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		return NULL;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	*size = (size_t)st.st_size;
	return m == MAP_FAILED ? NULL : m;
}

static const struct pm_ring_stats *ring(const struct pm_pub_hdr *h, uint32_t i)
{
	return (const struct pm_ring_stats *)((const char *)h + h->ring_ofs) + i;
}

/* Send n frames of len bytes from a to b in batches of `batch`. */
static void move(struct pktmap_port *a, struct pktmap_port *b, uint32_t n,
		 uint16_t len, uint32_t batch, uint32_t *txs, uint32_t *rxs)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(b), 0);
	uint32_t sent = 0, got = 0;
	while (got < n) {
		uint32_t k = 0;
		while (sent < n && k < batch && nm_ring_space(tx)) {
			tx->slot[tx->cur].len = len;
			tx->head = tx->cur = nm_ring_next(tx, tx->cur);
			sent++, k++;
		}
		pktmap_txsync(a);
		(*txs)++;
		pktmap_rxsync(b);
		(*rxs)++;
		while (!nm_ring_empty(rx)) {
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
			got++;
		}
	}
}

int main(void)
{
	char a_name[64], b_name[64], err[300] = "", path_a[320], path_b[320];
	snprintf(a_name, sizeof(a_name), "pipe:pub%d{0", (int)getpid());
	snprintf(b_name, sizeof(b_name), "pipe:pub%d}0", (int)getpid());
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *a = NULL, *b = NULL;
	CHECK(pktmap_open(&b, b_name, &o) == 0, "open %s: %s", b_name, err);
	CHECK(pktmap_open(&a, a_name, &o) == 0, "open %s: %s", a_name, err);
	if (!a || !b)
		return t_done("pub");

	CHECK(find_file(a_name, path_a, sizeof(path_a)) == 1, "%s published", a_name);
	CHECK(find_file(b_name, path_b, sizeof(path_b)) == 1, "%s published", b_name);
	struct stat st;
	CHECK(stat(path_a, &st) == 0 && (st.st_mode & 0777) == 0600 &&
		      st.st_uid == geteuid(), "file mode %o", st.st_mode & 0777);
	char dir[64];
	snprintf(dir, sizeof(dir), "%s/%s%u", PM_PUB_DIR, PM_PUB_PREFIX,
		 (unsigned)geteuid());
	CHECK(lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		      (st.st_mode & 0777) == 0700, "dir mode %o", st.st_mode & 0777);

	/* A killed process's file (a pid above pid_max: gone) is swept by
	 * the next open. */
	char stale[96];
	snprintf(stale, sizeof(stale), "%s/999999999.0", dir);
	int sfd = open(stale, O_CREAT | O_WRONLY | O_EXCL, 0600);
	CHECK(sfd >= 0, "create %s", stale);
	if (sfd >= 0)
		close(sfd);
	struct pktmap_port *n = NULL;
	CHECK(pktmap_open(&n, "null:", &o) == 0, "open null: %s", err);
	CHECK(access(stale, F_OK) != 0, "%s swept at open", stale);
	pktmap_close(n);

	uint32_t txs = 0, rxs = 0;
	move(a, b, 10000, 100, 300, &txs, &rxs);
	size_t sa, sb;
	const struct pm_pub_hdr *ha = map_file(path_a, &sa);
	const struct pm_pub_hdr *hb = map_file(path_b, &sb);
	CHECK(ha && hb, "map");
	if (!ha || !hb)
		return t_done("pub");
	CHECK_EQ(ha->pid, getpid());
	CHECK(ha->start_ticks != 0, "start time");
	CHECK(strcmp(ha->mode, "zerocopy") == 0, "mode %s", ha->mode);
	CHECK(strcmp(ha->backend, "pipe") == 0, "backend %s", ha->backend);
	CHECK(strstr(ha->cmdline, "test_pub") != NULL, "cmdline %s", ha->cmdline);
	CHECK_EQ(ha->ntx, 1);
	CHECK_EQ(ha->nrx, 1);
	/* Ring 0 is TX, ring 1 RX (netmap's order). */
	CHECK_EQ(ring(ha, 0)->packets, 10000);
	CHECK_EQ(ring(ha, 0)->bytes, 10000 * 100);
	CHECK_EQ(ring(ha, 0)->syncs, txs);
	CHECK_EQ(ring(ha, 1)->packets, 0);
	CHECK_EQ(ring(hb, 1)->packets, 10000);
	CHECK_EQ(ring(hb, 1)->bytes, 10000 * 100);
	CHECK_EQ(ring(hb, 1)->syncs, rxs);
	struct pktmap_stats s = { .sz = sizeof(s) };
	pktmap_stats(a, &s);
	CHECK_EQ(s.tx_packets, ring(ha, 0)->packets);
	CHECK_EQ(s.tx_bytes, ring(ha, 0)->bytes);
	CHECK_EQ(s.tx_syncs, txs);
	pktmap_stats(b, &s);
	CHECK_EQ(s.rx_packets, ring(hb, 1)->packets);
	CHECK_EQ(s.rx_syncs, rxs);

	/* The checker's drops land on the ring that saw them. */
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(a), 0);
	tx->slot[tx->cur].buf_idx = 1;
	tx->slot[tx->cur].len = 60;
	tx->head = tx->cur = nm_ring_next(tx, tx->cur);
	pktmap_txsync(a);
	CHECK_EQ(ring(ha, 0)->drop_invalid, 1);
	CHECK_EQ(ring(ha, 0)->packets, 10000);
	pktmap_stats(a, &s);
	CHECK_EQ(s.drop_invalid, 1);

	/* A program's own drops. */
	CHECK(pktmap_set_drops(b, PKTMAP_DROP_NO_SPACE, 7) == 0, "set no space");
	CHECK(pktmap_set_drops(b, PKTMAP_DROP_FILTERED, 9) == 0, "set filtered");
	CHECK(pktmap_set_drops(b, (enum pktmap_drop_reason)42, 1) == -EINVAL, "bad reason");
	CHECK(pktmap_set_drops(NULL, PKTMAP_DROP_FILTERED, 1) == -EINVAL, "no port");
	CHECK_EQ(hb->port.drop_nospace, 7);
	CHECK_EQ(hb->port.drop_filtered, 9);

	munmap((void *)ha, sa);
	munmap((void *)hb, sb);
	pktmap_close(a);
	pktmap_close(b);
	CHECK(access(path_a, F_OK) != 0, "%s removed at close", path_a);
	CHECK(access(path_b, F_OK) != 0, "%s removed at close", path_b);
	return t_done("pub");
}
