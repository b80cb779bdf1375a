#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A peer killed with SIGKILL: the other end keeps running, a new peer
# takes over the same end and carries on where the dead one stopped, and
# the region the dead process left behind is found by `pktmap ports` and
# removed by `pktmap ports --gc` once nobody holds it, or, when it was
# root's, by its cleaner.
#
#   gen (killed) --pipe:tPID{0--> recv (keeps running, -n 300000)
#   gen (second) ----------------/
set -euo pipefail
. "$(dirname "$0")/lib.sh"

p="pipe:${PIPE}k"
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$p}0" -n 300000 --json -T 0 -q >"$TMP/recv.json"
recv_pid=$BG_PID
# The first generator runs until killed: 100000 frames then an endless
# trickle, so the kill lands while it is sending (once its first report
# line says it is).
"$PKTMAP" gen -i "$p{0" -n 100000 -T 0 -q
"$PKTMAP" gen -i "$p{0" -R 1000 -T 0.05 >"$TMP/victim.out" &
victim=$!
wait_for "$TMP/victim.out" '^gen '
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
kill -0 "$recv_pid" || fail "the receiver died with its peer"
# A new generator opens the same end at once: the claim died with the
# victim. What the victim had published is delivered, then the new
# generator's frames (its sequence starts again at 0: counted as
# reordered, never as gaps or damage); recv ends at exactly its count.
"$PKTMAP" gen -i "$p{0" -n 200000 -T 0 -q
wait_bg "$recv_pid"
expect_eq "recv exit" "$WAIT_RC" 0
expect_eq "frames received" "$(json "$TMP/recv.json" packets)" 300000
expect_eq "frames lost in a stream" "$(json "$TMP/recv.json" gaps)" 0
expect_eq "damaged frames" "$(json "$TMP/recv.json" bad)" 0
expect_eq "slots refused" "$(json "$TMP/recv.json" drop_invalid)" 0
# The new generator carried on: 300000 frames can only be reached with
# the victim's (a few hundred at most: 1000 per second) and almost all of
# the new generator's.

# A region left by a killed process: listed as unused, then removed. A
# process that could change its uid (root) leaves a cleaner that removes
# its files itself (below): this holder has no capabilities, so none.
NOCAPS=()
if [ "$(id -u)" = 0 ]; then
	need_cmd setpriv
	NOCAPS=(setpriv --bounding-set=-all --inh-caps=-all)
fi
"${NOCAPS[@]}" "$PKTMAP" recv -i "pipe:${PIPE}gc}0" -q &
holder=$!
in_use() { "$PKTMAP" ports | grep -q "pipe.${PIPE}$1 .*in use"; }
for _ in $(seq 300); do in_use gc && break; sleep 0.1; done
in_use gc || fail "region not listed in use"
# A region left by a killed process: listed as unused, then removed.
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
"$PKTMAP" ports | grep -q "pipe.${PIPE}gc .*unused" || fail "stale region not listed"
"$PKTMAP" ports --gc | grep -q "pipe.${PIPE}gc .*removed" || fail "stale region not removed"
[ ! -e "/dev/shm/pktmap-$(id -u)/pipe.${PIPE}gc" ] || fail "region file still there"
refute "companion files left" "pipe\.${PIPE}gc\." find /dev/shm -maxdepth 2 -name "pipe.${PIPE}gc.*"

# Root's process killed with SIGKILL: its cleaner removes the region once
# nobody holds it, with no --gc (docs/design.md, "Trust model").
if [ "$(id -u)" = 0 ]; then
	U=/dev/shm/pktmap-0
	"$PKTMAP" recv -i "pipe:${PIPE}cl}0" -q &
	holder=$!
	for _ in $(seq 300); do in_use cl && break; sleep 0.1; done
	in_use cl || fail "region cl not listed in use"
	kill -9 "$holder"
	wait "$holder" 2>/dev/null || true
	for _ in $(seq 300); do [ -e "$U/pipe.${PIPE}cl" ] || break; sleep 0.1; done
	[ ! -e "$U/pipe.${PIPE}cl" ] || fail "the killed process's cleaner left its region"
	refute "companion files of cl left" "pipe\.${PIPE}cl\." find /dev/shm -maxdepth 2 -name "pipe.${PIPE}cl.*"
fi
echo "peer_killed: ok"
