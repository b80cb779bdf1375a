// SPDX-License-Identifier: BSD-2-Clause
/* The systemd protocol of the daemons (apps/common/notify.c): a datagram
 * socket bound by the test (a path, then an abstract name) stands in for
 * systemd's, NOTIFY_SOCKET names it, and each message is read back and
 * compared byte for byte; NOTIFY_SOCKET unset sends nothing; a value that
 * is not a socket address is refused; a status cannot smuggle a second
 * KEY=VALUE line. listen_fds() from a table of LISTEN_PID/LISTEN_FDS
 * values, good and bad. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"
#include "t.h"

/* Bind a datagram socket at NOTIFY_SOCKET-style name `name`. */
static int bind_at(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(sa.sun_path, name, n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	if (name[0] == '@')
		sa.sun_path[0] = 0;
	else
		len++;
	if (bind(fd, (struct sockaddr *)&sa, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The next datagram on fd (nothing pending: ""; the sender does not
 * block, so it is there once notify_*() returned). */
static const char *next_msg(int fd)
{
	static char buf[1024];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static unsigned long long mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL +
	       (unsigned long long)ts.tv_nsec / 1000;
}

/* Every message, exactly, on the socket NOTIFY_SOCKET names. */
static void messages(int fd)
{
	unsigned long long before, after, usec;
	char rest;
	const char *m;

	CHECK_EQ(notify_ready(), 1);
	CHECK(strcmp(next_msg(fd), "READY=1") == 0, "ready");
	CHECK_EQ(notify_stopping(), 1);
	CHECK(strcmp(next_msg(fd), "STOPPING=1") == 0, "stopping");
	before = mono_usec();
	CHECK_EQ(notify_reloading(), 1);
	after = mono_usec();
	m = next_msg(fd);
	CHECK(sscanf(m, "RELOADING=1\nMONOTONIC_USEC=%llu%c", &usec, &rest) == 1,
	      "reloading: '%s'", m);
	CHECK(usec >= before && usec <= after, "%llu not in [%llu, %llu]",
	      usec, before, after);
	CHECK_EQ(notify_status("forwarding %d ports", 3), 1);
	CHECK(strcmp(next_msg(fd), "STATUS=forwarding 3 ports") == 0, "status");
	/* a newline in a value cannot start another assignment */
	CHECK_EQ(notify_status("%s", "x\nREADY=1\nMAINPID=1"), 1);
	m = next_msg(fd);
	CHECK(strcmp(m, "STATUS=x?READY=1?MAINPID=1") == 0, "'%s'", m);
	CHECK(strchr(m, '\n') == NULL, "one line");
	CHECK_EQ(notify_status("%0300d", 7), 1);
	m = next_msg(fd);
	CHECK_EQ(strlen(m), 7 + 255);
	CHECK(strcmp(next_msg(fd), "") == 0, "nothing more");
}

static void sockets(void)
{
	char path[64], abs[64], longname[200];
	int fd;

	snprintf(path, sizeof(path), "/tmp/pktmap-notify-%d", (int)getpid());
	unlink(path);
	fd = bind_at(path);
	CHECK(fd >= 0, "bind %s: %s", path, strerror(errno));
	setenv("NOTIFY_SOCKET", path, 1);
	if (fd >= 0)
		messages(fd);
	close(fd);
	unlink(path);
	/* nobody bound there any more */
	CHECK(notify_ready() < 0, "sent to an unbound path");

	snprintf(abs, sizeof(abs), "@pktmap-notify-%d", (int)getpid());
	fd = bind_at(abs);
	CHECK(fd >= 0, "bind %s: %s", abs, strerror(errno));
	setenv("NOTIFY_SOCKET", abs, 1);
	if (fd >= 0)
		messages(fd);
	close(fd);

	/* unset or empty: nothing to do */
	unsetenv("NOTIFY_SOCKET");
	CHECK_EQ(notify_ready(), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CHECK_EQ(notify_ready(), 0);
	/* not a socket address */
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	CHECK_EQ(notify_ready(), -EINVAL);
	setenv("NOTIFY_SOCKET", "@", 1);
	CHECK_EQ(notify_ready(), -EINVAL);
	setenv("NOTIFY_SOCKET", "/", 1);
	CHECK_EQ(notify_ready(), -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	longname[0] = '/';
	setenv("NOTIFY_SOCKET", longname, 1);
	CHECK_EQ(notify_ready(), -EINVAL);
	longname[0] = '@';
	setenv("NOTIFY_SOCKET", longname, 1);
	CHECK_EQ(notify_ready(), -EINVAL);
	/* the longest abstract name that fits: 107 bytes after the NUL */
	longname[108] = 0;
	setenv("NOTIFY_SOCKET", longname, 1);
	fd = bind_at(longname);
	CHECK(fd >= 0, "bind long abstract");
	CHECK_EQ(notify_ready(), 1);
	if (fd >= 0)
		CHECK(strcmp(next_msg(fd), "READY=1") == 0, "long abstract");
	close(fd);
	/* a path of 107 bytes fits with its NUL, 108 does not */
	longname[0] = '/';
	setenv("NOTIFY_SOCKET", longname, 1);
	CHECK_EQ(notify_ready(), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

/* listen_fds() with LISTEN_PID (SELF: this process) and LISTEN_FDS. */
static void activation(void)
{
	static const struct {
		const char *pid, *fds; /* NULL: unset; "SELF": getpid() */
		int want;
	} cases[] = {
		{NULL, NULL, 0},
		{"SELF", NULL, 0},
		{NULL, "1", 0},
		{"SELF", "0", 0},
		{"SELF", "1", 1},
		{"SELF", "2", 2},
		{"1", "2", 0},           /* another process's */
		{"SELF", "3", -EBADF},   /* fd 5 is not open */
		{"SELF", "65", -EINVAL}, /* over NOTIFY_LISTEN_FDS_MAX */
		{"SELF", "-1", -EINVAL},
		{"SELF", "", -EINVAL},
		{"SELF", "1x", -EINVAL},
		{"SELF", " 1", -EINVAL},
		{"SELF", "99999999999999999999", -EINVAL},
		{"x", "1", -EINVAL},
		{"", "1", -EINVAL},
		{"-5", "1", -EINVAL},
		{"99999999999", "1", -EINVAL},
	};
	char self[24];
	int p[2];

	snprintf(self, sizeof(self), "%d", (int)getpid());
	if (pipe(p) < 0 || dup2(p[0], 3) < 0 || dup2(p[1], 4) < 0) {
		CHECK(0, "pipe onto 3 and 4: %s", strerror(errno));
		return;
	}
	close(5);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const char *pid = cases[k].pid;

		if (pid && strcmp(pid, "SELF") == 0)
			pid = self;
		pid ? setenv("LISTEN_PID", pid, 1) : unsetenv("LISTEN_PID");
		cases[k].fds ? setenv("LISTEN_FDS", cases[k].fds, 1)
			     : unsetenv("LISTEN_FDS");
		setenv("LISTEN_FDNAMES", "broker", 1);
		fcntl(3, F_SETFD, 0);
		fcntl(4, F_SETFD, 0);
		CHECK(listen_fds() == cases[k].want, "case %zu: %s %s",
		      k, cases[k].pid ? cases[k].pid : "-",
		      cases[k].fds ? cases[k].fds : "-");
		CHECK(!getenv("LISTEN_PID") && !getenv("LISTEN_FDS") &&
		      !getenv("LISTEN_FDNAMES"), "case %zu: environment left", k);
		if (cases[k].want > 0)
			CHECK((fcntl(3, F_GETFD) & FD_CLOEXEC) &&
			      (cases[k].want < 2 ||
			       (fcntl(4, F_GETFD) & FD_CLOEXEC)),
			      "case %zu: not close-on-exec", k);
	}
	close(3);
	close(4);
	if (p[0] > 4)
		close(p[0]);
	if (p[1] > 4)
		close(p[1]);
}

int main(void)
{
	activation();
	sockets();
	return t_done("notify");
}
