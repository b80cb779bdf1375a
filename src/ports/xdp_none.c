// SPDX-License-Identifier: BSD-2-Clause
/*
 * The xdp: back end of a build without AF_XDP (meson -Dxdp=disabled):
 * the name is still known, so `xdp:eth0` fails with a message that says
 * why and what to use instead, and `pktmap ports` shows it as absent.
 */
#include <errno.h>
#include <net/if.h>

#include "log.h"
#include "name.h"
#include "port.h"

static int xdp_none_open(struct pktmap_port *p, const struct pm_name *nm,
			 const struct pktmap_open_opts *o)
{
	(void)o;
	/* The same first answer as the real back end's, so that callers
	 * (libpcap's, netmap's) map a missing interface as they always do. */
	if (if_nametoindex(nm->body) == 0)
		return pm_open_error(p, -ENODEV, "no such interface");
	return pm_open_error(p, -EOPNOTSUPP, "this pktmap was built without "
			     "AF_XDP (meson -Dxdp=disabled): use pkt:%s, or "
			     "rebuild with -Dxdp=enabled", nm->body);
}

const struct pm_port_ops pm_xdp_ops = {
	.desc = {
		.name = "xdp",
		.syntax = "xdp:IFACE[-Q|^|*][/Z|/C]",
		.mode = "absent",
		.summary = "AF_XDP: not in this build (meson -Dxdp=disabled)",
	},
	/* The real back end's, so that names parse the same in every build. */
	.caps = PM_CAP_ONE_RING | PM_CAP_ZEROCOPY | PM_CAP_HOST,
	.conf = &pm_xdp_conf,
	.open = xdp_none_open,
};

/* The broker's privileged half (<pktmap/broker.h>) needs libbpf. */
#include <stdio.h>

#include <pktmap/broker.h>

int pktmap_broker_xsk_attach(struct pktmap_broker_xsk **out, int ifindex,
			     const char *ifname, uint32_t queue, int fd,
			     int native, char *err, size_t errlen)
{
	(void)ifindex, (void)ifname, (void)queue, (void)fd, (void)native;
	*out = NULL;
	snprintf(err, errlen, "this pktmap was built without AF_XDP");
	return -EOPNOTSUPP;
}

int pktmap_broker_xdp_hold(struct pktmap_broker_xsk **out, int ifindex,
			   const char *ifname, char *err, size_t errlen)
{
	(void)ifindex, (void)ifname;
	*out = NULL;
	snprintf(err, errlen, "this pktmap was built without AF_XDP");
	return -EOPNOTSUPP;
}

int pktmap_broker_xdp_held(const struct pktmap_broker_xsk *h)
{
	(void)h;
	return 0;
}

const char *pktmap_broker_xsk_mode(const struct pktmap_broker_xsk *h)
{
	(void)h;
	return "none";
}

void pktmap_broker_xsk_detach(struct pktmap_broker_xsk *h)
{
	(void)h;
}

int pktmap_broker_pkt_lock(int fd, int ifindex, char *err, size_t errlen)
{
	(void)fd, (void)ifindex;
	snprintf(err, errlen, "this pktmap was built without libbpf");
	return -EOPNOTSUPP;
}

int pktmap_broker_pkt_revoke(int switch_fd)
{
	(void)switch_fd;
	return -EOPNOTSUPP;
}
