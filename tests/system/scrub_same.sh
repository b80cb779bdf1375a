#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap scrub gives the same verdicts with its kernel path as without:
# the same frames judged by user space alone (a capture file in, a
# capture file out) and by scrub on an xdp: input, where its XDP program
# drops the listed and banned sources before user space sees them.
#
#   pcap:in.pcap/R --> scrub -c RULES --> pcap:user.pcap/T      (user space)
#
#   netns ssA$$                      netns ssB$$
#   [ in.pcap, frame by frame ] vethA ==== vethB --> scrub -i xdp:vethB
#                                        (XDP: allow, bans, deny)
#                                        -o pcap:kern.pcap/T
#
# The frames and rules are scrub_pipe.sh's (scrub_frames.py kinds: every
# rule kind and reason, IPv4 and IPv6, VLAN tags, malformed frames), the
# clock stands still (--clock manual). Checked: the same count for every
# reason and every rule (scrub adds the kernel's counts to its own), the
# same frames out byte for byte, in order, and the kernel dropped some
# (the xdp: port received fewer frames than were sent). Needs root; under CI=true it
# may not skip.
set -euo pipefail

A=ssA$$
B=ssB$$
HERE=$(dirname "$0")
FR=$HERE/scrub_frames.py
SEND=$HERE/scrub_xdp_frames.py
# shellcheck source=lib.sh
. "$HERE/lib.sh"

need_root
need_cmd python3
need_cmd ip

# ctl SOCK REQUEST: one control request, the answer on stdout.
ctl() {
	python3 - "$@" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall((' '.join(sys.argv[2:]) + '\n').encode())
out = b''
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
EOF
}
counter() {
	ctl "$1" stats | awk -v k="$2" '$1 == k && NF == 2 { print $2 }'
}
# reasons JSON: the non-zero reasons and the rules with hits, sorted.
reasons() {
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
for k in sorted(j["reasons"]):
    if j["reasons"][k] and k != "return":
        print("reason %s %d" % (k, j["reasons"][k]))
for r in j["rules"]:
    if r["hits"]:
        print("rule %d %d" % (r["id"], r["hits"]))' "$1"
}

python3 "$FR" kinds "$TMP"
N=$(python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
n, off = 0, 24
while off + 16 <= len(d):
    off += 16 + int.from_bytes(d[off + 8:off + 12], "little")
    n += 1
print(n)' "$TMP/in.pcap")

echo "1. user space alone: $N frames from a capture file"
"$PKTMAP" scrub -i "pcap:$TMP/in.pcap/R" -o "pcap:$TMP/user.pcap/T" \
	-c "$TMP/kinds.rules" --clock manual -T 0 --quiet --json >"$TMP/u.json"
reasons "$TMP/u.json" >"$TMP/u.txt"
grep -q "^reason deny " "$TMP/u.txt" || fail "the frames have no deny-listed source"

echo "2. the kernel path: the same frames over a veth to scrub -i xdp:vethB"
ns_pair "$A" "$B"
SOCK=$TMP/ctl.sock
bg ip netns exec "$B" "$PKTMAP" scrub -i xdp:vethB -o "pcap:$TMP/kern.pcap/T" \
	-c "$TMP/kinds.rules" --clock manual --control "$SOCK" -T 0 --json \
	>"$TMP/k.json" 2>"$TMP/k.err"
SPID=$BG_PID
wait_for "$TMP/k.err" "^scrub: "
ctl "$SOCK" stats | grep -qx "kernel yes" ||
	fail "scrub on xdp:vethB runs without its kernel path: $(cat "$TMP/k.err")"
inA python3 "$SEND" send vethA "$TMP/in.pcap"
wait_output "$N" counter "$SOCK" judged
expect_eq "judged (kernel and user space)" "$(counter "$SOCK" judged)" "$N"
# What reached user space through the socket: fewer than were sent, the
# rest dropped in XDP.
RX=$("$PKTMAP" top --once -d 0 --json | python3 -c 'import json, sys
print(sum(p["rx"]["packets"] for p in json.load(sys.stdin)["ports"]
          if p["port"] == "xdp:vethB@conf:prog=scrub" and sys.argv[1] in p["cmdline"]))' "$TMP")
[ "$RX" -lt "$N" ] && [ "$RX" -gt 0 ] ||
	fail "user space received $RX of $N frames: the kernel dropped none"
echo "   $((N - RX)) of $N frames dropped in XDP"
stop_bg "$SPID"
wait_bg "$SPID"
expect_eq "scrub's exit status" "$WAIT_RC" 0
reasons "$TMP/k.json" >"$TMP/k.txt"
diff "$TMP/u.txt" "$TMP/k.txt" || fail "counts by reason and rule differ"
python3 "$SEND" same "$TMP/kern.pcap" "$TMP/user.pcap" ||
	fail "the frames out differ"
grep -q '"kernel":true' "$TMP/k.json" || fail "no kernel path in the summary"
no_leftovers
echo "PASS"
