# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Shared by the benchmarks (source it; ROOT set). write_tx_json needs OUT,
# SIZES, TOOLS, SECS, RUNS, CPU and an associative array RES["size,tool"]
# holding the packets/s of each run, space-separated. The namespace
# helpers of scripts/netns.sh (netns_new, netns_veth, netns_del) come with
# it.

# shellcheck source=../scripts/netns.sh
. "$ROOT/scripts/netns.sh"

# write_tx_json's optional figures per "size,tool" (tx_window's CPU ns
# per packet and system calls per 1,000 packets, space-separated runs)
declare -A CPUNS=() SYSK=()

# xdp_pass_attach NS IFACE: build bench/xdp_pass.bpf.c (into $TMP) and
# attach it to IFACE in namespace NS; a veth takes redirected frames (a
# live sender's) only while its peer runs an XDP program. 1 when it
# cannot.
xdp_pass_attach() {
	local multiarch
	multiarch=$(cc -print-multiarch 2>/dev/null || true)
	[ -f "$TMP/xdp_pass.o" ] ||
		clang -O2 -target bpf ${multiarch:+-I/usr/include/$multiarch} \
			-c "$ROOT/bench/xdp_pass.bpf.c" -o "$TMP/xdp_pass.o" || return 1
	# (ip may attach nothing while other namespaces come and go: retry.)
	for _ in 1 2 3 4 5; do
		ip -n "$1" link set dev "$2" xdpdrv obj "$TMP/xdp_pass.o" sec xdp || true
		ip -n "$1" link show dev "$2" | grep -q prog/xdp && return 0
	done
	return 1
}

# bench_cleanup NS...: the veth benchmarks' exit: stop the background
# jobs, delete the namespaces (their veths go with them) and $TMP.
#   trap 'bench_cleanup "$A" "$B"' EXIT
bench_cleanup() {
	local pid
	set +e
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	netns_del "$@"
	rm -rf "${TMP:?}"
}

# tx_window SEND_NS RECV_NS DEV CPU WARM SECS CMD...: run CMD in SEND_NS
# pinned to CPU and print three figures for a window of SECS seconds that
# opens WARM seconds after CMD started (a tool's start-up, mapping and
# touching its memory, is not in them: the method's fixed window after a
# warm-up):
#   packets per second RECV_NS's DEV counted (rx_packets);
#   CPU's busy time per packet, in ns (user + system + irq + softirq from
#   /proc/stat: the whole core, the kernel's work for the tool included);
#   system calls per 1,000 packets of CMD and its children (perf stat on
#   raw_syscalls:sys_enter; -1 without perf).
tx_window() {
	local sns=$1 rns=$2 dev=$3 cpu=$4 warm=$5 win=$6 r0 r1 t0 t1 b0 b1 pid
	local kids perf_pid=0 out
	shift 6
	out=$(mktemp /tmp/pmtxw.XXXXXX)
	# Under timeout: a background job of a script ignores SIGINT, and
	# timeout hands the signal to the tool and its children (trafgen
	# -P forks); its own limit stops the tool if this shell dies.
	timeout -s INT "$(awk -v a="$warm" -v b="$win" 'BEGIN { print a + b + 5 }')" \
		ip netns exec "$sns" taskset -c "$cpu" "$@" >/dev/null 2>&1 </dev/null &
	pid=$!
	sleep "$warm"
	kids=$(descendants "$pid")
	if command -v perf >/dev/null && [ -n "$kids" ]; then
		timeout -s INT "$(awk -v b="$win" 'BEGIN { print b + 5 }')" \
			perf stat -e raw_syscalls:sys_enter -x, -o "$out" -p "$kids" \
			>/dev/null 2>&1 </dev/null &
		perf_pid=$!
		sleep 0.2 # perf attaches
	fi
	r0=$(ip netns exec "$rns" cat "/sys/class/net/$dev/statistics/rx_packets")
	b0=$(cpu_busy "$cpu")
	t0=$(date +%s.%N)
	sleep "$win"
	r1=$(ip netns exec "$rns" cat "/sys/class/net/$dev/statistics/rx_packets")
	b1=$(cpu_busy "$cpu")
	t1=$(date +%s.%N)
	if [ "$perf_pid" != 0 ]; then
		kill -INT "$perf_pid" 2>/dev/null || true
		wait "$perf_pid" 2>/dev/null || true
	fi
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	python3 - "$r0" "$r1" "$t0" "$t1" "$b0" "$b1" "$out" "$(getconf CLK_TCK)" <<'PY'
import sys
r0, r1, t0, t1, b0, b1 = (float(x) for x in sys.argv[1:7])
pk = r1 - r0
n = -1
for line in open(sys.argv[7]):
    f = line.strip().split(",")
    if len(f) > 2 and "sys_enter" in f[2] and f[0].isdigit():
        n = int(f[0])
cpu_ns = (b1 - b0) / float(sys.argv[8]) * 1e9 / pk if pk else 0
print(int(pk / (t1 - t0)), int(cpu_ns), round(n * 1000 / pk, 2) if pk and n >= 0 else -1)
PY
	rm -f "$out"
}

# descendants PID: PID's child processes and theirs, comma-separated.
descendants() {
	local todo=$1 all="" p c
	while [ -n "$todo" ]; do
		p=${todo%% *}
		todo=${todo#"$p"}
		todo=${todo# }
		for c in $(pgrep -P "$p"); do
			all="$all${all:+,}$c"
			todo="$todo${todo:+ }$c"
		done
	done
	echo "$all"
}

# cpu_busy CPU: jiffies CPU was busy (all but idle and iowait, /proc/stat).
cpu_busy() {
	awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# The load average when the benchmark started (docs/performance.md: a
# result needs a quiet machine, under 0.3); write_tx_json records it and marks the
# result noisy above that.
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD_BEFORE" 'BEGIN { exit !(l >= 0.3) }'; then
	echo "load average $LOAD_BEFORE >= 0.3: the machine is busy, this result is marked noisy" >&2
fi

# write_tx_json NAME WHAT EXTRA BASE: write $OUT (machine, commit, and per
# size and tool the median/min/max of RES, and the medians of CPUNS and
# SYSK when the caller keeps them: tx_window's second and third figures),
# then print every tool's median with BASE's ratio to it. EXTRA is more
# JSON members, e.g. '"rps": 1,'.
write_tx_json() {
	local name=$1 what=$2 extra=$3 base=$4 size tool first=1
	mkdir -p "$(dirname "$OUT")"
	{
		echo "{"
		echo "  \"bench\": \"$name\","
		echo "  \"what\": \"$what\","
		echo "  \"machine\": {\"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\", \"cores\": $(nproc), \"kernel\": \"$(uname -r)\"},"
		echo "  \"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\","
		echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
		echo "  \"load_before\": $LOAD_BEFORE, \"load_after\": $(cut -d' ' -f1 /proc/loadavg),"
		echo "  \"noisy\": $(awk -v l="$LOAD_BEFORE" 'BEGIN { print (l >= 0.3) ? "true" : "false" }'),"
		echo "  \"seconds\": $SECS, \"runs\": $RUNS, $extra"
		echo "  \"points\": ["
		for size in $SIZES; do
			for tool in $TOOLS; do
				[ $first = 1 ] || echo ","
				first=0
				# shellcheck disable=SC2086
				CPUNS_RUNS="${CPUNS["$size,$tool"]:-}" SYSK_RUNS="${SYSK["$size,$tool"]:-}" \
				python3 - "$size" "$tool" ${RES["$size,$tool"]} <<'PY'
import os, statistics, sys, json
size, tool, vals = int(sys.argv[1]), sys.argv[2], [int(v) for v in sys.argv[3:]]
p = {"size": size, "tool": tool, "pps_median": int(statistics.median(vals)),
     "pps_min": min(vals), "pps_max": max(vals), "runs": vals}
cpu = [float(v) for v in os.environ["CPUNS_RUNS"].split()]
sysk = [float(v) for v in os.environ["SYSK_RUNS"].split() if float(v) >= 0]
if cpu:
    p["cpu_ns_per_pkt_median"] = statistics.median(cpu)
    p["cpu_ns_per_pkt_runs"] = cpu
if sysk:
    p["syscalls_per_1000_pkts_median"] = statistics.median(sysk)
print("    " + json.dumps(p), end="")
PY
			done
		done
		echo ""
		echo "  ]"
		echo "}"
	} >"$OUT"
	python3 - "$OUT" "$base" <<'PY'
import json, sys
d, base_tool = json.load(open(sys.argv[1])), sys.argv[2]
by = {}
for p in d["points"]:
    by.setdefault(p["size"], {})[p["tool"]] = p["pps_median"]
for size, t in by.items():
    base = t.get(base_tool, 0)
    others = ", ".join("%s %.0f kpps (%s %.2fx)" % (k, v / 1e3, base_tool, base / v if v else 0)
                       for k, v in t.items() if k != base_tool)
    print("size %5d: %s %.0f kpps; %s" % (size, base_tool, base / 1e3, others))
for p in d["points"]:
    if "cpu_ns_per_pkt_median" in p:
        print("size %5d %-16s CPU %5.0f ns/pkt, %s syscalls/1000 pkts" %
              (p["size"], p["tool"], p["cpu_ns_per_pkt_median"],
               p.get("syscalls_per_1000_pkts_median", "-")))
PY
	echo "wrote $OUT" >&2
}
