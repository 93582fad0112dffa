#!/bin/sh
# netns_mpi.sh - two hosts for real: MPI ranks in two network namespaces.
#
# Builds two network namespaces joined by a veth pair, each end called
# akk0 in its namespace with its own address (10.A.B.1/24 and 10.A.B.2/24,
# A.B from this script's pid), and no other interface but lo and no route
# beyond that subnet, so no traffic leaves the machine. Then runs
# `mpirun -np 2` from the first namespace with one rank in each: Open
# MPI's TCP transport and its out-of-band channel are restricted to akk0,
# and a launch agent (`ip netns exec NS`, chosen by the host name, in place
# of ssh) starts the second rank's daemon in the second namespace; the host
# file names the two addresses. For the pipeline (gate 1 on rank 0, gate 2
# on rank 1) and for data parallelism, the final checkpoint must equal,
# byte for byte, that of the same mpirun with both ranks in one namespace.
# The namespaces and files are removed on exit, failure or signal. Every
# mpirun has a deadline (AKK_MPI_DEADLINE seconds, default 60), after which
# the script names the processes still running in each namespace, kills
# them and fails.
#
# Needs root, iproute2 (ip), Open MPI and an akkctl built with MPI
# ($AKKCTL, default build/akkctl); skips (exit 0) with a message without
# them. Exit status 0 when every comparison held. Run from anywhere:
#   sh tests/netns_mpi.sh
set -u
cd "$(dirname "$0")/.." || exit 2
top=$(pwd)
akkctl=${AKKCTL:-build/akkctl}
case $akkctl in /*) ;; *) akkctl=$top/$akkctl ;; esac
deadline=${AKK_MPI_DEADLINE:-60}

skip() { echo "netns_mpi.sh: SKIP: $*"; exit 0; }
die() { echo "netns_mpi.sh: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null 2>&1 || skip "no 'ip' (install iproute2)"
command -v mpirun >/dev/null 2>&1 || skip "no mpirun (install openmpi-bin)"
[ -x "$akkctl" ] || die "no $akkctl: run 'make' first"
ldd "$akkctl" 2>/dev/null | grep -q libmpi || skip "$akkctl is built without MPI (make MPI=0)"

id=$$
a=$((id / 256 % 256)) b=$((id % 256))
net=10.$a.$b
nsa=akk$id-a nsb=akk$id-b
tmp=$(mktemp -d /tmp/netns_mpi.XXXXXX) || exit 2

cleanup() {
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsb" 2>/dev/null
	ip link del "akk$id-a" 2>/dev/null
	if [ -n "${AKK_KEEP_TMP:-}" ]; then
		echo "netns_mpi.sh: kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# --- the two hosts ------------------------------------------------------------
ip netns add "$nsa" || die "cannot create network namespace $nsa"
ip netns add "$nsb" || die "cannot create network namespace $nsb"
ip link add "akk$id-a" type veth peer name "akk$id-b" || die "cannot create the veth pair"
ip link set "akk$id-a" netns "$nsa" && ip link set "akk$id-b" netns "$nsb" &&
ip -n "$nsa" link set "akk$id-a" name akk0 && ip -n "$nsb" link set "akk$id-b" name akk0 &&
ip -n "$nsa" addr add "$net.1/24" dev akk0 && ip -n "$nsb" addr add "$net.2/24" dev akk0 &&
ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up &&
ip -n "$nsa" link set akk0 up && ip -n "$nsb" link set akk0 up ||
	die "cannot set up the veth pair"
echo "netns_mpi.sh: hosts $net.1 (namespace $nsa) and $net.2 ($nsb), joined by veth akk0"

# The launch agent: Open MPI calls it as ssh, AGENT HOST COMMAND...
cat >"$tmp/agent" <<EOF
#!/bin/sh
host=\$1
shift
echo "\$host" >>"$tmp/agent.log"
case \$host in
$net.1) ns=$nsa ;;
$net.2) ns=$nsb ;;
*) echo "agent: unknown host '\$host'" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$tmp/agent"
printf '%s slots=1\n%s slots=1\n' "$net.1" "$net.2" >"$tmp/two-hosts"
printf '%s slots=2\n' "$net.1" >"$tmp/one-host"

# --- data and config: small synthetic IDX files ---------------------------------
# idx FILE N [SIDE]: N images of SIDE x SIDE (pixels from a fixed LCG) or,
# without SIDE, N labels i % 4; big-endian header as IDX has it.
idx() {
	awk -v n="$2" -v side="${3:-0}" 'BEGIN {
		if (side) { printf "\\000\\000\\010\\003"; dims = n " " side " " side; count = n * side * side }
		else { printf "\\000\\000\\010\\001"; dims = n; count = n }
		k = split(dims, d, " ")
		for (i = 1; i <= k; i++)
			printf "\\%03o\\%03o\\%03o\\%03o", int(d[i] / 16777216) % 256,
			       int(d[i] / 65536) % 256, int(d[i] / 256) % 256, d[i] % 256
		x = 12345
		for (i = 0; i < count; i++) {
			if (side) { x = (x * 1103 + 12345) % 65536; v = int(x / 256) }
			else v = i % 4
			printf "\\%03o", v
		}
	}' | { read -r f; printf "$f"; } >"$1"
}
idx "$tmp/train-images" 400 8 && idx "$tmp/train-labels" 400 &&
idx "$tmp/val-images" 100 8 && idx "$tmp/val-labels" 100 || die "cannot write the data"
cat >"$tmp/net.yaml" <<'EOF'
name: netns
seed: 5
data:
  train: {images: train-images, labels: train-labels}
  validation: {images: val-images, labels: val-labels}
network:
  input: [64]
  gates:
    - layers: [{dense: 16}, relu]
    - layers: [{dense: 4}]
  placement: contiguous
optimizer: {type: momentum, lr: 0.05}
schedule: {mode: flip-flop, epochs: 2, batch_size: 20}
EOF

# --- runs ---------------------------------------------------------------------------
# run NAME HOSTFILE [--set ...]: mpirun -np 2 from namespace A under the
# deadline; output in $tmp/NAME.log, the run in $tmp/NAME.
run() {
	name=$1 hosts=$2
	shift 2
	ip netns exec "$nsa" timeout -k 5 "$deadline" mpirun --allow-run-as-root \
		--oversubscribe --hostfile "$hosts" -np 2 \
		--mca plm_rsh_agent "$tmp/agent" \
		--mca btl tcp,self --mca btl_tcp_if_include akk0 \
		--mca oob_tcp_if_include akk0 \
		"$akkctl" train "$tmp/net.yaml" --out "$tmp/$name" "$@" \
		>"$tmp/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		for ns in "$nsa" "$nsb"; do
			pids=$(ip netns pids "$ns" | tr '\n' ' ')
			[ -n "$pids" ] && echo "netns_mpi.sh: still running in $ns: $(ps -o pid=,comm= -p $pids 2>/dev/null | tr '\n' ' ')" >&2
			[ -n "$pids" ] && kill -9 $pids 2>/dev/null
		done
		cat "$tmp/$name.log" >&2
		die "$name: mpirun did not finish within $deadline s"
	fi
	[ $rc -eq 0 ] || { cat "$tmp/$name.log" >&2; die "$name: mpirun exit status $rc"; }
}

# same MODE: the two-host run's final checkpoint and summary equal the
# one-namespace run's.
same() {
	cmp -s "$tmp/$1-one/last.bin" "$tmp/$1-two/last.bin" ||
		die "$1: last.bin of the two-host run differs from the one-namespace run's"
	s1=$(grep '^summary:' "$tmp/$1-one.log" | sed 's/ in [0-9.]*s;/;/')
	s2=$(grep '^summary:' "$tmp/$1-two.log" | sed 's/ in [0-9.]*s;/;/')
	[ -n "$s1" ] && [ "$s1" = "$s2" ] || die "$1: the summaries differ: '$s1' and '$s2'"
	echo "netns_mpi.sh: $1: the same last.bin and summary on two hosts as in one namespace"
}

run pipeline-one "$tmp/one-host"
run pipeline-two "$tmp/two-hosts"
grep -q 'placement: gate 1 on rank 0, gate 2 on rank 1' "$tmp/pipeline-two.log" ||
	die "pipeline: the gates were not placed on both ranks"
grep -qx "$net.2" "$tmp/agent.log" 2>/dev/null ||
	die "pipeline: no rank was started in $nsb"
same pipeline
run data-one "$tmp/one-host" --set schedule.parallel=data --set schedule.batch_size=10
run data-two "$tmp/two-hosts" --set schedule.parallel=data --set schedule.batch_size=10
grep -q 'data parallel: 2 ranks' "$tmp/data-two.log" || die "data: not data parallel"
same data
echo "netns_mpi.sh: passed"
