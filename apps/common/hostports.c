/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Reading the published counters (src/pub.h). A file is another user's
 * writing when root reads it, and its owner can change it while we read
 * it. So each file is copied once, whole, into private memory (each
 * 64-bit word loaded once: no counter is torn), and only the copy is
 * checked and used: no value is read twice from the shared file. A file
 * its owner truncates while we copy it raises SIGBUS, which is caught and
 * the file skipped. Nothing in the copy is trusted (sizes and offsets
 * checked, strings cut at their field), and what one owner's files can
 * cost a scan is bounded (hostports.h: HP_USER_*), a file of many names
 * read once.
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
#include "util.h"

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
uint64_t hp_proc_start(int pid, unsigned uid)
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
 * file? h is our private copy. Returns the number of rings, or -1. */
static int hdr_check(const struct pm_pub_hdr *h, size_t fsize)
{
	if (h->magic != PM_PUB_MAGIC || h->version != PM_PUB_VERSION ||
	    h->size > fsize || h->ring_ofs < sizeof(*h) || h->ring_ofs % 64)
		return -1;
	uint64_t n = (uint64_t)h->ntx + h->nhtx + h->nrx + h->nhrx;
	if (n > PM_PUB_MAX_RINGS ||
	    h->ring_ofs + n * sizeof(struct pm_ring_stats) > h->size)
		return -1;
	return (int)n;
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

int hp_parse(const void *buf, size_t size, struct hp_port *p)
{
	struct pm_pub_hdr h;
	if (size < sizeof(h))
		return -1;
	memcpy(&h, buf, sizeof(h)); /* buf need not be aligned (fuzzing) */
	int n = hdr_check(&h, size);
	if (n < 0)
		return -1;
	p->rings = calloc(n ? (size_t)n : 1, sizeof(*p->rings));
	if (!p->rings)
		return -1;
	p->nrings = (uint32_t)n;
	p->pid = h.pid;
	p->uid = h.uid;
	p->open_sec = h.open_sec;
	p->start_ticks = h.start_ticks;
	p->broker = h.flags & PM_PUB_F_BROKER;
	field(p->name, sizeof(p->name), h.name, sizeof(h.name));
	field(p->mode, sizeof(p->mode), h.mode, sizeof(h.mode));
	field(p->backend, sizeof(p->backend), h.backend, sizeof(h.backend));
	field(p->region, sizeof(p->region), h.region, sizeof(h.region));
	field(p->comm, sizeof(p->comm), h.comm, sizeof(h.comm));
	field(p->cmdline, sizeof(p->cmdline), h.cmdline, sizeof(h.cmdline));
	program_of(p->program, sizeof(p->program), p->cmdline);
	p->port = h.port;
	const char *rs = (const char *)buf + h.ring_ofs;
	for (int i = 0; i < n; i++) {
		ring_place(&h, (uint32_t)i, &p->rings[i]);
		memcpy(&p->rings[i].c, rs + (size_t)i * sizeof(struct pm_ring_stats),
		       sizeof(p->rings[i].c));
	}
	add_totals(p);
	return 0;
}

/* Copy the file `fd` (size bytes, at most PM_PUB_MAX_SIZE) into buf, one
 * 64-bit load per word (the counters are written whole: none is torn).
 * SIGBUS (the owner truncated it) fails it. Returns 0 or -1. */
static int file_copy(int fd, size_t size, uint64_t *buf)
{
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	/* Whole words: the mapping covers whole pages, so the word holding
	 * the last byte is mapped even when size is not a multiple of 8. */
	size_t words = (size + 7) / 8;
	const uint64_t *src = m;
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	int ret = -1;
	if (sigsetjmp(bus_jmp, 1) == 0) {
		bus_armed = 1;
		for (size_t i = 0; i < words; i++)
			buf[i] = atomic_load_explicit(PM_ATOMIC(&src[i]),
						      memory_order_relaxed);
		ret = 0;
	}
	bus_armed = 0;
	sigaction(SIGBUS, &old, NULL);
	munmap(m, size);
	return ret;
}

/* What one owner's files have cost this scan (hostports.h). */
struct hp_user {
	unsigned uid, dirs, names, ports, rings;
	uint64_t bytes;
};

#define HP_MAX_USERS 1024u

/* One scan: the list, its bounds, the files already read (by device and
 * inode: a file of many names is read once), the private copy. */
struct hp_ctx {
	struct hp_list *l;
	unsigned cap;
	struct hp_user *users;
	unsigned nusers;
	unsigned ports, rings;
	uint64_t bytes;
	struct { dev_t dev; ino_t ino; } *seen;
	size_t nseen, seen_cap;  /* seen_cap: a power of two, or 0 */
	uint64_t *copy;          /* PM_PUB_MAX_SIZE bytes */
};

/* The budget of uid, made on first use; NULL when too many owners. */
static struct hp_user *user_of(struct hp_ctx *c, unsigned uid)
{
	for (unsigned i = 0; i < c->nusers; i++)
		if (c->users[i].uid == uid)
			return &c->users[i];
	if (c->nusers == HP_MAX_USERS)
		return NULL;
	struct hp_user *u = &c->users[c->nusers++];
	memset(u, 0, sizeof(*u));
	u->uid = uid;
	return u;
}

static size_t seen_slot(const struct hp_ctx *c, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev;
	size_t i = (size_t)(h >> 17) & (c->seen_cap - 1);
	while ((c->seen[i].dev || c->seen[i].ino) &&
	       (c->seen[i].dev != dev || c->seen[i].ino != ino))
		i = (i + 1) & (c->seen_cap - 1);
	return i;
}

/* Was this file (device, inode) met before in this scan? Remembers it.
 * Returns 1 (met), 0 (new) or -ENOMEM. */
static int seen_before(struct hp_ctx *c, const struct stat *st)
{
	if (2 * (c->nseen + 1) > c->seen_cap) {
		struct hp_ctx grown = *c;
		grown.seen_cap = c->seen_cap ? 2 * c->seen_cap : 256;
		grown.seen = calloc(grown.seen_cap, sizeof(*grown.seen));
		if (!grown.seen)
			return -ENOMEM;
		for (size_t i = 0; i < c->seen_cap; i++)
			if (c->seen[i].dev || c->seen[i].ino)
				grown.seen[seen_slot(&grown, c->seen[i].dev,
						     c->seen[i].ino)] = c->seen[i];
		free(c->seen);
		c->seen = grown.seen;
		c->seen_cap = grown.seen_cap;
	}
	size_t i = seen_slot(c, st->st_dev, st->st_ino);
	if (c->seen[i].dev == st->st_dev && c->seen[i].ino == st->st_ino &&
	    (st->st_dev || st->st_ino))
		return 1;
	c->seen[i].dev = st->st_dev;
	c->seen[i].ino = st->st_ino;
	c->nseen++;
	return 0;
}

static int list_add(struct hp_ctx *c, const struct hp_port *p)
{
	struct hp_list *l = c->l;
	if (l->n == c->cap) {
		unsigned ncap = c->cap ? c->cap * 2 : 16;
		struct hp_port *v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		c->cap = ncap;
	}
	l->v[l->n++] = *p;
	return 0;
}

/* Room to read a file of `size` bytes, of owner u? (Its rings are
 * counted once it is read: rings_fit().) */
static bool within_bounds(const struct hp_ctx *c, const struct hp_user *u,
			  size_t size)
{
	return u->ports < HP_USER_PORTS && c->ports < HP_ALL_PORTS &&
	       u->bytes + size <= HP_USER_BYTES && c->bytes + size <= HP_ALL_BYTES;
}

/* Room for n more rings of owner u? */
static bool rings_fit(const struct hp_ctx *c, const struct hp_user *u, uint32_t n)
{
	return u->rings + n <= HP_USER_RINGS && c->rings + n <= HP_ALL_RINGS;
}

/* Open file fname of directory dfd if it is a counters file of u's that
 * this scan has not met (under another name) and has room for. Returns
 * the descriptor with *st set, -1 to skip it, or -ENOMEM. */
static int file_open(struct hp_ctx *c, struct hp_user *u, int dfd,
		     const char *fname, struct stat *st)
{
	int fd = openat(dfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	int met = 0;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != u->uid ||
	    st->st_size < (off_t)sizeof(struct pm_pub_hdr) ||
	    st->st_size > (off_t)PM_PUB_MAX_SIZE ||
	    (met = seen_before(c, st)) != 0) {
		close(fd);
		return met < 0 ? met : -1;
	}
	if (!within_bounds(c, u, (size_t)st->st_size)) {
		c->l->skipped++;
		close(fd);
		return -1;
	}
	return fd;
}

/* One file of directory dfd (owned by u): read it if its process is
 * alive; if not, remove it when it is ours. Returns 0 or -ENOMEM. */
static int scan_file(struct hp_ctx *c, struct hp_user *u, int dfd,
		     const char *fname)
{
	int pid;
	unsigned seq;
	char end;
	if (sscanf(fname, "%d.%u%c", &pid, &seq, &end) != 2 || pid <= 0)
		return 0;
	struct stat st;
	int fd = file_open(c, u, dfd, fname, &st);
	if (fd < 0)
		return fd == -ENOMEM ? fd : 0;
	/* Alive: the pid runs as the file's owner, and started when the
	 * file says (a reused pid starts later). */
	uint64_t start = hp_proc_start(pid, u->uid);
	struct hp_port p;
	memset(&p, 0, sizeof(p));
	int ok = -1;
	if (start && file_copy(fd, (size_t)st.st_size, c->copy) == 0)
		ok = hp_parse(c->copy, (size_t)st.st_size, &p);
	close(fd);
	if (start) {
		u->bytes += (uint64_t)st.st_size;
		c->bytes += (uint64_t)st.st_size;
	}
	if (!start || (ok == 0 && (p.pid != pid || p.start_ticks != start))) {
		free(p.rings);
		if (u->uid == (unsigned)geteuid())
			unlinkat(dfd, fname, 0);
		return 0;
	}
	if (ok != 0)
		return 0; /* being created, or not a valid file */
	if (!rings_fit(c, u, p.nrings)) {
		free(p.rings);
		c->l->skipped++;
		return 0;
	}
	p.uid = u->uid; /* the file's owner, not what the file says */
	snprintf(p.key, sizeof(p.key), "%u/%s", u->uid, fname);
	int ret = list_add(c, &p);
	if (ret) {
		free(p.rings);
		return ret;
	}
	u->ports++, c->ports++;
	u->rings += p.nrings, c->rings += p.nrings;
	return 0;
}

/* The uid a counters directory's name gives: "pktmap-stats.UID", or
 * "pktmap-stats.UID.SUFFIX" (one its owner made while the first name was
 * taken: src/pub.c). Returns 0 or -1. */
static int dir_uid(const char *dname, unsigned *uid)
{
	const char *s = dname + strlen(PM_PUB_PREFIX);
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || v > 0xffffffffu || (*end && *end != '.'))
		return -1;
	*uid = (unsigned)v;
	return 0;
}

/* A counters directory of /dev/shm (dirfd base), if it is really the
 * directory of the uid its name gives. Returns 0 or -ENOMEM. */
static int scan_dir(struct hp_ctx *c, int base, const char *dname)
{
	unsigned uid;
	if (dir_uid(dname, &uid) != 0 ||
	    (geteuid() != 0 && uid != (unsigned)geteuid()))
		return 0; /* another user's: not ours to show */
	int dfd = openat(base, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	/* Owned by that uid: no one else makes a directory of its ports
	 * (nor costs its owner's bounds below). */
	struct stat st;
	if (fstat(dfd, &st) != 0 || st.st_uid != uid) {
		close(dfd);
		return 0;
	}
	struct hp_user *u = user_of(c, uid);
	DIR *d = NULL;
	if (!u || u->dirs >= HP_USER_DIRS || (d = fdopendir(dfd)) == NULL) {
		c->l->skipped++;
		close(dfd);
		return 0;
	}
	u->dirs++;
	int ret = 0;
	struct dirent *e;
	while (ret == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (u->names++ >= HP_USER_NAMES) {
			c->l->skipped++;
			break;
		}
		ret = scan_file(c, u, dfd, e->d_name);
	}
	closedir(d);
	/* Ours and empty now (the files of dead processes removed): gone
	 * too, as the library does when a user's last port closes. A
	 * directory of another name (made while this one was taken) stays. */
	char own[32];
	snprintf(own, sizeof(own), "%s%u", PM_PUB_PREFIX, uid);
	if (uid == (unsigned)geteuid() && strcmp(dname, own) == 0)
		unlinkat(base, dname, AT_REMOVEDIR);
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
	memset(l, 0, sizeof(*l));
	struct hp_ctx c = { .l = l };
	c.users = malloc(HP_MAX_USERS * sizeof(*c.users));
	c.copy = malloc(PM_PUB_MAX_SIZE);
	DIR *d = c.users && c.copy ? opendir(PM_PUB_DIR) : NULL;
	int ret = c.users && c.copy ? 0 : -ENOMEM;
	struct dirent *e;
	while (d && ret == 0 && (e = readdir(d)) != NULL)
		if (strncmp(e->d_name, PM_PUB_PREFIX, strlen(PM_PUB_PREFIX)) == 0)
			ret = scan_dir(&c, dirfd(d), e->d_name);
	if (d)
		closedir(d);
	free(c.users);
	free(c.copy);
	free(c.seen);
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
	l->skipped = 0;
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
