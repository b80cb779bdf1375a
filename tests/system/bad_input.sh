#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Bad command lines, bad port names and bad files: each must end with a
# one-line error "pktmap: ..." and a non-zero exit status, never a crash
# (status >= 128 means a signal, e.g. SIGSEGV or SIGABRT).
#
#   pktmap gen/recv <bad input>  -->  "pktmap: <what is wrong>", exit 1 or 2
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# bad WANT_STATUS CMD...: CMD fails with WANT_STATUS ("any" for 1 or 2)
# and says so in exactly one line.
bad() {
	local want=$1 rc=0 lines
	shift

	timeout 30 "$PKTMAP" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
	[ "$rc" -ne 0 ] || fail "pktmap $*: exit status 0"
	[ "$rc" -lt 124 ] || fail "pktmap $*: exit status $rc (crash or hang)"
	if [ "$want" != any ]; then
		[ "$rc" -eq "$want" ] || fail "pktmap $*: exit status $rc, want $want"
	fi
	lines=$(wc -l <"$TMP/err")
	[ "$lines" -eq 1 ] || fail "pktmap $*: $lines lines on stderr: $(cat "$TMP/err")"
	grep -q '^pktmap: ' "$TMP/err" || fail "pktmap $*: not 'pktmap: ...': $(cat "$TMP/err")"
	echo "  [$rc] pktmap $*: $(cat "$TMP/err")"
}

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

echo "2. port names"
bad any gen -i foo -n 1
bad any recv -i foo -n 1
bad any gen -i pipe: -n 1
bad any gen -i "pipe:${PIPE}x{0@conf:bogus=1" -n 1
bad any recv -i "pipe:${PIPE}x}0@conf:rings=0" -n 1
bad any gen -i nosuch:x -n 1
bad any recv -i "pipe:${PIPE}y}0" -p 2 -n 1     # the pipe has one ring

echo "3. files"
bad 1 recv -i "pcap:$TMP/missing.pcap"
printf 'this is not a capture file at all, not even close\n' >"$TMP/junk.pcap"
bad any recv -i "pcap:$TMP/junk.pcap"
bad any gen -i "pcap:$TMP/no/such/dir/out.pcap" -n 1

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
