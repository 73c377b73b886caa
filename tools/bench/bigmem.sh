#!/bin/bash
# Migration of a small and a large sparse soft VM with the same written
# memory, side by side in one run: what a VM's size costs when the guest
# touched the same amount (docs/benchmarks.md, "VMs above 3 GiB").
#
#   tools/bench/bigmem.sh [BUILD_DIR] [REPS]
#
# BUILD_DIR defaults to build/release. Two daemons on loopback, soft
# accelerator, 2 vCPUs sweeping a 256 MiB region at 20000 pages/s each
# (in the 256 GiB VM the region spans the MMIO hole). Per run: total
# migration time, the source worker's peak RSS (VmHWM sampled every
# 0.1 s) and the destination worker's RSS after the commit, split into
# anon (its own memory) and shmem (guest RAM it touched).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$top/build/release}
reps=${2:-3}
MIGRATED=$b/migrated/daemon/migrated
CTL=$b/tools/migratectl/migratectl
SEND=$b/tools/migrate-send/migrate-send
RECV=$b/tools/migrate-recv/migrate-recv
T=$(mktemp -d /tmp/bigmem-bench.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for p in $(pgrep -f -- "migrated-vmm .*--state-dir $T/"); do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	rm -rf "$T"
}
trap cleanup EXIT

start() {
	"$MIGRATED" --state-dir "$T/$1" --dev-tls --tls-dir "$T/tls" \
		--accel soft --migration-io-timeout-ms 60000 >"$T/$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [ -S "$T/$1/control.sock" ] && return; sleep 0.05; done
	echo "daemon $1 did not start" >&2
	exit 1
}
start src
start dst
S=$T/src/control.sock
D=$T/dst/control.sock
kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null; }

# one MEM OFFSET REP: prints "mem rep total_s src_hwm_mib dst_rss_mib
# dst_anon_mib dst_shmem_mib"
one() {
	local mem=$1 off=$2 rep=$3 name=v$3-$1 wpid port out
	"$CTL" --socket "$S" vm create "$name" --mem "$mem" --vcpus 2 \
		--pattern sweep --rate 20000 --region-offset "$off" \
		--region-size 256M >/dev/null || return
	sleep 2
	wpid=$("$CTL" --socket "$S" --json vm inspect "$name" | jq -r .info.worker_pid)
	(while [ -r "/proc/$wpid/status" ]; do
		h=$(kib "$wpid" VmHWM) && [ -n "$h" ] && echo "$h" >"$T/hwm"
		sleep 0.1
	done) &
	local sampler=$!
	port=$("$RECV" --socket "$D" --name "$name" --insecure 127.0.0.1:0) || return
	out=$("$SEND" --socket "$S" --insecure "$name" "127.0.0.1:$port" 2>&1)
	wait "$sampler"
	local tt
	tt=$(sed -nE 's/^ *total time: +([0-9.]+) (m?s).*/\1 \2/p' <<<"$out" | tail -1)
	case "$tt" in *" ms") tt=$(echo "${tt% ms} / 1000" | bc -l) ;; *) tt=${tt% s} ;; esac
	grep -q "0 differ" <<<"$out" || echo "# $name: verification: $(grep verified <<<"$out")" >&2
	local dp=
	# The destination registers the VM once it resumed it.
	for _ in $(seq 300); do
		dp=$("$CTL" --socket "$D" --json vm inspect "$name" 2>/dev/null |
			jq -r '.info.worker_pid // empty')
		[ -n "$dp" ] && break
		sleep 0.1
	done
	printf "%-5s %3s %8.2f %10.0f %10.0f %9.0f %9.0f\n" "$mem" "$rep" "$tt" \
		"$(echo "$(cat "$T/hwm") / 1024" | bc -l)" \
		"$(echo "$(kib "$dp" VmRSS) / 1024" | bc -l)" \
		"$(echo "$(kib "$dp" RssAnon) / 1024" | bc -l)" \
		"$(echo "$(kib "$dp" RssShmem) / 1024" | bc -l)"
	"$CTL" --socket "$D" vm destroy "$name" >/dev/null
}

printf "%-5s %3s %8s %10s %10s %9s %9s\n" MEM REP TOTAL_S SRC_HWM_MB \
	DST_RSS_MB DST_ANON DST_SHMEM
for r in $(seq "$reps"); do
	one 1G 8M "$r"
	one 256G 3008M "$r"
done
