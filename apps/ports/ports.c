/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap ports: the back ends this build knows, how their port names are
 * written, and whether they copy packets.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

#include "cli.h"
#include "cmds.h"
#include "hostports.h"

void usage_ports(void)
{
	printf("usage: pktmap ports [--gc]\n"
	       "\n"
	       "List the port back ends: name, port name syntax, mode\n"
	       "(zerocopy: buffers are shared end to end; copy: the kernel\n"
	       "copies once; emulated: a socket or file, one copy; live: TX\n"
	       "through BPF_PROG_RUN live frames, one copy each side) and what\n"
	       "each is for; then your named regions (other users' are\n"
	       "neither listed nor touched) and whether a process has them\n"
	       "open, the switches\n"
	       "(pktmap switch) of yours that are running, and the open\n"
	       "ports that came from pktmap broker (root sees every user's).\n"
	       "Port names, their suffixes and the @conf keys each back end\n"
	       "takes: pktmap-ports(7).\n"
	       "\n"
	       "  --gc    remove your regions no process has open (left behind\n"
	       "          by a process that was killed), each file by its exact\n"
	       "          name\n");
}

/* Running switches of this user: their lock files ".NAME.lock" in the
 * user's directory that a process holds locked. */
static void list_switches(void)
{
	char dir[64], err[300];
	unsigned n = 0;
	DIR *d = pktmap_user_dir(dir, sizeof(dir), err, sizeof(err)) == 0 ?
			 opendir(dir) : NULL;
	struct dirent *e;

	printf("\nSWITCHES");
	while (d && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] != '.' || len < 11 ||
		    strncmp(e->d_name + 1, "vale", 4) != 0 ||
		    strcmp(e->d_name + len - 5, ".lock") != 0)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW |
				O_CLOEXEC);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_len = 1 };
		bool held = fd >= 0 && fcntl(fd, F_OFD_GETLK, &fl) == 0 &&
			    fl.l_type != F_UNLCK;
		if (fd >= 0)
			close(fd);
		if (!held)
			continue;
		printf("\n%-16.*s (pktmap switch --list %.*s)", (int)len - 6,
		       e->d_name + 1, (int)len - 6, e->d_name + 1);
		n++;
	}
	printf("%s\n", n ? "" : ": none running");
	if (d)
		closedir(d);
}

/* The open ports that came from pktmap broker (docs/broker.md): the
 * counters files every port publishes say so (root sees every user's,
 * others their own). */
static void list_brokered(void)
{
	struct hp_list l;
	if (hp_scan(&l) != 0)
		return;
	unsigned k = 0;
	for (unsigned i = 0; i < l.n; i++)
		k += l.v[i].broker;
	printf("\nPORTS FROM THE BROKER%s\n", k ? "" : ": none");
	for (unsigned i = 0; i < l.n; i++)
		if (l.v[i].broker)
			printf("%-7d %-16s uid %-6u %s\n", l.v[i].pid, l.v[i].program,
			       l.v[i].uid, l.v[i].name);
	hp_free(&l);
}

static int width(const char *s, int w)
{
	int n = s ? (int)strlen(s) : 0;

	return n > w ? n : w;
}

int cmd_ports(int argc, char **argv)
{
	const struct pktmap_backend_desc *d;
	int wn = 4, ws = 6, wm = 4;
	unsigned i;

	int gc = 0;
	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
			usage_ports();
			return 0;
		}
		if (strcmp(argv[a], "--gc") == 0) {
			gc = 1;
			continue;
		}
		cli_err("ports: unexpected argument '%s'", argv[a]);
		return EXIT_USAGE;
	}
	for (i = 0; (d = pktmap_backend(i)); i++) {
		wn = width(d->name, wn);
		ws = width(d->syntax, ws);
		wm = width(d->mode, wm);
	}
	printf("%-*s  %-*s  %-*s  %s\n", wn, "NAME", ws, "SYNTAX", wm, "MODE",
	       "SUMMARY");
	for (i = 0; (d = pktmap_backend(i)); i++)
		printf("%-*s  %-*s  %-*s  %s\n", wn, d->name ? d->name : "",
		       ws, d->syntax ? d->syntax : "", wm,
		       d->mode ? d->mode : "", d->summary ? d->summary : "");

	list_switches();
	list_brokered();

	struct pktmap_region_desc regs[256];
	int n = pktmap_regions(regs, 256, gc);
	if (n > 256)
		n = 256;
	printf("\nREGIONS%s\n", n ? "" : ": none");
	for (int r = 0; r < n; r++)
		printf("%-32s %8.1f MiB  %s\n", regs[r].name,
		       (double)regs[r].size / (1 << 20),
		       regs[r].in_use ? "in use" :
		       regs[r].removed ? "unused: removed" :
					 "unused (pktmap ports --gc removes it)");
	return 0;
}
