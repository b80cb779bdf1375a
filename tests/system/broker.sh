#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# pktmap broker (docs/broker.md): root runs the broker in namespace B,
# nobody (setpriv, no capability) opens xdp: and pkt: of vethB through it.
#
#   netns pmbA$$                      netns pmbB$$ (broker, nobody)
#   vethA ============ veth ========= vethB  (policy: xdp queue 0, pkt)
#   vethC ======== veth, 2 queues === vethD  (policy: xdp queue 0, 1 MiB)
#                                     vethE (no rule)
#   pmx$$ ======== veth, made later === pmw$$  (policy: xdp:pmw*)
#
# 0. once the broker listens, before any client, pktmap's XDP program is
#    attached to vethB and vethD (the policy names them for xdp:) and to
#    nothing else;
# 1. nobody's recv on xdp:vethB-0 gets all N frames root sends, and holds
#    no capability (CapEff, CapPrm of /proc/PID/status) meanwhile, and
#    root's `pktmap ports` lists its port among the ports from the broker;
# 2. nobody's gen on xdp:vethB-0: root's recv on vethA gets all N;
# 3. nobody's recv on pkt:vethB gets all N, without a capability;
# 4. refused, one line naming the rule: another interface, a queue, a
#    mode, a UMEM above the rule's, a direction; @conf:broker=no never
#    asks; every refusal is one line of the broker's log;
# 5. a client killed (SIGKILL) frees its queue: the next one gets it; the
#    XDP program stays, the same one, when the last client goes;
# 6. a pkt: socket bound to every interface by a lying client receives
#    only the granted interface's frames, and its filter cannot be taken
#    off;
# 7. nobody's recv on tap:pmbtN (made by the broker) gets all N frames;
# 8. nobody's tcpdump (pcap-run) on xdp:vethB-0 writes all N frames;
# 9. nobody's netmap program (nmt, raw ABI, under netmap-run, the broker
#    named by PKTMAP_BROKER) receives all N in order, intact;
# 10. in a user namespace of its own (unshare -U -r, the host's network
#    namespace), nobody's recv on xdp: and pkt: gets every frame;
# 11. a container: nobody's recv in user and network namespaces of its
#    own (unshare -U -r -n) on xdp:vethM-0, a veth end root moved in:
#    it binds the socket itself, the broker attaches the program there
#    (policy netns=own), every frame arrives;
# 12. a veth made after the broker started, named by a prefix rule: not
#    attached until its first grant, which attaches the program; nobody's
#    recv gets every frame, and the program stays when it goes; the veth
#    removed and made again: its next first grant attaches the program
#    again (the hold of the old one let go), and it stays;
# 13. the broker stops: nothing is left attached.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
need_cmd /usr/bin/python3
need_cmd tcpdump
need_cmd unshare
need_cmd nsenter
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
stage_for_others

N=${N:-20000}
RATE=${RATE:-100000}
A=pmbA$$
B=pmbB$$
ns_pair "$A" "$B"
netns_veth "$A" vethC "$B" vethD 2
ip -n "$B" link add vethE type veth peer name vethF
ip -n "$B" link set dev vethE up
# The socket and the policy where nobody can reach the socket.
SD=$(mktemp -d /tmp/pktmap-broker.XXXXXX)
chmod 755 "$SD"
at_exit rm -rf "$SD"
# Steps 10 and 11 run clients as root of a user namespace mapped to
# nobody: they publish their counters in /dev/shm/pktmap-stats.0 (uid 0
# is theirs in there), a directory of nobody's that root's next port moves
# aside (src/userdir.c). Nobody's, so ours to remove, as nobody.
at_exit setpriv --reuid=nobody --regid=nogroup --clear-groups find /dev/shm -maxdepth 1 -user nobody \( -name pktmap-stats.0 -o -name "pktmap-stats.0.squatted.*" \) -exec rm -rf {} +
SOCK=$SD/broker.sock
POL=$SD/broker.conf
cat >"$POL" <<EOT
# broker.sh's policy
allow user:nobody xdp:vethB queues=0 modes=copy umem=64M
allow user:nobody pkt:vethB dir=rx,tx
allow user:nobody xdp:vethD queues=0 umem=1M
allow user:nobody pkt:vethD dir=rx
allow user:nobody tap:pmbt*
allow user:nobody xdp:vethM queues=0 netns=own
allow user:nobody xdp:pmw* queues=0 modes=copy
EOT
LOG=$TMP/broker.log
BG_TIMEOUT=600 bg ip netns exec "$B" "$PKTMAP" broker --socket "$SOCK" \
	--policy "$POL" 2>"$LOG"
wait_for "$LOG" "listening on $SOCK"
BPID=$(sed -nE 's/.*listening on .* pid ([0-9]+)$/\1/p' "$LOG")
BROKER=$BG_PID
BK="@conf:broker=$SOCK"

# pktmap as nobody in B (bg takes it as a command line).
AS_NOBODY=(ip netns exec "$B" setpriv --reuid=nobody --regid=nogroup --clear-groups
	"${OTHER_ENV[@]}")
NOBODY=("${AS_NOBODY[@]}" "$OTHER_PKTMAP")
nobody() { "${NOBODY[@]}" "$@"; }
# The pid of the client granted WHAT (a pattern of the broker's log).
client_pid() {
	grep -E "$1" "$LOG" | tail -n 1 | sed -E 's/.* pid ([0-9]+) .*/\1/'
}
# no_caps PID: the process holds no capability.
no_caps() {
	local eff prm
	eff=$(awk '/^CapEff:/ {print $2}' "/proc/$1/status")
	prm=$(awk '/^CapPrm:/ {print $2}' "/proc/$1/status")
	expect_eq "CapEff, CapPrm of the client" "$eff $prm" \
		"0000000000000000 0000000000000000"
}
# counted FILE: N frames, less the ones the kernel counted as dropped at
# a starved socket (drop_backend), intact and in order.
counted() {
	local got drops
	got=$(json "$1" packets)
	drops=$(json "$1" drop_backend)
	echo "   received $got, gaps $(json "$1" gaps), bad $(json "$1" bad), kernel drops $drops"
	[ $((got + drops)) = "$N" ] || fail "received $got + $drops counted drops of $N"
	drops_ok "$1" "$drops" "$N"
	[ "$(json "$1" gaps)" -le "$drops" ] || fail "gaps beyond the counted drops"
	[ "$(json "$1" bad)" = 0 ] || fail "bad frames"
}
# pkt_bound IF NS: wait until a packet socket is bound to IF in NS.
pkt_bound() {
	local idx _
	idx=$(ip netns exec "$2" cat "/sys/class/net/$1/ifindex")
	for _ in $(seq 300); do
		ip netns exec "$2" awk -v i="$idx" 'NR > 1 && $5 == i {f = 1} END {exit !f}' \
			/proc/net/packet && return 0
		sleep 0.1
	done
	fail "no packet socket on $1"
}
steered() { grep -cE "steer uid 65534 .* xdp:$1 " "$LOG" || true; }

echo "== 0. the XDP program is attached before any client"
PROG_B=$(xdp_prog "$B" vethB)
PROG_D=$(xdp_prog "$B" vethD)
echo "   vethB: $PROG_B, vethD: $PROG_D"
[[ "$PROG_B" == "pktmap_xdp "* ]] || fail "vethB: no pktmap XDP program: '$PROG_B'"
[[ "$PROG_D" == "pktmap_xdp "* ]] || fail "vethD: no pktmap XDP program: '$PROG_D'"
expect_eq "XDP program on vethE (no rule)" "$(xdp_prog "$B" vethE)" ""

echo "== 1. nobody receives on xdp:vethB-0"
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK@conf:rx-slots=4096" -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r1.json"
R=$BG_PID
wait_for "$LOG" "steer uid 65534 .* xdp:vethB-0 "
cp=$(client_pid "steer uid 65534 .* xdp:vethB-0 ")
no_caps "$cp"
# root's `pktmap ports` lists it among the ports from the broker (once
# its open is done and its counters published)
for _ in $(seq 300); do
	"$PKTMAP" ports | sed -n '/^PORTS FROM THE BROKER/,/^$/p' >"$TMP/ports"
	grep -qE "^$cp +pktmap recv +uid 65534 +xdp:vethB-0" "$TMP/ports" && break
	sleep 0.1
done
grep -qE "^$cp +pktmap recv +uid 65534 +xdp:vethB-0" "$TMP/ports" ||
	fail "pktmap ports does not list $cp's port: $(cat "$TMP/ports")"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r1.json"

echo "== 2. nobody sends on xdp:vethB-0"
bg ip netns exec "$A" "$PKTMAP" recv -i pkt:vethA -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r2.json"
R=$BG_PID
pkt_bound vethA "$A"
nobody gen -i "xdp:vethB-0$BK" -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r2.json"

echo "== 3. nobody receives on pkt:vethB"
bg "${NOBODY[@]}" recv -i "pkt:vethB$BK" -n "$N" --idle 5 -T 0 -q --json >"$TMP/r3.json"
R=$BG_PID
pkt_bound vethB "$B"
no_caps "$(client_pid "grant uid 65534 .* pkt:vethB ")"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r3.json"

echo "== 4. refusals name the rule"
before=$(grep -c "refuse" "$LOG" || true)
expect_err "refused by the broker: $POL: no rule allows uid 65534 xdp:vethE" \
	nobody recv -i "xdp:vethE$BK" -n 1 -T 0
expect_err "refused by the broker: $POL:4: queue 1 is not in 0-0" \
	nobody recv -i "xdp:vethD-1$BK" -n 1 -T 0
expect_err "refused by the broker: $POL:2: mode zero-copy is not allowed" \
	nobody recv -i "xdp:vethB-0/Z$BK" -n 1 -T 0
expect_err "kB is more than umem=1024 kB" \
	nobody recv -i "xdp:vethD-0$BK" -n 1 -T 0
expect_err "refused by the broker: $POL:5: direction tx is not allowed" \
	nobody gen -i "pkt:vethD$BK" -n 1 -T 0
expect_eq "refusals logged" "$(($(grep -c "refuse" "$LOG") - before))" 5
grep "refuse" "$LOG" | tail -n 5 | sed 's/^/   log: /'
expect_err "needs CAP_NET_RAW" nobody recv -i "xdp:vethB-0@conf:broker=no" -n 1 -T 0
expect_eq "refusals logged" "$(($(grep -c "refuse" "$LOG") - before))" 5

echo "== 5. a killed client frees its queue"
s0=$(steered vethB-0)
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK" -T 0 -q
R=$BG_PID
until [ "$(steered vethB-0)" -gt "$s0" ]; do sleep 0.1; done
victim=$(client_pid "steer uid 65534 .* xdp:vethB-0 ")
kill -KILL "$victim"
wait_bg "$R"
wait_for "$LOG" "free uid 65534 \(nobody\) pid $victim xdp:vethB-0"
expect_eq "XDP program on vethB after its last client" "$(xdp_prog "$B" vethB)" "$PROG_B"
bg "${NOBODY[@]}" recv -i "xdp:vethB-0$BK@conf:rx-slots=4096" -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r5.json"
R=$BG_PID
until [ "$(steered vethB-0)" -gt "$((s0 + 1))" ]; do sleep 0.1; done
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r5.json"
expect_eq "XDP program on vethB after two clients" "$(xdp_prog "$B" vethB)" "$PROG_B"

echo "== 6. a pkt: socket stays on its interface"
ip netns exec "$B" setpriv --reuid=nobody --regid=nogroup --clear-groups \
	/usr/bin/python3 "$(dirname "$0")/broker_pkt_lock.py" "$SOCK" vethB vethD \
	>"$TMP/lock.out" 2>&1 &
L=$!
BG_PIDS+=("$L")
wait_for "$TMP/lock.out" "^(ready|no socket|bind|the broker)"
grep -q "^ready" "$TMP/lock.out" || fail "lying client: $(cat "$TMP/lock.out")"
inA taskset -c 0 "$PKTMAP" gen -i pkt:vethC -n 1000 -T 0 -q
inA taskset -c 0 "$PKTMAP" gen -i pkt:vethA -n 1 -T 0 -q
wait_bg "$L"
cat "$TMP/lock.out" | sed 's/^/   /'
expect_eq "lying client" "$WAIT_RC" 0

echo "== 7. nobody receives on tap: (the broker makes the device)"
T=pmbt$$
bg "${NOBODY[@]}" recv -i "tap:$T$BK" -n "$N" --idle 5 -T 0 -q --json >"$TMP/r7.json"
R=$BG_PID
wait_for "$LOG" "grant uid 65534 .* tap:$T "
until ip -n "$B" link show dev "$T" 2>/dev/null | grep -q "state UP\|,UP"; do sleep 0.1; done
inB "$PKTMAP" gen -i "pkt:$T" -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
# (drop_backend of a tap: counts what the host sent on the device before
# recv read it, IPv6 solicitations: not our frames)
expect_eq "tap: received, gaps, bad" "$(json "$TMP/r7.json" packets) \
$(json "$TMP/r7.json" gaps) $(json "$TMP/r7.json" bad)" "$N 0 0"
ip -n "$B" link show dev "$T" >/dev/null 2>&1 && fail "$T outlived its only user"

echo "== 8. tcpdump through pcap-run, as nobody, on xdp:vethB-0"
OUT=$SD/out
mkdir "$OUT"
chown nobody "$OUT"
s=$(steered vethB-0)
bg "${NOBODY[@]}" pcap-run tcpdump -i "xdp:vethB-0$BK" -c "$N" -w "$OUT/t.pcap"
R=$BG_PID
until [ "$(steered vethB-0)" -gt "$s" ]; do sleep 0.1; done
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$((RATE / 2))" -T 0 -q
wait_bg "$R"
expect_eq "tcpdump status" "$WAIT_RC" 0
expect_eq "frames in tcpdump's file" "$(tcpdump -nr "$OUT/t.pcap" 2>/dev/null | wc -l)" "$N"

echo "== 9. a netmap program under netmap-run, as nobody, on netmap:vethB (xdp:)"
NMT=$STAGE/nmt_raw
cp "$PKTMAP_BUILD_ROOT/tests/nmt_raw" "$NMT"
mkdir -p "$STAGE/compat/netmap"
cp -L "$PKTMAP_BUILD_ROOT"/compat/netmap/libpktmap-netmap*.so* "$STAGE/compat/netmap/" 2>/dev/null || true
chmod -R a+rX "$STAGE"
# (a veth drops what a starved receiver cannot take; nmt counts those as
# missing, netmap_veth.sh's way)
bg "${AS_NOBODY[@]}" PKTMAP_BROKER="$SOCK" NMT_GAPS=1 "$OTHER_PKTMAP" netmap-run \
	"$NMT" recv netmap:vethB "$N" 100 poll >"$TMP/nmt.rx" 2>&1
R=$BG_PID
wait_for "$TMP/nmt.rx" "^ready"
inA env NMT_RATE=50000 "$PKTMAP" netmap-run "$PKTMAP_BUILD_ROOT/tests/nmt_raw" gen netmap:vethA "$N" 100 poll \
	>"$TMP/nmt.tx" 2>&1 || fail "nmt gen: $(cat "$TMP/nmt.tx")"
wait_bg "$R"
[ "$WAIT_RC" = 0 ] || fail "nmt recv ($WAIT_RC): $(cat "$TMP/nmt.rx")"
last=$(tail -n 1 "$TMP/nmt.rx")
echo "   $last"
case "$last" in
"received "*" in order, bytes ok, "*" missing") ;;
*) fail "nmt recv: $last" ;;
esac
got=$(echo "$last" | cut -d' ' -f2)
miss=$(echo "$last" | cut -d' ' -f7)
expect_eq "nmt: received + missing" $((got + miss)) "$N"
drops_ok "nmt: missing" "$miss" "$N"

echo "== 10. in a user namespace (unshare -U -r, the host's network)"
USERNS=("${AS_NOBODY[@]}" unshare -U -r "$OTHER_PKTMAP")
s=$(steered vethB-0)
bg "${USERNS[@]}" recv -i "xdp:vethB-0$BK@conf:rx-slots=4096" -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r10.json"
R=$BG_PID
until [ "$(steered vethB-0)" -gt "$s" ]; do sleep 0.1; done
cp=$(client_pid "steer uid 65534 .* xdp:vethB-0 ")
[ "$(readlink "/proc/$cp/ns/user")" != "$(readlink /proc/self/ns/user)" ] ||
	fail "the client is not in a user namespace of its own"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r10.json"
bg "${USERNS[@]}" recv -i "pkt:vethB$BK" -n "$N" --idle 5 -T 0 -q --json >"$TMP/r11.json"
R=$BG_PID
pkt_bound vethB "$B"
inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r11.json"

echo "== 11. a container: nobody's own user and network namespaces, a veth end in them"
mkfifo "$OUT/go"
chown nobody "$OUT/go"
cat >"$OUT/c.sh" <<'EOT'
# run in the container: say our pid, wait for the veth end, receive
echo $$ >"$1/pid"
read -r _ <"$1/go"
exec "$2" recv -i "xdp:vethM-0@conf:broker=$3" -n "$4" --idle 5 -T 0 -q --json
EOT
chmod 644 "$OUT/c.sh"
bg "${AS_NOBODY[@]}" unshare -U -r -n sh "$OUT/c.sh" "$OUT" "$OTHER_PKTMAP" "$SOCK" "$N" \
	>"$TMP/r12.json"
R=$BG_PID
for _ in $(seq 300); do [ -s "$OUT/pid" ] && break; sleep 0.1; done
CPID=$(cat "$OUT/pid")
ip -n "$A" link add vethN type veth peer name vethM netns "$CPID"
ip -n "$A" link set dev vethN up
nsenter -t "$CPID" -n ip link set dev vethM up
echo go >"$OUT/go"
wait_for "$LOG" "steer uid 65534 .* xdp:vethM-0 \(netns"
inA "$PKTMAP" gen -i pkt:vethN -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r12.json"

echo "== 12. a veth made later, a prefix rule: attached at its first grant, kept"
W=pmw$$
ip -n "$B" link add "$W" type veth peer name "pmx$$" netns "$A"
ip -n "$B" link set dev "$W" up
ip -n "$A" link set dev "pmx$$" up
expect_eq "XDP program on $W before its first grant" "$(xdp_prog "$B" "$W")" ""
bg "${NOBODY[@]}" recv -i "xdp:$W-0$BK@conf:rx-slots=4096" -n "$N" --idle 5 -T 0 -q \
	--json >"$TMP/r13.json"
R=$BG_PID
wait_for "$LOG" "steer uid 65534 .* xdp:$W-0 "
PROG_W=$(xdp_prog "$B" "$W")
[[ "$PROG_W" == "pktmap_xdp "* ]] || fail "$W: no pktmap XDP program: '$PROG_W'"
grep -q "hold pktmap's XDP program on $W at its first grant" "$LOG" ||
	fail "no hold at the first grant: $(grep "$W" "$LOG")"
inA "$PKTMAP" gen -i "pkt:pmx$$" -n "$N" -R "$RATE" -T 0 -q
wait_bg "$R"
expect_eq "recv status" "$WAIT_RC" 0
counted "$TMP/r13.json"
wait_for "$LOG" "free uid 65534 .* xdp:$W-0"
expect_eq "XDP program on $W after its client" "$(xdp_prog "$B" "$W")" "$PROG_W"
ip -n "$B" link del dev "$W"
ip -n "$B" link add "$W" type veth peer name "pmx$$" netns "$A"
ip -n "$B" link set dev "$W" up
ip -n "$A" link set dev "pmx$$" up
expect_eq "XDP program on the new $W" "$(xdp_prog "$B" "$W")" ""
s=$(steered "$W-0")
f=$(grep -c "free uid 65534 .* xdp:$W-0" "$LOG")
bg "${NOBODY[@]}" recv -i "xdp:$W-0$BK" -T 0 -q
R=$BG_PID
until [ "$(steered "$W-0")" -gt "$s" ]; do sleep 0.1; done
stop_bg "$R"
wait_bg "$R"
until [ "$(grep -c "free uid 65534 .* xdp:$W-0" "$LOG")" -gt "$f" ]; do sleep 0.1; done
grep -q "let go of the XDP program on $W: the interface or its program changed" "$LOG" ||
	fail "the old $W's hold was kept: $(grep "$W" "$LOG")"
PROG_W=$(xdp_prog "$B" "$W")
[[ "$PROG_W" == "pktmap_xdp "* ]] || fail "the new $W: no pktmap XDP program after its client: '$PROG_W'"

echo "== 13. the broker stops: nothing left attached"
kill -TERM "$BPID"
wait_bg "$BROKER"
expect_eq "broker status" "$WAIT_RC" 0
l=$(netns_xdp_gone "$A" "$B") || fail "XDP program left behind: $l"
echo "PASS"
