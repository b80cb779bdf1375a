#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Frames above the MTU on TX: pkt: and xdp: (AF_XDP copy mode, and
# tx=live) count them in drop_too_long, the same way, instead of handing
# them to a kernel that drops them without a word; and gen refuses an -l
# no frame of which the port can send, at open, in one line.
#
#   netns pmtA$$                      netns pmtB$$
#   +------------------------+        +------------------+
#   | tx_mtu -i PORT (vethA) |==veth==| vethB: rx_packets |
#   +------------------------+        +------------------+
#
# 1. MTU 1500: 1514-byte frames and 1518-byte tagged ones go (vethB
#    receives exactly those), 1515-byte untagged and 1519-byte tagged
#    ones are counted too long, on pkt:, xdp: and xdp:@conf:tx=live.
# 2. xdp: the MTU raised after open (to 1600): 1600-byte frames go, the
#    MTU is read again rather than the one of the open kept; lowered
#    (to 1400): within about a second frames above 1414 are counted.
# 3. gen -l above the MTU + 14: exit 2, one line, nothing sent (pkt:,
#    xdp:, tx=live, tap:).
# Needs root; under CI=true it may not skip.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
need_cmd ethtool
: "${TX_MTU:?TX_MTU must name the tx_mtu helper}"

ns_pair "pmtA$$" "pmtB$$"
at_exit no_leftovers
# tx=live: a veth delivers XDP frames only to a peer with NAPI on.
inB ethtool -K vethB gro on >/dev/null

rx_packets() { inB cat /sys/class/net/vethB/statistics/rx_packets; }

# sent PORT WANT_SENT WANT_LONG TX_MTU_ARGS...: tx_mtu on PORT says it
# sent WANT_SENT frames and counted WANT_LONG too long; vethB received
# exactly WANT_SENT.
sent() {
	local port=$1 want=$2 long=$3 before after out
	shift 3
	before=$(rx_packets)
	out=$(inA "$TX_MTU" "$port" "$@") || fail "$port: tx_mtu failed"
	after=$(rx_packets)
	echo "  $port $*: $out; vethB received $((after - before))"
	expect_eq "$port $*: tx_packets" "$(echo "$out" | awk '{print $2}')" "$want"
	expect_eq "$port $*: drop_too_long" "$(echo "$out" | awk '{print $4}')" "$long"
	expect_eq "$port $*: tx_max_len" "$(echo "$out" | awk '{print $6}')" 1514
	expect_eq "$port $*: frames vethB received" "$((after - before))" "$want"
}

echo "1. MTU 1500"
for port in pkt:vethA xdp:vethA xdp:vethA@conf:tx=live; do
	sent "$port" 150 150 1514:100 1515:60 1518:50:vlan 1519:40:vlan 1600:50
done

echo "2. xdp: the MTU raised after open"
inB ip link set dev vethB mtu 1600
for port in xdp:vethA xdp:vethA@conf:tx=live; do
	sent "$port" 100 20 --set-mtu vethA 1600 1600:100 1615:20
	inA ip link set dev vethA mtu 1500
done

echo "2b. xdp: the MTU lowered after open"
# The port reads the MTU again about once a second: tx_mtu sends a frame
# a sync until one is counted too long (what went before it is printed
# and was delivered: vethB's MTU is still 1600), then exact counts.
for port in xdp:vethA xdp:vethA@conf:tx=live; do
	before=$(rx_packets)
	out=$(inA "$TX_MTU" "$port" --set-mtu vethA 1400 --until-seen 1414:50 1415:50) ||
		fail "$port: tx_mtu --until-seen failed"
	after=$(rx_packets)
	inA ip link set dev vethA mtu 1500
	echo "  $port MTU 1400 after open: $out; vethB received $((after - before))"
	n0=$(echo "$out" | awk '{print $2}')
	expect_eq "$port lowered: tx_packets" "$(echo "$out" | awk '{print $4}')" 50
	expect_eq "$port lowered: drop_too_long" "$(echo "$out" | awk '{print $6}')" 50
	expect_eq "$port lowered: frames vethB received" "$((after - before))" "$((n0 + 50))"
done

echo "3. gen -l beyond the MTU"
# (tap: makes its device, MTU 1500, and removes it at close)
for port in pkt:vethA xdp:vethA xdp:vethA@conf:tx=live "tap:pmtT$$"; do
	before=$(rx_packets)
	rc=0
	inA "$PKTMAP" gen -i "$port" -l 1515 -n 10 -T 0 -q 2>"$TMP/err" || rc=$?
	expect_eq "gen -i $port -l 1515: exit status" "$rc" 2
	expect_eq "gen -i $port -l 1515: lines on stderr" "$(wc -l <"$TMP/err")" 1
	grep -q "^pktmap: gen: -l: frame length 1515 is more than $port sends: at most 1514" \
		"$TMP/err" || fail "gen -i $port -l 1515: $(cat "$TMP/err")"
	expect_eq "gen -i $port -l 1515: frames vethB received" \
		"$(($(rx_packets) - before))" 0
	echo "  [2] $(cat "$TMP/err")"
	rc=0
	inA "$PKTMAP" gen -i "$port" -l 60-1514 -n 10 -T 0 -q || rc=$?
	expect_eq "gen -i $port -l 60-1514: exit status" "$rc" 0
done
echo "PASS"
