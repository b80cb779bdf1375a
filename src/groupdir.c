// SPDX-License-Identifier: BSD-2-Clause
/*
 * Names a group finds: the directory of the regions shared with a group.
 *
 * A region shared on purpose (@conf:share=group:G) must be found by every
 * member of G by its name alone, so its rendezvous and its pipes' wake-up
 * FIFOs cannot live in the owner's 0700 directory (userdir.c). They used
 * to sit in /dev/shm itself, where anyone can create a name first: a user
 * outside G who made /dev/shm/pktmap.pipe.foo stopped every member's
 * pipe:foo@conf:share=group:G. They now live in /dev/shm/pktmap-gG/,
 * a directory of group G, mode 3770 (members create entries, setgid so
 * that entries are G's, sticky so that a member removes only its own),
 * nothing for others.
 *
 * Only a member of G (or root) can make a directory, or anything, whose
 * group is G: that, and no access for others, is what makes a directory
 * trusted, whoever owns it (as pm_file_trusted() trusts a file of G's).
 * The name itself can be taken first by anyone. A squatter's entry there
 * (not a directory of G's) is left alone, by root too: every process,
 * whatever its uid, then uses the first (by name) of the trusted
 * directories /dev/shm/pktmap-gG.XXXXXX, made with a random name when
 * there is none, and keeps to it even if the name is given back (the
 * main name is made only while no such directory exists), so that all
 * the members agree with no record to keep. A directory is made private
 * under a hidden name, given to G, then renamed into place without
 * replacing anything: no process ever sees it half made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "region.h"

#define PM_SHM "/dev/shm"
#define PM_GROUP_DIR_MODE 03770

/* Is st a directory of group gid, nothing for others? */
static bool gdir_trusted(const struct stat *st, uint32_t gid)
{
	return S_ISDIR(st->st_mode) && st->st_gid == gid &&
	       (st->st_mode & 0007) == 0;
}

/* The first (by name) trusted directory /dev/shm/pktmap-gGID.*, into
 * out; false when there is none. */
static bool find_spare(uint32_t gid, char *out, size_t len)
{
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "pktmap-g%u.", gid);
	return pm_shm_first(prefix, gdir_trusted, gid, out, len);
}

/* Make the directory `path` for group gid: private under a hidden name,
 * given to gid with its mode, then renamed to path unless path exists.
 * 0, -EEXIST when path exists (made by another meanwhile, or taken), or
 * -errno with err set. */
static int gdir_make(const char *path, uint32_t gid, char *err, size_t errlen)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), PM_SHM "/.pktmap-g%u.XXXXXX", gid);
	if (!mkdtemp(tmp)) {
		int e = errno;
		snprintf(err, errlen, "cannot create a directory in " PM_SHM
			 ": %s", strerror(e));
		return -e;
	}
	int ret = 0;
	int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, (uid_t)-1, (gid_t)gid) != 0 ||
	    fchmod(fd, PM_GROUP_DIR_MODE) != 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot give a directory to group %u: %s%s",
			 gid, strerror(errno), errno == EPERM ?
			 " (share with a group you are in)" : "");
	} else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
		ret = errno == EEXIST ? -EEXIST : -errno;
		if (ret != -EEXIST)
			snprintf(err, errlen, "cannot create %s: %s", path,
				 strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (ret)
		rmdir(tmp);
	return ret;
}

/* The name is a squatter's: use the first trusted spare, or make one. Two
 * processes making one at once both end up with the first by name; the
 * other, empty, is removed. */
static int spare_dir(uint32_t gid, const char *main_path, char *out,
		     size_t len, char *err, size_t errlen)
{
	if (find_spare(gid, out, len))
		return 0;
	char want[64];
	snprintf(want, sizeof(want), PM_SHM "/pktmap-g%u.XXXXXX", gid);
	/* A random name: mkstemp's letters, by way of a file we remove. */
	int fd = mkstemp(want);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s is not a directory of group %u (another "
			 "user's?), and no other can be made: %s", main_path,
			 gid, strerror(e));
		return -e;
	}
	close(fd);
	unlink(want);
	int ret = gdir_make(want, gid, err, errlen);
	if (ret && ret != -EEXIST)
		return ret;
	if (!find_spare(gid, out, len)) {
		snprintf(err, errlen, "%s vanished as it was made", want);
		return -EAGAIN;
	}
	if (ret == 0 && strcmp(out, want) != 0)
		rmdir(want);
	return 0;
}

int pm_group_dir(uint32_t gid, char *out, size_t len, char *err, size_t errlen)
{
	char main_path[64];
	snprintf(main_path, sizeof(main_path), PM_SHM "/pktmap-g%u", gid);
	/* Each round either returns or lost a race with a member that
	 * removed the directory, empty, with its last file: bounded, never
	 * lost that often even with every core busy. */
	for (int tries = 0; tries < 1000; tries++) {
		struct stat st;
		int n = snprintf(out, len, "%s", main_path);
		if (n < 0 || (size_t)n >= len)
			return -ENAMETOOLONG;
		if (lstat(out, &st) == 0) {
			if (gdir_trusted(&st, gid)) {
				/* ours, with a mode someone relaxed: close it
				 * again (entries are checked at open anyway) */
				if (st.st_uid == geteuid() &&
				    (st.st_mode & 07777) != PM_GROUP_DIR_MODE)
					(void)chmod(out, PM_GROUP_DIR_MODE);
				return 0;
			}
			return spare_dir(gid, main_path, out, len, err, errlen);
		}
		if (errno != ENOENT) {
			snprintf(err, errlen, "cannot stat %s: %s", out,
				 strerror(errno));
			return -errno;
		}
		/* No directory by its name: one made while the name was
		 * taken comes first. */
		if (find_spare(gid, out, len))
			return 0;
		int ret = gdir_make(main_path, gid, err, errlen);
		if (ret && ret != -EEXIST)
			return ret;
		/* made, or made (or taken) by another meanwhile: look again */
	}
	snprintf(err, errlen, "%s keeps being replaced", main_path);
	return -EAGAIN;
}

void pm_group_dir_drop(const char *dir, uint32_t gid)
{
	/* Only the directory of the group's own name, as the user's
	 * (util.c): a spare stays, so that every member keeps finding the
	 * same one. Not empty, or not ours (sticky /dev/shm): nothing. */
	char own[64];
	snprintf(own, sizeof(own), PM_SHM "/pktmap-g%u", gid);
	if (strcmp(dir, own) == 0)
		rmdir(dir);
}
