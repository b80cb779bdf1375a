#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A memif <-> NIC gateway through the generic port API: `pktmap bridge
# memif:S xdp:vethA`, with veths in namespaces of this test.
#
#                          netns pmmA$$                netns pmmB$$
#   pktmap gen        +--------------------+      +------------------+
#   -i memif:S  ====> | pktmap bridge      |      | pktmap recv      |
#   (client)    memif | memif:S (server)   |      |  -i xdp:vethB    |
#                     |  <-> xdp:vethA ----+=veth=+---- vethB        |
#   pktmap recv <==== |                    |      | pktmap gen       |
#   -i memif:S        +--------------------+      |  -i xdp:vethB    |
#                                                 +------------------+
#
# 1. memif -> NIC: N frames from gen over memif leave on vethA, recv on
#    vethB counts N, no gaps, bytes intact.
# 2. NIC -> memif: N frames from gen on vethB reach recv over memif.
# Nothing is left behind: no XDP program, no socket file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/memif_lib.sh"
need_root
need_cmd ip

N=${N:-50000}
RATE=${RATE:-100k}
A=pmmA$$
B=pmmB$$
S=$TMP/m.sock
# shellcheck source=../../scripts/netns.sh
. "$(dirname "$0")/../../scripts/netns.sh"
trap 'netns_del "$A" "$B"; cleanup' EXIT
netns_new "$A" "$B"
netns_veth "$A" vethA "$B" vethB

wait_prog() {
	for _ in $(seq 200); do
		ip -n "$1" link show dev "$2" | grep -q "prog/xdp" && return 0
		sleep 0.05
	done
	fail "no XDP program on $2"
}

check() {
	echo "  $1: gen $(json "$2" packets) packets $(json "$2" bytes) bytes;" \
	     "recv $(json "$3" packets) packets $(json "$3" bytes) bytes," \
	     "gaps $(json "$3" gaps)"
	expect_eq "$1: gen packets" "$(json "$2" packets)" "$N"
	expect_eq "$1: recv packets" "$(json "$3" packets)" "$N"
	expect_eq "$1: recv bytes" "$(json "$3" bytes)" "$(json "$2" bytes)"
	expect_eq "$1: gaps" "$(json "$3" gaps)" 0
	expect_eq "$1: bad" "$(json "$3" bad)" 0
}

BG_TIMEOUT=120 bg ip netns exec "$A" "$PKTMAP" bridge \
	"memif:$S@conf:role=server" xdp:vethA -T 0 -q
bpid=$BG_PID
wait_prog "$A" vethA

echo "1. memif -> bridge -> xdp:vethA -> vethB"
bg ip netns exec "$B" "$PKTMAP" recv -i xdp:vethB@conf:rx-slots=4096 -n "$N" \
	-T 0 -q --json >"$TMP/r1.json"
rpid=$BG_PID
wait_prog "$B" vethB
timeout 60 "$PKTMAP" gen -i "memif:$S" -n "$N" -l 60-1500 -R "$RATE" -T 0 -q \
	--json >"$TMP/g1.json"
wait_bg "$rpid"
expect_eq "1: recv exit status" "$WAIT_RC" 0
check 1 "$TMP/g1.json" "$TMP/r1.json"

echo "2. vethB -> xdp:vethA -> bridge -> memif"
bg "$PKTMAP" recv -i "memif:$S" -n "$N" -T 0 -q -v --json >"$TMP/r2.json" \
	2>"$TMP/r2.err"
rpid=$BG_PID
# Connected first: frames the bridge takes from vethA before would wait in
# its memif TX ring, and the NIC side drops what does not fit.
wait_for "$TMP/r2.err" "connected to" 30
timeout 60 ip netns exec "$B" "$PKTMAP" gen -i xdp:vethB -n "$N" -l 60-1500 \
	-R "$RATE" -T 0 -q --json >"$TMP/g2.json"
wait_bg "$rpid"
expect_eq "2: recv exit status" "$WAIT_RC" 0
check 2 "$TMP/g2.json" "$TMP/r2.json"

stop_bg "$bpid"
wait_bg "$bpid"
expect_eq "bridge exit status" "$WAIT_RC" 0
[ -e "$S" ] && fail "the bridge left its socket $S"
l=$(netns_xdp_gone "$A" "$B") || fail "XDP program left behind: $l"
echo "PASS"
