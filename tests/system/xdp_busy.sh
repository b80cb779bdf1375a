#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A second opener of a busy xdp: queue honours Ctrl-C: the open waits
# (up to 5 s) for a queue a socket just closed may still hold, and a
# SIGINT during that wait ends it at once, with one line saying so,
# instead of being ignored until the wait is over.
#
#   netns pmbA$$
#   +-------------------------------------------+
#   | recv -i xdp:vethA       (holds queue 0)    |
#   | recv -i xdp:vethA  <-- SIGINT while it     |
#   |                        waits for queue 0   |
#   +-------------------------------------------+
#
# Needs root; under CI=true it may not skip.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root
need_cmd ip

ns_pair "pmbA$$" "pmbB$$"
at_exit no_leftovers

bound() { inA ip link show dev vethA | grep -q prog/xdp; }

for cmd in recv gen; do
	echo "$cmd: a second opener of xdp:vethA, interrupted"
	BG_TIMEOUT=60 bg ip netns exec "$NS_A" "$PKTMAP" recv -i xdp:vethA -T 0 -q
	first=$BG_PID
	for _ in $(seq 300); do bound && break; sleep 0.1; done
	bound || fail "the first recv did not open xdp:vethA"

	# -v: the library says when it starts to wait (the signal is sent
	# only then: no guessing how long the open takes).
	BG_TIMEOUT=60 bg ip netns exec "$NS_A" "$PKTMAP" "$cmd" -v -i xdp:vethA -T 0 -q \
		2>"$TMP/second.err"
	second=$BG_PID
	wait_for "$TMP/second.err" "xdp:vethA: queue 0 is busy: waiting"
	stop_bg "$second"
	wait_bg "$second"
	expect_eq "$cmd: the interrupted open's exit status" "$WAIT_RC" 1
	grep -q "^pktmap: xdp:vethA: queue 0 of vethA is busy .*interrupted while waiting for it$" \
		"$TMP/second.err" || fail "$cmd: no line saying it was interrupted: $(cat "$TMP/second.err")"
	echo "  [$WAIT_RC] $(tail -n 1 "$TMP/second.err")"

	# The first one is untouched and ends on its own Ctrl-C.
	stop_bg "$first"
	wait_bg "$first"
	expect_eq "$cmd: the first recv's exit status" "$WAIT_RC" 0
	for _ in $(seq 300); do bound || break; sleep 0.1; done
	bound && fail "XDP program left on vethA"
done
echo "PASS"
