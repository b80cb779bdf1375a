#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# TX on a veth pair: `pktmap gen -i pkt:vethA` (sending from the kernel's
# TX frames, tx=frames; pktmap_pkt@tx=copy copies into them; --fast, no
# stamp written per frame: pktmap_pkt_fast) beside netsniff-ng's trafgen
# (AF_PACKET TX_RING, with and without qdisc bypass) sending byte-identical
# frames and dpdk-testpmd txonly on net_af_packet (its own frames of the
# same size), counted by the receiving veth's kernel counter (rx_packets).
#
#   netns pbA$$                         netns pbB$$
#   [ sender, pinned to CPU 0 ] vethA ==== vethB [ kernel counts rx_packets ]
#
# The frames are pktmap gen's own (written once to a pcap file through the
# pcap: port and turned into a trafgen configuration), so the receiver does
# the same work for every sender; their destination MAC is testpmd's
# (02:00:00:00:00:00), not vethB's, so the receiving stack drops every
# sender's frames right after counting them (PACKET_OTHERHOST). Each
# point: RUNS runs, each a window of SECONDS_ seconds opening WARM
# seconds after the sender started (its start-up is not counted);
# median/min/max in packets per second. Output:
# bench/results/pkt_veth.json.
#
# Usage: bench/pkt_veth.sh [PKTMAP]     (env: SIZES="60 1514" RUNS=3 SECONDS_=3 WARM=1)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PKTMAP=${1:-${PKTMAP:-$ROOT/build/apps/pktmap}}
SIZES=${SIZES:-60 512 1514}
RUNS=${RUNS:-3}
SECS=${SECONDS_:-3}
WARM=${WARM:-1}
CPU=${CPU:-0}
OUT=${OUT:-$ROOT/bench/results/pkt_veth.json}
A=pbA$$
B=pbB$$
TMP=$(mktemp -d /tmp/pkt_bench.XXXXXX)

trap 'bench_cleanup "$A" "$B"' EXIT

[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$PKTMAP" ] || { echo "no pktmap binary at $PKTMAP" >&2; exit 1; }
command -v trafgen >/dev/null || { echo "needs trafgen: apt-get install -y netsniff-ng" >&2; exit 1; }

netns_new "$A" "$B"
netns_veth "$A" vethA "$B" vethB

# One run: packets per second vethB counted in a window of SECS seconds,
# WARM seconds after "$@" started (bench/lib.sh): start-up is not in it.
measure() { tx_window "$A" "$B" vethB "$CPU" "$WARM" "$SECS" "$@"; }

# trafgen configuration holding exactly gen's frame of SIZE bytes.
make_cfg() {
	local size=$1
	rm -f "$TMP/f.pcap"
	"$PKTMAP" gen -i "pcap:$TMP/f.pcap/T" -n 1 -l "$size" -D "$DMAC" -q >/dev/null
	python3 - "$TMP/f.pcap" "$TMP/f$size.cfg" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
le = d[:4] in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1')
incl = struct.unpack('<I' if le else '>I', d[32:36])[0]
fr = d[40:40 + incl]
body = ",\n".join(", ".join("0x%02x" % b for b in fr[i:i + 12])
                  for i in range(0, len(fr), 12))
open(sys.argv[2], 'w').write("{\n" + body + "\n}\n")
EOF
}

declare -A RES CPUNS SYSK
# pktmap_pkt_fast: gen --fast, a fixed frame as trafgen sends (no
# sequence stamped into each); pktmap_pkt@CONF: the port with
# @conf:CONF (pktmap_pkt@tx-slots=256); TOOLS="..." (env) picks a subset.
TOOLS=${TOOLS:-"pktmap_pkt pktmap_pkt@tx=copy pktmap_pkt_fast trafgen trafgen_qdisc testpmd_pkt"}
if [[ " $TOOLS " == *" testpmd_pkt "* ]] && ! command -v dpdk-testpmd >/dev/null; then
	echo "no dpdk-testpmd (apt-get install -y dpdk): skipping that peer" >&2
	TOOLS=${TOOLS/testpmd_pkt/}
fi
DMAC=02:00:00:00:00:00
G=(-D "$DMAC" -T 0 -q)
for size in $SIZES; do
	make_cfg "$size"
	# Tools interleaved within each run: load from elsewhere on a shared
	# machine then weighs on every tool alike.
	for _ in $(seq "$RUNS"); do
		for tool in $TOOLS; do
			case $tool in
			pktmap_pkt) v=$(measure "$PKTMAP" gen -i pkt:vethA -l "$size" "${G[@]}") ;;
			pktmap_pkt_fast) v=$(measure "$PKTMAP" gen -i pkt:vethA -l "$size" "${G[@]}" --fast) ;;
			pktmap_pkt@*) v=$(measure "$PKTMAP" gen -i "pkt:vethA@conf:${tool#pktmap_pkt@}" -l "$size" "${G[@]}") ;;
			trafgen) v=$(measure trafgen -o vethA -i "$TMP/f$size.cfg" -P 1) ;;
			trafgen_qdisc) v=$(measure trafgen -o vethA -i "$TMP/f$size.cfg" -P 1 --qdisc-path) ;;
			testpmd_pkt)
				# Forwarding lcore = CPU 0 (the main lcore 1 only
				# waits); the TX ring bypasses the qdisc, as
				# trafgen's and pktmap's do.
				v=$(measure dpdk-testpmd --no-huge -m 1024 --no-pci -l 0,1 \
					--main-lcore 1 --file-prefix "pp$$" \
					--vdev net_af_packet0,iface=vethA,qdisc_bypass=1 -- \
					--forward-mode=txonly --txpkts="$size" --nb-cores=1 \
					--total-num-mbufs=16384 --stats-period 1) ;;
			esac
			read -r v c y <<<"$v"
			RES["$size,$tool"]="${RES["$size,$tool"]:-} $v"
			CPUNS["$size,$tool"]="${CPUNS["$size,$tool"]:-} $c"
			SYSK["$size,$tool"]="${SYSK["$size,$tool"]:-} $y"
		done
	done
	for tool in $TOOLS; do
		echo "size $size $tool:${RES["$size,$tool"]} pps" >&2
	done
done

write_tx_json pkt_veth "TX packets/s on veth, counted by the peer's rx_packets; sender pinned to CPU $CPU, over ${SECS} s after ${WARM} s" "\"warmup\": $WARM," pktmap_pkt
