#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Unmodified libpcap tools on pktmap's library (pktmap pcap-run -m KIND:
# the plain interface name vb becomes KIND:vb), each given the same
# frames at a rate stock libpcap loses nothing at, counts exact against
# what was sent. Several of them wait in select()/poll() on the library's
# descriptor rather than in pcap_loop(): argus, p0f, darkstat, softflowd,
# nmap, arping, dumpcap.
#
#   netns peA$$                           netns peB$$
#   +------------------------+            +------------------------------+
#   | tcpreplay (500 SYNs)   |            | the tool on KIND:vb through  |
#   | pktmap gen (1000 UDP)  |            | the library                  |
#   |   va 10.1.0.2 ---------+=== veth ===+-- vb 10.1.0.1                |
#   +------------------------+            +------------------------------+
#
# KIND is xdp, then pkt (PKTMAP_TOOLS_KINDS). vb has no address while
# the capture tools run, so its host stack answers nothing and every count
# is exactly what was sent (arping and nmap get it back for their turn):
#
#  tcpdump -c, dumpcap -c, tshark -c: 1500 in the file; ngrep -n: 1000
#  payload matches; p0f: 500 SYNs fingerprinted, "Processed 500 packets";
#  darkstat: its page says 1500 captured, 0 dropped; argus: flow records
#  sum to 1500 packets (ra); softflowd: "Packets processed: 1500"
#  (softflowctl); fprobe: NetFlow records add up to 1500 packets;
#  arping -c 5: 5 answers; nmap --send-eth -sS: ports 80
#  and 81 closed (the RSTs came back through the library); hping3 -S -c 5:
#  5 answers. pcap_inject/pcap_sendpacket (a small libpcap program) of
#  the 500 SYNs out of KIND:vb: the stock tcpdump on va sees 500. While the
#  long-running ones capture, vb carries pktmap's XDP program (xdp: the
#  library is the one in use); afterwards none is left. dumpcap and
#  tshark drop CAP_BPF before opening: on xdp:vb one line says so, and
#  with the plain name vb mapped to xdp they capture on pkt:vb instead,
#  with a one-line notice, all 1500. Under an 8 MiB
#  locked-memory limit without CAP_IPC_LOCK, tcpdump on xdp: still gets
#  all 1500; under 64 KiB one line names the limit. tcpdump exiting as
#  user tcpdump, and p0f killed with SIGKILL, leave no XDP program and no
#  file behind. Bad input (no such port, no permission as nobody, a
#  filter that does not compile) is one line each. Needs root.
set -euo pipefail

PKTMAP=${PKTMAP:-pktmap}
A=peA$$
B=peB$$
KINDS=${PKTMAP_TOOLS_KINDS:-xdp pkt}

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root
for t in ip tcpdump dumpcap tshark tcpreplay ngrep p0f darkstat argus ra \
	softflowd softflowctl fprobe arping nmap hping3 curl python3; do
	need_cmd "$t"
done

: "${PCAP_COMPAT_PROG:?PCAP_COMPAT_PROG must name tests/pcap_compat_prog}"
ns_pair "$A" "$B" va vb
ip -n "$A" link set lo up
ip -n "$B" link set lo up
ip -n "$A" addr add 10.1.0.2/24 dev va
IB=(ip netns exec "$B")
MAC_A=$(inA cat /sys/class/net/va/address)
MAC_B=$(inB cat /sys/class/net/vb/address)
# What was sent, and only that (pkt: also sees what vb itself sends, and
# va may still resolve vb after arping and nmap).
F="ether dst $MAC_B and ip"
python3 "$(dirname "$0")/mk_syn_pcap.py" "$TMP/syn.pcap" 500 "$MAC_B" "$MAC_A"

send_syn() { inA timeout 60 tcpreplay -q -i va -p 2000 "$TMP/syn.pcap" >/dev/null 2>&1; }
send_udp() { inA timeout 60 "$PKTMAP" gen -i pkt:va -n 1000 -R 10k -T 0 -q -D "$MAC_B"; }
send_all() { send_syn; send_udp; }

count_file() { tcpdump -r "$1" 2>/dev/null | wc -l; }

# The library attaches its XDP program to vb once the tool's sockets are
# bound: wait for it (this also says the tool is the library's).
# On pkt: the tool's packet socket bound to vb (rings are set up before
# the bind).
prog_on() {
	if [ "$1" = xdp ]; then
		wait_cmd "prog/xdp" inB ip link show vb
	else
		wait_cmd "p_raw .*:vb " inB ss -0 -a
	fi
}
# "all" once the ports of program $1 have received $2 frames (pktmap top).
rx_at_least() {
	"$PKTMAP" top --once -d 0 --json --filter "$1" | python3 -c '
import json, sys
P = json.load(sys.stdin)["ports"]
print("all" if sum(p["rx"]["packets"] for p in P) >= int(sys.argv[1]) else "not yet")' "$2"
}
no_prog() {
	refute "$1: XDP program left on vb" prog/xdp inB ip link show vb
}

# Wait for a command's output to match (a tool's own status), 30 s.
wait_cmd() {
	local re=$1 t=300
	shift
	until "$@" 2>/dev/null | grep -Eq "$re"; do
		[ "$t" -gt 0 ] || fail "no '$re' from $*: $("$@" 2>&1 | tail -n 3)"
		sleep 0.1
		t=$((t - 1))
	done
}

for K in $KINDS; do
	RUN=("$PKTMAP" pcap-run -m "$K")
	echo "== $K:vb"

	tools=(tcpdump dumpcap tshark)
	if [ "$K" = xdp ]; then
		# dumpcap keeps only CAP_NET_RAW and CAP_NET_ADMIN before it
		# opens the device: one line says why xdp: cannot be attached.
		inB timeout 30 "$PKTMAP" pcap-run dumpcap -i xdp:vb -c 1 \
			-w "$TMP/x.pcapng" >"$TMP/dc.err" 2>&1 && fail "dumpcap on xdp:vb"
		grep -q "^(xdp:vb: attaching the XDP program needs CAP_BPF" \
			"$TMP/dc.err" || fail "dumpcap xdp: $(cat "$TMP/dc.err")"
		no_prog dumpcap
		echo "   dumpcap on xdp:vb: one line: $(grep CAP_BPF "$TMP/dc.err")"
	fi
	for tool in "${tools[@]}"; do
		z=()
		[ "$tool" != tcpdump ] || z=(-Z root) # writes into $TMP
		f=("$F")
		[ "$tool" = tcpdump ] || f=(-f "$F")
		bg "${IB[@]}" "${RUN[@]}" "$tool" "${z[@]}" -i vb -c 1500 \
			-w "$TMP/$K.$tool.pcap" "${f[@]}" 2>"$TMP/$K.$tool.err"
		pid=$BG_PID
		wait_for "$TMP/$K.$tool.err" "(listening on|Capturing on)"
		# dumpcap says "Capturing on" before it opens: wait for it; on
		# xdp it falls back to pkt: (see above).
		kind=$K
		[ "$tool" = tcpdump ] || kind=pkt
		prog_on "$kind" "$tool"
		send_all
		wait_bg "$pid"
		expect_eq "$K $tool exit ($(tr '\n' ';' <"$TMP/$K.$tool.err"))" "$WAIT_RC" 0
		expect_eq "$K $tool packets" "$(count_file "$TMP/$K.$tool.pcap")" 1500
		if [ "$kind" != "$K" ]; then
			grep -q "capturing on pkt:vb instead" "$TMP/$K.$tool.err" ||
				fail "$tool: no notice: $(cat "$TMP/$K.$tool.err")"
			echo "   $tool: 1500 (on pkt:vb: $(grep -o 'needs CAP_BPF[^,]*' "$TMP/$K.$tool.err" | head -n 1))"
		else
			echo "   $tool: 1500"
		fi
	done

	# ngrep counts payload matches: gen's frames carry "PKTM".
	bg "${IB[@]}" "${RUN[@]}" ngrep -q -d vb -n 1000 -O "$TMP/$K.ngrep.pcap" \
		PKTM udp >"$TMP/$K.ngrep.out" 2>&1
	pid=$BG_PID
	prog_on "$K" ngrep # (its "interface:" line is block-buffered)
	send_all
	wait_bg "$pid"
	expect_eq "$K ngrep exit" "$WAIT_RC" 0
	expect_eq "$K ngrep matches" "$(count_file "$TMP/$K.ngrep.pcap")" 1000
	echo "   ngrep: 1000"

	bg "${IB[@]}" "${RUN[@]}" p0f -i vb -o "$TMP/$K.p0f.log" >"$TMP/$K.p0f.out" 2>&1
	pid=$BG_PID
	wait_for "$TMP/$K.p0f.out" "Entered main event loop"
	prog_on "$K" p0f
	send_syn
	wait_for "$TMP/$K.p0f.log" "cli=10.1.0.2/20499" # the last SYN
	kill -INT "$pid"
	wait_bg "$pid"
	expect_eq "$K p0f SYNs" "$(grep -c 'mod=syn|' "$TMP/$K.p0f.log")" 500
	grep -q "Processed 500 packets" "$TMP/$K.p0f.out" ||
		fail "$K p0f: $(tail -n 2 "$TMP/$K.p0f.out")"
	echo "   p0f: 500"

	bg "${IB[@]}" "${RUN[@]}" darkstat -i vb -f "$F" --no-daemon --no-dns \
		-b 127.0.0.1 -p 8099 >"$TMP/$K.darkstat.out" 2>&1
	pid=$BG_PID
	wait_cmd "darkstat" inB curl -s http://127.0.0.1:8099/
	prog_on "$K" darkstat
	send_all
	ds_count() {
		inB curl -s http://127.0.0.1:8099/ | grep -o 'id="p[cd]">[^<]*' |
			sed 's/.*>//; s/,//g' | tr '\n' ' '
	}
	for _ in $(seq 300); do
		[ "$(ds_count)" != "1500 0 " ] || break
		sleep 0.1
	done
	expect_eq "$K darkstat captured, dropped" "$(ds_count)" "1500 0 "
	kill -INT "$pid"
	wait_bg "$pid"
	echo "   darkstat: 1500 captured, 0 dropped"

	bg "${IB[@]}" "${RUN[@]}" argus -i vb -w "$TMP/$K.argus" - "$F" >"$TMP/$K.argus.out" 2>&1
	pid=$BG_PID
	wait_for "$TMP/$K.argus.out" "started"
	prog_on "$K" argus
	send_all
	# argus writes flow records when they go idle or it stops: stop it
	# once its port has handed it every frame (on pkt:, TPACKET_V3
	# blocks come when full or after argus's read timeout, as in libpcap).
	wait_cmd "^all$" rx_at_least argus 1500
	kill -INT "$pid"
	wait_bg "$pid"
	# (flow records only: argus's own "man" records count what it saw)
	got=$(ra -r "$TMP/$K.argus" -n -s proto pkts -L -1 2>/dev/null |
		awk '$1 != "man" {s += $2} END {print s + 0}')
	expect_eq "$K argus packets" "$got" 1500
	echo "   argus: 1500"

	bg "${IB[@]}" "${RUN[@]}" softflowd -i vb -d -c "$TMP/$K.sf.ctl" \
		-n 127.0.0.1:9995 "$F" >"$TMP/$K.sf.out" 2>&1
	pid=$BG_PID
	wait_for "$TMP/$K.sf.out" "starting data collection"
	wait_cmd "Packets processed" inB softflowctl -c "$TMP/$K.sf.ctl" statistics
	prog_on "$K" softflowd
	send_all
	wait_cmd "Packets processed: 1500$" inB softflowctl -c "$TMP/$K.sf.ctl" statistics
	inB softflowctl -c "$TMP/$K.sf.ctl" statistics | grep -q "dropped by libpcap: 0" ||
		fail "$K softflowd: drops"
	inB softflowctl -c "$TMP/$K.sf.ctl" shutdown >/dev/null
	wait_bg "$pid"
	echo "   softflowd: 1500"

	# Injection through the library: pcap_inject/pcap_sendpacket of the
	# 500 SYNs out of KIND:vb, as the stock tcpdump on va sees them.
	bg ip netns exec "$A" tcpdump -Z root -nn -i va -c 500 \
		-w "$TMP/$K.inj.pcap" "tcp and src host 10.1.0.2" 2>"$TMP/$K.inj.err"
	pid=$BG_PID
	wait_for "$TMP/$K.inj.err" "listening on"
	inB timeout 60 "$PCAP_COMPAT_PROG" inject "$K:vb" "$TMP/syn.pcap" \
		>"$TMP/$K.inj.out" 2>&1 || fail "$K inject: $(cat "$TMP/$K.inj.out")"
	wait_bg "$pid"
	expect_eq "$K inject: seen on va" "$(count_file "$TMP/$K.inj.pcap")" 500
	echo "   pcap_inject/pcap_sendpacket on $K:vb: 500 seen on va"

	# fprobe exports NetFlow v5 to a collector here that adds up dPkts.
	bg "${IB[@]}" python3 -u -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 9993))
print("ready")
pk = fl = 0
while True:
    d = s.recv(65535)
    if struct.unpack("!H", d[:2])[0] != 5:
        continue
    for i in range(struct.unpack("!H", d[2:4])[0]):
        pk += struct.unpack("!I", d[24 + 48 * i + 16:24 + 48 * i + 20])[0]
        fl += 1
    print("flows", fl, "packets", pk)
' >"$TMP/$K.nf"
	cpid=$BG_PID
	wait_for "$TMP/$K.nf" "^ready"
	# -q: on pkt: (TPACKET_V3 blocks, handed over when full or after
	# fprobe's 1 s read timeout, as in libpcap) all 1500 frames come in
	# one burst, more new flows than fprobe's default pending queue of
	# 100 takes (stock libpcap gives it the same burst).
	bg "${IB[@]}" "${RUN[@]}" fprobe -l 2 -q 10000 -i vb -f "$F" -e 1 -d 1 \
		127.0.0.1:9993 >"$TMP/$K.fprobe" 2>&1
	pid=$BG_PID
	prog_on "$K" fprobe
	send_all
	wait_for "$TMP/$K.nf" "packets 1500$"
	kill "$pid" "$cpid"
	wait_bg "$pid"
	wait_bg "$cpid"
	echo "   fprobe: $(tail -n 1 "$TMP/$K.nf")"

	inB ip addr add 10.1.0.1/24 dev vb
	inB timeout 30 "${RUN[@]}" arping -c 5 -i vb 10.1.0.2 >"$TMP/$K.arping" 2>&1 ||
		fail "$K arping: $(cat "$TMP/$K.arping")"
	grep -q "5 packets transmitted, 5 packets received" "$TMP/$K.arping" ||
		fail "$K arping: $(cat "$TMP/$K.arping")"
	echo "   arping: 5 of 5"

	inB timeout 60 "${RUN[@]}" nmap --send-eth -e vb -sS -p 80,81 -n -Pn \
		10.1.0.2 >"$TMP/$K.nmap" 2>&1 || fail "$K nmap: $(cat "$TMP/$K.nmap")"
	grep -q "^80/tcp closed" "$TMP/$K.nmap" && grep -q "^81/tcp closed" "$TMP/$K.nmap" ||
		fail "$K nmap: $(cat "$TMP/$K.nmap")"
	echo "   nmap --send-eth: 80, 81 closed"

	# hping3 sends through the host stack (a raw IP socket) and reads the
	# answers with libpcap. On xdp: the host no longer sees vb's frames
	# (netmap mode), ARP replies included: give it the neighbour.
	inB ip neigh replace 10.1.0.2 lladdr "$MAC_A" dev vb nud permanent
	inB timeout 30 "${RUN[@]}" hping3 -c 5 -S -p 80 -I vb 10.1.0.2 \
		>"$TMP/$K.hping3" 2>&1 || true
	expect_eq "$K hping3 answers ($(tail -n 2 "$TMP/$K.hping3" | tr '\n' ';'))" \
		"$(grep -c 'flags=RA' "$TMP/$K.hping3")" 5
	echo "   hping3 -S: 5 of 5 answered"
	inB ip addr flush dev vb
	no_prog "$K"
done

# Bad input, one line each (tcpdump's own line, then the library's reason
# in parentheses, as stock libpcap words it), and nothing left behind.
bad() {
	local what=$1 want=$2
	shift 2
	if inB timeout 30 "$@" >"$TMP/bad.out" 2>&1; then
		fail "$what: no error"
	fi
	grep -qF "$want" "$TMP/bad.out" || fail "$what: $(cat "$TMP/bad.out")"
	no_prog "$what"
	echo "   $what: $(grep -F "$want" "$TMP/bad.out")"
}
bad "no such port" "(xdp:nosuch: no such interface)" \
	"$PKTMAP" pcap-run tcpdump -i xdp:nosuch -c 1
NOBODY=(setpriv --reuid nobody --regid nogroup --clear-groups)
stage_for_others # nobody runs a copy it can read, whatever the checkout's
bad "no permission (xdp)" "(xdp:vb: needs CAP_NET_RAW" \
	"${NOBODY[@]}" "${OTHER_ENV[@]}" "$OTHER_PKTMAP" pcap-run tcpdump -i xdp:vb -c 1
bad "no permission (pkt)" "(pkt:vb: needs CAP_NET_RAW" \
	"${NOBODY[@]}" "${OTHER_ENV[@]}" "$OTHER_PKTMAP" pcap-run tcpdump -i pkt:vb -c 1
bad "filter that does not compile" "tcpdump: can't parse filter expression" \
	"$PKTMAP" pcap-run tcpdump -i xdp:vb -c 1 udp port

# Nothing left behind: tcpdump dropping its privileges (-Z tcpdump, its
# default) before it exits, and p0f killed with SIGKILL, leave no XDP
# program on vb and no file of pktmap's in /dev/shm.
NSB=$(stat -L -c %i "/run/netns/$B")
bg "${IB[@]}" "$PKTMAP" pcap-run -m xdp tcpdump -nn -i vb -c 1500 \
	>"$TMP/z.out" 2>"$TMP/z.err"
pid=$BG_PID
prog_on xdp "tcpdump -Z tcpdump"
send_all
wait_bg "$pid"
expect_eq "tcpdump -Z: exit ($(tr '\n' ';' <"$TMP/z.err"))" "$WAIT_RC" 0
expect_eq "tcpdump -Z: packets" "$(grep -c . "$TMP/z.out")" 1500
gone() {
	for _ in $(seq 50); do
		inB ip link show vb | grep -q "prog/xdp" || return 0
		sleep 0.1
	done
	return 0
}
gone
no_prog "tcpdump -Z"
echo "   tcpdump as user tcpdump at exit: 1500, nothing left"
bg "${IB[@]}" "$PKTMAP" pcap-run -m xdp p0f -i vb >"$TMP/k.out" 2>&1
pid=$BG_PID
prog_on xdp "p0f"
kid=$(pgrep -P "$pid") # p0f itself, under timeout(1)
[ -n "$kid" ] && grep -q p0f "/proc/$kid/comm" || fail "p0f's pid"
kill -KILL "$kid"
wait_bg "$pid"
gone
no_prog "p0f SIGKILL"
l=$(ls /dev/shm/pktmap-xdp*."$NSB".* 2>/dev/null || true)
[ -z "$l" ] || fail "files left in /dev/shm: $l"
echo "   p0f killed with SIGKILL: nothing left"

# xdp: within common limits. Without CAP_IPC_LOCK the UMEM counts against
# RLIMIT_MEMLOCK: at the default 8 MiB the rings are sized to fit (the
# 48 MB the library asks for by default do not) and tcpdump captures all;
# at 64 KiB nothing fits and one line names the limit and the fix.
NOLOCK=(prlimit --memlock=8388608 setpriv --bounding-set=-ipc_lock)
bg "${IB[@]}" "${NOLOCK[@]}" "$PKTMAP" pcap-run -m xdp tcpdump -Z root -i vb \
	-c 1500 -w "$TMP/ml.pcap" 2>"$TMP/ml.err"
pid=$BG_PID
prog_on xdp "tcpdump under 8 MiB"
send_all
wait_bg "$pid"
expect_eq "memlock 8 MiB: tcpdump exit ($(tr '\n' ';' <"$TMP/ml.err"))" "$WAIT_RC" 0
expect_eq "memlock 8 MiB: packets" "$(count_file "$TMP/ml.pcap")" 1500
echo "   tcpdump on xdp:vb, memlock 8 MiB, no CAP_IPC_LOCK: 1500"
inB prlimit --memlock=65536 setpriv --bounding-set=-ipc_lock "$PKTMAP" recv \
	-i xdp:vb -n 1 >"$TMP/ml2.out" 2>&1 && fail "memlock 64 KiB: opened"
grep -q "locked-memory limit (ulimit -l: 64 kB): raise it" "$TMP/ml2.out" ||
	fail "memlock 64 KiB: $(cat "$TMP/ml2.out")"
[ "$(grep -c . "$TMP/ml2.out")" = 1 ] || fail "memlock 64 KiB: more than one line: $(cat "$TMP/ml2.out")"
echo "   memlock 64 KiB: $(cat "$TMP/ml2.out")"
no_prog memlock
echo "PASS"
