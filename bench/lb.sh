#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# lb-style fan-out, one input pipe to 4 output pipes read by 4 receivers,
# zero-copy, two ways in the same run:
#
#   nmt:    nmt gen -> L{0 ==> nmt lb L}0 ==> O{k/xT@<L's memory> -> 4 x nmt recv O}k
#           (tests/netmap/nmt.c, netmap's API on libpktmap-netmap: lb's way,
#           output pipes made in the input's memory, opened by name by the
#           receivers; packet s to pipe s % 4, extra buffers when a ring
#           is full)
#   router: pktmap gen -> r}0 ==> pktmap router -m hash --outputs 1,2,3,4
#           ==> r{1..4 -> 4 x pktmap recv   (all pipes @mem:, zero-copy)
#
# Each point: COUNT packets of 60 bytes end to end, RUNS runs, Mpps =
# COUNT / (time from the first packet sent to the last one received).
# Output: bench/results/lb.json. Needs the build's tests (nmt_lib).
#
# Usage: bench/lb.sh [BUILD]          (env: COUNT=5000000 RUNS=3)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build}
PKTMAP=$B/apps/pktmap
NMT=$B/tests/nmt_lib
COUNT=${COUNT:-5000000}
RUNS=${RUNS:-3}
OUT=${OUT:-$ROOT/bench/results/lb.json}
P=blb$$
[ -x "$NMT" ] && [ -x "$PKTMAP" ] || { echo "build first (ninja -C $B)" >&2; exit 1; }
# shellcheck source=lib.sh
. "$ROOT/bench/lib.sh"    # LOAD_BEFORE
PIDS=()
TMPD=$(mktemp -d)
on_exit() {
	local p d
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	d=/dev/shm/pktmap-$(id -u)
	rm -f "$d"/*"$P"* "$d"/.pipe."$P"*
	rm -rf "$TMPD"
}
trap on_exit EXIT

now() { date +%s.%N; }

# wait until FILE has a line matching RE
ready() { for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return; sleep 0.1; done
	echo "not ready: $1: $(cat "$1")" >&2; exit 1; }

run_nmt() {
	local d=$1 q=$((COUNT / 4)) k pids=()
	"$NMT" lb "netmap:${P}L$d}0" "${P}O$d" 4 "$COUNT" 4096 poll >"$TMPD/lb" 2>&1 &
	PIDS+=($!); local lb=$!
	ready "$TMPD/lb" '^ready'
	for k in 0 1 2 3; do
		"$NMT" recv "netmap:${P}O$d}$k" "$q" 60 poll fast >"$TMPD/r$k" 2>&1 &
		PIDS+=($!); pids+=($!)
		ready "$TMPD/r$k" '^ready'
	done
	local t0; t0=$(now)
	"$NMT" gen "netmap:${P}L$d{0" "$COUNT" 60 poll stamp >/dev/null
	for k in "${pids[@]}"; do wait "$k"; done
	local t1; t1=$(now)
	wait "$lb"
	python3 -c "print(round($COUNT / ($t1 - $t0) / 1e6, 3))"
}

run_router() {
	local d=$1 q=$((COUNT / 4)) k pids=() ports=()
	for k in 0 1 2 3 4; do ports+=(-i "pipe:${P}r$d{$k@mem:${P}m$d"); done
	"$PKTMAP" router "${ports[@]}" -m hash --outputs 1,2,3,4 -T 0 -q \
		--idle 2 >"$TMPD/router" 2>&1 &
	PIDS+=($!); local rt=$!
	sleep 1
	for k in 1 2 3 4; do
		"$PKTMAP" recv -i "pipe:${P}r$d}$k@mem:${P}m$d" -T 0 -q --json \
			--idle 2 >"$TMPD/q$k" 2>&1 &
		PIDS+=($!); pids+=($!)
	done
	sleep 1
	local t0; t0=$(now)
	"$PKTMAP" gen -i "pipe:${P}r$d}0@mem:${P}m$d" -n "$COUNT" -l 60 \
		-d 10.0.0.1-10.0.0.64 -T 0 -q >/dev/null
	for k in "${pids[@]}"; do wait "$k" || true; done
	local t1; t1=$(now)
	kill "$rt" 2>/dev/null || true
	wait "$rt" 2>/dev/null || true
	# the receivers stop after 2 s of silence: not part of the time
	python3 -c "print(round($COUNT / ($t1 - $t0 - 2) / 1e6, 3))"
}

declare -a NMTR ROUTR
for r in $(seq "$RUNS"); do
	NMTR+=("$(run_nmt "$r")")
	ROUTR+=("$(run_router "$r")")
	echo "run $r: nmt lb ${NMTR[-1]} Mpps, pktmap router ${ROUTR[-1]} Mpps" >&2
done
mkdir -p "$(dirname "$OUT")"
python3 - "$OUT" "$COUNT" "$LOAD_BEFORE" "$(cut -d' ' -f1 /proc/loadavg)" \
	"${NMTR[*]}" "${ROUTR[*]}" <<'PY'
import json, statistics, sys, platform, os
out, count, lb, la, a, b = sys.argv[1:]
a = [float(x) for x in a.split()]; b = [float(x) for x in b.split()]
d = {"bench": "lb", "what": "1 input pipe -> 4 output pipes -> 4 receivers, 60 B, zero-copy",
     "count": int(count), "cores": os.cpu_count(), "kernel": platform.release(),
     "load_before": float(lb), "load_after": float(la), "noisy": float(lb) >= 0.3,
     "points": [{"tool": "nmt lb (netmap API)", "mpps_median": statistics.median(a), "runs": a},
                {"tool": "pktmap router -m hash", "mpps_median": statistics.median(b), "runs": b}]}
json.dump(d, open(out, "w"), indent=1)
print(json.dumps(d["points"]))
PY
