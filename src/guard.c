// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory a peer can take away: guarded mappings and the SIGBUS handler
 * that turns a lost page into a mark (guard.h says why and how).
 *
 * The table is read by the handler, lock-free: an entry is live while its
 * base is not 0; its other fields are written before base is published
 * (release) and base is cleared before they change. Adding and removing
 * take a mutex among themselves only.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard.h"

#define PM_GUARD_MAX 256

struct pm_guard {
	_Atomic uintptr_t base;   /* 0: free */
	uintptr_t size;           /* bytes, a whole number of pages */
	uintptr_t page;           /* the mapping's page size */
	_Atomic uint32_t *lost;
};

static struct pm_guard guards[PM_GUARD_MAX];
static pthread_mutex_t guards_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction prev_bus;
static bool installed;

/* A SIGBUS that is not ours: what the handler we replaced would have
 * done. The default (or ignoring, which the kernel does not allow for a
 * fault) is put back: a fault then happens again on return and kills
 * the process as it would have; a signal sent by kill() is raised again. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	if (prev_bus.sa_flags & SA_SIGINFO) {
		prev_bus.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev_bus.sa_handler != SIG_DFL && prev_bus.sa_handler != SIG_IGN) {
		prev_bus.sa_handler(sig);
		return;
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

/* Async-signal-safe: loads, one mmap(), one store. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uintptr_t a = (uintptr_t)si->si_addr;
	for (int i = 0; si->si_code == BUS_ADRERR && i < PM_GUARD_MAX; i++) {
		struct pm_guard *g = &guards[i];
		/* acquire: pairs with pm_guard_add()'s release of base */
		uintptr_t b = atomic_load_explicit(&g->base, memory_order_acquire);
		if (!b || a < b || a - b >= g->size)
			continue;
		uintptr_t pg = b + (a - b) / g->page * g->page;
		void *m = mmap((void *)pg, g->page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (m == MAP_FAILED)
			break; /* no memory even for that: die as before */
		atomic_store_explicit(g->lost, 1, memory_order_release);
		errno = saved;
		return;
	}
	chain(sig, si, uc);
	errno = saved;
}

int pm_guard_is_huge(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_blksize > sysconf(_SC_PAGESIZE);
}

int pm_guard_add(void *base, size_t size, int fd, _Atomic uint32_t *lost)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (st.st_blksize > (blksize_t)page)
		page = (uintptr_t)st.st_blksize; /* hugetlbfs: the huge page */
	pthread_mutex_lock(&guards_lock);
	int ret = 0;
	if (!installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &prev_bus) != 0)
			ret = -errno;
		installed = ret == 0;
	}
	int i = 0;
	while (ret == 0 && i < PM_GUARD_MAX &&
	       atomic_load_explicit(&guards[i].base, memory_order_relaxed))
		i++;
	if (ret == 0 && i == PM_GUARD_MAX)
		ret = -ENOSPC;
	if (ret == 0) {
		struct pm_guard *g = &guards[i];
		g->size = (size + page - 1) / page * page;
		g->page = page;
		g->lost = lost;
		/* release: the fields above before the handler can see base */
		atomic_store_explicit(&g->base, (uintptr_t)base, memory_order_release);
		ret = i;
	}
	pthread_mutex_unlock(&guards_lock);
	return ret;
}

void pm_guard_del(int g)
{
	if (g < 0 || g >= PM_GUARD_MAX)
		return;
	pthread_mutex_lock(&guards_lock);
	atomic_store_explicit(&guards[g].base, 0, memory_order_release);
	pthread_mutex_unlock(&guards_lock);
}
