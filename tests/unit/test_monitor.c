// SPDX-License-Identifier: BSD-2-Clause
/* Monitors (src/monitor.c): "PORT/r", "/t", "/rt" see a copy of every
 * frame the port receives / transmits, in order, bytes intact, also from
 * another process; a full monitor queue drops (counted), never blocks the
 * port; "/z", a port nobody has open and a second monitor are refused
 * with one line; a dead monitor's registration is taken over. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "name.h"
#include "port.h"
#include "region.h"
#include "t.h"

static char pname[64];

static struct pktmap_port *open_name(const char *suffix, int *ret, char *err,
				     size_t errlen)
{
	char name[160];
	snprintf(name, sizeof(name), "pipe:%s%s", pname, suffix);
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = errlen };
	struct pktmap_port *p = NULL;
	err[0] = 0;
	*ret = pktmap_open(&p, name, &o);
	return p;
}

static struct pktmap_port *must_open(const char *suffix)
{
	char err[300];
	int r;
	struct pktmap_port *p = open_name(suffix, &r, err, sizeof(err));
	CHECK(r == 0, "open %s%s: %s", pname, suffix, err);
	return p;
}

/* Frame `seq` of stream `tag`: seq, tag, then a fill; 60..1459 bytes. */
static uint32_t frame_len(uint32_t seq)
{
	return 60 + (seq * 7) % 1400;
}

/* Send n frames of stream tag from `from` to `to`, draining `to`. */
static void send_frames(struct pktmap_port *from, struct pktmap_port *to,
			char tag, uint32_t n)
{
	struct netmap_ring *tx = NETMAP_TXRING(pktmap_nifp(from), 0);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(to), 0);
	uint32_t seq = 0, got = 0;
	for (int spins = 0; got < n && spins < 1000000; spins++) {
		for (int b = 0; seq < n && b < 32 && !nm_ring_empty(tx); b++) {
			struct netmap_slot *s = &tx->slot[tx->cur];
			char *buf = NETMAP_BUF(tx, s->buf_idx);
			memset(buf, (int)(seq & 0xff), frame_len(seq));
			memcpy(buf, &seq, 4);
			buf[4] = tag;
			s->len = (uint16_t)frame_len(seq);
			tx->head = tx->cur = nm_ring_next(tx, tx->cur);
			seq++;
		}
		pktmap_txsync(from);
		/* Drain now and then only: the pipe fills, and txsync leaves
		 * slots pending (each must reach the monitor once). */
		if (spins % 64 != 63 && seq < n)
			continue;
		pktmap_rxsync(to);
		for (; !nm_ring_empty(rx); got++)
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
	}
	CHECK_EQ(got, n);
}

/* Read the monitor: frames of stream tag 'T' (seq 0..nt-1) and then 'R'
 * (0..nr-1) expected, bytes intact. Returns the frames seen. */
static uint32_t check_monitor(struct pktmap_port *m, uint32_t nt, uint32_t nr,
			      int tries)
{
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(m), 0);
	uint32_t seen = 0, want = nt + nr;
	for (int spins = 0; seen < want && spins < tries; spins++) {
		pktmap_poll(m, POLLIN, 100);
		for (; !nm_ring_empty(rx); seen++) {
			struct netmap_slot *s = &rx->slot[rx->head];
			const unsigned char *b =
				(const unsigned char *)NETMAP_BUF(rx, s->buf_idx);
			char tag = seen < nt ? 'T' : 'R';
			uint32_t seq, want_seq = seen < nt ? seen : seen - nt;
			memcpy(&seq, b, 4);
			CHECK(seq == want_seq && b[4] == tag,
			      "monitor frame %u: %c%u, expected %c%u", seen, b[4],
			      seq, tag, want_seq);
			CHECK_EQ(s->len, frame_len(want_seq));
			CHECK(b[s->len - 1] == (want_seq & 0xff), "last byte of %u",
			      seen);
			rx->head = rx->cur = nm_ring_next(rx, rx->head);
		}
	}
	return seen;
}

/* Files of process pid's monitor queues in the user's directory. */
static int queue_files_of(pid_t pid)
{
	char dir[128], err[200], key[48];
	if (pm_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0)
		return -1;
	snprintf(key, sizeof(key), "pmmon.%d.", (int)pid);
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)) != NULL)
		n += strstr(e->d_name, key) != NULL;
	if (d)
		closedir(d);
	return n;
}

static int queue_files(void)
{
	return queue_files_of(getpid());
}

/* One monitor of A = pipe{0 with flags: A sends 300, receives 1500
 * (past the end of its rings: slots are reused). */
static void test_mode(const char *flags, uint32_t nt, uint32_t nr)
{
	snprintf(pname, sizeof(pname), "mon%d%s", (int)getpid(), flags);
	struct pktmap_port *a = must_open("{0"), *b = must_open("}0");
	char suffix[64];
	snprintf(suffix, sizeof(suffix), "{0/%s@conf:slots=4096", flags);
	struct pktmap_port *m = must_open(suffix);
	if (a && b && m) {
		send_frames(a, b, 'T', 300);
		send_frames(b, a, 'R', 1500);
		CHECK_EQ(check_monitor(m, nt, nr, 200), nt + nr);
		CHECK_EQ(a->stats->mon_drops, 0);
	}
	pktmap_close(m);
	/* Closed: the port's next sync closes its end of the queue (the
	 * queue's files go) and it is no longer watched (one load a sync). */
	CHECK(a && a->stats->mon != 0 && queue_files() > 0, "queue open");
	if (a)
		pktmap_txsync(a);
	CHECK_EQ(a ? a->stats->mon : 1, 0);
	CHECK(queue_files() == 0, "the queue's files are gone");
	pktmap_close(a);
	pktmap_close(b);
}

/* The monitor is another process; it opens before A sends. */
static void test_other_process(void)
{
	snprintf(pname, sizeof(pname), "monp%d", (int)getpid());
	struct pktmap_port *a = must_open("{0"), *b = must_open("}0");
	int ready[2];
	if (!a || !b || pipe(ready) != 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		t_failed = 0; /* the parent's failures are not the child's */
		struct pktmap_port *m = must_open("{0/t@conf:slots=4096");
		char c = m ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1 || !m)
			_exit(2);
		uint32_t seen = check_monitor(m, 3000, 0, 300);
		pktmap_close(m);
		_exit(seen == 3000 && t_failed == 0 ? 0 : 1);
	}
	char c = 0;
	CHECK(read(ready[0], &c, 1) == 1 && c == 'y', "monitor process ready");
	send_frames(a, b, 'T', 3000);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0,
	      "the monitor process saw 3000 frames in order (status %d)", st);
	close(ready[0]);
	close(ready[1]);
	pktmap_close(a);
	pktmap_close(b);
}

/* A queue of 8 slots never read: the port goes on, the rest is counted. */
static void test_drops(void)
{
	snprintf(pname, sizeof(pname), "mond%d", (int)getpid());
	struct pktmap_port *a = must_open("{0"), *b = must_open("}0");
	struct pktmap_port *m = must_open("{0/t@conf:slots=8");
	if (a && b && m) {
		send_frames(a, b, 'T', 100);
		uint32_t seen = check_monitor(m, 100, 0, 3);
		CHECK(seen > 0 && seen < 100, "%u frames in a queue of 8", seen);
		CHECK_EQ(seen + a->stats->mon_drops, 100);
	}
	pktmap_close(m);
	pktmap_close(a);
	pktmap_close(b);
}

static void expect_refused(const char *suffix, int err, const char *words)
{
	char msg[300];
	int r;
	struct pktmap_port *p = open_name(suffix, &r, msg, sizeof(msg));
	CHECK_EQ(r, -err);
	CHECK(strstr(msg, words) && !strchr(msg, '\n'), "%s: '%s'", suffix, msg);
	pktmap_close(p);
}

static void test_refused(void)
{
	snprintf(pname, sizeof(pname), "monr%d", (int)getpid());
	expect_refused("{0/r", ENOENT, "no port 'pipe:monr");
	struct pktmap_port *a = must_open("{0");
	expect_refused("{0/z", EOPNOTSUPP, "zero-copy monitors (/z)");
	struct pktmap_port *m = must_open("{0/rt");
	expect_refused("{0/r", EBUSY, "already monitored by process");
	pktmap_close(m);
	/* A monitor that died without closing left its word: the next
	 * one takes over (the dead one: a child that has exited). */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid, "child");
	if (a)
		a->stats->mon = (uint64_t)pid << 32 | 1u << 8 | PM_MON_TX;
	m = must_open("{0/r");
	CHECK(a && m && a->stats->mon >> 32 == (uint64_t)getpid(),
	      "taken over");
	pktmap_close(m);
	pktmap_close(a);
}

/* A monitor killed without closing: the port fills its queue, finds the
 * monitor's process gone and stops copying by itself; its end of the
 * queue goes at close. */
static void test_dead_monitor(void)
{
	snprintf(pname, sizeof(pname), "monk%d", (int)getpid());
	struct pktmap_port *a = must_open("{0"), *b = must_open("}0");
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid, "child");
	if (!a || !b)
		return;
	a->stats->mon = (uint64_t)pid << 32 | 1u << 8 | PM_MON_TX;
	send_frames(a, b, 'T', 5000);
	CHECK_EQ(a->stats->mon, 0);
	CHECK(a->stats->mon_drops > 0, "dropped %llu",
	      (unsigned long long)a->stats->mon_drops);
	CHECK(queue_files_of(pid) > 0, "the dead monitor's queue");
	pktmap_close(a);
	pktmap_close(b);
	CHECK_EQ(queue_files_of(pid), 0);
}

/* Another process of the user writes words naming queues whose
 * region lock it holds (it made them, and keeps their locks): the port
 * never waits on them. All of A's frames reach B while the holder still
 * holds every lock (it lets go only when told, after the checks), and
 * each frame the monitor missed is counted, exactly. */
static void test_locked_queue(void)
{
	snprintf(pname, sizeof(pname), "monl%d", (int)getpid());
	struct pktmap_port *a = must_open("{0"), *b = must_open("}0");
	int ready[2], done[2];
	if (!a || !b || pipe(ready) != 0 || pipe(done) != 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct pktmap_port *q[3] = { 0 };
		char c = 'y';
		for (unsigned g = 0; g < 3; g++) {
			char name[96];
			snprintf(name, sizeof(name), "pipe:pmmon.%d.%u}0/R",
				 (int)getpid(), g + 1);
			if (pktmap_open(&q[g], name, NULL) != 0 ||
			    pm_region_lock(&q[g]->region) != 0)
				c = 'n';
		}
		if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(2);
		_exit(0); /* the locks go with the process */
	}
	char c = 0;
	CHECK(read(ready[0], &c, 1) == 1 && c == 'y', "the holder holds 3 locks");
	for (unsigned g = 0; g < 3; g++) {
		a->stats->mon = (uint64_t)pid << 32 | (uint64_t)(g + 1) << 8 |
				PM_MON_TX;
		send_frames(a, b, 'T', 100);
	}
	CHECK(waitpid(pid, NULL, WNOHANG) == 0, "the holder still holds them");
	CHECK_EQ(a->stats->mon_drops, 300);
	CHECK_EQ(a->stats->mon, (uint64_t)pid << 32 | 3u << 8 | PM_MON_TX);
	CHECK(write(done[1], "x", 1) == 1, "tell the holder");
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0, "holder status %d", st);
	close(ready[0]);
	close(ready[1]);
	close(done[0]);
	close(done[1]);
	pktmap_close(a);
	pktmap_close(b);
}

int main(void)
{
	test_mode("rt", 300, 1500);
	test_mode("t", 300, 0);
	test_mode("r", 0, 1500);
	test_other_process();
	test_drops();
	test_refused();
	test_dead_monitor();
	test_locked_queue();
	return t_done("monitor");
}
