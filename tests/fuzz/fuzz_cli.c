// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the command line's value parsers (apps/common/cli.c)
 * must never crash or read out of bounds, must accept only what they
 * promise (a number within its bounds, a range that goes upwards, a
 * finite number of seconds, an address range in order), and must explain
 * a refusal in a message cli_err() prints on one line. The first byte picks the bounds; the rest is the
 * value, as a command-line argument (NUL-terminated).
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -I include -I src -I apps/common tests/fuzz/fuzz_cli.c \
 *     apps/common/cli.c ... */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"

/* A refusal's message: terminated, not empty, and one line once
 * cli_err() has made it printable (an argument may hold a newline). */
static void one_line(char *err, size_t len)
{
	if (!memchr(err, 0, len) || !err[0])
		__builtin_trap();
	cli_one_line(err);
	for (const char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t maxes[] = {0, 1, 60, 1792, 65535, 65536,
					 1u << 20, UINT64_MAX / 2, UINT64_MAX};
	char s[512], err[256], out[300];
	struct cli_range r;
	struct cli_addr a = {1, 1, 2, 2};
	uint8_t mac[6];
	uint64_t v, max, min;
	double secs;

	if (size == 0)
		return 0;
	max = maxes[data[0] % (sizeof(maxes) / sizeof(maxes[0]))];
	min = data[0] & 0x80 ? max / 2 : 0;
	data++, size--;
	if (size >= sizeof(s))
		size = sizeof(s) - 1;
	memcpy(s, data, size);
	s[size] = 0;

	memset(err, 0x55, sizeof(err));
	if (cli_parse_u64(s, max, &v, err, sizeof(err)) == 0) {
		if (v > max)
			__builtin_trap();
	} else {
		one_line(err, sizeof(err));
	}
	memset(err, 0x55, sizeof(err));
	if (cli_parse_range(s, min, max, &r, err, sizeof(err)) == 0) {
		if (r.lo > r.hi || r.lo < min || r.hi > max)
			__builtin_trap();
	} else {
		one_line(err, sizeof(err));
	}
	memset(err, 0x55, sizeof(err));
	if (cli_parse_seconds(s, 86400, &secs, err, sizeof(err)) == 0) {
		if (!isfinite(secs) || secs < 0 || secs > 86400)
			__builtin_trap();
	} else {
		one_line(err, sizeof(err));
	}
	memset(err, 0x55, sizeof(err));
	if (cli_parse_addr(s, &a, err, sizeof(err)) == 0) {
		if (a.ip_lo > a.ip_hi || a.port_lo > a.port_hi)
			__builtin_trap();
	} else {
		one_line(err, sizeof(err));
	}
	memset(err, 0x55, sizeof(err));
	if (cli_parse_mac(s, mac, err, sizeof(err)) != 0)
		one_line(err, sizeof(err));
	/* Port names: whatever they become fits, or is refused. */
	if (cli_thread_port(s, 4, 3, out, sizeof(out)) == 0 &&
	    !memchr(out, 0, sizeof(out)))
		__builtin_trap();
	cli_backend_of(s, out, 16);
	if (!memchr(out, 0, 16))
		__builtin_trap();
	return 0;
}
