#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Bounds before allocation (issue 17): an open whose @conf: values are
# each in range but together ask for more memory than there is is refused
# with one line saying how much was asked and how much fits, before
# anything is mapped. Run inside a memory cgroup this test creates (128
# MiB), so that a regression is an OOM kill of the test's process (caught
# here as a signal exit), not of the machine. After every failing open,
# nothing is left in /dev/shm or the per-user directory.
#
#   cgroup (128 MiB) { pktmap recv -i 'pipe:X}0@conf:rings=8,slots=16384' }
#       -> "needs 1.0 GiB of memory but N MiB fit (the memory cgroup's limit)"
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

UDIR="/dev/shm/pktmap-$(id -u)"
CG=""
cleanup_cg() {
	[ -n "$CG" ] || return 0
	# Move ourselves out, then remove the group.
	echo $$ >"$(dirname "$CG")/cgroup.procs" 2>/dev/null || true
	rmdir "$CG" 2>/dev/null || true
}
at_exit cleanup_cg

# A memory cgroup of our own: v2 at /sys/fs/cgroup when it has the memory
# controller, else v1's memory hierarchy.
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	CG="/sys/fs/cgroup/pktmap-bounds-$$"
	mkdir "$CG"
	echo $((128 << 20)) >"$CG/memory.max"
	echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
elif [ -d /sys/fs/cgroup/memory ]; then
	CG="/sys/fs/cgroup/memory/pktmap-bounds-$$"
	mkdir "$CG"
	echo $((128 << 20)) >"$CG/memory.limit_in_bytes"
else
	skip "no memory cgroup (v2 with the memory controller, or v1)"
fi

# in_cg CMD...: run CMD inside the cgroup; its exit status in RC, its
# stderr in $TMP/err.
in_cg() {
	RC=0
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
		timeout 60 "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || RC=$?
}

# nothing_left WHAT: no file of this test's pipes in /dev/shm or $UDIR.
nothing_left() {
	local l
	l=$(ls -d /dev/shm/pktmap.pipe."$PIPE"* /dev/shm/pktmap-g*/pipe."$PIPE"* \
		"$UDIR"/pipe."$PIPE"* 2>/dev/null || true)
	[ -z "$l" ] || fail "$1: left behind: $l"
}

# refused WHAT PATTERN: the open failed with one line matching PATTERN,
# was not killed, and left nothing.
refused() {
	[ "$RC" -ne 0 ] || fail "$1: accepted"
	[ "$RC" -lt 124 ] || fail "$1: exit status $RC (killed: OOM?): $(cat "$TMP/err")"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$1: not one line: $(cat "$TMP/err")"
	grep -q "$2" "$TMP/err" || fail "$1: $(cat "$TMP/err")"
	nothing_left "$1"
	echo "  $1: $(cat "$TMP/err")"
}

echo "1. too much for the cgroup: refused before anything is mapped"
in_cg "$PKTMAP" recv -i "pipe:${PIPE}a}0@conf:rings=8,slots=16384" -n 1 -T 0 -q
refused "rings=8,slots=16384" "needs 1.0 GiB of memory but .* fit (the memory cgroup's limit)"
in_cg "$PKTMAP" gen -i "pipe:${PIPE}b{0@conf:bufs=200000" -n 1 -T 0 -q
refused "bufs=200000" "needs .* of memory but .* fit (the memory cgroup's limit)"

echo "2. what fits still works in the same cgroup"
BG_TIMEOUT=60 bg sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
	"$PKTMAP" recv -i "pipe:${PIPE}c}0" -n 1000 -T 0 -q
r=$BG_PID
in_cg "$PKTMAP" gen -i "pipe:${PIPE}c{0" -n 1000 -T 0 -q
expect_eq "gen in the cgroup" "$RC" 0
wait_bg "$r"
expect_eq "recv in the cgroup" "$WAIT_RC" 0
nothing_left "a pipe that worked"

echo "3. RLIMIT_AS: named as the limit"
RC=0
(ulimit -v $((512 << 10)); exec timeout 60 "$PKTMAP" recv \
	-i "pipe:${PIPE}d}0@conf:rings=2,slots=65536" -n 1 -T 0 -q) \
	>"$TMP/out" 2>"$TMP/err" </dev/null || RC=$?
refused "ulimit -v 512M" "fit (RLIMIT_AS (ulimit -v))"

echo "4. ids refused at parse time, other failing opens leave nothing"
RC=0
timeout 30 "$PKTMAP" recv -i "pipe:${PIPE}e}0@conf:share=group:4294967295" -n 1 -T 0 -q \
	2>"$TMP/err" </dev/null || RC=$?
refused "share=group:4294967295" "not a group id"
RC=0
timeout 30 "$PKTMAP" recv -i "pipe:${PIPE}f}0-3" -n 1 -T 0 -q 2>"$TMP/err" </dev/null || RC=$?
refused "ring 3 of a one-ring pipe" "ring 3 does not exist"
RC=0
timeout 30 "$PKTMAP" recv -i "pipe:${PIPE}g}0@conf:buf-size=3000" -n 1 -T 0 -q \
	2>"$TMP/err" </dev/null || RC=$?
refused "buf-size=3000" "power of two"
echo "bounds: ok"
