// SPDX-License-Identifier: BSD-2-Clause
/*
 * Every public header from C++ (g++ -Wall -Wextra -Werror), linked against
 * the shared libraries as a C++ program would be: the layout C++ sees is
 * the one C sees (netmap's offsets, the queue's cache lines), the
 * declarations have C linkage (the calls below link), and the inline ring
 * and queue helpers work. A frame goes through a pipe, elements through a
 * queue, and both come out intact.
 */
#include <pktmap/version.h>
#include <pktmap/pktmap.h>
#include <pktmap/netmap.h>
#include <pktmap/netmap_user.h>
#include <pktmap/pcapfile.h>
#include <pktmap/spsc.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

// netmap's headers (pkg-config pktmap-netmap) last: they rename open,
// close, poll, ... for what follows them (<net/netmap_fd.h>).
#ifdef PKTMAP_CXX_NETMAP
#define NETMAP_WITH_LIBS
#include <net/netmap.h>
#include <net/netmap_user.h>
#include <libnetmap.h>
#endif

static int failures;

static void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "FAIL: %s\n", what);
		failures++;
	}
}

// The layout docs/design.md fixes, as C++ sees it.
static_assert(sizeof(struct netmap_slot) == 16, "slot");
static_assert(offsetof(struct netmap_ring, num_slots) == 8, "num_slots");
static_assert(offsetof(struct netmap_ring, head) == 20, "head");
static_assert(offsetof(struct netmap_ring, tail) == 28, "tail");
static_assert(offsetof(struct netmap_ring, sem) == 128, "sem");
static_assert(offsetof(struct netmap_ring, slot) == 256, "slot[]");
static_assert(offsetof(struct pktmap_spsc, prod) == PKTMAP_SPSC_LINE, "prod");
static_assert(offsetof(struct pktmap_spsc, cons) == 2 * PKTMAP_SPSC_LINE,
	      "cons");

static void test_version()
{
	check(std::string(pktmap_version()) == PKTMAP_VERSION,
	      "pktmap_version() is the headers' PKTMAP_VERSION");
}

static void test_queue()
{
	struct pktmap_spsc *q = pktmap_spsc_create(8, sizeof(uint64_t));
	check(q != nullptr, "pktmap_spsc_create");
	if (!q)
		return;
	uint64_t in[5] = {1, 2, 3, 5, 8}, out[5] = {};
	check(pktmap_spsc_enqueue(q, in, 5) == 5, "enqueue 5");
	check(pktmap_spsc_count(q) == 5, "count 5");
	check(pktmap_spsc_dequeue(q, out, 5) == 5, "dequeue 5");
	check(std::memcmp(in, out, sizeof(in)) == 0, "queue keeps the elements");
	pktmap_spsc_free(q);
}

static void test_pipe()
{
	char name[64], err[256] = "";
	std::snprintf(name, sizeof(name), "pipe:cxx%d{0", (int)getpid());
	struct pktmap_open_opts o;
	std::memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.errbuf = err;
	o.errbuf_len = sizeof(err);
	struct pktmap_port *tx = nullptr, *rx = nullptr;
	check(pktmap_open(&tx, name, &o) == 0, err);
	name[std::strlen(name) - 2] = '}';
	check(pktmap_open(&rx, name, &o) == 0, err);
	if (!tx || !rx)
		return;
	const char frame[] = "a frame from C++, sixty bytes long, give or take.....";
	struct netmap_ring *t = NETMAP_TXRING(pktmap_nifp(tx), 0);
	struct netmap_slot *s = &t->slot[t->head];
	std::memcpy(NETMAP_BUF(t, s->buf_idx), frame, sizeof(frame));
	s->len = sizeof(frame);
	t->head = t->cur = nm_ring_next(t, t->head);
	check(pktmap_txsync(tx) >= 0, "txsync");
	check(pktmap_rxsync(rx) >= 0, "rxsync");
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(rx), 0);
	check(nm_ring_space(r) == 1, "one frame received");
	if (!nm_ring_empty(r)) {
		struct netmap_slot *rs = &r->slot[r->head];
		check(rs->len == sizeof(frame) &&
		      std::memcmp(NETMAP_BUF(r, rs->buf_idx), frame,
				  sizeof(frame)) == 0, "the frame intact");
	}
	pktmap_close(rx);
	pktmap_close(tx);
}

#ifdef PKTMAP_CXX_NETMAP
// libpktmap-netmap's declarations have C linkage too.
static void test_netmap()
{
	struct nmreq_header h;
	struct nmreq_register reg;
	nmreq_header_init(&h, NETMAP_REQ_REGISTER, &reg);
	check(h.nr_version == NETMAP_API && h.nr_reqtype == NETMAP_REQ_REGISTER &&
	      h.nr_body == (uintptr_t)&reg, "nmreq_header_init from C++");
}
#endif

int main()
{
	test_version();
#ifdef PKTMAP_CXX_NETMAP
	test_netmap();
#endif
	test_queue();
	test_pipe();
	if (failures)
		return 1;
	std::printf("ok: C++ sees the C layout, links, moves a frame and a "
		    "queue's elements intact\n");
	return 0;
}
