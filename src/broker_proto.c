/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The broker's requests (broker_proto.h): parsed from one bounded message,
 * every field checked against its range before anyone uses it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "broker_proto.h"

#define MAX_RING (1u << 18)
#define MAX_UMEM (1ull << 40)
#define MAX_QUEUE 4095u

static const char *const verbs[] = {
	[PM_BK_XSK] = "xsk", [PM_BK_ATTACH] = "attach",
	[PM_BK_PKT] = "pkt", [PM_BK_TAP] = "tap",
};

const char *pm_bk_verb_name(enum pm_bk_verb v)
{
	return v >= PM_BK_XSK && v <= PM_BK_TAP ? verbs[v] : "?";
}

__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* One line, whatever bytes of the request it quotes. */
	for (char *c = err; errlen && *c; c++)
		if ((unsigned char)*c < ' ' || (unsigned char)*c > '~')
			*c = '?';
	return -EINVAL;
}

/* A decimal number of at most 20 digits, all of [v, v + n). */
static int number(const char *v, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	if (n == 0 || n > 20)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (x > max)
		return -1;
	*out = x;
	return 0;
}

/* An interface name as the kernel takes it (dev_valid_name): 1 to 15
 * bytes, no '/', ':' or white space, not "." or "..", printable. */
static bool ifname_ok(const char *v, size_t n)
{
	if (n == 0 || n >= PM_BK_IFNAMSIZ)
		return false;
	if ((n == 1 && v[0] == '.') || (n == 2 && v[0] == '.' && v[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] <= ' ' || v[i] > '~' || v[i] == '/' || v[i] == ':')
			return false;
	return true;
}

static bool is(const char *v, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(v, word, n) == 0;
}

/* "copy", "zc", "live" or "any"; "rx", "tx" or "rxtx". */
static int word_value(const char *k, const char *v, size_t n,
		      struct pm_bk_req *r)
{
	if (strcmp(k, "mode") == 0) {
		r->mode = is(v, n, "copy") ? PM_BK_MODE_COPY :
			  is(v, n, "zc") ? PM_BK_MODE_ZC :
			  is(v, n, "live") ? PM_BK_MODE_LIVE :
			  is(v, n, "any") ? 0 : UINT32_MAX;
		return r->mode == UINT32_MAX ? -1 : 0;
	}
	r->dir = is(v, n, "rx") ? PM_BK_DIR_RX : is(v, n, "tx") ? PM_BK_DIR_TX :
		 is(v, n, "rxtx") ? PM_BK_DIR_RX | PM_BK_DIR_TX : 0;
	return r->dir ? 0 : -1;
}

#define SEEN(b) (1u << (b))
enum { K_IF, K_Q, K_MODE, K_DIR, K_OFF, K_UMEM, K_CHUNK, K_RX, K_TX, K_FQ,
       K_CQ, K_SG, K_SHARE, K_NS, K_N };
static const char *const keys[K_N] = {
	"if", "q", "mode", "dir", "off", "umem", "chunk", "rx", "tx", "fq",
	"cq", "sg", "share", "ns",
};

/* One key=value; *seen collects the keys given (each at most once). */
static int item(const char *k, size_t kn, const char *v, size_t vn,
		struct pm_bk_req *r, uint32_t *seen, char *err, size_t errlen)
{
	int key = -1;
	for (int i = 0; i < K_N; i++)
		if (is(k, kn, keys[i]))
			key = i;
	if (key < 0)
		return bad(err, errlen, "unknown key '%.*s'", (int)(kn > 16 ? 16 : kn), k);
	if (*seen & SEEN(key))
		return bad(err, errlen, "key '%s' given twice", keys[key]);
	*seen |= SEEN(key);
	uint64_t x = 0;
	switch (key) {
	case K_IF:
		if (!ifname_ok(v, vn))
			return bad(err, errlen, "bad interface name");
		memcpy(r->ifname, v, vn);
		r->ifname[vn] = 0;
		return 0;
	case K_MODE:
	case K_DIR:
		if (word_value(keys[key], v, vn, r))
			return bad(err, errlen, "bad value of '%s'", keys[key]);
		return 0;
	case K_SG: case K_SHARE: case K_NS:
		if (number(v, vn, 1, &x))
			return bad(err, errlen, "'%s' is 0 or 1", keys[key]);
		*(key == K_SG ? &r->sg : key == K_SHARE ? &r->share : &r->ns) = x;
		return 0;
	case K_OFF: case K_UMEM:
		if (number(v, vn, MAX_UMEM, &x) || (x & 4095))
			return bad(err, errlen, "'%s' is a multiple of 4096 up to "
				   "2^40", keys[key]);
		*(key == K_OFF ? &r->umem_off : &r->umem_len) = x;
		return 0;
	case K_Q:
		if (number(v, vn, MAX_QUEUE, &x))
			return bad(err, errlen, "'q' is a queue from 0 to %u", MAX_QUEUE);
		r->queue = (uint32_t)x;
		return 0;
	case K_CHUNK:
		if (number(v, vn, 4096, &x) || (x != 2048 && x != 4096))
			return bad(err, errlen, "'chunk' is 2048 or 4096");
		r->chunk = (uint32_t)x;
		return 0;
	default: /* ring sizes */
		if (number(v, vn, MAX_RING, &x) || (x & (x - 1)))
			return bad(err, errlen, "'%s' is a power of two up to %u",
				   keys[key], MAX_RING);
		*(key == K_RX ? &r->rx : key == K_TX ? &r->tx :
		  key == K_FQ ? &r->fq : &r->cq) = (uint32_t)x;
		return 0;
	}
}

/* What each verb needs. */
static int complete(const struct pm_bk_req *r, uint32_t seen, char *err,
		    size_t errlen)
{
	uint32_t need = r->verb == PM_BK_XSK ?
		SEEN(K_IF) | SEEN(K_Q) | SEEN(K_UMEM) | SEEN(K_CHUNK) |
		SEEN(K_FQ) | SEEN(K_CQ) | SEEN(K_DIR) :
		r->verb == PM_BK_ATTACH ? SEEN(K_Q) | (r->ns ? SEEN(K_IF) : 0) :
		r->verb == PM_BK_PKT ? SEEN(K_IF) | SEEN(K_DIR) : SEEN(K_IF);
	uint32_t may = r->verb == PM_BK_XSK ? SEEN(K_N) - 1 :
		       r->verb == PM_BK_ATTACH ? SEEN(K_IF) | SEEN(K_Q) | SEEN(K_NS) :
		       SEEN(K_IF) | SEEN(K_DIR) | SEEN(K_NS);
	for (int i = 0; i < K_N; i++) {
		if ((need & SEEN(i)) && !(seen & SEEN(i)))
			return bad(err, errlen, "%s: key '%s' missing",
				   pm_bk_verb_name(r->verb), keys[i]);
		if ((seen & SEEN(i)) && !(may & SEEN(i)))
			return bad(err, errlen, "%s: key '%s' does not go with it",
				   pm_bk_verb_name(r->verb), keys[i]);
	}
	if (r->verb == PM_BK_XSK) {
		if (r->umem_len == 0 || r->umem_len % r->chunk)
			return bad(err, errlen, "xsk: 'umem' is a non-zero multiple "
				   "of 'chunk'");
		if (r->fq == 0 || r->cq == 0 || ((r->dir & PM_BK_DIR_RX) && !r->rx) ||
		    ((r->dir & PM_BK_DIR_TX) && !r->tx))
			return bad(err, errlen, "xsk: a ring of a bound direction is "
				   "missing");
	}
	return 0;
}

int pm_bk_req_parse(const char *buf, size_t len, struct pm_bk_req *r,
		    char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->dir = PM_BK_DIR_RX | PM_BK_DIR_TX;
	if (len == 0 || len > PM_BK_MSG_MAX)
		return bad(err, errlen, "a request is 1 to %d bytes", PM_BK_MSG_MAX);
	if (buf[len - 1] == '\n')
		len--;
	size_t i = 0, n;
	for (n = 0; n < len && buf[n] != ' '; n++)
		;
	for (int v = PM_BK_XSK; v <= PM_BK_TAP; v++)
		if (is(buf, n, verbs[v]))
			r->verb = (enum pm_bk_verb)v;
	if (!r->verb)
		return bad(err, errlen, "unknown request (xsk, attach, pkt or tap)");
	uint32_t seen = 0;
	for (i = n; i < len;) {
		if (buf[i] != ' ')
			return bad(err, errlen, "items are separated by one space");
		size_t s = ++i;
		while (i < len && buf[i] != ' ')
			i++;
		const char *eq = memchr(buf + s, '=', i - s);
		if (!eq || eq == buf + s)
			return bad(err, errlen, "expected key=value");
		size_t kn = (size_t)(eq - (buf + s));
		int ret = item(buf + s, kn, eq + 1, i - s - kn - 1, r, &seen, err,
			       errlen);
		if (ret)
			return ret;
	}
	return complete(r, seen, err, errlen);
}

int pm_bk_req_format(const struct pm_bk_req *r, char *buf, size_t len)
{
	int n;
	const char *dir = r->dir == PM_BK_DIR_RX ? "rx" :
			  r->dir == PM_BK_DIR_TX ? "tx" : "rxtx";
	if (r->verb == PM_BK_XSK)
		n = snprintf(buf, len, "xsk if=%s q=%u mode=%s dir=%s off=%llu "
			     "umem=%llu chunk=%u rx=%u tx=%u fq=%u cq=%u sg=%d "
			     "share=%d ns=%d", r->ifname, r->queue,
			     r->mode == PM_BK_MODE_COPY ? "copy" :
			     r->mode == PM_BK_MODE_ZC ? "zc" :
			     r->mode == PM_BK_MODE_LIVE ? "live" : "any", dir,
			     (unsigned long long)r->umem_off,
			     (unsigned long long)r->umem_len, r->chunk, r->rx, r->tx,
			     r->fq, r->cq, r->sg, r->share, r->ns);
	else if (r->verb == PM_BK_ATTACH && r->ns)
		n = snprintf(buf, len, "attach if=%s q=%u ns=1", r->ifname, r->queue);
	else if (r->verb == PM_BK_ATTACH)
		n = snprintf(buf, len, "attach q=%u ns=0", r->queue);
	else
		n = snprintf(buf, len, "%s if=%s dir=%s ns=%d",
			     pm_bk_verb_name(r->verb), r->ifname, dir, r->ns);
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}
