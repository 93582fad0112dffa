#!/bin/sh
# lrfind_configs.sh - lr-find's suggestion against each config's own rate:
# for every CONFIG, run `akkctl lr-find CONFIG`, then train EPOCHS epochs
# (default 2) at the config's own rate and at the suggested one, and print
# the validation accuracy each ends at (the mean over the folds for a
# config with validation: {folds: K}; R^2 for regression).
#
#   sh tests/lrfind_configs.sh [-e EPOCHS] CONFIG...
#
# AKKCTL names the binary (default ./akkctl); LRFIND_ARGS, extra lr-find
# options (e.g. LRFIND_ARGS='--max 1000'). Runs go to a temporary
# directory, removed at the end. One line per config:
#   CONFIG own LR ACC suggested LR ACC (difference in points)
set -eu

akkctl=${AKKCTL:-./akkctl}
epochs=2
if [ "${1:-}" = -e ]; then
	epochs=$2
	shift 2
fi
[ $# -gt 0 ] || { echo "usage: lrfind_configs.sh [-e EPOCHS] CONFIG..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The run's final score: the folds' mean, else the last validation row's
# accuracy column (metrics.csv: epoch,phase,samples,loss,accuracy,...).
score() {
	if [ -f "$1/folds.csv" ]; then
		awk -F, '$1 == "mean" { print $NF }' "$1/folds.csv"
	else
		awk -F, '$2 == "validation" { a = $5 } END { print a }' "$1/metrics.csv"
	fi
}

for cfg in "$@"; do
	own=$("$akkctl" check "$cfg" >/dev/null 2>&1 && sed -n 's/^optimizer:.*lr: *\([0-9.e+-]*\).*/\1/p' "$cfg" | head -n 1)
	# shellcheck disable=SC2086 # LRFIND_ARGS is a list of options
	line=$("$akkctl" lr-find "$cfg" ${LRFIND_ARGS:-} 2>&1 >/dev/null | grep -E '^(suggested|no suggested) lr' || true)
	"$akkctl" train "$cfg" --quiet --set schedule.epochs="$epochs" --out "$tmp/own" >/dev/null 2>&1 ||
		{ echo "$cfg: train at its own rate failed" >&2; exit 1; }
	a=$(score "$tmp/own")
	rm -rf "$tmp/own"
	case $line in
	"suggested lr: "*)
		lr=$(echo "$line" | sed 's/^suggested lr: \([^ ]*\).*/\1/')
		"$akkctl" train "$cfg" --quiet --set schedule.epochs="$epochs" \
			--set optimizer.lr="$lr" --out "$tmp/sug" >/dev/null 2>&1 ||
			{ echo "$cfg: train at lr $lr failed" >&2; exit 1; }
		b=$(score "$tmp/sug")
		rm -rf "$tmp/sug"
		awk -v c="$cfg" -v o="$own" -v a="$a" -v l="$lr" -v b="$b" 'BEGIN {
			printf "%s own %s %.4f suggested %s %.4f (%+.2f points)\n", c, o, a, l, b, 100 * (b - a) }'
		;;
	*)
		echo "$cfg own $own $a: $line"
		;;
	esac
done
