#!/bin/sh
# make_selftest.sh - checks of the Makefile itself (run by .ci/run; needs the
# packages installed, runs from any directory):
#   1. `make test` runs every test program, whatever fails, then names the
#      failed ones and exits non-zero; a program that hangs is stopped after
#      TEST_TIMEOUT seconds, the processes it started with it, and named;
#   2. `make install DESTDIR=... PREFIX=...` installs the binary, the man
#      pages, the bash completion and the example configs, and `make
#      uninstall` with the same variables removes them all;
#   3. one `make deps all` builds when pkg-config finds nothing until deps
#      has run (as on a fresh root): nothing is detected at parse time;
#   4. a changed header rebuilds every object that includes it, the tests'
#      shared testutil.o included (the compiler's -MMD lists).
# Exit status 0 when all pass, 1 otherwise.
set -eu

cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/akk-make.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0

ok() { echo "make_selftest: ok: $*"; }
bad() { echo "make_selftest: FAILED: $*" >&2; failed=1; }

# 1. A failing program does not stop the run; the summary names it.
printf '#!/bin/sh\nexit 3\n' >"$tmp/exits3"
chmod +x "$tmp/exits3"
if make --no-print-directory test TESTS="/bin/false /bin/true $tmp/exits3" \
	>"$tmp/test.out" 2>&1; then
	bad "make test with two failing programs exited 0"
fi
if grep -qx "== /bin/true" "$tmp/test.out" && grep -qx "== $tmp/exits3" "$tmp/test.out" &&
   grep -qx "FAILED: 2 of 3 test programs: false (exit 1) exits3 (exit 3)" "$tmp/test.out"; then
	ok "make test runs every program and lists the failed ones"
else
	bad "make test output:"
	cat "$tmp/test.out" >&2
fi

# 1b. A hanging program is stopped after TEST_TIMEOUT seconds, with the
# processes it started (its process group), counted as failed and named.
printf '#!/bin/sh\nsleep 300 &\necho $! >"%s/child"\nwait\n' "$tmp" >"$tmp/hangs"
chmod +x "$tmp/hangs"
if make --no-print-directory test TESTS="$tmp/hangs /bin/true" TEST_TIMEOUT=1 \
	>"$tmp/hang.out" 2>&1; then
	bad "make test with a hanging program exited 0"
fi
sleep 1
# gone, or a zombie no one has reaped yet
child_state=$(ps -o stat= -p "$(cat "$tmp/child" 2>/dev/null || echo 0)" 2>/dev/null || true)
if grep -qx "FAILED: 1 of 2 test programs: hangs (exit 124: still running after 1 s)" \
	"$tmp/hang.out" && [ -s "$tmp/child" ] && case $child_state in ''|Z*) true;; *) false;; esac; then
	ok "make test stops a hanging program and what it started, and names it"
else
	bad "make test with a hanging program:"
	cat "$tmp/hang.out" >&2
	[ -s "$tmp/child" ] && kill "$(cat "$tmp/child")" 2>/dev/null
fi

# 2. make install, staged.
stage=$tmp/stage
if make --no-print-directory install DESTDIR="$stage" PREFIX=/opt/akk >"$tmp/install.out" 2>&1; then
	missing=
	for f in bin/akkctl share/man/man1/akkctl.1 share/man/man5/akkctl.5 \
		 share/bash-completion/completions/akkctl \
		 $(cd configs && ls *.yaml | sed 's|^|share/akkctl/configs/|'); do
		[ -f "$stage/opt/akk/$f" ] || missing="$missing $f"
	done
	if [ -z "$missing" ]; then
		ok "make install DESTDIR PREFIX installs the binary, man pages and $(ls configs/*.yaml | wc -l) configs"
	else
		bad "make install did not install:$missing"
	fi
else
	bad "make install failed:"
	cat "$tmp/install.out" >&2
fi
# ... and make uninstall removes every file install put there.
if make --no-print-directory uninstall DESTDIR="$stage" PREFIX=/opt/akk >"$tmp/uninstall.out" 2>&1; then
	left=$(find "$stage" ! -type d | sed "s|^$stage||")
	if [ -z "$left" ]; then
		ok "make uninstall removes every installed file"
	else
		bad "make uninstall left:" $left
	fi
else
	bad "make uninstall failed:"
	cat "$tmp/uninstall.out" >&2
fi

# 3. pkg-config finds nothing (an empty PKG_CONFIG_LIBDIR) until the
# stand-in for deps copies the .pc files in; one make must then build.
mkdir "$tmp/pc"
pc_path=$(pkg-config --variable pc_path pkg-config)
{
	echo "deps:"
	printf '\tfor d in %s; do [ -d "$$d" ] && cp -L "$$d"/*.pc %s/ 2>/dev/null; done; true\n' \
		"$(echo "$pc_path" | tr ':' ' ')" "$tmp/pc"
} >"$tmp/deps.mk"
if PKG_CONFIG_LIBDIR=$tmp/pc PKG_CONFIG_PATH= make --no-print-directory -j2 \
	-f Makefile -f "$tmp/deps.mk" B="$tmp/build" deps all >"$tmp/deps.out" 2>&1 &&
   "$tmp/build/akkctl" help >/dev/null 2>&1; then
	ok "one 'make deps all' builds when the packages appear only after deps"
else
	bad "make deps all, with pkg-config finding the packages only after deps:"
	grep -v '^cc \|^rm -f\|overriding recipe\|ignoring old recipe' "$tmp/deps.out" | tail -n 15 >&2
fi

# 4. After a build, make's database (make -p) holds each object's
# headers from the compiler's lists: testutil.o includes base/workers.h
# through tensor/pool.h, and an old testutil.o beside a new libakk.a
# crashes.
if make --no-print-directory -j2 B="$tmp/build" "$tmp/build/tests/test_tensor" \
	>"$tmp/dep.out" 2>&1; then
	make --no-print-directory -pqn B="$tmp/build" "$tmp/build/tests/test_tensor" \
		>"$tmp/dep.out" 2>/dev/null || true
	if grep -q "^$tmp/build/tests/testutil.o:.*core/base/workers.h" "$tmp/dep.out" &&
	   grep -q "^$tmp/build/core/base/workers.o:.*core/base/workers.h" "$tmp/dep.out"; then
		ok "a changed header rebuilds the objects that include it, testutil.o too"
	else
		bad "make does not know that testutil.o and workers.o include core/base/workers.h"
	fi
else
	bad "building test_tensor failed:"
	tail -n 15 "$tmp/dep.out" >&2
fi

exit $failed
