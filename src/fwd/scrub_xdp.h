/* SPDX-License-Identifier: BSD-2-Clause
 *
 * scrub's kernel fast path on xdp: ports (issue 32): the deny-list, the
 * allow-list and the bans of `pktmap scrub` loaded into the maps of
 * pktmap's scrub XDP program (bpf/pktmap_scrub.bpf.c), so that frames from
 * listed sources are dropped in XDP, before the copy to user space.
 *
 * The port must have been opened with the scrub program:
 * "xdp:eth0@conf:prog=scrub" (docs/xdp.md). The program then runs, for
 * each frame of a bound queue:
 *
 *   parse Ethernet (up to two VLAN tags) -> IPv4 or IPv6 source
 *   anything unusual (not IP, short, bad IHL or lengths of IP, TCP, UDP
 *   or ICMP, TTL or hop limit 0, a fragment, an IPv6 extension
 *   header)                                                  -> user space
 *   source in the allow-list (LPM)                           -> user space
 *   source banned, ban not expired  -> counted for its rule, XDP_DROP
 *   source in the deny-list (LPM)   -> counted for its rule, XDP_DROP
 *   with limits it can judge (scrub_xdp_set_limits):
 *     destination over its SYN rate, source over its packet or byte
 *     rate (then banned for the rule's time)   -> counted, XDP_DROP
 *     clean, in host mode       -> counted by reason, XDP_PASS (stack)
 *   else                                                     -> user space
 *
 * "user space" is the usual redirect to the queue's AF_XDP socket. The
 * kernel drops only what user space's engine would drop by the same rule
 * (scrub's order, docs/scrub.md: headers, allow, bans, deny), so the
 * kernel's verdicts are a subset of user space's: everything else,
 * malformed frames included, goes up to be judged there, and the rule
 * counts of the two add up to what user space alone would count.
 *
 * Reloads are atomic: the lists live in two generations of maps; a load
 * fills the generation the program does not use, then flips one word, so
 * a frame is judged by one whole list, the old or the new. Bans are one
 * hash map, changed entry by entry.
 *
 * The maps belong to the program on the interface, not to the port: every
 * port (and process) on the interface sees the same lists. One process
 * should load them (pktmap scrub does, once per interface).
 *
 * Every function returns 0 (or a count) or -errno; none prints.
 */
#ifndef PKTMAP_FWD_SCRUB_XDP_H
#define PKTMAP_FWD_SCRUB_XDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

/* Rule ids the kernel counts: 0 .. SCRUB_XDP_MAX_RULES - 1 (scrub's
 * SCRUB_MAX_RULES), and SCRUB_XDP_BANNED, the counter of bans that name
 * no rule (scrub counts them by reason, "banned"). */
#define SCRUB_XDP_MAX_RULES 4096u
#define SCRUB_XDP_BANNED SCRUB_XDP_MAX_RULES
#define SCRUB_XDP_NCOUNTS (SCRUB_XDP_MAX_RULES + 1)
/* Prefixes of one family in one list (allow or deny). */
#define SCRUB_XDP_MAX_PREFIXES (1u << 21)
/* Bans at once. */
#define SCRUB_XDP_MAX_BANS (1u << 20)

/* What a prefix does. */
#define SCRUB_XDP_DENY 0u
#define SCRUB_XDP_ALLOW 1u

struct scrub_xdp;

/* One prefix of a list. */
struct scrub_xdp_prefix {
	uint8_t family;   /* 4 or 6 */
	uint8_t len;      /* 0..32 (IPv4) or 0..128 (IPv6) */
	uint8_t action;   /* SCRUB_XDP_DENY or SCRUB_XDP_ALLOW */
	uint8_t pad;
	uint32_t rule;    /* the rule counted when it matches (deny) */
	uint8_t addr[16]; /* network order; IPv4 in addr[0..4) */
};

/* Take the scrub program's maps on xdp_port's interface (the port was
 * opened with @conf:prog=scrub). Starts with empty lists and no bans of
 * any process's making (a scrub_xdp_attach empties the lists and lifts
 * the bans an earlier process may have left). Returns 0 with *out set, or -errno with a one-line reason in
 * err: -EINVAL not an xdp: port, -ENOENT no scrub program on the
 * interface (opened without @conf:prog=scrub), -EPERM no CAP_BPF. */
int scrub_xdp_attach(struct pktmap_port *xdp_port, struct scrub_xdp **out,
		     char *err, size_t errlen);

/* Replace both lists (allow and deny, IPv4 and IPv6) by prefixes[0..n),
 * atomically for the frames: they are judged by the old lists until the
 * new ones are complete, then by the new. n == 0 empties them. A later
 * duplicate of a prefix replaces an earlier one. Returns 0, -EINVAL for
 * a bad prefix (family, len, action, rule >= SCRUB_XDP_MAX_RULES; the old
 * lists stay), -E2BIG above SCRUB_XDP_MAX_PREFIXES of one kind, -ENOMEM.
 * Loads 1M prefixes in well under two seconds (batched updates). */
int scrub_xdp_load(struct scrub_xdp *x, const struct scrub_xdp_prefix *prefixes,
		   size_t n);

/* Ban a source (family 4 or 6, addr as in scrub_xdp_prefix) until
 * until_ns, in scrub_xdp_now_ns()'s clock (CLOCK_MONOTONIC, the clock of
 * bpf_ktime_get_ns()); frames from it are dropped and counted for `rule`
 * (< SCRUB_XDP_MAX_RULES, or SCRUB_XDP_BANNED) until then. A ban again replaces the first. An expired ban is ignored
 * by the program; unban it to free its entry. Returns 0, -EINVAL,
 * -ENOSPC (SCRUB_XDP_MAX_BANS reached). */
int scrub_xdp_ban(struct scrub_xdp *x, int family, const uint8_t addr[16],
		  uint64_t until_ns, uint32_t rule);
/* Lift a ban. Returns 0, or -ENOENT when there was none. */
int scrub_xdp_unban(struct scrub_xdp *x, int family, const uint8_t addr[16]);

/* What the program judges besides the lists, from the next
 * scrub_xdp_load() on (in the same flip as its lists). With `judge`
 * (every rule of the set is representable: no match rules), it also
 * applies the per-source limits and automatic bans, and the
 * per-destination SYN limit, with the engine's semantics (scrub.h), for
 * the whole interface where the engine keeps them per worker (in LRU
 * hashes shared by the CPUs, changed by compare-and-swap), and knows a frame's
 * whole verdict: with `host` as well, a clean frame is XDP_PASSed to
 * the stack and counted here, never copied to user space. Without
 * `judge`, only allow (up), bans and deny, as before. */
struct scrub_xdp_limits {
	bool judge, host;
	double pps, bps, burst_s;  /* 0: no such rate; bps >= MIN_BPS */
	uint64_t ban_ns;           /* 0: no automatic ban */
	uint32_t limit_rule;
	double syn_pps, syn_burst_s;
	uint32_t syn_rule;
	uint32_t sources, dests;   /* entries of the LRU tables */
};
#define SCRUB_XDP_MIN_BPS 0.001
/* Stage l (makes the tables when their size changes: their buckets start
 * full again). 0, -EINVAL, -ENOMEM. */
int scrub_xdp_set_limits(struct scrub_xdp *x, const struct scrub_xdp_limits *l);

/* scrub's rule set (scrub.h): its allow and deny sets, exactly (every
 * address gets the rule the engine's lookup gives it), as
 * scrub_xdp_load() does, and its limits (scrub_xdp_set_limits) when the
 * whole set is representable; `host`: host mode. Returns 1 when the
 * kernel judges every frame it can parse completely (limits included:
 * user space must not apply them again), 0 when only the lists and
 * bans, or -errno as scrub_xdp_load(): -E2BIG when the sets need more
 * prefixes than the kernel's maps hold (then leave that set to user
 * space). */
struct scrub_rules;
int scrub_xdp_load_rules(struct scrub_xdp *x, const struct scrub_rules *r,
			 bool host);

/* Reasons the program counts (scrub.h's enum scrub_reason values). */
#define SCRUB_XDP_NREASONS 32u
/* The frames and bytes it decided for each reason 0..n-1, summed over
 * CPUs, since it was loaded. 0 or -errno. */
int scrub_xdp_reason_counts(struct scrub_xdp *x, uint64_t *pkts,
			    uint64_t *bytes, uint32_t n);

/* The clock of bans: CLOCK_MONOTONIC in ns. */
uint64_t scrub_xdp_now_ns(void);

/* The frames (pkts) and their bytes the kernel dropped for each counter
 * 0..nrules-1 (rule ids, then SCRUB_XDP_BANNED), summed over CPUs, since
 * the program was loaded (counters only grow; take differences).
 * nrules <= SCRUB_XDP_NCOUNTS; either array may be NULL. Returns 0 or
 * -errno. */
int scrub_xdp_rule_counts(struct scrub_xdp *x, uint64_t *pkts,
			  uint64_t *bytes, uint32_t nrules);

/* Empty the lists, lift every ban, let go of the maps (nothing is
 * dropped in the kernel any more). The program itself goes with the
 * last port of the interface. NULL is fine. */
void scrub_xdp_detach(struct scrub_xdp *x);

#endif /* PKTMAP_FWD_SCRUB_XDP_H */
