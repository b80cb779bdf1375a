#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap broker's two targets (issue 33, docs/broker.md):
#   1. an unprivileged receiver's rate on a broker-opened xdp: port is at
#      least 0.95x root's on the same port, in the same run: recv on
#      xdp:vethB-0 (CPU 1) while `pktmap gen -i xdp:vethA-0` (CPU 0) sends
#      as fast as it can for SECS seconds; root's recv (@conf:broker=no)
#      and nobody's (through the broker) interleaved, RUNS runs each;
#   2. a grant takes at most 10 ms: grants (xsk + attach) timed by a
#      client running as nobody (bench/broker_grant.py), apart:
#      - the first grant on a pre-attached interface: FIRST veths pbpN
#        the policy names, made before the broker starts (it attaches
#        the XDP program to each at start), one grant each;
#      - the first grant on a cold interface: FIRST veths pbcN made after
#        the broker started, named by a prefix rule (xdp:pbc*): each
#        first grant attaches the program (the slow path), one grant each;
#      - GRANTS grants one after the other on vethB (pre-attached);
#      - the pre-attached veths again, each grant asked right after the
#        previous client left (the broker closes a departed client's
#        socket aside: its release does not hold up the next grant).
#
#   netns pbA$$                          netns pbB$$ (broker)
#   [ gen, CPU 0 ] vethA-0 == vethB-0 [ recv: root / nobody, CPU 1 ]
#                                     pbp1..pbpFIRST, pbc1..pbcFIRST
#
# Output: broker.json in bench/results/, and one line per target.
# Usage: bench/broker.sh [--quick] [PKTMAP]   (env: RUNS=3 SECS=5 GRANTS=100 FIRST=10 SIZE=60)
# A check that it works: RUNS=1 SECS=1 GRANTS=3 FIRST=2 bench/broker.sh
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/bench/lib.sh"
# --quick (as bench/run passes it): one short run, a few grants.
if [ "${1:-}" = --quick ]; then
	shift
	RUNS=${RUNS:-1} SECS=${SECS:-2} GRANTS=${GRANTS:-10} FIRST=${FIRST:-3}
fi
PKTMAP=${1:-${PKTMAP:-$ROOT/build/apps/pktmap}}
RUNS=${RUNS:-3}
SECS=${SECS:-5}
GRANTS=${GRANTS:-100}
FIRST=${FIRST:-10}
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
# a veth pair in B, both ends up: IF and its peer PEER
veth_in_b() {
	ip -n "$B" link add "$1" type veth peer name "$2"
	ip -n "$B" link set "$1" up
	ip -n "$B" link set "$2" up
}
pre=() cold=()
{
	echo "allow user:nobody xdp:vethB modes=copy,zc umem=1G"
	echo "allow user:nobody xdp:pbc* queues=0 modes=copy umem=1G"
	for i in $(seq "$FIRST"); do
		veth_in_b "pbp$i" "pbq$i"
		pre+=("pbp$i")
		cold+=("pbc$i")
		echo "allow user:nobody xdp:pbp$i queues=0 modes=copy umem=1G"
	done
} >"$TMP/broker.conf"
ip netns exec "$B" "$PKTMAP" broker --socket "$TMP/broker.sock" \
	--policy "$TMP/broker.conf" 2>"$TMP/broker.log" &
# (listening: the XDP program is on vethB and every pbpN)
for _ in $(seq 300); do grep -q "listening on" "$TMP/broker.log" && break; sleep 0.1; done

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
	# (the program is on vethB from the broker's start: wait for the port
	# itself, open once its counters are published)
	for _ in $(seq 100); do
		"$PKTMAP" top --once -d 0 --json 2>/dev/null | python3 -c 'import json, sys
sys.exit(not any(p["pid"] == int(sys.argv[1]) for p in json.load(sys.stdin)["ports"]))' \
			"$pid" && break
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
grants() { # IFACES COUNT OUT [nowait]: broker_grant.py as nobody
	ip netns exec "$B" "${NOBODY[@]}" /usr/bin/python3 "$TMP/stage/broker_grant.py" \
		"$TMP/broker.sock" "$1" "$2" ${4:+"$4"} >"$3"
}
# first grants on pre-attached interfaces (attached at the broker's start)
pre_list=$(IFS=,; echo "${pre[*]}")
grants "$pre_list" 1 "$TMP/first_pre.json"
# first grants on cold interfaces: made now, each first grant attaches
for i in $(seq "$FIRST"); do veth_in_b "pbc$i" "pbd$i"; done
cold_list=$(IFS=,; echo "${cold[*]}")
grants "$cold_list" 1 "$TMP/first_cold.json"
# one grant after the other on vethB (pre-attached)
grants vethB "$GRANTS" "$TMP/grants.json"
# right after another client left, on another interface
grants "$pre_list" 1 "$TMP/after_leave.json" nowait

python3 - "$OUT" "$SECS" "$TMP/first_pre.json" "$TMP/first_cold.json" \
	"$TMP/grants.json" "$TMP/after_leave.json" "${root_runs[*]}" \
	"${nobody_runs[*]}" <<'PY'
import json, statistics, sys, time
out, secs = sys.argv[1], float(sys.argv[2])
pre, cold, grants, after = (json.load(open(f)) for f in sys.argv[3:7])
root = [int(x) / secs for x in sys.argv[7].split()]
nobody = [int(x) / secs for x in sys.argv[8].split()]
ratio = statistics.median(nobody) / statistics.median(root) if statistics.median(root) else 0
d = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "secs": secs,
     "root_pps": root, "nobody_pps": nobody, "ratio": round(ratio, 4),
     "first_grant_preattached": pre, "first_grant_cold": cold,
     "grants": grants, "grant_after_leave": after}
json.dump(d, open(out, "w"), indent=1)
print("rate: nobody %.0f kpps / root %.0f kpps = %.3f (target >= 0.95)" %
      (statistics.median(nobody) / 1e3, statistics.median(root) / 1e3, ratio))
for what, g in (("first grant, pre-attached", pre),
                ("first grant, cold (attaches)", cold),
                ("grant, pre-attached, repeated", grants),
                ("grant right after another client left", after)):
    print("%s: median %.2f ms, max %.2f ms over %d (target <= 10 ms)" %
          (what, g["median_ms"], g["max_ms"], g["count"]))
PY
