/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The forwarding component's shared pieces (fwd.h): the sleeping flag +
 * eventfd waiter, CPU pinning, region helpers, the IPv4 address parser.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fwd.h"

int fwd_waiter_init(struct fwd_waiter *w)
{
	atomic_init(&w->sleeping, 0);
	w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return w->fd < 0 ? -errno : 0;
}

void fwd_waiter_fini(struct fwd_waiter *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

void fwd_wait(struct fwd_waiter *w, int64_t timeout_us)
{
	struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
	struct timespec ts, *tp = NULL;
	uint64_t v;

	if (timeout_us >= 0) {
		ts.tv_sec = (time_t)(timeout_us / 1000000);
		ts.tv_nsec = (long)(timeout_us % 1000000) * 1000;
		tp = &ts;
	}
	(void)ppoll(&pfd, 1, tp, NULL);
	atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
	if (read(w->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
}

void fwd_wake_slow(struct fwd_waiter *w)
{
	uint64_t one = 1;

	if (atomic_exchange_explicit(&w->sleeping, 0, memory_order_relaxed) &&
	    write(w->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return;
}

void fwd_wake_always(struct fwd_waiter *w)
{
	uint64_t one = 1;

	if (w->fd >= 0 && write(w->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return;
}

int fwd_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET((unsigned)cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

uint32_t fwd_region_bufs(const char *const *names, unsigned n, unsigned i,
			 uint32_t extra)
{
	struct pktmap_name mine = {.sz = sizeof(mine)};
	uint64_t total = 0;

	if (pktmap_name_parse(names[i], &mine, NULL, 0) || !mine.region[0] ||
	    mine.bufs)
		return 0;
	for (unsigned k = 0; k < n; k++) {
		struct pktmap_name other = {.sz = sizeof(other)};

		if (pktmap_name_parse(names[k], &other, NULL, 0) == 0 &&
		    strcmp(mine.region, other.region) == 0)
			total += FWD_BUFS_PER_PORT + extra;
	}
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

bool fwd_same_port(const char *a, const char *b)
{
	struct pktmap_name x = {.sz = sizeof(x)}, y = {.sz = sizeof(y)};

	if (pktmap_name_parse(a, &x, NULL, 0) || pktmap_name_parse(b, &y, NULL, 0))
		return false; /* its open says what is wrong with it */
	return strcmp(x.backend, y.backend) == 0 && strcmp(x.body, y.body) == 0 &&
	       x.reg == y.reg && x.ring == y.ring && x.pipe_id == y.pipe_id;
}

int fwd_repeated_port(const char *const *names, unsigned n, unsigned *first)
{
	for (unsigned j = 1; j < n; j++)
		for (unsigned i = 0; i < j; i++)
			if (fwd_same_port(names[i], names[j])) {
				*first = i;
				return (int)j;
			}
	return -1;
}

bool fwd_same_region(const struct pktmap_info *a, const struct pktmap_info *b)
{
	return strcmp(a->region, "(private)") != 0 &&
	       strcmp(a->region, b->region) == 0 && a->buf_size == b->buf_size &&
	       a->region_ino != 0 && a->region_dev == b->region_dev &&
	       a->region_ino == b->region_ino;
}

uint64_t fwd_memory_group(const struct pktmap_info *info)
{
	/* FNV-1a of the memory's device and inode: nonzero, one per memory */
	uint64_t v[2] = { info->region_dev, info->region_ino }, h;

	if (!info->region_ino || strcmp(info->region, "(private)") == 0)
		return 0;
	h = 1469598103934665603ull;
	for (unsigned i = 0; i < 2; i++)
		for (unsigned k = 0; k < 8; k++)
			h = (h ^ ((v[i] >> (8 * k)) & 0xff)) * 1099511628211ull;
	return h | 1;
}
