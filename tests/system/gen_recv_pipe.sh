#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap gen -> pipe -> pktmap recv, in two processes.
#
#   process 1                                   process 2
#   +--------------------+     pipe:tPID{0      +--------------------+
#   | pktmap gen         | ==== ring(s) ======> | pktmap recv        |
#   |  -i pipe:tPIDa{0   |     (buffers are     |  -i pipe:tPIDa}0   |
#   +--------------------+      swapped)        +--------------------+
#
# 1. recv first, 1M 60-byte frames: exact count, bytes as gen reports, no
#    gaps, no reordering, no foreign frames.
# 2. random lengths 60-1514 and address/port ranges, 2 gen threads on
#    2 rings, 2 recv threads checking checksums too.
# 3. one gen thread over 2 rings (one stream per ring), 2 recv threads.
# 4. --fast on both sides: counts only.
# 5. backpressure: gen fills the pipe before recv exists; it must block,
#    not drop, and every frame arrives once recv starts.
# 6. SIGINT twice within a second (as `timeout -s INT` sends it: to the
#    program, then to its process group) while gen is ending: both still
#    print their summaries, and recv's count is gen's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=${N:-1000000}

# check CASE GEN_JSON RECV_JSON COUNT: the two summaries agree, nothing lost.
check() {
	local c=$1 g=$2 r=$3 n=$4

	echo "  $c: gen $(json "$g" packets) packets $(json "$g" bytes) bytes;" \
	     "recv $(json "$r" packets) packets $(json "$r" bytes) bytes," \
	     "gaps $(json "$r" gaps) reordered $(json "$r" reordered)" \
	     "bad $(json "$r" bad)"
	expect_eq "$c: gen packets" "$(json "$g" packets)" "$n"
	expect_eq "$c: gen pending" "$(json "$g" pending)" 0
	expect_eq "$c: recv packets" "$(json "$r" packets)" "$n"
	expect_eq "$c: recv bytes" "$(json "$r" bytes)" "$(json "$g" bytes)"
	expect_eq "$c: gaps" "$(json "$r" gaps)" 0
	expect_eq "$c: reordered" "$(json "$r" reordered)" 0
	expect_eq "$c: bad" "$(json "$r" bad)" 0
	expect_eq "$c: recv drops" "$(json "$r" drops)" 0
	expect_eq "$c: gen drops" "$(json "$g" drops)" 0
}

echo "1. recv first, $N frames of 60 bytes"
bg "$PKTMAP" recv -i "pipe:${PIPE}a}0" -n "$N" -T 0 -q --json >"$TMP/r1.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}a{0" -n "$N" -T 0 -q --json \
	>"$TMP/g1.json"
wait_bg "$rpid"
expect_eq "1: recv exit status" "$WAIT_RC" 0
check 1 "$TMP/g1.json" "$TMP/r1.json" "$N"

echo "2. random lengths 60-1514, address ranges, 2+2 threads on 2 rings"
bg "$PKTMAP" recv -i "pipe:${PIPE}b}0@conf:rings=2" -p 2 -n "$N" --csum \
	-T 0 -q --json >"$TMP/r2.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}b{0@conf:rings=2" -p 2 -n "$N" \
	-l 60-1514 -s 10.0.0.1-10.0.0.50:1000-1099 -d 10.1.0.1:5000-5003 \
	-T 0 -q --json >"$TMP/g2.json"
wait_bg "$rpid"
expect_eq "2: recv exit status" "$WAIT_RC" 0
check 2 "$TMP/g2.json" "$TMP/r2.json" "$N"
expect_eq "2: bad checksums" "$(json "$TMP/r2.json" bad_csum)" 0
for t in 0 1; do
	# each gen thread sent half, on its own ring, to its recv thread
	grep -q "\"id\":$t,\"port\":\"pipe:${PIPE}b}0-$t@conf:rings=2\",\"packets\":$((N / 2))," \
		"$TMP/r2.json" || fail "2: recv thread $t did not get $((N / 2)): $(cat "$TMP/r2.json")"
done

n3=$((N / 4))
echo "3. one gen thread over 2 rings (a stream per ring), 2 recv threads"
bg "$PKTMAP" recv -i "pipe:${PIPE}c}0@conf:rings=2" -p 2 -n "$n3" \
	-T 0 -q --json >"$TMP/r3.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}c{0@conf:rings=2" -n "$n3" -b 64 \
	-T 0 -q --json >"$TMP/g3.json"
wait_bg "$rpid"
expect_eq "3: recv exit status" "$WAIT_RC" 0
check 3 "$TMP/g3.json" "$TMP/r3.json" "$n3"

echo "4. --fast on both sides"
bg "$PKTMAP" recv -i "pipe:${PIPE}d}0" --fast -n "$N" -T 0 -q --json \
	>"$TMP/r4.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}d{0" --fast -n "$N" -T 0 -q --json \
	>"$TMP/g4.json"
wait_bg "$rpid"
expect_eq "4: recv exit status" "$WAIT_RC" 0
expect_eq "4: recv packets" "$(json "$TMP/r4.json" packets)" "$N"
expect_eq "4: recv bytes" "$(json "$TMP/r4.json" bytes)" "$((N * 60))"
expect_eq "4: gen bytes" "$(json "$TMP/g4.json" bytes)" "$((N * 60))"

echo "5. backpressure: gen fills the pipe before recv starts"
# gen prints a line every 0.1 s; "0.000 pps" shows it blocked on a full pipe.
bg "$PKTMAP" gen -i "pipe:${PIPE}e{0" -n "$N" -T 0.1 --json \
	>"$TMP/g5.json" 2>"$TMP/g5.log"
gpid=$BG_PID
wait_for "$TMP/g5.log" " 0\.000 pps"
timeout 60 "$PKTMAP" recv -i "pipe:${PIPE}e}0" -n "$N" -T 0 -q --json \
	>"$TMP/r5.json"
wait_bg "$gpid"
expect_eq "5: gen exit status" "$WAIT_RC" 0
check 5 "$TMP/g5.json" "$TMP/r5.json" "$N"

echo "6. SIGINT twice within a second: summaries printed, counts agree"
# recv is stopped, so gen's stop waits for room in the full pipe: the
# second SIGINT (as `timeout -s INT` sends one to the program and one to
# its group) lands while gen is ending. It must not cost the summary; a
# second one a second or more later would end gen at once.
bg "$PKTMAP" recv -i "pipe:${PIPE}f}0" -T 0 -q --json >"$TMP/r6.json"
rpid=$BG_PID
bg "$PKTMAP" gen -i "pipe:${PIPE}f{0" -T 0 -q --json >"$TMP/g6.json"
gpid=$BG_PID
sleep 0.5
r=$(pgrep -P "$rpid")
g=$(pgrep -P "$gpid")
kill -STOP "$r"
sleep 0.3
kill -INT "$g"
sleep 0.1
kill -INT "$g"
sleep 0.3
kill -CONT "$r"
wait_bg "$gpid"
expect_eq "6: gen exit status after two SIGINTs" "$WAIT_RC" 0
sent=$(json "$TMP/g6.json" packets)
[ "$sent" -gt 0 ] || fail "6: gen sent nothing"
sleep 0.3
kill -INT "$r"
kill -INT "$r"
wait_bg "$rpid"
expect_eq "6: recv exit status after two SIGINTs" "$WAIT_RC" 0
expect_eq "6: recv packets = gen's" "$(json "$TMP/r6.json" packets)" "$sent"
check 6 "$TMP/g6.json" "$TMP/r6.json" "$sent"

echo "PASS"
