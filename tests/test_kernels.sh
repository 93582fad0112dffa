#!/bin/sh
# test_kernels.sh - the test suite under each OpenBLAS kernel choice
# akkctl can make (make test-kernels).
#
#   sh tests/test_kernels.sh BUILD_DIR [CHOICE...]
#
# CHOICE is one of:
#   default   OPENBLAS_CORETYPE and AKKCTL_KERNELS unset: akkctl makes its
#             own choice, the test programs run the library's pick
#   akkctl    the kernels akkctl chooses on this CPU, forced for every
#             program (OPENBLAS_CORETYPE=<that>)
#   NAME      an OpenBLAS core type forced (OPENBLAS_CORETYPE=NAME)
#   baseline  akkctl's own vector code (small products, pooling, the
#             input map, optimizers, recurrent activations) in its x86-64
#             baseline bodies alone, which a CPU with AVX2 never runs
#             otherwise: the suite built with -DAKK_BASELINE in
#             BUILD_DIR/baseline (CFLAGS from the environment added),
#             OpenBLAS's own pick
# The default list is every choice akkctl can make: default akkctl
# Sandybridge Haswell Zen SkylakeX Cooperlake baseline. A set this CPU cannot run
# (by /proc/cpuinfo's flags) is skipped with a message, and so is a set
# an earlier choice already ran. Each run says which kernels OpenBLAS
# took; the end lists every choice's failed programs. MAKE (the
# environment variable, default make) runs `$MAKE test`.
set -u
B=${1:?usage: sh tests/test_kernels.sh BUILD_DIR [CHOICE...]}
shift
[ $# -gt 0 ] || set -- default akkctl Sandybridge Haswell Zen SkylakeX Cooperlake baseline
MAKE=${MAKE:-make}
flags=" $(grep -m 1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "

# The kernels OpenBLAS ends on in akkctl under the environment "$@"
# (its last "Core:" line: akkctl's switch prints a second one).
core() {
	env "$@" OPENBLAS_VERBOSE=2 "$B/akkctl" --version 2>&1 >/dev/null |
		sed -n 's/^Core: //p' | tail -n 1
}

# What a set needs from the CPU, as /proc/cpuinfo names the flags.
needs() {
	case $(echo "$1" | tr A-Z a-z) in
	sandybridge) echo avx ;;
	haswell|zen) echo avx2 fma ;;
	skylakex) echo avx512f avx512bw avx512vl avx512dq ;;
	cooperlake) echo avx512f avx512bw avx512vl avx512dq avx512_bf16 ;;
	esac
}

ran=" "
failed=
nk=0
for choice; do
	build=
	case $choice in
	baseline)
		set -- -u OPENBLAS_CORETYPE -u AKKCTL_KERNELS
		build="B=$B/baseline"
		kernels=baseline
		label="default, with akkctl's vector code in its baseline bodies alone (-DAKK_BASELINE, $B/baseline)" ;;
	default)
		set -- -u OPENBLAS_CORETYPE -u AKKCTL_KERNELS
		kernels=$(core "$@")
		label="default: akkctl chooses $kernels; the test programs run the library's $(core "$@" AKKCTL_KERNELS=library)"
		kernels=$(core "$@" AKKCTL_KERNELS=library) ;;
	akkctl)
		kernels=$(core -u OPENBLAS_CORETYPE -u AKKCTL_KERNELS)
		set -- -u AKKCTL_KERNELS OPENBLAS_CORETYPE="$kernels"
		label="akkctl's choice on this CPU: OPENBLAS_CORETYPE=$kernels" ;;
	*)
		missing=
		for f in $(needs "$choice"); do
			case $flags in *" $f "*) ;; *) missing="$missing $f" ;; esac
		done
		if [ -n "$missing" ]; then
			echo "=== OpenBLAS kernels $choice: skipped, this CPU has no$missing"
			continue
		fi
		set -- -u AKKCTL_KERNELS OPENBLAS_CORETYPE="$choice"
		kernels=$(core "$@")
		label="OPENBLAS_CORETYPE=$choice (OpenBLAS took $kernels)" ;;
	esac
	case $ran in
	*" $kernels "*)
		echo "=== OpenBLAS kernels $choice ($kernels): skipped, the $kernels kernels ran already"
		continue ;;
	esac
	ran="$ran$kernels "
	nk=$((nk + 1))
	echo "=== OpenBLAS kernels $label"
	{ if [ -n "$build" ]; then
		env "$@" $MAKE --no-print-directory "$build" CFLAGS="${CFLAGS:-} -DAKK_BASELINE" test 2>&1
	  else
		env "$@" $MAKE --no-print-directory test 2>&1
	  fi; echo $? >"$B/kernels.rc"; } |
		tee "$B/kernels.log"
	if [ "$(cat "$B/kernels.rc")" != 0 ]; then
		failed="$failed$(printf '\n  %s: %s' "$choice" \
			"$(grep '^FAILED: ' "$B/kernels.log" | tail -n 1 | sed 's/^FAILED: //')")"
	fi
done
rm -f "$B/kernels.rc" "$B/kernels.log"
if [ -n "$failed" ]; then
	echo "test-kernels: FAILED with $(echo "$failed" | grep -c .) of $nk kernel choices:$failed"
	exit 1
fi
echo "test-kernels: the suite passed with each of $nk kernel choices"
