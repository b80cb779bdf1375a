/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Reading `pktmap router --config FILE` (router_conf.h): lines into
 * KEY VALUE items. The file is read once, whole, bounded in size, and
 * cut in place; nothing of it is used before every line has passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "router_conf.h"

/* The keys a file may hold: the router's options that say what it
 * forwards and how; not those that end a run (count, duration, idle) or
 * change its output (json), which belong to a command line. */
static const struct {
	const char *key;
	int opt;
	bool value;
} keys[] = {
	{"port", 'i', true},        {"mode", 'm', true},
	{"routes", 'r', true},      {"map", OPT_MAP, true},
	{"outputs", OPT_OUTPUTS, true}, {"threads", 'p', true},
	{"affinity", 'a', true},    {"batch", 'b', true},
	{"queue", OPT_QUEUE, true}, {"stash", OPT_STASH, true},
	{"seed", OPT_SEED, true},   {"copy", OPT_COPY, false},
	{"interval", 'T', true},    {"quiet", 'q', false},
	{"verbose", 'v', false},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* One line (NUL-terminated, no newline) into c's next item, or nothing
 * for a blank or comment line. Returns 0 or -1 with err set. */
static int parse_line(struct router_conf *c, char *s, unsigned line,
		      char *err, size_t errlen)
{
	char *key, *val, *end;
	unsigned k;

	for (char *p = s; *p; p++) {
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
			snprintf(err, errlen, "a control character (byte 0x%02x)",
				 (unsigned char)*p);
			return -1;
		}
		/* a comment: at the start, or after a blank */
		if (*p == '#' && (p == s || blank(p[-1]))) {
			*p = 0;
			break;
		}
	}
	while (blank(*s))
		s++;
	end = s + strlen(s);
	while (end > s && blank(end[-1]))
		*--end = 0;
	if (!*s)
		return 0;
	key = s;
	while (*s && !blank(*s))
		s++;
	val = s;
	if (*s) {
		*s = 0;
		val = s + 1;
		while (blank(*val))
			val++;
	}
	for (k = 0; k < NKEYS && strcmp(keys[k].key, key) != 0; k++)
		;
	if (k == NKEYS) {
		snprintf(err, errlen, "unknown key '%.40s' (port, mode, routes, "
			 "map, outputs, threads, affinity, batch, queue, stash, "
			 "seed, copy, interval, quiet, verbose)", key);
		return -1;
	}
	if (keys[k].value != (*val != 0)) {
		snprintf(err, errlen, keys[k].value ? "'%s' needs a value"
			 : "'%s' takes no value", key);
		return -1;
	}
	if (c->n == ROUTER_CONF_MAX_ITEMS) {
		snprintf(err, errlen, "more than %d settings",
			 ROUTER_CONF_MAX_ITEMS);
		return -1;
	}
	c->item[c->n++] = (struct router_conf_item){
		.opt = keys[k].opt, .key = keys[k].key,
		.value = *val ? val : NULL, .line = line};
	return 0;
}

int router_conf_parse(struct router_conf *c, char *buf, size_t len,
		      unsigned *line, char *err, size_t errlen)
{
	size_t at = 0;

	*line = 0;
	c->n = 0;
	if (len > ROUTER_CONF_MAX_BYTES) {
		snprintf(err, errlen, "larger than %d bytes",
			 ROUTER_CONF_MAX_BYTES);
		return -1;
	}
	while (at < len) {
		char *s = buf + at, *nl = memchr(s, '\n', len - at);
		size_t n = nl ? (size_t)(nl - s) : len - at;

		++*line;
		if (n + 1 > ROUTER_CONF_MAX_LINE) {
			snprintf(err, errlen, "line longer than %d bytes",
				 ROUTER_CONF_MAX_LINE - 1);
			return -1;
		}
		if (memchr(s, 0, n)) {
			snprintf(err, errlen, "a NUL byte");
			return -1;
		}
		at += n + (nl != NULL);
		s[n] = 0;
		if (parse_line(c, s, *line, err, errlen))
			return -1;
	}
	return 0;
}

/* Read all of fd (a regular file of at most ROUTER_CONF_MAX_BYTES) into
 * a new buffer with a byte to spare. Returns it with *len, or NULL with
 * err set. */
static char *slurp(int fd, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	size_t n = 0;
	char *buf;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		return NULL;
	}
	if (st.st_size > ROUTER_CONF_MAX_BYTES) {
		snprintf(err, errlen, "larger than %d bytes",
			 ROUTER_CONF_MAX_BYTES);
		return NULL;
	}
	/* one byte more than allowed: a file that grew is seen too big */
	buf = malloc(ROUTER_CONF_MAX_BYTES + 2);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, ROUTER_CONF_MAX_BYTES + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			free(buf);
			return NULL;
		}
		if (r == 0 || (n += (size_t)r) > ROUTER_CONF_MAX_BYTES)
			break;
	}
	*len = n;
	return buf;
}

/* A relative routes path, from the directory of the file `path` (the
 * last `routes` line: as on a command line, it is the one that counts). */
static int absolute_routes(struct router_conf *c, const char *path)
{
	const char *slash = strrchr(path, '/');
	int dir = slash ? (int)(slash - path) : 1;

	for (unsigned k = c->n; k-- > 0;) {
		struct router_conf_item *it = &c->item[k];

		if (it->opt != 'r')
			continue;
		if (it->value[0] == '/')
			return 0;
		if (asprintf(&c->routes, "%.*s/%s", dir, slash ? path : ".",
			     it->value) < 0) {
			c->routes = NULL;
			return -1;
		}
		it->value = c->routes;
		return 0;
	}
	return 0;
}

int router_conf_read(const char *path, struct router_conf *c, char *err,
		     size_t errlen)
{
	char msg[256];
	unsigned line;
	size_t len = 0;
	int fd;

	memset(c, 0, sizeof(*c));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	c->text = slurp(fd, &len, msg, sizeof(msg));
	close(fd);
	if (!c->text) {
		snprintf(err, errlen, "%s: %s", path, msg);
		return -1;
	}
	if (router_conf_parse(c, c->text, len, &line, msg, sizeof(msg))) {
		if (line)
			snprintf(err, errlen, "%s:%u: %s", path, line, msg);
		else
			snprintf(err, errlen, "%s: %s", path, msg);
		router_conf_free(c);
		return -1;
	}
	if (absolute_routes(c, path)) {
		snprintf(err, errlen, "%s: out of memory", path);
		router_conf_free(c);
		return -1;
	}
	return 0;
}

void router_conf_free(struct router_conf *c)
{
	free(c->text);
	free(c->routes);
	memset(c, 0, sizeof(*c));
}
