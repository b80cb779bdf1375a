#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# memif throughput: pktmap beside dpdk-testpmd on the same two cores, in
# one run, tools interleaved. The sender on CPU 0, the receiver on CPU 1;
# 60-byte frames; one queue pair of 1024 descriptors, 2048-byte buffers on
# every side. Packets per second at the receiver:
#
#   testpmd_testpmd  testpmd txonly (server) -> memif -> testpmd rxonly (client)
#   pktmap_pktmap    pktmap gen (client)      -> memif -> pktmap recv (server)
#   pktmap_zc        pktmap gen (server)      -> memif -> pktmap recv (client):
#                    the receiving side is the zero-copy one
#   pktmap_testpmd   pktmap gen (client)      -> memif -> testpmd rxonly (server)
#   testpmd_pktmap   testpmd txonly (server)  -> memif -> pktmap recv (client)
#
# pktmap's programs run with --fast (frames written once, not read: the
# ring machinery, as testpmd's txonly/rxonly which touch only headers).
# testpmd's rate is its Rx-pps (--stats-period 1) averaged over the
# window; pktmap recv's is its own summary over the window. Each point:
# RUNS runs of SECS seconds after WARM seconds. The target (issue 22):
# pktmap's side at >= 1.0x testpmd's.
# Output: bench/results/memif.json.
#
# Usage: bench/memif.sh [PKTMAP]     (env: RUNS=3 SECS=5 WARM=2 OUT=...)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
for a in "$@"; do
	case $a in
	--quick) RUNS=${RUNS:-1} SECS=${SECS:-2} ;;
	--*) ;;
	*) PKTMAP=$a ;;
	esac
done
PKTMAP=${PKTMAP:-$ROOT/build/apps/pktmap}
RUNS=${RUNS:-3}
SECS=${SECS:-5}
WARM=${WARM:-2}
SIZES=60
OUT=${OUT:-$ROOT/bench/results/memif.json}
TMP=$(mktemp -d /tmp/memif_bench.XXXXXX)
S=$TMP/m.sock
TOOLS="testpmd_testpmd pktmap_pktmap pktmap_zc pktmap_testpmd testpmd_pktmap"

# no namespaces: the jobs and $TMP (bench/lib.sh)
trap bench_cleanup EXIT

command -v dpdk-testpmd >/dev/null || { echo "needs dpdk-testpmd (apt-get install dpdk)" >&2; exit 1; }
[ -x "$PKTMAP" ] || { echo "no pktmap binary at $PKTMAP" >&2; exit 1; }

# testpmd ROLE MODE CPU TAG: one memif port on $S; the forwarding lcore
# on CPU, the main lcore (which only waits) on the other one.
testpmd() {
	local role=$1 mode=$2 cpu=$3 tag=$4
	dpdk-testpmd --no-huge -m 512 --no-pci -l 0,1 --main-lcore $((1 - cpu)) \
		--file-prefix "mb$$$tag" \
		--vdev "net_memif0,role=$role,socket=$S,socket-abstract=no" -- \
		--forward-mode="$mode" --txpkts=60 --nb-cores=1 \
		--total-num-mbufs=16384 --stats-period 1 </dev/null \
		>"$TMP/$tag.out" 2>&1 &
}

# The mean of testpmd's Rx-pps lines from second WARM+1 on.
rx_pps() {
	tr -d '\r' <"$TMP/$1.out" | sed -n 's/.*Rx-pps: *\([0-9]*\).*/\1/p' |
		awk -v w="$WARM" 'NR > w && $1 > 0 { s += $1; n++ }
			END { print n ? int(s / n) : 0 }'
}

# pktmap recv for WARM+SECS seconds: its packets per second.
recv_pps() {
	timeout -s INT $((WARM + SECS)) taskset -c 1 "$PKTMAP" recv -i "$1" \
		--fast -T 0 -q --json >"$TMP/r.json" 2>"$TMP/r.err" || true
	python3 -c "import json; print(int(json.load(open('$TMP/r.json'))['pps']))" ||
		{ cat "$TMP/r.err" >&2; echo 0; }
}

# Until the server's socket is there (a DPDK client does not retry).
wait_sock() {
	for _ in $(seq 100); do
		[ -S "$S" ] && return 0
		sleep 0.1
	done
}

stop_all() {
	for pid in $(jobs -p); do kill -INT "$pid" 2>/dev/null; done
	wait 2>/dev/null || true
	rm -f "$S"
}

measure() {
	case $1 in
	testpmd_testpmd)
		testpmd server txonly 0 tx
		wait_sock
		# Its port must have started, or the client is told "ID not
		# found" (and a DPDK client does not retry).
		for _ in $(seq 100); do
			grep -q "packet forwarding - ports" "$TMP/tx.out" && break
			sleep 0.1
		done
		testpmd client rxonly 1 rx
		sleep $((WARM + SECS))
		stop_all
		rx_pps rx ;;
	pktmap_pktmap)
		taskset -c 0 "$PKTMAP" gen -i "memif:$S" --fast -T 0 -q \
			>/dev/null 2>&1 &
		recv_pps "memif:$S@conf:role=server"
		stop_all ;;
	pktmap_zc)
		taskset -c 0 "$PKTMAP" gen -i "memif:$S@conf:role=server" --fast \
			-T 0 -q >/dev/null 2>&1 &
		sleep 0.5
		recv_pps "memif:$S"
		stop_all ;;
	pktmap_testpmd)
		testpmd server rxonly 1 rx
		wait_sock
		taskset -c 0 "$PKTMAP" gen -i "memif:$S" --fast -T 0 -q \
			>/dev/null 2>&1 &
		sleep $((WARM + SECS))
		stop_all
		rx_pps rx ;;
	testpmd_pktmap)
		testpmd server txonly 0 tx
		wait_sock
		recv_pps "memif:$S"
		stop_all ;;
	esac
}

declare -A RES
for run in $(seq "$RUNS"); do
	for tool in $TOOLS; do
		v=$(measure "$tool")
		RES["60,$tool"]="${RES["60,$tool"]:-} $v"
		echo "run $run $tool: $v pps" >&2
	done
done

write_tx_json memif "packets/s received over memif, 60-byte frames, sender on CPU 0, receiver on CPU 1, ${SECS} s after ${WARM} s; pktmap with --fast" "\"warmup\": $WARM," pktmap_pktmap
