#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The Debian packages, installed (`apt-get install ./*.deb`, .ci/run): each
# step runs from the installed files only (/usr/bin/pktmap, the libraries,
# headers and pkg-config files under /usr), never from a build tree.
#
#   process 1 (installed)                        process 2 (installed)
#   pktmap gen / nmt gen  == pipe:tPID{0 }0 ==>  pktmap recv / nmt recv /
#                                                tcpdump under pcap-run
#
# 1. pktmap --version is the package's version; man pages and the bash
#    completion are where man and bash look.
# 2. pktmap gen -> pipe -> pktmap recv: exact count and bytes, no gaps.
# 3. tcpdump through pktmap pcap-run (the packaged libpcap.so.0.8): every
#    frame gen sent is in the file.
# 4. a netmap-API program (tests/netmap/nmt.c) built with `pkg-config
#    --cflags --libs pktmap-netmap`: gen -> pipe -> recv in order, bytes
#    intact; the same source with the raw device ABI under netmap-run.
# 5. README's C example builds with `pkg-config pktmap` and runs; a
#    program links the static library.
# 6. every installed library exports its documented API only.
# 7. the systemd units are installed, none enabled (the package starts
#    nothing), each clean under systemd-analyze verify with the installed
#    pktmap; the broker's group in sysusers.d.
# 8. the Python package (python3-pktmap) imports from /usr, moves frames
#    over a pipe, and a view of a closed port's batch raises.
set -euo pipefail
unset LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_PATH PKTMAP_PCAP_LIBDIR \
	PKTMAP_NETMAP_LIBDIR PKTMAP_BUILD_ROOT
export PKTMAP=/usr/bin/pktmap
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/system/lib.sh"
need_cmd tcpdump
need_cmd cc
need_cmd pkg-config
multiarch=$(cc -print-multiarch)
libdir=/usr/lib/$multiarch
N=100000

# A binary or library that loads anything from outside /usr fails here.
only_installed() {
	local f=$1 l
	l=$(ldd "$f" | awk '/=>/ { print $3 }' | grep -v '^/usr/lib\|^/lib' || true)
	[ -z "$l" ] || fail "$f loads $l"
}

echo "1. version, man pages, completion"
want=$(dpkg-query -W -f='${Version}' pktmap)
expect_eq "pktmap --version" "$("$PKTMAP" --version)" "pktmap ${want%%-*}"
only_installed "$PKTMAP"
for p in pktmap.8 pktmap-gen.8 pktmap-ports.7 pktmap-netmap.7 libpktmap.3; do
	[ -f "/usr/share/man/man${p##*.}/$p.gz" ] || fail "no man page $p"
done
[ -f /usr/share/bash-completion/completions/pktmap ] || fail "no bash completion"

echo "2. pktmap gen -> pipe -> pktmap recv, $N frames"
bg "$PKTMAP" recv -i "pipe:${PIPE}a}0" -n "$N" -T 0 -q --json >"$TMP/r.json"
rpid=$BG_PID
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}a{0" -n "$N" -l 60-1514 -T 0 -q \
	--json >"$TMP/g.json"
wait_bg "$rpid"
expect_eq "recv exit status" "$WAIT_RC" 0
expect_eq "gen packets" "$(json "$TMP/g.json" packets)" "$N"
expect_eq "recv packets" "$(json "$TMP/r.json" packets)" "$N"
expect_eq "recv bytes" "$(json "$TMP/r.json" bytes)" "$(json "$TMP/g.json" bytes)"
expect_eq "gaps" "$(json "$TMP/r.json" gaps)" 0
expect_eq "bad" "$(json "$TMP/r.json" bad)" 0

echo "3. tcpdump through pktmap pcap-run"
"$PKTMAP" pcap-run -n tcpdump | grep -q "$libdir/pktmap" ||
	fail "pcap-run does not use $libdir/pktmap: $("$PKTMAP" pcap-run -n tcpdump)"
bg "$PKTMAP" pcap-run tcpdump -Z root -n -U -i "pipe:${PIPE}c}0" -c 1000 \
	-w "$TMP/c.pcap" 2>"$TMP/tcpdump.err"
tpid=$BG_PID
wait_for "$TMP/tcpdump.err" 'listening on'
timeout 60 "$PKTMAP" gen -i "pipe:${PIPE}c{0" -n 1000 -T 0 -q
wait_bg "$tpid"
expect_eq "tcpdump exit status" "$WAIT_RC" 0
expect_eq "frames in tcpdump's file" \
	"$(tcpdump -nr "$TMP/c.pcap" 2>/dev/null | grep -c 'UDP, length 18')" 1000

echo "4. a netmap program built with pkg-config pktmap-netmap"
# shellcheck disable=SC2046
cc -O2 -Wall -Wextra -Werror -DNMT_LIB -o "$TMP/nmt" "$src/tests/netmap/nmt.c" \
	$(pkg-config --cflags --libs pktmap-netmap)
only_installed "$TMP/nmt"
ldd "$TMP/nmt" | grep -Eq "libpktmap-netmap.so.0 => (/usr)?/lib/$multiarch/" ||
	fail "nmt does not load libpktmap-netmap.so.0 from /usr/lib/$multiarch: $(ldd "$TMP/nmt")"
nm_pair() { # NAME PROG [WRAPPER...]: recv and gen N frames over a pipe
	local name=$1 prog=$2
	shift 2
	bg "$@" "$prog" recv "netmap:${PIPE}$name}0" "$N" 60 poll >"$TMP/$name.rx" 2>&1
	local pid=$BG_PID
	wait_for "$TMP/$name.rx" '^ready'
	"$@" "$prog" gen "netmap:${PIPE}$name{0" "$N" 60 poll >"$TMP/$name.tx" 2>&1 ||
		fail "$name: gen: $(cat "$TMP/$name.tx")"
	wait_bg "$pid"
	expect_eq "$name: recv exit status" "$WAIT_RC" 0
	grep -q "^received $N in order, bytes ok" "$TMP/$name.rx" ||
		fail "$name: $(cat "$TMP/$name.rx")"
	echo "  $name: $(tail -n 1 "$TMP/$name.rx")"
}
nm_pair n "$TMP/nmt"
# shellcheck disable=SC2046
cc -O2 -Wall -Wextra -Werror -DPKTMAP_NETMAP_NO_REDIRECT -o "$TMP/nmt_raw" \
	"$src/tests/netmap/nmt.c" $(pkg-config --cflags pktmap-netmap)
nm_pair r "$TMP/nmt_raw" "$PKTMAP" netmap-run -q --

echo "5. README's C example against the installed headers and library"
PKTMAP_BUILD_ROOT='' "$src/tests/pkg/readme_example.sh" "$src/README.md"

echo "   ... and linked with the static library (libpktmap-dev's libpktmap.a)"
cat >"$TMP/v.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <pktmap/pktmap.h>
int main(void)
{
	printf("%s %s\n", pktmap_version(), PKTMAP_VERSION);
	return strcmp(pktmap_version(), PKTMAP_VERSION) != 0;
}
C
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror -o "$TMP/v" "$TMP/v.c" $(pkg-config --cflags pktmap) \
	"$libdir/libpktmap.a" $(pkg-config --static --libs libbpf) -pthread
! ldd "$TMP/v" | grep -q libpktmap || fail "the static link loads libpktmap"
expect_eq "static pktmap_version()" "$("$TMP/v")" "${want%%-*} ${want%%-*}"

echo "6. exported symbols of the installed libraries"
python3 "$src/tests/pkg/abi_exports.py" --installed "$libdir" /usr/include

echo "7. the systemd units"
units=(pktmap-switch@.service pktmap-router@.service pktmap-metrics.service
       pktmap-broker.service pktmap-broker.socket pktmap-scrub@.service)
for u in "${units[@]}"; do
	[ -f "/lib/systemd/system/$u" ] || fail "/lib/systemd/system/$u not installed"
done
for w in /etc/systemd/system/*.wants/pktmap*; do
	[ ! -e "$w" ] || fail "the package enabled $w"
done
grep -q '^g pktmap ' /usr/lib/sysusers.d/pktmap.conf ||
	fail "no group pktmap in /usr/lib/sysusers.d/pktmap.conf"
if command -v systemd-analyze >/dev/null; then
	for u in "${units[@]}"; do
		f=/lib/systemd/system/$u
		case $u in *@.service) cp "$f" "$TMP/${u%@.service}@x.service"; f=$TMP/${u%@.service}@x.service ;; esac
		out=$(systemd-analyze verify --man=no "$f" 2>&1) || fail "verify $u: $out"
		[ -z "$out" ] || fail "verify $u: $out"
	done
	echo "   ${#units[@]} units installed, none enabled, systemd-analyze verify clean"
fi

echo "8. the Python package (python3-pktmap): a pipe round trip, stale view"
/usr/bin/python3 - "${PIPE}py" <<'PY' || fail "python3-pktmap"
import sys
import pktmap
assert pktmap.__file__.startswith("/usr/lib/python3/dist-packages/"), pktmap.__file__
assert pktmap.__version__ == pktmap.lib_version(), pktmap.__version__
n = sys.argv[1]
frames = [bytes([i]) * (60 + i) for i in range(100)]
with pktmap.open(f"pipe:{n}{{0") as a, pktmap.open(f"pipe:{n}}}0") as b:
    a.send(frames)
    got = []
    for batch in b.rx(timeout=10):
        got += [bytes(v) for v in batch]
        v = batch[0]
        if len(got) == 100:
            break
    assert got == frames
try:  # the ports are closed: the batch with them
    v[0]
    sys.exit("a stale view was readable")
except ValueError:
    pass
print("   100 frames intact; a stale view raises")
PY

echo "PASS: the installed packages"
