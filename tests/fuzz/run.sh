#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Build one libFuzzer target with clang (ASan + UBSan) and run it for a
# while, seeded with the repository's captures (tests/data/pcaps) for the
# pcap reader.
#
#   tests/fuzz/run.sh [TARGET] [SECONDS]
#     TARGET   tests/fuzz/fuzz_TARGET.c: pcapfile (default), libpcap_diff
#              (the reader against the system libpcap: needs libpcap-dev),
#              name (the port-name parser), classify (the router's
#              classifier on packet headers), routes (the router's routes
#              files), vale (the switch's control messages),
#              netmap_req (the netmap emulation's NIOCCTRL requests:
#              header, body, options chain, port name), memif (the
#              memif control channel's messages), cli (the command
#              line's value parsers), http (pktmap metrics --listen's
#              request heads), counters (the counters files pktmap top
#              and metrics read), router_conf (pktmap router --config's
#              files), proc_stat (the /proc/PID/stat text a pipe's lock
#              waiter reads, and /proc/self/uid_map), broker_req (pktmap broker's requests),
#              broker_policy (its policy file), scrub_rules
#              (pktmap scrub's rules files), scrub_pkt (scrub's header
#              parser and judge on any frame), scrub_counters (the
#              counters files scrub publishes for top and metrics);
#              "all" runs every one
#              for SECONDS each
#     SECONDS  how long to fuzz (default 60)
#
# The fuzzed code is compiled with clang's instrumentation; what it calls
# in the rest of the library comes from the meson build's static copy
# ($PKTMAP_BUILD_ROOT, default build/: run ./run build first).
# Binaries and the growing corpus go to $FUZZ_OUT (default build-fuzz/).
# Crashes are written there as crash-*; replay one with
#   build-fuzz/fuzz_pcapfile build-fuzz/crash-...
# Exits 77 (skip) when clang is not installed.
set -euo pipefail
target=${1:-pcapfile}
secs=${2:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$root/build-fuzz}
build=${PKTMAP_BUILD_ROOT:-$root/build}

if [ "$target" = all ]; then
	for t in "$root"/tests/fuzz/fuzz_*.c; do
		t=${t##*/fuzz_}
		"$0" "${t%.c}" "$secs"
	done
	exit 0
fi
if ! command -v clang >/dev/null 2>&1; then
	echo "run.sh: clang not found: cannot build libFuzzer targets" >&2
	exit 77
fi
libs=()
incs=(-I "$root/include" -I "$build/include" -I "$root/src")
seeds=
case $target in
pcapfile | libpcap_diff)
	srcs=("$root/src/capfile.c" "$root/src/capfile_write.c")
	seeds=${PKTMAP_PCAPS:-$root/tests/data/pcaps}
	[ "$target" = libpcap_diff ] && libs=(-lpcap)
	;;
name)
	# the name parser and the @conf tables' reader (src/conf.h)
	srcs=("$root/src/name.c" "$root/src/conf.c")
	libs=("$build/libpktmap_internal.a" "$build/libpktmap_util.a" -lbpf -lelf -lz)
	;;
classify)
	srcs=("$root/src/fwd/router_classify.c" "$root/src/fwd/router_lpm.c"
	      "$root/src/fwd/fwd.c")
	incs+=(-I "$root/src/fwd")
	libs=("$build/libpktmap_internal.a" "$build/libpktmap_util.a" -lbpf -lelf -lz)
	;;
scrub_rules | scrub_pkt)
	srcs=("$root"/src/fwd/scrub_{ctx,judge,pfx,pkt,rules,table}.c)
	incs+=(-I "$root/src/fwd")
	;;
scrub_counters)
	srcs=("$root/apps/common/scrubpub.c" "$root/apps/common/hostports.c"
	      "$root"/src/fwd/scrub_{ctx,judge,pfx,pkt,rules,table}.c)
	incs+=(-I "$root/src/fwd" -I "$root/apps/common")
	;;
routes)
	srcs=("$root/src/fwd/router_lpm.c" "$root/src/fwd/fwd.c")
	incs+=(-I "$root/src/fwd")
	libs=("$build/libpktmap_internal.a" "$build/libpktmap_util.a" -lbpf -lelf -lz)
	;;
vale)
	srcs=()
	;;
netmap_req)
	srcs=("$root/compat/netmap/emu_req.c" "$root/compat/netmap/emu_err.c"
	      "$root/compat/netmap/emu_name.c" "$root/compat/netmap/emu_off.c")
	incs+=(-I "$root/compat/netmap" -I "$root/compat/netmap/include")
	;;
cli)
	# the command line's value parsers (numbers, ranges, seconds,
	# addresses, MACs, the port names they build)
	srcs=("$root/apps/common/cli.c")
	incs+=(-I "$root/apps/common")
	libs=("$build/libpktmap_internal.a" "$build/libpktmap_util.a" -lbpf -lelf -lz -lm)
	;;
memif)
	# the control channel's parser: fuzz_memif.c includes memif_ctl.c
	srcs=()
	libs=("$build/libpktmap_internal.a" "$build/libpktmap_util.a" -lbpf -lelf -lz)
	;;
http)
	srcs=("$root/apps/metrics/metrics_req.c")
	incs+=(-I "$root/apps/metrics")
	;;
counters)
	srcs=("$root/apps/common/hostports.c")
	incs+=(-I "$root/apps/common")
	;;
router_conf)
	srcs=("$root/apps/router/router_conf.c")
	incs+=(-I "$root/apps/router")
	;;
proc_stat)
	srcs=("$root/src/ports/pipe_lock.c" "$root/src/userdir.c")
	libs=("$build/libpktmap_internal.a" "$build/libpktmap_util.a" -lbpf -lelf -lz)
	;;
broker_req)
	srcs=("$root/src/broker_proto.c")
	;;
broker_policy)
	srcs=("$root/apps/broker/policy.c" "$root/src/broker_proto.c")
	incs+=(-I "$root/apps/broker")
	;;
*)
	echo "run.sh: unknown target '$target' (pcapfile, libpcap_diff, name, classify, routes, vale, netmap_req, memif, cli, http, counters, router_conf, proc_stat, broker_req, broker_policy, scrub_rules, scrub_pkt, scrub_counters, all)" >&2
	exit 2
	;;
esac
[ -d "$root/tests/fuzz/seeds/$target" ] && seeds="$root/tests/fuzz/seeds/$target"
if [ -n "$seeds" ] && [ ! -d "$seeds" ]; then
	echo "run.sh: no seeds at $seeds: set PKTMAP_PCAPS to a directory of captures (default tests/data/pcaps)" >&2
	exit 2
fi
for l in ${libs[@]+"${libs[@]}"}; do
	case $l in
	*.a) [ -f "$l" ] || { echo "run.sh: $l missing: build first (./run build)" >&2; exit 2; } ;;
	esac
done
[ -f "$root/tests/fuzz/fuzz_$target.c" ] || { echo "run.sh: no tests/fuzz/fuzz_$target.c" >&2; exit 2; }

mkdir -p "$out/corpus-$target"
set -x
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -std=gnu11 "${incs[@]}" -pthread \
	"$root/tests/fuzz/fuzz_$target.c" ${srcs[@]+"${srcs[@]}"} ${libs[@]+"${libs[@]}"} \
	-o "$out/fuzz_$target"
cd "$out"
# One process: the machine is shared. New inputs go to the first directory.
exec "./fuzz_$target" -max_total_time="$secs" -max_len=65536 -timeout=10 \
	-rss_limit_mb=1024 -print_final_stats=1 "corpus-$target" ${seeds:+"$seeds"}
