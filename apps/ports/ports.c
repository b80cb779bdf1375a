/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap ports: the back ends this build knows, how their port names are
 * written, and whether they copy packets.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

#include "cli.h"
#include "cmds.h"

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
	       "open, and the switches\n"
	       "(pktmap switch) running in this network namespace.\n"
	       "\n"
	       "  --gc    remove your regions no process has open (left behind\n"
	       "          by a process that was killed), each file by its exact\n"
	       "          name\n");
}

/* Running switches of this user in this network namespace: their
 * listening sockets "@pktmap.UID.vale.NAME" in /proc/net/unix (flags
 * __SO_ACCEPTCON, state unconnected). */
static void list_switches(void)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512], prefix[64];
	unsigned n = 0;

	snprintf(prefix, sizeof(prefix), "@pktmap.%u.vale.", (unsigned)geteuid());
	printf("\nSWITCHES");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned flags = 0;
		char path[256] = "";
		if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %255s", &flags,
			   path) != 2 || !(flags & 0x10000) ||
		    strncmp(path, prefix, strlen(prefix)) != 0)
			continue;
		printf("%s%-16s (pktmap switch --list %s)", n++ ? "\n" : "\n",
		       path + strlen(prefix), path + strlen(prefix));
	}
	printf("%s\n", n ? "" : ": none running");
	if (f)
		fclose(f);
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
