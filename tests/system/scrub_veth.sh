#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap scrub on xdp: ports, inline between two veth pairs, with its
# kernel fast path (pktmap's scrub XDP program) and without it.
#
#   netns sA$$          netns sB$$                          netns sC$$
#   +---------+         +-------------------------------+   +---------+
#   | gen     |         |          pktmap scrub          |   | recv    |
#   |  xdp:va += veth ==+ xdp:vb1 (prog=scrub) xdp:vb2  +===+ xdp:vc  |
#   +---------+         +-------------------------------+   +---------+
#
# gen sends N frames from 10.0.0.1 .. 10.0.0.4 in turn. The rules deny
# 10.0.0.1 (the kernel drops it when it has the path) and drop UDP from
# 10.0.0.2 by a match rule (user space only).
#  1. with the kernel path: deny counted N/4 (all of them in the kernel:
#     kernel_drops.deny), drop_rule N/4, passed N/2, and the receiver
#     gets the passed frames, in order, intact; every frame accounted
#     for (kernel drops + what vb1's socket delivered or counted lost).
#  2. --no-kernel: the same verdicts, none of them in the kernel.
#  3. a manual ban through the control socket reaches the kernel: frames
#     from 10.0.0.3 are dropped there (kernel_drops.banned), and pass
#     again after unban (counted at a rate vb1's socket keeps up with).
#  4. host mode (-i xdp:vb1 alone): ping from A reaches B's stack through
#     scrub (and the replies go out); after a reload that denies A, it
#     does not, dropped in the kernel.
# After each step no XDP program is left on any interface. Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=${N:-4000}
RATE=${RATE:-20k}
A=sA$$
B=sB$$
C=sC$$

need_root
need_cmd ip

at_exit netns_del "$A" "$B" "$C"
netns_new "$A" "$B" "$C"
netns_veth "$A" va "$B" vb1
netns_veth "$B" vb2 "$C" vc

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
no_leftovers() {
	local l
	l=$(netns_xdp_gone "$A" "$B" "$C") || fail "XDP program left behind: $l"
}
wait_bound() {
	local _
	for _ in $(seq 200); do
		nsx "$1" ip link show dev "$2" | grep -q "prog/xdp" && return 0
		sleep 0.05
	done
	fail "nothing opened xdp:$2"
}
pyj() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
ctl() {
	nsx "$B" python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall((" ".join(sys.argv[2:]) + "\n").encode()); print(s.recv(4096).decode().strip())' "$@"
}

printf 'deny 10.0.0.1\ndrop proto udp src 10.0.0.2\n' >"$TMP/r.rules"

# run TAG N [scrub options...]: scrub in B, recv in C, gen in A; the
# scrub's JSON in $TMP/TAG.json, recv's in $TMP/TAG.r.json
start() {
	local tag=$1
	shift
	bg ip netns exec "$B" "$PKTMAP" scrub -i xdp:vb1 -o xdp:vb2 -c "$TMP/r.rules" \
		--control "$TMP/$tag.sock" -T 0 --json "$@" >"$TMP/$tag.json" 2>"$TMP/$tag.err"
	SPID=$BG_PID
	wait_for "$TMP/$tag.err" "^scrub: xdp:vb1"
	wait_bound "$B" vb1
	wait_bound "$B" vb2
}
recv_start() {
	bg ip netns exec "$C" "$PKTMAP" recv -i xdp:vc -n "$2" --idle 3 -T 0 -q --json >"$TMP/$1.r.json"
	RCV=$BG_PID
	wait_bound "$C" vc
}
gen() {
	nsx "$A" timeout 60 "$PKTMAP" gen -i xdp:va -s 10.0.0.1-10.0.0.4 -R "$RATE" \
		-T 0 -q "$@" >/dev/null
}
stop() {
	kill -TERM "$(pgrep -P "$SPID" | head -n 1)"
	wait_bg "$SPID"
	expect_eq "$1: scrub exit" "$WAIT_RC" 0
}

# check TAG KERNEL: the counts of a run of N frames
check() {
	local j=$TMP/$1.json lost kdeny
	lost=$(pyj "$j" 'sum(p["drop_backend"] for p in j["in_ports"])')
	kdeny=$(pyj "$j" 'j["kernel_drops"]["deny"]')
	echo "   $1: judged $(json "$j" judged), kernel deny $kdeny, lost at vb1's socket $lost"
	drops_ok "$1: vb1's socket" "$lost" "$N"
	expect_eq "$1: kernel path" "$(pyj "$j" 'j["kernel"]')" "$2"
	expect_eq "$1: every frame judged or lost" $(( $(json "$j" judged) + lost )) "$N"
	if [ "$lost" = 0 ]; then
		expect_eq "$1: deny" "$(pyj "$j" 'j["reasons"]["deny"]')" $((N / 4))
		expect_eq "$1: drop_rule" "$(pyj "$j" 'j["reasons"]["drop_rule"]')" $((N / 4))
		expect_eq "$1: passed" "$(json "$j" passed)" $((N / 2))
		expect_eq "$1: rule 0" "$(pyj "$j" 'j["rules"][0]["hits"]')" $((N / 4))
		expect_eq "$1: rule 1" "$(pyj "$j" 'j["rules"][1]["hits"]')" $((N / 4))
	fi
	if [ "$2" = True ]; then
		expect_eq "$1: deny in the kernel" "$kdeny" "$(pyj "$j" 'j["reasons"]["deny"]')"
	else
		expect_eq "$1: nothing in the kernel" "$kdeny" 0
	fi
}

n=0
for mode in kernel user; do
	n=$((n + 1))
	echo "$n. the deny list $([ $mode = kernel ] && echo "in the kernel" || echo "in user space (--no-kernel)")"
	opts=()
	[ $mode = kernel ] || opts=(--no-kernel)
	start "s$n" "${opts[@]}"
	recv_start "s$n" $((N / 2))
	gen -n "$N"
	wait_bg "$RCV"
	stop "s$n"
	check "s$n" "$([ $mode = kernel ] && echo True || echo False)"
	lost=$(pyj "$TMP/s$n.json" 'sum(p["drop_backend"] for p in j["in_ports"])')
	got=$(json "$TMP/s$n.r.json" packets)
	echo "   receiver: $got frames, gaps $(json "$TMP/s$n.r.json" gaps), bad $(json "$TMP/s$n.r.json" bad)"
	expect_eq "$n: bad frames" "$(json "$TMP/s$n.r.json" bad)" 0
	expect_eq "$n: reordered" "$(json "$TMP/s$n.r.json" reordered)" 0
	rlost=$(json "$TMP/s$n.r.json" drop_backend)
	expect_eq "$n: forwarded = received + lost at vc" \
		"$(json "$TMP/s$n.json" forwarded)" $((got + rlost))
	[ "$lost" != 0 ] || expect_eq "$n: received" $((got + rlost)) $((N / 2))
	no_leftovers
done

echo "3. a manual ban reaches the kernel; unban lifts it"
# stat TAG NAME: a counter of the running scrub's control socket
stat() {
	ctl "$TMP/$1.sock" stats | awk -v k="$2" '$1 == k && NF == 2 { print $2 }
		$1 == "reason" && $2 == k { print $3 }'
}
start s3
expect_eq "ban" "$(ctl "$TMP/s3.sock" ban 10.0.0.3 600)" "ok banned 10.0.0.3 for 600 s"
gen -n "$N"
wait_output "$N" stat s3 judged
expect_eq "3: judged" "$(stat s3 judged)" "$N"
expect_eq "3: banned" "$(stat s3 banned)" $((N / 4))
expect_eq "3: passed" "$(stat s3 passed)" $((N / 4))
expect_eq "unban" "$(ctl "$TMP/s3.sock" unban 10.0.0.3)" "ok unbanned 10.0.0.3"
gen -n "$N"
wait_output $((2 * N)) stat s3 judged
expect_eq "3: banned after unban" "$(stat s3 banned)" $((N / 4))
expect_eq "3: passed after unban" "$(stat s3 passed)" $((N / 4 + N / 2))
stop s3
expect_eq "3: bans in the kernel" "$(pyj "$TMP/s3.json" 'j["kernel_drops"]["banned"]')" $((N / 4))
no_leftovers

echo "4. host mode: -i xdp:vb1 alone, the host stack behind it"
nsx "$A" ip addr add 10.9.0.1/24 dev va
nsx "$B" ip addr add 10.9.0.2/24 dev vb1
: >"$TMP/h.rules"
bg ip netns exec "$B" "$PKTMAP" scrub -i xdp:vb1 -c "$TMP/h.rules" \
	--control "$TMP/h.sock" -T 0 --json >"$TMP/h.json" 2>"$TMP/h.err"
SPID=$BG_PID
wait_for "$TMP/h.err" "^scrub: xdp:vb1 -> xdp:vb1\\^"
wait_bound "$B" vb1
nsx "$A" ping -c 3 -i 0.2 -W 2 10.9.0.2 >/dev/null || fail "4: no ping through scrub"
echo "deny 10.9.0.1" >"$TMP/h.rules"
expect_eq "4: reload" "$(ctl "$TMP/h.sock" reload)" "ok reloaded $TMP/h.rules"
! nsx "$A" ping -c 2 -i 0.2 -W 1 10.9.0.2 >/dev/null || fail "4: ping passed a deny"
stop h
expect_eq "4: denied in the kernel" "$(pyj "$TMP/h.json" 'j["kernel_drops"]["deny"]')" \
	"$(pyj "$TMP/h.json" 'j["reasons"]["deny"]')"
[ "$(pyj "$TMP/h.json" 'j["reasons"]["deny"]')" -ge 2 ] || fail "4: deny count"
[ "$(pyj "$TMP/h.json" 'j["returned"]')" -ge 3 ] || fail "4: the host's replies"
no_leftovers
echo "scrub_veth: ok"
