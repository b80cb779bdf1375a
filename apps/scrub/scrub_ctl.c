/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap scrub's control socket and reloads. The socket is a unix stream
 * socket created mode 0600 (its owner, and root, may talk to it). One
 * request a connection: one line of at most 255 bytes, read with a 1 s
 * time limit, checked whole, answered, and the connection closed:
 *
 *   reload            read the rules file again ("ok ..." or "error FILE:LINE: ...")
 *   stats             counters by reason and by rule
 *   ban ADDR SECS     drop ADDR's frames for SECS seconds
 *   unban ADDR        lift manual and automatic bans of ADDR
 *   tick SECS         --clock manual only: move the clock forward
 *
 * Writers of the rule set and the ban list (this thread, the main
 * thread's SIGHUP reload) take a->lock; the workers take nothing.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "fwd.h"
#include "run.h"
#include "scrub_app.h"

#define REQ_MAX 256

int scrub_app_reload(struct scrub_app *a)
{
	struct scrub_rules *r;
	char err[512];
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = scrub_rules_load(a->o.rules, &r, err, sizeof(err));
	/* The kernel first (it says whether it judges the limits: then
	 * user space does not), then user space. */
	int krc = rc ? 0 : scrub_kern_load(a, r);

	if (!rc)
		rc = scrub_ctx_swap_rules(a->ctx, r);
	if (!rc && krc) {
		/* user space has the new rules, limits included; the kernel
		 * keeps dropping by the old lists (never open): say so */
		snprintf(err, sizeof(err), "%s: loaded, but the kernel's lists "
			 "stay the old ones: %s", a->o.rules, strerror(-krc));
		rc = -EIO;
	}
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, sizeof(err), "%s: out of memory", a->o.rules);
		snprintf(a->last_error, sizeof(a->last_error), "%s", err);
		a->reload_errors++;
	} else {
		a->reloads++;
	}
	pthread_mutex_unlock(&a->lock);
	return rc ? -1 : 0;
}

/* "ban ADDR SECS" / "unban ADDR" */
static int ban(struct scrub_app *a, char **w, int n, char *out, size_t len)
{
	bool on = !strcmp(w[0], "ban");
	uint8_t addr[16];
	double secs = 0;
	char err[128];
	int rc;

	if (n != (on ? 3 : 2)) {
		snprintf(out, len, "error %s", on ? "ban ADDR SECS" : "unban ADDR");
		return -1;
	}
	if (scrub_parse_addr(w[1], addr)) {
		snprintf(out, len, "error '%.60s': not an IPv4 or IPv6 address", w[1]);
		return -1;
	}
	if (on && (cli_parse_seconds(w[2], 86400.0 * 365, &secs, err,
				     sizeof(err)) || secs <= 0)) {
		snprintf(out, len, "error '%.60s': seconds, 0 < SECS <= 1 year", w[2]);
		return -1;
	}
	uint64_t now = scrub_app_now(a);

	pthread_mutex_lock(&a->lock);
	rc = scrub_ctx_ban(a->ctx, addr, on, now + (uint64_t)(secs * 1e9), now);
	pthread_mutex_unlock(&a->lock);
	if (!rc)
		scrub_kern_ban(a, addr, on, now + (uint64_t)(secs * 1e9));
	if (rc) {
		snprintf(out, len, "error out of memory");
		return -1;
	}
	snprintf(out, len, on ? "ok banned %s for %g s" : "ok unbanned %s", w[1],
		 secs);
	return 0;
}

static int tick(struct scrub_app *a, char **w, int n, char *out, size_t len)
{
	double secs;
	char err[128];

	if (!a->o.manual_clock) {
		snprintf(out, len, "error tick: only with --clock manual");
		return -1;
	}
	if (n != 2 || cli_parse_seconds(w[1], 86400.0 * 365, &secs, err,
					sizeof(err))) {
		snprintf(out, len, "error tick SECS");
		return -1;
	}
	uint64_t now = atomic_fetch_add_explicit(&a->manual_ns, (uint64_t)(secs * 1e9),
						 memory_order_relaxed) +
		       (uint64_t)(secs * 1e9);

	snprintf(out, len, "ok now %.9f", (double)now / 1e9);
	return 0;
}

int scrub_ctl_answer(struct scrub_app *a, const char *req, char *out,
		     size_t outlen)
{
	char line[REQ_MAX], *w[4], *save = NULL;
	int n = 0;

	snprintf(line, sizeof(line), "%s", req);
	for (char *t = strtok_r(line, " \t\r\n", &save); t;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == 4) {
			snprintf(out, outlen, "error too many words");
			return -1;
		}
		w[n++] = t;
	}
	if (n == 0) {
		snprintf(out, outlen, "error an empty request");
		return -1;
	}
	if (!strcmp(w[0], "reload") && n == 1) {
		if (scrub_app_reload(a)) {
			snprintf(out, outlen, "error %s", a->last_error);
			return -1;
		}
		snprintf(out, outlen, "ok reloaded %s", a->o.rules);
		return 0;
	}
	if (!strcmp(w[0], "ban") || !strcmp(w[0], "unban"))
		return ban(a, w, n, out, outlen);
	if (!strcmp(w[0], "tick"))
		return tick(a, w, n, out, outlen);
	cli_one_line(w[0]);
	snprintf(out, outlen, "error '%.40s': not a request (reload, stats, ban "
		 "ADDR SECS, unban ADDR, tick SECS)", w[0]);
	return -1;
}

/* Read one request line: 0 with it in buf, or -1 (answered in out). */
static int read_req(int fd, char *buf, char *out, size_t outlen)
{
	size_t n = 0;

	for (;;) {
		ssize_t r = recv(fd, buf + n, REQ_MAX - n, 0);

		if (r <= 0) {
			snprintf(out, outlen, "error %s", r == 0 ? "no request line" :
				 "no request within 1 s");
			return -1;
		}
		if (memchr(buf + n, 0, (size_t)r)) {
			snprintf(out, outlen, "error a NUL byte in the request");
			return -1;
		}
		n += (size_t)r;
		char *nl = memchr(buf, '\n', n);

		if (nl) {
			*nl = 0;
			return 0;
		}
		if (n == REQ_MAX) {
			snprintf(out, outlen, "error a request is one line of at "
				 "most %d bytes", REQ_MAX - 1);
			return -1;
		}
	}
}

static void send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t w = send(fd, s, len, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		s += w;
		len -= (size_t)w;
	}
}

static void serve(struct scrub_app *a, int fd)
{
	struct timeval tv = {1, 0};
	char buf[REQ_MAX + 1], out[1024];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (read_req(fd, buf, out, sizeof(out)) == 0) {
		char *first = buf + strspn(buf, " \t");

		if (!strncmp(first, "stats", 5) &&
		    first[5 + strspn(first + 5, " \t\r")] == 0) {
			char *text = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&text, &len);

			if (f) {
				fputs("ok\n", f);
				scrub_report_stats(a, f);
				fclose(f);
				send_all(fd, text, len);
				free(text);
				return;
			}
			snprintf(out, sizeof(out), "error out of memory");
		} else {
			scrub_ctl_answer(a, buf, out, sizeof(out));
		}
	}
	size_t l = strlen(out);

	out[l++] = '\n';
	send_all(fd, out, l);
}

static void *ctl_main(void *arg)
{
	struct scrub_app *a = arg;

	while (!atomic_load_explicit(&a->ctl_stop, memory_order_relaxed)) {
		struct pollfd p = {.fd = a->ctl_fd, .events = POLLIN};

		if (poll(&p, 1, FWD_POLL_MS) <= 0)
			continue;
		int fd = accept4(a->ctl_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			continue;
		serve(a, fd);
		close(fd);
	}
	return NULL;
}

/* A socket file at path that nobody answers is a dead run's: remove it.
 * Returns 0 when path is free now, -1 when it is in use or not ours. */
static int clear_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0 || errno != ECONNREFUSED)
		return -1;
	return unlink(sa->sun_path);
}

int scrub_ctl_start(struct scrub_app *a)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = a->o.control;
	mode_t old;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		cli_err("scrub: --control: %s: path too long", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (clear_stale(&sa)) {
		cli_err("scrub: --control: %s: exists and is not a dead "
			"scrub's socket (in use, or not a socket)", path);
		return -1;
	}
	a->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (a->ctl_fd < 0) {
		cli_err("scrub: --control: socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0177);
	rc = bind(a->ctl_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || listen(a->ctl_fd, 16) < 0) {
		cli_err("scrub: --control: %s: %s", path, strerror(errno));
		close(a->ctl_fd);
		a->ctl_fd = -1;
		return -1;
	}
	rc = run_thread(&a->ctl_tid, -1, ctl_main, a);
	if (rc) {
		cli_err("scrub: --control: thread: %s", strerror(rc));
		return -1;
	}
	a->ctl_started = true;
	return 0;
}

void scrub_ctl_stop(struct scrub_app *a)
{
	if (a->ctl_started) {
		atomic_store_explicit(&a->ctl_stop, 1, memory_order_relaxed);
		pthread_join(a->ctl_tid, NULL);
		a->ctl_started = false;
	}
	if (a->ctl_fd >= 0) {
		close(a->ctl_fd);
		unlink(a->o.control);
		a->ctl_fd = -1;
	}
}
