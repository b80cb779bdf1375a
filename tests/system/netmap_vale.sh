#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# vale-ctl's requests (NETMAP_REQ_VALE_*, and the legacy NETMAP_BDG_*)
# through the /dev/netmap emulation, served by a running `pktmap switch`.
# nmvale (tests/netmap/nmvale.c) is a netmap program written here that
# does what vale-ctl does, built two ways: nmvale_lib (linked against
# libpktmap-netmap) and nmvale_raw (no pktmap library, under
# `pktmap netmap-run`). Every result is checked against
# `pktmap switch --list`.
#
#   netns nv$$:  pktmap switch valeq$$
#                  |- per$$  (a persistent port: NEWIF made the tap)
#                  |- vx$$a  (a veth, as xdp:vx$$a; with -h also vx$$a^)
#                vx$$a == veth == vx$$b
#
# Needs root; under CI=true it may not skip. Everything is removed on exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

B=${PKTMAP_BUILD_ROOT:?}
NS=nv$$
S=valeq$(($$ % 100000))
P=per$$
V=vx$$a

need_root
need_cmd ip
[ -x "$B/tests/nmvale_lib" ] && [ -x "$B/tests/nmvale_raw" ] || fail "nmvale not built"
if ldd "$B/tests/nmvale_raw" | grep -q pktmap; then
	fail "nmvale_raw links a pktmap library"
fi

at_exit netns_del "$NS"
netns_new "$NS"
netns_veth "$NS" "$V" "$NS" vx$$b
nsx() { ip netns exec "$NS" "$@"; }
list() { nsx "$PKTMAP" switch --list "$S"; }
# the port column of `pktmap switch --list`, one per line, in its order
ports() { list | awk 'NR > 1 && $1 != "switch" { print $1 }'; }

out=$(nsx "$B/tests/nmvale_lib" -l "$S:x" 2>&1) && fail "list with no switch: $out"
printf '%s\n' "$out" | grep -q "switch '$S' is not running: start it with 'pktmap switch $S'" ||
	fail "no switch: $out"

BG_TIMEOUT=200 bg ip netns exec "$NS" "$PKTMAP" switch "$S" -T 0 -q
for _ in $(seq 300); do list >/dev/null 2>&1 && break; sleep 0.1; done
list >/dev/null || fail "switch $S did not start"

round() {
	local how=$1 nv
	shift
	nv=("$@")
	echo "== $how"
	# NEWIF: a persistent port, a tap device that outlives the program
	nsx "${nv[@]}" -n "$P"
	nsx ip link show dev "$P" >/dev/null || fail "$how: no tap $P after -n"
	out=$(nsx "${nv[@]}" -n "$P" 2>&1) && fail "$how: -n twice: $out"
	printf '%s\n' "$out" | grep -q "File exists" || fail "$how: -n twice: $out"
	# ATTACH it, and the veth
	expect_eq "$how: -a $P" "$(nsx "${nv[@]}" -a "$S:$P")" "$S:$P: index 0"
	expect_eq "$how: -a $V" "$(nsx "${nv[@]}" -a "$S:$V")" "$S:$V: index 1"
	list | grep -q "^$P *tap .* tap:$P\$" || fail "$how: $P: $(list)"
	list | grep -q "^$V *nic .* xdp:$V\$" || fail "$how: $V: $(list)"
	expect_eq "$how: switch ports" "$(ports | tr '\n' ' ')" "$P $V "
	out=$(nsx "${nv[@]}" -a "$S:$V" 2>&1) && fail "$how: attached twice"
	printf '%s\n' "$out" | grep -q "Device or resource busy" || fail "$how: $out"
	# LIST: every port of our switch, in the switch's order, with one
	# bridge index (other tests' switches may be listed too)
	nsx "${nv[@]}" -l >"$TMP/l"
	expect_eq "$how: listed" "$(grep "^$S:" "$TMP/l" | sed 's/ \[bridge:[0-9]* / [/')" \
		"$S:$P [port:0]
$S:$V [port:1]"
	br=$(grep "^$S:$P " "$TMP/l" | sed 's/.*bridge:\([0-9]*\).*/\1/')
	expect_eq "$how: -l $S:$V" "$(nsx "${nv[@]}" -l "$S:$V")" \
		"$S:$V [bridge:$br port:1]"
	out=$(nsx "${nv[@]}" -l "$S:nosuch" 2>&1) && fail "$how: listed nosuch"
	printf '%s\n' "$out" | grep -q "no such port" || fail "$how: $out"
	# DELIF of an attached port: busy
	out=$(nsx "${nv[@]}" -r "$P" 2>&1) && fail "$how: removed an attached port"
	printf '%s\n' "$out" | grep -q "Device or resource busy" || fail "$how: -r: $out"
	# DETACH, then the switch has only the other
	expect_eq "$how: -d $V" "$(nsx "${nv[@]}" -d "$S:$V")" "$S:$V: index 1"
	expect_eq "$how: after -d" "$(ports | tr '\n' ' ')" "$P "
	expect_eq "$how: -d $P" "$(nsx "${nv[@]}" -d "$S:$P")" "$S:$P: index 0"
	expect_eq "$how: after -d" "$(ports | tr '\n' ' ')" ""
	# -h: the interface and its host rings
	expect_eq "$how: -h $V" "$(nsx "${nv[@]}" -h "$S:$V")" "$S:$V: index 0"
	expect_eq "$how: after -h" "$(ports | tr '\n' ' ')" "$V $V^ "
	list | grep -q "^$V^ *host .* xdp:$V^\$" || fail "$how: $V^: $(list)"
	nsx "${nv[@]}" -d "$S:$V" >/dev/null
	expect_eq "$how: after -d of -h" "$(ports | tr '\n' ' ')" ""
	# DELIF: the tap is gone
	nsx "${nv[@]}" -r "$P"
	nsx ip link show dev "$P" >/dev/null 2>&1 && fail "$how: tap $P left after -r"
	out=$(nsx "${nv[@]}" -r "$P" 2>&1) && fail "$how: -r twice"
	printf '%s\n' "$out" | grep -q "No such device" || fail "$how: -r twice: $out"
	# POLLING: one line, EOPNOTSUPP
	out=$(nsx "${nv[@]}" -p "$S:$V" 2>&1) && fail "$how: polling accepted"
	printf '%s\n' "$out" | grep -q "polling threads are not available" ||
		fail "$how: polling: $out"
	printf '%s\n' "$out" | grep -q "Operation not supported" || fail "$how: $out"
}

round lib "$B/tests/nmvale_lib"
round raw "$PKTMAP" netmap-run "$B/tests/nmvale_raw"

echo "== legacy (struct nmreq, nr_cmd NETMAP_BDG_*)"
# (struct nmreq's nr_name holds 15 characters: short names)
L=("$PKTMAP" netmap-run "$B/tests/nmvale_raw" -L)
P=L$(($$ % 100))
nsx "${L[@]}" -n "$P"
nsx "${L[@]}" -a "$S:$P"
nsx ip link set "$V" name "v$P"
V=v$P
nsx "${L[@]}" -a "$S:$V"
expect_eq "legacy: switch ports" "$(ports | tr '\n' ' ')" "$P $V "
nsx "${L[@]}" -l >"$TMP/l"
expect_eq "legacy: listed" "$(grep "^$S:" "$TMP/l" | sed 's/ \[bridge:[0-9]* / [/')" \
	"$S:$P [port:0]
$S:$V [port:1]"
nsx "${L[@]}" -d "$S:$V"
nsx "${L[@]}" -d "$S:$P"
expect_eq "legacy: after -d" "$(ports | tr '\n' ' ')" ""
nsx "${L[@]}" -r "$P"
nsx ip link show dev "$P" >/dev/null 2>&1 && fail "legacy: tap $P left after -r"
echo "ok"
