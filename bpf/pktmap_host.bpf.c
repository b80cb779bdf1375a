/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0
 *
 * pktmap's host rings (xdp:IFACE^ and xdp:IFACE*): netmap's connection to
 * the host stack, from BPF pieces every kernel has.
 *
 * Host RX ring (what the host stack sends out of IFACE): pktmap_host_eg
 * runs at TC egress of IFACE, copies each frame into a BPF ring buffer and
 * takes it (TC_ACT_STOLEN), so it reaches the application instead of the
 * wire.
 *
 * Host TX ring (what the application gives the host stack): user space
 * runs pktmap_host_in with BPF_PROG_RUN, BPF_F_TEST_XDP_LIVE_FRAMES and
 * ingress_ifindex = IFACE; it returns XDP_PASS, and the kernel hands the
 * frame to the stack as if IFACE had received it.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

/* The longest frame the stack may send: offloads are off (no GSO). */
#define HOST_MAX 4096

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} pktmap_host_rb SEC(".maps");

struct frame { __u8 d[HOST_MAX]; };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame);
} pktmap_host_buf SEC(".maps");

SEC("tc")
int pktmap_host_eg(struct __sk_buff *skb)
{
	__u32 k = 0, len = skb->len;
	struct frame *f = bpf_map_lookup_elem(&pktmap_host_buf, &k);
	if (!f || len == 0 || len > HOST_MAX)
		return TC_ACT_SHOT;
	if (bpf_skb_load_bytes(skb, 0, f->d, len))
		return TC_ACT_SHOT;
	/* Taken: STOLEN tells the sender it went out (SHOT would make TCP
	 * send the same segment again at once). A full ring buffer is a
	 * local drop: the sender backs off and retries, flow control. */
	if (bpf_ringbuf_output(&pktmap_host_rb, f->d, len, 0))
		return TC_ACT_SHOT;
	return TC_ACT_STOLEN;
}

SEC("xdp")
int pktmap_host_in(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
