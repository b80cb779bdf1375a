# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Network namespaces and veth pairs for the tests (tests/system/) and the
# benchmarks (bench/): source this file. Callers name their namespaces
# with their PID (other runs share the machine) and delete them on exit
# (netns_del); a namespace's veths go with it.

# netns_new NS...: create the namespaces, IPv6 off in each (no router
# solicitations or DAD: kernel counters count only the caller's frames).
netns_new() {
	local ns
	for ns in "$@"; do
		ip netns add "$ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	done
}

# netns_veth NS_A IF_A NS_B IF_B [QUEUES]: a veth pair from IF_A in NS_A to
# IF_B in NS_B, both up; QUEUES TX and RX queues on each side (default 1).
netns_veth() {
	local q=()
	[ -n "${5:-}" ] && q=(numtxqueues "$5" numrxqueues "$5")
	ip link add name "$2" netns "$1" ${q[@]+"${q[@]}"} type veth \
		peer name "$4" netns "$3" ${q[@]+"${q[@]}"}
	ip -n "$1" link set dev "$2" up
	ip -n "$3" link set dev "$4" up
}

# netns_del NS...: delete the namespaces (quietly: some may not exist).
netns_del() {
	local ns
	for ns in "$@"; do
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}

# netns_xdp_gone NS...: wait (up to 5 s) until no link in the namespaces
# has an XDP program; if one stays, print its `ip -o link` lines and
# return 1. A program goes with its BPF link when the kernel drops the
# last reference to it, a moment after the process that held it exited.
netns_xdp_gone() {
	local l ns _
	for _ in $(seq 50); do
		l=$(for ns in "$@"; do ip -n "$ns" -o link; done | grep xdp || true)
		[ -z "$l" ] && return 0
		sleep 0.1
	done
	echo "$l"
	return 1
}
