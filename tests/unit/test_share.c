// SPDX-License-Identifier: BSD-2-Clause
/*
 * A joiner trusts nothing a peer can rewrite (issue 17). A peer of the
 * same uid puts a file-backed region (valid header, free stack, matching
 * size: what @conf:share= makes) where the rendezvous of a private pipe
 * is, holds it, and truncates the file once a partner has joined. The
 * partner did not ask for share=, so it must not map that file: its open
 * fails with one line and leaves nothing; before the fix it followed the
 * file's own format, mapped it, and died of SIGBUS at the truncation.
 *
 * Also: the per-user directory is the caller's, mode 0700.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pktmap/pktmap.h"
#include "t.h"

static char pname[64], udir[64], upath[160], flat[160];

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

static void test_joiner_ignores_file_region(void)
{
	char name[128], err[400];
	struct pktmap_port *peer;
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = sizeof(err) };
	snprintf(name, sizeof(name), "pipe:%s{0@conf:share=group:%u", pname,
		 (unsigned)getegid());
	CHECK(pktmap_open(&peer, name, &o) == 0, "peer: %s", err);
	if (!peer)
		return;
	/* The peer's file-backed region becomes the private pipe's
	 * rendezvous, with the owner-only mode a rendezvous has. */
	CHECK(rename(flat, upath) == 0, "rename: %s", strerror(errno));
	CHECK(chmod(upath, 0600) == 0, "chmod");

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
	pktmap_close(peer);
	unlink(upath); /* renamed away from the peer: ours to remove */
	CHECK_EQ(extra_files(), 0);
	struct stat sb;
	CHECK(stat(flat, &sb) != 0, "peer's flat file left");
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
	snprintf(flat, sizeof(flat), "/dev/shm/pktmap.pipe.%s", pname);
	test_user_dir();
	test_joiner_ignores_file_region();
	return t_done("share");
}
