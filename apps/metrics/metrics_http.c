/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap metrics --listen: a small HTTP/1.x server for one thing, GET
 * /metrics. One connection at a time, each bounded (8 KiB of request
 * head, 2 s to send it, 2 s to take the answer), closed after the answer:
 * a scraper every few seconds is the load it is made for. Anything else
 * gets an HTTP error and the listener goes on serving. It knows nothing
 * of the metrics themselves: metrics.c hands it the function that writes
 * the page (metrics_write), so the calls go one way.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "metrics.h"

#define REQ_MAX 8192
#define IO_TIMEOUT_S 2

/* "PORT", ":PORT", "ADDR:PORT", "[ADDR6]:PORT" into host and port; no
 * address means loopback. Returns 0 or -1. */
static int split_addr(const char *s, char *host, size_t hlen, char *port,
		      size_t plen)
{
	const char *colon = strrchr(s, ':');
	const char *p = colon ? colon + 1 : s;
	size_t n = colon ? (size_t)(colon - s) : 0;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		s++, n -= 2;
	if (n >= hlen || !*p || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p) ||
	    atoi(p) > 65535)
		return -1;
	(void)plen;
	if (n)
		snprintf(host, hlen, "%.*s", (int)n, s);
	else
		snprintf(host, hlen, "127.0.0.1");
	snprintf(port, plen, "%s", p);
	return 0;
}

/* Bind and listen; prints where. Returns the socket or -1 (said). */
static int open_listener(const char *addr)
{
	char host[128], port[16];
	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) != 0) {
		cli_err("metrics: --listen '%s': want [ADDR:]PORT (127.0.0.1:9464, "
			"[::1]:9464, 9464)", addr);
		return -1;
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	int e = getaddrinfo(host, port, &hints, &ai);
	if (e) {
		cli_err("metrics: --listen '%s': %s (give a numeric address)", addr,
			gai_strerror(e));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
		cli_err("metrics: cannot listen on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[128] = "?", pt[16] = "?";
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), pt, sizeof(pt),
			    NI_NUMERICHOST | NI_NUMERICSERV);
	printf("pktmap metrics: listening on http://%s%s%s:%s/metrics\n",
	       strchr(h, ':') ? "[" : "", h, strchr(h, ':') ? "]" : "", pt);
	fflush(stdout);
	return fd;
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
		if (w <= 0)
			return; /* the client went away or took too long */
		buf += w, len -= (size_t)w;
	}
}

static void respond(int fd, int code, const char *status, const char *type,
		    const char *body, size_t len, bool head)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
			 code, status, type, len,
			 code == 405 ? "Allow: GET, HEAD\r\n" : "");
	send_all(fd, hdr, (size_t)n);
	if (!head)
		send_all(fd, body, len);
}

static void http_error(int fd, int code, const char *status, const char *why)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "%d %s: %s\n", code, status, why);
	respond(fd, code, status, "text/plain; charset=utf-8", body, (size_t)n,
		false);
}

/* Read the request head (up to the empty line). Returns its length, 0
 * when the client sent nothing, -1 when it is too long, -2 when it
 * stopped or timed out half-way. */
static int read_head(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	while (len < cap - 1) {
		ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
		if (r <= 0)
			return len ? -2 : 0;
		len += (size_t)r;
		buf[len] = 0;
		if (memmem(buf, len, "\r\n\r\n", 4) || memmem(buf, len, "\n\n", 2))
			return (int)len;
	}
	return -1;
}

/* Answer one connection; write_body(f) writes the page. */
static void serve_one(int fd, int (*write_body)(FILE *f))
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char req[REQ_MAX], method[16], target[1024], version[16], end;
	int n = read_head(fd, req, sizeof(req));
	if (n == 0)
		return;
	if (n == -1)
		return http_error(fd, 431, "Request Header Fields Too Large",
			     "the request head is over 8 KiB");
	if (n == -2)
		return http_error(fd, 408, "Request Timeout", "incomplete request");
	if (memchr(req, 0, (size_t)n))
		return http_error(fd, 400, "Bad Request", "a NUL byte in the request");
	req[strcspn(req, "\r\n")] = 0;
	if (sscanf(req, "%15[A-Z] %1023[^ ] %15[^ ]%c", method, target, version,
		   &end) != 3 || strncmp(version, "HTTP/1.", 7) != 0 ||
	    target[0] != '/')
		return http_error(fd, 400, "Bad Request",
			     "expected: GET /metrics HTTP/1.1");
	bool head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0)
		return http_error(fd, 405, "Method Not Allowed", "only GET and HEAD");
	target[strcspn(target, "?")] = 0;
	if (strcmp(target, "/metrics") != 0)
		return http_error(fd, 404, "Not Found", "the metrics are at /metrics");
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	if (!f || write_body(f) != 0) {
		if (f)
			fclose(f);
		free(body);
		return http_error(fd, 500, "Internal Server Error", "out of memory");
	}
	fclose(f);
	respond(fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body,
		len, head);
	free(body);
}

int metrics_serve(const char *addr, volatile sig_atomic_t *stop,
		  int (*write_body)(FILE *f))
{
	int lfd = open_listener(addr);
	if (lfd < 0)
		return EXIT_USAGE;
	while (!*stop) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		if (poll(&pfd, 1, 500) <= 0)
			continue;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue; /* EINTR, a client gone before we took it */
		serve_one(c, write_body);
		shutdown(c, SHUT_WR);
		close(c);
	}
	close(lfd);
	return 0;
}
