#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# pktmap broker takes back what its policy no longer allows, and nothing
# else (docs/broker.md, "Revocation and release"). Broker in B, clients as
# nobody:
# 1. a reload (SIGHUP) without the xdp:vethB rule: nobody's xdp: receiver
#    gets nothing more (its count stays at the M frames it had), the
#    XDP program the broker attached to vethB at start is detached, the
#    frames reach the stack instead, where nobody's pkt:vethB receiver
#    (still allowed) gets all N;
# 2. a reload with the xdp:vethB rule again attaches the program before
#    any client; a reload without the pkt:vethD rule: nobody's pkt:vethD receiver
#    gets nothing more (root's receiver on vethD, the witness that the
#    frames were there, gets them all), while nobody's xdp:vethB-0
#    receiver (allowed again) gets all N;
# 3. a policy that does not parse: reported, the one in force stays;
# 4. another program on an interface a reload names for xdp: is left
#    alone: the broker says it cannot hold its own there, the other one
#    stays attached, and a client's xdp: open there fails with one line
#    naming it;
# 5. the broker stops (restart): the XDP program it held goes (xdp:
#    steering ends), nobody's pkt: receiver goes on getting every frame;
#    the restarted broker attaches it again before any client and serves
#    a new xdp: receiver;
# 6. run as systemd runs pktmap-broker.service (tests/system/
#    broker_activate.py): the socket passed (LISTEN_FDS), READY=1, a
#    request served, RELOADING=1 and READY=1 around SIGHUP, STOPPING=1 and
#    exit 0 at SIGTERM; a stream socket refused in one line.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
stage_for_others

N=${N:-20000}
M=${M:-1000}
RATE=${RATE:-100000}
A=pmrA$$
B=pmrB$$
ns_pair "$A" "$B"
netns_veth "$A" vethC "$B" vethD
SD=$(mktemp -d /tmp/pktmap-broker.XXXXXX)
chmod 755 "$SD"
at_exit rm -rf "$SD"
SOCK=$SD/broker.sock
POL=$SD/broker.conf
BK="@conf:broker=$SOCK"
XDP_RULE="allow user:nobody xdp:vethB queues=0 modes=copy"
PKTB_RULE="allow user:nobody pkt:vethB dir=rx"
PKTD_RULE="allow user:nobody pkt:vethD dir=rx"
policy() { printf '%s\n' "$@" >"$POL"; }
policy "$XDP_RULE" "$PKTB_RULE" "$PKTD_RULE"
LOG=$TMP/broker.log
start_broker() {
	BG_TIMEOUT=600 bg ip netns exec "$B" "$PKTMAP" broker --socket "$SOCK" \
		--policy "$POL" 2>>"$LOG"
	BROKER=$BG_PID
	until [ "$(grep -c "listening on $SOCK" "$LOG" 2>/dev/null || true)" -gt "${1:-0}" ]; do
		sleep 0.1
	done
	BPID=$(sed -nE 's/.*listening on .* pid ([0-9]+)$/\1/p' "$LOG" | tail -n 1)
}
start_broker 0
# attached: pktmap's XDP program is on vethB
attached() {
	local p
	p=$(xdp_prog "$B" vethB)
	[[ "$p" == "pktmap_xdp "* ]] || fail "$1: no pktmap XDP program on vethB: '$p'"
}
attached "at start"
# reload: SIGHUP, then the broker's answer in its log
reload() {
	local n
	n=$(grep -cE "reloaded|reload failed" "$LOG" || true)
	kill -HUP "$BPID"
	until [ "$(grep -cE "reloaded|reload failed" "$LOG" || true)" -gt "$n" ]; do sleep 0.1; done
}
NOBODY=(ip netns exec "$B" setpriv --reuid=nobody --regid=nogroup --clear-groups
	"${OTHER_ENV[@]}" "$OTHER_PKTMAP")
# steered: the number of xdp:vethB-0 queues the broker steered so far
steered() { grep -c "steer uid 65534 .* xdp:vethB-0 " "$LOG" || true; }
wait_steered() {
	until [ "$(steered)" -gt "$1" ]; do
		kill -0 "$2" 2>/dev/null || fail "recv ended before its queue was steered"
		sleep 0.1
	done
}
# pkt_socks IF: packet sockets bound to IF in B
pkt_socks() {
	local idx
	idx=$(ip netns exec "$B" cat "/sys/class/net/$1/ifindex")
	ip netns exec "$B" awk -v i="$idx" 'NR > 1 && $5 == i' /proc/net/packet | wc -l
}
wait_socks() {
	local _
	for _ in $(seq 300); do [ "$(pkt_socks "$1")" -ge "$2" ] && return 0; sleep 0.1; done
	fail "fewer than $2 packet sockets on $1"
}
# rx_of PID: the packets PID's ports received, as root's `pktmap top` sees
rx_of() {
	"$PKTMAP" top --once -d 0 --json | python3 -c 'import json,sys
print(sum(p["rx"]["packets"] for p in json.load(sys.stdin)["ports"] if p["pid"] == int(sys.argv[1])))' "$1"
}
client_pid() { grep -E "$1" "$LOG" | tail -n 1 | sed -E 's/.* pid ([0-9]+) .*/\1/'; }
exactly() {
	expect_eq "$1: packets, bad" "$(json "$2" packets) $(json "$2" bad)" "$3 0"
}

echo "== 1. a reload revokes xdp:vethB-0 and nothing else"
s=$(steered)
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK" -T 0 -q --json >"$TMP/x1.json"
X=$BG_PID
wait_steered "$s" "$X"
XP=$(client_pid "steer uid 65534 .* xdp:vethB-0 ")
inA "$PKTMAP" gen -i pkt:vethA -n "$M" -T 0 -q
for _ in $(seq 300); do [ "$(rx_of "$XP")" -ge "$M" ] && break; sleep 0.1; done
expect_eq "xdp: receiver before the reload" "$(rx_of "$XP")" "$M"
bg "${NOBODY[@]}" recv -i "pkt:vethB$BK" -n "$N" --idle 5 -T 0 -q --json >"$TMP/y1.json"
Y=$BG_PID
wait_socks vethB 1
policy "$PKTB_RULE" "$PKTD_RULE"
reload
grep -q "revoke uid 65534 (nobody) pid $XP xdp:vethB-0" "$LOG" || fail "no revocation: $(tail -n 3 "$LOG")"
l=$(netns_xdp_gone "$B") || fail "the XDP program outlived its rule: $l"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$Y"
expect_eq "pkt: receiver status" "$WAIT_RC" 0
exactly "pkt:vethB after the reload" "$TMP/y1.json" "$N"
stop_bg "$X"
wait_bg "$X"
exactly "xdp:vethB-0, revoked" "$TMP/x1.json" "$M"
grep -q "revoke .* pkt:" "$LOG" && fail "a pkt: grant was revoked: $(grep "revoke .* pkt:" "$LOG")"

echo "== 2. a reload revokes pkt:vethD and nothing else"
policy "$XDP_RULE" "$PKTB_RULE" "$PKTD_RULE"
reload
attached "after a reload that names it again"
bg "${NOBODY[@]}" recv -i "pkt:vethD$BK" -T 0 -q --json >"$TMP/y2.json"
Y=$BG_PID
wait_socks vethD 1
bg ip netns exec "$B" "$PKTMAP" recv -i pkt:vethD -n "$M" -T 0 -q --json >"$TMP/w1.json"
W=$BG_PID
wait_socks vethD 2
inA "$PKTMAP" gen -i pkt:vethC -n "$M" -T 0 -q
wait_bg "$W"
exactly "witness on vethD" "$TMP/w1.json" "$M"
s=$(steered)
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK" -n "$N" --idle 5 -T 0 -q --json >"$TMP/x2.json"
X=$BG_PID
wait_steered "$s" "$X"
policy "$XDP_RULE" "$PKTB_RULE"
reload
grep -q "revoke uid 65534 .* pkt:vethD" "$LOG" || fail "no revocation: $(tail -n 3 "$LOG")"
bg ip netns exec "$B" "$PKTMAP" recv -i pkt:vethD -n "$N" -T 0 -q --json >"$TMP/w2.json"
W=$BG_PID
wait_socks vethD 2
inA "$PKTMAP" gen -i pkt:vethC -n "$N" -R "$RATE" -T 0 -q
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$W"
exactly "witness on vethD" "$TMP/w2.json" "$N"
wait_bg "$X"
expect_eq "xdp: receiver status" "$WAIT_RC" 0
exactly "xdp:vethB-0, still allowed" "$TMP/x2.json" "$N"
stop_bg "$Y"
wait_bg "$Y"
exactly "pkt:vethD, revoked" "$TMP/y2.json" "$M"
[ "$(grep -c "revoke .* xdp:" "$LOG")" = 1 ] || fail "an xdp: grant was revoked again"

echo "== 3. a policy that does not parse leaves the one in force"
printf 'allow user:nobody xdp:vethB queues=9-1\n' >"$POL"
reload
grep -q "reload failed, the policy in force stays: $POL:1: queues=" "$LOG" ||
	fail "no one-line reload error: $(tail -n 1 "$LOG")"
policy "$XDP_RULE" "$PKTB_RULE"

echo "== 4. another XDP program on a policy's interface is left alone"
ip -n "$B" link set dev vethD xdpgeneric obj "$PKTMAP_BUILD_ROOT/bpf/pktmap_tx.bpf.o" sec xdp
at_exit ip -n "$B" link set dev vethD xdpgeneric off
OTHER=$(xdp_prog "$B" vethD)
[[ "$OTHER" == "pktmap_tx "* ]] || fail "the other program is not on vethD: '$OTHER'"
policy "$XDP_RULE" "$PKTB_RULE" "allow user:nobody xdp:vethD queues=0 modes=copy"
reload
grep -q "xdp:vethD: cannot hold the XDP program ahead of its grants: .*another XDP program ('pktmap_tx'" "$LOG" ||
	fail "no line about the other program: $(tail -n 3 "$LOG")"
expect_eq "the other program on vethD after the reload" "$(xdp_prog "$B" vethD)" "$OTHER"
expect_err "another XDP program ('pktmap_tx'" "${NOBODY[@]}" recv -i "xdp:vethD-0$BK" -n 1 -T 0
expect_eq "the other program on vethD after a grant" "$(xdp_prog "$B" vethD)" "$OTHER"
attached "beside the other program"
ip -n "$B" link set dev vethD xdpgeneric off
policy "$XDP_RULE" "$PKTB_RULE"
reload

echo "== 5. a broker restart: xdp: steering ends, pkt: goes on"
s=$(steered)
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK" -T 0 -q >/dev/null
X=$BG_PID
wait_steered "$s" "$X"
bg "${NOBODY[@]}" recv -i "pkt:vethB$BK" -n "$N" --idle 5 -T 0 -q --json >"$TMP/y4.json"
Y=$BG_PID
wait_socks vethB 1
kill -TERM "$BPID"
wait_bg "$BROKER"
grep -q "stopped" "$LOG" || fail "the broker did not say it stopped"
l=$(netns_xdp_gone "$B") || fail "the XDP program outlived the broker: $l"
start_broker 1
attached "after the restart"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$Y"
exactly "pkt:vethB across the restart" "$TMP/y4.json" "$N"
stop_bg "$X"
wait_bg "$X"
s=$(steered)
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK@conf:rx-slots=4096" -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/x4.json"
X=$BG_PID
wait_steered "$s" "$X"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$X"
exactly "xdp:vethB-0 from the restarted broker" "$TMP/x4.json" "$N"
echo "== 6. socket activation and readiness, as systemd runs the unit"
kill -TERM "$BPID"
wait_bg "$BROKER"
printf 'allow user:0 pkt:vethB dir=rx\n' >"$SD/broker.conf"
ip netns exec "$B" python3 "$(dirname "$0")/broker_activate.py" "$PKTMAP" "$SD" vethB |
	sed 's/^/   /'
expect_eq "activated broker" "${PIPESTATUS[0]}" 0
ip netns exec "$B" python3 "$(dirname "$0")/broker_activate.py" "$PKTMAP" "$SD" vethB \
	stream | sed 's/^/   /'
expect_eq "activated broker, stream socket" "${PIPESTATUS[0]}" 0

l=$(netns_xdp_gone "$A" "$B") || fail "XDP program left behind: $l"
echo "PASS"
