// SPDX-License-Identifier: BSD-2-Clause
/*
 * Names that belong to their owner: the per-user directory.
 *
 * /dev/shm is writable by everyone, so any user can create
 * /dev/shm/pktmap.NAME before its owner does and block the name. The
 * files of a region nobody else is invited to (its rendezvous, its pipes'
 * wake-up FIFOs) and the switch's socket therefore live in
 * /dev/shm/pktmap-UID/, a directory of mode 0700 owned by UID: nobody
 * else can create, rename or remove an entry in it, and since /dev/shm
 * is sticky, nobody else can rename or remove the directory itself.
 *
 * Only the directory's own name can be taken first. A directory (or
 * file, or link) of that name that is not UID's 0700 directory is a
 * squatter's: root (whose directory it is) moves it out of the way, or
 * removes it if it is not a directory, and makes its own. Any other user
 * cannot move another user's entry, so it uses a directory of another
 * name, /dev/shm/pktmap-UID.XXXXXX (random, made with mkdtemp): every
 * process of UID finds the same one again with no record to keep, since
 * only UID can make a directory that UID owns, by taking the first (by
 * name) of those that are UID's 0700 directories. Once such a directory
 * exists it is used even if the squatter gives the name back, so that
 * processes that looked before and after agree.
 * Regions shared on purpose (@conf:share=) live in the invited group's
 * directory, where its members find them (groupdir.c).
 *
 * The directory of a user's published counters, /dev/shm/pktmap-stats.UID
 * (src/pub.c), is taken back from a squatter the same way
 * (pm_owned_dir()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "region.h"

#define PM_SHM "/dev/shm"

int pm_uid_map_outside(const char *map, uint32_t uid, uint32_t *out)
{
	/* Lines "INSIDE OUTSIDE COUNT" (user_namespaces(7)). */
	const char *s = map;
	while (*s) {
		unsigned long v[3];
		for (int i = 0; i < 3; i++) {
			while (*s == ' ')
				s++;
			if (*s < '0' || *s > '9')
				return -EINVAL;
			char *end;
			errno = 0;
			v[i] = strtoul(s, &end, 10);
			if (errno || v[i] > UINT32_MAX)
				return -EINVAL;
			s = end;
		}
		while (*s == ' ')
			s++;
		if (*s == '\n')
			s++;
		else if (*s)
			return -EINVAL;
		if (uid >= v[0] && uid - v[0] < v[2]) {
			uint64_t o = (uint64_t)v[1] + (uid - v[0]);
			if (o > UINT32_MAX)
				return -EINVAL;
			*out = (uint32_t)o;
			return 0;
		}
	}
	return -ENOENT;
}

unsigned pm_name_uid(void)
{
	/* Cached (per thread: no sharing) with the euid it was found for:
	 * a process that changes its uid (a root child that becomes
	 * nobody) looks again. */
	static __thread bool valid;
	static __thread uint32_t for_euid, name_uid;
	uint32_t uid = (uint32_t)geteuid(), out = uid;
	if (valid && for_euid == uid)
		return name_uid;
	char map[1024];
	int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, map, sizeof(map) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		map[n] = 0;
		if (pm_uid_map_outside(map, uid, &out) != 0)
			out = uid;
	}
	for_euid = uid;
	name_uid = out;
	valid = true;
	return out;
}

/* Is st the caller's own private directory? */
static bool dir_is_ours(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == geteuid() &&
	       (st->st_mode & 0077) == 0;
}

/* Root only: take the name back from a squatter. A directory is renamed
 * out of the way (its contents are its owner's business, not removed
 * by root), anything else is unlinked; neither follows a link. */
static int evict(const char *path, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode))
		return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
	char aside[160];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(aside, sizeof(aside), "%s.squatted.%ld.%ld", path,
		 (long)getpid(), (long)ts.tv_nsec);
	return rename(path, aside) == 0 || errno == ENOENT ? 0 : -errno;
}

static bool ours_ok(const struct stat *st, uint32_t arg)
{
	(void)arg;
	return dir_is_ours(st);
}

/* The first (by name) of our 0700 directories /dev/shm/BASEUID.*, into
 * out; false when there is none. */
static bool find_spare(const char *base, unsigned uid, char *out, size_t len)
{
	char prefix[48];
	snprintf(prefix, sizeof(prefix), "%s%u.", base, uid);
	return pm_shm_first(prefix, ours_ok, 0, out, len);
}

bool pm_shm_first(const char *prefix,
		  bool (*ok)(const struct stat *st, uint32_t arg), uint32_t arg,
		  char *out, size_t len)
{
	DIR *d = opendir(PM_SHM);
	if (!d)
		return false;
	char best[NAME_MAX + 1] = "";
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !ok(&st, arg))
			continue;
		if (!best[0] || strcmp(e->d_name, best) < 0)
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(d);
	if (!best[0])
		return false;
	int n = snprintf(out, len, PM_SHM "/%s", best);
	return n > 0 && (size_t)n < len;
}

/* Not root, and our name is another user's: use (or make) a directory of
 * our own under a random name. Two processes making one at once both
 * end up with the first by name; the other, empty, is removed. */
static int spare_dir(const char *base, unsigned uid, const struct stat *squat,
		     char *out, size_t len, char *err, size_t errlen)
{
	if (find_spare(base, uid, out, len))
		return 0;
	char tmpl[80];
	snprintf(tmpl, sizeof(tmpl), PM_SHM "/%s%u.XXXXXX", base, uid);
	if (!mkdtemp(tmpl)) {
		int e = errno;
		snprintf(err, errlen, "%s belongs to uid %u, not to you (uid %u), "
			 "and no directory of your own can be made in its place: "
			 "%s", out, (unsigned)squat->st_uid, uid, strerror(e));
		return -e;
	}
	if (!find_spare(base, uid, out, len)) {
		snprintf(err, errlen, "%s vanished as it was made", tmpl);
		return -EAGAIN;
	}
	if (strcmp(out, tmpl) != 0)
		rmdir(tmpl);
	return 0;
}

int pm_owned_dir(const char *base, char *out, size_t len, char *err,
		 size_t errlen)
{
	/* Named by the uid outside any user namespace (pm_name_uid()):
	 * root of a namespace mapped to nobody is nobody here, and its
	 * directory is nobody's, not root's. Ownership is checked against
	 * geteuid(), the same uid as this namespace sees it. */
	unsigned uid = pm_name_uid();
	int n = snprintf(out, len, PM_SHM "/%s%u", base, uid);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	/* A squatter's entry moved aside counts as a try (4); our own
	 * directory removed as we made it (another process of ours dropped
	 * it, empty, with its last file: pm_user_dir_drop()) does not, up
	 * to a bound no pair of processes loses to in practice, even with
	 * every core busy opening and closing. */
	int vanished = 0;
	for (int tries = 0; tries < 4; tries++) {
		struct stat st;
		/* No directory of ours by its name: a directory of ours of
		 * another name, made while the name was taken, comes first. */
		if (uid != 0 && lstat(out, &st) != 0 && errno == ENOENT &&
		    find_spare(base, uid, out, len))
			return 0;
		if (mkdir(out, 0700) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", out,
				 strerror(errno));
			return -errno;
		}
		if (lstat(out, &st) != 0) {
			if (errno == ENOENT && ++vanished < 1000) {
				tries--; /* removed under us: again */
				continue;
			}
			snprintf(err, errlen, "cannot stat %s: %s", out,
				 strerror(errno));
			return -errno;
		}
		if (dir_is_ours(&st))
			return 0;
		if (S_ISDIR(st.st_mode) && st.st_uid == uid) {
			/* Ours, with a mode someone relaxed: each entry is
			 * still checked when it is opened; close it again. */
			if (chmod(out, 0700) == 0)
				return 0;
		} else if (uid == 0) {
			int ret = evict(out, &st);
			if (ret == 0)
				continue;
			snprintf(err, errlen, "%s belongs to uid %u, and it cannot "
				 "be moved away: %s", out, (unsigned)st.st_uid,
				 strerror(-ret));
			return ret;
		}
		if (uid != 0)
			return spare_dir(base, uid, &st, out, len, err, errlen);
	}
	snprintf(err, errlen, "%s keeps being replaced by another user", out);
	return -EAGAIN;
}

int pm_user_dir(char *out, size_t len, char *err, size_t errlen)
{
	return pm_owned_dir("pktmap-", out, len, err, errlen);
}

PKTMAP_EXPORT int pktmap_user_dir(char *out, size_t len, char *errbuf,
				  size_t errlen)
{
	char err[300];
	int ret = pm_user_dir(out, len, err, sizeof(err));
	if (ret && errbuf && errlen)
		snprintf(errbuf, errlen, "%s", err);
	return ret;
}
