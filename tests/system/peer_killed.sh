#!/usr/bin/env bash
# A peer killed with SIGKILL: the other end keeps running, a new peer
# takes over the same end and carries on where the dead one stopped, and
# the region the dead process left behind is found by `pktmap ports` and
# removed by `pktmap ports --gc` once nobody holds it.
#
#   gen (killed) --pipe:tPID{0--> recv (keeps running, -n 300000)
#   gen (second) ----------------/
set -euo pipefail
. "$(dirname "$0")/lib.sh"

p="pipe:${PIPE}k"
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$p}0" -n 300000 --json -T 0 -q
recv_pid=$BG_PID
# The first generator runs until killed: 100000 frames then an endless
# trickle, so the kill lands while it is sending.
"$PKTMAP" gen -i "$p{0" -n 100000 -T 0 -q
"$PKTMAP" gen -i "$p{0" -R 1000 -T 0 -q &
victim=$!
sleep 0.3
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
kill -0 "$recv_pid" || fail "the receiver died with its peer"
# A new generator opens the same end at once: the claim died with the
# victim. recv counts by sequence per stream, so gaps are expected here
# (the new generator starts again at 0): only the count matters.
"$PKTMAP" gen -i "$p{0" -n 200000 -T 0 -q
wait_bg "$recv_pid"
expect_eq "recv exit" "$WAIT_RC" 0

# A region left by a killed process: listed as unused, then removed.
"$PKTMAP" recv -i "pipe:${PIPE}gc}0" -q &
holder=$!
sleep 0.3
"$PKTMAP" ports | grep -q "pipe.${PIPE}gc .*in use" || fail "region not listed in use"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
"$PKTMAP" ports | grep -q "pipe.${PIPE}gc .*unused" || fail "stale region not listed"
"$PKTMAP" ports --gc | grep -q "pipe.${PIPE}gc .*removed" || fail "stale region not removed"
[ ! -e "/dev/shm/pktmap.pipe.${PIPE}gc" ] || fail "region file still there"
ls /dev/shm | grep -q "pktmap.pipe.${PIPE}gc\." && fail "companion files left"
echo "peer_killed: ok"
