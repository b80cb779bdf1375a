// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the counters files pktmap scrub publishes and pktmap
 * top and metrics read (another user's, when root reads them), through
 * sp_parse() (apps/common/scrubpub.c) on the reader's private copy. A
 * file is accepted exactly when its header says what its size is; an
 * accepted file has its counts within bounds and its strings ended and
 * printable. Each input is tried as it is and behind a valid header
 * whose counts fit the input. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrubpub.h"

static void printable(const char *s, size_t len)
{
	const char *end = memchr(s, 0, len);

	if (!end)
		__builtin_trap();
	for (; s < end; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			__builtin_trap();
}

static void try(const uint8_t *buf, size_t size)
{
	struct sp_proc p;
	const struct sp_hdr *h = (const void *)buf;

	if (sp_parse(buf, size, &p) != 0)
		return;
	if (size < sizeof(*h) || p.h.magic != SP_MAGIC || p.h.size != size ||
	    p.h.nreasons > SP_MAX_REASONS || p.h.nrules > SP_MAX_RULES ||
	    size != sizeof(*h) + p.h.nreasons * 8ull +
		    p.h.nrules * (unsigned long long)sizeof(struct sp_rule))
		__builtin_trap();
	printable(p.h.in, sizeof(p.h.in));
	printable(p.h.out, sizeof(p.h.out));
	for (uint32_t i = 0; i < p.h.nrules; i++)
		printable(p.rule[i].text, sizeof(p.rule[i].text));
	for (uint32_t k = 0; k < p.h.nreasons; k++)
		if (!sp_reason_name(k)[0])
			__builtin_trap();
	free(p.rule);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	try(data, size);
	/* behind a header that fits: the rest as reasons and rules */
	size_t nrea = size ? data[0] % (SP_MAX_REASONS + 1) : 0;
	size_t body = size > 1 ? size - 1 : 0;
	if (nrea * 8 > body)
		nrea = body / 8;
	size_t nrules = (body - nrea * 8) / sizeof(struct sp_rule);
	size_t total = sizeof(struct sp_hdr) + nrea * 8 +
		       nrules * sizeof(struct sp_rule);
	uint8_t *b = calloc(1, total);
	struct sp_hdr *h = (struct sp_hdr *)b;

	if (!b)
		return 0;
	memcpy(b + sizeof(*h), data + (size ? 1 : 0), total - sizeof(*h));
	if (size > 1)
		memcpy(h->in, data + 1, size - 1 < sizeof(h->in) ? size - 1 :
		       sizeof(h->in));
	h->magic = SP_MAGIC;
	h->version = SP_VERSION;
	h->size = (uint32_t)total;
	h->nreasons = (uint32_t)nrea;
	h->nrules = (uint32_t)nrules;
	try(b, total);
	free(b);
	return 0;
}
