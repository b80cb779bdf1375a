/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0
 *
 * pktmap's XDP program: netmap mode for the bound queues of an interface.
 *
 * Every frame that arrives on a queue with an AF_XDP socket in the map is
 * redirected to that socket, and only there: if the socket's RX ring is
 * full the frame is dropped (and counted by the socket), it never falls
 * through to the host stack. That is netmap's model: a ring in netmap mode
 * is disconnected from the host stack.
 *
 * A queue with no socket in the map gets XDP_PASS: netmap switches rings
 * to netmap mode one by one (a port opened as "xdp:eth0-2" takes queue 2
 * only), and the other queues keep feeding the host stack. XDP_DROP here
 * would silently black-hole the traffic RSS sends to queues nobody asked
 * for. "xdp:eth0" binds every queue, which disconnects the whole
 * interface from the host stack, as netmap does.
 *
 * "xdp.frags": the program handles multi-buffer frames (it only looks at
 * the queue index), so drivers let it run with an MTU above a page and
 * AF_XDP hands such frames to pktmap as NS_MOREFRAG chains.
 *
 * The program is built at build time and embedded in libpktmap; the name
 * "pktmap_xdp" is how a later run recognises a program left behind by a
 * crashed one.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* One entry per RX queue; the key is the queue index. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64); /* PM_MAX_RINGS */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} pktmap_xsks SEC(".maps");

SEC("xdp.frags")
int pktmap_xdp(struct xdp_md *ctx)
{
	/* The flags argument is the action when the lookup fails. */
	return bpf_redirect_map(&pktmap_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
