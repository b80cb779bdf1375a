/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0
 *
 * The receiver of bench/xdp_veth.sh: XDP_PASS on the receiving veth, for
 * every tool. A veth accepts frames redirected to its peer (pktmap's
 * live-frames TX, ndo_xdp_xmit) only while it runs an XDP program, so
 * the bench gives every tool the same receiver.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int bench_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
