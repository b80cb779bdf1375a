// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the switch's control messages (src/vale_proto.h). The
 * switch takes a request, every client a reply, through one function each:
 * whatever bytes arrive, an accepted message has all its strings ended
 * inside their fields, and anything but one whole message of this
 * version is refused. Each input is tried twice: as one datagram as
 * recv() returns it, and as the body of a well-framed message (magic and
 * version set, the rest from the input, then 0xa5 bytes: fields a peer
 * did not end), which is where the string checks matter. */
#include <stdint.h>
#include <string.h>

#include "vale_proto.h"

static void ended(const char *s, size_t len)
{
	if (!memchr(s, 0, len))
		__builtin_trap();
}

static void take_req(const uint8_t *data, size_t size, int framed)
{
	struct vale_req rq;
	memset(&rq, 0xa5, sizeof(rq));
	memcpy(&rq, data, size < sizeof(rq) ? size : sizeof(rq));
	ssize_t n = (ssize_t)size;
	if (framed) {
		rq.magic = VALE_MAGIC;
		rq.version = VALE_VERSION;
		n = sizeof(rq);
	}
	if (vale_req_take(&rq, n) != 0) {
		if (framed)
			__builtin_trap(); /* a whole message of ours is taken */
		return;
	}
	if (n != (ssize_t)sizeof(rq) || rq.magic != VALE_MAGIC ||
	    rq.version != VALE_VERSION)
		__builtin_trap();
	ended(rq.port, sizeof(rq.port));
	ended(rq.region, sizeof(rq.region));
	ended(rq.arg, sizeof(rq.arg));
	(void)vale_name_ok(rq.port);
}

static void take_rep(const uint8_t *data, size_t size, int framed)
{
	struct vale_rep rp;
	memset(&rp, 0xa5, sizeof(rp));
	memcpy(&rp, data, size < sizeof(rp) ? size : sizeof(rp));
	ssize_t n = (ssize_t)size;
	if (framed) {
		rp.magic = VALE_MAGIC;
		rp.version = VALE_VERSION;
		n = sizeof(rp);
	}
	if (vale_rep_take(&rp, n) != 0)
		return;
	if (n != (ssize_t)sizeof(rp) || rp.magic != VALE_MAGIC ||
	    rp.version != VALE_VERSION || rp.op < VALE_OK || rp.op > VALE_END)
		__builtin_trap();
	ended(rp.msg, sizeof(rp.msg));
	ended(rp.pipe, sizeof(rp.pipe));
	ended(rp.port, sizeof(rp.port));
	ended(rp.kind, sizeof(rp.kind));
	ended(rp.attached, sizeof(rp.attached));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	take_req(data, size, 0);
	take_req(data, size, 1);
	take_rep(data, size, 0);
	take_rep(data, size, 1);
	return 0;
}
