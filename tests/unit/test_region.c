// SPDX-License-Identifier: BSD-2-Clause
/* Regions: layout, buffers, joining by name from another process,
 * claims that die with their process, removal by the last user, and by
 * the cleaner of a root process that died without closing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hugepages.h"
#include "region.h"
#include "t.h"
#include "util.h"

/* Give up every capability (root stays uid 0, but can no longer change
 * its uid). */
static bool drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	return syscall(SYS_capset, &h, d) == 0;
}

/* pm_mem_check (bounds.c), each limit it knows, in a child (the limits
 * stay there): free hugepages, RLIMIT_AS, RLIMIT_MEMLOCK without
 * CAP_IPC_LOCK. Each refusal names its limit; each limit is the least
 * room, so the number asked for is what decides. */
static void test_mem_check(void)
{
	char err[300];
	/* 1 TiB: more than this machine's hugepages and its memory; the
	 * message says which limit was read. */
	CHECK(pm_mem_check(1ull << 40, true, false, err, sizeof(err)) == -ENOMEM &&
		      strstr(err, "free hugepages"), "hugepages: %s", err);
	CHECK(pm_mem_check(1ull << 40, false, false, err, sizeof(err)) == -ENOMEM &&
		      strstr(err, "free memory"), "memory: %s", err);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		unsigned long long pages = 0;
		FILE *f = fopen("/proc/self/statm", "re");
		if (!f || fscanf(f, "%llu", &pages) != 1)
			_exit(10);
		fclose(f);
		/* the address space: what is mapped now + 256 MiB (under
		 * ASan, what is mapped is terabytes) */
		uint64_t used = pages * (uint64_t)sysconf(_SC_PAGESIZE);
		struct rlimit rl = { used + (256u << 20), used + (256u << 20) };
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(11);
		bad |= pm_mem_check(128u << 20, false, false, err, sizeof(err)) != 0;
		/* 256 MiB + half of what is mapped: above the room, below
		 * the limit itself */
		bad |= (pm_mem_check((256u << 20) + used / 2, false, false, err,
				     sizeof(err)) != -ENOMEM ||
			!strstr(err, "RLIMIT_AS")) << 1;
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
		setrlimit(RLIMIT_AS, &rl); /* may fail: then AS stays, fine */
		/* memory locked: without CAP_IPC_LOCK, pinned memory only
		 * (a limit of at most 8 MiB: lowering needs no capability) */
		if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
			_exit(12);
		uint64_t L = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (8u << 20) ?
			     8u << 20 : rl.rlim_max;
		if (L < (1u << 20))
			_exit(0); /* too little to tell anything apart */
		rl.rlim_cur = rl.rlim_max = L;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
			_exit(13);
		if (!drop_caps())
			_exit(14);
		bad |= (pm_mem_check(2 * L, false, true, err, sizeof(err)) !=
				-ENOMEM || !strstr(err, "RLIMIT_MEMLOCK")) << 2;
		bad |= (pm_mem_check(L / 2, false, true, err, sizeof(err)) != 0) << 3;
		bad |= (pm_mem_check(2 * L, false, false, err, sizeof(err)) != 0) << 4;
		_exit(bad);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "pm_mem_check child: %#x", WEXITSTATUS(status));
}

/* A process that could change its uid (root) leaves a cleaner: when it
 * dies without closing, and nobody else holds the region, its files go
 * (the deadline only bounds the wait; it asserts no speed). */
static void test_crash_cleaned(const char *name, const char *path,
			       const struct pm_region_params *p)
{
	char err[300];
	pid_t pid = fork();
	if (pid == 0) {
		struct pm_region c;
		_exit(pm_region_open(&c, name, p, err, sizeof(err)) == 0 ? 0 : 2);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "crash child");
	struct stat st;
	for (int i = 0; i < 1000 && stat(path, &st) == 0; i++)
		usleep(10000);
	CHECK(stat(path, &st) != 0, "the dead process's cleaner left %s", path);
}

/* The user's directory goes with its last file, and the next open makes
 * it again: another process of the user can remove it, empty, between
 * our mkdir() and our lstat() (pm_owned_dir()), or between that check
 * and the region's create (region_file()). An open that loses that race
 * goes again, however often (it was: 4 times, then "keeps being replaced
 * by another user"; once in region_file()). The race is played here by
 * the two calls below, which fake the removal `vanish_*` times. */
static int vanish_lstat, vanish_open;
static char vanish_dir[64];

int lstat64(const char *restrict path, struct stat64 *restrict st);
int lstat64(const char *restrict path, struct stat64 *restrict st)
{
	if (vanish_lstat > 0 && strcmp(path, vanish_dir) == 0) {
		vanish_lstat--;
		errno = ENOENT;
		return -1;
	}
	return fstatat64(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int open64(const char *path, int flags, ...);
int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	bool has_mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
	mode_t mode = has_mode ? (mode_t)va_arg(ap, int) : 0;
	va_end(ap);
	size_t n = strlen(vanish_dir);
	if (vanish_open > 0 && (flags & O_CREAT) && n &&
	    strncmp(path, vanish_dir, n) == 0 && path[n] == '/') {
		vanish_open--;
		errno = ENOENT;
		return -1;
	}
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static void test_dir_vanish(void)
{
	char name[64], err[300];
	snprintf(vanish_dir, sizeof(vanish_dir), "/dev/shm/pktmap-%u",
		 pm_name_uid());
	snprintf(name, sizeof(name), "utvan%d", (int)getpid());
	struct pm_region_params p = { .bufs = 64, .buf_size = 2048,
				      .obj_size = 4096 };
	struct pm_region r;
	vanish_lstat = 20;
	CHECK(pm_user_dir(err, sizeof(err), err, sizeof(err)) == 0,
	      "the user directory past 20 removals: %s", err);
	CHECK_EQ(vanish_lstat, 0);
	vanish_open = 20;
	CHECK(pm_region_open(&r, name, &p, err, sizeof(err)) == 0,
	      "a region past 20 removals: %s", err);
	CHECK_EQ(vanish_open, 0);
	if (vanish_open == 0)
		pm_region_close(&r);
	vanish_lstat = vanish_open = 0;
	vanish_dir[0] = 0;
}

/* issue 30 item 11: the second user of a hugepage region allocates none
 * of it, so it is not refused when fewer huge pages are free than the
 * region has (before: "needs 6.0 MiB of memory but 0.0 MiB fit"). */
static void test_hugepage_joiner(const char *name)
{
	if (t_huge_reserve(4) != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs huge pages");
		return;
	}
	char err[300];
	struct pm_region r, j;
	struct pm_region_params p = { .bufs = 100, .buf_size = 2048,
				      .hugepages = 1 };
	int ok = pm_region_open(&r, name, &p, err, sizeof(err)) == 0;
	CHECK(ok, "%s", err);
	if (!ok) {
		t_huge_release();
		return;
	}
	CHECK(r.created && r.size >= 2 * T_HUGE, "size %zu", r.size);
	size_t glen = 0;
	void *grab = t_huge_grab(&glen);
	CHECK_EQ(t_huge_free(), 0);
	ok = pm_region_open(&j, name, &p, err, sizeof(err)) == 0;
	CHECK(ok, "%s", err);
	if (ok) {
		CHECK(!j.created, "joined");
		strcpy(pm_region_buf(&r, 5), "huge");
		CHECK(strcmp(pm_region_buf(&j, 5), "huge") == 0, "shared");
		pm_region_close(&j);
	}
	if (grab != MAP_FAILED)
		munmap(grab, glen);
	pm_region_close(&r);
	t_huge_release();
}

/* The uid_map text pm_name_uid() reads: which outside uid names our
 * directories. */
static void test_uid_map(void)
{
	static const struct {
		const char *map;
		uint32_t uid;
		int ret;
		uint32_t out;
	} t[] = {
		{ "         0          0 4294967295\n", 0, 0, 0 },
		{ "         0          0 4294967295\n", 1000, 0, 1000 },
		{ "         0      65534          1\n", 0, 0, 65534 },
		{ "         0      65534          1\n", 1, -ENOENT, 0 },
		{ "0 100000 1000\n1000 1000 1\n", 1000, 0, 1000 },
		{ "0 100000 1000\n1000 1000 1\n", 999, 0, 100999 },
		{ "0 100000 1000\n1000 1000 1\n", 1001, -ENOENT, 0 },
		{ "", 0, -ENOENT, 0 },
		{ "0 1 x\n", 0, -EINVAL, 0 },
		{ "0 1\n", 0, -EINVAL, 0 },
		{ "0 1 1 9\n", 0, -EINVAL, 0 },
		{ "-1 0 1\n", 0, -EINVAL, 0 },
		{ "0 4294967295 2\n", 1, -EINVAL, 0 },   /* past 32 bits */
		{ "0 99999999999 1\n", 0, -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint32_t out = 7;
		int ret = pm_uid_map_outside(t[i].map, t[i].uid, &out);
		CHECK(ret == t[i].ret && (ret || out == t[i].out),
		      "uid_map %zu: %d %u", i, ret, out);
	}
	/* Here (no user namespace, or root's): our own uid. */
	CHECK_EQ(pm_name_uid(), (unsigned)geteuid());
}

int main(void)
{
	test_uid_map();
	test_dir_vanish();
	char name[64], err[300], path[128];
	snprintf(name, sizeof(name), "utreg%d", (int)getpid());
	snprintf(path, sizeof(path), "/dev/shm/pktmap-%u/%s", (unsigned)geteuid(), name);
	struct pm_region r, j;
	struct pm_region_params p = { .bufs = 1000, .buf_size = 2048,
				      .headroom = 256, .obj_size = 65536 };
	CHECK(pm_region_open(&r, name, &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(r.created, "created");
	CHECK_EQ(r.nbufs, 1000);
	CHECK_EQ(((uintptr_t)r.pool) % 4096, 0); /* a UMEM must be page aligned */
	CHECK_EQ(pm_region_free_count(&r), 998);   /* 0 and 1 are reserved */

	/* Buffers: all or nothing, never 0 or 1, no duplicates. */
	uint32_t idx[998];
	static unsigned char seen[1000];
	pm_region_lock(&r);
	CHECK(pm_region_alloc_bufs(&r, idx, 999) == -ENOMEM, "too many");
	CHECK_EQ(pm_region_free_count(&r), 998);
	CHECK(pm_region_alloc_bufs(&r, idx, 998) == 0, "all");
	for (int i = 0; i < 998; i++) {
		CHECK(idx[i] >= 2 && idx[i] < 1000 && !seen[idx[i]]++, "buf %u",
		      idx[i]);
	}
	pm_region_free_bufs(&r, idx, 998);
	uint32_t junk[3] = { 0, 1, 5000 };
	pm_region_free_bufs(&r, junk, 3); /* ignored */
	CHECK_EQ(pm_region_free_count(&r), 998);

	/* The free stack's top is in the shared header: a peer may write
	 * anything there. The stack holds nbufs - 2 entries (2 .. nbufs-1)
	 * at most; beyond that it is corrupt and counts as empty. (In a
	 * region of its own: the corrupt stacks are not undone.) */
	{
		struct pm_region t;
		struct pm_region_params tp = { .bufs = 10, .buf_size = 2048 };
		CHECK(pm_region_open(&t, NULL, &tp, err, sizeof(err)) == 0, "%s",
		      err);
		uint32_t *top = pm_region_free_top(&t);
		uint32_t one[1] = { 5 };
		CHECK_EQ(*top, 8);
		pm_region_free_bufs(&t, one, 1); /* full: nothing pushed */
		CHECK_EQ(*top, 8);
		CHECK_EQ(pm_region_free_count(&t), 8);
		*top = 9;
		CHECK_EQ(pm_region_free_count(&t), 0);
		*top = 8; /* all 8 out, then none */
		uint32_t eight[8];
		CHECK(pm_region_alloc_bufs(&t, eight, 8) == 0, "8 of 8");
		CHECK(pm_region_alloc_bufs(&t, one, 1) == -ENOMEM, "9 of 8");
		static const uint32_t bad_tops[] = { 9, 10, 11, 0x80000000u,
						     0xffffffffu };
		for (size_t i = 0; i < PM_ARRAY_SIZE(bad_tops); i++) {
			*top = bad_tops[i];
			CHECK(pm_region_free_count(&t) == 0, "top %u: %u free",
			      bad_tops[i], pm_region_free_count(&t));
			CHECK(pm_region_alloc_bufs(&t, one, 1) == -ENOMEM,
			      "top %u: buffer %u handed out", bad_tops[i], one[0]);
			*top = bad_tops[i];
			pm_region_free_bufs(&t, eight, 2); /* a new stack */
			CHECK(*top == 2 && pm_region_free_count(&t) == 2,
			      "top %u: free gives %u", bad_tops[i], *top);
		}
		pm_region_close(&t);
	}

	/* The header a joiner checks (region_hdr_sane), field by field at
	 * each bound: the layout must fit the file. */
	{
		uint64_t S = r.size, P = (uint64_t)(r.pool - (char *)r.base);
		uint64_t F = r.free_ofs, O = r.obj_ofs, E = r.obj_end;
		uint64_t slack = S - P - 1000ull * 2048;
		char set[128];
		struct {
			const char *pre, *field;
			uint64_t v;
			int want;
		} hc[] = {
			{ "", NULL, 0, 1 },
			{ "", "magic", 0, 0 },
			{ "", "version", 2, 0 },
			{ "", "size", S - 1, 0 },
			{ "", "size", S + 1, 0 },
			{ "headroom=0 ", "buf_size", 64, 1 },
			{ "headroom=0 ", "buf_size", 63, 0 },
			{ "", "headroom", 2047, 1 },
			{ "", "headroom", 2048, 0 },
			{ "", "nbufs", 3, 1 },
			{ "", "nbufs", 2, 0 },
			{ "", "free_ofs", 8192, 1 },
			{ "", "free_ofs", 8191, 0 },
			{ "", "free_ofs", O - 1000 * 4, 1 },
			{ "", "free_ofs", O - 1000 * 4 + 1, 0 },
			{ "", "obj_ofs", E, 1 },
			{ "", "obj_ofs", E + 1, 0 },
			{ "", "obj_end", P, 1 },
			{ "", "obj_end", P + 1, 0 },
			{ "", "pool_ofs", P + slack, 1 },
			{ "", "pool_ofs", P + slack + 1, 0 },
			{ "", "nbufs", 1000 + slack / 2048, 1 },
			{ "", "nbufs", 1001 + slack / 2048, 0 },
			{ "", "ndir", 64, 1 },
			{ "", "ndir", 65, 0 },
		};
		CHECK(F == 8192 && O - 1000 * 4 >= 8192, "layout: free %llu obj %llu",
		      (unsigned long long)F, (unsigned long long)O);
		for (size_t i = 0; i < PM_ARRAY_SIZE(hc); i++) {
			if (hc[i].field)
				snprintf(set, sizeof(set), "%s%s=%llu", hc[i].pre,
					 hc[i].field, (unsigned long long)hc[i].v);
			else
				set[0] = 0;
			CHECK(pm_region_hdr_sane_with(&r, set) == hc[i].want,
			      "header '%s': want %d", set, hc[i].want);
		}
	}

	/* Objects. */
	bool created;
	uint64_t ofs = pm_region_object(&r, "obj", 4096, &created);
	CHECK(ofs && created, "object");
	CHECK(pm_region_object(&r, "obj", 4096, &created) == ofs && !created,
	      "found again");
	CHECK(pm_region_object(&r, "big", 1u << 30, &created) == 0, "no room");
	uint32_t two[2];
	CHECK(pm_region_alloc_bufs(&r, two, 2) == 0, "two buffers");
	pm_region_unlock(&r);
	*(uint32_t *)pm_region_ptr(&r, ofs) = two[0];
	*((uint32_t *)pm_region_ptr(&r, ofs) + 1) = two[1];
	/* A buffer's frame starts past the headroom. */
	CHECK_EQ(pm_region_buf(&r, 2) - r.pool, 2 * 2048 + 256);
	CHECK_EQ(pm_region_free_count(&r), 998 - 2);
	strcpy(pm_region_buf(&r, two[0]), "hello");

	/* Layout values are private copies: a peer rewriting the header
	 * after we joined changes nothing we use. */
	uint64_t *hdr = r.base;
	uint64_t saved[8];
	memcpy(saved, hdr, sizeof(saved));
	memset(hdr, 0xff, sizeof(saved));
	CHECK_EQ(pm_region_buf(&r, 2) - r.pool, 2 * 2048 + 256);
	CHECK(r.free_ofs == 8192 && r.obj_end <= (uint64_t)(r.pool - (char *)r.base),
	      "private layout");
	memcpy(hdr, saved, sizeof(saved));

	/* The memory is a sealed memfd: nobody can shrink or grow it. */
	CHECK(r.sealed && r.mfd != r.fd, "sealed pool");
	CHECK(ftruncate(r.mfd, 0) != 0 && errno == EPERM, "shrink refused");
	CHECK(ftruncate(r.mfd, (off_t)r.size * 2) != 0 && errno == EPERM,
	      "grow refused");

	/* Claims: exclusive across opens. */
	CHECK(pm_region_claim(&r, 7) == 0, "claim");

	/* Another process joins by name and sees the same memory. */
	pid_t pid = fork();
	if (pid == 0) {
		struct pm_region c;
		struct pm_region_params q = { 0 };
		q.headroom = 256;
		if (pm_region_open(&c, name, &q, err, sizeof(err)) != 0)
			_exit(2);
		if (c.created)
			_exit(3);
		uint32_t *b2 = pm_region_ptr(&c, ofs);
		if (strcmp(pm_region_buf(&c, b2[0]), "hello") != 0)
			_exit(4);
		if (pm_region_claim(&c, 7) != -EBUSY)
			_exit(5);
		if (pm_region_claim(&c, 8) != 0)
			_exit(6);
		strcpy(pm_region_buf(&c, b2[1]), "world");
		_exit(0); /* dies holding claim 8: released by the kernel */
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d",
	      WEXITSTATUS(status));
	CHECK(strcmp(pm_region_buf(&r, two[1]), "world") == 0, "shared");
	CHECK(!pm_region_claimed(&r, 8), "claim released at exit");
	CHECK(pm_region_claim(&r, 8) == 0, "claim 8 free again");

	/* A joiner with other settings is refused. */
	struct pm_region_params bad = { .buf_size = 4096, .headroom = 256,
					.exact_headroom = true };
	CHECK(pm_region_open(&j, name, &bad, err, sizeof(err)) == -EEXIST, "%s",
	      err);
	CHECK(strstr(err, "buf_size=2048") != NULL, "message: %s", err);

	/* A second user in this process; the file stays until the last. */
	struct pm_region_params same = { .headroom = 256 };
	CHECK(pm_region_open(&j, name, &same, err, sizeof(err)) == 0, "%s", err);
	pm_region_close(&r);
	struct stat st;
	CHECK(stat(path, &st) == 0, "still there while joined");
	pm_region_close(&j);
	CHECK(stat(path, &st) != 0, "removed by the last user");

	/* A file left by a dead process (nobody holds it) is rebuilt. The
	 * process has no capabilities, so no cleaner (reap.c) removes the
	 * file after it. */
	pid = fork();
	if (pid == 0) {
		struct pm_region c;
		if (!drop_caps() ||
		    pm_region_open(&c, name, &p, err, sizeof(err)) != 0)
			_exit(2);
		pm_region_lock(&c);
		uint32_t x[10];
		pm_region_alloc_bufs(&c, x, 10); /* leaked by the crash */
		_exit(0);                        /* no close: like a crash */
	}
	waitpid(pid, &status, 0);
	CHECK(stat(path, &st) == 0, "stale file left");
	CHECK(pm_region_open(&r, name, &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(r.created, "stale region rebuilt");
	CHECK_EQ(pm_region_free_count(&r), 998);
	pm_region_close(&r);
	CHECK(stat(path, &st) != 0, "removed");
	if (geteuid() == 0)
		test_crash_cleaned(name, path, &p);

	test_hugepage_joiner(name);

	test_mem_check();

	/* Names are checked: 1 to 48 of [a-zA-Z0-9_.-], not starting with
	 * a dot; each bound of each range by the character beyond it. */
	CHECK(pm_region_open(&r, "../etc", &p, err, sizeof(err)) == -EINVAL, "name");
	{
		char n48[64], n49[64];
		snprintf(n48, sizeof(n48), "%s%048d", name, 0);
		n48[48] = 0;
		snprintf(n49, sizeof(n49), "%s%049d", name, 0);
		n49[49] = 0;
		struct pm_region_params small = { .bufs = 16, .buf_size = 2048 };
		struct { const char *suffix; int ok; } nc[] = {
			{ "az", 1 }, { "AZ", 1 }, { "09", 1 }, { "_-.", 1 },
			{ "`", 0 }, { "{", 0 }, { "@", 0 }, { "[", 0 },
			{ "/", 0 }, { ":", 0 }, { " ", 0 }, { "\x80", 0 },
		};
		for (size_t i = 0; i < PM_ARRAY_SIZE(nc); i++) {
			char n[96];
			snprintf(n, sizeof(n), "%sx%s", name, nc[i].suffix);
			int rc = pm_region_open(&r, n, &small, err, sizeof(err));
			CHECK(nc[i].ok ? rc == 0 : rc == -EINVAL, "name '%s': %d",
			      n, rc);
			if (rc == 0)
				pm_region_close(&r);
		}
		CHECK(pm_region_open(&r, n48, &small, err, sizeof(err)) == 0,
		      "48 characters: %s", err);
		pm_region_close(&r);
		CHECK(pm_region_open(&r, n49, &small, err, sizeof(err)) == -EINVAL,
		      "49 characters");
		CHECK(pm_region_open(&r, ".x", &small, err, sizeof(err)) == -EINVAL,
		      "a dot first");
	}
	/* Private regions. */
	CHECK(pm_region_open(&r, NULL, &p, err, sizeof(err)) == 0, "%s", err);
	pm_region_close(&r);
	return t_done("region");
}
