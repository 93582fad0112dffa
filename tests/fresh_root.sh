#!/bin/sh
# fresh_root.sh - run the README's two Quick start commands, exactly as the
# README writes them, on fresh Debian 12 roots that hold nothing but a clean
# checkout (run by .ci/run; a developer can run it by hand, as root).
#
#   sh tests/fresh_root.sh            both orders, each in its own fresh root
#   sh tests/fresh_root.sh --once     one fresh root: command 1, then command 2
#   sh tests/fresh_root.sh --base     only build the cached base root
#
# The commands are the indented lines that follow the two marker lines
# "<!-- fresh-root: command 1 -->" and "<!-- fresh-root: command 2 -->" in
# README.md's Quick start section, so README and CI cannot drift apart.
#
# The order: by default two fresh roots, root A runs command 1 then command 2,
# root B command 2 then command 1, so each command runs first on a root that
# has nothing, and each runs after the other. Each command runs in a new shell
# with a clean environment: chroot ROOT env -i ... sh -c 'cd /akkctl && CMD'.
#
# The base root is a pristine `debootstrap --variant=minbase bookworm`,
# kept as a tarball in $AKK_CI_CACHE (default /var/cache/akkctl-ci) and built
# once (delete it to rebuild); every run unpacks a fresh copy of it, which
# has never had the project's packages installed. The mirror is the host's: taken at run time
# from the host's apt sources (sources.list, sources.list.d/*.list and
# *.sources), as are the CA certificates, resolv.conf and any apt proxy.
# Downloaded .deb files are shared between runs ($AKK_CI_CACHE/apt-archives)
# to save bandwidth; they are downloaded, not installed.
#
# What is tested is HEAD (git archive): commit first. Logs are kept in
# $AKK_CI_WORK (default /var/tmp/akkctl-ci). Exit status 0 when every command
# succeeded, 1 otherwise.
set -eu

here=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
cache=${AKK_CI_CACHE:-/var/cache/akkctl-ci}
work=${AKK_CI_WORK:-/var/tmp/akkctl-ci}
base=$cache/bookworm-base.tar
suite=bookworm

say() { echo "fresh_root: $*"; }
die() { echo "fresh_root: $*" >&2; exit 1; }

mode=both
case ${1:-} in
'') ;;
--once) mode=once ;;
--base) mode=base ;;
-h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "usage: fresh_root.sh [--once | --base]" >&2; exit 2 ;;
esac

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mount)"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Command N of the Quick start: the first indented line after its marker.
readme_command() {
	awk -v want="<!-- fresh-root: command $1 -->" '
		/^## / { inqs = ($0 == "## Quick start") ; next }
		!inqs { next }
		$0 == want { found = 1; next }
		found && /^    [^ ]/ { sub(/^    /, ""); print; exit }
		found && !/^[ \t]*$/ { exit }
	' "$here/README.md"
}

# The host's Debian suites as "URI SUITE COMPONENT..." lines, from both apt
# source formats; only the enabled "deb" entries of Debian 12's suites.
host_sources() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
			awk '$1 == "deb" && NF >= 4 {
				line = $2 " " $3
				for (i = 4; i <= NF; i++) line = line " " $i
				print line }'
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			function flush(  nu, ns, u, s, i, j) {
				if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled != "no") {
					nu = split(uris, u, " ")
					ns = split(suites, s, " ")
					for (i = 1; i <= nu; i++)
						for (j = 1; j <= ns; j++)
							print u[i], s[j], comps
				}
				types = uris = suites = comps = ""
				enabled = "yes"
			}
			BEGIN { enabled = "yes" }
			/^#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				k = tolower(substr($0, 1, index($0, ":") - 1))
				v = substr($0, index($0, ":") + 1)
				sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v)
				if (k == "types") types = v
				else if (k == "uris") uris = v
				else if (k == "suites") suites = v
				else if (k == "components") comps = v
				else if (k == "enabled") enabled = tolower(v)
			}
			END { flush() }' "$f"
	done | awk -v s="$suite" '$2 == s || index($2, s "-") == 1'
}

build_base() {
	[ -f "$base" ] && return 0
	mirror=$(host_sources | awk -v s="$suite" '$2 == s { print $1; exit }')
	[ -n "$mirror" ] || die "no '$suite' entry in the host's apt sources to take the mirror from"
	if ! command -v debootstrap >/dev/null 2>&1; then
		say "installing debootstrap on the host"
		apt-get update -q
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
	fi
	mkdir -p "$cache"
	tmpbase=$(mktemp -d "$cache/debootstrap.XXXXXX")
	say "debootstrap --variant=minbase $suite from $mirror (once; cached in $base)"
	t0=$(now)
	if ! debootstrap --variant=minbase "$suite" "$tmpbase" "$mirror" >"$cache/debootstrap.log" 2>&1; then
		tail -n 20 "$cache/debootstrap.log" >&2
		rm -rf --one-file-system "$tmpbase"
		die "debootstrap failed (log: $cache/debootstrap.log)"
	fi
	rm -rf "$tmpbase"/var/cache/apt/archives/*.deb "$tmpbase"/var/lib/apt/lists/*_*
	tar -C "$tmpbase" -cf "$base.part" .
	rm -rf --one-file-system "$tmpbase"
	mv "$base.part" "$base"
	say "base root built in $(elapsed "$t0" "$(now)") s: $base ($(du -h "$base" | cut -f1))"
}

# Mount points inside a root, in mount order (unmounted in reverse).
MOUNTS="proc sys dev dev/pts dev/shm var/cache/apt/archives"

mounted_under() {
	awk -v r="$1/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts
}

# End what still runs inside root $1 (left-over MPI daemons), unmount
# everything under it, and delete it only when nothing is mounted there.
teardown() {
	t_root=$1
	[ -n "$t_root" ] && [ -d "$t_root" ] || return 0
	for p in /proc/[0-9]*; do
		if [ "$(readlink "$p/root" 2>/dev/null)" = "$t_root" ]; then
			kill -9 "${p#/proc/}" 2>/dev/null || true
		fi
	done
	for m in $(printf '%s\n' $MOUNTS | sed '1!G;h;$!d'); do
		if mounted_under "$t_root" | grep -qx "$t_root/$m"; then
			umount "$t_root/$m" 2>/dev/null || umount -l "$t_root/$m" || true
		fi
	done
	if [ -n "$(mounted_under "$t_root")" ]; then
		echo "fresh_root: still mounted under $t_root, not deleting it:" >&2
		mounted_under "$t_root" >&2
		return 1
	fi
	rm -rf --one-file-system "$t_root"
}

current_root=
cleanup() {
	rc=$?
	teardown "$current_root" || rc=1
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A fresh root: the pristine base, the host's network and apt set-up, and
# a clean checkout of HEAD in /akkctl.
make_root() {
	m_root=$1
	mkdir -p "$m_root"
	tar -C "$m_root" -xf "$base"
	cp /etc/resolv.conf "$m_root/etc/resolv.conf"
	mkdir -p "$m_root/etc/ssl/certs" "$m_root/usr/local/share/ca-certificates"
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		cp /etc/ssl/certs/ca-certificates.crt "$m_root/etc/ssl/certs/"
	fi
	# local CAs, so that installing ca-certificates in the root keeps them
	for c in /usr/local/share/ca-certificates/*; do
		[ -e "$c" ] && cp -r "$c" "$m_root/usr/local/share/ca-certificates/"
	done
	host_sources | sed 's/^/deb /' >"$m_root/etc/apt/sources.list"
	[ -s "$m_root/etc/apt/sources.list" ] || die "no Debian $suite sources on the host"
	apt-config dump | grep -i '^Acquire::[a-z]*::proxy' \
		>"$m_root/etc/apt/apt.conf.d/01proxy-from-host" || true
	mkdir -p "$cache/apt-archives/partial"
	mount -t proc proc "$m_root/proc"
	mount -t sysfs sysfs "$m_root/sys"
	mount --bind /dev "$m_root/dev"
	mount --bind /dev/pts "$m_root/dev/pts"
	mount -t tmpfs -o mode=1777 shm "$m_root/dev/shm"
	mount --bind "$cache/apt-archives" "$m_root/var/cache/apt/archives"
	# apt downloads as the root's _apt user, into partial/
	chroot "$m_root" chown _apt:root /var/cache/apt/archives/partial 2>/dev/null || true
	git -C "$here" archive --format=tar --prefix=akkctl/ HEAD | tar -C "$m_root" -xf -
}

results=
failed=0

# run_in ROOT LABEL N: command N in a new shell in ROOT, timed.
run_in() {
	r_root=$1 r_label=$2 r_n=$3
	eval "r_cmd=\$cmd$r_n"
	r_log=$logs/$r_label-command$r_n.log
	say "$r_label: command $r_n: $r_cmd"
	t0=$(now)
	set +e
	chroot "$r_root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
		${no_proxy:+no_proxy=$no_proxy} \
		sh -c "cd /akkctl && $r_cmd" >"$r_log" 2>&1 </dev/null
	r_rc=$?
	set -e
	r_secs=$(elapsed "$t0" "$(now)")
	if [ $r_rc -eq 0 ]; then
		r_what="ok"
		tail -n 3 "$r_log" | sed 's/^/    /'
	else
		r_what="FAILED (exit $r_rc)"
		failed=1
		tail -n 40 "$r_log" | sed 's/^/    /'
	fi
	say "$r_label: command $r_n: $r_what, $r_secs s wall (log: $r_log)"
	results="$results
  $r_label, command $r_n: $r_what, $r_secs s"
}

# one_root LABEL N1 N2: a fresh root running command N1, then N2.
one_root() {
	o_label=$1
	shift
	current_root=$work/root-$o_label
	teardown "$current_root"
	t0=$(now)
	make_root "$current_root"
	say "$o_label: fresh root ready in $current_root ($(elapsed "$t0" "$(now)") s)"
	for n in "$@"; do
		run_in "$current_root" "$o_label" "$n"
	done
	teardown "$current_root"
	current_root=
}

start=$(now)
build_base
[ "$mode" = base ] && exit 0

cmd1=$(readme_command 1)
cmd2=$(readme_command 2)
[ -n "$cmd1" ] || die "README.md: no indented line after '<!-- fresh-root: command 1 -->' in Quick start"
[ -n "$cmd2" ] || die "README.md: no indented line after '<!-- fresh-root: command 2 -->' in Quick start"
say "README command 1: $cmd1"
say "README command 2: $cmd2"
say "testing $(git -C "$here" rev-parse --short HEAD) (HEAD; uncommitted changes are not in it)"

mkdir -p "$work"
logs=$work/logs
mkdir -p "$logs"

one_root A 1 2
[ "$mode" = once ] || one_root B 2 1

say "summary:$results"
say "whole fresh-root step: $(elapsed "$start" "$(now)") s"
exit $failed
