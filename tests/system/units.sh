#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The systemd units of contrib/systemd (debian/ installs the same files),
# each run as systemd would run it: the command of its ExecStart= (and
# ExecReload=) read from the unit file with %i and its variables
# substituted (unit_cmd.py), under the unit's CapabilityBoundingSet= and
# NoNewPrivileges= (setpriv), with NOTIFY_SOCKET naming a datagram socket
# this test binds. /usr/bin/pktmap is the built pktmap and /etc/pktmap
# is $TMP/etc/pktmap.
#
#   notify socket <-- READY=1, RELOADING=1, STOPPING=1 -- pktmap (MAINPID)
#
#  1. systemd-analyze verify: every unit file is clean.
#  2. pktmap-router@T: --config with three pipe ports and lpm routes.
#     At READY=1 the data path is up: 1000 frames to 10.1.0.1 all reach
#     output 1. The routes file now says output 2; ExecReload (SIGHUP):
#     RELOADING=1 then READY=1, and the next 1000 frames all reach output
#     2. A routes file with a bad line, and a config with a changed port:
#     each reload refused with one line naming the file, RELOADING=1 then
#     READY=1, and the next 1000 frames still reach output 2. SIGTERM:
#     STOPPING=1, exit 0, nothing of the router's left in /dev/shm. Every
#     message comes from the main PID (SO_PASSCRED). Bad config files:
#     one line FILE:LINE: what, exit 2.
#  3. pktmap-switch@S (two threads): at READY=1 a client attaches and
#     its 100 frames reach another client; SIGTERM: STOPPING=1, exit 0,
#     nothing left.
#  4. pktmap-metrics: at READY=1 a scrape answers with the port a gen
#     holds open; SIGTERM: STOPPING=1, exit 0.
#  5. pktmap-scrub@T (its options from /etc/pktmap/scrub/T.env) between
#     two pipes: at READY=1 100 frames pass; the rules now deny their
#     source, ExecReload: RELOADING=1, READY=1, and the next 100 are
#     dropped (counted: deny 100), 100 from another source pass; SIGTERM:
#     STOPPING=1, exit 0, nothing left in /dev/shm.
#  6. pktmap-broker.socket + .service: the socket bound as the .socket
#     unit says and passed as systemd does (LISTEN_FDS, unit_activate.py);
#     at READY=1 a client without capabilities opens pkt:lo through it and
#     sends 100 frames; the policy no longer allows it, ExecReload:
#     RELOADING=1, READY=1, and the same open is refused naming the rule
#     file; SIGTERM: STOPPING=1, exit 0, /dev/shm as before.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
: "${PKTMAP_SOURCE_ROOT:?}"
UNITS=$PKTMAP_SOURCE_ROOT/contrib/systemd
HERE=$(cd "$(dirname "$0")" && pwd)
ETC=$TMP/etc/pktmap
mkdir -p "$ETC/router"

# 1. systemd-analyze verify (in the systemd package, which ./run test
# installs)
verify() {
	local f out
	need_cmd systemd-analyze
	mkdir -p "$TMP/verify"
	for f in "$UNITS"/*.service "$UNITS"/*.socket; do
		# the built pktmap where the package puts it
		sed "s|/usr/bin/pktmap|$PKTMAP|g" "$f" >"$TMP/verify/${f##*/}"
	done
	for f in "$TMP"/verify/*; do
		case $f in *@.service) cp "$f" "${f%@.service}@t$$.service"; f=${f%@.service}@t$$.service ;; esac
		out=$(systemd-analyze verify --man=no "$f" 2>&1) ||
			fail "systemd-analyze verify ${f##*/}: $out"
		[ -z "$out" ] || fail "systemd-analyze verify ${f##*/}: $out"
		echo "  verify ${f##*/}: clean"
	done
}

# start_unit UNIT INSTANCE [NAME=VALUE...]: the unit's ExecStart= in the
# background (under the command in WRAP, if any) with NOTIFY_SOCKET set (SHM_BEFORE: /dev/shm's files of
# ours before it); MAINPID is its PID, $TMP/TAG.log
# the messages it sent ("PID MESSAGE", newlines as spaces), $TMP/TAG.out
# and .err its output (TAG: the unit's name without ".service").
start_unit() {
	local unit=$1 inst=$2 sock
	shift 2
	UNIT=$unit
	TAG=${unit%.service}
	TAG=${TAG%@}
	sock=$TMP/$TAG.sock
	: >"$TMP/$TAG.log"
	SHM_BEFORE=$(shm_files)
	bg python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(sys.argv[1])
print("bound", flush=True)
log = open(sys.argv[2], "a")
while True:
    m, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    pid = -1
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
            pid = struct.unpack("iII", data)[0]
    log.write("%d %s\n" % (pid, m.decode(errors="replace").replace("\n", " ")))
    log.flush()
' "$sock" "$TMP/$TAG.log" >"$TMP/$TAG.recv"
	wait_for "$TMP/$TAG.recv" '^bound$' 120
	unit_cmd "$unit" ExecStart "$inst" "$@"
	NOTIFY_SOCKET=$sock ${WRAP[@]+"${WRAP[@]}"} "${CMD[@]}" >"$TMP/$TAG.out" \
		2>"$TMP/$TAG.err" &
	MAINPID=$!
	BG_PIDS+=("$MAINPID")
	echo "  $unit ($inst): pid $MAINPID: ${CMD[*]}"
}

# unit_cmd UNIT KEY INSTANCE [NAME=VALUE...]: the command into CMD.
unit_cmd() {
	local f=$UNITS/$1 i
	shift
	mapfile -d '' CMD < <(python3 "$HERE/unit_cmd.py" "$f" "$@")
	[ "${#CMD[@]}" -gt 0 ] || fail "no command from $f"
	for i in "${!CMD[@]}"; do
		CMD[i]=${CMD[i]//\/usr\/bin\/pktmap/$PKTMAP}
		CMD[i]=${CMD[i]//\/etc\/pktmap/$ETC}
	done
}

# wait_msg N RE [exited]: wait until TAG's log holds N messages matching
# RE (the timeout is a failure, not a measure: 120 s). Unless "exited"
# is given, the program exiting first is a failure; a message sent
# before it exited is in the socket, and comes.
wait_msg() {
	local t=1200
	until [ "$(grep -Ec -- "^[0-9]+ $2" "$TMP/$TAG.log")" -ge "$1" ]; do
		[ "$t" -gt 0 ] || fail "$TAG: no $1 x '$2' in: $(cat "$TMP/$TAG.log") $(cat "$TMP/$TAG.err")"
		[ -n "${3:-}" ] || kill -0 "$MAINPID" 2>/dev/null ||
			fail "$TAG exited before '$2': $(cat "$TMP/$TAG.err")"
		sleep 0.1
		t=$((t - 1))
	done
}

# reload: ExecReload=, then RELOADING=1 and after it a new READY=1.
reload() {
	local n
	n=$(grep -c ' READY=1$' "$TMP/$TAG.log")
	unit_cmd "$UNIT" ExecReload "$INST" "MAINPID=$MAINPID"
	"${CMD[@]}"
	wait_msg $((n + 1)) 'READY=1$'
	tail -n 3 "$TMP/$TAG.log" | grep -Eq "^$MAINPID RELOADING=1 MONOTONIC_USEC=[0-9]+$" ||
		fail "$TAG: no RELOADING=1 before READY=1: $(cat "$TMP/$TAG.log")"
}

# shm_files: the files in /dev/shm named with this test's tag.
shm_files() {
	find /dev/shm -name "*t$$*" 2>/dev/null | sort
}

# stop_unit: SIGTERM (what systemctl stop sends), STOPPING=1, exit 0,
# every message from the main PID, /dev/shm's files of ours as they were
# before the start.
stop_unit() {
	local rc=0 left
	kill -TERM "$MAINPID"
	wait "$MAINPID" || rc=$?
	[ "$rc" = 0 ] || fail "$TAG: exit status $rc: $(cat "$TMP/$TAG.err")"
	wait_msg 1 'STOPPING=1$' exited
	if grep -v "^$MAINPID " "$TMP/$TAG.log"; then
		fail "$TAG: messages from another process than $MAINPID"
	fi
	left=$(comm -13 <(echo "$SHM_BEFORE") <(shm_files))
	[ -z "$left" ] || fail "$TAG: left in /dev/shm: $left"
	echo "  $TAG: $(wc -l <"$TMP/$TAG.log") messages, exit 0, /dev/shm clean"
}

# recv_n TAG PORT N: a recv of N frames in the background (RPID).
recv_n() {
	bg "$PKTMAP" recv -i "$2" -n "$3" -T 0 -q --json >"$TMP/$1.json"
	RPID=$BG_PID
}

# recv_done TAG N: the recv ended with exactly N good frames in order.
recv_done() {
	wait_bg "$RPID"
	[ "$WAIT_RC" = 0 ] || fail "$1: recv exit status $WAIT_RC"
	expect_eq "$1 packets" "$(json "$TMP/$1.json" packets)" "$2"
	expect_eq "$1 gaps" "$(json "$TMP/$1.json" gaps)" 0
	expect_eq "$1 reordered" "$(json "$TMP/$1.json" reordered)" 0
	expect_eq "$1 bad" "$(json "$TMP/$1.json" bad)" 0
	echo "  $1: $2 frames, in order, intact"
}

rport() { echo "pipe:${PIPE}r$1@mem:${PIPE}m"; } # router port '{0', '}1'

# gen_n PORT N: N frames to 10.1.0.1 (in 10.0.0.0/8).
gen_n() {
	timeout 120 "$PKTMAP" gen -i "$1" -n "$2" -d 10.1.0.1 -T 0 -q ||
		fail "gen on $1 failed"
}

# forward_to K: 1000 frames into router port 0 all come out of port K.
forward_to() {
	recv_n "out$1.$2" "$(rport "}$1")" 1000
	gen_n "$(rport "}0")" 1000
	recv_done "out$1.$2" 1000
}

router_conf() { # the config with port 2 named $1
	cat <<EOC
# a router of the units test
port $(rport "{0")
port $(rport "{1")
port $(rport "$1")   # output 2
mode lpm
routes t$$.routes
queue 4096
interval 0
EOC
}

# Bad files, one line each: FILE:LINE: what, exit 2.
router_bad_files() {
	local f=$ETC/router/bad$$.conf rc
	while IFS='|' read -r text want; do
		printf "$text" >"$f"
		rc=0
		expect_err "$want" "$PKTMAP" router --config "$f" || rc=$?
		"$PKTMAP" router --config "$f" >/dev/null 2>&1 || rc=$?
		expect_eq "exit status for '$text'" "$rc" 2
	done <<EOB
port null:\nfoo 1\n|bad$$.conf:2: unknown key 'foo'
port null:\nmode\n|bad$$.conf:2: 'mode' needs a value
port null:\ncopy yes\n|bad$$.conf:2: 'copy' takes no value
port null:\nmode fast\n|bad$$.conf:2: router: -m: no mode 'fast'
port null:\nthreads 0\n|bad$$.conf:2: router: -p: threads
\n\nport null:\x01\n|bad$$.conf:3: a control character
port null:\nmode lpm\nroutes /nonexistent$$\n|routes: /nonexistent$$
EOB
	printf 'port null:\n\0\n' >"$f"
	expect_err "bad$$.conf:2: a NUL byte" "$PKTMAP" router --config "$f"
	head -c 70000 /dev/zero | tr '\0' '#' >"$f"
	expect_err "bad$$.conf: larger than 65536 bytes" "$PKTMAP" router --config "$f"
	{ printf 'port null:\n'; head -c 2000 /dev/zero | tr '\0' ' '; echo; } >"$f"
	expect_err "bad$$.conf:2: line longer than 1023 bytes" "$PKTMAP" router --config "$f"
	printf 'port null:\n' >"$f"
	expect_err "router: --config given twice" "$PKTMAP" router --config "$f" --config "$f"
	expect_err "nothere$$.conf: No such file" "$PKTMAP" router --config "$ETC/nothere$$.conf"
	expect_err "not a regular file" "$PKTMAP" router --config "$ETC"
}

test_router() {
	local shm
	INST=t$$
	router_conf "{2" >"$ETC/router/t$$.conf"
	echo "10.0.0.0/8 1" >"$ETC/router/t$$.routes"
	[ -z "$(shm_files)" ] || fail "names of ours in /dev/shm before the start"
	start_unit pktmap-router@.service "$INST"
	wait_msg 1 'READY=1$'
	shm=$(shm_files)
	[ -n "$shm" ] || fail "router: no file of ours in /dev/shm while it runs"
	echo "  while running: $(echo "$shm" | wc -l) files of ours in /dev/shm"
	forward_to 1 a
	echo "10.0.0.0/8 2" >"$ETC/router/t$$.routes"
	reload
	grep -q "router: reloaded .*t$$.conf: 1 routes" "$TMP/$TAG.err" ||
		fail "no reload line: $(cat "$TMP/$TAG.err")"
	forward_to 2 b
	# a bad routes line: refused, the old routes stay
	echo "10.0.0.0/8 7" >"$ETC/router/t$$.routes"
	reload
	grep -q "refused: routes: .*t$$.routes:1: '7' is not an output port index" \
		"$TMP/$TAG.err" || fail "no refusal: $(cat "$TMP/$TAG.err")"
	forward_to 2 c
	# a port changed: only routes reload
	echo "10.0.0.0/8 1" >"$ETC/router/t$$.routes"
	router_conf "{3" >"$ETC/router/t$$.conf"
	reload
	grep -q "reload of .*t$$.conf refused: 'port' changed" "$TMP/$TAG.err" ||
		fail "no refusal: $(cat "$TMP/$TAG.err")"
	forward_to 2 d
	stop_unit
	router_bad_files
}

test_switch() {
	local sw=valet$$s
	# two forwarding threads: READY=1 once both run (sws_opts.ready)
	start_unit pktmap-switch@.service "$sw" "PKTMAP_SWITCH_ARGS=-p 2"
	wait_msg 1 'READY=1$'
	[ -n "$(shm_files)" ] || fail "switch: no file of ours in /dev/shm while it runs"
	recv_n sw "$sw:b" 100
	switch_wait_ports "$sw" b
	timeout 120 "$PKTMAP" gen -i "$sw:a" -n 100 -T 0 -q || fail "gen on $sw:a"
	recv_done sw 100
	stop_unit
}

test_metrics() {
	local url port="pipe:${PIPE}x{0"
	# a port for the scrape to show: a recv waiting on a pipe
	recv_n mx "$port" 1
	wait_output 1 ports_named "$port"
	start_unit pktmap-metrics.service x PKTMAP_METRICS_LISTEN=127.0.0.1:0
	wait_msg 1 'READY=1$'
	# the address it listens on is printed before READY=1
	url=$(grep -o 'http://[^ ]*/metrics' "$TMP/$TAG.out") ||
		fail "metrics: no address: $(cat "$TMP/$TAG.out")"
	curl -sf "$url" >"$TMP/scrape" || fail "metrics: no answer at $url"
	grep -qF "port=\"$port\"" "$TMP/scrape" ||
		fail "metrics: $port not in the scrape: $(head -n 20 "$TMP/scrape")"
	echo "  metrics: a scrape at READY shows $port"
	stop_unit
	timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}x}0" -n 1 -T 0 -q
	recv_done mx 1
}

test_scrub() {
	local rules=$ETC/scrub/t$$.rules j
	local args="-i pipe:${PIPE}sa{0 -o pipe:${PIPE}sb{0 -c /etc/pktmap/scrub/t$$.rules -T 0 --json"
	INST=t$$
	mkdir -p "$ETC/scrub"
	echo "# nothing denied yet" >"$rules"
	# the EnvironmentFile= the unit reads (its variable is given to
	# unit_cmd.py; its paths, like the unit's, under $ETC)
	echo "PKTMAP_SCRUB_ARGS=$args" >"$ETC/scrub/t$$.env"
	start_unit pktmap-scrub@.service "$INST" "PKTMAP_SCRUB_ARGS=$args"
	wait_msg 1 'READY=1$'
	[ -n "$(shm_files)" ] || fail "scrub: no file of ours in /dev/shm while it runs"
	recv_n scrub "pipe:${PIPE}sb}0" 200
	timeout 120 "$PKTMAP" gen -i "pipe:${PIPE}sa}0" -n 100 -s 10.0.0.1 -T 0 -q
	echo "deny 10.0.0.0/8" >"$rules"
	reload
	timeout 120 "$PKTMAP" gen -i "pipe:${PIPE}sa}0" -n 100 -s 10.0.0.1 -T 0 -q
	timeout 120 "$PKTMAP" gen -i "pipe:${PIPE}sa}0" -n 100 -s 192.0.2.1 -T 0 -q
	wait_bg "$RPID"
	[ "$WAIT_RC" = 0 ] || fail "scrub: recv exit status $WAIT_RC"
	expect_eq "scrub: out" "$(json "$TMP/scrub.json" packets)" 200
	stop_unit
	j=$TMP/$TAG.out
	expect_eq "scrub: judged" "$(json "$j" judged)" 300
	expect_eq "scrub: passed" "$(json "$j" passed)" 200
	expect_eq "scrub: reloads" "$(json "$j" reloads)" 1
	grep -q '"deny":100' "$j" || fail "scrub: not 100 denied: $(cat "$j")"
	echo "  scrub: 300 judged, 200 passed, 100 denied after the reload"
}

# unit_value UNIT KEY: the value of KEY= in the unit file.
unit_value() {
	sed -n "s/^$2=//p" "$UNITS/$1" | head -n 1
}

test_broker() {
	local listen sock mode type=seqpacket
	local -a client=(setpriv --bounding-set -all --inh-caps -all --no-new-privs)
	INST=x
	# the socket where pktmap-broker.socket puts it (/run -> $TMP/run),
	# of its type
	listen=$(unit_value pktmap-broker.socket ListenSequentialPacket)
	if [ -z "$listen" ]; then
		listen=$(unit_value pktmap-broker.socket ListenStream)
		type=stream
	fi
	mode=$(unit_value pktmap-broker.socket SocketMode)
	[ "$listen" = /run/pktmap/broker.sock ] || fail "broker socket: '$listen'"
	sock=$TMP$listen
	mkdir -p "${sock%/*}"
	echo "allow user:root pkt:lo dir=tx" >"$ETC/broker.conf"
	WRAP=(python3 "$HERE/unit_activate.py" "$sock" "$mode" "$type")
	start_unit pktmap-broker.service "$INST"
	WRAP=()
	wait_msg 1 'READY=1$'
	# a root without capabilities: pkt: needs CAP_NET_RAW, so the
	# library asks the broker on the socket systemd would have passed
	"${client[@]}" "$PKTMAP" gen -i "pkt:lo@conf:broker=$sock" -n 100 \
		-T 0 -q --json >"$TMP/bgen.json" ||
		fail "broker: gen through the broker failed"
	expect_eq "broker: frames sent" "$(json "$TMP/bgen.json" packets)" 100
	echo "  broker: a client without capabilities sent 100 frames on pkt:lo"
	echo "allow user:root pkt:lo dir=rx" >"$ETC/broker.conf"
	reload
	expect_err "refused by the broker: $ETC/broker.conf:1: direction tx is not allowed" \
		"${client[@]}" "$PKTMAP" gen -i "pkt:lo@conf:broker=$sock" -n 1 -T 0 -q
	stop_unit
}

echo "1. systemd-analyze verify"
verify
echo "2. pktmap-router@.service"
test_router
echo "3. pktmap-switch@.service"
test_switch
echo "4. pktmap-metrics.service"
test_metrics
echo "5. pktmap-scrub@.service"
test_scrub
echo "6. pktmap-broker.socket and pktmap-broker.service"
test_broker
echo "PASS"
