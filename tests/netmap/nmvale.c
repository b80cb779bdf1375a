// SPDX-License-Identifier: BSD-2-Clause
/*
 * nmvale: a switch manager written for pktmap's tests against netmap's API
 * only, doing what netmap's vale-ctl does (not its code): one NIOCCTRL
 * request of type NETMAP_REQ_VALE_* per command, or with -L the legacy
 * struct nmreq (nr_cmd NETMAP_BDG_*) through NIOCREGIF/NIOCGINFO.
 *
 *   nmvale -a valeX:IF   attach IF          -h valeX:IF  with its host rings
 *   nmvale -d valeX:IF   detach IF
 *   nmvale -n NAME       new persistent port    -r NAME  remove it
 *   nmvale -l [valeX:IF] list every port, or where one is
 *   nmvale -p valeX:IF   start polling (pktmap: refused)
 *
 * Built as nmvale_lib (nmreq_header_init from libnetmap, linked against
 * libpktmap-netmap) and nmvale_raw (no pktmap library: run it under
 * `pktmap netmap-run`). Prints "NAME [bridge:B port:P]" per port listed,
 * "NAME: index P" after -a/-d; on error perror(NAME) and exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <net/netmap_user.h>
#ifdef NMVALE_LIB
#include <libnetmap.h>
#endif

static void header(struct nmreq_header *h, uint16_t type, void *body,
		   const char *name)
{
#ifdef NMVALE_LIB
	nmreq_header_init(h, type, body);
#else
	memset(h, 0, sizeof(*h));
	h->nr_version = NETMAP_API;
	h->nr_reqtype = type;
	h->nr_body = (uintptr_t)body;
#endif
	snprintf(h->nr_name, sizeof(h->nr_name), "%s", name ? name : "");
}

static int list(int fd, const char *name)
{
	struct nmreq_vale_list l = { 0 };
	struct nmreq_header h;
	header(&h, NETMAP_REQ_VALE_LIST, &l, name);
	if (name) {
		if (ioctl(fd, NIOCCTRL, &h))
			return -1;
		printf("%s [bridge:%u port:%u]\n", name, l.nr_bridge_idx,
		       l.nr_port_idx);
		return 0;
	}
	for (; ioctl(fd, NIOCCTRL, &h) == 0; l.nr_port_idx++) {
		printf("%s [bridge:%u port:%u]\n", h.nr_name, l.nr_bridge_idx,
		       l.nr_port_idx);
		h.nr_name[0] = 0;
	}
	return errno == ENOENT ? 0 : -1;
}

/* The same through the legacy struct nmreq (netmap API 11-13 programs). */
static int legacy(int fd, int cmd, const char *name)
{
	struct nmreq r;
	memset(&r, 0, sizeof(r));
	r.nr_version = NETMAP_API;
	snprintf(r.nr_name, sizeof(r.nr_name), "%s", name ? name : "");
	switch (cmd) {
	case 'l':
		r.nr_cmd = NETMAP_BDG_LIST;
		for (; ioctl(fd, NIOCGINFO, &r) == 0; r.nr_arg2++) {
			printf("%s [bridge:%u port:%u]\n", r.nr_name, r.nr_arg1,
			       r.nr_arg2);
			r.nr_name[0] = 0;
		}
		return errno == ENOENT ? 0 : -1;
	case 'a': case 'h': r.nr_cmd = NETMAP_BDG_ATTACH; break;
	case 'd': r.nr_cmd = NETMAP_BDG_DETACH; break;
	case 'n': r.nr_cmd = NETMAP_BDG_NEWIF; break;
	case 'r': r.nr_cmd = NETMAP_BDG_DELIF; break;
	default: r.nr_cmd = NETMAP_BDG_POLLING_ON; break;
	}
	if (cmd == 'h')
		r.nr_arg1 = NETMAP_BDG_HOST;
	return ioctl(fd, NIOCREGIF, &r);
}

static int request(int fd, int cmd, const char *name)
{
	struct nmreq_header h;
	struct nmreq_vale_attach a;
	struct nmreq_vale_detach d;
	struct nmreq_vale_newif n;
	struct nmreq_vale_polling p;
	memset(&a, 0, sizeof(a));
	memset(&d, 0, sizeof(d));
	memset(&n, 0, sizeof(n));
	memset(&p, 0, sizeof(p));
	int ret;
	switch (cmd) {
	case 'a':
	case 'h':
		header(&h, NETMAP_REQ_VALE_ATTACH, &a, name);
		a.reg.nr_mode = cmd == 'h' ? NR_REG_NIC_SW : NR_REG_ALL_NIC;
		ret = ioctl(fd, NIOCCTRL, &h);
		if (!ret)
			printf("%s: index %u\n", name, a.port_index);
		return ret;
	case 'd':
		header(&h, NETMAP_REQ_VALE_DETACH, &d, name);
		ret = ioctl(fd, NIOCCTRL, &h);
		if (!ret)
			printf("%s: index %u\n", name, d.port_index);
		return ret;
	case 'n':
		header(&h, NETMAP_REQ_VALE_NEWIF, &n, name);
		return ioctl(fd, NIOCCTRL, &h);
	case 'r':
		header(&h, NETMAP_REQ_VALE_DELIF, NULL, name);
		return ioctl(fd, NIOCCTRL, &h);
	case 'p':
		header(&h, NETMAP_REQ_VALE_POLLING_ENABLE, &p, name);
		p.nr_mode = NETMAP_POLLING_MODE_SINGLE_CPU;
		p.nr_num_polling_cpus = 1;
		return ioctl(fd, NIOCCTRL, &h);
	default:
		return list(fd, name);
	}
}

int main(int argc, char **argv)
{
	int cmd = 'l', old = 0, c;
	const char *name = NULL;
	while ((c = getopt(argc, argv, "a:h:d:n:r:p:lL")) != -1) {
		if (c == 'L') {
			old = 1;
			continue;
		}
		if (c == '?') {
			fprintf(stderr, "usage: nmvale [-L] -a|-h|-d|-n|-r|-p NAME "
				"| -l [NAME]\n");
			return 2;
		}
		cmd = c;
		name = optarg;
	}
	if (cmd == 'l' && optind < argc)
		name = argv[optind];
	int fd = open("/dev/netmap", O_RDWR);
	if (fd < 0) {
		perror("/dev/netmap");
		return 1;
	}
	int ret = old ? legacy(fd, cmd, name) : request(fd, cmd, name);
	if (ret)
		perror(name ? name : "list");
	close(fd);
	return ret ? 1 : 0;
}
