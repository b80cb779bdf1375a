#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Bad command lines, bad port names and bad files: each must end with a
# one-line error "pktmap: ..." and the exit status pktmap(8) gives
# (EXIT STATUS): 2 for a usage error (found before any work: a bad,
# missing or out-of-range value, options that conflict, a name or @conf
# the library refuses, a CPU the process may not run on, a frame longer
# than the port sends), 1 for a failure at run time (a file that cannot
# be created or read, a port the system cannot give). Never a crash
# (status >= 128 means a signal, e.g. SIGSEGV or SIGABRT) and never a
# hang.
#
#   pktmap CMD <bad input>  -->  "pktmap: <what is wrong>", exit 1 or 2
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# bad WANT_STATUS CMD...: CMD fails with WANT_STATUS ("any" for 1 or 2)
# and says so in exactly one line.
bad() {
	local want=$1 rc=0 lines
	shift

	timeout 30 "$PKTMAP" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
	[ "$rc" -ne 0 ] || fail "pktmap $*: exit status 0"
	[ "$rc" -lt 124 ] || [ "$rc" = "$want" ] ||
		fail "pktmap $*: exit status $rc (crash or hang)"
	if [ "$want" != any ]; then
		[ "$rc" -eq "$want" ] || fail "pktmap $*: exit status $rc, want $want: $(cat "$TMP/err")"
	fi
	lines=$(wc -l <"$TMP/err")
	[ "$lines" -eq 1 ] || fail "pktmap $*: $lines lines on stderr: $(cat "$TMP/err")"
	grep -q '^pktmap: ' "$TMP/err" || fail "pktmap $*: not 'pktmap: ...': $(cat "$TMP/err")"
	echo "  [$rc] pktmap $*: $(cat "$TMP/err")"
}

# says WANT_STATUS TEXT CMD...: as bad, and the line contains TEXT.
says() {
	local text=$2
	bad "$1" "${@:3}"
	grep -qF -- "$text" "$TMP/err" || fail "pktmap ${*:3}: the line does not say '$text'"
}

# A CPU this process may not run on: one past the CPUs configured.
NOCPU=$(getconf _NPROCESSORS_CONF)
[ "$NOCPU" -lt 900 ] || skip "too many CPUs to name one that is not there"
NOCPU_MSG="CPU $NOCPU is not one this process may run on"
# A switch name of this run.
SW=valeb$$

echo "1. command line"
bad 2 frobnicate
bad 2 gen --no-such-option -i null:
bad 2 gen -x -i null:
bad 2 recv -i
bad 2 gen
bad 2 gen -i null: stray
bad 2 help nosuch
bad 2 gen -i null: -l 10
bad 2 gen -i null: -l 70000
bad 2 gen -i null: -l 3000          # larger than a buffer
bad 2 gen -i null: -l 1000-100
bad 2 gen -i null: -l sixty
bad 2 gen -i null: -b 0
bad 2 gen -i null: -R 5x
bad 2 gen -i null: -s 10.0.0.256
bad 2 gen -i null: -d 10.0.0.9-10.0.0.1
bad 2 gen -i null: -s 10.0.0.1:70000
bad 2 gen -i null: -S 00:11:22:33:44
bad 2 gen -i null: -p 0
bad 2 gen -i null: -p 1000
bad 2 gen -i null: -T -1
bad 2 recv -i null: --idle soon
bad 2 recv -i null: --fast --verify
bad 2 gen -i "pcap:$TMP/x.pcap" -p 2


echo "1b. every command's values, refused at parse time"
# gen
says 2 "is too small (at least 60)" gen -i null: -l 0
says 2 "not a number" gen -i null: -l -60
says 2 "is too large (at most 65536)" gen -i null: -b 65537
says 2 "is too large" gen -i null: -b 99999999999999999999999
says 2 "not a number" gen -i null: -n -1
says 2 "not a number" gen -i null: -a -1
says 2 "$NOCPU_MSG" gen -i null: -a "$NOCPU" -n 1
says 2 "$NOCPU_MSG" gen -i null: -a $((NOCPU - 1)) -p 2 -n 1
says 2 "lower than the number of threads" gen -i null: -p 4 -R 3
says 2 "not a number of seconds" gen -i null: -T nan
says 2 "not a number of seconds" gen -i null: -T 0x10
says 2 "not a number of seconds" gen -i null: -T ' 1'
says 2 "not a number of seconds" gen -i null: -w 1e400
says 2 "not a number of seconds" gen -i null: -w inf
says 2 "not an IPv4 address" gen -i null: -s 10.0.0.1:
says 2 "not an IPv4 address" gen -i null: -d ''
says 2 "not a MAC address" gen -i null: -D 00:11:22:33:44:55:66
says 2 "empty port name" gen -i ''
# a value with a newline or an escape in it: still one line
says 2 "'4?5' is not a number" gen -i null: -n $'4\n5'
says 2 "'1?[2J' is not a number of seconds" gen -i null: -T $'1\e[2J'
bad any gen -i $'pipe:x\ny{0' -n 1
bad any recv -i $'nosuch\r\n:x' -n 1
# recv
says 2 "batch must be at least 1" recv -i null: -b 0
says 2 "is too large (at most 65536)" recv -i null: -b 65537
says 2 "threads must be at least 1" recv -i null: -p 0
says 2 "$NOCPU_MSG" recv -i null: -a "$NOCPU" -n 1
says 2 "not a number" recv -i null: --dump -1
says 2 "not a number of seconds" recv -i null: --idle -1
says 2 "is too long (at most 86400)" recv -i null: -T 3e5
# capture
says 2 "not a number" capture -i null: -c -1
says 2 "is too large (at most 262144)" capture -i null: -s 262145
says 2 "power of two, at least 64" capture -i null: -B 100
says 2 "power of two, at least 64" capture -i null: -B 32
says 2 "not a positive size" capture -i null: -w "$TMP/x.pcap" -C nan
says 2 "not a positive size" capture -i null: -w "$TMP/x.pcap" -C 0
says 2 "not a size" capture -i null: -w "$TMP/x.pcap" -C 1e30
says 2 "must be at least 1" capture -i null: -w "$TMP/x.pcap" -G 0
says 2 "must be at least 1" capture -i null: -w "$TMP/x.pcap" -C 1 -W 0
says 2 "give in, out or inout" capture -i null: -Q sideways
says 2 "not a number of seconds" capture -i null: -T -1
says 2 "give a file name" capture -i null: -w ''
says 2 "$NOCPU_MSG" capture -i null: -a "$NOCPU" -c 1
says 2 "can't parse filter expression" capture -i null: 'not a filter ((('
# bridge and router: two ports (one port twice is refused on its own)
PA="pipe:${PIPE}a{0"
PB="pipe:${PIPE}b{0"
says 2 "batch must be at least 1" bridge -b 0 "$PA" "$PB"
says 2 "not a number" bridge -n -1 "$PA" "$PB"
says 2 "not a number of seconds" bridge -T nan "$PA" "$PB"
says 2 "is too long (at most 86400)" bridge --idle 1e99 "$PA" "$PB"
says 2 "more than two ports" bridge "$PA" "$PB" null:
says 2 "$NOCPU_MSG" bridge -a "$NOCPU" "$PA" "$PB"
# router
says 2 "is too small" router -i "$PA" -i "$PB" -b 0
says 2 "must be a power of two" router -i "$PA" -i "$PB" --queue 3
says 2 "is too small" router -i "$PA" -i "$PB" --stash 1
says 2 "threads must be at least 1" router -i "$PA" -i "$PB" -p 0
says 2 "at most 4 (one per stage)" router -i "$PA" -i "$PB" -p 5
says 2 "no mode 'bogus'" router -i "$PA" -i "$PB" -m bogus
says 2 "there are 2 ports" router -i "$PA" -i "$PB" --map 0,9
says 2 "not a CPU list" router -i "$PA" -i "$PB" -a 0-
says 2 "$NOCPU_MSG" router -i "$PA" -i "$PB" -a "0,$NOCPU"
says 2 "not a number of seconds" router -i "$PA" -i "$PB" --duration -1
says 2 "not a number" router -i "$PA" -i "$PB" --seed -1
# switch (nothing is started: the values are refused first)
says 2 "must be more than 0" switch --aging-s 0 "$SW"
says 2 "not a number of seconds" switch --aging-s -1 "$SW"
says 2 "must be at least 16" switch --mac-entries 15 "$SW"
says 2 "threads must be at least 1" switch -p 0 "$SW"
says 2 "is too large (at most 8)" switch -p 9 "$SW"
says 2 "is too long (at most 3600)" switch -T 3601 "$SW"
says 2 "$NOCPU_MSG" switch --affinity "$NOCPU" "$SW"
says 2 "$NOCPU_MSG" switch --affinity $((NOCPU - 1)) -p 2 "$SW"
says 2 "is not a switch name" switch 'bad name'
says 2 "give one switch name" switch "$SW" extra
# top, metrics, ports, the runners
says 2 "at least 0.1 s between updates" top -d 0
says 2 "not a number of seconds" top -d -1
says 2 "is not rate, drops, name or pid" top --sort bogus --once
says 2 "needs a value" top -d
says 2 "want [ADDR:]PORT" metrics --listen 99999
says 2 "want [ADDR:]PORT" metrics --listen ''
says 2 "unexpected argument" metrics extra
says 2 "unexpected argument" ports extra
says 2 "no tool given" pcap-run
says 2 "unknown option" pcap-run --bogus true
says 2 "no program given" netmap-run
says 2 "is not xdp or pkt" netmap-run -m '' true
# they become the program: 127 when there is none, as env(1) and the shell
says 127 "No such file or directory" pcap-run "$TMP/no/such/program"
says 127 "No such file or directory" netmap-run "$TMP/no/such/program"

echo "2. port names"
bad any gen -i foo -n 1
bad any recv -i foo -n 1
bad any gen -i pipe: -n 1
bad any gen -i "pipe:${PIPE}x{0@conf:bogus=1" -n 1
bad any recv -i "pipe:${PIPE}x}0@conf:rings=0" -n 1
# each back end takes its own @conf keys (src/conf.h): another back end's
# key is refused at parse time, a usage error, in one line listing the
# keys this one takes
says 2 "pipe:${PIPE}x{0@conf:block-ms=4: unknown key \"block-ms\" for pipe: (accepted: rings, tx-rings, rx-rings, slots, tx-slots, rx-slots, bufs, buf-size, extra-bufs, hugepages, region, share, spin-us)" \
	gen -i "pipe:${PIPE}x{0@conf:block-ms=4" -n 1
says 2 "unknown key \"tx\" for null: (accepted: " gen -i "null:@conf:tx=live" -n 1
says 2 "unknown key \"role\" for pcap: (accepted: " recv -i "pcap:$TMP/x.pcap@conf:role=server" -n 1
bad any gen -i nosuch:x -n 1
bad any recv -i "pipe:${PIPE}y}0" -p 2 -n 1     # the pipe has one ring

echo "3. files"
bad 1 recv -i "pcap:$TMP/missing.pcap"
printf 'this is not a capture file at all, not even close\n' >"$TMP/junk.pcap"
bad any recv -i "pcap:$TMP/junk.pcap"
bad any gen -i "pcap:$TMP/no/such/dir/out.pcap" -n 1
# capture opens its output before it starts: one line, no "listening"
timeout 60 "$PKTMAP" gen -i "pcap:$TMP/five.pcap" -n 5 -T 0 -q
says 1 "$TMP/no/dir/x.pcap: No such file or directory" \
	capture -i "pcap:$TMP/five.pcap" -w "$TMP/no/dir/x.pcap"
says 1 "$TMP/no/dir: No such file or directory" \
	capture -i "pcap:$TMP/five.pcap" -G 60 -w "$TMP/no/dir/x-%S.pcap"
[ ! -e "$TMP/no" ] || fail "capture made $TMP/no"

# A capture cut in the middle of a record: recv delivers the 50 frames
# before the cut, says once where the damage is (the offset), and exits 1.
timeout 60 "$PKTMAP" gen -i "pcap:$TMP/c.pcap" -n 100 -T 0 -q
# 24-byte file header, then records of 16 + 60 bytes: cut record 51.
truncate -s $((24 + 50 * 76 + 30)) "$TMP/c.pcap"
rc=0
timeout 30 "$PKTMAP" recv -i "pcap:$TMP/c.pcap" -T 0 -q --json \
	>"$TMP/cut.json" 2>"$TMP/cut.err" || rc=$?
expect_eq "truncated capture: exit status" "$rc" 1
grep -q "^pktmap: pcap:$TMP/c.pcap: truncated record at offset $((24 + 50 * 76))" \
	"$TMP/cut.err" || fail "truncated capture: no line naming the offset: $(cat "$TMP/cut.err")"
grep -q 'ring protocol' "$TMP/cut.err" && fail "truncated capture: blamed on a peer: $(cat "$TMP/cut.err")"
expect_eq "truncated capture: frames before the cut" \
	"$(json "$TMP/cut.json" packets)" 50
expect_eq "truncated capture: gaps" "$(json "$TMP/cut.json" gaps)" 0
expect_eq "truncated capture: bad" "$(json "$TMP/cut.json" bad)" 0
echo "  [1] truncated capture: 50 frames, then $(head -n 1 "$TMP/cut.err")"

echo "PASS"
