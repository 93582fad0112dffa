#!/bin/sh
# deps_graph.sh - the include graph of core/ and cli/, its circles and its
# upward includes.
#
# Reads every `#include "..."` line of core/*/*.[ch] and cli/*.[ch]. A node
# is a concept: a .c file and its .h are one node (core/tensor/tensor.c and
# core/tensor/tensor.h are "core/tensor/tensor"); a concept's internal header
# (run_internal.h) belongs to it too. A name resolves in the including file's
# directory first, then core/ (everything builds with -Icore); system headers
# (<...>) are left out.
#
# The floors of core/ and their order come from the line of core/README that
# starts "floors, lowest first:"; cli/ is above them all. An include from a
# floor to a higher one is an upward arrow.
#
# Prints one "a -> b" line per edge, then each upward arrow as
# "upward: a -> b (floor x below floor y)" and each circle as
# "circle: a -> b -> a"; exits 1 if there is either, 0 otherwise.
# Usage: sh tests/deps_graph.sh [ROOT]   (ROOT: the checkout, default .)
cd "${1:-.}" || exit 2
floors=$(sed -n 's/^floors, lowest first:[ 	]*//p' core/README)
[ -n "$floors" ] || { echo "deps_graph: core/README has no 'floors, lowest first:' line" >&2; exit 2; }
for f in core/*/*.[ch] cli/*.[ch]; do
	[ -f "$f" ] || continue
	sed -n 's/^[ 	]*#[ 	]*include[ 	]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
		dir=${f%/*}
		if [ -f "$dir/$inc" ]; then to="$dir/$inc"
		elif [ -f "core/$inc" ]; then to="core/$inc"
		else continue
		fi
		from=${f%.*} to=${to%.*}
		echo "${from%_internal} ${to%_internal}"
	done
done | awk '$1 != $2' | sort -u | awk -v floors="$floors" '
BEGIN {
	n = split(floors, fl, " ")
	for (i = 1; i <= n; i++) level[fl[i]] = i
}
# The floor of a node: its level in the list; cli/ above every floor.
function floor_of(node,    p) {
	split(node, p, "/")
	if (p[1] == "cli") return n + 1
	if (!(p[2] in level)) return -1
	return level[p[2]]
}
function floor_name(node,    p) {
	split(node, p, "/")
	return p[1] == "cli" ? "cli" : p[2]
}
{
	print $1 " -> " $2
	adj[$1] = adj[$1] " " $2
	nodes[$1] = 1; nodes[$2] = 1
	a = floor_of($1); b = floor_of($2)
	if (a < 0 || b < 0)
		bad = bad "unknown floor: " ($1 ~ /^core/ && a < 0 ? $1 : $2) " (not in core/README)\n"
	else if (b > a)
		bad = bad "upward: " $1 " -> " $2 " (floor " floor_name($1) " below floor " floor_name($2) ")\n"
}
# Depth-first search; color 1 on the stack, 2 done. A back edge closes
# a circle: print it from the stack.
function dfs(u,    k, i, v, s, vs, m) {
	color[u] = 1
	stack[++depth] = u
	m = split(adj[u], vs, " ")
	for (i = 1; i <= m; i++) {
		v = vs[i]
		if (color[v] == 1) {
			s = ""
			for (k = 1; k <= depth; k++)
				if (stack[k] == v) break
			for (; k <= depth; k++)
				s = s stack[k] " -> "
			print "circle: " s v
			found = 1
		} else if (!color[v])
			dfs(v)
	}
	depth--
	color[u] = 2
}
END {
	printf "%s", bad
	for (u in nodes)
		if (!color[u])
			dfs(u)
	exit (found || bad != "") ? 1 : 0
}'
