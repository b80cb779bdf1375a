#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# RX on a veth pair: what a receiver takes off vethB while
# `pktmap gen -i xdp:vethA` (pinned to CPU 0) sends as fast as it can for
# SECS seconds. Receivers, pinned to CPU 1:
#
#   pktmap_xdp        pktmap recv -i xdp:vethB (every frame's sequence
#                     number and payload checked)
#   testpmd_xdp       dpdk-testpmd rxonly on net_af_xdp (if dpdk is installed)
#   tcpdump_rps       tcpdump -w /dev/null -i vethB
#
#   netns prA$$                          netns prB$$
#   [ gen, CPU 0 ] vethA ==== vethB [ receiver, CPU 1 ]
#
# Where the receiving veth's kernel work runs decides much on veth:
#   - XDP receivers, plain: the XDP program and AF_XDP's copy into the UMEM
#     run in the sender's softirq, on CPU 0 (veth's NAPI is scheduled where
#     the frame is sent);
#   - XDP receivers, "_napi1": veth's NAPI threaded and its thread pinned to
#     CPU 1, the receiver's core, beside the application;
#   - tcpdump_rps: RPS moves the receiving stack to CPU 1 (docs/performance.md, Method).
# Each point: RUNS runs, tools interleaved; median/min/max of the packets
# per second the receiver got, and of the loss (sent - received).
# Output: bench/results/xdp_veth_rx.json.
#
# Usage: bench/xdp_veth_rx.sh [PKTMAP]   (env: SIZE=60 RUNS=3 SECS=3)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
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
SIZE=${SIZE:-60}
RUNS=${RUNS:-3}
SECS=${SECS:-3}
OUT=${OUT:-$ROOT/bench/results/xdp_veth_rx.json}
A=prA$$
B=prB$$
TMP=$(mktemp -d /tmp/xdp_rx_bench.XXXXXX)

trap 'bench_cleanup "$A" "$B"' EXIT

[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$PKTMAP" ] || { echo "no pktmap binary at $PKTMAP" >&2; exit 1; }
TOOLS="pktmap_xdp"
HAVE_TESTPMD=0
command -v dpdk-testpmd >/dev/null && HAVE_TESTPMD=1 && TOOLS="$TOOLS testpmd_xdp" ||
	echo "no dpdk-testpmd (apt-get install -y dpdk): skipping that peer" >&2
TOOLS="$TOOLS pktmap_xdp_napi1"
[ $HAVE_TESTPMD = 0 ] || TOOLS="$TOOLS testpmd_xdp_napi1"
command -v tcpdump >/dev/null && TOOLS="$TOOLS tcpdump_rps" ||
	echo "no tcpdump: skipping that peer" >&2

netns_new "$A" "$B"
netns_veth "$A" vethA "$B" vethB

rps() { ip netns exec "$B" sh -c "echo $1 > /sys/class/net/vethB/queues/rx-0/rps_cpus"; }
# Wait until something holds vethB: an XDP program, or a packet socket.
wait_ready() {
	local _
	for _ in $(seq 100); do
		case $1 in
		xdp) ip -n "$B" link show dev vethB | grep -q prog/xdp && return 0 ;;
		pkt) [ "$(ip netns exec "$B" awk 'NR > 1' /proc/net/packet | wc -l)" -gt 0 ] && return 0 ;;
		esac
		sleep 0.1
	done
	echo "receiver did not start" >&2
	return 1
}

# veth's NAPI (there once an XDP program is attached): threaded, its
# thread on CPU 1 ($1 = 1), or in the sender's softirq ($1 = 0).
napi_on_cpu1() {
	local t
	ip netns exec "$B" sh -c "echo $1 > /sys/class/net/vethB/threaded"
	sleep 0.2
	[ "$1" = 1 ] || return 0
	for t in $(ps -eo pid,comm | awk '/napi\/vethB/ {print $1}'); do
		taskset -pc 1 "$t" >/dev/null
	done
}

# One run of receiver $1: prints "received sent".
run() {
	local tool=$1 pid got napi=0
	case $tool in
	*_napi1) napi=1 ;;
	esac
	case $tool in
	pktmap_xdp*)
		rps 0
		ip netns exec "$B" taskset -c 1 "$PKTMAP" recv -i xdp:vethB -T 0 -q \
			--json >"$TMP/r.json" 2>/dev/null &
		pid=$!
		wait_ready xdp
		napi_on_cpu1 $napi ;;
	testpmd_xdp*)
		rps 0
		ip netns exec "$B" dpdk-testpmd --no-huge -m 1024 --no-pci -l 0,1 \
			--main-lcore 0 --file-prefix "pr$$" \
			--vdev net_af_xdp0,iface=vethB -- --forward-mode=rxonly \
			--nb-cores=1 --total-num-mbufs=16384 --stats-period 1 \
			>"$TMP/t.out" 2>&1 </dev/null &
		pid=$!
		wait_ready xdp
		sleep 1
		napi_on_cpu1 $napi ;;
	tcpdump_rps)
		rps 2
		ip netns exec "$B" taskset -c 1 tcpdump -i vethB -w /dev/null -n \
			>/dev/null 2>"$TMP/d.err" &
		pid=$!
		wait_ready pkt ;;
	esac
	timeout -s INT "$SECS" ip netns exec "$A" taskset -c 0 "$PKTMAP" gen \
		-i xdp:vethA -l "$SIZE" -D 02:00:00:00:00:00 -T 0 -q --json \
		>"$TMP/g.json" 2>"$TMP/g.err" || true
	[ -s "$TMP/g.json" ] || cat "$TMP/g.err" >&2
	sleep 0.5
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	case $tool in
	pktmap_xdp*) got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' "$TMP/r.json" 2>/dev/null) ;;
	testpmd_xdp*) # the final "Forward statistics" (periodic ones come first)
		got=$(sed -n '/Forward statistics for port 0/,$p' "$TMP/t.out" |
			grep -m1 -o 'RX-packets: *[0-9]*' | grep -o '[0-9]*$') ;;
	tcpdump_rps) got=$(grep -o '^[0-9]* packets captured' "$TMP/d.err" | cut -d' ' -f1) ;;
	esac
	echo "${got:-0} $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' "$TMP/g.json" 2>/dev/null || echo 0)"
}

declare -A RX LOSS
for r in $(seq "$RUNS"); do
	for tool in $TOOLS; do
		read -ra got <<<"$(run "$tool")"
		set -- "${got[@]}"
		RX[$tool]="${RX[$tool]:-} $(python3 -c "print(int($1 / $SECS))")"
		LOSS[$tool]="${LOSS[$tool]:-} $(python3 -c "print(round(100.0 * ($2 - $1) / max($2, 1), 2))")"
		echo "run $r $tool: received $1 of $2" >&2
	done
done

mkdir -p "$(dirname "$OUT")"
# one argument per tool: TOOL:RX,RX,...:LOSS,LOSS,...
mapfile -t per_tool < <(for t in $TOOLS; do echo "$t:${RX[$t]# }:${LOSS[$t]# }"; done | tr ' ' ',')
python3 - "$OUT" "$SIZE" "$SECS" "$RUNS" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" "$(uname -r)" \
	"${per_tool[@]}" <<'EOF'
import json, statistics, sys, time
out, size, secs, runs, commit, cpu, cores, kernel = sys.argv[1:9]
points = []
for arg in sys.argv[9:]:
    tool, rx, loss = arg.split(":")
    rx = [int(v) for v in rx.split(",")]
    loss = [float(v) for v in loss.split(",")]
    points.append({"size": int(size), "tool": tool, "pps_median": int(statistics.median(rx)),
                   "pps_min": min(rx), "pps_max": max(rx), "runs": rx,
                   "loss_pct_median": statistics.median(loss), "loss_pct_runs": loss})
d = {"bench": "xdp_veth_rx",
     "what": "RX packets/s taken by a receiver on CPU 1 while pktmap gen -i xdp:vethA sends at full speed on CPU 0 for %s s; loss = sent - received; _napi1: veth's NAPI threaded on CPU 1, else in the sender's softirq; tcpdump with RPS to CPU 1" % secs,
     "machine": {"cpu": cpu, "cores": int(cores), "kernel": kernel},
     "commit": commit, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
     "seconds": int(secs), "runs": int(runs), "points": points}
json.dump(d, open(out, "w"), indent=1)
for p in points:
    print("%-18s %7.0f kpps received, loss %5.2f%%" % (p["tool"], p["pps_median"] / 1e3,
          p["loss_pct_median"]))
EOF
echo "wrote $OUT" >&2
