#!/bin/sh
# deps_graph.sh - the include graph of core/ and cli/, and its circles.
#
# Reads every `#include "..."` line of core/*.[ch] and cli/*.[ch]. A node is
# a concept: a .c file and its .h are one node (core/tensor.c and
# core/tensor.h are "core/tensor"), so tensor.c including pool.h while
# pool.c includes tensor.h is the circle core/tensor -> core/pool ->
# core/tensor; a concept's internal header (run_internal.h) belongs to
# it too (core/run). A name resolves in the including file's directory first,
# then core/ (cli/ builds with -Icore); system headers (<...>) are left out.
# Prints one "a -> b" line per edge, then every circle found as
# "circle: a -> b -> a"; exits 1 if there is one, 0 otherwise.
# Usage: sh tests/deps_graph.sh [ROOT]   (ROOT: the checkout, default .)
cd "${1:-.}" || exit 2
for f in core/*.[ch] cli/*.[ch]; do
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
done | awk '$1 != $2' | sort -u | awk '
{
	print $1 " -> " $2
	adj[$1] = adj[$1] " " $2
	nodes[$1] = 1; nodes[$2] = 1
}
# Depth-first search; color 1 on the stack, 2 done. A back edge closes
# a circle: print it from the stack.
function dfs(u,    n, i, v, k, s, vs) {
	color[u] = 1
	stack[++depth] = u
	n = split(adj[u], vs, " ")
	for (i = 1; i <= n; i++) {
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
	for (u in nodes)
		if (!color[u])
			dfs(u)
	exit found ? 1 : 0
}'
