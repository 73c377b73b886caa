#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The C sources are clang-format clean (.clang-format), except the files
# named in tools/format-exempt.txt: the ones written before this check,
# which are formatted when they are next reworked, and then leave the
# list. A new file must be clean; an exempt file that has become clean
# must leave the list (so the list only shrinks).
#
#   tools/check-format.sh [--fix-list] [TOP]
#
# --fix-list rewrites the exemption list to the files that differ now
# (use it only to drop files that became clean). Exit 0 clean, 1 not
# clean (each file named with the first lines clang-format would change),
# 2 when clang-format is missing.
set -uo pipefail

fix=0
[ "${1:-}" = --fix-list ] && { fix=1; shift; }
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 2
cf=$(command -v clang-format || command -v clang-format-14) ||
	{ echo "check-format: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
list=tools/format-exempt.txt

# The tracked C files, or every one under the tree outside a git checkout.
if git rev-parse --git-dir >/dev/null 2>&1; then
	files=$(git ls-files -co --exclude-standard -- '*.c' '*.h')
else
	files=$(find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||')
fi

# One clang-format run over all of them: --dry-run names each file it
# would change in a warning (FILE:LINE:COL: warning: ...).
differ=()
declare -A is_differ=() is_exempt=()
# shellcheck disable=SC2086 # $files: paths without blanks (git ls-files)
out=$("$cf" --style=file --dry-run $files 2>&1)
while read -r f; do
	[ -n "$f" ] || continue
	differ+=("$f")
	is_differ[$f]=1
done <<<"$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)"
if grep -q ': error:' <<<"$out"; then
	echo "check-format: clang-format failed:" >&2
	grep ': error:' <<<"$out" | head -5 >&2
	exit 2
fi

if [ $fix = 1 ]; then
	{
		echo "# Files not yet clang-format clean (tools/check-format.sh): this list only shrinks."
		printf '%s\n' "${differ[@]}" | sort
	} >"$list"
	echo "check-format: $list now names ${#differ[@]} files"
	exit 0
fi

rc=0
while read -r f; do
	case "$f" in '' | '#'*) continue ;; esac
	is_exempt[$f]=1
	[ -f "$f" ] || { echo "check-format: $list names $f, which is gone: drop it"; rc=1; continue; }
	[ -n "${is_differ[$f]:-}" ] ||
		{ echo "check-format: $f is clean now: drop it from $list"; rc=1; }
done <"$list"
for f in "${differ[@]}"; do
	[ -n "${is_exempt[$f]:-}" ] && continue
	echo "check-format: $f is not clang-format clean (clang-format -i $f):"
	"$cf" --style=file "$f" | diff "$f" - | head -8 | sed 's/^/    /'
	rc=1
done
[ $rc = 0 ] && echo "check-format: ${#differ[@]} exempt files, every other C file clean"
exit $rc
