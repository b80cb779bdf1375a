#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# pktmap switch -p 2: two forwarding threads, each switching one ring
# pair of every client's pipe, sharing the MAC table. Clients (gen with
# one thread fills both of its TX rings in turn; recv and switch_client
# read both RX rings):
#
#   gen a --+-- valepPID (-p 2) --+-- recv b
#                                 +-- switch_client d (MAC d)
#
# flooding and learning with exact counts (each stream in order: recv's
# gaps 0), --list and -d served while the threads run (they are parked
# between rounds), a tap refused with -p 2 in one line, a clean exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CLIENT=${SWITCH_CLIENT:?SWITCH_CLIENT must name tests/system/switch_client}
S="valep$$"
MAC_A=02:00:00:00:00:0a
MAC_D=02:00:00:00:00:0d

out=$("$PKTMAP" switch "$S" -p 2 -n "st$$" 2>&1) && fail "-p 2 -n was accepted"
expect_eq "error lines" "$(printf '%s\n' "$out" | wc -l)" 1
printf '%s\n' "$out" | grep -q "use -p 1" || fail "no hint in: $out"

BG_TIMEOUT=120 bg "$PKTMAP" switch "$S" -p 2 -T 0 --json >"$TMP/sw.json" 2>"$TMP/sw.err"
sw_pid=$BG_PID
list() { "$PKTMAP" switch --list "$S"; }

for _ in $(seq 300); do
	list >/dev/null 2>&1 && break
	sleep 0.1
done
# the switch process itself (BG_PID is timeout's): its pipes are vsPID.*
real_pid=$("$PKTMAP" switch --list "$S" --json | grep -o '"pid":[0-9]*,"mac' | grep -o '[0-9]*')
[ -n "$real_pid" ] || fail "no pid in --list"
bg "$PKTMAP" recv -i "$S:b" -n 501 -T 0 -q --json >"$TMP/b.json"
recv_b=$BG_PID
switch_wait_ports "$S" b
bg "$CLIENT" "$S:d" learn "$MAC_D" >"$TMP/d.out"
client_d=$BG_PID
wait_for "$TMP/d.out" '^ready'
switch_wait_ports "$S" b d
# a client comes and goes while the threads run
"$PKTMAP" recv -i "$S:x" -n 1 -T 0 -q >/dev/null 2>&1 &
x=$!
switch_wait_ports "$S" x
kill "$x"
# SIGTERM ends recv and the client cleanly (exit 0): any other status (a
# ThreadSanitizer halt, under CI) is a failure, not swallowed
x_rc=0
wait "$x" || x_rc=$?
expect_eq "recv x exit at SIGTERM" "$x_rc" 0

"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D ff:ff:ff:ff:ff:ff -n 500 -b 50 -T 0 -q
wait_for "$TMP/d.out" '^received 500$'
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$MAC_D" -n 500 -b 50 -T 0 -q
wait_for "$TMP/d.out" '^received 1000$'
wait_bg "$recv_b"
expect_eq "recv b exit" "$WAIT_RC" 0
expect_eq "b packets" "$(json "$TMP/b.json" packets)" 501
expect_eq "b gaps" "$(json "$TMP/b.json" gaps)" 0
expect_eq "b bad (d's frame)" "$(json "$TMP/b.json" bad)" 1
"$PKTMAP" switch "$S" -d d
refute "d still attached after -d" '^d ' list
kill "$client_d"
wait_bg "$client_d"
expect_eq "client d exit at SIGTERM" "$WAIT_RC" 0
expect_eq "d total" "$(grep '^total' "$TMP/d.out" | cut -d' ' -f2)" 1000

kill -TERM "$sw_pid"
wait_bg "$sw_pid"
expect_eq "switch exit" "$WAIT_RC" 0
sum() {
	grep -o "{\"port\":\"$1\"[^}]*}" "$TMP/sw.json" | grep -o "\"$2\":[0-9]*" |
		cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'
}
expect_eq "threads" "$(json "$TMP/sw.json" nthreads)" 2
# both threads switched frames (gen fills both of its rings in turn)
per=$(grep -o '"frames_per_thread":\[[0-9,]*\]' "$TMP/sw.json" | grep -o '[0-9][0-9,]*')
[ "${per%%,*}" -gt 0 ] && [ "${per##*,}" -gt 0 ] || fail "a thread moved nothing: $per"
expect_eq "frames switched" "$((${per%%,*} + ${per##*,}))" 1001
expect_eq "frames from a" "$(sum a rx_frames)" 1000
expect_eq "frames to b" "$(sum b tx_frames)" 501
expect_eq "frames to d" "$(sum d tx_frames)" 1000
expect_eq "frames to a" "$(sum a tx_frames)" 0
left=$(compgen -G "/dev/shm/pktmap-$(id -u)/*pipe.vs$real_pid.*" || true)
[ -z "$left" ] || fail "the switch left pipes in /dev/shm: $left"
echo "switch_threads: ok"
