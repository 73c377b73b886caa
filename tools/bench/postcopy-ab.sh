#!/usr/bin/env bash
# Precopy (our defaults: auto-throttle) against postcopy after the first
# pass, interleaved in one run on the same machine, same guest: 2 vCPUs
# writing random pages (random content) flat out, every page of the
# region written before the migration starts (--prefill). One row per
# migration, then the medians per variant (docs/benchmarks.md, "Postcopy").
# usage: postcopy-ab.sh [BUILD_DIR]   env: MEM=512M REPS=3 ACCEL=soft
# Not a test: a benchmark (two fresh daemons per run, loopback, no TLS
# change: dev TLS as the tools use it).
set -uo pipefail
B=${1:-build/release}
source "$(dirname "$0")/lib.sh"
MEM=${MEM:-512M} REPS=${REPS:-3} ACCEL=${ACCEL:-soft}
T=$(mktemp -d /tmp/postcopy-ab.XXXXXX)
C="$B/tools/migratectl/migratectl"
PIDS=()
start() {
	"$B/migrated/daemon/migrated" --state-dir "$T/$1" --dev-tls \
		--tls-dir "$T/tls" --accel "$ACCEL" --log-level info \
		--stop-vms >"$T/$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 200); do
		[ -S "$T/$1/control.sock" ] && return
		sleep 0.05
	done
	echo "daemon $1 did not start: $T/$1.log" >&2
	exit 1
}
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
start a
start b
SA=$T/a/control.sock SB=$T/b/control.sock
one() { # variant name -> a row
	local v=$1 name=$2 flags= port j
	[ "$v" = postcopy ] && flags="--postcopy-after 0"
	"$C" --socket "$SA" vm create "$name" --mem "$MEM" --vcpus 2 \
		--pattern random --rate 0 --content random --prefill \
		--heartbeat-us 2000 >/dev/null || return
	until "$C" --socket "$SA" --json vm inspect "$name" |
		jq -e '.prefill == "done" or .prefill_done == true or (.workload.prefill_state // "") == "done"' >/dev/null 2>&1; do
		"$C" --socket "$SA" vm inspect "$name" | grep -Eq "prefill: +done" && break
		sleep 0.2
	done
	port=$("$B/tools/migrate-recv/migrate-recv" --socket "$SB" --name "$name" 127.0.0.1:0)
	j=$("$B/tools/migrate-send/migrate-send" --socket "$SA" --json $flags \
		"$name" "127.0.0.1:$port" 2>/dev/null | tail -1)
	echo "$j" | jq -r --arg v "$v" '.progress as $p | [$v,
		($p.phase|sub("MIG_PHASE_";"")),
		(($p.elapsed_ns // 0)/1e6|floor),
		(($p.downtime.total_ns // 0)/1e6*10|floor/10),
		(($p.guest_downtime_ns // 0)/1e6*10|floor/10),
		($p.throttle_pct // 0), ($p.iteration // 0),
		($p.pc_unsent_pages // 0), ($p.pc_pages_requested // 0),
		(($p.pc_fault_p50_ns // 0)/1e3|floor),
		(($p.pc_fault_p99_ns // 0)/1e3|floor),
		(($p.pc_fault_max_ns // 0)/1e3|floor),
		(($p.pc_last_page_ns // 0)/1e6|floor),
		($p.verify_mismatches // 0)] | @tsv'
	# The destination lists the VM when its worker's event arrives.
	for _ in $(seq 50); do
		"$C" --socket "$SB" vm destroy "$name" >/dev/null 2>&1 && break
		sleep 0.1
	done
	"$C" --socket "$SA" vm destroy "$name" >/dev/null 2>&1
}
hdr="variant\tphase\ttotal_ms\tdowntime_ms\tguest_ms\tthrottle\titers\tunsent\tasked\tfault_p50_us\tfault_p99_us\tfault_max_us\tlast_page_ms\tmismatch"
echo -e "$hdr" | tee "$T/rows"
for r in $(seq "$REPS"); do
	for v in precopy postcopy; do
		one "$v" "g$r$v" | tee -a "$T/rows"
	done
done
echo
echo "medians ($MEM, $ACCEL, $REPS runs each):"
echo -e "$hdr" | cut -f1,3-13
for v in precopy postcopy; do
	row=$v
	for c in $(seq 3 13); do
		row="$row\t$(awk -F'\t' -v v="$v" -v c="$c" '$1 == v { print $c }' "$T/rows" | median)"
	done
	echo -e "$row"
done
