#!/bin/bash
# What the fleet's ownership transaction costs a migration: the same small
# soft VM migrated between two standalone daemons and between two daemons
# in a fleet (a 3-member etcd on loopback), interleaved A/B in one run
# (docs/benchmarks.md, "Fleet: the commit's transaction").
#
#   tools/bench/fleet-commit.sh [BUILD_DIR] [REPS]
#
# BUILD_DIR defaults to build/release. Per run: the downtime the source
# measured (pause .. destination resumed, which includes the destination's
# etcd transaction in the fleet), its commit part (resume_ns: Commit sent
# .. Resumed received) and the destination's fleet_commit time from its
# log (the transaction alone). Prints each run and the medians.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/tools/bench/lib.sh"
b=${1:-$top/build/release}
reps=${2:-7}
MIGRATED=$b/migrated/daemon/migrated
CTL=$b/tools/migratectl/migratectl
SEND=$b/tools/migrate-send/migrate-send
RECV=$b/tools/migrate-recv/migrate-recv
TMP=$(mktemp -d /tmp/fleet-bench.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for p in $(pgrep -f -- "migrated-vmm .*--state-dir $TMP/"); do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	rm -rf "$TMP"
}
trap cleanup EXIT
source "$top/tests/integration/lib_etcd.sh"
etcd_need

start() { # NAME [args]
	local n=$1
	shift
	"$MIGRATED" --state-dir "$TMP/$n" --dev-tls --tls-dir "$TMP/tls" \
		--accel soft "$@" >"$TMP/$n.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [ -S "$TMP/$n/control.sock" ] && break; sleep 0.05; done
	sleep 0.5
}

etcd_start 3
start s0
start d0
start s1 --etcd "$ETCD_ENDPOINTS" --host-id s1
start d1 --etcd "$ETCD_ENDPOINTS" --host-id d1


# run MODE I: one migration; appends "downtime_ms resume_ms" to $TMP/MODE
run() {
	local m=$1 i=$2 vm=b$1x$2 port dt rs
	"$CTL" --socket "$TMP/s$m/control.sock" vm create "$vm" --mem 64M \
		--vcpus 1 --rate 2000 --prefill >/dev/null || return
	sleep 1
	port=$("$RECV" --socket "$TMP/d$m/control.sock" 127.0.0.1:0) || return
	"$SEND" --socket "$TMP/s$m/control.sock" "$vm" "127.0.0.1:$port" \
		>"$TMP/$vm.out" 2>&1
	dt=$(sed -n 's/.*event=migration_finished .*vm='"$vm"' .* downtime_us=\([0-9]*\).*/\1/p' \
		"$TMP/s$m.log" | tail -1)
	rs=$(sed -n 's/.*+ resume \(.*\)$/\1/p' "$TMP/$vm.out" | tail -1 | tr -d ' ')
	echo "$(echo "scale=1; ${dt:-0}/1000" | bc) ${rs:-?}" >>"$TMP/$m"
	"$CTL" --socket "$TMP/d$m/control.sock" vm destroy "$vm" >/dev/null
}

for i in $(seq "$reps"); do
	run 0 "$i"
	run 1 "$i"
done
printf "%-22s %s\n" "mode" "downtime_ms per run (resume part)"
for m in 0 1; do
	printf "%-22s %s\n" "$([ $m = 0 ] && echo standalone || echo "fleet (3-member etcd)")" \
		"$(awk '{printf "%s(%s) ", $1, $2}' "$TMP/$m")"
done
printf "%-22s %s %s\n" "median downtime_ms" \
	"standalone $(cut -d' ' -f1 "$TMP/0" | median)" \
	"fleet $(cut -d' ' -f1 "$TMP/1" | median)"
echo "destination's commit transactions (fleet_commit lines): $(grep -c 'event=fleet_commit .*err=0' "$TMP/d1.log")"
