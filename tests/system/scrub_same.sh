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
# (the xdp: port received fewer frames than were sent). Then the same
# with scrub_klimit.py's corpus and rules (sources over their packet and
# byte limits, IPv4 and IPv6, a SYN flood, allow and deny, malformed
# frames), all representable in the kernel: the kernel applies the
# limits and bans itself, and every src_pps, src_bps, dst_syn and banned
# drop is the kernel's. Needs root; under CI=true it may not skip.
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
	python3 "$HERE/scrub_klimit.py" ctl "$@"
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
python3 "$HERE/scrub_klimit.py" corpus "$TMP"
ns_pair "$A" "$B"

# same TAG RULES PCAP: the run of both paths over PCAP under RULES.
same() {
	local tag=$1 rules=$2 pcap=$3 n rx sock spid
	n=$(python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
n, off = 0, 24
while off + 16 <= len(d):
    off += 16 + int.from_bytes(d[off + 8:off + 12], "little")
    n += 1
print(n)' "$pcap")

	echo "$tag.1 user space alone: $n frames from a capture file"
	"$PKTMAP" scrub -i "pcap:$pcap/R" -o "pcap:$TMP/$tag.user.pcap/T" \
		-c "$rules" --clock manual -T 0 --quiet --json >"$TMP/$tag.u.json"
	reasons "$TMP/$tag.u.json" >"$TMP/$tag.u.txt"
	grep -q "^reason deny " "$TMP/$tag.u.txt" ||
		fail "the frames have no deny-listed source"

	echo "$tag.2 the kernel path: the same frames over a veth to scrub -i xdp:vethB"
	sock=$TMP/$tag.sock
	bg ip netns exec "$B" "$PKTMAP" scrub -i xdp:vethB \
		-o "pcap:$TMP/$tag.kern.pcap/T" -c "$rules" --clock manual \
		--control "$sock" -T 0 --json >"$TMP/$tag.k.json" 2>"$TMP/$tag.k.err"
	spid=$BG_PID
	wait_for "$TMP/$tag.k.err" "^scrub: "
	ctl "$sock" stats | grep -qx "kernel yes" ||
		fail "scrub on xdp:vethB runs without its kernel path: $(cat "$TMP/$tag.k.err")"
	inA python3 "$SEND" send vethA "$pcap"
	wait_output "$n" counter "$sock" judged
	expect_eq "judged (kernel and user space)" "$(counter "$sock" judged)" "$n"
	# What reached user space through the socket: fewer than were sent,
	# the rest dropped in XDP.
	rx=$("$PKTMAP" top --once -d 0 --json | python3 -c 'import json, sys
print(sum(p["rx"]["packets"] for p in json.load(sys.stdin)["ports"]
          if p["port"] == "xdp:vethB@conf:prog=scrub" and sys.argv[1] in p["cmdline"]))' "$TMP")
	[ "$rx" -lt "$n" ] && [ "$rx" -gt 0 ] ||
		fail "user space received $rx of $n frames: the kernel dropped none"
	echo "   $((n - rx)) of $n frames dropped in XDP"
	stop_bg "$spid"
	wait_bg "$spid"
	expect_eq "scrub's exit status" "$WAIT_RC" 0
	reasons "$TMP/$tag.k.json" >"$TMP/$tag.k.txt"
	diff "$TMP/$tag.u.txt" "$TMP/$tag.k.txt" || fail "counts by reason and rule differ"
	python3 "$SEND" same "$TMP/$tag.kern.pcap" "$TMP/$tag.user.pcap" ||
		fail "the frames out differ"
	grep -q '"kernel":true' "$TMP/$tag.k.json" || fail "no kernel path in the summary"
}

same 1 "$TMP/kinds.rules" "$TMP/in.pcap"
# Limits: every rule representable, so the kernel applied them (and the
# bans they made) itself: its counts by reason are the whole of them, but
# for the two sources whose frames it sends up (IPv4 fragments, IPv6
# with an extension header, 8 frames each: 3 pass, 1 src_pps, 4 banned;
# 2 pass, 1 src_bps, 5 banned),
# limited by the workers.
same 2 "$TMP/limits.rules" "$TMP/limits.pcap"
declare -A UP=([src_pps]=1 [src_bps]=1 [dst_syn]=0 [banned]=9)
for k in src_pps src_bps dst_syn banned; do
	u=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["reasons"][sys.argv[2]])' "$TMP/2.u.json" "$k")
	kk=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["kernel_reasons"][sys.argv[2]])' "$TMP/2.k.json" "$k")
	[ "$u" -gt 0 ] || fail "the limits corpus has no $k"
	expect_eq "$k dropped in the kernel" "$kk" $((u - UP[$k]))
done
no_leftovers
echo "PASS"
