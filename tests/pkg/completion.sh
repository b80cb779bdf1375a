#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The bash completion completes subcommands and each subcommand's options
# from the command itself, and port names after -i.
#   completion.sh PKTMAP_BINARY COMPLETION_FILE
set -euo pipefail
pktmap=$1
if [ ! -f /usr/share/bash-completion/bash_completion ]; then
	# ./run test installs it; elsewhere skip, but never in CI
	echo "bash-completion is not installed" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
. /usr/share/bash-completion/bash_completion
# shellcheck source=../../completions/pktmap
. "$2"

fail() { echo "FAIL: $*" >&2; exit 1; }

# complete WORDS...: the completions of the last word
complete_words() {
	COMP_WORDS=("$pktmap" "$@")
	COMP_CWORD=$(($# ))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_pktmap "$pktmap" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

got=$(complete_words "" | sort | tr '\n' ' ')
for c in $("$pktmap" --help | awk '/Commands:$/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
	[[ " $got" == *" $c "* ]] || fail "'pktmap <TAB>' lacks $c: $got"
done
echo "ok subcommands: $got"
got=$(complete_words ge | tr '\n' ' ')
[ "$got" = "gen " ] || fail "'pktmap ge<TAB>' gave '$got', want gen"
got=$(complete_words gen --fa | tr '\n' ' ')
[ "$got" = "--fast " ] || fail "'pktmap gen --fa<TAB>' gave '$got'"
got=$(complete_words recv --id | tr '\n' ' ')
[ "$got" = "--idle " ] || fail "'pktmap recv --id<TAB>' gave '$got'"
got=$(complete_words recv -i pi | tr '\n' ' ')
[ "$got" = "pipe: " ] || fail "'pktmap recv -i pi<TAB>' gave '$got'"
got=$(complete_words recv -i pkt:l | tr '\n' ' ')
[ "$got" = "lo " ] || [ "$got" = "pkt:lo " ] || fail "'pktmap recv -i pkt:l<TAB>' gave '$got'"
got=$(complete_words scrub --dry | tr '\n' ' ')
[ "$got" = "--dry-run " ] || fail "'pktmap scrub --dry<TAB>' gave '$got'"
got=$(complete_words scrub -o pi | tr '\n' ' ')
[ "$got" = "pipe: " ] || fail "'pktmap scrub -o pi<TAB>' gave '$got'"
got=$(complete_words scrub --clock ma | tr '\n' ' ')
[ "$got" = "manual " ] || fail "'pktmap scrub --clock ma<TAB>' gave '$got'"
echo "ok options and port names"
# router --config FILE (and -c) completes file names; capture's -c (a
# count) does not
d=$(mktemp -d)
touch "$d/edge.conf"
got=$(complete_words router --conf | tr '\n' ' ')
[ "$got" = "--config " ] || fail "'pktmap router --conf<TAB>' gave '$got'"
got=$(complete_words router --config "$d/ed" | tr '\n' ' ')
[ "$got" = "$d/edge.conf " ] || fail "'pktmap router --config $d/ed<TAB>' gave '$got'"
got=$(complete_words router -c "$d/ed" | tr '\n' ' ')
[ "$got" = "$d/edge.conf " ] || fail "'pktmap router -c $d/ed<TAB>' gave '$got'"
got=$(complete_words capture -c "$d/ed" | tr '\n' ' ')
[ "$got" = " " ] || [ -z "$got" ] || fail "'pktmap capture -c $d/ed<TAB>' gave '$got'"
rm -rf "$d"
echo "ok router --config"
