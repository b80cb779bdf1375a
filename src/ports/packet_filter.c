/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pkt: back end, what RX sees: the frames the interface receives;
 * pktmap_set_rx_direction() adds the frames it sends (PACKET_OUTGOING, as
 * libpcap's "inout") or keeps only those; a kernel filter
 * (pktmap_set_rx_filter(), SO_ATTACH_FILTER) drops frames before they
 * take a frame of the ring. Both end up in one socket filter program per
 * socket (a direction prefix, then the application's program).
 */
#include <linux/if_ether.h>
#include <stdlib.h>
#include <string.h>

#include "packet.h"

/* Give the sockets the direction and the application's filter: the
 * kernel runs it before a frame takes a slot of its ring. Returns the
 * frames already queued (not filtered), or -errno. */
static int apply_filter(struct pktmap_port *p)
{
	struct pkt_priv *pp = p->priv;
	int ignore = pp->rx_dir == PKTMAP_RX_IN, ret = 0;
	bool prefix = pp->rx_dir == PKTMAP_RX_OUT;
	for (uint32_t r = pp->lo; r < pp->hi; r++)
		if (set_opt(pp->socks[r].fd, PACKET_IGNORE_OUTGOING, &ignore,
			    sizeof(ignore)) && ignore)
			prefix = true; /* before Linux 4.20 */

	unsigned n = (prefix ? 3 : 0) + (pp->filt_len ? pp->filt_len : 1);
	struct sock_filter *prog = calloc(n, sizeof(*prog)), *f = prog;
	if (!prog)
		return -ENOMEM;
	if (prefix) {
		bool out = pp->rx_dir == PKTMAP_RX_OUT;
		*f++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS,
						    (uint32_t)SKF_AD_OFF + SKF_AD_PKTTYPE);
		*f++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						    PACKET_OUTGOING, out ? 1 : 0,
						    out ? 0 : 1);
		*f++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	}
	if (pp->filt_len) {
		memcpy(f, pp->filt, pp->filt_len * sizeof(*f));
		/* A filter's "accept N bytes" becomes "the whole frame": the
		 * slot carries the captured length only, so the application
		 * cuts to its snapshot length itself. */
		for (unsigned i = 0; i < pp->filt_len; i++)
			if (f[i].code == (BPF_RET | BPF_K) && f[i].k)
				f[i].k = PKT_SNAP_ALL;
	} else {
		*f = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, PKT_SNAP_ALL);
	}
	struct sock_fprog fp = { .len = (unsigned short)n, .filter = prog };
	uint32_t queued = 0;
	for (uint32_t r = pp->lo; r < pp->hi && !ret; r++) {
		int fd = pp->socks[r].fd;
		if (!prefix && !pp->filt_len) {
			int dummy = 0;
			if (setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &dummy,
				       sizeof(dummy)) && errno != ENOENT)
				ret = -errno;
		} else if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp,
				      sizeof(fp))) {
			ret = -errno;
		}
		queued += pm_pkt_rx_queued(&pp->socks[r]);
	}
	free(prog);
	return ret ? ret : (int)(queued > INT32_MAX ? INT32_MAX : queued);
}

/* Does the program compare with a VLAN TPID? The kernel runs a socket
 * filter on the frame with its tag taken out (libpcap compiles for that
 * with the kernel's VLAN extensions); the RX slots get the tag back, and
 * such a program is for those. */
static bool tests_vlan(const struct sock_filter *insns, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (BPF_CLASS(insns[i].code) == BPF_JMP &&
		    BPF_SRC(insns[i].code) == BPF_K &&
		    (insns[i].k == ETH_P_8021Q || insns[i].k == ETH_P_8021AD ||
		     insns[i].k == 0x9100))
			return true;
	return false;
}

int pm_pkt_rx_filter(struct pktmap_port *p, const struct sock_filter *insns,
		     unsigned n)
{
	struct pkt_priv *pp = p->priv;
	struct sock_filter *copy = NULL;
	if (tests_vlan(insns, n)) {
		pm_log(p, PKTMAP_LOG_DEBUG, "%s: the filter tests a VLAN tag, "
		       "which the kernel sees taken out: not in the kernel",
		       p->name);
		n = 0; /* none in the kernel: the caller filters */
		free(pp->filt);
		pp->filt = NULL;
		pp->filt_len = 0;
		int ret = apply_filter(p);
		return ret < 0 ? ret : -EOPNOTSUPP;
	}
	if (n) {
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, insns, n * sizeof(*copy));
	}
	free(pp->filt);
	pp->filt = copy;
	pp->filt_len = n;
	int ret = apply_filter(p);
	if (ret < 0)
		pm_log(p, PKTMAP_LOG_INFO, "%s: the kernel refused the filter "
		       "(%s)", p->name, strerror(-ret));
	return ret;
}

int pm_pkt_rx_direction(struct pktmap_port *p, unsigned dir)
{
	struct pkt_priv *pp = p->priv;
	unsigned old = pp->rx_dir;
	pp->rx_dir = dir;
	int ret = apply_filter(p);
	if (ret < 0) {
		pp->rx_dir = old;
		(void)apply_filter(p);
	}
	return ret < 0 ? ret : 0;
}
