#!/bin/sh
# mpi_loop.sh [N] - run the MPI tests N times in a row (default 30).
#
# Runs build/tests/test_mpi (or $AKK_BUILD/tests/test_mpi, against
# $AKKCTL, by default that build's akkctl) from the top directory, as
# `make test` does, and ends with "N passed, M failed". Each run's output
# goes to $AKK_LOOP_LOG/run-K.log (default a fresh directory under /tmp);
# a failed run's failing tests and messages are shown as it ends. Every
# mpirun inside has a deadline (AKK_MPI_DEADLINE seconds, default 30), so
# a hang costs a run that much, not minutes. Exit status 0 when all passed.
set -u
n=${1:-30}
case $n in
''|*[!0-9]*) echo "usage: sh tests/mpi_loop.sh [N]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 2
build=${AKK_BUILD:-build}
test=$build/tests/test_mpi
[ -x "$test" ] || { echo "mpi_loop.sh: no $test; run 'make $test' first" >&2; exit 2; }
log=${AKK_LOOP_LOG:-$(mktemp -d /tmp/mpi_loop.XXXXXX)}
mkdir -p "$log" || exit 2
pass=0 fail=0 i=1
while [ "$i" -le "$n" ]; do
	start=$(date +%s)
	if AKKCTL=${AKKCTL:-$build/akkctl} AKK_BUILD=$build "$test" >"$log/run-$i.log" 2>&1; then
		pass=$((pass + 1))
		echo "run $i/$n: passed ($(( $(date +%s) - start )) s)"
	else
		fail=$((fail + 1))
		echo "run $i/$n: FAILED ($(( $(date +%s) - start )) s), $log/run-$i.log:"
		grep -E '^\[  (FAILED|ERROR) +\] [a-z]|did not finish|wrote no epoch|Failure|error:' \
			"$log/run-$i.log" | awk '!seen[$0]++ { print "    " $0 }'
	fi
	i=$((i + 1))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
