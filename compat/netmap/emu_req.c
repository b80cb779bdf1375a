/* SPDX-License-Identifier: BSD-2-Clause
 *
 * netmap's requests, read from the program's memory as the kernel reads
 * them. An ioctl argument is an address the program chose: NIOCREGIF's
 * struct nmreq, NIOCCTRL's header and the addresses inside it (nr_body,
 * nr_options, each option's nro_next). The module copies them with
 * copy_from_user(), which answers EFAULT for an address that is not
 * mapped; so does this file, with process_vm_readv() on this process
 * (a bad address is EFAULT from the kernel, never a fault here). Every
 * value is read once into private memory, checked there and used from
 * there; the answers go back with process_vm_writev().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu_priv.h"

/* process_vm_readv/writev refused (a seccomp filter may say EPERM or
 * ENOSYS): copy through a pipe instead, which write() and read() reach
 * with the kernel's own fault-safe copies. */
static atomic_bool no_vm_copy;

static int pipe_copy(void *dst, const void *src, size_t len)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	int ret = 0;
	/* at most a page at a time: a pipe holds at least that */
	for (size_t done = 0; done < len && !ret;) {
		size_t n = len - done < 4096 ? len - done : 4096;
		ssize_t w = write(p[1], (const char *)src + done, n);
		ssize_t r = w == (ssize_t)n ? read(p[0], (char *)dst + done, n) : -1;
		if (r != (ssize_t)n)
			ret = -1;
		done += n;
	}
	close(p[0]);
	close(p[1]);
	if (ret)
		errno = EFAULT;
	return ret;
}

/* Copy len bytes between this process's addresses, either of which may
 * be bad. Returns 0, or -1 with errno EFAULT. */
static int safe_copy(void *dst, const void *src, size_t len, bool out)
{
	if (len == 0)
		return 0;
	if (!atomic_load_explicit(&no_vm_copy, memory_order_relaxed)) {
		struct iovec l = { out ? (void *)(uintptr_t)src : dst, len };
		struct iovec r = { out ? dst : (void *)(uintptr_t)src, len };
		ssize_t n = out ? process_vm_writev(getpid(), &l, 1, &r, 1, 0) :
				  process_vm_readv(getpid(), &l, 1, &r, 1, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0 || (errno != ENOSYS && errno != EPERM)) {
			errno = EFAULT; /* a short copy: the rest is not mapped */
			return -1;
		}
		atomic_store_explicit(&no_vm_copy, true, memory_order_relaxed);
	}
	return pipe_copy(dst, src, len);
}

int nme_copyin(void *dst, uint64_t src, size_t len)
{
	return safe_copy(dst, (const void *)(uintptr_t)src, len, false);
}

int nme_copyout(uint64_t dst, const void *src, size_t len)
{
	return safe_copy((void *)(uintptr_t)dst, src, len, true);
}

/* ------------------------------------------------------------------ */
/* NIOCCTRL */

/* The bytes of the body of a request type, as netmap's
 * nmreq_size_by_type(); 0 for types that have none here. */
static size_t body_size(uint16_t type)
{
	switch (type) {
	case NETMAP_REQ_REGISTER:
		return sizeof(struct nmreq_register);
	case NETMAP_REQ_PORT_INFO_GET:
		return sizeof(struct nmreq_port_info_get);
	case NETMAP_REQ_VALE_ATTACH:
		return sizeof(struct nmreq_vale_attach);
	case NETMAP_REQ_VALE_DETACH:
		return sizeof(struct nmreq_vale_detach);
	case NETMAP_REQ_VALE_LIST:
		return sizeof(struct nmreq_vale_list);
	case NETMAP_REQ_PORT_HDR_SET:
	case NETMAP_REQ_PORT_HDR_GET:
		return sizeof(struct nmreq_port_hdr);
	case NETMAP_REQ_VALE_NEWIF:
		return sizeof(struct nmreq_vale_newif);
	case NETMAP_REQ_VALE_POLLING_ENABLE:
	case NETMAP_REQ_VALE_POLLING_DISABLE:
		return sizeof(struct nmreq_vale_polling);
	case NETMAP_REQ_POOLS_INFO_GET:
		return sizeof(struct nmreq_pools_info);
	default: /* DELIF, the kloop and CSB requests (refused), unknown */
		return 0;
	}
}

/* The header, copied and checked: the API version, the reserved word,
 * the name. Returns 0, or -1 with errno and the reason (the header is
 * in c for the answer when it was read). */
static int header_in(struct nme_ctrl *c)
{
	struct nmreq_header *h = &c->h;
	if (nme_copyin(h, c->uhdr, sizeof(*h)))
		return nme_fail(EFAULT, "NIOCCTRL: the request at %#llx is not "
				"readable", (unsigned long long)c->uhdr);
	c->h_read = true;
	if (h->nr_version < NETMAP_MIN_API || h->nr_version > NETMAP_MAX_API) {
		int v = h->nr_version;
		h->nr_version = NETMAP_API;
		return nme_fail(EINVAL, "%.*s: API mismatch: the program speaks "
				"netmap API %d, pktmap %d..%d",
				NETMAP_REQ_IFNAMSIZ, h->nr_name, v, NETMAP_MIN_API,
				NETMAP_MAX_API);
	}
	if (h->nr_reserved)
		return nme_fail(EINVAL, "NIOCCTRL: nr_reserved must be zero");
	if (memchr(h->nr_name, 0, sizeof(h->nr_name)) == NULL)
		return nme_fail(EINVAL, "NIOCCTRL: nr_name is not terminated");
	return 0;
}

/* The options chain, each option copied (and the offsets option's
 * body); a chain longer than NME_CTRL_OPTS (a loop?), two offsets
 * options or an option of type 0 is EINVAL, as in netmap. */
static int options_in(struct nme_ctrl *c)
{
	const char *n = c->h.nr_name;
	bool offsets = false;
	for (uint64_t at = c->h.nr_options; at; at = c->opt[c->nopt++].u.o.nro_next) {
		if (c->nopt == NME_CTRL_OPTS)
			return nme_fail(EINVAL, "%s: option list too long (a loop?)",
					n);
		struct nme_ctrl_opt *o = &c->opt[c->nopt];
		o->uaddr = at;
		o->len = sizeof(o->u.o);
		if (nme_copyin(&o->u.o, at, sizeof(o->u.o)))
			return nme_fail(EFAULT, "%s: the option at %#llx is not "
					"readable", n, (unsigned long long)at);
		o->u.o.nro_status = 0;
		if (o->u.o.nro_reqtype == NETMAP_REQ_OPT_OFFSETS) {
			if (offsets)
				return nme_fail(EINVAL, "%s: two offsets options", n);
			offsets = true;
			o->len = sizeof(o->u.off);
			if (nme_copyin(&o->u.off, at, sizeof(o->u.off)))
				return nme_fail(EFAULT, "%s: the offsets option at "
						"%#llx is not readable", n,
						(unsigned long long)at);
		} else if (o->u.o.nro_reqtype == 0) {
			o->u.o.nro_status = EINVAL;
			return nme_fail(EINVAL, "%s: option of type 0", n);
		}
	}
	return 0;
}

int nme_ctrl_in(struct nme_ctrl *c, const void *uhdr)
{
	memset(c, 0, offsetof(struct nme_ctrl, opt));
	c->uhdr = (uint64_t)(uintptr_t)uhdr;
	if (header_in(c))
		return -1;
	uint16_t t = c->h.nr_reqtype;
	c->body_len = body_size(t);
	if (c->h.nr_body && c->body_len &&
	    nme_copyin(&c->body, c->h.nr_body, c->body_len))
		return nme_fail(EFAULT, "%s: the request's body at %#llx is not "
				"readable", c->h.nr_name,
				(unsigned long long)c->h.nr_body);
	if (!c->h.nr_body) {
		c->body_len = 0;
		if (t != NETMAP_REQ_SYNC_KLOOP_STOP && t != NETMAP_REQ_VALE_DELIF &&
		    t != NETMAP_REQ_VALE_DETACH)
			return nme_fail(EINVAL, "%s: request without a body",
					c->h.nr_name);
	}
	c->body_read = true;
	return options_in(c);
}

int nme_ctrl_out(const struct nme_ctrl *c)
{
	int ret = 0;
	if (!c->h_read)
		return 0;
	if (c->body_read && c->body_len)
		ret |= nme_copyout(c->h.nr_body, &c->body, c->body_len);
	for (unsigned i = 0; i < c->nopt; i++)
		ret |= nme_copyout(c->opt[i].uaddr, &c->opt[i].u, c->opt[i].len);
	ret |= nme_copyout(c->uhdr, &c->h, sizeof(c->h));
	if (ret)
		errno = EFAULT;
	return ret;
}

/* Options: which ones exist, which ones pktmap honours. Sets every
 * option's status; the offsets option (REGISTER only) in *offsets.
 * Returns 0 or -1 with errno. */
int nme_ctrl_options(struct nme_ctrl *c, struct nmreq_opt_offsets **offsets)
{
	const char *n = c->h.nr_name;
	int ret = 0, err = 0;
	if (offsets)
		*offsets = NULL;
	for (unsigned i = 0; i < c->nopt; i++) {
		struct nmreq_option *o = &c->opt[i].u.o;
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
			if (offsets) {
				if (nme_off_check(&c->opt[i].u.off, n)) {
					o->nro_status = EINVAL;
					err = EINVAL;
					ret = -1;
					continue;
				}
				*offsets = &c->opt[i].u.off;
				o->nro_status = 0;
				continue;
			}
			what = "buffer offsets are an option of NETMAP_REQ_REGISTER";
			break;
		default:
			o->nro_status = EOPNOTSUPP;
			nme_fail(EOPNOTSUPP, "%s: unknown option %u", n,
				 o->nro_reqtype);
			err = err ? err : EOPNOTSUPP;
			ret = -1;
			continue;
		}
		o->nro_status = EOPNOTSUPP;
		nme_fail(EOPNOTSUPP, "%s: %s", n, what);
		err = err ? err : EOPNOTSUPP;
		ret = -1;
	}
	if (ret)
		errno = err; /* a bad offsets option is EINVAL, else EOPNOTSUPP */
	return ret;
}
