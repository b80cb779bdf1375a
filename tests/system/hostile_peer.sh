#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The real pktmap gen and recv on a pipe while a hostile process of the
# same user takes the pipe's memory from recv's /proc/PID/fd (as any
# process of the user can), tries to truncate it (sealed: refused), and
# writes garbage over all of it in a loop; then it is killed with SIGKILL.
# Neither program crashes (no SIGSEGV, no SIGBUS): each either keeps
# running until SIGINT or stops on its own with its one-line "the peer
# wrote ... into the shared ring" error, the pipe's indices being garbage;
# recv counted what it refused instead of following it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_cmd /usr/bin/python3

p="pipe:${PIPE}h"
"$PKTMAP" recv -i "$p}0" -T 0 -q --json >"$TMP/recv.json" 2>"$TMP/recv.err" &
recv_pid=$!
BG_PIDS+=("$recv_pid")
for _ in $(seq 400); do [ -e "/dev/shm/pktmap-$(id -u)/pipe.${PIPE}h" ] && break; sleep 0.05; done
[ -e "/dev/shm/pktmap-$(id -u)/pipe.${PIPE}h" ] || fail "recv did not open the pipe"
"$PKTMAP" gen -i "$p{0" -R 200k -T 0 -q --json >"$TMP/gen.json" 2>"$TMP/gen.err" &
gen_pid=$!
BG_PIDS+=("$gen_pid")
# Wait until gen holds the pipe's memory (its memfd is among its fds).
holds_memfd() {
	local fd
	for fd in "/proc/$1/fd/"*; do
		[[ $(readlink "$fd" 2>/dev/null) == *memfd:pktmap* ]] && return 0
	done
	return 1
}
for _ in $(seq 400); do
	holds_memfd "$gen_pid" && break
	sleep 0.05
done
holds_memfd "$gen_pid" || fail "gen did not join: $(cat "$TMP/gen.err")"

/usr/bin/python3 - "$recv_pid" "$TMP/ready" <<'EOF' &
import mmap, os, random, sys
pid = sys.argv[1]
fd = None
for name in os.listdir(f"/proc/{pid}/fd"):
    try:
        target = os.readlink(f"/proc/{pid}/fd/{name}")
    except OSError:
        continue
    if target.startswith("/memfd:pktmap"):
        fd = os.open(f"/proc/{pid}/fd/{name}", os.O_RDWR)
        break
if fd is None:
    sys.exit("no memfd in recv")
size = os.fstat(fd).st_size
for bad in (0, size // 2, size * 2):
    try:
        os.ftruncate(fd, bad)
        sys.exit(f"truncated to {bad}: the pool is not sealed")
    except PermissionError:
        pass
m = mmap.mmap(fd, size)
rnd = random.Random(1)
junk = bytes(rnd.getrandbits(8) for _ in range(1 << 16))
passes = 0
while True:
    for off in range(0, size - len(junk) + 1, len(junk)):
        m[off:off + len(junk)] = junk
    passes += 1
    if passes == 3:
        open(sys.argv[2], "w").close()
    junk = junk[1:] + junk[:1]
EOF
hostile=$!
BG_PIDS+=("$hostile")
for _ in $(seq 1200); do
	[ -e "$TMP/ready" ] && break
	kill -0 "$hostile" 2>/dev/null || break
	sleep 0.05
done
[ -e "$TMP/ready" ] || { wait "$hostile" || true; fail "the hostile process did not get going"; }
kill -9 "$hostile"
wait "$hostile" 2>/dev/null || true
kill -INT "$gen_pid" "$recv_pid" 2>/dev/null || true
set +e
wait "$gen_pid"; grc=$?
wait "$recv_pid"; rrc=$?
set -e
[ "$grc" -lt 128 ] || fail "gen ended by signal $((grc - 128))"
if [ "$grc" -ne 0 ]; then
	grep -q "broke the ring protocol" "$TMP/gen.err" || fail "gen: $(cat "$TMP/gen.err")"
	[ "$(grep -c "sync failed" "$TMP/gen.err")" -eq 1 ] || fail "gen: $(cat "$TMP/gen.err")"
fi
[ "$rrc" -lt 128 ] || fail "recv ended by signal $((rrc - 128))"
if [ "$rrc" -ne 0 ]; then
	grep -q "the peer wrote" "$TMP/recv.err" || fail "recv: $(cat "$TMP/recv.err")"
fi
bad=$(json "$TMP/recv.json" drop_invalid)
[ "$bad" -gt 0 ] || fail "recv counted no invalid descriptor: $(cat "$TMP/recv.json")"
echo "hostile_peer: gen exit $grc, recv exit $rrc, recv refused $bad descriptors"; cat "$TMP/recv.err" "$TMP/gen.err"
echo "hostile_peer: ok"
