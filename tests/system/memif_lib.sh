# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Helpers for the memif tests: dpdk-testpmd in interactive mode, fed
# through a FIFO, with net_memif ports on sockets in $TMP (callers check
# need_cmd dpdk-testpmd). Source after lib.sh.
#
#   tp_start TAG VDEV...   start testpmd (its output in $TMP/TAG.out) and
#                          wait for its prompt; TP_PID is its PID
#   tp_cmd TAG CMD...      type a command
#   tp_after TAG CMD RE    type CMD, wait for a line matching RE after it
#                          (the line is left in TP_LINE)
#   tp_quit TAG            quit it and wait for it to end
#   tp_field FIELD         the number after "FIELD:" in TP_LINE

declare -A TP_FD

# testpmd with --no-huge and no PCI devices: the memif ports only, one
# forwarding core. Every instance has a file prefix of its own. With
# --no-flush-rx: at `start`, testpmd otherwise reads and frees whatever its
# RX queues hold for a while, and a peer already sending (a pktmap memif
# server) loses up to a ring's worth of frames there, counted by the port
# but never forwarded.
tp_start() {
	local tag=$1 fd
	shift
	local vdevs=()
	for v in "$@"; do
		vdevs+=("--vdev=$v")
	done
	mkfifo "$TMP/$tag.in"
	# Held open both ways, so that neither open of the FIFO waits.
	exec {fd}<>"$TMP/$tag.in"
	TP_FD[$tag]=$fd
	# Not through bg: a background job's stdin would be /dev/null.
	timeout "${TP_TIMEOUT:-200}" stdbuf -o0 -e0 dpdk-testpmd --no-huge \
		-m 512 --no-pci --file-prefix="pktmap$$$tag" -l 0-1 "${vdevs[@]}" \
		-- -i --nb-cores=1 --total-num-mbufs=8192 --no-flush-rx \
		<"$TMP/$tag.in" >"$TMP/$tag.out" 2>&1 &
	TP_PID=$!
	BG_PIDS+=("$TP_PID")
	wait_for "$TMP/$tag.out" "testpmd> " 60
}

tp_cmd() {
	local tag=$1
	shift
	echo "$*" >&"${TP_FD[$tag]}"
}

# tp_after TAG CMD RE: type CMD and wait until a line after its echo
# matches RE (the first such line is left in TP_LINE).
tp_after() {
	local tag=$1 cmd=$2 re=$3 t=300 n
	# testpmd's command line ends its echoed lines with \r\n.
	n=$(tr -d '\r' <"$TMP/$tag.out" | grep -c "^testpmd> $cmd\$" || true)
	tp_cmd "$tag" "$cmd"
	until TP_LINE=$(tr -d '\r' <"$TMP/$tag.out" | awk -v c="testpmd> $cmd" \
			-v n="$((n + 1))" -v re="$re" \
			'$0 == c { k++ } k == n && $0 ~ re { print; exit }') &&
	      [ -n "$TP_LINE" ]; do
		[ "$t" -gt 0 ] || fail "testpmd $tag: no '$re' after '$cmd'"
		sleep 0.1
		t=$((t - 1))
	done
}

# Quit testpmd and wait for it to end. DPDK 22.11's net_memif sometimes
# crashes while it closes a port whose peer has already disconnected (it
# frees the control channel from inside its own callback): that is said,
# not failed on, since it happens after everything was checked and is not
# pktmap's behaviour.
tp_quit() {
	local tag=$1 _
	tp_cmd "$tag" quit
	eval "exec ${TP_FD[$tag]}>&-"
	for _ in $(seq 600); do
		grep -q "^Bye" "$TMP/$tag.out" && return 0
		kill -0 "$TP_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$TP_PID" 2>/dev/null && fail "testpmd $tag did not quit"
	grep -q "^Bye" "$TMP/$tag.out" ||
		echo "  (testpmd $tag crashed while closing its ports: a DPDK bug)"
}

# The number after "FIELD:" in TP_LINE.
tp_field() {
	printf '%s\n' "$TP_LINE" | sed -n "s/.*$1: *\([0-9]*\).*/\1/p"
}

