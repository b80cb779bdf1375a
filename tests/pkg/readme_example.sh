#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# README's C example, extracted as it stands (the ```c block under "A
# program using the library"), compiles with -Wall -Wextra -Werror against
# what `pkg-config --cflags --libs pktmap` gives, and runs: it counts what
# `pktmap gen` sends into its pipe. libpktmap(3)'s EXAMPLE compiles the same way.
#   readme_example.sh README.md [PKG_CONFIG_PATH]
#   (PKTMAP, PKTMAP_BUILD_ROOT from the test environment)
set -euo pipefail
readme=$1
[ -n "${2:-}" ] && export PKG_CONFIG_PATH=$2
. "$(dirname "$0")/../system/lib.sh"
need_cmd cc
need_cmd pkg-config

awk '/^A program using the library/ { on = 1 }
     on && /^```c$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' "$readme" >"$TMP/example.c"
[ -s "$TMP/example.c" ] || fail "no C example found in $readme"
grep -q 'int main' "$TMP/example.c" || fail "README's example has no main()"
# as the README says (the compiler's default C), and as strict ISO C11
for std in "" -std=c11; do
	# shellcheck disable=SC2046,SC2086
	cc $std -Wall -Wextra -Werror -o "$TMP/example" "$TMP/example.c" \
		$(pkg-config --cflags --libs pktmap) 2>"$TMP/cc.err" ||
		fail "README's example does not compile${std:+ with $std}: $(cat "$TMP/cc.err")"
done
echo "ok: README's example compiles ($(wc -l <"$TMP/example.c") lines; default C and -std=c11)"

# libpktmap(3)'s EXAMPLE (the man page's source beside README) compiles
# the same way.
man="$(dirname "$readme")/docs/man/libpktmap.3.scd.in"
awk '/^# EXAMPLE/ { on = 1 } on && /^```$/ { if (code) exit; code = 1; next }
     code { print }' "$man" >"$TMP/man_example.c"
grep -q 'int main' "$TMP/man_example.c" || fail "no example with main() in $man"
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror -o "$TMP/man_example" "$TMP/man_example.c" \
	$(pkg-config --cflags --libs pktmap) 2>"$TMP/cc.err" ||
	fail "libpktmap(3)'s example does not compile: $(cat "$TMP/cc.err")"
echo "ok: libpktmap(3)'s example compiles with -Wall -Wextra -Werror"

# It receives on pipe:p}0: give it 1000 frames and read its count.
libdir=${PKTMAP_BUILD_ROOT:-}
pipe=$(sed -n 's/.*pktmap_open(&p, "\(pipe:[^"]*\)".*/\1/p' "$TMP/example.c")
[ "$pipe" = "pipe:p}0" ] || fail "the example opens '$pipe', the test expects pipe:p}0"
# the example's pipe name is fixed: run it where no one else's pipe:p is
# (mount and network namespaces of its own: /dev/shm, abstract sockets)
need_root
# shellcheck disable=SC2016
unshare -m -n sh -c 'mount -t tmpfs tmpfs /dev/shm || exit 1
	LD_LIBRARY_PATH="$1" timeout 20 "$2" >"$3" 2>&1 & epid=$!
	"$4" gen -i "pipe:p{0" -n 1000 -T 0 -q &&
	i=0; until grep -q "1000 packets, 60000 bytes" "$3" || [ $i -ge 100 ]; do
		sleep 0.1; i=$((i + 1)); done; kill $epid; wait $epid 2>/dev/null; true' \
	sh "$libdir" "$TMP/example" "$TMP/example.out" "$PKTMAP"
grep -q "1000 packets, 60000 bytes" "$TMP/example.out" ||
	fail "the example counted: $(tr '\r' '\n' <"$TMP/example.out" | tail -n 1)"
echo "ok: it counted the 1000 frames gen sent (60000 bytes)"
