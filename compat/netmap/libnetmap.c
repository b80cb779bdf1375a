/* SPDX-License-Identifier: BSD-2-Clause
 *
 * libnetmap's API (nmport_*, nmreq_*, nmctx_*) and the old nm_open()
 * family, over the netmap device: open("/dev/netmap"), ioctl(NIOCCTRL),
 * mmap(), as netmap's own library does, so the same emulation serves a
 * program linked here and one built against netmap's libnetmap and run
 * under `pktmap netmap-run`.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#define NETMAP_WITH_LIBS
#include <net/netmap_user.h>
#include <libnetmap.h>

#include "emu.h"

/* ------------------------------------------------------------------ */
/* Contexts */

static void default_error(struct nmctx *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s\n", msg);
}

static void *default_malloc(struct nmctx *ctx, size_t sz)
{
	(void)ctx;
	return malloc(sz);
}

static void default_free(struct nmctx *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static pthread_mutex_t ctx_mutex = PTHREAD_MUTEX_INITIALIZER;

static void threadsafe_lock(struct nmctx *ctx, int on)
{
	(void)ctx;
	if (on)
		pthread_mutex_lock(&ctx_mutex);
	else
		pthread_mutex_unlock(&ctx_mutex);
}

static struct nmctx default_ctx = {
	.verbose = 1,
	.error = default_error,
	.malloc = default_malloc,
	.free = default_free,
	.lock = NULL,
};
static struct nmctx *current_ctx = &default_ctx;

NME_EXPORT int nmctx_threadsafe;

NME_EXPORT struct nmctx *nmctx_get(void)
{
	return current_ctx;
}

NME_EXPORT struct nmctx *nmctx_set_default(struct nmctx *ctx)
{
	struct nmctx *old = current_ctx;
	if (ctx)
		current_ctx = ctx;
	return old;
}

NME_EXPORT void nmctx_set_threadsafe(void)
{
	default_ctx.lock = threadsafe_lock;
}

__attribute__((constructor)) static void libnetmap_ctor(void)
{
	/* The lock is cheap uncontended: always install it (netmap does
	 * when the program did not define LIBNETMAP_NOTHREADSAFE). */
	nmctx_set_threadsafe();
}

NME_EXPORT void nmctx_ferror(struct nmctx *ctx, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	if (!ctx)
		ctx = current_ctx;
	if (!ctx->verbose || !ctx->error)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ctx->error(ctx, buf);
}

NME_EXPORT void *nmctx_malloc(struct nmctx *ctx, size_t sz)
{
	return ctx->malloc ? ctx->malloc(ctx, sz) : malloc(sz);
}

NME_EXPORT void nmctx_free(struct nmctx *ctx, void *p)
{
	if (ctx->free)
		ctx->free(ctx, p);
	else
		free(p);
}

NME_EXPORT void nmctx_lock(struct nmctx *ctx)
{
	if (ctx->lock)
		ctx->lock(ctx, 1);
}

NME_EXPORT void nmctx_unlock(struct nmctx *ctx)
{
	if (ctx->lock)
		ctx->lock(ctx, 0);
}

/* ------------------------------------------------------------------ */
/* Requests and options */

NME_EXPORT void nmreq_header_init(struct nmreq_header *h, uint16_t reqtype,
				  void *body)
{
	memset(h, 0, sizeof(*h));
	h->nr_version = NETMAP_API;
	h->nr_reqtype = reqtype;
	h->nr_body = (uintptr_t)body;
}

NME_EXPORT void nmreq_push_option(struct nmreq_header *h, struct nmreq_option *o)
{
	o->nro_next = h->nr_options;
	h->nr_options = (uintptr_t)o;
}

NME_EXPORT void nmreq_remove_option(struct nmreq_header *h,
				    struct nmreq_option *o)
{
	uint64_t *link = &h->nr_options;
	while (*link) {
		struct nmreq_option *c = (struct nmreq_option *)(uintptr_t)*link;
		if (c == o) {
			*link = o->nro_next;
			o->nro_next = 0;
			return;
		}
		link = &c->nro_next;
	}
}

NME_EXPORT struct nmreq_option *nmreq_find_option(struct nmreq_header *h,
						  uint32_t t)
{
	struct nmreq_option *o;
	nmreq_foreach_option(h, o)
		if (o->nro_reqtype == t)
			return o;
	return NULL;
}

/* Options this library allocated are freed with the header. */
NME_EXPORT void nmreq_free_options(struct nmreq_header *h)
{
	struct nmreq_option *o = (struct nmreq_option *)(uintptr_t)h->nr_options;
	while (o) {
		struct nmreq_option *next =
			(struct nmreq_option *)(uintptr_t)o->nro_next;
		free(o);
		o = next;
	}
	h->nr_options = 0;
}

NME_EXPORT const char *nmreq_option_name(uint32_t t)
{
	switch (t) {
	case NETMAP_REQ_OPT_EXTMEM: return "extmem";
	case NETMAP_REQ_OPT_SYNC_KLOOP_EVENTFDS: return "sync-kloop-eventfds";
	case NETMAP_REQ_OPT_CSB: return "csb";
	case NETMAP_REQ_OPT_SYNC_KLOOP_MODE: return "sync-kloop-mode";
	case NETMAP_REQ_OPT_OFFSETS: return "offset";
	default: return "unknown";
	}
}

/* Characters of a port or pipe name: letters, digits, '_' and '.', and
 * '-' unless a ring number follows it ("veth-a" is a name, "eth0-1" is
 * ring 1 of eth0). */
static size_t name_len(const char *s)
{
	size_t i = 0;
	for (;; i++) {
		char c = s[i];
		if (isalnum((unsigned char)c) || c == '_' || c == '.')
			continue;
		if (c == '-' && s[i + 1] && !isdigit((unsigned char)s[i + 1]))
			continue;
		return i;
	}
}

NME_EXPORT int nmreq_header_decode(const char **pspec, struct nmreq_header *h,
				   struct nmctx *ctx)
{
	const char *s = *pspec, *start = s;
	char name[NETMAP_REQ_IFNAMSIZ];
	if (!ctx)
		ctx = current_ctx;
	if (strncmp(s, "netmap:", 7) == 0) {
		s += 7;
		start = s;
	} else if (strncmp(s, NM_BDG_NAME, 4) == 0) {
		s += 4;
		s += name_len(s);
		if (*s != ':') {
			nmctx_ferror(ctx, "%s: missing ':' after the vale switch name",
				     *pspec);
			errno = EINVAL;
			return -1;
		}
		s++;
	} else {
		nmctx_ferror(ctx, "%s: invalid port name: use netmap:IFACE, "
			     "netmap:NAME{N, netmap:NAME}N or valeX:Y", *pspec);
		errno = EINVAL;
		return -1;
	}
	static const char *const native[] = { "null:", "pipe:", "xdp:", "pkt:",
					      "pcap:", "tap:" };
	for (size_t i = 0; start == s && i < sizeof(native) / sizeof(*native); i++) {
		size_t pl = strlen(native[i]);
		if (strncmp(s, native[i], pl) == 0) {
			/* a pktmap name as is, options aside (an extension) */
			size_t n = strcspn(s, "@");
			if (n >= sizeof(name)) {
				nmctx_ferror(ctx, "%s: port name too long", *pspec);
				errno = EINVAL;
				return -1;
			}
			memcpy(h->nr_name, s, n);
			h->nr_name[n] = 0;
			*pspec = s + n;
			return 0;
		}
	}
	size_t n = name_len(s);
	if (n == 0) {
		nmctx_ferror(ctx, "%s: missing port name after the prefix", *pspec);
		errno = EINVAL;
		return -1;
	}
	s += n;
	if (*s == '{' || *s == '}') {
		size_t m = name_len(s + 1);
		if (m == 0) {
			nmctx_ferror(ctx, "%s: missing pipe id after '%c'", *pspec, *s);
			errno = EINVAL;
			return -1;
		}
		s += 1 + m;
	}
	if ((size_t)(s - start) >= sizeof(name)) {
		nmctx_ferror(ctx, "%s: port name too long", *pspec);
		errno = EINVAL;
		return -1;
	}
	memcpy(name, start, (size_t)(s - start));
	name[s - start] = 0;
	memcpy(h->nr_name, name, sizeof(name));
	*pspec = s;
	return 0;
}

static int read_num(const char **ps, unsigned long max, unsigned long *out)
{
	const char *s = *ps;
	char *end;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || v > max)
		return -1;
	*out = v;
	*ps = end;
	return 0;
}

NME_EXPORT int nmreq_register_decode(const char **pmode,
				     struct nmreq_register *reg,
				     struct nmctx *ctx)
{
	const char *s = *pmode;
	uint32_t mode = NR_REG_ALL_NIC;
	uint16_t ringid = 0;
	uint64_t flags = 0;
	unsigned long v;
	if (!ctx)
		ctx = current_ctx;
	switch (*s) {
	case '-':
		s++;
		if (read_num(&s, NETMAP_RING_MASK, &v))
			goto bad;
		mode = NR_REG_ONE_NIC;
		ringid = (uint16_t)v;
		break;
	case '^':
		s++;
		mode = NR_REG_SW;
		if (isdigit((unsigned char)*s)) {
			if (read_num(&s, NETMAP_RING_MASK, &v))
				goto bad;
			mode = NR_REG_ONE_SW;
			ringid = (uint16_t)v;
		}
		break;
	case '*':
		s++;
		mode = NR_REG_NIC_SW;
		break;
	default:
		break;
	}
	if (*s == '/') {
		for (s++; *s && *s != '@'; s++) {
			switch (*s) {
			case 'x': flags |= NR_EXCLUSIVE; break;
			case 'z': flags |= NR_ZCOPY_MON; break;
			case 't': flags |= NR_MONITOR_TX; break;
			case 'r': flags |= NR_MONITOR_RX; break;
			case 'R': flags |= NR_RX_RINGS_ONLY; break;
			case 'T': flags |= NR_TX_RINGS_ONLY; break;
			default:
				nmctx_ferror(ctx, "%s: unknown flag '%c' (x z t r R T)",
					     *pmode, *s);
				errno = EINVAL;
				return -1;
			}
		}
	}
	if (*s == '@' && isdigit((unsigned char)s[1])) {
		s++;
		if (read_num(&s, 65535, &v) || v == 0)
			goto bad;
		reg->nr_mem_id = (uint16_t)v;
	}
	if (*s && *s != '@')
		goto bad;
	reg->nr_mode = mode;
	reg->nr_ringid = ringid;
	reg->nr_flags = flags;
	*pmode = s;
	return 0;
bad:
	nmctx_ferror(ctx, "%s: cannot parse the ring mode (-N ^ ^N * /xztrRT @N)",
		     *pmode);
	errno = EINVAL;
	return -1;
}

/* The memory id of a port, asked of the device without binding it. */
NME_EXPORT int32_t nmreq_get_mem_id(const char **pname, struct nmctx *ctx)
{
	struct nmreq_header h;
	struct nmreq_port_info_get pi;
	const char *s = *pname;
	if (!ctx)
		ctx = current_ctx;
	memset(&pi, 0, sizeof(pi));
	nmreq_header_init(&h, NETMAP_REQ_PORT_INFO_GET, &pi);
	if (nmreq_header_decode(&s, &h, ctx) < 0)
		return -1;
	int fd = open("/dev/netmap", O_RDWR);
	if (fd < 0) {
		nmctx_ferror(ctx, "/dev/netmap: %s", strerror(errno));
		return -1;
	}
	int r = ioctl(fd, NIOCCTRL, &h);
	int e = errno;
	close(fd);
	if (r < 0) {
		nmctx_ferror(ctx, "%s: %s", h.nr_name, strerror(e));
		errno = e;
		return -1;
	}
	*pname = s;
	return pi.nr_mem_id;
}

/* "@conf:k=v,...", "@offset:...", "@share=PORT", "@extmem:..." */
static int parse_options(struct nmport_d *d, const char *s)
{
	struct nmctx *ctx = d->ctx;
	while (*s == '@') {
		s++;
		const char *end = strchr(s, '@');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char opt[256];
		if (len >= sizeof(opt)) {
			nmctx_ferror(ctx, "%s: option too long", d->hdr.nr_name);
			errno = EINVAL;
			return -1;
		}
		memcpy(opt, s, len);
		opt[len] = 0;
		s += len;
		char *val = strpbrk(opt, ":=");
		if (val)
			*val++ = 0;
		if (strcmp(opt, "conf") == 0 && val) {
			for (char *kv = strtok(val, ","); kv; kv = strtok(NULL, ",")) {
				char *eq = strchr(kv, '=');
				unsigned long v;
				const char *num = eq ? eq + 1 : kv;
				if (eq)
					*eq = 0;
				const char *k = eq ? kv : "rings";
				if (read_num(&num, 65535, &v) || *num) {
					nmctx_ferror(ctx, "%s: @conf: bad value for '%s'",
						     d->hdr.nr_name, k);
					errno = EINVAL;
					return -1;
				}
				if (!strcmp(k, "rings"))
					d->reg.nr_tx_rings = d->reg.nr_rx_rings = (uint16_t)v;
				else if (!strcmp(k, "tx-rings"))
					d->reg.nr_tx_rings = (uint16_t)v;
				else if (!strcmp(k, "rx-rings"))
					d->reg.nr_rx_rings = (uint16_t)v;
				else if (!strcmp(k, "host-rings"))
					d->reg.nr_host_tx_rings = d->reg.nr_host_rx_rings =
						(uint16_t)v;
				else if (!strcmp(k, "host-tx-rings"))
					d->reg.nr_host_tx_rings = (uint16_t)v;
				else if (!strcmp(k, "host-rx-rings"))
					d->reg.nr_host_rx_rings = (uint16_t)v;
				else if (!strcmp(k, "slots"))
					d->reg.nr_tx_slots = d->reg.nr_rx_slots = (uint32_t)v;
				else if (!strcmp(k, "tx-slots"))
					d->reg.nr_tx_slots = (uint32_t)v;
				else if (!strcmp(k, "rx-slots"))
					d->reg.nr_rx_slots = (uint32_t)v;
				else {
					nmctx_ferror(ctx, "%s: @conf: unknown key '%s'",
						     d->hdr.nr_name, k);
					errno = EINVAL;
					return -1;
				}
			}
		} else if (strcmp(opt, "share") == 0 && val) {
			const char *p = val;
			int32_t id = nmreq_get_mem_id(&p, ctx);
			if (id < 0)
				return -1;
			d->reg.nr_mem_id = (uint16_t)id;
		} else if (strcmp(opt, "offset") == 0 && val) {
			unsigned long initial = 0, bits = 0, v;
			for (char *kv = strtok(val, ","); kv; kv = strtok(NULL, ",")) {
				char *eq = strchr(kv, '=');
				const char *num = eq ? eq + 1 : kv;
				if (read_num(&num, 1ul << 30, &v) || *num) {
					nmctx_ferror(ctx, "%s: @offset: bad value",
						     d->hdr.nr_name);
					errno = EINVAL;
					return -1;
				}
				if (eq && !strncmp(kv, "bits", 4))
					bits = v;
				else
					initial = v;
			}
			if (nmport_offset(d, initial, initial, bits, 0) < 0)
				return -1;
		} else if (strcmp(opt, "extmem") == 0) {
			nmctx_ferror(ctx, "%s: @extmem: extmem (memory the program "
				     "provides) is not available on pktmap",
				     d->hdr.nr_name);
			errno = EOPNOTSUPP;
			return -1;
		} else {
			nmctx_ferror(ctx, "%s: unknown option '@%s' (conf, share, "
				     "offset)", d->hdr.nr_name, opt);
			errno = EINVAL;
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Ports */

static struct nmport_d *new_with_ctx(struct nmctx *ctx)
{
	struct nmport_d *d = nmctx_malloc(ctx, sizeof(*d));
	if (!d) {
		nmctx_ferror(ctx, "cannot allocate nmport descriptor");
		errno = ENOMEM;
		return NULL;
	}
	memset(d, 0, sizeof(*d));
	nmreq_header_init(&d->hdr, NETMAP_REQ_REGISTER, &d->reg);
	d->ctx = ctx;
	d->fd = -1;
	return d;
}

NME_EXPORT struct nmport_d *nmport_new(void)
{
	return new_with_ctx(current_ctx);
}

NME_EXPORT void nmport_delete(struct nmport_d *d)
{
	if (d)
		nmctx_free(d->ctx, d);
}

NME_EXPORT int nmport_parse(struct nmport_d *d, const char *spec)
{
	const char *s = spec;
	struct nmreq_header h = d->hdr;
	struct nmreq_register r = d->reg;
	if (nmreq_header_decode(&s, &d->hdr, d->ctx) < 0 ||
	    nmreq_register_decode(&s, &d->reg, d->ctx) < 0 ||
	    parse_options(d, s) < 0) {
		int e = errno;
		nmreq_free_options(&d->hdr);
		d->hdr = h;
		d->reg = r;
		errno = e;
		return -1;
	}
	return 0;
}

NME_EXPORT void nmport_undo_parse(struct nmport_d *d)
{
	nmreq_free_options(&d->hdr);
	memset(&d->reg, 0, sizeof(d->reg));
	nmreq_header_init(&d->hdr, NETMAP_REQ_REGISTER, &d->reg);
}

NME_EXPORT struct nmport_d *nmport_prepare(const char *spec)
{
	struct nmport_d *d = nmport_new();
	if (!d)
		return NULL;
	if (nmport_parse(d, spec) < 0) {
		int e = errno;
		nmport_delete(d);
		errno = e;
		return NULL;
	}
	return d;
}

NME_EXPORT void nmport_undo_prepare(struct nmport_d *d)
{
	if (!d)
		return;
	nmport_undo_parse(d);
	nmport_delete(d);
}

NME_EXPORT int nmport_register(struct nmport_d *d)
{
	struct nmctx *ctx = d->ctx;
	if (d->register_done) {
		nmctx_ferror(ctx, "%s: already registered", d->hdr.nr_name);
		errno = EINVAL;
		return -1;
	}
	d->fd = open("/dev/netmap", O_RDWR);
	if (d->fd < 0) {
		nmctx_ferror(ctx, "/dev/netmap: %s", strerror(errno));
		return -1;
	}
	nme_quiet_errors(true);
	int r = ioctl(d->fd, NIOCCTRL, &d->hdr);
	int e = errno;
	nme_quiet_errors(false);
	if (r < 0) {
		const char *why = nme_last_error();
		if (why[0])
			nmctx_ferror(ctx, "%s", why);
		else
			nmctx_ferror(ctx, "%s: %s", d->hdr.nr_name, strerror(e));
		close(d->fd);
		d->fd = -1;
		errno = e;
		return -1;
	}
	d->register_done = 1;
	return 0;
}

NME_EXPORT void nmport_undo_register(struct nmport_d *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->register_done = 0;
}

/* One mapping per memory id (the device hands every open of a memory the
 * same one): two ports of one id get the same nmem_d. */
NME_EXPORT int nmport_mmap(struct nmport_d *d)
{
	struct nmctx *ctx = d->ctx;
	struct nmem_d *m;
	if (d->mmap_done) {
		nmctx_ferror(ctx, "%s: already mapped", d->hdr.nr_name);
		errno = EINVAL;
		return -1;
	}
	if (!d->register_done) {
		nmctx_ferror(ctx, "cannot map unregistered port");
		errno = EINVAL;
		return -1;
	}
	nmctx_lock(ctx);
	for (m = ctx->mem_descs; m; m = m->next)
		if (m->mem_id == d->reg.nr_mem_id)
			break;
	if (!m) {
		m = nmctx_malloc(ctx, sizeof(*m));
		if (!m) {
			nmctx_unlock(ctx);
			nmctx_ferror(ctx, "cannot allocate memory descriptor");
			errno = ENOMEM;
			return -1;
		}
		memset(m, 0, sizeof(*m));
		m->mem = mmap(NULL, d->reg.nr_memsize, PROT_READ | PROT_WRITE,
			      MAP_SHARED, d->fd, 0);
		if (m->mem == MAP_FAILED) {
			int e = errno;
			nmctx_free(ctx, m);
			nmctx_unlock(ctx);
			nmctx_ferror(ctx, "mmap: %s", strerror(e));
			errno = e;
			return -1;
		}
		m->size = d->reg.nr_memsize;
		m->mem_id = d->reg.nr_mem_id;
		m->next = ctx->mem_descs;
		if (ctx->mem_descs)
			ctx->mem_descs->prev = m;
		ctx->mem_descs = m;
	}
	m->refcount++;
	nmctx_unlock(ctx);
	d->mem = m;
	d->nifp = NETMAP_IF(m->mem, d->reg.nr_offset);

	/* The bound rings are the ones the netmap_if lists. */
	unsigned ntx = d->reg.nr_tx_rings + d->nifp->ni_host_tx_rings;
	unsigned nrx = d->reg.nr_rx_rings + d->nifp->ni_host_rx_rings;
	unsigned i;
	for (i = 0; i < ntx && !d->nifp->ring_ofs[i]; i++)
		;
	d->first_tx_ring = (uint16_t)i;
	for (; i < ntx && d->nifp->ring_ofs[i]; i++)
		;
	d->last_tx_ring = (uint16_t)(i - 1);
	for (i = 0; i < nrx && !d->nifp->ring_ofs[ntx + i]; i++)
		;
	d->first_rx_ring = (uint16_t)i;
	for (; i < nrx && d->nifp->ring_ofs[ntx + i]; i++)
		;
	d->last_rx_ring = (uint16_t)(i - 1);
	d->cur_tx_ring = d->first_tx_ring;
	d->cur_rx_ring = d->first_rx_ring;
	d->mmap_done = 1;
	return 0;
}

NME_EXPORT void nmport_undo_mmap(struct nmport_d *d)
{
	struct nmem_d *m = d->mem;
	struct nmctx *ctx = d->ctx;
	if (m) {
		nmctx_lock(ctx);
		if (--m->refcount <= 0) {
			if (!m->is_extmem)
				munmap(m->mem, m->size);
			if (m->next)
				m->next->prev = m->prev;
			if (m->prev)
				m->prev->next = m->next;
			else
				ctx->mem_descs = m->next;
			nmctx_free(ctx, m);
		}
		nmctx_unlock(ctx);
	}
	d->mem = NULL;
	d->nifp = NULL;
	d->mmap_done = 0;
	d->first_tx_ring = d->last_tx_ring = 0;
	d->first_rx_ring = d->last_rx_ring = 0;
	d->cur_tx_ring = d->cur_rx_ring = 0;
}

NME_EXPORT int nmport_open_desc(struct nmport_d *d)
{
	if (nmport_register(d) < 0)
		return -1;
	if (nmport_mmap(d) < 0) {
		int e = errno;
		nmport_undo_register(d);
		errno = e;
		return -1;
	}
	return 0;
}

NME_EXPORT void nmport_undo_open_desc(struct nmport_d *d)
{
	nmport_undo_mmap(d);
	nmport_undo_register(d);
}

NME_EXPORT struct nmport_d *nmport_open(const char *spec)
{
	struct nmport_d *d = nmport_prepare(spec);
	if (!d)
		return NULL;
	if (nmport_open_desc(d) < 0) {
		int e = errno;
		nmport_undo_prepare(d);
		errno = e;
		return NULL;
	}
	return d;
}

NME_EXPORT void nmport_close(struct nmport_d *d)
{
	if (!d)
		return;
	nmport_undo_open_desc(d);
	nmport_undo_prepare(d);
}

NME_EXPORT struct nmport_d *nmport_clone(struct nmport_d *d)
{
	struct nmport_d *c = new_with_ctx(d->ctx);
	if (!c)
		return NULL;
	c->hdr = d->hdr;
	c->hdr.nr_body = (uintptr_t)&c->reg;
	c->hdr.nr_options = 0;
	c->reg = d->reg;
	return c;
}

NME_EXPORT int nmport_inject(struct nmport_d *d, const void *buf, size_t size)
{
	unsigned n = (unsigned)(d->last_tx_ring - d->first_tx_ring + 1);
	unsigned ri = d->cur_tx_ring;
	if (d->first_tx_ring > d->last_tx_ring)
		return 0;
	for (unsigned c = 0; c < n; c++, ri++) {
		if (ri > d->last_tx_ring)
			ri = d->first_tx_ring;
		struct netmap_ring *ring = NETMAP_TXRING(d->nifp, ri);
		/* a packet longer than a buffer goes out in NS_MOREFRAG
		 * pieces, if the ring has room for all of them */
		size_t per = ring->nr_buf_size, need = (size + per - 1) / per;
		if (need == 0)
			need = 1;
		if (nm_ring_space(ring) < need)
			continue;
		const char *p = buf;
		size_t left = size;
		uint32_t i = ring->head;
		for (size_t k = 0; k < need; k++) {
			struct netmap_slot *s = &ring->slot[i];
			size_t chunk = left > per ? per : left;
			memcpy(NETMAP_BUF(ring, s->buf_idx), p, chunk);
			s->len = (uint16_t)chunk;
			s->flags = k + 1 < need ? NS_MOREFRAG : 0;
			p += chunk;
			left -= chunk;
			i = nm_ring_next(ring, i);
		}
		ring->head = ring->cur = i;
		d->cur_tx_ring = (uint16_t)ri;
		return (int)size;
	}
	return 0;
}

NME_EXPORT int nmport_extmem(struct nmport_d *d, void *base, size_t size)
{
	(void)base;
	(void)size;
	nmctx_ferror(d->ctx, "%s: extmem (memory the program provides) is not "
		     "available on pktmap", d->hdr.nr_name);
	errno = EOPNOTSUPP;
	return -1;
}

NME_EXPORT int nmport_extmem_from_file(struct nmport_d *d, const char *fname)
{
	(void)fname;
	return nmport_extmem(d, NULL, 0);
}

NME_EXPORT struct nmreq_pools_info *nmport_extmem_getinfo(struct nmport_d *d)
{
	(void)d;
	return NULL;
}

NME_EXPORT int nmport_offset(struct nmport_d *d, uint64_t initial,
			     uint64_t maxoff, uint64_t bits, uint64_t mingap)
{
	struct nmreq_opt_offsets *o = calloc(1, sizeof(*o));
	if (!o) {
		errno = ENOMEM;
		return -1;
	}
	o->nro_opt.nro_reqtype = NETMAP_REQ_OPT_OFFSETS;
	o->nro_max_offset = maxoff;
	o->nro_initial_offset = initial;
	o->nro_offset_bits = (uint32_t)bits;
	o->nro_min_gap = (uint32_t)mingap;
	nmreq_push_option(&d->hdr, &o->nro_opt);
	return 0;
}

NME_EXPORT void nmport_disable_option(const char *opt)
{
	(void)opt;
}

NME_EXPORT int nmport_enable_option(const char *opt)
{
	if (strcmp(opt, "offset") == 0 || strcmp(opt, "conf") == 0 ||
	    strcmp(opt, "share") == 0)
		return 0;
	errno = EOPNOTSUPP;
	return -1;
}

/* ------------------------------------------------------------------ */
/* The old nm_open() family (NETMAP_WITH_LIBS), over nmport. */

NME_EXPORT struct nm_desc *pktmap_nm_open(const char *ifname,
					  const struct nmreq *req,
					  uint64_t flags,
					  const struct nm_desc *arg)
{
	struct nm_desc *d = calloc(1, sizeof(*d));
	struct nmport_d *p;
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	if ((flags & NM_OPEN_IFNAME) && req) {
		/* the request names the port: nr_name, nr_ringid, nr_flags */
		p = nmport_new();
		if (p) {
			memcpy(p->hdr.nr_name, req->nr_name, sizeof(req->nr_name));
			p->hdr.nr_name[sizeof(req->nr_name)] = 0;
			p->reg.nr_mode = req->nr_flags & NR_REG_MASK;
			if (p->reg.nr_mode == NR_REG_DEFAULT)
				p->reg.nr_mode = NR_REG_ALL_NIC;
			p->reg.nr_ringid = req->nr_ringid & NETMAP_RING_MASK;
			p->reg.nr_flags = req->nr_flags & ~(uint32_t)NR_REG_MASK;
		}
	} else {
		p = nmport_prepare(ifname);
	}
	if (!p) {
		int e = errno;
		free(d);
		errno = e;
		return NULL;
	}
	/* As netmap's nm_open: `req` is the base request (memory id, extra
	 * buffers, ring sizes), the name overrides it, and NM_OPEN_ARG2/3
	 * and NM_OPEN_RING_CFG take those values from the parent `arg`. */
	if (req) {
		if (req->nr_arg2 && !p->reg.nr_mem_id)
			p->reg.nr_mem_id = req->nr_arg2;
		p->reg.nr_extra_bufs = req->nr_arg3;
		if (!p->reg.nr_tx_slots)
			p->reg.nr_tx_slots = req->nr_tx_slots;
		if (!p->reg.nr_rx_slots)
			p->reg.nr_rx_slots = req->nr_rx_slots;
		if (!p->reg.nr_tx_rings)
			p->reg.nr_tx_rings = req->nr_tx_rings;
		if (!p->reg.nr_rx_rings)
			p->reg.nr_rx_rings = req->nr_rx_rings;
	}
	if (arg && IS_NETMAP_DESC(arg)) {
		if (flags & NM_OPEN_ARG2)
			p->reg.nr_mem_id = arg->req.nr_arg2;
		if (flags & NM_OPEN_ARG3)
			p->reg.nr_extra_bufs = arg->req.nr_arg3;
		if (flags & NM_OPEN_RING_CFG) {
			p->reg.nr_tx_slots = arg->req.nr_tx_slots;
			p->reg.nr_rx_slots = arg->req.nr_rx_slots;
			p->reg.nr_tx_rings = arg->req.nr_tx_rings;
			p->reg.nr_rx_rings = arg->req.nr_rx_rings;
		}
	}
	if (flags & NETMAP_NO_TX_POLL)
		p->reg.nr_flags |= NR_NO_TX_POLL;
	if (flags & NETMAP_DO_RX_POLL)
		p->reg.nr_flags |= NR_DO_RX_POLL;
	if (nmport_open_desc(p) < 0) {
		int e = errno;
		nmport_undo_prepare(p);
		free(d);
		errno = e;
		return NULL;
	}
	d->self = d;
	d->fd = p->fd;
	d->mem = p->mem->mem;
	d->memsize = p->mem->size;
	d->done_mmap = 1;
	*(struct netmap_if **)&d->nifp = p->nifp;
	d->first_tx_ring = p->first_tx_ring;
	d->last_tx_ring = p->last_tx_ring;
	d->cur_tx_ring = p->first_tx_ring;
	d->first_rx_ring = p->first_rx_ring;
	d->last_rx_ring = p->last_rx_ring;
	d->cur_rx_ring = p->first_rx_ring;
	snprintf(d->req.nr_name, sizeof(d->req.nr_name), "%s", p->hdr.nr_name);
	d->req.nr_version = NETMAP_API;
	d->req.nr_offset = (uint32_t)p->reg.nr_offset;
	d->req.nr_memsize = (uint32_t)p->reg.nr_memsize;
	d->req.nr_tx_slots = p->reg.nr_tx_slots;
	d->req.nr_rx_slots = p->reg.nr_rx_slots;
	d->req.nr_tx_rings = p->reg.nr_tx_rings;
	d->req.nr_rx_rings = p->reg.nr_rx_rings;
	d->req.nr_ringid = p->reg.nr_ringid;
	d->req.nr_flags = (uint32_t)(p->reg.nr_mode | (p->reg.nr_flags & ~0xfULL));
	d->req.nr_arg2 = p->reg.nr_mem_id;
	d->req.nr_arg3 = p->reg.nr_extra_bufs;
	struct netmap_ring *some = NULL;
	if (p->first_tx_ring <= p->last_tx_ring)
		some = NETMAP_TXRING(p->nifp, p->first_tx_ring);
	else if (p->first_rx_ring <= p->last_rx_ring)
		some = NETMAP_RXRING(p->nifp, p->first_rx_ring);
	*(struct netmap_ring **)&d->some_ring = some;
	if (some) {
		*(void **)&d->buf_start = NETMAP_BUF(some, 0);
		*(void **)&d->buf_end = NETMAP_BUF(some, 0);
	}
	d->pktmap_port = p;
	return d;
}

NME_EXPORT int pktmap_nm_close(struct nm_desc *d)
{
	if (!d || d->self != d)
		return EINVAL;
	nmport_close(d->pktmap_port);
	memset(d, 0, sizeof(*d));
	free(d);
	return 0;
}

NME_EXPORT int pktmap_nm_mmap(struct nm_desc *d, const struct nm_desc *parent)
{
	(void)parent;
	return d && d->self == d && d->done_mmap ? 0 : EINVAL;
}
