/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The pipe's four-at-a-time fast paths (src/ports/pipe_fast.h) against a
 * scalar reference, from a table of boundary values: each bad value at
 * each position of a 16-slot run must stop the fast path before its
 * block, and everything before it must be moved exactly as the scalar
 * loops of pipe_sync.c move it.
 */
#include <stdint.h>
#include <string.h>

#include "ports/pipe_fast.h"
#include "t.h"

#define RUN 16
#define NBUFS 1000u
#define USABLE 2048u

static const struct pm_bufspace bs = { .nbufs = NBUFS, .usable = USABLE };

/* Valid values that lie on the boundaries, and invalid ones beside them. */
static const uint32_t good_idx[] = { 2, 3, NBUFS - 1, 500 };
static const uint32_t bad_idx[] = { 0, 1, NBUFS, NBUFS + 1, 0x7fffffffu,
				    0x80000000u, 0xffffffffu };
static const uint32_t good_len[] = { 1, 60, USABLE - 1, USABLE };
static const uint32_t bad_rx_len[] = { USABLE + 1, 0x8000, 0xffff };
static const uint32_t bad_tx_len[] = { 0, USABLE + 1, 0xffff };

static uint32_t rng = 12345;

static uint32_t rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static void fill_descs(union pm_pipe_desc *d, uint16_t extra_flags)
{
	for (int i = 0; i < RUN; i++) {
		d[i].buf_idx = good_idx[rnd() % 4];
		d[i].len = (uint16_t)good_len[rnd() % 4];
		d[i].flags = (uint16_t)((i % 5 == 0 ? NS_MOREFRAG : 0) | extra_flags);
	}
}

/* RX: a bad index or length at position k; the fast path stops at k's
 * block, and the slots before it are the descriptors, flags cleaned. */
static void rx_case(int k, uint32_t idx, uint32_t len, uint32_t run)
{
	union pm_pipe_desc d[RUN];
	struct netmap_slot s[RUN];
	fill_descs(d, 0x1234 & ~NS_MOREFRAG);
	memset(s, 0xee, sizeof(s));
	if (k >= 0) {
		d[k].buf_idx = idx;
		d[k].len = (uint16_t)len;
	}
	uint64_t bytes = 0, frags = 0;
	uint32_t got = pipe_rx_fast(d, s, run, &bs, &bytes, &frags);
	uint32_t want = k >= 0 && (uint32_t)k < run ? (uint32_t)k / 4 * 4 : run / 4 * 4;
	CHECK_EQ(got, want);
	uint64_t wbytes = 0, wfrags = 0;
	for (uint32_t i = 0; i < got && i < RUN; i++) {
		CHECK(s[i].buf_idx == d[i].buf_idx && s[i].len == d[i].len,
		      "rx slot %u: %u/%u, descriptor %u/%u", i, s[i].buf_idx,
		      s[i].len, d[i].buf_idx, d[i].len);
		CHECK_EQ(s[i].flags, (d[i].flags & NS_MOREFRAG) | NS_BUF_CHANGED);
		CHECK(s[i].ptr == 0xeeeeeeeeeeeeeeeeull, "rx slot %u: ptr written", i);
		wbytes += d[i].len;
		wfrags += (d[i].flags & NS_MOREFRAG) != 0;
	}
	for (uint32_t i = got; i < RUN; i++)
		CHECK(s[i].buf_idx == 0xeeeeeeeeu, "rx slot %u written past the stop", i);
	CHECK_EQ(bytes, wbytes);
	CHECK_EQ(frags != 0, wfrags != 0);
}

/* TX: a bad slot (index or length) or a bad returned index at k. */
static void tx_case(int k, int in_desc, uint32_t idx, uint32_t len)
{
	union pm_pipe_desc d[RUN], d0[RUN];
	struct netmap_slot s[RUN], s0[RUN];
	uint32_t sh[RUN];
	fill_descs(d, 0);
	for (int i = 0; i < RUN; i++) {
		s[i].buf_idx = good_idx[rnd() % 4];
		s[i].len = (uint16_t)good_len[rnd() % 4];
		s[i].flags = (uint16_t)(i % 3 == 0 ? NS_MOREFRAG | NS_REPORT : 0);
		s[i].ptr = 77;
		sh[i] = 0xdddddddd;
	}
	if (k >= 0 && in_desc) {
		d[k].buf_idx = idx;
	} else if (k >= 0) {
		s[k].buf_idx = idx;
		s[k].len = (uint16_t)len;
	}
	memcpy(d0, d, sizeof(d));
	memcpy(s0, s, sizeof(s));
	uint64_t bytes = 0;
	uint32_t flags_or = 0;
	uint32_t got = pipe_tx_fast(d, s, sh, RUN, &bs, &bytes, &flags_or);
	CHECK_EQ(got, k >= 0 ? (uint32_t)k / 4 * 4 : RUN);
	uint64_t wbytes = 0;
	uint32_t wor = 0;
	for (uint32_t i = 0; i < RUN; i++) {
		if (i >= got) {
			CHECK(!memcmp(&d[i], &d0[i], sizeof(d[i])) &&
				      !memcmp(&s[i], &s0[i], sizeof(s[i])) &&
				      sh[i] == 0xdddddddd,
			      "tx slot %u changed past the stop", i);
			continue;
		}
		CHECK_EQ(d[i].buf_idx, s0[i].buf_idx);
		CHECK_EQ(d[i].len, s0[i].len);
		CHECK_EQ(d[i].flags, s0[i].flags & NS_MOREFRAG);
		CHECK_EQ(s[i].buf_idx, d0[i].buf_idx);
		CHECK_EQ(s[i].len, s0[i].len);
		CHECK_EQ(s[i].flags, NS_BUF_CHANGED);
		CHECK_EQ(s[i].ptr, 77);
		CHECK_EQ(sh[i], d0[i].buf_idx);
		wbytes += s0[i].len;
		wor |= s0[i].flags;
	}
	CHECK_EQ(bytes, wbytes);
	CHECK_EQ(flags_or & NS_MOREFRAG, wor & NS_MOREFRAG);
}

/* Release: the first slot whose buffer differs from its descriptor's. */
static void release_case(int k, uint32_t n)
{
	union pm_pipe_desc d[RUN];
	struct netmap_slot s[RUN];
	fill_descs(d, 0);
	for (int i = 0; i < RUN; i++) {
		s[i].buf_idx = d[i].buf_idx;
		s[i].len = (uint16_t)(d[i].len ^ 1); /* only the index counts */
		s[i].flags = NS_BUF_CHANGED;
		s[i].ptr = rnd();
	}
	if (k >= 0)
		s[k].buf_idx ^= 1u << (rnd() % 32);
	uint32_t want = k >= 0 && (uint32_t)k < n ? (uint32_t)k / 4 * 4 : n / 4 * 4;
	CHECK_EQ(pipe_release_same(d, s, n), want);
}

int main(void)
{
	for (uint32_t run = 0; run <= RUN; run++)
		rx_case(-1, 0, 0, run);
	for (int k = 0; k < RUN; k++) {
		for (size_t b = 0; b < sizeof(bad_idx) / sizeof(bad_idx[0]); b++) {
			rx_case(k, bad_idx[b], 60, RUN);
			tx_case(k, 0, bad_idx[b], 60);
			tx_case(k, 1, bad_idx[b], 0);
		}
		for (size_t b = 0; b < sizeof(bad_rx_len) / sizeof(bad_rx_len[0]); b++)
			rx_case(k, 500, bad_rx_len[b], RUN);
		for (size_t b = 0; b < sizeof(bad_tx_len) / sizeof(bad_tx_len[0]); b++)
			tx_case(k, 0, 500, bad_tx_len[b]);
		rx_case(k, 0, 60, (uint32_t)k); /* a bad value past the run */
		for (uint32_t n = 0; n <= RUN; n++)
			release_case(k, n);
	}
	tx_case(-1, 0, 0, 0);
	release_case(-1, RUN);
	return t_done("pipe_fast");
}
