/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Reading the published counters (src/pub.h). A file is another user's
 * writing when root reads it: nothing in it is trusted (sizes and offsets
 * checked, strings cut at their field), and a file its owner truncates
 * while we read it raises SIGBUS, which is caught and the file skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostports.h"

#define HP_MAX_FILE (1u << 20)

/* SIGBUS while copying out of a mapping: the file shrank under us. */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void on_sigbus(int sig)
{
	if (bus_armed)
		siglongjmp(bus_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The start time of process pid (see pm_pub_parse_start), or 0 when it
 * does not exist or does not run as uid (a file of one user cannot speak
 * for another user's process). */
static uint64_t proc_start(int pid, unsigned uid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || st.st_uid != uid) {
		close(fd);
		return 0;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return pm_pub_parse_start(buf);
}

/* When the machine booted (Unix time, /proc/stat's btime), or 0. */
static int64_t boot_time(void)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[256];
	long long bt = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &bt) == 1)
			break;
	if (f)
		fclose(f);
	return bt;
}

/* A string field of the file: cut at its end, anything but printable
 * ASCII replaced (it goes to root's terminal, JSON and metric labels: no
 * escape sequence, C1 control or broken UTF-8 from another user's file). */
static void field(char *dst, size_t len, const char *src, size_t srclen)
{
	size_t n = srclen < len - 1 ? srclen : len - 1, i;
	for (i = 0; i < n && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || (unsigned char)src[i] >= 0x7f ?
				 '?' : src[i];
	dst[i] = 0;
}

/* "tcpdump", or "pktmap switch" for the pktmap command. */
static void program_of(char *out, size_t len, const char *cmdline)
{
	char first[256];
	size_t n = strcspn(cmdline, " ");
	snprintf(first, sizeof(first), "%.*s", (int)n, cmdline);
	const char *base = strrchr(first, '/') ? strrchr(first, '/') + 1 : first;
	const char *rest = cmdline + n + (cmdline[n] == ' ');
	if (strcmp(base, "pktmap") == 0 && *rest)
		snprintf(out, len, "pktmap %.*s", (int)strcspn(rest, " "), rest);
	else
		snprintf(out, len, "%s", base);
}

/* Is the header sane: known magic and version, every ring line inside the
 * file? Returns the number of rings, or -1. */
static int hdr_check(const struct pm_pub_hdr *h, size_t fsize)
{
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != PM_PUB_MAGIC ||
	    h->version != PM_PUB_VERSION || h->size > fsize ||
	    h->ring_ofs < sizeof(*h) || h->ring_ofs % 64)
		return -1;
	uint64_t n = (uint64_t)h->ntx + h->nhtx + h->nrx + h->nhrx;
	if (n > PM_PUB_MAX_RINGS ||
	    h->ring_ofs + n * sizeof(struct pm_ring_stats) > h->size)
		return -1;
	return (int)n;
}

static uint64_t ld(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void copy_counters(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ld(&src[i]);
}

/* Ring i of the file: its kind and whether the port bound it. */
static void ring_place(const struct pm_pub_hdr *h, uint32_t i, struct hp_ring *r)
{
	uint32_t ntx = h->ntx + h->nhtx;
	r->tx = i < ntx;
	uint32_t j = r->tx ? i : i - ntx;
	r->host = r->tx ? j >= h->ntx : j >= h->nrx;
	r->id = r->host ? j - (r->tx ? h->ntx : h->nrx) : j;
	uint32_t lo = r->tx ? h->first_tx : h->first_rx;
	uint32_t hi = r->tx ? h->last_tx : h->last_rx;
	r->bound = lo <= hi && j >= lo && j <= hi;
}

static void add_totals(struct hp_port *p)
{
	for (uint32_t i = 0; i < p->nrings; i++) {
		const struct hp_ring *r = &p->rings[i];
		if (!r->bound)
			continue;
		if (r->tx) {
			p->tx_packets += r->c.packets;
			p->tx_bytes += r->c.bytes;
			p->tx_syncs = r->c.syncs > p->tx_syncs ? r->c.syncs : p->tx_syncs;
		} else {
			p->rx_packets += r->c.packets;
			p->rx_bytes += r->c.bytes;
			p->rx_syncs = r->c.syncs > p->rx_syncs ? r->c.syncs : p->rx_syncs;
		}
		p->drop_invalid += r->c.drop_invalid;
		p->drop_too_long += r->c.drop_too_long;
		p->drop_backend += r->c.drop_backend;
	}
}

/* Copy a checked mapping into p. Returns 0, or -1 when the file is not
 * (or no longer) a valid one. */
static int port_copy(const void *m, size_t fsize, struct hp_port *p)
{
	const struct pm_pub_hdr *h = m;
	int n = hdr_check(h, fsize);
	if (n < 0)
		return -1;
	p->rings = calloc(n ? (size_t)n : 1, sizeof(*p->rings));
	if (!p->rings)
		return -1;
	p->nrings = (uint32_t)n;
	p->pid = h->pid;
	p->uid = h->uid;
	p->open_sec = h->open_sec;
	p->start_ticks = h->start_ticks;
	field(p->name, sizeof(p->name), h->name, sizeof(h->name));
	field(p->mode, sizeof(p->mode), h->mode, sizeof(h->mode));
	field(p->backend, sizeof(p->backend), h->backend, sizeof(h->backend));
	field(p->region, sizeof(p->region), h->region, sizeof(h->region));
	field(p->comm, sizeof(p->comm), h->comm, sizeof(h->comm));
	field(p->cmdline, sizeof(p->cmdline), h->cmdline, sizeof(h->cmdline));
	program_of(p->program, sizeof(p->program), p->cmdline);
	copy_counters((uint64_t *)&p->port, (const uint64_t *)&h->port,
		      sizeof(p->port) / 8);
	const struct pm_ring_stats *rs = (const void *)((const char *)m + h->ring_ofs);
	for (int i = 0; i < n; i++) {
		ring_place(h, (uint32_t)i, &p->rings[i]);
		copy_counters((uint64_t *)&p->rings[i].c, (const uint64_t *)&rs[i],
			      sizeof(rs[i]) / 8);
	}
	add_totals(p);
	return 0;
}

/* Map and copy the file `fd`; SIGBUS (the owner truncated it) fails it. */
static int port_read(int fd, size_t size, struct hp_port *p)
{
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	int ret = -1;
	if (sigsetjmp(bus_jmp, 1) == 0) {
		bus_armed = 1;
		ret = port_copy(m, size, p);
	} else {
		free(p->rings);
		p->rings = NULL;
	}
	bus_armed = 0;
	sigaction(SIGBUS, &old, NULL);
	munmap(m, size);
	return ret;
}

static int list_add(struct hp_list *l, unsigned *cap, const struct hp_port *p)
{
	if (l->n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 16;
		struct hp_port *v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		*cap = ncap;
	}
	l->v[l->n++] = *p;
	return 0;
}

/* One file of directory dfd (owned by uid): read it if its process is
 * alive; if not, remove it when it is ours. Returns 0 or -ENOMEM. */
static int scan_file(int dfd, unsigned uid, const char *fname,
		     struct hp_list *l, unsigned *cap)
{
	int pid;
	unsigned seq;
	char end;
	if (sscanf(fname, "%d.%u%c", &pid, &seq, &end) != 2 || pid <= 0)
		return 0;
	int fd = openat(dfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	struct hp_port p;
	memset(&p, 0, sizeof(p));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    st.st_size < (off_t)sizeof(struct pm_pub_hdr) ||
	    st.st_size > HP_MAX_FILE) {
		close(fd);
		return 0;
	}
	int ok = port_read(fd, (size_t)st.st_size, &p);
	close(fd);
	/* Alive: the pid runs, and started when the file says (a reused
	 * pid starts later). */
	uint64_t start = proc_start(pid, uid);
	bool alive = start && (ok != 0 || (p.pid == pid && p.start_ticks == start));
	if (!alive) {
		free(p.rings);
		if (uid == (unsigned)geteuid())
			unlinkat(dfd, fname, 0);
		return 0;
	}
	if (ok != 0)
		return 0; /* being created, or not a valid file */
	p.uid = uid; /* the file's owner, not what the file says */
	snprintf(p.key, sizeof(p.key), "%u/%s", uid, fname);
	int ret = list_add(l, cap, &p);
	if (ret)
		free(p.rings);
	return ret;
}

/* The directory /dev/shm/pktmap-stats.UID, if it is really uid's. */
static int scan_dir(const char *dname, struct hp_list *l, unsigned *cap)
{
	char *end;
	unsigned long uid = strtoul(dname + strlen(PM_PUB_PREFIX), &end, 10);
	if (*end || end == dname + strlen(PM_PUB_PREFIX))
		return 0;
	if (geteuid() != 0 && uid != (unsigned long)geteuid())
		return 0; /* another user's: not ours to show */
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", PM_PUB_DIR, dname);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0)
		return 0;
	DIR *d = NULL;
	if (fstat(dfd, &st) != 0 || st.st_uid != uid || (d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return 0;
	}
	int ret = 0;
	struct dirent *e;
	while (ret == 0 && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			ret = scan_file(dfd, (unsigned)uid, e->d_name, l, cap);
	closedir(d);
	/* Ours and empty now (the files of dead processes removed): gone
	 * too, as the library does when a user's last port closes. */
	if (uid == (unsigned long)geteuid())
		rmdir(path);
	return ret;
}

static int port_cmp(const void *a, const void *b)
{
	const struct hp_port *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->key, y->key);
}

int hp_scan(struct hp_list *l)
{
	l->v = NULL;
	l->n = 0;
	unsigned cap = 0;
	DIR *d = opendir(PM_PUB_DIR);
	if (!d)
		return 0;
	int ret = 0;
	struct dirent *e;
	while (ret == 0 && (e = readdir(d)) != NULL)
		if (strncmp(e->d_name, PM_PUB_PREFIX, strlen(PM_PUB_PREFIX)) == 0)
			ret = scan_dir(e->d_name, l, &cap);
	closedir(d);
	if (ret) {
		hp_free(l);
		return ret;
	}
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), port_cmp);
	int64_t bt = l->n ? boot_time() : 0;
	long hz = sysconf(_SC_CLK_TCK);
	for (unsigned i = 0; bt && hz > 0 && i < l->n; i++)
		l->v[i].start_sec = bt + (int64_t)(l->v[i].start_ticks / (uint64_t)hz);
	return 0;
}

void hp_free(struct hp_list *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i].rings);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

uint64_t hp_drops(const struct hp_port *p)
{
	return p->drop_invalid + p->drop_too_long + p->drop_backend +
	       p->port.drop_kernel + p->port.drop_nospace + p->port.drop_filtered;
}

const struct hp_port *hp_find(const struct hp_list *l, const struct hp_port *p)
{
	for (unsigned i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, p->key) == 0 &&
		    l->v[i].start_ticks == p->start_ticks)
			return &l->v[i];
	return NULL;
}
