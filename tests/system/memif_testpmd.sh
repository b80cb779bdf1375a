#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap's memif ports against the real DPDK: dpdk-testpmd with net_memif
# (--no-huge --no-pci), in both roles.
#
#   pktmap gen ==memif:A==> testpmd io ==memif:B==> pktmap recv
#        (client)            (server)                (client)       1, 5
#   gen =pipe=> bridge =memif=> testpmd io =memif=> recv          2
#               (server)         (client)           (server)
#   testpmd txonly ==memif==> pktmap recv                           3
#   pktmap gen ==pipe==> pktmap bridge ==memif==> testpmd rxonly    4
#
# 1. pktmap as client: 200k frames of random lengths through testpmd's
#    io forwarding (with TX retry, so that testpmd drops nothing): every
#    frame arrives once, in order, bytes as sent.
# 2. the same with pktmap as server on both sides (abstract socket names)
#    and testpmd's two ports as clients: the bridge sends, recv receives.
# 3. testpmd txonly -> recv: recv counts exactly what testpmd says it sent.
# 4. gen -> bridge -> testpmd rxonly: testpmd receives exactly what gen sent.
# 5. testpmd (the server) is stopped and started again mid-stream: gen and
#    recv reconnect by themselves; every frame gen sent arrived or is a
#    gap recv reports, none twice, none foreign.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/memif_lib.sh"
need_cmd dpdk-testpmd

N=${N:-200000}
A=$TMP/a.sock
B=$TMP/b.sock

# check CASE GEN_JSON RECV_JSON: nothing lost, nothing changed.
check() {
	echo "  $1: gen $(json "$2" packets) packets $(json "$2" bytes) bytes;" \
	     "recv $(json "$3" packets) packets $(json "$3" bytes) bytes," \
	     "gaps $(json "$3" gaps) bad $(json "$3" bad)"
	expect_eq "$1: gen packets" "$(json "$2" packets)" "$N"
	expect_eq "$1: gen pending" "$(json "$2" pending)" 0
	expect_eq "$1: recv packets" "$(json "$3" packets)" "$N"
	expect_eq "$1: recv bytes" "$(json "$3" bytes)" "$(json "$2" bytes)"
	expect_eq "$1: gaps" "$(json "$3" gaps)" 0
	expect_eq "$1: reordered" "$(json "$3" reordered)" 0
	expect_eq "$1: bad" "$(json "$3" bad)" 0
	expect_eq "$1: recv drops" "$(json "$3" drops)" 0
}

# testpmd prints "io packet forwarding ..." before it has flushed its RX
# queues (frames that arrive then are freed, unforwarded, though the port
# counts them) and "packets/burst=" after; its ports run with
# --no-flush-rx (memif_lib.sh) as well.
io_retry() {
	tp_cmd "$1" "set fwd io retry"
	tp_cmd "$1" "set burst tx delay 10 retry 100000000"
	tp_after "$1" start "packets/burst="
}

echo "1. pktmap clients, testpmd server: gen -> io -> recv, $N frames"
tp_start t1 "net_memif0,role=server,socket=$A,socket-abstract=no" \
	"net_memif1,role=server,socket=$B,socket-abstract=no"
io_retry t1
bg "$PKTMAP" recv -i "memif:$B" -n "$N" --csum -T 0 -q --json >"$TMP/r1.json"
rpid=$BG_PID
timeout 100 "$PKTMAP" gen -i "memif:$A" -n "$N" -l 60-1514 -T 0 -q --json \
	>"$TMP/g1.json"
wait_bg "$rpid"
expect_eq "1: recv exit status" "$WAIT_RC" 0
check 1 "$TMP/g1.json" "$TMP/r1.json"
tp_quit t1

echo "2. pktmap servers (abstract sockets), testpmd client"
# gen feeds a bridge over a pipe, so that the memif ports stay connected
# until testpmd has forwarded every frame (DPDK 22.11's client drops its
# other connections when one server disconnects, and never reconnects).
# The bridge is the memif server that *sends* to testpmd's client port 0;
# recv the server that testpmd's port 1 sends to.
bg "$PKTMAP" recv -i "memif:@pktmap$$b@conf:role=server" -T 0 -q --json \
	>"$TMP/r2.json" 2>"$TMP/r2.err"
rpid=$BG_PID
bg "$PKTMAP" bridge "pipe:${PIPE}y}0" "memif:@pktmap$$a/7@conf:role=server" \
	-T 0 -q --json >"$TMP/b2.json" 2>"$TMP/b2.err"
bpid=$BG_PID
# The servers must listen before testpmd's client ports start.
for _ in $(seq 100); do
	grep -q "@pktmap$$a" /proc/net/unix && grep -q "@pktmap$$b" /proc/net/unix &&
		break
	sleep 0.1
done
tp_start t2 "net_memif0,role=client,id=7,socket=pktmap$$a,socket-abstract=yes" \
	"net_memif1,role=client,socket=pktmap$$b,socket-abstract=yes"
io_retry t2
timeout 100 "$PKTMAP" gen -i "pipe:${PIPE}y{0" -n "$N" -l 60-1514 -T 0 -q \
	--json >"$TMP/g2.json"
# testpmd (the client) leaves first, once it has sent recv all N: it
# crashes when a server leaves first (DPDK 22.11).
for _ in $(seq 300); do
	tp_after t2 "show port stats 1" "TX-packets:"
	[ "$(tp_field TX-packets)" -ge "$N" ] && break
	sleep 0.1
done
tx1=$(tp_field TX-packets)
if [ "$tx1" != "$N" ]; then
	tp_after t2 "show port stats 0" "RX-packets:"
	echo "  2: testpmd received $(tp_field RX-packets) from the bridge," \
	     "sent $tx1 to recv; bridge and recv said:"
	cat "$TMP/b2.err" "$TMP/r2.err"
fi
expect_eq "2: testpmd TX-packets to recv" "$tx1" "$N"
tp_quit t2
stop_bg "$rpid" "$bpid"
wait_bg "$rpid"
expect_eq "2: recv exit status" "$WAIT_RC" 0
wait_bg "$bpid"
expect_eq "2: bridge exit status" "$WAIT_RC" 0
check 2 "$TMP/g2.json" "$TMP/r2.json"

echo "3. testpmd txonly -> pktmap recv: counts equal"
tp_start t3 "net_memif0,role=server,socket=$A,socket-abstract=no"
tp_cmd t3 "set fwd txonly"
bg "$PKTMAP" recv -i "memif:$A" --no-verify -T 0 -q --json --idle 3 -v \
	>"$TMP/r3.json" 2>"$TMP/r3.err"
rpid=$BG_PID
# recv (the client) connected before testpmd sends: else a slow connect
# on a busy machine leaves recv nothing to count, waiting for ever.
wait_for "$TMP/r3.err" "connected to" 30
tp_after t3 start "packets/burst="
sleep 1
tp_after t3 stop "TX-packets:"
sent=$(tp_field TX-packets)
wait_bg "$rpid"
expect_eq "3: recv exit status" "$WAIT_RC" 0
echo "  3: testpmd sent $sent, recv received $(json "$TMP/r3.json" packets)"
[ "$sent" -gt 0 ] || fail "3: testpmd sent nothing"
expect_eq "3: recv packets" "$(json "$TMP/r3.json" packets)" "$sent"
expect_eq "3: recv bytes" "$(json "$TMP/r3.json" bytes)" "$((sent * 64))"
tp_quit t3

echo "4. pktmap gen -> pipe -> pktmap bridge -> memif -> testpmd rxonly"
tp_start t4 "net_memif0,role=server,socket=$A,socket-abstract=no"
tp_cmd t4 "set fwd rxonly"
tp_after t4 start "forwarding"
bg "$PKTMAP" bridge "pipe:${PIPE}x}0" "memif:$A" -T 0 -q --json \
	>"$TMP/b4.json" 2>"$TMP/b4.err"
bpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}x{0" -n "$N" -T 0 -q --json \
	>"$TMP/g4.json"
expect_eq "4: gen packets" "$(json "$TMP/g4.json" packets)" "$N"
# The bridge is still connected: testpmd's counters are valid until the
# peer goes (DPDK forgets a memif port's counters at disconnect).
got=0
for _ in $(seq 300); do
	tp_after t4 "show port stats 0" "RX-packets:"
	got=$(tp_field RX-packets)
	[ "$got" -ge "$N" ] && break
	sleep 0.1
done
echo "  4: gen sent $N, testpmd received $got"
expect_eq "4: testpmd RX-packets" "$got" "$N"
tp_after t4 stop "RX-packets:"
stop_bg "$bpid"
wait_bg "$bpid"
tp_quit t4

echo "5. testpmd restarted mid-stream: gen and recv reconnect"
tp_start t5 "net_memif0,role=server,socket=$A,socket-abstract=no" \
	"net_memif1,role=server,socket=$B,socket-abstract=no"
io_retry t5
# About 8 s of traffic at 40 kpps; testpmd goes away after 2 s.
M=320000
BG_TIMEOUT=120 bg "$PKTMAP" recv -i "memif:$B" -n "$M" --idle 5 -T 0 --json \
	-v >"$TMP/r5.json" 2>"$TMP/r5.err"
rpid=$BG_PID
BG_TIMEOUT=120 bg "$PKTMAP" gen -i "memif:$A" -n "$M" -R 40k -T 0 --json -v \
	>"$TMP/g5.json" 2>"$TMP/g5.err"
gpid=$BG_PID
wait_for "$TMP/g5.err" "connected to" 30
sleep 2
tp_quit t5
grep -q "disconnected" "$TMP/g5.err" || fail "5: gen saw no disconnect"
tp_start t6 "net_memif0,role=server,socket=$A,socket-abstract=no" \
	"net_memif1,role=server,socket=$B,socket-abstract=no"
io_retry t6
wait_bg "$gpid"
expect_eq "5: gen exit status" "$WAIT_RC" 0
wait_bg "$rpid"
expect_eq "5: recv exit status" "$WAIT_RC" 0
tp_quit t6
expect_eq "5: gen connections" "$(grep -c 'connected to' "$TMP/g5.err")" 2
expect_eq "5: recv connections" "$(grep -c 'connected to' "$TMP/r5.err")" 2
got=$(json "$TMP/r5.json" packets)
gaps=$(json "$TMP/r5.json" gaps)
lost=$(json "$TMP/g5.json" drop_backend)
echo "  5: gen sent $M ($lost in flight at the disconnect), recv got $got," \
     "gaps $gaps"
expect_eq "5: gen packets" "$(json "$TMP/g5.json" packets)" "$M"
expect_eq "5: received + gaps" "$((got + gaps))" "$M"
expect_eq "5: reordered" "$(json "$TMP/r5.json" reordered)" 0
expect_eq "5: bad" "$(json "$TMP/r5.json" bad)" 0
[ "$lost" -le "$gaps" ] || fail "5: gen lost $lost in flight, recv saw $gaps gaps"
echo "PASS"
