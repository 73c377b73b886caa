#!/usr/bin/env bash
# The destination's cost of fresh memory (issue 28), A/B in one run with
# the same binaries: one source daemon and one destination daemon per
# variant, both started with the variant's environment (VARIANTS; by default
# "old" with our defaults and "new" with MIGRATED_DST_PREFAULT=on, the
# receive pipeline's prefault helper). Each rep migrates a freshly
# created, fully prefilled, idle VM to every variant in turn (the order
# rotates from rep to rep), on loopback with our defaults, and checks
# every page on the destination (migratectl vm check). Prints one row per
# migration, then the medians per cell, each variant against the first.
# Not a test: a benchmark (docs/benchmarks.md, "Fresh memory on the
# destination").
#
# usage: tools/bench/fresh-mem-ab.sh [BUILD_DIR]   (default build/release)
# env:   ACCEL=soft|kvm (soft where /dev/kvm is missing) MEMS="1G"
#        CONTENTS="stamp random" REPS=3
#        SETTLE=10 seconds between the prefill and the migration
#        VARIANTS="old new:MIGRATED_DST_PREFAULT=on": NAME[:VAR=VAL[,VAR=VAL]]
#          each; the first is the baseline of the medians' ratios
#          BENCH_BUILD=DIR in a variant's list: its two daemons are
#          DIR/migrated/daemon/migrated (and the worker beside it), e.g. a
#          baseline build; the tools are always BUILD_DIR's.
#          A variant whose list holds BENCH_WARM=1 (also passed to its
#          daemon, where nothing reads it) gets recycled memory instead:
#          right before its migrate-recv, a helper maps, populates and
#          frees as much memory as the guest has (tools/bench/fresh_touch.c),
#          so that the destination's first touch mostly reuses pages the
#          hypervisor still backs: the engine's own cost, without the
#          machine's (see "Fresh memory" in docs/benchmarks.md).
#        OUT=DIR: keep each migration's migrate-send --json lines there
#        PERF=DIR: perf record -e cpu-clock -a -g over each migration into
#          DIR/<mem>-<content>-<variant>-<rep>.data
#
# Fresh memory: on a nested host whose guest kernel hands free memory back
# to the hypervisor (virtio-balloon free page reporting: free 2 MiB blocks
# are reported after about 2 s and the host drops them), the first touch
# of such memory faults at the hypervisor too, and memory freed a moment
# ago (the previous run's VMs) is much cheaper than memory free for
# seconds. SETTLE lets the previous run's memory go back, so that both
# sides start from the same kind of memory, and the order alternates
# (old first in odd reps, new first in even ones).
#
# Columns: total = the engine's elapsed; down = its downtime (sum of
# parts); wire = MiB on the wire; usr d / sys d = user and system CPU
# seconds of the destination's worker (migrated-vmm) over the migration,
# the system time being mostly first-touch faults; thp d = the worker's
# AnonHugePages (MiB) at the end; check = migratectl vm check; thp
# faults = huge pages allocated by faults machine-wide over the migration.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
MEMS=${MEMS:-1G}
CONTENTS=${CONTENTS:-stamp random}
REPS=${REPS:-3}
SETTLE=${SETTLE:-10}
if [ -z "${ACCEL:-}" ]; then
	ACCEL=soft
	[ -w /dev/kvm ] && ACCEL=kvm
fi
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
SEND=$B/tools/migrate-send/migrate-send
RECV=$B/tools/migrate-recv/migrate-recv
for t in "$MIGRATED" "$CTL" "$SEND" "$RECV"; do
	[ -x "$t" ] || { echo "missing $t (build first)" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }

source "$top/tools/bench/lib.sh"
bench_init fresh-mem-ab
cc -O2 -pthread -o "$TMP/fresh_touch" "$top/tools/bench/fresh_touch.c"

# One after the other: the first makes the dev CA.
VARIANTS=${VARIANTS:-old new:MIGRATED_DST_PREFAULT=on}
NAMES=()
for v in $VARIANTS; do
	name=${v%%:*}
	envs=()
	if [ "$name" != "$v" ]; then
		IFS=, read -r -a envs <<<"${v#*:}"
	fi
	case $name in
	'' | [0-9]* | *[!A-Za-z0-9_]*)
		echo "variant name '$name': letters, digits, _ only" >&2
		exit 2
		;;
	esac
	printf -v "WARM_$name" %s 0
	mig=$MIGRATED
	for e in ${envs[@]+"${envs[@]}"}; do
		case $e in
		BENCH_WARM=1) printf -v "WARM_$name" %s 1 ;;
		BENCH_BUILD=*) mig=${e#BENCH_BUILD=}/migrated/daemon/migrated ;;
		esac
	done
	MIGRATED=$mig bench_start_daemon "src-$name" env ${envs[@]+"${envs[@]}"}
	MIGRATED=$mig bench_start_daemon "$name" env ${envs[@]+"${envs[@]}"}
	printf -v "DP_$name" %s "$DPID"
	NAMES+=("$name")
done
[ -n "${PERF:-}" ] && mkdir -p "$PERF"

HZ=$(getconf CLK_TCK)
ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
# Huge pages allocated by faults, machine-wide (512 per GiB when each is
# allocated once; more when two threads fault the same one at once and
# the loser frees its zeroed page).
thp_allocs() { awk '/^thp_fault_alloc / { print $2 }' /proc/vmstat; }
thp_mib() { awk '/^AnonHugePages:/ { k += $2 } END { print int(k / 1024) }' \
	"/proc/$1/smaps"; }

RUNN=0
one() { # mode mem content rep
	local mode=$1 mem=$2 content=$3 rep=$4 vm dp d before port dpid
	local u0 s0 u1 s1 thp chk f f0 thpf warm S
	RUNN=$((RUNN + 1))
	vm=f$RUNN
	dp=DP_$mode
	dp=${!dp}
	d=$TMP/$mode/control.sock
	S=$TMP/src-$mode/control.sock
	"$CTL" --socket "$S" vm create "$vm" --mem "$mem" --vcpus 1 \
		--content "$content" --pattern idle --prefill >/dev/null
	until "$CTL" --socket "$S" --json vm inspect "$vm" |
		jq -e '.prefill_done == true' >/dev/null; do
		sleep 0.2
	done
	sleep "$SETTLE"
	warm=WARM_$mode
	if [ "${!warm}" = 1 ]; then
		"$TMP/fresh_touch" "$(numfmt --from=iec "$mem" |
			awk '{ print int($1 / 1048576) }')" 1 2 >/dev/null
	fi
	before=$(pgrep -P "$dp" | sort || true)
	port=$("$RECV" --socket "$d" --name "$vm" "127.0.0.1:0")
	dpid=$(comm -13 <(echo "$before") <(pgrep -P "$dp" | sort || true) |
		head -1)
	read -r u0 s0 < <(ticks "$dpid")
	f0=$(thp_allocs)
	if [ -n "${PERF:-}" ]; then
		perf record -q -e cpu-clock -a -g \
			-o "$PERF/$mem-$content-$mode-$rep.data" -- \
			"$SEND" --socket "$S" --json "$vm" "127.0.0.1:$port" \
			>"$TMP/out.json" 2>"$TMP/perf.err"
	else
		"$SEND" --socket "$S" --json "$vm" "127.0.0.1:$port" \
			>"$TMP/out.json"
	fi
	read -r u1 s1 < <(ticks "$dpid")
	thpf=$(($(thp_allocs) - f0))
	thp=$(thp_mib "$dpid")
	if "$CTL" --socket "$d" vm check "$vm" >"$TMP/check" 2>&1; then
		chk=ok
	else
		chk=BAD
	fi
	chk="$chk/$(sed -n 's/.*: \([0-9]*\) pages checked.*/\1/p' \
		"$TMP/check")"
	f=$(tail -1 "$TMP/out.json")
	[ -n "${OUT:-}" ] && mkdir -p "$OUT" &&
		cp "$TMP/out.json" "$OUT/$mem-$content-$mode-$rep.json"
	echo "$f" | jq -r --arg pre "$mem $content $mode $rep" \
		--arg ud "$(echo "scale=2; ($u1 - $u0) / $HZ" | bc)" \
		--arg sd "$(echo "scale=2; ($s1 - $s0) / $HZ" | bc)" \
		--arg thp "$thp" --arg chk "$chk" --arg thpf "$thpf" '
		def ms: (tonumber? // 0) / 1e6 | . * 10 | round / 10;
		.progress as $p |
		[$pre, ($p.elapsed_ns | ms), ($p.downtime.total_ns | ms),
		 (($p.bytes_wire | tonumber) / 1048576 * 10 | round / 10),
		 $ud, $sd, $thp, $chk, $thpf] | join(" ")' | tee -a "$TMP/rows"
	"$CTL" --socket "$d" vm destroy "$vm" >/dev/null || true
	"$CTL" --socket "$S" vm destroy "$vm" >/dev/null 2>&1 || true
}

echo "fresh-mem-ab: $ACCEL accelerator, loopback, REPS=$REPS;" \
	"$(git -C "$top" log -1 --format=%h 2>/dev/null || echo '?');" \
	"SETTLE=${SETTLE}s; $(nproc) CPUs, load $(cut -d" " -f1-3 /proc/loadavg)"
echo "mem content mode rep | total ms | down ms | wire MiB | usr d | sys d" \
	"| thp d MiB | check | thp faults"
for mem in $MEMS; do
	for content in $CONTENTS; do
		for rep in $(seq "$REPS"); do
			nv=${#NAMES[@]}
			for k in $(seq 0 $((nv - 1))); do
				one "${NAMES[$(((k + rep - 1) % nv))]}" \
					"$mem" "$content" "$rep"
			done
		done
	done
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "medians of $REPS: mem content variant | total ms (/ ${NAMES[0]})" \
	"| down ms | usr d | sys d | thp d MiB"
awk -v names="${NAMES[*]}" '
function med(s,   n, a, i, j, x) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	c = $1 " " $2
	if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
	t[c, $3] = t[c, $3] " " $5; dn[c, $3] = dn[c, $3] " " $6
	us[c, $3] = us[c, $3] " " $8; sy[c, $3] = sy[c, $3] " " $9
	th[c, $3] = th[c, $3] " " $10
}
END {
	nn = split(names, nm, " ")
	for (i = 1; i <= nc; i++) {
		c = order[i]
		t0 = med(t[c, nm[1]])
		for (k = 1; k <= nn; k++) {
			v = nm[k]; tv = med(t[c, v])
			printf "%s %s | %s (%.2f) | %s | %s | %s | %s\n", c, v, tv,
				(t0 > 0 ? tv / t0 : 0), med(dn[c, v]), med(us[c, v]),
				med(sy[c, v]), med(th[c, v])
		}
	}
}' "$TMP/rows"
