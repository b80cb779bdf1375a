// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the router's routes files (src/fwd/router_lpm.c):
 * the input is a file, read through rt_lpm_read() from a memfd. A file
 * that is refused has a one-line "FILE:LINE: message" error; a file that
 * is accepted builds a DIR-24-8 table (or is refused as too big) whose
 * lookups agree with a brute-force longest-prefix match on every
 * prefix's first, last and neighbouring addresses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "router_lpm.h"

#define MAX_HOP 16

static uint32_t mask(uint32_t len)
{
	return len ? ~0u << (32 - len) : 0;
}

static int brute(const struct rt_route *r, uint32_t n, uint32_t dst)
{
	int best = -1, blen = -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = mask(r[i].len);
		/* a later equal prefix replaces an earlier one */
		if ((dst & m) == r[i].prefix && (int)r[i].len >= blen) {
			blen = (int)r[i].len;
			best = (int)r[i].hop;
		}
	}
	return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512];
	struct rt_route *routes = NULL;
	uint32_t n = 0;
	int fd = memfd_create("routes", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err[0] = 0;
	int rc = rt_lpm_read(path, MAX_HOP, &routes, &n, err, sizeof(err));
	close(fd);
	if (rc) {
		if (!err[0] || strchr(err, '\n') || !memchr(err, 0, sizeof(err)))
			__builtin_trap();
		return 0;
	}
	for (uint32_t i = 0; i < n; i++)
		if (routes[i].len > 32 || routes[i].hop >= MAX_HOP ||
		    (routes[i].prefix & ~mask(routes[i].len)) != 0)
			__builtin_trap();
	struct rt_route *copy = malloc((n ? n : 1) * sizeof(*copy));
	if (n)
		memcpy(copy, routes, n * sizeof(*copy));
	struct rt_lpm t;
	memset(&t, 0, sizeof(t));
	if (rt_lpm_build(&t, copy, n) == 0) {
		for (uint32_t i = 0; i < n && i < 64; i++) {
			uint32_t lo = routes[i].prefix;
			uint32_t hi = lo | ~mask(routes[i].len);
			uint32_t probe[4] = {lo, hi, lo - 1, hi + 1};
			for (int k = 0; k < 4; k++)
				if (rt_lpm_lookup(&t, probe[k]) != brute(routes, n, probe[k]))
					__builtin_trap();
		}
		rt_lpm_free(&t);
	}
	free(copy);
	free(routes);
	return 0;
}
