/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The netmap device, emulated over pktmap ports.
 *
 * An open of /dev/netmap gets an eventfd as its file descriptor (a real
 * descriptor the program may close, dup, poll or hand to epoll) and a
 * `struct nme_file` in a table indexed by that descriptor. NIOCCTRL with
 * NETMAP_REQ_REGISTER (or the legacy NIOCREGIF) turns netmap's request
 * into a pktmap port name (emu_name.c) and opens it.
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
 *
 * This file is the device: the open files, registration, NIOCCTRL and
 * the legacy ioctls, mmap, close and dup. The rest of the emulation:
 *   emu_err.c   a failed request's one-line reason
 *   emu_mem.c   memory ids and their netmap_ifs, munmap
 *   emu_name.c  netmap's request -> a pktmap port name
 *   emu_off.c   buffer offsets (NETMAP_REQ_OPT_OFFSETS)
 *   emu_poll.c  poll, select and epoll over netmap descriptors
 * and emu_priv.h, their shared state; interpose.c routes libc's calls
 * here, libc.c holds libc's own functions.
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

#include "emu_priv.h"
#include "vale_ctl.h"

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

_Atomic(struct nme_file *) nme_files[NME_MAX_FD];
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nme_bind *binds;

bool nme_is_device(const char *path)
{
	return path && strcmp(path, "/dev/netmap") == 0;
}

bool nme_owns(int fd)
{
	return nme_get(fd) != NULL;
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
	atomic_store_explicit(&nme_files[fd], f, memory_order_release);
	return fd;
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
	nme_off_free(f);
	bind_put(f->bind);
	f->bind = NULL;
	f->port = NULL;
	pthread_mutex_lock(&nme_lock);
	f->mem->used[f->slot] = 0;
	f->mem->ports--;
	nme_mem_put(f->mem);
	pthread_mutex_unlock(&nme_lock);
	f->mem = NULL;
	f->nifp = NULL;
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
		.flags = r->flags & NR_EXCLUSIVE ? PKTMAP_OPEN_EXCLUSIVE : 0,
		.errbuf = err,
		.errbuf_len = sizeof(err),
		.log = log_to_buf,
	};
	int ret = pktmap_open(out, name, &o);
	if (ret) {
		char shown[NETMAP_REQ_IFNAMSIZ + 8];
		nme_shown_name(r->name, shown, sizeof(shown));
		const char *what = err[0] ? err : pktmap_strerror(ret);
		size_t n = strlen(shown);
		/* a name that is pktmap's own (vale0:x) is said once */
		if (strncmp(what, shown, n) == 0 && what[n] == ':')
			return nme_fail(errno_of_open(ret), "%s", what);
		return nme_fail(errno_of_open(ret), "%s: %s", shown, what);
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
	if (nme_map_name(r, name, sizeof(name)))
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
	if (nme_map_name(r, name, sizeof(name)))
		return NULL;
	nme_shown_name(r->name, shown, sizeof(shown));
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
		nme_fail(EBUSY, "%s: %s", shown, b->excl ?
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
			nme_fail(ENOMEM, "%s: out of memory", shown);
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
		return nme_fail(EBUSY, "netmap:%s: this file descriptor is already "
				"bound to %s", r->name, f->name);
	bool shared = false;
	f->bind = bind_get(r, &info, &shared);
	if (!f->bind)
		return -1;
	f->port = f->bind->port;
	pthread_mutex_lock(&nme_lock);
	struct nme_mem *m = nme_mem_get(info.region);
	uint32_t slot = NME_IF_SLOTS;
	if (m)
		for (slot = 0; slot < NME_IF_SLOTS && m->used[slot]; slot++)
			;
	if (!m || slot == NME_IF_SLOTS) {
		pthread_mutex_unlock(&nme_lock);
		bind_put(f->bind);
		f->bind = NULL;
		f->port = NULL;
		return nme_fail(ENOMEM, "netmap:%s: too many ports in one memory",
				r->name);
	}
	m->used[slot] = 1;
	m->ports++;
	pthread_mutex_unlock(&nme_lock);
	f->mem = m;
	f->slot = slot;
	f->nifp = (struct netmap_if *)(m->base + (size_t)slot * NME_IF_SLOT);
	f->flags = r->flags;
	snprintf(f->name, sizeof(f->name), "%s", r->name);
	fill_nifp(f, &info);
	if (shared) /* the extra buffers are the first open's */
		f->nifp->ni_bufs_head = 0;
	if (r->offsets && nme_off_setup(f, r->offsets, &info)) {
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
		struct nme_file *o = nme_get(i);
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
		pthread_mutex_lock(&nme_lock);
		struct nme_mem *m = nme_mem_get(info.region);
		id = m ? m->id : 0;
		if (m)
			nme_mem_put(m);
		pthread_mutex_unlock(&nme_lock);
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
	return ret ? nme_fail(-ret, "%s", err) : 0;
}

/* NETMAP_REQ_REGISTER: bind the file to a port; the answer in *reg. */
static int ctrl_register(struct nme_file *f, struct nme_ctrl *c)
{
	struct nmreq_header *h = &c->h;
	struct nmreq_register *reg = &c->body.reg;
	struct nmreq_opt_offsets *offsets = NULL;
	if (nme_ctrl_options(c, &offsets))
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

/* NETMAP_REQ_POOLS_INFO_GET on a bound file. */
static int pools_info(struct nme_file *f, struct nmreq_header *h,
		      struct nmreq_pools_info *pl)
{
	if (!f->port)
		return nme_fail(ENXIO, "%s: POOLS_INFO_GET on a file descriptor "
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

/* NIOCCTRL: one request of netmap's new API, by type, on its copy in c.
 * Returns 0 or -1 with errno and the reason. */
static int ctrl_do(struct nme_file *f, struct nme_ctrl *c)
{
	struct nmreq_header *h = &c->h;
	void *body = c->body_len ? &c->body : NULL;
	switch (h->nr_reqtype) {
	case NETMAP_REQ_REGISTER:
		return ctrl_register(f, c);
	case NETMAP_REQ_PORT_INFO_GET: {
		struct nmreq_port_info_get *pi = body;
		if (nme_ctrl_options(c, NULL))
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
		return nme_fail(EINVAL, "%s: virtio-net headers are not available "
				"on pktmap ports", h->nr_name);
	}
	case NETMAP_REQ_POOLS_INFO_GET:
		return pools_info(f, h, body);
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
		return nme_fail(EOPNOTSUPP, "%s: CSB/kloop (sync in a kernel loop) "
				"is not available on pktmap", h->nr_name);
	default:
		return nme_fail(EINVAL, "%s: unknown request type %u", h->nr_name,
				h->nr_reqtype);
	}
}

/* NIOCCTRL: the request copied in from the program's memory (EFAULT for
 * an address that is not mapped, as netmap's copy_from_user() gives),
 * served from the copy, the answers copied back. Returns 0 or -1 with
 * errno and the reason. */
static int ctrl(struct nme_file *f, const void *uhdr)
{
	struct nme_ctrl *c = malloc(sizeof(*c));
	if (!c)
		return nme_fail(ENOMEM, "NIOCCTRL: out of memory");
	int ret = nme_ctrl_in(c, uhdr) ? -1 : ctrl_do(f, c);
	int e = errno;
	if (nme_ctrl_out(c) && ret == 0)
		ret = nme_fail(EFAULT, "%s: the answer cannot be written back to "
			       "the request (read-only memory?)", c->h.nr_name);
	else
		errno = e;
	free(c);
	return ret;
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
		return nme_fail(EOPNOTSUPP, "%s: NETMAP_BDG_REGOPS (a kernel lookup "
				"function) is not available on pktmap", name);
	}
}

/* The legacy NIOCREGIF / NIOCGINFO, on the request's copy. */
static int legacy_do(struct nme_file *f, unsigned long req, struct nmreq *nmr)
{
	if (nmr->nr_version < 11 || nmr->nr_version > NETMAP_MAX_API) {
		int v = (int)nmr->nr_version;
		nmr->nr_version = NETMAP_API;
		return nme_fail(EINVAL, "%.*s: API mismatch: the program speaks "
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
		return nme_fail(EOPNOTSUPP, "%s: ptnetmap (netmap passthrough to a "
				"VM) is not available on pktmap", name);
	if (nmr->nr_cmd)
		return nme_fail(EOPNOTSUPP, "%s: legacy command %u is not available "
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

/* The legacy requests: struct nmreq copied in from the program (EFAULT
 * for an address that is not mapped, as netmap's ioctl gives), served
 * from the copy, copied back. Returns 0 or -1 with errno. */
static int legacy(struct nme_file *f, unsigned long req, const void *arg)
{
	struct nmreq nmr;
	const char *what = req == NIOCREGIF ? "NIOCREGIF" : "NIOCGINFO";
	if (nme_copyin(&nmr, (uint64_t)(uintptr_t)arg, sizeof(nmr)))
		return nme_fail(EFAULT, "%s: the request at %p is not readable",
				what, arg);
	int ret = legacy_do(f, req, &nmr);
	int e = errno;
	if (nme_copyout((uint64_t)(uintptr_t)arg, &nmr, sizeof(nmr)) && ret == 0)
		ret = nme_fail(EFAULT, "%s: the answer cannot be written back to "
			       "the request (read-only memory?)", what);
	else
		errno = e;
	return ret;
}

int nme_ioctl(int fd, unsigned long req, void *arg)
{
	struct nme_file *f = nme_get(fd);
	if (!f) {
		errno = EBADF;
		return -1;
	}
	int r;
	switch (req) {
	case NIOCTXSYNC:
	case NIOCRXSYNC:
		if (!f->port)
			return nme_fail(ENXIO, "NIOC%sSYNC on a file descriptor that "
					"is not bound to a port",
					req == NIOCTXSYNC ? "TX" : "RX");
		r = req == NIOCTXSYNC ? nme_f_txsync(f) : nme_f_rxsync(f);
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
	struct nme_file *f = nme_get(fd);
	if (!f) {
		errno = EBADF;
		return MAP_FAILED;
	}
	if (!f->port) {
		nme_fail(EINVAL, "mmap of /dev/netmap before NETMAP_REQ_REGISTER");
		return MAP_FAILED;
	}
	if (off != 0 || len == 0 || len > NME_MEM_SIZE || (flags & MAP_FIXED)) {
		nme_fail(EINVAL, "%s: mmap of %zu bytes at offset %lld: the memory "
			 "is %zu bytes from offset 0 (nr_memsize)", f->name, len,
			 (long long)off, NME_MEM_SIZE);
		return MAP_FAILED;
	}
	pthread_mutex_lock(&nme_lock);
	f->mem->maps++;
	void *base = f->mem->base;
	pthread_mutex_unlock(&nme_lock);
	return base;
}

/* ------------------------------------------------------------------ */
/* close, dup */

static void file_put(struct nme_file *f)
{
	pthread_mutex_lock(&nme_lock);
	int left = --f->refs;
	pthread_mutex_unlock(&nme_lock);
	if (left > 0)
		return;
	unbind(f);
	free(f);
}

void nme_close_table_only(int fd)
{
	struct nme_file *f = nme_get(fd);
	if (!f)
		return;
	atomic_store_explicit(&nme_files[fd], NULL, memory_order_release);
	file_put(f);
}

int nme_dup_to(int oldfd, int newfd)
{
	struct nme_file *f = nme_get(oldfd);
	if (!f || newfd < 0)
		return newfd;
	if (newfd >= NME_MAX_FD) {
		nme_libc.close(newfd);
		errno = EMFILE;
		return -1;
	}
	pthread_mutex_lock(&nme_lock);
	f->refs++;
	pthread_mutex_unlock(&nme_lock);
	struct nme_file *old = atomic_exchange_explicit(&nme_files[newfd], f,
							memory_order_acq_rel);
	if (old)
		file_put(old);
	return newfd;
}
