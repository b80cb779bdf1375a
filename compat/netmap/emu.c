/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The netmap device, emulated over pktmap ports.
 *
 * An open of /dev/netmap gets an eventfd as its file descriptor (a real
 * descriptor the program may close, dup, poll or hand to epoll) and a
 * `struct nme_file` in a table indexed by that descriptor. NIOCCTRL with
 * NETMAP_REQ_REGISTER (or the legacy NIOCREGIF) turns netmap's request
 * into a pktmap port name (see map_name) and opens it.
 *
 * Memory: the program mmap()s the file and finds its netmap_if at
 * nr_offset. Each memory id ("@N", or the region a port lives in) is one
 * small mapping per process holding the netmap_if of every open in that
 * memory, each in its own 4 KiB slot; the netmap_if is the open's own
 * (it lists only the rings the open bound: the others have offset 0, as
 * netmap gives) and its ring offsets point at the pktmap port's rings,
 * whose buf_ofs points at the region's buffers. Every mmap() of a file of
 * that memory returns the same mapping, so libnetmap's "same nr_mem_id,
 * same mapping" holds, and ports in one memory share their buffers
 * (zero-copy by swapping buf_idx).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "pktmap/pktmap.h"
#include "emu.h"
#include "vale_ctl.h"

#define NME_MAX_FD 65536
#define NME_IF_SLOT 4096u            /* bytes per netmap_if in a memory */
#define NME_IF_SLOTS 256u            /* netmap_ifs per memory */
#define NME_MEM_SIZE ((size_t)NME_IF_SLOT * NME_IF_SLOTS)
#define NME_PIPE_BUFS 32768u         /* buffers of a pipe region we create */
#define NME_AUTO_MEM_ID 40000u       /* ids for memories without "@N" */

/* One memory id of this process. */
struct nme_mem {
	uint16_t id;
	char region[64];     /* pktmap's region name ("" for private ones) */
	char *base;          /* NME_MEM_SIZE bytes of netmap_ifs */
	uint8_t used[NME_IF_SLOTS];
	int ports;           /* bound files in this memory */
	int maps;            /* outstanding mmap()s of it */
	struct nme_mem *next;
};

/* A pktmap port bound by one or more opens of this process: netmap lets
 * several opens bind the same rings (each with its own netmap_if listing
 * them) unless one asks NR_EXCLUSIVE ("/x"). The port's rings are then
 * the same rings for every open, as netmap's krings are, and each sync
 * call still goes through the port's checker. */
struct nme_bind {
	struct pktmap_port *port;
	char pname[256];           /* the pktmap name it was opened by */
	int refs;                  /* opens bound to it */
	bool excl;                 /* one of them asked NR_EXCLUSIVE */
	struct nme_bind *next;
};

/* One open of /dev/netmap (shared by dup()s of its descriptor). */
struct nme_file {
	int refs;                  /* descriptors pointing here */
	struct pktmap_port *port;  /* NULL until registered */
	struct nme_bind *bind;     /* port's binding, shared with other opens */
	struct nme_mem *mem;
	uint32_t slot;             /* netmap_if slot in mem */
	struct netmap_if *nifp;    /* the program's netmap_if */
	uint64_t flags;            /* NR_* flags of the registration */
	char name[NETMAP_REQ_IFNAMSIZ];
	struct nme_off *off;       /* buffer offsets, or NULL */
};

struct nme_libc nme_libc;
static _Atomic(struct nme_file *) files[NME_MAX_FD];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nme_mem *mems;
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nme_bind *binds;
static uint16_t next_auto_id = NME_AUTO_MEM_ID;

static __thread char last_err[256];
static __thread bool quiet;

const char *nme_last_error(void)
{
	return last_err;
}

void nme_quiet_errors(bool q)
{
	quiet = q;
}

/* Record the one-line reason of a failed request; the netmap module would
 * put it in the kernel log, we put it on stderr (PKTMAP_NETMAP_QUIET=1
 * silences it) unless libnetmap reports it through its nmctx. */
__attribute__((format(printf, 2, 3)))
static int fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	if (!quiet) {
		const char *q = getenv("PKTMAP_NETMAP_QUIET");
		if (!q || strcmp(q, "1") != 0) {
			char line[300];
			int n = snprintf(line, sizeof(line), "pktmap netmap: %s\n",
					 last_err);
			if (n > 0 && write(2, line, (size_t)n) < 0)
				n = 0;
		}
	}
	errno = err;
	return -1;
}

bool nme_is_device(const char *path)
{
	return path && strcmp(path, "/dev/netmap") == 0;
}

static struct nme_file *get(int fd)
{
	if (fd < 0 || fd >= NME_MAX_FD)
		return NULL;
	return atomic_load_explicit(&files[fd], memory_order_acquire);
}

bool nme_owns(int fd)
{
	return get(fd) != NULL;
}

int nme_open(int oflags)
{
	nme_libc_init();
	int fd = eventfd(0, EFD_NONBLOCK | ((oflags & O_CLOEXEC) ? EFD_CLOEXEC : 0));
	if (fd < 0)
		return -1;
	if (fd >= NME_MAX_FD) {
		nme_libc.close(fd);
		errno = EMFILE;
		return -1;
	}
	struct nme_file *f = calloc(1, sizeof(*f));
	if (!f) {
		nme_libc.close(fd);
		errno = ENOMEM;
		return -1;
	}
	f->refs = 1;
	atomic_store_explicit(&files[fd], f, memory_order_release);
	return fd;
}

/* ------------------------------------------------------------------ */
/* Memories */

static uint16_t mem_id_of_region(const char *region)
{
	unsigned n;
	char tail;
	if (sscanf(region, "mem%u%c", &n, &tail) == 1 && n > 0 && n < 65536)
		return (uint16_t)n;
	return 0;
}

/* The memory of a port in `region` (under lock): one per named region;
 * "memN" (from "@N") is memory id N, other regions get ids from
 * NME_AUTO_MEM_ID up, private ones one each. */
static struct nme_mem *mem_get(const char *region)
{
	uint16_t id = mem_id_of_region(region);
	for (struct nme_mem *m = mems; m; m = m->next)
		if (region[0] && strcmp(m->region, region) == 0)
			return m;
	struct nme_mem *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->base = nme_libc.mmap(NULL, NME_MEM_SIZE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->base == MAP_FAILED) {
		free(m);
		return NULL;
	}
	if (!id) {
		/* A private or unnumbered region: an id of its own. */
		for (;;) {
			id = next_auto_id++;
			if (next_auto_id == 0)
				next_auto_id = NME_AUTO_MEM_ID;
			bool taken = false;
			char name[16];
			snprintf(name, sizeof(name), "mem%u", id);
			taken = strcmp(name, region) == 0;
			for (struct nme_mem *o = mems; o; o = o->next)
				taken |= o->id == id;
			if (!taken)
				break;
		}
	}
	m->id = id;
	snprintf(m->region, sizeof(m->region), "%s", region);
	m->next = mems;
	mems = m;
	return m;
}

/* Free a memory nobody binds or maps any more (under lock). */
static void mem_put(struct nme_mem *m)
{
	if (m->ports > 0 || m->maps > 0)
		return;
	for (struct nme_mem **pp = &mems; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	nme_libc.munmap(m->base, NME_MEM_SIZE);
	free(m);
}

/* ------------------------------------------------------------------ */
/* Names: netmap's request -> a pktmap port name */

struct nme_req {
	const char *name;  /* nr_name */
	uint32_t mode, ringid;
	uint64_t flags;
	uint16_t mem_id;
	uint32_t tx_slots, rx_slots, tx_rings, rx_rings;
	uint32_t host_tx_rings, host_rx_rings;
	uint32_t extra_bufs;
	struct nmreq_opt_offsets *offsets; /* NETMAP_REQ_OPT_OFFSETS, or NULL */
};

static const char *const pktmap_prefixes[] = {
	"xdp:", "pkt:", "pipe:", "null:", "pcap:", "tap:",
};

static int appendf(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int appendf(char *out, size_t len, const char *fmt, ...)
{
	size_t used = strlen(out);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + used, len - used, fmt, ap);
	va_end(ap);
	return (n < 0 || (size_t)n >= len - used) ? -1 : 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* The name as a netmap user writes it: netmap:IFACE, valeX:Y. */
static void shown_name(const char *n, char *out, size_t len)
{
	if (strncmp(n, "netmap:", 7) == 0)
		n += 7;
	snprintf(out, len, "%s%s", strncmp(n, NM_BDG_NAME, 4) == 0 ? "" : "netmap:",
		 n);
}

/* Build the pktmap name for a request. Returns 0 or -1 with errno and the
 * one-line reason recorded. */
static int map_name(const struct nme_req *r, char *out, size_t len)
{
	const char *n = r->name;
	char shown[NETMAP_REQ_IFNAMSIZ + 8];
	shown_name(n, shown, sizeof(shown));
	if (strncmp(n, "netmap:", 7) == 0)
		n += 7;
	out[0] = 0;
	if (!n[0])
		return fail(EINVAL, "%s: empty port name", shown);
	if (r->mode == NR_REG_NULL)
		return fail(EOPNOTSUPP,
			    "%s: NR_REG_NULL (memory without rings) is not "
			    "available on pktmap", shown);
	if (r->mode > NR_REG_ONE_SW)
		return fail(EINVAL, "%s: unknown nr_mode %u", shown, r->mode);

	bool pipe = false;
	bool native = false;
	for (size_t i = 0; i < sizeof(pktmap_prefixes) / sizeof(*pktmap_prefixes); i++)
		if (strncmp(n, pktmap_prefixes[i], strlen(pktmap_prefixes[i])) == 0)
			native = true;
	const char *brace = strpbrk(n, "{}");
	char old_pipe[NETMAP_REQ_IFNAMSIZ + 16];
	if (!native && !brace && (r->mode == NR_REG_PIPE_MASTER ||
				  r->mode == NR_REG_PIPE_SLAVE)) {
		/* The old way to name a pipe: nr_mode and nr_ringid. */
		snprintf(old_pipe, sizeof(old_pipe), "%s%c%u", n,
			 r->mode == NR_REG_PIPE_MASTER ? '{' : '}', r->ringid);
		n = old_pipe;
		brace = strpbrk(n, "{}");
	}
	bool vale = strncmp(n, NM_BDG_NAME, 4) == 0 && strchr(n, ':');
	if (vale) {
		/* valeX:PORT: a port of the switch `pktmap switch valeX` (a
		 * memory of its own: @N does not apply) */
		if (r->mode != NR_REG_ALL_NIC && r->mode != NR_REG_DEFAULT)
			return fail(EOPNOTSUPP, "%s: a vale port has one ring "
				    "pair: no -N ^ * modes", shown);
		snprintf(out, len, "%s", n);
		native = true;
	} else if (native) {
		/* A pktmap name given as is (an extension: "netmap:pipe:x{0"). */
		snprintf(out, len, "%s", n);
		pipe = strncmp(n, "pipe:", 5) == 0;
	} else if (brace) {
		/* NAME{ID / NAME}ID: a pipe; netmap allows any identifier as
		 * ID, pktmap numbers pipes 0..4095: other ids become pipe 0
		 * of a pipe named NAME.ID (a memory of its own unless @N). */
		pipe = true;
		int nl = (int)(brace - n);
		const char *id = brace + 1;
		if (nl == 0)
			return fail(EINVAL, "%s: a pipe needs a name before '%c'",
				    shown, *brace);
		if (!*id || (all_digits(id) && strlen(id) <= 4 && atoi(id) <= 4095))
			snprintf(out, len, "pipe:%.*s%c%s", nl, n, *brace,
				 *id ? id : "0");
		else
			snprintf(out, len, "pipe:%.*s.%s%c0", nl, n, id, *brace);
	} else {
		const char *map = getenv("PKTMAP_NETMAP_MAP");
		if (!map || !*map)
			map = "xdp";
		if (strcmp(map, "xdp") != 0 && strcmp(map, "pkt") != 0)
			return fail(EINVAL,
				    "%s: PKTMAP_NETMAP_MAP=%s: use xdp or pkt",
				    shown, map);
		snprintf(out, len, "%s:%s", map, n);
	}

	int bad = 0;
	switch (r->mode) {
	case NR_REG_DEFAULT:
	case NR_REG_ALL_NIC:
		break;
	case NR_REG_ONE_NIC:
		bad = appendf(out, len, "-%u", r->ringid);
		break;
	case NR_REG_SW:
		bad = appendf(out, len, "^");
		break;
	case NR_REG_ONE_SW:
		bad = appendf(out, len, "^%u", r->ringid);
		break;
	case NR_REG_NIC_SW:
		bad = appendf(out, len, "*");
		break;
	case NR_REG_PIPE_MASTER:
	case NR_REG_PIPE_SLAVE:
		break; /* folded into the name above */
	}
	if (r->flags & NR_TX_RINGS_ONLY && r->flags & NR_RX_RINGS_ONLY)
		return fail(EINVAL, "%s: both NR_TX_RINGS_ONLY and "
			    "NR_RX_RINGS_ONLY", shown);
	/* /T /R, and netmap's monitor flags: pktmap's /t /r /z (monitor.c) */
	const uint32_t fl = NR_TX_RINGS_ONLY | NR_RX_RINGS_ONLY | NR_MONITOR_TX |
			    NR_MONITOR_RX | NR_ZCOPY_MON;
	bad |= appendf(out, len, "%s%s%s%s%s%s", r->flags & fl ? "/" : "",
		       r->flags & NR_TX_RINGS_ONLY ? "T" : "",
		       r->flags & NR_RX_RINGS_ONLY ? "R" : "",
		       r->flags & NR_MONITOR_TX ? "t" : "",
		       r->flags & NR_MONITOR_RX ? "r" : "",
		       r->flags & NR_ZCOPY_MON ? "z" : "");
	if (r->mem_id && !vale) {
		/* @N: the memory this process knows by that id (a region of
		 * any name: "@mem:"), else region memN, which other processes
		 * reach by the same @N; a private memory cannot be joined:
		 * the port gets one of its own and says so in nr_mem_id. */
		char region[64] = "";
		bool known = false;
		pthread_mutex_lock(&lock);
		for (struct nme_mem *m = mems; m; m = m->next)
			if (m->id == r->mem_id) {
				known = true;
				snprintf(region, sizeof(region), "%s", m->region);
			}
		pthread_mutex_unlock(&lock);
		if (!known)
			bad |= appendf(out, len, "@%u", r->mem_id);
		else if (region[0])
			bad |= appendf(out, len, "@mem:%s", region);
	}
	char conf[160] = "";
	if (r->tx_slots)
		bad |= appendf(conf, sizeof(conf), ",tx-slots=%u", r->tx_slots);
	if (r->rx_slots)
		bad |= appendf(conf, sizeof(conf), ",rx-slots=%u", r->rx_slots);
	if (pipe && r->tx_rings)
		bad |= appendf(conf, sizeof(conf), ",tx-rings=%u", r->tx_rings);
	if (pipe && r->rx_rings)
		bad |= appendf(conf, sizeof(conf), ",rx-rings=%u", r->rx_rings);
	if (pipe && !native) {
		/* netmap's memories are large and shared: another pipe in
		 * the same @N, or extra buffers asked by a later open, must
		 * find room in a region the first open creates. The file is
		 * sparse: only buffers in use take memory. */
		unsigned long bufs = NME_PIPE_BUFS;
		const char *e = getenv("PKTMAP_NETMAP_BUFS");
		if (e && *e)
			bufs = strtoul(e, NULL, 10);
		if (bufs < 2u * r->extra_bufs + 8192)
			bufs = 2u * r->extra_bufs + 8192;
		bad |= appendf(conf, sizeof(conf), ",bufs=%lu", bufs);
		/* offsets: buffers large enough for a full-size frame after
		 * the largest offset (when this open creates the region) */
		uint64_t maxoff = 0;
		if (r->offsets) {
			maxoff = r->offsets->nro_max_offset;
			if (maxoff < r->offsets->nro_initial_offset)
				maxoff = r->offsets->nro_initial_offset;
		}
		if (maxoff && maxoff + 1514 > 2048 && maxoff + 1514 <= 65536) {
			uint32_t bs = 4096; /* a power of two, as regions want */
			while (bs < maxoff + 1514)
				bs *= 2;
			bad |= appendf(conf, sizeof(conf), ",buf-size=%u", bs);
		}
	}
	if (conf[0])
		bad |= appendf(out, len, "@conf:%s", conf + 1);
	if (bad)
		return fail(ENAMETOOLONG, "%s: name too long", shown);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Registration */

static int errno_of_open(int err)
{
	switch (err) {
	case -ENODEV:
	case -ENOENT:
	case -ENXIO:
	case -ECONNREFUSED: /* vale: the switch is not running */
		return ENXIO; /* netmap's "no such port" */
	default:
		return err < 0 ? -err : EINVAL;
	}
}

/* Lay out the program's netmap_if for f's port in its memory slot. */
static void fill_nifp(struct nme_file *f, const struct pktmap_info *info)
{
	struct netmap_if *src = pktmap_nifp(f->port);
	struct netmap_if *dst = f->nifp;
	uint32_t ntx = src->ni_tx_rings + src->ni_host_tx_rings;
	uint32_t nrx = src->ni_rx_rings + src->ni_host_rx_rings;
	memset(dst, 0, NME_IF_SLOT);
	memcpy(dst, src, sizeof(*src));
	for (uint32_t i = 0; i < ntx + nrx; i++) {
		bool tx = i < ntx;
		uint32_t k = tx ? i : i - ntx;
		uint32_t lo = tx ? info->first_tx_ring : info->first_rx_ring;
		uint32_t hi = tx ? info->last_tx_ring : info->last_rx_ring;
		ssize_t ofs = 0;
		if (k >= lo && k <= hi && hi != UINT32_MAX && src->ring_ofs[i]) {
			char *ring = (char *)src + src->ring_ofs[i];
			ofs = ring - (char *)dst;
		}
		*(ssize_t *)&dst->ring_ofs[i] = ofs;
	}
}

static void off_free(struct nme_file *f);
/* Let go of one open's binding; the last closes the port. */
static void bind_put(struct nme_bind *b)
{
	pthread_mutex_lock(&bind_lock);
	bool last = --b->refs == 0;
	if (last)
		for (struct nme_bind **pp = &binds; *pp; pp = &(*pp)->next)
			if (*pp == b) {
				*pp = b->next;
				break;
			}
	pthread_mutex_unlock(&bind_lock);
	if (!last)
		return;
	pktmap_close(b->port);
	free(b);
}


static void unbind(struct nme_file *f)
{
	if (!f->port)
		return;
	/* Extra buffers: netmap takes back the list ni_bufs_head holds at
	 * close; hand it to the port, which frees from its own netmap_if
	 * when the last open bound to it closes. */
	if (f->nifp->ni_bufs_head)
		pktmap_nifp(f->port)->ni_bufs_head = f->nifp->ni_bufs_head;
	off_free(f);
	bind_put(f->bind);
	f->bind = NULL;
	f->port = NULL;
	pthread_mutex_lock(&lock);
	f->mem->used[f->slot] = 0;
	f->mem->ports--;
	mem_put(f->mem);
	pthread_mutex_unlock(&lock);
	f->mem = NULL;
	f->nifp = NULL;
}

/* Options: which ones exist, which ones pktmap honours. Sets every
 * option's status; returns 0 or -1 with errno. */
static int check_options(const struct nmreq_header *h, bool registering,
			 struct nmreq_opt_offsets **offsets)
{
	int ret = 0;
	unsigned count = 0;
	for (struct nmreq_option *o = (struct nmreq_option *)(uintptr_t)h->nr_options;
	     o; o = (struct nmreq_option *)(uintptr_t)o->nro_next) {
		if (++count > 64)
			return fail(EINVAL, "%s: option list too long (a loop?)",
				    h->nr_name);
		const char *what = NULL;
		switch (o->nro_reqtype) {
		case NETMAP_REQ_OPT_EXTMEM:
			what = "extmem (memory the program provides) is not "
			       "available on pktmap";
			break;
		case NETMAP_REQ_OPT_CSB:
		case NETMAP_REQ_OPT_SYNC_KLOOP_EVENTFDS:
		case NETMAP_REQ_OPT_SYNC_KLOOP_MODE:
			what = "CSB/kloop (ptnetmap, sync in a kernel loop) is not "
			       "available on pktmap";
			break;
		case NETMAP_REQ_OPT_OFFSETS:
			if (registering && offsets) {
				*offsets = (struct nmreq_opt_offsets *)o;
				o->nro_status = 0;
				continue;
			}
			what = "buffer offsets are an option of NETMAP_REQ_REGISTER";
			break;
		default:
			o->nro_status = EOPNOTSUPP;
			fail(EOPNOTSUPP, "%s: unknown option %u", h->nr_name,
			     o->nro_reqtype);
			ret = -1;
			continue;
		}
		o->nro_status = EOPNOTSUPP;
		fail(EOPNOTSUPP, "%s: %s", h->nr_name, what);
		ret = -1;
	}
	if (ret)
		errno = EOPNOTSUPP;
	return ret;
}

/* ------------------------------------------------------------------ */
/* Buffer offsets (NETMAP_REQ_OPT_OFFSETS).
 *
 * The low bits of slot->ptr (ring->offset_mask) say where a packet starts
 * in its buffer. pktmap's back ends move packets that start at the
 * buffer's first byte, so the emulation moves the bytes at each sync: a
 * TX packet from its offset down to the start before the txsync, an RX
 * packet up to the offset the program left in that slot after the rxsync.
 * A copy, paid only by programs that ask for offsets. */

struct nme_off_ring {
	struct netmap_ring *ring;
	bool tx;
	uint32_t done;   /* TX: moved down up to here; RX: offsets read to here */
	uint32_t seen;   /* RX: moved up to here */
	uint64_t *want;  /* RX: the offset the program set, per slot */
};

struct nme_off {
	uint64_t mask;
	uint32_t usable; /* bytes from NETMAP_BUF() a buffer holds */
	uint32_t n;
	struct nme_off_ring r[];
};

static uint32_t off_next(const struct netmap_ring *ring, uint32_t i)
{
	return i + 1 == ring->num_slots ? 0 : i + 1;
}

/* Before a txsync: packets in [done, head) move to the buffer's start. */
static void off_tx(struct nme_file *f)
{
	struct nme_off *o = f->off;
	for (uint32_t k = 0; o && k < o->n; k++) {
		struct nme_off_ring *r = &o->r[k];
		struct netmap_ring *ring = r->ring;
		uint32_t head = ring->head;
		if (!r->tx || head >= ring->num_slots)
			continue;
		for (uint32_t i = r->done; i != head; i = off_next(ring, i)) {
			struct netmap_slot *s = &ring->slot[i];
			uint64_t at = s->ptr & o->mask;
			if (!at)
				continue;
			if (at + s->len > o->usable) {
				s->len = 0; /* past the buffer: the checker drops it */
				continue;
			}
			char *b = NETMAP_BUF(ring, s->buf_idx);
			memmove(b, b + at, s->len);
		}
		r->done = head;
	}
}

/* Before an rxsync: remember the offsets the program set in the slots it
 * gives back. */
static void off_rx_pre(struct nme_file *f)
{
	struct nme_off *o = f->off;
	for (uint32_t k = 0; o && k < o->n; k++) {
		struct nme_off_ring *r = &o->r[k];
		struct netmap_ring *ring = r->ring;
		uint32_t head = ring->head;
		if (r->tx || head >= ring->num_slots)
			continue;
		for (uint32_t i = r->done; i != head; i = off_next(ring, i))
			r->want[i] = ring->slot[i].ptr & o->mask;
		r->done = head;
	}
}

/* After an rxsync: new packets in [seen, tail) move up to their offset. */
static void off_rx_post(struct nme_file *f)
{
	struct nme_off *o = f->off;
	for (uint32_t k = 0; o && k < o->n; k++) {
		struct nme_off_ring *r = &o->r[k];
		struct netmap_ring *ring = r->ring;
		uint32_t tail = ring->tail;
		if (r->tx || tail >= ring->num_slots)
			continue;
		for (uint32_t i = r->seen; i != tail; i = off_next(ring, i)) {
			struct netmap_slot *s = &ring->slot[i];
			uint64_t at = r->want[i];
			if (at && at + s->len <= o->usable) {
				char *b = NETMAP_BUF(ring, s->buf_idx);
				memmove(b + at, b, s->len);
			} else {
				at = 0; /* no room past it: the packet stays first */
			}
			s->ptr = (s->ptr & ~o->mask) | at;
		}
		r->seen = tail;
	}
}

static int f_txsync(struct nme_file *f)
{
	off_tx(f);
	return pktmap_txsync(f->port);
}

static int f_rxsync(struct nme_file *f)
{
	off_rx_pre(f);
	int r = pktmap_rxsync(f->port);
	off_rx_post(f);
	return r;
}

/* Set up offsets for f's bound rings: mask, the initial offset in every
 * slot. Returns 0 or -1 with errno and the reason. */
static int off_setup(struct nme_file *f, struct nmreq_opt_offsets *opt,
		     const struct pktmap_info *info)
{
	uint32_t bits = opt->nro_offset_bits;
	uint64_t mask = bits == 0 || bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
	uint32_t usable = info->buf_usable ? info->buf_usable : info->buf_size;
	if (bits > 64)
		return fail(EINVAL, "%s: offsets of %u bits (at most 64)", f->name,
			    bits);
	if (opt->nro_max_offset < opt->nro_initial_offset)
		opt->nro_max_offset = opt->nro_initial_offset;
	if (opt->nro_max_offset > mask)
		return fail(EINVAL, "%s: offsets up to %llu do not fit in %u bits",
			    f->name, (unsigned long long)opt->nro_max_offset,
			    bits);
	if (opt->nro_max_offset + 1514 > usable)
		return fail(EINVAL, "%s: offsets up to %llu leave no room for a "
			    "1514-byte frame in buffers of %u bytes", f->name,
			    (unsigned long long)opt->nro_max_offset, usable);
	struct netmap_if *nifp = f->nifp;
	uint32_t ntx = nifp->ni_tx_rings + nifp->ni_host_tx_rings;
	uint32_t nall = ntx + nifp->ni_rx_rings + nifp->ni_host_rx_rings;
	struct nme_off *o = calloc(1, sizeof(*o) + nall * sizeof(o->r[0]));
	if (!o)
		return fail(ENOMEM, "%s: out of memory", f->name);
	o->mask = mask;
	o->usable = usable;
	for (uint32_t i = 0; i < nall; i++) {
		if (!nifp->ring_ofs[i])
			continue;
		struct nme_off_ring *r = &o->r[o->n];
		r->ring = (struct netmap_ring *)(void *)((char *)nifp +
							 nifp->ring_ofs[i]);
		r->tx = i < ntx;
		if (!r->tx) {
			r->want = calloc(r->ring->num_slots, sizeof(*r->want));
			if (!r->want) {
				for (uint32_t k = 0; k < o->n; k++)
					free(o->r[k].want);
				free(o);
				return fail(ENOMEM, "%s: out of memory", f->name);
			}
		}
		o->n++;
		struct netmap_ring *ring = r->ring;
		*(uint64_t *)(void *)&ring->offset_mask = mask;
		*(uint64_t *)(void *)&ring->buf_align = 1;
		for (uint32_t k = 0; k < ring->num_slots; k++) {
			struct netmap_slot *s = &ring->slot[k];
			s->ptr = (s->ptr & ~mask) | opt->nro_initial_offset;
			if (r->want)
				r->want[k] = opt->nro_initial_offset;
		}
		r->done = ring->head;
		r->seen = ring->tail;
	}
	opt->nro_offset_bits = bits == 0 ? 64 : bits;
	f->off = o;
	return 0;
}

static void off_free(struct nme_file *f)
{
	if (!f->off)
		return;
	for (uint32_t k = 0; k < f->off->n; k++)
		free(f->off->r[k].want);
	free(f->off);
	f->off = NULL;
}

static void log_to_buf(void *ctx, enum pktmap_log_level lvl, const char *msg)
{
	(void)ctx;
	(void)lvl;
	(void)msg; /* the open error arrives through errbuf */
}

/* Open the port named `name` for request r. On success *out and *info are
 * set. */
static int open_named(const struct nme_req *r, const char *name,
		      struct pktmap_port **out, struct pktmap_info *info)
{
	char err[256] = "";
	struct pktmap_open_opts o = {
		.sz = sizeof(o),
		.extra_bufs = r->extra_bufs,
		.errbuf = err,
		.errbuf_len = sizeof(err),
		.log = log_to_buf,
	};
	int ret = pktmap_open(out, name, &o);
	if (ret) {
		char shown[NETMAP_REQ_IFNAMSIZ + 8];
		shown_name(r->name, shown, sizeof(shown));
		const char *what = err[0] ? err : pktmap_strerror(ret);
		size_t n = strlen(shown);
		/* a name that is pktmap's own (vale0:x) is said once */
		if (strncmp(what, shown, n) == 0 && what[n] == ':')
			return fail(errno_of_open(ret), "%s", what);
		return fail(errno_of_open(ret), "%s: %s", shown, what);
	}
	memset(info, 0, sizeof(*info));
	info->sz = sizeof(*info);
	pktmap_info(*out, info);
	return 0;
}

static int open_port(const struct nme_req *r, struct pktmap_port **out,
		     struct pktmap_info *info)
{
	char name[256];
	if (map_name(r, name, sizeof(name)))
		return -1;
	return open_named(r, name, out, info);
}

/* The binding for request r: the port another open of this process has
 * bound by the same name (shared, netmap's rule, unless either asks
 * NR_EXCLUSIVE), else a new one. *shared says which. Returns it or NULL
 * with errno and the reason. */
static struct nme_bind *bind_get(const struct nme_req *r,
				 struct pktmap_info *info, bool *shared)
{
	char name[256], shown[NETMAP_REQ_IFNAMSIZ + 8];
	if (map_name(r, name, sizeof(name)))
		return NULL;
	shown_name(r->name, shown, sizeof(shown));
	bool excl = r->flags & NR_EXCLUSIVE;
	/* The same port: the same name up to its options ("@N", "@conf:"),
	 * which do not change what an existing port is. */
	size_t plen = strcspn(name, "@");
	pthread_mutex_lock(&bind_lock);
	struct nme_bind *b = binds;
	while (b && (strncmp(b->pname, name, plen) != 0 ||
		     strcspn(b->pname, "@") != plen))
		b = b->next;
	if (b && (b->excl || excl || r->offsets)) {
		pthread_mutex_unlock(&bind_lock);
		fail(EBUSY, "%s: %s", shown, b->excl ?
		     "its rings are bound by another open that asked for them "
		     "alone (/x, NR_EXCLUSIVE)" : excl ?
		     "its rings are bound by another open: /x (NR_EXCLUSIVE) "
		     "needs them unbound" :
		     "buffer offsets need the rings unshared: close the other "
		     "open of this port");
		return NULL;
	}
	*shared = b != NULL;
	if (b) {
		b->refs++;
		pthread_mutex_unlock(&bind_lock);
		memset(info, 0, sizeof(*info));
		info->sz = sizeof(*info);
		pktmap_info(b->port, info);
		return b;
	}
	b = calloc(1, sizeof(*b));
	if (!b || open_named(r, name, &b->port, info)) {
		pthread_mutex_unlock(&bind_lock);
		if (!b)
			fail(ENOMEM, "%s: out of memory", shown);
		free(b);
		return NULL;
	}
	snprintf(b->pname, sizeof(b->pname), "%s", name);
	b->refs = 1;
	b->excl = excl;
	b->next = binds;
	binds = b;
	pthread_mutex_unlock(&bind_lock);
	return b;
}

static int do_register(struct nme_file *f, struct nme_req *r)
{
	struct pktmap_info info;
	if (f->port)
		return fail(EBUSY, "netmap:%s: this file descriptor is already "
			    "bound to %s", r->name, f->name);
	bool shared = false;
	f->bind = bind_get(r, &info, &shared);
	if (!f->bind)
		return -1;
	f->port = f->bind->port;
	pthread_mutex_lock(&lock);
	struct nme_mem *m = mem_get(info.region);
	uint32_t slot = NME_IF_SLOTS;
	if (m)
		for (slot = 0; slot < NME_IF_SLOTS && m->used[slot]; slot++)
			;
	if (!m || slot == NME_IF_SLOTS) {
		pthread_mutex_unlock(&lock);
		bind_put(f->bind);
		f->bind = NULL;
		f->port = NULL;
		return fail(ENOMEM, "netmap:%s: too many ports in one memory",
			    r->name);
	}
	m->used[slot] = 1;
	m->ports++;
	pthread_mutex_unlock(&lock);
	f->mem = m;
	f->slot = slot;
	f->nifp = (struct netmap_if *)(m->base + (size_t)slot * NME_IF_SLOT);
	f->flags = r->flags;
	snprintf(f->name, sizeof(f->name), "%s", r->name);
	fill_nifp(f, &info);
	if (shared) /* the extra buffers are the first open's */
		f->nifp->ni_bufs_head = 0;
	if (r->offsets && off_setup(f, r->offsets, &info)) {
		int e = errno;
		unbind(f);
		errno = e;
		return -1;
	}

	struct netmap_if *nifp = f->nifp;
	r->tx_rings = info.tx_rings;
	r->rx_rings = info.rx_rings;
	r->host_tx_rings = info.host_tx_rings;
	r->host_rx_rings = info.host_rx_rings;
	r->tx_slots = info.tx_slots;
	r->rx_slots = info.rx_slots;
	r->mem_id = m->id;
	/* pktmap_open() gives all the extra buffers asked for or fails. */
	if (!nifp->ni_bufs_head)
		r->extra_bufs = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* NIOCCTRL */

static int port_info(struct nme_file *f, struct nme_req *r,
		     struct nmreq_port_info_get *pi)
{
	struct pktmap_info info;
	uint16_t id;
	/* A port this process has bound answers for itself (a pipe end
	 * cannot be opened twice to look at it). */
	struct nme_file *bound = NULL;
	if (f->port && strcmp(f->name, r->name) == 0)
		bound = f;
	for (int i = 0; !bound && i < NME_MAX_FD; i++) {
		struct nme_file *o = get(i);
		if (o && o->port && strcmp(o->name, r->name) == 0)
			bound = o;
	}
	if (bound) {
		info.sz = sizeof(info);
		pktmap_info(bound->port, &info);
		id = bound->mem->id;
	} else {
		/* netmap answers without binding: open, look, close. */
		struct pktmap_port *p;
		if (open_port(r, &p, &info))
			return -1;
		pthread_mutex_lock(&lock);
		struct nme_mem *m = mem_get(info.region);
		id = m ? m->id : 0;
		if (m)
			mem_put(m);
		pthread_mutex_unlock(&lock);
		pktmap_close(p);
	}
	pi->nr_memsize = NME_MEM_SIZE;
	pi->nr_tx_slots = info.tx_slots;
	pi->nr_rx_slots = info.rx_slots;
	pi->nr_tx_rings = (uint16_t)info.tx_rings;
	pi->nr_rx_rings = (uint16_t)info.rx_rings;
	pi->nr_host_tx_rings = (uint16_t)info.host_tx_rings;
	pi->nr_host_rx_rings = (uint16_t)info.host_rx_rings;
	pi->nr_mem_id = id;
	return 0;
}

/* vale-ctl's requests: the running switch serves them (vale_ctl.c). */
static int vale(uint16_t reqtype, char *name, void *body)
{
	char err[300];
	int ret = nme_vale_request(reqtype, name, body, err, sizeof(err));
	if (ret == -ENOENT && reqtype == NETMAP_REQ_VALE_LIST) {
		errno = ENOENT; /* the end of a listing: not an error to print */
		return -1;
	}
	return ret ? fail(-ret, "%s", err) : 0;
}

static int ctrl(struct nme_file *f, struct nmreq_header *h)
{
	if (!h)
		return fail(EFAULT, "NIOCCTRL without a request");
	if (h->nr_version < NETMAP_MIN_API || h->nr_version > NETMAP_MAX_API) {
		int v = h->nr_version;
		h->nr_version = NETMAP_API;
		return fail(EINVAL, "%.*s: API mismatch: the program speaks "
			    "netmap API %d, pktmap %d..%d",
			    NETMAP_REQ_IFNAMSIZ, h->nr_name, v, NETMAP_MIN_API,
			    NETMAP_MAX_API);
	}
	if (h->nr_reserved)
		return fail(EINVAL, "NIOCCTRL: nr_reserved must be zero");
	if (memchr(h->nr_name, 0, sizeof(h->nr_name)) == NULL)
		return fail(EINVAL, "NIOCCTRL: nr_name is not terminated");
	void *body = (void *)(uintptr_t)h->nr_body;
	if (!body && h->nr_reqtype != NETMAP_REQ_SYNC_KLOOP_STOP &&
	    h->nr_reqtype != NETMAP_REQ_VALE_DELIF &&
	    h->nr_reqtype != NETMAP_REQ_VALE_DETACH)
		return fail(EINVAL, "%s: request without a body", h->nr_name);

	switch (h->nr_reqtype) {
	case NETMAP_REQ_REGISTER: {
		struct nmreq_register *reg = body;
		struct nmreq_opt_offsets *offsets = NULL;
		if (check_options(h, true, &offsets))
			return -1;
		struct nme_req r = {
			.offsets = offsets,
			.name = h->nr_name,
			.mode = reg->nr_mode,
			.ringid = reg->nr_ringid,
			.flags = reg->nr_flags,
			.mem_id = reg->nr_mem_id,
			.tx_slots = reg->nr_tx_slots,
			.rx_slots = reg->nr_rx_slots,
			.tx_rings = reg->nr_tx_rings,
			.rx_rings = reg->nr_rx_rings,
			.extra_bufs = reg->nr_extra_bufs,
		};
		if (do_register(f, &r))
			return -1;
		reg->nr_offset = (uint64_t)f->slot * NME_IF_SLOT;
		reg->nr_memsize = NME_MEM_SIZE;
		reg->nr_tx_slots = r.tx_slots;
		reg->nr_rx_slots = r.rx_slots;
		reg->nr_tx_rings = (uint16_t)r.tx_rings;
		reg->nr_rx_rings = (uint16_t)r.rx_rings;
		reg->nr_host_tx_rings = (uint16_t)r.host_tx_rings;
		reg->nr_host_rx_rings = (uint16_t)r.host_rx_rings;
		reg->nr_mem_id = r.mem_id;
		reg->nr_extra_bufs = r.extra_bufs;
		return 0;
	}
	case NETMAP_REQ_PORT_INFO_GET: {
		struct nmreq_port_info_get *pi = body;
		if (check_options(h, false, NULL))
			return -1;
		struct nme_req r = { .name = h->nr_name, .mode = NR_REG_ALL_NIC,
				     .mem_id = pi->nr_mem_id };
		return port_info(f, &r, pi);
	}
	case NETMAP_REQ_PORT_HDR_GET: {
		struct nmreq_port_hdr *ph = body;
		ph->nr_hdr_len = 0; /* pktmap ports carry no virtio-net header */
		return 0;
	}
	case NETMAP_REQ_PORT_HDR_SET: {
		struct nmreq_port_hdr *ph = body;
		if (ph->nr_hdr_len == 0)
			return 0;
		return fail(EINVAL, "%s: virtio-net headers are not available "
			    "on pktmap ports", h->nr_name);
	}
	case NETMAP_REQ_POOLS_INFO_GET: {
		struct nmreq_pools_info *pl = body;
		if (!f->port)
			return fail(ENXIO, "%s: POOLS_INFO_GET on a file descriptor "
				    "that is not bound (register first)",
				    h->nr_name);
		struct pktmap_info info = { .sz = sizeof(info) };
		pktmap_info(f->port, &info);
		memset(pl, 0, sizeof(*pl));
		pl->nr_memsize = NME_MEM_SIZE;
		pl->nr_mem_id = f->mem->id;
		pl->nr_if_pool_objtotal = NME_IF_SLOTS;
		pl->nr_if_pool_objsize = NME_IF_SLOT;
		/* Rings and buffers are not in the mapping: each ring's
		 * buf_ofs points at the buffers wherever they are. */
		pl->nr_buf_pool_objtotal = info.bufs;
		pl->nr_buf_pool_objsize = info.buf_size;
		return 0;
	}
	case NETMAP_REQ_VALE_ATTACH:
	case NETMAP_REQ_VALE_DETACH:
	case NETMAP_REQ_VALE_LIST:
	case NETMAP_REQ_VALE_NEWIF:
	case NETMAP_REQ_VALE_DELIF:
	case NETMAP_REQ_VALE_POLLING_ENABLE:
	case NETMAP_REQ_VALE_POLLING_DISABLE:
		return vale(h->nr_reqtype, h->nr_name, body);
	case NETMAP_REQ_SYNC_KLOOP_START:
	case NETMAP_REQ_SYNC_KLOOP_STOP:
	case NETMAP_REQ_CSB_ENABLE:
		return fail(EOPNOTSUPP, "%s: CSB/kloop (sync in a kernel loop) "
			    "is not available on pktmap", h->nr_name);
	default:
		return fail(EINVAL, "%s: unknown request type %u", h->nr_name,
			    h->nr_reqtype);
	}
}

/* vale-ctl's legacy commands (nr_cmd NETMAP_BDG_*), as netmap turns them
 * into NETMAP_REQ_VALE_* requests. */
static int legacy_vale(struct nmreq *nmr, char *name)
{
	char nm[NETMAP_REQ_IFNAMSIZ];
	snprintf(nm, sizeof(nm), "%s", name);
	if (nmr->nr_cmd == NETMAP_BDG_LIST) {
		struct nmreq_vale_list l = { .nr_bridge_idx = nmr->nr_arg1,
					     .nr_port_idx = nmr->nr_arg2 };
		if (vale(NETMAP_REQ_VALE_LIST, nm, &l))
			return -1;
		memcpy(nmr->nr_name, nm, IFNAMSIZ);
		nmr->nr_name[IFNAMSIZ - 1] = 0;
		nmr->nr_arg1 = l.nr_bridge_idx;
		nmr->nr_arg2 = (uint16_t)l.nr_port_idx;
		return 0;
	}
	struct nmreq_vale_attach a = { 0 };
	struct nmreq_vale_newif n = { 0 };
	switch (nmr->nr_cmd) {
	case NETMAP_BDG_ATTACH:
		a.reg.nr_mode = nmr->nr_arg1 == NETMAP_BDG_HOST ||
			(nmr->nr_flags & NR_REG_MASK) == NR_REG_NIC_SW ?
			NR_REG_NIC_SW : NR_REG_ALL_NIC;
		return vale(NETMAP_REQ_VALE_ATTACH, nm, &a);
	case NETMAP_BDG_DETACH:
		return vale(NETMAP_REQ_VALE_DETACH, nm, NULL);
	case NETMAP_BDG_NEWIF:
		return vale(NETMAP_REQ_VALE_NEWIF, nm, &n);
	case NETMAP_BDG_DELIF:
		return vale(NETMAP_REQ_VALE_DELIF, nm, NULL);
	case NETMAP_BDG_POLLING_ON:
	case NETMAP_BDG_POLLING_OFF:
		return vale(NETMAP_REQ_VALE_POLLING_ENABLE, nm, NULL);
	default: /* REGOPS */
		return fail(EOPNOTSUPP, "%s: NETMAP_BDG_REGOPS (a kernel lookup "
			    "function) is not available on pktmap", name);
	}
}

/* The legacy NIOCREGIF / NIOCGINFO. */
static int legacy(struct nme_file *f, unsigned long req, struct nmreq *nmr)
{
	if (!nmr)
		return fail(EFAULT, "NIOCREGIF without a request");
	if (nmr->nr_version < 11 || nmr->nr_version > NETMAP_MAX_API) {
		int v = (int)nmr->nr_version;
		nmr->nr_version = NETMAP_API;
		return fail(EINVAL, "%.*s: API mismatch: the program speaks "
			    "netmap API %d, pktmap 11..%d", IFNAMSIZ,
			    nmr->nr_name, v, NETMAP_MAX_API);
	}
	char name[IFNAMSIZ + 1];
	memcpy(name, nmr->nr_name, IFNAMSIZ);
	name[IFNAMSIZ] = 0;
	if (nmr->nr_cmd && nmr->nr_cmd <= NETMAP_BDG_POLLING_OFF &&
	    nmr->nr_cmd != NETMAP_BDG_VNET_HDR &&
	    nmr->nr_cmd != NETMAP_PT_HOST_CREATE &&
	    nmr->nr_cmd != NETMAP_PT_HOST_DELETE)
		return legacy_vale(nmr, name);
	if (nmr->nr_cmd == NETMAP_VNET_HDR_GET) {
		nmr->nr_arg1 = 0;
		return 0;
	}
	if (nmr->nr_cmd == NETMAP_PT_HOST_CREATE ||
	    nmr->nr_cmd == NETMAP_PT_HOST_DELETE)
		return fail(EOPNOTSUPP, "%s: ptnetmap (netmap passthrough to a "
			    "VM) is not available on pktmap", name);
	if (nmr->nr_cmd)
		return fail(EOPNOTSUPP, "%s: legacy command %u is not available "
			    "on pktmap", name, nmr->nr_cmd);

	struct nme_req r = { .name = name, .mem_id = nmr->nr_arg2,
			     .extra_bufs = nmr->nr_arg3,
			     .tx_slots = nmr->nr_tx_slots,
			     .rx_slots = nmr->nr_rx_slots,
			     .tx_rings = nmr->nr_tx_rings,
			     .rx_rings = nmr->nr_rx_rings };
	r.mode = nmr->nr_flags & NR_REG_MASK;
	r.flags = nmr->nr_flags & ~(uint32_t)NR_REG_MASK;
	r.ringid = nmr->nr_ringid & NETMAP_RING_MASK;
	if (r.mode == NR_REG_DEFAULT) {
		if (nmr->nr_ringid & NETMAP_SW_RING)
			r.mode = NR_REG_SW;
		else if (nmr->nr_ringid & NETMAP_HW_RING)
			r.mode = NR_REG_ONE_NIC;
		else
			r.mode = NR_REG_ALL_NIC;
	}
	if (nmr->nr_ringid & NETMAP_NO_TX_POLL)
		r.flags |= NR_NO_TX_POLL;
	if (nmr->nr_ringid & NETMAP_DO_RX_POLL)
		r.flags |= NR_DO_RX_POLL;

	if (req == NIOCGINFO) {
		struct nmreq_port_info_get pi = { 0 };
		r.mode = NR_REG_ALL_NIC;
		if (port_info(f, &r, &pi))
			return -1;
		nmr->nr_memsize = (uint32_t)pi.nr_memsize;
		nmr->nr_tx_slots = pi.nr_tx_slots;
		nmr->nr_rx_slots = pi.nr_rx_slots;
		nmr->nr_tx_rings = pi.nr_tx_rings;
		nmr->nr_rx_rings = pi.nr_rx_rings;
		nmr->nr_arg2 = pi.nr_mem_id;
		return 0;
	}
	if (do_register(f, &r))
		return -1;
	nmr->nr_offset = f->slot * NME_IF_SLOT;
	nmr->nr_memsize = (uint32_t)NME_MEM_SIZE;
	nmr->nr_tx_slots = r.tx_slots;
	nmr->nr_rx_slots = r.rx_slots;
	nmr->nr_tx_rings = (uint16_t)r.tx_rings;
	nmr->nr_rx_rings = (uint16_t)r.rx_rings;
	nmr->nr_arg2 = r.mem_id;
	nmr->nr_arg3 = r.extra_bufs;
	return 0;
}

int nme_ioctl(int fd, unsigned long req, void *arg)
{
	struct nme_file *f = get(fd);
	if (!f) {
		errno = EBADF;
		return -1;
	}
	int r;
	switch (req) {
	case NIOCTXSYNC:
	case NIOCRXSYNC:
		if (!f->port)
			return fail(ENXIO, "NIOC%sSYNC on a file descriptor that "
				    "is not bound to a port",
				    req == NIOCTXSYNC ? "TX" : "RX");
		r = req == NIOCTXSYNC ? f_txsync(f) : f_rxsync(f);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		return 0;
	case NIOCCTRL:
		return ctrl(f, arg);
	case NIOCREGIF:
	case NIOCGINFO:
		return legacy(f, req, arg);
	case FIONBIO:
		return 0; /* netmap's fd never blocks on ioctl anyway */
	default:
		errno = ENOTTY;
		return -1;
	}
}

/* ------------------------------------------------------------------ */
/* mmap */

void *nme_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	(void)addr;
	(void)prot;
	struct nme_file *f = get(fd);
	if (!f) {
		errno = EBADF;
		return MAP_FAILED;
	}
	if (!f->port) {
		fail(EINVAL, "mmap of /dev/netmap before NETMAP_REQ_REGISTER");
		return MAP_FAILED;
	}
	if (off != 0 || len == 0 || len > NME_MEM_SIZE || (flags & MAP_FIXED)) {
		fail(EINVAL, "%s: mmap of %zu bytes at offset %lld: the memory "
		     "is %zu bytes from offset 0 (nr_memsize)", f->name, len,
		     (long long)off, NME_MEM_SIZE);
		return MAP_FAILED;
	}
	pthread_mutex_lock(&lock);
	f->mem->maps++;
	void *base = f->mem->base;
	pthread_mutex_unlock(&lock);
	return base;
}

int nme_munmap(void *addr, size_t len)
{
	(void)len;
	int done = 0;
	pthread_mutex_lock(&lock);
	for (struct nme_mem *m = mems; m; m = m->next)
		if ((char *)addr == m->base) {
			if (m->maps > 0)
				m->maps--;
			mem_put(m);
			done = 1;
			break;
		}
	pthread_mutex_unlock(&lock);
	return done;
}

/* ------------------------------------------------------------------ */
/* close, dup */

static void file_put(struct nme_file *f)
{
	pthread_mutex_lock(&lock);
	int left = --f->refs;
	pthread_mutex_unlock(&lock);
	if (left > 0)
		return;
	unbind(f);
	free(f);
}

int nme_close(int fd)
{
	struct nme_file *f = get(fd);
	if (f) {
		atomic_store_explicit(&files[fd], NULL, memory_order_release);
		nme_epoll_forget_fd(fd);
		file_put(f);
	}
	return nme_libc.close(fd);
}

void nme_close_table_only(int fd)
{
	struct nme_file *f = get(fd);
	if (!f)
		return;
	atomic_store_explicit(&files[fd], NULL, memory_order_release);
	nme_epoll_forget_fd(fd);
	file_put(f);
}

int nme_dup_to(int oldfd, int newfd)
{
	struct nme_file *f = get(oldfd);
	if (!f || newfd < 0)
		return newfd;
	if (newfd >= NME_MAX_FD) {
		nme_libc.close(newfd);
		errno = EMFILE;
		return -1;
	}
	pthread_mutex_lock(&lock);
	f->refs++;
	pthread_mutex_unlock(&lock);
	struct nme_file *old = atomic_exchange(&files[newfd], f);
	if (old)
		file_put(old);
	return newfd;
}

/* ------------------------------------------------------------------ */
/* poll: netmap's rules over pktmap_poll_many() */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Before waiting: the syncs netmap's poll does whatever the events
 * (txsync unless NR_NO_TX_POLL, rxsync with NR_DO_RX_POLL). */
static void poll_presync(struct nme_file *f, short events)
{
	if (!(events & POLLOUT) && !(f->flags & NR_NO_TX_POLL))
		f_txsync(f);
	else
		off_tx(f); /* pktmap_poll_many() txsyncs for POLLOUT */
	if (!(events & POLLIN) && (f->flags & NR_DO_RX_POLL))
		f_rxsync(f);
	else
		off_rx_pre(f);
}

/* The slice a mixed wait (netmap and other descriptors) sleeps in each
 * half before looking at the other. */
#define NME_MIX_SLICE_MS 2

/* The descriptor a port wakes for `events` on, or -1 when there is none
 * (pktmap_fd() is readable while an rxsync would find packets, and
 * writable for TX space only on a port opened /T). */
static int port_wait_fd(struct pktmap_port *p, short events, short *ev)
{
	struct pktmap_info info = { .sz = sizeof(info) };
	int fd = pktmap_fd(p);
	if (fd < 0 || pktmap_info(p, &info) < 0)
		return -1;
	*ev = 0;
	if (events & POLLIN)
		*ev |= POLLIN;
	if (events & POLLOUT) {
		if (info.dir != PKTMAP_DIR_TX)
			return -1;
		*ev |= POLLOUT;
	}
	return fd;
}

/* Nothing is ready in a set of netmap ports and other descriptors: sleep
 * until one of them may be. On the ports' own descriptors when they can
 * say it, else in short slices on each side. Returns 0 or -1. */
static int mixed_sleep(struct pktmap_pollreq *req, nfds_t nn,
		       struct pollfd *other, nfds_t no, int left)
{
	struct pollfd stack[32];
	struct pollfd *all = nn + no <= 32 ? stack : calloc(nn + no, sizeof(*all));
	int r = 0;
	bool by_fd = all != NULL;
	for (nfds_t i = 0; by_fd && i < nn; i++) {
		all[no + i].fd = port_wait_fd(req[i].port, req[i].events,
					      &all[no + i].events);
		all[no + i].revents = 0;
		by_fd = all[no + i].fd >= 0;
	}
	if (by_fd) {
		memcpy(all, other, no * sizeof(*other));
		r = nme_libc.poll(all, no + nn, left);
	} else {
		int w = left < 0 || left > NME_MIX_SLICE_MS ? NME_MIX_SLICE_MS : left;
		r = nme_libc.poll(other, no, w);
		if (r == 0) {
			r = pktmap_poll_many(req, (unsigned)nn, w);
			if (r < 0) {
				errno = -r;
				r = -1;
			}
		}
	}
	if (all && all != stack)
		free(all);
	return r < 0 ? -1 : 0;
}

int nme_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct pktmap_pollreq stack_req[16];
	struct pollfd stack_other[16];
	nfds_t nn = 0, no = 0;
	for (nfds_t i = 0; i < n; i++) {
		if (fds[i].fd >= 0 && get(fds[i].fd))
			nn++;
		else
			no++;
	}
	uint32_t stack_map_n[16], stack_map_o[16];
	struct pktmap_pollreq *req = nn <= 16 ? stack_req :
						calloc(nn, sizeof(*req));
	struct pollfd *other = no <= 16 ? stack_other : calloc(no, sizeof(*other));
	uint32_t *map_n = nn <= 16 ? stack_map_n : calloc(nn, sizeof(*map_n));
	uint32_t *map_o = no <= 16 ? stack_map_o : calloc(no, sizeof(*map_o));
	int ret = -1;
	if (!req || !other || !map_n || !map_o) {
		errno = ENOMEM;
		goto out;
	}
	nfds_t a = 0, b = 0;
	bool unbound = false;
	for (nfds_t i = 0; i < n; i++) {
		struct nme_file *f = fds[i].fd >= 0 ? get(fds[i].fd) : NULL;
		fds[i].revents = 0;
		if (f) {
			if (!f->port) {
				/* netmap: poll on an unbound fd is an error */
				fds[i].revents = POLLERR;
				unbound = true;
				req[a].port = NULL;
				map_n[a++] = (uint32_t)i;
				continue;
			}
			poll_presync(f, fds[i].events);
			req[a].port = f->port;
			req[a].events = fds[i].events & (POLLIN | POLLOUT);
			req[a].revents = 0;
			map_n[a++] = (uint32_t)i;
		} else {
			other[b] = fds[i];
			map_o[b++] = (uint32_t)i;
		}
	}
	if (unbound) {
		ret = 0;
		for (nfds_t i = 0; i < n; i++)
			ret += fds[i].revents != 0;
		goto out;
	}
	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	for (;;) {
		int ready = 0, left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - now_ms();
			left = l < 0 ? 0 : (l > 1000000 ? 1000000 : (int)l);
		}
		/* Netmap ports: wait here when they are all there is. */
		int wait = no == 0 ? left : 0;
		int r = pktmap_poll_many(req, (unsigned)nn, wait);
		if (r < 0) {
			errno = -r;
			goto out;
		}
		ready += r;
		if (no) {
			r = nme_libc.poll(other, no, 0);
			if (r < 0)
				goto out;
			ready += r;
			if (!ready && left != 0 &&
			    mixed_sleep(req, nn, other, no, left) < 0)
				goto out;
		}
		if (ready || left == 0)
			break;
	}
	ret = 0;
	for (nfds_t i = 0; i < nn; i++) {
		struct nme_file *f = get(fds[map_n[i]].fd);
		if (f && f->off)
			off_rx_post(f); /* what the rxsyncs in there brought */
		fds[map_n[i]].revents = req[i].revents;
	}
	for (nfds_t i = 0; i < no; i++)
		fds[map_o[i]].revents = other[i].revents;
	for (nfds_t i = 0; i < n; i++)
		ret += fds[i].revents != 0;
out:
	if (req != stack_req)
		free(req);
	if (other != stack_other)
		free(other);
	if (map_n != stack_map_n)
		free(map_n);
	if (map_o != stack_map_o)
		free(map_o);
	return ret;
}

/* ------------------------------------------------------------------ */
/* epoll: netmap descriptors registered on an epoll set are kept here
 * (their eventfd never becomes ready), and epoll_wait on that set runs
 * netmap's poll for them beside the kernel's wait for the rest. */

struct nme_ep {
	int epfd, fd;
	struct epoll_event ev;
	struct nme_ep *next;
};
static struct nme_ep *eps;

/* Count of non-netmap registrations per epoll set. */
struct nme_epset {
	int epfd;
	int others;
	struct nme_epset *next;
};
static struct nme_epset *epsets;

static struct nme_epset *epset(int epfd, bool create)
{
	for (struct nme_epset *s = epsets; s; s = s->next)
		if (s->epfd == epfd)
			return s;
	if (!create)
		return NULL;
	struct nme_epset *s = calloc(1, sizeof(*s));
	if (s) {
		s->epfd = epfd;
		s->next = epsets;
		epsets = s;
	}
	return s;
}

int nme_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	nme_libc_init();
	if (!get(fd)) {
		int r = nme_libc.epoll_ctl(epfd, op, fd, ev);
		if (r == 0 && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_DEL)) {
			pthread_mutex_lock(&lock);
			struct nme_epset *s = epset(epfd, op == EPOLL_CTL_ADD);
			if (s)
				s->others += op == EPOLL_CTL_ADD ? 1 : -1;
			pthread_mutex_unlock(&lock);
		}
		return r;
	}
	pthread_mutex_lock(&lock);
	struct nme_ep **pp = &eps, *e;
	for (; (e = *pp); pp = &e->next)
		if (e->epfd == epfd && e->fd == fd)
			break;
	int ret = 0;
	switch (op) {
	case EPOLL_CTL_ADD:
		if (e) {
			errno = EEXIST;
			ret = -1;
		} else if (!ev || !(e = calloc(1, sizeof(*e)))) {
			errno = ev ? ENOMEM : EFAULT;
			ret = -1;
		} else {
			e->epfd = epfd;
			e->fd = fd;
			e->ev = *ev;
			e->next = eps;
			eps = e;
		}
		break;
	case EPOLL_CTL_MOD:
		if (!e || !ev) {
			errno = e ? EFAULT : ENOENT;
			ret = -1;
		} else {
			e->ev = *ev;
		}
		break;
	case EPOLL_CTL_DEL:
		if (!e) {
			errno = ENOENT;
			ret = -1;
		} else {
			*pp = e->next;
			free(e);
		}
		break;
	default:
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void nme_epoll_forget(int epfd)
{
	if (!__atomic_load_n(&eps, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&epsets, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&lock);
	for (struct nme_ep **pp = &eps; *pp;) {
		struct nme_ep *e = *pp;
		if (e->epfd == epfd) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
	for (struct nme_epset **pp = &epsets; *pp; pp = &(*pp)->next)
		if ((*pp)->epfd == epfd) {
			struct nme_epset *s = *pp;
			*pp = s->next;
			free(s);
			break;
		}
	pthread_mutex_unlock(&lock);
}

/* A netmap descriptor closed: the kernel drops it from every epoll set. */
void nme_epoll_forget_fd(int fd)
{
	if (!__atomic_load_n(&eps, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&lock);
	for (struct nme_ep **pp = &eps; *pp;) {
		struct nme_ep *e = *pp;
		if (e->fd == fd) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&lock);
}

int nme_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	struct pollfd pf[64];
	epoll_data_t data[64];
	uint32_t oneshot[64];
	int n = 0, others = 0;
	pthread_mutex_lock(&lock);
	for (struct nme_ep *e = eps; e && n < 64; e = e->next) {
		if (e->epfd != epfd || !(e->ev.events & (EPOLLIN | EPOLLOUT)))
			continue;
		pf[n].fd = e->fd;
		pf[n].events = (short)(((e->ev.events & EPOLLIN) ? POLLIN : 0) |
				       ((e->ev.events & EPOLLOUT) ? POLLOUT : 0));
		data[n] = e->ev.data;
		oneshot[n] = e->ev.events & EPOLLONESHOT;
		n++;
	}
	struct nme_epset *s = epset(epfd, false);
	others = s ? s->others : 0;
	pthread_mutex_unlock(&lock);
	if (n == 0)
		return -2;
	if (max <= 0) {
		errno = EINVAL;
		return -1;
	}

	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	for (;;) {
		int left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - now_ms();
			left = l < 0 ? 0 : (l > 1000000 ? 1000000 : (int)l);
		}
		int wait = others ? 0 : left;
		int r = nme_poll(pf, (nfds_t)n, wait);
		if (r < 0)
			return -1;
		int got = 0;
		for (int i = 0; i < n && got < max; i++) {
			if (!pf[i].revents)
				continue;
			uint32_t e = 0;
			if (pf[i].revents & POLLIN)
				e |= EPOLLIN;
			if (pf[i].revents & POLLOUT)
				e |= EPOLLOUT;
			if (pf[i].revents & POLLERR)
				e |= EPOLLERR;
			if (pf[i].revents & POLLHUP)
				e |= EPOLLHUP;
			evs[got].events = e;
			evs[got].data = data[i];
			got++;
			if (oneshot[i]) {
				/* EPOLLONESHOT: disarmed until EPOLL_CTL_MOD */
				pthread_mutex_lock(&lock);
				for (struct nme_ep *x = eps; x; x = x->next)
					if (x->epfd == epfd && x->fd == pf[i].fd)
						x->ev.events &= ~(uint32_t)(EPOLLIN | EPOLLOUT);
				pthread_mutex_unlock(&lock);
			}
		}
		if (others && got < max) {
			int w = got ? 0 : (left < 0 || left > NME_MIX_SLICE_MS ?
					   NME_MIX_SLICE_MS : left);
			r = nme_libc.epoll_wait(epfd, evs + got, max - got, w);
			if (r < 0 && got == 0)
				return -1;
			if (r > 0)
				got += r;
		}
		if (got || left == 0)
			return got;
	}
}
