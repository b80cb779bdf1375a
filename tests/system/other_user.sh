#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Another local user (nobody, via setpriv) tries each attack of issue 8
# on root's pipes; every one must fail, and root's programs must keep
# working with a clear one-line error where a name was squatted:
#   1. join root's pipe (read its frames, inject its own)
#   2. squat a pipe's region file before root, with a crafted layout
#   3. plant a symbolic link where root's wake-up FIFO goes
#   4. hold a lock on a pktmap file: root's `pktmap ports` must not block
#   5. make root's `ports --gc` delete live regions (a "pktmap.pipe" file)
#   6. plant a FIFO of its own where root's wake-up FIFO goes
#   7. squat and lock the lock file of an interface's host rings (xdp:IF^)
# and, with no attacker, the last close of pipe:X must not delete the
# files of pipe:X.y. Sharing on purpose (@conf:share=group:) works, and
# leaves nothing behind whoever closes last (9: root first, then nobody).
# After every case nothing of the test's pipes is left in /dev/shm. And
# root without capabilities (dumpcap) joins full root's pipe (10).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
need_cmd /usr/bin/python3
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
# nobody runs a copy it can read, whatever the checkout's permissions.
stage_for_others

as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
NOBODY_FILES=()
NS="pmou$$"
rm_nobody_files() {
	rm -f "${NOBODY_FILES[@]}" 2>/dev/null || true
}
at_exit netns_del "$NS"
at_exit rm_nobody_files
# The directory of the regions shared with nogroup (src/groupdir.c).
GDIR="/dev/shm/pktmap-g$(getent group nogroup | cut -d: -f3)"
rm_shm_files() {
	rm -f /dev/shm/pktmap.*"$PIPE"* "$GDIR"/*"$PIPE"*
}
at_exit rm_shm_files

# What of this test's pipes is in /dev/shm (root's directory included),
# other than the files nobody planted.
shm_left() {
	local f n
	for f in /dev/shm/pktmap.*"$PIPE"* /dev/shm/pktmap-0/*"$PIPE"* "$GDIR"/*"$PIPE"*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		for n in "${NOBODY_FILES[@]}"; do [ "$f" = "$n" ] && continue 2; done
		echo "$f"
	done
}
# After each case nothing of it is left (a cleaner may still be removing
# the files of a close that could not: wait for it, up to 30 s).
no_shm_left() {
	for _ in $(seq 300); do [ -z "$(shm_left)" ] && return 0; sleep 0.1; done
	fail "$1: left behind: $(shm_left | tr '\n' ' ')"
}

# 1. Join root's pipe.
p="pipe:${PIPE}j"
BG_TIMEOUT=60 bg sh -c '"$1" recv -i "$2}0" -n 1000 -T 0 --json >"$3"' sh "$PKTMAP" "$p" "$TMP/join.json"
recv_pid=$BG_PID
for _ in $(seq 200); do [ -e "/dev/shm/pktmap-0/pipe.${PIPE}j" ] && break; sleep 0.05; done
[ -e "/dev/shm/pktmap-0/pipe.${PIPE}j" ] || fail "root's region did not appear"
mode=$(stat -c %a "/dev/shm/pktmap-0/pipe.${PIPE}j")
expect_eq "region mode" "$mode" 600
# Since issue 17 the same name is nobody's own pipe, in nobody's own
# directory: nobody's sender runs (with binaries it can read), and its
# frames go there, never into root's (recv below counts root's alone).
as_nobody "${OTHER_ENV[@]}" "$OTHER_PKTMAP" gen -i "$p{0" -n 10 -T 0 -q 2>"$TMP/join.err" ||
	fail "nobody's gen on its own pipe: $(cat "$TMP/join.err")"
[ -e "/dev/shm/pktmap-65534/pipe.${PIPE}j" ] && fail "nobody's pipe outlived its only user"
# Root's own sender still gets through, and recv counts only its frames.
"$PKTMAP" gen -i "$p{0" -n 1000 -T 0 -q
wait_bg "$recv_pid"
expect_eq "recv exit" "$WAIT_RC" 0
expect_eq "recv: packets, gaps, reordered" "$(json "$TMP/join.json" packets) \
$(json "$TMP/join.json" gaps) $(json "$TMP/join.json" reordered)" "1000 0 0"
rm -rf /dev/shm/pktmap-65534
echo "1. join: nobody's frames did not reach root's pipe"
no_shm_left "case 1"

# Since issue 17 root's files are in its own directory (/dev/shm/pktmap-0,
# 0700): what nobody plants at the old names in /dev/shm is not even
# looked at, and root's pipe works as if it were not there.
root_pipe_works() {
	BG_TIMEOUT=60 bg "$PKTMAP" recv -i "pipe:$1}0" -n 10 -T 0 -q
	local r=$BG_PID
	"$PKTMAP" gen -i "pipe:$1{0" -n 10 -T 0 -q 2>"$TMP/$2.err" ||
		fail "$2: $(cat "$TMP/$2.err")"
	wait_bg "$r"
	expect_eq "$2: recv exit" "$WAIT_RC" 0
}

# 2. Squat a region file, with a layout that once crashed recv.
sq="/dev/shm/pktmap.pipe.${PIPE}s"
NOBODY_FILES+=("$sq")
as_nobody /usr/bin/python3 - "$sq" <<'EOF'
import sys, struct
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<QII", 0x31524d544b50, 1, 0) + b"\xff" * (1 << 20))
EOF
root_pipe_works "${PIPE}s" squat
echo "2. squat: ignored, root's pipe works"
no_shm_left "case 2"

# 3. A symbolic link planted where root's FIFO will be.
victim="$TMP/victim"
echo untouched >"$victim"
chmod 644 "$victim"
ln -s "$victim" "/dev/shm/pktmap.pipe.${PIPE}f.w0.0.0r"
NOBODY_FILES+=("/dev/shm/pktmap.pipe.${PIPE}f.w0.0.0r")
root_pipe_works "${PIPE}f" link
expect_eq "victim file" "$(cat "$victim")" untouched
echo "3. planted link: ignored, target untouched"
no_shm_left "case 3"

# 4. A lock held on a pktmap file of nobody's: root's ports must finish.
lk="/dev/shm/pktmap.${PIPE}lock"
chmod 711 "$TMP"
mkdir -m 777 "$TMP/nb"
NOBODY_FILES+=("$lk")
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - "$lk" "$TMP/nb/locked" <<'EOF' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
os.ftruncate(fd, 8192)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0))
open(sys.argv[2], "w").close()
time.sleep(60)
EOF
locker=$!
BG_PIDS+=("$locker")
wait_for_file() { for _ in $(seq 400); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "no $1"; }
wait_for_file "$TMP/nb/locked"
timeout 20 "$PKTMAP" ports >"$TMP/ports.out" || fail "pktmap ports blocked or failed"
grep -q "${PIPE}lock" "$TMP/ports.out" && fail "ports lists nobody's file"
timeout 20 "$PKTMAP" ports --gc >/dev/null || fail "ports --gc blocked"
[ -e "$lk" ] || fail "gc removed nobody's file"
kill "$locker" 2>/dev/null || true
echo "4. lock held by nobody: ports and --gc finish, nobody's file left alone"
no_shm_left "case 4"

# 5. "pktmap.pipe" planted by nobody, and pipe:X.y next to pipe:X.
as_nobody touch /dev/shm/pktmap.pipe
NOBODY_FILES+=(/dev/shm/pktmap.pipe)
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "pipe:${PIPE}x.y}0" -n 500 -T 0 -q
xy=$BG_PID
for _ in $(seq 200); do ls /dev/shm/pktmap-0/pipe."${PIPE}"x.y.w* >/dev/null 2>&1 && break; sleep 0.05; done
ls /dev/shm/pktmap-0/pipe."${PIPE}"x.y.w* >/dev/null 2>&1 || fail "x.y FIFOs missing"
"$PKTMAP" ports --gc >/dev/null
# The last close of pipe:X (a whole gen -> recv run) ...
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "pipe:${PIPE}x}0" -n 100 -T 0 -q
xr=$BG_PID
"$PKTMAP" gen -i "pipe:${PIPE}x{0" -n 100 -T 0 -q
wait_bg "$xr"
[ -e "/dev/shm/pktmap-0/pipe.${PIPE}x" ] && fail "pipe:X's region left"
# ... leaves pipe:X.y's region and FIFOs alone, and X.y still works.
[ -e "/dev/shm/pktmap-0/pipe.${PIPE}x.y" ] || fail "gc or close removed x.y's region"
ls /dev/shm/pktmap-0/pipe."${PIPE}"x.y.w* >/dev/null 2>&1 || fail "close of X removed x.y's FIFOs"
"$PKTMAP" gen -i "pipe:${PIPE}x.y{0" -n 500 -T 0 -q
wait_bg "$xy"
expect_eq "x.y recv exit" "$WAIT_RC" 0
echo "5. pktmap.pipe planted, pipe:X closed: pipe:X.y untouched and working"
no_shm_left "case 5"

# 6. A FIFO of nobody's where root's wake-up FIFO goes: refused, one line.
as_nobody mkfifo -m 666 "/dev/shm/pktmap.pipe.${PIPE}q.w0.0.0t"
NOBODY_FILES+=("/dev/shm/pktmap.pipe.${PIPE}q.w0.0.0t")
root_pipe_works "${PIPE}q" fifo
echo "6. planted FIFO: ignored, root's pipe works"
no_shm_left "case 6"

# 7. The lock file of an interface's host rings (the XDP program itself
# needs none: it is shared through a BPF link), squatted and locked by
# nobody: root's xdp:IF^ open fails at once with one line, no blocking.
netns_new "$NS"
netns_veth "$NS" va "$NS" vb
ino=$(ip netns exec "$NS" stat -L -c %i /proc/self/ns/net)
idx=$(ip -n "$NS" -o link show va | cut -d: -f1)
xl="/dev/shm/pktmap-xdphost.$ino.$idx.lock"
NOBODY_FILES+=("$xl")
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - "$xl" "$TMP/nb/xlocked" <<'EOF' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0))
open(sys.argv[2], "w").close()
time.sleep(60)
EOF
xlocker=$!
BG_PIDS+=("$xlocker")
wait_for_file "$TMP/nb/xlocked"
set +e
ip netns exec "$NS" timeout 20 "$PKTMAP" recv -i 'xdp:va^' -n 1 -T 0 -q 2>"$TMP/xdp.err"
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "xdp: recv exit $rc: $(cat "$TMP/xdp.err")"
grep -q "belongs to uid 65534" "$TMP/xdp.err" || fail "xdp: $(cat "$TMP/xdp.err")"
kill "$xlocker" 2>/dev/null || true
echo "7. host-ring lock file squatted and locked: refused at once"
no_shm_left "case 7"

# Sharing on purpose: root creates with @conf:share=group:nogroup, and
# nobody (in that group) sends through it.
sh="pipe:${PIPE}g"
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$sh}0@conf:share=group:nogroup" -n 200 -T 0 -q
shr=$BG_PID
for _ in $(seq 200); do [ -e "$GDIR/pipe.${PIPE}g.w0.0.0t" ] && break; sleep 0.05; done
expect_eq "shared region mode" "$(stat -c '%a %G' "$GDIR/pipe.${PIPE}g")" "660 nogroup"
expect_eq "the group's directory" "$(stat -c '%a %G %F' "$GDIR")" "3770 nogroup directory"
setpriv --reuid=nobody --regid=nogroup --init-groups "${OTHER_ENV[@]}" "$OTHER_PKTMAP" gen \
	-i "$sh{0@conf:share=group:nogroup" -n 200 -T 0 -q || fail "nobody could not use the shared pipe"
wait_bg "$shr"
expect_eq "shared recv exit" "$WAIT_RC" 0
echo "8. @conf:share=group:nogroup: nobody sends, root receives"
no_shm_left "case 8"

# 9. The same, closed in the order that once left root's files behind:
# root's users first, then nobody's, who cannot remove root's files in
# sticky /dev/shm. Root's cleaner waits for the region's last user and
# removes them.
h="pipe:${PIPE}h"
gopt="@conf:share=group:nogroup,bufs=16384"
as_group() {
	setpriv --reuid=nobody --regid=nogroup --init-groups "${OTHER_ENV[@]}" "$OTHER_PKTMAP" "$@"
}
BG_TIMEOUT=60 bg sh -c '"$1" recv -i "$2}0$3" -n 100 -T 0 --json >"$4"' sh "$PKTMAP" "$h" "$gopt" "$TMP/h0.json"
hr0=$BG_PID
for _ in $(seq 200); do [ -e "$GDIR/pipe.${PIPE}h" ] && break; sleep 0.05; done
BG_TIMEOUT=60 bg sh -c '"$@" >"$0"' "$TMP/h1.json" setpriv --reuid=nobody --regid=nogroup --init-groups \
	"${OTHER_ENV[@]}" "$OTHER_PKTMAP" recv -i "$h}1$gopt" -n 100 -T 0 --json
hr1=$BG_PID
# (nobody's recv holds the region once its end's two FIFOs are there)
h_fifos() { find "$GDIR" -maxdepth 1 -name "pipe.${PIPE}h.w*" -user nobody | wc -l; }
for _ in $(seq 400); do [ "$(h_fifos)" -ge 2 ] && break; sleep 0.05; done
[ "$(h_fifos)" -ge 2 ] || fail "9. nobody's recv did not join"
"$PKTMAP" gen -i "$h{0$gopt" -n 100 -T 0 -q
wait_bg "$hr0"
expect_eq "9. root's recv exit" "$WAIT_RC" 0
expect_eq "9. root's recv: packets, gaps, reordered" "$(json "$TMP/h0.json" packets) \
$(json "$TMP/h0.json" gaps) $(json "$TMP/h0.json" reordered)" "100 0 0"
[ -e "$GDIR/pipe.${PIPE}h" ] || fail "9. the region went while nobody's recv holds it"
as_group gen -i "$h{1$gopt" -n 100 -T 0 -q || fail "9. nobody's gen failed"
wait_bg "$hr1"
expect_eq "9. nobody's recv exit" "$WAIT_RC" 0
expect_eq "9. nobody's recv: packets, gaps, reordered" "$(json "$TMP/h1.json" packets) \
$(json "$TMP/h1.json" gaps) $(json "$TMP/h1.json" reordered)" "100 0 0"
no_shm_left "case 9"
echo "9. shared pipe, root closes first and nobody last: nothing left"

# 10. Not another user: root that has dropped every capability (as dumpcap
# does) joins a pipe made by root with all of them, so the kernel refuses
# it the holder's memfd in /proc (ptrace access mode). It gets it from the
# holder's cleaner process instead (its socket), and its frames all
# arrive, bytes and all.
nocaps() { setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all "$@"; }
nocaps grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || fail "10. setpriv left capabilities"
c="pipe:${PIPE}c"
BG_TIMEOUT=60 bg sh -c '"$1" recv -i "$2}0" -n 1000 -T 0 --json >"$3"' sh "$PKTMAP" "$c" "$TMP/c.json"
cr=$BG_PID
for _ in $(seq 200); do [ -e "/dev/shm/pktmap-0/pipe.${PIPE}c" ] && break; sleep 0.05; done
nocaps "$PKTMAP" gen -i "$c{0" -n 1000 -l 100 -T 0 -q 2>"$TMP/c.err" ||
	fail "10. gen without capabilities: $(cat "$TMP/c.err")"
wait_bg "$cr"
expect_eq "10. recv exit" "$WAIT_RC" 0
expect_eq "10. recv: packets, bytes, gaps, reordered" "$(json "$TMP/c.json" packets) \
$(json "$TMP/c.json" bytes) $(json "$TMP/c.json" gaps) $(json "$TMP/c.json" reordered)" "1000 100000 0 0"
no_shm_left "case 10"
echo "10. root without capabilities joins full root's pipe: every frame arrives"
echo "other_user: ok"
