/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Port names, in netmap's grammar where it has one:
 *
 *   BACKEND:BODY[-N | ^ | ^N | * | {N | }N[-R]][/FLAGS][@conf:K=V,...][@mem:NAME]
 *
 *   xdp:eth0        all NIC rings          xdp:eth0-2    ring pair 2 only
 *   xdp:eth0^       host rings only        xdp:eth0*     NIC and host rings
 *   pipe:p{0        pipe 0 of p, master    pipe:p}0-1    slave end, ring 1
 *   pcap:/tmp/a.pcap/T   a file, TX only   null:         nothing at all
 *   vale0:a         port a of the switch `pktmap switch vale0` (the back
 *                   end is "vale" followed by anything up to the ':')
 *
 *   FLAGS: R (RX only), T (TX only), Z (demand zero-copy), C (force copy);
 *   r, t, rt: a monitor of the port (src/monitor.c), z refused.
 *   @conf keys: those the back end lists in its ops (.conf, conf.h),
 *   each read by conf.c; any other is refused.
 *
 * For back ends whose body is a file path only the "/R" "/T" flags and the
 * "@" options are taken from the end; the rest is the path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name.h"
#include "port.h"
#include "util.h"

/* "NAME: what", on one line whatever the name and argument contain. */
__attribute__((format(printf, 4, 0)))
static int err_out(char *err, size_t errlen, const char *name, const char *fmt,
		   const char *arg)
{
	char what[200], safe_arg[PM_NAME_MAX], safe_name[PM_NAME_MAX];
	pm_printable(safe_arg, sizeof(safe_arg), arg);
	pm_printable(safe_name, sizeof(safe_name), name);
	/* fmt is one of this file's literals (checked at each call by the
	 * format attribute); its argument is the sanitised copy. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(what, sizeof(what), fmt, safe_arg);
#pragma GCC diagnostic pop
	snprintf(err, errlen, "%s: %s", safe_name, what);
	return -EINVAL;
}

/* Parse "k=v,k=v" into conf: each key one the back end takes (its
 * table, ops->conf), each value what the key takes (conf.c). */
static int parse_conf(const char *s, const struct pm_port_ops *ops,
		      struct pm_conf *c, const char *name, char *err,
		      size_t errlen)
{
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *eq = memchr(s, '=', len);
		char key[32];
		if (!eq || eq == s || (size_t)(eq - s) >= sizeof(key)) {
			char item[64];
			snprintf(item, sizeof(item), "%.*s", (int)len, s);
			return err_out(err, errlen, name,
				       "'@conf:%s': expected key=value", item);
		}
		memcpy(key, s, (size_t)(eq - s));
		key[eq - s] = 0;
		char what[400];
		if (pm_conf_set(ops->conf, ops->desc.name, key, eq + 1,
				len - (size_t)(eq - s) - 1, c, what,
				sizeof(what)) != 0) {
			char safe_name[PM_NAME_MAX];
			pm_printable(safe_name, sizeof(safe_name), name);
			snprintf(err, errlen, "%s: %s", safe_name, what);
			return -EINVAL;
		}
		s += len;
		if (*s == ',')
			s++;
	}
	return 0;
}

static int is_ifchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' ||
	       c == '-';
}

/* Defaults: every ring, no pipe, every @conf value unset. */
static void name_init(struct pm_name *out)
{
	memset(out, 0, sizeof(*out));
	out->ring = -1;
	out->pipe_id = -1;
	out->reg = NR_REG_ALL_NIC;
	out->conf.tx_live = -1;
	out->conf.xdp_prog = -1;
	out->conf.rx_blocks = -1;
	out->conf.tx_frames = -1;
	out->conf.hugepages = -1;
	out->conf.nanosec = -1;
	out->conf.role = -1;
	out->conf.abstract = -1;
	out->conf.spin_us = -1;
}

/* BACKEND: out of the name into out->backend; *ops its table entry,
 * *colon where the body starts (after it). */
static int name_backend(const char *name, struct pm_name *out,
			const struct pm_port_ops **ops, const char **colon,
			char *err, size_t errlen)
{
	if (!name || !*name)
		return err_out(err, errlen, "(empty)", "%s",
			       "empty port name: try pipe:NAME{0, null:, pcap:FILE");
	if (strlen(name) >= PM_NAME_MAX)
		return err_out(err, errlen, "(port)", "%s", "port name too long");
	const char *c = strchr(name, ':');
	if (c && strncmp(name, "vale", 4) == 0 &&
	    (size_t)(c - name) >= sizeof(out->backend))
		return err_out(err, errlen, name, "%s",
			       "switch names are 'vale' and at most 11 more "
			       "characters");
	if (!c || c == name || (size_t)(c - name) >= sizeof(out->backend))
		return err_out(err, errlen, name, "%s",
			       "no back end: name a port as BACKEND:ARG, e.g. "
			       "xdp:eth0, pkt:eth0, pipe:NAME{0, pcap:FILE, null: "
			       "(see 'pktmap ports')");
	memcpy(out->backend, name, (size_t)(c - name));
	*ops = pm_backend_find(out->backend);
	if (!*ops)
		return err_out(err, errlen, name,
			       "unknown back end '%s' (see 'pktmap ports')",
			       out->backend);
	*colon = c;
	return 0;
}

/* One option taken off the body: "@conf:...", "@mem:NAME" or netmap's
 * numeric "@N" memory id. */
static int name_option(const char *opt, const struct pm_port_ops *ops,
		       struct pm_name *out, const char *name, char *err,
		       size_t errlen)
{
	if (strncmp(opt, "@conf:", 6) == 0)
		return parse_conf(opt + 6, ops, &out->conf, name, err, errlen);
	if (strncmp(opt, "@mem:", 5) == 0) {
		snprintf(out->conf.region, sizeof(out->conf.region), "%s", opt + 5);
		if (!out->conf.region[0])
			return err_out(err, errlen, name, "%s",
				       "'@mem:' needs a region name");
		return 0;
	}
	uint32_t id;
	if (pm_parse_u32(opt + 1, strlen(opt + 1), &id))
		return err_out(err, errlen, name,
			       "'%s': unknown option (use @conf:K=V or @mem:NAME)",
			       opt);
	snprintf(out->conf.region, sizeof(out->conf.region), "mem%u", id);
	return 0;
}

/* Options: "@conf:..." and "@mem:NAME", cut off the body in buf, from the
 * last '@' backwards for paths, from the first '@' otherwise. */
static int name_options(char *buf, const struct pm_port_ops *ops,
			struct pm_name *out, const char *name, char *err,
			size_t errlen)
{
	bool path = ops->caps & PM_CAP_PATH;
	for (;;) {
		char *at = path ? strrchr(buf, '@') : strchr(buf, '@');
		if (!at)
			return 0;
		if (path && strncmp(at, "@conf:", 6) && strncmp(at, "@mem:", 5))
			return 0; /* an '@' that is part of the path */
		char opt[PM_NAME_MAX];
		snprintf(opt, sizeof(opt), "%s", at);
		*at = 0;
		/* Several options may follow one another: split them. */
		char *next = path ? NULL : strchr(opt + 1, '@');
		if (next) {
			char rest[PM_NAME_MAX];
			snprintf(rest, sizeof(rest), "%s", next);
			*next = 0;
			size_t bl = strlen(buf);
			snprintf(buf + bl, PM_NAME_MAX - bl, "%s", rest);
		}
		int r = name_option(opt, ops, out, name, err, errlen);
		if (r)
			return r;
	}
}

/* Flags: a trailing "/XYZ" of flag letters, cut off buf. For paths, "/R"
 * or "/T" only when the rest is not a file name: upper-case letters alone
 * after the last slash. */
static int name_flags(char *buf, const struct pm_port_ops *ops,
		      struct pm_name *out, const char *name, char *err,
		      size_t errlen)
{
	char *slash = strrchr(buf, '/');
	if (slash && slash[1]) {
		int all_flags = 1;
		/* r, t, z: netmap's monitor flags (src/monitor.c); not for
		 * paths, where "/rt" is a file name. */
		const char *letters = ops->caps & PM_CAP_PATH ? "RTZC" : "RTZCrtz";
		for (char *f = slash + 1; *f; f++)
			if (!strchr(letters, *f))
				all_flags = 0;
		if (all_flags) {
			for (char *f = slash + 1; *f; f++) {
				switch (*f) {
				case 'R': out->dir |= PKTMAP_DIR_RX; break;
				case 'T': out->dir |= PKTMAP_DIR_TX; break;
				case 'Z': out->flags |= PKTMAP_OPEN_ZEROCOPY; break;
				case 'C': out->flags |= PKTMAP_OPEN_COPY; break;
				case 'r': out->mon |= PM_MON_RX; break;
				case 't': out->mon |= PM_MON_TX; break;
				case 'z': out->mon |= PM_MON_ZCOPY; break;
				}
			}
			*slash = 0;
		} else if (!(ops->caps & PM_CAP_PATH)) {
			return err_out(err, errlen, name,
				       "'%s': unknown flags (R, T, Z, C; monitors: "
				       "r, t, z)", slash);
		}
	}
	if ((out->flags & PKTMAP_OPEN_ZEROCOPY) && (out->flags & PKTMAP_OPEN_COPY))
		return err_out(err, errlen, name, "%s",
			       "'/Z' and '/C' cannot both be given");
	return 0;
}

/* An interface-like body, IF[-N|^|^N|*|{N|}N[-R]]: the interface (or
 * pipe) name into out->body; *suffix where the ring selector starts. An
 * interface name may contain '-', except as "-DIGITS" at the end, which
 * selects one ring (as in netmap). */
static int name_ifbody(char *buf, const struct pm_port_ops *ops,
		       struct pm_name *out, char **suffix, const char *name,
		       char *err, size_t errlen)
{
	char *s = buf + strcspn(buf, "^*{}");
	if (*s == 0) {
		char *dash = strrchr(buf, '-');
		if (dash && dash[1] &&
		    strspn(dash + 1, "0123456789") == strlen(dash + 1))
			s = dash;
	}
	size_t iflen = (size_t)(s - buf);
	if (iflen == 0 && !(ops->caps & PM_CAP_EMPTY_BODY))
		return err_out(err, errlen, name, "%s",
			       "needs an interface or pipe name after the ':'");
	if (iflen >= IFNAMSIZ && !(ops->caps & PM_CAP_PIPE))
		return err_out(err, errlen, name, "%s",
			       "interface names are at most 15 characters");
	if (iflen > 48)
		return err_out(err, errlen, name, "%s", "name too long");
	for (size_t i = 0; i < iflen; i++)
		if (!is_ifchar(buf[i]))
			return err_out(err, errlen, name, "bad character in '%s'",
				       buf);
	memcpy(out->body, buf, iflen);
	out->body[iflen] = 0;
	*suffix = s;
	return 0;
}

/* A pipe end's selector: "{N" or "}N", then maybe "-R". */
static int name_pipe(const char *s, struct pm_name *out, const char *name,
		     char *err, size_t errlen)
{
	uint32_t v;
	out->reg = *s == '{' ? NR_REG_PIPE_MASTER : NR_REG_PIPE_SLAVE;
	const char *num = s + 1;
	const char *dash = strchr(num, '-');
	size_t nlen = dash ? (size_t)(dash - num) : strlen(num);
	if (nlen == 0)
		v = 0;
	else if (pm_parse_u32(num, nlen, &v) || v > 4095)
		return err_out(err, errlen, name, "'%s': bad pipe number", s);
	out->pipe_id = (int)v;
	if (dash) {
		if (pm_parse_u32(dash + 1, strlen(dash + 1), &v) || v >= PM_MAX_RINGS)
			return err_out(err, errlen, name, "'%s': bad ring number",
				       dash);
		out->ring = (int)v;
	}
	return 0;
}

/* The ring selector after the body: which rings (out->reg, out->ring). */
static int name_rings(const char *s, struct pm_name *out, const char *name,
		      char *err, size_t errlen)
{
	uint32_t v;
	switch (*s) {
	case 0:
		return 0;
	case '-':
		if (pm_parse_u32(s + 1, strlen(s + 1), &v) || v >= PM_MAX_RINGS)
			return err_out(err, errlen, name, "'%s': bad ring number", s);
		out->reg = NR_REG_ONE_NIC;
		out->ring = (int)v;
		return 0;
	case '^':
		out->reg = NR_REG_SW;
		if (s[1]) {
			if (pm_parse_u32(s + 1, strlen(s + 1), &v) || v >= PM_MAX_RINGS)
				return err_out(err, errlen, name,
					       "'%s': bad host ring number", s);
			out->reg = NR_REG_ONE_SW;
			out->ring = (int)v;
		}
		return 0;
	case '*':
		if (s[1])
			return err_out(err, errlen, name,
				       "'%s': nothing may follow '*'", s);
		out->reg = NR_REG_NIC_SW;
		return 0;
	case '{':
	case '}':
		return name_pipe(s, out, name, err, errlen);
	default:
		return err_out(err, errlen, name, "bad suffix '%s'", s);
	}
}

/* What the back end can honour of the rings and flags asked for (s: the
 * ring selector, for the message). */
static int name_caps(const struct pm_port_ops *ops, const struct pm_name *out,
		     const char *s, const char *name, char *err, size_t errlen)
{
	if ((out->reg == NR_REG_SW || out->reg == NR_REG_ONE_SW ||
	     out->reg == NR_REG_NIC_SW) && !(ops->caps & PM_CAP_HOST))
		return err_out(err, errlen, name,
			       "host rings ('%s') are not supported by this back end",
			       s);
	bool pipe = out->reg == NR_REG_PIPE_MASTER || out->reg == NR_REG_PIPE_SLAVE;
	if (pipe && !(ops->caps & PM_CAP_PIPE))
		return err_out(err, errlen, name,
			       "'%s': pipes ('{N', '}N') are the pipe back end's "
			       "(pipe:NAME{N)", s);
	if ((ops->caps & PM_CAP_PIPE) && !pipe)
		return err_out(err, errlen, name, "%s",
			       "a pipe end is NAME{N (master) or NAME}N (slave)");
	if (out->ring >= 0 && !(ops->caps & PM_CAP_ONE_RING))
		return err_out(err, errlen, name,
			       "single ring ('%s') is not supported by this back end",
			       s);
	if ((out->flags & PKTMAP_OPEN_ZEROCOPY) && !(ops->caps & PM_CAP_ZEROCOPY))
		return err_out(err, errlen, name, "%s",
			       "'/Z' (zero-copy) is not possible with this back end");
	return 0;
}

int pm_name_parse(const char *name, struct pm_name *out, char *err,
		  size_t errlen)
{
	const struct pm_port_ops *ops = NULL;
	const char *colon = NULL;
	char buf[PM_NAME_MAX], *suffix = buf;

	name_init(out);
	int r = name_backend(name, out, &ops, &colon, err, errlen);
	if (r)
		return r;
	snprintf(buf, sizeof(buf), "%s", colon + 1);
	r = name_options(buf, ops, out, name, err, errlen);
	if (r == 0)
		r = name_flags(buf, ops, out, name, err, errlen);
	if (r)
		return r;
	out->port_len = (uint32_t)(colon + 1 - name) + (uint32_t)strlen(buf);
	if (ops->caps & PM_CAP_PATH) {
		if (!buf[0])
			return err_out(err, errlen, name, "%s", "needs a file name");
		snprintf(out->body, sizeof(out->body), "%s", buf);
		out->reg = NR_REG_ALL_NIC;
		return 0;
	}
	r = name_ifbody(buf, ops, out, &suffix, name, err, errlen);
	if (r == 0)
		r = name_rings(suffix, out, name, err, errlen);
	return r ? r : name_caps(ops, out, suffix, name, err, errlen);
}

int pktmap_name_parse(const char *name, struct pktmap_name *out, char *errbuf,
		      size_t errlen)
{
	struct pm_name nm;
	struct pktmap_name pn;
	char err[400];

	if (!out || out->sz == 0)
		return -EINVAL;
	int ret = pm_name_parse(name, &nm, err, sizeof(err));
	if (ret) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", err);
		return ret;
	}
	memset(&pn, 0, sizeof(pn));
	pn.sz = out->sz < sizeof(pn) ? out->sz : sizeof(pn);
	snprintf(pn.backend, sizeof(pn.backend), "%s", nm.backend);
	snprintf(pn.body, sizeof(pn.body), "%s", nm.body);
	pn.reg = nm.reg;
	pn.ring = nm.ring;
	pn.pipe_id = nm.pipe_id;
	pn.dir = nm.dir;
	pn.flags = nm.flags;
	pn.port_len = nm.port_len;
	snprintf(pn.region, sizeof(pn.region), "%s", nm.conf.region);
	pn.bufs = nm.conf.bufs;
	/* An older caller's smaller structure gets the fields it knows. */
	memcpy(out, &pn, pn.sz);
	return 0;
}
