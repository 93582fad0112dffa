#!/bin/sh
# csv_speed.sh - is a CSV epoch slower per sample than the IDX path?
#
# Writes MNIST's training IDX files as one CSV table (od dumps each image's
# 784 bytes as a line of numbers, the labels one a line; paste and awk join
# them into 785 comma-separated columns, the label last: no Python), then
# times `akkctl bench` on the same network (configs/mnist.yaml's
# 784-256-128-10, scale 255, no validation) with data.format idx and csv,
# interleaved, ROUNDS times (default 5) of EPOCHS epochs (default 3),
# and prints each round's samples/s,
# the medians and the ratio csv / idx; then configs/digits.yaml's
# samples/s, the CSV data set the issue names. A benchmark, not a test:
# run it by hand on a quiet machine (make test does not).
#
#   sh tests/csv_speed.sh     # AKKCTL, MNIST, ROUNDS, EPOCHS, MODE to change
set -eu
AKKCTL=${AKKCTL:-build/akkctl}
MNIST=${MNIST:-datasets/mnist}
ROUNDS=${ROUNDS:-5}
EPOCHS=${EPOCHS:-3}
MODE=${MODE:-wheels}

for f in train-images-idx3-ubyte train-labels-idx1-ubyte; do
	[ -r "$MNIST/$f" ] || { echo "csv_speed.sh: no '$MNIST/$f' (make data)" >&2; exit 2; }
done
[ -x "$AKKCTL" ] || { echo "csv_speed.sh: no '$AKKCTL' (make)" >&2; exit 2; }
AKKCTL=$(cd "$(dirname "$AKKCTL")" && pwd)/$(basename "$AKKCTL")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
top=$(cd "$(dirname "$0")/.." && pwd)
mnist=$(cd "$MNIST" && pwd)

od -An -v -tu1 -w784 -j16 "$mnist/train-images-idx3-ubyte" > "$work/images.txt"
od -An -v -tu1 -w1 -j8 "$mnist/train-labels-idx1-ubyte" > "$work/labels.txt"
paste -d' ' "$work/images.txt" "$work/labels.txt" |
	awk -v OFS=, '{ $1 = $1; print }' > "$work/train.csv"
rm "$work/images.txt" "$work/labels.txt"
echo "wrote $(wc -l < "$work/train.csv") rows of 785 columns ($(du -m "$work/train.csv" | cut -f1) MB)"

net='network:
  input: [784]
  gates:
    - layers: [{dense: 256}, relu, {dropout: 0.2}]
    - layers: [{dense: 128}, relu, {dense: 10}]
  loss: softmax_cross_entropy
optimizer: {type: adam, lr: 0.001}
schedule: {epochs: 1, batch_size: 64, concurrency: {train: 2, validation: 1}}'
cat > "$work/idx.yaml" <<YAML
name: mnist-idx
data:
  format: idx
  train: {images: $mnist/train-images-idx3-ubyte, labels: $mnist/train-labels-idx1-ubyte}
  scale: 255
$net
YAML
cat > "$work/csv.yaml" <<YAML
name: mnist-csv
data:
  format: csv
  train: {file: $work/train.csv}
  scale: 255
$net
YAML

# samples/s of one bench run: the mode's row of the table
rate() {
	"$AKKCTL" bench --config "$1" --mode "$MODE" --epochs "$EPOCHS" --no-validation 2>&1 |
		awk -v m="$MODE" '$1 == m { print $2 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$work/idx.rates"
: > "$work/csv.rates"
for r in $(seq "$ROUNDS"); do
	i=$(rate "$work/idx.yaml")
	c=$(rate "$work/csv.yaml")
	[ -n "$i" ] && [ -n "$c" ] || { echo "csv_speed.sh: akkctl bench printed no $MODE row" >&2; exit 1; }
	echo "round $r: idx $i samples/s, csv $c samples/s"
	echo "$i" >> "$work/idx.rates"
	echo "$c" >> "$work/csv.rates"
done
i=$(median < "$work/idx.rates")
c=$(median < "$work/csv.rates")
echo "median: idx $i samples/s, csv $c samples/s, csv/idx $(awk -v c="$c" -v i="$i" 'BEGIN { printf "%.3f", c / i }')"
if [ -r "$top/datasets/sklearn/digits.csv.gz" ]; then
	d=$(cd "$top/configs" && "$AKKCTL" bench --config digits.yaml --mode "$MODE" --epochs 3 --no-validation 2>&1 |
		awk -v m="$MODE" '$1 == m { print $2 }')
	echo "configs/digits.yaml ($MODE, 64-256-10): $d samples/s"
else
	echo "configs/digits.yaml: no datasets/sklearn (sh datasets/fetch.sh sklearn)"
fi
