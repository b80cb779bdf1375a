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
	__type(value, __u32);
} scrub_conf SEC(".maps");

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

/* Deny-listed hosts (/32, /128: the longest prefixes there are, so a
 * hit here is the deny list's longest match), key as a ban's: a hash
 * lookup instead of a trie walk, and a quicker load. Slot gen. */
struct hosts {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_HOSTS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
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

/* Allow, then the bans, then deny (scrub's order, docs/scrub.md), for a
 * source already in the keys. */
static __always_inline long judge(void *outer, void *lkey, struct ban_key *bk)
{
	__u32 *genp, k0 = 0;
	genp = bpf_map_lookup_elem(&scrub_conf, &k0);
	__u32 gen = genp ? (*(volatile __u32 *)genp & 1) : 0;

	if (lpm_rule(outer, gen * 2 + 1, lkey) >= 0)
		return UP;
	struct ban_val *b = bpf_map_lookup_elem(&scrub_bans, bk);
	if (b && bpf_ktime_get_ns() < b->until_ns)
		return b->rule;
	void *hosts = bpf_map_lookup_elem(&scrub_hosts, &gen);
	if (hosts) {
		__u32 *r = bpf_map_lookup_elem(hosts, bk);
		if (r)
			return *r;
	}
	return lpm_rule(outer, gen * 2, lkey);
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

static __always_inline long judge_v4(void *data, void *end, __u64 l3, __u64 flen)
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
	if (!l4_ok(ip + ihl, end, ip[9], tot - ihl))
		return UP;
	struct key4 k = { .prefixlen = 32 };
	struct ban_key bk = { .family = 4 };
	__builtin_memcpy(k.addr, ip + 12, 4);
	__builtin_memcpy(bk.addr, ip + 12, 4);
	return judge(&scrub_lists4, &k, &bk);
}

/* Headers after which the next header is not the payload's. */
static __always_inline int v6_ext(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 44 || nh == 50 || nh == 51 ||
	       nh == 60 || nh == 135 || nh == 139 || nh == 140 || nh == 253 ||
	       nh == 254;
}

static __always_inline long judge_v6(void *data, void *end, __u64 l3, __u64 flen)
{
	__u8 *ip = data + l3;
	if ((void *)(ip + 40) > end)
		return UP;
	__u32 plen = ((__u32)ip[4] << 8) | ip[5];
	if ((ip[0] >> 4) != 6 || l3 + 40 + plen > flen)
		return UP;
	if (ip[7] == 0 || v6_ext(ip[6])) /* hop limit 0, extension header */
		return UP;
	if (!l4_ok(ip + 40, end, ip[6], plen))
		return UP;
	struct key6 k = { .prefixlen = 128 };
	struct ban_key bk = { .family = 6 };
	__builtin_memcpy(k.addr, ip + 8, 16);
	__builtin_memcpy(bk.addr, ip + 8, 16);
	return judge(&scrub_lists6, &k, &bk);
}

SEC("xdp.frags")
int pktmap_scrub(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 flen = bpf_xdp_get_buff_len(ctx);
	__u64 l3 = 14;
	long rule = UP;

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
		rule = judge_v4(data, end, l3, flen);
	else if (proto == bpf_htons(ETH_P_IPV6))
		rule = judge_v6(data, end, l3, flen);
	if (rule >= 0 && rule < NCOUNTS) {
		__u32 r = (__u32)rule;
		struct rule_count *c = bpf_map_lookup_elem(&scrub_counts, &r);
		if (c) {
			c->pkts++;
			c->bytes += flen;
		}
		return XDP_DROP;
	}
up:
	/* The flags argument is the action when the lookup fails. */
	return bpf_redirect_map(&pktmap_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
