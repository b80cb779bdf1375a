#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# TX on a veth pair: `pktmap gen -i xdp:vethA` (AF_XDP, copy mode: veth has
# no zero-copy) beside what a user would pick instead, counted by the
# receiving veth's kernel counter (rx_packets) over a fixed window after a
# warm-up:
#
#   pktmap_xdp     pktmap gen -i xdp:vethA (every frame stamped)
#   pktmap_xdp_live  pktmap gen -i xdp:vethA@conf:tx=live (BPF_PROG_RUN live
#                  frames redirected to vethA: ndo_xdp_xmit, no skb)
#   pktmap_pkt     pktmap gen -i pkt:vethA (AF_PACKET, for reference)
#   sendto         an AF_PACKET raw socket, one sendto() per frame
#                  (bench/sendto_loop.c)
#   testpmd_xdp    dpdk-testpmd txonly on net_af_xdp (if dpdk is installed)
#
#   netns pxA$$                          netns pxB$$
#   [ sender, pinned to CPU 0 ] vethA ==== vethB [ kernel counts rx_packets ]
#
# The receiving vethB runs an XDP_PASS program (bench/xdp_pass.bpf.c) for
# every tool, since a veth takes redirected frames (pktmap_xdp_live) only
# while its peer runs one; RX_XDP=0 runs without it, and without
# pktmap_xdp_live. Every sender's frames have the destination MAC 02:00:00:00:00:00 (what
# testpmd txonly sends), not vethB's: the receiving stack drops them right
# after counting (PACKET_OTHERHOST), the same work for every sender. By
# default no RPS: the receiving veth's kernel work runs on the sending core;
# RPS=1 moves it to CPU 1 (then the sender's own cost shows more). Each
# point: RUNS runs of SECS seconds after WARM seconds, tools interleaved
# within each run; median/min/max in packets per second.
# Output: bench/results/xdp_veth.json.
#
# Usage: bench/xdp_veth.sh [PKTMAP]
#        (env: SIZES="60" RUNS=3 SECS=3 WARM=1 RPS=0 RX_XDP=1 OUT=...
#         TOOLS="pktmap_xdp testpmd_xdp": a subset)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
# --quick (bench/run): one short run per point.
for a in "$@"; do
	case $a in
	--quick) RUNS=${RUNS:-1} SECS=${SECS:-2} ;;
	--*) ;;
	*) PKTMAP=$a ;;
	esac
done
PKTMAP=${PKTMAP:-$ROOT/build/apps/pktmap}
SIZES=${SIZES:-60}
RUNS=${RUNS:-3}
SECS=${SECS:-3}
WARM=${WARM:-1}
CPU=${CPU:-0}
RPS=${RPS:-0}
RX_XDP=${RX_XDP:-1}
DMAC=02:00:00:00:00:00
OUT=${OUT:-$ROOT/bench/results/xdp_veth.json}
A=pxA$$
B=pxB$$
TMP=$(mktemp -d /tmp/xdp_bench.XXXXXX)

trap 'bench_cleanup "$A" "$B"' EXIT

[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$PKTMAP" ] || { echo "no pktmap binary at $PKTMAP" >&2; exit 1; }
if [ -z "${TOOLS:-}" ]; then
	TOOLS="pktmap_xdp pktmap_pkt sendto"
	[ "$RX_XDP" = 1 ] && TOOLS="pktmap_xdp pktmap_xdp_live pktmap_pkt sendto"
	if command -v dpdk-testpmd >/dev/null; then
		TOOLS="$TOOLS testpmd_xdp"
	else
		echo "no dpdk-testpmd (apt-get install -y dpdk): skipping that peer" >&2
	fi
fi
cc -O2 -o "$TMP/sendto_loop" "$ROOT/bench/sendto_loop.c"

netns_new "$A" "$B"
netns_veth "$A" vethA "$B" vethB
RPS_WHAT="no RPS: the receiving veth's kernel work on the sending core"
if [ "$RPS" = 1 ]; then
	RPS_WHAT="RPS: the receiving veth's kernel work on CPU 1"
	# The receiving veth's kernel work on CPU 1, away from the sender.
	ip netns exec "$B" sh -c 'echo 2 > /sys/class/net/vethB/queues/rx-0/rps_cpus'
fi

RX_WHAT="vethB runs no XDP program"
if [ "$RX_XDP" = 1 ]; then
	RX_WHAT="vethB runs an XDP_PASS program for every tool"
	xdp_pass_attach "$B" vethB ||
		{ echo "cannot attach the XDP_PASS program to vethB" >&2; exit 1; }
fi

# One run: packets per second vethB counted in a window of SECS seconds,
# WARM seconds after "$@" started (bench/lib.sh).
measure() { tx_window "$A" "$B" vethB "$CPU" "$WARM" "$SECS" "$@"; }

declare -A RES CPUNS SYSK
for size in $SIZES; do
	rm -f "$TMP/f.pcap"
	"$PKTMAP" gen -i "pcap:$TMP/f.pcap/T" -n 1 -l "$size" -D "$DMAC" -q >/dev/null
	for _ in $(seq "$RUNS"); do
		for tool in $TOOLS; do
			case $tool in
			pktmap_xdp) v=$(measure "$PKTMAP" gen -i xdp:vethA -l "$size" -D "$DMAC" -T 0 -q) ;;
			pktmap_xdp_live) v=$(measure "$PKTMAP" gen -i "xdp:vethA@conf:tx=live" -l "$size" -D "$DMAC" -T 0 -q) ;;
			pktmap_pkt) v=$(measure "$PKTMAP" gen -i pkt:vethA -l "$size" -D "$DMAC" -T 0 -q) ;;
			sendto) v=$(measure "$TMP/sendto_loop" vethA "$TMP/f.pcap") ;;
			testpmd_xdp)
				# Forwarding lcore = CPU 0 (the main lcore 1 only waits).
				v=$(measure dpdk-testpmd --no-huge -m 1024 --no-pci -l 0,1 \
					--main-lcore 1 --file-prefix "px$$" \
					--vdev net_af_xdp0,iface=vethA -- \
					--forward-mode=txonly --txpkts="$size" --nb-cores=1 \
					--total-num-mbufs=16384 --stats-period 1) ;;
			esac
			read -r v c y <<<"$v"
			RES["$size,$tool"]="${RES["$size,$tool"]:-} $v"
			CPUNS["$size,$tool"]="${CPUNS["$size,$tool"]:-} $c"
			SYSK["$size,$tool"]="${SYSK["$size,$tool"]:-} $y"
		done
	done
	for tool in $TOOLS; do
		echo "size $size $tool:${RES["$size,$tool"]} pps" >&2
	done
done

write_tx_json xdp_veth "TX packets/s on veth, counted by the peer's rx_packets over ${SECS} s after ${WARM} s; sender pinned to CPU $CPU; $RPS_WHAT; $RX_WHAT; frames to a foreign unicast MAC" "\"warmup\": $WARM, \"rps\": $RPS, \"rx_xdp\": $RX_XDP," pktmap_xdp
