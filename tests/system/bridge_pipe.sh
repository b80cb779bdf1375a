#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap bridge between two pipes, gen and recv at the far ends.
#
#   gen ---> pipe 0 ---> +--------------+ ---> pipe 1 ---> recv
#   {0          }0  A    | pktmap bridge|    B  {1          }1
#   recv <-- (ring 0) -- +--------------+ -- (ring 0) <---- gen
#                        (the other way, rings=2: ring k feeds ring k)
#
# 1. zero-copy (both pipes in one region): N frames A -> B, every one
#    delivered once, in order, payload intact; the bridge says zero-copy.
# 2. both directions at once (two ring pairs per pipe, ring k bridged to
#    ring k: A's far end sends on ring 1 and receives on ring 0, B's far
#    end sends on ring 0 and receives on ring 1).
# 3. copying (pipes in different regions): random lengths, checksums.
# 4. copying into smaller buffers: frames longer than B's 1024-byte
#    buffers leave as two-slot NS_MOREFRAG chains, counted once, intact.
# 5. --copy in one region; Ctrl-C on an idle bridge: summary, exit 0.
# 6. bad input: one line, exit 2; one port whose back end has no host
#    rings: one line, exit 1.
# 7. a memif port: the start line says why it copies and does not
#    suggest @mem: (which memif refuses).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# Regions named with @mem: are /dev/shm/pktmap-UID/NAME: ours start with
# $PIPE, so lib.sh removes them at exit.

N=${N:-1000000}
R="${PIPE}br"       # region names start with $PIPE: lib.sh cleans them up

recv_ok() { # FILE COUNT [what]
	local f=$1 n=$2 w=${3:-recv}
	echo "  $w: $(json "$f" packets) frames, gaps $(json "$f" gaps)," \
	     "reordered $(json "$f" reordered), bad $(json "$f" bad)"
	expect_eq "$w packets" "$(json "$f" packets)" "$n"
	expect_eq "$w gaps" "$(json "$f" gaps)" 0
	expect_eq "$w reordered" "$(json "$f" reordered)" 0
	expect_eq "$w bad" "$(json "$f" bad)" 0
}

echo "1. zero-copy, $N frames A -> B"
bg "$PKTMAP" bridge "pipe:${PIPE}a}0@mem:$R" "pipe:${PIPE}a{1@mem:$R" \
	-n "$N" -T 0 --json >"$TMP/b1.json" 2>"$TMP/b1.err"
bpid=$BG_PID
wait_for "$TMP/b1.err" "zero-copy"
bg "$PKTMAP" recv -i "pipe:${PIPE}a}1@mem:$R" -n "$N" -T 0 -q --json \
	>"$TMP/r1.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}a{0@mem:$R" -n "$N" -T 0 -q --json \
	>"$TMP/g1.json"
wait_bg "$rpid"
wait_bg "$bpid"
expect_eq "1: bridge exit status" "$WAIT_RC" 0
recv_ok "$TMP/r1.json" "$N"
expect_eq "1: bridge mode" "$(json "$TMP/b1.json" mode)" zerocopy
expect_eq "1: bridge frames" "$(json "$TMP/b1.json" packets)" "$N"
expect_eq "1: bridge drops" "$(json "$TMP/b1.json" drops)" 0
expect_eq "1: recv bytes" "$(json "$TMP/r1.json" bytes)" "$(json "$TMP/g1.json" bytes)"

echo "2. both directions at once"
C="@conf:rings=2@mem:${R}2"
n2=$((N / 2))
bg "$PKTMAP" bridge "pipe:${PIPE}b}0$C" "pipe:${PIPE}b{1$C" -n $((2 * n2)) \
	-T 0 --json >"$TMP/b2.json" 2>"$TMP/b2.err"
bpid=$BG_PID
wait_for "$TMP/b2.err" "zero-copy"
bg "$PKTMAP" recv -i "pipe:${PIPE}b}1-1$C" -n "$n2" -T 0 -q --json >"$TMP/r2b.json"
r1=$BG_PID
bg "$PKTMAP" recv -i "pipe:${PIPE}b{0-0$C" -n "$n2" -T 0 -q --json >"$TMP/r2a.json"
r2=$BG_PID
bg "$PKTMAP" gen -i "pipe:${PIPE}b}1-0$C" -n "$n2" -T 0 -q --json >"$TMP/g2b.json"
g2=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}b{0-1$C" -n "$n2" -T 0 -q --json \
	>"$TMP/g2a.json"
wait_bg "$g2"
wait_bg "$r1"
wait_bg "$r2"
wait_bg "$bpid"
expect_eq "2: bridge exit status" "$WAIT_RC" 0
recv_ok "$TMP/r2b.json" "$n2" "A->B recv"
recv_ok "$TMP/r2a.json" "$n2" "B->A recv"
python3 - "$TMP/b2.json" "$n2" <<'PY' || fail "2: per-direction counts"
import json, sys
d = json.load(open(sys.argv[1]))["directions"]
n = int(sys.argv[2])
assert [x["packets"] for x in d] == [n, n], d
PY

echo "3. copying between regions, random lengths"
n3=$((N / 4))
bg "$PKTMAP" bridge "pipe:${PIPE}c}0" "pipe:${PIPE}d{0" -n "$n3" -T 0 --json \
	>"$TMP/b3.json" 2>"$TMP/b3.err"
bpid=$BG_PID
wait_for "$TMP/b3.err" "copying"
bg "$PKTMAP" recv -i "pipe:${PIPE}d}0" -n "$n3" --csum -T 0 -q --json >"$TMP/r3.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}c{0" -n "$n3" -l 60-1514 \
	-s 10.0.0.1-10.0.0.9:1000-1009 -T 0 -q --json >"$TMP/g3.json"
wait_bg "$rpid"
wait_bg "$bpid"
expect_eq "3: bridge exit status" "$WAIT_RC" 0
recv_ok "$TMP/r3.json" "$n3"
expect_eq "3: checksums" "$(json "$TMP/r3.json" bad_csum)" 0
expect_eq "3: bytes" "$(json "$TMP/r3.json" bytes)" "$(json "$TMP/g3.json" bytes)"
expect_eq "3: bridge mode" "$(json "$TMP/b3.json" mode)" copy

echo "4. into 1024-byte buffers: long frames become two-slot chains"
bg "$PKTMAP" bridge "pipe:${PIPE}e}0" "pipe:${PIPE}f{0@conf:buf-size=1024" \
	-n "$n3" -T 0 --json >"$TMP/b4.json" 2>"$TMP/b4.err"
bpid=$BG_PID
wait_for "$TMP/b4.err" "copying"
bg "$PKTMAP" recv -i "pipe:${PIPE}f}0" -n "$n3" -T 0 -q --json >"$TMP/r4.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}e{0" -n "$n3" -l 60-1514 -T 0 -q \
	--json >"$TMP/g4.json"
wait_bg "$rpid"
wait_bg "$bpid"
expect_eq "4: bridge exit status" "$WAIT_RC" 0
recv_ok "$TMP/r4.json" "$n3"
expect_eq "4: bytes" "$(json "$TMP/r4.json" bytes)" "$(json "$TMP/g4.json" bytes)"
python3 - "$TMP/b4.json" "$n3" <<'PY' || fail "4: the frames did not become chains"
import json, sys
d = json.load(open(sys.argv[1]))["directions"][0]
# more TX slots than frames went out: the long ones took two
assert d["tx_port"]["lib_tx_packets"] == int(sys.argv[2]), d
assert d["tx_slots"] > d["packets"] and d["slots"] == d["packets"], d
PY

echo "5. --copy in one region; Ctrl-C on an idle bridge"
bg "$PKTMAP" bridge "pipe:${PIPE}g}0@mem:${R}5" "pipe:${PIPE}g{1@mem:${R}5" \
	--copy -T 0 --json >"$TMP/b5.json" 2>"$TMP/b5.err"
bpid=$BG_PID
wait_for "$TMP/b5.err" "copying \(--copy\)"
# SIGINT to the bridge itself: the timeout around it would pass it on
# twice (to its child and to its group), and a second one quits at once
kill -INT "$(pgrep -P "$bpid")"
wait_bg "$bpid"
expect_eq "5: exit status after SIGINT" "$WAIT_RC" 0
expect_eq "5: end" "$(json "$TMP/b5.json" end)" signal
expect_eq "5: mode" "$(json "$TMP/b5.json" mode)" copy

echo "6. bad input"
bad() { # WANT_RC ARGS...
	local want=$1 rc=0
	shift
	timeout 30 "$PKTMAP" bridge "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
	expect_eq "bridge $* exit status" "$rc" "$want"
	expect_eq "bridge $*: lines on stderr" "$(wc -l <"$TMP/err")" 1
	grep -q '^pktmap: ' "$TMP/err" || fail "bridge $*: $(cat "$TMP/err")"
	echo "  bridge $*: $(cat "$TMP/err")"
}
bad 2
bad 2 --bogus "pipe:${PIPE}x}0"
bad 2 -b 0 "pipe:${PIPE}x}0" "pipe:${PIPE}y}0"
bad 2 "pipe:${PIPE}x}0" "pipe:${PIPE}y}0" "pipe:${PIPE}z}0"
bad 2 "nosuch:x" "pipe:${PIPE}y}0"
# one port twice: refused at setup (it ran, its own peer, before)
bad 2 "pipe:${PIPE}x}0" "pipe:${PIPE}x}0@conf:slots=64"
grep -q "repeated port" "$TMP/err" || fail "6: $(cat "$TMP/err")"
bad 2 "pipe:${PIPE}x}0"   # a pipe has no host rings
"$PKTMAP" bridge --help | grep -q "usage: pktmap bridge" || fail "--help"

echo "7. a memif port: the start line does not suggest @mem: (memif refuses it)"
bg "$PKTMAP" bridge "memif:$TMP/m.sock@conf:role=server" "pipe:${PIPE}m{0" \
	>/dev/null 2>"$TMP/b7.err"
bpid=$BG_PID
wait_for "$TMP/b7.err" "copying"
stop_bg "$bpid"
wait_bg "$bpid"
grep -q "copying (a memif port has a buffer pool of its own)" "$TMP/b7.err" ||
	fail "7: $(head -1 "$TMP/b7.err")"

echo "PASS"
