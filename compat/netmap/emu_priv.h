/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Internals of the /dev/netmap emulation, shared by emu.c (the device:
 * files, registration, ioctl, mmap, close), emu_err.c (a failed request's
 * one-line reason), emu_mem.c (memory ids and their netmap_ifs),
 * emu_name.c (netmap's request -> a pktmap port name), emu_off.c (buffer
 * offsets) and emu_poll.c (poll, select and epoll over netmap
 * descriptors). libc.c holds the libc functions they call past the
 * interposition. How the emulation works is described at the top of
 * emu.c.
 */
#ifndef PKTMAP_COMPAT_NETMAP_EMU_PRIV_H
#define PKTMAP_COMPAT_NETMAP_EMU_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "pktmap/pktmap.h"
#include "emu.h"

#define NME_MAX_FD 65536
#define NME_IF_SLOT 4096u            /* bytes per netmap_if in a memory */
#define NME_IF_SLOTS 256u            /* netmap_ifs per memory */
#define NME_MEM_SIZE ((size_t)NME_IF_SLOT * NME_IF_SLOTS)
#define NME_PIPE_BUFS 32768u         /* buffers of a pipe region we create */


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

/* The netmap request being registered, whatever its form (NIOCCTRL or
 * the legacy NIOCREGIF). */
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

/* The open files by descriptor (emu.c), and the lock of the memories
 * and of the files' reference counts (emu_mem.c). */
extern _Atomic(struct nme_file *) nme_files[NME_MAX_FD];
extern pthread_mutex_t nme_lock;

static inline struct nme_file *nme_get(int fd)
{
	if (fd < 0 || fd >= NME_MAX_FD)
		return NULL;
	return atomic_load_explicit(&nme_files[fd], memory_order_acquire);
}

/* emu_err.c: record the reason of a failed request; returns -1 with
 * errno = err. */
__attribute__((format(printf, 2, 3)))
int nme_fail(int err, const char *fmt, ...);

/* nme_copyin()/nme_copyout(), emu_req.c: in emu.h (interpose.c uses
 * them too). */

#define NME_CTRL_OPTS 64 /* options in one NIOCCTRL request */

/* One option of a NIOCCTRL request, copied. */
struct nme_ctrl_opt {
	uint64_t uaddr;  /* where it is in the program */
	size_t len;      /* bytes copied (and copied back) */
	union {
		struct nmreq_option o;
		struct nmreq_opt_offsets off; /* NETMAP_REQ_OPT_OFFSETS */
	} u;
};

/* A NIOCCTRL request, copied from the program: the header, the body of
 * its type and the options chain. The emulation reads these copies
 * only; nme_ctrl_out() writes the answers back. */
struct nme_ctrl {
	uint64_t uhdr;           /* the ioctl's argument */
	struct nmreq_header h;
	bool h_read, body_read;  /* what nme_ctrl_out() writes back */
	size_t body_len;
	union {
		struct nmreq_register reg;
		struct nmreq_port_info_get pi;
		struct nmreq_port_hdr ph;
		struct nmreq_pools_info pools;
		struct nmreq_vale_attach va;
		struct nmreq_vale_detach vd;
		struct nmreq_vale_list vl;
		struct nmreq_vale_newif vn;
		struct nmreq_vale_polling vp;
	} body;
	unsigned nopt;
	struct nme_ctrl_opt opt[NME_CTRL_OPTS];
};

/* Copy and check the request at uhdr into c: EFAULT for an address that
 * is not readable, EINVAL for a bad header, a missing body, an option
 * chain too long, two offsets options. Returns 0 or -1 with errno and
 * the reason. */
int nme_ctrl_in(struct nme_ctrl *c, const void *uhdr);
/* Write back what was read: the header, the body, every option (its
 * status). Returns 0, or -1 with errno EFAULT. */
int nme_ctrl_out(const struct nme_ctrl *c);
/* Check the options against what pktmap honours, setting each one's
 * status; with `offsets`, the offsets option (checked) is a REGISTER's
 * and is returned there. Returns 0 or -1 with errno (EOPNOTSUPP, or
 * EINVAL for a bad offsets option). */
int nme_ctrl_options(struct nme_ctrl *c, struct nmreq_opt_offsets **offsets);

/* emu_mem.c */
struct nme_mem *nme_mem_get(const char *region);
void nme_mem_put(struct nme_mem *m);
/* The region of memory id `id` this process knows: true and its name
 * ("" for a private one) in `region`, or false. */
bool nme_mem_region_of_id(uint16_t id, char *region, size_t len);

/* emu_name.c */
void nme_shown_name(const char *n, char *out, size_t len);
int nme_map_name(const struct nme_req *r, char *out, size_t len);

/* emu_off.c */
/* The offsets option before any port is opened: the bits, the initial
 * and the largest offset (max raised to initial), a full-size frame
 * after the largest in a buffer of at most 64 KiB. Returns 0 or -1 with
 * errno EINVAL and the reason. */
int nme_off_check(struct nmreq_opt_offsets *opt, const char *name);
int nme_off_setup(struct nme_file *f, struct nmreq_opt_offsets *opt,
		  const struct pktmap_info *info);
void nme_off_free(struct nme_file *f);
void nme_off_tx(struct nme_file *f);
void nme_off_rx_pre(struct nme_file *f);
void nme_off_rx_post(struct nme_file *f);

/* A sync of the file's port, the packets moved to and from their offsets
 * around it (a look at f->off only, for programs that use none). */
static inline int nme_f_txsync(struct nme_file *f)
{
	if (f->off)
		nme_off_tx(f);
	return pktmap_txsync(f->port);
}

static inline int nme_f_rxsync(struct nme_file *f)
{
	if (f->off)
		nme_off_rx_pre(f);
	int r = pktmap_rxsync(f->port);
	if (f->off)
		nme_off_rx_post(f);
	return r;
}

#endif /* PKTMAP_COMPAT_NETMAP_EMU_PRIV_H */
