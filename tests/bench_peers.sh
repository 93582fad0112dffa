#!/bin/sh
# bench_peers.sh - akkctl against the numpy and torch peers, side by side on
# this machine: training seconds per epoch (median over epochs) for the
# Akkordeon net (784-50-20-10, SGD 0.1, batch 64) and the tinynn net
# (784-400-100-10, Adam 1e-3, batch 128, peers with --ftz).
# Needs `make data`, python3-numpy and python3-torch (Debian), and
# ../shared/peers/ beside the checkout. Usage: sh tests/bench_peers.sh [EPOCHS]
set -eu
cd "$(dirname "$0")/.."
E=${1:-3}
PEERS=${PEERS:-../shared/peers}
DATA=datasets/mnist

# The median of the train_seconds column of a peer's CSV output.
median_peer() {
	grep -E '^[0-9]+,' | cut -d, -f5 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
# akkctl bench's s/epoch column for MODE.
median_akk() {
	awk -v m="$1" '$1 == m && $3 ~ /^[0-9.]+$/ {print $3}'
}

row() { printf '%-34s %8s s/epoch\n' "$1" "$2"; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $E epochs each, training seconds per epoch (median)"
echo "## Akkordeon net: 784-50-20-10, ReLU, SGD lr 0.1, batch 64"
for t in 1 2; do
	row "numpy peer, $t BLAS thread(s)" "$(/usr/bin/python3 "$PEERS/numpy_mlp.py" --data $DATA --epochs "$E" --threads $t | median_peer)"
	row "torch peer, $t thread(s)" "$(/usr/bin/python3 "$PEERS/torch_mlp.py" --data $DATA --epochs "$E" --threads $t | median_peer)"
done
out=$(./akkctl bench --no-validation --epochs "$E")
row "akkctl flip-flop" "$(echo "$out" | median_akk flip-flop)"
row "akkctl wheels" "$(echo "$out" | median_akk wheels)"

echo "## tinynn net: 784-400-100-10, ReLU, Adam lr 1e-3, batch 128 (peers --ftz)"
for t in 1 2; do
	row "numpy peer --ftz, $t thread(s)" "$(/usr/bin/python3 "$PEERS/numpy_mlp.py" --data $DATA --epochs "$E" --threads $t --arch 784,400,100,10 --opt adam --lr 0.001 --batch 128 --ftz | median_peer)"
	row "torch peer --ftz, $t thread(s)" "$(/usr/bin/python3 "$PEERS/torch_mlp.py" --data $DATA --epochs "$E" --threads $t --arch 784,400,100,10 --opt adam --lr 0.001 --batch 128 --ftz | median_peer)"
done
out=$(./akkctl bench --config configs/tinynn.yaml --no-validation --epochs "$E" --set optimizer.schedule=constant)
row "akkctl flip-flop" "$(echo "$out" | median_akk flip-flop)"
row "akkctl wheels" "$(echo "$out" | median_akk wheels)"
