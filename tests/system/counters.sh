#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Counters files (src/pub.h, docs/metrics.md) against their readers, as
# another user would attack them (nobody, and uid 65533: a user with no
# name, via setpriv):
#
#   1. nobody rewrites the header of its own live port's file as fast as
#      it can (pub_racer: ring offset, ring count and size flipped between
#      good and bad) while root runs `top --once`, `metrics` and scrapes
#      `metrics --listen` 100 times each: no reader dies
#   2. one 1024-ring file of nobody's under 300 names (hard links): read
#      once (one port in top and in metrics, the page stays small); more
#      1024-ring files than a scan reads for one user: the rest counted as
#      skipped, root's own port still shown
#   3. a file of uid 65533 in nobody's directory (which nobody opened to
#      everyone), and a directory named for uid 65533 that nobody made,
#      holding a live port's file of 65533's: neither is shown (the
#      owner checks of the file and of the directory, each on its own)
#   4. nobody makes root's counters directory first: root's port is
#      published all the same (the squatter's directory moved aside),
#      top lists it and a monitor opens on it; nobody squats 65533's:
#      65533's port is published in a directory of its own, which root
#      and 65533 read
#
# All of it in a mount namespace of its own with a /dev/shm of its own
# (tmpfs), so that squatting root's counters directory touches no other
# program, and two runs of the suite never meet.
set -euo pipefail
if [ -z "${COUNTERS_SHM:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	COUNTERS_SHM=1 exec unshare --mount --propagation private "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
need_root
need_cmd unshare
mount -t tmpfs -o mode=1777,size=256m "pktmap-counters-$$" /dev/shm
need_cmd setpriv
need_cmd curl
need_cmd /usr/bin/python3
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
: "${PUB_RACER:?PUB_RACER must name the pub_racer binary}"
stage_for_others
cp "$PUB_RACER" "$STAGE/pub_racer"
chmod 755 "$STAGE/pub_racer"

NUID=$(id -u nobody)
XUID=65533 # a second user, with no name
id -nu "$XUID" >/dev/null 2>&1 && [ "$(id -u "$(id -nu "$XUID")")" != "$XUID" ] &&
	skip "uid $XUID is in use"
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
AS_X=(setpriv --reuid="$XUID" --regid="$XUID" --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }
as_x() { "${AS_X[@]}" "$@"; }
ND=/dev/shm/pktmap-stats.$NUID

# topq EXPR: EXPR over P, the ports of root's `top --once -d 0 --json`
# (S: its "skipped").
topq() {
	"$PKTMAP" top --once -d 0 --json >"$TMP/top.json"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); P=d["ports"]; S=d["skipped"]; print(eval(sys.argv[2]))' \
		"$TMP/top.json" "$1"
}
listed() { topq "sum(1 for p in P if p['port']=='$1')"; }
real_pid() { topq "([p['pid'] for p in P if p['port']=='$1'] + [0])[0]"; }
# child_of PID: the process bg's timeout PID started.
child_of() {
	local c
	until c=$(pgrep -P "$1"); do kill -0 "$1" || fail "$1 is gone"; done
	echo "$c"
}

# craft FILE PID NAME NTX NRX [UID [LATER]]: a valid counters file of
# NTX + NRX rings, every one bound, for the live process PID (started
# LATER clock ticks after it did: a process that had its pid before;
# written by whoever runs it).
cat >"$STAGE/craft.py" <<'EOF'
import struct, sys
path, pid, name, ntx, nrx = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
uid = int(sys.argv[6]) if len(sys.argv) > 6 else 0
stat = open("/proc/%d/stat" % pid).read()
start = int(stat.rsplit(")", 1)[1].split()[19]) + (int(sys.argv[7]) if len(sys.argv) > 7 else 0)
n = ntx + nrx
size = (768 + 64 * n + 4095) // 4096 * 4096
h = struct.pack("<QIII4I4IiIIQq", 0x3174736d6b74706e, 1, size, 768, ntx, 0, nrx, 0,
                0, max(ntx, 1) - 1, 0, max(nrx, 1) - 1, pid, uid, 0, start, 0)
h += b"zerocopy".ljust(16, b"\0") + b"pipe".ljust(16, b"\0") + b"crafted".ljust(64, b"\0")
h += name.encode().ljust(256, b"\0") + b"crafted".ljust(16, b"\0") + b"crafted".ljust(256, b"\0")
h = h.ljust(768, b"\0")
for i in range(n):
    h += struct.pack("<8Q", 1000 + i, 64000 + i, 10, 0, 0, 0, 0, 0)
open(path, "wb").write(h.ljust(size, b"\0"))
EOF
chmod 644 "$STAGE/craft.py"
craft() { /usr/bin/python3 "$STAGE/craft.py" "$@"; }

CRAFTED=()

# nobody's port, whose file the attacks below use.
O="pipe:${PIPE}o"
BG_TIMEOUT=200 bg "${NOBODY[@]}" "${OTHER_ENV[@]}" "$OTHER_PKTMAP" recv -i "$O}0" -T 0 -q
wait_output 1 listed "$O}0"
expect_eq "nobody's port listed" "$(listed "$O}0")" 1
o_pid=$(real_pid "$O}0")
o_file=$(grep -l -F "$O}0" "$ND/$o_pid".* | head -n 1)
[ -n "$o_file" ] || fail "no counters file of pid $o_pid in $ND"

# 1. The racer, and root's readers in a loop.
BG_TIMEOUT=200 bg "${NOBODY[@]}" "$STAGE/pub_racer" "$o_file" >"$TMP/racer.out"
racer=$BG_PID
wait_for "$TMP/racer.out" '^racing$'
BG_TIMEOUT=200 bg "$PKTMAP" metrics --listen 127.0.0.1:0 >"$TMP/metrics.out"
server=$BG_PID
wait_for "$TMP/metrics.out" '^pktmap metrics: listening on '
url=$(grep -o 'http://[^ ]*' "$TMP/metrics.out")
for i in $(seq 100); do
	rc=0
	"$PKTMAP" top --once -d 0 --json >/dev/null || rc=$?
	[ "$rc" = 0 ] || fail "root's top --once (run $i) died as nobody raced: exit $rc"
	"$PKTMAP" metrics >/dev/null || rc=$?
	[ "$rc" = 0 ] || fail "root's metrics (run $i) died as nobody raced: exit $rc"
	curl -sf --max-time 10 -o /dev/null "$url" ||
		fail "scrape $i failed as nobody raced (listener alive: $(kill -0 "$server" 2>&1 && echo yes))"
done
kill -0 "$racer" 2>/dev/null || fail "the racer stopped: $(cat "$TMP/racer.out")"
# SIGTERM: the racer puts the good header back and exits 0.
kill "$racer"
wait_bg "$racer"
expect_eq "the racer's exit" "$WAIT_RC" 0
echo "1. nobody raced its file's header: 100 top, 100 metrics, 100 scrapes by root, none died"

# 2. One file, 300 names; then more rings than one user's share.
R="pipe:${PIPE}r"
BG_TIMEOUT=200 bg "$PKTMAP" recv -i "$R}0" -T 0 -q
r_recv=$BG_PID
wait_output 1 listed "$R}0"
L="pipe:${PIPE}links}0"
as_nobody /bin/sh -c 'python3 "$0" "$1/$2.800" "$2" "$3" 512 512 && i=801 &&
	while [ $i -lt 1100 ]; do ln "$1/$2.800" "$1/$2.$i"; i=$((i + 1)); done' \
	"$STAGE/craft.py" "$ND" "$o_pid" "$L"
for i in $(seq 800 1099); do CRAFTED+=("$ND/$o_pid.$i"); done
expect_eq "names of the linked file" "$(stat -c %h "$ND/$o_pid.800")" 300
expect_eq "a file of 300 names in top" "$(listed "$L")" 1
"$PKTMAP" metrics >"$TMP/links.prom"
expect_eq "a file of 300 names in metrics" \
	"$(grep -c "^pktmap_port_info{port=\"$L\"" "$TMP/links.prom")" 1
expect_eq "its rings in metrics" \
	"$(grep -c "^pktmap_port_packets_total{port=\"$L\"" "$TMP/links.prom")" 1024
bytes=$(wc -c <"$TMP/links.prom")
[ "$bytes" -lt 4000000 ] || fail "the page of one 1024-ring file is $bytes bytes"
# Ten more 1024-ring files: a scan keeps HP_USER_RINGS (8192) rings of
# one user's, so at most 8 of nobody's 1024-ring files are shown.
for i in $(seq 1200 1209); do
	as_nobody /usr/bin/python3 "$STAGE/craft.py" "$ND/$o_pid.$i" "$o_pid" "pipe:${PIPE}big$i}0" 512 512
	CRAFTED+=("$ND/$o_pid.$i")
done
big=$(topq "sum(1 for p in P if p['port'].startswith('pipe:${PIPE}big') or p['port']=='$L')")
skipped=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["skipped"])' "$TMP/top.json")
root_seen=$(python3 -c 'import json,sys; print(sum(1 for p in json.load(open(sys.argv[1]))["ports"] if p["port"] == sys.argv[2]))' \
	"$TMP/top.json" "$R}0")
[ "$big" -le 8 ] || fail "$big of nobody's 1024-ring files shown (at most 8)"
[ $((big + skipped)) -ge 11 ] || fail "$big shown + $skipped skipped: some went unreported"
expect_eq "root's own port among them" "$root_seen" 1
"$PKTMAP" metrics >"$TMP/big.prom"
mskipped=$(sed -n 's/^pktmap_ports_skipped //p' "$TMP/big.prom")
[ "$mskipped" -ge 3 ] || fail "metrics: pktmap_ports_skipped $mskipped, want >= 3"
grep -q "^pktmap_port_info{port=\"$R}0\"" "$TMP/big.prom" || fail "metrics lost root's port"
rm -f "${CRAFTED[@]}"
CRAFTED=()
echo "2. 300 names: one port, $bytes bytes; 11 big files: $big shown, $skipped skipped, root's port shown"

# 2b. The other bounds of one user's share, exactly (this /dev/shm is
# ours: nobody's only other file is its recv's): 2049 one-ring files and
# the recv are 2050 ports, 2048 are kept (HP_USER_PORTS); then 250
# files of 68 KiB (the largest a port writes) with one ring each are
# 17 MiB, 240 are read (HP_USER_BYTES, 16 MiB, with the recv's 4 KiB).
nobody_ports() { # nobody_ports: "shown skipped" of nobody's ports
	topq "'%d %d' % (sum(1 for p in P if p['uid'] == $NUID), S)"
}
# craft_many NAME COUNT SIZE: COUNT one-ring files of nobody's, each
# SIZE bytes, naming port NAME of nobody's recv.
craft_many() {
	as_nobody /usr/bin/python3 - "$STAGE/craft.py" "$ND" "$o_pid" "$1" "$2" "$3" <<'EOF'
import subprocess, sys
craft, d, pid, name, count, size = sys.argv[1:]
src = "%s/%s.50000" % (d, pid)
subprocess.check_call(["/usr/bin/python3", craft, src, pid, name + "}0", "1", "1"])
data = open(src, "rb").read()
data = data.ljust(int(size), b"\0")
for i in range(int(count)):
    open("%s/%s.%d" % (d, pid, 50000 + i), "wb").write(data)
EOF
}
craft_many "pipe:${PIPE}many" 2049 4096
expect_eq "2049 one-ring files and a recv of nobody's: shown, skipped" "$(nobody_ports)" "2048 2"
rm -f "$ND/$o_pid".5????
craft_many "pipe:${PIPE}wide" 250 69632
expect_eq "250 files of 68 KiB and a recv of nobody's: shown, skipped" "$(nobody_ports)" "241 10"
rm -f "$ND/$o_pid".5????
expect_eq "nobody's recv alone again" "$(nobody_ports)" "1 0"
echo "2b. 2050 ports of one user: 2048 kept; 17 MiB of one user's files: 16 MiB read"

# 3a. A file of uid 65533's in nobody's directory, opened to everyone by
# nobody: not nobody's port (the file's owner is checked).
as_nobody chmod 777 "$ND"
F="pipe:${PIPE}foreign}0"
as_x /usr/bin/python3 "$STAGE/craft.py" "$ND/$o_pid.1300" "$o_pid" "$F" 1 1 "$NUID"
as_nobody chmod 700 "$ND"
[ "$(stat -c %u "$ND/$o_pid.1300")" = "$XUID" ] || fail "the foreign file is not uid $XUID's"
expect_eq "another user's file in nobody's directory" "$(listed "$F")" 0
expect_eq "nobody's port still shown" "$(listed "$O}0")" 1
rm -f "$ND/$o_pid.1300"
# A file for nobody's live pid whose start time is not the process's (a
# port of a process that had the pid before): not shown. A FIFO named
# like a counters file: the readers do not wait on it (the timeout only
# keeps a hang from hanging the suite).
as_nobody /usr/bin/python3 "$STAGE/craft.py" "$ND/$o_pid.1301" "$o_pid" "pipe:${PIPE}stale}0" 1 1 "$NUID" 1
expect_eq "a port of the pid's previous process" "$(listed "pipe:${PIPE}stale}0")" 0
as_nobody mkfifo "$ND/$o_pid.1302"
timeout 60 "$PKTMAP" top --once -d 0 >/dev/null || fail "top --once with a FIFO among the files: $?"
timeout 60 "$PKTMAP" metrics >/dev/null || fail "metrics with a FIFO among the files: $?"
rm -f "$ND/$o_pid.1301" "$ND/$o_pid.1302"
# 3b. A directory named for uid 65533 that nobody made (and opened to
# everyone), with a file of 65533's for a live process of 65533's: not
# 65533's port (the directory's owner is checked).
XD=/dev/shm/pktmap-stats.$XUID
as_nobody mkdir "$XD"
as_nobody chmod 777 "$XD"
BG_TIMEOUT=200 bg "${AS_X[@]}" sleep 300
x_pid=$(child_of "$BG_PID")
while [ "$(stat -c %u "/proc/$x_pid")" != "$XUID" ]; do :; done
# setpriv has exec'd sleep as uid 65533 (the loop above); its file:
D="pipe:${PIPE}xdir}0"
as_x /usr/bin/python3 "$STAGE/craft.py" "$XD/$x_pid.1" "$x_pid" "$D" 1 1 "$XUID"
[ "$(stat -c %u "$XD/$x_pid.1")" = "$XUID" ] || fail "the file is not uid $XUID's"
expect_eq "a port file in a directory another user made" "$(listed "$D")" 0
rm -rf "$XD"
echo "3. a file of another owner, a stale file, a FIFO, a directory of another owner: none shown, nothing waits"

# 4a. nobody makes root's counters directory before root's next port.
stop_bg "$r_recv"
wait_bg "$r_recv"
SQ="pipe:${PIPE}sq"
[ ! -e /dev/shm/pktmap-stats.0 ] || fail "root's counters directory is still there"
as_nobody mkdir /dev/shm/pktmap-stats.0
BG_TIMEOUT=200 bg "$PKTMAP" recv -i "$SQ}0" -T 0 -q
sq_pid=$(child_of "$BG_PID")
# (waiting for its file, not for top: cheaper, so the wait is short
# when the file never comes)
wait_output 1 sh -c "ls /dev/shm/pktmap-stats.0/$sq_pid.* 2>/dev/null | wc -l"
expect_eq "root's port in a squatted counters directory" "$(listed "$SQ}0")" 1
expect_eq "root's counters directory's owner" "$(stat -c %u /dev/shm/pktmap-stats.0)" 0
# A monitor of it (found through the counters directory): it sees the
# frames gen sends until it has one.
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$SQ}0/r" -T 0 -q -n 1 >"$TMP/mon.out" 2>&1
mon=$BG_PID
while kill -0 "$mon" 2>/dev/null; do
	"$PKTMAP" gen -i "$SQ{0" -n 1 -T 0 -q >/dev/null
done
wait_bg "$mon"
expect_eq "a monitor of root's port: exit ($(cat "$TMP/mon.out"))" "$WAIT_RC" 0
echo "4a. root's counters directory squatted: moved aside, the port published, a monitor opens"
# The squatter's directory, moved aside by our recv (evict() in
# src/userdir.c names it after the mover; another root process may have
# moved it first): ours to remove, as its maker.
as_nobody find /dev/shm -maxdepth 1 -name "pktmap-stats.0.squatted.$sq_pid.*" -exec rm -rf {} +
# 4b. nobody makes 65533's directory first: 65533 publishes in one of its
# own, which 65533's top and root's read.
as_nobody mkdir "$XD"
X="pipe:${PIPE}x"
BG_TIMEOUT=200 bg "${AS_X[@]}" "${OTHER_ENV[@]}" "$OTHER_PKTMAP" recv -i "$X}0" -T 0 -q
wait_output 1 listed "$X}0"
expect_eq "65533's port, its directory squatted, in root's top" "$(listed "$X}0")" 1
as_x "${OTHER_ENV[@]}" "$OTHER_PKTMAP" top --once -d 0 --json >"$TMP/x.json"
expect_eq "... in its own top" "$(python3 -c 'import json,sys; print(sum(1 for p in json.load(open(sys.argv[1]))["ports"] if p["port"] == sys.argv[2]))' "$TMP/x.json" "$X}0")" 1
expect_eq "... and its uid" "$(topq "[p['uid'] for p in P if p['port']=='$X}0'][0]")" "$XUID"
BG_TIMEOUT=60 bg "${AS_X[@]}" "${OTHER_ENV[@]}" "$OTHER_PKTMAP" recv -i "$X}0/r" -T 0 -q -n 1 >"$TMP/xmon.out" 2>&1
mon=$BG_PID
while kill -0 "$mon" 2>/dev/null; do
	as_x "${OTHER_ENV[@]}" "$OTHER_PKTMAP" gen -i "$X{0" -n 1 -T 0 -q >/dev/null
done
wait_bg "$mon"
expect_eq "a monitor of 65533's port: exit ($(cat "$TMP/xmon.out"))" "$WAIT_RC" 0
echo "4b. 65533's counters directory squatted: published in one of its own, seen by it and by root, a monitor opens"
echo PASS
