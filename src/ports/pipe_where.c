/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Pipes by name in any memory (pipe.c's open asks pm_pipe_where()). A
 * pipe made in a region other than its own, pipe.NAME (lb makes its
 * output pipes in its input port's memory, "@mem:"), leaves a locator in
 * the user directory: the symbolic link .pipe.NAME{ID, whose target is
 * that region's name. An end opened by name looks there first, so that
 * it joins the pipe its other end made, in that memory (zero-copy with
 * everything else in it). The directory is ours alone (0700), so nobody
 * else plants a locator; a stale one (its region gone, or no such pipe
 * in it) is ignored and replaced, and the region's last user removes the
 * locators naming it (region.c).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipe.h"

static int locator_path(char *out, size_t len, const struct pm_name *nm)
{
	char dir[64], err[300];
	if (pm_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0)
		return -1;
	int n = snprintf(out, len, "%s/.pipe.%s{%d", dir, nm->body, nm->pipe_id);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Is there a file of ours at path (a region, or with link a locator)? */
static bool ours(const char *path, bool link)
{
	struct stat st;
	return lstat(path, &st) == 0 && st.st_uid == geteuid() &&
	       (link ? S_ISLNK(st.st_mode) : S_ISREG(st.st_mode));
}

/* Point the locator of nm's pipe at region regname ("": remove it). */
void pm_pipe_locator_set(const struct pm_name *nm, const char *regname)
{
	char path[200];
	if (locator_path(path, sizeof(path), nm) != 0)
		return;
	if (ours(path, true))
		unlink(path);
	if (regname[0])
		(void)symlink(regname, path);
}

/* Does region `name` (a file of ours) hold object `key`? */
static bool region_holds(const char *name, const char *key,
			 const struct pm_region_params *rp)
{
	char dir[64], err[300], path[200];
	if (pm_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pm_region r;
	if (!ours(path, false) || pm_region_open(&r, name, rp, err, sizeof(err)))
		return false;
	size_t size;
	bool found = false;
	if (pm_region_lock(&r) == 0) {
		found = pm_region_lookup(&r, key, &size) != 0;
		pm_region_unlock(&r);
	}
	pm_region_close(&r);
	return found;
}

/* Where the pipe `key` already is, if not in regname: the region its
 * locator names, else pipe.NAME; regname is changed to it. */
static void pipe_find(const struct pm_name *nm, const char *key,
		      const struct pm_region_params *rp, char *regname,
		      size_t len)
{
	char cand[2][64], path[200];
	cand[0][0] = 0;
	if (locator_path(path, sizeof(path), nm) == 0 && ours(path, true)) {
		ssize_t n = readlink(path, cand[0], sizeof(cand[0]) - 1);
		cand[0][n > 0 ? n : 0] = 0;
	}
	snprintf(cand[1], sizeof(cand[1]), "pipe.%s", nm->body);
	for (int i = 0; i < 2; i++) {
		if (!cand[i][0] || strcmp(cand[i], regname) == 0 ||
		    strchr(cand[i], '/') || !region_holds(cand[i], key, rp))
			continue;
		snprintf(regname, len, "%s", cand[i]);
		return;
	}
}

/* Where this end's pipe `key` is, into regname: without @mem:,
 * wherever its other end made it (pipe_find()); with @mem:NAME, in NAME
 * and nowhere else. A pipe of that name and number in another memory is
 * refused, naming both: one name is one pipe, and an end that asked for
 * one memory must not get buffers of another. */
int pm_pipe_where(struct pktmap_port *p, const struct pm_name *nm,
		  const char *key, const struct pm_region_params *rp,
		  char *regname, size_t len)
{
	char found[64];
	snprintf(found, sizeof(found), "%s", regname);
	pipe_find(nm, key, rp, found, sizeof(found));
	if (strcmp(found, regname) == 0)
		return 0;
	if (!nm->conf.region[0]) {
		snprintf(regname, len, "%s", found);
		return 0;
	}
	if (region_holds(regname, key, rp))
		return 0;
	return pm_open_error(p, -EEXIST,
			     "pipe %s%c%d exists in memory '%s', not in '%s' "
			     "(@mem:%s): open it with @mem:%s or with no @mem:, "
			     "or use another pipe name", nm->body,
			     nm->reg == NR_REG_PIPE_SLAVE ? '}' : '{',
			     nm->pipe_id, found, regname, regname, found);
}

