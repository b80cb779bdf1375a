/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap ports: the back ends this build knows, how their port names are
 * written, and whether they copy packets.
 */
#include <stdio.h>
#include <string.h>

#include <pktmap/pktmap.h>

#include "cli.h"
#include "cmds.h"

void usage_ports(void)
{
	printf("usage: pktmap ports\n"
	       "\n"
	       "List the port back ends: name, port name syntax, mode\n"
	       "(zerocopy: buffers are shared end to end; copy: the kernel\n"
	       "copies once; emulated: a socket or file, one copy) and what\n"
	       "each is for.\n");
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

	if (argc > 1) {
		if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
			usage_ports();
			return 0;
		}
		cli_err("ports: unexpected argument '%s'", argv[1]);
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
	return 0;
}
