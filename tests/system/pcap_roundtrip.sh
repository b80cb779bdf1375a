#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap gen -> capture file -> pktmap recv, and the same file read by
# tcpdump (an independent reader and checksum checker).
#
#   pktmap gen -i pcap:a.pcap  --->  a.pcap  --->  pktmap recv -i pcap:a.pcap
#                                      |
#                                      +------->  tcpdump -r a.pcap
#
# 1. 1000 frames of 60 bytes: recv counts exactly 1000, sequence numbers in
#    order, and exits by itself at the end of the file.
# 2. 1000 frames of random length with address/port ranges: the same, and
#    every IPv4 and UDP checksum right (recv --csum, tcpdump -vv).
# 3. --dump shows the first frames with their stream and sequence numbers.
# tcpdump is optional outside CI (that part is then skipped).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=1000

# roundtrip CASE FILE GEN_OPTIONS...
roundtrip() {
	local c=$1 f=$2
	shift 2

	timeout 60 "$PKTMAP" gen -i "pcap:$f" -n "$N" -T 0 -q --json "$@" \
		>"$TMP/g$c.json"
	expect_eq "$c: gen packets" "$(json "$TMP/g$c.json" packets)" "$N"
	expect_eq "$c: gen pending" "$(json "$TMP/g$c.json" pending)" 0
	[ -s "$f" ] || fail "$c: gen wrote no file"

	# No -n: recv must stop at the end of the file on its own.
	timeout 60 "$PKTMAP" recv -i "pcap:$f" --csum -T 0 -q --json \
		>"$TMP/r$c.json" || fail "$c: recv failed"
	echo "  $c: gen $N frames, $(json "$TMP/g$c.json" bytes) bytes; recv" \
	     "$(json "$TMP/r$c.json" packets) frames, $(json "$TMP/r$c.json" bytes)" \
	     "bytes, ended at $(json "$TMP/r$c.json" end)"
	expect_eq "$c: recv end" "$(json "$TMP/r$c.json" end)" eof
	expect_eq "$c: recv packets" "$(json "$TMP/r$c.json" packets)" "$N"
	expect_eq "$c: recv bytes" "$(json "$TMP/r$c.json" bytes)" \
		"$(json "$TMP/g$c.json" bytes)"
	expect_eq "$c: gaps" "$(json "$TMP/r$c.json" gaps)" 0
	expect_eq "$c: reordered" "$(json "$TMP/r$c.json" reordered)" 0
	expect_eq "$c: bad" "$(json "$TMP/r$c.json" bad)" 0
	expect_eq "$c: bad checksums" "$(json "$TMP/r$c.json" bad_csum)" 0

	if ! command -v tcpdump >/dev/null 2>&1; then
		[ "${CI:-}" != true ] || fail "tcpdump is not installed (CI must have it)"
		echo "  $c: tcpdump not installed: that check skipped"
		return
	fi
	# -vv makes tcpdump verify the UDP checksum of every frame.
	tcpdump -nn -vv -r "$f" >"$TMP/td$c.txt" 2>"$TMP/td$c.err" ||
		fail "$c: tcpdump -r failed: $(cat "$TMP/td$c.err")"
	expect_eq "$c: tcpdump frames" \
		"$(grep -c 'proto UDP' "$TMP/td$c.txt" || true)" "$N"
	expect_eq "$c: tcpdump udp sum ok" \
		"$(grep -c 'udp sum ok' "$TMP/td$c.txt" || true)" "$N"
	if grep -q 'bad' "$TMP/td$c.txt"; then
		fail "$c: tcpdump: $(grep -m1 bad "$TMP/td$c.txt")"
	fi
	echo "  $c: tcpdump read $N frames, every UDP checksum ok"
}

echo "1. $N frames of 60 bytes"
roundtrip 1 "$TMP/a.pcap"

echo "2. $N frames of 60-1514 bytes, address and port ranges"
roundtrip 2 "$TMP/b.pcap" -l 60-1514 -s 10.0.0.1-10.0.0.9:1234-1240 \
	-d 192.168.1.1-192.168.1.3:53 -S 02:11:22:33:44:55 -D 02:66:77:88:99:aa

echo "3. --dump"
timeout 60 "$PKTMAP" recv -i "pcap:$TMP/a.pcap" -n 2 --dump 2 -T 0 -q \
	>"$TMP/dump.txt"
grep -q "stream 0 seq 0$" "$TMP/dump.txt" || fail "3: no seq 0 in: $(cat "$TMP/dump.txt")"
grep -q "stream 0 seq 1$" "$TMP/dump.txt" || fail "3: no seq 1 in: $(cat "$TMP/dump.txt")"
grep -q "^  0000  ff ff ff ff ff ff 02 00  00 00 00 01 08 00 45 00" \
	"$TMP/dump.txt" || fail "3: dump does not show the frame: $(cat "$TMP/dump.txt")"

echo "PASS"
