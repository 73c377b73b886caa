#!/usr/bin/env bash
# Local live update (migratectl vm update) of a fully populated guest: a
# VM of each SIZE first writes its whole region once (sweep, flat out),
# then keeps writing at RATE pages/s per vCPU while it is updated RUNS
# times through one daemon. Per update: the vCPU pause (old worker's
# pause until the new worker's vCPUs run: nothing else can run the guest
# in between), the state save and restore, the whole call (new worker
# started, VM created over the memfd, handover); the largest gap between
# two write batches the guest itself saw (its TSC, kept in guest memory,
# since boot) before the first update and after the last, and `vm check`
# of every page. Prints a table.
# Not a test: a benchmark (docs/benchmarks.md, "Local live update").
#
# usage: tools/hvbench/live-update.sh [BUILD_DIR]   (build/release)
# env:   SIZES="1G 3G" RUNS=10 VCPUS=2 RATE=2000 ACCEL=kvm|soft (kvm if
#        /dev/kvm works)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
SIZES=${SIZES:-1G 3G}
RUNS=${RUNS:-10}
VCPUS=${VCPUS:-2}
RATE=${RATE:-2000}
ACCEL=${ACCEL:-$([ -w /dev/kvm ] && echo kvm || echo soft)}
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
for t in "$MIGRATED" "$CTL" "$B/migrated/daemon/migrated-vmm"; do
	[ -x "$t" ] || { echo "missing $t (build first)" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/live-update.XXXXXX)
cleanup() {
	kill "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
	pkill -TERM -f -- "migrated-vmm .*--state-dir $TMP/" 2>/dev/null || true
	sleep 0.5
	pkill -KILL -f -- "migrated-vmm .*--state-dir $TMP/" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
"$MIGRATED" --state-dir "$TMP/s" --accel "$ACCEL" --log-level warn \
	>"$TMP/d.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$TMP/s/control.sock" ] && break; sleep 0.05; done
ctl() { "$CTL" --socket "$TMP/s/control.sock" "$@"; }

# ns in, ms out (awk: no integer overflow, no exponent for bc to choke on)
median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f", ((NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2) / 1e6}'; }
max() { sort -n | tail -1 | awk '{printf "%.2f", $1 / 1e6}'; }

printf '%-6s %-5s %4s | %12s %12s | %10s %11s | %11s | %s\n' SIZE ACCEL RUNS \
	"PAUSE med" "PAUSE max" "SAVE med" "RESTORE med" "CALL med" \
	"guest max gap before -> after / check"
for size in $SIZES; do
	vm=u$size
	# The update hands the memfd over: the default (anon) has none.
	ctl vm create "$vm" --accel "$ACCEL" --mem "$size" --vcpus "$VCPUS" \
		--backing memfd >/dev/null
	# Populate: every vCPU completes one pass over its share.
	for _ in $(seq 1200); do
		p=$(ctl --json vm inspect "$vm" | jq '[.vcpus[].passes] | min')
		[ "${p:-0}" -ge 1 ] && break
		sleep 0.5
	done
	[ "${p:-0}" -ge 1 ] || { echo "$vm: not populated after 600 s" >&2; exit 1; }
	ctl vm set-rate "$vm" "$RATE" >/dev/null
	sleep 1
	gap0=$(ctl --json vm inspect "$vm" | jq '[.vcpus[].guest_max_gap_us] | max')
	: >"$TMP/runs"
	for _ in $(seq "$RUNS"); do
		ctl --json vm update "$vm" |
			jq -r '"\(.pause_ns) \(.save_ns) \(.restore_ns) \(.total_ns)"' \
				>>"$TMP/runs"
		sleep 0.5
	done
	gap=$(ctl --json vm inspect "$vm" | jq '[.vcpus[].guest_max_gap_us] | max')
	chk=$(ctl vm check "$vm" | sed -nE 's/.* ([0-9]+) bad .*/\1 bad/p')
	pm=$(cut -d' ' -f1 "$TMP/runs" | median)
	px=$(cut -d' ' -f1 "$TMP/runs" | max)
	sm=$(cut -d' ' -f2 "$TMP/runs" | median)
	rm_=$(cut -d' ' -f3 "$TMP/runs" | median)
	tm=$(cut -d' ' -f4 "$TMP/runs" | median)
	printf '%-6s %-5s %4s | %9s ms %9s ms | %7s ms %8s ms | %8s ms | %s ms / %s\n' \
		"$size" "$ACCEL" "$RUNS" "$pm" "$px" "$sm" "$rm_" "$tm" \
		"$(awk -v a="$gap0" -v g="$gap" 'BEGIN {printf "%.1f -> %.1f", a / 1000, g / 1000}')" "${chk:-?}"
	ctl vm destroy "$vm" >/dev/null
done
