/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap metrics --listen: a small HTTP/1.x server for one thing, GET
 * /metrics, that serves everyone at once so that no client can hold up
 * another (a scraper gets its answer while others trickle bytes, sit
 * idle or reconnect in a loop). One thread and poll(): at most CONN_MAX
 * connections (a newcomer's request is read as it is accepted; when all
 * are taken, the oldest one still sending its request goes, else the
 * oldest taking its answer), each with
 * a deadline on its whole request (REQ_MAX bytes of head within
 * REQ_TIMEOUT_MS, else 431 or 408) and on its whole answer
 * (RESP_TIMEOUT_MS; an error's, REQ_TIMEOUT_MS), closed after it. The page is made at most once per
 * turn of the loop and shared by the answers of that turn; at most
 * PAGES_MAX pages are alive (the clients slowest to take the oldest one
 * are dropped to make a new one): memory is bounded by CONN_MAX heads
 * and PAGES_MAX pages, and a page by what a scan reads (hostports.h).
 * Anything but GET or HEAD of /metrics gets an HTTP error
 * (metrics_req.c parses the head). It knows nothing of the metrics
 * themselves: metrics.c hands it the function that writes the page
 * (metrics_write), so the calls go one way.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "metrics.h"
#include "notify.h"
#include "util.h"

#define REQ_MAX 8192
#define REQ_TIMEOUT_MS 2000
#define RESP_TIMEOUT_MS 10000
#define CONN_MAX 64
#define PAGES_MAX 4

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

/* Bind and listen, non-blocking; prints where. Returns the socket, or
 * -EXIT_USAGE (not an address) or -EXIT_RUNTIME (cannot listen there)
 * after a one-line error. */
static int open_listener(const char *addr)
{
	char host[128], port[16];
	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) != 0) {
		cli_err("metrics: --listen '%s': want [ADDR:]PORT (127.0.0.1:9464, "
			"[::1]:9464, 9464)", addr);
		return -EXIT_USAGE;
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	int e = getaddrinfo(host, port, &hints, &ai);
	if (e) {
		cli_err("metrics: --listen '%s': %s (give a numeric address)", addr,
			gai_strerror(e));
		return -EXIT_USAGE;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		cli_err("metrics: cannot listen on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -EXIT_RUNTIME;
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

/* One made page, shared by the answers that send it. */
struct page {
	char *buf;
	size_t len;
	unsigned refs;       /* answers sending it, +1 while it is the newest */
	uint64_t made;       /* the loop turn that made it */
};

/* A client: reading its request head, then writing its answer. */
struct conn {
	int fd;              /* -1: a free slot */
	bool writing;
	int64_t since;       /* accepted (ms, CLOCK_MONOTONIC) */
	uint64_t turn;       /* the loop turn that accepted it */
	int64_t deadline;    /* of the request, then of the answer */
	size_t len;          /* request bytes read */
	char hdr[512];       /* the answer's head (and an error's body) */
	size_t hlen, off;    /* its length; bytes of the answer sent */
	struct page *page;   /* the body of a 200, or NULL */
	bool head;           /* HEAD: the head alone */
	char req[REQ_MAX];
};

struct server {
	struct conn *c;      /* CONN_MAX slots */
	struct page *newest;
	unsigned pages;      /* alive */
	uint64_t turn;
	int (*write_body)(FILE *f);
};

static void page_put(struct server *s, struct page *p)
{
	if (p && --p->refs == 0) {
		free(p->buf);
		free(p);
		s->pages--;
	}
}

static void conn_close(struct server *s, struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
	close(c->fd);
	page_put(s, c->page);
	c->fd = -1;
	c->page = NULL;
}

/* Start the answer of c: its head (with a body of its own when body is
 * not NULL, else the page's), within RESP_TIMEOUT_MS. */
static void answer(struct conn *c, int code, const char *status,
		   const char *body, int64_t now)
{
	size_t blen = body ? strlen(body) : c->page ? c->page->len : 0;
	int n = snprintf(c->hdr, sizeof(c->hdr),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
			 code, status, body ? "text/plain; charset=utf-8" :
			 "text/plain; version=0.0.4; charset=utf-8", blen,
			 code == 405 ? "Allow: GET, HEAD\r\n" : "",
			 body && !c->head ? body : "");
	c->hlen = n > 0 && (size_t)n < sizeof(c->hdr) ? (size_t)n : 0;
	c->off = 0;
	c->writing = true;
	c->deadline = now + RESP_TIMEOUT_MS;
}

static void http_error(struct conn *c, int code, const char *status,
		       const char *why, int64_t now)
{
	char body[256];
	snprintf(body, sizeof(body), "%d %s: %s\n", code, status, why);
	c->head = false;
	answer(c, code, status, body, now);
	c->deadline = now + REQ_TIMEOUT_MS; /* a few bytes: no more time */
}

/* The page for an answer of this turn: the newest when this turn made
 * it, else a new one (dropping the answers of the oldest page when
 * PAGES_MAX are alive). NULL when out of memory. */
static struct page *page_get(struct server *s)
{
	if (s->newest && s->newest->made == s->turn) {
		s->newest->refs++;
		return s->newest;
	}
	while (s->pages >= PAGES_MAX) {
		struct page *old = NULL;
		for (int i = 0; i < CONN_MAX; i++)
			if (s->c[i].fd >= 0 && s->c[i].page &&
			    (!old || s->c[i].page->made < old->made))
				old = s->c[i].page;
		if (!old)
			break;
		for (int i = 0; i < CONN_MAX; i++)
			if (s->c[i].fd >= 0 && s->c[i].page == old)
				conn_close(s, &s->c[i]);
	}
	struct page *p = calloc(1, sizeof(*p));
	FILE *f = p ? open_memstream(&p->buf, &p->len) : NULL;
	if (!f || s->write_body(f) != 0) {
		if (f)
			fclose(f);
		if (p)
			free(p->buf);
		free(p);
		return NULL;
	}
	fclose(f);
	p->made = s->turn;
	p->refs = 2; /* the answer's, and as the newest */
	s->pages++;
	page_put(s, s->newest);
	s->newest = p;
	return p;
}

/* The request head is complete (or cannot be): answer it. */
static void request_done(struct server *s, struct conn *c, int code, int64_t now)
{
	switch (code) {
	case 200:
		c->page = page_get(s);
		if (!c->page)
			return http_error(c, 500, "Internal Server Error",
					  "out of memory", now);
		return answer(c, 200, "OK", NULL, now);
	case 404:
		return http_error(c, 404, "Not Found", "the metrics are at /metrics", now);
	case 405:
		return http_error(c, 405, "Method Not Allowed", "only GET and HEAD", now);
	case 431:
		return http_error(c, 431, "Request Header Fields Too Large",
				  "the request head is over 8 KiB", now);
	default:
		return http_error(c, 400, "Bad Request",
				  "expected: GET /metrics HTTP/1.1", now);
	}
}

/* c is readable: take what it sent, answer once the head is complete. */
static void conn_read(struct server *s, struct conn *c, int64_t now)
{
	ssize_t r = recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		/* Gone, or stopped sending half-way (it may still read). */
		if (r < 0 || c->len == 0)
			return conn_close(s, c);
		return http_error(c, 408, "Request Timeout", "incomplete request", now);
	}
	c->len += (size_t)r;
	bool head;
	int code = metrics_req_parse(c->req, c->len, sizeof(c->req) - 1, &head);
	if (code == 0)
		return;
	c->head = head;
	request_done(s, c, code, now);
}

/* c is writable: send more of its answer; closed once all is sent. */
static void conn_write(struct server *s, struct conn *c)
{
	size_t blen = c->page && !c->head ? c->page->len : 0;
	while (c->off < c->hlen + blen) {
		struct iovec iov[2];
		int n = 0;
		if (c->off < c->hlen)
			iov[n++] = (struct iovec){ c->hdr + c->off, c->hlen - c->off };
		size_t boff = c->off > c->hlen ? c->off - c->hlen : 0;
		if (blen > boff)
			iov[n++] = (struct iovec){ c->page->buf + boff, blen - boff };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0)
			break; /* the client went away */
		c->off += (size_t)w;
	}
	conn_close(s, c);
}

/* The oldest client, writing or not, accepted before this turn (one
 * accepted in this turn has not had a chance to send its request); -1:
 * none. */
static int oldest(const struct server *s, bool writing)
{
	int old = -1;
	for (int i = 0; i < CONN_MAX; i++)
		if (s->c[i].writing == writing && s->c[i].turn < s->turn &&
		    (old < 0 || s->c[i].since < s->c[old].since))
			old = i;
	return old;
}

/* A free slot for a new client, or -1 when it is the one to go: when
 * all are taken, the oldest client still sending its request goes, else
 * the oldest still taking its answer, else (all came in this turn) the
 * newcomer. */
static int slot_for_new(struct server *s)
{
	for (int i = 0; i < CONN_MAX; i++)
		if (s->c[i].fd < 0)
			return i;
	int old = oldest(s, false);
	old = old >= 0 ? old : oldest(s, true);
	if (old >= 0)
		conn_close(s, &s->c[old]);
	return old;
}

/* Take every client waiting on the listener. */
static void accept_all(struct server *s, int lfd, int64_t now)
{
	for (int n = 0; n < 4 * CONN_MAX; n++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return; /* none left, or one gone before we took it */
		int i = slot_for_new(s);
		if (i < 0) {
			close(fd);
			continue;
		}
		struct conn *c = &s->c[i];
		c->fd = fd;
		c->writing = c->head = false;
		c->since = now;
		c->turn = s->turn;
		c->deadline = now + REQ_TIMEOUT_MS;
		c->len = c->hlen = c->off = 0;
		c->page = NULL;
		/* A scraper's request is usually there already: answer it
		 * now, before more newcomers need its slot. */
		conn_read(s, c, now);
		if (c->fd >= 0 && c->writing)
			conn_write(s, c);
	}
}

/* Clients past their deadline: a request gets 408, an answer ends. */
static void expire(struct server *s, int64_t now)
{
	for (int i = 0; i < CONN_MAX; i++) {
		struct conn *c = &s->c[i];
		if (c->fd < 0 || now < c->deadline)
			continue;
		if (c->writing)
			conn_close(s, c);
		else
			http_error(c, 408, "Request Timeout",
				   "the request took over 2 s", now);
	}
}

/* Wait for the listener and the clients (at most until the nearest
 * deadline, or 500 ms to look at the stop flag), then serve them.
 * Returns 0, or -errno when poll fails. */
static int serve_turn(struct server *s, int lfd)
{
	struct pollfd pfd[CONN_MAX + 1];
	int idx[CONN_MAX + 1], n = 1;
	int64_t now = pm_clock_ms(CLOCK_MONOTONIC), wait = 500;
	pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (int i = 0; i < CONN_MAX; i++) {
		struct conn *c = &s->c[i];
		if (c->fd < 0)
			continue;
		pfd[n] = (struct pollfd){ .fd = c->fd,
					  .events = c->writing ? POLLOUT : POLLIN };
		idx[n++] = i;
		if (c->deadline - now < wait)
			wait = c->deadline - now > 0 ? c->deadline - now : 0;
	}
	int r = poll(pfd, (nfds_t)n, (int)wait);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	s->turn++;
	now = pm_clock_ms(CLOCK_MONOTONIC);
	for (int k = 1; k < n; k++) {
		struct conn *c = &s->c[idx[k]];
		if (!pfd[k].revents || c->fd != pfd[k].fd)
			continue; /* closed meanwhile (its page was dropped) */
		if (c->writing)
			conn_write(s, c);
		else
			conn_read(s, c, now);
		if (c->fd >= 0 && c->writing && c->off == 0)
			conn_write(s, c); /* the answer to a request just read */
	}
	expire(s, now);
	if (pfd[0].revents)
		accept_all(s, lfd, now);
	return 0;
}

int metrics_serve(const char *addr, volatile sig_atomic_t *stop,
		  int (*write_body)(FILE *f))
{
	int lfd = open_listener(addr);
	if (lfd < 0)
		return -lfd;
	struct server s = { .write_body = write_body };
	s.c = calloc(CONN_MAX, sizeof(*s.c));
	if (!s.c) {
		close(lfd);
		cli_err("metrics: out of memory");
		return EXIT_RUNTIME;
	}
	for (int i = 0; i < CONN_MAX; i++)
		s.c[i].fd = -1;
	/* Listening: a scrape sent now is answered (Type=notify units). */
	notify_ready();
	int ret = 0;
	while (!*stop && ret == 0)
		ret = serve_turn(&s, lfd);
	notify_stopping();
	if (ret)
		cli_err("metrics: poll: %s", strerror(-ret));
	for (int i = 0; i < CONN_MAX; i++)
		if (s.c[i].fd >= 0)
			conn_close(&s, &s.c[i]);
	page_put(&s, s.newest);
	free(s.c);
	close(lfd);
	return ret ? EXIT_RUNTIME : 0;
}
