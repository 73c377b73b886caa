#!/usr/bin/env bash
# Migration total, ring vs bitmap: a KVM guest (default 1 GiB, 2 vCPUs)
# that has first written its whole region once (sweep, unthrottled), then
# dirties at RATE MB/s while it is migrated between two migrated daemons on
# loopback. Runs alternate ring and bitmap (the order flips every rep) so
# that machine noise hits both; prints one row per run and the medians.
# Not a test: a benchmark (docs/benchmarks.md, "Dirty ring or bitmap").
#
# usage: tools/hvbench/ring-vs-bitmap-migrate.sh [BUILD_DIR]  (build/release)
# env:   MEM=1G VCPUS=2 REPS=5 RATE=50 (MB/s, whole guest) RING=4096
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
MEM=${MEM:-1G}
VCPUS=${VCPUS:-2}
REPS=${REPS:-5}
RATE=${RATE:-50}
RING=${RING:-4096}
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
SEND=$B/tools/migrate-send/migrate-send
RECV=$B/tools/migrate-recv/migrate-recv
for t in "$MIGRATED" "$CTL" "$SEND" "$RECV"; do
	[ -x "$t" ] || { echo "missing $t (build first)" >&2; exit 1; }
done
[ -w /dev/kvm ] || { echo "needs /dev/kvm" >&2; exit 1; }

TMP=$(mktemp -d /tmp/ring-vs-bitmap.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
start_daemon() {
	"$MIGRATED" --state-dir "$TMP/$1" --dev-tls --tls-dir "$TMP/tls" \
		--accel kvm --log-level info --stop-vms >"$TMP/$1.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 100); do
		[ -S "$TMP/$1/control.sock" ] && return 0
		sleep 0.05
	done
	echo "daemon $1 did not start" >&2
	exit 1
}
start_daemon src
start_daemon dst
S=$TMP/src/control.sock
D=$TMP/dst/control.sock
pages_per_vcpu=$((RATE * 1000000 / 4096 / VCPUS))

printf '%-6s %3s | %9s %9s %8s %7s %6s | %s\n' mode rep "total ms" \
	"down ms" "fill s" sent iters verify
n=0
for rep in $(seq "$REPS"); do
	order="ring bitmap"
	[ $((rep % 2)) = 0 ] && order="bitmap ring"
	for mode in $order; do
		n=$((n + 1))
		vm=g$n
		[ "$mode" = ring ] && ring=$RING || ring=off
		"$CTL" --socket "$S" vm create "$vm" --mem "$MEM" \
			--vcpus "$VCPUS" --pattern sweep --dirty-ring "$ring" \
			--heartbeat-us 2000 >/dev/null
		# Every vCPU writes its whole region once, unthrottled.
		t0=$(date +%s.%N)
		until "$CTL" --socket "$S" --json vm inspect "$vm" |
			jq -e '[.vcpus[].passes | tonumber] | min >= 1' >/dev/null; do
			sleep 0.1
		done
		fill=$(echo "$(date +%s.%N) - $t0" | bc)
		"$CTL" --socket "$S" vm set-rate "$vm" "$pages_per_vcpu" >/dev/null
		sleep 1
		port=$("$RECV" --socket "$D" --name "$vm" 127.0.0.1:0)
		"$SEND" --socket "$S" --json "$vm" "127.0.0.1:$port" \
			>"$TMP/out.json" 2>"$TMP/err" || {
			echo "$mode $rep FAILED: $(cat "$TMP/err")"
			continue
		}
		ver=$(grep 'op=verify' "$TMP/src.log" | tail -1 |
			sed -n 's/.*pages=\([0-9]*\) mismatches=\([0-9]*\).*/\2 differ of \1/p')
		tail -1 "$TMP/out.json" | jq -r --arg m "$mode" --arg r "$rep" \
			--arg f "$(printf %.1f "$fill")" --arg v "$ver" '
			.progress as $p |
			[$m, $r, (($p.elapsed_ns | tonumber) / 1e6 | round),
			 (($p.downtime.total_ns | tonumber) / 1e6 | round), $f,
			 $p.pages_sent, $p.iteration, $v] | @tsv' |
			awk -F'\t' '{ printf "%-6s %3s | %9s %9s %8s %7s %6s | %s\n", $1,$2,$3,$4,$5,$6,$7,$8 }' |
			tee -a "$TMP/rows"
		"$CTL" --socket "$D" vm destroy "$vm" >/dev/null || true
	done
done
echo
for mode in ring bitmap; do
	awk -v m="$mode" '$1 == m { t[++n] = $4; d[n] = $5; f[n] = $6 }
	function med(a, n,   i, j, x) {
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END { if (n) printf "median %-6s (%d runs): total %s ms, downtime %s ms, fill %s s\n", m, n, med(t, n), med(d, n), med(f, n) }' "$TMP/rows"
done
