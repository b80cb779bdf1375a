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
 * removes it if it is not a directory, and makes its own; any other user
 * gets a one-line error naming the squatter (the remedy is root's).
 * Regions shared on purpose (@conf:share=) stay in /dev/shm itself, where
 * the invited group can find them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define PM_SHM "/dev/shm"

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

int pm_user_dir(char *out, size_t len, char *err, size_t errlen)
{
	unsigned uid = (unsigned)geteuid();
	int n = snprintf(out, len, PM_SHM "/pktmap-%u", uid);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	for (int tries = 0; tries < 4; tries++) {
		struct stat st;
		if (mkdir(out, 0700) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", out,
				 strerror(errno));
			return -errno;
		}
		if (lstat(out, &st) != 0) {
			if (errno == ENOENT)
				continue; /* removed under us: again */
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
		snprintf(err, errlen, "%s belongs to uid %u, not to you (uid %u): "
			 "another user made it to block your pipes and regions; "
			 "ask root to remove it", out, (unsigned)st.st_uid, uid);
		return -EPERM;
	}
	snprintf(err, errlen, "%s keeps being replaced by another user", out);
	return -EAGAIN;
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
