// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: pktmap scrub's rules files (src/fwd/scrub_rules.c),
 * parsed from the input's bytes (deny-files refused: no directory). A
 * refused file has one line "fuzz.rules:LINE: message" and nothing built;
 * an accepted one is within its bounds, its prefix sets answer a lookup
 * of any address, and a worker judges a few frames under it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

static const uint8_t udp4[] = {
	0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00,
	0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
	0, 53, 0, 19, 0, 8, 0, 0,
};
static const uint8_t syn6[] = {
	0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd,
	0x60, 0, 0, 0, 0, 20, 6, 64,
	0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
	0, 1, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0, 0, 0, 0, 0,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scrub_rules *r = (void *)1;
	char err[512];
	int rc;

	memset(err, 'x', sizeof(err));
	rc = scrub_rules_parse((const char *)data, size, "fuzz.rules", NULL, &r,
			       err, sizeof(err));
	if (rc) {
		if (r || !memchr(err, 0, sizeof(err)) || strchr(err, '\n') ||
		    strncmp(err, "fuzz.rules", 10))
			__builtin_trap();
		return 0;
	}
	if (!r || r->nrules > SCRUB_MAX_RULES || r->nmatch > SCRUB_MAX_MATCH ||
	    r->sources < SCRUB_WAYS || r->dests < SCRUB_WAYS)
		__builtin_trap();
	uint8_t a[16] = {0};

	for (size_t i = 0; i < 16 && i < size; i++)
		a[i] = data[i];
	if (scrub_pfx_lookup(&r->allow, a) > r->nrules ||
	    scrub_pfx_lookup(&r->deny, a) > r->nrules)
		__builtin_trap();
	struct scrub_worker w;

	if (scrub_rules_hits_alloc(r, 1) == 0 &&
	    scrub_worker_init(&w, 0, 64, 64, 1) == 0) {
		for (int k = 0; k < 4; k++) {
			int why = scrub_judge(&w, r, NULL, k % 2 ? syn6 : udp4,
					      k % 2 ? sizeof(syn6) : sizeof(udp4),
					      1000000000ull * (uint64_t)k);

			if (why < 0 || why >= SCRUB_NREASONS)
				__builtin_trap();
		}
		scrub_worker_free(&w);
	}
	scrub_rules_free(r);
	return 0;
}
