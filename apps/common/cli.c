/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Command-line parsing helpers. Every parser checks the whole string (no
 * trailing garbage), refuses overflow, and writes one line of explanation
 * into the caller's buffer.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pktmap/pktmap.h>

#include "cli.h"
#include "util.h"

void cli_one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* cli_err_where()'s: the place the values being parsed came from. */
static const char *err_where;

void cli_err_where(const char *where)
{
	err_where = where;
}

void cli_err(const char *fmt, ...)
{
	char line[1024];
	int at = 0;
	va_list ap;

	if (err_where)
		at = snprintf(line, sizeof(line) / 2, "%s: ", err_where);
	if (at < 0 || (size_t)at >= sizeof(line) / 2)
		at = 0;
	va_start(ap, fmt);
	vsnprintf(line + at, sizeof(line) - (size_t)at, fmt, ap);
	va_end(ap);
	cli_one_line(line);
	fprintf(stderr, "pktmap: %s\n", line);
}

void cli_opt_error(const char *cmd, int c, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = {'-', 0, 0};

	if (c == ':') {
		cli_err("%s: option '%s' needs an argument (see 'pktmap help %s')",
			cmd, opt, cmd);
		return;
	}
	if (optopt > 0 && optopt < 256 && isalnum(optopt)) {
		shortopt[1] = (char)optopt;
		opt = shortopt;
	}
	cli_err("%s: unknown option '%s' (see 'pktmap help %s')", cmd, opt,
		cmd);
}

/* Parse an unsigned number with an optional SI suffix; *end gets the first
 * character after it. */
static int parse_num(const char *s, uint64_t max, uint64_t *out,
		     const char **end, char *err, unsigned errlen)
{
	uint64_t v, mul = 1;
	char *e;

	if (!isdigit((unsigned char)*s)) {
		snprintf(err, errlen, "'%s' is not a number", s);
		return -1;
	}
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno) {
		snprintf(err, errlen, "'%s' is too large", s);
		return -1;
	}
	switch (*e) {
	case 'k': case 'K': mul = 1000ull; e++; break;
	case 'M': case 'm': mul = 1000000ull; e++; break;
	case 'G': case 'g': mul = 1000000000ull; e++; break;
	default: break;
	}
	if (v > UINT64_MAX / mul || v * mul > max) {
		snprintf(err, errlen, "'%s' is too large (at most %" PRIu64 ")",
			 s, max);
		return -1;
	}
	*out = v * mul;
	*end = e;
	return 0;
}

int cli_parse_u64(const char *s, uint64_t max, uint64_t *out, char *err,
		  unsigned errlen)
{
	const char *end;

	if (parse_num(s, max, out, &end, err, errlen))
		return -1;
	if (*end) {
		snprintf(err, errlen, "'%s' is not a number", s);
		return -1;
	}
	return 0;
}

int cli_parse_range(const char *s, uint64_t min, uint64_t max,
		    struct cli_range *out, char *err, unsigned errlen)
{
	const char *end;
	uint64_t lo, hi;

	/* Parse with a generous limit so "70000" is reported as out of range
	 * rather than as "not a number". */
	if (parse_num(s, UINT64_MAX, &lo, &end, err, errlen))
		return -1;
	hi = lo;
	if (*end == '-') {
		if (parse_num(end + 1, UINT64_MAX, &hi, &end, err, errlen))
			return -1;
	}
	if (*end) {
		snprintf(err, errlen, "'%s' is not a number or a range A-B", s);
		return -1;
	}
	if (lo > hi) {
		snprintf(err, errlen, "'%s': range goes backwards", s);
		return -1;
	}
	if (lo < min) {
		snprintf(err, errlen, "%" PRIu64 " is too small (at least %" PRIu64 ")",
			 lo, min);
		return -1;
	}
	if (hi > max) {
		snprintf(err, errlen, "%" PRIu64 " is too large (at most %" PRIu64 ")",
			 hi, max);
		return -1;
	}
	out->lo = lo;
	out->hi = hi;
	return 0;
}

int cli_opt_u64(const char *what, const char *arg, uint64_t min, uint64_t max,
		uint64_t *out)
{
	char err[128];
	int bad = cli_parse_u64(arg, max, out, err, sizeof(err));
	if (!bad && *out < min) {
		snprintf(err, sizeof(err), "must be at least %llu",
			 (unsigned long long)min);
		bad = 1;
	}
	if (bad)
		cli_err("%s %s", what, err);
	return bad ? 1 : 0;
}

int cli_opt_seconds(const char *what, const char *arg, double max, double *out)
{
	char err[128];
	if (cli_parse_seconds(arg, max, out, err, sizeof(err)) == 0)
		return 0;
	cli_err("%s %s", what, err);
	return 1;
}

int cli_parse_seconds(const char *s, double max, double *out, char *err,
		      unsigned errlen)
{
	char *e;
	double v;

	/* strtod() alone would take " 1", "0x10", "nan" and "1e400" */
	errno = 0;
	v = strtod(s, &e);
	if ((!isdigit((unsigned char)s[0]) && s[0] != '.') || e == s || *e ||
	    errno || !isfinite(v) || v < 0 || strpbrk(s, "xX")) {
		snprintf(err, errlen, "'%s' is not a number of seconds", s);
		return -1;
	}
	if (v > max) {
		snprintf(err, errlen, "'%s' seconds is too long (at most %g)", s,
			 max);
		return -1;
	}
	*out = v;
	return 0;
}

/* The CPUs of set as "0-3,6" into out. */
static void cpu_list(const cpu_set_t *set, char *out, size_t len)
{
	size_t at = 0;

	out[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && at < len; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		at += (size_t)snprintf(out + at, len - at, e > c ? "%s%d-%d" :
				       "%s%d", at ? "," : "", c, e);
		c = e;
	}
}

int cli_cpus_ok(const char *what, int first, unsigned n, const int *cpus)
{
	cpu_set_t set;
	char list[256];

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0; /* nothing to check against: the pinning will say */
	for (unsigned i = 0; i < n; i++) {
		long c = cpus ? cpus[i] : (long)first + i;

		if (c >= 0 && c < CPU_SETSIZE && CPU_ISSET((int)c, &set))
			continue;
		cpu_list(&set, list, sizeof(list));
		cli_err("%s CPU %ld is not one this process may run on (CPUs %s)",
			what, c, list);
		return 1;
	}
	return 0;
}

static int parse_port(const char *s, uint16_t *port, const char **end)
{
	unsigned long v;
	char *e;

	if (!isdigit((unsigned char)*s))
		return -1;
	v = strtoul(s, &e, 10);
	if (v > 65535 || e - s > 5)
		return -1;
	*port = (uint16_t)v;
	*end = e;
	return 0;
}

int cli_parse_addr(const char *s, struct cli_addr *out, char *err,
		   unsigned errlen)
{
	struct cli_addr a = *out;
	const char *p = s;

	if (pm_parse_ipv4(p, &a.ip_lo, &p))
		goto bad;
	a.ip_hi = a.ip_lo;
	if (*p == '-' && pm_parse_ipv4(p + 1, &a.ip_hi, &p))
		goto bad;
	if (*p == ':') {
		if (parse_port(p + 1, &a.port_lo, &p))
			goto bad;
		a.port_hi = a.port_lo;
		if (*p == '-' && parse_port(p + 1, &a.port_hi, &p))
			goto bad;
	}
	if (*p)
		goto bad;
	if (a.ip_lo > a.ip_hi || a.port_lo > a.port_hi) {
		snprintf(err, errlen, "'%s': range goes backwards", s);
		return -1;
	}
	*out = a;
	return 0;
bad:
	snprintf(err, errlen,
		 "'%s' is not an IPv4 address or range with an optional port "
		 "(10.0.0.1-10.0.0.9:1234-1240)", s);
	return -1;
}

int cli_parse_mac(const char *s, uint8_t mac[6], char *err, unsigned errlen)
{
	const char *p = s;

	for (int i = 0; i < 6; i++) {
		int hi, lo;

		if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]))
			goto bad;
		hi = isdigit((unsigned char)p[0]) ? p[0] - '0' : (p[0] | 0x20) - 'a' + 10;
		lo = isdigit((unsigned char)p[1]) ? p[1] - '0' : (p[1] | 0x20) - 'a' + 10;
		mac[i] = (uint8_t)(hi << 4 | lo);
		p += 2;
		if (i < 5) {
			if (*p != ':' && *p != '-')
				goto bad;
			p++;
		}
	}
	if (*p)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", s);
	return -1;
}

void cli_backend_of(const char *name, char *out, unsigned outlen)
{
	struct pktmap_name pn = {.sz = sizeof(pn)};

	snprintf(out, outlen, "%s",
		 pktmap_name_parse(name, &pn, NULL, 0) == 0 ? pn.backend : "");
}

int cli_insert_after_port(const char *name, const char *what, char *out,
			  unsigned outlen)
{
	struct pktmap_name pn = {.sz = sizeof(pn)};
	int n;

	if (pktmap_name_parse(name, &pn, NULL, 0))
		return -1;
	n = snprintf(out, outlen, "%.*s%s%s", (int)pn.port_len, name, what,
		     name + pn.port_len);
	return n < 0 || (unsigned)n >= outlen ? -1 : 0;
}

int cli_thread_port(const char *name, unsigned nthreads, unsigned i,
		    char *out, unsigned outlen)
{
	struct pktmap_name pn = {.sz = sizeof(pn)};
	char ring[16];
	int n;

	/* A name the library refuses is opened as it is: the open says why. */
	if (nthreads <= 1 || pktmap_name_parse(name, &pn, NULL, 0) ||
	    strcmp(pn.backend, "null") == 0) {
		n = snprintf(out, outlen, "%s", name);
		return n < 0 || (unsigned)n >= outlen ? -1 : 0;
	}
	snprintf(ring, sizeof(ring), "-%u", i);
	return cli_insert_after_port(name, ring, out, outlen);
}

int cli_env_prepend(const char *var, const char *value)
{
	const char *old = getenv(var);
	size_t n = strlen(value) + (old ? strlen(old) : 0) + 2;
	char *s = malloc(n);
	int rc;

	if (!s)
		return -1;
	if (old && old[0])
		snprintf(s, n, "%s:%s", value, old);
	else
		snprintf(s, n, "%s", value);
	rc = setenv(var, s, 1);
	free(s);
	return rc;
}

int cli_env_preload(const char *dir, const char *name)
{
	char path[PATH_MAX + 256];

	if (strpbrk(dir, " \t"))
		return cli_env_prepend("LD_LIBRARY_PATH", dir) ||
		       cli_env_prepend("LD_PRELOAD", name) ? -1 : 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return cli_env_prepend("LD_PRELOAD", path);
}
