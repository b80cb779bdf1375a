/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The `pktmap` command: one subcommand per file, dispatched from the table
 * below (the wireguard-tools way). Errors are one line "pktmap: ..." on
 * stderr; exit status 2 for usage errors, 1 for failures at run time.
 */
#include <stdio.h>
#include <string.h>

#include <pktmap/pktmap.h>

#include "cli.h"
#include "cmds.h"

static const struct cli_cmd cmds[] = {
	{"gen", cmd_gen, "send generated IPv4/UDP frames on a port (pkt-gen)",
	 usage_gen},
	{"recv", cmd_recv, "receive on a port, count and check gen's frames",
	 usage_recv},
	{"ports", cmd_ports, "list the port back ends", usage_ports},
	{"bridge", cmd_bridge, "forward between two ports, both ways (zero-copy "
	 "in one region)", usage_bridge},
	{"router", cmd_router, "forward among N ports on lock-free queues "
	 "(MapRouter)", usage_router},
	{"scrub", cmd_scrub, "clean traffic: drop what the rules say (DDoS "
	 "protection)", usage_scrub},
	{"capture", cmd_capture, "capture to pcap/pcapng files (tcpdump "
	 "filters, rotation)", usage_capture},
	{"pcap-run", cmd_pcap_run, "run tcpdump, tshark, ... on pktmap's "
	 "libpcap", usage_pcap_run},
	{"netmap-run", cmd_netmap_run, "run a netmap program (pkt-gen, bridge, "
	 "...) on pktmap", usage_netmap_run},
	{"switch", cmd_switch, "a learning switch (VALE) that processes, NICs "
	 "and host rings attach to", usage_switch},
	{"top", cmd_top, "every port on the host, live: rates, drops, "
	 "mode, process", usage_top},
	{"metrics", cmd_metrics, "the host's port counters for Prometheus "
	 "(text, or HTTP with --listen)", usage_metrics},
	{"broker", cmd_broker, "open xdp:, pkt: and tap: for programs without "
	 "capabilities, as a policy allows", usage_broker},
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

const struct cli_cmd *cli_find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pktmap COMMAND [options]\n"
		   "       pktmap help COMMAND | --help | --version\n"
		   "\n"
		   "netmap's data model and API on stock Linux. Commands:\n");
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nPorts are named as in netmap: pipe:NAME{N and "
		   "pipe:NAME}N, null:, pcap:FILE, ...\n"
		   "(`pktmap ports` lists them).\n");
}

static int help(const char *name)
{
	const struct cli_cmd *c = cli_find_cmd(name);

	if (!c) {
		cli_err("no command '%s' (see 'pktmap --help')", name);
		return EXIT_USAGE;
	}
	if (c->usage)
		c->usage();
	else
		printf("pktmap %s: %s\n", c->name, c->help);
	return 0;
}

int main(int argc, char **argv)
{
	const struct cli_cmd *c;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("pktmap %s\n", pktmap_version());
		return 0;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		return help(argv[2]);
	}
	c = cli_find_cmd(argv[1]);
	if (!c) {
		cli_err("no command '%s' (see 'pktmap --help')", argv[1]);
		return EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
