/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0
 *
 * pktmap's scrub XDP program (xdp:IFACE@conf:prog=scrub): pktmap_xdp.bpf.c
 * with `pktmap scrub`'s kernel fast path in front of the redirect. Frames
 * from a deny-listed or banned source are dropped here and counted for
 * their rule, before the copy to user space; everything else goes where
 * pktmap_xdp sends it (the queue's AF_XDP socket, else XDP_PASS).
 *
 * The kernel drops only what user space's engine would drop by the same
 * rule, so anything it would judge first by something else goes up
 * untouched: frames that are not IPv4 or IPv6, too short, with a bad
 * IHL or lengths (IP, TCP, UDP, ICMP, as src/fwd/scrub_pkt.c checks
 * them), TTL or hop limit 0, fragments, IPv6 extension headers; and
 * allow-listed sources (the allow-list is checked first). Then the bans,
 * then the deny-list (hosts, then prefixes): scrub's order
 * (src/fwd/scrub_xdp.h).
 *
 * Lists: two generations of {deny, allow} LPM tries per family, in two
 * arrays of maps (slot gen * 2 + {0 deny, 1 allow}), and of a hash of the
 * deny-listed hosts (scrub_hosts, slot gen); the first word of
 * scrub_conf says which generation is live. A reload fills the other
 * generation's slots with new tries, then flips the word: a frame reads
 * the word once, so it is judged by one whole list.
 *
 * Limits (issue 32): when every rule of the file can be judged here (no
 * match rules; src/fwd/scrub_xdp.c says), the live generation's `lim`
 * of scrub_conf also holds the per-source packet and byte buckets, the
 * automatic bans and the per-destination SYN bucket, in LRU hashes
 * shared by the CPUs (scrub_srcs, scrub_dsts: user space makes them,
 * `sources` and `dests` entries; a bucket moves by compare-and-swap, so
 * a source is held to its limit on the whole interface, whichever CPUs
 * its frames reach). A bucket is one virtual time per rate (GCRA):
 * the moment, in 1/16 ns, at which it was empty; it holds
 * (now - max(E, now - fill)) / cost tokens, so a new source starts
 * full, and a frame passes when that is at least its cost (1 packet,
 * its bytes): the engine's token bucket (src/fwd/scrub_judge.c) in
 * integers. With L_HOST (host mode), a frame judged clean here is
 * XDP_PASSed to the stack and counted by reason, never copied up.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Keep in step with src/fwd/scrub_xdp.h and src/fwd/scrub_xdp.c. */
#define MAX_RULES 4096
#define NCOUNTS (MAX_RULES + 1) /* rules, then bans that name none */
#define MAX_PREFIXES (1 << 21)
#define MAX_BANS (1 << 20)
#define MAX_HOSTS (1 << 20)

struct key4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct key6 {
	__u32 prefixlen;
	__u8 addr[16];
};

struct ban_key {
	__u32 family;  /* 4 or 6 */
	__u8 addr[16]; /* IPv4 in addr[0..4), the rest zero */
};

struct ban_val {
	__u64 until_ns; /* bpf_ktime_get_ns() */
	__u32 rule;
	__u32 pad;
};

struct rule_count {
	__u64 pkts;
	__u64 bytes;
};

/* lim.flags */
#define L_JUDGE 1u  /* every rule is representable: judge completely */
#define L_LIMIT 2u  /* per-source buckets (pps and/or bps) */
#define L_SYN 4u    /* per-destination SYN bucket */
#define L_HOST 8u   /* host mode: clean frames XDP_PASS, counted here */

/* One generation's limits (scrub_xdp.c's struct xlim). Times in 1/16 ns. */
struct lim {
	__u32 flags;
	__u32 limit_rule, syn_rule;
	__u32 bshift;   /* bcost is per byte << bshift (16, or 0 for slow rates) */
	__u64 pcost;    /* per packet (0: no packet rate) */
	__u64 bcost;    /* per byte, << bshift (0: no byte rate) */
	__u64 fill;     /* burst: a full bucket */
	__u64 ban_ns;   /* ns; 0: no automatic ban */
	__u64 scost, sfill; /* SYNs per destination */
};

/* Each generation's hosts as bits (host_bit()): a source whose bit is
 * clear is in neither hosts' hash, and is not looked up there. */
#ifndef HB_BITS /* (tests build it otherwise: another build's layout) */
#define HB_BITS 16
#endif
#define HB_WORDS (1u << (HB_BITS - 6))

struct conf {
	__u32 gen;
	__u32 nbans; /* entries in scrub_bans, kept by user space: 0, no lookup */
	struct lim lim[2];
	__u32 kbans; /* set here at the first automatic ban: 0, none to look up */
	__u32 pad;
	__u64 hbits[2][HB_WORDS]; /* written by user space before its flip */
};

/* A host's bit: the top HB_BITS bits of a multiplicative hash of its
 * address (IPv6: its four words xor-ed; src/fwd/scrub_xdp.c alike). */
static __always_inline __u32 host_bit(__u32 a)
{
	return (a * 0x9E3779B1u) >> (32 - HB_BITS);
}

/* A source's buckets and automatic ban. */
struct src_val {
	__u64 pe, be;    /* empty times of the packet and byte buckets */
	__u64 ban_until; /* ns */
};

/* Reasons counted here: scrub.h's enum scrub_reason. */
#define R_PASS 0
#define R_PASS_ALLOW 1
#define R_PASS_NOT_IP 3
#define R_DENY 5
#define R_BANNED 7
#define R_PPS 8
#define R_BPS 9
#define R_SYN 10
#define NREASONS 32

/* One entry per RX queue; the key is the queue index (as pktmap_xdp). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64); /* PM_MAX_RINGS */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} pktmap_xsks SEC(".maps");

/* [0]: the live generation (0 or 1). Mapped by user space, which flips
 * it with one atomic store. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct conf);
} scrub_conf SEC(".maps");

/* The bucket tables' shape; user space makes them at their sizes. */
struct srcs {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(struct ban_key));
	__uint(value_size, sizeof(struct src_val));
};

struct dsts {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(struct ban_key));
	__uint(value_size, sizeof(__u64));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct srcs);
} scrub_srcs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct dsts);
} scrub_dsts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NREASONS);
	__type(key, __u32);
	__type(value, struct rule_count);
} scrub_reasons SEC(".maps");

/* The tries' shape (user space creates them alike, scrub_xdp.c); the
 * slots start empty: no list, no match. */
struct lpm4 {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct key4));
	__uint(value_size, sizeof(__u32));
};

struct lpm6 {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct key6));
	__uint(value_size, sizeof(__u32));
};

/* The lists' hosts (/32, /128: the longest prefixes there are, so a hit
 * here is its list's longest match), one hash per family: IPv4 keyed by
 * the address alone (4 bytes: the cheapest hash there is), IPv6 as a
 * ban. A hash lookup instead of a trie walk, and a quicker load: user
 * space makes each preallocated, of the size of its list (a hash's
 * size need not be its template's), so that a load allocates nothing
 * entry by entry. The value is the rule, with HOST_ALLOW for an
 * allow-listed host (one on both lists is allowed: allow comes first).
 * Slot gen. */
#define HOST_ALLOW 0x80000000u

struct hosts4 {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_HOSTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct hosts4);
} scrub_hosts4 SEC(".maps");

struct hosts {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_HOSTS);
	__uint(key_size, sizeof(struct ban_key));
	__uint(value_size, sizeof(__u32));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct hosts);
} scrub_hosts SEC(".maps");

/* Slot gen * 2 + 0: the deny trie, + 1: the allow trie. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct lpm4);
} scrub_lists4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct lpm6);
} scrub_lists6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_BANS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ban_key);
	__type(value, struct ban_val);
} scrub_bans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCOUNTS);
	__type(key, __u32);
	__type(value, struct rule_count);
} scrub_counts SEC(".maps");

#define UP (-1) /* not ours to judge: user space */
#define NORULE 0xffffffffu
/* A verdict: the reason and the rule (NORULE: none). */
#define V(reason, rule) (((long)(reason) << 32) | (__u32)(rule))

/* What a frame needs judged: its source and destination as keys, its
 * length, whether it is a TCP SYN (without ACK). */
struct frame {
	struct ban_key src, dst;
	__u64 len;
	int syn;
};

/* The rule of the longest prefix of `key` in the list of slot `slot`
 * of `outer`, or -1 (no match, or an allow match for an allow list). */
static __always_inline long lpm_rule(void *outer, __u32 slot, void *key)
{
	void *trie = bpf_map_lookup_elem(outer, &slot);
	if (!trie)
		return -1;
	__u32 *rule = bpf_map_lookup_elem(trie, key);
	return rule ? (long)*rule : -1;
}

/* Is there `cost` in the bucket whose empty time is e at now16 (1/16
 * ns), full after `fill`? *next: its empty time after taking it. */
static __always_inline int room_for(__u64 e, __u64 now16, __u64 fill,
				    __u64 cost, __u64 *next)
{
	__u64 floor = now16 > fill ? now16 - fill : 0;
	__u64 base = e > floor ? e : floor;
	*next = base + cost;
	return base + cost <= now16;
}

/* Take `cost` from the bucket *e, which other CPUs may take from at the
 * same moment: 1, or 0 when it has not enough (or lost the race to
 * other CPUs four times in a row). */
static __always_inline int take(__u64 *e, __u64 now16, __u64 fill, __u64 cost)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)e, next;
		if (!room_for(old, now16, fill, cost, &next))
			return 0;
		if (__sync_val_compare_and_swap(e, old, next) == old)
			return 1;
	}
	return 0;
}

/* The table in slot 0 of outer (the sources' or the destinations'). */
static __always_inline void *table(void *outer)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(outer, &k);
}

/* The per-destination SYN bucket: 0 or the SYN verdict. */
static __always_inline long syn_limit(const struct lim *l, struct frame *f,
				      __u64 now16)
{
	void *t = table(&scrub_dsts);
	__u64 zero = 0;
	if (!t)
		return 0;
	__u64 *e = bpf_map_lookup_elem(t, &f->dst);
	if (!e) {
		bpf_map_update_elem(t, &f->dst, &zero, BPF_NOEXIST);
		e = bpf_map_lookup_elem(t, &f->dst);
		if (!e)
			return 0;
	}
	return take(e, now16, l->sfill, l->scost) ? 0 : V(R_SYN, l->syn_rule);
}

/* The per-source buckets of the source's entry s: 0, or the verdict
 * (and a ban when the rule has one). */
static __always_inline long src_limit(struct conf *c, const struct lim *l,
				      struct frame *f, struct src_val *s,
				      __u64 now)
{
	__u64 now16 = now << 4, bcost = (f->len * l->bcost) >> (l->bshift & 63), next;
	long v = 0;
	/* Both rates first, read only (a frame over its byte rate takes
	 * no packet either, as in the engine), then both taken. */
	if (l->pcost && !room_for(s->pe, now16, l->fill, l->pcost, &next))
		v = V(R_PPS, l->limit_rule);
	else if (l->bcost && !room_for(s->be, now16, l->fill, bcost, &next))
		v = V(R_BPS, l->limit_rule);
	else if (l->pcost && !take(&s->pe, now16, l->fill, l->pcost))
		v = V(R_PPS, l->limit_rule);
	else if (l->bcost && !take(&s->be, now16, l->fill, bcost))
		v = V(R_BPS, l->limit_rule);
	if (v && l->ban_ns) {
		s->ban_until = now + l->ban_ns;
		if (!*(volatile __u32 *)&c->kbans)
			c->kbans = 1; /* written once: judge() looks bans up from now on */
	}
	return v;
}

/* The source's entry in the sources' table t, made (buckets full) when
 * missing; NULL when it cannot be. */
static __always_inline struct src_val *src_entry(void *t, struct frame *f)
{
	struct src_val z = { 0 };
	bpf_map_update_elem(t, &f->src, &z, BPF_NOEXIST);
	return bpf_map_lookup_elem(t, &f->src);
}

/* Allow, then the bans, then deny (scrub's order, docs/scrub.md); with
 * L_JUDGE also the SYN and source limits (there are no match rules).
 * The verdict, or UP. The clock is read only when a ban or a bucket
 * needs it, the bans only when there are any (nbans, kbans): a
 * deny-listed frame costs the lists' lookups alone (bench/scrub.sh
 * prog_ns). */
static __always_inline long judge(struct conf *c, const struct lim *l,
				  __u32 gen, void *outer, void *lkey,
				  void *houter, void *hkey, __u32 hb,
				  struct frame *f)
{
	/* The host first: one lookup for both lists' hosts, read once, and
	 * none when its bit says it is in neither. */
	__u32 *hp = NULL;
	if (c->hbits[gen][(hb >> 6) & (HB_WORDS - 1)] & (1ull << (hb & 63))) {
		void *hosts = bpf_map_lookup_elem(houter, &gen);
		hp = hosts ? bpf_map_lookup_elem(hosts, hkey) : NULL;
	}
	long host = hp ? (long)*(volatile __u32 *)hp : -1;
	long r = host >= 0 && (host & HOST_ALLOW) ? host & ~(long)HOST_ALLOW :
		 lpm_rule(outer, gen * 2 + 1, lkey);
	if (r >= 0)
		return (l->flags & L_JUDGE) ? V(R_PASS_ALLOW, r) : UP;
	__u64 now = 0;
	if (*(volatile __u32 *)&c->nbans) {
		now = bpf_ktime_get_ns();
		struct ban_val *b = bpf_map_lookup_elem(&scrub_bans, &f->src);
		if (b && now < b->until_ns)
			return V(R_BANNED, b->rule);
	}
	/* (a lookup only: a deny-listed flood makes no entries; none at
	 * all before the first automatic ban, as the engine's banned()) */
	struct src_val *s = NULL;
	void *t = (l->flags & L_LIMIT) ? table(&scrub_srcs) : NULL;
	int looked = t && *(volatile __u32 *)&c->kbans;
	if (looked) {
		s = bpf_map_lookup_elem(t, &f->src);
		if (s) {
			if (!now)
				now = bpf_ktime_get_ns();
			if (now < s->ban_until)
				return V(R_BANNED, NORULE);
		}
	}
	if (host >= 0)
		return V(R_DENY, host);
	r = lpm_rule(outer, gen * 2, lkey);
	if (r >= 0)
		return V(R_DENY, r);
	if (!(l->flags & L_JUDGE))
		return UP;
	if (!now)
		now = bpf_ktime_get_ns();
	long v = 0;
	if ((l->flags & L_SYN) && f->syn)
		v = syn_limit(l, f, now << 4);
	if (!v && t && !looked)
		s = bpf_map_lookup_elem(t, &f->src);
	if (!v && t && !s)
		s = src_entry(t, f);
	if (!v && s)
		v = src_limit(c, l, f, s, now);
	return v ? v : V(R_PASS, NORULE);
}

/* The L4 header at l4, `room` bytes to the end of the IP packet: is it
 * whole, as scrub's parser (src/fwd/scrub_pkt.c) wants it? A header
 * outside the first buffer (multi-buffer frames) is not looked at: no. */
static __always_inline int l4_ok(__u8 *l4, void *end, __u32 proto, __u32 room)
{
	switch (proto) {
	case 6: /* TCP */
		if (room < 20 || (void *)(l4 + 20) > end)
			return 0;
		return (l4[12] >> 4) >= 5 && (__u32)(l4[12] >> 4) * 4 <= room;
	case 17: { /* UDP */
		if (room < 8 || (void *)(l4 + 8) > end)
			return 0;
		__u32 ul = ((__u32)l4[4] << 8) | l4[5];
		return ul >= 8 && ul <= room;
	}
	case 1:  /* ICMP */
	case 58: /* ICMPv6 */
		return room >= 4;
	default:
		return 1;
	}
}

static __always_inline long judge_v4(struct conf *c, const struct lim *l, __u32 gen,
				     void *data, void *end, __u64 l3, __u64 flen)
{
	__u8 *ip = data + l3;
	if ((void *)(ip + 20) > end)
		return UP;
	__u32 ihl = (ip[0] & 15) * 4;
	__u32 tot = ((__u32)ip[2] << 8) | ip[3];
	if ((ip[0] >> 4) != 4 || ihl < 20 || tot < ihl || l3 + tot > flen)
		return UP;
	if (ip[8] == 0) /* TTL */
		return UP;
	if ((ip[6] & 0x3f) || ip[7]) /* MF or a fragment offset */
		return UP;
	__u8 *l4 = ip + (ihl & 0x3c);
	if (!l4_ok(l4, end, ip[9], tot - ihl))
		return UP;
	struct key4 k = { .prefixlen = 32 };
	struct frame f = { .src.family = 4, .dst.family = 4, .len = flen };
	__builtin_memcpy(k.addr, ip + 12, 4);
	__builtin_memcpy(f.src.addr, ip + 12, 4);
	__builtin_memcpy(f.dst.addr, ip + 16, 4);
	if (ip[9] == 6 && (void *)(l4 + 14) <= end)
		f.syn = (l4[13] & 0x12) == 0x02;
	__u32 h;
	__builtin_memcpy(&h, ip + 12, 4);
	return judge(c, l, gen, &scrub_lists4, &k, &scrub_hosts4, &h,
		     host_bit(h), &f);
}

/* Headers after which the next header is not the payload's. */
static __always_inline int v6_ext(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 44 || nh == 50 || nh == 51 ||
	       nh == 60 || nh == 135 || nh == 139 || nh == 140 || nh == 253 ||
	       nh == 254;
}

static __always_inline long judge_v6(struct conf *c, const struct lim *l, __u32 gen,
				     void *data, void *end, __u64 l3, __u64 flen)
{
	__u8 *ip = data + l3;
	if ((void *)(ip + 40) > end)
		return UP;
	__u32 plen = ((__u32)ip[4] << 8) | ip[5];
	if ((ip[0] >> 4) != 6 || l3 + 40 + plen > flen)
		return UP;
	if (ip[7] == 0 || v6_ext(ip[6])) /* hop limit 0, extension header */
		return UP;
	__u8 *l4 = ip + 40;
	if (!l4_ok(l4, end, ip[6], plen))
		return UP;
	struct key6 k = { .prefixlen = 128 };
	struct frame f = { .src.family = 6, .dst.family = 6, .len = flen };
	__builtin_memcpy(k.addr, ip + 8, 16);
	__builtin_memcpy(f.src.addr, ip + 8, 16);
	__builtin_memcpy(f.dst.addr, ip + 24, 16);
	if (ip[6] == 6 && (void *)(l4 + 14) <= end)
		f.syn = (l4[13] & 0x12) == 0x02;
	__u32 w[4];
	__builtin_memcpy(w, ip + 8, 16);
	return judge(c, l, gen, &scrub_lists6, &k, &scrub_hosts, &f.src,
		     host_bit(w[0] ^ w[1] ^ w[2] ^ w[3]), &f);
}

static __always_inline void count(void *map, __u32 i, __u64 flen)
{
	struct rule_count *c = bpf_map_lookup_elem(map, &i);
	if (c) {
		c->pkts++;
		c->bytes += flen;
	}
}

SEC("xdp.frags")
int pktmap_scrub(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 flen = bpf_xdp_get_buff_len(ctx);
	__u64 l3 = 14;
	long v = UP;
	__u32 k0 = 0;

	struct conf *c = bpf_map_lookup_elem(&scrub_conf, &k0);
	if (!c)
		goto up;
	/* The generation, read once: one whole rule set judges the frame. */
	__u32 gen = *(volatile __u32 *)&c->gen & 1;
	const struct lim *l = &c->lim[gen];
	if (data + 14 + 8 > end)
		goto up;
	__u16 proto = ((struct ethhdr *)data)->h_proto;
	/* Up to two VLAN tags (802.1ad, 802.1Q). */
	for (int i = 0; i < 2; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		if (data + l3 + 4 > end)
			goto up;
		proto = *(__u16 *)(data + l3 + 2);
		l3 += 4;
	}
	if (proto == bpf_htons(ETH_P_IP))
		v = judge_v4(c, l, gen, data, end, l3, flen);
	else if (proto == bpf_htons(ETH_P_IPV6))
		v = judge_v6(c, l, gen, data, end, l3, flen);
	else if (l->flags & L_JUDGE)
		v = V(R_PASS_NOT_IP, NORULE);
	if (v < 0)
		goto up;
	__u32 reason = (__u32)(v >> 32), rule = (__u32)v;
	if (reason < R_DENY && !(l->flags & L_HOST))
		goto up; /* clean: user space forwards it (and counts it) */
	count(&scrub_reasons, reason, flen);
	if (reason == R_BANNED && rule == NORULE)
		rule = NCOUNTS - 1; /* an automatic ban of ours */
	if (rule < NCOUNTS)
		count(&scrub_counts, rule, flen);
	return reason < R_DENY ? XDP_PASS : XDP_DROP;
up:
	/* The flags argument is the action when the lookup fails. */
	return bpf_redirect_map(&pktmap_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
