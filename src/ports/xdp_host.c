/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Host rings of the xdp: back end (xdp:IFACE^, xdp:IFACE*): netmap's
 * connection between an application and the host stack (paper, §4.3).
 *
 *   host RX ring: what the host stack sends out of IFACE. A TC egress
 *       program on IFACE (bpf/pktmap_host.bpf.c) copies each frame into a
 *       BPF ring buffer and drops it; rxsync copies the records into the
 *       ring's slots. So the frames reach the application, not the wire.
 *   host TX ring: what the application gives the host stack. txsync runs
 *       an XDP_PASS program with BPF_PROG_RUN in live-frames mode with
 *       ingress_ifindex = IFACE, once per slot: the kernel hands the frame
 *       to the stack as if IFACE had received it.
 *
 * Both directions copy (the stack's frames are skbs, not UMEM buffers);
 * host traffic is the machine's own, not the data path.
 *
 * The stack must hand over finished frames. With TSO/GSO on, TC egress
 * sees frames larger than the MTU: the port turns checksum offload, TSO and
 * GSO off while it has the host rings (as netmap users do by hand), sets
 * the device's gso_max_segs to 1 (TCP builds multi-segment skbs in
 * software whatever the device offers) and restores all that at close. TCP and UDP leave their checksum to the device
 * or to a software fallback that runs after TC whatever the offloads, so
 * rxsync finishes it (l4_csum).
 *
 * Host rings of an interface belong to one port at a time: an exclusive
 * open-file-description lock on /dev/shm/pktmap-xdphost.NETNS.IFINDEX.lock,
 * which a dying process drops. A pktmap filter found at our TC slot while
 * we hold the lock was left by a run that did not exit cleanly: replaced,
 * with a message.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ifnet.h"
#include "xdp.h"

extern const unsigned char pm_xdp_host_bpf_obj[];
extern const size_t pm_xdp_host_bpf_obj_len;

#define EG_NAME "pktmap_host_eg"
#define IN_NAME "pktmap_host_in"
#define RB_NAME "pktmap_host_rb"
#define TC_HANDLE 0x706b /* "pk" */
#define TC_PRIO 1
#define RB_HDR 8u        /* BPF_RINGBUF_HDR_SZ */

void pm_xdp_host_init(struct pm_xdp_host *h)
{
	memset(h, 0, sizeof(*h));
	h->lock_fd = h->eg_fd = h->in_fd = h->rb_fd = -1;
	for (int i = 0; i < PM_XDP_HOST_NOFF; i++)
		h->saved_off[i] = -1;
	h->saved_gso_segs = -1;
}

static const uint32_t off_get[PM_XDP_HOST_NOFF] = {
	ETHTOOL_GTXCSUM, ETHTOOL_GTSO, ETHTOOL_GGSO,
};
static const uint32_t off_set[PM_XDP_HOST_NOFF] = {
	ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO,
};

static int ethtool_value(const char *ifname, uint32_t cmd, uint32_t *data)
{
	struct ethtool_value ev = { .cmd = cmd, .data = *data };
	int ret = pm_if_ethtool(ifname, &ev);
	*data = ev.data;
	return ret;
}

/* One rtnetlink request on IFACE: RTM_GETLINK reads gso_max_segs into
 * *val, RTM_NEWLINK sets it to *val. Returns 0 or -errno. */
static int link_gso_segs(int ifindex, int type, uint32_t *val)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		struct rtattr rta;
		uint32_t v;
	} req;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = (uint16_t)type;
	req.nh.nlmsg_flags = NLM_F_REQUEST | (type == RTM_NEWLINK ? NLM_F_ACK : 0);
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	req.rta.rta_type = IFLA_GSO_MAX_SEGS;
	req.rta.rta_len = RTA_LENGTH(sizeof(uint32_t));
	req.v = *val;
	if (type == RTM_GETLINK)
		req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	int ret = -EIO;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		ret = -errno;
		goto out;
	}
	char buf[16384];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			ret = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			break;
		}
		if (h->nlmsg_type != RTM_NEWLINK)
			continue;
		struct ifinfomsg *ifi = NLMSG_DATA(h);
		int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
		for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, alen);
		     a = RTA_NEXT(a, alen))
			if (a->rta_type == IFLA_GSO_MAX_SEGS &&
			    RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
				memcpy(val, RTA_DATA(a), sizeof(uint32_t));
				ret = 0;
			}
		break;
	}
out:
	close(fd);
	return ret;
}

/* Turn off checksum offload, TSO and GSO, remembering what was on. */
static void offloads_off(struct pktmap_port *p, struct pm_xdp_host *h,
			 const char *ifname)
{
	for (int i = 0; i < PM_XDP_HOST_NOFF; i++) {
		uint32_t v = 0;
		if (ethtool_value(ifname, off_get[i], &v) != 0 || v == 0)
			continue;
		uint32_t zero = 0;
		if (ethtool_value(ifname, off_set[i], &zero) == 0)
			h->saved_off[i] = (int)v;
	}
	/* TCP builds multi-segment skbs (software GSO) whatever the device
	 * offers; segmentation happens after TC. One segment per skb is
	 * what the device's gso_max_segs says, for connections made from
	 * now on. */
	uint32_t segs = 0, one = 1;
	if (link_gso_segs(h->ifindex, RTM_GETLINK, &segs) == 0 && segs != 1 &&
	    link_gso_segs(h->ifindex, RTM_NEWLINK, &one) == 0)
		h->saved_gso_segs = (int64_t)segs;
	if (h->saved_off[0] >= 0 || h->saved_off[1] >= 0 || h->saved_off[2] >= 0 ||
	    h->saved_gso_segs >= 0)
		pm_log(p, PKTMAP_LOG_INFO, "%s: checksum offload, TSO and GSO off "
		       "on %s while the host rings are open", p->name, ifname);
}

static void offloads_restore(struct pm_xdp_host *h, const char *ifname)
{
	if (h->saved_gso_segs >= 0) {
		uint32_t segs = (uint32_t)h->saved_gso_segs;
		(void)link_gso_segs(h->ifindex, RTM_NEWLINK, &segs);
		h->saved_gso_segs = -1;
	}
	/* Checksum offload first: TSO depends on it. */
	for (int i = 0; i < PM_XDP_HOST_NOFF; i++) {
		if (h->saved_off[i] < 0)
			continue;
		uint32_t v = (uint32_t)h->saved_off[i];
		(void)ethtool_value(ifname, off_set[i], &v);
		h->saved_off[i] = -1;
	}
}

static int perm_error(struct pktmap_port *p, int err)
{
	return pm_open_error(p, err, "needs CAP_NET_RAW and CAP_BPF: run as root");
}

/* Map the ring buffer: the consumer position (ours to write), then the
 * producer position and the data, mapped twice in a row so that a record
 * that wraps reads as one piece. */
static int rb_map(struct pktmap_port *p, struct pm_xdp_host *h)
{
	struct bpf_map_info mi;
	uint32_t len = sizeof(mi);
	memset(&mi, 0, sizeof(mi));
	if (bpf_obj_get_info_by_fd(h->rb_fd, &mi, &len) != 0)
		return pm_open_error(p, -errno, "ring buffer info: %s",
				     strerror(errno));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	h->rb_size = mi.max_entries;
	h->cons_map = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED,
			   h->rb_fd, 0);
	if (h->cons_map == MAP_FAILED) {
		h->cons_map = NULL;
		return pm_open_error(p, -errno, "cannot map the ring buffer: %s",
				     strerror(errno));
	}
	h->prod_map_len = page + 2 * (size_t)h->rb_size;
	h->prod_map = mmap(NULL, h->prod_map_len, PROT_READ, MAP_SHARED, h->rb_fd,
			   (off_t)page);
	if (h->prod_map == MAP_FAILED) {
		h->prod_map = NULL;
		return pm_open_error(p, -errno, "cannot map the ring buffer: %s",
				     strerror(errno));
	}
	h->cons_pos = h->cons_map;
	h->prod_pos = h->prod_map;
	h->data = (const uint8_t *)h->prod_map + page;
	return 0;
}

/* Attach the egress program at our TC slot; replace a pktmap program a
 * dead run left there, refuse anything else. */
static int tc_attach(struct pktmap_port *p, struct pm_xdp_host *h,
		     const char *ifname)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->ifindex,
		    .attach_point = BPF_TC_EGRESS);
	pm_xdp_libbpf_enter(p);
	int ret = bpf_tc_hook_create(&hook);
	pm_xdp_libbpf_leave();
	if (ret && ret != -EEXIST) {
		if (ret == -EPERM || ret == -EACCES)
			return perm_error(p, ret);
		return pm_open_error(p, ret, "cannot add a clsact qdisc to %s: %s",
				     ifname, strerror(-ret));
	}
	h->hook_created = ret == 0;
	LIBBPF_OPTS(bpf_tc_opts, to, .prog_fd = h->eg_fd, .handle = TC_HANDLE,
		    .priority = TC_PRIO);
	pm_xdp_libbpf_enter(p);
	ret = bpf_tc_attach(&hook, &to);
	pm_xdp_libbpf_leave();
	if (ret == -EEXIST) {
		LIBBPF_OPTS(bpf_tc_opts, qo, .handle = TC_HANDLE, .priority = TC_PRIO);
		char name[BPF_OBJ_NAME_LEN] = "?";
		if (bpf_tc_query(&hook, &qo) == 0) {
			int fd = bpf_prog_get_fd_by_id(qo.prog_id);
			struct bpf_prog_info info;
			uint32_t len = sizeof(info);
			memset(&info, 0, sizeof(info));
			if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
				snprintf(name, sizeof(name), "%s", info.name);
			if (fd >= 0)
				close(fd);
		}
		if (strcmp(name, EG_NAME) != 0)
			return pm_open_error(p, -EBUSY, "a TC egress filter ('%s') "
					     "holds pktmap's slot on %s (handle "
					     "0x%x, priority %d): remove it (tc "
					     "filter del dev %s egress)", name,
					     ifname, TC_HANDLE, TC_PRIO, ifname);
		pm_log(p, PKTMAP_LOG_WARN, "%s: replacing the pktmap TC egress "
		       "program that an earlier run left attached to %s", p->name,
		       ifname);
		to.flags = BPF_TC_F_REPLACE;
		to.prog_id = 0;
		pm_xdp_libbpf_enter(p);
		ret = bpf_tc_attach(&hook, &to);
		pm_xdp_libbpf_leave();
	}
	if (ret) {
		if (ret == -EPERM || ret == -EACCES)
			return perm_error(p, ret);
		return pm_open_error(p, ret, "cannot attach the TC egress program "
				     "to %s: %s", ifname, strerror(-ret));
	}
	h->tc_attached = true;
	return 0;
}

int pm_xdp_host_open(struct pktmap_port *p, struct pm_xdp_host *h,
		     int ifindex, const char *ifname)
{
	struct stat ns;
	int ret;

	h->ifindex = ifindex;
	snprintf(h->ifname, sizeof(h->ifname), "%s", ifname);
	if (stat("/proc/self/ns/net", &ns) != 0)
		ns.st_ino = 0;
	snprintf(h->lock_path, sizeof(h->lock_path),
		 "/dev/shm/pktmap-xdphost.%lu.%d.lock", (unsigned long)ns.st_ino,
		 ifindex);
	for (int tries = 0;; tries++) {
		h->lock_fd = open(h->lock_path, O_RDWR | O_CREAT | O_CLOEXEC |
				  O_NOFOLLOW, 0600);
		if (h->lock_fd < 0)
			return pm_open_error(p, -errno, "cannot open %s: %s",
					     h->lock_path, strerror(errno));
		char why[300];
		ret = pm_file_trusted(h->lock_fd, h->lock_path, false, false, 0,
				      why, sizeof(why));
		if (ret) {
			close(h->lock_fd);
			h->lock_fd = -1;
			return pm_open_error(p, ret, "%s", why);
		}
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = 0, .l_len = 1 };
		if (fcntl(h->lock_fd, F_OFD_SETLK, &fl) != 0)
			return pm_open_error(p, -EBUSY, "the host rings of %s are "
					     "open in another port", ifname);
		struct stat a, b;
		if (fstat(h->lock_fd, &a) == 0 && stat(h->lock_path, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			break;
		close(h->lock_fd); /* removed by its last owner meanwhile */
		h->lock_fd = -1;
		if (tries > 8)
			return pm_open_error(p, -EAGAIN, "cannot settle the lock %s",
					     h->lock_path);
	}

	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "pktmap_host");
	pm_xdp_libbpf_enter(p);
	struct bpf_object *obj = bpf_object__open_mem(pm_xdp_host_bpf_obj,
						      pm_xdp_host_bpf_obj_len, &oo);
	ret = obj ? bpf_object__load(obj) : -errno;
	pm_xdp_libbpf_leave();
	if (!obj)
		return pm_open_error(p, ret, "cannot open the embedded host "
				     "program: %s", strerror(-ret));
	if (ret) {
		bpf_object__close(obj);
		if (ret == -EPERM || ret == -EACCES)
			return perm_error(p, ret);
		return pm_open_error(p, ret, "cannot load the host programs: %s",
				     strerror(-ret));
	}
	struct bpf_program *eg = bpf_object__find_program_by_name(obj, EG_NAME);
	struct bpf_program *in = bpf_object__find_program_by_name(obj, IN_NAME);
	struct bpf_map *rb = bpf_object__find_map_by_name(obj, RB_NAME);
	if (eg && in && rb) {
		h->eg_fd = fcntl(bpf_program__fd(eg), F_DUPFD_CLOEXEC, 3);
		h->in_fd = fcntl(bpf_program__fd(in), F_DUPFD_CLOEXEC, 3);
		h->rb_fd = fcntl(bpf_map__fd(rb), F_DUPFD_CLOEXEC, 3);
	}
	bpf_object__close(obj);
	if (h->eg_fd < 0 || h->in_fd < 0 || h->rb_fd < 0)
		return pm_open_error(p, -ENOENT, "the embedded host object is "
				     "incomplete");
	ret = rb_map(p, h);
	if (ret)
		return ret;
	offloads_off(p, h, ifname);
	return tc_attach(p, h, ifname);
}

bool pm_xdp_host_rx_ready(const struct pm_xdp_host *h)
{
	return h->prod_pos &&
	       atomic_load_explicit(PM_ATOMIC(h->prod_pos),
				    memory_order_acquire) != *h->cons_pos;
}

static uint32_t sum16(const uint8_t *b, uint32_t len, uint32_t sum)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Finish the TCP or UDP checksum of a frame from the host stack. At TC
 * egress the stack has not done it yet: it leaves it to the device
 * (CHECKSUM_PARTIAL, the field holding only the pseudo-header sum) and,
 * with offload off, to a software fallback that runs after TC. So it is
 * computed here, for IPv4 and IPv6 (no extension headers), whole frames
 * only. */
static void l4_csum(uint8_t *f, uint32_t len)
{
	uint32_t off = 14, sum = 0, l4len;
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);
	uint8_t proto;
	if (type == 0x8100 && len >= 18) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		off = 18;
	}
	uint8_t *ip = f + off;
	if (type == 0x0800 && len >= off + 20) {
		uint32_t hl = (ip[0] & 15u) * 4, tot = (uint32_t)(ip[2] << 8 | ip[3]);
		if (hl < 20 || tot < hl || off + tot > len ||
		    (ip[6] & 0x3f) || ip[7]) /* fragments: leave them */
			return;
		proto = ip[9];
		l4len = tot - hl;
		sum = sum16(ip + 12, 8, 0);
		off += hl;
	} else if (type == 0x86dd && len >= off + 40) {
		l4len = (uint32_t)(ip[4] << 8 | ip[5]);
		proto = ip[6];
		if (off + 40 + l4len > len)
			return;
		sum = sum16(ip + 8, 32, 0);
		off += 40;
	} else {
		return;
	}
	uint32_t at = proto == 6 ? 16 : proto == 17 ? 6 : 0;
	if (!at || l4len < at + 2)
		return;
	uint8_t *l4 = f + off;
	if (proto == 17 && type == 0x0800 && !l4[6] && !l4[7])
		return; /* IPv4 UDP without a checksum */
	l4[at] = l4[at + 1] = 0;
	sum += proto + l4len;
	uint16_t c = (uint16_t)~fold(sum16(l4, l4len, sum));
	if (proto == 17 && c == 0)
		c = 0xffff;
	l4[at] = (uint8_t)(c >> 8);
	l4[at + 1] = (uint8_t)c;
}

/* Release [hwcur, head) and copy records of the ring buffer into
 * [hwtail, ...). A record stays in the ring buffer until a slot takes it. */
static int host_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pm_xdp_host *h = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, mask = h->rb_size - 1;
	uint32_t j = k->hwtail;
	uint64_t pkts = 0, bytes = 0;

	k->hwcur = k->rhead;
	uint32_t space = n - 1 - pm_ring_dist(k->hwcur, k->hwtail, n);
	uint64_t cons = *h->cons_pos;
	/* Pairs with the kernel's smp_store_release() of the producer
	 * position in bpf_ringbuf_commit(). */
	uint64_t prod = atomic_load_explicit(PM_ATOMIC(h->prod_pos),
					     memory_order_acquire);
	while (space && cons < prod) {
		/* Pairs with the release of the record's header when the
		 * kernel commits it (the busy bit cleared). */
		const uint32_t *at = (const uint32_t *)(h->data + (cons & mask));
		uint32_t hdr = atomic_load_explicit(PM_ATOMIC(at),
						    memory_order_acquire);
		if (hdr & BPF_RINGBUF_BUSY_BIT)
			break;
		uint32_t len = hdr & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		uint64_t step = ((uint64_t)len + RB_HDR + 7) & ~7ull;
		if (pm_unlikely(len > h->rb_size))
			break; /* never follow a header that makes no sense */
		if (!(hdr & BPF_RINGBUF_DISCARD_BIT)) {
			struct netmap_slot *s = &ring->slot[j];
			uint32_t idx = s->buf_idx;
			if (pm_unlikely(len == 0 || len > p->bs.usable)) {
				pm_stat_add(&k->st->drop_too_long, 1);
			} else if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
				pm_slot_reject(p, k, j, idx, s->len, PM_SLOT_BAD_IDX);
			} else {
				uint8_t *buf = (uint8_t *)pm_region_buf(&p->region, idx);
				memcpy(buf, h->data + ((cons + RB_HDR) & mask), len);
				if (len >= 14)
					l4_csum(buf, len);
				s->len = (uint16_t)len;
				s->flags = 0;
				j = j + 1 == n ? 0 : j + 1;
				space--;
				pkts++;
				bytes += len;
			}
		}
		cons += step;
	}
	/* Pairs with the kernel's smp_load_acquire() of the consumer
	 * position: the records before it are free. */
	atomic_store_explicit(PM_ATOMIC(h->cons_pos), cons,
			      memory_order_release);
	k->hwtail = j;
	pm_count(k, pkts, bytes);
	return 0;
}

/* Hand [hwcur, head) to the host stack, one BPF_PROG_RUN per frame; the
 * kernel copies each, so every slot is free again at once. */
static int host_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pm_xdp_host *h = k->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, head = k->rhead;
	uint32_t i = k->hwcur;
	uint64_t pkts = 0, bytes = 0;

	while (i != head) {
		const struct netmap_slot *s = &ring->slot[i];
		uint32_t idx = s->buf_idx, len = s->len;
		enum pm_slot_verdict v = pm_slot_check(&p->bs, idx, len, 1);
		if (pm_unlikely(v != PM_SLOT_OK)) {
			pm_slot_reject(p, k, i, idx, len, v);
		} else if (pm_unlikely(len < 14)) {
			pm_slot_reject(p, k, i, idx, len, PM_SLOT_BAD_LEN);
		} else {
			struct xdp_md ctx = { .data_end = len,
					      .ingress_ifindex = (uint32_t)h->ifindex };
			LIBBPF_OPTS(bpf_test_run_opts, ro,
				    .data_in = pm_region_buf(&p->region, idx),
				    .data_size_in = len, .ctx_in = &ctx,
				    .ctx_size_in = sizeof(ctx),
				    .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .repeat = 1);
			int r = bpf_prog_test_run_opts(h->in_fd, &ro);
			if (pm_likely(r == 0)) {
				pkts++;
				bytes += len;
			} else {
				h->drops++;
				pm_log_ratelimited(p, &p->rl_ring, "%s: host TX ring: "
						   "cannot pass a frame to the host "
						   "stack: %s", p->name, strerror(-r));
			}
		}
		i = i + 1 == n ? 0 : i + 1;
	}
	k->hwcur = head;
	k->hwtail = head == 0 ? n - 1 : head - 1;
	pm_count(k, pkts, bytes);
	return 0;
}

void pm_xdp_host_close(struct pktmap_port *p, struct pm_xdp_host *h)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->ifindex,
		    .attach_point = BPF_TC_EGRESS);
	pm_xdp_libbpf_enter(p);
	if (h->tc_attached) {
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = TC_HANDLE, .priority = TC_PRIO);
		(void)bpf_tc_detach(&hook, &to);
		h->tc_attached = false;
	}
	if (h->hook_created) { /* the clsact qdisc we added */
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		(void)bpf_tc_hook_destroy(&hook);
	}
	pm_xdp_libbpf_leave();
	h->hook_created = false;
	offloads_restore(h, h->ifname);
	if (h->cons_map)
		munmap(h->cons_map, (size_t)sysconf(_SC_PAGESIZE));
	if (h->prod_map)
		munmap(h->prod_map, h->prod_map_len);
	h->cons_map = h->prod_map = NULL;
	h->cons_pos = NULL;
	h->prod_pos = NULL;
	if (h->eg_fd >= 0)
		close(h->eg_fd);
	if (h->in_fd >= 0)
		close(h->in_fd);
	if (h->rb_fd >= 0)
		close(h->rb_fd);
	h->eg_fd = h->in_fd = h->rb_fd = -1;
	if (h->lock_fd >= 0) {
		unlink(h->lock_path);
		close(h->lock_fd);
		h->lock_fd = -1;
	}
}

const struct pm_ring_ops pm_xdp_host_ring_ops = {
	.txsync = host_txsync,
	.rxsync = host_rxsync,
};
