#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap bridge and pktmap router on xdp: ports, veth pairs across three
# namespaces.
#
#   netns fA$$           netns fB$$                        netns fC$$
#   +---------+          +---------------------------+     +----------+
#   | gen     |          | pktmap bridge / router    |     | recv     |
#   |  xdp:va +== veth ==+ xdp:vb1   xdp:vb2 ----------veth-+ xdp:vc   |
#   +---------+          |           xdp:vb3 ----------veth-+ xdp:vd   |
#                        +---------------------------+     +----------+
#
# 1. bridge vb1 <-> vb2, both ports in one region (@mem): zero-copy, every
#    frame delivered once, in order, intact, but for frames the kernel
#    counted as dropped at a starved socket (at most MAX_DROP_PCT percent,
#    lib.sh's drops_ok).
# 2. the same with the ports in their own regions: copying.
# 3. router vb1, vb2, vb3 (lpm, one region): each recv gets exactly the
#    frames routed to it (the same bound on counted drops), checksums
#    right after the TTL decrement.
# 4. bridge given one port (vb1 with its host rings, which xdp: has): runs
#    zero-copy until SIGINT.
# After each step no XDP program is left on any interface. Needs root;
# under CI=true it may not skip. Everything it makes is removed on exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=${N:-50000}
RATE=${RATE:-100k} # veth in AF_XDP copy mode, on a busy 2-core machine
# The router drops by design when an output falls behind (a full queue
# drops that output's frames: no head-of-line blocking), so its step runs
# at a rate a machine whose cores are shared with busy loops sustains
# (its queues and the sockets' rings absorb stalls of ~100 ms), and every
# frame the router counts as dropped is reported.
RT_N=${RT_N:-20000}
RT_RATE=${RT_RATE:-20k}
A=fA$$
B=fB$$
C=fC$$

need_root
need_cmd ip

at_exit netns_del "$A" "$B" "$C"
netns_new "$A" "$B" "$C"
netns_veth "$A" va "$B" vb1
netns_veth "$B" vb2 "$C" vc
netns_veth "$B" vb3 "$C" vd

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# Nothing of ours may stay on a link.
no_leftovers() {
	local l
	l=$(netns_xdp_gone "$A" "$B" "$C") || fail "XDP program left behind: $l"
}
# Wait until pktmap's program is on interface $2 of netns $1.
wait_bound() {
	local i
	for i in $(seq 200); do
		nsx "$1" ip link show dev "$2" | grep -q "prog/xdp" && return 0
		sleep 0.05
	done
	fail "nothing opened xdp:$2"
}
recv_in_c() { # TAG IF COUNT
	bg ip netns exec "$C" "$PKTMAP" recv -i "xdp:$2" -n "$3" --idle 3 --csum \
		-T 0 -q --json >"$TMP/$1.json"
	RCV=$BG_PID
	wait_bound "$C" "$2"
}
pyj() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
recv_ok() { # TAG COUNT [split]
	local f="$TMP/$1.json"
	echo "   $1: $(json "$f" packets) frames, gaps $(json "$f" gaps)," \
	     "bad $(json "$f" bad), bad checksums $(json "$f" bad_csum)"
	expect_eq "$1 packets" "$(json "$f" packets)" "$2"
	[ -n "${3:-}" ] || expect_eq "$1 gaps" "$(json "$f" gaps)" 0
	expect_eq "$1 reordered" "$(json "$f" reordered)" 0
	expect_eq "$1 bad" "$(json "$f" bad)" 0
	expect_eq "$1 checksums" "$(json "$f" bad_csum)" 0
}
gen_in_a() { # ARGS...
	nsx "$A" timeout 60 "$PKTMAP" gen -i xdp:va -R "$RATE" -T 0 -q "$@" >/dev/null
}

n=0
for mode in zerocopy copy; do
	n=$((n + 1))
	echo "$n. bridge vb1 <-> vb2, $mode"
	if [ $mode = zerocopy ]; then
		ports=("xdp:vb1@mem:${PIPE}x" "xdp:vb2@mem:${PIPE}x")
	else
		ports=(xdp:vb1 xdp:vb2)
	fi
	bg ip netns exec "$B" "$PKTMAP" bridge "${ports[@]}" -T 0 --json \
		>"$TMP/b$n.json" 2>"$TMP/b$n.err"
	bpid=$BG_PID
	wait_bound "$B" vb1
	wait_bound "$B" vb2
	recv_in_c "r$n" vc "$N"
	gen_in_a -n "$N"
	wait_bg "$RCV"
	expect_eq "$n: recv exit status" "$WAIT_RC" 0
	kill -TERM "$bpid"
	wait_bg "$bpid"
	expect_eq "$n: bridge exit status" "$WAIT_RC" 0
	sed 's/^/   /' "$TMP/b$n.err" | head -1
	expect_eq "$n: bridge mode" "$(json "$TMP/b$n.json" mode)" "$mode"
	# Counted as drops: gen's frames crossed the bridge A->B or were
	# dropped (and counted) at the bridge's socket on vb1; the receiver
	# got what crossed, or its socket counted the drop; in order, intact.
	bj=$TMP/b$n.json
	crossed=$(pyj "$bj" 'j["directions"][0]["packets"]')
	adrop=$(pyj "$bj" 'j["directions"][1]["tx_port"]["drop_backend"]')
	rdrop=$(json "$TMP/r$n.json" drop_backend)
	echo "   bridge A->B $crossed (+ $adrop counted drops at vb1)," \
	     "receiver's counted drops $rdrop"
	expect_eq "$n: gen's frames crossed or counted" $((crossed + adrop)) "$N"
	expect_eq "$n: bridge drops" "$(pyj "$bj" 'j["directions"][0]["drops"]')" 0
	drops_ok "$n: vb1's and vc's sockets" $((adrop + rdrop)) "$N"
	recv_ok "r$n" $((crossed - rdrop)) split
	no_leftovers
done

echo "3. router vb1, vb2, vb3: lpm"
cat >"$TMP/routes" <<EOF
10.9.0.0/31 1
10.9.0.2/31 2
EOF
R="@mem:${PIPE}r"
bg ip netns exec "$B" "$PKTMAP" router -i "xdp:vb1$R" -i "xdp:vb2$R" \
	-i "xdp:vb3$R" -m lpm -r "$TMP/routes" -T 0 --json \
	>"$TMP/rt.json" 2>"$TMP/rt.err"
rpid=$BG_PID
for i in vb1 vb2 vb3; do wait_bound "$B" $i; done
recv_in_c rc vc $((RT_N / 2))
r1=$RCV
recv_in_c rd vd $((RT_N / 2))
r2=$RCV
nsx "$A" timeout 60 "$PKTMAP" gen -i xdp:va -R "$RT_RATE" -T 0 -q -n "$RT_N" \
	-d 10.9.0.0-10.9.0.3 >/dev/null
wait_bg "$r1"
expect_eq "3: recv on vc exit status" "$WAIT_RC" 0
wait_bg "$r2"
expect_eq "3: recv on vd exit status" "$WAIT_RC" 0
kill -TERM "$rpid"
wait_bg "$rpid"
expect_eq "3: router exit status" "$WAIT_RC" 0
head -1 "$TMP/rt.err" | sed 's/^/   /'
rin=$(json "$TMP/rt.json" rx_packets)
rout=$(json "$TMP/rt.json" tx_packets)
rdrop=$(json "$TMP/rt.json" dropped)
rexit=$(json "$TMP/rt.json" dropped_at_exit)
echo "   router: in $rin, out $rout, dropped $rdrop (+ $rexit queued at exit)"
# Conservation inside the router: every frame in is sent or counted.
expect_eq "3: router in = out + dropped" "$rin" $((rout + rdrop + rexit))
# Counted as drops, end to end: every frame gen sent reached the router
# or was dropped by the kernel at the router's socket (its drop_backend);
# each receiver got what the router sent to its output, or its own socket
# counted the drop; what arrived is intact and in order.
vb1drop=$(pyj "$TMP/rt.json" 'j["ports"][0]["drop_backend"]')
expect_eq "3: gen's frames reached the router or were counted" \
	$((rin + vb1drop)) "$RT_N"
alldrop=$((vb1drop + rdrop + rexit))
for k in 1 2; do
	f=$TMP/$( [ $k = 1 ] && echo rc || echo rd ).json
	sent=$(pyj "$TMP/rt.json" "sum(x['sent'] for x in j['queues'] if x['out'] == $k)")
	got=$(json "$f" packets)
	kdrop=$(json "$f" drop_backend)
	echo "   output $k: the router sent $sent, the receiver got $got (+ $kdrop counted drops)," \
	     "bad $(json "$f" bad), bad checksums $(json "$f" bad_csum)"
	[ "$got" -gt 0 ] || fail "3: output $k got nothing"
	expect_eq "3: output $k got what the router sent" $((got + kdrop)) "$sent"
	alldrop=$((alldrop + kdrop))
	expect_eq "3: output $k reordered" "$(json "$f" reordered)" 0
	expect_eq "3: output $k bad" "$(json "$f" bad)" 0
	expect_eq "3: output $k checksums" "$(json "$f" bad_csum)" 0
done
drops_ok "3: the router's and the receivers' counted drops" "$alldrop" "$RT_N"
expect_eq "3: conserved" "$(json "$TMP/rt.json" conserved)" true
expect_eq "3: zero-copy" "$(json "$TMP/rt.json" zerocopy)" all
no_leftovers

echo "4. bridge with one port: its host rings"
rc=0
# --foreground: one SIGINT to the bridge, not a second one to its group
nsx "$B" timeout --foreground -s INT 2 "$PKTMAP" bridge "xdp:vb1@mem:${PIPE}h" \
	-T 0 --json >"$TMP/b4.json" 2>"$TMP/b4.err" || rc=$?
# 124: timeout sent the signal; xdp: has host rings, so no error is right.
[ "$rc" = 0 ] || [ "$rc" = 124 ] || fail "4: bridge exit $rc: $(cat "$TMP/b4.err")"
expect_eq "4: end" "$(json "$TMP/b4.json" end)" signal
expect_eq "4: mode" "$(json "$TMP/b4.json" mode)" zerocopy
echo "   bridged xdp:vb1 with xdp:vb1^ (zero-copy, one region) until SIGINT"
no_leftovers

echo "PASS"
