/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The broker's policy (policy.h): parsed from one bounded read, every
 * field checked; the check names the rule that decided.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker_proto.h"
#include "policy.h"

static const char *const backends[] = {
	[POL_XDP] = "xdp", [POL_PKT] = "pkt", [POL_TAP] = "tap",
};

const char *policy_backend_name(enum pol_backend b)
{
	return b >= POL_XDP && b <= POL_TAP ? backends[b] : "?";
}

__attribute__((format(printf, 5, 6)))
static int perr(char *err, size_t errlen, const char *file, uint32_t line,
		const char *fmt, ...)
{
	char what[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s:%u: %s", file, line, what);
	return -EINVAL;
}

/* A decimal number up to max, the whole of s. */
static int num(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	if (!*s || strlen(s) > 20)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		uint64_t d = (uint64_t)(*s - '0');
		if (x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

/* "64M", "1G", "4096": bytes up to 2^40. */
static int size_of(const char *s, uint64_t *out)
{
	char d[24];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(d))
		return -1;
	memcpy(d, s, n + 1);
	unsigned shift = 0;
	char u = d[n - 1];
	if (u == 'K' || u == 'k' || u == 'M' || u == 'm' || u == 'G' || u == 'g') {
		shift = u == 'K' || u == 'k' ? 10 : u == 'M' || u == 'm' ? 20 : 30;
		d[n - 1] = 0;
	}
	uint64_t x;
	if (num(d, (1ull << 40) >> shift, &x))
		return -1;
	*out = x << shift;
	return 0;
}

static int who_of(struct pol_rule *r, const char *w)
{
	uint64_t id;
	if (strcmp(w, "any") == 0) {
		r->who = POL_ANY;
		return 0;
	}
	bool user = strncmp(w, "user:", 5) == 0;
	if (!user && strncmp(w, "group:", 6) != 0)
		return -1;
	const char *name = w + (user ? 5 : 6);
	r->who = user ? POL_USER : POL_GROUP;
	if (num(name, UINT32_MAX - 1, &id) == 0) {
		r->id = (uint32_t)id;
		return 0;
	}
	if (user) {
		struct passwd *pw = getpwnam(name);
		if (!pw)
			return -2;
		r->id = pw->pw_uid;
	} else {
		struct group *gr = getgrnam(name);
		if (!gr)
			return -2;
		r->id = gr->gr_gid;
	}
	return 0;
}

static int port_of(struct pol_rule *r, const char *p)
{
	const char *colon = strchr(p, ':');
	if (!colon)
		return -1;
	r->backend = 0;
	for (int b = POL_XDP; b <= POL_TAP; b++)
		if ((size_t)(colon - p) == 3 && strncmp(p, backends[b], 3) == 0)
			r->backend = (enum pol_backend)b;
	if (!r->backend)
		return -1;
	const char *i = colon + 1;
	size_t n = strlen(i);
	r->prefix = n > 0 && i[n - 1] == '*';
	if (r->prefix)
		n--;
	if ((n == 0 && !r->prefix) || n >= sizeof(r->iface))
		return -1;
	for (size_t k = 0; k < n; k++)
		if (i[k] <= ' ' || i[k] > '~' || i[k] == '/' || i[k] == ':' ||
		    i[k] == '*')
			return -1;
	memcpy(r->iface, i, n);
	r->iface[n] = 0;
	return 0;
}

/* A list of words of `names` (a comma-separated value) into bits. */
static int bits_of(const char *v, const char *const *names, const uint32_t *bits,
		   size_t n, uint32_t *out)
{
	*out = 0;
	char buf[64];
	if (strlen(v) >= sizeof(buf))
		return -1;
	strcpy(buf, v);
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		size_t k = 0;
		while (k < n && strcmp(w, names[k]) != 0)
			k++;
		if (k == n)
			return -1;
		*out |= bits[k];
	}
	return *out ? 0 : -1;
}

static int option(struct pol_rule *r, char *o, const char *file, uint32_t line,
		  char *err, size_t errlen)
{
	static const char *const modes[] = { "copy", "zc", "live" };
	static const uint32_t mbits[] = { PM_BK_MODE_COPY, PM_BK_MODE_ZC,
					  PM_BK_MODE_LIVE };
	static const char *const dirs[] = { "rx", "tx" };
	static const uint32_t dbits[] = { PM_BK_DIR_RX, PM_BK_DIR_TX };
	char *eq = strchr(o, '=');
	if (!eq)
		return perr(err, errlen, file, line, "'%.40s': expected key=value", o);
	*eq = 0;
	const char *v = eq + 1;
	uint64_t a, b;
	if (strcmp(o, "queues") == 0) {
		char *dash = strchr(v, '-');
		if (dash)
			*dash = 0;
		if (num(v, 4095, &a) || (dash ? num(dash + 1, 4095, &b) : (b = a, 0)) ||
		    b < a)
			return perr(err, errlen, file, line, "queues= is N or N-M "
				    "(0 to 4095)");
		r->qlo = (uint32_t)a;
		r->qhi = (uint32_t)b;
	} else if (strcmp(o, "modes") == 0) {
		if (bits_of(v, modes, mbits, 3, &r->modes))
			return perr(err, errlen, file, line, "modes= is a list of "
				    "copy, zc, live");
	} else if (strcmp(o, "dir") == 0) {
		if (bits_of(v, dirs, dbits, 2, &r->dirs))
			return perr(err, errlen, file, line, "dir= is rx, tx or rx,tx");
	} else if (strcmp(o, "umem") == 0) {
		if (size_of(v, &r->umem))
			return perr(err, errlen, file, line, "umem= is a size (4096, "
				    "64M, 1G) up to 1T");
	} else if (strcmp(o, "netns") == 0) {
		if (strcmp(v, "host") != 0 && strcmp(v, "own") != 0)
			return perr(err, errlen, file, line, "netns= is host or own");
		r->own_netns = strcmp(v, "own") == 0;
	} else {
		return perr(err, errlen, file, line, "unknown option '%.32s' (queues, "
			    "modes, dir, umem, netns)", o);
	}
	return 0;
}

/* One line (0-terminated, no newline): a rule, or nothing. */
static int parse_line(struct policy *pol, char *s, const char *file,
		      uint32_t line, char *err, size_t errlen)
{
	char *hash = strchr(s, '#');
	if (hash)
		*hash = 0;
	char *save = NULL, *w = strtok_r(s, " \t\r", &save);
	if (!w)
		return 0;
	if (strcmp(w, "allow") != 0)
		return perr(err, errlen, file, line, "'%.32s': a rule starts with "
			    "'allow'", w);
	if (pol->n >= POLICY_MAX_RULES)
		return perr(err, errlen, file, line, "more than %u rules",
			    POLICY_MAX_RULES);
	struct pol_rule *r = &pol->rules[pol->n];
	memset(r, 0, sizeof(*r));
	r->line = line;
	r->qhi = 4095;
	r->modes = PM_BK_MODE_COPY | PM_BK_MODE_ZC;
	r->dirs = PM_BK_DIR_RX | PM_BK_DIR_TX;
	r->umem = POLICY_DEFAULT_UMEM;
	char *who = strtok_r(NULL, " \t\r", &save);
	char *port = who ? strtok_r(NULL, " \t\r", &save) : NULL;
	if (!port)
		return perr(err, errlen, file, line, "expected: allow WHO "
			    "BACKEND:IFACE [options]");
	int ret = who_of(r, who);
	if (ret)
		return perr(err, errlen, file, line, ret == -2 ?
			    "'%.40s': no such user or group" :
			    "'%.40s': expected user:NAME, group:NAME or any", who);
	if (port_of(r, port))
		return perr(err, errlen, file, line, "'%.40s': expected xdp:IFACE, "
			    "pkt:IFACE or tap:IFACE (IFACE may end in *)", port);
	for (char *o; (o = strtok_r(NULL, " \t\r", &save));)
		if ((ret = option(r, o, file, line, err, errlen)))
			return ret;
	pol->n++;
	return 0;
}

int policy_parse(struct policy *pol, const char *file, const char *text,
		 size_t len, char *err, size_t errlen)
{
	memset(pol, 0, sizeof(*pol));
	snprintf(pol->file, sizeof(pol->file), "%s", file);
	if (len > POLICY_MAX_BYTES)
		return perr(err, errlen, file, 0, "larger than %u bytes",
			    POLICY_MAX_BYTES);
	pol->rules = calloc(POLICY_MAX_RULES, sizeof(*pol->rules));
	if (!pol->rules)
		return -ENOMEM;
	char line[POLICY_MAX_LINE + 1];
	uint32_t no = 0;
	for (size_t i = 0; i < len;) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		no++;
		if (e - i > POLICY_MAX_LINE || memchr(text + i, 0, e - i)) {
			policy_free(pol);
			return perr(err, errlen, file, no, e - i > POLICY_MAX_LINE ?
				    "line longer than %u bytes" : "a NUL byte%.0u",
				    POLICY_MAX_LINE);
		}
		memcpy(line, text + i, e - i);
		line[e - i] = 0;
		int ret = parse_line(pol, line, file, no, err, errlen);
		if (ret) {
			policy_free(pol);
			return ret;
		}
		i = e + 1;
	}
	return 0;
}

int policy_load(struct policy *pol, const char *path, char *err,
		size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int ret = fd < 0 ? -errno : -EINVAL;
		snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) :
			 "not a regular file");
		if (fd >= 0)
			close(fd);
		return ret;
	}
	char *buf = malloc(POLICY_MAX_BYTES + 1);
	size_t len = 0;
	ssize_t n = 0;
	while (buf && len <= POLICY_MAX_BYTES &&
	       (n = read(fd, buf + len, POLICY_MAX_BYTES + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (!buf || n < 0) {
		snprintf(err, errlen, "%s: %s", path, buf ? strerror(errno) :
			 "out of memory");
		free(buf);
		return -EIO;
	}
	int ret = policy_parse(pol, path, buf, len, err, errlen);
	free(buf);
	return ret;
}

void policy_free(struct policy *pol)
{
	free(pol->rules);
	pol->rules = NULL;
	pol->n = 0;
}

static bool names(const struct pol_rule *r, const struct pol_client *c)
{
	if (r->who == POL_ANY)
		return true;
	if (r->who == POL_USER)
		return c->uid == r->id;
	if (c->gid == r->id)
		return true;
	for (uint32_t i = 0; i < c->ngroups; i++)
		if (c->groups[i] == r->id)
			return true;
	return false;
}

static bool names_port(const struct pol_rule *r, const struct pol_ask *a)
{
	if (r->backend != a->backend || r->own_netns != a->own_netns)
		return false;
	return r->prefix ? strncmp(a->iface, r->iface, strlen(r->iface)) == 0 :
			   strcmp(a->iface, r->iface) == 0;
}

bool policy_names_iface(const struct policy *pol, enum pol_backend backend,
			const char *iface)
{
	struct pol_ask a = { .backend = backend, .iface = iface };
	for (uint32_t i = 0; i < pol->n; i++)
		if (names_port(&pol->rules[i], &a))
			return true;
	return false;
}

/* Why rule r refuses a (it names the client and the port), or NULL. */
static const char *refuses(const struct pol_rule *r, const struct pol_ask *a,
			   char *buf, size_t len)
{
	if ((a->dir & r->dirs) != a->dir) {
		snprintf(buf, len, "direction %s is not allowed (dir=%s)",
			 a->dir == PM_BK_DIR_RX ? "rx" : a->dir == PM_BK_DIR_TX ?
			 "tx" : "rx,tx", r->dirs == PM_BK_DIR_RX ? "rx" : "tx");
		return buf;
	}
	if (a->backend != POL_XDP)
		return NULL;
	if (a->queue < r->qlo || a->queue > r->qhi) {
		snprintf(buf, len, "queue %u is not in %u-%u", a->queue, r->qlo,
			 r->qhi);
		return buf;
	}
	uint32_t m = a->mode ? a->mode : PM_BK_MODE_COPY | PM_BK_MODE_ZC;
	if (!(m & r->modes)) {
		snprintf(buf, len, "mode %s is not allowed", a->mode == PM_BK_MODE_ZC ?
			 "zero-copy" : a->mode == PM_BK_MODE_LIVE ? "live" : "copy");
		return buf;
	}
	if (a->umem > r->umem) {
		snprintf(buf, len, "UMEM of %llu kB is more than umem=%llu kB",
			 (unsigned long long)(a->umem >> 10),
			 (unsigned long long)(r->umem >> 10));
		return buf;
	}
	return NULL;
}

int policy_check(const struct policy *pol, const struct pol_client *c,
		 const struct pol_ask *a, char *why, size_t whylen)
{
	char buf[160];
	const struct pol_rule *first = NULL;
	const char *first_why = NULL;
	for (uint32_t i = 0; i < pol->n; i++) {
		const struct pol_rule *r = &pol->rules[i];
		if (!names(r, c) || !names_port(r, a))
			continue;
		const char *no = refuses(r, a, buf, sizeof(buf));
		if (!no)
			return (int)i;
		if (!first) {
			first = r;
			snprintf(why, whylen, "%s:%u: %s", pol->file, r->line, no);
			first_why = why;
		}
	}
	if (!first_why)
		snprintf(why, whylen, "%s: no rule allows uid %u %s:%s%s", pol->file,
			 (unsigned)c->uid, policy_backend_name(a->backend), a->iface,
			 a->own_netns ? " in its own network namespace" : "");
	return -1;
}
