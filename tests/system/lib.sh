# SPDX-License-Identifier: BSD-2-Clause
#
# Helpers for the system tests; source it after `set -euo pipefail`.
#
#   fail MSG        print "FAIL: MSG" and exit 1
#   skip MSG        exit 77 ("skipped"); under CI=true exit 1 instead: CI
#                   runs as root with every tool a test needs installed
#   need_root       skip unless running as root
#   need_cmd CMD    skip unless CMD is installed
#   bg CMD...       start CMD in the background (under timeout); its PID is
#                   killed at exit; wait_bg PID waits for it
#   stop_bg PID     Ctrl-C (SIGINT) to the command bg started, once
#   wait_for FILE RE wait until a line of FILE matches RE
#   json FILE KEY   a top-level number or string of a JSON summary
#   expect_eq WHAT GOT WANT
#   wait_output WANT CMD...  wait until CMD prints WANT (then assert it)
#   switch_wait_ports SWITCH PORT...  wait until `pktmap switch --list
#                   SWITCH` lists every PORT
#
# Everything a test makes lives in $TMP (removed at exit), and the pipes it
# names carry $$ so that concurrent runs never meet; their leftovers in
# /dev/shm are removed at exit too (pipe names must start with $PIPE).

: "${PKTMAP:?PKTMAP must name the pktmap binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pktmap-test.XXXXXX")
PIPE="t$$"
BG_PIDS=()

cleanup() {
	local rc=$?
	set +e
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${BG_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	rm -rf "$TMP"
	rm -f /dev/shm/pktmap.pipe."$PIPE"*
	exit "$rc"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $* (CI may not skip)" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

need_cmd() {
	command -v "$1" >/dev/null 2>&1 || skip "needs $1"
}

# Start a command in the background, bounded by `timeout` (BG_TIMEOUT
# seconds, default 60), and remember its PID for cleanup. The PID is left
# in BG_PID.
bg() {
	timeout "${BG_TIMEOUT:-60}" "$@" &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# json FILE KEY: a top-level field of a pktmap --json summary (the fields
# before "threads", which repeats the keys per thread).
json() {
	local s
	s=$(cat "$1")
	s=${s%%,\"threads\":*}
	s=$(printf '%s' "$s" | grep -o "\"$2\":[^,}]*" | head -n 1)
	[ -n "$s" ] || fail "$1: no key $2 in: $(cat "$1")"
	s=${s#*:}
	s=${s#\"}
	printf '%s\n' "${s%\"}"
}

expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got $2, want $3"
}

# Wait for background PID $1 (started with bg, so bounded by its timeout);
# its exit status is left in WAIT_RC.
wait_bg() {
	WAIT_RC=0
	wait "$1" || WAIT_RC=$?
}

# wait_for FILE PATTERN [SECONDS]: wait until a line of FILE matches the
# extended regular expression PATTERN (default: up to 30 s).
wait_for() {
	local t=$(( ${3:-30} * 10 ))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		[ "$t" -gt 0 ] || fail "no line matching '$2' in $1 after ${3:-30} s"
		sleep 0.1
		t=$((t - 1))
	done
}

# switch_wait_ports SWITCH PORT...: wait until `pktmap switch --list SWITCH`
# lists every PORT (the last listing stays in $TMP/list).
switch_wait_ports() {
	local s=$1 p ok _
	shift
	for _ in $(seq 300); do
		"$PKTMAP" switch --list "$s" >"$TMP/list" 2>/dev/null || true
		ok=1
		for p in "$@"; do
			grep -q "^$p " "$TMP/list" || ok=0
		done
		[ "$ok" = 1 ] && return 0
		sleep 0.1
	done
	fail "ports $* not attached: $(cat "$TMP/list")"
}

# wait_output WANT CMD...: wait (up to 30 s) until CMD's output is WANT;
# returns 0 either way: the caller asserts the value with expect_eq.
wait_output() {
	local want=$1 _
	shift
	for _ in $(seq 300); do
		[ "$("$@")" = "$want" ] && return 0
		sleep 0.1
	done
	return 0
}

# stop_bg PID: SIGINT to the command that bg started as PID (timeout's
# pid), and to it alone: timeout would pass a signal on to its whole
# process group as well, and a second Ctrl-C makes pktmap's commands quit
# at once, without their summary.
stop_bg() {
	local child
	child=$(pgrep -P "$1" | head -n 1)
	[ -n "$child" ] || fail "no process under $1"
	kill -INT "$child"
}
