/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub's published counters (scrubpub.h): written by the scrub,
 * read by top and metrics.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostports.h"
#include "scrub.h"
#include "scrubpub.h"

const char *sp_reason_name(uint32_t k)
{
	static const char *const other[] = {"reason18", "reason19",
		"reason20", "reason21", "reason22", "reason23"};

	if (k < SCRUB_NREASONS)
		return scrub_reason_name((int)k);
	if (k - SCRUB_NREASONS < sizeof(other) / sizeof(other[0]))
		return other[k - SCRUB_NREASONS];
	return "other";
}

/* End s (len bytes) inside its field and make it printable: it goes to
 * root's terminal (top) and to metric labels. */
static void clean(char *s, size_t len)
{
	s[len - 1] = 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

int sp_parse(const void *buf, size_t size, struct sp_proc *p)
{
	const struct sp_hdr *h = buf;
	const uint8_t *b = buf;
	size_t want;

	memset(p, 0, sizeof(*p));
	if (size < sizeof(*h) || size > SP_MAX_SIZE)
		return -1;
	memcpy(&p->h, h, sizeof(p->h));
	if (p->h.magic != SP_MAGIC || p->h.version != SP_VERSION ||
	    p->h.size != size || p->h.nreasons > SP_MAX_REASONS ||
	    p->h.nrules > SP_MAX_RULES)
		return -1;
	want = sizeof(*h) + (size_t)p->h.nreasons * 8 +
	       (size_t)p->h.nrules * sizeof(struct sp_rule);
	if (want != size)
		return -1;
	clean(p->h.in, sizeof(p->h.in));
	clean(p->h.out, sizeof(p->h.out));
	memcpy(p->reason, b + sizeof(*h), (size_t)p->h.nreasons * 8);
	p->rule = calloc(p->h.nrules ? p->h.nrules : 1, sizeof(*p->rule));
	if (!p->rule)
		return -1;
	memcpy(p->rule, b + sizeof(*h) + (size_t)p->h.nreasons * 8,
	       (size_t)p->h.nrules * sizeof(*p->rule));
	for (uint32_t i = 0; i < p->h.nrules; i++)
		clean(p->rule[i].text, sizeof(p->rule[i].text));
	return 0;
}

void sp_free(struct sp_list *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i].rule);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Read file fd (size bytes, at most SP_MAX_SIZE) into buf: 0 or -1. */
static int read_all(int fd, uint8_t *buf, size_t size)
{
	size_t n = 0;

	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);

		if (r <= 0)
			return -1;
		n += (size_t)r;
	}
	return 0;
}

/* One file "pktmap-scrub.UID.PID" of /dev/shm (dirfd dfd). Returns 0 or
 * -ENOMEM. */
static int scan_one(struct sp_list *l, int dfd, const char *name, uint8_t *buf)
{
	unsigned uid;
	int pid;
	char end;
	struct stat st;

	if (sscanf(name + strlen(SP_PREFIX), "%u.%d%c", &uid, &pid, &end) != 2 ||
	    pid <= 0 || (geteuid() != 0 && uid != (unsigned)geteuid()))
		return 0;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    st.st_size < (off_t)sizeof(struct sp_hdr) ||
	    st.st_size > (off_t)SP_MAX_SIZE) {
		close(fd);
		return 0;
	}
	uint64_t start = hp_proc_start(pid, uid);
	struct sp_proc p;
	int ok = start && read_all(fd, buf, (size_t)st.st_size) == 0 ?
		 sp_parse(buf, (size_t)st.st_size, &p) : -1;

	close(fd);
	if (!start) {
		if (uid == (unsigned)geteuid())
			unlinkat(dfd, name, 0); /* its scrub is gone */
		return 0;
	}
	if (ok)
		return 0;
	if (p.h.pid != pid || p.h.start_ticks != start) {
		free(p.rule);
		return 0;
	}
	p.h.uid = uid; /* the file's owner, not what it says */
	struct sp_proc *v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v) {
		free(p.rule);
		return -ENOMEM;
	}
	l->v = v;
	l->v[l->n++] = p;
	return 0;
}

int sp_scan(struct sp_list *l)
{
	DIR *d = opendir(SP_DIR);
	uint8_t *buf = malloc(SP_MAX_SIZE);
	struct dirent *e;
	int rc = 0;

	l->v = NULL;
	l->n = 0;
	if (!buf) {
		if (d)
			closedir(d);
		return -ENOMEM;
	}
	while (d && rc == 0 && l->n < SP_MAX_FILES && (e = readdir(d)))
		if (!strncmp(e->d_name, SP_PREFIX, strlen(SP_PREFIX)))
			rc = scan_one(l, dirfd(d), e->d_name, buf);
	if (d)
		closedir(d);
	free(buf);
	if (rc)
		sp_free(l);
	return rc;
}

static void my_path(char *out, size_t len, bool tmp)
{
	snprintf(out, len, "%s/%s%s%u.%d", SP_DIR, tmp ? "." : "", SP_PREFIX,
		 (unsigned)geteuid(), (int)getpid());
}

int sp_write(const void *image, size_t size)
{
	char tmp[128], path[128];
	const uint8_t *b = image;
	size_t n = 0;
	int fd, rc = 0;

	my_path(tmp, sizeof(tmp), true);
	my_path(path, sizeof(path), false);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (n < size && rc == 0) {
		ssize_t w = write(fd, b + n, size - n);

		if (w <= 0)
			rc = w < 0 ? -errno : -EIO;
		else
			n += (size_t)w;
	}
	close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

void sp_remove(void)
{
	char path[128];

	my_path(path, sizeof(path), false);
	unlink(path);
}
