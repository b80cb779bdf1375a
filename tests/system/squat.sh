#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Names that belong to their owner (issue 17): another user (nobody)
# takes every name root's pipes and switch will use, first; root's pipe
# and root's switch must work as if nobody had been there, and leave
# nothing of theirs behind. The test runs in a mount namespace of its own
# with a fresh tmpfs on /dev/shm, so that it can squat root's per-user
# directory itself without touching the machine's.
#
#   nobody: /dev/shm/pktmap-0 (a file, then a 0777 directory with files),
#           /dev/shm/pktmap.pipe.NAME and its FIFO names (the old layout),
#           the switch's old abstract socket name @pktmap.0.vale.NAME
#   root:   pipe:NAME{0 -> pipe:NAME}0, 1000 frames; pktmap switch NAME
#           with two clients, 100 frames
#   daemon: /dev/shm/pktmap-NOBODYUID (a 0755 directory); nobody, who
#           cannot move it, uses a directory of its own of another name:
#           pipe:NAME{0 -> pipe:NAME}0 as nobody, 1000 frames, before and
#           after daemon gives the name back
#   root of a user namespace mapped to nobody: nobody's directory,
#           pipe:NAME{0 -> pipe:NAME}0, 1000 frames, root's directory
#           untouched
#   nobody, not in nogroup: /dev/shm/pktmap-gNOGROUP (a 0777 directory)
#           and /dev/shm/pktmap.pipe.NAME; root's
#           pipe:NAME}0@conf:share=group:nogroup and a member's {0 (nobody
#           with nogroup) use a directory of the group's of another name,
#           1000 frames each way, before and after the name is given back
set -euo pipefail
if [ -z "${PKTMAP_SQUAT_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root" >&2; exit 77; }
	command -v unshare >/dev/null || { echo "FAIL: needs unshare" >&2; exit 1; }
	PKTMAP_SQUAT_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
need_cmd /usr/bin/python3
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
id daemon >/dev/null 2>&1 || skip "needs the user daemon"
mount -t tmpfs -o mode=1777 pktmap-squat /dev/shm

as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
UDIR=/dev/shm/pktmap-0

# pipe_works NAME [AS...]: 1000 frames from gen to recv through
# pipe:NAME (run by the command line AS, when given, e.g. as nobody).
pipe_works() {
	local p=$1 r
	shift
	BG_TIMEOUT=60 bg "$@" "$PKTMAP" recv -i "pipe:$p}0" -n 1000 -T 0 -q
	r=$BG_PID
	# root's directory as it is while the pipe is open (it goes with
	# the pipe's last file)
	UDIR_SEEN=
	if [ $# = 0 ]; then
		for _ in $(seq 300); do
			[ "$(stat -c %U "$UDIR/pipe.$p" 2>/dev/null)" = root ] && break
			sleep 0.05
		done
		UDIR_SEEN=$(stat -c '%U %a %F' "$UDIR")
	fi
	"$@" "$PKTMAP" gen -i "pipe:$p{0" -n 1000 -T 0 -q 2>"$TMP/gen.err" ||
		fail "pipe:$p: gen: $(cat "$TMP/gen.err")"
	wait_bg "$r"
	expect_eq "pipe:$p: recv exit" "$WAIT_RC" 0
}

# ours_left: root's files in /dev/shm (nobody's are the test's to remove).
ours_left() {
	local l
	l=$(find /dev/shm -user 0 -mindepth 1 ! -path "$UDIR" 2>/dev/null || true)
	[ -z "$l" ] || fail "$1: root's files left: $l"
}

echo "1. /dev/shm/pktmap-0 taken as a file"
as_nobody touch "$UDIR"
pipe_works "${PIPE}a"
[ "$UDIR_SEEN" = "root 700 directory" ] ||
	fail "per-user directory: $UDIR_SEEN"
[ ! -e "$UDIR" ] || fail "root's empty directory left: $(ls -la "$UDIR")"
ours_left "1"

echo "2. /dev/shm/pktmap-0 taken as a 0777 directory with a planted region"
rm -rf "$UDIR"
as_nobody mkdir -m 777 "$UDIR"
as_nobody /usr/bin/python3 - "$UDIR/pipe.${PIPE}b" <<'EOF'
import sys, struct
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<QII", 0x31524d544b50, 1, 0) + b"\xff" * (1 << 20))
EOF
pipe_works "${PIPE}b"
[ "$UDIR_SEEN" = "root 700 directory" ] || fail "directory not root's: $UDIR_SEEN"
[ ! -e "$UDIR" ] || fail "root's empty directory left"
ls -d /dev/shm/pktmap-0.squatted.* >/dev/null || fail "squatter's directory gone"
ours_left "2"

echo "3. the old flat names: region file, wake-up FIFOs, a link"
as_nobody touch "/dev/shm/pktmap.pipe.${PIPE}c"
as_nobody mkfifo -m 666 "/dev/shm/pktmap.pipe.${PIPE}c.w0.0.0r" \
	"/dev/shm/pktmap.pipe.${PIPE}c.w0.0.0t"
as_nobody ln -s /etc/passwd "/dev/shm/pktmap.pipe.${PIPE}c.w0.1.0r"
pipe_works "${PIPE}c"
ours_left "3"

echo "4. the switch's name: the old abstract socket, and a planted socket file"
SW="valeq$$"
chmod 777 "$TMP"
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 - "$SW" "$TMP/bound" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0pktmap.0.vale." + sys.argv[1])
s.listen(1)
open(sys.argv[2], "w").close()
time.sleep(60)
EOF
BG_PIDS+=("$!")
for _ in $(seq 200); do [ -e "$TMP/bound" ] && break; sleep 0.05; done
[ -e "$TMP/bound" ] || fail "nobody could not bind the abstract name"
BG_TIMEOUT=60 bg "$PKTMAP" switch "$SW" -T 0
sw=$BG_PID
for _ in $(seq 300); do "$PKTMAP" switch --list "$SW" >/dev/null 2>&1 && break; sleep 0.05; done
BG_TIMEOUT=60 bg "$SWITCH_CLIENT" "$SW:b" learn 02:00:00:00:00:0b
cl=$BG_PID
switch_wait_ports "$SW" b
"$PKTMAP" gen -i "$SW:a" -D 02:00:00:00:00:0b -n 100 -T 0 -q ||
	fail "gen through root's switch"
b_tx() {
	"$PKTMAP" switch --list --json "$SW" | python3 -c 'import json, sys
print([p["tx_frames"] for p in json.load(sys.stdin)["ports"] if p["port"] == "b"][0])'
}
wait_output 100 b_tx
expect_eq "frames the switch gave b" "$(b_tx)" 100
kill "$cl" "$sw"
wait "$sw" 2>/dev/null || true
wait "$cl" 2>/dev/null || true
ours_left "4"

echo "5. another user's directory: daemon takes nobody's name first"
stage_for_others
PKTMAP=$OTHER_PKTMAP
NUID=$(id -u nobody)
NDIR=/dev/shm/pktmap-$NUID
setpriv --reuid=daemon --regid=daemon --clear-groups mkdir -m 755 "$NDIR"
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups "${OTHER_ENV[@]}")
pipe_works "${PIPE}n" "${NOBODY[@]}"
spare=$(find /dev/shm -maxdepth 1 -name "pktmap-$NUID.*" -user nobody)
[ "$(echo "$spare" | wc -w)" = 1 ] || fail "nobody's own directories: '$spare'"
expect_eq "nobody's own directory" "$(stat -c '%U %a %F' "$spare")" "nobody 700 directory"
expect_eq "squatter's directory" "$(stat -c '%U %a' "$NDIR")" "daemon 755"
expect_eq "left in $spare" "$(find "$spare" -mindepth 1 | wc -l)" 0
# The squatter gives the name back: nobody keeps to its own directory.
rmdir "$NDIR"
pipe_works "${PIPE}m" "${NOBODY[@]}"
[ ! -e "$NDIR" ] || fail "$NDIR made again: nobody's processes would disagree"
expect_eq "left in $spare" "$(find "$spare" -mindepth 1 | wc -l)" 0
echo "5b. root of a user namespace mapped to nobody: nobody's directory, not root's"
# Its euid is 0 inside, 65534 outside: its names are nobody's (the spare
# nobody uses), and root's directory, which it cannot use, is not in its
# way (it was: "pktmap-0 belongs to uid 65534, and it cannot be moved
# away").
[ -d "$UDIR" ] || mkdir -m 700 "$UDIR"
squatted=$(find /dev/shm -maxdepth 1 -name 'pktmap-0.squatted.*' | wc -l)
pipe_works "${PIPE}u" "${NOBODY[@]}" unshare -U -r
expect_eq "root's directory" "$(stat -c '%U %a' "$UDIR")" "root 700"
expect_eq "root's directory moved aside" \
	"$(find /dev/shm -maxdepth 1 -name 'pktmap-0.squatted.*' | wc -l)" "$squatted"
expect_eq "left in $spare" "$(find "$spare" -mindepth 1 | wc -l)" 0
[ ! -e "$NDIR" ] || fail "5b. $NDIR made: nobody's processes would disagree"
echo "6. a region shared with a group: another user, not in it, takes its names first"
GID=$(getent group nogroup | cut -d: -f3)
GDIR=/dev/shm/pktmap-g$GID
# The squatter is nobody in the group daemon only: not a member of nogroup.
SQUAT=(setpriv --reuid=nobody --regid=daemon --clear-groups)
"${SQUAT[@]}" mkdir -m 777 "$GDIR"
"${SQUAT[@]}" touch "/dev/shm/pktmap.pipe.${PIPE}g" # the old flat name
shg="pipe:${PIPE}g"
gopt="@conf:share=group:nogroup"
# root receives; a member of the group (nobody with nogroup) sends
BG_TIMEOUT=60 bg "$PKTMAP" recv -i "$shg}0$gopt" -n 1000 -T 0 -q
r=$BG_PID
# fifos_in DIR: of the wake-up FIFOs the sender needs, how many the
# receiver has made (its RX ring's and the sender's TX ring's, made last:
# a sender that came first would make it, and the other user's last
# close could not remove it)
fifos_in() {
	local f n=0
	for f in "$1/pipe.${PIPE}g.w0.1.0r" "$1/pipe.${PIPE}g.w0.0.0t"; do
		[ -p "$f" ] && n=$((n + 1))
	done
	echo "$n"
}
# empty_in DIR WHAT: nothing left in DIR once the last user's close (or
# its cleaner) is done
empty_in() {
	for _ in $(seq 300); do
		[ "$(find "$1" -mindepth 1 | wc -l)" = 0 ] && return 0
		sleep 0.1
	done
	fail "$2: left in $1: $(find "$1" -mindepth 1)"
}
gspare=
for _ in $(seq 300); do
	gspare=$(find /dev/shm -maxdepth 1 -name "pktmap-g$GID.*" -type d)
	[ -n "$gspare" ] && [ "$(fifos_in "$gspare")" -ge 2 ] && break
	sleep 0.05
done
[ -n "$gspare" ] || fail "6. root made no directory of the group's"
expect_eq "6. the group's directory" "$(stat -c '%U %G %a %F' "$gspare")" \
	"root nogroup 3770 directory"
expect_eq "6. the squatter's" "$(stat -c '%U %a' "$GDIR")" "nobody 777"
"${NOBODY[@]}" "$PKTMAP" gen -i "$shg{0$gopt" -n 1000 -T 0 -q 2>"$TMP/gen.err" ||
	fail "6. the member's gen: $(cat "$TMP/gen.err")"
wait_bg "$r"
expect_eq "6. root's recv exit" "$WAIT_RC" 0
empty_in "$gspare" "6"
# The squatter gives the name back: the group keeps to its directory.
rmdir "$GDIR"
rm -f "/dev/shm/pktmap.pipe.${PIPE}g"
BG_TIMEOUT=60 bg "${NOBODY[@]}" "$PKTMAP" recv -i "$shg}0$gopt" -n 1000 -T 0 -q
r=$BG_PID
for _ in $(seq 300); do [ "$(fifos_in "$gspare")" -ge 2 ] && break; sleep 0.05; done
[ "$(fifos_in "$gspare")" -ge 2 ] || fail "6. the member did not use $gspare"
"$PKTMAP" gen -i "$shg{0$gopt" -n 1000 -T 0 -q || fail "6. root's gen"
wait_bg "$r"
expect_eq "6. the member's recv exit" "$WAIT_RC" 0
[ ! -e "$GDIR" ] || fail "$GDIR made again: the members would disagree"
empty_in "$gspare" "6, the member's"
l=$(find /dev/shm -user 0 -mindepth 1 ! -path "$UDIR" ! -path "$gspare" 2>/dev/null || true)
[ -z "$l" ] || fail "6: root's files left: $l"
echo "squat: ok"
