// SPDX-License-Identifier: BSD-2-Clause
/*
 * A joiner trusts nothing a peer can rewrite (issue 17). A peer of the
 * same uid puts a file-backed region (a valid-looking header, matching
 * size: what @conf:share= used to make) where the rendezvous of a private
 * pipe is, holds it, and truncates the file once a partner has joined.
 * The partner must not map that file: its open fails with one line and
 * leaves nothing; before the fix it followed the file's own format,
 * mapped it, and died of SIGBUS at the truncation.
 *
 * A region shared with a group on purpose (@conf:share=group:G) is a
 * sealed memfd too: a member of the group that truncates its file
 * (nobody in G, against root's pipe) costs the partners nothing.
 *
 * Root without capabilities (dumpcap) joins a pipe that root with all of
 * them opened: the kernel refuses it the holder's memfd in /proc, and the
 * holder's cleaner process serves it, to the holder's uid only; the
 * holder starts no thread for that, and nothing serves after its close.
 * The same for a holder that is not dumpable (nobody's, joined by nobody).
 *
 * Also: the per-user directory is the caller's, mode 0700.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hugepages.h"
#include "port.h"
#include "share.h"
#include "t.h"

static char pname[64], udir[64], upath[160];

/* Files of this test's pipe in the user directory, other than its
 * rendezvous. */
static int extra_files(void)
{
	DIR *d = opendir(udir);
	int n = 0;
	struct dirent *e;
	char base[80];
	snprintf(base, sizeof(base), "pipe.%s", pname);
	while (d && (e = readdir(d)) != NULL)
		if (strncmp(e->d_name, base, strlen(base)) == 0 &&
		    strcmp(e->d_name, base) != 0)
			n++;
	if (d)
		closedir(d);
	return n;
}

/* Files whose names start with BASE in the groups' directories
 * (/dev/shm/pktmap-gGID*, src/groupdir.c), and of the old layout
 * (/dev/shm/pktmap.BASE). */
static int shm_files(const char *base)
{
	char pre[120];
	snprintf(pre, sizeof(pre), "pktmap.%s", base);
	DIR *d = opendir("/dev/shm");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, pre, strlen(pre)) == 0) {
			fprintf(stderr, "left behind: /dev/shm/%s\n", e->d_name);
			n++;
		}
		if (strncmp(e->d_name, "pktmap-g", 8) != 0)
			continue;
		char gdir[300];
		snprintf(gdir, sizeof(gdir), "/dev/shm/%s", e->d_name);
		DIR *g = opendir(gdir);
		struct dirent *f;
		while (g && (f = readdir(g)) != NULL)
			if (strncmp(f->d_name, base, strlen(base)) == 0) {
				fprintf(stderr, "left behind: %s/%s\n", gdir,
					f->d_name);
				n++;
			}
		if (g)
			closedir(g);
	}
	if (d)
		closedir(d);
	return n;
}

/* The partner: join pipe NAME}0 with no share=. Exit 0 when the open is
 * refused with a clear line; if it is accepted, tell the parent, wait
 * for the truncation and touch the pool (SIGBUS if it mapped the file). */
static void partner(int to_parent, int from_parent)
{
	char name[128], err[400];
	struct pktmap_port *p;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	snprintf(name, sizeof(name), "pipe:%s}0", pname);
	if (pktmap_open(&p, name, &o) != 0) {
		fprintf(stderr, "partner refused: %s\n", err);
		_exit(strstr(err, "does not say where its memory is") ? 0 : 4);
	}
	char c = 'o';
	if (write(to_parent, &c, 1) != 1 || read(from_parent, &c, 1) != 1)
		_exit(5);
	struct netmap_ring *rx = NETMAP_RXRING(pktmap_nifp(p), 0);
	for (uint32_t i = 0; i < rx->num_slots; i++)
		NETMAP_BUF(rx, rx->slot[i].buf_idx)[0] = 1;
	pktmap_close(p);
	_exit(3); /* survived, but it followed the peer's file */
}

/* A file-backed region as a peer of the same uid would write it where
 * the rendezvous of a private pipe is: a valid-looking header
 * (PM_REGION_MAGIC, version 1, its size) in a file of that size, held
 * (read lock on byte 1) so that it counts as in use. */
static int plant_file_region(void)
{
	int fd = open(upath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "%s: %s", upath, strerror(errno));
	if (fd < 0)
		return -1;
	uint64_t hdr[4] = { 0x31524d544b50ull, 1, 16u << 20, 0 };
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
			    .l_start = 1, .l_len = 1 };
	CHECK(ftruncate(fd, 16 << 20) == 0 &&
	      pwrite(fd, hdr, sizeof(hdr), 0) == sizeof(hdr) &&
	      fcntl(fd, F_OFD_SETLK, &fl) == 0, "plant: %s", strerror(errno));
	return fd;
}

static void test_joiner_ignores_file_region(void)
{
	int peer = plant_file_region();
	if (peer < 0)
		return;
	int up[2], down[2];
	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		partner(up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	char c;
	if (read(up[0], &c, 1) == 1) { /* it joined: truncate under it */
		CHECK(truncate(upath, 0) == 0, "truncate");
		CHECK(write(down[1], &c, 1) == 1, "go");
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "partner: %s %d (3: it mapped the peer's file)",
	      WIFSIGNALED(st) ? "killed by signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	CHECK_EQ(extra_files(), 0); /* the failed open left nothing */
	close(up[0]);
	close(down[1]);
	close(peer);
	unlink(upath);
	CHECK_EQ(extra_files(), 0);
}

/* Become nobody, a member of group gid only. */
static void become_nobody(gid_t gid)
{
	if (setgroups(1, &gid) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0) {
		fprintf(stderr, "cannot become nobody: %s\n", strerror(errno));
		_exit(9);
	}
}

/* Fill up to n TX slots with frames carrying sequence numbers. */
static uint32_t send_seq(struct pktmap_port *p, uint32_t *seq, uint32_t n)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(p), 0);
	uint32_t sent = 0;
	while (sent < n && !nm_ring_empty(r)) {
		struct netmap_slot *s = &r->slot[r->cur];
		char *b = NETMAP_BUF(r, s->buf_idx);
		s->len = (uint16_t)(60 + *seq % 1400);
		memset(b, (int)(*seq & 0xff), s->len);
		memcpy(b, seq, sizeof(*seq));
		(*seq)++;
		sent++;
		r->head = r->cur = nm_ring_next(r, r->cur);
	}
	return sent;
}

/* Join name, say so on up, receive n frames and check each (sequence,
 * length, payload); with hold >= 0, say so on up again and keep the port
 * open until a byte (or EOF) on hold. Exit 0 when all arrived intact, 6
 * on a bad frame, 7 when they stopped coming, 8 when the open failed. */
static void join_and_receive(const char *name, uint32_t n, int up, int hold)
{
	char err[400];
	struct pktmap_port *p;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	if (pktmap_open(&p, name, &o) != 0) {
		fprintf(stderr, "joiner: %s\n", err);
		_exit(8);
	}
	char c = 'j';
	if (write(up, &c, 1) != 1)
		_exit(5);
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(p), 0);
	uint32_t expect = 0;
	while (expect < n) {
		if (pktmap_poll(p, POLLIN, 10000) <= 0)
			_exit(7);
		for (; !nm_ring_empty(r); r->head = r->cur = nm_ring_next(r, r->head)) {
			struct netmap_slot *s = &r->slot[r->head];
			const unsigned char *b =
				(const unsigned char *)NETMAP_BUF(r, s->buf_idx);
			uint32_t seq;
			memcpy(&seq, b, sizeof(seq));
			if (seq != expect || s->len != 60 + seq % 1400 ||
			    b[s->len - 1] != (seq & 0xff))
				_exit(6);
			expect++;
		}
	}
	if (hold >= 0 && (write(up, &c, 1) != 1 || read(hold, &c, 1) < 0))
		_exit(5);
	pktmap_close(p);
	_exit(0);
}

/* The joiner of the shared pipe, as nobody in group gid. */
static void shared_joiner(const char *name, gid_t gid, uint32_t n, int up)
{
	become_nobody(gid);
	join_and_receive(name, n, up, -1);
}

/* A member of the group truncates the shared file under the joiner. */
static int truncate_as_member(const char *path, gid_t gid)
{
	pid_t pid = fork();
	if (pid == 0) {
		become_nobody(gid);
		_exit(truncate(path, 0) == 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* The nonce of the serving socket of holder pid, from /proc/net/unix
 * (where anyone can read abstract names); 0 when there is none. */
static uint32_t serving_nonce(pid_t pid)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char line[512], key[64];
	unsigned nonce = 0;
	snprintf(key, sizeof(key), "@pktmap.share.%d.", (int)pid);
	while (f && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, key);
		if (at && sscanf(at + strlen(key), "%8x", &nonce) == 1)
			break;
	}
	if (f)
		fclose(f);
	return nonce;
}

/* Ask holder (pid, nonce) for its memfd as nobody in group gid alone:
 * 0 when a sealed memfd came, 1 when refused. */
static int fetch_as_nobody(pid_t holder, uint32_t nonce, gid_t gid)
{
	pid_t pid = fork();
	if (pid == 0) {
		become_nobody(gid);
		_exit(pm_share_fetch((int32_t)holder, nonce) >= 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* Send n sequenced frames on tx. Returns how many went. */
static uint32_t send_all(struct pktmap_port *tx, uint32_t n)
{
	uint32_t seq = 0;
	while (seq < n && pktmap_poll(tx, POLLOUT, 10000) > 0) {
		send_seq(tx, &seq, n - seq);
		pktmap_txsync(tx);
	}
	return seq;
}

/* Threads of this process. */
static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Root without capabilities, as dumpcap runs: wait for a byte on go,
 * then join pipe NAME}0, receive n frames and hold the port until the
 * next byte on go (join_and_receive). */
static void capless_joiner(const char *name, uint32_t n, int go, int up)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3
	};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	char c;
	if (syscall(SYS_capset, &h, d) != 0 || read(go, &c, 1) != 1)
		_exit(9);
	join_and_receive(name, n, up, go);
}

/* join_and_receive()'s exit codes. */
static const char joiner_codes[] =
	"joiner (6: a bad frame, 7: frames stopped, 8: no join)";

/* Wait for child pid; CHECK that it exited 0 (who: what it is and what
 * its codes mean). */
static void check_child(pid_t pid, const char *who)
{
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s %d", who,
	      WIFSIGNALED(st) ? "killed by signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* issue 17: a region shared with a group (root's, joined by nobody as a
 * member of the group) survives a member truncating its file: both
 * partners work on the sealed memfd, every frame arrives intact, and
 * nothing is left afterwards. Before, the memory was the file itself and
 * the truncation was SIGBUS for both. */
static void test_truncate_shared(void)
{
	if (geteuid() != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs root");
		printf("skip test_truncate_shared: needs root\n");
		return;
	}
	gid_t gid = (gid_t)(40000 + getpid() % 20000);
	const uint32_t n = 5000;
	char base[80], flat2[160], name[160], err[400];
	snprintf(base, sizeof(base), "pipe.%st", pname);
	snprintf(flat2, sizeof(flat2), "/dev/shm/pktmap-g%u/%s", (unsigned)gid,
		 base);
	snprintf(name, sizeof(name), "pipe:%st{0@conf:share=group:%u", pname,
		 (unsigned)gid);
	struct pktmap_port *tx;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	CHECK(pktmap_open(&tx, name, &o) == 0, "owner: %s", err);
	if (!tx)
		return;
	int up[2];
	CHECK(pipe(up) == 0, "pipe");
	snprintf(name, sizeof(name), "pipe:%st}0@conf:share=group:%u", pname,
		 (unsigned)gid);
	pid_t pid = fork();
	if (pid == 0) {
		close(up[0]);
		shared_joiner(name, gid, n, up[1]);
	}
	close(up[1]);
	char c;
	CHECK(read(up[0], &c, 1) == 1, "the joiner did not join");
	/* The serving socket's name is public (/proc/net/unix): the check
	 * of the caller is what keeps the memory in the group. */
	uint32_t nonce = serving_nonce(getpid());
	CHECK(nonce != 0, "no serving socket of ours in /proc/net/unix");
	CHECK_EQ(fetch_as_nobody(getpid(), nonce, gid), 0);
	CHECK_EQ(fetch_as_nobody(getpid(), nonce, 65534), 1);
	CHECK_EQ(truncate_as_member(flat2, gid), 0);
	struct stat sb;
	CHECK(stat(flat2, &sb) == 0 && sb.st_size == 0, "not truncated");
	CHECK_EQ(send_all(tx, n), n);
	check_child(pid, joiner_codes);
	close(up[0]);
	pktmap_close(tx);
	CHECK_EQ(shm_files(base), 0);
}

/* Entries of dir whose names contain key. */
static int files_with(const char *dir, const char *key)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		if (strstr(e->d_name, key)) {
			fprintf(stderr, "%s/%s\n", dir, e->d_name);
			n++;
		}
	if (d)
		closedir(d);
	return n;
}

/* The process that drops its privileges: as root, open both ends of a
 * private pipe, of a pipe in an @mem: region (which leaves a locator) and
 * of a pipe shared with a group; become nobody; close them all. Exit 0,
 * or 2 when an open failed, 3 when there were no files to leave. */
static void open_drop_close(const char *key, gid_t gid)
{
	char mem[96], sh[48];
	snprintf(mem, sizeof(mem), "@mem:%sr", key);
	snprintf(sh, sizeof(sh), "@conf:share=group:%u", (unsigned)gid);
	const char *end[] = { "p{0", "p}0", "m{0", "m}0", "s{0", "s}0" };
	const char *opt[] = { "", "", mem, "", sh, sh };
	struct pktmap_port *p[6];
	for (int i = 0; i < 6; i++) {
		char name[200], err[400];
		struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
					      .errbuf_len = sizeof(err) };
		snprintf(name, sizeof(name), "pipe:%s%s%s", key, end[i], opt[i]);
		if (pktmap_open(&p[i], name, &o) != 0) {
			fprintf(stderr, "%s\n", err);
			_exit(2);
		}
	}
	char gdir[64];
	snprintf(gdir, sizeof(gdir), "/dev/shm/pktmap-g%u", (unsigned)gid);
	if (files_with(udir, key) < 3 || files_with(gdir, key) < 1)
		_exit(3);
	become_nobody(gid);
	for (int i = 0; i < 6; i++)
		pktmap_close(p[i]);
	_exit(0);
}

/* issue 17: every close by a process that has since dropped its
 * privileges leaves nothing behind (tcpdump opens as root, then becomes
 * user tcpdump; as the last to close it can no longer remove root's
 * files). Its cleaner, left at open with root's credentials, does. */
static void test_dropped_privileges(void)
{
	if (geteuid() != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs root");
		printf("skip test_dropped_privileges: needs root\n");
		return;
	}
	char key[64];
	snprintf(key, sizeof(key), "%sd", pname);
	pid_t pid = fork();
	if (pid == 0)
		open_drop_close(key, (gid_t)(40000 + getpid() % 20000));
	int st = 0;
	char gdir[64];
	snprintf(gdir, sizeof(gdir), "/dev/shm/pktmap-g%u",
		 (unsigned)(40000 + pid % 20000));
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s %d",
	      WIFSIGNALED(st) ? "killed by signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	CHECK_EQ(files_with(udir, key), 0);
	CHECK_EQ(files_with(gdir, key), 0);
	/* the group's directory went with its last file */
	CHECK(access(gdir, F_OK) != 0, "%s left", gdir);
}

/* Fork child(name, n, go, up) with two pipes: a byte from us on go, one
 * from it on up. Returns its pid, with our ends in *go and *up. */
static pid_t fork_child(void (*child)(const char *, uint32_t, int, int),
			const char *name, uint32_t n, int *go, int *up)
{
	int g[2], u[2];
	CHECK(pipe(g) == 0 && pipe(u) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		close(g[1]);
		close(u[0]);
		child(name, n, g[0], u[1]);
	}
	close(g[0]);
	close(u[1]);
	*go = g[1];
	*up = u[0];
	return pid;
}

/* Has holder pid stopped serving (no socket of its name in
 * /proc/net/unix) within 10 s? */
static bool stops_serving(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		if (serving_nonce(pid) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

/* A pipe root opened with every capability (not shared with a group):
 * root without capabilities, whom the kernel refuses our memfd in /proc,
 * joins it and gets every frame; the memfd is served by our cleaner (no
 * thread of ours), to root and our uid only (nobody is refused), and no
 * more once we have closed, though the joiner still holds the region
 * (the cleaner stays, to remove the files if the joiner cannot). */
static void test_capless_joiner(void)
{
	if (geteuid() != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs root");
		printf("skip test_capless_joiner: needs root\n");
		return;
	}
	const uint32_t n = 5000;
	char name[160], err[400];
	int go, up;
	snprintf(name, sizeof(name), "pipe:%sc}0", pname);
	pid_t pid = fork_child(capless_joiner, name, n, &go, &up);
	snprintf(name, sizeof(name), "pipe:%sc{0", pname);
	struct pktmap_port *tx;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	int before = threads();
	CHECK(pktmap_open(&tx, name, &o) == 0, "owner: %s", err);
	CHECK_EQ(threads(), before); /* the open started none */
	uint32_t nonce = serving_nonce(getpid());
	CHECK(nonce != 0, "no serving socket of ours in /proc/net/unix");
	CHECK_EQ(fetch_as_nobody(getpid(), nonce, 65534), 1);
	char c = 'g';
	CHECK(write(go, &c, 1) == 1, "go");
	CHECK(read(up, &c, 1) == 1, "the joiner did not join");
	if (tx)
		CHECK_EQ(send_all(tx, n), n);
	CHECK(read(up, &c, 1) == 1, "the joiner did not receive");
	pktmap_close(tx);
	CHECK(stops_serving(getpid()), "our cleaner serves after our close");
	CHECK(write(go, &c, 1) == 1, "go");
	check_child(pid, joiner_codes);
	close(go);
	close(up);
	char base[80];
	snprintf(base, sizeof(base), "%sc", pname);
	CHECK_EQ(files_with(udir, base), 0);
}

/* The holder that is not dumpable: as nobody, open pipe NAME{0, say so
 * on up, wait for a byte on go, send n frames and close. Exit 0 when all
 * went, 2 when the open failed, 3 when they did not all go. */
static void undumpable_holder(const char *name, uint32_t n, int go, int up)
{
	char err[400], c = 'o';
	struct pktmap_port *tx;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	become_nobody(65534);
	if (prctl(PR_SET_DUMPABLE, 0) != 0)
		_exit(9);
	if (pktmap_open(&tx, name, &o) != 0) {
		fprintf(stderr, "holder: %s\n", err);
		_exit(2);
	}
	if (write(up, &c, 1) != 1 || read(go, &c, 1) != 1)
		_exit(5);
	uint32_t sent = send_all(tx, n);
	pktmap_close(tx);
	_exit(sent == n ? 0 : 3);
}

/* A holder that is not dumpable (nobody's, as a process that changed its
 * uid is): the kernel refuses its memfd in /proc to another process of
 * nobody's, which gets it from the holder's cleaner, and every frame. */
static void test_undumpable_holder(void)
{
	if (geteuid() != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs root");
		printf("skip test_undumpable_holder: needs root\n");
		return;
	}
	const uint32_t n = 5000;
	char name[160], key[64], c;
	int go, up, jup[2];
	snprintf(key, sizeof(key), "%su", pname);
	snprintf(name, sizeof(name), "pipe:%s{0", key);
	pid_t holder = fork_child(undumpable_holder, name, n, &go, &up);
	CHECK(read(up, &c, 1) == 1, "the holder did not open");
	CHECK(pipe(jup) == 0, "pipe");
	snprintf(name, sizeof(name), "pipe:%s}0", key);
	pid_t joiner = fork();
	if (joiner == 0) {
		close(jup[0]);
		close(go);
		close(up);
		become_nobody(65534);
		join_and_receive(name, n, jup[1], -1);
	}
	close(jup[1]);
	CHECK(read(jup[0], &c, 1) == 1, "the joiner did not join");
	CHECK(write(go, &c, 1) == 1, "go");
	check_child(joiner, joiner_codes);
	check_child(holder, "holder (2: no open, 3: frames did not all go)");
	close(go);
	close(up);
	close(jup[0]);
	CHECK_EQ(files_with("/dev/shm/pktmap-65534", key), 0);
}

/* Log lines that say the region lost memory. */
static void count_lost(void *ctx, enum pktmap_log_level lvl, const char *line)
{
	(void)lvl;
	if (strstr(line, "lost memory under us"))
		(*(int *)ctx)++;
}

/* The attacker: as nobody in group gid, take the memfd of holder (pid,
 * nonce) from its serving socket as any joiner does, punch a hole over
 * all of it, take every free huge page, say so on up and hold them
 * until a byte (or EOF) on go. Exit 0, or 2 (no memfd), 3 (the punch
 * failed), 4 (no huge page was left to take). */
static void punch_as_member(pid_t holder, uint32_t nonce, gid_t gid, int up,
			    int go)
{
	become_nobody(gid);
	int fd = pm_share_fetch((int32_t)holder, nonce);
	if (fd < 0)
		_exit(2);
	struct stat st;
	if (fstat(fd, &st) != 0 ||
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      st.st_size) != 0)
		_exit(3);
	size_t len;
	void *grab = t_huge_grab(&len);
	char c = 'p';
	if (grab == MAP_FAILED || t_huge_free() != 0)
		_exit(4);
	if (write(up, &c, 1) != 1 || read(go, &c, 1) < 0)
		_exit(5);
	_exit(0);
}

/* issue 30 item 2: nobody, a member of the group root's hugepage pipe is
 * shared with, gets its memfd read-write (as a joiner must), punches a
 * hole in all of it and takes the free huge pages. Root's two ends, in
 * this process, touch the lost pages (the application writes a frame,
 * the syncs read their queues): nothing dies; every sync after fails
 * with -EFAULT, each port says so in one log line, and both close.
 * Before: SIGBUS at the first touch. */
static void punch_victim(gid_t gid)
{
	char name[160], err[400];
	int lost_tx = 0, lost_rx = 0;
	struct pktmap_port *tx = NULL, *rx = NULL;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err),
				      .log = count_lost, .log_ctx = &lost_tx };
	snprintf(name, sizeof(name), "pipe:%sh{0@conf:hugepages=1,share=group:%u",
		 pname, (unsigned)gid);
	CHECK(pktmap_open(&tx, name, &o) == 0, "owner: %s", err);
	name[strlen(pname) + 6] = '}';
	o.log_ctx = &lost_rx;
	CHECK(pktmap_open(&rx, name, &o) == 0, "owner's RX: %s", err);
	if (!tx || !rx)
		_exit(1);
	uint32_t seq = 0;
	struct netmap_ring *r = NETMAP_RXRING(pktmap_nifp(rx), 0);
	send_seq(tx, &seq, 100);
	CHECK_EQ(pktmap_txsync(tx), 0);
	CHECK_EQ(pktmap_rxsync(rx), 0);
	CHECK_EQ(nm_ring_space(r), 100);
	int up[2], go[2];
	CHECK(pipe(up) == 0 && pipe(go) == 0, "pipe");
	uint32_t nonce = serving_nonce(getpid());
	pid_t holder = getpid(), pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(go[1]);
		punch_as_member(holder, nonce, gid, up[1], go[0]);
	}
	close(up[1]);
	close(go[0]);
	char c;
	CHECK(read(up[0], &c, 1) == 1, "the member did not punch");
	/* The application touches its buffers, the syncs their queues. */
	r->head = r->cur = r->tail;
	send_seq(tx, &seq, 100);
	CHECK_EQ(pktmap_txsync(tx), -EFAULT);
	CHECK_EQ(pktmap_rxsync(rx), -EFAULT);
	CHECK_EQ(pktmap_txsync(tx), -EFAULT);
	CHECK_EQ(pktmap_rxsync(rx), -EFAULT);
	CHECK_EQ(lost_tx, 1);
	CHECK_EQ(lost_rx, 1);
	pktmap_close(rx);
	pktmap_close(tx);
	CHECK(write(go[1], &c, 1) == 1, "go");
	check_child(pid, "member (2: no memfd, 3: no punch, 4: pages left)");
	_exit(t_failed ? 1 : 0);
}

/* The victim runs in a process of its own, so that the huge pages go
 * back whatever happens to it. */
static void test_punch_shared(void)
{
	if (t_huge_reserve(16) != 0) {
		CHECK(getenv("CI") == NULL, "CI=true: this test needs huge pages");
		return;
	}
	pid_t pid = fork();
	if (pid == 0)
		punch_victim((gid_t)(40000 + getpid() % 20000));
	check_child(pid, "victim (signal 7: died of the lost pages, SIGBUS)");
	t_huge_release();
	char base[80];
	snprintf(base, sizeof(base), "pipe.%sh", pname);
	CHECK_EQ(shm_files(base), 0);
}

static void test_user_dir(void)
{
	struct stat st;
	CHECK(lstat(udir, &st) == 0, "%s: %s", udir, strerror(errno));
	CHECK(S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	      (st.st_mode & 0777) == 0700, "mode %o uid %u",
	      (unsigned)st.st_mode, (unsigned)st.st_uid);
}

int main(void)
{
	char err[300];
	snprintf(pname, sizeof(pname), "utsh%d", (int)getpid());
	CHECK(pktmap_user_dir(udir, sizeof(udir), err, sizeof(err)) == 0, "%s",
	      err);
	snprintf(upath, sizeof(upath), "%s/pipe.%s", udir, pname);
	test_user_dir();
	test_joiner_ignores_file_region();
	test_truncate_shared();
	test_dropped_privileges();
	test_capless_joiner();
	test_undumpable_holder();
	test_punch_shared();
	return t_done("share");
}
