#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# pktmap switch with client processes (the real gen and recv, and
# switch_client for a learning receiver and a garbage writer):
#
#            gen a --+                 +-- recv b
#   (killed) gen k --+-- valesPID ----+-- recv c
#   switch_client g -+  (learning)    +-- switch_client d (MAC d)
#
# flooding (a broadcast reaches b, c, d, never a), learning (a frame to d's
# MAC reaches d only), no reflection (a frame to a's own MAC goes nowhere),
# isolation (no shared-memory object is mapped by two clients), no
# head-of-line blocking (a stopped client loses its own frames only), SIGKILL of
# a client mid-stream (its port, pipe and region go; the rest goes on),
# garbage (runts and broken chains counted as invalid, exactly; a client
# scribbling over all the memory it shares with the switch), zero-copy
# between two clients that name one region, aging (on
# a second switch with --aging-s 1, d's MAC is forgotten and frames to it
# are flooded again), and the one-line error when no switch runs. Every
# phase sends fewer frames than a ring holds, so no count depends on speed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CLIENT=${SWITCH_CLIENT:?SWITCH_CLIENT must name tests/system/switch_client}
S="vales$$"
MAC_A=02:00:00:00:00:0a
MAC_D=02:00:00:00:00:0d
MAC_K=02:00:00:00:00:1b
BC=ff:ff:ff:ff:ff:ff

# no switch: one line naming the command to start it
out=$("$PKTMAP" gen -i "vale$$x:a" -n 1 -T 0 2>&1) && fail "gen on a missing switch succeeded"
expect_eq "error lines" "$(printf '%s\n' "$out" | wc -l)" 1
printf '%s\n' "$out" | grep -q "start it with 'pktmap switch vale$$x'" ||
	fail "no hint in: $out"

BG_TIMEOUT=120 bg "$PKTMAP" switch "$S" -T 0 --json >"$TMP/sw.json" 2>"$TMP/sw.err"
sw_pid=$BG_PID
wait_switch() { # until --list works
	for _ in $(seq 300); do
		"$PKTMAP" switch --list "$S" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "switch $S did not come up"
}
wait_gone() {
	for _ in $(seq 300); do
		"$PKTMAP" switch --list "$S" >"$TMP/list" 2>/dev/null || true
		grep -q "^$1 " "$TMP/list" || return 0
		sleep 0.1
	done
	fail "port $1 still attached"
}
# a port's counter from --list --json
port_json() {
	"$PKTMAP" switch --list "$S" --json |
		grep -o "{\"port\":\"$1\"[^}]*}" | grep -o "\"$2\":[0-9]*" | cut -d: -f2
}
wait_switch
"$PKTMAP" ports | grep -q "^$S " || fail "pktmap ports does not list $S"
# the switch process itself (BG_PID is timeout's): its pipes are vsPID.*
real_pid=$("$PKTMAP" switch --list "$S" --json | grep -o '"pid":[0-9]*,"mac' | grep -o '[0-9]*')
[ -n "$real_pid" ] || fail "no pid in --list"

bg "$PKTMAP" recv -i "$S:b" -n 501 -T 0 -q --json >"$TMP/b.json"
recv_b=$BG_PID
bg "$PKTMAP" recv -i "$S:c" -n 501 -T 0 -q --json >"$TMP/c.json"
recv_c=$BG_PID
"$PKTMAP" recv -i "$S:b2" -n 1 -T 0 -q >/dev/null 2>&1 &
BG_PIDS+=("$!")
switch_wait_ports "$S" b c b2
kill "${BG_PIDS[-1]}"
wait_gone b2
bg "$CLIENT" "$S:d" learn "$MAC_D" >"$TMP/d.out"
client_d=$BG_PID
wait_for "$TMP/d.out" '^ready'
switch_wait_ports "$S" d

# isolation: no shared mapping (device:inode) appears in two clients
pids=("$recv_b" "$recv_c" "$client_d")
for pid in "${pids[@]}"; do
	# a bg PID is `timeout`'s: the client is its child
	child=$(pgrep -P "$pid" | head -n 1 || true)
	[ -n "$child" ] && pid=$child
	# shared memory objects (memfd or /dev/shm: not the C library's
	# shared caches, which every process maps)
	awk '$2 ~ /s/ && $5 != 0 && $6 ~ /^\/(memfd:|dev\/shm\/)/ { print $4 ":" $5 }' \
		"/proc/$pid/maps" | sort -u >"$TMP/maps.$pid"
	# every client maps memory it shares with the switch
	[ -s "$TMP/maps.$pid" ] || fail "client $pid maps no shared memory"
	cat "$TMP/maps.$pid"
done >"$TMP/maps"
[ -s "$TMP/maps" ] || fail "no shared mappings found in the clients"
dup=$(sort "$TMP/maps" | uniq -d)
[ -z "$dup" ] || fail "a shared-memory object is mapped by two clients: $dup"

# learning: 500 frames of 100 bytes to d's MAC reach d only; no
# reflection: 300 to a's own MAC go nowhere (filtered on a). b and c are
# receiving all along: what leaked to them would show in their bytes.
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$MAC_D" -l 100 -n 500 -T 0 -q
wait_for "$TMP/d.out" '^received 500$'
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$MAC_A" -l 100 -n 300 -T 0 -q
# flooding: 500 broadcasts (60 bytes) from a reach b, c and d (d's own
# 60-byte broadcast reached b and c: 501 frames, 30060 bytes each)
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$BC" -n 500 -T 0 -q
wait_for "$TMP/d.out" '^received 1000$'

for pid in "$recv_b" "$recv_c"; do
	wait_bg "$pid"
	expect_eq "recv exit" "$WAIT_RC" 0
done
for f in "$TMP/b.json" "$TMP/c.json"; do
	expect_eq "$f packets" "$(json "$f" packets)" 501
	expect_eq "$f gaps" "$(json "$f" gaps)" 0
	expect_eq "$f bad (d's frame)" "$(json "$f" bad)" 1
	expect_eq "$f bytes (nothing of the learning phase)" "$(json "$f" bytes)" 30060
done

# SIGKILL of a client mid-stream (its frames are addressed to itself:
# filtered, so the others' counts stay exact)
"$PKTMAP" gen -i "$S:k" -S "$MAC_K" -D "$MAC_K" -R 2000 -T 0 -q &
victim=$!
BG_PIDS+=("$victim")
switch_wait_ports "$S" k
pipe=$(grep '^k ' "$TMP/list" | grep -o 'pipe:[^{]*' | cut -d: -f2)
[ -e "/dev/shm/pktmap-$(id -u)/pipe.$pipe" ] || fail "no region for k's pipe $pipe"
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
wait_gone k
kill -0 "$sw_pid" || fail "the switch died with its client"
# (the switch closes a departing client's pipe in a thread of its own)
for _ in $(seq 100); do [ -e "/dev/shm/pktmap-$(id -u)/pipe.$pipe" ] || break; sleep 0.05; done
[ ! -e "/dev/shm/pktmap-$(id -u)/pipe.$pipe" ] || fail "k's region is left: $pipe"
refute "k's FIFOs are left" "pipe\.$pipe" find /dev/shm -maxdepth 2 -name "pipe.$pipe*"

# garbage: 20 runts and a 30-slot chain ending in a runt: 51 invalid
bg "$CLIENT" "$S:g" garbage 20 30 >"$TMP/g.out"
client_g=$BG_PID
wait_for "$TMP/g.out" '^sent'
wait_output 51 port_json g drop_invalid
expect_eq "g invalid" "$(port_json g drop_invalid)" 51
expect_eq "g forwarded" "$(port_json g rx_frames)" 0
# ... and the switch goes on: 200 more to d
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$MAC_D" -n 200 -T 0 -q
wait_for "$TMP/d.out" '^received 1200$'
kill "$client_g"
wait "$client_g" 2>/dev/null || true
wait_gone g

# no head-of-line blocking: z is attached but stopped (SIGSTOP): its
# ring fills and the copies for it are dropped, counted on z; d still
# gets every frame. 3 x 1000 broadcasts, each 1000 fitting d's ring.
bg "$PKTMAP" recv -i "$S:z" -T 0 -q
switch_wait_ports "$S" z
z_pid=$(pgrep -P "$BG_PID" | head -n 1)
[ -n "$z_pid" ] || fail "no recv process for z"
kill -STOP "$z_pid"
for n in 2200 3200 4200; do
	"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$BC" -n 1000 -T 0 -q
	wait_for "$TMP/d.out" "^received $n\$"
done
z_tx=$(port_json z tx_frames)
z_drop=$(port_json z drop_nospace)
expect_eq "z delivered + dropped" "$((z_tx + z_drop))" 3000
[ "$z_drop" -gt 0 ] || fail "a stopped client's ring never filled (z got $z_tx)"
kill -CONT "$z_pid"
kill "$z_pid"
wait_gone z

kill "$client_d"
wait "$client_d" 2>/dev/null || true
expect_eq "d total" "$(grep '^total' "$TMP/d.out" | cut -d' ' -f2)" 4200

# a client that scribbles random bytes over all the memory it shares with
# the switch (its pool and descriptor queues), many times: the switch
# refuses what it must (counted) and goes on
bg "$CLIENT" "$S:h" scribble 50 >"$TMP/h.out"
client_h=$BG_PID
wait_for "$TMP/h.out" '^done'
kill -0 "$sw_pid" || fail "the switch died of a scribbling client"
# the pipe's checker refused what h wrote into the descriptor queues
[ "$(port_json h sync_errors)" -ge 1 ] || fail "no protocol errors counted for h"
kill "$client_h"
wait "$client_h" 2>/dev/null || true
wait_gone h
# whatever it did, a new client gets exactly what is sent to it
bg "$PKTMAP" recv -i "$S:e" -n 200 -T 0 -q --json >"$TMP/e.json"
recv_e=$BG_PID
switch_wait_ports "$S" e
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$BC" -n 200 -T 0 -q
wait_bg "$recv_e"
expect_eq "recv e exit" "$WAIT_RC" 0
expect_eq "e packets" "$(json "$TMP/e.json" packets)" 200
expect_eq "e bad" "$(json "$TMP/e.json" bad)" 0

# clients that trust each other name one region: the switch moves the
# buffers between them instead of copying
R="${PIPE}zc"
bg "$CLIENT" "$S:z1@mem:$R" learn 02:00:00:00:00:21 >"$TMP/z1.out"
client_z1=$BG_PID
wait_for "$TMP/z1.out" '^ready'
"$PKTMAP" gen -i "$S:y@mem:$R" -S 02:00:00:00:00:22 -D 02:00:00:00:00:21 \
	-n 500 -T 0 -q
wait_for "$TMP/z1.out" '^received 500$'
expect_eq "frames to z1" "$(port_json z1 tx_frames)" 500
expect_eq "frames moved to z1" "$(port_json z1 tx_moved)" 500
kill "$client_z1"
wait "$client_z1" 2>/dev/null || true
wait_gone z1
for _ in $(seq 100); do [ -e "/dev/shm/pktmap-$(id -u)/$R" ] || break; sleep 0.05; done
[ ! -e "/dev/shm/pktmap-$(id -u)/$R" ] || fail "the shared region $R is left"

# the switch's own counts: every frame a sent accounted for
kill -TERM "$sw_pid"
wait_bg "$sw_pid"
expect_eq "switch exit" "$WAIT_RC" 0
"$PKTMAP" switch --list "$S" >/dev/null 2>&1 && fail "switch still answers"
sum() { # a key summed over the summary's port objects named $1
	grep -o "{\"port\":\"$1\"[^}]*}" "$TMP/sw.json" | grep -o "\"$2\":[0-9]*" |
		cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'
}
expect_eq "frames to a (no reflection)" "$(sum a tx_frames)" 0
expect_eq "frames from a" "$(sum a rx_frames)" 4700
expect_eq "filtered on a" "$(sum a filtered)" 300
expect_eq "frames to b" "$(sum b tx_frames)" 501
expect_eq "frames to c" "$(sum c tx_frames)" 501
expect_eq "frames to d" "$(sum d tx_frames)" 4200
expect_eq "invalid from g" "$(sum g drop_invalid)" 51
expect_eq "drops for lack of space (z's only)" "$(sum '[a-z0-9]*' drop_nospace)" "$z_drop"
left=$(compgen -G "/dev/shm/pktmap-$(id -u)/*pipe.vs$real_pid.*" || true)
[ -z "$left" ] || fail "the switch left pipes in /dev/shm: $left"

# aging: on a switch that forgets after 1 s, d's MAC ages out and a frame
# to it is flooded again (b receives it)
S="valet$$"
BG_TIMEOUT=60 bg "$PKTMAP" switch "$S" -T 0 --aging-s 1 >"$TMP/sw2.out" 2>&1
sw2=$BG_PID
wait_switch
bg "$PKTMAP" recv -i "$S:b" -n 100 -T 0 -q --json >"$TMP/b2.json"
recv_b=$BG_PID
switch_wait_ports "$S" b
bg "$CLIENT" "$S:d" learn "$MAC_D" >"$TMP/d2.out"
client_d=$BG_PID
wait_for "$TMP/d2.out" '^ready'
# learned: a frame to d reaches d only
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$MAC_D" -n 1 -T 0 -q
wait_output 1 port_json d tx_frames
expect_eq "to d while learned" "$(port_json d tx_frames)" 1
expect_eq "to b while learned" "$(port_json b tx_frames)" 1 # d's broadcast
# wait (poll, no fixed sleep) until the table is empty: d's MAC aged out
for _ in $(seq 300); do
	"$PKTMAP" switch --list "$S" --json | grep -q '"mac_entries":0,' && break
	sleep 0.1
done
"$PKTMAP" switch --list "$S" --json | grep -q '"mac_entries":0,' ||
	fail "d's MAC did not age out"
"$PKTMAP" gen -i "$S:a" -S "$MAC_A" -D "$MAC_D" -n 99 -T 0 -q
wait_bg "$recv_b"
expect_eq "recv b exit" "$WAIT_RC" 0
expect_eq "b after aging" "$(json "$TMP/b2.json" packets)" 100
kill "$client_d"
wait "$client_d" 2>/dev/null || true
kill -TERM "$sw2"
wait_bg "$sw2"
expect_eq "switch exit" "$WAIT_RC" 0
grep -q "aged [1-9]" "$TMP/sw2.out" || fail "no aged entries in: $(cat "$TMP/sw2.out")"
echo "switch_pipe: ok"
