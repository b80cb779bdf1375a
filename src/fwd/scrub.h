/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub's rules engine (docs/scrub.md): the traffic cleaner of a
 * DDoS protection system. A component of the forwarding library like the
 * router: explicit contexts, nothing printed, -errno with a one-line
 * message in err[].
 *
 *   rules file --scrub_rules_parse()--> struct scrub_rules (immutable)
 *                                           |  scrub_ctx_swap(): one pointer,
 *                                           v  RCU with per-worker epochs
 *   frame --scrub_parse()--> struct scrub_pkt --scrub_judge()--> reason
 *                                           ^
 *                      struct scrub_worker: token buckets, bans, counters
 *                      (one per worker thread: nothing shared but the
 *                      read-mostly rule set and the manual ban list)
 *
 * The order of the checks (scrub_judge):
 *   1. the headers: malformed frames dropped by reason, non-IP passed;
 *   2. the allow-list (source prefix): passed, nothing else checked;
 *   3. bans (automatic, per worker; manual, from the ban list): dropped;
 *   4. the deny-list (source prefix, longest match): dropped;
 *   5. match rules (protocol, addresses, ports, TCP flags), first match:
 *      `drop` drops, `pass` passes with nothing else checked;
 *   6. the per-destination SYN rate (TCP SYN without ACK);
 *   7. the per-source packet and byte rates (token buckets); a source
 *      over them is banned for the rule's time when it says `ban`.
 *
 * Time is the caller's (now_ns arguments, any monotonic nanoseconds), so
 * the tests drive it. Limits are per worker: a source whose frames reach
 * several queues is limited on each (docs/scrub.md, "Queues").
 */
#ifndef PKTMAP_FWD_SCRUB_H
#define PKTMAP_FWD_SCRUB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a frame passed or dropped. Every reason has a counter. */
enum scrub_reason {
	SCRUB_PASS = 0,      /* judged clean */
	SCRUB_PASS_ALLOW,    /* source on the allow-list */
	SCRUB_PASS_RULE,     /* a `pass` match rule */
	SCRUB_PASS_NOT_IP,   /* not IPv4 or IPv6: not ours to judge */
	SCRUB_PASS_UNJUDGED, /* the return direction, not judged */
	SCRUB_DROP_FIRST,
	SCRUB_DROP_DENY = SCRUB_DROP_FIRST, /* source on the deny-list */
	SCRUB_DROP_RULE,     /* a `drop` match rule */
	SCRUB_DROP_BANNED,   /* source banned (automatic or manual) */
	SCRUB_DROP_PPS,      /* source over its packet rate */
	SCRUB_DROP_BPS,      /* source over its byte rate */
	SCRUB_DROP_SYN,      /* destination over its SYN rate */
	SCRUB_DROP_SHORT,    /* truncated: a header does not fit the frame */
	SCRUB_DROP_IHL,      /* IPv4 IHL below 5 or beyond the frame */
	SCRUB_DROP_LEN,      /* IP or L4 length fields inconsistent */
	SCRUB_DROP_VERSION,  /* IP version does not match the EtherType */
	SCRUB_DROP_TTL,      /* TTL (hop limit) 0 */
	SCRUB_DROP_FRAG,     /* a fragment, and the policy drops them */
	SCRUB_DROP_EXTHDR,   /* IPv6: too many or bad extension headers */
	SCRUB_NREASONS
};

static inline bool scrub_dropped(int reason)
{
	return reason >= SCRUB_DROP_FIRST;
}

/* The counter's name ("deny", "bad_ihl", ...), as top and metrics show. */
const char *scrub_reason_name(int reason);

/* Bounds of a rules file. */
#define SCRUB_MAX_RULES 4096u        /* rules with their own counter */
#define SCRUB_MAX_MATCH 1024u        /* match rules */
#define SCRUB_MAX_PREFIXES (1u << 24) /* allow + deny prefixes, all files */
#define SCRUB_MAX_LINE 1024u         /* bytes of one line */
#define SCRUB_MAX_SOURCES (1u << 26) /* `sources N` */

/* A parsed frame. Addresses are 16 bytes; IPv4 ones are IPv4-mapped
 * (::ffff:a.b.c.d), so one table holds both families. */
struct scrub_pkt {
	uint8_t family;      /* 4 or 6 */
	uint8_t proto;       /* L4 protocol (after IPv6 extension headers) */
	uint8_t tcp_flags;
	bool frag;           /* a fragment (first or not) */
	bool l4;             /* sport, dport, tcp_flags are valid */
	bool ext;            /* IPv6: an extension header (or a next header
				the kernel path does not look past) follows */
	uint16_t sport, dport;
	uint32_t len;        /* frame bytes, what the byte rate counts */
	uint8_t src[16], dst[16];
};

/* Read the headers of `frame` (Ethernet, up to two VLAN tags, IPv4 or
 * IPv6 with its extension headers, TCP/UDP/ICMP ports and flags), every
 * length checked against `len`. Returns SCRUB_PASS with *p filled,
 * SCRUB_PASS_NOT_IP, or the SCRUB_DROP_* of what is wrong. With
 * `frag_drop`, a fragment is SCRUB_DROP_FRAG. */
int scrub_parse(const uint8_t *frame, uint32_t len, bool frag_drop,
		struct scrub_pkt *p);

/* ---- Prefix sets (scrub_pfx.c): longest-prefix match to a rule id ---- */

/* One prefix while building: addr in network order (IPv4: 4 bytes at
 * the start), len 0..32 or 0..128. */
struct scrub_prefix {
	uint8_t addr[16];
	uint8_t len;
	uint8_t v6;
	uint32_t rule;       /* rule id + 1 (0 = none) */
	uint32_t order;      /* input position: a later duplicate wins */
};

/* A built set: the address space cut into ranges, each with the rule of
 * the longest prefix covering it; a lookup is a binary search over the
 * range starts (IPv4: narrowed first by a 2^16 index of the top 16
 * bits). Read-only after scrub_pfx_build(), by any number of threads. */
struct scrub_pfx {
	uint32_t *v4_start, *v4_rule;    /* n4 ranges */
	uint32_t *v4_index;              /* 65537 entries */
	uint32_t n4;
	uint64_t *v6_start;              /* n6 ranges, [2 * i] high word */
	uint32_t *v6_rule;
	uint32_t n6;
	uint32_t nprefixes;
};

/* Build from p[0..n) (sorted in place). 0 or -ENOMEM. */
int scrub_pfx_build(struct scrub_pfx *s, struct scrub_prefix *p, size_t n);
void scrub_pfx_free(struct scrub_pfx *s);
/* The rule id + 1 of the longest prefix holding addr (a scrub_pkt
 * address: IPv4-mapped for IPv4), 0 for none. */
uint32_t scrub_pfx_lookup(const struct scrub_pfx *s, const uint8_t addr[16]);

/* ---- The rule set (scrub_rules.c) ---- */

enum scrub_rule_kind {
	SCRUB_RULE_ALLOW, SCRUB_RULE_DENY, SCRUB_RULE_DENY_FILE,
	SCRUB_RULE_MATCH, SCRUB_RULE_LIMIT, SCRUB_RULE_SYN
};

/* One rule: one line of a rules file (a deny-file is one rule). */
struct scrub_rule {
	uint8_t kind;
	uint32_t line;
	char text[96];       /* the line as written (cut), for reports */
};

struct scrub_match {
	uint32_t rule;       /* rule id */
	bool drop;
	uint8_t proto;       /* 0: any */
	uint8_t family;      /* 0: any, 4, 6 (set by an address) */
	uint8_t flags, flags_mask;
	bool has_src, has_dst, has_ports;
	uint8_t src[16], dst[16];
	uint8_t src_len, dst_len;  /* in IPv4-mapped bits (96 + n for v4) */
	uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
};

struct scrub_rules {
	struct scrub_pfx allow, deny;
	struct scrub_match *match;
	uint32_t nmatch;
	struct scrub_rule *rule;
	uint32_t nrules;
	/* limit pps N bps N [burst S] [ban SECS] */
	double pps, bps, burst_s; /* 0: no limit */
	uint64_t ban_ns;
	uint32_t limit_rule;      /* rule id, or UINT32_MAX */
	/* syn-limit N [burst S] */
	double syn_pps, syn_burst_s;
	uint32_t syn_rule;
	bool frag_drop;           /* fragments drop (default) | pass */
	uint32_t sources, dests;  /* table sizes (entries) */
	/* Set before the set is swapped in when the kernel path judges
	 * every frame it parses with this set (scrub_xdp.h): the SYN and
	 * source limits are then the kernel's, and the engine skips them
	 * for the frames it judged (not fragments, not IPv6 with extension
	 * headers: those the kernel sends up unjudged). */
	bool kern_judged;
	/* Hits by rule: [worker][nrules], each row written by its worker
	 * only (relaxed); a rule set's counters start at 0 when it loads. */
	_Atomic uint64_t *hits;
	unsigned nworkers;
};

/* Parse a whole rules file held in text[0..len) (NUL not needed); `name`
 * is the file's name in messages and `dir` where relative deny-file
 * paths are found (NULL: deny-files are refused, as the fuzzer wants).
 * Returns 0 with *out, or -EINVAL with "NAME:LINE: what" in err (-ENOMEM,
 * -errno of a deny-file that cannot be read). */
int scrub_rules_parse(const char *text, size_t len, const char *name,
		      const char *dir, struct scrub_rules **out, char *err,
		      size_t errlen);
/* Read and parse a file (at most 1 GiB). */
int scrub_rules_load(const char *path, struct scrub_rules **out, char *err,
		     size_t errlen);
/* Give the set counters for `nworkers` workers. 0 or -ENOMEM. */
int scrub_rules_hits_alloc(struct scrub_rules *r, unsigned nworkers);
void scrub_rules_free(struct scrub_rules *r);
/* The hits of rule `id`, summed over the workers. */
uint64_t scrub_rules_hits(const struct scrub_rules *r, uint32_t id);

/* ---- Token buckets and bans (scrub_table.c) ---- */

/* A fixed-size, set-associative table of addresses: 4 entries a set,
 * the least recently seen one (not banned, when it can) evicted when a
 * set is full. Memory is fixed at creation: 56 bytes an entry. */
#define SCRUB_WAYS 4u

struct scrub_entry {
	uint8_t addr[16];
	uint64_t last_ns;    /* 0: free */
	uint64_t ban_until;  /* ns; 0: not banned */
	uint64_t ban_at;     /* when the ban was made */
	double ptok, btok;   /* tokens: packets, bytes */
};

struct scrub_table {
	struct scrub_entry *e;
	uint32_t nsets;      /* a power of two */
	uint64_t seed;
	uint64_t evictions, evicted_banned, bans;
};

/* entries is rounded up to a power-of-two multiple of SCRUB_WAYS. 0 or
 * -ENOMEM. */
int scrub_table_init(struct scrub_table *t, uint32_t entries, uint64_t seed);
void scrub_table_free(struct scrub_table *t);
/* The entry of addr, created (tokens full: `ptok`, `btok`) when missing. */
struct scrub_entry *scrub_table_get(struct scrub_table *t,
				    const uint8_t addr[16], uint64_t now_ns,
				    double ptok, double btok);
/* The entry of addr, or NULL. */
struct scrub_entry *scrub_table_find(struct scrub_table *t,
				     const uint8_t addr[16]);

/* Manual bans (`ban ADDR SECS` on the control socket) and unbans: an
 * immutable sorted list swapped like the rules. An unban also lifts the
 * automatic bans made before it, in every worker. */
struct scrub_ban {
	uint8_t addr[16];
	uint64_t until_ns;   /* ban: until; unban: when it was asked */
};

struct scrub_bans {
	struct scrub_ban *ban, *unban;
	uint32_t nban, nunban;
};

/* A new list: old's entries that have not expired at now_ns, plus a ban
 * of addr until `until` (ban), or minus addr and with an unban (!ban).
 * *out is NULL for an empty list. 0 or -ENOMEM. */
int scrub_bans_edit(const struct scrub_bans *old, const uint8_t addr[16],
		    bool ban, uint64_t until, uint64_t now_ns,
		    struct scrub_bans **out);
void scrub_bans_free(struct scrub_bans *b);
/* A ban of addr in force at now_ns? */
bool scrub_bans_has(const struct scrub_bans *b, const uint8_t addr[16],
		    uint64_t now_ns);
/* When addr was last unbanned (0: never). */
uint64_t scrub_bans_unbanned(const struct scrub_bans *b,
			     const uint8_t addr[16]);

/* ---- A worker's state and the judge (scrub_judge.c) ---- */

struct scrub_worker {
	unsigned id;                 /* its row of the rules' hits */
	struct scrub_table src, dst; /* sources: rates, bans; dests: SYN */
	bool dry_run;                /* count, pass everything */
	/* Reason counters, written by the worker only (relaxed). */
	_Alignas(64) _Atomic uint64_t reason[SCRUB_NREASONS];
	_Atomic uint64_t bytes_passed, bytes_dropped;
	/* A ban made by the last scrub_judge() (for the caller's kernel
	 * map): *ban_addr until ban_until, when new_ban is set. */
	bool new_ban;
	uint8_t ban_addr[16];
	uint64_t ban_until;
};

/* Sizes from the rules: sources and dests entries; seed: the tables'
 * hash key (0: a random one). 0 or -ENOMEM. */
int scrub_worker_init(struct scrub_worker *w, unsigned id, uint32_t sources,
		      uint32_t dests, uint64_t seed);
void scrub_worker_free(struct scrub_worker *w);

/* Judge one frame under rule set r and ban list b (may be NULL) at
 * now_ns; counts it (reason, rule, bytes) and returns the reason
 * (scrub_dropped() says what to do with it; in dry-run mode the caller
 * passes it anyway). */
int scrub_judge(struct scrub_worker *w, const struct scrub_rules *r,
		const struct scrub_bans *b, const uint8_t *frame,
		uint32_t len, uint64_t now_ns);

/* ---- Hot reload (scrub_ctx.c) ---- */

#define SCRUB_MAX_WORKERS 64u

/* The rule set and ban list the workers use, swapped RCU-style: a worker
 * takes both pointers at the start of a batch (scrub_ctx_enter) and lets
 * go at its end (scrub_ctx_leave); a swap publishes the new pointer and
 * frees the old one once every worker has been between batches since, so
 * a batch is judged by one rule set, never half of two. */
struct scrub_ctx {
	_Atomic(struct scrub_rules *) rules;
	_Atomic(struct scrub_bans *) bans;
	_Atomic uint64_t gen;        /* bumped by every swap */
	unsigned nworkers;
	/* Per worker: the generation it saw when it entered its batch, or
	 * SCRUB_IDLE between batches. */
	struct {
		_Alignas(64) _Atomic uint64_t epoch;
	} w[SCRUB_MAX_WORKERS];
};

#define SCRUB_IDLE UINT64_MAX

struct scrub_view {
	const struct scrub_rules *rules;
	const struct scrub_bans *bans;
};

/* rules: the first set (owned by ctx from now on; hits allocated here).
 * 0 or -errno. */
int scrub_ctx_init(struct scrub_ctx *c, struct scrub_rules *rules,
		   unsigned nworkers);
void scrub_ctx_fini(struct scrub_ctx *c);

static inline struct scrub_view scrub_ctx_enter(struct scrub_ctx *c,
						unsigned worker)
{
	struct scrub_view v;

	atomic_store_explicit(&c->w[worker].epoch,
			      atomic_load_explicit(&c->gen, memory_order_relaxed),
			      memory_order_relaxed);
	/* Our epoch must be visible before we read the pointers: pairs with
	 * the fence in scrub_ctx_wait() (a writer that swapped after our
	 * read sees our epoch and waits for us). */
	atomic_thread_fence(memory_order_seq_cst);
	v.rules = atomic_load_explicit(&c->rules, memory_order_acquire);
	v.bans = atomic_load_explicit(&c->bans, memory_order_acquire);
	return v;
}

static inline void scrub_ctx_leave(struct scrub_ctx *c, unsigned worker)
{
	/* Release: our reads of the old set happen before the writer frees
	 * it. */
	atomic_store_explicit(&c->w[worker].epoch, SCRUB_IDLE,
			      memory_order_release);
}

/* Swap in a new rule set (hits allocated here; on failure it is freed)
 * and free the old one when no worker can hold it. Returns 0 or -errno.
 * One writer at a time (the caller's lock). */
int scrub_ctx_swap_rules(struct scrub_ctx *c, struct scrub_rules *r);
/* Ban (until_ns) or unban addr in the manual list. 0 or -ENOMEM. */
int scrub_ctx_ban(struct scrub_ctx *c, const uint8_t addr[16], bool ban,
		  uint64_t until_ns, uint64_t now_ns);

/* Parse "192.0.2.1" or "2001:db8::1" into a scrub_pkt address; 0 or -1. */
int scrub_parse_addr(const char *s, uint8_t addr[16]);

#endif /* PKTMAP_FWD_SCRUB_H */
