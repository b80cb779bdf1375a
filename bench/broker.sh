#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap broker's two targets (issue 33, docs/broker.md):
#   1. an unprivileged receiver's rate on a broker-opened xdp: port is at
#      least 0.95x root's on the same port, in the same run: recv on
#      xdp:vethB-0 (CPU 1) while `pktmap gen -i xdp:vethA-0` (CPU 0) sends
#      as fast as it can for SECS seconds; root's recv (@conf:broker=no)
#      and nobody's (through the broker) interleaved, RUNS runs each;
#   2. a grant takes at most 10 ms: GRANTS grants (xsk + attach) timed by
#      a client running as nobody (bench/broker_grant.py), twice: with no
#      other user of the interface (each grant loads and attaches the XDP
#      program) and with a receiver on queue 1 holding it (each joins).
#
#   netns pbA$$                          netns pbB$$ (broker)
#   [ gen, CPU 0 ] vethA-0 == vethB-0 [ recv: root / nobody, CPU 1 ]
#
# Output: broker.json in bench/results/, and one line per target.
# Usage: bench/broker.sh [PKTMAP]   (env: RUNS=3 SECS=5 GRANTS=100 SIZE=60)
# A check that it works: RUNS=1 SECS=1 GRANTS=3 bench/broker.sh
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/bench/lib.sh"
PKTMAP=${1:-${PKTMAP:-$ROOT/build/apps/pktmap}}
RUNS=${RUNS:-3}
SECS=${SECS:-5}
GRANTS=${GRANTS:-100}
SIZE=${SIZE:-60}
OUT=${OUT:-$ROOT/bench/results/broker.json}
A=pbA$$
B=pbB$$
TMP=$(mktemp -d /tmp/broker_bench.XXXXXX)
chmod 755 "$TMP"
trap 'bench_cleanup "$A" "$B"' EXIT

[ "$(id -u)" = 0 ] || { echo "bench/broker.sh: needs root" >&2; exit 1; }
ip netns add "$A"
ip netns add "$B"
ip link add vethA netns "$A" numtxqueues 2 numrxqueues 2 type veth peer name vethB \
	netns "$B" numtxqueues 2 numrxqueues 2
ip -n "$A" link set vethA up
ip -n "$B" link set vethB up
# nobody runs a copy it can read, whatever the checkout's permissions
mkdir -p "$TMP/stage/apps"
cp "$PKTMAP" "$TMP/stage/apps/pktmap"
cp -L "$(dirname "$PKTMAP")/../libpktmap.so.0" "$TMP/stage/"
cp "$ROOT/bench/broker_grant.py" "$TMP/stage/"
chmod -R a+rX "$TMP/stage"
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups
	env LD_LIBRARY_PATH="$TMP/stage")
echo "allow user:nobody xdp:vethB modes=copy,zc umem=1G" >"$TMP/broker.conf"
ip netns exec "$B" "$PKTMAP" broker --socket "$TMP/broker.sock" \
	--policy "$TMP/broker.conf" 2>"$TMP/broker.log" &
for _ in $(seq 100); do [ -S "$TMP/broker.sock" ] && break; sleep 0.1; done

# one RUN: packets nobody's or root's recv got in SECS seconds of gen
one() {
	local who=$1 pid
	if [ "$who" = root ]; then
		ip netns exec "$B" taskset -c 1 "$PKTMAP" recv \
			-i "xdp:vethB-0@conf:broker=no" -T 0 -q --json >"$TMP/r.json" &
	else
		ip netns exec "$B" taskset -c 1 "${NOBODY[@]}" "$TMP/stage/apps/pktmap" \
			recv -i "xdp:vethB-0@conf:broker=$TMP/broker.sock" -T 0 -q --json \
			>"$TMP/r.json" &
	fi
	pid=$!
	for _ in $(seq 100); do
		ip -n "$B" link show vethB | grep -q prog/xdp && break
		sleep 0.05
	done
	timeout -s INT "$SECS" ip netns exec "$A" taskset -c 0 "$PKTMAP" gen \
		-i xdp:vethA-0 -l "$SIZE" -T 0 -q >/dev/null 2>&1 || true
	sleep 0.5
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' \
		"$TMP/r.json" 2>/dev/null || echo 0
}

root_runs=() nobody_runs=()
for _ in $(seq "$RUNS"); do
	root_runs+=("$(one root)")
	nobody_runs+=("$(one nobody)")
done
# cold: each grant loads and attaches the XDP program (no other user)
ip netns exec "$B" "${NOBODY[@]}" /usr/bin/python3 "$TMP/stage/broker_grant.py" \
	"$TMP/broker.sock" vethB "$GRANTS" >"$TMP/grants.json"
# warm: a receiver on queue 1 holds the program, each grant joins it
ip netns exec "$B" "${NOBODY[@]}" "$TMP/stage/apps/pktmap" recv \
	-i "xdp:vethB-1@conf:broker=$TMP/broker.sock" -T 0 -q >/dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do
	grep -q "steer .* xdp:vethB-1 " "$TMP/broker.log" && break
	sleep 0.1
done
ip netns exec "$B" "${NOBODY[@]}" /usr/bin/python3 "$TMP/stage/broker_grant.py" \
	"$TMP/broker.sock" vethB "$GRANTS" >"$TMP/grants_warm.json"
kill -INT "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true

python3 - "$OUT" "$SECS" "$TMP/grants.json" "$TMP/grants_warm.json" \
	"${root_runs[*]}" "${nobody_runs[*]}" <<'PY'
import json, statistics, sys, time
out, secs, grants = sys.argv[1], float(sys.argv[2]), json.load(open(sys.argv[3]))
warm = json.load(open(sys.argv[4]))
root = [int(x) / secs for x in sys.argv[5].split()]
nobody = [int(x) / secs for x in sys.argv[6].split()]
ratio = statistics.median(nobody) / statistics.median(root) if statistics.median(root) else 0
d = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "secs": secs,
     "root_pps": root, "nobody_pps": nobody, "ratio": round(ratio, 4),
     "grants": grants, "grants_warm": warm}
json.dump(d, open(out, "w"), indent=1)
print("rate: nobody %.0f kpps / root %.0f kpps = %.3f (target >= 0.95)" %
      (statistics.median(nobody) / 1e3, statistics.median(root) / 1e3, ratio))
print("grant, program loaded: median %.2f ms, max %.2f ms over %d (target <= 10 ms)" %
      (grants["median_ms"], grants["max_ms"], grants["count"]))
print("grant, program joined: median %.2f ms, max %.2f ms over %d (target <= 10 ms)" %
      (warm["median_ms"], warm["max_ms"], warm["count"]))
PY
