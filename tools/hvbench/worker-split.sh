#!/usr/bin/env bash
# Worker process per VM against VMs inside the daemon: the migration
# matrix of tools/bench/migrate-matrix.sh (1 GiB, 2-vCPU KVM guest between
# two daemons on loopback, TLS, zstd, 2 channels, defaults) run with a
# baseline build (default commit 2cb854d, the last one before the split)
# and the current tree in ONE run. Per cell the two builds alternate
# (base, new, then new, base, ...) so that machine noise hits both. Every
# guest is fully populated first: it sweeps its whole region once
# unthrottled with the cell's content, then dirties at the cell's rate
# while it is migrated. Guest-seen downtime (the largest heartbeat gap) is
# "-" when the guest sent no heartbeat around the switchover: heartbeats
# come once per batch of 64 page writes, so at rate 0 (1 page/s) none.
# Prints one row per migration and, per cell, the medians of both builds
# and new/base ratios.
# Not a test: a benchmark (docs/benchmarks.md, "Worker process per VM").
#
# usage: tools/hvbench/worker-split.sh [BASE_COMMIT]   (default 2cb854d)
# env:   REPS=3 MEM=1G VCPUS=2 SETTLE=1 (s at the cell's rate before
#        migrating) CELLS="stamp:50 random:50" (content:MB/s of the
#        whole guest; 0 = 1 page/s per vCPU after the fill). The default
#        two cells x REPS=3 x 2 builds are the subset meant to take ~5
#        minutes; on this shared nested host at load average 11 they took
#        7.7 (the 1 GiB fill alone takes 15-45 s). The whole matrix:
#        CELLS="stamp:0 stamp:50 stamp:200 text:0 text:50 text:200
#        random:0 random:50 random:200" (about 45 minutes there).
#        BUILD=0 (use the existing builds) JOBS=2
#        NEW=build/release BASE=build/base-COMMIT (source tree of the
#        baseline, a detached git worktree; built in BASE/build/release)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
COMMIT=${1:-2cb854d}
REPS=${REPS:-3}
MEM=${MEM:-1G}
VCPUS=${VCPUS:-2}
SETTLE=${SETTLE:-1}
CELLS=${CELLS:-stamp:50 random:50}
JOBS=${JOBS:-2}
NEW=${NEW:-$top/build/release}
BASE=${BASE:-$top/build/base-$COMMIT}
BASEB=$BASE/build/release

command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }
command -v bc >/dev/null || { echo "needs bc" >&2; exit 1; }
[ -w /dev/kvm ] || { echo "needs /dev/kvm" >&2; exit 1; }

tools=(migrated migratectl migrate-send migrate-recv)
if [ "${BUILD:-1}" != 0 ]; then
	if [ ! -d "$BASE" ]; then
		git -C "$top" worktree add --detach "$BASE" "$COMMIT" >/dev/null ||
			{ echo "cannot check out $COMMIT in $BASE" >&2; exit 1; }
	fi
	for t in "$BASE:$BASEB" "$top:$NEW"; do
		src=${t%%:*} b=${t#*:}
		[ -f "$b/CMakeCache.txt" ] ||
			cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release >/dev/null
		extra=()
		[ -d "$src/migrated/vmm" ] && extra=(migrated-vmm)
		cmake --build "$b" -j"$JOBS" --target "${tools[@]}" "${extra[@]}" \
			>"$b/worker-split-build.log" 2>&1 ||
			{ echo "build in $b failed: $b/worker-split-build.log" >&2
			  exit 1; }
	done
fi
bin() { # build dir, tool -> path
	case $2 in
	migrated) echo "$1/migrated/daemon/migrated" ;;
	*) echo "$1/tools/$2/$2" ;;
	esac
}
for b in "$BASEB" "$NEW"; do
	for t in "${tools[@]}"; do
		[ -x "$(bin "$b" "$t")" ] ||
			{ echo "missing $(bin "$b" "$t") (build first)" >&2; exit 1; }
	done
done

TMP=$(mktemp -d /tmp/worker-split.XXXXXX)
PIDS=()
cleanup() {
	# Workers outlive their daemon: destroy the VMs first.
	for k in base new; do
		for r in src dst; do
			s=$TMP/$k-$r/control.sock
			[ -S "$s" ] || continue
			c=$(bin "$([ $k = base ] && echo "$BASEB" || echo "$NEW")" migratectl)
			for vm in $("$c" --socket "$s" vm list 2>/dev/null |
				    awk 'NR > 1 { print $1 }'); do
				"$c" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
			done
		done
	done
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] && { echo "logs kept in $TMP" >&2; return; }
	rm -rf "$TMP"
}
trap cleanup EXIT

start_daemon() { # build dir, name
	"$(bin "$1" migrated)" --state-dir "$TMP/$2" --dev-tls \
		--tls-dir "$TMP/tls-${2%-*}" --accel kvm --log-level info \
		>"$TMP/$2.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 200); do
		[ -S "$TMP/$2/control.sock" ] && return 0
		sleep 0.05
	done
	echo "daemon $2 did not start" >&2
	cat "$TMP/$2.log" >&2
	exit 1
}
# The second daemon of a pair must not race the first generating the CA.
start_daemon "$BASEB" base-src
start_daemon "$BASEB" base-dst
start_daemon "$NEW" new-src
start_daemon "$NEW" new-dst

# One migration: build kind, content, MB/s, rep -> a row in $TMP/rows.
n=0
one() {
	local k=$1 content=$2 rate=$3 rep=$4 b vm s d ctl t0 fill rc f ver pages
	[ "$k" = base ] && b=$BASEB || b=$NEW
	ctl=$(bin "$b" migratectl)
	s=$TMP/$k-src/control.sock
	d=$TMP/$k-dst/control.sock
	n=$((n + 1))
	vm=g$n
	"$ctl" --socket "$s" vm create "$vm" --mem "$MEM" --vcpus "$VCPUS" \
		--pattern sweep --content "$content" --heartbeat-us 2000 \
		>/dev/null
	t0=$(date +%s.%N)
	until "$ctl" --socket "$s" --json vm inspect "$vm" |
		jq -e '[.vcpus[].passes | tonumber] | min >= 1' >/dev/null; do
		sleep 0.1
	done
	fill=$(echo "$(date +%s.%N) - $t0" | bc)
	# MB/s of the whole guest -> 4 KiB pages/s per vCPU (0: 1 page/s).
	pages=$((rate * 1000000 / 4096 / VCPUS))
	[ "$pages" -gt 0 ] || pages=1
	"$ctl" --socket "$s" vm set-rate "$vm" "$pages" >/dev/null
	sleep "$SETTLE"
	port=$("$(bin "$b" migrate-recv)" --socket "$d" --name "$vm" 127.0.0.1:0)
	rc=0
	"$(bin "$b" migrate-send)" --socket "$s" --json "$vm" \
		"127.0.0.1:$port" >"$TMP/out.json" 2>"$TMP/err" || rc=$?
	ver=$(grep 'op=verify' "$TMP/$k-src.log" | tail -1 |
		sed -n 's/.*pages=\([0-9]*\) mismatches=\([0-9]*\).*/\2/p')
	if [ "$rc" != 0 ]; then
		printf '%-6s %3s %-4s %-7s %5s | FAILED rc=%s: %s\n' \
			"$content" "$rate" "$k" "$rep" "" "$rc" \
			"$(tail -1 "$TMP/out.json" | jq -r '.progress.message // empty' 2>/dev/null) $(cat "$TMP/err")"
		"$ctl" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
		return 0
	fi
	tail -1 "$TMP/out.json" | jq -r --arg c "$content" --arg r "$rate" \
		--arg k "$k" --arg n "$rep" --arg f "$(printf %.1f "$fill")" \
		--arg v "${ver:-?}" '
		.progress as $p |
		[$c, $r, $k, $n, $f,
		 (($p.elapsed_ns | tonumber) / 1e6 * 10 | round / 10),
		 (($p.downtime.total_ns | tonumber) / 1e6 * 10 | round / 10),
		 (($p.guest_downtime_ns // 0 | tonumber) as $g |
		  if $g > 0 then $g / 1e6 * 10 | round / 10 else "-" end),
		 $p.pages_sent, $p.iteration, $v] | @tsv' |
		awk -F'\t' '{ printf "%-6s %4s %-4s %3s | %6s %9s %9s %9s %8s %5s | %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11 }' |
		tee -a "$TMP/rows"
	"$(bin "$b" migratectl)" --socket "$d" vm destroy "$vm" >/dev/null || true
	"$ctl" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
}

echo "worker-split: base $COMMIT ($(git -C "$BASE" log -1 --format=%h)) vs new" \
	"$(git -C "$top" log -1 --format=%h)$(git -C "$top" diff --quiet HEAD -- migrated hvcore arch proto || echo +dirty);" \
	"$MEM, $VCPUS vCPUs, populated, $REPS reps, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %4s %-4s %3s | %6s %9s %9s %9s %8s %5s | %s\n' content MB/s \
	tree rep "fill s" "total ms" "down ms" "guest ms" sent iters differ
printf '%s\n' "$(printf '%.0s-' $(seq 86))"
touch "$TMP/rows"
for cell in $CELLS; do
	content=${cell%%:*} rate=${cell#*:}
	for rep in $(seq "$REPS"); do
		order="base new"
		[ $((rep % 2)) = 0 ] && order="new base"
		for k in $order; do
			one "$k" "$content" "$rate" "$rep"
		done
	done
done

echo
echo "medians (ratio = new / base; goal: no cell above 1.05)"
printf '%-6s %4s | %-22s | %-22s | %-22s | %s\n' "" "" "total ms" \
	"downtime ms" "guest-seen ms" "runs"
printf '%-6s %4s | %7s %7s %6s | %7s %7s %6s | %7s %7s %6s | %s\n' \
	content MB/s base new ratio base new ratio base new ratio "b/n"
for cell in $CELLS; do
	content=${cell%%:*} rate=${cell#*:}
	awk -v c="$content" -v r="$rate" '
	function med(a, n,   i, j, x) {
		if (!n) return "-"
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function ratio(a, b) { return (a == "-" || b == "-" || a == 0) ? "-" : sprintf("%.3f", b / a) }
	$1 == c && $2 == r && $3 == "base" { bt[++nb] = $7; bd[nb] = $8; if ($9 != "-") bg[++gb] = $9 }
	$1 == c && $2 == r && $3 == "new" { nt[++nn] = $7; nd[nn] = $8; if ($9 != "-") ng[++gn] = $9 }
	END {
		t1 = med(bt, nb); t2 = med(nt, nn)
		d1 = med(bd, nb); d2 = med(nd, nn)
		g1 = med(bg, gb); g2 = med(ng, gn)
		printf "%-6s %4s | %7s %7s %6s | %7s %7s %6s | %7s %7s %6s | %d/%d\n",
			c, r, t1, t2, ratio(t1, t2), d1, d2, ratio(d1, d2),
			g1, g2, ratio(g1, g2), nb, nn
	}' "$TMP/rows"
done
