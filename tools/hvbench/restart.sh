#!/usr/bin/env bash
# Daemon restart with running workers: start a daemon, create N small VMs
# (each in its own worker process), kill -9 the daemon, start a new one on
# the same state directory and time it until `vm list` shows all N VMs
# RUNNING again (the workers re-adopted). Per N: REPS kill/restart cycles
# on the same VMs; prints one row per cycle and the medians.
# Columns: answer = exec of the new daemon to its first `vm list` answer;
# running = exec to the first `vm list` with all N RUNNING (CREATED; both polled
# with migratectl, a few ms per poll); adopt = the daemon's own
# event=adopt_done ms= (its re-adoption from reading STATE/vms to the last
# WorkerInfo answer, not counting its start-up before that).
# Not a test: a benchmark (docs/benchmarks.md, "Worker process per VM").
#
# The VMs run the idle pattern, whose vCPUs spin (PAUSE) between
# heartbeats: N VMs are N busy vCPU threads. PAUSED=1 creates them with
# --paused (state CREATED, no vCPU ever runs) and waits for N CREATED
# instead, which leaves the CPU to the daemon.
#
# usage: tools/hvbench/restart.sh [BUILD_DIR]   (default build/release)
# env:   COUNTS="1 20" REPS=5 MEM=64M VCPUS=1 ACCEL=kvm (or soft) PAUSED=0
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
COUNTS=${COUNTS:-1 20}
REPS=${REPS:-5}
MEM=${MEM:-64M}
VCPUS=${VCPUS:-1}
ACCEL=${ACCEL:-kvm}
PAUSED=${PAUSED:-0}
WANT=RUNNING
CREATE=()
[ "$PAUSED" = 0 ] || { WANT=CREATED; CREATE=(--paused); }
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
for t in "$MIGRATED" "$B/migrated/daemon/migrated-vmm" "$CTL"; do
	[ -x "$t" ] || { echo "missing $t (build first)" >&2; exit 1; }
done
[ "$ACCEL" != kvm ] || [ -w /dev/kvm ] || { echo "needs /dev/kvm" >&2; exit 1; }

TMP=$(mktemp -d /tmp/restart-bench.XXXXXX)
DPID=
cleanup() {
	local s=$TMP/st/control.sock p
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		for vm in $("$CTL" --socket "$s" vm list 2>/dev/null |
			    awk 'NR > 1 { print $1 }'); do
			"$CTL" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
		done
		kill -TERM "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
	fi
	# Workers this script started and could not destroy (daemon gone).
	for p in $(sed -n 's/^pid=//p' "$TMP"/st/vms/*.rec 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null || true
	done
	[ -n "${KEEP:-}" ] && { echo "logs kept in $TMP" >&2; return; }
	rm -rf "$TMP"
}
trap cleanup EXIT

now_ns() { date +%s%N; }
start_daemon() { # log name
	"$MIGRATED" --state-dir "$TMP/st" --dev-tls --tls-dir "$TMP/tls" \
		--accel "$ACCEL" --log-level info >"$TMP/$1.log" 2>&1 &
	DPID=$!
}
running() { # -> number of $WANT VMs, or -1 when the daemon does not answer
	{ "$CTL" --socket "$TMP/st/control.sock" vm list 2>/dev/null || true; } |
		awk -v want="$WANT" 'NR > 1 && toupper($2) == want { n++ }
			END { print NR ? n + 0 : -1 }'
}

echo "restart: $ACCEL VMs of $MEM, $VCPUS vCPU(s), idle, until $WANT;" \
	"$REPS restarts per N;" \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%3s %3s | %9s %10s %9s\n' N rep "answer ms" "running ms" "adopt ms"
printf '%s\n' "$(printf '%.0s-' $(seq 40))"
touch "$TMP/rows"
for N in $COUNTS; do
	rm -rf "$TMP/st"
	start_daemon "create-$N"
	for _ in $(seq 200); do
		[ "$(running)" -ge 0 ] && break
		sleep 0.05
	done
	for i in $(seq "$N"); do
		"$CTL" --socket "$TMP/st/control.sock" vm create "v$i" \
			--mem "$MEM" --vcpus "$VCPUS" --pattern idle \
			"${CREATE[@]}" >/dev/null
	done
	for _ in $(seq 600); do
		[ "$(running)" = "$N" ] && break
		sleep 0.1
	done
	[ "$(running)" = "$N" ] ||
		{ echo "N=$N: the VMs are not all $WANT" >&2; exit 1; }
	for rep in $(seq "$REPS"); do
		kill -KILL "$DPID"
		wait "$DPID" 2>/dev/null || true
		log=restart-$N-$rep
		t0=$(now_ns)
		start_daemon "$log"
		ta= c=-1
		for _ in $(seq 20000); do
			c=$(running)
			[ "$c" -ge 0 ] && [ -z "$ta" ] && ta=$(now_ns)
			[ "$c" = "$N" ] && break
		done
		t1=$(now_ns)
		if [ "$c" != "$N" ]; then
			echo "N=$N rep $rep: only $c of $N $WANT; log $TMP/$log.log" >&2
			KEEP=1
			exit 1
		fi
		adopt=
		for _ in $(seq 50); do
			adopt=$(sed -n 's/.*event=adopt_done workers=[0-9]* ms=\([0-9.]*\).*/\1/p' \
				"$TMP/$log.log" | tail -1)
			[ -n "$adopt" ] && break
			sleep 0.02
		done
		printf '%3s %3s | %9.1f %10.1f %9s\n' "$N" "$rep" \
			"$(echo "($ta - $t0) / 1000000" | bc -l)" \
			"$(echo "($t1 - $t0) / 1000000" | bc -l)" "${adopt:--}" |
			tee -a "$TMP/rows"
	done
	for i in $(seq "$N"); do
		"$CTL" --socket "$TMP/st/control.sock" vm destroy "v$i" \
			>/dev/null || true
	done
	kill -TERM "$DPID"
	wait "$DPID" 2>/dev/null || true
	DPID=
done

echo
printf '%3s | %9s %10s %9s  (medians of %s)\n' N "answer ms" "running ms" \
	"adopt ms" "$REPS"
for N in $COUNTS; do
	awk -v N="$N" '
	function med(a, n,   i, j, x) {
		if (!n) return "-"
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$1 == N { a[++n] = $4; r[n] = $5; d[n] = $6 }
	END { printf "%3s | %9.1f %10.1f %9.1f\n", N, med(a, n), med(r, n), med(d, n) }' \
		"$TMP/rows"
done
