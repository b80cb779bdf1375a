/* SPDX-License-Identifier: BSD-2-Clause
 *
 * sd_notify(3) and sd_listen_fds(3) for the daemons (notify.h): the
 * protocol is a datagram of "KEY=VALUE\n" lines on a unix socket and two
 * environment variables, so it needs no library.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "notify.h"

/* Fill *sa from NOTIFY_SOCKET's value s; returns the address length, or
 * -EINVAL. An abstract name ('@') starts with a NUL and is not
 * terminated; a path is. */
static int notify_addr(const char *s, struct sockaddr_un *sa)
{
	size_t n = strlen(s);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (n < 2 || (s[0] != '/' && s[0] != '@'))
		return -EINVAL;
	if (s[0] == '/') {
		if (n >= sizeof(sa->sun_path))
			return -EINVAL;
		memcpy(sa->sun_path, s, n + 1);
		return (int)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	if (n > sizeof(sa->sun_path))
		return -EINVAL;
	memcpy(sa->sun_path + 1, s + 1, n - 1);
	return (int)(offsetof(struct sockaddr_un, sun_path) + n);
}

int notify_send(const char *msg)
{
	const char *s = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	int len, fd, err = 0;

	if (!s || !*s)
		return 0;
	len = notify_addr(s, &sa);
	if (len < 0)
		return len;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT,
		   (struct sockaddr *)&sa, (socklen_t)len) < 0)
		err = -errno;
	close(fd);
	return err < 0 ? err : 1;
}

int notify_ready(void)
{
	return notify_send("READY=1");
}

int notify_stopping(void)
{
	return notify_send("STOPPING=1");
}

int notify_reloading(void)
{
	struct timespec ts;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL +
			 (unsigned long long)ts.tv_nsec / 1000);
	return notify_send(msg);
}

int notify_status(const char *fmt, ...)
{
	char msg[7 + 256] = "STATUS=";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg + 7, sizeof(msg) - 7, fmt, ap);
	va_end(ap);
	cli_one_line(msg + 7);
	return notify_send(msg);
}

/* A decimal number in [0, max] with nothing after it, or -1. */
static long env_number(const char *s, long max)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	return v;
}

int listen_fds(void)
{
	const char *pid_s = getenv("LISTEN_PID");
	const char *fds_s = getenv("LISTEN_FDS");
	long pid, n;
	int ret = 0;

	if (!pid_s || !fds_s) {
		ret = 0;
		goto out;
	}
	pid = env_number(pid_s, 0x7fffffffL);
	n = env_number(fds_s, NOTIFY_LISTEN_FDS_MAX);
	if (pid < 0 || n < 0) {
		ret = -EINVAL;
		goto out;
	}
	if (pid != (long)getpid())
		goto out;
	for (long i = 0; i < n; i++) {
		int fd = NOTIFY_LISTEN_FDS_START + (int)i;
		int fl = fcntl(fd, F_GETFD);

		if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0) {
			ret = -EBADF;
			goto out;
		}
	}
	ret = (int)n;
out:
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return ret;
}
