#!/bin/sh
# render_svg.sh - render an SVG to PNG with headless Chromium, as a browser
# shows it: sh tests/render_svg.sh IN.svg OUT.png WIDTH HEIGHT
#
# Exit 0 with OUT.png written; 77 when no Chromium is installed (the
# caller skips); 1 when Chromium fails or writes nothing. Chromium runs
# with a profile of its own in a temp directory (removed after), no
# sandbox (tests run as root in CI) and no GPU, for at most
# $AKK_RENDER_TIMEOUT seconds (default 120).
set -u

if [ $# -ne 4 ]; then
	echo "usage: sh tests/render_svg.sh IN.svg OUT.png WIDTH HEIGHT" >&2
	exit 2
fi
in=$1 out=$2 w=$3 h=$4

browser=
for b in chromium chromium-browser; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$b
		break
	fi
done
if [ -z "$browser" ]; then
	echo "render_svg.sh: no chromium installed (Debian: apt-get install chromium)" >&2
	exit 77
fi

case $in in
/*) url=file://$in ;;
*) url=file://$(pwd)/$in ;;
esac
profile=$(mktemp -d "${TMPDIR:-/tmp}/akk-chromium.XXXXXX") || exit 1
rm -f "$out"
# Chromium talks a lot on stderr (D-Bus, GPU): keep it for failures only.
timeout "${AKK_RENDER_TIMEOUT:-120}" "$browser" --headless --no-sandbox --disable-gpu \
	--no-first-run --hide-scrollbars --user-data-dir="$profile" \
	--screenshot="$out" --window-size="$w,$h" "$url" >"$profile.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
	echo "render_svg.sh: $browser failed (exit $rc) on '$in':" >&2
	tail -n 20 "$profile.log" >&2
	rm -rf "$profile" "$profile.log"
	exit 1
fi
rm -rf "$profile" "$profile.log"
exit 0
