#!/usr/bin/env bash
# Live-migration matrix: for each page content kind (stamp, text, random)
# at 0, 50 and 200 MB/s of guest dirtying, migrate a 1 GiB, 2-vCPU KVM
# guest between two migrated daemons on loopback (TLS, zstd, 2 channels)
# and print one table row each. Not a test: a benchmark (docs/benchmarks.md).
#
# usage: tools/bench/migrate-matrix.sh [BUILD_DIR]   (default build/release)
# env:   MEM=1G VCPUS=2 WARM=2 (seconds the guest runs before migrating)
#        CONTENTS="stamp text random" RATES="0 50 200" (MB/s, whole guest)
#        EXTRA="--bandwidth 1G" (more migrate-send flags)
#
# Columns: total = migration time reported by the engine; downtime = the
# engine's sum of parts; guest = the largest heartbeat gap the guest saw
# (host-timestamped); wire = bytes on the wire; sent = pages put on the
# wire; cpu src/dst = utime+stime of each daemon during the migration;
# rss+ src/dst = peak anonymous RSS (RssAnon, i.e. beyond the memfd guest
# RAM) during the migration minus before it; verify = post-commit page
# check result from the source daemon's log.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
MEM=${MEM:-1G}
VCPUS=${VCPUS:-2}
WARM=${WARM:-2}
CONTENTS=${CONTENTS:-stamp text random}
RATES=${RATES:-0 50 200}
EXTRA=${EXTRA:-}
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
SEND=$B/tools/migrate-send/migrate-send
RECV=$B/tools/migrate-recv/migrate-recv
for t in "$MIGRATED" "$CTL" "$SEND" "$RECV"; do
	[ -x "$t" ] || { echo "missing $t (build first)" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }
[ -w /dev/kvm ] || { echo "needs /dev/kvm" >&2; exit 1; }

source "$top/tools/bench/lib.sh"
bench_init migrate-matrix
ACCEL=kvm
bench_start_daemon src
SRC_PID=$DPID
# The second daemon must not race the first one generating the dev CA.
bench_start_daemon dst
DST_PID=$DPID
S=$TMP/src/control.sock
D=$TMP/dst/control.sock

rss_anon() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)

printf '%-7s %5s | %8s %9s %9s %10s %7s | %6s %6s | %7s %7s | %s\n' \
	content MB/s total downtime guest wire sent "cpu s" "cpu d" \
	"rss+ s" "rss+ d" verify
printf '%s\n' "$(printf '%.0s-' $(seq 118))"
n=0
for content in $CONTENTS; do
	for rate in $RATES; do
		n=$((n + 1))
		vm=g$n
		if [ "$rate" = 0 ]; then
			wl=(--pattern idle)
		else
			# MB/s of the whole guest -> 4 KiB pages/s per vCPU.
			wl=(--rate $((rate * 1000000 / 4096 / VCPUS)))
		fi
		"$CTL" --socket "$S" vm create "$vm" --mem "$MEM" \
			--vcpus "$VCPUS" --content "$content" "${wl[@]}" \
			--heartbeat-us 2000 >/dev/null
		sleep "$WARM"
		port=$("$RECV" --socket "$D" --name "$vm" 127.0.0.1:0)
		c0s=$(cpu_ticks "$SRC_PID")
		c0d=$(cpu_ticks "$DST_PID")
		r0s=$(rss_anon "$SRC_PID")
		r0d=$(rss_anon "$DST_PID")
		echo "$r0s $r0d" >"$TMP/rss"
		(
			ps=$r0s pd=$r0d
			while [ ! -e "$TMP/stop" ]; do
				a=$(rss_anon "$SRC_PID") b=$(rss_anon "$DST_PID")
				[ "$a" -gt "$ps" ] && ps=$a
				[ "$b" -gt "$pd" ] && pd=$b
				echo "$ps $pd" >"$TMP/rss"
				sleep 0.02
			done
		) &
		sampler=$!
		rc=0
		"$SEND" --socket "$S" --json $EXTRA "$vm" "127.0.0.1:$port" \
			>"$TMP/out.json" 2>"$TMP/err" || rc=$?
		touch "$TMP/stop"
		wait "$sampler" || true
		rm -f "$TMP/stop"
		c1s=$(cpu_ticks "$SRC_PID")
		c1d=$(cpu_ticks "$DST_PID")
		read -r ps pd <"$TMP/rss"
		f=$(tail -1 "$TMP/out.json")
		ver=$(grep 'op=verify' "$TMP/src.log" | tail -1 |
			sed -n 's/.*pages=\([0-9]*\) mismatches=\([0-9]*\).* ms=\([0-9.]*\).*/\2 bad of \1 (\3 ms)/p')
		if [ "$rc" != 0 ]; then
			printf '%-7s %5s | FAILED rc=%s: %s\n' "$content" "$rate" \
				"$rc" "$(echo "$f" | jq -r '.progress.message // empty' 2>/dev/null) $(cat "$TMP/err")"
		else
			echo "$f" | jq -r --arg c "$content" --arg r "$rate" \
				--arg cs "$(echo "scale=2; ($c1s - $c0s) / $HZ" | bc)" \
				--arg cd "$(echo "scale=2; ($c1d - $c0d) / $HZ" | bc)" \
				--arg rs "$(( (ps - r0s) / 1024 ))M" \
				--arg rd "$(( (pd - r0d) / 1024 ))M" \
				--arg v "$ver" '
				def ms: (tonumber? // 0) / 1e6 | . * 10 | round / 10 | tostring + " ms";
				def mib: (tonumber? // 0) / 1048576 | . * 10 | round / 10 | tostring + "M";
				.progress as $p |
				[$c, $r, ($p.elapsed_ns | ms), ($p.downtime.total_ns | ms),
				 ($p.guest_downtime_ns | ms), ($p.bytes_wire | mib),
				 ($p.pages_sent | tostring), $cs, $cd, $rs, $rd, $v] |
				@tsv' | awk -F'\t' '{ printf "%-7s %5s | %8s %9s %9s %10s %7s | %6s %6s | %7s %7s | %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12 }'
			"$CTL" --socket "$D" vm destroy "$vm" >/dev/null || true
		fi
		"$CTL" --socket "$S" vm destroy "$vm" >/dev/null 2>&1 || true
	done
done
