/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's kernel fast path (scrub_xdp.h): the maps of the scrub XDP
 * program (bpf/pktmap_scrub.bpf.c) on an xdp: port's interface, found
 * through the program the port attached and filled from user space.
 *
 * Lists: the program reads the live generation from the first word of
 * scrub_conf (mapped here, written with one atomic store) and looks up
 * slot gen * 2 + {0 deny, 1 allow} of scrub_lists4 / scrub_lists6, arrays
 * of LPM tries, and slot gen of scrub_hosts, a hash of the deny-listed
 * hosts (/32 and /128, up to MAX_HOSTS). A load creates new maps, fills them with batched updates
 * (BPF_MAP_UPDATE_BATCH), puts them in the other generation's slots and
 * flips the word. The tries of the previous generation stay in their
 * slots until the next load replaces them: a frame that read the word
 * just before the flip still finds its whole list.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "scrub_xdp.h"
#include "util.h" /* PM_ATOMIC() */

#define PROG_NAME "pktmap_scrub"
#define MAX_PROG_MAPS 16
/* Entries per BPF_MAP_UPDATE_BATCH call. */
#define BATCH 65536u

/* The lists' hosts in the hashes (the program's MAX_HOSTS); lists with
 * more have them all in the tries. */
#define MAX_HOSTS (1u << 20)

enum { M_CONF, M_LISTS4, M_LISTS6, M_HOSTS, M_HOSTS4, M_BANS, M_COUNTS,
       M_SRCS, M_DSTS, M_REASONS, M_N };
static const char *const map_names[M_N] = {
	"scrub_conf", "scrub_lists4", "scrub_lists6", "scrub_hosts",
	"scrub_hosts4", "scrub_bans", "scrub_counts", "scrub_srcs",
	"scrub_dsts", "scrub_reasons",
};

/* Where a prefix goes: the four tries (family, action), or the hash of
 * its family's hosts (both lists'). */
enum { K_DENY4, K_ALLOW4, K_DENY6, K_ALLOW6, K_HOSTS4, K_HOSTS6, K_N };

static bool kind_host(unsigned kind)
{
	return kind == K_HOSTS4 || kind == K_HOSTS6;
}

static bool kind_v6(unsigned kind)
{
	return kind == K_DENY6 || kind == K_ALLOW6 || kind == K_HOSTS6;
}

/* The keys and values as the program has them. */
struct key4 {
	uint32_t prefixlen;
	uint8_t addr[4];
};

struct key6 {
	uint32_t prefixlen;
	uint8_t addr[16];
};

struct ban_key {
	uint32_t family;
	uint8_t addr[16];
};

struct ban_val {
	uint64_t until_ns;
	uint32_t rule;
	uint32_t pad;
};

struct rule_count {
	uint64_t pkts;
	uint64_t bytes;
};

/* lim.flags (the program's L_*) */
#define L_JUDGE 1u
#define L_LIMIT 2u
#define L_SYN 4u
#define L_HOST 8u

/* One generation's limits, times in 1/16 ns (the program's struct lim). */
struct xlim {
	uint32_t flags;
	uint32_t limit_rule, syn_rule;
	uint32_t bshift;
	uint64_t pcost, bcost, fill, ban_ns, scost, sfill;
};

/* The program's host bits (HB_BITS, host_bit()). */
#define HB_BITS 16
#define HB_WORDS (1u << (HB_BITS - 6))

struct xconf {
	uint32_t gen;
	uint32_t nbans; /* entries in scrub_bans: the program looks up none at 0 */
	struct xlim lim[2];
	uint32_t kbans; /* the program's: it made an automatic ban */
	uint32_t pad;
	uint64_t hbits[2][HB_WORDS]; /* a generation's hosts, as bits */
};

static uint32_t host_bit(uint32_t a)
{
	return (a * 0x9E3779B1u) >> (32 - HB_BITS);
}

/* A source's value (the program's struct src_val). */
struct src_val {
	uint64_t pe, be, ban_until;
};

struct scrub_xdp {
	int fd[M_N];
	struct xconf *conf; /* scrub_conf's value, mapped */
	size_t conf_len;
	int ncpu;         /* possible CPUs: a per-CPU value's copies */
	struct xlim next; /* what the next load puts in with its lists */
	uint32_t nsrcs, ndsts; /* the tables' sizes (0: none) */
};

__attribute__((format(printf, 4, 5)))
static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

uint64_t scrub_xdp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The interface of an xdp: port. */
static int port_ifindex(struct pktmap_port *port, char *err, size_t errlen)
{
	struct pktmap_info info = { .sz = sizeof(info) };
	struct pktmap_name nm = { .sz = sizeof(nm) };
	int ret = pktmap_info(port, &info);
	if (ret)
		return fail(err, errlen, ret, "pktmap_info: %s",
			    pktmap_strerror(ret));
	if (strcmp(info.backend, "xdp") != 0)
		return fail(err, errlen, -EINVAL, "%s: the kernel path needs an "
			    "xdp: port", info.name);
	ret = pktmap_name_parse(info.name, &nm, err, errlen);
	if (ret)
		return ret;
	unsigned idx = if_nametoindex(nm.body);
	if (idx == 0)
		return fail(err, errlen, -ENODEV, "%s: no interface %s", info.name,
			    nm.body);
	return (int)idx;
}

/* Open the maps of the scrub program attached to ifindex. */
static int find_maps(struct scrub_xdp *x, int ifindex, const char *what,
		     char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, qo);
	int ret = bpf_xdp_query(ifindex, 0, &qo);
	if (ret)
		return fail(err, errlen, ret, "%s: cannot query its XDP program: %s",
			    what, strerror(-ret));
	int pfd = qo.prog_id ? bpf_prog_get_fd_by_id(qo.prog_id) : -ENOENT;
	if (pfd < 0)
		return fail(err, errlen, pfd, "%s: no pktmap XDP program: %s", what,
			    strerror(-pfd));
	uint32_t ids[MAX_PROG_MAPS] = { 0 };
	struct bpf_prog_info pi;
	uint32_t len = sizeof(pi);
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = MAX_PROG_MAPS;
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	ret = bpf_obj_get_info_by_fd(pfd, &pi, &len);
	close(pfd);
	if (ret || strcmp(pi.name, PROG_NAME) != 0)
		return fail(err, errlen, -ENOENT, "%s: its XDP program is not "
			    "scrub's: open the port with @conf:prog=scrub", what);
	for (uint32_t i = 0; i < pi.nr_map_ids && i < MAX_PROG_MAPS; i++) {
		int mfd = bpf_map_get_fd_by_id(ids[i]);
		if (mfd < 0)
			continue;
		struct bpf_map_info mi;
		uint32_t ml = sizeof(mi);
		memset(&mi, 0, sizeof(mi));
		int m = M_N;
		if (bpf_obj_get_info_by_fd(mfd, &mi, &ml) == 0)
			for (m = 0; m < M_N; m++)
				if (strcmp(mi.name, map_names[m]) == 0 && x->fd[m] < 0)
					break;
		if (m == M_CONF && mi.value_size != sizeof(struct xconf)) {
			close(mfd);
			return fail(err, errlen, -EPROTO, "%s: its scrub program "
				    "is another pktmap's (scrub_conf of %u bytes, "
				    "not %zu)", what, mi.value_size,
				    sizeof(struct xconf));
		}
		if (m < M_N)
			x->fd[m] = mfd;
		else
			close(mfd);
	}
	for (int m = 0; m < M_N; m++)
		if (x->fd[m] < 0)
			return fail(err, errlen, -ENOENT, "%s: the scrub program has "
				    "no map %s", what, map_names[m]);
	return 0;
}

static void lift_bans(struct scrub_xdp *x)
{
	struct ban_key k, next;
	/* Always delete the first key: deleting while walking with
	 * get_next_key restarts the walk anyway. */
	while (bpf_map_get_next_key(x->fd[M_BANS], NULL, &next) == 0) {
		k = next;
		if (bpf_map_delete_elem(x->fd[M_BANS], &k) != 0)
			break;
	}
	if (x->conf && bpf_map_get_next_key(x->fd[M_BANS], NULL, &next) != 0)
		atomic_store_explicit(PM_ATOMIC(&x->conf->nbans), 0,
				      memory_order_release);
}

int scrub_xdp_attach(struct pktmap_port *xdp_port, struct scrub_xdp **out,
		     char *err, size_t errlen)
{
	*out = NULL;
	int ifindex = port_ifindex(xdp_port, err, errlen);
	if (ifindex < 0)
		return ifindex;
	struct scrub_xdp *x = calloc(1, sizeof(*x));
	if (!x)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (int m = 0; m < M_N; m++)
		x->fd[m] = -1;
	char what[IF_NAMESIZE + 8];
	char ifn[IF_NAMESIZE] = "?";
	if_indextoname((unsigned)ifindex, ifn);
	snprintf(what, sizeof(what), "xdp:%s", ifn);
	int ret = find_maps(x, ifindex, what, err, errlen);
	if (ret == 0) {
		x->ncpu = libbpf_num_possible_cpus();
		if (x->ncpu <= 0)
			ret = fail(err, errlen, x->ncpu ? x->ncpu : -EINVAL,
				   "cannot count the possible CPUs");
	}
	if (ret == 0) {
		size_t pg = (size_t)sysconf(_SC_PAGESIZE);
		x->conf_len = (sizeof(struct xconf) + pg - 1) / pg * pg;
		void *m = mmap(NULL, x->conf_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, x->fd[M_CONF], 0);
		if (m == MAP_FAILED)
			ret = fail(err, errlen, -errno, "%s: cannot map scrub_conf: "
				   "%s", what, strerror(errno));
		else
			x->conf = m;
	}
	if (ret == 0)
		ret = scrub_xdp_load(x, NULL, 0);
	if (ret) {
		if (err && errlen && !err[0])
			fail(err, errlen, ret, "%s: %s", what, strerror(-ret));
		scrub_xdp_detach(x);
		return ret;
	}
	lift_bans(x);
	*out = x;
	return 0;
}

static bool is_host(const struct scrub_xdp_prefix *p)
{
	return p->len == (p->family == 4 ? 32 : 128);
}

/* The hosts' hash value of an allow-listed host: its rule with this bit
 * (the program's HOST_ALLOW). */
#define HOST_ALLOW 0x80000000u

/* A prefix's map (K_*); hosts go to the hash when `hash`. */
static unsigned kind_of(const struct scrub_xdp_prefix *p, bool hash)
{
	if (hash && is_host(p))
		return p->family == 4 ? K_HOSTS4 : K_HOSTS6;
	return (p->family == 6 ? 2u : 0u) + p->action;
}

static bool prefix_ok(const struct scrub_xdp_prefix *p)
{
	if (p->family != 4 && p->family != 6)
		return false;
	if (p->len > (p->family == 4 ? 32 : 128))
		return false;
	return p->action <= SCRUB_XDP_ALLOW && p->rule < SCRUB_XDP_MAX_RULES;
}

/* The prefix's address with its host bits cleared. */
static void masked(const struct scrub_xdp_prefix *p, uint8_t *out, unsigned nb)
{
	for (unsigned i = 0; i < nb; i++) {
		unsigned bits = p->len > i * 8 ? p->len - i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff00u >> bits);
		out[i] = p->addr[i] & mask;
	}
}

/* Send keys/values[0..n) to map fd, batch by batch. */
static int update_batches(int fd, void *keys, size_t ksz, uint32_t *vals,
			  uint32_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = BPF_ANY);
	uint32_t done = 0;
	while (done < n) {
		uint32_t cnt = n - done < BATCH ? n - done : BATCH;
		int ret = bpf_map_update_batch(fd, (char *)keys + (size_t)done * ksz,
					       vals + done, &cnt, &bo);
		if (ret && ret != -EINTR && ret != -EAGAIN)
			return ret;
		if (ret && cnt == 0)
			continue;
		done += cnt;
	}
	return 0;
}

/* The key of a prefix in map kind (its address masked to its length). */
static size_t key_of(const struct scrub_xdp_prefix *p, unsigned kind, char *k)
{
	if (kind == K_HOSTS4) {
		memcpy(k, p->addr, 4); /* the address, network order */
		return 4;
	}
	if (kind == K_HOSTS6) {
		struct ban_key bk;
		memset(&bk, 0, sizeof(bk));
		bk.family = p->family;
		memcpy(bk.addr, p->addr, p->family == 4 ? 4 : 16);
		memcpy(k, &bk, sizeof(bk));
		return sizeof(bk);
	}
	uint32_t plen = p->len;
	memcpy(k, &plen, sizeof(plen));
	masked(p, (uint8_t *)k + 4, kind_v6(kind) ? 16 : 4);
	return kind_v6(kind) ? sizeof(struct key6) : sizeof(struct key4);
}

/* A new map of kind (a trie, or a hosts' hash of `count` entries) as
 * the program's templates have it. */
static int map_new(unsigned kind, uint32_t count)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	/* Hosts: preallocated, as many as there are (batched inserts
	 * then take entries from the map's free lists instead of
	 * allocating each). */
	if (kind_host(kind))
		return bpf_map_create(BPF_MAP_TYPE_HASH, "scrub_hosts_g",
				      kind == K_HOSTS4 ? 4 : sizeof(struct ban_key),
				      sizeof(uint32_t), count, NULL);
	bool v6 = kind_v6(kind);
	return bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, v6 ? "scrub_trie6" :
			      "scrub_trie4", v6 ? sizeof(struct key6) :
			      sizeof(struct key4), sizeof(uint32_t),
			      SCRUB_XDP_MAX_PREFIXES, &mo);
}

/* A new map holding the `count` prefixes of `kind`; returns its fd or
 * -errno. */
static int build_map(const struct scrub_xdp_prefix *pre, size_t n,
		     unsigned kind, bool hash, uint32_t count)
{
	int fd = map_new(kind, count);
	if (fd < 0)
		return fd;
	const size_t ksz = sizeof(struct ban_key); /* the largest key */
	char *keys = malloc(count * ksz);
	uint32_t *vals = malloc(count * sizeof(uint32_t));
	int ret = keys && vals ? 0 : -ENOMEM;
	uint32_t j = 0;
	size_t kl = 0;
	/* Hosts: the deny-listed, then the allow-listed, which replace
	 * them in the hash where they are on both lists (allow first, as
	 * the engine; the batches go in in order). */
	for (int pass = 0; pass < (kind_host(kind) ? 2 : 1) && ret == 0; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (kind_of(&pre[i], hash) != kind ||
			    (kind_host(kind) && pre[i].action != (pass ?
					SCRUB_XDP_ALLOW : SCRUB_XDP_DENY)))
				continue;
			char k[sizeof(struct ban_key)];
			kl = key_of(&pre[i], kind, k);
			memcpy(keys + (size_t)j * kl, k, kl);
			vals[j++] = pre[i].rule | (pre[i].action == SCRUB_XDP_ALLOW &&
						   kind_host(kind) ? HOST_ALLOW : 0);
		}
	}
	if (ret == 0)
		ret = update_batches(fd, keys, kl, vals, j);
	free(keys);
	free(vals);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Put maps fds[kind] into generation gen's slots (an fd < 0 empties the
 * slot). */
static int place(struct scrub_xdp *x, uint32_t gen, const int fds[K_N])
{
	for (unsigned kind = 0; kind < K_N; kind++) {
		int outer = x->fd[kind == K_HOSTS4 ? M_HOSTS4 : kind == K_HOSTS6 ?
				  M_HOSTS : kind_v6(kind) ?
				  M_LISTS6 : M_LISTS4];
		uint32_t slot = kind_host(kind) ? gen : gen * 2 + (kind & 1);
		int ret;
		if (fds[kind] >= 0)
			ret = bpf_map_update_elem(outer, &slot, &fds[kind], BPF_ANY);
		else
			ret = bpf_map_delete_elem(outer, &slot);
		if (ret && ret != -ENOENT)
			return ret;
	}
	return 0;
}

/* The bits of the hosts that go into the hashes (the program looks a
 * source up there only when its bit is set). */
static void set_host_bits(uint64_t *bits, const struct scrub_xdp_prefix *pre,
			  size_t n, bool hash)
{
	memset(bits, 0, HB_WORDS * sizeof(*bits));
	for (size_t i = 0; i < n && hash; i++) {
		if (!is_host(&pre[i]))
			continue;
		uint32_t w[4], a;
		memcpy(w, pre[i].addr, 16);
		a = pre[i].family == 4 ? w[0] : w[0] ^ w[1] ^ w[2] ^ w[3];
		uint32_t b = host_bit(a);
		bits[b >> 6] |= 1ull << (b & 63);
	}
}

/* One map to build (build_maps()). */
struct build_job {
	const struct scrub_xdp_prefix *pre;
	size_t n;
	unsigned kind;
	bool hash, threaded;
	uint32_t count;
	int fd;
	pthread_t th;
};

static void *build_job_run(void *arg)
{
	struct build_job *j = arg;
	j->fd = build_map(j->pre, j->n, j->kind, j->hash, j->count);
	return NULL;
}

/* Lists at least this long are built on threads of their own, side by
 * side: the kernel inserts each prefix under its map's lock, so two
 * maps fill at once on two cores (1M prefixes: issue 32's 2 s). */
#define BUILD_THREAD_MIN 65536

/* The maps of every kind that has prefixes (count[kind]) into fds[];
 * 0, or the first error (the maps built are then closed). */
static int build_maps(const struct scrub_xdp_prefix *pre, size_t n, bool hash,
		      const uint32_t count[K_N], int fds[K_N])
{
	struct build_job job[K_N];
	int ret = 0;
	for (unsigned kind = 0; kind < K_N; kind++) {
		struct build_job *j = &job[kind];
		*j = (struct build_job){ .pre = pre, .n = n, .kind = kind,
					 .hash = hash, .count = count[kind],
					 .fd = -1 };
		if (j->count >= BUILD_THREAD_MIN)
			j->threaded = pthread_create(&j->th, NULL, build_job_run, j) == 0;
	}
	for (unsigned kind = 0; kind < K_N; kind++) {
		struct build_job *j = &job[kind];
		if (j->threaded)
			pthread_join(j->th, NULL);
		else if (j->count)
			build_job_run(j);
		fds[kind] = j->fd;
		if (j->count && j->fd < 0 && ret == 0)
			ret = j->fd;
	}
	for (unsigned kind = 0; kind < K_N && ret; kind++) {
		if (fds[kind] >= 0)
			close(fds[kind]);
		fds[kind] = -1;
	}
	return ret;
}

int scrub_xdp_load(struct scrub_xdp *x, const struct scrub_xdp_prefix *prefixes,
		   size_t n)
{
	uint32_t count[K_N] = { 0 };
	size_t hosts = 0;
	if (!x || (n && !prefixes))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!prefix_ok(&prefixes[i]))
			return -EINVAL;
		hosts += is_host(&prefixes[i]);
	}
	bool hash = hosts <= MAX_HOSTS;
	for (size_t i = 0; i < n; i++)
		if (++count[kind_of(&prefixes[i], hash)] > SCRUB_XDP_MAX_PREFIXES)
			return -E2BIG;
	int fds[K_N] = { -1, -1, -1, -1, -1, -1 };
	int ret = build_maps(prefixes, n, hash, count, fds);
	uint32_t live = atomic_load_explicit(PM_ATOMIC(&x->conf->gen), memory_order_acquire) & 1;
	if (ret == 0)
		ret = place(x, live ^ 1, fds);
	if (ret == 0)
		set_host_bits(x->conf->hbits[live ^ 1], prefixes, n, hash);
	if (ret == 0) {
		/* The slots are written (the syscalls above returned): from
		 * here on a frame that reads the new word finds them. */
		x->conf->lim[live ^ 1] = x->next;
		atomic_store_explicit(PM_ATOMIC(&x->conf->gen), live ^ 1,
				      memory_order_release);
	}
	/* The outer maps hold the new maps now; our descriptors go. */
	for (unsigned kind = 0; kind < K_N; kind++)
		if (fds[kind] >= 0)
			close(fds[kind]);
	return ret;
}

static int ban_key_of(struct ban_key *k, int family, const uint8_t addr[16])
{
	if ((family != 4 && family != 6) || !addr)
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->family = (uint32_t)family;
	memcpy(k->addr, addr, family == 4 ? 4 : 16);
	return 0;
}

int scrub_xdp_ban(struct scrub_xdp *x, int family, const uint8_t addr[16],
		  uint64_t until_ns, uint32_t rule)
{
	struct ban_key k;
	if (!x || rule > SCRUB_XDP_BANNED || ban_key_of(&k, family, addr))
		return -EINVAL;
	struct ban_val v = { .until_ns = until_ns, .rule = rule };
	_Atomic uint32_t *nbans = PM_ATOMIC(&x->conf->nbans);
	int ret = -ENOENT;
	/* A new entry is counted before it is in: the program looks bans
	 * up while the count is not 0. One that was there is replaced
	 * (and uncounted); removed meanwhile by an unban: again. */
	for (int i = 0; i < 4 && ret == -ENOENT; i++) {
		atomic_fetch_add_explicit(nbans, 1, memory_order_acq_rel);
		ret = bpf_map_update_elem(x->fd[M_BANS], &k, &v, BPF_NOEXIST);
		if (ret == 0)
			break;
		atomic_fetch_sub_explicit(nbans, 1, memory_order_acq_rel);
		if (ret == -EEXIST)
			ret = bpf_map_update_elem(x->fd[M_BANS], &k, &v, BPF_EXIST);
	}
	return ret == -E2BIG ? -ENOSPC : ret;
}

int scrub_xdp_unban(struct scrub_xdp *x, int family, const uint8_t addr[16])
{
	struct ban_key k;
	if (!x || ban_key_of(&k, family, addr))
		return -EINVAL;
	int ret = bpf_map_delete_elem(x->fd[M_BANS], &k);
	if (ret == 0)
		atomic_fetch_sub_explicit(PM_ATOMIC(&x->conf->nbans), 1,
					  memory_order_acq_rel);
	/* and the program's own ban (its buckets stay as they are, as the
	 * engine's do) */
	uint32_t k0 = 0, id;
	struct src_val v;
	if (x->nsrcs && bpf_map_lookup_elem(x->fd[M_SRCS], &k0, &id) == 0) {
		int t = bpf_map_get_fd_by_id(id);
		if (t >= 0) {
			if (bpf_map_lookup_elem(t, &k, &v) == 0 && v.ban_until) {
				v.ban_until = 0;
				if (bpf_map_update_elem(t, &k, &v, BPF_EXIST) == 0)
					ret = 0;
			}
			close(t);
		}
	}
	return ret;
}

/* A bucket's cost in 1/16 ns for `rate` a second (at least 1). */
static uint64_t cost16(double rate)
{
	double c = 16e9 / rate;
	return c < 1 ? 1 : (uint64_t)(c + 0.5);
}

/* Make the sources' (M_SRCS) or destinations' (M_DSTS) table of n
 * entries and put it in its slot, unless it has that size already. */
static int make_table(struct scrub_xdp *x, int m, uint32_t n, uint32_t *have)
{
	uint32_t k0 = 0;
	if (*have == n)
		return 0;
	int fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH,
				m == M_SRCS ? "scrub_src_t" : "scrub_dst_t",
				sizeof(struct ban_key), m == M_SRCS ?
				sizeof(struct src_val) : sizeof(uint64_t), n, NULL);
	if (fd < 0)
		return fd;
	int ret = bpf_map_update_elem(x->fd[m], &k0, &fd, BPF_ANY);
	close(fd);
	if (ret == 0)
		*have = n;
	return ret;
}

int scrub_xdp_set_limits(struct scrub_xdp *x, const struct scrub_xdp_limits *l)
{
	struct xlim n;
	int ret = 0;
	if (!x || !l)
		return -EINVAL;
	memset(&n, 0, sizeof(n));
	if (!l->judge) {
		x->next = n; /* the lists only, as without limits */
		return 0;
	}
	bool lim = l->pps > 0 || l->bps > 0, syn = l->syn_pps > 0;
	if ((l->bps > 0 && l->bps < SCRUB_XDP_MIN_BPS) || (lim && !l->sources) ||
	    (syn && !l->dests) || l->burst_s < 0 || l->syn_burst_s < 0 ||
	    l->burst_s > 1e6 || l->syn_burst_s > 1e6)
		return -EINVAL;
	n.flags = L_JUDGE | (lim ? L_LIMIT : 0) | (syn ? L_SYN : 0) |
		  (l->host ? L_HOST : 0);
	n.limit_rule = l->limit_rule;
	n.syn_rule = l->syn_rule;
	n.pcost = l->pps > 0 ? cost16(l->pps) : 0;
	/* per byte, << 16 (<< 0 below 16 B/s): frames up to 2^18 bytes
	 * times it stay below 2^64 */
	n.bshift = l->bps >= 16 ? 16 : 0;
	n.bcost = l->bps > 0 ? (uint64_t)(16e9 * (double)(1u << n.bshift) /
					  l->bps + 0.5) : 0;
	n.fill = (uint64_t)(l->burst_s * 16e9);
	n.ban_ns = l->ban_ns;
	n.scost = syn ? cost16(l->syn_pps) : 0;
	n.sfill = (uint64_t)(l->syn_burst_s * 16e9);
	if (lim)
		ret = make_table(x, M_SRCS, l->sources, &x->nsrcs);
	if (ret == 0 && syn)
		ret = make_table(x, M_DSTS, l->dests, &x->ndsts);
	if (ret == 0)
		x->next = n;
	return ret;
}

/* pkts and bytes of entries 0..n-1 of the per-CPU counters map fd,
 * summed over CPUs. */
static int sum_counts(struct scrub_xdp *x, int fd, uint64_t *pkts,
		      uint64_t *bytes, uint32_t n)
{
	struct rule_count *v = calloc((size_t)x->ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int ret = 0;
	for (uint32_t r = 0; r < n && ret == 0; r++) {
		ret = bpf_map_lookup_elem(fd, &r, v);
		uint64_t p = 0, b = 0;
		for (int c = 0; c < x->ncpu && ret == 0; c++) {
			p += v[c].pkts;
			b += v[c].bytes;
		}
		if (pkts)
			pkts[r] = p;
		if (bytes)
			bytes[r] = b;
	}
	free(v);
	return ret;
}

int scrub_xdp_rule_counts(struct scrub_xdp *x, uint64_t *pkts,
			  uint64_t *bytes, uint32_t nrules)
{
	if (!x || nrules > SCRUB_XDP_NCOUNTS)
		return -EINVAL;
	return sum_counts(x, x->fd[M_COUNTS], pkts, bytes, nrules);
}

int scrub_xdp_reason_counts(struct scrub_xdp *x, uint64_t *pkts,
			    uint64_t *bytes, uint32_t n)
{
	if (!x || n > SCRUB_XDP_NREASONS)
		return -EINVAL;
	return sum_counts(x, x->fd[M_REASONS], pkts, bytes, n);
}

void scrub_xdp_detach(struct scrub_xdp *x)
{
	if (!x)
		return;
	if (x->conf) {
		const int none[K_N] = { -1, -1, -1, -1, -1, -1 };
		uint32_t k0 = 0;
		/* Both generations emptied: nothing is dropped any more. */
		memset(&x->next, 0, sizeof(x->next));
		(void)scrub_xdp_load(x, NULL, 0);
		x->conf->lim[(x->conf->gen & 1) ^ 1] = x->next;
		(void)bpf_map_delete_elem(x->fd[M_SRCS], &k0);
		(void)bpf_map_delete_elem(x->fd[M_DSTS], &k0);
		(void)place(x, atomic_load_explicit(PM_ATOMIC(&x->conf->gen), memory_order_acquire) ^ 1,
			    none);
		munmap(x->conf, x->conf_len);
		x->conf = NULL;
	}
	if (x->fd[M_BANS] >= 0)
		lift_bans(x);
	for (int m = 0; m < M_N; m++)
		if (x->fd[m] >= 0)
			close(x->fd[m]);
	free(x);
}
