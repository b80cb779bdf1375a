/* SPDX-License-Identifier: BSD-2-Clause
 *
 * xdp: back end, the UMEM: registering the region's pool as a socket's
 * UMEM, and sharing one UMEM among the ports of a process that name the
 * same region.
 */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xdp.h"

/* One UMEM per region per process.
 *
 * Ports of one process that name the same region (@mem:NAME) share one
 * UMEM: the first socket registers the pool, every later one binds with
 * XDP_SHARED_UMEM through any bound socket of a port still using it.
 * (Another process maps the region at another address and registers its
 * own UMEM over the same pages: buffer indices mean the same everywhere.)
 * The table is process-wide by nature, like the UMEM it describes. */

struct umem_share {
	struct umem_share *next;
	dev_t dev;
	ino_t ino;
	struct xdp_priv *users; /* linked through share_next */
};

static pthread_mutex_t share_mu = PTHREAD_MUTEX_INITIALIZER;
static struct umem_share *shares;

/* Find or create the entry of the region behind `fd`. Under share_mu. */
static struct umem_share *share_get(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	for (struct umem_share *s = shares; s; s = s->next)
		if (s->dev == st.st_dev && s->ino == st.st_ino)
			return s;
	struct umem_share *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->next = shares;
	shares = s;
	return s;
}

/* A bound socket of another port on the same UMEM, or NULL. */
static struct xdp_priv *share_donor(struct umem_share *s, struct xdp_priv *self)
{
	for (struct xdp_priv *u = s ? s->users : NULL; u; u = u->share_next)
		if (u != self && u->nsock > 0)
			return u;
	return NULL;
}

void pm_xdp_umem_lock(void)
{
	pthread_mutex_lock(&share_mu);
}

void pm_xdp_umem_unlock(void)
{
	pthread_mutex_unlock(&share_mu);
}

struct xdp_priv *pm_xdp_umem_join(struct xdp_priv *xp, int region_fd)
{
	xp->share = share_get(region_fd);
	struct xdp_priv *d = share_donor(xp->share, xp);
	if (xp->share) {
		xp->share_next = xp->share->users;
		xp->share->users = xp;
	}
	return d;
}

void pm_xdp_umem_leave(struct xdp_priv *xp)
{
	struct umem_share *s = xp->share;
	if (!s)
		return;
	pthread_mutex_lock(&share_mu);
	for (struct xdp_priv **u = &s->users; *u; u = &(*u)->share_next)
		if (*u == xp) {
			*u = xp->share_next;
			break;
		}
	if (!s->users)
		for (struct umem_share **e = &shares; *e; e = &(*e)->next)
			if (*e == s) {
				*e = s->next;
				free(s);
				break;
			}
	pthread_mutex_unlock(&share_mu);
	xp->share = NULL;
}

/* Raise the soft locked-memory limit to the hard one: older kernels and
 * processes without CAP_IPC_LOCK charge the UMEM's pinned pages to it. */
static void raise_memlock(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

/* How many bytes of UMEM this process may pin: unlimited with
 * CAP_IPC_LOCK (the kernel then charges nothing), else the locked-memory
 * limit, raised to its hard value first. (The kernel charges the user's
 * total; other locked memory of the same user shares the limit.) */
/* Are we in the first user namespace? The kernel asks for CAP_IPC_LOCK
 * there (capable()): in a user namespace of our own (a container) we may
 * hold it and still be charged. */
static bool init_userns(void)
{
	FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long in = 1, out = 1, n = 0;
	if (!f)
		return true;
	int k = fscanf(f, "%lu %lu %lu", &in, &out, &n);
	fclose(f);
	return k == 3 && in == 0 && out == 0 && n == 4294967295ul;
}

uint64_t pm_xdp_memlock_budget(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct cap[2];
	memset(cap, 0, sizeof(cap));
	if (syscall(SYS_capget, &hdr, cap) == 0 && init_userns() &&
	    (cap[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32))))
		return UINT64_MAX;
	raise_memlock();
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return rl.rlim_cur;
}

/* Register the region's pool as this socket's UMEM. */
int pm_xdp_umem_register(struct pktmap_port *p, int fd)
{
	struct pm_region *r = &p->region;
	struct xdp_umem_reg mr;
	memset(&mr, 0, sizeof(mr)); /* padding and newer fields are zero */
	mr.addr = (uint64_t)(uintptr_t)r->pool;
	mr.len = (uint64_t)r->nbufs * r->buf_size;
	mr.chunk_size = r->buf_size;
	mr.headroom = 0; /* the 256 bytes are the kernel's XDP_PACKET_HEADROOM */
	raise_memlock();
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) == 0)
		return 0;
	int err = -errno;
	if (err == -ENOBUFS || err == -ENOMEM || err == -EPERM) {
		struct rlimit rl = { 0, 0 };
		getrlimit(RLIMIT_MEMLOCK, &rl);
		return pm_open_error(p, err,
				     "registering %llu kB of buffers as UMEM exceeds "
				     "the locked-memory limit (ulimit -l: %llu kB): "
				     "raise it (ulimit -l unlimited), give the process "
				     "CAP_IPC_LOCK, or ask for fewer slots (@conf:slots=)",
				     (unsigned long long)(mr.len >> 10),
				     (unsigned long long)(rl.rlim_cur == RLIM_INFINITY ?
							  0 : rl.rlim_cur >> 10));
	}
	return pm_open_error(p, err, "cannot register the UMEM: %s",
			     strerror(-err));
}
