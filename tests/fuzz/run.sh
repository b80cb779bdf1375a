#!/usr/bin/env bash
# Build one libFuzzer target with clang (ASan + UBSan) and run it for a
# while, seeded with the shared captures for the pcap reader.
#
#   tests/fuzz/run.sh [TARGET] [SECONDS]
#     TARGET   tests/fuzz/fuzz_TARGET.c: pcapfile (default), libpcap_diff
#              (the reader against the system libpcap: needs libpcap-dev),
#              name
#     SECONDS  how long to fuzz (default 60)
#
# Binaries and the growing corpus go to $FUZZ_OUT (default build-fuzz/).
# Crashes are written there as crash-*; replay one with
#   build-fuzz/fuzz_pcapfile build-fuzz/crash-...
# Exits 77 (skip) when clang is not installed.
set -euo pipefail
target=${1:-pcapfile}
secs=${2:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$root/build-fuzz}

if ! command -v clang >/dev/null 2>&1; then
	echo "run.sh: clang not found: cannot build libFuzzer targets" >&2
	exit 77
fi
libs=()
case $target in
pcapfile | libpcap_diff)
	srcs=("$root/src/pcapfile.c")
	seeds=${PKTMAP_PCAPS:-$root/../shared/pcaps}
	[ "$target" = libpcap_diff ] && libs=(-lpcap)
	;;
*)
	srcs=("$root"/src/check.c "$root"/src/name.c "$root"/src/port.c
	      "$root"/src/region.c "$root"/src/pcapfile.c
	      "$root"/src/ports/{null,pipe,packet,tap,pcap}.c)
	seeds=
	;;
esac
[ -f "$root/tests/fuzz/fuzz_$target.c" ] || { echo "run.sh: no tests/fuzz/fuzz_$target.c" >&2; exit 2; }

mkdir -p "$out/corpus-$target"
set -x
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -std=gnu11 -I "$root/include" -I "$root/src" -pthread \
	"$root/tests/fuzz/fuzz_$target.c" "${srcs[@]}" ${libs[@]+"${libs[@]}"} \
	-o "$out/fuzz_$target"
cd "$out"
# One process: the machine is shared. New inputs go to the first directory.
exec "./fuzz_$target" -max_total_time="$secs" -max_len=65536 -timeout=10 \
	-rss_limit_mb=1024 -print_final_stats=1 "corpus-$target" ${seeds:+"$seeds"}
