// SPDX-License-Identifier: BSD-2-Clause
/*
 * Bounds before allocation: how much memory an open may still ask for.
 *
 * A port name's @conf: values are each in range, but together they can
 * ask for more memory than the process or the machine has (rings=64,
 * slots=65536 is 32 GiB of buffers). Mapping that with MAP_POPULATE gets
 * the process OOM-killed, and a kill leaves its files behind. So every
 * open adds up what it will map (the region, its private rings) and asks
 * here first: the answer is the least of
 *   - what the machine has free (MemAvailable, or HugePages_Free),
 *   - the room left in the memory cgroup and each of its ancestors
 *     (cgroup v2 memory.max - memory.current, v1 limit - usage),
 *   - RLIMIT_AS less what the process has mapped already,
 *   - for memory the kernel pins (an AF_XDP UMEM), RLIMIT_MEMLOCK unless
 *     the process has CAP_IPC_LOCK,
 * and which of them it was, for the one-line error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "region.h"

#define ROOM_UNLIMITED UINT64_MAX

struct room {
	uint64_t bytes;
	const char *why;
};

static void room_min(struct room *r, uint64_t bytes, const char *why)
{
	if (bytes < r->bytes) {
		r->bytes = bytes;
		r->why = why;
	}
}

/* The value after `key` (in kB) in /proc/meminfo, in bytes; or
 * ROOM_UNLIMITED when the line is missing. */
static uint64_t meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return ROOM_UNLIMITED;
	char line[128];
	unsigned long long v = 0;
	uint64_t ret = ROOM_UNLIMITED;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == ':' &&
		    sscanf(line + kl + 1, "%llu", &v) == 1) {
			ret = (uint64_t)v * 1024;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* One number from a file ("max" and unreadable files: unlimited). */
static uint64_t read_u64(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return ROOM_UNLIMITED;
	unsigned long long v;
	int ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	return ok ? (uint64_t)v : ROOM_UNLIMITED;
}

/* The room left in cgroup directory `dir` and every ancestor up to
 * `top`: limit - usage, the least of them. */
static void cgroup_room(struct room *r, char *dir, size_t top,
			const char *limit, const char *usage)
{
	for (;;) {
		char lp[600], up[600];
		snprintf(lp, sizeof(lp), "%s/%s", dir, limit);
		snprintf(up, sizeof(up), "%s/%s", dir, usage);
		uint64_t lim = read_u64(lp), use = read_u64(up);
		/* v1 says "no limit" with a huge number. */
		if (lim != ROOM_UNLIMITED && lim < ((uint64_t)1 << 60))
			room_min(r, use < lim && use != ROOM_UNLIMITED ? lim - use : 0,
				 "the memory cgroup's limit");
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < top)
			break;
		*slash = 0;
	}
}

/* The process's memory cgroup, v2 or v1 (from /proc/self/cgroup). */
static void cgroup_rooms(struct room *r)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	char line[512], dir[600];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		const char *ctrl = c1 + 1, *path = c2 + 1;
		if (*ctrl == 0) { /* v2: "0::/path" */
			int n = snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", path);
			if (n > 0 && (size_t)n < sizeof(dir))
				cgroup_room(r, dir, strlen("/sys/fs/cgroup"),
					    "memory.max", "memory.current");
		} else if (strstr(ctrl, "memory")) { /* v1 */
			int n = snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s",
					 path);
			if (n > 0 && (size_t)n < sizeof(dir))
				cgroup_room(r, dir, strlen("/sys/fs/cgroup/memory"),
					    "memory.limit_in_bytes",
					    "memory.usage_in_bytes");
		}
	}
	fclose(f);
}

/* Does the process have CAP_IPC_LOCK (bit 14 of CapEff)? */
static bool cap_ipc_lock(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	char line[128];
	unsigned long long caps = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return (caps >> 14) & 1;
}

/* What RLIMIT_AS still allows: the limit less what is mapped now. */
static void as_room(struct room *r)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%llu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	uint64_t used = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	room_min(r, used < rl.rlim_cur ? (uint64_t)rl.rlim_cur - used : 0,
		 "RLIMIT_AS (ulimit -v)");
}

static void human(char *out, size_t len, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(out, len, "%.1f GiB", (double)b / (1ull << 30));
	else
		snprintf(out, len, "%.1f MiB", (double)b / (1ull << 20));
}

int pm_mem_check(uint64_t want, bool huge, bool pinned, char *err,
		 size_t errlen)
{
	struct room r = { ROOM_UNLIMITED, NULL };
	if (huge)
		room_min(&r, meminfo("HugePages_Free") / 1024 *
				     meminfo("Hugepagesize"),
			 "free hugepages (/proc/sys/vm/nr_hugepages)");
	else
		room_min(&r, meminfo("MemAvailable"), "the machine's free memory");
	cgroup_rooms(&r);
	as_room(&r);
	if (pinned && !cap_ipc_lock()) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY)
			room_min(&r, rl.rlim_cur, "RLIMIT_MEMLOCK (ulimit -l)");
	}
	if (want <= r.bytes)
		return 0;
	char w[32], f[32];
	human(w, sizeof(w), want);
	human(f, sizeof(f), r.bytes);
	snprintf(err, errlen, "needs %s of memory but %s fit (%s): ask for fewer "
		 "rings, slots or bufs in @conf:", w, f, r.why);
	return -ENOMEM;
}
