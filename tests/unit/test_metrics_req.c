// SPDX-License-Identifier: BSD-2-Clause
/* The request heads pktmap metrics --listen parses (metrics_req_parse(),
 * apps/metrics/metrics_req.c): the answer to each, from a table of good
 * requests and of each way a request can be wrong, one check of the
 * parser at a time; and every head fed a byte at a time gives the same
 * answer once complete (reads may cut it anywhere). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "t.h"

#define CAP 8191 /* REQ_MAX - 1 in metrics_http.c */

static const struct {
	const char *req;
	size_t len;    /* 0: strlen(req) */
	int code;
	bool head;
} cases[] = {
	{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 0, 200, false },
	{ "GET /metrics HTTP/1.0\n\n", 0, 200, false },
	{ "GET /metrics HTTP/1.9\n\n", 0, 200, false },
	{ "HEAD /metrics HTTP/1.1\r\n\r\n", 0, 200, true },
	{ "GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 0, 200, false },
	{ "GET /metrics?x HTTP/1.1\r\n\r\nbody after the head", 0, 200, false },
	/* incomplete: wait for more */
	{ "GET /metrics HTTP/1.1\r\n", 0, 0, false },
	{ "GET /metr", 0, 0, false },
	{ "GET /metrics HTTP/1.1\nA\n", 0, 0, false },
	{ "GET /metrics HTTP/1.1\r\n\rX", 0, 0, false },
	{ "GET /metrics HTTP/1.1\r\n\r", 0, 0, false },
	{ "", 0, 0, false },
	/* not a request line */
	{ "hello there\r\n\r\n", 0, 400, false },
	{ "GET /metrics\r\n\r\n", 0, 400, false },
	{ "GET  /metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "GET /metrics  HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1.1 x\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/2.0\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1.x\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1.11\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1.\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1x1\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1./\r\n\r\n", 0, 400, false },
	{ "GET /metrics HTTP/1.:\r\n\r\n", 0, 400, false },
	{ " /metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "\n\n", 0, 400, false },
	{ "\r\n\r\n", 0, 400, false },
	{ "GET\r\n\r\n", 0, 400, false },
	{ "GET\t/metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "GET metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ " GET /metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "get /metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "ABCDEFGHIJKLMNOP /metrics HTTP/1.1\r\n\r\n", 0, 400, false },
	{ "GET /metrics\0 HTTP/1.1\r\n\r\n", 27, 400, false },
	{ "GET /metrics HTTP/1.1\r\nX: \0\r\n\r\n", 31, 400, false },
	/* other methods, other paths */
	{ "POST /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "ABCDEFGHIJKLMNO /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "GETS /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "GEX /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "HEAX /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "ZZZ /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "X /metrics HTTP/1.1\r\n\r\n", 0, 405, false },
	{ "GET /metricx HTTP/1.1\r\n\r\n", 0, 404, false },
	{ "GET /metricsX HTTP/1.1\r\n\r\n", 0, 404, false },
	{ "GET /metric HTTP/1.1\r\n\r\n", 0, 404, false },
	{ "GET /?/metrics HTTP/1.1\r\n\r\n", 0, 404, false },
	{ "GET / HTTP/1.1\r\n\r\n", 0, 404, false },
	{ "GET /etc/passwd HTTP/1.1\r\n\r\n", 0, 404, false },
};

/* A target of n bytes: up to 1023 is a target, more is a bad request. */
static int long_target(size_t n)
{
	static char req[2048];
	memcpy(req, "GET /", 5);
	memset(req + 5, 'a', n - 1);
	strcpy(req + 4 + n, " HTTP/1.1\r\n\r\n");
	bool head;
	return metrics_req_parse(req, strlen(req), CAP, &head);
}

/* The parser on a copy of exactly len bytes (under ASan, CI's unit run,
 * a read past them is caught), from the first byte to the len-th. */
static int parse(const char *req, size_t len, bool *head)
{
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return -1;
	memcpy(buf, req, len);
	int code = metrics_req_parse(buf, len, CAP, head);
	free(buf);
	return code;
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].req);
		bool head = !cases[i].head;
		int code = parse(cases[i].req, len, &head);
		CHECK(code == cases[i].code && head == cases[i].head,
		      "case %zu (%.40s): %d head %d, want %d head %d", i,
		      cases[i].req, code, head, cases[i].code, cases[i].head);
		/* a byte at a time: waits, then the same answer */
		for (size_t k = 0; k < len; k++) {
			int c = parse(cases[i].req, k, &head);
			if (c != 0 && c != code) {
				CHECK(0, "case %zu cut at %zu: %d, whole: %d", i, k, c, code);
				break;
			}
		}
	}
	/* the cap: a head with no end fills it (431); the end at the cap
	 * still counts, one past it does not */
	static char big[CAP + 8];
	memset(big, 'a', sizeof(big));
	bool head;
	CHECK_EQ(metrics_req_parse(big, CAP, CAP, &head), 431);
	CHECK_EQ(metrics_req_parse(big, CAP - 1, CAP, &head), 0);
	const char *req = "GET /metrics HTTP/1.1\r\nX: ";
	memcpy(big, req, strlen(req));
	memcpy(big + CAP - 4, "\r\n\r\n", 4);
	CHECK_EQ(metrics_req_parse(big, CAP, CAP, &head), 200);
	memcpy(big + CAP - 4, "a\r\n\r", 4);
	memcpy(big + CAP, "\n", 1);
	CHECK_EQ(metrics_req_parse(big, CAP + 1, CAP, &head), 431);
	CHECK_EQ(long_target(1023), 404);
	CHECK_EQ(long_target(1024), 400);
	return t_done("metrics_req");
}
