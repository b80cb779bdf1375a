/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap netmap-run: run a program built against netmap's own headers
 * (and its libnetmap) unmodified on pktmap. It preloads
 * libpktmap-netmap-preload.so (compat/netmap/preload.c), whose open,
 * ioctl, mmap, poll, select and epoll stand before libc's and hand
 * /dev/netmap's calls to libpktmap-netmap's emulation over pktmap ports;
 * sets PKTMAP_NETMAP_MAP so that interface names become xdp: (or pkt:)
 * ports; and execs the program. See docs/netmap.md.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"

#ifndef PKTMAP_NETMAP_INSTALL_DIR
#define PKTMAP_NETMAP_INSTALL_DIR ""
#endif

#define NETMAP_LIB "libpktmap-netmap-preload.so"

void usage_netmap_run(void)
{
	printf(
"usage: pktmap netmap-run [options] PROGRAM [ARGS...]\n"
"\n"
"Run a netmap program (pkt-gen, bridge, lb, ...) unmodified on pktmap:\n"
"its /dev/netmap is emulated over pktmap ports, no kernel module needed.\n"
"For example:\n"
"\n"
"  pktmap netmap-run pkt-gen -i netmap:eth0 -f tx     (eth0 is xdp:eth0)\n"
"  pktmap netmap-run pkt-gen -i 'netmap:p{0@1' -f tx  (a pipe in memory 1)\n"
"  pktmap netmap-run bridge -i 'netmap:p}0@1' -i 'netmap:q{0@1'\n"
"\n"
"  -m, --map KIND        what an interface name (netmap:eth0) opens: xdp\n"
"                        (default: AF_XDP, the interface's traffic goes to\n"
"                        the program and not to the host, as in netmap) or\n"
"                        pkt (AF_PACKET: the host keeps its traffic, one\n"
"                        copy more)\n"
"  -q, --quiet           no 'pktmap netmap: ...' lines on stderr for\n"
"                        refused requests (the program still gets errno)\n"
"  -n, --dry-run         print the environment and command, do not run it\n"
"\n"
"Pipes netmap:NAME{N / }N, memories @N, /R /T /x, ^ and *, @offset and\n"
"monitors /t /r /rt: work as in netmap; valeX:Y is a port of 'pktmap\n"
"switch valeX'; zero-copy monitors (/z), extmem and CSB mode are refused\n"
"with one line naming the part. The program must be dynamically linked\n"
"and not setuid (LD_PRELOAD). PKTMAP_NETMAP_LIBDIR overrides where\n"
NETMAP_LIB " is looked for. See docs/netmap.md.\n");
}

static const struct option longopts[] = {
	{"map", required_argument, NULL, 'm'},
	{"quiet", no_argument, NULL, 'q'},
	{"dry-run", no_argument, NULL, 'n'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static bool has_lib(const char *dir)
{
	char path[PATH_MAX];
	if (!dir[0])
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, NETMAP_LIB);
	return access(path, R_OK) == 0;
}

/* $PKTMAP_NETMAP_LIBDIR, the build tree of this binary, or the install
 * directory. */
static int find_libdir(char *out, size_t len)
{
	const char *env = getenv("PKTMAP_NETMAP_LIBDIR");
	char exe[PATH_MAX], dir[PATH_MAX];
	if (env && env[0]) {
		snprintf(out, len, "%s", env);
		return has_lib(out) ? 0 : -1;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		snprintf(dir, sizeof(dir), "%s/../compat/netmap", dirname(exe));
		if (has_lib(dir) && realpath(dir, out))
			return 0;
	}
	if (has_lib(PKTMAP_NETMAP_INSTALL_DIR)) {
		snprintf(out, len, "%s", PKTMAP_NETMAP_INSTALL_DIR);
		return 0;
	}
	return -1;
}

int cmd_netmap_run(int argc, char **argv)
{
	const char *map = NULL;
	bool dry = false, quiet = false;
	char dir[PATH_MAX];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:m:qnh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': map = optarg; break;
		case 'q': quiet = true; break;
		case 'n': dry = true; break;
		case 'h': usage_netmap_run(); return 0;
		default:
			cli_opt_error("netmap-run", c, argv);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_err("netmap-run: no program given (see 'pktmap help netmap-run')");
		return EXIT_USAGE;
	}
	if (map && strcmp(map, "xdp") != 0 && strcmp(map, "pkt") != 0) {
		cli_err("netmap-run: --map: '%s' is not xdp or pkt", map);
		return EXIT_USAGE;
	}
	if (find_libdir(dir, sizeof(dir))) {
		if (!PKTMAP_HAVE_NETMAP_COMPAT)
			cli_err("netmap-run: this pktmap was built without its "
				"netmap library (meson -Dnetmap-compat=disabled): "
				"rebuild with -Dnetmap-compat=enabled, or set "
				"PKTMAP_NETMAP_LIBDIR to where " NETMAP_LIB " is");
		else
			cli_err("netmap-run: cannot find pktmap's " NETMAP_LIB
				" in " PKTMAP_NETMAP_INSTALL_DIR ": build it "
				"(ninja), install it, or set PKTMAP_NETMAP_LIBDIR");
		return EXIT_RUNTIME;
	}
	if (cli_env_preload(dir, NETMAP_LIB))
		goto env_fail;
	if (map ? setenv("PKTMAP_NETMAP_MAP", map, 1)
		: setenv("PKTMAP_NETMAP_MAP", "xdp", 0))
		goto env_fail;
	if (quiet && setenv("PKTMAP_NETMAP_QUIET", "1", 1))
		goto env_fail;
	if (dry) {
		if (strpbrk(dir, " \t")) /* see cli_env_preload() */
			printf("LD_LIBRARY_PATH='%s' ", getenv("LD_LIBRARY_PATH"));
		printf("LD_PRELOAD=%s PKTMAP_NETMAP_MAP=%s%s", getenv("LD_PRELOAD"),
		       getenv("PKTMAP_NETMAP_MAP"),
		       quiet ? " PKTMAP_NETMAP_QUIET=1" : "");
		for (int i = optind; i < argc; i++)
			printf(" %s", argv[i]);
		printf("\n");
		return 0;
	}
	execvp(argv[optind], argv + optind);
	cli_err("netmap-run: %s: %s", argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
env_fail:
	cli_err("netmap-run: cannot set the environment: %s", strerror(errno));
	return EXIT_RUNTIME;
}
