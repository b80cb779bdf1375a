// SPDX-License-Identifier: BSD-2-Clause
/*
 * memif ports in one process, through the public API only: a server and a
 * client on a socket in a directory of this test's own. pktmap_stats()
 * counts the peer's comings and goings exactly (peer_connects,
 * peer_disconnects), and a client with the wrong secret as the server's
 * peer_errors, not as a connection.
 */
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "t.h"

static char sock[200];

static struct pktmap_port *open_port(const char *conf)
{
	char name[300], err[256] = "";
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	struct pktmap_port *p = NULL;
	snprintf(name, sizeof(name), "memif:%s@conf:%s", sock, conf);
	int ret = pktmap_open(&p, name, &o);
	CHECK(ret == 0, "open %s: %s", name, err);
	return ret == 0 ? p : NULL;
}

static bool peer_up(const struct pktmap_port *p)
{
	struct pktmap_info in = { .sz = sizeof(in) };
	return pktmap_info(p, &in) == 0 && !(in.flags & PKTMAP_INFO_PEER_GONE);
}

/* Give both ends' control channels their turns (pktmap_poll() looks at
 * them) until want(a) and want(b) hold, or about 10 s went by. */
static bool turn_until(struct pktmap_port *a, struct pktmap_port *b, bool up)
{
	for (int i = 0; i < 1000; i++) {
		if (a)
			pktmap_poll(a, POLLIN, 5);
		if (b)
			pktmap_poll(b, POLLIN, 5);
		if ((!a || peer_up(a) == up) && (!b || peer_up(b) == up))
			return true;
	}
	return false;
}

static struct pktmap_stats stats(const struct pktmap_port *p)
{
	struct pktmap_stats st = { .sz = sizeof(st) };
	CHECK(pktmap_stats(p, &st) == 0, "pktmap_stats");
	return st;
}

int main(void)
{
	char dir[] = "/tmp/pktmap-test-memif.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sock, sizeof(sock), "%s/m%d.sock", dir, (int)getpid());

	struct pktmap_port *srv = open_port("role=server,slots=64");
	struct pktmap_port *cli = open_port("role=client,slots=64");
	if (!srv || !cli)
		return t_done("memif");
	CHECK(turn_until(srv, cli, true), "the client never connected");
	struct pktmap_stats s = stats(srv), c = stats(cli);
	CHECK_EQ(s.peer_connects, 1);
	CHECK_EQ(c.peer_connects, 1);
	CHECK_EQ(s.peer_disconnects, 0);
	CHECK_EQ(s.peer_errors, 0);
	CHECK_EQ(c.peer_errors, 0);

	/* The client goes and comes back: one more of each on the server. */
	pktmap_close(cli);
	CHECK(turn_until(srv, NULL, false), "the server never saw the client go");
	s = stats(srv);
	CHECK_EQ(s.peer_connects, 1);
	CHECK_EQ(s.peer_disconnects, 1);
	cli = open_port("role=client,slots=64");
	if (cli) {
		CHECK(turn_until(srv, cli, true), "the client never reconnected");
		s = stats(srv);
		CHECK_EQ(s.peer_connects, 2);
		CHECK_EQ(s.peer_disconnects, 1);
		CHECK_EQ(s.peer_errors, 0);
		pktmap_close(cli);
		CHECK(turn_until(srv, NULL, false), "the client did not go");
	}

	/* A client with the wrong secret: refused, an error of the peer's,
	 * no connection. (The server has no secret: give it one.) */
	pktmap_close(srv);
	srv = open_port("role=server,slots=64,secret=right");
	struct pktmap_port *bad = open_port("role=client,slots=64,secret=wrong");
	if (srv && bad) {
		for (int i = 0; i < 1000 && stats(srv).peer_errors == 0; i++) {
			pktmap_poll(srv, POLLIN, 5);
			pktmap_poll(bad, POLLIN, 5);
		}
		s = stats(srv);
		CHECK(s.peer_errors >= 1, "a wrong secret is no error: %llu",
		      (unsigned long long)s.peer_errors);
		CHECK_EQ(s.peer_connects, 0);
		CHECK(!peer_up(srv), "a wrong secret connected");
	}
	if (bad)
		pktmap_close(bad);
	if (srv)
		pktmap_close(srv);
	rmdir(dir);
	return t_done("memif");
}
