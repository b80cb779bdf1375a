#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# netmap:IFACE names on real interfaces: a veth pair across two
# namespaces, nmt (tests/netmap/nmt.c, a netmap program) on both ends.
#
#   netns nmA$$                            netns nmB$$
#   nmt gen netmap:vethA  ==== veth ====   nmt recv netmap:vethB
#
# 1. netmap:IFACE is xdp:IFACE (AF_XDP): frames in order, bytes intact,
#    received + missing = sent (a veth drops what a starved receiver
#    cannot take; netmap programs see no drop counter, the sequence
#    numbers say; at most MAX_DROP_PCT percent, lib.sh's drops_ok)
#    (libnetmap build, run directly).
# 2. netmap-run --map pkt: netmap:IFACE is pkt:IFACE (AF_PACKET), raw-ABI
#    build with no pktmap library.
# 3. a name that is no interface: ENXIO and one line naming it.
# Needs root; everything it makes is removed on exit.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
N=${N:-20000}
A=nmA$$
B=nmB$$
. "$(dirname "$0")/lib.sh"

need_root
need_cmd ip
BLD=${PKTMAP_BUILD_ROOT:?}
LIB=$BLD/tests/nmt_lib
RAW=$BLD/tests/nmt_raw

ns_pair "$A" "$B"
export NMT_RATE=${NMT_RATE:-50000}   # a veth has no flow control
export NMT_GAPS=1                      # so a starved receiver may miss frames

# run CASE RECV... -- GEN...: receiver in B (waits for its "ready"),
# sender in A.
run() {
	local c=$1; shift
	local rx=(); while [ "$1" != -- ]; do rx+=("$1"); shift; done; shift
	bg ip netns exec "$B" "${rx[@]}" >"$TMP/$c.rx" 2>&1
	local pid=$BG_PID
	wait_for "$TMP/$c.rx" '^ready'
	ip netns exec "$A" "$@" >"$TMP/$c.tx" 2>&1 || fail "$c: sender: $(cat "$TMP/$c.tx")"
	wait_bg "$pid"
	[ "$WAIT_RC" = 0 ] || fail "$c: receiver: $(cat "$TMP/$c.rx")"
	local last got miss
	last=$(tail -n 1 "$TMP/$c.rx")
	case "$last" in
	"received "*" in order, bytes ok, "*" missing") ;;
	*) fail "$c: $last" ;;
	esac
	got=$(echo "$last" | cut -d' ' -f2)
	miss=$(echo "$last" | cut -d' ' -f7)
	# a veth has no flow control: a receiver starved of CPU lets the
	# kernel drop; the rest must arrive, in order and intact
	expect_eq "$c: received + missing" $((got + miss)) "$N"
	drops_ok "$c: missing" "$miss" "$N"
	echo "  $c: $(tail -n 1 "$TMP/$c.tx") / $last"
}

echo "1. netmap:vethA -> netmap:vethB as xdp: ($N frames of 60..1514 bytes)"
run xdp60 "$LIB" recv netmap:vethB "$N" 60 poll -- \
	"$LIB" gen netmap:vethA "$N" 60 poll
run xdp1514 "$LIB" recv netmap:vethB "$N" 1514 epoll -- \
	"$LIB" gen netmap:vethA "$N" 1514 select

echo "2. netmap-run --map pkt: as pkt: (AF_PACKET)"
run pkt "$PKTMAP" netmap-run --map pkt "$RAW" recv netmap:vethB "$N" 100 poll -- \
	"$PKTMAP" netmap-run --map pkt "$RAW" gen netmap:vethA "$N" 100 poll

echo "3. no such interface"
out=$(ip netns exec "$A" "$PKTMAP" netmap-run "$RAW" recv netmap:nmtnone0 1 60 2>&1 || true)
echo "$out" | grep -q "NIOCCTRL REGISTER: No such device or address" ||
	fail "no such interface: $out"
echo "$out" | grep -q "^pktmap netmap: netmap:nmtnone0: xdp:nmtnone0: no such interface" ||
	fail "no one-line reason: $out"
echo "  $(echo "$out" | head -n 1)"
echo "netmap_veth: ok"
