#!/bin/sh
# bench_balanced.sh - the Akkordeon headline on configs/bench-balanced.yaml:
# wheels / flip-flop throughput in RUNS interleaved runs of
# `akkctl bench --mode both` (flip-flop, wheels and pipeline, EPOCHS epochs
# each, validation included; within a run the modes take turns epoch by
# epoch, bench's own interleaving), with one compute thread per gate
# (schedule.threads=1: flip-flop then computes on one core at a time,
# wheels on both) and with the default (schedule.threads=0: flip-flop
# splits its products over every core). Prints per run each mode's
# s/epoch (median of its epochs), its CPU seconds per epoch, the ratio
# flip-flop / wheels of the s/epoch, and the load average before and after:
# the machine may be shared, so read the ratios beside the load. With
# threads=1 it also prints bench's bound: the gates' own work timed after
# each turn in turn and at once, a thread per gate and no messages, loss
# or data (model/overlap.h), whose ratio is the most overlap can give on
# this machine at that moment; wheels/flip-flop beats it only by
# flip-flop's serial work besides its gates.
#
# Usage: sh tests/bench_balanced.sh [RUNS [EPOCHS]]   (default 5 and 3)
# AKK: the akkctl binary (default ./akkctl).
set -eu
RUNS=${1:-5}
EPOCHS=${2:-3}
AKK=${AKK:-./akkctl}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for v in "$RUNS" "$EPOCHS"; do
	case $v in ''|*[!0-9]*) echo "bench_balanced.sh: RUNS and EPOCHS are whole numbers" >&2; exit 2;; esac
done
"$AKK" check configs/bench-balanced.yaml 2>&1 | grep -i 'kernels' || true
echo "run threads load-before flip-flop(s/epoch,cpu-s) wheels(s/epoch,cpu-s) pipeline(s/epoch,cpu-s) wheels/flip-flop bound load-after"
for r in $(seq 1 "$RUNS"); do
	for t in 1 0; do
		before=$(cut -d' ' -f1 /proc/loadavg)
		"$AKK" bench --mode both --config configs/bench-balanced.yaml --epochs "$EPOCHS" \
			--set schedule.threads=$t --csv "$T/b.csv" >/dev/null 2>&1
		after=$(cut -d' ' -f1 /proc/loadavg)
		awk -F, -v r="$r" -v t="$t" -v b="$before" -v a="$after" '
			$2 == "all" { s[$1] = $4; c[$1] = $4 * $8 }
			END {
				bound = s["gates-at-once"] > 0 ? sprintf("%.2fx", s["gates-in-turn"] / s["gates-at-once"]) : "-"
				printf "%d %d %s ff %.3f %.2f  wh %.3f %.2f  pp %.3f %.2f  %.2fx %s %s\n", r, t, b,
					s["flip-flop"], c["flip-flop"], s["wheels"], c["wheels"],
					s["pipeline"], c["pipeline"], s["flip-flop"] / s["wheels"], bound, a
			}' "$T/b.csv"
	done
done
