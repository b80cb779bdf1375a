/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Monitors: netmap's "PORT/r", "/t" and "/rt" (pktmap-ports(7),
 * docs/netmap.md). A monitor sees a copy of every frame an open port
 * receives (r), transmits (t) or both, in the order the port's syncs
 * move them, possibly from another process of the same user.
 *
 *   monitor process                      monitored port's process
 *   opens pipe:pmmon.PID.G}0/R   (1)
 *   finds PORT's published page,
 *   CAS its `mon` word 0 -> W    (2)  -> sync_rings() loads `mon` once
 *                                        a sync; non-zero: pm_monitor_sync()
 *                                        opens pipe:pmmon.PID.G{0/T (once)
 *   reads copies from its pipe   (4) <-  and copies each sync's frames (3)
 *   CAS W -> W without directions    -> the next sync closes the queue
 *   at close                            and clears the word: fast path
 *
 * W = monitor PID << 32 | generation G << 8 | PM_MON_RX/TX: it names the
 * queue, so nothing else crosses. The copy never blocks the port: a
 * frame (a whole NS_MOREFRAG chain) that finds no room in the queue is
 * counted in the port's published `mon_drops`. Nor does the queue: the
 * port opens it, syncs it and closes it with PKTMAP_OPEN_NOWAIT, so a
 * lock another process holds (any process of the user can write a word
 * naming a queue whose region it has locked) is tried once, never
 * waited for; a queue that cannot be opened so is tried again at most
 * once a second, and meanwhile every frame the monitor misses is
 * counted in `mon_drops` too. One monitor per port; a
 * registration whose process is gone is taken over, and the port drops
 * it by itself once a second while it would drop frames. "/z" (netmap's
 * zero-copy monitor, whose ring sits in the port's path) cannot be
 * honoured: the port's buffers are not in the monitor's memory.
 *
 * When nobody monitors, the sync path costs the load of `mon` and a
 * branch (src/port.c). Trust: the page is the user's own (0700
 * directory, 0600 file); as everywhere, processes of one user are not
 * isolated from each other (docs/design.md).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "monitor.h"
#include "name.h"
#include "port.h"
#include "pub.h"
#include "util.h"

/* Either side of a monitor. */
struct pm_mon {
	/* The monitor: the watched port's published page and our word. */
	struct pm_pub_hdr *hdr;
	size_t hdr_size;
	/* The watched port: the queue it copies into. */
	pthread_mutex_t lock;     /* the TX and the RX thread may both copy */
	uint64_t word;            /* the registration the queue belongs to */
	struct pktmap_port *q;    /* pipe:pmmon.PID.G{0, or NULL */
	int64_t alive_sec;        /* when the monitor's process was looked at */
	int64_t open_sec;         /* when opening the queue was last tried */
	struct pm_ratelimit rl;   /* "not monitored" lines */
	uint32_t *txpos;          /* per kring: first TX slot not yet copied */
	uint32_t nkrings;
	const struct pm_api *api; /* the public API, from port.c (above us) */
};

static _Atomic uint32_t mon_gen;

static void queue_name(char *out, size_t len, uint64_t word, char end)
{
	snprintf(out, len, "pipe:pmmon.%u.%u%c0/%c", (unsigned)(word >> 32),
		 (unsigned)(word >> 8) & 0xffffffu, end, end == '{' ? 'T' : 'R');
}

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Is process pid in our network namespace? An interface name (pkt:,
 * xdp:, tap:) means a device of the opener's namespace: a port of the
 * same name in another is another port. When it cannot be told, yes. */
static bool same_netns(int32_t pid, const struct pm_name *nm)
{
	static const char *const ifports[] = { "pkt", "xdp", "tap" };
	bool ifport = false;
	for (size_t i = 0; i < sizeof(ifports) / sizeof(ifports[0]); i++)
		ifport |= strcmp(nm->backend, ifports[i]) == 0;
	char path[48];
	struct stat a, b;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (!ifport || stat(path, &a) != 0 || stat("/proc/self/ns/net", &b) != 0)
		return true;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* Map one published file if it is a live port named like nm (the part
 * before flags and options), in our network namespace when the name is
 * an interface's. Returns the mapping or NULL. */
static struct pm_pub_hdr *pub_match(int dfd, const char *file,
				    const struct pm_name *nm, const char *name,
				    size_t *size)
{
	struct stat st;
	int fd = openat(dfd, file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size >= (off_t)sizeof(struct pm_pub_hdr))
		m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	struct pm_pub_hdr *h = m;
	char pname[sizeof(h->name)];
	struct pm_name pn;
	char err[8];
	/* Pairs with pm_pub_ready()'s release store of magic. */
	bool ok = atomic_load_explicit(PM_ATOMIC(&h->magic),
				       memory_order_acquire) == PM_PUB_MAGIC &&
		  pid_alive(h->pid);
	if (ok) {
		memcpy(pname, h->name, sizeof(pname));
		pname[sizeof(pname) - 1] = 0;
		ok = pm_name_parse(pname, &pn, err, sizeof(err)) == 0 && !pn.mon &&
		     pn.port_len == nm->port_len &&
		     memcmp(pname, name, nm->port_len) == 0 &&
		     same_netns(h->pid, nm);
	}
	if (!ok) {
		munmap(m, (size_t)st.st_size);
		return NULL;
	}
	*size = (size_t)st.st_size;
	return h;
}

/* The published page of the one live port of this user named like nm.
 * Returns 0 with *out mapped, or -errno with the open error set. */
static int pub_find(struct pktmap_port *p, const struct pm_name *nm,
		    const char *name, struct pm_pub_hdr **out, size_t *size)
{
	char dir[64];
	int dfd = pm_pub_dir(dir, sizeof(dir)); /* where our ports publish */
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (dfd >= 0 && !d)
		close(dfd);
	struct dirent *e;
	int found = 0, pids[2] = { 0, 0 };
	while (d && (e = readdir(d)) != NULL) {
		size_t sz;
		struct pm_pub_hdr *h = e->d_name[0] == '.' ? NULL :
				       pub_match(dirfd(d), e->d_name, nm, name, &sz);
		if (!h)
			continue;
		if (found < 2)
			pids[found] = h->pid;
		if (found++ == 0) {
			*out = h, *size = sz;
			continue;
		}
		munmap(h, sz);
	}
	if (d)
		closedir(d);
	if (found == 1)
		return 0;
	if (found > 1) {
		munmap(*out, *size);
		return pm_open_error(p, -EBUSY, "%d ports are open as '%.*s' "
				     "(processes %d and %d...): a monitor watches "
				     "one; see 'pktmap top'", found,
				     (int)nm->port_len, name, pids[0], pids[1]);
	}
	return pm_open_error(p, -ENOENT, "no port '%.*s' is open in a program of "
			     "this user: a monitor watches an open port (start "
			     "its program first; 'pktmap top' lists them)",
			     (int)nm->port_len, name);
}

/* Put our word in the page: free, or left by a process that is gone.
 * Returns 0 or -EBUSY with the open error set. */
static int mon_register(struct pktmap_port *p, struct pm_pub_hdr *h,
			uint64_t word, const char *name, uint32_t len)
{
	uint64_t cur = 0;
	while (!atomic_compare_exchange_strong_explicit(
			PM_ATOMIC(&h->port.mon), &cur, word,
			memory_order_acq_rel, memory_order_acquire))
		if ((cur & (PM_MON_RX | PM_MON_TX)) && pid_alive((int32_t)(cur >> 32)))
			return pm_open_error(p, -EBUSY, "'%.*s' is already "
					     "monitored by process %u: one monitor "
					     "per port", (int)len, name,
					     (unsigned)(cur >> 32));
	return 0;
}

int pm_monitor_open(struct pktmap_port *p, const struct pm_name *nm,
		    const struct pktmap_open_opts *opts, struct pktmap_port **out,
		    const struct pm_api *api)
{
	const char *name = p->name;
	if (nm->mon & PM_MON_ZCOPY)
		return pm_open_error(p, -EOPNOTSUPP, "zero-copy monitors (/z) are "
				     "not available: the port's buffers are not "
				     "in the monitor's memory; use /r, /t or /rt "
				     "(a copy of each frame)");
	struct pm_mon *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	int ret = pub_find(p, nm, name, &m->hdr, &m->hdr_size);
	if (ret) {
		free(m);
		return ret;
	}
	uint32_t gen = atomic_fetch_add_explicit(&mon_gen, 1,
						 memory_order_relaxed) & 0xffffffu;
	m->word = (uint64_t)(uint32_t)getpid() << 32 | (uint64_t)gen << 8 |
		  (nm->mon & (PM_MON_RX | PM_MON_TX));
	char qname[PM_NAME_MAX];
	queue_name(qname, sizeof(qname), m->word, '}');
	uint32_t slots = nm->conf.rx_slots ? nm->conf.rx_slots :
			 (opts && opts->sz >= offsetof(struct pktmap_open_opts, bufs) ?
			  opts->slots : 0);
	if (slots)
		snprintf(qname + strlen(qname), sizeof(qname) - strlen(qname),
			 "@conf:slots=%u", slots);
	struct pktmap_open_opts qo = { .sz = sizeof(qo), .log = p->log,
				       .log_ctx = p->log_ctx, .errbuf = p->errbuf,
				       .errbuf_len = p->errbuf_len };
	m->api = api;
	ret = api->open(out, qname, &qo);
	if (ret == 0)
		ret = mon_register(p, m->hdr, m->word, name, nm->port_len);
	if (ret) {
		api->close(*out);
		*out = NULL;
		munmap(m->hdr, m->hdr_size);
		free(m);
		return ret;
	}
	pm_printable((*out)->name, sizeof((*out)->name), name);
	(*out)->mon = m;
	return 0;
}

/* The watched side's state, made at its first monitored sync (the TX and
 * the RX thread may race to make it: one wins). */
static struct pm_mon *mon_get(struct pktmap_port *p, const struct pm_api *api)
{
	struct pm_mon *m = atomic_load_explicit(PM_ATOMIC(&p->mon),
						memory_order_acquire);
	if (m)
		return m;
	uint32_t n = p->ntx + p->nhtx + p->nrx + p->nhrx;
	m = calloc(1, sizeof(*m));
	uint32_t *pos = calloc(n ? n : 1, sizeof(*pos));
	if (!m || !pos) {
		free(m);
		free(pos);
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->api = api;
	m->txpos = pos;
	m->nkrings = n;
	for (uint32_t i = 0; i < n; i++)
		pos[i] = UINT32_MAX;
	struct pm_mon *none = NULL;
	if (atomic_compare_exchange_strong_explicit(PM_ATOMIC(&p->mon), &none, m,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return m;
	pthread_mutex_destroy(&m->lock);
	free(pos);
	free(m);
	return none;
}

/* Open our end of the queue of registration w, never waiting on a lock
 * (NOWAIT), alone on its TX ring (EXCLUSIVE: no other open takes turns
 * with us there). Under m->lock. */
static void queue_open(struct pktmap_port *p, struct pm_mon *m, uint64_t w)
{
	char qname[PM_NAME_MAX], err[300];
	queue_name(qname, sizeof(qname), w, '{');
	struct pktmap_open_opts qo = { .sz = sizeof(qo), .errbuf = err,
				       .errbuf_len = sizeof(err),
				       .flags = PKTMAP_OPEN_NOWAIT |
						PKTMAP_OPEN_EXCLUSIVE };
	m->open_sec = pm_clock_sec(CLOCK_MONOTONIC_COARSE);
	if (m->api->open(&m->q, qname, &qo) != 0) {
		m->q = NULL;
		pm_log_ratelimited(p, &m->rl, "%s: not monitored: %s", p->name,
				   err);
	}
}

/* Follow the word (under m->lock): a new registration gets its queue; a
 * registration whose queue could not be opened has it tried again, once
 * a second, while its monitor lives. */
static void queue_follow(struct pktmap_port *p, struct pm_mon *m, uint64_t w)
{
	if (w == m->word) {
		if (m->q || !(w & (PM_MON_RX | PM_MON_TX)) ||
		    pm_clock_sec(CLOCK_MONOTONIC_COARSE) == m->open_sec)
			return;
		if (!pid_alive((int32_t)(w >> 32))) {
			atomic_compare_exchange_strong_explicit(
				PM_ATOMIC(&p->stats->mon), &w, 0,
				memory_order_acq_rel, memory_order_relaxed);
			return;
		}
		queue_open(p, m, w);
		return;
	}
	m->api->close(m->q);
	m->q = NULL;
	m->word = w;
	for (uint32_t i = 0; i < m->nkrings; i++)
		m->txpos[i] = UINT32_MAX;
	if (w & (PM_MON_RX | PM_MON_TX))
		queue_open(p, m, w);
}

/* Slots in the NS_MOREFRAG chain starting at slot i, up to `to`. */
static uint32_t chain_len(const struct netmap_ring *r, uint32_t i, uint32_t to,
			  uint32_t n)
{
	uint32_t c = 1;
	while (i != to && (PM_READ_ONCE(r->slot[i].flags) & NS_MOREFRAG) &&
	       pm_ring_add(i, 1, n) != to)
		i = pm_ring_add(i, 1, n), c++;
	return c;
}

/* No room: count the frame; once a second, forget a monitor whose
 * process is gone (its queue would never drain). */
static void queue_full(struct pktmap_port *p, struct pm_mon *m)
{
	pm_stat_inc(&p->stats->mon_drops, 1);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec == m->alive_sec)
		return;
	m->alive_sec = now.tv_sec;
	uint64_t w = m->word;
	if (!pid_alive((int32_t)(w >> 32)))
		atomic_compare_exchange_strong_explicit(
			PM_ATOMIC(&p->stats->mon), &w, 0,
			memory_order_acq_rel, memory_order_relaxed);
}

/* Copy slots [from, to) of ring k into the queue, whole chains or
 * nothing; slots the checker refuses are not copied. */
static void queue_copy(struct pktmap_port *p, struct pm_mon *m,
		       struct pm_kring *k, uint32_t from, uint32_t to)
{
	struct netmap_ring *src = k->ring;
	struct netmap_ring *dst = NETMAP_TXRING(m->q->nifp, 0);
	uint32_t n = k->nslots, cap = m->q->bs.usable;
	const struct pm_bufspace *bs = k->bs ? k->bs : &p->bs;
	bool synced = false; /* the queue is asked for room once a batch */
	for (uint32_t i = from; i != to;) {
		uint32_t frags = chain_len(src, i, to, n);
		if (nm_ring_space(dst) < frags && !synced) {
			m->api->txsync(m->q);
			synced = true;
		}
		if (nm_ring_space(dst) < frags) {
			queue_full(p, m);
			i = pm_ring_add(i, frags, n);
			continue;
		}
		for (; frags; frags--, i = pm_ring_add(i, 1, n)) {
			struct netmap_slot *s = &src->slot[i];
			uint32_t idx = PM_READ_ONCE(s->buf_idx);
			uint32_t len = PM_READ_ONCE(s->len);
			uint16_t fl = PM_READ_ONCE(s->flags);
			if (pm_slot_check(bs, idx, len, (int)k->tx) != PM_SLOT_OK)
				continue;
			struct netmap_slot *d = &dst->slot[dst->head];
			len = len < cap ? len : cap;
			memcpy(NETMAP_BUF(dst, d->buf_idx), NETMAP_BUF(src, idx), len);
			d->len = (uint16_t)len;
			d->flags = (uint16_t)((fl & NS_MOREFRAG) && frags > 1 ?
					      NS_MOREFRAG : 0);
			dst->head = dst->cur = nm_ring_next(dst, dst->head);
		}
	}
}

int pm_monitor_sync(struct pktmap_port *p, struct pm_kring *k,
		    const struct pm_api *api)
{
	struct pm_mon *m = mon_get(p, api);
	if (!m)
		return k->sync(p, k);
	uint32_t old_tail = k->hwtail;
	pthread_mutex_lock(&m->lock);
	uint64_t w = PM_READ_ONCE(p->stats->mon);
	queue_follow(p, m, w);
	if (!(w & (PM_MON_RX | PM_MON_TX)))
		/* The monitor has closed: its queue is closed now, and the
		 * port's syncs go back to the fast path. */
		atomic_compare_exchange_strong_explicit(
			PM_ATOMIC(&p->stats->mon), &w, 0,
			memory_order_acq_rel, memory_order_relaxed);
	if (k->tx && (w & PM_MON_TX)) {
		/* Before the back end takes the buffers: what the program
		 * hands over, each slot once. */
		uint32_t *pos = &m->txpos[k->id], from = k->hwcur;
		if (*pos != UINT32_MAX &&
		    pm_ring_dist(k->hwcur, *pos, k->nslots) <=
			    pm_ring_dist(k->hwcur, k->rhead, k->nslots))
			from = *pos;
		if (m->q) {
			queue_copy(p, m, k, from, k->rhead);
			m->api->txsync(m->q);
		} else { /* not opened without waiting: missed, counted */
			pm_stat_inc(&p->stats->mon_drops,
				    pm_ring_dist(from, k->rhead, k->nslots));
		}
		*pos = k->rhead;
	}
	pthread_mutex_unlock(&m->lock);
	int ret = k->sync(p, k);
	if (k->tx || !(w & PM_MON_RX))
		return ret;
	/* After: what the back end delivered. */
	pthread_mutex_lock(&m->lock);
	if (m->q && m->word == w) {
		queue_copy(p, m, k, old_tail, k->hwtail);
		m->api->txsync(m->q);
	} else if (!m->q && m->word == w) {
		pm_stat_inc(&p->stats->mon_drops,
			    pm_ring_dist(old_tail, k->hwtail, k->nslots));
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

void pm_monitor_close(struct pktmap_port *p)
{
	struct pm_mon *m = p->mon;
	p->mon = NULL;
	if (m->hdr) {
		/* Our word without directions: "closed". The port's next sync
		 * closes its end of the queue and clears the word. */
		uint64_t w = m->word;
		atomic_compare_exchange_strong_explicit(
			PM_ATOMIC(&m->hdr->port.mon), &w,
			w & ~(uint64_t)(PM_MON_RX | PM_MON_TX),
			memory_order_acq_rel, memory_order_relaxed);
		munmap(m->hdr, m->hdr_size);
	} else {
		m->api->close(m->q);
		pthread_mutex_destroy(&m->lock);
		free(m->txpos);
	}
	free(m);
}
