/* SPDX-License-Identifier: BSD-2-Clause
 * Speaking memif by hand, for the tests that play a peer
 * (tests/unit/test_memif.c, tests/system/memif_hostile.c): one control
 * message, its body at the union, a descriptor with it (pass >= 0). */
#ifndef PKTMAP_TEST_MEMIF_RAW_H
#define PKTMAP_TEST_MEMIF_RAW_H

#include <string.h>
#include <sys/socket.h>

#include "ports/memif.h"

/* Returns what sendmsg() returned. */
static inline ssize_t mif_raw_send(int fd, uint16_t type, const void *body, size_t len,
			    int pass)
{
	struct mif_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	if (body)
		memcpy(&m.hello, body, len);
	struct iovec iov = { &m, sizeof(m) };
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (pass >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL);
}

#endif
