// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: pktmap scrub's header parser and judge
 * (src/fwd/scrub_pkt.c, scrub_judge.c) on any frame: the first byte
 * chooses the fragment policy, the rest is the frame. The verdict is a
 * reason; a frame judged clean is IPv4 or IPv6 with addresses; nothing is
 * read past the frame (ASan: the frame is copied to a buffer of its own
 * size). The rule set has a rule of every kind. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

static const char rules[] =
	"allow 192.0.2.0/24 2001:db8:a::/48\n"
	"deny 198.51.100.0/24 2001:db8:bad::/48 0.0.0.0/8\n"
	"drop proto udp dport 19\n"
	"drop proto tcp flags F/FSRPAU\n"
	"pass proto tcp src 203.0.113.0/24 dport 22\n"
	"drop proto icmp6 sport 128\n"
	"limit packets 3 bytes 2k ban 60\n"
	"syn-limit 2\n"
	"sources 64\ndests 16\n";

static struct scrub_rules *set[2];
static struct scrub_worker w;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t now;
	char err[256];

	if (!set[0]) {
		for (int i = 0; i < 2; i++) {
			if (scrub_rules_parse(rules, sizeof(rules) - 1, "f", NULL,
					      &set[i], err, sizeof(err)) ||
			    scrub_rules_hits_alloc(set[i], 1))
				__builtin_trap();
		}
		set[1]->frag_drop = false;
		if (scrub_worker_init(&w, 0, 64, 16, 1))
			__builtin_trap();
	}
	if (size == 0)
		return 0;
	bool pass_frags = data[0] & 1;
	uint32_t len = (uint32_t)(size - 1);
	uint8_t *f = malloc(len ? len : 1);
	struct scrub_pkt p;

	if (!f)
		return 0;
	memcpy(f, data + 1, len);
	int why = scrub_parse(f, len, !pass_frags, &p);

	if (why < 0 || why >= SCRUB_NREASONS ||
	    (why == SCRUB_PASS && p.family != 4 && p.family != 6) ||
	    (why == SCRUB_DROP_FRAG && pass_frags))
		__builtin_trap();
	now += 100000000ull;
	why = scrub_judge(&w, set[pass_frags], NULL, f, len, now);
	if (why < 0 || why >= SCRUB_NREASONS)
		__builtin_trap();
	free(f);
	return 0;
}
