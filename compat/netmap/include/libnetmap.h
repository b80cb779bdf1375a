/* SPDX-License-Identifier: BSD-2-Clause
 *
 * <libnetmap.h> for netmap programs built on pktmap: netmap's libnetmap
 * API (nmport_*, nmreq_*, nmctx_*), served by libpktmap-netmap. Like
 * netmap's own, the library talks to the netmap device with open(),
 * ioctl(NIOCCTRL) and mmap(); pktmap's /dev/netmap emulation answers.
 * Port names: netmap:IFACE[-N|^|^N|*][/xRT][@N][@conf:...] and
 * netmap:NAME{ID / netmap:NAME}ID for pipes (docs/netmap.md).
 */
#ifndef LIBNETMAP_H_
#define LIBNETMAP_H_

#include <net/netmap_user.h>

#ifdef __cplusplus
extern "C" {
#endif

struct nmctx;
struct nmport_d;
struct nmem_d;

/* One port. The first fields are what the program fills or reads; `mem`
 * is shared by the ports of one memory (equal mem: zero-copy possible). */
struct nmport_d {
	struct nmreq_header hdr;
	struct nmreq_register reg;

	struct nmem_d *mem;
	struct nmctx *ctx;
	int register_done;
	int mmap_done;
	struct nmreq_opt_extmem *extmem;

	int fd;                  /* the /dev/netmap descriptor, -1 if none */
	struct netmap_if *nifp;
	uint16_t first_tx_ring;
	uint16_t last_tx_ring;
	uint16_t first_rx_ring;
	uint16_t last_rx_ring;
	uint16_t cur_tx_ring;    /* nmport_inject() goes on from here */
	uint16_t cur_rx_ring;

	struct nmport_cleanup_d *clist;
};

/* Open a port by name (prepare + register + mmap). NULL with errno on
 * failure, the reason sent to the context's error callback. */
struct nmport_d *nmport_open(const char *portspec);
void nmport_close(struct nmport_d *d);
/* Copy one packet into a TX slot; returns size, or 0 if no room. */
int nmport_inject(struct nmport_d *d, const void *buf, size_t size);

/* The steps of nmport_open(), for programs that adjust the request
 * (extra buffers, ring sizes) in between, and their undoing. */
struct nmport_d *nmport_new(void);
int nmport_parse(struct nmport_d *d, const char *portspec);
int nmport_register(struct nmport_d *d);
int nmport_mmap(struct nmport_d *d);
void nmport_delete(struct nmport_d *d);
void nmport_undo_parse(struct nmport_d *d);
void nmport_undo_register(struct nmport_d *d);
void nmport_undo_mmap(struct nmport_d *d);
struct nmport_d *nmport_prepare(const char *portspec);
int nmport_open_desc(struct nmport_d *d);
void nmport_undo_prepare(struct nmport_d *d);
void nmport_undo_open_desc(struct nmport_d *d);
/* A prepared copy of d (same request, no options), to open again. */
struct nmport_d *nmport_clone(struct nmport_d *d);

/* extmem is not available on pktmap: these fail with EOPNOTSUPP. */
int nmport_extmem(struct nmport_d *d, void *base, size_t size);
int nmport_extmem_from_file(struct nmport_d *d, const char *fname);
struct nmreq_pools_info *nmport_extmem_getinfo(struct nmport_d *d);

int nmport_offset(struct nmport_d *d, uint64_t initial, uint64_t maxoff,
		  uint64_t bits, uint64_t mingap);

void nmport_disable_option(const char *opt);
int nmport_enable_option(const char *opt);

/* Requests. */
void nmreq_header_init(struct nmreq_header *hdr, uint16_t reqtype, void *body);
int nmreq_header_decode(const char **ppspec, struct nmreq_header *hdr,
			struct nmctx *ctx);
int nmreq_register_decode(const char **pmode, struct nmreq_register *reg,
			  struct nmctx *ctx);
int32_t nmreq_get_mem_id(const char **portname, struct nmctx *ctx);
void nmreq_push_option(struct nmreq_header *h, struct nmreq_option *o);
void nmreq_remove_option(struct nmreq_header *h, struct nmreq_option *o);
struct nmreq_option *nmreq_find_option(struct nmreq_header *h, uint32_t t);
void nmreq_free_options(struct nmreq_header *h);
const char *nmreq_option_name(uint32_t t);
#define nmreq_foreach_option(h_, o_)                                   \
	for ((o_) = (struct nmreq_option *)(uintptr_t)((h_)->nr_options); \
	     (o_) != NULL;                                             \
	     (o_) = (struct nmreq_option *)(uintptr_t)((o_)->nro_next))

/* Contexts: error reporting, allocation, locking, the memory list. */
typedef void (*nmctx_error_cb)(struct nmctx *, const char *);
typedef void *(*nmctx_malloc_cb)(struct nmctx *, size_t);
typedef void (*nmctx_free_cb)(struct nmctx *, void *);
typedef void (*nmctx_lock_cb)(struct nmctx *, int);

struct nmctx {
	int verbose;
	nmctx_error_cb error;
	nmctx_malloc_cb malloc;
	nmctx_free_cb free;
	nmctx_lock_cb lock;
	struct nmem_d *mem_descs;
};

struct nmctx *nmctx_get(void);
struct nmctx *nmctx_set_default(struct nmctx *ctx);

/* One memory the program has mapped. */
struct nmem_d {
	uint16_t mem_id;
	int refcount;
	void *mem;
	size_t size;
	int is_extmem;
	struct nmem_d *next;
	struct nmem_d *prev;
};

/* As with netmap's libnetmap, the default context is made thread-safe
 * unless the program defines LIBNETMAP_NOTHREADSAFE. */
static __attribute__((used)) void libnetmap_init(void)
{
#ifndef LIBNETMAP_NOTHREADSAFE
	extern int nmctx_threadsafe;
	nmctx_threadsafe = 1;
#endif
}

void nmctx_set_threadsafe(void);
void nmctx_ferror(struct nmctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void *nmctx_malloc(struct nmctx *ctx, size_t sz);
void nmctx_free(struct nmctx *ctx, void *p);
void nmctx_lock(struct nmctx *ctx);
void nmctx_unlock(struct nmctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* LIBNETMAP_H_ */
