// SPDX-License-Identifier: BSD-2-Clause
/* The slot checker, from a table of boundary cases (docs/design.md,
 * "Trust model"). */
#include <string.h>

#include "check.h"
#include "port.h"
#include "pub.h"
#include "t.h"
#include "util.h"

struct slot_case {
	const char *what;
	uint32_t idx, len;
	int tx;
	enum pm_slot_verdict want;
};

/* A pool of 100 buffers (valid 2..99) of 2048 bytes, 1792 usable (AF_XDP
 * headroom of 256 folded in). */
static const struct pm_bufspace bs = { .nbufs = 100, .usable = 1792 };

static const struct slot_case slot_cases[] = {
	{ "index 0", 0, 60, 1, PM_SLOT_BAD_IDX },
	{ "index 1", 1, 60, 1, PM_SLOT_BAD_IDX },
	{ "index 2 (first valid)", 2, 60, 1, PM_SLOT_OK },
	{ "last valid index", 99, 60, 1, PM_SLOT_OK },
	{ "last + 1", 100, 60, 1, PM_SLOT_BAD_IDX },
	{ "huge index", 0xffffffffu, 60, 1, PM_SLOT_BAD_IDX },
	{ "len 0 on TX", 5, 0, 1, PM_SLOT_BAD_LEN },
	{ "len 0 on RX", 5, 0, 0, PM_SLOT_OK },
	{ "len 1", 5, 1, 1, PM_SLOT_OK },
	{ "len = usable", 5, 1792, 1, PM_SLOT_OK },
	{ "len = usable + 1", 5, 1793, 1, PM_SLOT_BAD_LEN },
	{ "len = stride (headroom not counted)", 5, 2048, 1, PM_SLOT_BAD_LEN },
	{ "len 65535", 5, 65535, 0, PM_SLOT_BAD_LEN },
	{ "bad index wins over bad len", 0, 0, 1, PM_SLOT_BAD_IDX },
};

struct ring_case {
	const char *what;
	uint32_t hwcur, rtail; /* what the last sync handed out */
	uint32_t head, cur;    /* what the application wrote */
	int ok;
};

/* A ring of 8 slots. */
static const struct ring_case ring_cases[] = {
	{ "nothing moved", 2, 6, 2, 2, 1 },
	{ "head to tail", 2, 6, 6, 6, 1 },
	{ "head inside", 2, 6, 4, 5, 1 },
	{ "head beyond tail", 2, 6, 7, 7, 0 },
	{ "head before hwcur", 2, 6, 1, 1, 0 },
	{ "cur beyond tail", 2, 6, 3, 7, 0 },
	{ "cur before head", 2, 6, 4, 3, 0 },
	{ "head out of ring", 2, 6, 8, 8, 0 },
	{ "cur out of ring", 2, 6, 2, 9, 0 },
	{ "wrap: tail before hwcur, head wrapped", 6, 3, 1, 2, 1 },
	{ "wrap: head at tail", 6, 3, 3, 3, 1 },
	{ "wrap: head beyond wrapped tail", 6, 3, 4, 4, 0 },
	{ "wrap: head between tail and hwcur", 6, 3, 5, 5, 0 },
	{ "wrap: head at 7 (before wrap)", 6, 3, 7, 0, 1 },
	{ "empty window", 5, 5, 5, 5, 1 },
	{ "empty window, head moved", 5, 5, 6, 6, 0 },
};

static char logged[512];
static int nlogs;

static void logger(void *ctx, enum pktmap_log_level lvl, const char *msg)
{
	(void)ctx;
	(void)lvl;
	snprintf(logged, sizeof(logged), "%s", msg);
	nlogs++;
}

int main(void)
{
	for (size_t i = 0; i < PM_ARRAY_SIZE(slot_cases); i++) {
		const struct slot_case *c = &slot_cases[i];
		CHECK(pm_slot_check(&bs, c->idx, c->len, c->tx) == c->want,
		      "slot case '%s'", c->what);
		/* pm_desc_check(), the length rule alone: a TX slot's
		 * verdict wherever the index is good. */
		if (c->tx && pm_buf_ok(&bs, c->idx))
			CHECK(pm_desc_check(&bs, c->len) == c->want,
			      "desc case '%s'", c->what);
	}
	CHECK(pm_desc_check(&bs, 0) == PM_SLOT_BAD_LEN, "desc len 0");
	CHECK(pm_desc_check(&bs, 1) == PM_SLOT_OK, "desc len 1");
	CHECK(pm_desc_check(&bs, 0xffffffffu) == PM_SLOT_BAD_LEN,
	      "desc len 2^32-1");

	static union {
		struct netmap_ring r;
		char raw[256 + 8 * 16];
	} u;
	struct pktmap_port port;
	memset(&port, 0, sizeof(port));
	snprintf(port.name, sizeof(port.name), "test:ring");
	port.log = logger;
	port.log_level = PKTMAP_LOG_DEBUG;
	port.bs = bs;
	struct pm_port_stats pst = { 0 };
	struct pm_ring_stats rst = { 0 };
	port.stats = &pst;
	struct pm_kring k = { .ring = &u.r, .nslots = 8, .tx = 1, .st = &rst };
	*(uint32_t *)&u.r.num_slots = 8;

	for (size_t i = 0; i < PM_ARRAY_SIZE(ring_cases); i++) {
		const struct ring_case *c = &ring_cases[i];
		k.hwcur = k.rhead = k.rcur = c->hwcur;
		k.rtail = k.hwtail = c->rtail;
		u.r.head = c->head;
		u.r.cur = c->cur;
		u.r.tail = 12345; /* the application scribbled on tail: ignored */
		uint64_t before = pst.invalid_ring;
		int r = pm_sync_prologue(&port, &k);
		if (c->ok) {
			CHECK(r == 0, "ring case '%s' should pass", c->what);
			CHECK(k.rhead == c->head && k.rcur == c->cur,
			      "ring case '%s' keeps head/cur", c->what);
		} else {
			CHECK(r == -EINVAL, "ring case '%s' should fail", c->what);
			CHECK(pst.invalid_ring == before + 1,
			      "ring case '%s' counted", c->what);
			CHECK(u.r.head == c->hwcur && u.r.cur == c->hwcur &&
				      u.r.tail == c->rtail,
			      "ring case '%s' reset the ring", c->what);
		}
	}
	/* Invalid rings are logged, but rate-limited: many failures in a
	 * row give one line. */
	CHECK(nlogs >= 1 && nlogs <= 2, "rate-limited logging (%d lines)", nlogs);
	CHECK(strstr(logged, "test:ring") != NULL, "log names the port: %s", logged);

	/* pm_rx_release: the RX slots given back ([hwcur, head), wrapping)
	 * must each hold a buffer of the port; hwcur stops at the first
	 * that does not (counted), else moves to head. */
	static const struct {
		const char *what;
		uint32_t hwcur, head, bad_slot, bad_idx; /* bad_slot 8: none */
		int ret;
		uint32_t hwcur_after;
	} rel[] = {
		{ "nothing given back", 3, 3, 3, 0, 0, 3 },
		{ "all good", 1, 6, 8, 0, 0, 6 },
		{ "all good, wrapping", 6, 2, 8, 0, 0, 2 },
		{ "index 0 in the middle", 1, 6, 4, 0, -EINVAL, 4 },
		{ "index 1 first", 1, 6, 1, 1, -EINVAL, 1 },
		{ "past the pool last", 1, 6, 5, 100, -EINVAL, 5 },
		{ "bad after the wrap", 6, 2, 0, 0xffffffffu, -EINVAL, 0 },
		{ "bad at head: not given back", 1, 6, 6, 0, 0, 6 },
		{ "last valid index", 1, 6, 3, 99, 0, 6 },
	};
	k.tx = 0;
	for (size_t i = 0; i < PM_ARRAY_SIZE(rel); i++) {
		for (uint32_t s = 0; s < 8; s++)
			u.r.slot[s].buf_idx = 10 + s;
		if (rel[i].bad_slot < 8)
			u.r.slot[rel[i].bad_slot].buf_idx = rel[i].bad_idx;
		k.hwcur = rel[i].hwcur;
		k.rhead = rel[i].head;
		uint64_t drops = rst.drop_invalid;
		int r = pm_rx_release(&port, &k);
		CHECK(r == rel[i].ret && k.hwcur == rel[i].hwcur_after &&
			      rst.drop_invalid == drops + (rel[i].ret != 0),
		      "release '%s': %d, hwcur %u, %llu dropped", rel[i].what, r,
		      k.hwcur, (unsigned long long)(rst.drop_invalid - drops));
	}
	k.tx = 1;

	/* pm_slot_reject counts and logs. */
	uint64_t before = rst.drop_invalid;
	pm_slot_reject(&port, &k, 3, 0, 60, PM_SLOT_BAD_IDX);
	CHECK_EQ(rst.drop_invalid, before + 1);
	return t_done("check");
}
