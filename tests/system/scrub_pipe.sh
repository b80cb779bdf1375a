#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap scrub over capture files and pipes (no root needed).
#
#   pcap:in.pcap/R --> scrub -c RULES --> pcap:out.pcap/T
#
#   gen --> pipe:G}0 ==> {0 scrub {0 ==> pipe:H}0 --> scrub (no rules) --> out.pcap
#                           |  ^
#                  control socket (reload, stats, ban, unban, tick)
#
#  1. every rule kind and reason, IPv4 and IPv6 (scrub_frames.py kinds):
#     exact counts by reason and by rule, and the frames that come out are
#     the expected ones, byte for byte, in order; the clock stands still
#     (--clock manual), so the rates are exact.
#  2. the corpus of malformed frames (tests/data/scrub/): each dropped for
#     its reason, nothing passes.
#  3. --dry-run: the same counts, every frame out unchanged;
#     --sample-pcap: the dropped frames (every one, then every 2nd).
#  4. bans that expire, manual bans and unbans, through the control
#     socket's tick (the clock moves only when told).
#  5. reload under traffic: 20000 frames alternating between two
#     destinations while the rules switch between "drop one" and "drop
#     the other" 8 times: every frame judged by exactly one set, the runs
#     of frames judged by one set no more than the reloads + 1, and every
#     frame accounted for (judged = sent, out = passed).
#  6. bad input: a bad rules file is FILE:LINE and exit 1 at start; a bad
#     reload (control socket and SIGHUP) keeps the running rules; bad
#     control requests are refused with one line; usage errors exit 2.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

FR="$(dirname "$0")/scrub_frames.py"
DATA="$(dirname "$0")/../data/scrub"
: >"$TMP/empty.rules"

# ctl SOCK REQUEST...: one control request, the answer on stdout.
ctl() {
	python3 "$FR" ctl "$@"
}

# counter SOCK NAME: one counter of the control socket's stats.
counter() {
	ctl "$1" stats | awk -v k="$2" '$1 == k && NF == 2 { print $2 } $1 == "reason" && $2 == k { print $3 }'
}

# wait_ge MIN CMD...: wait (up to 30 s) until CMD prints a number >= MIN.
wait_ge() {
	local min=$1 _
	shift
	for _ in $(seq 300); do
		[ "$("$@")" -ge "$min" ] && return 0
		sleep 0.1
	done
	fail "$* stayed below $min"
}

# reasons JSON: "reason NAME N" lines of the non-zero reasons, and "rule
# ID N" lines of the rules with hits, sorted (the form of want.txt).
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

echo "1. every rule kind, exact counts, the frames byte for byte"
python3 "$FR" kinds "$TMP"
"$PKTMAP" scrub -i "pcap:$TMP/in.pcap/R" -o "pcap:$TMP/out.pcap/T" \
	-c "$TMP/kinds.rules" --clock manual -T 0 --quiet --json >"$TMP/k.json"
diff <(reasons "$TMP/k.json") "$TMP/want.txt" || fail "counts by reason and rule"
python3 "$FR" same "$TMP/out.pcap" "$TMP/want.pcap" || fail "the frames out"
expect_eq "judged" "$(json "$TMP/k.json" judged)" 27

echo "2. the malformed corpus"
"$PKTMAP" scrub -i "pcap:$DATA/scrub_malformed.pcap/R" -o "pcap:$TMP/m.pcap/T" \
	-c "$TMP/empty.rules" -T 0 --quiet --json >"$TMP/m.json"
diff <(reasons "$TMP/m.json" | awk '{ print $2, $3 }') \
     <(grep -v '^#' "$DATA/scrub_malformed.txt" | sort | uniq -c | awk '{ print $2, $1 }') \
	|| fail "malformed frames by reason"
expect_eq "malformed passed" "$(json "$TMP/m.json" passed)" 0

echo "3. dry run, sampled drops"
"$PKTMAP" scrub -i "pcap:$TMP/in.pcap/R" -o "pcap:$TMP/dry.pcap/T" \
	-c "$TMP/kinds.rules" --clock manual -T 0 --quiet --json --dry-run \
	--sample-pcap "$TMP/s1.pcap" --sample 1 >"$TMP/d.json"
diff <(reasons "$TMP/d.json") "$TMP/want.txt" || fail "dry run counts"
python3 "$FR" same "$TMP/dry.pcap" "$TMP/in.pcap" || fail "dry run passes all"
python3 "$FR" same "$TMP/s1.pcap" "$TMP/dropped.pcap" || fail "samples, every drop"
"$PKTMAP" scrub -i "pcap:$TMP/in.pcap/R" -o "pcap:$TMP/o2.pcap/T" \
	-c "$TMP/kinds.rules" --clock manual -T 0 --quiet --json \
	--sample-pcap "$TMP/s2.pcap" --sample 2 >"$TMP/s2.json"
expect_eq "samples of 1 in 2" "$(json "$TMP/s2.json" samples)" \
	"$(( $(json "$TMP/s2.json" dropped) / 2 ))"

echo "4. bans that expire, manual bans, unbans (the clock moves by tick)"
python3 "$FR" ban "$TMP"
printf 'limit packets 2 ban 10\n' >"$TMP/ban.rules"
SOCK="$TMP/ban.sock"
bg "$PKTMAP" scrub -i "pipe:${PIPE}b{0" -o null: -c "$TMP/ban.rules" \
	--clock manual --control "$SOCK" -T 0 --json >"$TMP/ban.json" 2>"$TMP/ban.err"
SPID=$BG_PID
wait_for "$TMP/ban.err" "^scrub: "
# feed: the 5 frames of ban.pcap into the pipe; then wait until judged
feed() {
	"$PKTMAP" scrub -i "pcap:$TMP/ban.pcap/R" -o "pipe:${PIPE}b}0" \
		-c "$TMP/empty.rules" -T 0 --quiet
	wait_output "$1" counter "$SOCK" judged
	expect_eq "judged" "$(counter "$SOCK" judged)" "$1"
}
expect_ctl() {
	local got
	got=$(ctl "$SOCK" "${@:2}")
	printf '%s\n' "$got" | grep -qF -- "$1" || fail "control ${*:2}: $got"
}
feed 5                   # 2 pass, the 3rd is over (ban to 11 s), 2 banned
expect_eq "passed" "$(counter "$SOCK" passed)" 2
expect_eq "over" "$(counter "$SOCK" src_pps)" 1
expect_eq "banned" "$(counter "$SOCK" banned)" 2
expect_ctl "ok now 6" tick 5
feed 10                  # still banned at 6 s
expect_eq "banned at 6 s" "$(counter "$SOCK" banned)" 7
expect_ctl "ok now 11" tick 5
feed 15                  # the ban ended at 11 s: 2 pass, banned again
expect_eq "passed after the ban" "$(counter "$SOCK" passed)" 4
expect_eq "banned again" "$(counter "$SOCK" banned)" 9
expect_ctl "ok unbanned 10.4.0.1" unban 10.4.0.1
expect_ctl "ok now 12" tick 1
feed 20                  # unbanned: 2 pass (a new ban after)
expect_eq "passed after unban" "$(counter "$SOCK" passed)" 6
expect_ctl "ok banned 10.4.0.1 for 100 s" ban 10.4.0.1 100
expect_ctl "ok now 30" tick 18
feed 25                  # the automatic ban is over, the manual one holds
expect_eq "manual ban" "$(counter "$SOCK" banned)" 16
expect_ctl "ok unbanned" unban 10.4.0.1
expect_ctl "ok now 40" tick 10
feed 30
expect_eq "passed at the end" "$(counter "$SOCK" passed)" 8

echo "6a. bad control requests: one line each, the socket still answers"
expect_ctl "error 'bogus': not a request" bogus
expect_ctl "error ban ADDR SECS" ban 10.4.0.1
expect_ctl "error '10.4.0.300': not an IPv4 or IPv6 address" ban 10.4.0.300 5
expect_ctl "error 'x': seconds" ban 10.4.0.1 x
expect_ctl "error an empty request" ""
got=$(python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"x" * 300); print(s.recv(200).decode().strip())' "$SOCK")
printf '%s\n' "$got" | grep -qF "error a request is one line of at most 255 bytes" \
	|| fail "long request: $got"
got=$(python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"stats\0\n"); print(s.recv(200).decode().strip())' "$SOCK")
printf '%s\n' "$got" | grep -qF "error a NUL byte" || fail "NUL: $got"
# a client that says nothing is dropped after 1 s; others are served
got=$(python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
print(s.recv(200).decode().strip())' "$SOCK")
printf '%s\n' "$got" | grep -qF "error no request within 1 s" || fail "silent: $got"
expect_ctl "ok" stats
[ "$(stat -c %a "$SOCK")" = 600 ] || fail "control socket mode $(stat -c %a "$SOCK")"

echo "6b. a bad reload keeps the running rules"
printf 'limit packets 2 ban 10\nlimit packets 5\n' >"$TMP/ban.rules"
expect_ctl "error $TMP/ban.rules:2: a second limit" reload
kill -HUP "$(pgrep -P "$SPID" | head -n 1)"
wait_for "$TMP/ban.err" "reload refused, the running rules stay: .*ban.rules:2: a second limit"
expect_eq "reload errors" "$(counter "$SOCK" reload_errors)" 2
expect_ctl "ok now 50" tick 10
feed 35                  # still "limit packets 2 ban 10": 2 pass
expect_eq "old rules hold" "$(counter "$SOCK" passed)" 10
printf 'limit packets 4\n' >"$TMP/ban.rules"
expect_ctl "ok reloaded" reload
expect_ctl "ok now 60" tick 10
feed 40                  # the new rules: 4 pass
expect_eq "new rules" "$(counter "$SOCK" passed)" 14
expect_eq "reloads" "$(counter "$SOCK" reloads)" 1

echo "7. the counters in pktmap metrics and pktmap top; hostile counters files"
SCRUB_PID=$(pgrep -P "$SPID" | head -n 1)
m_passed() {
	"$PKTMAP" metrics | grep -F "pktmap_scrub_frames_total{pid=\"$SCRUB_PID\"" |
		grep -F 'reason="passed"}' | awk '{ print $2 }'
}
wait_output 14 m_passed
expect_eq "metrics: passed" "$(m_passed)" 14
"$PKTMAP" metrics | grep -qF "pktmap_scrub_rule_hits_total{pid=\"$SCRUB_PID\",in=\"pipe:${PIPE}b{0\",rule=\"0\",line=\"1\",text=\"limit packets 4\"}" \
	|| fail "metrics: rule hits"
"$PKTMAP" top --once -d 0 | grep -q "^scrub $SCRUB_PID pipe:${PIPE}b{0: judged 40 passed 14 dropped 26" \
	|| fail "top: $("$PKTMAP" top --once -d 0 | grep scrub)"
expect_eq "top --json: banned" "$("$PKTMAP" top --once --json -d 0 | python3 -c 'import json,sys
j = json.load(sys.stdin)
print([s for s in j["scrub"] if s["pid"] == int(sys.argv[1])][0]["reasons"]["banned"])' "$SCRUB_PID")" \
	"$(counter "$SOCK" banned)"
# files a user could leave: garbage, a valid one with escapes in its
# strings, counts larger than the file, a symlink; they name this shell
# (alive, this user's)
H=/dev/shm/pktmap-scrub.$(id -u).$$
at_exit rm -f "$H"
python3 - "$H" "$$" <<'EOF'
import struct, sys
path, pid = sys.argv[1], int(sys.argv[2])
stat = open('/proc/%d/stat' % pid).read()
start = int(stat[stat.rindex(')') + 2:].split()[19])
def hdr(nreasons, nrules, size, inn):
    return struct.pack('<QIIiIQIIIIQQQ128s128s', 0x31726373746b706e, 1, size,
                       pid, 0, start, nreasons, nrules, 1, 0, 9, 5, 4,
                       inn, b'out')
h = hdr(2, 1, 0, b'')
size = len(h) + 2 * 8 + 112
body = struct.pack('<QQ', 5, 4) + struct.pack('<QII96s', 7, 3, 0, b'te\x1b[2Jxt')
open(path, 'wb').write(hdr(2, 1, size, b'\x1b[31mevil\x07') + body)
EOF
"$PKTMAP" top --once -d 0 >"$TMP/top.txt"
grep -q "^scrub $$ ?\[31mevil?: judged 9 passed 5 dropped 4" "$TMP/top.txt" \
	|| fail "top: escapes in a hostile file: $(grep "scrub $$" "$TMP/top.txt" | od -c | head -3)"
"$PKTMAP" metrics | grep -qF "text=\"te?[2Jxt\"} 7" || fail "metrics: escapes"
for bad in garbage short counts; do
	case $bad in
	garbage) head -c 2000 /dev/urandom >"$H" ;;
	short) head -c 100 "$TMP/top.txt" >"$H" ;;
	counts) python3 -c 'import struct,sys
d = bytearray(open(sys.argv[1], "rb").read()); struct.pack_into("<I", d, 36, 4000)
open(sys.argv[1], "wb").write(d)' "$H" ;;
	esac
	"$PKTMAP" top --once -d 0 >"$TMP/top.txt" || fail "top on a $bad file"
	! grep -q "^scrub $$ " "$TMP/top.txt" || fail "top showed a $bad file"
	"$PKTMAP" metrics >/dev/null || fail "metrics on a $bad file"
done
rm -f "$H"
ln -s "/dev/shm/pktmap-scrub.$(id -u).$SCRUB_PID" "$H"
# (this scrub's line once, none for the link: other scrubs may run beside
# this test, in another test or another copy of the suite)
"$PKTMAP" top --once -d 0 >"$TMP/top.txt"
grep -c "^scrub $SCRUB_PID " "$TMP/top.txt" | grep -qx 1 || fail "a symlink was followed"
! grep -q "^scrub $$ " "$TMP/top.txt" || fail "a symlink was followed"
rm -f "$H"
kill -TERM "$SPID"
wait_bg "$SPID"
expect_eq "scrub exit" "$WAIT_RC" 0
[ ! -e "$SOCK" ] || fail "control socket left behind"

echo "5. reload under traffic"
A='drop dst 10.1.0.1'
B='drop dst 10.1.0.2'
echo "$A" >"$TMP/r.rules"
SOCK="$TMP/r.sock"
N=20000
bg "$PKTMAP" scrub -i "pipe:${PIPE}h}0" -o "pcap:$TMP/rl.pcap/T" \
	-c "$TMP/empty.rules" -T 0 --quiet --idle 3
SINK=$BG_PID
bg "$PKTMAP" scrub -i "pipe:${PIPE}g{0" -o "pipe:${PIPE}h{0" -c "$TMP/r.rules" \
	--control "$SOCK" -T 0 --json >"$TMP/rl.json" 2>"$TMP/rl.err"
SPID=$BG_PID
wait_for "$TMP/rl.err" "^scrub: "
bg "$PKTMAP" gen -i "pipe:${PIPE}g}0" -d 10.1.0.1-10.1.0.2 -n $N -R 10k -T 0 -q
GPID=$BG_PID
for k in 1 2 3 4 5 6 7 8; do
	# wait until some frames went by since the last reload
	while [ "$(counter "$SOCK" judged)" -lt $((k * 2000)) ]; do :; done
	if [ $((k % 2)) = 1 ]; then echo "$B" >"$TMP/r.rules"; else echo "$A" >"$TMP/r.rules"; fi
	expect_ctl "ok reloaded" reload
done
wait_bg "$GPID"
wait_output $N counter "$SOCK" judged
kill -TERM "$SPID"
wait_bg "$SPID"
wait_bg "$SINK"
expect_eq "judged" "$(json "$TMP/rl.json" judged)" $N
expect_eq "reloads" "$(json "$TMP/rl.json" reloads)" 8
runs=$(python3 "$FR" reload "$TMP/rl.pcap" $N) || fail "reload: $runs"
echo "   $runs runs of frames judged by one rule set, 8 reloads"
[ "$runs" -le 9 ] && [ "$runs" -ge 2 ] || fail "runs: $runs"
expect_eq "frames out = passed" "$(python3 "$FR" count "$TMP/rl.pcap")" \
	"$(json "$TMP/rl.json" passed)"

echo "6c. bad input at start"
printf 'deny 10.0.0.0/8\ndeny 10.0.0.1/8\n' >"$TMP/bad.rules"
expect_err "scrub: $TMP/bad.rules:2: '10.0.0.1/8': host bits set (did you mean 10.0.0.0/8?)" \
	"$PKTMAP" scrub -i "pipe:${PIPE}x{0" -o null: -c "$TMP/bad.rules"
"$PKTMAP" scrub -i "pipe:${PIPE}x{0" -o null: -c "$TMP/bad.rules" 2>/dev/null \
	&& fail "bad rules accepted"
expect_eq "bad rules: exit 1" "$?" 1
expect_err "scrub: no rules file" "$PKTMAP" scrub -i null:
expect_err "scrub: no port" "$PKTMAP" scrub -c "$TMP/empty.rules"
expect_err "-i and -o are one port" "$PKTMAP" scrub -i "pipe:${PIPE}y{0" \
	-o "pipe:${PIPE}y{0" -c "$TMP/empty.rules"
expect_err "scrub: -q: queues" "$PKTMAP" scrub -i null: -q 0 -c "$TMP/empty.rules"
expect_err "--sample N needs --sample-pcap" "$PKTMAP" scrub -i null: -o "pipe:${PIPE}z{0" \
	--sample 3 -c "$TMP/empty.rules"
expect_err "scrub: --clock: 'x'" "$PKTMAP" scrub -i null: --clock x -c "$TMP/empty.rules"
set +e
"$PKTMAP" scrub -i null: -c "$TMP/empty.rules" --bogus 2>/dev/null
rc=$?
set -e
expect_eq "usage error: exit 2" "$rc" 2
"$PKTMAP" scrub --check -c "$TMP/kinds.rules" | grep -q "^9 rules, 2 allow and 2 deny prefixes, 4 match rules" \
	|| fail "--check"
echo "scrub_pipe: ok"
