#!/usr/bin/env bash
# The destination's two big costs, A/B in one run (docs/benchmarks.md,
# "Destination: backing and decode-time hashing"): a 1 GiB, 1-vCPU soft
# VM, fully populated (its sweep wrote every page once, then 1 page/s),
# migrated between two daemons on loopback (TLS, defaults) with
#   base    the baseline tree (memfd RAM, digest re-read at switchover)
#   m-rr    this tree, --backing memfd, MIGRATED_DST_DIGEST=reread
#   m-tab   this tree, --backing memfd, decode-time page hashes
#   a-rr    this tree, --backing anon,  MIGRATED_DST_DIGEST=reread
#   a-tab   this tree, --backing anon,  decode-time page hashes
# (the source VM and the destination daemon use the same backing). The
# variants alternate within each repetition so that machine noise hits
# all of them. Per run: total, downtime and the destination's verify and
# load parts, the first pass (elapsed at the first progress report after
# it ended: +- one report interval), and the destination worker's CPU
# seconds (user+sys, read right after the migration).
#
# usage: tools/hvbench/dest-speed.sh NEW_BUILD BASE_BUILD
# env:   REPS=3 MEM=1G CONTENTS="stamp text" VARIANTS="base m-rr m-tab
#        a-rr a-tab" IO_MS=60000 (every daemon's migration I/O timeout)
set -euo pipefail

NEW=${1:?NEW build dir}
BASE=${2:?BASE build dir}
REPS=${REPS:-3}
MEM=${MEM:-1G}
CONTENTS=${CONTENTS:-stamp text}
VARIANTS=${VARIANTS:-base m-rr m-tab a-rr a-tab}
# A memfd destination's first pass took more than the default 10 s I/O
# timeout on the loaded build machine (its IterAck waits for it).
IO_MS=${IO_MS:-60000}
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }

bin() { # build dir, tool
	case $2 in
	migrated) echo "$1/migrated/daemon/migrated" ;;
	*) echo "$1/tools/$2/$2" ;;
	esac
}
TMP=$(mktemp -d /tmp/dest-speed.XXXXXX)
PIDS=()
SOCKS=()
cleanup() {
	for e in "${SOCKS[@]}"; do
		b=${e%%|*} s=${e#*|}
		[ -S "$s" ] || continue
		for vm in $("$(bin "$b" migratectl)" --socket "$s" vm list \
			    2>/dev/null | awk 'NR > 1 { print $1 }'); do
			"$(bin "$b" migratectl)" --socket "$s" vm destroy "$vm" \
				>/dev/null 2>&1 || true
		done
	done
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] && { echo "logs kept in $TMP" >&2; return; }
	rm -rf "$TMP"
}
trap cleanup EXIT

start_daemon() { # build, name, env assignment, args...
	local b=$1 name=$2 env=$3
	shift 3
	env $env "$(bin "$b" migrated)" --state-dir "$TMP/$name" --dev-tls \
		--tls-dir "$TMP/tls" --accel soft --log-level info \
		--migration-io-timeout-ms "$IO_MS" "$@" \
		>"$TMP/$name.log" 2>&1 &
	PIDS+=("$!")
	SOCKS+=("$b|$TMP/$name/control.sock")
	for _ in $(seq 200); do
		[ -S "$TMP/$name/control.sock" ] && return 0
		sleep 0.05
	done
	echo "daemon $name did not start" >&2
	cat "$TMP/$name.log" >&2
	exit 1
}
start_daemon "$BASE" base-src ""
start_daemon "$BASE" base-dst ""
start_daemon "$NEW" new-src ""
start_daemon "$NEW" m-rr-dst "MIGRATED_DST_DIGEST=reread" --backing memfd
start_daemon "$NEW" m-tab-dst "" --backing memfd
start_daemon "$NEW" a-rr-dst "MIGRATED_DST_DIGEST=reread" --backing anon
start_daemon "$NEW" a-tab-dst "" --backing anon

n=0
one() { # variant content rep
	local k=$1 content=$2 rep=$3 b s d ctl vm back=() port rc pid cpu
	if [ "$k" = base ]; then
		b=$BASE s=$TMP/base-src/control.sock
	else
		b=$NEW s=$TMP/new-src/control.sock
		case $k in m-*) back=(--backing memfd) ;; *) back=(--backing anon) ;; esac
	fi
	d=$TMP/$k-dst/control.sock
	ctl=$(bin "$b" migratectl)
	n=$((n + 1))
	vm=d$n
	"$ctl" --socket "$s" vm create "$vm" --accel soft --mem "$MEM" \
		--vcpus 1 --pattern sweep --content "$content" \
		--heartbeat-us 2000 "${back[@]}" >/dev/null
	until "$ctl" --socket "$s" --json vm inspect "$vm" |
		jq -e '[.vcpus[].passes | tonumber] | min >= 1' >/dev/null; do
		sleep 0.2
	done
	"$ctl" --socket "$s" vm set-rate "$vm" 1 >/dev/null
	sleep 0.5
	port=$("$(bin "$b" migrate-recv)" --socket "$d" --name "$vm" 127.0.0.1:0)
	rc=0
	"$(bin "$b" migrate-send)" --socket "$s" --json "$vm" \
		"127.0.0.1:$port" >"$TMP/out.json" 2>"$TMP/err" || rc=$?
	pid=$("$ctl" --socket "$d" --json vm inspect "$vm" 2>/dev/null |
		jq -r '.info.worker_pid // 0' || true)
	cpu=-
	if [ -r "/proc/$pid/stat" ]; then
		cpu=$(awk -v t="$(getconf CLK_TCK)" \
			'{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' \
			"/proc/$pid/stat")
	fi
	if [ "$rc" != 0 ]; then
		printf '%-6s %-5s %3s | FAILED rc=%s: %s\n' "$content" "$k" \
			"$rep" "$rc" "$(cat "$TMP/err")"
	else
		# Pass 1 is iteration 0; its end (the destination's IterAck)
		# shows as the first report of a later iteration or phase.
		first=$(jq -rs '[.[] | select((.progress.iteration // 0) >= 1)
			| .progress.elapsed_ns | tonumber][0] // 0' \
			"$TMP/out.json")
		tail -1 "$TMP/out.json" | jq -r --arg c "$content" --arg k "$k" \
			--arg n "$rep" --arg cpu "$cpu" --arg f "$first" '
			.progress as $p | $p.downtime as $d |
			def ms: (tonumber / 1e6 * 10 | round / 10);
			[$c, $k, $n, ($p.elapsed_ns | ms), ($f | ms),
			 ($d.total_ns | ms), ($d.dst_verify_ns // 0 | ms),
			 ($d.dst_load_ns // 0 | ms), $cpu,
			 ($p.verify_mismatches // 0)] | @tsv' |
			awk -F'\t' '{ printf "%-6s %-5s %3s | %8s %8s | %8s %8s %8s | %6s | %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10 }' |
			tee -a "$TMP/rows"
	fi
	"$ctl" --socket "$d" vm destroy "$vm" >/dev/null 2>&1 || true
	"$ctl" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
}

echo "dest-speed: $MEM, 1 vCPU, soft, populated, $REPS reps," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-5s %3s | %8s %8s | %8s %8s %8s | %6s | %s\n' content var \
	rep "total ms" "pass1 ms" "down ms" "verify" "load" "dstcpu" "mism"
touch "$TMP/rows"
for content in $CONTENTS; do
	for rep in $(seq "$REPS"); do
		for k in $VARIANTS; do
			one "$k" "$content" "$rep"
		done
	done
done
echo
echo "medians"
printf '%-6s %-5s | %8s %8s | %8s %8s %8s | %6s | %s\n' content var \
	"total ms" "pass1 ms" "down ms" "verify" "load" "dstcpu" runs
for content in $CONTENTS; do
	for k in $VARIANTS; do
		awk -v c="$content" -v k="$k" '
		function med(a, n,   i, j, x) {
			if (!n) return "-"
			for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		$1 == c && $2 == k { n++; t[n] = $5; f[n] = $6; d[n] = $8; v[n] = $9; l[n] = $10; u[n] = $12 }
		END { printf "%-6s %-5s | %8s %8s | %8s %8s %8s | %6s | %d\n", c, k, med(t, n), med(f, n), med(d, n), med(v, n), med(l, n), med(u, n), n }' "$TMP/rows"
	done
done
