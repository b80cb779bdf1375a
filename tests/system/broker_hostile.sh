#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Hostile clients of pktmap broker (docs/broker.md) harm no other client:
# tests/system/broker_hostile.py's steps, each refused in one line with the
# connection or the broker going on:
#   malformed requests, 600-byte and 64 KiB messages, every field out of
#   range; descriptor floods (200 in one message); a pipe or a too small
#   memfd as the region; 70 grants on one connection (64 kept); an attach
#   never granted; ns=1 with a descriptor that is no namespace; a client
#   that never reads its answers; and 1000 connections of one user held
#   open (uid 4242: the broker keeps 64 of them).
# Meanwhile and after, nobody's recv on xdp:vethB-0 through the broker
# gets every frame, and the broker holds no descriptor a hostile client
# gave it (its /proc/PID/fd count is back where it was).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
need_cmd /usr/bin/python3
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
stage_for_others

N=${N:-20000}
RATE=${RATE:-100000}
A=pmhA$$
B=pmhB$$
ns_pair "$A" "$B"
SD=$(mktemp -d /tmp/pktmap-broker.XXXXXX)
chmod 755 "$SD"
at_exit rm -rf "$SD"
cp "$(dirname "$0")/broker_hostile.py" "$SD/"
chmod 644 "$SD/broker_hostile.py"
SOCK=$SD/broker.sock
cat >"$SD/broker.conf" <<EOT
allow user:nobody xdp:vethB queues=0 modes=copy umem=64M
allow user:nobody pkt:vethB dir=rx
EOT
LOG=$TMP/broker.log
BG_TIMEOUT=600 bg ip netns exec "$B" "$PKTMAP" broker --socket "$SOCK" \
	--policy "$SD/broker.conf" 2>"$LOG"
wait_for "$LOG" "listening on $SOCK"
BPID=$(sed -nE 's/.*listening on .* pid ([0-9]+)$/\1/p' "$LOG")
fds() { find "/proc/$BPID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
base=$(fds)

# as UID CMD...: CMD in B as uid UID (nobody: 65534), its own gid
as() {
	local who=$1
	shift
	ip netns exec "$B" setpriv --reuid="$who" --regid="$who" --clear-groups "$@"
}
hostile() { as "$1" /usr/bin/python3 "$SD/broker_hostile.py" "$SOCK" "${@:2}"; }
# good: nobody's recv through the broker gets every frame
good() {
	local out=$1
	bg ip netns exec "$B" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"${OTHER_ENV[@]}" "$OTHER_PKTMAP" recv -i "xdp:vethB-0@conf:broker=$SOCK" \
		-n "$N" --idle 5 -T 0 -q --json >"$out"
	local r=$BG_PID n
	n=$(grep -c "steer uid 65534" "$LOG" || true)
	until [ "$(grep -c "steer uid 65534" "$LOG" || true)" -gt "$n" ]; do
		kill -0 "$r" 2>/dev/null || fail "recv ended before its queue was steered"
		sleep 0.1
	done
	inA "$PKTMAP" gen -i pkt:vethA -n "$N" -R "$RATE" -T 0 -q
	wait_bg "$r"
	expect_eq "recv status" "$WAIT_RC" 0
	expect_eq "recv: packets, gaps, bad" "$(json "$out" packets) \
$(json "$out" gaps) $(json "$out" bad)" "$N 0 0"
}

for step in garbage fds region grants attach netns deaf; do
	echo "== $step"
	hostile 65534 "$step" | sed 's/^/   /'
	expect_eq "$step: status" "${PIPESTATUS[0]}" 0
	kill -0 "$BPID" || fail "the broker died at $step"
done

echo "== flood: 1000 connections of uid 4242, nobody served meanwhile"
mkfifo "$TMP/hold"
as 4242 /usr/bin/python3 "$SD/broker_hostile.py" "$SOCK" flood 1000 \
	<"$TMP/hold" >"$TMP/flood.out" &
F=$!
BG_PIDS+=("$F")
exec 9>"$TMP/hold"
wait_for "$TMP/flood.out" "^flood: "
sed 's/^/   /' "$TMP/flood.out"
expect_eq "connections kept" "$(sed -nE 's/^flood: ([0-9]+) kept.*/\1/p' "$TMP/flood.out")" 64
good "$TMP/r1.json"
exec 9>&-
wait_bg "$F"
expect_eq "flood: status" "$WAIT_RC" 0

echo "== after it all: nobody served, no descriptor kept"
good "$TMP/r2.json"
# (the broker frees a grant when it reads the connection's end: wait)
for _ in $(seq 100); do [ "$(fds)" -le "$base" ] && break; sleep 0.1; done
expect_eq "the broker's descriptors" "$(fds)" "$base"
kill -0 "$BPID" || fail "the broker died"
echo "PASS"
