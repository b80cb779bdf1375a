#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The shell examples of README.md and of the docs listed in DOCS below, run
# as written: every ```sh block, in file order, each in a fresh bash -e
# (a failing command fails the example) in one scratch directory, with the
# pktmap under test first on PATH, in mount and network namespaces of
# their own (a tmpfs on /dev/shm: the examples' fixed pipe names meet no
# one else's). A block that needs what a test machine has not (a network
# interface, root setup, another program's sources) is marked in the
# markdown by a comment line just before it:
#
#   <!-- example: skip (network interfaces, root) -->
#
# and counted as skipped, with its reason. Fails if an example fails, if a
# skip comment has no reason, or if no example ran.
#   doc_examples.sh SOURCE_DIR   (PKTMAP from the test environment)
set -euo pipefail
src=$1
. "$(dirname "$0")/../system/lib.sh"
need_root
need_cmd unshare
need_cmd tcpdump

# The documents whose shell examples are kept runnable.
DOCS=(README.md docs/gen-recv.md docs/bridge.md docs/libpcap.md docs/router.md
      docs/capture.md docs/metrics.md docs/netmap.md docs/scrub.md)

# Split the documents into $TMP/ex/NNN.sh (one per ```sh block, its
# origin in a first comment line) and $TMP/skipped (file:line reason).
mkdir "$TMP/ex" "$TMP/work"
: >"$TMP/skipped"
for doc in "${DOCS[@]}"; do
	[ -f "$src/$doc" ] || fail "$doc: not found under $src"
	awk -v doc="$doc" -v out="$TMP/ex" -v skipped="$TMP/skipped" '
		function flush() { close(file) }
		/^<!-- example: skip/ {
			reason = $0
			sub(/^<!-- example: skip */, "", reason)
			sub(/ *-->$/, "", reason)
			if (reason !~ /^\(.+\)$/) {
				print doc ":" FNR ": a skip comment without a reason in ( )" > "/dev/stderr"
				bad = 1
			}
			pending = reason
			next
		}
		inb && /^```$/ { inb = 0; if (!skip) flush(); next }
		!inb && /^```sh$/ {
			inb = 1
			skip = pending != ""
			if (skip)
				print doc ":" FNR " " pending >> skipped
			else {
				n = sprintf("%03d", ++count + base)
				file = out "/" doc_id "-" n ".sh"
				print "# " doc ":" FNR > file
			}
			pending = ""
			next
		}
		inb { if (!skip) print > file; next }
		NF { pending = "" }
		END { exit bad }' doc_id="$(echo "$doc" | tr / _)" "$src/$doc" ||
		fail "$doc: malformed example markers"
done

total=$(find "$TMP/ex" -name '*.sh' | wc -l)
[ "$total" -gt 0 ] || fail "no shell example found in ${DOCS[*]}"

# Run them, in document order, in the namespaces.
bindir=$(cd "$(dirname "$PKTMAP")" && pwd)
cat >"$TMP/run-all.sh" <<'RUN'
set -u
mount -t tmpfs tmpfs /dev/shm || exit 1
ip link set lo up
cd "$1/work" || exit 1
failed=0
for f in $(ls "$1/ex"/*.sh | sort); do
	where=$(head -1 "$f" | sed 's/^# //')
	# a session of its own: whatever it leaves running is ended after it
	setsid timeout -k 5 120 bash -e "$f" >"$f.out" 2>&1 </dev/null &
	pid=$!
	wait "$pid"
	rc=$?
	kill -KILL -- -"$pid" 2>/dev/null
	# a reader following the doc would see an error: a pipe cut short
	# (| head on a program that goes on writing)
	if [ "$rc" = 0 ] && grep -q "Broken pipe" "$f.out"; then
		echo "     (printed 'Broken pipe': end the command, not the pipe)"
		rc=141
	fi
	if [ "$rc" = 0 ]; then
		echo "ok   $where"
	else
		echo "FAIL $where (exit $rc):"
		sed 's/^/     | /' "$f"
		echo "     output:"
		tail -n 15 "$f.out" | sed 's/^/     > /'
		failed=$((failed + 1))
	fi
done
exit "$failed"
RUN
rc=0
PATH="$bindir:$PATH" unshare -m -n --propagation private \
	bash "$TMP/run-all.sh" "$TMP" || rc=$?
while read -r where reason; do
	echo "skip $where $reason"
done <"$TMP/skipped"
echo "$((total - rc)) of $total shell examples ran and passed," \
     "$(wc -l <"$TMP/skipped") skipped as marked (${DOCS[*]})"
[ "$rc" = 0 ] || fail "$rc shell examples failed"
