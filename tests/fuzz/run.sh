#!/bin/sh
# run.sh - build the fuzzers, replay the regression inputs, then run each
# fuzzer for SECONDS (default 60), one after the other on one core.
#
#   sh tests/fuzz/run.sh [SECONDS]
#
# Fails (exit 1) when a regression input or a fuzzer run finds a crash, a
# hang (-timeout), an out-of-memory (-rss_limit_mb) or a leak. New corpus
# entries go to build/fuzz/corpus/NAME (the committed seeds in
# tests/fuzz/corpus/NAME are only read), crashing inputs to
# build/fuzz/artifacts/, each fuzzer's log to build/fuzz/NAME.log.
# FUZZ_REGRESS=0 skips the regression replay; FUZZ_TARGETS="spec idx"
# picks fuzzers.
set -u
export LC_ALL=C	# the logs hold raw input bytes: sed and grep byte-wise
SECONDS_EACH=${1:-60}
TARGETS=${FUZZ_TARGETS:-spec idx checkpoint resume npy csv png jpeg steps text}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=build/fuzz
cd "$TOP" || exit 1

if grep -q 'tests/fuzz/fuzz.mk' Makefile; then
	make -j2 fuzz || exit 1
else
	make -j2 -f Makefile -f tests/fuzz/fuzz.mk fuzz || exit 1
fi
mkdir -p $B/artifacts

# Per fuzzer: the longest input worth mutating.
max_len() {
	case $1 in
	spec) echo 8192 ;;
	*) echo 65536 ;;
	esac
}
COMMON="-timeout=10 -rss_limit_mb=2048"
# Per fuzzer: the largest single allocation allowed. An image decode needs
# at most its two pixel buffers (2 x 3 x 2^26 bytes): anything larger is a
# size taken from the file unchecked. Others: the RSS limit.
malloc_limit() {
	case $1 in
	png|jpeg) echo "-malloc_limit_mb=512" ;;
	*) echo "-malloc_limit_mb=2048" ;;
	esac
}

# What a libFuzzer log says went wrong.
verdict() {
	if grep -q 'invariant violated' "$1"; then echo INVARIANT
	elif grep -q 'ERROR: libFuzzer: timeout' "$1"; then echo HANG
	elif grep -q 'out-of-memory\|malloc(.*) exceeds limit' "$1"; then echo OOM
	elif grep -q 'ERROR: LeakSanitizer' "$1"; then echo LEAK
	elif grep -q 'runtime error:' "$1"; then echo UNDEFINED-BEHAVIOUR
	else echo CRASH
	fi
}

fail=0
summary=""
if [ "${FUZZ_REGRESS:-1}" != 0 ]; then
	for t in $TARGETS; do
		[ -d tests/fuzz/regress/$t ] || continue
		for f in tests/fuzz/regress/$t/*; do
			log=$B/regress-$t-$(basename "$f").log
			if timeout -k 5 60 $B/fuzz_$t $COMMON $(malloc_limit $t) "$f" >"$log" 2>&1; then
				r=ok
			else
				r=$(verdict "$log")
				fail=1
			fi
			summary="$summary
regress  $t/$(basename "$f"): $r"
		done
	done
fi

for t in $TARGETS; do
	log=$B/$t.log
	mkdir -p $B/corpus/$t
	echo "== fuzz_$t for ${SECONDS_EACH}s (log: $log)"
	t0=$(date +%s)
	timeout -k 10 $((SECONDS_EACH + 120)) $B/fuzz_$t $COMMON $(malloc_limit $t) \
		-max_len=$(max_len $t) -max_total_time="$SECONDS_EACH" \
		$([ -f tests/fuzz/$t.dict ] && echo -dict=tests/fuzz/$t.dict) \
		-artifact_prefix=$B/artifacts/$t- -print_final_stats=1 \
		$B/corpus/$t tests/fuzz/corpus/$t >"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - t0))
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	execs=$(echo "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([^ ]*\).*/\1/p')
	if [ $rc = 0 ]; then
		r=ok
	else
		r="$(verdict "$log"): $(ls -t $B/artifacts/$t-* 2>/dev/null | head -n 1)"
		fail=1
	fi
	summary="$summary
fuzz     $t: ${execs:-0} executions, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?} in ${took}s: $r"
done

echo "== summary$summary"
exit $fail
