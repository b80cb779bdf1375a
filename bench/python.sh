#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The Python package (docs/python.md) against the numbers of issue 34, one
# run, receivers measured by bench/python_rx.py:
#
# 1. pipe: `pktmap gen -i pipe:{0 -l 60` -> a Python receiver on the }0 end
#    (same process pair for each): the numpy batch consumer (count, sum of
#    lengths, histogram of a header byte) and a per-packet Python loop
#    reading one header field; N packets each, timed from the first batch.
#
#      [ pktmap gen ] == pipe:bpyPID ==> [ python3 python_rx.py numpy|loop ]
#
# 2. veth (root): a flood no receiver can take all of: `pktmap gen` on
#    xdp:vethA@conf:tx=live (BPF_PROG_RUN live frames, no skb, several
#    Mpps; vethB runs an XDP_PASS program, bench/xdp_pass.bpf.c, so that
#    a veth takes redirected frames) pinned to CPU 0, 60-byte frames of
#    FLOWS UDP flows to a foreign MAC; the receiving veth's kernel work
#    runs on the sender's core. In the other namespace, pinned to CPU 1,
#    three receivers in turn, each over a window of SECONDS_ seconds
#    after WARM seconds, each doing the same per-packet work (one header
#    byte read): the per-packet loop on pkt:vethB (Python's default RX
#    there: the kernel's blocks read in place, docs/python.md), pypcap's
#    read loop and pcapy-ng's (PyPI, pinned: pypcap==1.3.0,
#    pcapy-ng==2.1.0, pip-installed into a venv under the build
#    directory). For each: captured rate, the rate vethB was offered
#    (its rx_packets) and what the receiver missed of it, its own drop
#    counter, and its CPU per packet. SENDER=pkt sends with
#    `pktmap gen -i pkt:vethA` instead (what the earlier runs did: the
#    sender's core bounded every receiver).
#
#      netns pyA$$   (CPU 0)                    netns pyB$$   (CPU 1)
#      [ pktmap gen -i xdp:vethA ] vethA ==== vethB [ receiver ]
#
# Output: packets per second and CPU ns per packet of each receiver (its
# process's user + system time), as JSON (python.json in bench/results/).
#
# Usage: bench/python.sh [BUILD]    (env: N=5000000 SECONDS_=5 WARM=1
#                                    PARTS="pipe veth" SENDER=xdp FLOWS=16
#                                    PIPE_SLOTS=)
#   quick check: N=20000 SECONDS_=0.5 WARM=0.2 bench/python.sh
#   RX_PORT='pkt:vethB@conf:rx=frames': the per-packet loop on another
#   port name of vethB (default pkt:vethB)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
BUILD=${1:-${PKTMAP_BUILD_DIR:-$ROOT/build}}
PKTMAP=$BUILD/apps/pktmap
N=${N:-5000000}
SECS=${SECONDS_:-5}
WARM=${WARM:-1}
PARTS=${PARTS:-pipe veth}
SENDER=${SENDER:-xdp}
# PIPE_SLOTS=4096: a pipe of that many slots a ring (batches up to one
# less), on both ends; default: the pipe's own (1024)
CONF=${PIPE_SLOTS:+@conf:slots=$PIPE_SLOTS}
FLOWS=${FLOWS:-16}
OUT=${OUT:-$ROOT/bench/results/python.json}
PY=/usr/bin/python3
RX="$ROOT/bench/python_rx.py"
VENV=$BUILD/bench-venv
A=pyA$$
B=pyB$$
TMP=$(mktemp -d /tmp/python_bench.XXXXXX)
trap 'bench_cleanup "$A" "$B"' EXIT

[ -x "$PKTMAP" ] || { echo "no pktmap binary at $PKTMAP" >&2; exit 1; }
[ -f "$BUILD/python/pktmap/__init__.py" ] ||
	{ echo "no Python package in $BUILD (meson setup -Dpython=enabled)" >&2; exit 1; }
export PYTHONPATH=$BUILD/python PYTHONDONTWRITEBYTECODE=1

results=()

# pipe MODE: gen -> pipe -> python_rx.py MODE, N frames of 60 bytes
pipe_run() {
	local mode=$1 name=bpy$$$1 gpid
	"$PKTMAP" gen -i "pipe:$name{0$CONF" -n "$N" -l 60 -T 0 -q >/dev/null &
	gpid=$!
	results+=("$("$PY" "$RX" "$mode" "pipe:$name}0$CONF" "$N")")
	wait "$gpid"
}

# The pinned PyPI readers in a venv of their own (system site packages for
# numpy); prints why not when pip cannot get or build them.
venv_ready() {
	[ -x "$VENV/bin/python3" ] && "$VENV/bin/python3" -c 'import pcap, pcapy' 2>/dev/null &&
		return 0
	"$PY" -m venv --system-site-packages "$VENV" &&
		"$VENV/bin/pip" install -q pypcap==1.3.0 pcapy-ng==2.1.0 >"$TMP/pip.log" 2>&1 ||
		{ echo "python.sh: pip could not install pypcap/pcapy-ng (offline?):" \
			"$(tail -n 3 "$TMP/pip.log")" >&2; return 1; }
}

veth_part() {
	local gpid kind port
	[ "$(id -u)" = 0 ] || { echo "python.sh: veth part needs root: skipped" >&2; return 0; }
	netns_new "$A" "$B"
	netns_veth "$A" vethA "$B" vethB
	case $SENDER in
	xdp)
		xdp_pass_attach "$B" vethB || { echo "python.sh: cannot attach XDP_PASS to vethB" >&2; return 1; }
		port="xdp:vethA@conf:tx=live" ;;
	pkt) port=pkt:vethA ;;
	*) echo "python.sh: unknown SENDER '$SENDER' (xdp, pkt)" >&2; exit 2 ;;
	esac
	ip netns exec "$A" taskset -c 0 "$PKTMAP" gen -i "$port" -l 60 -T 0 -q \
		-D 02:00:00:00:00:00 -s "10.0.0.1:1000-$((999 + FLOWS))" >/dev/null &
	gpid=$!
	results+=("$(ip netns exec "$B" taskset -c 1 "$PY" "$RX" loop-window \
		"${RX_PORT:-pkt:vethB}" "$SECS" "$WARM" vethB)")
	if venv_ready; then
		for kind in pypcap pcapy; do
			results+=("$(ip netns exec "$B" taskset -c 1 "$VENV/bin/python3" \
				"$RX" "$kind" vethB "$SECS" "$WARM")")
		done
	fi
	kill "$gpid" 2>/dev/null || true
	wait "$gpid" 2>/dev/null || true
}

for part in $PARTS; do
	case $part in
	pipe) pipe_run numpy; pipe_run loop ;;
	veth) veth_part ;;
	*) echo "python.sh: unknown part '$part' (pipe, veth)" >&2; exit 2 ;;
	esac
done

mkdir -p "$(dirname "$OUT")"
printf '%s\n' "${results[@]}" | LOAD_BEFORE=$LOAD_BEFORE "$PY" "$RX" summary "$OUT" "$N" "$SECS"
echo "results: $OUT"
