#!/usr/bin/env bash
# Delta encoding on and off, side by side: whole migrations of a soft-
# accelerator guest between two daemons on loopback (TLS, 2 channels,
# adaptive compression), whose vCPU re-dirties a small hot set while it
# is migrated. Per run: bytes on the wire, pages sent, pages sent as a
# delta, total and downtime, and the source's post-commit verification
# (pages that differ: must be 0). Prints one row per migration, then
# medians per (content, delta) cell.
# Not a test: a benchmark (docs/benchmarks.md, "Adaptive compression and
# delta encoding").
#
# usage: tools/hvbench/delta-migrate.sh
# env:   REPS=3 MEM=256M RATE=20000 (page writes/s) HOT=1 (percent of the
#        region that is hot) SHARE=95 (percent of writes to it)
#        CONTENTS="stamp text" SETTLE=2 (s of dirtying before migrating)
#        B=build/release
#        SEND="--downtime 2 --bandwidth 20M" (migrate-send options: a
#        short downtime limit and a capped link make several passes, so
#        that pages are sent again; a delta needs a page sent in a pass
#        after the first and dirtied again)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
MEM=${MEM:-256M}
RATE=${RATE:-20000}
HOT=${HOT:-1}
SHARE=${SHARE:-95}
CONTENTS=${CONTENTS:-stamp text}
SETTLE=${SETTLE:-2}
B=${B:-$top/build/release}
read -r -a SEND <<<"${SEND:---downtime 2 --bandwidth 20M}"
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }

ctl=$B/tools/migratectl/migratectl
TMP=$(mktemp -d /tmp/delta-migrate.XXXXXX)
PIDS=()
cleanup() {
	for r in src dst; do
		s=$TMP/$r/control.sock
		[ -S "$s" ] || continue
		for vm in $("$ctl" --socket "$s" vm list 2>/dev/null |
			    awk 'NR > 1 { print $1 }'); do
			"$ctl" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
		done
	done
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] && { echo "logs kept in $TMP" >&2; return; }
	rm -rf "$TMP"
}
trap cleanup EXIT

start_daemon() {
	"$B/migrated/daemon/migrated" --state-dir "$TMP/$1" --dev-tls \
		--tls-dir "$TMP/tls" --accel soft --log-level info \
		>"$TMP/$1.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 200); do
		[ -S "$TMP/$1/control.sock" ] && return 0
		sleep 0.05
	done
	echo "daemon $1 did not start" >&2
	cat "$TMP/$1.log" >&2
	exit 1
}
start_daemon src
start_daemon dst
s=$TMP/src/control.sock
d=$TMP/dst/control.sock

n=0
one() { # content, on|off, rep
	local vm port rc flag=()
	n=$((n + 1))
	vm=h$n
	[ "$2" = on ] && flag=(--delta-cache on)
	"$ctl" --socket "$s" vm create "$vm" --mem "$MEM" --vcpus 1 \
		--accel soft --pattern hotset --hot-pct "$HOT" \
		--hot-share "$SHARE" --content "$1" --rate "$RATE" \
		--heartbeat-us 2000 >/dev/null
	sleep "$SETTLE"
	port=$("$B/tools/migrate-recv/migrate-recv" --socket "$d" \
		--name "$vm" 127.0.0.1:0)
	rc=0
	"$B/tools/migrate-send/migrate-send" --socket "$s" --json \
		"${SEND[@]}" "${flag[@]}" "$vm" "127.0.0.1:$port" >"$TMP/out.json" \
		2>"$TMP/err" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "$1 $2 $3 FAILED rc=$rc $(cat "$TMP/err")"
	else
		tail -1 "$TMP/out.json" | jq -r --arg c "$1" --arg m "$2" \
			--arg r "$3" '.progress as $p |
			[$c, $m, $r, (($p.bytes_wire | tonumber) / 1e6 * 100 | round / 100),
			 $p.pages_sent, ($p.pages_delta // 0), $p.iteration,
			 (($p.elapsed_ns | tonumber) / 1e6 | round),
			 (($p.downtime.total_ns | tonumber) / 1e6 * 10 | round / 10),
			 ($p.verify_mismatches // 0), ($p.compress_levels // "")] | @tsv' |
			awk -F'\t' '{ printf "%-6s %-3s %3s | %9s %8s %8s %5s %8s %8s %6s | %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11 }' |
			tee -a "$TMP/rows"
	fi
	"$ctl" --socket "$d" vm destroy "$vm" >/dev/null 2>&1 || true
	"$ctl" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
}

echo "delta-migrate: $MEM soft guest, 1 vCPU, hotset $HOT% taking $SHARE% of" \
	"$RATE writes/s, $REPS reps, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-3s %3s | %9s %8s %8s %5s %8s %8s %6s | %s\n' content dlt rep \
	"wire MB" sent delta iters "total ms" "down ms" differ levels
touch "$TMP/rows"
for c in $CONTENTS; do
	for rep in $(seq "$REPS"); do
		order="on off"
		[ $((rep % 2)) = 0 ] && order="off on"
		for m in $order; do one "$c" "$m" "$rep"; done
	done
done
echo
echo "medians"
printf '%-6s %-3s | %9s %8s %8s %8s %8s\n' content dlt "wire MB" sent delta \
	"total ms" "down ms"
for c in $CONTENTS; do
	for m in on off; do
		awk -v c="$c" -v m="$m" '
		function med(a, k,   i, j, x) {
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
				if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
			return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
		}
		$1 == c && $2 == m { k++; w[k] = $5; p[k] = $6; dl[k] = $7; t[k] = $9; dt[k] = $10 }
		END { if (k) printf "%-6s %-3s | %9.2f %8d %8d %8d %8.1f\n", c, m,
			med(w, k), med(p, k), med(dl, k), med(t, k), med(dt, k) }' \
			"$TMP/rows"
	done
done
