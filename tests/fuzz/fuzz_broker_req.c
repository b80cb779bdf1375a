// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the requests pktmap broker reads from any user who
 * can reach its socket (src/broker_proto.c), as the broker holds them: a
 * buffer of exactly the message's bytes, at most PM_BK_MSG_MAX + 1. An
 * accepted request has a known verb, a 0-terminated interface name the
 * kernel would take, fields in range, and formats back into a request
 * that parses to the same thing; a refused one has a one-line reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > PM_BK_MSG_MAX + 1)
		size = PM_BK_MSG_MAX + 1;
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct pm_bk_req r, r2;
	char err[200], line[PM_BK_MSG_MAX];
	if (pm_bk_req_parse(buf, size, &r, err, sizeof(err)) == 0) {
		if (r.verb < PM_BK_XSK || r.verb > PM_BK_TAP ||
		    !memchr(r.ifname, 0, sizeof(r.ifname)) || r.queue > 4095 ||
		    (r.verb == PM_BK_XSK && (r.umem_len == 0 || r.umem_len % r.chunk ||
					     r.fq == 0 || (r.fq & (r.fq - 1)))))
			__builtin_trap();
		int n = pm_bk_req_format(&r, line, sizeof(line));
		if (n < 0 || pm_bk_req_parse(line, (size_t)n, &r2, err, sizeof(err)) ||
		    r2.verb != r.verb || r2.queue != r.queue || r2.ns != r.ns ||
		    (r.verb != PM_BK_ATTACH && strcmp(r2.ifname, r.ifname)) ||
		    (r.verb == PM_BK_XSK && (r2.umem_len != r.umem_len ||
					     r2.umem_off != r.umem_off ||
					     r2.mode != r.mode || r2.dir != r.dir)))
			__builtin_trap();
	} else if (!memchr(err, 0, sizeof(err)) || strchr(err, '\n')) {
		__builtin_trap();
	}
	free(buf);
	return 0;
}
