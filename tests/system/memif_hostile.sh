#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# memif peers that lie, against the real pktmap commands. Each attack ends
# with the pktmap side hanging up on the attacker with a log line that
# says what it did; pktmap keeps running and serves the next, honest peer
# frame for frame.
#
#   memif_hostile (client) ==memif:S==> pktmap recv (server, stays up)
#   ... then pktmap gen (client) ==memif:S==> the same recv: N frames
#
#   memif_hostile server <==memif:T== pktmap recv (client)   S2C lies
#   memif_hostile server <==memif:U== pktmap gen (client)    C2S lies
#
# 1. silent: connects, never speaks: dropped after the 3 s handshake limit.
# 2. badsize: a 50-byte control message: malformed, dropped.
# 3. unsealed: a region it could truncate under us: refused before mapping.
# 4. flood: messages after CONNECT as fast as it can: dropped at the first.
# 5. garbage: 160 descriptors with a bad region, offset, length 0, length
#    1 MiB, unknown flags: each dropped and counted (drop_invalid = 160);
#    then head a ring too far: disconnected.
#    punch (root, huge pages): a region of huge pages sealed against
#    shrinking, its buffers' page punched out after CONNECT, every free
#    huge page taken, then a descriptor posted: recv's copy of it is
#    caught (no SIGBUS), the peer dropped.
# 6. recv as server then takes 100000 frames from gen: exact.
# 7. a lying server: 32 bad S2C descriptors to recv (counted), then
#    impossible indices on both rings (recv and gen disconnect; gen counts
#    the frames it had in flight); both keep running and reach a real
#    server afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/memif_lib.sh"

: "${MEMIF_HOSTILE:?MEMIF_HOSTILE must name the memif_hostile binary}"
N=100000
S=$TMP/s.sock

BG_TIMEOUT=120 bg "$PKTMAP" recv -i "memif:$S@conf:role=server" -n "$N" -T 0 \
	-v --json >"$TMP/r.json" 2>"$TMP/r.err"
rpid=$BG_PID
for _ in $(seq 100); do
	[ -S "$S" ] && break
	sleep 0.1
done

# Huge pages for one attack: N more in /proc/sys/vm/nr_hugepages, under
# the lock every test that adds some holds (tests/unit/hugepages.h);
# huge_release gives back what was added (also at exit).
HUGE_ADDED=0
huge_reserve() {
	exec {HUGE_FD}>/run/pktmap-hugepages.lock
	flock "$HUGE_FD"
	local before
	before=$(cat /proc/sys/vm/nr_hugepages)
	echo $((before + $1)) >/proc/sys/vm/nr_hugepages
	HUGE_ADDED=$(($(cat /proc/sys/vm/nr_hugepages) - before))
	at_exit huge_release
}
huge_release() {
	if [ "$HUGE_ADDED" -gt 0 ]; then
		echo $(($(cat /proc/sys/vm/nr_hugepages) - HUGE_ADDED)) \
			>/proc/sys/vm/nr_hugepages
		HUGE_ADDED=0
		exec {HUGE_FD}>&-
	fi
}

attack() {
	local mode=$1 want=$2
	echo "  $mode"
	timeout 30 "$MEMIF_HOSTILE" "$mode" "$S" || fail "$mode: pktmap did not hang up"
	wait_for "$TMP/r.err" "$want" 10
	kill -0 "$rpid" || fail "$mode: recv died"
}

echo "1-5. hostile clients against pktmap recv (server)"
attack silent "did not finish the handshake in 3000 ms"
attack badsize "a malformed control message"
attack unsealed "is not a memfd sealed against shrinking"
attack flood "message type 1 after CONNECT"
attack garbage "head more than a ring ahead"
if [ "$(id -u)" = 0 ]; then
	huge_reserve 4
	[ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge 2 ] ||
		skip "the kernel gave no huge pages for the punch attack"
	attack punch "took back memory of a region it gave us"
	huge_release
else
	[ "${CI:-}" = true ] && fail "CI=true: the punch attack needs root"
	echo "  punch: skipped (needs root)"
fi
# Rate-limited: at least one line, one a second at most (the count of
# the others is in the next line and in drop_invalid, checked below).
grep -q 'dropped a descriptor of the peer' "$TMP/r.err" ||
	fail "no log line for the bad descriptors"

echo "6. an honest client: $N frames"
timeout 60 "$PKTMAP" gen -i "memif:$S" -n "$N" -l 60-1514 -T 0 -q --json \
	>"$TMP/g.json"
wait_bg "$rpid"
expect_eq "recv exit status" "$WAIT_RC" 0
expect_eq "gen packets" "$(json "$TMP/g.json" packets)" "$N"
expect_eq "recv packets" "$(json "$TMP/r.json" packets)" "$N"
expect_eq "recv bytes" "$(json "$TMP/r.json" bytes)" "$(json "$TMP/g.json" bytes)"
expect_eq "gaps" "$(json "$TMP/r.json" gaps)" 0
expect_eq "bad" "$(json "$TMP/r.json" bad)" 0
expect_eq "drop_invalid (the garbage descriptors)" \
	"$(json "$TMP/r.json" drop_invalid)" 160
[ -e "$S" ] && fail "recv left its socket $S behind"

echo "7. a lying server against pktmap recv and gen (clients)"
T=$TMP/t.sock
BG_TIMEOUT=60 bg "$MEMIF_HOSTILE" server "$T"
hpid=$BG_PID
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "memif:$T" -n "$N" -T 0 -v --json \
	>"$TMP/r7.json" 2>"$TMP/r7.err"
r7=$BG_PID
wait_bg "$hpid"
expect_eq "7: the lying server was disconnected by recv" "$WAIT_RC" 0
wait_for "$TMP/r7.err" "tail moved past the buffers posted" 10
U=$TMP/u.sock
BG_TIMEOUT=60 bg "$MEMIF_HOSTILE" server "$U"
hpid=$BG_PID
BG_TIMEOUT=60 bg "$PKTMAP" gen -i "memif:$U" -n "$N" -T 0 -v --json \
	>"$TMP/g7.json" 2>"$TMP/g7.err"
g7=$BG_PID
wait_bg "$hpid"
expect_eq "7: the lying server was disconnected by gen" "$WAIT_RC" 0
wait_for "$TMP/g7.err" "tail moved past head" 10
# Both still run; now one honest server (a bridge between the two
# sockets) takes gen's frames to recv.
BG_TIMEOUT=60 bg "$PKTMAP" bridge "memif:$U@conf:role=server" \
	"memif:$T@conf:role=server" -T 0 -q
bpid=$BG_PID
wait_bg "$g7"
expect_eq "7: gen exit status" "$WAIT_RC" 0
lost=$(json "$TMP/g7.json" drop_backend)
echo "  7: gen sent $N, $lost lost in flight with the liar"
for _ in $(seq 100); do
	kill -0 "$r7" 2>/dev/null || break
	sleep 0.1
done
stop_bg "$r7"
wait_bg "$r7"
got=$(json "$TMP/r7.json" packets)
echo "  7: recv got $got, drop_invalid $(json "$TMP/r7.json" drop_invalid)"
expect_eq "7: recv drop_invalid (the bad S2C descriptors)" \
	"$(json "$TMP/r7.json" drop_invalid)" 32
expect_eq "7: received + lost in flight" "$((got + lost))" "$N"
expect_eq "7: gaps" "$(json "$TMP/r7.json" gaps)" 0
stop_bg "$bpid"
wait_bg "$bpid"
echo "PASS"
