/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker in a client's own network namespace (docs/broker.md,
 * "Containers"): a program in a user namespace of its own with a network
 * namespace of its own binds its AF_XDP socket there itself (it may:
 * its user namespace owns that network namespace), and asks the broker
 * only for what needs the host's CAP_BPF, the XDP program and the
 * XSKMAP entry. It passes the socket and its namespace; the broker
 *   - checks the namespace is a network namespace owned by a user
 *     namespace the client's uid owns (NS_GET_USERNS, NS_GET_OWNER_UID):
 *     the host's, or another user's, is refused;
 *   - reads, in that namespace, what the socket is bound to (sock_diag:
 *     interface, queue, UMEM size). A kernel without AF_XDP sock_diag
 *     (CONFIG_XDP_SOCKETS_DIAG) cannot say: then the interface and queue
 *     are the request's, and the kernel itself keeps a socket bound
 *     anywhere else from receiving what the program steers to it
 *     (xsk_rcv_check() compares the device and queue of every frame);
 *   - checks the policy (rules with netns=own) on that;
 *   - attaches there and goes back to its own namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <linux/sock_diag.h>
#include <linux/xdp_diag.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker_netns.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

int netns_owned_by(int nsfd, uid_t uid, uint64_t *ino, char *why,
		   size_t whylen)
{
	struct stat st;
	if (ioctl(nsfd, NS_GET_NSTYPE) != CLONE_NEWNET || fstat(nsfd, &st) != 0) {
		snprintf(why, whylen, "ns=1: the descriptor is not a network "
			 "namespace");
		return -EINVAL;
	}
	*ino = st.st_ino;
	int ufd = ioctl(nsfd, NS_GET_USERNS);
	uid_t owner = (uid_t)-1;
	if (ufd < 0 || ioctl(ufd, NS_GET_OWNER_UID, &owner) != 0 || owner != uid) {
		if (ufd >= 0)
			close(ufd);
		snprintf(why, whylen, "ns=1: network namespace %llu is not one of "
			 "uid %u's own (its user namespace's owner is %d)",
			 (unsigned long long)*ino, (unsigned)uid,
			 owner == (uid_t)-1 ? -1 : (int)owner);
		return -EPERM;
	}
	close(ufd);
	return 0;
}

/* One dump of the namespace's AF_XDP sockets: the one of inode ino. */
static int diag_find(int nl, uint32_t ino, struct xsk_bound *b)
{
	char buf[16384];
	for (;;) {
		ssize_t n = recv(nl, buf, sizeof(buf), 0);
		if (n <= 0)
			return -EIO;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return b->found ? 0 : -ENOENT;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) &&
				       e->error < 0 ? e->error : -EIO;
			}
			struct xdp_diag_msg *m = NLMSG_DATA(h);
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)) || m->xdiag_ino != ino)
				continue;
			int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
			for (struct nlattr *a = (struct nlattr *)(m + 1);
			     len >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&
			     a->nla_len <= len;
			     len -= NLA_ALIGN(a->nla_len),
			     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
				void *d = (char *)a + NLA_HDRLEN;
				if (a->nla_type == XDP_DIAG_INFO &&
				    a->nla_len >= NLA_HDRLEN + sizeof(struct xdp_diag_info)) {
					struct xdp_diag_info *i = d;
					b->ifindex = (int)i->ifindex;
					b->queue = i->queue_id;
					b->found = true;
				} else if (a->nla_type == XDP_DIAG_UMEM &&
					   a->nla_len >= NLA_HDRLEN +
					   sizeof(struct xdp_diag_umem)) {
					b->umem = ((struct xdp_diag_umem *)d)->size;
				}
			}
		}
	}
}

int xsk_bound_in(int sock, struct xsk_bound *b, char *why, size_t whylen)
{
	int dom = 0;
	socklen_t dl = sizeof(dom);
	struct stat st;
	memset(b, 0, sizeof(*b));
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &dom, &dl) != 0 ||
	    dom != AF_XDP || fstat(sock, &st) != 0) {
		snprintf(why, whylen, "the descriptor is not an AF_XDP socket");
		return -EINVAL;
	}
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	struct timeval tv = { .tv_sec = 2 };
	if (nl >= 0)
		(void)setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct {
		struct nlmsghdr h;
		struct xdp_diag_req r;
	} q = {
		.h = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = AF_XDP,
		       .xdiag_show = XDP_SHOW_INFO | XDP_SHOW_UMEM },
	};
	int ret = nl < 0 || send(nl, &q, sizeof(q), 0) != (ssize_t)sizeof(q) ?
		  -errno : diag_find(nl, (uint32_t)st.st_ino, b);
	if (nl >= 0)
		close(nl);
	if (ret == -ENOENT && !b->found) {
		/* No AF_XDP sock_diag in this kernel (CONFIG_XDP_SOCKETS_DIAG),
		 * or no such socket: the caller takes the request's word. */
		snprintf(why, whylen, "no AF_XDP sock_diag");
		return -ENOENT;
	}
	if (ret || !b->ifindex || !if_indextoname((unsigned)b->ifindex, b->ifname)) {
		snprintf(why, whylen, "the socket is not bound to an interface of "
			 "its namespace (sock_diag: %s)", ret ? strerror(-ret) : "none");
		return ret ? ret : -EINVAL;
	}
	return 0;
}
