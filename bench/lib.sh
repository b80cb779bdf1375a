# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Shared by the benchmarks (source it; ROOT set). write_tx_json needs OUT,
# SIZES, TOOLS, SECS, RUNS, CPU and an associative array RES["size,tool"]
# holding the packets/s of each run, space-separated. The namespace
# helpers of scripts/netns.sh (netns_new, netns_veth, netns_del) come with
# it.

# shellcheck source=../scripts/netns.sh
. "$ROOT/scripts/netns.sh"

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
# pinned to CPU and print the packets per second RECV_NS's DEV counted
# (rx_packets) in a window of SECS seconds that opens WARM seconds after
# CMD started: a tool's start-up (mapping and touching its memory) is
# not in the figure (BENCH.md: a fixed window after a warm-up).
tx_window() {
	local sns=$1 rns=$2 dev=$3 cpu=$4 warm=$5 win=$6 r0 r1 t0 t1 pid
	shift 6
	# Under timeout: a background job of a script ignores SIGINT, and
	# timeout hands the signal to the tool and its children (trafgen
	# -P forks); its own limit stops the tool if this shell dies.
	timeout -s INT "$(awk -v a="$warm" -v b="$win" 'BEGIN { print a + b + 5 }')" \
		ip netns exec "$sns" taskset -c "$cpu" "$@" >/dev/null 2>&1 </dev/null &
	pid=$!
	sleep "$warm"
	r0=$(ip netns exec "$rns" cat "/sys/class/net/$dev/statistics/rx_packets")
	t0=$(date +%s.%N)
	sleep "$win"
	r1=$(ip netns exec "$rns" cat "/sys/class/net/$dev/statistics/rx_packets")
	t1=$(date +%s.%N)
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	python3 -c "print(int(($r1 - $r0) / ($t1 - $t0)))"
}

# The load average when the benchmark started (BENCH.md: a result needs
# a quiet machine, under 0.3); write_tx_json records it and marks the
# result noisy above that.
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD_BEFORE" 'BEGIN { exit !(l >= 0.3) }'; then
	echo "load average $LOAD_BEFORE >= 0.3: the machine is busy, this result is marked noisy" >&2
fi

# write_tx_json NAME WHAT EXTRA BASE: write $OUT (machine, commit, and per
# size and tool the median/min/max of RES), then print every tool's median
# with BASE's ratio to it. EXTRA is more JSON members, e.g. '"rps": 1,'.
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
				python3 - "$size" "$tool" ${RES["$size,$tool"]} <<'PY'
import statistics, sys, json
size, tool, vals = int(sys.argv[1]), sys.argv[2], [int(v) for v in sys.argv[3:]]
print("    " + json.dumps({"size": size, "tool": tool, "pps_median": int(statistics.median(vals)),
      "pps_min": min(vals), "pps_max": max(vals), "runs": vals}), end="")
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
PY
	echo "wrote $OUT" >&2
}
