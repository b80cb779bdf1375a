#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# xdp: (AF_XDP) ports on veth pairs across two namespaces.
#
#   netns pmxA$$                         netns pmxB$$
#   +---------------------+              +-------------------------+
#   | pktmap gen          |              | pktmap recv             |
#   |   -i xdp:vethA      |              |   -i xdp:vethB          |
#   |        vethA -------+==== veth ====+------- vethB            |
#   |        vethC -------+== veth, 2 q =+------- vethD            |
#   +---------------------+              +-------------------------+
#
# 1. xdp -> xdp: N frames, exact count (received + the drops the kernel
#    counted at a starved socket = N, those drops at most MAX_DROP_PCT
#    percent, lib.sh's drops_ok), no gaps beyond them, payload intact
#    (recv --verify checks magic and sequence numbers).
# 2. two queues: gen -p 2 on xdp:vethC (queues 0 and 1), recv -p 2 on
#    xdp:vethD (two ports, one process, one shared XDP program); then
#    two recv processes, one per queue, sharing the program.
# 3. xdp -> kernel: vethB's rx_packets grows by exactly N.
# 4. Ctrl-C: recv stops on SIGINT and its XDP program goes; a recv killed
#    with SIGKILL leaves nothing either (the program hangs on a BPF link
#    that dies with the process); a pktmap program attached without a
#    link (as an older pktmap left it) is replaced, with a message.
# 5. errors: one line with the remedy.
# After each step no XDP program is left on any interface. Needs root;
# under CI=true it may not skip. Everything it makes is removed on exit.
set -eu

PKTMAP=${PKTMAP:-pktmap}
N=${N:-50000}
RATE=${RATE:-50000}
# Receivers get deep rings and the sender a modest rate: a 2-core
# machine running two suites beside two busy loops left recv unscheduled
# long enough for 49% of 100k frames at 200 kpps into 4096 slots to be
# dropped; 16384 slots at 50 kpps ride out 300 ms.
RX=@conf:rx-slots=16384
A=pmxA$$
B=pmxB$$
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# What lib.sh does not know of: jobs started without bg, and the files
# named after the namespaces' inode numbers (NSA, NSB).
cleanup_xdp() {
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	rm -f /dev/shm/pktmap-xdp*."$NSA".* /dev/shm/pktmap-xdp*."$NSB".* 2>/dev/null
}

[ "$(id -u)" = 0 ] || skip "needs root"
command -v ip >/dev/null || skip "needs iproute2"
command -v python3 >/dev/null || skip "needs python3 (to read JSON)"

ns_pair "$A" "$B"
netns_veth "$A" vethC "$B" vethD 2
NSA=$(ip netns exec "$A" stat -L -c %i /proc/self/ns/net)
NSB=$(ip netns exec "$B" stat -L -c %i /proc/self/ns/net)
at_exit cleanup_xdp

# json FILE KEY: a top-level field of a JSON summary.
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
rx_packets() { inB cat /sys/class/net/vethB/statistics/rx_packets; }
# Nothing of ours may stay: no XDP program on any link, no lock file.
no_leftovers() {
	local l
	l=$(netns_xdp_gone "$A" "$B") || fail "XDP program left behind: $l"
	l=$(ls /dev/shm/pktmap-xdp*."$NSA".* /dev/shm/pktmap-xdp*."$NSB".* \
		2>/dev/null || true)
	[ -z "$l" ] || fail "lock file left behind: $l"
}
# Wait until recv has its sockets in place: pktmap's program is on IF
# (it is attached after the sockets are in its map).
wait_bound() {
	local _
	for _ in $(seq 200); do
		inB ip link show dev "$1" | grep -q "prog/xdp" && return 0
		sleep 0.05
	done
	fail "recv did not open xdp:$1"
}
# recv in B in the background until it has N packets (or 5 s of silence).
# wait_lines FILE PATTERN N: until N lines of FILE match (up to 30 s).
wait_lines() {
	local _
	for _ in $(seq 300); do
		[ "$(grep -c "$2" "$1" 2>/dev/null || true)" -ge "$3" ] && return 0
		sleep 0.1
	done
	fail "$1: fewer than $3 lines matching '$2' after 30 s: $(cat "$1")"
}
start_recv() {
	local out=$1
	shift
	timeout 60 ip netns exec "$B" "$PKTMAP" recv "$@" -n "$N" --idle 5 -T 0 -q \
		--json >"$out" &
}
# A receiver starved of CPU (the suite must pass beside busy loops) lets
# the socket's rings fill and the kernel drop frames: those are counted
# (XDP_STATISTICS, the JSON's drop_backend) and checked as drops; every
# other frame must arrive, intact and in order.
check_recv() {
	local f=$1 want=$2 got drops
	got=$(json "$f" packets)
	drops=$(json "$f" drop_backend)
	echo "   received $got, gaps $(json "$f" gaps), bad $(json "$f" bad), kernel drops $drops"
	[ "$got" -gt 0 ] || fail "received nothing"
	[ $((got + drops)) = "$want" ] || fail "received $got + $drops counted drops of $want"
	drops_ok "$f" "$drops" "$want"
	[ "$(json "$f" gaps)" -le "$drops" ] || fail "gaps beyond the counted drops"
	[ "$(json "$f" reordered)" = 0 ] || fail "reordered frames"
	[ "$(json "$f" bad)" = 0 ] || fail "bad frames"
}

echo "== 1. xdp -> xdp, $N frames at $RATE pps"
start_recv "$TMP/r1.json" -i "xdp:vethB$RX"
wait_bound vethB
inA "$PKTMAP" gen -i xdp:vethA -n "$N" -R "$RATE" -T 0 -q --json >"$TMP/g1.json"
wait %1 || fail "recv failed"
[ "$(json "$TMP/g1.json" packets)" = "$N" ] || fail "gen sent $(json "$TMP/g1.json" packets)"
check_recv "$TMP/r1.json" "$N"
no_leftovers

echo "== 2. two queues: gen -p 2 on xdp:vethC, recv -p 2 on xdp:vethD"
start_recv "$TMP/r2.json" -i "xdp:vethD$RX" -p 2 -v 2>"$TMP/r2.err"
wait_bound vethD
# each port's open ends with its info line, once its queue is in the
# program's map
wait_lines "$TMP/r2.err" 'XDP program' 2
inA "$PKTMAP" gen -i xdp:vethC -p 2 -n "$N" -R "$RATE" -T 0 -q --json >"$TMP/g2.json"
wait %1 || fail "recv failed"
check_recv "$TMP/r2.json" "$N"
q0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"][0]["packets"])' "$TMP/r2.json")
q1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"][1]["packets"])' "$TMP/r2.json")
echo "   queue 0: $q0, queue 1: $q1"
[ "$q0" -gt 0 ] && [ "$q1" -gt 0 ] || fail "one queue got nothing"
no_leftovers

echo "== 2b. two processes: recv on xdp:vethD-0 and on xdp:vethD-1 share one program"
timeout 60 ip netns exec "$B" "$PKTMAP" recv -i "xdp:vethD-0$RX" --idle 3 -T 0 -q --json \
	>"$TMP/r2a.json" &
wait_bound vethD
timeout 60 ip netns exec "$B" "$PKTMAP" recv -i "xdp:vethD-1$RX" --idle 3 -T 0 -q --json \
	-v >"$TMP/r2b.json" 2>"$TMP/r2b.err" &
# the second process joins the first one's program: its info line says
# when its queue is in the map
wait_lines "$TMP/r2b.err" 'XDP program' 1
inA "$PKTMAP" gen -i xdp:vethC -p 2 -n "$N" -R "$RATE" -T 0 -q --json >/dev/null
wait %1 || fail "recv queue 0 failed"
wait %2 || fail "recv queue 1 failed"
a=$(json "$TMP/r2a.json" packets)
b=$(json "$TMP/r2b.json" packets)
da=$(json "$TMP/r2a.json" drop_backend)
db=$(json "$TMP/r2b.json" drop_backend)
echo "   queue 0: $a, queue 1: $b, gaps $(json "$TMP/r2a.json" gaps) + $(json "$TMP/r2b.json" gaps), kernel drops $da + $db"
[ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "one queue got nothing"
[ $((a + b + da + db)) = "$N" ] || fail "received $((a + b)) + $((da + db)) counted drops of $N"
drops_ok "two processes" $((da + db)) "$N"
[ "$(json "$TMP/r2a.json" gaps)" -le "$da" ] && [ "$(json "$TMP/r2b.json" gaps)" -le "$db" ] ||
	fail "gaps beyond the counted drops"
no_leftovers

echo "== 3. xdp -> kernel: vethB rx_packets"
before=$(rx_packets)
inA "$PKTMAP" gen -i xdp:vethA -n "$N" -T 0 -q --json >"$TMP/g3.json"
after=$(rx_packets)
echo "   sent $(json "$TMP/g3.json" packets) at $(json "$TMP/g3.json" pps) pps, vethB rx_packets +$((after - before))"
[ $((after - before)) = "$N" ] || fail "kernel counted $((after - before)) of $N"
no_leftovers

echo "== 4. signals"
# Not under plain timeout(1): it would pass the signal on twice (to the
# child and to its process group), and a second Ctrl-C quits at once
# (timeout --foreground signals the child only).
ip netns exec "$B" "$PKTMAP" recv -i xdp:vethB -T 0 -q >/dev/null 2>&1 &
pid=$!
wait_bound vethB
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || fail "recv exited $rc after SIGINT, want 0"
no_leftovers
echo "   SIGINT: recv stopped (exit 0), program detached"
ip netns exec "$B" "$PKTMAP" recv -i xdp:vethB -T 0 -q >/dev/null 2>&1 &
pid=$!
wait_bound vethB
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
# The kernel drops the link as it closes the killed process's files.
for _ in $(seq 50); do
	inB ip link show dev vethB | grep -q prog/xdp || break
	sleep 0.1
done
no_leftovers
echo "   SIGKILL: nothing left (program detached with its link)"
# (ip may report "Peer netns reference is invalid" and attach nothing
# while other namespaces come and go: check, and try again.)
for _ in 1 2 3 4 5; do
	inB ip link set dev vethB xdpdrv obj "$PKTMAP_BUILD_ROOT/bpf/pktmap_xdp.bpf.o" \
		sec xdp.frags || true
	inB ip link show dev vethB | grep -q prog/xdp && break
done
inB ip link show dev vethB | grep -q prog/xdp ||
	fail "cannot attach a pktmap program without a link"
rc=0
timeout --foreground --preserve-status -s INT 2 ip netns exec "$B" "$PKTMAP" recv \
	-i xdp:vethB -T 0 -q >/dev/null 2>"$TMP/r4.err" || rc=$?
[ "$rc" = 0 ] || fail "recv exited $rc after replacing the program and SIGINT, want 0"
cat "$TMP/r4.err" | sed 's/^/   /'
grep -q "replacing the pktmap XDP program" "$TMP/r4.err" || fail "no message about the program left behind"
no_leftovers

echo "== 5. errors"
expect_err() {
	local want=$1 msg
	shift
	if msg=$("$@" 2>&1); then
		fail "no error from: $*"
	fi
	echo "   $msg"
	[ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "not one line: $msg"
	printf '%s\n' "$msg" | grep -qF "$want" || fail "message: $msg"
}
expect_err "xdp:eth9: no such interface" inA "$PKTMAP" recv -i xdp:eth9 -n 1 -q
expect_err "xdp:vethA/Z: driver veth has no zero-copy AF_XDP support: drop /Z to run in copy mode" \
	inA "$PKTMAP" recv -i xdp:vethA/Z -n 1 -q
expect_err "queue 2 does not exist" inA "$PKTMAP" recv -i xdp:vethC-2 -n 1 -q
# Not root: nobody runs a copy it can read, whatever the checkout's
# permissions (the check runs on every machine, it never skips).
need_cmd setpriv
stage_for_others
expect_err "xdp:vethA: needs CAP_NET_RAW and CAP_BPF: run as root" \
	inA setpriv --reuid 65534 --regid 65534 --clear-groups \
	"${OTHER_ENV[@]}" "$OTHER_PKTMAP" recv -i xdp:vethA -n 1 -q
inA ip link set dev vethA mtu 40000
expect_err "need more than 17 buffers of 1792 bytes: lower the MTU" inA "$PKTMAP" recv -i xdp:vethA -n 1 -q
inA ip link set dev vethA mtu 1500
no_leftovers

echo "PASS"
