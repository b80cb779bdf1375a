#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# scrub's kernel fast path (src/fwd/scrub_xdp.c, bpf/pktmap_scrub.bpf.c):
# the deny-list, the allow-list and the bans checked by pktmap's XDP
# program (xdp:IF@conf:prog=scrub) before it redirects to the socket.
#
#   netns sxA$$                         netns sxB$$
#   +--------------------+              +-------------------------------+
#   | scrub_xdp_frames.py|              | scrub_xdp_ctl                 |
#   |   send vethA ------+==== veth ====+-> xdp:vethB@conf:prog=scrub   |
#   |        vethC ------+== veth, 2 q =+-- vethD (errors)              |
#   +--------------------+              +-------------------------------+
#
# 1. list 1 and four bans (one expired): every frame of in.pcap from a
#    deny-listed or banned source (IPv4, IPv6, VLAN and QinQ tags, hosts
#    and prefixes) is dropped in XDP and counted for its rule, packets and
#    bytes exact; every other frame (allow-listed, expired ban, clean,
#    malformed from a listed source, ARP) reaches the socket byte for
#    byte, in order.
# 2. reload to list 2: the same frames judged by the new list, counts
#    exact; a list with a bad rule is refused and list 2 stays.
# 3. reloads under traffic: 1000 reloads of list 2 while 10.9.0.1 floods;
#    not one of its frames reaches the socket (a reload never fails
#    open), each is counted (or dropped by veth before XDP, counted there).
# 4. 1M deny prefixes load (the time is logged, not asserted) and drop.
# 5. unban lifts a ban and leaves the others; errors (another build's
#    scrub program among them): no scrub program, mixed programs on one
#    interface, a bad @conf:prog value.
# 6. the same verdicts: a `pktmap scrub` rules file through scrub's
#    engine alone (user space) and through the kernel path
#    (scrub_xdp_load_rules) then the engine on what reached the socket:
#    the same frames delivered, the same count for every rule (the
#    kernel's plus the engine's), and the kernel dropped some.
# Nothing is left on the links.
# Needs root; under CI=true it may not skip.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
: "${SCRUB_XDP_CTL:?SCRUB_XDP_CTL must name the scrub_xdp_ctl test tool}"
A=sxA$$
B=sxB$$
HERE=$(dirname "$0")
FRAMES=$HERE/scrub_xdp_frames.py
# shellcheck source=lib.sh
. "$HERE/lib.sh"

need_root
need_cmd python3
need_cmd ip

ns_pair "$A" "$B"
netns_veth "$A" vethC "$B" vethD 2
python3 "$FRAMES" "$TMP"

# The tool in B, its stdin on fd 3 and its stdout on fd 4: ask CMD sends
# a command, ANSWER is its line. Closing fd 3 ends it (EOF).
start_ctl() {
	mkfifo "$TMP/ctl.in" "$TMP/ctl.out"
	# (the FIFOs opened by the tool's shell, not this one: an open
	# waits for the other end)
	bg ip netns exec "$B" sh -c 'exec "$0" "$1" <"$2" >"$3"' \
		"$SCRUB_XDP_CTL" "$1" "$TMP/ctl.in" "$TMP/ctl.out"
	CTL_PID=$BG_PID
	exec 3>"$TMP/ctl.in" 4<"$TMP/ctl.out"
	read -r -t 60 ANSWER <&4 || fail "scrub_xdp_ctl did not start"
	expect_eq "scrub_xdp_ctl $1" "$ANSWER" ready
}
stop_ctl() {
	exec 3>&-
	wait_bg "$CTL_PID"
	expect_eq "scrub_xdp_ctl's exit status" "$WAIT_RC" 0
}
ask() {
	echo "$*" >&3
	read -r -t 120 ANSWER <&4 || fail "no answer to: $*"
	case $ANSWER in error*) fail "$*: $ANSWER" ;; esac
}
# send FILE: its frames out of vethA, one by one.
send() { inA python3 "$FRAMES" send vethA "$1"; }
# counts_minus BEFORE AFTER: the per-rule difference, as a counts line.
counts_minus() {
	python3 - "$1" "$2" <<'EOF'
import sys
def parse(l):
    return {int(r): (int(p), int(b)) for r, p, b in
            (w.split(':') for w in l.split()[1:])}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
d = {r: (p - a.get(r, (0, 0))[0], q - a.get(r, (0, 0))[1])
     for r, (p, q) in b.items()}
print('counts' + ''.join(' %d:%d:%d' % (r, p, q)
                         for r, (p, q) in sorted(d.items()) if p))
EOF
}
bans() {
	local w a s r
	while read -r w a s r; do
		ask "$w $a $s $r"
	done <"$TMP/bans"
}

echo "1. list 1 and bans: dropped in XDP, counted; the rest byte-exact"
start_ctl "xdp:vethB@conf:prog=scrub,rx-slots=4096"
ask load "$TMP/list1"
bans
ask counts 64
expect_eq "counts at start" "$ANSWER" counts
send "$TMP/in.pcap"
ask recv "$(cat "$TMP/npass1")" "$TMP/got1.pcap" 10000
expect_eq "frames through, list 1" "$ANSWER" "got $(cat "$TMP/npass1")"
ask recv 1 "$TMP/extra.pcap" 300
expect_eq "frames beyond" "$ANSWER" "got 0"
python3 "$FRAMES" same "$TMP/got1.pcap" "$TMP/pass1.pcap" ||
	fail "list 1: frames through differ"
ask counts 64
C1=$ANSWER
expect_eq "kernel counts, list 1" "$C1" "$(cat "$TMP/counts1")"

echo "2. reload: list 2 judges the same frames; a bad list is refused"
ask load "$TMP/list2"
printf 'deny 10.1.2.0/24 10\ndeny 10.9.0.0/16 4096\n' >"$TMP/bad"
echo "load $TMP/bad" >&3
read -r -t 60 ANSWER <&4 || fail "no answer to the bad list"
expect_eq "bad list" "$ANSWER" "error load: Invalid argument"
send "$TMP/in.pcap"
ask recv "$(cat "$TMP/npass2")" "$TMP/got2.pcap" 10000
expect_eq "frames through, list 2" "$ANSWER" "got $(cat "$TMP/npass2")"
python3 "$FRAMES" same "$TMP/got2.pcap" "$TMP/pass2.pcap" ||
	fail "list 2: frames through differ"
ask counts 64
C2=$ANSWER
expect_eq "kernel counts, list 2" "$(counts_minus "$C1" "$C2")" \
	"$(cat "$TMP/counts2")"

echo "3. 1000 reloads under a flood from a listed source: none gets through"
N=20000
drops0=$(inB cat /sys/class/net/vethB/statistics/rx_dropped)
inA "$PKTMAP" gen -i pkt:vethA -s 10.9.0.1 -n "$N" -R 100k -q &
GEN=$!
ask loop 1000 "$TMP/list2"
wait "$GEN" || fail "gen failed"
ask recv 1 "$TMP/leak.pcap" 500
expect_eq "flood frames through" "$ANSWER" "got 0"
ask counts 64
drops=$(( $(inB cat /sys/class/net/vethB/statistics/rx_dropped) - drops0 ))
got=$(counts_minus "$C2" "$ANSWER")
got=${got#counts 11:}
got=${got%%:*}
drops_ok "flood dropped by veth" "$drops" "$N"
expect_eq "flood counted for rule 11 (+ veth drops $drops)" \
	"$((got + drops))" "$N"

echo "4. 1M deny prefixes"
ask many 1000000 12
echo "   $ANSWER (wall and CPU ms; not asserted)"
ask counts 64
C4=$ANSWER
# 11.0.3.4 is in (index 772); 11.15.66.64 is index 1000000, out.
inA "$PKTMAP" gen -i pkt:vethA -s 11.0.3.4 -n 3 -q
inA "$PKTMAP" gen -i pkt:vethA -s 11.15.66.64 -n 2 -q
ask recv 2 "$TMP/m.pcap" 10000
expect_eq "1M: frames through" "$ANSWER" "got 2"
ask recv 1 "$TMP/m2.pcap" 300
expect_eq "1M: frames beyond" "$ANSWER" "got 0"
ask counts 64
expect_eq "1M: counted" "$(counts_minus "$C4" "$ANSWER")" "counts 12:3:180"

echo "5. unban, errors, leftovers"
ask load "$TMP/list2"
ask unban 10.1.0.7
inA "$PKTMAP" gen -i pkt:vethA -s 10.1.0.7 -n 2 -q
ask recv 2 "$TMP/u.pcap" 10000
expect_eq "unbanned: frames through" "$ANSWER" "got 2"
# The bans left still count (the program looks bans up while scrub_bans
# holds any: an unban that uncounted them all would leave 10.9.0.4 to
# the deny-list, rule 11).
ask counts 64
C5=$ANSWER
inA "$PKTMAP" gen -i pkt:vethA -s 10.9.0.4 -n 2 -q
ask recv 1 "$TMP/u2.pcap" 300
expect_eq "still banned: frames through" "$ANSWER" "got 0"
ask counts 64
expect_eq "still banned: counted for the ban" \
	"$(counts_minus "$C5" "$ANSWER")" "counts 7:2:120"
# Banned again under another rule: the ban is replaced, not refused.
ask ban 10.9.0.4 600 8
expect_eq "banned again" "$ANSWER" ok
ask counts 64
C5=$ANSWER
inA "$PKTMAP" gen -i pkt:vethA -s 10.9.0.4 -n 2 -q
ask recv 1 "$TMP/u3.pcap" 300
expect_eq "banned again: frames through" "$ANSWER" "got 0"
ask counts 64
expect_eq "banned again: counted for the new ban" \
	"$(counts_minus "$C5" "$ANSWER")" "counts 8:2:120"
# A port opened without the scrub program; a bad @conf:prog; a second
# port asking for the other program on the same interface.
expect_err "its XDP program is not scrub's" \
	ip netns exec "$B" "$SCRUB_XDP_CTL" xdp:vethD-0
expect_err "@conf:prog=" \
	ip netns exec "$B" "$PKTMAP" recv -i "xdp:vethD@conf:prog=fast" -n 1
bg ip netns exec "$B" "$PKTMAP" recv -i "xdp:vethD-0@conf:prog=scrub" -q -T 0
R0=$BG_PID
for _ in $(seq 200); do
	inB ip link show dev vethD | grep -q "name pktmap_scrub" && break
	sleep 0.05
done
expect_err "runs pktmap's XDP program 'pktmap_scrub' for another port" \
	ip netns exec "$B" timeout 20 "$PKTMAP" recv -i xdp:vethD-1 -n 1
stop_bg "$R0"
wait_bg "$R0"
expect_eq "recv's exit status" "$WAIT_RC" 0
# scrub's program from another build (its scrub_conf of another size),
# attached by a link as pktmap does: the port joins it, the attach
# refuses it
expect_err "is another pktmap's (scrub_conf of" \
	ip netns exec "$B" "$SCRUB_XDP_CTL" --obj "$SCRUB_OTHER_OBJ" vethD \
	"xdp:vethD-0@conf:prog=scrub"

echo "6. the same verdicts: scrub's engine alone, and the kernel then the engine"
ask unban 2001:db8::7
ask unban 10.9.0.4
ask unban 10.1.0.8
cat >"$TMP/scrub.rules" <<EOF
allow 10.9.1.0/24
deny 10.9.0.0/16 2001:db8:bad::/48
deny 10.1.0.9 2001:db8::99
deny 10.1.0.0/16
allow 10.1.0.8
deny ::/0
drop proto udp dport 4321 src 10.1.2.0/24
limit packets 2
EOF
ask rules "$TMP/scrub.rules"
ask judge "$TMP/in.pcap" "$TMP/user.pcap"
USER=$ANSWER
ask counts 4097
K0=$ANSWER
send "$TMP/in.pcap"
send "$TMP/marker.pcap"
ask recvm "$TMP/kgot.pcap" 10000
ask counts 4097
KERNEL=$(counts_minus "$K0" "$ANSWER")
[ "$KERNEL" != counts ] || fail "the kernel dropped nothing"
ask judge "$TMP/kgot.pcap" "$TMP/kuser.pcap"
echo "   alone: $USER; kernel: $KERNEL; then: $ANSWER"
python3 "$FRAMES" verdicts "$USER" "$KERNEL" "$ANSWER"
python3 "$FRAMES" same "$TMP/kuser.pcap" "$TMP/user.pcap" ||
	fail "the frames delivered differ"
stop_ctl
no_leftovers
echo "PASS"
