#!/usr/bin/env bash
# Snapshots, migrated against QEMU 7.2, side by side in one run (issue 29,
# "Benchmark"; docs/benchmarks.md, "snapshot"). The SAME guest image
# (build/.../arch/x86/guest/guest.elf), fully populated first (the guest
# writes every page of its region once, CONTENT bytes, then runs RATE),
# saved to a file and restored from it:
#
#   ours:  migratectl vm snapshot (live: precopy passes into the sparse
#          memory file, a short pause for the last pass and the state);
#          "stopped": vm pause, vm snapshot, vm resume; restore: vm
#          destroy, then migratectl vm restore (a new worker, every page
#          read and verified against its hash, the VM started).
#   QEMU:  migrate to "exec:cat > FILE" (live: QEMU's precopy, its
#          downtime, then cont; stopped: stop, migrate, cont), with
#          max-bandwidth 10 GB/s; restore: a QEMU started with -incoming
#          defer, migrate-incoming "exec:cat FILE" until it runs
#          (tools/bench/snapqemu.py). QEMU 7.2 has no file: URI, no
#          mapped-ram and no background-snapshot on TCG.
#
# Per run: snap ms (ours: the engine's duration, fsyncs and rename
# included; QEMU: total-time, or migrate's wall time when stopped, plus an
# fsync of the file, which QEMU does not do itself), pause
# ms (ours live: the reported pause; QEMU live: its downtime; stopped:
# from the pause/stop call to the guest running again, calls included),
# MiB on disk (allocated blocks: ours sparse, QEMU a stream), restore ms
# (ours: the vm restore call, worker start included; QEMU: migrate-incoming
# to running, its process started before). The files are in the page
# cache on both sides (no cache drop). Medians of REPS, and ratios.
#
# usage: tools/bench/snapshot-vs-qemu.sh [BUILD_DIR]  (default build/release)
# env:   MEMS="256M 1G"  REPS=3  CONTENT=random (stamp text random)
#        RATE=idle (idle, or MiB/s of page writes during the snapshot)
#        HB_US=2000  KEEP=1 (keep TMP)
# The soft accelerator against QEMU TCG (ACCEL=kvm where /dev/kvm is:
# against QEMU -accel kvm).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
ME=snapshot-vs-qemu
REPS=${REPS:-3}
MEMS=${MEMS:-256M 1G}
CONTENT=${CONTENT:-random}
RATE=${RATE:-idle}
HB_US=${HB_US:-2000}
LINKS=lo
PATTERN=sweep
# shellcheck source=tools/bench/lib_vsq.sh
. "$top/tools/bench/lib_vsq.sh"
vsq_init
SQ="python3 $top/tools/bench/snapqemu.py"

bench_start_daemon d
DSOCK=$TMP/d/control.sock
ctl() { "$CTL" --socket "$DSOCK" "$@"; }
now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
ms_of_ns() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1e6 }'; }
blocks() { stat -c '%b %B' "$@" | awk '{ s += $1 * $2 } END { print s }'; }

# Row: mem side mode rep snap_ms pause_ms mib restore_ms
row() { echo "$*" >>"$TMP/rows"; echo "$*"; }

ours() { # mem rep
	local mem=$1 rep=$2 vm=s$2 j t0 t1 t2 r
	# shellcheck disable=SC2046 # ours_wl's words
	ctl vm create "$vm" --mem "$mem" --vcpus 1 --content "$CONTENT" \
		$(ours_wl "$RATE") --heartbeat-us "$HB_US" --prefill >/dev/null
	ours_wait_prefill "$DSOCK" "$vm" || return 0
	rm -rf "$TMP/snap" "$TMP/snap2"
	j=$(ctl --json vm snapshot "$vm" "$TMP/snap")
	ctl vm destroy "$vm" >/dev/null
	t0=$(now_ms)
	ctl vm restore "$vm" "$TMP/snap" >/dev/null
	t1=$(now_ms)
	r=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	row "$mem ours live $rep $(ms_of_ns "$(jq -r .duration_ns <<<"$j")")" \
		"$(ms_of_ns "$(jq -r .pause_ns <<<"$j")")" \
		"$(mib "$(jq -r .file_bytes <<<"$j")") $r"
	t0=$(now_ms)
	ctl vm pause "$vm" >/dev/null
	j=$(ctl --json vm snapshot "$vm" "$TMP/snap2")
	ctl vm resume "$vm" >/dev/null
	t2=$(now_ms)
	row "$mem ours stopped $rep $(ms_of_ns "$(jq -r .duration_ns <<<"$j")")" \
		"$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')" \
		"$(mib "$(jq -r .file_bytes <<<"$j")") -"
	ctl vm check "$vm" >"$TMP/check" 2>&1 ||
		echo "$ME: ours $mem rep $rep: the restored VM's check failed:" \
			"$(cat "$TMP/check")" >&2
	ctl vm destroy "$vm" >/dev/null
	rm -rf "$TMP/snap" "$TMP/snap2"
}

qemu_side() { # mem rep
	local mem=$1 rep=$2 j l
	qemu_boot "$mem" "$CONTENT" "$RATE" || return 0
	rm -f "$TMP/q.snap" "$TMP/q2.snap"
	j=$($SQ save "$TMP/src.qmp" "$TMP/q.snap" live)
	l=$($SQ load "$TMP/dst.qmp" "$TMP/q.snap")
	row "$mem qemu live $rep $(jq -r .total_ms <<<"$j") $(jq -r .pause_ms <<<"$j")" \
		"$(mib "$(blocks "$TMP/q.snap")") $(jq -r .load_ms <<<"$l")"
	j=$($SQ save "$TMP/src.qmp" "$TMP/q2.snap" stopped)
	row "$mem qemu stopped $rep $(jq -r .total_ms <<<"$j") $(jq -r .pause_ms <<<"$j")" \
		"$(mib "$(blocks "$TMP/q2.snap")") -"
	qemu_end
	rm -f "$TMP/q.snap" "$TMP/q2.snap"
}

echo "# $(vsq_what "the soft accelerator against TCG")"
echo "# content=$CONTENT rate=$RATE reps=$REPS load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# mem side mode rep snap_ms pause_ms MiB restore_ms"
for mem in $MEMS; do
	for rep in $(seq "$REPS"); do
		ours "$mem" "$rep"
		qemu_side "$mem" "$rep"
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Medians per (mem, side, mode), then ours/QEMU ratios.
awk "$VSQ_AWK_MED"'
{ k = $1 " " $2 " " $3; s[k] = s[k] " " $5; p[k] = p[k] " " $6
  m[k] = m[k] " " $7; if ($8 != "-") r[k] = r[k] " " $8; mems[$1] = 1 }
function rat(a, b) { return (a == "-" || b == "-" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
END {
	printf "\n| RAM | mode | side | snapshot ms | pause ms | MiB on disk | restore ms |\n"
	printf "|---|---|---|---|---|---|---|\n"
	for (mm in mems) for (i = 1; i <= 2; i++) {
		mode = i == 1 ? "live" : "stopped"
		for (j = 1; j <= 2; j++) {
			side = j == 1 ? "ours" : "qemu"; k = mm " " side " " mode
			if (!(k in s)) continue
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", mm, mode,
				side, med(s[k]), med(p[k]), med(m[k]), med(r[k])
		}
		a = mm " ours " mode; b = mm " qemu " mode
		printf "| %s | %s | ours/QEMU | %s | %s | %s | %s |\n", mm, mode,
			rat(med(s[a]), med(s[b])), rat(med(p[a]), med(p[b])),
			rat(med(m[a]), med(m[b])), rat(med(r[a]), med(r[b]))
	}
}' "$TMP/rows"
