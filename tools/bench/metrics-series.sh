#!/usr/bin/env bash
# How the metrics exposition grows with the migrations a daemon has run:
# two daemons of BUILD (soft accelerator), K small migrations back and
# forth, and after each one the source side's scrape: sample lines of the
# migd_migration* families, all sample lines, bytes, and the median of 10
# scrape times (curl time_total). Run it for two builds to compare (A/B,
# interleaved by the caller).
#   tools/bench/metrics-series.sh BUILD_DIR LABEL [K]
set -euo pipefail
build=$1
label=$2
k=${3:-6}
tmp=$(mktemp -d /tmp/migd-mseries.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for p in $(pgrep -f -- "migrated-vmm .*--state-dir $tmp/" || true); do
		kill -TERM "$p" 2>/dev/null || true
	done
	sleep 1
	for p in $(pgrep -f -- "migrated-vmm .*--state-dir $tmp/" || true); do
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
mig=$build/migrated/daemon/migrated
ctl=$build/tools/migratectl/migratectl
send=$build/tools/migrate-send/migrate-send
recv=$build/tools/migrate-recv/migrate-recv

start() {
	"$mig" --state-dir "$tmp/$1" --accel soft --metrics-listen 127.0.0.1:0 \
		>"$tmp/$1.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do
		[ -S "$tmp/$1/control.sock" ] && break
		sleep 0.05
	done
}
port_of() {
	sed -n 's/.*comp=migd.metrics event=listening addr=[^:]*:\([0-9]*\).*/\1/p' \
		"$tmp/$1.log" | head -1
}
start a
start b
pa=$(port_of a)
"$ctl" --socket "$tmp/a/control.sock" vm create v --mem 64M --pattern idle \
	>/dev/null
src=a
dst=b
printf '%-8s %3s %10s %10s %10s %10s\n' build migs mig_lines all_lines bytes scrape_ms
for i in $(seq "$k"); do
	p=$("$recv" --socket "$tmp/$dst/control.sock" --insecure 127.0.0.1:0)
	"$send" --socket "$tmp/$src/control.sock" --insecure v "127.0.0.1:$p" \
		>/dev/null
	t=$src
	src=$dst
	dst=$t
	sleep 0.3
	curl -sf "http://127.0.0.1:$pa/metrics" >"$tmp/m.txt"
	ml=$(grep -c '^migd_migration' "$tmp/m.txt" || true)
	al=$(grep -vc '^#' "$tmp/m.txt")
	by=$(wc -c <"$tmp/m.txt")
	ms=$(for _ in $(seq 10); do
		curl -sf -o /dev/null -w '%{time_total}\n' \
			"http://127.0.0.1:$pa/metrics"
	done | sort -n | awk '{v[NR] = $1} END {printf "%.2f", 1000 * (v[5] + v[6]) / 2}')
	printf '%-8s %3d %10d %10d %10d %10s\n' "$label" "$i" "$ml" "$al" "$by" "$ms"
done
