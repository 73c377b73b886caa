#!/usr/bin/env bash
# The main job: a live migration between two migrated daemons on this
# machine. Installs and builds what it needs first (tools/setup.sh), then:
#   1. starts two daemons (state directories, control sockets and
#      migration ports of their own; development TLS: one throwaway CA
#      shared by both, host certificates signed by it);
#   2. creates a 1 GiB, 2-vCPU guest on the first one that first writes
#      every page of its RAM once (--prefill: a real VM's memory is full),
#      then dirties about 100 MB/s (KVM where /dev/kvm works, else the
#      soft accelerator);
#   3. migrates it live to the second one over mutual TLS 1.3 with zstd
#      on 2 data channels, and prints the engine's report;
#   4. shows the post-commit verification (every page of the frozen
#      source memory re-hashed against what the destination acknowledged)
#      and the guest running on, on the destination.
# The daemons are stopped (SIGTERM) whatever happens.
#
# env: DEMO_BUILD=DIR (a build tree; skips setup), DEMO_MEM=1G,
#      DEMO_RATE=100 (MB/s), DEMO_PORT=47400 (destination port)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${DEMO_BUILD:-}" ]; then
	"$top/tools/setup.sh" release
	B=$top/build/release
else
	B=$DEMO_BUILD
fi
MEM=${DEMO_MEM:-1G}
RATE=${DEMO_RATE:-100}
PORT=${DEMO_PORT:-47400}
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
SEND=$B/tools/migrate-send/migrate-send
RECV=$B/tools/migrate-recv/migrate-recv

TMP=$(mktemp -d /tmp/migrated-demo.XXXXXX)
PIDS=()
stop() {
	local rc=$?
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "${#PIDS[@]}" -gt 0 ] && echo "== daemons stopped"
	if [ "$rc" -ne 0 ]; then
		echo "demo FAILED (rc=$rc); daemon logs:" >&2
		tail -n 20 "$TMP"/*.log >&2 2>/dev/null || true
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT TERM

accel=kvm
[ -r /dev/kvm ] && [ -w /dev/kvm ] || accel=soft

# start NAME LISTEN: one daemon, its own state dir and migration port.
# Each VM runs in its own worker process; --stop-vms: the demo's SIGTERM
# takes the VMs along (by default they outlive the daemon).
start() {
	"$MIGRATED" --state-dir "$TMP/$1" --dev-tls --tls-dir "$TMP/tls" \
		--accel "$accel" --migration-listen "$2" --log-level info \
		--stop-vms \
		>"$TMP/$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		[ -S "$TMP/$1/control.sock" ] && return 0
		kill -0 "$!" 2>/dev/null || break
		sleep 0.05
	done
	echo "daemon $1 did not start" >&2
	return 1
}

echo "== two daemons ($accel), development TLS CA in $TMP/tls"
start hostA "127.0.0.1:$((PORT + 1))"
start hostB "127.0.0.1:$PORT"
A=$TMP/hostA/control.sock
B_=$TMP/hostB/control.sock
echo "   hostA: pid ${PIDS[0]}, control $A"
echo "   hostB: pid ${PIDS[1]}, control $B_, migrations on 127.0.0.1:$PORT"

echo "== guest 'demo' on hostA: $MEM, 2 vCPUs, every page written once, then ~$RATE MB/s"
"$CTL" --socket "$A" vm create demo --mem "$MEM" --vcpus 2 --pattern sweep \
	--content stamp --rate "$((RATE * 1000000 / 4096 / 2))" \
	--heartbeat-us 2000 --prefill >/dev/null
t0=$(date +%s%N)
until "$CTL" --socket "$A" vm inspect demo | grep -q "prefill: *done"; do
	[ $(($(date +%s%N) - t0)) -lt 300000000000 ] ||
		{ echo "demo: the guest's prefill did not finish in 300 s" >&2
		  exit 1; }
	sleep 0.2
done
echo "   prefill done in $((($(date +%s%N) - t0) / 1000000)) ms"
sleep 1
"$CTL" --socket "$A" vm list

echo "== hostB listens (mutual TLS 1.3)"
"$RECV" --socket "$B_" --name demo "127.0.0.1:$PORT" >/dev/null

echo "== migrate-send demo 127.0.0.1:$PORT  (zstd, 2 data channels)"
"$SEND" --socket "$A" --channels 2 demo "127.0.0.1:$PORT" | tail -n 6

# The report above shows the post-commit verification; the source's log
# line is checked too, so that the demo fails loudly on any difference.
v=$(grep 'op=verify' "$TMP/hostA.log" | tail -1)
pages=$(sed -n 's/.* pages=\([0-9]*\).*/\1/p' <<<"$v")
bad=$(sed -n 's/.* mismatches=\([0-9]*\).*/\1/p' <<<"$v")
ms=$(sed -n 's/.* ms=\([0-9.]*\).*/\1/p' <<<"$v")
if [ -z "$bad" ]; then
	echo "   no verification result in the source log" >&2
	exit 1
fi
if [ "$bad" != 0 ]; then
	echo "   verification: $bad of $pages pages differ ($ms ms)" >&2
	exit 1
fi

echo "== the guest on hostB"
seqs() { "$CTL" --socket "$B_" --json vm inspect demo | jq '[.vcpus[].seq] | add'; }
"$CTL" --socket "$B_" vm list
s1=$(seqs)
sleep 1
s2=$(seqs)
echo "   pages written by the guest (seq): $s1, one second later $s2"
[ "$s2" -gt "$s1" ] || { echo "   the guest does not run on hostB" >&2; exit 1; }
if "$CTL" --socket "$A" vm inspect demo >/dev/null 2>&1; then
	echo "   hostA still holds demo" >&2
	exit 1
fi
echo "   hostA no longer holds it: the VM moved"
