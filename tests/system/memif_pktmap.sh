#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap to pktmap over memif: the options of the name.
#
#   pktmap gen ==memif:S==> pktmap recv
#
# 1. two queue pairs, 256 descriptors, 4096-byte buffers, a secret: gen
#    (client, one thread over both rings: a stream per ring) -> recv
#    (server): every frame of 60-4000 bytes once, in order.
# 2. chains: gen as server with 4096-byte buffers sends frames of up to
#    4000 bytes to a client whose buffers are 2048 bytes: each frame is
#    split over descriptors (MEMIF_DESC_FLAG_NEXT) and arrives as a chain
#    of slots (NS_MOREFRAG), counted once, bytes intact.
# 3. a wrong secret: refused with a log line on both sides, and the
#    client keeps trying until the right server appears.
# 4. bad names and options: one line naming the port and the remedy.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/memif_lib.sh"

N=${N:-100000}
S=$TMP/s.sock

check() {
	echo "  $1: gen $(json "$2" packets) packets $(json "$2" bytes) bytes;" \
	     "recv $(json "$3" packets) packets $(json "$3" bytes) bytes," \
	     "gaps $(json "$3" gaps) bad $(json "$3" bad)"
	expect_eq "$1: gen packets" "$(json "$2" packets)" "$N"
	expect_eq "$1: recv packets" "$(json "$3" packets)" "$N"
	expect_eq "$1: recv bytes" "$(json "$3" bytes)" "$(json "$2" bytes)"
	expect_eq "$1: gaps" "$(json "$3" gaps)" 0
	expect_eq "$1: reordered" "$(json "$3" reordered)" 0
	expect_eq "$1: bad" "$(json "$3" bad)" 0
	expect_eq "$1: recv drops" "$(json "$3" drops)" 0
}

echo "1. rings=2, slots=256, buf-size=4096, secret"
O=rings=2,slots=256,buf-size=4096,secret=s3cr3t
bg "$PKTMAP" recv -i "memif:$S@conf:role=server,$O" -n "$N" --csum -T 0 -q \
	--json >"$TMP/r1.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "memif:$S@conf:$O" -n "$N" -l 60-4000 -T 0 -q \
	--json >"$TMP/g1.json"
wait_bg "$rpid"
expect_eq "1: recv exit status" "$WAIT_RC" 0
check 1 "$TMP/g1.json" "$TMP/r1.json"

echo "2. chains: 4000-byte frames into 2048-byte buffers"
bg "$PKTMAP" gen -i "memif:$S@conf:role=server,buf-size=4096" -n "$N" \
	-l 2000-4000 -T 0 -q --json >"$TMP/g2.json"
gpid=$BG_PID
timeout 60 "$PKTMAP" recv -i "memif:$S@conf:buf-size=2048" -n "$N" -T 0 -q \
	--json >"$TMP/r2.json"
wait_bg "$gpid"
expect_eq "2: gen exit status" "$WAIT_RC" 0
check 2 "$TMP/g2.json" "$TMP/r2.json"

echo "3. a wrong secret, then the right server"
bg "$PKTMAP" recv -i "memif:$S@conf:role=server,secret=right" -n 10 -T 0 -v \
	--json >"$TMP/r3.json" 2>"$TMP/r3.err"
rpid=$BG_PID
BG_TIMEOUT=60 bg "$PKTMAP" gen -i "memif:$S@conf:secret=wrong" -n 10 -T 0 -v \
	--json >"$TMP/g3.json" 2>"$TMP/g3.err"
gpid=$BG_PID
wait_for "$TMP/r3.err" "secret does not match" 10
wait_for "$TMP/g3.err" "the peer said: the client's secret does not match" 10
kill -0 "$gpid" || fail "3: gen gave up"
stop_bg "$rpid"
wait_bg "$rpid"
bg "$PKTMAP" recv -i "memif:$S@conf:role=server,secret=wrong" -n 10 -T 0 -q \
	--json >"$TMP/r3b.json"
rpid=$BG_PID
wait_bg "$gpid"
expect_eq "3: gen exit status" "$WAIT_RC" 0
wait_bg "$rpid"
expect_eq "3: recv exit status" "$WAIT_RC" 0
expect_eq "3: recv packets" "$(json "$TMP/r3b.json" packets)" 10

echo "4. bad names and options"
bad() {
	local name=$1 want=$2 out
	if out=$(timeout 10 "$PKTMAP" recv -i "$name" -n 1 -T 0 -q 2>&1); then
		fail "$name: opened"
	fi
	printf '%s\n' "$out" | grep -qF -- "$want" ||
		fail "$name: message '$out' lacks '$want'"
	expect_eq "$name: lines" "$(printf '%s\n' "$out" | wc -l)" 1
}
: >"$TMP/file"
bad "memif:$TMP/file@conf:role=server" "exists and is not a socket"
bad "memif:$S@conf:slots=1000" "power of two"
bad "memif:$S/Z@conf:role=server" "drop /Z or use role=client"
bad "memif:$S@mem:x" "buffer pool of their own"
bad "memif:$S@conf:role=boss" "server or client"
bg "$PKTMAP" recv -i "memif:$S@conf:role=server" -T 0 -q
rpid=$BG_PID
for _ in $(seq 100); do
	[ -S "$S" ] && break
	sleep 0.1
done
bad "memif:$S@conf:role=server" "in use by another memif server"
stop_bg "$rpid"
wait_bg "$rpid"
[ -e "$S" ] && fail "recv left its socket behind"
echo "PASS"
