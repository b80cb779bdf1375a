/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap pcap-run: run an unmodified libpcap tool (tcpdump, tshark,
 * dumpcap, ...) on pktmap's libpcap-compatible library. It puts the
 * directory of that library first in LD_LIBRARY_PATH (or, with
 * --preload, the interposing variant in LD_PRELOAD), sets
 * PKTMAP_PCAP_MAP so that plain interface names become pktmap ports,
 * and execs the tool. See docs/libpcap.md.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"

#ifndef PKTMAP_PCAP_INSTALL_DIR
#define PKTMAP_PCAP_INSTALL_DIR ""
#endif

#define COMPAT_SONAME "libpcap.so.0.8"
#define PRELOAD_NAME "libpktmap-pcap-preload.so"

void usage_pcap_run(void)
{
	printf(
"usage: pktmap pcap-run [options] TOOL [ARGS...]\n"
"\n"
"Run a libpcap tool unmodified on pktmap's libpcap-compatible library:\n"
"live captures on pktmap ports, everything else (files, filters, dumpers)\n"
"by the system libpcap. For example:\n"
"\n"
"  pktmap pcap-run tcpdump -i eth0 -w out.pcap     (eth0 is xdp:eth0)\n"
"  pktmap pcap-run tcpdump -i 'pipe:x}0' -c 1000 udp port 9\n"
"\n"
"  -m, --map KIND        what a plain interface name (\"eth0\") opens:\n"
"                        xdp (default), pkt, or none (the system libpcap);\n"
"                        xdp: takes the interface's traffic away from the\n"
"                        host while the tool runs (netmap mode), pkt: does\n"
"                        not (AF_PACKET, one copy more)\n"
"      --preload         interpose with LD_PRELOAD instead of putting the\n"
"                        library first in LD_LIBRARY_PATH (for binaries with\n"
"                        an RPATH, or that load libpcap by another name)\n"
"  -n, --dry-run         print the environment and command, do not run it\n"
"\n"
"Names with a ':' (xdp:eth0-1, pkt:eth0, pipe:x}0) are always pktmap ports.\n"
"PKTMAP_PCAP_LIBDIR overrides where the library is looked for.\n");
}

static const struct option longopts[] = {
	{"map", required_argument, NULL, 'm'},
	{"preload", no_argument, NULL, 'P'},
	{"dry-run", no_argument, NULL, 'n'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static bool has_lib(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (!dir[0])
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, R_OK) == 0;
}

/* Where the compat library is: $PKTMAP_PCAP_LIBDIR, the build tree this
 * binary lives in, or the install directory. */
static int find_libdir(const char *name, char *out, size_t len)
{
	const char *env = getenv("PKTMAP_PCAP_LIBDIR");
	char exe[PATH_MAX], dir[PATH_MAX];
	ssize_t n;

	if (env && env[0]) {
		snprintf(out, len, "%s", env);
		return has_lib(out, name) ? 0 : -1;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		/* build/apps/pktmap -> build/compat/pcap */
		snprintf(dir, sizeof(dir), "%s/../compat/pcap", dirname(exe));
		if (has_lib(dir, name) && realpath(dir, out))
			return 0;
	}
	if (has_lib(PKTMAP_PCAP_INSTALL_DIR, name)) {
		snprintf(out, len, "%s", PKTMAP_PCAP_INSTALL_DIR);
		return 0;
	}
	return -1;
}

/* Put `value` first in the colon-separated variable `var`. */
int cmd_pcap_run(int argc, char **argv)
{
	const char *map = NULL;
	bool preload = false, dry = false;
	char dir[PATH_MAX];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:m:nh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': map = optarg; break;
		case 'P': preload = true; break;
		case 'n': dry = true; break;
		case 'h': usage_pcap_run(); return 0;
		default:
			cli_opt_error("pcap-run", c, argv);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_err("pcap-run: no tool given (see 'pktmap help pcap-run')");
		return EXIT_USAGE;
	}
	if (map && strcmp(map, "xdp") != 0 && strcmp(map, "pkt") != 0 &&
	    strcmp(map, "none") != 0) {
		cli_err("pcap-run: --map: '%s' is not xdp, pkt or none", map);
		return EXIT_USAGE;
	}
	if (find_libdir(preload ? PRELOAD_NAME : COMPAT_SONAME, dir,
			sizeof(dir))) {
		const char *want = preload ? PRELOAD_NAME : COMPAT_SONAME;
		if (!PKTMAP_HAVE_PCAP_COMPAT)
			cli_err("pcap-run: this pktmap was built without its "
				"libpcap (meson -Dpcap-compat=disabled): rebuild "
				"with -Dpcap-compat=enabled, or set "
				"PKTMAP_PCAP_LIBDIR to where %s is", want);
		else
			cli_err("pcap-run: cannot find pktmap's %s in %s: build "
				"it (ninja), install it, or set "
				"PKTMAP_PCAP_LIBDIR", want,
				PKTMAP_PCAP_INSTALL_DIR);
		return EXIT_RUNTIME;
	}
	if (preload) {
		if (cli_env_preload(dir, PRELOAD_NAME))
			goto env_fail;
	} else if (cli_env_prepend("LD_LIBRARY_PATH", dir)) {
		goto env_fail;
	}
	/* An explicit --map wins; else keep what the caller set, else xdp. */
	if (map ? setenv("PKTMAP_PCAP_MAP", map, 1)
		: setenv("PKTMAP_PCAP_MAP", "xdp", 0))
		goto env_fail;
	if (dry) {
		const char *v = getenv(preload ? "LD_PRELOAD" : "LD_LIBRARY_PATH");

		if (preload && strpbrk(dir, " \t")) /* cli_env_preload() */
			printf("LD_LIBRARY_PATH='%s' ", getenv("LD_LIBRARY_PATH"));
		printf("%s=%s PKTMAP_PCAP_MAP=%s", preload ? "LD_PRELOAD"
							    : "LD_LIBRARY_PATH",
		       v, getenv("PKTMAP_PCAP_MAP"));
		for (int i = optind; i < argc; i++)
			printf(" %s", argv[i]);
		printf("\n");
		return 0;
	}
	execvp(argv[optind], argv + optind);
	cli_err("pcap-run: %s: %s", argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
env_fail:
	cli_err("pcap-run: cannot set the environment: %s", strerror(errno));
	return EXIT_RUNTIME;
}
