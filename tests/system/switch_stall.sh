#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A forwarder never waits on a client (issue 17). A hostile client of the
# switch's own uid attaches port h, takes the structure lock of its pipe's
# region, and disconnects while a process of its keeps holding the lock.
# Closing h's pipe waits for that lock (the library's 5 s deadline); the
# switch must detach h at once and leave the close to its closing thread:
#   - a request made right after the disconnect is answered well before
#     the deadline (bound: 2.5 s, half of it: a switch that waited for
#     the lock answers after 5 s, a busy machine adds milliseconds), and
#     h is no longer listed;
#   - 1000 frames from a to b arrive, every one, while the lock is held;
#   - once the holder lets go, h's files are removed (nothing left).
# Then a client that holds its @mem: region's lock and asks, again and
# again, for a port in that region (VALE_OPEN with the region): every
# request is refused at once (-EBUSY, "does not wait"), never waited on
# (the library's wait was 5 s a request), and counted (busy_refused in
# the switch's summary); 1000 frames a -> b arrive while the holder still
# holds the lock and still asks.
# Then the connection limit per uid: 254 idle connections of root's, and
# the next client is refused with a line that names the limit.
#
#   switch_client b <---- switch ----> gen a
#                           |
#                 h: VALE_OPEN, lock byte 0 of h's region, close the socket
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need_cmd /usr/bin/python3
: "${SWITCH_CLIENT:?SWITCH_CLIENT must name the switch_client binary}"

SW="vales$$"
UDIR="/dev/shm/pktmap-$(id -u)"
BG_TIMEOUT=120 bg "$PKTMAP" switch "$SW" -T 0
for _ in $(seq 300); do "$PKTMAP" switch --list "$SW" >/dev/null 2>&1 && break; sleep 0.05; done
BG_TIMEOUT=120 bg "$SWITCH_CLIENT" "$SW:b" learn 02:00:00:00:00:0b
switch_wait_ports "$SW" b

# The hostile client: the control protocol of src/vale_proto.h.
cat >"$TMP/hostile.py" <<'EOF'
import fcntl, os, socket, struct, sys, time
sock, region_dir, out = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sock)
req = struct.pack("<4I64s64s256s", 0x454c4156, 1, 1, 0, b"h", b"", b"")
s.send(req)
rep = s.recv(4096)
magic, version, op, status = struct.unpack_from("<3Ii", rep)
assert op == 16, rep[16:272].split(b"\0")[0]
pipe = rep[272:336].split(b"\0")[0].decode()
fd = os.open(os.path.join(region_dir, "pipe." + pipe), os.O_RDWR)
# waits while the recv still holds it to finish its open
fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0))
s.close()  # the switch sees h leave; we keep the lock
with open(out, "w") as f:
    f.write(pipe + "\n")
time.sleep(float(sys.argv[4]))
EOF
BG_TIMEOUT=120 bg /usr/bin/python3 "$TMP/hostile.py" "$UDIR/.$SW.sock" "$UDIR" \
	"$TMP/hpipe" 60
holder=$BG_PID
for _ in $(seq 300); do [ -s "$TMP/hpipe" ] && break; sleep 0.05; done
[ -s "$TMP/hpipe" ] || fail "the hostile client did not get a port"
hpipe=$(cat "$TMP/hpipe")
t0=$(date +%s%N)
"$PKTMAP" switch --list "$SW" >"$TMP/list"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "1. the switch answered ${ms} ms after h left holding its lock"
[ "$ms" -lt 2500 ] || fail "the switch waited ${ms} ms on a lock a client holds"
grep -q '^h ' "$TMP/list" && fail "h still attached: $(cat "$TMP/list")"

"$PKTMAP" gen -i "$SW:a" -D 02:00:00:00:00:0b -n 1000 -T 0 -q || fail "gen"
# b_tx [SWITCH]: the frames the switch ($SW) gave port b
b_tx() {
	"$PKTMAP" switch --list --json "${1:-$SW}" | python3 -c 'import json, sys
print([p["tx_frames"] for p in json.load(sys.stdin)["ports"] if p["port"] == "b"][0])'
}
wait_output 1000 b_tx
expect_eq "frames the switch gave b" "$(b_tx)" 1000
kill -0 "$holder" 2>/dev/null || fail "the lock holder ended early"
echo "2. 1000 frames a -> b while h's lock was held"

kill "$holder"
wait "$holder" 2>/dev/null || true
for _ in $(seq 200); do [ -e "$UDIR/pipe.$hpipe" ] || break; sleep 0.05; done
l=$(ls -d "$UDIR/pipe.$hpipe"* 2>/dev/null || true)
[ -z "$l" ] || fail "h's files left after the lock was released: $l"
echo "3. h's pipe closed and removed once the lock was let go"

SW2="valet$$"
R="${PIPE}swr"
BG_TIMEOUT=120 bg "$PKTMAP" switch "$SW2" -T 0 -q --json >"$TMP/sw2.json"
sw2=$BG_PID
for _ in $(seq 300); do "$PKTMAP" switch --list "$SW2" >/dev/null 2>&1 && break; sleep 0.05; done
BG_TIMEOUT=120 bg "$SWITCH_CLIENT" "$SW2:b" learn 02:00:00:00:00:0b
switch_wait_ports "$SW2" b
# region R exists while this recv holds it
BG_TIMEOUT=120 bg "$PKTMAP" recv -i "pipe:${R}k}0@mem:$R" -T 0 -q
for _ in $(seq 300); do [ -e "$UDIR/$R" ] && break; sleep 0.05; done
[ -e "$UDIR/$R" ] || fail "region $R was not made"
cat >"$TMP/asker.py" <<'EOF'
import fcntl, os, socket, struct, sys, time
sock, region_file, region, out, stop = sys.argv[1:6]
fd = os.open(region_file, os.O_RDWR)
# waits while the recv still holds it to finish its open
fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0))
n = 0
while not os.path.exists(stop):
    # one connection a request: the switch ends one whose open failed
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sock)
    req = struct.pack("<4I64s64s256s", 0x454c4156, 1, 1, 0, b"c%d" % n,
                      region.encode(), b"")
    s.send(req)
    rep = s.recv(4096)
    magic, version, op, status = struct.unpack_from("<3Ii", rep)
    msg = rep[16:272].split(b"\0")[0].decode()
    if op != 17 or status != -16 or "does not wait" not in msg:
        print("asker: request %d: op %d status %d: %s" % (n, op, status, msg),
              file=sys.stderr)
        sys.exit(1)
    s.close()
    n += 1
    with open(out + ".new", "w") as f:
        f.write("%d\n" % n)
    os.rename(out + ".new", out)
    time.sleep(0.02)  # pacing, not synchronisation: one request at a time
open(out + ".done", "w").close()
time.sleep(float(sys.argv[6]))  # keeps the lock until killed
EOF
BG_TIMEOUT=120 bg /usr/bin/python3 "$TMP/asker.py" "$UDIR/.$SW2.sock" "$UDIR/$R" \
	"$R" "$TMP/asked" "$TMP/stop" 60
asker=$BG_PID
for _ in $(seq 300); do [ -s "$TMP/asked" ] && break; sleep 0.05; done
[ -s "$TMP/asked" ] || fail "the asker got no answer"
"$PKTMAP" gen -i "$SW2:a" -D 02:00:00:00:00:0b -n 1000 -T 0 -q || fail "gen on $SW2"
wait_output 1000 b_tx "$SW2"
expect_eq "frames $SW2 gave b" "$(b_tx "$SW2")" 1000
kill -0 "$asker" 2>/dev/null || fail "the asker ended early: a request was not refused at once"
touch "$TMP/stop"
for _ in $(seq 300); do [ -e "$TMP/asked.done" ] && break; sleep 0.05; done
[ -e "$TMP/asked.done" ] || fail "the asker did not stop asking"
kill -0 "$asker" 2>/dev/null || fail "the asker let go of the lock early"
asked=$(cat "$TMP/asked")
echo "4. 1000 frames a -> b while a client held its region's lock and asked $asked times"
kill -INT "$sw2"
wait_bg "$sw2"
kill "$asker"
wait "$asker" 2>/dev/null || true
expect_eq "requests refused and counted" "$(json "$TMP/sw2.json" busy_refused)" "$asked"

# 254 idle connections of root's (the limit per uid), then a client.
cat >"$TMP/hog.py" <<'EOF'
import socket, sys, time
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    socks.append(s)
open(sys.argv[3], "w").close()
time.sleep(60)
EOF
BG_TIMEOUT=120 bg /usr/bin/python3 "$TMP/hog.py" "$UDIR/.$SW.sock" 254 "$TMP/hogging"
for _ in $(seq 300); do [ -e "$TMP/hogging" ] && break; sleep 0.05; done
[ -e "$TMP/hogging" ] || fail "could not open 254 connections"
set +e
timeout 30 "$PKTMAP" recv -i "$SW:z" -n 1 -T 0 -q 2>"$TMP/limit.err"
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "limit: recv exit $rc"
grep -q "uid 0 holds 254 connections, the limit per user" "$TMP/limit.err" ||
	fail "limit: $(cat "$TMP/limit.err")"
echo "5. over the limit: $(cat "$TMP/limit.err")"
echo "switch_stall: ok"
