/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The request head of pktmap metrics --listen, parsed from the bytes a
 * client sent (anyone who can connect: nothing in them is trusted). Only
 * the request line matters; header fields are skipped. Kept apart from
 * the server so that it can be fuzzed alone (tests/fuzz/fuzz_http.c).
 */
#include <stdbool.h>
#include <string.h>

#include "metrics.h"

#define METHOD_MAX 15
#define TARGET_MAX 1023

/* The end of the head (just past its empty line) in buf[0, len), or 0. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The request line "METHOD TARGET HTTP/1.x" in line[0, n) (no line
 * end): the method, and where the target is. Returns 0 or -1. */
static int request_line(const char *line, size_t n, size_t *mlen,
			const char **target, size_t *tlen)
{
	size_t i = 0;
	while (i < n && i < METHOD_MAX && line[i] >= 'A' && line[i] <= 'Z')
		i++;
	if (i == 0 || i >= n || line[i] != ' ')
		return -1;
	*mlen = i;
	const char *t = line + i + 1;
	const char *sp = memchr(t, ' ', n - i - 1);
	if (!sp || sp == t || (size_t)(sp - t) > TARGET_MAX || t[0] != '/')
		return -1;
	*target = t;
	*tlen = (size_t)(sp - t);
	const char *v = sp + 1;
	size_t vlen = n - (size_t)(v - line);
	/* HTTP/1.0, HTTP/1.1: one digit after the dot, nothing after it. */
	if (vlen != 8 || memcmp(v, "HTTP/1.", 7) != 0 || v[7] < '0' || v[7] > '9')
		return -1;
	return 0;
}

int metrics_req_parse(const char *buf, size_t len, size_t cap, bool *head)
{
	*head = false;
	size_t end = head_end(buf, len);
	if (!end)
		return len >= cap ? 431 : 0;
	if (end > cap)
		return 431;
	if (memchr(buf, 0, end))
		return 400;
	size_t n = (size_t)((const char *)memchr(buf, '\n', end) - buf);
	if (n && buf[n - 1] == '\r')
		n--;
	size_t mlen, tlen;
	const char *target;
	if (request_line(buf, n, &mlen, &target, &tlen) != 0)
		return 400;
	bool is_head = mlen == 4 && memcmp(buf, "HEAD", 4) == 0;
	if (!is_head && !(mlen == 3 && memcmp(buf, "GET", 3) == 0))
		return 405;
	const char *q = memchr(target, '?', tlen);
	if (q)
		tlen = (size_t)(q - target);
	if (tlen != strlen("/metrics") || memcmp(target, "/metrics", tlen) != 0)
		return 404;
	*head = is_head;
	return 200;
}
