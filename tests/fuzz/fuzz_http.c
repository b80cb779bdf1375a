// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the request heads pktmap metrics --listen parses
 * (apps/metrics/metrics_req.c), as the server holds them: at most
 * REQ_MAX - 1 bytes, read in pieces. The answer is one of the statuses
 * the server knows; 200 only for GET or HEAD of /metrics (HEAD said);
 * an incomplete head is answered once it reaches the cap (431); and a
 * prefix of the bytes either waits for more or already gets the answer
 * the whole does (the answer does not depend on how reads cut them). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define CAP 8191 /* REQ_MAX - 1 in metrics_http.c */

static int parse(const uint8_t *data, size_t len, bool *head)
{
	/* A buffer of exactly len bytes: reading past it is caught. */
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return -1;
	memcpy(buf, data, len);
	int code = metrics_req_parse(buf, len, CAP, head);
	free(buf);
	return code;
}

/* A 200's request line, restated: "GET" or "HEAD", one space,
 * "/metrics" alone or with a query, one space, "HTTP/1." and a digit,
 * then the line's end; no NUL before the head's end. */
static bool line_ok(const uint8_t *data, size_t len, bool head)
{
	const char *m = head ? "HEAD /metrics" : "GET /metrics";
	size_t ml = strlen(m);
	const uint8_t *nl = memchr(data, '\n', len);
	if (!nl || len < ml || memcmp(data, m, ml) != 0)
		return false;
	size_t n = (size_t)(nl - data);
	if (n && data[n - 1] == '\r')
		n--;
	if (n < ml + 9 || memcmp(data + n - 9, " HTTP/1.", 8) != 0 ||
	    data[n - 1] < '0' || data[n - 1] > '9' || memchr(data, 0, n))
		return false;
	if (n - 9 > ml && data[ml] != '?')
		return false; /* /metricsX */
	return !memchr(data + ml, ' ', n - 9 - ml); /* one target */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len = size < CAP ? size : CAP;
	bool head;
	int code = parse(data, len, &head);
	switch (code) {
	case 0:
		if (len >= CAP)
			__builtin_trap(); /* a full buffer must be answered */
		break;
	case 200:
		if (!line_ok(data, len, head))
			__builtin_trap();
		break;
	case 400: case 404: case 405: case 431:
		if (head)
			__builtin_trap();
		break;
	default:
		__builtin_trap();
	}
	for (size_t k = 0; k < len; k += 1 + len / 7) {
		bool h;
		int c = parse(data, k, &h);
		if (c != 0 && (c != code || h != head))
			__builtin_trap();
	}
	return 0;
}
