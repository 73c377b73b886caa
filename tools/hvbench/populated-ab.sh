#!/usr/bin/env bash
# One populated migration between two fresh daemons on loopback, as one
# tab-separated row: label, content, migrate-send's exit code, fill ms,
# total ms, downtime ms, guest-seen ms, destination verify ms, pages
# sent, iterations, post-commit mismatches. The guest (1 vCPU) sweeps its
# whole region once flat out (every page written: the realistic case),
# then writes 1 page/s ("idle") while it migrates with our defaults.
# Run it alternately with two builds for an A/B (docs/benchmarks.md,
# "Issue 12 so far"):
#   for rep in 1 2 3; do for c in stamp text random; do
#     tools/hvbench/populated-ab.sh BASE_BUILD main $c
#     tools/hvbench/populated-ab.sh build/release new $c
#   done; done
# usage: populated-ab.sh BUILD_DIR LABEL CONTENT   env: ACCEL=soft MEM=1G
# Not a test: a benchmark.
set -uo pipefail
B=$1 LABEL=$2 CONTENT=$3
ACCEL=${ACCEL:-soft} MEM=${MEM:-1G}
T=$(mktemp -d /tmp/populated-ab.XXXXXX)
C="$B/tools/migratectl/migratectl"
start() {
	"$B/migrated/daemon/migrated" --state-dir "$T/$1" --dev-tls \
		--tls-dir "$T/tls" --accel "$ACCEL" --log-level info \
		--stop-vms >"$T/$1.log" 2>&1 &
	for _ in $(seq 200); do
		[ -S "$T/$1/control.sock" ] && return
		sleep 0.05
	done
	echo "daemon $1 did not start: $T/$1.log" >&2
	exit 1
}
start a
PA=$!
start b
PB=$!
trap 'kill $PA $PB 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
"$C" --socket "$T/a/control.sock" vm create g --mem "$MEM" --vcpus 1 \
	--pattern sweep --content "$CONTENT" --heartbeat-us 2000 >/dev/null
t0=$(date +%s%N)
until "$C" --socket "$T/a/control.sock" --json vm inspect g |
	jq -e '[.vcpus[].passes | tonumber] | min >= 1' >/dev/null; do
	sleep 0.1
done
fill=$((($(date +%s%N) - t0) / 1000000))
"$C" --socket "$T/a/control.sock" vm set-rate g 1 >/dev/null
sleep 1
port=$("$B/tools/migrate-recv/migrate-recv" --socket "$T/b/control.sock" \
	--name g 127.0.0.1:0)
"$B/tools/migrate-send/migrate-send" --socket "$T/a/control.sock" --json g \
	"127.0.0.1:$port" >"$T/out.json" 2>"$T/err"
rc=$?
ver=$(grep 'op=verify' "$T/a.log" | tail -1 |
	sed -n 's/.*mismatches=\([0-9]*\).*/\1/p')
tail -1 "$T/out.json" | jq -r --arg l "$LABEL" --arg c "$CONTENT" \
	--arg f "$fill" --arg v "${ver:-?}" --arg rc "$rc" '
	.progress as $p | [$l, $c, $rc, $f,
	 (($p.elapsed_ns | tonumber) / 1e6 | floor),
	 (($p.downtime.total_ns | tonumber) / 1e6 | floor),
	 (($p.guest_downtime_ns // 0 | tonumber) / 1e6 | floor),
	 (($p.downtime.dst_verify_ns // 0 | tonumber) / 1e6 | floor),
	 $p.pages_sent, $p.iteration, $v] | @tsv'
