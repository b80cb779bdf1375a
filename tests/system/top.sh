#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pktmap top --once --json sees every port on the host, with counters
# exact against what each program reports at its end:
#
#   gen  -> pipe a -> recv                (pktmap gen and recv)
#   gen  -> valeX:a [switch] valeX:b -> recv   (a switch with two clients)
#   gen  -> pipe c -> tcpdump             (tcpdump on pktmap's libpcap)
#   gen  -> pipe n -> nmt_raw recv        (a netmap program, netmap-run)
#   gen  -> pipe d -> recv, and a stopped monitor of d (d's monitor_drops,
#                                          in top and in metrics)
#
# then: a recv killed with SIGKILL disappears (and its file is removed);
# another user (nobody) sees none of root's ports, root sees nobody's;
# the text table fits 80 columns; bad options get one line.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_cmd python3
need_cmd tcpdump
B=${PKTMAP_BUILD_ROOT:?}
RAW=$B/tests/nmt_raw
[ -x "$RAW" ] || fail "nmt_raw not built"

# topq EXPR: EXPR evaluated over P, the ports of `top --once -d 0 --json`
# (its output saved in $TMP/top.json).
topq() {
	"$PKTMAP" top --once -d 0 --json >"$TMP/top.json"
	python3 -c 'import json,sys; P=json.load(open(sys.argv[1]))["ports"]; print(eval(sys.argv[2]))' \
		"$TMP/top.json" "$1"
}
# count of a port's counter: rx_of NAME, tx_of NAME (0 when not listed)
rx_of() { topq "sum(p['rx']['packets'] for p in P if p['port']=='$1')"; }
tx_of() { topq "sum(p['tx']['packets'] for p in P if p['port']=='$1')"; }
listed() { topq "sum(1 for p in P if p['port']=='$1')"; }
real_pid() { # the pid top shows for port $1
	topq "([p['pid'] for p in P if p['port']=='$1'] + [0])[0]"
}

# 1. gen -> pipe -> recv. gen is rate-limited so that it is seen running.
A="pipe:${PIPE}a"
N1=30000
BG_TIMEOUT=90 bg "$PKTMAP" recv -i "$A}0" -T 0 -q --json >"$TMP/a_recv.json"
a_recv=$BG_PID
wait_output 1 listed "$A}0"
expect_eq "recv's port listed" "$(listed "$A}0")" 1
BG_TIMEOUT=90 bg "$PKTMAP" gen -i "$A{0" -n $N1 -R 10k -T 0 -q --json >"$TMP/a_gen.json"
a_gen=$BG_PID
wait_output 1 listed "$A{0"
expect_eq "gen's port listed while it runs" "$(listed "$A{0")" 1
expect_eq "gen's program" "$(topq "[p['program'] for p in P if p['port']=='$A{0'][0]")" "pktmap gen"
expect_eq "gen's mode" "$(topq "[p['mode'] for p in P if p['port']=='$A{0'][0]")" zerocopy
wait_bg "$a_gen"
expect_eq "gen exit" "$WAIT_RC" 0
expect_eq "gen sent" "$(json "$TMP/a_gen.json" packets)" $N1
expect_eq "gen's port gone after it ended" "$(listed "$A{0")" 0
wait_output $N1 rx_of "$A}0"
expect_eq "recv's port rx = what gen sent" "$(rx_of "$A}0")" $N1
a_bytes=$(topq "[p['rx']['bytes'] for p in P if p['port']=='$A}0'][0]")
stop_bg "$a_recv"
wait_bg "$a_recv"
expect_eq "recv's report = its published rx" "$(json "$TMP/a_recv.json" packets)" $N1
expect_eq "recv's bytes = its published rx bytes" "$(json "$TMP/a_recv.json" bytes)" "$a_bytes"
echo "1. gen -> pipe -> recv: $N1 packets, $a_bytes bytes, exact"

# 2. a switch with two clients: gen on :a, recv on :b.
S="valet$$"
N2=5000
BG_TIMEOUT=90 bg "$PKTMAP" switch "$S" -T 0 >"$TMP/sw.out"
wait_for "$TMP/sw.out" ready
BG_TIMEOUT=90 bg "$PKTMAP" recv -i "$S:b" -T 0 -q --json >"$TMP/s_recv.json"
s_recv=$BG_PID
switch_wait_ports "$S" b
"$PKTMAP" gen -i "$S:a" -n $N2 -R 20k -T 0 -q --json >"$TMP/s_gen.json"
expect_eq "switch gen sent" "$(json "$TMP/s_gen.json" packets)" $N2
# The switch drops what finds no room towards b (it never waits for a
# client): sent to b + dropped for no space = N2, in its own listing and
# in its published counters alike.
sw_json() {
	"$PKTMAP" switch --list "$S" --json | grep -o '"port":"b"[^}]*' |
		grep -o "\"$1\":[0-9]*" | cut -d: -f2
}
sw_done() { echo $(( $(sw_json tx_frames) + $(sw_json drop_nospace) )); }
wait_output $N2 sw_done
expect_eq "the switch's frames for b, sent + dropped" "$(sw_done)" $N2
sw_pid=$("$PKTMAP" switch --list "$S" --json | grep -o '"nports":[0-9]*,"pid":[0-9]*' | grep -o '[0-9]*$')
expect_eq "the switch's ports sent (to b)" \
	"$(topq "sum(p['tx']['packets'] for p in P if p['pid']==$sw_pid)")" "$(sw_json tx_frames)"
expect_eq "the switch's ports dropped for no space" \
	"$(topq "sum(p['drops']['no_space'] for p in P if p['pid']==$sw_pid)")" "$(sw_json drop_nospace)"
tx_b=$(sw_json tx_frames)
nospace_b=$(sw_json drop_nospace)
wait_output "$tx_b" rx_of "$S:b"
expect_eq "client b's port rx" "$(rx_of "$S:b")" "$tx_b"
stop_bg "$s_recv"
wait_bg "$s_recv"
expect_eq "client b's report" "$(json "$TMP/s_recv.json" packets)" "$tx_b"
echo "2. switch: $N2 frames a -> b ($nospace_b dropped for no space), exact in the switch's ports and in b's"

# 3. tcpdump on pktmap's libpcap.
C="pipe:${PIPE}c"
N3=2000
BG_TIMEOUT=90 bg "$PKTMAP" pcap-run tcpdump -n -i "$C}0" -w "$TMP/c.pcap" 2>"$TMP/c.err"
td=$BG_PID
wait_output 1 listed "$C}0"
expect_eq "tcpdump's port listed" "$(listed "$C}0")" 1
expect_eq "tcpdump's program" "$(topq "[p['program'] for p in P if p['port']=='$C}0'][0]")" tcpdump
"$PKTMAP" gen -i "$C{0" -n $N3 -T 0 -q
wait_output $N3 rx_of "$C}0"
expect_eq "tcpdump's port rx" "$(rx_of "$C}0")" $N3
td_pid=$(real_pid "$C}0")
kill -INT "$td_pid"
wait_bg "$td"
grep -q "^$N3 packets captured" "$TMP/c.err" || fail "tcpdump: $(cat "$TMP/c.err")"
echo "3. tcpdump: $N3 packets captured = its port's rx"

# 3b. a monitor that does not read (stopped): the frames its queue has no
# room for are the monitored port's monitor_drops, in top and in metrics,
# and with what the monitor read they are every frame the port moved.
D="pipe:${PIPE}d"
N3B=1000
BG_TIMEOUT=90 bg "$PKTMAP" recv -i "$D}0" -T 0 -q --json >"$TMP/d_recv.json"
d_recv=$BG_PID
wait_output 1 listed "$D}0"
d_pid=$(real_pid "$D}0")
BG_TIMEOUT=90 bg "$PKTMAP" recv -i "$D}0/r@conf:slots=64" -T 0 -q --json >"$TMP/d_mon.json"
d_mon=$BG_PID
# the monitor's queue: a pipe whose sending end the watched process holds,
# named after the monitor's pid
monq() { topq "sum(1 for p in P if p['pid']==$d_pid and p['port'].startswith('pipe:pmmon.'))"; }
wait_output 1 monq
mon_pid=$(topq "[p['port'] for p in P if p['pid']==$d_pid and p['port'].startswith('pipe:pmmon.')][0].split('.')[1]")
kill -STOP "$mon_pid"
"$PKTMAP" gen -i "$D{0" -n $N3B -T 0 -q
wait_output $N3B rx_of "$D}0"
mdrops=$(topq "[p['monitor_drops'] for p in P if p['port']=='$D}0'][0]")
[ "$mdrops" -gt 0 ] || fail "a stopped monitor: no monitor_drops ($mdrops)"
expect_eq "metrics' monitor drops = top's" \
	"$("$PKTMAP" metrics | grep "^pktmap_port_monitor_drops_total{port=\"$D}0\"" | awk '{ print $NF }')" "$mdrops"
kill -CONT "$mon_pid"
mon_rx() { topq "sum(p['rx']['packets'] for p in P if p['pid']==$mon_pid)"; }
wait_output $((N3B - mdrops)) mon_rx
stop_bg "$d_mon"
wait_bg "$d_mon"
expect_eq "the monitor's frames + monitor_drops = the port's" \
	$(($(json "$TMP/d_mon.json" packets) + mdrops)) $N3B
stop_bg "$d_recv"
wait_bg "$d_recv"
echo "3b. a stopped monitor: $mdrops of $N3B frames dropped, in top and metrics; the rest it read"

# 4. a netmap program (raw /dev/netmap ABI) under netmap-run: it waits
# for N4 packets; after the first K its port shows exactly K. ("fast":
# the sender writes no sequence numbers, so that two senders can feed it.)
NM="${PIPE}n"
N4=3000
K=1000
BG_TIMEOUT=90 bg "$PKTMAP" netmap-run --quiet "$RAW" recv "netmap:$NM}0" $N4 60 poll fast
nmt=$BG_PID
nm_port=""
for _ in $(seq 300); do
	nm_port=$(topq "([p['port'] for p in P if p['program']=='nmt_raw' and '$NM' in p['port']] + [''])[0]")
	[ -n "$nm_port" ] && break
	sleep 0.1
done
[ -n "$nm_port" ] || fail "the netmap program's port is not listed: $(cat "$TMP/top.json")"
"$PKTMAP" netmap-run --quiet "$RAW" gen "netmap:$NM{0" $K 60 poll fast >/dev/null
wait_output $K rx_of "$nm_port"
expect_eq "netmap program's port after $K" "$(rx_of "$nm_port")" $K
"$PKTMAP" netmap-run --quiet "$RAW" gen "netmap:$NM{0" $((N4 - K)) 60 poll fast >/dev/null
wait_bg "$nmt"
expect_eq "netmap program (checks every packet) exit" "$WAIT_RC" 0
echo "4. netmap program: $nm_port listed, $K then $N4 packets"

# 5. kill -9: the port disappears, its file is removed by the reader.
Kp="pipe:${PIPE}k"
BG_TIMEOUT=90 bg "$PKTMAP" recv -i "$Kp}0" -T 0 -q
wait_output 1 listed "$Kp}0"
kpid=$(real_pid "$Kp}0")
[ "$kpid" -gt 0 ] || fail "no pid for $Kp}0"
ls /dev/shm/pktmap-stats.0/"$kpid".* >/dev/null 2>&1 || fail "no counters file for pid $kpid"
kill -KILL "$kpid"
while kill -0 "$kpid" 2>/dev/null; do sleep 0.05; done
expect_eq "killed recv's port listed" "$(listed "$Kp}0")" 0
if ls /dev/shm/pktmap-stats.0/"$kpid".* >/dev/null 2>&1; then
	fail "the killed process's counters file is still there"
fi
echo "5. SIGKILL: port gone, file removed"

# 6. another user: nobody sees none of root's ports; root sees nobody's.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	# The binaries where nobody can run them (the checkout may be private).
	ST=$TMP/stage
	mkdir -p "$ST/apps"
	cp "$PKTMAP" "$ST/apps/pktmap"
	cp -L "$B/libpktmap.so.0" "$ST/"
	chmod 755 "$TMP" "$ST" "$ST/apps"
	chmod 755 "$ST/apps/pktmap" "$ST/libpktmap.so.0"
	NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	as_nobody() { "${NOBODY[@]}" "$@"; }
	R="pipe:${PIPE}r"
	BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$R}0" -T 0 -q
	wait_output 1 listed "$R}0"
	O="pipe:${PIPE}o"
	BG_TIMEOUT=60 bg "${NOBODY[@]}" "$ST/apps/pktmap" recv -i "$O}0" -T 0 -q
	wait_output 1 listed "$O}0"
	expect_eq "root sees nobody's port" "$(listed "$O}0")" 1
	as_nobody "$ST/apps/pktmap" top --once -d 0 --json >"$TMP/nobody.json"
	python3 - "$TMP/nobody.json" "$R}0" "$O}0" <<'EOF' || fail "nobody's view: $(cat "$TMP/nobody.json")"
import json, sys
P = json.load(open(sys.argv[1]))["ports"]
names = [p["port"] for p in P]
assert sys.argv[2] not in names, "root's port shown to nobody"
assert all(p["uid"] != 0 for p in P), "a root port shown to nobody"
assert sys.argv[3] in names, "nobody's own port not shown"
EOF
	as_nobody "$ST/apps/pktmap" metrics >"$TMP/nobody.prom"
	if grep -q "uid=\"0\"" "$TMP/nobody.prom"; then
		fail "nobody's metrics show root's ports"
	fi
	grep -q "port=\"$O}0\"" "$TMP/nobody.prom" || fail "nobody's metrics miss its port"
	# Files nobody crafts in its own directory, named for its live recv:
	# root's readers must skip the broken ones, survive them, and print a
	# name full of escape sequences harmlessly.
	o_pid=$(real_pid "$O}0")
	ND="/dev/shm/pktmap-stats.$(id -u nobody)"
	# Whatever happens, the crafted files and nobody's directory go.
	drop_crafted() {
		local rc=$?
		rm -f "$ND/$o_pid".9* "$ND/1.950"
		rmdir "$ND" "/dev/shm/pktmap-$(id -u nobody)" 2>/dev/null || true
		(exit "$rc")
		cleanup
	}
	trap drop_crafted EXIT
	as_nobody /usr/bin/python3 - "$ND" "$o_pid" "$(awk '{print $22}' "/proc/$o_pid/stat")" <<'EOF'
import struct, sys
d, pid, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
MAGIC = 0x3174736d6b74706e
def hdr(size=4096, ring_ofs=768, n=(1, 0, 1, 0), name=b"pipe:crafted}0"):
    h = struct.pack("<QIII4I4IiIIQq", MAGIC, 1, size, ring_ofs, *n, 0, 0, 0, 0,
                    pid, 65534, 0, start, 0)
    h += b"zerocopy".ljust(16, b"\0") + b"pipe".ljust(16, b"\0") + b"r".ljust(64, b"\0")
    h += name.ljust(256, b"\0")[:256] + b"x".ljust(16, b"\0") + b"x".ljust(256, b"\0")
    return h.ljust(4096, b"\0")
files = {
    "garbage": b"\xff" * 4096,
    "rings": hdr(n=(0xffffffff, 0xffffffff, 1, 1)),
    "ofs": hdr(ring_ofs=0x7fffffc0),
    "size": hdr(size=0xffffffff),
    "short": hdr()[:100],
    "evil": hdr(name=b"pipe:\x1b[2J\x1b]0;owned\x07\xc2\x9b31m}0"),
}
for i, (k, data) in enumerate(files.items()):
    with open("%s/%d.%d" % (d, pid, 900 + i), "wb") as f:
        f.write(data)
# speaking for root's pid 1, and claiming to be root's
start1 = int(open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19])
pid = 1
with open("%s/1.950" % d, "wb") as f:
    f.write(hdr(name=b"pipe:spoofed}0")[:56] + struct.pack("<I", 0) +
            hdr(name=b"pipe:spoofed}0")[60:64] +
            struct.pack("<Q", start1) + hdr(name=b"pipe:spoofed}0")[72:])
EOF
	"$PKTMAP" top --once -d 0 --json >"$TMP/crafted.json" || fail "root's top on crafted files"
	"$PKTMAP" top --once -d 0 >"$TMP/crafted.txt" || fail "root's top (text) on crafted files"
	"$PKTMAP" metrics >"$TMP/crafted.prom" || fail "root's metrics on crafted files"
	# (only the files of this run's recv: another run of the suite may
	# have crafted the same beside it)
	python3 - "$TMP/crafted.json" "$O}0" "$o_pid" <<'EOF' || fail "crafted files: $(cat "$TMP/crafted.json")"
import json, sys
P = json.load(open(sys.argv[1]))["ports"]
names = [p["port"] for p in P]
ours = [p["port"] for p in P if p["pid"] == int(sys.argv[3])]
assert sys.argv[2] in ours, "nobody's real port lost"
evil = [n for n in ours if n.startswith("pipe:") and "}0" in n and "owned" in n]
assert len(evil) == 1 and all(32 <= ord(c) < 127 for c in evil[0]), evil
assert len(ours) == 2, "a broken file was shown: %s" % ours
assert "pipe:spoofed}0" not in names, "a file of nobody's shown as root's pid 1"
EOF
	if LC_ALL=C grep -q $'\x1b' "$TMP/crafted.txt" "$TMP/crafted.prom"; then
		fail "an escape sequence from another user's file reached root's output"
	fi
	rm -f "$ND/$o_pid".9* "$ND/1.950"
	kill "$BG_PID"
	wait "$BG_PID" 2>/dev/null || true
	# nobody's counters directory and the per-user directory its pipe made
	rmdir "/dev/shm/pktmap-stats.$(id -u nobody)" "/dev/shm/pktmap-$(id -u nobody)" \
		2>/dev/null || true
	echo "6. other user: nobody sees only its own ports, root sees all; crafted files skipped or defused"
elif [ "${CI:-}" = true ]; then
	fail "the other-user part needs root, nobody and setpriv"
fi

# 7. the table fits 80 columns; bad options are one line.
"$PKTMAP" top --once -d 0 --rings >"$TMP/table.txt"
awk 'length($0) > 80 { print "line " NR " is " length($0) " columns"; bad=1 } END { exit bad }' \
	"$TMP/table.txt" || fail "top's table is wider than 80 columns"
head -n 1 "$TMP/table.txt" | grep -q '^ *PID PROGRAM' || fail "no header: $(head -n 1 "$TMP/table.txt")"
for bad in "--sort size" "-d" "--json" "--bogus" "-d -1"; do
	# shellcheck disable=SC2086
	if "$PKTMAP" top $bad >"$TMP/bad.out" 2>"$TMP/bad.err"; then
		fail "top $bad succeeded"
	fi
	expect_eq "top $bad: error lines" "$(wc -l <"$TMP/bad.err")" 1
	grep -q '^pktmap: top: ' "$TMP/bad.err" || fail "top $bad: $(cat "$TMP/bad.err")"
done
echo "7. 80 columns; bad options: one line each"

# 8. Live, on a terminal (a pty): frames redrawn in place (cursor home,
# lines cleared to their end; the screen is cleared once, at start), the
# 'e' key expands rings, 'q' quits and gives the cursor back.
Lp="pipe:${PIPE}l"
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$Lp}0" -T 0 -q
wait_output 1 listed "$Lp}0"
python3 - "$PKTMAP" "$Lp}0" <<'EOF' || fail "live top"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    os.execv(sys.argv[1], [sys.argv[1], "top", "-d", "0.2", "--filter", sys.argv[2]])
def read_for(sec):
    out, end = b"", time.time() + sec
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out
first = read_for(1.0)
os.write(fd, b"e")
more = read_for(1.0)
os.write(fd, b"q")
rest = read_for(3.0)
_, status = os.waitpid(pid, 0)
out = first + more + rest
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "exit status %r" % status
assert out.count(b"\x1b[2J") == 1, "the screen is cleared more than once (flicker)"
assert out.count(b"\x1b[H") >= 3, "fewer than 3 frames in 2 s at -d 0.2"
assert b"\x1b[K" in out, "lines not cleared to their end"
assert sys.argv[2].encode() in first, "the port is not on screen"
assert b"rx ring 0" not in first and b"rx ring 0" in more, "'e' did not expand the rings"
assert b"\x1b[?25h" in rest, "cursor not given back"
for line in out.replace(b"\r", b"").split(b"\n"):
    for esc in (b"\x1b[H", b"\x1b[J", b"\x1b[2J", b"\x1b[?25l", b"\x1b[?25h",
                b"\x1b[1;31m", b"\x1b[33m", b"\x1b[0m", b"\x1b[K"):
        line = line.replace(esc, b"")
    assert len(line) <= 80, "a line of %d columns: %r" % (len(line), line)
EOF
echo "8. live: redrawn in place, 'e' expands, 'q' quits"
echo "PASS"
