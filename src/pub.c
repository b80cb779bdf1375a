/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Publishing a port's counters (the layout is in pub.h): the page is made
 * when the port's rings are, the port counts into it from then on, and it
 * becomes visible (magic stored) once the open has succeeded. The file is
 * removed at close; a killed process leaves it behind, and readers remove
 * the files of dead processes (pktmap top, pktmap metrics).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "port.h"
#include "pub.h"
#include "region.h"
#include "util.h"

/* Tell files of one process apart: PID.SEQ. */
static _Atomic uint32_t pub_seq;

/* The user's directory, made 0700 if missing, opened. Someone may have
 * made a directory (or anything) of its name first in /dev/shm, which
 * everyone can write: pm_owned_dir() takes the name back (root) or uses
 * a directory of the user's own of another name, as for the region
 * directory (src/userdir.c). Files are made through the descriptor: the
 * directory checked is the one they go in. Returns the descriptor or
 * -errno. */
int pm_pub_dir(char *dir, size_t len)
{
	struct stat st;
	char err[8];
	int ret = pm_owned_dir(PM_PUB_PREFIX, dir, len, err, sizeof(err));
	if (ret)
		return ret;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(dfd);
		return -EPERM;
	}
	return dfd;
}

/* Remove the files of processes that are gone (killed before their
 * close could): a port's open sweeps the directory once. */
static void pub_sweep(int dfd)
{
	int d = dup(dfd);
	DIR *dir = d >= 0 ? fdopendir(d) : NULL;
	if (!dir) {
		if (d >= 0)
			close(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid > 0 && *end == '.' && kill((pid_t)pid, 0) != 0 &&
		    errno == ESRCH)
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(dir);
}

/* Create PID.SEQ in the user's directory. The last port of the user to
 * close removes the directory (pm_pub_close): if that happens between
 * our check and our create, the create fails (ENOENT) and we start over
 * once. Returns the file's descriptor or -errno; p->pub_path is set. */
static int pub_create(struct pktmap_port *p)
{
	char dir[64], name[32];
	snprintf(name, sizeof(name), "%d.%u", (int)getpid(),
		 atomic_fetch_add_explicit(&pub_seq, 1, memory_order_relaxed));
	int fd = -ENOENT;
	for (int attempt = 0; attempt < 2 && fd == -ENOENT; attempt++) {
		int dfd = pm_pub_dir(dir, sizeof(dir));
		if (dfd < 0)
			return dfd;
		if (attempt == 0)
			pub_sweep(dfd);
		const int fl = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
		fd = openat(dfd, name, fl, 0600);
		if (fd < 0 && errno == EEXIST) {
			/* Left by a killed process that had our pid: ours. */
			unlinkat(dfd, name, 0);
			fd = openat(dfd, name, fl, 0600);
		}
		fd = fd < 0 ? -errno : fd;
		close(dfd);
	}
	if (fd >= 0)
		snprintf(p->pub_path, sizeof(p->pub_path), "%s/%s", dir, name);
	return fd;
}

/* The file, sized and mapped. Returns the mapping or NULL (errno set). */
static void *pub_file(struct pktmap_port *p, size_t size)
{
	int fd = pub_create(p);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	void *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) == 0)
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED) {
		unlink(p->pub_path);
		p->pub_path[0] = 0;
		errno = e;
		return NULL;
	}
	return m;
}

int pm_pub_open(struct pktmap_port *p)
{
	uint32_t n = p->ntx + p->nhtx + p->nrx + p->nhrx;
	size_t ring_ofs = PM_PUB_RING_OFS;
	size_t size = ring_ofs + (size_t)n * sizeof(struct pm_ring_stats);
	size = (size + 4095) & ~(size_t)4095;

	void *m = n <= PM_PUB_MAX_RINGS ? pub_file(p, size) : NULL;
	if (!m) {
		pm_log(p, PKTMAP_LOG_DEBUG, "%s: counters not published (%s): "
		       "pktmap top will not show this port", p->name,
		       strerror(errno));
		m = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -ENOMEM;
	}
	p->pub = m;
	p->pub_size = size;
	p->stats = &p->pub->port;
	struct pm_ring_stats *rs = (void *)((char *)m + ring_ofs);
	for (uint32_t i = 0; i < n; i++)
		p->krings[i].st = &rs[i];
	struct pm_pub_hdr *h = p->pub;
	h->version = PM_PUB_VERSION;
	h->size = (uint32_t)size;
	h->ring_ofs = (uint32_t)ring_ofs;
	h->ntx = p->ntx, h->nhtx = p->nhtx, h->nrx = p->nrx, h->nhrx = p->nhrx;
	h->pid = (int32_t)getpid(); /* whose the file is (pm_pub_close) */
	return 0;
}

/* Read a small /proc/self file into buf (NUL-terminated). Returns the
 * bytes read, or 0. */
static size_t read_self(const char *what, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/%s", what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return buf[0] = 0, 0;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	n = n < 0 ? 0 : n;
	buf[n] = 0;
	return (size_t)n;
}

/* Who opened the port: pid, start time, comm, command line. */
static void pub_process(struct pm_pub_hdr *h)
{
	char buf[1024];
	h->pid = (int32_t)getpid();
	h->uid = (uint32_t)geteuid();
	read_self("stat", buf, sizeof(buf));
	h->start_ticks = pm_pub_parse_start(buf);
	read_self("comm", buf, sizeof(buf));
	buf[strcspn(buf, "\n")] = 0;
	pm_printable(h->comm, sizeof(h->comm), buf);
	size_t n = read_self("cmdline", buf, sizeof(buf));
	for (size_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	pm_printable(h->cmdline, sizeof(h->cmdline), buf);
}

void pm_pub_ready(struct pktmap_port *p, const struct pktmap_info *info)
{
	struct pm_pub_hdr *h = p->pub;
	if (!h || !p->pub_path[0])
		return;
	h->first_tx = info->first_tx_ring, h->last_tx = info->last_tx_ring;
	h->first_rx = info->first_rx_ring, h->last_rx = info->last_rx_ring;
	snprintf(h->mode, sizeof(h->mode), "%s", info->mode_name);
	snprintf(h->backend, sizeof(h->backend), "%s", info->backend);
	snprintf(h->region, sizeof(h->region), "%s", info->region);
	snprintf(h->name, sizeof(h->name), "%s", p->name);
	h->open_sec = (int64_t)time(NULL);
	h->flags = p->brokered ? PM_PUB_F_BROKER : 0;
	pub_process(h);
	/* Pairs with the reader's acquire load of magic: a reader that sees
	 * it sees the header above. */
	atomic_store_explicit(PM_ATOMIC(&h->magic), PM_PUB_MAGIC,
			      memory_order_release);
}

void pm_pub_close(struct pktmap_port *p)
{
	/* A child that inherited the port (fork) closes its copy: the file
	 * stays the parent's. */
	if (p->pub_path[0] && p->pub->pid == (int32_t)getpid()) {
		unlink(p->pub_path);
		/* The user's last port takes the directory with it (it is
		 * made again on demand; not empty: nothing happens). */
		*strrchr(p->pub_path, '/') = 0;
		rmdir(p->pub_path);
	}
	if (p->pub)
		munmap(p->pub, p->pub_size);
	p->pub = NULL;
	p->stats = NULL;
}
