// SPDX-License-Identifier: BSD-2-Clause
/*
 * memif ports in one process, through the public API only: a server and a
 * client on a socket in a directory of this test's own. pktmap_stats()
 * counts the peer's comings and goings exactly (peer_connects,
 * peer_disconnects), and a client with the wrong secret as the server's
 * peer_errors, not as a connection.
 *
 * A server's socket path under a directory another user controls
 * (issue 30 item 12): nobody swaps a directory of the path for a
 * symbolic link to a directory of root's, again and again, while root
 * opens and closes servers there: root's file of the socket's name
 * survives (before, the close's stat-then-unlink deleted it).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
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

/* As nobody: swap names a (a directory) and b (a symbolic link) in
 * dir, for ever (the parent kills us). */
static void racer(const char *dir)
{
	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0)
		_exit(9);
	int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		_exit(8);
	for (;;)
		(void)renameat2(d, "d", d, "x", RENAME_EXCHANGE);
}

/* Leave a dead socket of ours at path (whatever directory it leads to
 * now), so that the next server open takes the stale-socket path. */
static void plant_stale(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0)
		(void)bind(fd, (struct sockaddr *)&a, sizeof(a));
	if (fd >= 0)
		close(fd);
}

static void quiet(void *ctx, enum pktmap_log_level lvl, const char *line)
{
	(void)ctx;
	(void)lvl;
	(void)line;
}

/* issue 30 item 12: top/u is nobody's; in it, "d" and "x" are a
 * directory of nobody's and a symbolic link to top/r, root's directory
 * with root's file "s", and nobody swaps them as fast as it can. Root
 * opens servers on top/u/d/s (a dead socket left there before every
 * other open) and closes them: root's file stays, every time. */
static void test_symlink_race(void)
{
	if (geteuid() != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs root");
		printf("skip test_symlink_race: needs root\n");
		return;
	}
	char top[] = "/tmp/pktmap-test-memif-race.XXXXXX";
	if (!mkdtemp(top)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	char u[200], r[200], f[220], d[220], x[220], path[240];
	snprintf(u, sizeof(u), "%s/u", top);
	snprintf(r, sizeof(r), "%s/r", top);
	snprintf(f, sizeof(f), "%s/s", r);
	snprintf(d, sizeof(d), "%s/d", u);
	snprintf(x, sizeof(x), "%s/x", u);
	snprintf(path, sizeof(path), "%s/s", d);
	int fd = -1;
	CHECK(chmod(top, 0755) == 0 && mkdir(u, 0755) == 0 && mkdir(r, 0755) == 0 &&
	      mkdir(d, 0755) == 0 && symlink(r, x) == 0 &&
	      lchown(d, 65534, 65534) == 0 && lchown(x, 65534, 65534) == 0 &&
	      chown(u, 65534, 65534) == 0 &&
	      (fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0 &&
	      write(fd, "root's", 6) == 6, "setup: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	pid_t pid = fork();
	if (pid == 0)
		racer(u);
	char name[300], err[256];
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err), .log = quiet };
	snprintf(name, sizeof(name), "memif:%s@conf:role=server,slots=4", path);
	int opened = 0;
	struct stat st;
	for (int i = 0; i < 3000 && stat(f, &st) == 0; i++) {
		struct pktmap_port *p = NULL;
		if (i & 1)
			plant_stale(path);
		if (pktmap_open(&p, name, &o) == 0) {
			opened++;
			pktmap_close(p);
		} else if (i < 3) {
			printf("open: %s\n", err);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	char got[8] = "";
	fd = open(f, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && read(fd, got, sizeof(got)) == 6 &&
	      memcmp(got, "root's", 6) == 0, "root's file %s: %s", f,
	      fd < 0 ? strerror(errno) : "changed");
	if (fd >= 0)
		close(fd);
	CHECK(opened > 0, "no server ever opened");
	printf("symlink race: %d of 3000 opens\n", opened);
	/* Whichever name the directory has now, and the dead sockets. */
	char sub[260];
	for (int k = 0; k < 2; k++) {
		snprintf(sub, sizeof(sub), "%s/%s/s", u, k ? "x" : "d");
		unlink(sub);
	}
	unlink(f);
	unlink(d);
	unlink(x);
	rmdir(d);
	rmdir(x);
	rmdir(u);
	rmdir(r);
	CHECK(rmdir(top) == 0, "%s left behind: %s", top, strerror(errno));
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
	test_symlink_race();
	return t_done("memif");
}
