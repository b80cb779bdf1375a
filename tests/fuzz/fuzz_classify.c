// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the router's classifier (src/fwd/router_classify.c)
 * on arbitrary frames, in every mode, each frame in a buffer of exactly
 * its length (ASan sees a read past it).
 *
 *   input: [mode] [input port] frame...
 *
 * Properties: the output is a port or one of the RT_* verdicts; hash is
 * a function of the frame; l2 never sends a frame back to its input; lpm
 * changes nothing but TTL and checksum, decrements the TTL by one, keeps
 * a valid header checksum valid, and every verdict (a port, or why it
 * dropped) agrees with a model built on a brute-force longest prefix
 * match; a dropped frame is not modified. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"

#define NP 4

static struct rt_router rt;
static struct rt_opts opts;
static struct rt_route routes[] = {
	{0x0a000000, 8, 1, 0},  /* 10.0.0.0/8 */
	{0x0a010000, 16, 2, 1}, /* 10.1.0.0/16 */
	{0x0a010200, 24, 3, 2}, /* 10.1.2.0/24 */
	{0x0a010280, 25, 0, 3}, /* 10.1.2.128/25 */
	{0x0a010281, 32, 1, 4}, /* 10.1.2.129/32 */
	{0xc0a80000, 16, 2, 5}, /* 192.168.0.0/16 */
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static void setup(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	rt.o = &opts;
	rt.n = NP;
	rt.nouts = 3;
	rt.outs[0] = 1, rt.outs[1] = 3, rt.outs[2] = 0;
	for (unsigned i = 0; i < NP; i++) {
		rt.static_out[i] = (int)((i + 1) % NP);
		rt.ports[i].rt = &rt;
		rt.ports[i].id = i;
	}
	struct rt_route copy[NROUTES];
	memcpy(copy, routes, sizeof(routes));
	if (rt_lpm_build(&rt.lpm, copy, NROUTES) || rt_l2_init(&rt))
		abort();
	/* Each port's RX stage looks routes up through its own pointer
	 * (router_reload.c swaps it), set as rt_init() sets it. */
	for (unsigned i = 0; i < NP; i++)
		rt.ports[i].rx.lpm = &rt.lpm;
}

static int brute(uint32_t dst)
{
	int best = -1, blen = -1;
	for (size_t i = 0; i < NROUTES; i++) {
		uint32_t m = routes[i].len ? ~0u << (32 - routes[i].len) : 0;
		if ((dst & m) == routes[i].prefix && (int)routes[i].len > blen) {
			blen = (int)routes[i].len;
			best = (int)routes[i].hop;
		}
	}
	return best;
}

/* What lpm must answer for a frame, written from its definition: not
 * IPv4 (or a header that does not fit), no route (brute force), TTL
 * spent, else the route's port. */
static int lpm_model(const uint8_t *f, uint32_t len)
{
	if (len < 34 || f[12] != 0x08 || f[13] != 0 || (f[14] >> 4) != 4)
		return RT_DROP_NOT_IP;
	uint32_t ihl = (f[14] & 0xfu) * 4u;
	if (ihl < 20 || len < 14 + ihl)
		return RT_DROP_NOT_IP;
	uint32_t dst = (uint32_t)f[30] << 24 | (uint32_t)f[31] << 16 |
		       (uint32_t)f[32] << 8 | f[33];
	int hop = brute(dst);
	if (hop < 0)
		return RT_DROP_NO_ROUTE;
	return f[22] <= 1 ? RT_DROP_TTL : hop;
}

static int csum_ok(const uint8_t *ip, uint32_t ihl)
{
	uint32_t sum = 0;
	for (uint32_t i = 0; i < ihl; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum rt_mode modes[] = {RT_HASH, RT_LPM, RT_L2, RT_STATIC};
	setup();
	if (size < 2)
		return 0;
	opts.mode = modes[data[0] % 4];
	unsigned in = data[1] % NP;
	uint32_t len = (uint32_t)(size - 2);
	uint8_t *f = malloc(len ? len : 1), *orig = malloc(len ? len : 1);
	memcpy(f, data + 2, len);
	memcpy(orig, data + 2, len);

	int out = rt_classify(&rt.ports[in], f, len);
	if (out >= NP || out < RT_DROP_FILTERED)
		__builtin_trap();
	switch (opts.mode) {
	case RT_HASH: {
		int again = rt_classify(&rt.ports[in], f, len);
		if (out != again || (out != 1 && out != 3 && out != 0))
			__builtin_trap();
		if (memcmp(f, orig, len))
			__builtin_trap();
		break;
	}
	case RT_L2:
		if (out == (int)in || memcmp(f, orig, len))
			__builtin_trap();
		break;
	case RT_STATIC:
		if (out != (int)((in + 1) % NP))
			__builtin_trap();
		break;
	case RT_LPM:
		/* every verdict, forwarded or dropped, is the model's */
		if (out != lpm_model(orig, len))
			__builtin_trap();
		if (out < 0) {
			if (memcmp(f, orig, len))
				__builtin_trap(); /* dropped frames stay as they were */
			break;
		}
		/* forwarded (an IPv4 frame whose header fits, the model
		 * says): the TTL down by one, nothing else but the checksum */
		uint32_t ihl = (orig[14] & 0xfu) * 4u;
		if (f[22] != orig[22] - 1)
			__builtin_trap();
		for (uint32_t i = 0; i < len; i++)
			if (f[i] != orig[i] && i != 22 && i != 24 && i != 25)
				__builtin_trap();
		if (ihl >= 20 && 14 + ihl <= len && csum_ok(orig + 14, ihl) &&
		    !csum_ok(f + 14, ihl))
			__builtin_trap();
		break;
	default:
		break;
	}
	free(f);
	free(orig);
	return 0;
}
