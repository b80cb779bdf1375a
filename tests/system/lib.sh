# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Helpers for the system tests; source it after `set -euo pipefail`.
#
#   fail MSG        print "FAIL: MSG" and exit 1
#   skip MSG        exit 77 ("skipped"); under CI=true exit 1 instead: CI
#                   runs as root with every tool a test needs installed
#   need_root       skip unless running as root
#   expect_err TEXT CMD...  CMD fails with one line of output containing TEXT
#   need_cmd CMD    skip unless CMD is installed
#   at_exit CMD...  run CMD at exit (after bg's commands are stopped; the
#                   last one added runs first); the exit status is kept
#   ns_pair NS_A NS_B [IF_A IF_B]  namespaces (deleted at exit) joined by
#                   a veth pair (vethA-vethB);
#                   inA/inB CMD... run CMD in them; no_leftovers fails when
#                   an XDP program stays on their links. netns_* of
#                   scripts/netns.sh are there too.
#   bg CMD...       start CMD in the background (under timeout); its PID is
#                   killed at exit; wait_bg PID waits for it
#   stop_bg PID...  Ctrl-C (SIGINT) to each command bg started, once
#   wait_for FILE RE wait until a line of FILE matches RE
#   json FILE KEY   a top-level number or string of a JSON summary
#   expect_eq WHAT GOT WANT
#   refute WHAT RE CMD...  fail unless CMD succeeds and prints no line
#                   matching RE (not `CMD | grep -q RE && fail`, which
#                   passes when CMD fails)
#   drops_ok WHAT DROPS TOTAL  fail when the kernel counted more than
#                   MAX_DROP_PCT (default 5) percent of TOTAL as dropped
#   wait_output WANT CMD...  wait until CMD prints WANT (then assert it)
#   switch_wait_ports SWITCH PORT...  wait until `pktmap switch --list
#                   SWITCH` lists every PORT
#   stage_for_others  copy pktmap and its libraries where any user can
#                   read them: run "${OTHER_ENV[@]}" "$OTHER_PKTMAP" ...
#
# Everything a test makes lives in $TMP (removed at exit), and the pipes it
# names carry $$ so that concurrent runs never meet; their leftovers in
# /dev/shm are removed at exit too (pipe and region names must start with
# $PIPE).

: "${PKTMAP:?PKTMAP must name the pktmap binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pktmap-test.XXXXXX")
# (a letter after the PID: run 123's glob t123p* cannot match run 1234's)
PIPE="t$$p"
BG_PIDS=()
AT_EXIT=()

# shellcheck source=../../scripts/netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/netns.sh"

cleanup() {
	local rc=$? i d
	set +e
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${BG_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	for ((i = ${#AT_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${AT_EXIT[i]}"
	done
	rm -rf "$TMP"
	[ -z "${STAGE:-}" ] || rm -rf "$STAGE"
	d=/dev/shm/pktmap-$(id -u)
	rm -f "$d"/pipe."$PIPE"* "$d"/.pipe."$PIPE"* "$d"/"$PIPE"*
	exit "$rc"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# at_exit CMD...: run CMD (its words as they are now) at exit, after the
# commands bg started are stopped and before $TMP goes; the last one
# added runs first. For what is known only later, give a function.
at_exit() {
	AT_EXIT+=("$(printf '%q ' "$@")")
}

# ns_pair NS_A NS_B [IF_A IF_B]: the namespaces (named with $$ by the
# caller), deleted at exit, joined by a veth pair: IF_A (default vethA) in
# NS_A, IF_B (vethB) in NS_B, both up.
ns_pair() {
	NS_A=$1
	NS_B=$2
	at_exit netns_del "$1" "$2"
	netns_new "$1" "$2"
	netns_veth "$1" "${3:-vethA}" "$2" "${4:-vethB}"
}

# inA/inB CMD...: CMD in ns_pair's first or second namespace.
inA() { ip netns exec "$NS_A" "$@"; }
inB() { ip netns exec "$NS_B" "$@"; }

# no_leftovers: fail when an XDP program stays on a link of ns_pair's
# namespaces.
no_leftovers() {
	local l
	l=$(netns_xdp_gone "$NS_A" "$NS_B") || fail "XDP program left behind: $l"
}

# xdp_prog NS IF: "NAME ID" of the XDP program attached to IF in NS, or
# nothing when none is.
xdp_prog() {
	ip -n "$1" -d link show dev "$2" |
		sed -nE 's/.*prog\/xdp id ([0-9]+) name ([^ ]+).*/\2 \1/p'
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

# expect_err TEXT CMD...: CMD must fail, printing one line (stdout and
# stderr) that contains TEXT.
expect_err() {
	local want=$1 msg
	shift
	if msg=$("$@" 2>&1); then
		fail "no error from: $*"
	fi
	echo "   $msg"
	[ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "not one line: $msg"
	printf '%s\n' "$msg" | grep -qF -- "$want" || fail "message: $msg"
}

# Start a command in the background, bounded by `timeout` (BG_TIMEOUT
# seconds, default 60), and remember its PID for cleanup. The PID is left
# in BG_PID.
bg() {
	timeout "${BG_TIMEOUT:-60}" "$@" &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# ports_named NAME: how many open ports `pktmap top` lists as NAME.
ports_named() {
	"$PKTMAP" top --once -d 0 --json | python3 -c 'import json,sys
print(sum(1 for p in json.load(sys.stdin)["ports"] if p["port"] == sys.argv[1]))' "$1"
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

# refute WHAT RE CMD...: CMD must succeed and print no line matching the
# extended regular expression RE. A failing CMD is a failure: under
# pipefail `CMD | grep -q RE && fail` passes when CMD fails.
refute() {
	local what=$1 re=$2 out
	shift 2
	out=$("$@") || fail "$what: $* failed"
	if grep -Eq -- "$re" <<<"$out"; then
		fail "$what: $(grep -E -- "$re" <<<"$out" | head -n 3)"
	fi
	return 0
}

# drops_ok WHAT DROPS TOTAL: a receiver starved of CPU (the suite must pass
# beside two busy loops) lets a socket's ring fill, and the kernel drops
# and counts frames. At the tests' rates that stays a small share: more
# than MAX_DROP_PCT percent (default 5) of TOTAL is a failure, so that a
# path dropping everything (and counting it) cannot pass.
drops_ok() {
	local max=${MAX_DROP_PCT:-5}
	[ $(($2 * 100)) -le $((max * $3)) ] ||
		fail "$1: $2 of $3 frames dropped (counted), more than $max%"
}

# Wait for background PID $1 (started with bg, so bounded by its timeout);
# its exit status is left in WAIT_RC.
# shellcheck disable=SC2034 # WAIT_RC is read by the tests that source this file
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

# stage_for_others: steps run as another user (nobody) cannot load the
# build tree's libraries when the checkout is under a 0700 home (root's),
# so copy the pktmap binary and the libraries it loads, in the build
# tree's layout (its RUNPATH is $ORIGIN/..), into a 0755 directory under
# /tmp, removed at exit. OTHER_PKTMAP is the copy of $PKTMAP; OTHER_ENV
# (an env(1) command line) points the variables meson sets for the test
# (LD_LIBRARY_PATH, PKTMAP_PCAP_LIBDIR) at the copy too.
# shellcheck disable=SC2034 # OTHER_* are read by the tests that source this file
stage_for_others() {
	local bld f
	bld=$(cd "$(dirname "$PKTMAP")/.." && pwd)
	STAGE=$(mktemp -d /tmp/pktmap-stage.XXXXXX)
	mkdir -p "$STAGE/apps" "$STAGE/compat/pcap"
	cp "$PKTMAP" "$STAGE/apps/pktmap"
	cp -L "$bld/libpktmap.so.0" "$STAGE/"
	for f in libpcap.so.0.8 libpktmap-pcap-preload.so; do
		[ ! -e "$bld/compat/pcap/$f" ] || cp -L "$bld/compat/pcap/$f" "$STAGE/compat/pcap/"
	done
	chmod -R a+rX "$STAGE"
	OTHER_PKTMAP=$STAGE/apps/pktmap
	OTHER_ENV=(env LD_LIBRARY_PATH="$STAGE" PKTMAP_PCAP_LIBDIR="$STAGE/compat/pcap")
}

# stop_bg PID...: SIGINT to each command that bg started as PID (timeout's
# pid), and to it alone: timeout would pass a signal on to its whole
# process group as well, and a second Ctrl-C makes pktmap's commands quit
# at once, without their summary.
stop_bg() {
	local pid child
	for pid in "$@"; do
		child=$(pgrep -P "$pid" | head -n 1)
		[ -n "$child" ] || fail "no process under $pid"
		kill -INT "$child"
	done
}
