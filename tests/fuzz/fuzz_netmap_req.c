// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: netmap's NIOCCTRL requests as the /dev/netmap
 * emulation reads them (compat/netmap/emu_req.c): the header, the body
 * and the options chain copied in from the program's memory, the options
 * checked (the offsets option's bounds), and a REGISTER's request turned
 * into a pktmap port name (emu_name.c). Nothing may crash, read or write
 * outside the copies, or accept a request without a sane result.
 *
 * The input is the program's memory: the header at its start, followed
 * by whatever the fuzzer puts there, ending at a page that is not
 * mapped (a request that runs past the input gets EFAULT). Addresses in
 * the request (nr_body, nr_options, each nro_next) smaller than the
 * input are offsets into it; any other value but 0 lands in a range with
 * no access (wild()), so wild addresses are tried too.
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -I include -I compat/netmap -I compat/netmap/include \
 *     tests/fuzz/fuzz_netmap_req.c compat/netmap/emu_req.c \
 *     compat/netmap/emu_err.c compat/netmap/emu_name.c compat/netmap/emu_off.c */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_priv.h"

/* emu_mem.c's, which the fuzzed code asks about @N: no memory known. */
bool nme_mem_region_of_id(uint16_t id, char *region, size_t len)
{
	(void)id;
	(void)region;
	(void)len;
	return false;
}

#define IMG_MAX 65536

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("PKTMAP_NETMAP_QUIET", "1", 1);
	return 0;
}

/* The image's end: IMG_MAX bytes, then a page with no access. */
static char *image_end(void)
{
	static char *end;
	if (!end) {
		long pg = sysconf(_SC_PAGESIZE);
		char *m = mmap(NULL, IMG_MAX + (size_t)pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED || mprotect(m + IMG_MAX, (size_t)pg, PROT_NONE))
			abort();
		end = m + IMG_MAX;
	}
	return end;
}

/* WILD bytes of address space with no access: where a wild address
 * lands. The emulation writes answers back where the request says, as
 * the kernel does; a wild address that happened to be mapped here (the
 * fuzzer's stack, its environment) would be written, which a real
 * program asks for but the fuzzer cannot survive. */
#define WILD (1u << 20)

static uint64_t wild(uint64_t v)
{
	static char *w;
	if (!w) {
		w = mmap(NULL, WILD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE, -1, 0);
		if (w == MAP_FAILED)
			abort();
	}
	return (uintptr_t)w + v % WILD;
}

/* An address field at `at` in the image: an offset into it becomes its
 * address, any other value but 0 an address with no access (wild()).
 * Returns the address, or 0 when it is not in the image. */
static char *rebase(char *base, size_t size, size_t at)
{
	uint64_t v;
	if (at + sizeof(v) > size)
		return NULL;
	memcpy(&v, base + at, sizeof(v));
	if (v == 0)
		return NULL;
	bool in = v < size;
	v = in ? v + (uintptr_t)base : wild(v);
	memcpy(base + at, &v, sizeof(v));
	return in ? (char *)(uintptr_t)v : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > IMG_MAX)
		size = IMG_MAX;
	char *base = image_end() - size;
	memcpy(base, data, size);
	rebase(base, size, offsetof(struct nmreq_header, nr_body));
	char *o = rebase(base, size, offsetof(struct nmreq_header, nr_options));
	for (int i = 0; o && i < 80; i++) /* the chain, loops included */
		o = rebase(base, size, (size_t)(o - base) +
			   offsetof(struct nmreq_option, nro_next));

	static struct nme_ctrl c;
	if (nme_ctrl_in(&c, base) == 0) {
		if (c.nopt > NME_CTRL_OPTS || !memchr(c.h.nr_name, 0, sizeof(c.h.nr_name)))
			__builtin_trap();
		struct nmreq_opt_offsets *off = NULL;
		bool reg = c.h.nr_reqtype == NETMAP_REQ_REGISTER;
		if (nme_ctrl_options(&c, reg ? &off : NULL) == 0 && reg) {
			if (off && (off->nro_max_offset > 65536 - 1514 ||
				    off->nro_max_offset < off->nro_initial_offset))
				__builtin_trap();
			struct nmreq_register *r = &c.body.reg;
			struct nme_req q = {
				.offsets = off, .name = c.h.nr_name,
				.mode = r->nr_mode, .ringid = r->nr_ringid,
				.flags = r->nr_flags, .mem_id = r->nr_mem_id,
				.tx_slots = r->nr_tx_slots, .rx_slots = r->nr_rx_slots,
				.tx_rings = r->nr_tx_rings, .rx_rings = r->nr_rx_rings,
				.extra_bufs = r->nr_extra_bufs,
			};
			char name[256];
			if (nme_map_name(&q, name, sizeof(name)) == 0 &&
			    (!memchr(name, 0, sizeof(name)) || !strchr(name, ':')))
				__builtin_trap();
		}
	}
	if (!memchr(nme_last_error(), 0, 256) || strchr(nme_last_error(), '\n'))
		__builtin_trap();
	nme_ctrl_out(&c);
	return 0;
}
