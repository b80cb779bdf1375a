/* SPDX-License-Identifier: BSD-2-Clause
 * Huge pages for a test (root): t_huge_reserve(n) adds n to
 * /proc/sys/vm/nr_hugepages, t_huge_release() takes back what it added.
 * Every test that does so holds one lock in between
 * (/run/pktmap-hugepages.lock, also taken by the system tests), so that
 * two copies of the suite never count or take each other's pages.
 * t_huge_grab() takes every free huge page (what an attacker does after
 * punching a hole); munmap() gives them back. */
#ifndef PKTMAP_TEST_HUGEPAGES_H
#define PKTMAP_TEST_HUGEPAGES_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#define T_HUGE (2ul << 20)

static int t_huge_lock = -1;
static long t_huge_added;

static inline long t_huge_total(void)
{
	long v = -1;
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static inline int t_huge_set(long v)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "we");
	if (!f)
		return -1;
	int ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Free huge pages of the default size (HugePages_Free). */
static inline long t_huge_free(void)
{
	long v = -1;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static inline void t_huge_release(void)
{
	if (t_huge_lock < 0)
		return;
	long now = t_huge_total();
	if (t_huge_added > 0 && now >= t_huge_added)
		(void)t_huge_set(now - t_huge_added);
	t_huge_added = 0;
	close(t_huge_lock); /* drops the lock */
	t_huge_lock = -1;
}

/* Returns 0 with at least n free huge pages, -1 (with a line saying
 * why) when there cannot be: not root, or the kernel found no memory. */
static inline int t_huge_reserve(long n)
{
	if (geteuid() != 0) {
		printf("no huge pages: needs root\n");
		return -1;
	}
	t_huge_lock = open("/run/pktmap-hugepages.lock",
			   O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (t_huge_lock < 0 || flock(t_huge_lock, LOCK_EX) != 0) {
		printf("no huge pages: cannot lock: %s\n", strerror(errno));
		return -1;
	}
	long before = t_huge_total();
	if (before >= 0 && t_huge_set(before + n) == 0)
		t_huge_added = t_huge_total() - before;
	if (t_huge_free() < n) {
		printf("no huge pages: the kernel gave %ld of %ld\n",
		       t_huge_added, n);
		t_huge_release();
		return -1;
	}
	return 0;
}

/* Take every free huge page; returns the mapping (MAP_FAILED if none). */
static inline void *t_huge_grab(size_t *len)
{
	long n = t_huge_free();
	*len = n > 0 ? (size_t)n * T_HUGE : 0;
	if (!*len)
		return MAP_FAILED;
	return mmap(NULL, *len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
}

#endif
