/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The pipe's fast paths, four slots at a time (pipe_sync.c's txsync, rxsync).
 *
 * A pipe descriptor and the first 8 bytes of a netmap slot have the same
 * layout: buf_idx (32 bits), len (16), flags (16). So two descriptors
 * are one 16-byte vector whose 32-bit lanes are
 *
 *     lane:   0        1                 2        3
 *             idx[0]   len[0]|flags[0]   idx[1]   len[1]|flags[1]
 *
 * and one vector compare checks two buffer indices and two lengths. Each
 * function takes blocks of four slots while every value of the block
 * passes the checker's tests, and stops before the first block that does
 * not: the caller's scalar loop goes on from there and says what was
 * wrong. A value from shared memory is loaded once, checked in the
 * register it was loaded into, and stored from that register, so a peer
 * rewriting it meanwhile changes nothing (docs/design.md, "Trust model").
 *
 * Written with GCC/clang vector extensions: SSE2 on x86-64, NEON on
 * arm64, scalar code elsewhere. The lane order above is little-endian;
 * on a big-endian machine the functions take nothing and the scalar loops
 * do all the work.
 */
#ifndef PKTMAP_PIPE_FAST_H
#define PKTMAP_PIPE_FAST_H

#include <stdint.h>
#include <string.h>

#include "check.h"
#include "util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PIPE_FAST 1
#else
#define PIPE_FAST 0
#endif

/* The receive and transmit block loops run unrolled four times: their
 * pointer steps and loop test once per 16 slots rather than per 4
 * (bench/cost.py's pipe_sync: 50.5 -> 49.7 instructions per packet).
 * Not the release loop: a forwarder swaps every buffer, so it stops at
 * its first block, and unrolled it cost the zero-copy bridge 9
 * instructions a frame. GCC and clang both read this pragma. */
#define PIPE_UNROLL _Pragma("GCC unroll 4")

/* A descriptor: what crosses from a writer to a reader. 8 bytes, the
 * same layout as a slot's first 8 bytes. `word` is the whole of it: the
 * scalar paths load and store it with one 8-byte access, so a peer
 * writing it at the same time cannot make us see half of an old and
 * half of a new descriptor. */
union pm_pipe_desc {
	struct {
		uint32_t buf_idx;
		uint16_t len;
		uint16_t flags;
	};
	uint64_t word;
};

_Static_assert(sizeof(union pm_pipe_desc) == 8, "one 8-byte load or store");

/* Four 32-bit lanes; aligned(8) because descriptors and slots are only
 * 8-byte aligned (loads and stores are then unaligned ones). */
typedef uint32_t pipe_v4u __attribute__((vector_size(16), aligned(8)));

/* Is any lane of a compare result (each lane all ones or all zeros)
 * set? pmovmskb reads the top bit of each byte: a mask only. */
static inline int pipe_v4u_any(pipe_v4u v)
{
#if defined(__SSE2__)
	typedef char v16c __attribute__((vector_size(16)));
	return __builtin_ia32_pmovmskb128((v16c)v) != 0;
#else
	uint64_t w[2];
	memcpy(w, &v, sizeof(w));
	return (w[0] | w[1]) != 0;
#endif
}

/* Load two 8-byte slot heads (buf_idx, len, flags) into one vector. */
static inline pipe_v4u pipe_v4u_slots(const struct netmap_slot *s)
{
	uint64_t w[2];
	memcpy(&w[0], &s[0], 8);
	memcpy(&w[1], &s[1], 8);
	pipe_v4u v;
	memcpy(&v, w, sizeof(v));
	return v;
}

/* Store a vector as two 8-byte slot heads (ptr is left alone). */
static inline void pipe_v4u_to_slots(struct netmap_slot *s, pipe_v4u v)
{
	uint64_t w[2];
	memcpy(w, &v, sizeof(w));
	memcpy(&s[0], &w[0], 8);
	memcpy(&s[1], &w[1], 8);
}

/* The checker's tests on both halves of v at once: lane 0 and 2 must be
 * a buffer of the pool (2 .. nbufs-1), lane 1 and 3's low 16 bits a
 * length in [len_min, usable]. A lane whose test is off passes. Each
 * test is "x - lo > hi - lo" unsigned, done as a signed compare with
 * both sides moved by 2^31 (SSE2 has no unsigned compare), the move
 * folded into the constants. */
typedef int32_t pipe_v4i __attribute__((vector_size(16), aligned(8)));

struct pipe_vcheck {
	pipe_v4u mask, sub;
	pipe_v4i lim;
};

static inline struct pipe_vcheck pipe_vcheck(const struct pm_bufspace *bs,
					     uint32_t len_min, int check_len)
{
	const uint32_t m = 0x80000000u;
	uint32_t nb = bs->nbufs - 3u; /* idx - 2 > nbufs - 3: bad */
	uint32_t lm = check_len ? 0xffffu : 0u;
	uint32_t ls = check_len ? len_min : 0u;
	uint32_t ll = check_len ? bs->usable - len_min : ~0u;
	struct pipe_vcheck c = {
		.mask = { ~0u, lm, ~0u, lm },
		.sub = { 2u + m, ls + m, 2u + m, ls + m },
		.lim = { (int32_t)(nb ^ m), (int32_t)(ll ^ m), (int32_t)(nb ^ m),
			 (int32_t)(ll ^ m) },
	};
	return c;
}

static inline pipe_v4u pipe_vbad(const struct pipe_vcheck *c, pipe_v4u v)
{
	return (pipe_v4u)((pipe_v4i)((v & c->mask) - c->sub) > c->lim);
}

/* Receive: copy descriptors d[0, run) into slots rs[], as the scalar loop
 * of pipe_rxsync() does, while they are valid. Adds their lengths to
 * *bytes and makes *frags nonzero when one of them is flagged
 * NS_MOREFRAG; returns how many slots it filled (a multiple of 4). */
static inline uint32_t pipe_rx_fast(const union pm_pipe_desc *d,
				    struct netmap_slot *rs, uint32_t run,
				    const struct pm_bufspace *bs,
				    uint64_t *bytes, uint64_t *frags)
{
	uint32_t r = 0;
#if PIPE_FAST
	const struct pipe_vcheck c = pipe_vcheck(bs, 0, 1);
	const uint32_t keepf = 0xffffu | (uint32_t)NS_MOREFRAG << 16;
	const uint32_t setf = (uint32_t)NS_BUF_CHANGED << 16;
	const uint32_t fragf = (uint32_t)NS_MOREFRAG << 16;
	const pipe_v4u keep = { ~0u, keepf, ~0u, keepf };
	const pipe_v4u set = { 0, setf, 0, setf };
	const pipe_v4u lenm = { 0, 0xffffu, 0, 0xffffu };
	/* Per-lane sums: at most 32768 lengths of 65535 per lane. */
	pipe_v4u lens = { 0, 0, 0, 0 }, fr = { 0, 0, 0, 0 };
	const union pm_pipe_desc *dp = d, *de = d + (run & ~3u);
	struct netmap_slot *sp = rs;
	PIPE_UNROLL
	for (; dp != de; dp += 4, sp += 4) {
		pipe_v4u a = *(const volatile pipe_v4u *)(const void *)dp;
		pipe_v4u b = *(const volatile pipe_v4u *)(const void *)(dp + 2);
		if (pm_unlikely(pipe_v4u_any(pipe_vbad(&c, a) | pipe_vbad(&c, b))))
			break;
		a = (a & keep) | set;
		b = (b & keep) | set;
		pipe_v4u_to_slots(sp, a);
		pipe_v4u_to_slots(sp + 2, b);
		lens += (a & lenm) + (b & lenm);
		fr |= a | b;
	}
	r = (uint32_t)(dp - d);
	*bytes += (uint64_t)lens[1] + lens[3];
	/* Only whether there are chains matters: the caller counts them. */
	*frags += ((fr[1] | fr[3]) & fragf) != 0;
#else
	(void)d, (void)rs, (void)run, (void)bs, (void)bytes, (void)frags;
#endif
	return r;
}

/* Transmit: for slots ts[0, run) and descriptors d[0, run), send each
 * slot's buffer in its descriptor and take the buffer the reader left
 * there, as the scalar loop of pipe_txsync() does, while every slot and
 * every returned index is valid. Adds lengths to *bytes, ORs the slots'
 * flags into *flags_or; returns how many slots it moved (a multiple of
 * 4). */
static inline uint32_t pipe_tx_fast(union pm_pipe_desc *d,
				    struct netmap_slot *ts, uint32_t *sh,
				    uint32_t run, const struct pm_bufspace *bs,
				    uint64_t *bytes, uint32_t *flags_or)
{
	uint32_t r = 0;
#if PIPE_FAST
	const struct pipe_vcheck cs = pipe_vcheck(bs, 1, 1);
	/* idx - 2 > nbufs - 3: bad (moved by 2^31 as in pipe_vcheck()) */
	const uint32_t m = 0x80000000u;
	const pipe_v4u two = { 2u + m, 2u + m, 2u + m, 2u + m };
	const int32_t nb = (int32_t)((bs->nbufs - 3u) ^ m);
	const pipe_v4i nbm = { nb, nb, nb, nb };
	const uint32_t keepf = 0xffffu | (uint32_t)NS_MOREFRAG << 16;
	const uint32_t setf = (uint32_t)NS_BUF_CHANGED << 16;
	const pipe_v4u keep = { ~0u, keepf, ~0u, keepf };
	const pipe_v4u idxm = { ~0u, 0, ~0u, 0 };
	const pipe_v4u lenm = { 0, 0xffffu, 0, 0xffffu };
	const pipe_v4u set = { 0, setf, 0, setf };
	pipe_v4u lens = { 0, 0, 0, 0 }, fo = { 0, 0, 0, 0 };
	union pm_pipe_desc *dp = d, *de = d + (run & ~3u);
	struct netmap_slot *sp = ts;
	uint32_t *hp = sh;
	PIPE_UNROLL
	for (; dp != de; dp += 4, sp += 4, hp += 4) {
		pipe_v4u a = pipe_v4u_slots(sp);
		pipe_v4u b = pipe_v4u_slots(sp + 2);
		/* The buffers the reader gave back: read once. */
		pipe_v4u da = *(volatile pipe_v4u *)(void *)dp;
		pipe_v4u db = *(volatile pipe_v4u *)(void *)(dp + 2);
		pipe_v4u back = __builtin_shufflevector(da, db, 0, 2, 4, 6);
		if (pm_unlikely(pipe_v4u_any(pipe_vbad(&cs, a) | pipe_vbad(&cs, b) |
					     (pipe_v4u)((pipe_v4i)(back - two) > nbm))))
			break;
		*(volatile pipe_v4u *)(void *)dp = a & keep;
		*(volatile pipe_v4u *)(void *)(dp + 2) = b & keep;
		pipe_v4u la = a & lenm, lb = b & lenm;
		pipe_v4u_to_slots(sp, la | (da & idxm) | set);
		pipe_v4u_to_slots(sp + 2, lb | (db & idxm) | set);
		memcpy(hp, &back, sizeof(back));
		lens += la + lb;
		fo |= a | b;
	}
	r = (uint32_t)(dp - d);
	*bytes += (uint64_t)lens[1] + lens[3];
	*flags_or |= (fo[1] | fo[3]) >> 16;
#else
	(void)d, (void)ts, (void)sh, (void)run, (void)bs, (void)bytes,
		(void)flags_or;
#endif
	return r;
}

/* Release: how many of the RX slots s[0, n) still hold the buffer their
 * descriptor brought (so that the descriptor needs no write), counted
 * four at a time up to the first block with a swapped buffer. */
static inline uint32_t pipe_release_same(const union pm_pipe_desc *d,
					 const struct netmap_slot *s, uint32_t n)
{
	const union pm_pipe_desc *dp = d, *de = d + (n & ~3u);
#if PIPE_FAST
	const pipe_v4u idxm = { ~0u, 0, ~0u, 0 };
	for (; dp != de; dp += 4, s += 4) {
		pipe_v4u a = *(const volatile pipe_v4u *)(const void *)dp;
		pipe_v4u b = *(const volatile pipe_v4u *)(const void *)(dp + 2);
		pipe_v4u x = ((a ^ pipe_v4u_slots(s)) | (b ^ pipe_v4u_slots(s + 2))) & idxm;
		if (pipe_v4u_any((pipe_v4u)(x != 0)))
			break;
	}
#else
	for (; dp != de; dp += 4, s += 4) {
		uint32_t x = (PM_READ_ONCE(dp[0].buf_idx) ^ s[0].buf_idx) |
			     (PM_READ_ONCE(dp[1].buf_idx) ^ s[1].buf_idx) |
			     (PM_READ_ONCE(dp[2].buf_idx) ^ s[2].buf_idx) |
			     (PM_READ_ONCE(dp[3].buf_idx) ^ s[3].buf_idx);
		if (x)
			break;
	}
#endif
	return (uint32_t)(dp - d);
}

#endif /* PKTMAP_PIPE_FAST_H */
