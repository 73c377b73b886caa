#!/usr/bin/env bash
# Postcopy, migrated against QEMU 7.2, side by side in one run: the SAME
# guest image (build/.../arch/x86/guest/guest.elf) with the SAME workload,
# fully populated before the migration (prefill), migrated five ways:
#   ours-pre     our defaults (precopy, auto-throttle);
#   ours-pc0     migrate-send --postcopy-after 0 (postcopy once the first
#                pass ended);
#   ours-pcauto  migrate-send --postcopy-after auto (switch when the
#                convergence model says precopy will not make it);
#   q-autoconv   QEMU precopy with the auto-converge capability;
#   q-postcopy   QEMU postcopy-ram on both sides, migrate-start-postcopy
#                once the first pass is over (dirty-sync-count >= 2).
# Prints one row per migration, then per cell the medians and the three
# postcopy goals as ratios. Not a test: a benchmark
# (docs/benchmarks.md, "Postcopy against QEMU").
#
# usage: tools/bench/postcopy-vs-qemu.sh [BUILD_DIR]  (default build/release)
# env:   ACCEL=kvm|soft   as vs-qemu.sh (soft + QEMU TCG without /dev/kvm;
#                         the header says which)
#        REPS=1           runs per cell and variant (medians)
#        MEMS="1G"        guest RAM (4G allowed; see vs-qemu.sh on microvm)
#        CONTENTS="random text"
#        RATES="max 200"  max (unthrottled sweep) or MiB/s of page writes
#        LINKS="lo 1g"    lo, 1g, 10g (veth + tc tbf, as vs-qemu.sh)
#        VARIANTS="ours-pre ours-pc0 ours-pcauto q-autoconv q-postcopy"
#        QBW=10G          QEMU's max-bandwidth (bytes/s, K/M/G suffix; ours
#                         has no cap by default; "default": QEMU's own)
#        SETTLE=1 HB_US=2000 QTIMEOUT=120 PATTERN=sweep KEEP=1 as vs-qemu.sh
# The defaults took 38 min on a 2-core machine at load 6-12 (2026-12-02).
#
# Figures per run:
#  total ms   ours: the engine's elapsed (in postcopy to the last page);
#             QEMU: query-migrate total-time.
#  pc ms      the postcopy phase, switch to last page (ours:
#             pc_last_page_ns; QEMU: migrate-start-postcopy to completed).
#  down       the reported switch downtime (ours: the engine's sum of
#             parts; QEMU: query-migrate downtime).
#  guest      guest-seen switch downtime: the source's last heartbeat to
#             the destination's first, host-timestamped (ours: the
#             engine's guest_downtime_ns, in postcopy from the
#             destination's PostcopyDone; "-" when none;
#             QEMU: vsqemu.py gap).
#  flt p50/p99/max us  postcopy page-fault latency, a page's first fault
#             to its install (ours: the destination's fault thread,
#             migrate-send --json pc_fault_*, from a histogram of 4
#             buckets per power of two; QEMU: the destination's trace, a
#             page's first postcopy_ram_fault_thread_request to its
#             postcopy_place_page[_zero], by host address).
#  asked      pages the destination asked the source for (ours: its
#             worker's op=postcopy_in line in the daemon's log; QEMU:
#             query-migrate postcopy-requests).
#  wr/s bf    page writes per second over SETTLE s before the migration.
#  during     page writes per second from the migration's start to its
#             end (ours: vm inspect vcpus[0].seq on the source before and
#             on the destination after; QEMU: the seq of the heartbeat
#             lines, the source's last before to the destination's last
#             before). keep% = during / bf.
#  maxgap     the largest gap between two heartbeats on the destination
#             (ours: vm inspect max_heartbeat_gap_us; QEMU: the heartbeat
#             log): the guest's longest stall after the switch.
#  wire MB    ours: bytes_wire; QEMU: ram transferred.
#  check      every page's stamp on the destination (ours: migratectl vm
#             check; QEMU: pmemsave + hvbench wlcheck).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
ME=postcopy-vs-qemu
REPS=${REPS:-1}
MEMS=${MEMS:-1G}
CONTENTS=${CONTENTS:-random text}
RATES=${RATES:-max 200}
LINKS=${LINKS:-lo 1g}
VARIANTS=${VARIANTS:-ours-pre ours-pc0 ours-pcauto q-autoconv q-postcopy}
QBW=${QBW:-10G}
SETTLE=${SETTLE:-1}
HB_US=${HB_US:-2000}
QTIMEOUT=${QTIMEOUT:-120}
PATTERN=${PATTERN:-sweep}
# shellcheck source=tools/bench/lib_vsq.sh
. "$top/tools/bench/lib_vsq.sh"
vsq_init
case $QBW in
default) QBW_B= ;;
*[Gg]) QBW_B=$(( ${QBW%[Gg]} << 30 )) ;;
*[Mm]) QBW_B=$(( ${QBW%[Mm]} << 20 )) ;;
*[Kk]) QBW_B=$(( ${QBW%[Kk]} << 10 )) ;;
*) QBW_B=$QBW ;;
esac
TRACE_EV="postcopy_ram_fault_thread_request postcopy_place_page"
TRACE_EV+=" postcopy_place_page_zero"

now_ns() { date +%s%N; }

# Row fields: link mem content rate variant rep mode total pc-ms down
# guest fp50 fp99 fmax asked wr-before wr-during keep% maxgap wire check
HDR='%-4s %-4s %-6s %-4s %-11s %2s %-3s | %8s %7s %6s %6s |'
HDR+=' %7s %7s %8s %6s | %7s %7s %5s %7s | %7s | %s\n'
print_row() {
	awk -v f="$HDR" '{ printf f, $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21 }'
}

fail_row() { # words... -> one line in $TMP/failed and on stderr
	printf '%s\n' "$@" | paste -sd' ' | tee -a "$TMP/failed" >&2
}

keep_pct() { # before during
	case "$1/$2" in
	*-*|0/*) echo - ;;
	*) echo "scale=0; $2 * 100 / $1" | bc ;;
	esac
}

# One migration of ours -> a row in $TMP/rows.
RUNN=0
ours() { # link mem content rate rep variant
	local link=$1 mem=$2 content=$3 rate=$4 rep=$5 v=$6 vm s d rc=0
	local port f chk seq0 seq1 seq2 t0 t1 t2 wr during gapus flags=()
	local dasked
	RUNN=$((RUNN + 1))
	vm=p$RUNN
	s=$DSOCK_S d=$DSOCK_D
	case $v in
	ours-pc0) flags=(--postcopy-after 0) ;;
	ours-pcauto) flags=(--postcopy-after auto) ;;
	esac
	# shellcheck disable=SC2046 # ours_wl's words
	"$CTL" --socket "$s" vm create "$vm" --mem "$mem" --vcpus 1 \
		--content "$content" $(ours_wl "$rate") --heartbeat-us "$HB_US" \
		--prefill >/dev/null
	ours_wait_prefill "$s" "$vm" || return 0
	t0=$(now_ns)
	seq0=$("$CTL" --socket "$s" --json vm inspect "$vm" |
		jq '.vcpus[0].seq | tonumber')
	sleep "$SETTLE"
	port=$("$RECV" --socket "$d" --name "$vm" "$DST_IP:0")
	t1=$(now_ns)
	seq1=$("$CTL" --socket "$s" --json vm inspect "$vm" |
		jq '.vcpus[0].seq | tonumber')
	"$SEND" --socket "$s" --json "${flags[@]}" "$vm" "$DST_IP:$port" \
		>"$TMP/out.json" 2>"$TMP/err" || rc=$?
	f=$(tail -1 "$TMP/out.json")
	if [ "$rc" != 0 ]; then
		fail_row "$link $mem $content $rate $v $rep FAILED rc=$rc" \
			"$(echo "$f" | jq -r '.progress.message // empty' \
			2>/dev/null)" "$(grep -v 'warning: postcopy enabled' \
			"$TMP/err" || true)"
		"$CTL" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
		"$CTL" --socket "$d" vm destroy "$vm" >/dev/null 2>&1 || true
		return 0
	fi
	# The destination lists the VM once its worker's event arrived.
	for _ in $(seq 100); do
		"$CTL" --socket "$d" --json vm inspect "$vm" >"$TMP/dinsp" \
			2>/dev/null && break
		sleep 0.1
	done
	t2=$(now_ns)
	seq2=$(jq '.vcpus[0].seq | tonumber' "$TMP/dinsp" 2>/dev/null || echo -)
	gapus=$(jq '.vcpus[0].max_heartbeat_gap_us | tonumber' \
		"$TMP/dinsp" 2>/dev/null || echo -)
	wr=$(( (seq1 - seq0) * 1000000000 / (t1 - t0) ))
	during=-
	[ "$seq2" != - ] &&
		during=$(( (seq2 - seq1) * 1000000000 / (t2 - t1) ))
	# The destination's count of pages its faults asked for (the
	# source's pc_pages_requested leaves out those it had pushed).
	dasked=
	if [ "$(echo "$f" | jq '.progress.postcopy // false')" = true ]; then
		for _ in $(seq 50); do
			dasked=$(grep "op=postcopy_in port=$port " \
				"$TMP/dst-$link.log" | tail -1 |
				sed -n 's/.* asked=\([0-9]*\) .*/\1/p' || true)
			[ -n "$dasked" ] && break
			sleep 0.1
		done
	fi
	if "$CTL" --socket "$d" vm check "$vm" >"$TMP/check" 2>&1; then
		chk=ok
	else
		chk=BAD
	fi
	chk="$chk/$(sed -n 's/.*: \([0-9]*\) pages checked.*/\1/p' \
		"$TMP/check")"
	echo "$f" | jq -r --arg pre "$link $mem $content $rate $v $rep" \
		--arg wr "$wr" --arg du "$during" \
		--arg keep "$(keep_pct "$wr" "$during")" --arg gap "$gapus" \
		--arg chk "$chk" --arg dasked "$dasked" '
		def num: tonumber? // 0;
		def ms: num / 1e6 | . * 10 | round / 10;
		def us: num / 1e3 | round;
		.progress as $p | ($p.postcopy // false) as $pc |
		# No fault at all: no latency figures (not zeros).
		($pc and ($p.pc_fault_max_ns | num) > 0) as $flt |
		[$pre, (if $pc then "pc" else "pre" end),
		 ($p.elapsed_ns | ms),
		 (if $pc then ($p.pc_last_page_ns | ms) else "-" end),
		 ($p.downtime.total_ns | ms),
		 (if ($p.guest_downtime_ns | num) > 0
		  then ($p.guest_downtime_ns | ms) else "-" end),
		 (if $flt then ($p.pc_fault_p50_ns | us) else "-" end),
		 (if $flt then ($p.pc_fault_p99_ns | us) else "-" end),
		 (if $flt then ($p.pc_fault_max_ns | us) else "-" end),
		 (if $pc|not then "-" elif $dasked != "" then $dasked
		  else ($p.pc_pages_requested | num) end),
		 $wr, $du, $keep,
		 (if $gap == "-" then "-"
		  else ($gap | num / 100 | round / 10) end),
		 (($p.bytes_wire | num) / 1048576 * 10 | round / 10), $chk] |
		map(tostring) | join(" ")' >>"$TMP/rows"
	tail -1 "$TMP/rows" | print_row
	"$CTL" --socket "$d" vm destroy "$vm" >/dev/null || true
	"$CTL" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
}

# One QEMU migration -> a row in $TMP/rows.
qemu_run() { # link mem content rate rep variant
	local link=$1 mem=$2 content=$3 rate=$4 rep=$5 v=$6 set j rc=0
	local gap chk wr du fl mode e pcms
	RUNN=$((RUNN + 1))
	QEXTRA_DST=()
	case $v in
	q-autoconv) set=autoconverge ;;
	q-postcopy)
		set=postcopy
		rm -f "$TMP/dst.trace"
		for e in $TRACE_EV; do QEXTRA_DST+=(-trace "enable=$e"); done
		QEXTRA_DST+=(-trace "file=$TMP/dst.trace" -msg timestamp=on)
		;;
	esac
	qemu_boot "$mem" "$content" "$rate" || return 0
	sleep "$SETTLE"
	wr=$($PY rate "$TMP/hb.log" "$SETTLE" || true)
	j=$($PY migrate "$TMP/src.qmp" "$TMP/dst.qmp" \
		"tcp:$DST_IP:$((47000 + RUNN % 1000))" "$set" "$QTIMEOUT" \
		"$QBW_B") || rc=$?
	if [ "$rc" != 0 ]; then
		fail_row "$link $mem $content $rate $v $rep FAILED" \
			"$(echo "$j" | jq -r '.status + " " +
			(."error-desc" // "")' 2>/dev/null)" \
			"$(tail -2 "$TMP/dst.serial" "$TMP/dst.qemu.log" \
			2>/dev/null | grep -v '^==>' | grep . || true)"
		stop_run_procs
		return 0
	fi
	# Let the destination's heartbeats come, then stop it for the dump.
	sleep 0.3
	gap=$($PY gap "$TMP/hb.log" || true)
	read -r du e < <($PY during "$TMP/hb.log" \
		"$(echo "$j" | jq '."t0-ns"')" "$(echo "$j" | jq '."t1-ns"')" ||
		echo "- -")
	mode=pre
	fl="- - - -"
	pcms=-
	[ -n "${KEEP:-}" ] && echo "$j" >"$TMP/q$RUNN.json"
	if [ "$(echo "$j" | jq '."postcopy-seen"')" = true ]; then
		mode=pc
		pcms=$(echo "$j" | jq '(."t1-ns" - ."switch-ns") / 1e5 |
			round / 10')
		fl=$($PY faults "$TMP/dst.trace" 2>>"$TMP/faults.err" ||
			echo "- - - -")
		read -r _ f50 f99 fmax <<<"$fl"
		fl="$f50 $f99 $fmax $(echo "$j" | jq '.ram."postcopy-requests"')"
	fi
	$PY qmp "$TMP/dst.qmp" stop >/dev/null
	chk=$(qemu_check "$TMP/dst.qmp" "$TMP/src.serial")
	echo "$j" | jq -r --arg pre "$link $mem $content $rate $v $rep $mode" \
		--arg g "$gap" --arg fl "$fl" --arg wr "$wr" --arg du "$du" \
		--arg pcms "$pcms" \
		--arg keep "$(keep_pct "$wr" "$du")" --arg gap "$e" \
		--arg chk "$chk" '
		[$pre, ."total-time", $pcms, .downtime, $g, $fl, $wr, $du, $keep,
		 $gap, (.ram.transferred / 1048576 * 10 | round / 10), $chk] |
		map(tostring) | join(" ")' >>"$TMP/rows"
	tail -1 "$TMP/rows" | print_row
	qemu_end
	[ -n "${KEEP:-}" ] && [ -e "$TMP/dst.trace" ] &&
		mv "$TMP/dst.trace" "$TMP/dst.trace.$RUNN"
	return 0
}

# ---- run -----------------------------------------------------------------

echo "$ME: $(vsq_what "not the KVM comparison"); $(git -C "$top" log -1 \
	--format=%h 2>/dev/null || echo '?'); 1 vCPU; REPS=$REPS (medians" \
	"of $REPS); heartbeat ${HB_US} us; QEMU max-bandwidth $QBW; load" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
printf "$HDR" link mem cont MiB/s variant rep mod "total ms" "pc ms" "down" \
	"guest" "flt p50" "p99 us" "max us" "asked" "wr/s bf" "during" \
	"keep%" "maxgap" "wire MB" check
printf '%s\n' "$(printf '%.0s-' $(seq 148))"
touch "$TMP/rows" "$TMP/failed"

for link in $LINKS; do
	link_up "$link"
	bench_start_daemon "src-$link" "${NSX_S[@]}"
	# The second daemon must not race the first generating the dev CA.
	bench_start_daemon "dst-$link" "${NSX_D[@]}"
	DSOCK_S=$TMP/src-$link/control.sock
	DSOCK_D=$TMP/dst-$link/control.sock
	for mem in $MEMS; do
		for content in $CONTENTS; do
			for rate in $RATES; do
				for rep in $(seq "$REPS"); do
					for v in $VARIANTS; do
						case $v in
						ours-*) ours "$link" "$mem" \
							"$content" "$rate" "$rep" "$v" ;;
						q-*) qemu_run "$link" "$mem" \
							"$content" "$rate" "$rep" "$v" ;;
						esac
					done
				done
			done
		done
	done
	stop_daemons
	link_down
done

# ---- medians, ratios, goals ----------------------------------------------
echo
echo "per cell, medians of $REPS: ours-pc0 (postcopy after the first pass)" \
	"against q-postcopy (the same), ours-pre against q-autoconv"
printf '%-4s %-4s %-6s %-4s | %-19s | %-19s | %-15s | %-15s | %s\n' link mem \
	cont MiB/s "p99 us ours/QEMU" "total ms ours/QEMU" "keep% ours/QEMU" \
	"pre total o/Q" "goals: p99 <= 0.5, total <= 1, keep >= 1"
awk "$VSQ_AWK_MED"'
$6 ~ /^[0-9]+$/ {
	c = $1 " " $2 " " $3 " " $4
	if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
	k = c SUBSEP $5
	tot[k] = tot[k] " " $8
	if ($13 != "-") p99[k] = p99[k] " " $13
	if ($18 != "-") kp[k] = kp[k] " " $18
	if ($21 !~ /^ok/) bad[k] = bad[k] " " $5
	if ($7 != "pc" && $5 ~ /pc/) npc[k] = npc[k] " " $5
}
function ratio(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f", a / b) : "-" }
function goal(r, lim, le) { return r == "-" ? "?" : ((le ? r + 0 <= lim : r + 0 >= lim) ? "yes" : "NO") }
END {
	for (i = 1; i <= nc; i++) {
		c = order[i]
		o = c SUBSEP "ours-pc0"; q = c SUBSEP "q-postcopy"
		op = med(p99[o]); qp = med(p99[q]); rp = ratio(op, qp)
		ot = med(tot[o]); qt = med(tot[q]); rt = ratio(ot, qt)
		ok = med(kp[o]); qk = med(kp[q]); rk = ratio(ok, qk)
		pt = ratio(med(tot[c SUBSEP "ours-pre"]), med(tot[c SUBSEP "q-autoconv"]))
		split(c, cf, " ")
		note = ""
		if (bad[o] bad[q] bad[c SUBSEP "ours-pre"] bad[c SUBSEP "ours-pcauto"] bad[c SUBSEP "q-autoconv"] != "")
			note = " check BAD:" bad[o] bad[q] bad[c SUBSEP "ours-pre"] bad[c SUBSEP "ours-pcauto"] bad[c SUBSEP "q-autoconv"]
		if (npc[o] npc[q] npc[c SUBSEP "ours-pcauto"] != "")
			note = note " no switch:" npc[o] npc[q] npc[c SUBSEP "ours-pcauto"]
		printf "%-4s %-4s %-6s %-4s | %6s/%6s %5s | %6s/%6s %5s | %4s/%4s %5s | %15s | %s / %s / %s%s\n",
			cf[1], cf[2], cf[3], cf[4], op, qp, rp, ot, qt, rt,
			ok, qk, rk, pt, goal(rp, 0.5, 1), goal(rt, 1, 1),
			goal(rk, 1, 0), note
	}
}' "$TMP/rows"
echo
echo "ratios are ours / QEMU; keep% = the guest's page writes per second" \
	"during the migration over those before it (each side's own guest" \
	"speed); check BAD lists variants whose destination page check failed;" \
	"no switch: postcopy variants that finished in precopy"
[ -s "$TMP/failed" ] && { echo; echo "failed runs:"; cat "$TMP/failed"; }
[ -s "$TMP/faults.err" ] && { echo; echo "QEMU trace:"; sort -u "$TMP/faults.err"; }
exit 0
