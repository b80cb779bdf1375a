#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A DDoS flood on a veth pair against three cleaners (issue 32's bench):
#
#   scrub       pktmap scrub -i xdp:vethB (its kernel path: the program
#               xdp:vethB@conf:prog=scrub; every rule of scrub.rules is
#               representable there, so it applies the deny-list and the
#               limits itself and passes clean frames to vethB's own
#               stack with XDP_PASS, docs/scrub.md "Host mode"; its
#               counters say so: kernel_reason lines), worker pinned to
#               CPU 1
#   xdp_filter  xdp-filter (Debian's xdp-tools, one program, native mode)
#               with the deny addresses (src mode), policy allow
#   nft         nftables on vethB's netdev ingress hook: a deny set and a
#               per-source `limit rate` meter (a dynamic set)
#
#   netns sbA$$                                  netns sbB$$
#   [ trafgen flood + pktmap gen legit, CPU 0 ] vethA ==== vethB [ cleaner ]
#
# The flood: trafgen (netsniff-ng) at its full rate, 60-byte frames, a UDP
# frame and a TCP SYN in turn, to a foreign MAC (02:00:00:00:00:00: what
# passes is dropped by vethB's stack right after it is counted). With
# FLOOD=live instead: `pktmap gen -i xdp:vethA@conf:tx=live`, 60-byte UDP
# frames, the sources in turn (BPF_PROG_RUN live frames: no skb on the
# sending side, and vethB's XDP program gets them as XDP frames, before
# any skb, as a NIC driver hands them over; nft then needs vethB to run
# an XDP_PASS program, bench/xdp_pass.bpf.c, which builds the skbs its
# hook sees). Scenarios:
#   deny   sources among the NDENY deny-listed addresses (10.9.0.0 up);
#   limit  sources among NSRC (65536) addresses of 10.20.0.0/16, none
#          listed, each above its limit of LIMIT packets a second
#          (xdp-filter has no rate limits: not run).
#   load   (scrub alone, no flood) NPFX deny prefixes in a deny-file
#          (half /32 hosts, half /24s, none adjacent): the time from starting
#          `pktmap scrub -i xdp:vethB` to its control socket's first
#          answer, and of RUNS `reload`s through the control socket (a
#          reload answers when the new lists are live, in user space
#          and in the kernel).
# Beside it, one legitimate flow: pktmap gen, LEGIT_PPS UDP frames a second
# from 192.0.2.10 to vethB's own address and MAC, port 9: each one that
# reaches vethB's stack is counted by its UDP counters (NoPorts +
# InDatagrams of /proc/net/snmp in sbB), whichever cleaner let it through.
#
# Measured in a window of DURATION seconds opening WARM seconds after the
# flood started: dropped per second (the cleaner's own counters: scrub's
# control socket `stats` dropped_total, xdp-filter's XDP_DROP, nft's
# counters), the busy time of cores 0 and 1 (/proc/stat: user, system,
# irq, softirq) per dropped packet: the flood's core, where veth also runs
# the receiving side's XDP program and ingress hook (its NAPI runs where
# the frame is sent), and the cleaner's (scrub's worker), the legitimate frames delivered of those
# sent (LEGIT_PPS x DURATION), and in `limit` the rate let through from
# the limited sources against LIMIT x NSRC (held within 5%?). LIMIT is 2
# a second, a burst of one second (LIMIT packets) in both scrub and nft:
# the flood offers each of the 65536 sources several times that (at
# LIMIT=10 it offered them barely their limit, and a burst of one packet
# loses the time between a token and the next frame). RUNS runs,
# cleaners interleaved. Output: scrub.json in bench/results/.
#
# Usage: bench/scrub.sh [PKTMAP]   (env: DURATION=5 WARM=2 RUNS=3
#        NDENY=1024 NSRC=65536 LIMIT=2 LEGIT_PPS=10000 SCENARIOS="deny
#        limit load" SYSTEMS="scrub xdp_filter nft" NPFX=1000000
#        FLOOD=trafgen|live OUT=...)
# scrub's dropped_total counts the kernel's drops and the workers'
# (docs/scrub.md, "The kernel path").
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/bench/lib.sh"
for a in "$@"; do
	case $a in
	--quick) RUNS=${RUNS:-1} DURATION=${DURATION:-2} ;;
	--*) ;;
	*) PKTMAP=$a ;;
	esac
done
PKTMAP=${PKTMAP:-$ROOT/build/apps/pktmap}
PROG_COST=$(dirname "$(dirname "$PKTMAP")")/bench/xdp_prog_cost
PROG_REPEAT=${PROG_REPEAT:-1000000}
DURATION=${DURATION:-5}
WARM=${WARM:-2}
RUNS=${RUNS:-3}
NDENY=${NDENY:-1024}
NSRC=${NSRC:-65536}
LIMIT=${LIMIT:-2}
LEGIT_PPS=${LEGIT_PPS:-10000}
SCENARIOS=${SCENARIOS:-deny limit load}
NPFX=${NPFX:-1000000}
FLOOD=${FLOOD:-trafgen}
case $FLOOD in
trafgen|live) ;;
*) echo "FLOOD: trafgen or live" >&2; exit 2 ;;
esac
SYSTEMS=${SYSTEMS:-scrub xdp_filter nft}
OUT=${OUT:-$ROOT/bench/results/scrub.json}
A=sbA$$
B=sbB$$
TMP=$(mktemp -d /tmp/scrub_bench.XXXXXX)
NFT_TABLE=sb$$

trap 'bench_cleanup "$A" "$B"' EXIT

[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$PKTMAP" ] || { echo "no pktmap binary at $PKTMAP" >&2; exit 1; }
[ -x "$PROG_COST" ] || { echo "no $PROG_COST (built with xdp)" >&2; exit 1; }
for c in trafgen xdp-filter nft; do
	command -v "$c" >/dev/null ||
		{ echo "needs $c: apt-get install -y netsniff-ng xdp-tools nftables" >&2; exit 1; }
done
[ "$NDENY" -ge 1 ] && [ "$NDENY" -le 65536 ] || { echo "NDENY: 1 to 65536" >&2; exit 2; }

netns_new "$A" "$B"
netns_veth "$A" vethA "$B" vethB
ip -n "$B" addr add 10.1.0.1/24 dev vethB
MACB=$(ip netns exec "$B" cat /sys/class/net/vethB/address)

# The deny list: NDENY addresses from 10.9.0.0 up, one a line.
python3 - "$NDENY" >"$TMP/deny.txt" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print("10.9.%d.%d" % (i >> 8, i & 255))
PY
# (a source table of nft's set's size, 131072)
cat >"$TMP/scrub.rules" <<EOF
allow 192.0.2.10
deny-file $TMP/deny.txt
limit packets $LIMIT
sources 131072
EOF

# trafgen's configuration for a scenario: a UDP frame and a TCP SYN of
# 60 bytes, the source drawn for each frame.
make_cfg() {
	python3 - "$1" "$NDENY" "$NSRC" >"$TMP/$1.cfg" <<'PY'
import sys
scen, ndeny, nsrc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if scen == "deny":
    hi = (ndeny - 1) >> 8
    src = "10, 9, dinc(0, %d), drnd()" % hi if ndeny > 256 else \
          "10, 9, 0, dinc(0, %d)" % (ndeny - 1)
else:
    hi = (nsrc - 1) >> 8
    src = "10, 20, dinc(0, %d), drnd()" % hi
eth = "0x02, 0, 0, 0, 0, 0,  0x02, 0, 0, 0, 0, 0x01,  0x08, 0x00"
for proto, l4 in ((17, "0x04, 0xd2, 0x10, 0xe1, 0, 26, 0, 0, fill(0, 18)"),
                  (6, "0x04, 0xd2, 0, 80, drnd(4), 0, 0, 0, 0, 0x50, 0x02, "
                      "0x72, 0x10, 0, 0, 0, 0, fill(0, 6)")):
    print("{ %s,\n  0x45, 0, 0, 46, 0, 1, 0x40, 0, 64, %d, 0, 0, %s, "
          "10, 1, 0, 1,\n  %s }" % (eth, proto, src, l4))
PY
}
# One frame of a scenario's flood (UDP from 10.9.0.5, deny-listed, or
# from 10.20.0.5, limited) for xdp_prog_cost.
make_frame() {
	python3 - "$1" >"$TMP/$1.frame" <<'PY'
import struct, sys
src = bytes([10, 9, 0, 5]) if sys.argv[1] == "deny" else bytes([10, 20, 0, 5])
eth = bytes([2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 8, 0])
ip = bytes([0x45, 0, 0, 46, 0, 1, 0x40, 0, 64, 17, 0, 0]) + src + bytes([10, 1, 0, 1])
udp = struct.pack("!HHHH", 1234, 4321, 26, 0) + bytes(18)
sys.stdout.buffer.write(eth + ip + udp)
PY
}
# (the deny scenario's 4th byte: drnd() over 0..255 in each of the
# NDENY / 256 blocks; NDENY is a multiple of 256 or below it)
if [ "$NDENY" -gt 256 ] && [ $((NDENY % 256)) != 0 ]; then
	echo "NDENY above 256 must be a multiple of 256" >&2
	exit 2
fi

legit_rx() {
	ip netns exec "$B" awk '/^Udp: [0-9]/ { print $2 + $3 }' /proc/net/snmp
}
# Ask scrub's control socket; print its reply (with `timed`, first a line
# with the seconds it took).
scrub_ask() {
	python3 - "$TMP/ctl.sock" "$1" "${2:-}" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
t = time.perf_counter()
s.sendall((sys.argv[2] + "\n").encode())
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
if sys.argv[3] == "timed":
    print("%.4f" % (time.perf_counter() - t))
sys.stdout.write(out.decode())
PY
}
# The cleaner's counters now: "DROPPED PASSED_LIMITED" (the frames it
# dropped, and those it let through from flood sources: all but the
# legitimate flow's).
counters() {
	case $1 in
	scrub)
		scrub_ask stats | awk '$1 == "dropped_total" { d = $2 }
			$1 == "passed_total" { p = $2 }
			$1 == "reason" && $2 == "allowed" { a = $3 }
			END { print d + 0, p - a }' ;;
	xdp_filter)
		echo status >"$TMP/xf.in"
		read -r line <"$TMP/xf.out"
		echo "$line 0" ;;
	nft)
		ip netns exec "$B" nft -j list table netdev "$NFT_TABLE" | python3 -c '
import json, sys
d = json.load(sys.stdin)["nftables"]
c = {}
for e in d:
    r = e.get("rule")
    if not r:
        continue
    n = 0
    for x in r["expr"]:
        if "counter" in x:
            n = x["counter"]["packets"]
    c[r.get("comment", "")] = n
print(c.get("deny", 0) + c.get("limit", 0), c.get("pass", 0))' ;;
	esac
}

start_system() {
	case $1 in
	scrub)
		rm -f "$TMP/ctl.sock"
		ip netns exec "$B" "$PKTMAP" scrub -i xdp:vethB \
			-c "$TMP/scrub.rules" -a 1 -T 0 --quiet \
			--control "$TMP/ctl.sock" >"$TMP/scrub.log" 2>&1 &
		SYS_PID=$!
		for _ in $(seq 100); do
			[ -S "$TMP/ctl.sock" ] && break
			sleep 0.1
		done
		[ -S "$TMP/ctl.sock" ] || { cat "$TMP/scrub.log" >&2; exit 1; } ;;
	xdp_filter)
		# One shell in sbB holds the bpffs xdp-filter pins its maps in
		# (ip netns exec mounts a /sys of its own), and answers "status"
		# with the XDP_DROP packets.
		rm -f "$TMP/xf.in" "$TMP/xf.out"
		mkfifo "$TMP/xf.in" "$TMP/xf.out"
		ip netns exec "$B" bash -c '
			mount -t bpf bpf /sys/fs/bpf
			xdp-filter load -m native -f ipv4 -p allow vethB || exit 1
			while read -r a; do xdp-filter ip -m src "$a"; done <"$1"
			exec 3<>"$2" 4<>"$3"
			echo ready >&4
			while read -r cmd <&3; do
				[ "$cmd" = status ] || break
				xdp-filter status | awk "\$1 == \"XDP_DROP\" { print \$2 }" >&4
			done
			xdp-filter unload vethB' _ "$TMP/deny.txt" "$TMP/xf.in" "$TMP/xf.out" &
		SYS_PID=$!
		read -r _ <"$TMP/xf.out" ;;
	nft)
		{
			echo "table netdev $NFT_TABLE {"
			echo "  set deny { type ipv4_addr; elements = {"
			paste -sd, "$TMP/deny.txt"
			echo "  } }"
			echo "  set lim { type ipv4_addr; size 131072; flags dynamic,timeout; timeout 10s; }"
			echo "  chain in { type filter hook ingress device vethB priority -500; policy accept;"
			echo "    ip saddr 192.0.2.10 counter accept comment \"legit\""
			echo "    ip saddr @deny counter drop comment \"deny\""
			echo "    update @lim { ip saddr limit rate over $LIMIT/second burst $LIMIT packets } counter drop comment \"limit\""
			echo "    counter accept comment \"pass\""
			echo "  }"
			echo "}"
		} >"$TMP/nft.conf"
		ip netns exec "$B" nft -f "$TMP/nft.conf"
		if [ "$FLOOD" = live ]; then
			xdp_pass_attach "$B" vethB ||
				{ echo "cannot attach XDP_PASS to vethB" >&2; exit 1; }
		fi
		SYS_PID= ;;
	esac
}

stop_system() {
	case $1 in
	scrub) kill -INT "$SYS_PID"; wait "$SYS_PID" || true ;;
	xdp_filter) echo quit >"$TMP/xf.in"; wait "$SYS_PID" || true ;;
	nft)
		ip netns exec "$B" nft delete table netdev "$NFT_TABLE"
		[ "$FLOOD" = trafgen ] || ip -n "$B" link set dev vethB xdpdrv off ;;
	esac
}

# The live flood's sources of a scenario (gen -s), those of trafgen's.
flood_range() {
	if [ "$1" = deny ]; then
		if [ "$NDENY" -le 256 ]; then
			echo "10.9.0.0-10.9.0.$((NDENY - 1))"
		else
			echo "10.9.0.0-10.9.$(((NDENY - 1) >> 8)).255"
		fi
	else
		echo "10.20.0.0-10.20.$(((NSRC - 1) >> 8)).255"
	fi
}

# The cleaner's XDP program's own mean ns on one frame of the scenario
# (BPF_PROG_TEST_RUN, PROG_REPEAT runs, no sender; the least of 5 such
# means: what the machine adds is never less), or 0 (nft: none).
prog_ns() {
	case $2 in
	scrub|xdp_filter)
		for _ in 1 2 3 4 5; do
			ip netns exec "$B" "$PROG_COST" vethB "$TMP/$1.frame" "$PROG_REPEAT"
		done | awk 'NR == 1 || $1 < m { m = $1 } END { print m }' ;;
	*) echo 0 ;;
	esac
}

# One run: prints "dropped/s cpu0_ns cpu1_ns legit_delivered legit_sent
# limited_pass/s prog_ns".
run_one() {
	local scen=$1 sys=$2 c0 c1 p0 p1 l0 l1 t0 t1 x0 x1 g f pn
	start_system "$sys"
	pn=$(prog_ns "$scen" "$sys")
	timeout -s INT $((WARM + DURATION + 10)) ip netns exec "$A" taskset -c 0 \
		"$PKTMAP" gen -i pkt:vethA -s 192.0.2.10:5000 -d 10.1.0.1:9 \
		-D "$MACB" -R "$LEGIT_PPS" -T 0 -q >/dev/null 2>&1 &
	g=$!
	if [ "$FLOOD" = live ]; then
		timeout -s INT $((WARM + DURATION + 10)) ip netns exec "$A" taskset -c 0 \
			"$PKTMAP" gen -i xdp:vethA@conf:tx=live -l 60 -T 0 -q \
			-D 02:00:00:00:00:00 -s "$(flood_range "$scen")" >/dev/null 2>&1 &
	else
		timeout -s INT $((WARM + DURATION + 10)) ip netns exec "$A" taskset -c 0 \
			trafgen -o vethA -c "$TMP/$scen.cfg" -P 1 -Q -C --no-sock-mem >/dev/null 2>&1 &
	fi
	f=$!
	sleep "$WARM"
	read -r x0 p0 <<<"$(counters "$sys")"
	c0="$(cpu_busy 0) $(cpu_busy 1)"
	l0=$(legit_rx)
	t0=$(date +%s.%N)
	sleep "$DURATION"
	read -r x1 p1 <<<"$(counters "$sys")"
	c1="$(cpu_busy 0) $(cpu_busy 1)"
	l1=$(legit_rx)
	t1=$(date +%s.%N)
	kill -INT "$f" "$g" 2>/dev/null || true
	wait "$f" "$g" 2>/dev/null || true
	stop_system "$sys"
	python3 - "$x0" "$x1" "$p0" "$p1" "$l0" "$l1" "$t0" "$t1" "$c0" "$c1" \
		"$(getconf CLK_TCK)" "$LEGIT_PPS" "$pn" <<'PY'
import sys
a = sys.argv[1:]
x0, x1, p0, p1, l0, l1, t0, t1 = (float(v) for v in a[:8])
c0, c1 = [float(v) for v in a[8].split()], [float(v) for v in a[9].split()]
hz, legit = float(a[10]), float(a[11])
secs = t1 - t0
drop = x1 - x0
ns = [(c1[i] - c0[i]) / hz * 1e9 / drop if drop else 0 for i in range(2)]
print(int(drop / secs), int(ns[0]), int(ns[1]), int(l1 - l0),
      int(legit * secs), int((p1 - p0) / secs), int(a[12]))
PY
}

# The load scenario: prints "start_s reload_s..." (RUNS reloads).
load_run() {
	local t0 t1 pid out times=()
	python3 - "$NPFX" >"$TMP/many.txt" <<'PY'
import sys
# every other host and every other /24: no two merge into a shorter
# prefix (scrub loads the fewest prefixes that cover its ranges)
for i in range(int(sys.argv[1])):
    j = (i >> 1) * 2
    if i % 2:
        print("%d.%d.%d.0/24" % (64 + (j >> 16), (j >> 8) & 255, j & 255))
    else:
        print("11.%d.%d.%d" % (j >> 16, (j >> 8) & 255, j & 255))
PY
	printf 'allow 192.0.2.10\ndeny-file %s\nlimit packets %s\n' \
		"$TMP/many.txt" "$LIMIT" >"$TMP/many.rules"
	rm -f "$TMP/ctl.sock"
	t0=$(date +%s.%N)
	ip netns exec "$B" "$PKTMAP" scrub -i xdp:vethB -c "$TMP/many.rules" \
		-a 1 -T 0 --quiet --control "$TMP/ctl.sock" >"$TMP/scrub.log" 2>&1 &
	pid=$!
	until [ -S "$TMP/ctl.sock" ] && scrub_ask stats >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || { cat "$TMP/scrub.log" >&2; exit 1; }
		sleep 0.01
	done
	t1=$(date +%s.%N)
	for _ in $(seq "$RUNS"); do
		out=$(scrub_ask reload timed)
		case $out in
		*"ok reloaded"*) ;;
		*) echo "reload: $out" >&2; exit 1 ;;
		esac
		times+=("${out%%$'\n'*}")
	done
	kill -INT "$pid"
	wait "$pid" || true
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') ${times[*]}"
}

declare -A R
for scen in $SCENARIOS; do
	[ "$scen" = load ] && continue
	make_cfg "$scen"
	make_frame "$scen"
done
LOADS=
if [[ " $SCENARIOS " == *" load "* ]]; then
	LOADS=$(load_run)
	echo "load scrub: start s, reload s: $LOADS" >&2
fi
for _ in $(seq "$RUNS"); do
	for scen in $SCENARIOS; do
		[ "$scen" = load ] && continue
		for sys in $SYSTEMS; do
			[ "$scen" = limit ] && [ "$sys" = xdp_filter ] && continue
			v=$(run_one "$scen" "$sys")
			echo "$scen $sys: dropped/s, ns/pkt cpu0 cpu1, legit got/sent, limited passed/s, prog ns: $v" >&2
			R["$scen,$sys"]="${R["$scen,$sys"]:-}${R["$scen,$sys"]:+;}$v"
		done
	done
done

mkdir -p "$(dirname "$OUT")"
{
	for scen in $SCENARIOS; do
		[ "$scen" = load ] && continue
		for sys in $SYSTEMS; do
			if [ -n "${R["$scen,$sys"]:-}" ]; then
				echo "$scen $sys ${R["$scen,$sys"]}"
			fi
		done
	done
} >"$TMP/points.txt"
# (the points come in a file: python3's standard input is its program)
python3 - "$TMP/points.txt" "$OUT" "$LOAD_BEFORE" "$DURATION" "$RUNS" "$NDENY" "$NSRC" "$LIMIT" \
	"$LEGIT_PPS" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	"$NPFX" "$LOADS" "$FLOOD" <<'PY'
import json, statistics, sys, time
points, out, load, secs, runs, ndeny, nsrc, limit, legit, commit = sys.argv[1:11]
npfx, loads, flood = int(sys.argv[11]), sys.argv[12].split(), sys.argv[13]
pts = []
for line in open(points):
    scen, tool, rest = line.split(None, 2)
    rs = [[int(v) for v in r.split()] for r in rest.strip().split(";")]
    med = lambda i: statistics.median(r[i] for r in rs)
    p = {"scenario": scen, "tool": tool,
         "dropped_pps_median": int(med(0)),
         "dropped_pps_runs": [r[0] for r in rs],
         "cpu0_ns_per_dropped_median": med(1),
         "cpu1_ns_per_dropped_median": med(2),
         "legit_delivered_runs": [r[3] for r in rs],
         "legit_sent_runs": [r[4] for r in rs],
         "prog_ns_median": med(6) if all(len(r) > 6 for r in rs) else 0}
    if scen == "limit":
        want = int(limit) * int(nsrc)
        p["limited_passed_pps_median"] = int(med(5))
        p["limited_target_pps"] = want
        p["limited_ratio_median"] = round(med(5) / want, 4) if want else 0
    pts.append(p)
d = {"bench": "scrub",
     "what": "a 60-byte flood (FLOOD: trafgen UDP+SYN, or pktmap gen's live XDP "
             "frames, UDP; full rate, CPU 0) on a veth "
             "against pktmap scrub, xdp-filter and nftables netdev ingress; "
             "dropped/s from each cleaner's counters, busy ns of each core "
             "per dropped packet, a legitimate flow's frames delivered",
     "load_before": float(load), "seconds": float(secs), "runs": int(runs),
     "ndeny": int(ndeny), "nsrc": int(nsrc), "limit_pps": int(limit),
     "legit_pps": int(legit), "commit": commit, "flood": flood,
     "noisy": float(load) >= 0.3,
     "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
     "points": pts}
if loads:
    rl = [float(v) for v in loads[1:]]
    d["load"] = {"prefixes": npfx, "start_s": round(float(loads[0]), 3),
                 "reload_s_runs": rl,
                 "reload_s_median": round(statistics.median(rl), 3) if rl else 0}
json.dump(d, open(out, "w"), indent=1)
for p in pts:
    print("%-5s %-10s dropped %8d/s  cpu0 %6.0f ns cpu1 %6.0f ns  prog %4.0f ns  legit %s/%s%s" % (
        p["scenario"], p["tool"], p["dropped_pps_median"],
        p["cpu0_ns_per_dropped_median"], p["cpu1_ns_per_dropped_median"],
        p["prog_ns_median"],
        p["legit_delivered_runs"], p["legit_sent_runs"],
        "  limited %.3fx of the limit" % p["limited_ratio_median"]
        if "limited_ratio_median" in p else ""))
PY
python3 -c '
import json, sys
l = json.load(open(sys.argv[1])).get("load")
if l:
    print("load  scrub      %d prefixes: started in %.2f s, reloaded in %.2f s (median of %d)" % (
        l["prefixes"], l["start_s"], l["reload_s_median"], len(l["reload_s_runs"])))' "$OUT"
echo "wrote $OUT" >&2
