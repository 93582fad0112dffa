#!/bin/sh
# house_limits.sh - the size limits of the house style, checked on core/
# and cli/: no function over FUNC lines (default 120, from its first line
# to its closing brace, as Universal Ctags reads them), no source file
# over FILE lines (default 1500), and no ticket tags ("issue 12", "h13")
# in core/, cli/ or README.md: the code explains itself without the
# tracker. Prints each breach and exits 1 if there is one, 0 otherwise.
# Usage: sh tests/house_limits.sh [ROOT]   (FUNC, FILE: the limits)
cd "${1:-.}" || exit 2
FUNC=${FUNC:-120}
FILE=${FILE:-1500}
command -v ctags >/dev/null 2>&1 ||
	{ echo "house_limits: no ctags (Debian: apt-get install universal-ctags)" >&2; exit 2; }
ctags --version 2>/dev/null | grep -q 'Universal Ctags' ||
	{ echo "house_limits: ctags is not Universal Ctags (it reads no function ends)" >&2; exit 2; }
bad=0
long=$(ctags --c-kinds=f --fields=+ne -o - core/*/*.[ch] cli/*.[ch] | awk -F'\t' -v max="$FUNC" '
	{ n = ""; e = ""
	  for (i = 4; i <= NF; i++) {
		if ($i ~ /^line:/) n = substr($i, 6)
		if ($i ~ /^end:/) e = substr($i, 5)
	  }
	  if (n != "" && e != "" && e - n + 1 > max)
		printf "function over %d lines: %s:%d %s (%d lines)\n", max, $2, n, $1, e - n + 1 }')
[ -z "$long" ] || { echo "$long"; bad=1; }
for f in core/*/*.[ch] cli/*.[ch]; do
	n=$(wc -l < "$f")
	[ "$n" -le "$FILE" ] || { echo "file over $FILE lines: $f ($n lines)"; bad=1; }
done
tags=$(grep -nE 'issue [0-9]+|\bh1[0-9]' core/*/*.[ch] cli/*.[ch] README.md)
[ -z "$tags" ] || { echo "$tags" | sed 's/^/ticket tag: /'; bad=1; }
[ $bad -eq 0 ] && echo "house_limits: functions <= $FUNC lines, files <= $FILE lines, no ticket tags"
exit $bad
