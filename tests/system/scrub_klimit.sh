#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap scrub's limits in its kernel path, in host mode (issue 32):
#
#   netns skA$$                       netns skB$$ (10.77.0.2)
#   [ flood + legitimate flow ] vethA ==== vethB --> scrub -i xdp:vethB
#                                          (XDP: buckets, bans, XDP_PASS)
#                                          --> the stack --> UDP socket :9999
#
# The rules (every one representable in the kernel) allow-list the
# legitimate flow's source and limit every other source at a rate so low
# that nothing refills while the test runs (1 frame in 1000 s): 3 frames
# a source, then the source is banned for 600 s.
#  1. NSRC sources send PER frames each, and the legitimate flow LEGIT
#     numbered frames among them, at the sender's full rate: exactly 3
#     of each flooding source pass, 1 is dropped for src_pps and the rest
#     as banned, counted by reason and by rule; the
#     socket gets every legitimate frame, each once, intact; and user
#     space received none of them (the kernel judged them all and passed
#     the clean ones to the stack itself).
#  2. A reload to a short ban (2 s): a source over its limit is banned,
#     and once the ban has run out its next frame is judged by its
#     bucket again (src_pps, not banned): the ban expired.
#  3. An unban through the control socket lifts a ban the kernel made:
#     the source's next frame is dropped by its (still empty) bucket.
#  4. A reload to rules with a match rule (not representable in the
#     kernel): the limits are the workers' again (never open), none of
#     the drops the kernel's.
# Needs root; under CI=true it may not skip.
set -euo pipefail

HERE=$(dirname "$0")
PY=$HERE/scrub_klimit.py
NSRC=${NSRC:-64}
PER=${PER:-40}
LEGIT=${LEGIT:-300}
CAP=3
# shellcheck source=lib.sh
. "$HERE/lib.sh"

need_root
need_cmd python3
need_cmd ip

# ctl SOCK REQUEST: one request to scrub's control socket, the answer
ctl() {
	python3 "$PY" ctl "$@"
}
# counter NAME: scrub's counter NAME ("judged", "reason src_pps", ...)
counter() {
	ctl "$SOCK" stats | awk -v k="$1" '{ v = $NF; $NF = ""; sub(/ $/, "") }
		$0 == k { print v }'
}
# hits ID: the hits of rule ID
hits() {
	ctl "$SOCK" stats | awk -v k="$1" '$1 == "rule" && $2 == k { print $3 }'
}

ns_pair "skA$$" "skB$$"
inA sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.vethA.disable_ipv6=1
inB sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.vethB.disable_ipv6=1
inB sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.vethB.rp_filter=0
inB ip addr add 10.77.0.2/24 dev vethB
MAC=$(inB cat /sys/class/net/vethB/address)

cat >"$TMP/r.rules" <<EOF
allow 10.77.0.1
limit packets 0.001 burst $((CAP * 1000)) ban 600
sources 4096
EOF
SOCK=$TMP/ctl.sock
BG_TIMEOUT=280 bg ip netns exec "skB$$" "$PKTMAP" scrub -i xdp:vethB -c "$TMP/r.rules" \
	--control "$SOCK" -T 0 --json >"$TMP/s.json" 2>"$TMP/s.err"
SPID=$BG_PID
wait_for "$TMP/s.err" "^scrub: "
ctl "$SOCK" stats | grep -qx "kernel yes" ||
	fail "scrub on xdp:vethB runs without its kernel path: $(cat "$TMP/s.err")"

echo "1. $NSRC sources x $PER frames at full rate, $LEGIT legitimate frames among them"
bg ip netns exec "skB$$" python3 "$PY" recv 9999 "$LEGIT" "$TMP/ready" \
	>"$TMP/got"
RPID=$BG_PID
for _ in $(seq 300); do
	[ ! -e "$TMP/ready" ] || break
	sleep 0.1
done
[ -e "$TMP/ready" ] || fail "the receiver did not start"
inA python3 "$PY" flood vethA "$MAC" "$NSRC" "$PER" "$LEGIT"
TOTAL=$((NSRC * PER + LEGIT))
wait_output "$TOTAL" counter judged
expect_eq "judged" "$(counter judged)" "$TOTAL"
wait_bg "$RPID"
expect_eq "the receiver's exit status" "$WAIT_RC" 0
expect_eq "legitimate frames received" "$(cat "$TMP/got")" "$LEGIT"
expect_eq "passed" "$(counter "reason passed")" $((NSRC * CAP))
expect_eq "passed, allow-listed" "$(counter "reason allowed")" "$LEGIT"
expect_eq "the allow rule's hits" "$(hits 0)" "$LEGIT"
expect_eq "src_pps" "$(counter "reason src_pps")" "$NSRC"
expect_eq "banned" "$(counter "reason banned")" $((NSRC * (PER - CAP - 1)))
expect_eq "the limit rule's hits" "$(hits 1)" "$NSRC"
# all of them judged in the kernel
for k in passed allowed src_pps banned; do
	expect_eq "$k, in the kernel" "$(counter "kernel_reason $k")" \
		"$(counter "reason $k")"
done
# Nothing went up to user space: the port's socket received no frame.
RX=$("$PKTMAP" top --once -d 0 --json | python3 -c 'import json, sys
print(sum(p["rx"]["packets"] for p in json.load(sys.stdin)["ports"]
          if p["port"].startswith("xdp:vethB@") and sys.argv[1] in p["cmdline"]))' "$TMP")
expect_eq "frames received by user space" "$RX" 0

echo "2. a reload to a 2 s ban: it expires"
cat >"$TMP/r.rules" <<EOF
limit packets 0.001 burst 2000 ban 2
sources 4096
EOF
ctl "$SOCK" reload | grep -q "^ok" || fail "reload refused"
PPS0=$(counter "reason src_pps")
BAN0=$(counter "reason banned")
for _ in 1 2 3; do
	inA python3 "$PY" one vethA "$MAC" 10.79.0.1
done
wait_output $((PPS0 + 1)) counter "reason src_pps"
expect_eq "src_pps after 3 frames of a 2-frame bucket" \
	"$(counter "reason src_pps")" $((PPS0 + 1))
# One frame at a time until one is judged by the bucket again.
n=0
while [ "$(counter "reason src_pps")" = $((PPS0 + 1)) ]; do
	[ "$n" -lt 100 ] || fail "the 2 s ban did not expire after $n frames"
	J=$(counter judged)
	inA python3 "$PY" one vethA "$MAC" 10.79.0.1
	wait_output $((J + 1)) counter judged
	n=$((n + 1))
	[ "$(counter "reason src_pps")" = $((PPS0 + 2)) ] || sleep 0.1
done
expect_eq "src_pps once the ban expired" "$(counter "reason src_pps")" $((PPS0 + 2))
expect_eq "banned meanwhile" "$(counter "reason banned")" $((BAN0 + n - 1))
echo "   expired after $n frames"

echo "3. unban a source the kernel banned: its bucket is still empty"
# 10.78.0.1 was banned for 600 s in step 1 (the reload kept its entry)
BAN0=$(counter "reason banned")
J=$(counter judged)
inA python3 "$PY" one vethA "$MAC" 10.78.0.1
wait_output $((J + 1)) counter judged
expect_eq "banned (600 s)" "$(counter "reason banned")" $((BAN0 + 1))
ctl "$SOCK" unban 10.78.0.1 | grep -q "^ok" || fail "unban refused"
PPS0=$(counter "reason src_pps")
inA python3 "$PY" one vethA "$MAC" 10.78.0.1
wait_output $((J + 2)) counter judged
expect_eq "src_pps after the unban" "$(counter "reason src_pps")" $((PPS0 + 1))
expect_eq "banned after the unban" "$(counter "reason banned")" $((BAN0 + 1))

echo "4. a reload to rules the kernel cannot judge (a match rule): the workers limit"
cat >"$TMP/r.rules" <<EOF
drop proto tcp dport 1
limit packets 0.001 burst 2000 ban 600
sources 4096
EOF
ctl "$SOCK" reload | grep -q "^ok" || fail "reload refused"
PPS0=$(counter "reason src_pps")
KPPS0=$(counter "kernel_reason src_pps")
PASS0=$(counter "reason passed")
J=$(counter judged)
for _ in 1 2 3; do
	inA python3 "$PY" one vethA "$MAC" 10.79.0.9
done
wait_output $((J + 3)) counter judged
expect_eq "passed" "$(counter "reason passed")" $((PASS0 + 2))
expect_eq "src_pps" "$(counter "reason src_pps")" $((PPS0 + 1))
expect_eq "src_pps in the kernel" "$(counter "kernel_reason src_pps")" "$KPPS0"

stop_bg "$SPID"
wait_bg "$SPID"
expect_eq "scrub's exit status" "$WAIT_RC" 0
grep -q '"kernel":true' "$TMP/s.json" || fail "no kernel path in the summary"
no_leftovers
echo "PASS"
