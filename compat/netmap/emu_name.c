/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The emulation's names: netmap's request (nr_name, nr_mode, nr_ringid,
 * the flags, the memory id, the ring sizes) -> a pktmap port name:
 * netmap:IFACE is xdp:IFACE (or pkt:, PKTMAP_NETMAP_MAP), NAME{ID and
 * NAME}ID are pipes, valeX:Y a port of `pktmap switch valeX`, a pktmap
 * name is taken as it is (docs/netmap.md lists them all).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

#define NME_PIPE_BUFS 32768u         /* buffers of a pipe region we create */

static const char *const pktmap_prefixes[] = {
	"xdp:", "pkt:", "pipe:", "null:", "pcap:", "tap:",
};

static int appendf(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int appendf(char *out, size_t len, const char *fmt, ...)
{
	size_t used = strlen(out);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + used, len - used, fmt, ap);
	va_end(ap);
	return (n < 0 || (size_t)n >= len - used) ? -1 : 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* The name as a netmap user writes it: netmap:IFACE, valeX:Y. */
void nme_shown_name(const char *n, char *out, size_t len)
{
	if (strncmp(n, "netmap:", 7) == 0)
		n += 7;
	snprintf(out, len, "%s%s", strncmp(n, NM_BDG_NAME, 4) == 0 ? "" : "netmap:",
		 n);
}

/* What kind of name a request gave. */
struct nme_kind {
	bool pipe;    /* a pipe: its rings and buffers are ours to size */
	bool native;  /* a pktmap name given as is (or a vale port) */
	bool vale;    /* valeX:Y */
};

/* What pktmap cannot do for a request, whatever its name. Returns 0 or
 * -1 with errno and the reason. */
static int check_request(const struct nme_req *r, const char *n,
			 const char *shown)
{
	if (!n[0])
		return nme_fail(EINVAL, "%s: empty port name", shown);
	if (r->mode == NR_REG_NULL)
		return nme_fail(EOPNOTSUPP,
				"%s: NR_REG_NULL (memory without rings) is not "
				"available on pktmap", shown);
	if (r->mode > NR_REG_ONE_SW)
		return nme_fail(EINVAL, "%s: unknown nr_mode %u", shown, r->mode);
	return 0;
}

/* The port itself: a vale port, a pktmap name, a pipe or an interface.
 * Writes it to out, sets *kd. Returns 0 or -1 with errno and the
 * reason. */
static int base_name(const struct nme_req *r, const char *n, const char *shown,
		     char *out, size_t len, struct nme_kind *kd)
{
	for (size_t i = 0; i < sizeof(pktmap_prefixes) / sizeof(*pktmap_prefixes); i++)
		if (strncmp(n, pktmap_prefixes[i], strlen(pktmap_prefixes[i])) == 0)
			kd->native = true;
	const char *brace = strpbrk(n, "{}");
	char old_pipe[NETMAP_REQ_IFNAMSIZ + 16];
	if (!kd->native && !brace && (r->mode == NR_REG_PIPE_MASTER ||
				      r->mode == NR_REG_PIPE_SLAVE)) {
		/* The old way to name a pipe: nr_mode and nr_ringid. */
		snprintf(old_pipe, sizeof(old_pipe), "%s%c%u", n,
			 r->mode == NR_REG_PIPE_MASTER ? '{' : '}', r->ringid);
		n = old_pipe;
		brace = strpbrk(n, "{}");
	}
	kd->vale = strncmp(n, NM_BDG_NAME, 4) == 0 && strchr(n, ':');
	if (kd->vale) {
		/* valeX:PORT: a port of the switch `pktmap switch valeX` (a
		 * memory of its own: @N does not apply) */
		if (r->mode != NR_REG_ALL_NIC && r->mode != NR_REG_DEFAULT)
			return nme_fail(EOPNOTSUPP, "%s: a vale port has one ring "
					"pair: no -N ^ * modes", shown);
		snprintf(out, len, "%s", n);
		kd->native = true;
	} else if (kd->native) {
		/* A pktmap name given as is (an extension: "netmap:pipe:x{0"). */
		snprintf(out, len, "%s", n);
		kd->pipe = strncmp(n, "pipe:", 5) == 0;
	} else if (brace) {
		/* NAME{ID / NAME}ID: a pipe; netmap allows any identifier as
		 * ID, pktmap numbers pipes 0..4095: other ids become pipe 0
		 * of a pipe named NAME.ID (a memory of its own unless @N). */
		kd->pipe = true;
		int nl = (int)(brace - n);
		const char *id = brace + 1;
		if (nl == 0)
			return nme_fail(EINVAL, "%s: a pipe needs a name before '%c'",
					shown, *brace);
		if (!*id || (all_digits(id) && strlen(id) <= 4 && atoi(id) <= 4095))
			snprintf(out, len, "pipe:%.*s%c%s", nl, n, *brace,
				 *id ? id : "0");
		else
			snprintf(out, len, "pipe:%.*s.%s%c0", nl, n, id, *brace);
	} else {
		const char *map = getenv("PKTMAP_NETMAP_MAP");
		if (!map || !*map)
			map = "xdp";
		if (strcmp(map, "xdp") != 0 && strcmp(map, "pkt") != 0)
			return nme_fail(EINVAL,
					"%s: PKTMAP_NETMAP_MAP=%s: use xdp or pkt",
					shown, map);
		snprintf(out, len, "%s:%s", map, n);
	}
	return 0;
}

/* The rings bound (-N ^ ^N *) and the direction (/T /R). Returns 0, or
 * -1 when the name is too long. */
static int append_rings(const struct nme_req *r, char *out, size_t len)
{
	int bad = 0;
	switch (r->mode) {
	case NR_REG_DEFAULT:
	case NR_REG_ALL_NIC:
		break;
	case NR_REG_ONE_NIC:
		bad = appendf(out, len, "-%u", r->ringid);
		break;
	case NR_REG_SW:
		bad = appendf(out, len, "^");
		break;
	case NR_REG_ONE_SW:
		bad = appendf(out, len, "^%u", r->ringid);
		break;
	case NR_REG_NIC_SW:
		bad = appendf(out, len, "*");
		break;
	case NR_REG_PIPE_MASTER:
	case NR_REG_PIPE_SLAVE:
		break; /* folded into the name above */
	}
	/* /T /R, and netmap's monitor flags: pktmap's /t /r /z (monitor.c) */
	const uint32_t fl = NR_TX_RINGS_ONLY | NR_RX_RINGS_ONLY | NR_MONITOR_TX |
			    NR_MONITOR_RX | NR_ZCOPY_MON;
	bad |= appendf(out, len, "%s%s%s%s%s%s", r->flags & fl ? "/" : "",
		       r->flags & NR_TX_RINGS_ONLY ? "T" : "",
		       r->flags & NR_RX_RINGS_ONLY ? "R" : "",
		       r->flags & NR_MONITOR_TX ? "t" : "",
		       r->flags & NR_MONITOR_RX ? "r" : "",
		       r->flags & NR_ZCOPY_MON ? "z" : "");
	return bad;
}

/* @N: the memory this process knows by that id (a region of any name:
 * "@mem:"), else region memN, which other processes reach by the same
 * @N; a private memory cannot be joined: the port gets one of its own and
 * says so in nr_mem_id. Returns 0, or -1 when the name is too long. */
static int append_mem(const struct nme_req *r, char *out, size_t len)
{
	char region[64] = "";
	bool known = nme_mem_region_of_id(r->mem_id, region, sizeof(region));
	if (!known)
		return appendf(out, len, "@%u", r->mem_id);
	if (region[0])
		return appendf(out, len, "@mem:%s", region);
	return 0;
}

/* @conf: the ring sizes asked, and for a pipe this open may create, the
 * region's buffers. Returns 0, or -1 when the name is too long. */
static int append_conf(const struct nme_req *r, const struct nme_kind *kd,
		       char *out, size_t len)
{
	char conf[160] = "";
	int bad = 0;
	if (r->tx_slots)
		bad |= appendf(conf, sizeof(conf), ",tx-slots=%u", r->tx_slots);
	if (r->rx_slots)
		bad |= appendf(conf, sizeof(conf), ",rx-slots=%u", r->rx_slots);
	if (kd->pipe && r->tx_rings)
		bad |= appendf(conf, sizeof(conf), ",tx-rings=%u", r->tx_rings);
	if (kd->pipe && r->rx_rings)
		bad |= appendf(conf, sizeof(conf), ",rx-rings=%u", r->rx_rings);
	if (kd->pipe && !kd->native) {
		/* netmap's memories are large and shared: another pipe in
		 * the same @N, or extra buffers asked by a later open, must
		 * find room in a region the first open creates. The file is
		 * sparse: only buffers in use take memory. */
		unsigned long bufs = NME_PIPE_BUFS;
		const char *e = getenv("PKTMAP_NETMAP_BUFS");
		if (e && *e)
			bufs = strtoul(e, NULL, 10);
		if (bufs < 2u * r->extra_bufs + 8192)
			bufs = 2u * r->extra_bufs + 8192;
		bad |= appendf(conf, sizeof(conf), ",bufs=%lu", bufs);
		/* offsets: buffers large enough for a full-size frame after
		 * the largest offset (when this open creates the region) */
		uint64_t maxoff = 0;
		if (r->offsets) {
			maxoff = r->offsets->nro_max_offset;
			if (maxoff < r->offsets->nro_initial_offset)
				maxoff = r->offsets->nro_initial_offset;
		}
		if (maxoff && maxoff + 1514 > 2048 && maxoff + 1514 <= 65536) {
			uint32_t bs = 4096; /* a power of two, as regions want */
			while (bs < maxoff + 1514)
				bs *= 2;
			bad |= appendf(conf, sizeof(conf), ",buf-size=%u", bs);
		}
	}
	if (conf[0])
		bad |= appendf(out, len, "@conf:%s", conf + 1);
	return bad;
}

/* Build the pktmap name for a request. Returns 0 or -1 with errno and the
 * one-line reason recorded. */
int nme_map_name(const struct nme_req *r, char *out, size_t len)
{
	const char *n = r->name;
	char shown[NETMAP_REQ_IFNAMSIZ + 8];
	struct nme_kind kd = { 0 };
	nme_shown_name(n, shown, sizeof(shown));
	if (strncmp(n, "netmap:", 7) == 0)
		n += 7;
	out[0] = 0;
	if (check_request(r, n, shown) || base_name(r, n, shown, out, len, &kd))
		return -1;
	if (r->flags & NR_TX_RINGS_ONLY && r->flags & NR_RX_RINGS_ONLY)
		return nme_fail(EINVAL, "%s: both NR_TX_RINGS_ONLY and "
				"NR_RX_RINGS_ONLY", shown);
	int bad = append_rings(r, out, len);
	if (r->mem_id && !kd.vale)
		bad |= append_mem(r, out, len);
	bad |= append_conf(r, &kd, out, len);
	if (bad)
		return nme_fail(ENAMETOOLONG, "%s: name too long", shown);
	return 0;
}
