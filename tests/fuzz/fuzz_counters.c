// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the counters files pktmap top and pktmap metrics read
 * (another user's, when root reads them), through hp_parse()
 * (apps/common/hostports.c) on the private copy a reader makes. A file
 * is accepted exactly when it is what src/pub.h describes; an accepted
 * file has its rings inside it (at most PM_PUB_MAX_RINGS), its
 * strings ended and printable (they go to root's terminal and metric
 * labels), and totals that are the sums of its bound rings. Each input
 * is tried as it is, and with a valid magic and version in front (where
 * the size, offset and ring-count checks matter). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostports.h"

static void printable(const char *s, size_t len)
{
	const char *end = memchr(s, 0, len);
	if (!end)
		__builtin_trap();
	for (; s < end; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			__builtin_trap();
}

/* What pub.h says a valid file is, restated from its bytes. */
static bool spec_ok(const uint8_t *buf, size_t size)
{
	struct pm_pub_hdr h;
	if (size < sizeof(h))
		return false;
	memcpy(&h, buf, sizeof(h));
	uint64_t n = (uint64_t)h.ntx + h.nhtx + h.nrx + h.nhrx;
	return h.magic == PM_PUB_MAGIC && h.version == PM_PUB_VERSION &&
	       h.size <= size && h.ring_ofs >= sizeof(h) && h.ring_ofs % 64 == 0 &&
	       n <= PM_PUB_MAX_RINGS &&
	       h.ring_ofs + n * sizeof(struct pm_ring_stats) <= h.size;
}

/* An accepted file: its rings, strings and totals. */
static void check(const uint8_t *buf, const struct hp_port *p, size_t size)
{
	struct pm_pub_hdr h;
	memcpy(&h, buf, sizeof(h));
	if ((uint64_t)h.ntx + h.nhtx + h.nrx + h.nhrx != p->nrings)
		__builtin_trap();
	if (p->nrings > PM_PUB_MAX_RINGS ||
	    sizeof(struct pm_pub_hdr) + (size_t)p->nrings * sizeof(struct pm_ring_stats) > size)
		__builtin_trap();
	printable(p->name, sizeof(p->name));
	printable(p->mode, sizeof(p->mode));
	printable(p->backend, sizeof(p->backend));
	printable(p->region, sizeof(p->region));
	printable(p->comm, sizeof(p->comm));
	printable(p->cmdline, sizeof(p->cmdline));
	printable(p->program, sizeof(p->program));
	uint64_t rx = 0, tx = 0;
	for (uint32_t i = 0; i < p->nrings; i++) {
		const struct hp_ring *r = &p->rings[i];
		if (r->bound)
			*(r->tx ? &tx : &rx) += r->c.packets;
	}
	if (rx != p->rx_packets || tx != p->tx_packets)
		__builtin_trap();
}

static void try_parse(const uint8_t *data, size_t size)
{
	/* A buffer of exactly size bytes: reading past it is caught. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return;
	memcpy(buf, data, size);
	struct hp_port p;
	memset(&p, 0, sizeof(p));
	int r = hp_parse(buf, size, &p);
	/* accepted exactly when valid (a refusal for want of memory aside:
	 * the target runs far below it) */
	if ((r == 0) != spec_ok(buf, size))
		__builtin_trap();
	if (r == 0) {
		check(buf, &p, size);
		free(p.rings);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	try_parse(data, size);
	if (size < 12)
		return 0;
	uint8_t *framed = malloc(size);
	if (!framed)
		return 0;
	memcpy(framed, data, size);
	const uint64_t magic = PM_PUB_MAGIC;
	const uint32_t version = PM_PUB_VERSION;
	memcpy(framed, &magic, sizeof(magic));
	memcpy(framed + 8, &version, sizeof(version));
	try_parse(framed, size);
	free(framed);
	return 0;
}
