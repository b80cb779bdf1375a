// SPDX-License-Identifier: BSD-2-Clause
/*
 * vale-ctl's requests through the /dev/netmap emulation.
 *
 * netmap's VALE switches live in the kernel; pktmap's are processes
 * (`pktmap switch valeX`), so a request naming "valeX:Y" is sent to the
 * running switch valeX over its control socket (src/vale_proto.h),
 * exactly as `pktmap switch valeX -a/-d/--list` do:
 *
 *   ATTACH valeX:Y    the switch opens Y itself: tap:Y when Y is a TAP
 *                     device (a persistent port made by NEWIF), else
 *                     xdp:Y (pkt:Y with PKTMAP_NETMAP_MAP=pkt); with
 *                     NR_REG_NIC_SW also its host rings Y^ (vale-ctl -h)
 *   DETACH valeX:Y    the switch closes Y (and Y^)
 *   LIST              switches are the running ones of this user, sorted
 *                     by name (nr_bridge_idx), ports in the switch's order
 *                     (nr_port_idx)
 *   NEWIF Y / DELIF Y a persistent port is a persistent TAP device Y: it
 *                     outlives the program, as netmap's does, and any
 *                     switch can attach it
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_tun.h>

#include "pktmap/pktmap.h"
#include "pktmap/netmap.h"
#include "vale_proto.h"
#include "vale_ctl.h"

#define MAX_SWITCHES 64

__attribute__((format(printf, 4, 5)))
static int verr(char *err, size_t len, int ret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return ret;
}

/* Split "valeX:Y" into the switch and the port. */
static int split(const char *name, char *sw, char *port, char *err,
		 size_t errlen)
{
	const char *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : 0;
	if (!colon || n > VALE_SW_MAX || !colon[1] ||
	    strlen(colon + 1) > VALE_PORT_MAX)
		return verr(err, errlen, -EINVAL, "%s: name a switch and a port, "
			    "as valeX:PORT", name);
	memcpy(sw, name, n);
	sw[n] = 0;
	if (!vale_name_ok(sw))
		return verr(err, errlen, -EINVAL, "%s: '%s' is not a switch "
			    "name (vale followed by up to 11 letters, digits, "
			    "'_', '.', '-')", name, sw);
	snprintf(port, VALE_PORT_MAX + 1, "%s", colon + 1);
	return 0;
}

static int connect_sw(const char *sw, char *err, size_t errlen)
{
	char dir[64], e[300];
	if (pktmap_user_dir(dir, sizeof(dir), e, sizeof(e)) != 0)
		return verr(err, errlen, -EACCES, "switch %s: %s", sw, e);
	int fd = vale_ctl_connect(dir, sw);
	if (fd == -ECONNREFUSED)
		return verr(err, errlen, -ENXIO, "switch '%s' is not running: "
			    "start it with 'pktmap switch %s' (pktmap's switch "
			    "is a process, not created on demand)", sw, sw);
	if (fd < 0)
		return verr(err, errlen, fd, "switch '%s': %s", sw,
			    fd == -EPERM ? "its socket belongs to another user"
					 : strerror(-fd));
	return fd;
}

/* One request, one reply (not for LIST). Returns 0 or the switch's
 * -errno with its message. */
static int sw_op(const char *sw, enum vale_op op, const char *port,
		 const char *arg, char *err, size_t errlen)
{
	int fd = connect_sw(sw, err, errlen);
	if (fd < 0)
		return fd;
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = op };
	snprintf(rq.port, sizeof(rq.port), "%s", port);
	snprintf(rq.arg, sizeof(rq.arg), "%s", arg ? arg : "");
	struct vale_rep rp;
	ssize_t n = -1;
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) == sizeof(rq))
		n = recv(fd, &rp, sizeof(rp), 0);
	close(fd);
	if (vale_rep_take(&rp, n))
		return verr(err, errlen, -EIO, "switch '%s' did not answer", sw);
	if (rp.op != VALE_OK)
		return verr(err, errlen, rp.status < 0 ? rp.status : -EIO,
			    "switch %s: %s", sw, rp.msg);
	return 0;
}

/* The names of the ports of switch sw, in its order; *n set. Returns 0
 * or -errno. The caller frees *names. */
static int sw_ports(const char *sw, char (**names)[VALE_PORT_MAX + 1],
		    unsigned *n, char *err, size_t errlen)
{
	*names = NULL;
	*n = 0;
	int fd = connect_sw(sw, err, errlen);
	if (fd < 0)
		return fd;
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = VALE_LIST };
	int ret = send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) == sizeof(rq) ? 0 : -EIO;
	while (!ret) {
		struct vale_rep rp;
		if (vale_rep_take(&rp, recv(fd, &rp, sizeof(rp), 0))) {
			ret = -EIO;
			break;
		}
		if (rp.op != VALE_PORT)
			break;
		void *nn = realloc(*names, (*n + 1) * sizeof(**names));
		if (!nn) {
			ret = -ENOMEM;
			break;
		}
		*names = nn;
		memcpy((*names)[(*n)++], rp.port, sizeof(rp.port));
	}
	close(fd);
	if (ret)
		verr(err, errlen, ret, "switch '%s' did not answer its list", sw);
	return ret;
}

/* The index of port in switch sw, or -ENOENT. */
static int port_index(const char *sw, const char *port, char *err,
		      size_t errlen)
{
	char (*names)[VALE_PORT_MAX + 1];
	unsigned n;
	int ret = sw_ports(sw, &names, &n, err, errlen);
	if (ret)
		return ret;
	ret = verr(err, errlen, -ENXIO, "%s:%s: no such port on switch %s", sw,
		   port, sw);
	for (unsigned i = 0; i < n; i++)
		if (strcmp(names[i], port) == 0) {
			ret = (int)i;
			break;
		}
	free(names);
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The running switches of this user, sorted by name. */
static int switches(char (*sw)[VALE_SW_MAX + 1], unsigned *n)
{
	char dir[64], e[300];
	*n = 0;
	if (pktmap_user_dir(dir, sizeof(dir), e, sizeof(e)) != 0)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && *n < MAX_SWITCHES) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] != '.' || l < 6 ||
		    strcmp(de->d_name + l - 5, ".sock") != 0 ||
		    l - 6 > VALE_SW_MAX)
			continue;
		memcpy(sw[*n], de->d_name + 1, l - 6);
		sw[*n][l - 6] = 0;
		if (!vale_name_ok(sw[*n]))
			continue;
		int fd = vale_ctl_connect(dir, sw[*n]);
		if (fd < 0)
			continue;
		close(fd);
		(*n)++;
	}
	closedir(d);
	qsort(sw, *n, sizeof(*sw), cmp_names);
	return 0;
}

/* NETMAP_REQ_VALE_LIST. */
static int vale_list(char *name, struct nmreq_vale_list *l, char *err,
		     size_t errlen)
{
	char sw[MAX_SWITCHES][VALE_SW_MAX + 1], port[VALE_PORT_MAX + 1];
	unsigned nsw;
	switches(sw, &nsw);
	if (name[0]) {
		char one[VALE_SW_MAX + 1];
		int ret = split(name, one, port, err, errlen);
		if (ret)
			return ret;
		ret = port_index(one, port, err, errlen);
		if (ret < 0)
			return ret;
		l->nr_port_idx = (uint32_t)ret;
		for (unsigned b = 0; b < nsw; b++)
			if (strcmp(sw[b], one) == 0)
				l->nr_bridge_idx = (uint16_t)b;
		return 0;
	}
	for (unsigned b = l->nr_bridge_idx; b < nsw; b++) {
		char (*names)[VALE_PORT_MAX + 1];
		unsigned n;
		if (sw_ports(sw[b], &names, &n, err, errlen) == 0 &&
		    l->nr_port_idx < n) {
			snprintf(name, NETMAP_REQ_IFNAMSIZ, "%s:%s", sw[b],
				 names[l->nr_port_idx]);
			l->nr_bridge_idx = (uint16_t)b;
			free(names);
			return 0;
		}
		free(names);
		l->nr_port_idx = 0;
	}
	return verr(err, errlen, -ENOENT, "no more switch ports");
}

/* Is IF a TAP device (a persistent port)? */
static bool is_tap(const char *ifname)
{
	char path[128], buf[32] = "";
	snprintf(path, sizeof(path), "/sys/class/net/%s/tun_flags", ifname);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	return ok && (strtoul(buf, NULL, 0) & IFF_TAP);
}

/* NETMAP_REQ_VALE_ATTACH, NETMAP_REQ_VALE_DETACH. */
static int vale_attach(const char *name, uint32_t mode, bool attach,
		       uint32_t *index, char *err, size_t errlen)
{
	char sw[VALE_SW_MAX + 1], port[VALE_PORT_MAX + 1], host[VALE_PORT_MAX + 2];
	int ret = split(name, sw, port, err, errlen);
	if (ret)
		return ret;
	snprintf(host, sizeof(host), "%s^", port);
	if (!attach) {
		ret = port_index(sw, port, err, errlen);
		if (ret < 0)
			return ret;
		*index = (uint32_t)ret;
		ret = sw_op(sw, VALE_DETACH, port, NULL, err, errlen);
		if (!ret) /* attached with its host rings (-h)? */
			(void)sw_op(sw, VALE_DETACH, host, NULL, err, errlen);
		return ret;
	}
	if (mode != NR_REG_DEFAULT && mode != NR_REG_ALL_NIC &&
	    mode != NR_REG_NIC_SW)
		return verr(err, errlen, -EOPNOTSUPP, "%s: a switch attaches a "
			    "whole interface (nr_mode ALL_NIC), with its host "
			    "rings (NIC_SW)", name);
	const char *map = getenv("PKTMAP_NETMAP_MAP");
	bool tap = is_tap(port);
	char open[VALE_PORT_MAX + 8], openh[VALE_PORT_MAX + 8];
	snprintf(open, sizeof(open), "%s:%s", tap ? "tap" :
		 map && strcmp(map, "pkt") == 0 ? "pkt" : "xdp", port);
	snprintf(openh, sizeof(openh), "%s^", open);
	if (mode == NR_REG_NIC_SW && tap)
		return verr(err, errlen, -EOPNOTSUPP, "%s: a persistent port (a "
			    "TAP device) has no host rings: attach it with -a",
			    name);
	ret = sw_op(sw, VALE_ATTACH, port, open, err, errlen);
	if (!ret && mode == NR_REG_NIC_SW) {
		ret = sw_op(sw, VALE_ATTACH, host, openh, err, errlen);
		if (ret)
			(void)sw_op(sw, VALE_DETACH, port, NULL, NULL, 0);
	}
	if (ret == -EEXIST)
		ret = -EBUSY; /* netmap's "already attached" */
	if (ret)
		return ret;
	ret = port_index(sw, port, err, errlen);
	if (ret < 0)
		return ret;
	*index = (uint32_t)ret;
	return 0;
}

/* Open the TAP device ifname (creating it unless it must exist). */
static int tap_fd(const char *ifname, char *err, size_t errlen)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return verr(err, errlen, -errno, "%s: cannot open /dev/net/tun: %s%s",
			    ifname, strerror(errno), errno == EACCES ||
			    errno == EPERM ? " (needs CAP_NET_ADMIN: run as root)" : "");
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
		int e = errno;
		close(fd);
		return verr(err, errlen, -e, "%s: %s", ifname,
			    e == EBUSY ? "the persistent port is in use (attached to "
					 "a switch?): detach it first" :
			    e == EPERM ? "needs CAP_NET_ADMIN: run as root" :
					 strerror(e));
	}
	return fd;
}

/* NETMAP_REQ_VALE_NEWIF, NETMAP_REQ_VALE_DELIF. */
static int vale_persistent(const char *name, bool create, char *err,
			   size_t errlen)
{
	if (!name[0] || strlen(name) >= IFNAMSIZ || strchr(name, ':') ||
	    strchr(name, '/'))
		return verr(err, errlen, -EINVAL, "%s: a persistent port is named "
			    "like an interface (up to %d characters, no ':' '/')",
			    name, IFNAMSIZ - 1);
	bool exists = if_nametoindex(name) != 0;
	if (create && exists)
		return verr(err, errlen, -EEXIST, "%s: an interface of that name "
			    "exists", name);
	if (!create && (!exists || !is_tap(name)))
		return verr(err, errlen, -ENXIO, "%s: no such persistent port (a "
			    "TAP device made by NEWIF)", name);
	/* A switch closes a detached port in a thread of its own, just
	 * after it answers DETACH: give it a moment before calling the
	 * device busy. */
	int fd = tap_fd(name, err, errlen);
	for (int i = 0; fd == -EBUSY && !create && i < 200; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		fd = tap_fd(name, err, errlen);
	}
	if (fd < 0)
		return fd;
	int ret = 0;
	if (ioctl(fd, TUNSETPERSIST, create ? 1 : 0) != 0)
		ret = verr(err, errlen, -errno, "%s: TUNSETPERSIST: %s", name,
			   strerror(errno));
	if (!ret && create) {
		/* up, so that a switch attaching it moves frames at once */
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr = { 0 };
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
		if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
			ifr.ifr_flags |= IFF_UP;
			(void)ioctl(s, SIOCSIFFLAGS, &ifr);
		}
		if (s >= 0)
			close(s);
	}
	close(fd);
	return ret;
}

int nme_vale_request(uint16_t reqtype, char *name, void *body, char *err,
		     size_t errlen)
{
	switch (reqtype) {
	case NETMAP_REQ_VALE_ATTACH: {
		struct nmreq_vale_attach *a = body;
		return vale_attach(name, a->reg.nr_mode, true, &a->port_index,
				   err, errlen);
	}
	case NETMAP_REQ_VALE_DETACH: {
		struct nmreq_vale_detach *d = body;
		uint32_t idx = 0;
		int ret = vale_attach(name, 0, false, &idx, err, errlen);
		if (d)
			d->port_index = idx;
		return ret;
	}
	case NETMAP_REQ_VALE_LIST:
		return vale_list(name, body, err, errlen);
	case NETMAP_REQ_VALE_NEWIF:
		return vale_persistent(name, true, err, errlen);
	case NETMAP_REQ_VALE_DELIF:
		return vale_persistent(name, false, err, errlen);
	default: /* POLLING_ENABLE, POLLING_DISABLE */
		return verr(err, errlen, -EOPNOTSUPP, "%s: polling threads are "
			    "not available: a pktmap switch forwards in threads of "
			    "its own ('pktmap switch NAME -p N --affinity CPU')",
			    name);
	}
}
