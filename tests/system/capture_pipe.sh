#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap capture fed by pktmap gen through a pipe, then every file read
# back by pktmap recv (sequence numbers) and by tcpdump (an independent
# reader).
#
#   pktmap gen -i pipe:tPIDx{0  ==== pipe ====>  pktmap capture -i pipe:tPIDx}0
#                                                  -w FILE [-C|-G|--per-queue]
#
# 1. N frames: exactly N written, seqs in order, ns time stamps.
# 2. a filter: "udp dst port 9" over a 3-port rotation: exactly a third.
# 3. -C: many small files; their packets add up to N, none over the size,
#    and the sequence numbers run on from file to file (nothing lost at a
#    boundary); -W: a ring of K files.
# 4. -G 1 with a strftime name at 1000 pps for 3 s: 3-4 files, sum N.
# 5. pcapng, and --per-queue over 2 rings / a merged file over 2 rings.
# 6. errors: a bad filter and a bad port are one line, exit 2 / 1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_cmd tcpdump
N=${N:-100000}

# capture_run CASE GEN_ARGS -- CAPTURE_ARGS: capture in the background on
# pipe:$PIPE$CASE}0, gen on its other end, wait; the summary is $TMP/CASE.json.
capture_run() {
	local c=$1
	shift
	local gargs=()
	while [ "$1" != -- ]; do gargs+=("$1"); shift; done
	shift
	# Its "listening on" line says the pipe end is open: gen may start.
	bg "$PKTMAP" capture -i "pipe:${PIPE}$c}0$PCONF" --json "$@" \
		>"$TMP/$c.json" 2>"$TMP/$c.err"
	local cpid=$BG_PID
	wait_for "$TMP/$c.err" "listening on"
	timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}$c{0$PCONF" -T 0 -q "${gargs[@]}"
	wait_bg "$cpid"
	expect_eq "$c: capture exit status" "$WAIT_RC" 0
}

# recv_file FILE: "packets gaps reordered" of a capture file.
recv_file() {
	"$PKTMAP" recv -i "pcap:$1/R" -T 0 -q --json >"$TMP/r.json"
	echo "$(json "$TMP/r.json" packets) $(json "$TMP/r.json" gaps)" \
	     "$(json "$TMP/r.json" reordered)"
}

PCONF=
echo "1. $N frames into one pcap file"
capture_run a -n "$N" -- -c "$N" -w "$TMP/a.pcap"
expect_eq "1: written" "$(json "$TMP/a.json" written)" "$N"
expect_eq "1: received" "$(json "$TMP/a.json" received)" "$N"
expect_eq "1: end" "$(json "$TMP/a.json" end)" count
expect_eq "1: file" "$(recv_file "$TMP/a.pcap")" "$N 0 0"
# the nanosecond magic, read the same by tcpdump
expect_eq "1: magic" "$(od -An -tx4 -N4 "$TMP/a.pcap" | tr -d ' ')" a1b23c4d
expect_eq "1: tcpdump count" "$(tcpdump -r "$TMP/a.pcap" 2>/dev/null | wc -l)" "$N"

echo "2. filter: udp dst port 9 of ports 8-10"
capture_run b -n 30000 -d 10.1.0.1:8-10 -- -w "$TMP/b.pcap" --idle 1 \
	udp dst port 9
expect_eq "2: received" "$(json "$TMP/b.json" received)" 30000
expect_eq "2: matched" "$(json "$TMP/b.json" matched)" 10000
expect_eq "2: written" "$(json "$TMP/b.json" written)" 10000
expect_eq "2: port 9 in file" \
	"$(tcpdump -nn -r "$TMP/b.pcap" 2>/dev/null | grep -c '\.9: UDP')" 10000

N3=20000
echo "3. -C 100k: rotation loses nothing ($N3 frames of 60-1514 bytes)"
mkdir "$TMP/c"
capture_run c -n "$N3" -l 60-1514 -- -c "$N3" -w "$TMP/c/c.pcap" -C 100k
files=$(json "$TMP/c.json" files)
[ "$files" -ge 20 ] || fail "3: only $files files"
total=0
next=0
for i in $(seq 0 $((files - 1))); do
	f="$TMP/c/c.pcap"
	[ "$i" = 0 ] || f="$f$i"
	[ -f "$f" ] || fail "3: no file $f"
	size=$(stat -c %s "$f")
	[ "$size" -le 102400 ] || fail "3: $f is $size bytes, over 100 KiB"
	# the first and last sequence number of each file: continuous
	"$PKTMAP" recv -i "pcap:$f/R" -T 0 -q --dump 1 >"$TMP/d.txt"
	first=$(grep -o 'seq [0-9]*' "$TMP/d.txt" | head -1 | cut -d' ' -f2)
	expect_eq "3: first seq of $f" "$first" "$next"
	read -r n gaps reord <<<"$(recv_file "$f")"
	expect_eq "3: gaps in $f" "$gaps" 0
	expect_eq "3: reordered in $f" "$reord" 0
	total=$((total + n))
	next=$((next + n))
done
expect_eq "3: packets over $files files" "$total" "$N3"
echo "   $files files, $total packets, sequence continuous"

mkdir "$TMP/w"
capture_run w -n 5000 -- -c 5000 -w "$TMP/w/r.pcap" -C 20k -W 3
expect_eq "3w: files in the ring" "$(ls "$TMP/w" | tr '\n' ' ')" \
	"r.pcap0 r.pcap1 r.pcap2 "

echo "4. -G 1, strftime names, 3000 frames at 1000 pps"
mkdir "$TMP/g"
capture_run g -n 3000 -R 1000 -- -w "$TMP/g/g-%H%M%S.pcap" -G 1 --idle 1
nf=$(ls "$TMP/g" | wc -l)
[ "$nf" -ge 3 ] && [ "$nf" -le 5 ] || fail "4: $nf files: $(ls "$TMP/g")"
total=0
for f in "$TMP"/g/g-*.pcap; do
	read -r n gaps _ <<<"$(recv_file "$f")"
	expect_eq "4: gaps in $f" "$gaps" 0
	total=$((total + n))
done
expect_eq "4: packets over $nf files" "$total" 3000

echo "5. pcapng; 2 rings: --per-queue and merged"
capture_run n -n 10000 -- -c 10000 -w "$TMP/n.pcapng" --pcapng
expect_eq "5: pcapng" "$(recv_file "$TMP/n.pcapng")" "10000 0 0"
expect_eq "5: pcapng tcpdump" "$(tcpdump -r "$TMP/n.pcapng" 2>/dev/null | wc -l)" 10000
PCONF=@conf:rings=2
capture_run q -n 20000 -p 2 -- -c 20000 -w "$TMP/q.pcap" --per-queue
expect_eq "5: queue 0" "$(recv_file "$TMP/q-q0.pcap")" "10000 0 0"
expect_eq "5: queue 1" "$(recv_file "$TMP/q-q1.pcap")" "10000 0 0"
capture_run m -n 20000 -p 2 -- -c 20000 -w "$TMP/m.pcap"
expect_eq "5: merged" "$(recv_file "$TMP/m.pcap")" "20000 0 0"
# time stamps never go back in the merged file
tcpdump -tt -nn -r "$TMP/m.pcap" 2>/dev/null | awk '{ if ($1 < last) bad++; last = $1 }
	END { exit bad > 0 }' || fail "5: merged file out of time order"
PCONF=

echo "6. errors"
rc=0
"$PKTMAP" capture -i "pipe:${PIPE}e}0" 'udp port' 2>"$TMP/e1" || rc=$?
expect_eq "6: bad filter exit" "$rc" 2
grep -q "^pktmap: capture: filter 'udp port': .*syntax error" "$TMP/e1" ||
	fail "6: bad filter message: $(cat "$TMP/e1")"
rc=0
"$PKTMAP" capture -i "nosuch:x" 2>"$TMP/e2" || rc=$?
expect_eq "6: bad port exit" "$rc" 2
expect_eq "6: one line" "$(wc -l <"$TMP/e2")" 1
rc=0
"$PKTMAP" capture -i "pipe:${PIPE}e}0" -C 1 2>"$TMP/e3" || rc=$?
expect_eq "6: -C without -w" "$rc" 2
# Each option checked on its own and against the others: exit 2, one line
# that names what is wrong. ARGS|TEXT per line.
while IFS='|' read -r args text; do
	rc=0
	# shellcheck disable=SC2086 # ARGS are words
	"$PKTMAP" capture $args >"$TMP/e4" 2>&1 </dev/null || rc=$?
	expect_eq "6: capture $args: exit" "$rc" 2
	expect_eq "6: capture $args: lines" "$(wc -l <"$TMP/e4")" 1
	grep -qF -- "pktmap: capture: $text" "$TMP/e4" ||
		fail "6: capture $args: $(cat "$TMP/e4")"
done <<EOF
-w f|no port given: use -i PORT
-i x -s x|-s: snapshot length 'x' is not a number
-i x -B 100|-B: ring slots must be a power of two, at least 64
-i x -Q sideways|-Q: direction 'sideways': give in, out or inout
-i x -C 5x|-C: '5x' is not a size
-i x -G 0|-G: seconds must be at least 1
-i x -w f -W 3|-W needs -C or -G
-i x --pcapng --micro|--micro is for pcap
-i x -w - -C 1|standard output cannot be rotated
-i x -w - --json|--json and -w - both want standard output
-i x -c x|-c: count 'x' is not a number
EOF

echo "PASS"
