#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# netmap programs on pktmap (compat/netmap, docs/netmap.md), with nmt, a
# netmap program written for this test (tests/netmap/nmt.c) and built two
# ways: nmt_lib (libnetmap's nmport_*, linked against libpktmap-netmap,
# run directly) and nmt_raw (open("/dev/netmap")/ioctl/mmap only, no
# pktmap library at all, run under `pktmap netmap-run`).
#
#   nmt gen --- netmap:tPIDa{0 ---> nmt recv        every sequence number,
#                                                   every byte, in order
#   nmt gen --- p{0@M ---> nmt fwd (swaps buffers) ---> q{0@M ---> nmt recv
#   nmt extra (sends from extra buffers) ---> nmt recv
#   one pipe end bound by two processes, one per direction (/T, /R);
#   NS_MOREFRAG chains; waiting with poll, select and epoll;
#   bad requests get netmap's errno.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

B=${PKTMAP_BUILD_ROOT:?}
LIB=$B/tests/nmt_lib
RAW=$B/tests/nmt_raw
RUN=("$PKTMAP" netmap-run --quiet)
M=$((2000 + $$ % 30000))
N=${N:-200000}
# The regions netmap-run names mem$M (lib.sh removes the pipes).
rm_regions() {
	local d
	d=/dev/shm/pktmap-$(id -u)
	rm -f "$d/mem$M" "$d/mem$M".*
}
at_exit rm_regions

[ -x "$LIB" ] && [ -x "$RAW" ] || fail "nmt_lib/nmt_raw not built"
if ldd "$RAW" | grep -q pktmap; then
	fail "nmt_raw links a pktmap library: $(ldd "$RAW" | grep pktmap)"
fi

# pair NAME RECV_CMD... -- GEN_CMD...: start the receiver, wait for its
# "ready", run the sender; both must succeed; the receiver's last line is
# left in LAST.
pair() {
	local case=$1; shift
	local rx=() ; while [ "$1" != -- ]; do rx+=("$1"); shift; done; shift
	bg "${rx[@]}" >"$TMP/$case.rx" 2>&1
	local pid=$BG_PID
	wait_for "$TMP/$case.rx" '^ready'
	"$@" >"$TMP/$case.tx" 2>&1 || fail "$case: sender: $(cat "$TMP/$case.tx")"
	wait_bg "$pid"
	[ "$WAIT_RC" = 0 ] || fail "$case: receiver: $(cat "$TMP/$case.rx")"
	LAST=$(tail -n 1 "$TMP/$case.rx")
	echo "  $case: $(tail -n 1 "$TMP/$case.tx") / $LAST"
}

echo "0. pkg-config pktmap-netmap: nmt.c compiles with -Wall -Wextra -Werror and runs"
need_cmd cc
need_cmd pkg-config
SRC=${PKTMAP_SOURCE_ROOT:?}
export PKG_CONFIG_PATH=$B/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# pkg-config escapes spaces in paths for the shell: eval splits its words
# as a shell would (a checkout whose path has a space works too)
flags=()
pc=$(pkg-config --cflags --libs pktmap-netmap) || fail "pkg-config pktmap-netmap"
eval "flags=($pc)"
cc -Wall -Wextra -Werror -O2 -DNMT_LIB -o "$TMP/nmt_pc" "$SRC/tests/netmap/nmt.c" \
	"${flags[@]}" -Wl,-rpath,"$B/compat/netmap:$B" 2>"$TMP/cc.err" ||
	fail "cc with pkg-config flags: $(cat "$TMP/cc.err")"
# the raw-ABI build needs the headers only (no pktmap library): it keeps
# libc's names and runs under netmap-run
pc=$(pkg-config --cflags pktmap-netmap) || fail "pkg-config --cflags pktmap-netmap"
eval "flags=($pc)"
cc -Wall -Wextra -Werror -O2 -DPKTMAP_NETMAP_NO_REDIRECT -o "$TMP/nmt_pc_raw" \
	"$SRC/tests/netmap/nmt.c" "${flags[@]}" 2>"$TMP/cc.err" ||
	fail "cc raw: $(cat "$TMP/cc.err")"
PKTMAP_NETMAP_QUIET=1 "$TMP/nmt_pc" bad "${PIPE}c{0" >"$TMP/pc.out" 2>&1 ||
	fail "nmt built by pkg-config: $(cat "$TMP/pc.out")"
echo "  $(tail -n 1 "$TMP/pc.out")"

echo "1. libnetmap (linked), one wait each side (pollmix: poll on the port and an ordinary pipe)"
i=0
for w in "poll select" "select epoll" "epoll poll" "pollmix pollmix"; do
	set -- $w
	i=$((i + 1))
	pair lib$i "$LIB" recv "netmap:${PIPE}l$i}0" "$N" 60 "$1" -- \
		"$LIB" gen "netmap:${PIPE}l$i{0" "$N" 60 "$2"
	expect_eq "lib$i" "$LAST" "received $N in order, bytes ok"
	grep -qx "sent $N" "$TMP/lib$i.tx" || fail "lib$i: $(cat "$TMP/lib$i.tx")"
done

echo "2. raw ABI under netmap-run, NS_MOREFRAG chains of 2 (3000-byte packets)"
pair raw "${RUN[@]}" "$RAW" recv "netmap:${PIPE}r}0" "$N" 3000 epoll frag -- \
	"${RUN[@]}" "$RAW" gen "netmap:${PIPE}r{0" "$N" 3000 select frag
expect_eq raw "$LAST" "received $N in order, bytes ok"

echo "3. both builds on one pipe; a pipe id that is not a number"
pair mix "${RUN[@]}" "$RAW" recv "netmap:${PIPE}m}ab" "$N" 1514 poll -- \
	"$LIB" gen "netmap:${PIPE}m{ab" "$N" 1514 poll
expect_eq mix "$LAST" "received $N in order, bytes ok"

echo "4. zero-copy forwarder between two pipes of memory $M"
bg "$LIB" recv "netmap:${PIPE}q}0@$M" "$N" 200 poll >"$TMP/zq.rx" 2>&1
rpid=$BG_PID
wait_for "$TMP/zq.rx" '^ready'
bg "${RUN[@]}" "$RAW" fwd "netmap:${PIPE}p}0@$M" "netmap:${PIPE}q{0@$M" "$N" epoll \
	>"$TMP/zq.fwd" 2>&1
fpid=$BG_PID
wait_for "$TMP/zq.fwd" '^ready'
grep -q "^ready zerocopy memory $M\$" "$TMP/zq.fwd" ||
	fail "fwd: not zero-copy in memory $M: $(cat "$TMP/zq.fwd")"
"$LIB" gen "netmap:${PIPE}p{0@$M" "$N" 200 poll >"$TMP/zq.tx" 2>&1 ||
	fail "gen: $(cat "$TMP/zq.tx")"
wait_bg "$fpid"
[ "$WAIT_RC" = 0 ] || fail "fwd: $(cat "$TMP/zq.fwd")"
wait_bg "$rpid"
[ "$WAIT_RC" = 0 ] || fail "recv: $(cat "$TMP/zq.rx")"
expect_eq "fwd" "$(tail -n 1 "$TMP/zq.fwd")" \
	"forwarded $N packets, $N buffers swapped"
expect_eq "recv after fwd" "$(tail -n 1 "$TMP/zq.rx")" \
	"received $N in order, bytes ok"
echo "  $(tail -n 1 "$TMP/zq.fwd") / $(tail -n 1 "$TMP/zq.rx")"

echo "4b. shared bindings (tlem's way): each pipe end bound twice in one process"
for prog in lib raw; do
	if [ $prog = lib ]; then cmd=("$LIB"); else cmd=("${RUN[@]}" "$RAW"); fi
	bg "$LIB" recv "netmap:${PIPE}tb$prog}0" "$N" 300 poll >"$TMP/tl.$prog.rx" 2>&1
	rpid=$BG_PID
	wait_for "$TMP/tl.$prog.rx" '^ready'
	bg "${cmd[@]}" tlem "netmap:${PIPE}ta$prog{0" "netmap:${PIPE}tb$prog{0" "$N" poll \
		>"$TMP/tl.$prog" 2>&1
	tpid=$BG_PID
	wait_for "$TMP/tl.$prog" '^ready'
	"${RUN[@]}" "$RAW" gen "netmap:${PIPE}ta$prog}0" "$N" 300 poll \
		>"$TMP/tl.$prog.tx" 2>&1 || fail "tlem gen: $(cat "$TMP/tl.$prog.tx")"
	wait_bg "$tpid"
	[ "$WAIT_RC" = 0 ] || fail "tlem ($prog): $(cat "$TMP/tl.$prog")"
	wait_bg "$rpid"
	[ "$WAIT_RC" = 0 ] || fail "tlem recv ($prog): $(cat "$TMP/tl.$prog.rx")"
	expect_eq "tlem ($prog)" "$(tail -n 1 "$TMP/tl.$prog")" \
		"copied $N packets, each port bound twice"
	expect_eq "tlem recv ($prog)" "$(tail -n 1 "$TMP/tl.$prog.rx")" \
		"received $N in order, bytes ok"
	PKTMAP_NETMAP_QUIET=1 "${cmd[@]}" excl "${PIPE}x$prog{0" >"$TMP/x.$prog" 2>&1 ||
		fail "excl ($prog): $(cat "$TMP/x.$prog")"
	expect_eq "excl ($prog)" "$(grep -c '^ok ' "$TMP/x.$prog")" 4
done
echo "  $(tail -n 1 "$TMP/tl.raw") / $(tail -n 1 "$TMP/tl.raw.rx"); /x: $(tail -n 1 "$TMP/x.raw")"

echo "4d. tlem's threads: syncs by ioctl only, TX reclaimed by NIOCTXSYNC on a full ring"
#   gen -> A}0 | A{0 read, B{0 write (main thread); B{0 read again (a
#   second thread, NIOCRXSYNC all the while) | B}0 -> recv
for prog in lib raw; do
	if [ $prog = lib ]; then cmd=("$LIB"); else cmd=("${RUN[@]}" "$RAW"); fi
	bg "$LIB" recv "netmap:${PIPE}tt$prog}0" "$N" 300 poll >"$TMP/tt.$prog.rx" 2>&1
	rpid=$BG_PID
	wait_for "$TMP/tt.$prog.rx" '^ready'
	bg "${cmd[@]}" tlemt "netmap:${PIPE}ts$prog{0" "netmap:${PIPE}tt$prog{0" "$N" \
		>"$TMP/tt.$prog" 2>&1
	tpid=$BG_PID
	wait_for "$TMP/tt.$prog" '^ready'
	"${cmd[@]}" gen "netmap:${PIPE}ts$prog}0" "$N" 300 poll \
		>"$TMP/tt.$prog.tx" 2>&1 || fail "tlemt gen ($prog): $(cat "$TMP/tt.$prog.tx")"
	wait_bg "$tpid"
	[ "$WAIT_RC" = 0 ] || fail "tlemt ($prog): $(cat "$TMP/tt.$prog")"
	wait_bg "$rpid"
	[ "$WAIT_RC" = 0 ] || fail "tlemt recv ($prog): $(cat "$TMP/tt.$prog.rx")"
	expect_eq "tlemt ($prog)" "$(tail -n 1 "$TMP/tt.$prog")" \
		"copied $N packets in two threads, TX reclaimed by NIOCTXSYNC from a full ring"
	expect_eq "tlemt recv ($prog)" "$(tail -n 1 "$TMP/tt.$prog.rx")" \
		"received $N in order, bytes ok"
done
echo "  $(tail -n 1 "$TMP/tt.raw") / $(tail -n 1 "$TMP/tt.raw.rx")"

echo "4c. one pipe end bound by two processes, one per direction (/T, /R), both ways"
#   gen raw  netmap:D{0/T --->  netmap:D}0/R recv raw
#   recv lib netmap:D{0/R <---  netmap:D}0/T gen lib
# (the senders are the builds made above with pkg-config's flags)
D=${PIPE}d
bg "$LIB" recv "netmap:$D{0/R" "$N" 100 poll >"$TMP/dir.a.rx" 2>&1
arx=$BG_PID
wait_for "$TMP/dir.a.rx" '^ready'
bg "${RUN[@]}" "$RAW" recv "netmap:$D}0/R" "$N" 200 epoll >"$TMP/dir.b.rx" 2>&1
brx=$BG_PID
wait_for "$TMP/dir.b.rx" '^ready'
# the end's RX ring is bound: a second binder that asks to bind it alone
# (/x) is refused, one line (without /x it would share the ring)
out=$(PKTMAP_NETMAP_QUIET=0 "$LIB" recv "netmap:$D{0/x" 1 100 poll 2>&1 || true)
echo "$out" | grep -q "RX ring 0 is bound by another open, and this one asks to bind it alone (/x)" ||
	fail "an exclusive binder of $D{0's RX ring: $out"
bg "${RUN[@]}" "$TMP/nmt_pc_raw" gen "netmap:$D{0/T" "$N" 200 select >"$TMP/dir.a.tx" 2>&1
atx=$BG_PID
"$TMP/nmt_pc" gen "netmap:$D}0/T" "$N" 100 poll >"$TMP/dir.b.tx" 2>&1 ||
	fail "dir: gen $D}0/T: $(cat "$TMP/dir.b.tx")"
for pid in $atx $arx $brx; do
	wait_bg "$pid"
	[ "$WAIT_RC" = 0 ] || fail "dir: $(cat "$TMP"/dir.*)"
done
expect_eq "dir: $D{0/R" "$(tail -n 1 "$TMP/dir.a.rx")" "received $N in order, bytes ok"
expect_eq "dir: $D}0/R" "$(tail -n 1 "$TMP/dir.b.rx")" "received $N in order, bytes ok"
echo "  $D{0: /T and /R in two processes: $(tail -n 1 "$TMP/dir.b.rx") / $(tail -n 1 "$TMP/dir.a.rx")"

echo "5. extra buffers (lb's way: build in one, swap it into the slot)"
pair extra_lib "$LIB" recv "netmap:${PIPE}e}0" 50000 300 select -- \
	"$LIB" extra "netmap:${PIPE}e{0" 50000 300 3000 poll
expect_eq extra_lib "$LAST" "received 50000 in order, bytes ok"
pair extra_raw "$LIB" recv "netmap:${PIPE}f}0" 50000 300 poll -- \
	"${RUN[@]}" "$RAW" extra "netmap:${PIPE}f{0" 50000 300 5000 epoll
expect_eq extra_raw "$LAST" "received 50000 in order, bytes ok"

echo "5c. lb's way: 4 output pipes made in the input's memory, receivers open them by name"
#   gen -> ${PIPE}i{0 ==> nmt lb ${PIPE}i}0 ==> ${PIPE}o{k/xT@<input's id> -> recv ${PIPE}o}k
# every packet s goes to pipe s % 4 by moving buffers (through one of 4096
# extra buffers when a ring is full, and every 7th)
LBN=100000
U=/dev/shm/pktmap-$(id -u)
for prog in lib raw; do
	if [ $prog = lib ]; then cmd=("$LIB"); else cmd=("${RUN[@]}" "$RAW"); fi
	I=${PIPE}i$prog
	O=${PIPE}o$prog
	bg "${cmd[@]}" lb "netmap:$I}0" "$O" 4 "$LBN" 4096 poll >"$TMP/lb.$prog" 2>&1
	lbpid=$BG_PID
	wait_for "$TMP/lb.$prog" '^ready'
	grep -q "^ready zerocopy memory [0-9]*, 4 pipes\$" "$TMP/lb.$prog" ||
		fail "lb ($prog): $(cat "$TMP/lb.$prog")"
	rpids=()
	for k in 0 1 2 3; do
		bg env NMT_STRIDE=4:$k "${cmd[@]}" recv "netmap:$O}$k" $((LBN / 4)) 200 poll \
			>"$TMP/lb.$prog.$k" 2>&1
		rpids+=("$BG_PID")
		wait_for "$TMP/lb.$prog.$k" '^ready'
	done
	# the receivers joined lb's pipes in the input's memory: no pipe of
	# their own was made
	[ ! -e "$U/pipe.$O" ] || fail "lb ($prog): a receiver made pipe.$O"
	"${RUN[@]}" "$RAW" gen "netmap:$I{0" "$LBN" 200 poll >"$TMP/lb.$prog.tx" 2>&1 ||
		fail "lb gen ($prog): $(cat "$TMP/lb.$prog.tx")"
	wait_bg "$lbpid"
	[ "$WAIT_RC" = 0 ] || fail "lb ($prog): $(cat "$TMP/lb.$prog")"
	case "$(tail -n 1 "$TMP/lb.$prog")" in
	"forwarded $LBN to 4 pipes, "*" through extra buffers") ;;
	*) fail "lb ($prog): $(cat "$TMP/lb.$prog")" ;;
	esac
	for k in 0 1 2 3; do
		wait_bg "${rpids[$k]}"
		[ "$WAIT_RC" = 0 ] || fail "lb recv $k ($prog): $(cat "$TMP/lb.$prog.$k")"
		expect_eq "lb recv $k ($prog)" "$(tail -n 1 "$TMP/lb.$prog.$k")" \
			"received $((LBN / 4)) in order, bytes ok"
	done
	echo "  $prog: $(tail -n 1 "$TMP/lb.$prog"); 4 x $(tail -n 1 "$TMP/lb.$prog.0")"
done
if compgen -G "$U/.pipe.${PIPE}o*" >/dev/null; then
	fail "lb: locators left: $(compgen -G "$U/.pipe.*" | tr '\n' ' ')"
fi

echo "5d. lb: a queue whose ring shows room only after lb's NIOCTXSYNC is still sent"
# lb's ring to one output holds 1022 of its 1023 packets (1024-slot
# rings, PM_DEFAULT_SLOTS) and lb sleeps on its input alone (a ring with
# room gets no POLLOUT); a receiver empties that ring meanwhile, so lb's
# tail is stale. 10 more packets: the first fills the one slot lb sees,
# the rest wait in extra buffers, and lb's NIOCTXSYNC then shows the
# room. With no more input coming, lb must send them before it sleeps
# again (it slept on the input and died "stuck for 10 s", issue 30).
for prog in lib raw; do
	if [ $prog = lib ]; then cmd=("$LIB"); else cmd=("${RUN[@]}" "$RAW"); fi
	I=${PIPE}j$prog
	O=${PIPE}q$prog
	bg "${cmd[@]}" lb "netmap:$I}0" "$O" 1 1032 64 poll >"$TMP/lbq.$prog" 2>&1
	lbpid=$BG_PID
	wait_for "$TMP/lbq.$prog" '^ready'
	# gen exits once lb has taken all 1022 (drain): lb is then done
	# with them, its ring to $O holds 1022 and it waits for input
	"${RUN[@]}" "$RAW" gen "netmap:$I{0" 1022 200 poll >"$TMP/lbq.$prog.tx" 2>&1 ||
		fail "lbq gen ($prog): $(cat "$TMP/lbq.$prog.tx")"
	"${cmd[@]}" recv "netmap:$O}0" 1022 200 poll >"$TMP/lbq.$prog.r1" 2>&1 ||
		fail "lbq recv 1 ($prog): $(cat "$TMP/lbq.$prog.r1")"
	bg env NMT_STRIDE=1:1022 "${cmd[@]}" recv "netmap:$O}0" 10 200 poll \
		>"$TMP/lbq.$prog.r2" 2>&1
	rpid=$BG_PID
	wait_for "$TMP/lbq.$prog.r2" '^ready'
	NMT_SEQ=1022 "${RUN[@]}" "$RAW" gen "netmap:$I{0" 10 200 poll >"$TMP/lbq.$prog.tx" 2>&1 ||
		fail "lbq gen 2 ($prog): $(cat "$TMP/lbq.$prog.tx")"
	wait_bg "$lbpid"
	[ "$WAIT_RC" = 0 ] || fail "lbq ($prog): $(cat "$TMP/lbq.$prog")"
	case "$(tail -n 1 "$TMP/lbq.$prog")" in
	"forwarded 1032 to 1 pipes, "*" through extra buffers") ;;
	*) fail "lbq ($prog): $(cat "$TMP/lbq.$prog")" ;;
	esac
	wait_bg "$rpid"
	[ "$WAIT_RC" = 0 ] || fail "lbq recv 2 ($prog): $(cat "$TMP/lbq.$prog.r2")"
	expect_eq "lbq recv 2 ($prog)" "$(tail -n 1 "$TMP/lbq.$prog.r2")" \
		"received 10 in order, bytes ok"
	echo "  $prog: $(tail -n 1 "$TMP/lbq.$prog"), the last 10 after the ring emptied"
done

echo "5a. buffer offsets (NETMAP_REQ_OPT_OFFSETS): packets at NETMAP_BUF_OFFSET"
# a sender at offset 100 (libnetmap's nmport_offset), a receiver at 200
# (the raw option): 1514-byte frames, every byte, each at its offset
pair off1 env NMT_OFFSET=200 "${RUN[@]}" "$RAW" recv "netmap:${PIPE}w}0" 50000 1514 poll -- \
	env NMT_OFFSET=100 "$LIB" gen "netmap:${PIPE}w{0" 50000 1514 epoll
expect_eq off1 "$LAST" "received 50000 in order, bytes ok"
# offsets past what a 2048-byte buffer leaves: the region gets larger
# buffers so that full-size frames still fit
pair off2 env NMT_OFFSET=1000 "$LIB" recv "netmap:${PIPE}v}0" 20000 1514 select -- \
	env NMT_OFFSET=1000 "$LIB" gen "netmap:${PIPE}v{0" 20000 1514 poll frag
expect_eq off2 "$LAST" "received 20000 in order, bytes ok"

echo "5b. the old API (NETMAP_WITH_LIBS): nm_inject, nm_dispatch + nm_nextpkt"
pair old1 "$LIB" recv "netmap:${PIPE}o}0" 50000 200 poll -- \
	"$LIB" lgen "netmap:${PIPE}o{0" 50000 200
expect_eq old1 "$LAST" "received 50000 in order, bytes ok"
pair old2 "$LIB" lrecv "netmap:${PIPE}n}0" 50000 200 -- \
	"${RUN[@]}" "$RAW" gen "netmap:${PIPE}n{0" 50000 200 epoll
case "$LAST" in
"received 50000 in order, bytes ok ("*" by nm_dispatch, "*" by nm_nextpkt)") ;;
*) fail "old2: $LAST" ;;
esac
out=$("$LIB" lmem "netmap:${PIPE}z{0@$M" "netmap:${PIPE}y{0@$M")
expect_eq "nm_open, one @N" "$out" "zerocopy supported (memory $M and $M)"
out=$("$LIB" lmem "netmap:${PIPE}z{0" "netmap:${PIPE}y{0")
case "$out" in "zerocopy NOT supported"*) ;; *) fail "nm_open, two memories: $out" ;; esac
echo "  nm_open: one @N: zerocopy supported; two memories: NOT"
out=$("$LIB" lshare "netmap:${PIPE}s{0" "${PIPE}t{1")
case "$out" in "zerocopy enabled (memory "*) ;; *) fail "lb's way (@ the first port's id): $out" ;; esac
echo "  lb's way, a pipe @ the memory id of the port opened first: $out"
out=$("$LIB" lextra "netmap:${PIPE}x{0" 4000)
expect_eq "nm_open, nr_arg3" "$out" "nm_open: 4000 extra buffers from ni_bufs_head"
echo "  lb's way, extra buffers in nm_open's base request: $out"

echo "6. bad requests: netmap's errno"
for prog in lib raw; do
	if [ $prog = lib ]; then cmd=("$LIB"); else cmd=("${RUN[@]}" "$RAW"); fi
	PKTMAP_NETMAP_QUIET=1 "${cmd[@]}" bad "${PIPE}b$prog{0" >"$TMP/bad.$prog" 2>&1 ||
		fail "bad ($prog): $(cat "$TMP/bad.$prog")"
	expect_eq "bad ($prog)" "$(grep -c '^ok ' "$TMP/bad.$prog")" 24
	tail -n 1 "$TMP/bad.$prog" | grep -q "all as netmap" ||
		fail "bad ($prog): $(cat "$TMP/bad.$prog")"
done
echo "  24 checks each: $(grep '^ok' "$TMP/bad.raw" | cut -d: -f1 | sed 's/^ok //' | paste -sd, -)"

echo "6b. valeX:Y is a port of 'pktmap switch valeX'"
SW="valen$$"
out=$("$PKTMAP" netmap-run "$RAW" gen "$SW:a" 1 60 2>&1 || true)
echo "$out" | grep -q "^pktmap netmap: $SW:a: switch '$SW' is not running: start it with 'pktmap switch $SW'" ||
	fail "vale, no switch: $out"
echo "$out" | grep -q "NIOCCTRL REGISTER: No such device or address" ||
	fail "vale, no switch: errno: $out"
BG_TIMEOUT=120 bg "$PKTMAP" switch "$SW" -T 0 -q >"$TMP/sw.out" 2>&1
swpid=$BG_PID
for _ in $(seq 300); do
	"$PKTMAP" switch --list "$SW" >/dev/null 2>&1 && break
	sleep 0.1
done
"$PKTMAP" switch --list "$SW" >/dev/null 2>&1 || fail "switch $SW did not start: $(cat "$TMP/sw.out")"
# broadcast frames from a to b through the switch, paced: the switch
# drops, as VALE does, what a full client ring cannot take (a receiver
# starved beside busy loops), so frames must arrive in order and intact
# and received + missing = sent
pair vale env NMT_ETH=1 NMT_GAPS=1 "$LIB" recv "$SW:b" 5000 200 poll -- \
	env NMT_ETH=1 NMT_RATE=20000 "${RUN[@]}" "$RAW" gen "$SW:a" 5000 200 epoll
case "$LAST" in
"received "*" in order, bytes ok, "*" missing") ;;
*) fail "vale: $LAST" ;;
esac
got=$(echo "$LAST" | cut -d' ' -f2)
miss=$(echo "$LAST" | cut -d' ' -f7)
expect_eq "vale: received + missing" $((got + miss)) 5000
[ "$got" -gt 0 ] || fail "vale: nothing through the switch"
kill "$swpid"
wait_bg "$swpid"

echo "7. the one-line errors"
"$PKTMAP" netmap-run --help | grep -q "usage: pktmap netmap-run" || fail "--help"
out=$("$PKTMAP" netmap-run --map foo true 2>&1 || true)
echo "$out" | grep -q "not xdp or pkt" || fail "--map foo: $out"

refute "memory $M left in /dev/shm" "mem$M\$" find /dev/shm -maxdepth 2 -name "mem$M"
echo "netmap_compat: ok"
