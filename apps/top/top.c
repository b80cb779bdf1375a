/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap top: every port open on the host, live. The command line, the
 * terminal (raw keys, redraw in place without clearing: no flicker over
 * ssh) and the once-only modes for scripts.
 */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "top.h"
#include "util.h"

void usage_top(void)
{
	printf("usage: pktmap top [-d SECONDS] [--once] [--json] [--sort KEY]\n"
	       "                  [--filter TEXT] [--rings] [--no-color]\n"
	       "\n"
	       "Every pktmap port open on this host, with rates: ports of\n"
	       "gen, recv, switches, routers, bridges, capture, and of\n"
	       "programs on pktmap's libpcap and netmap libraries. Root sees\n"
	       "every user's ports, others their own. Columns: PID, PROGRAM,\n"
	       "PORT, MODE (zerocopy, copy, emulated), packets per second\n"
	       "received and sent, bits per second both ways, drops per\n"
	       "second (red while dropping, yellow once it has dropped).\n"
	       "\n"
	       "  -d SECONDS       time between updates (default 1)\n"
	       "  --once           print one table and exit: the rates over\n"
	       "                   -d seconds (-d 0: the totals, at once)\n"
	       "  --json           with --once: one JSON document (counters,\n"
	       "                   drops by reason, rings, rates)\n"
	       "  --sort KEY       rate (default), drops, name, pid\n"
	       "  --filter TEXT    only ports whose name, program or command\n"
	       "                   line holds TEXT, or whose pid is TEXT\n"
	       "  --rings          a line per ring under each port\n"
	       "  --no-color       no colour (also when NO_COLOR is set or\n"
	       "                   the output is not a terminal)\n"
	       "\n"
	       "Keys: q quit, r d n p sort by rate, drops, name, pid, e rings.\n"
	       "docs/top.md has more.\n");
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int parse_sort(const char *s, enum top_sort *out)
{
	static const char *names[] = { "rate", "drops", "name", "pid" };
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum top_sort)i;
			return 0;
		}
	cli_err("top: --sort: '%s' is not rate, drops, name or pid", s);
	return -1;
}

/* Options into o; returns -1 (usage error, said), 1 (help shown) or 0. */
static int parse(int argc, char **argv, struct top_opts *o, bool *once,
		 bool *json)
{
	bool no_color = false;
	for (int a = 1; a < argc; a++) {
		const char *s = argv[a];
		const char *v = a + 1 < argc ? argv[a + 1] : NULL;
		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			usage_top();
			return 1;
		} else if (!strcmp(s, "--once")) {
			*once = true;
		} else if (!strcmp(s, "--json")) {
			*json = true;
		} else if (!strcmp(s, "--rings")) {
			o->rings = true;
		} else if (!strcmp(s, "--no-color")) {
			no_color = true;
		} else if (!v && (!strcmp(s, "-d") || !strcmp(s, "--sort") ||
				  !strcmp(s, "--filter"))) {
			cli_err("top: %s needs a value", s);
			return -1;
		} else if (!strcmp(s, "-d")) {
			if (cli_opt_seconds("top: -d", argv[++a], 3600, &o->interval))
				return -1;
		} else if (!strcmp(s, "--sort")) {
			if (parse_sort(argv[++a], &o->sort))
				return -1;
		} else if (!strcmp(s, "--filter")) {
			o->filter = argv[++a];
		} else {
			cli_err("top: unexpected argument '%s' (see pktmap top --help)", s);
			return -1;
		}
	}
	if (*json && !*once) {
		cli_err("top: --json goes with --once");
		return -1;
	}
	if (!*once && o->interval < 0.1) {
		cli_err("top: -d: at least 0.1 s between updates");
		return -1;
	}
	o->color = !no_color && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	return 0;
}

static double now_s(void)
{
	return (double)pm_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

/* --once: scan, wait, scan again (unless -d 0), print. */
static int once(const struct top_opts *o, bool json)
{
	struct hp_list a = { 0 }, b = { 0 };
	double dt = 0, t0 = now_s();
	if (hp_scan(&a) != 0)
		goto oom;
	const struct hp_list *cur = &a, *prev = NULL;
	if (o->interval > 0) {
		struct timespec ts = { (time_t)o->interval,
				       (long)((o->interval - (time_t)o->interval) * 1e9) };
		nanosleep(&ts, NULL);
		if (hp_scan(&b) != 0)
			goto oom;
		dt = now_s() - t0;
		cur = &b, prev = &a;
	}
	struct top_row *rows;
	struct sp_list scrub = { 0 };
	int n = top_rows(o, cur, prev, dt, &rows);
	if (n < 0 || sp_scan(&scrub) != 0) {
		if (n >= 0)
			free(rows);
		goto oom;
	}
	if (json) {
		top_json(stdout, rows, n, dt, cur->skipped, &scrub);
	} else {
		top_text(stdout, o, rows, n, dt, 0, false);
		top_scrub_text(stdout, &scrub, SP_MAX_FILES, false);
	}
	sp_free(&scrub);
	if (cur->skipped && !json)
		cli_err("top: %u counters files not read: over the bounds of "
			"one scan (docs/top.md)", cur->skipped);
	free(rows);
	hp_free(&a);
	hp_free(&b);
	return fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
oom:
	hp_free(&a);
	hp_free(&b);
	cli_err("top: out of memory");
	return EXIT_RUNTIME;
}

/* The terminal's height (24 when it does not say). */
static unsigned term_rows(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row)
		return ws.ws_row;
	return 24;
}

/* Draw one frame: home the cursor, write every line over the last frame
 * (each ends by clearing the rest of its line), clear below. One write. */
static void draw(const struct top_opts *o, const struct hp_list *cur,
		 const struct hp_list *prev, double dt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return;
	unsigned h = term_rows();
	struct top_row *rows;
	int n = top_rows(o, cur, prev, dt, &rows);
	struct sp_list scrub = { 0 };
	/* the scrub lines take the last rows, at most 4 */
	unsigned ns = sp_scan(&scrub) == 0 ? (scrub.n < 4 ? scrub.n : 4) : 0;
	fputs("\x1b[H", f);
	if (n >= 0)
		top_text(f, o, rows, n, dt, h > 1 + ns ? h - 1 - ns : 1, true);
	top_scrub_text(f, &scrub, ns, true);
	sp_free(&scrub);
	fputs("\x1b[J", f);
	fclose(f);
	free(rows);
	for (size_t off = 0; off < len;) {
		ssize_t r = write(STDOUT_FILENO, buf + off, len - off);
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	free(buf);
}

/* A key pressed: change the view. Returns false on q. */
static bool key(struct top_opts *o, char c)
{
	switch (c) {
	case 'q': case 'Q': case 3: return false;
	case 'r': o->sort = TOP_SORT_RATE; break;
	case 'd': o->sort = TOP_SORT_DROPS; break;
	case 'n': o->sort = TOP_SORT_NAME; break;
	case 'p': o->sort = TOP_SORT_PID; break;
	case 'e': o->rings = !o->rings; break;
	default: break;
	}
	return true;
}

/* Wait until `until` (monotonic seconds) for a key. Returns 0 at the
 * time, 1 when a key changed the view, -1 on quit or a signal. */
static int wait_key(struct top_opts *o, bool tty, double until)
{
	while (!stop) {
		int wait = (int)((until - now_s()) * 1000);
		if (wait <= 0)
			return 0;
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		char c;
		if (tty && poll(&pfd, 1, wait) == 1 && read(STDIN_FILENO, &c, 1) == 1)
			return key(o, c) ? 1 : -1;
		if (!tty)
			poll(NULL, 0, wait);
	}
	return -1;
}

static int live(struct top_opts *o)
{
	struct termios saved, raw;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	if (tty) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fputs("\x1b[?25l\x1b[H\x1b[2J", stdout); /* hide the cursor, clear once */
	fflush(stdout);
	struct hp_list cur = { 0 }, prev = { 0 };
	double t_cur = now_s(), next = t_cur + o->interval, dt = 0;
	int ret = hp_scan(&cur) == 0 ? 0 : EXIT_RUNTIME;
	while (ret == 0) {
		draw(o, &cur, dt > 0 ? &prev : NULL, dt);
		int k = wait_key(o, tty, next);
		if (k < 0)
			break;
		if (k > 0)
			continue; /* the same scans, a new view */
		hp_free(&prev);
		prev = cur;
		double t = now_s();
		ret = hp_scan(&cur) == 0 ? 0 : EXIT_RUNTIME;
		dt = t - t_cur;
		t_cur = t;
		next += o->interval;
		if (next < t)
			next = t + o->interval; /* we were stopped: do not catch up */
	}
	hp_free(&cur);
	hp_free(&prev);
	fputs("\x1b[?25h\n", stdout);
	fflush(stdout);
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	if (ret)
		cli_err("top: out of memory");
	return ret;
}

int cmd_top(int argc, char **argv)
{
	struct top_opts o = { .interval = 1, .sort = TOP_SORT_RATE };
	bool is_once = false, json = false;
	int r = parse(argc, argv, &o, &is_once, &json);
	if (r)
		return r < 0 ? EXIT_USAGE : 0;
	if (is_once)
		return once(&o, json);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return live(&o);
}
