#!/usr/bin/env bash
# migrated against QEMU 7.2, side by side in one run (issue 12, "The
# benchmark"): the SAME guest image (build/.../arch/x86/guest/guest.elf)
# with the SAME workload, fully populated before the migration (the guest
# writes every page of its region once, then runs the cell's pattern),
# migrated by two migrated daemons with our defaults and by two QEMUs
# (-M microvm -cpu qemu64, -incoming defer) with each QEMU setting:
# default, max-bandwidth 10G, multifd 2 channels, multifd 2 + zstd.
# Prints one row per migration, then per cell the medians, the ratios and
# whether each goal of issue 12 holds. Not a test: a benchmark
# (docs/benchmarks.md, "Against QEMU").
#
# usage: tools/bench/vs-qemu.sh [BUILD_DIR]   (default build/release)
# env:   ACCEL=kvm|soft  kvm: ours on KVM, QEMU -accel kvm; soft: ours on
#                        the soft accelerator, QEMU on TCG (the default
#                        where /dev/kvm is missing). The table says which.
#        REPS=3          runs per cell and side (medians)
#        MEMS="1G"       guest RAM (1G 4G 8G; QEMU microvm keeps 3 GiB
#                        below 4 GiB, see docs/benchmarks.md)
#        CONTENTS="stamp text random"
#        RATES="idle 50" idle, MiB/s of page writes (50 200), or "max"
#                        (unthrottled)
#        LINKS="lo"      lo, 1g, 10g (a veth pair between two network
#                        namespaces shaped with tc tbf; made and removed
#                        by this script)
#        SETTINGS="default bw10g multifd2 multifd2zstd" (QEMU's)
#        SETTLE=1        seconds at the cell's rate after the prefill
#        WARM=0          1: right before each migration (both sides'),
#                        map, populate and free as much memory as the
#                        guest has (tools/bench/fresh_touch.c), so that
#                        both destinations write into memory the machine
#                        recycles rather than memory fresh to it (on a
#                        nested host that reports free pages to its
#                        hypervisor, fresh memory costs 2-3 CPU seconds
#                        per GiB on first touch: docs/benchmarks.md,
#                        "Fresh memory on the destination"). The table
#                        says which.
#        HB_US=2000      heartbeat interval of the guest on both sides
#        QTIMEOUT=180    seconds before a QEMU migration counts as not
#                        converging (then cancelled, row "timeout")
#        KEEP=1          keep the logs (printed at exit)
# The whole matrix: MEMS="1G 4G 8G" CONTENTS="stamp text random"
# RATES="idle 50 200 max" LINKS="lo 1g 10g".
#
# Figures per run: total = migration time (ours: the engine's elapsed;
# QEMU: query-migrate total-time); down = reported downtime (ours: the
# engine's sum of parts; QEMU: query-migrate downtime); guest = the
# guest-seen downtime, from host-timestamped heartbeats (CLOCK_REALTIME on
# arrival: ours in the VMM, QEMU's on the debug console by vsqemu.py hb),
# from the source's last heartbeat to the destination's first; wire =
# bytes on the wire (ours: bytes_wire; QEMU: ram transferred); cpu s/d =
# utime+stime of the source's and the destination's process (ours: the
# migrated-vmm workers; QEMU: the qemu processes), vCPU threads included
# on both sides, from /proc/PID/stat before and after; wr/s = the guest's
# page writes per second measured just before the migration (what the
# rate really was); check = every page's stamp on the destination
# (ours: migratectl vm check; QEMU: pmemsave + hvbench wlcheck).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build/release}
ME=vs-qemu
REPS=${REPS:-3}
MEMS=${MEMS:-1G}
CONTENTS=${CONTENTS:-stamp text random}
RATES=${RATES:-idle 50}
LINKS=${LINKS:-lo}
SETTINGS=${SETTINGS:-default bw10g multifd2 multifd2zstd}
SETTLE=${SETTLE:-1}
HB_US=${HB_US:-2000}
QTIMEOUT=${QTIMEOUT:-180}
PATTERN=${PATTERN:-sweep}
# shellcheck source=tools/bench/lib_vsq.sh
. "$top/tools/bench/lib_vsq.sh"
vsq_init
WARM=${WARM:-0}
if [ "$WARM" = 1 ]; then
	cc -O2 -pthread -o "$TMP/fresh_touch" "$top/tools/bench/fresh_touch.c"
fi
# Recycled memory for the next destination (WARM=1), else nothing.
warm_mem() { # mem
	[ "$WARM" = 1 ] || return 0
	"$TMP/fresh_touch" "$(numfmt --from=iec "$1" |
		awk '{ print int($1 / 1048576) }')" 1 2 >/dev/null
}
DSOCK_S= DSOCK_D=

# One migration of ours -> a row in $TMP/rows.
RUNN=0
ours() { # link mem content rate rep
	local link=$1 mem=$2 content=$3 rate=$4 rep=$5 vm s d rc=0
	local wpid dpid c0s c0d c1s c1d port f chk seq0 seq1 wr before
	RUNN=$((RUNN + 1))
	vm=q$RUNN
	s=$DSOCK_S d=$DSOCK_D
	# shellcheck disable=SC2046 # ours_wl's words
	"$CTL" --socket "$s" vm create "$vm" --mem "$mem" --vcpus 1 \
		--content "$content" $(ours_wl "$rate") --heartbeat-us "$HB_US" \
		--prefill >/dev/null
	ours_wait_prefill "$s" "$vm" || return 0
	seq0=$("$CTL" --socket "$s" --json vm inspect "$vm" |
		jq '.vcpus[0].seq | tonumber')
	sleep "$SETTLE"
	f=$("$CTL" --socket "$s" --json vm inspect "$vm")
	seq1=$(echo "$f" | jq '.vcpus[0].seq | tonumber')
	wr=$(( (seq1 - seq0) / SETTLE ))
	wpid=$(echo "$f" | jq '.info.worker_pid | tonumber')
	# The destination's worker: the daemon's child that recv made.
	warm_mem "$mem"
	before=$(pgrep -P "$DPID_D" | sort || true)
	port=$("$RECV" --socket "$d" --name "$vm" "$DST_IP:0")
	dpid=$(comm -13 <(echo "$before") <(pgrep -P "$DPID_D" | sort || true) |
		head -1)
	c0s=$(cpu_ticks "$wpid")
	c0d=$(cpu_ticks "$dpid")
	rm -f "$TMP/cpu.stop"
	cpu_follow "$wpid" "$TMP/cpu.src" "$TMP/cpu.stop" &
	local follower=$!
	"$SEND" --socket "$s" --json "$vm" "$DST_IP:$port" \
		>"$TMP/out.json" 2>"$TMP/err" || rc=$?
	c1d=$(cpu_ticks "$dpid")
	touch "$TMP/cpu.stop"
	wait "$follower" || true
	c1s=$(cat "$TMP/cpu.src")
	f=$(tail -1 "$TMP/out.json")
	if [ "$rc" != 0 ]; then
		printf '%s\n' "$link $mem $content $rate ours $rep FAILED" \
			"rc=$rc $(echo "$f" | jq -r '.progress.message // empty' \
			2>/dev/null) $(cat "$TMP/err")" | paste -sd' ' |
			tee -a "$TMP/failed" >&2
		"$CTL" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
		"$CTL" --socket "$d" vm destroy "$vm" >/dev/null 2>&1 || true
		return 0
	fi
	if "$CTL" --socket "$d" vm check "$vm" >"$TMP/check" 2>&1; then
		chk=ok
	else
		chk=BAD
	fi
	chk="$chk/$(sed -n 's/.*: \([0-9]*\) pages checked.*/\1/p' \
		"$TMP/check")"
	echo "$f" | jq -r --arg pre "$link $mem $content $rate ours $rep" \
		--arg cs "$(secs "$c0s" "$c1s")" --arg cd "$(secs "$c0d" "$c1d")" \
		--arg wr "$wr" --arg chk "$chk" '
		def ms: (tonumber? // 0) / 1e6 | . * 10 | round / 10;
		.progress as $p |
		[$pre, ($p.elapsed_ns | ms), ($p.downtime.total_ns | ms),
		 (if ($p.guest_downtime_ns // 0 | tonumber) > 0
		  then ($p.guest_downtime_ns | ms) else "-" end),
		 (($p.bytes_wire | tonumber) / 1048576 * 10 | round / 10),
		 $cs, $cd, $wr, $chk] | join(" ")' >>"$TMP/rows"
	tail -1 "$TMP/rows" | print_row
	"$CTL" --socket "$d" vm destroy "$vm" >/dev/null || true
	"$CTL" --socket "$s" vm destroy "$vm" >/dev/null 2>&1 || true
}

# ---- QEMU's side ---------------------------------------------------------

qemu_run() { # link mem content rate rep setting
	local link=$1 mem=$2 content=$3 rate=$4 rep=$5 set=$6
	local sp dp c0s c0d c1s c1d j rc=0 gap chk wr
	RUNN=$((RUNN + 1))
	qemu_boot "$mem" "$content" "$rate" || return 0
	sp=$QSP dp=$QDP
	sleep "$SETTLE"
	wr=$($PY rate "$TMP/hb.log" "$SETTLE" || true)
	warm_mem "$mem"
	c0s=$(cpu_ticks "$sp")
	c0d=$(cpu_ticks "$dp")
	j=$($PY migrate "$TMP/src.qmp" "$TMP/dst.qmp" \
		"tcp:$DST_IP:$((47000 + RUNN % 1000))" "$set" "$QTIMEOUT") ||
		rc=$?
	c1s=$(cpu_ticks "$sp")
	c1d=$(cpu_ticks "$dp")
	if [ "$rc" != 0 ]; then
		echo "$link $mem $content $rate q-$set $rep FAILED" \
			"$(echo "$j" | jq -r '.status + " " + (."error-desc" // "")' \
			2>/dev/null)" | tee -a "$TMP/failed" >&2
		stop_run_procs
		return 0
	fi
	# Let the destination's heartbeats come, then stop it for the dump.
	sleep 0.3
	gap=$($PY gap "$TMP/hb.log" || true)
	$PY qmp "$TMP/dst.qmp" stop >/dev/null
	chk=$(qemu_check "$TMP/dst.qmp" "$TMP/src.serial")
	echo "$j" | jq -r --arg pre "$link $mem $content $rate q-$set $rep" \
		--arg g "$gap" --arg cs "$(secs "$c0s" "$c1s")" \
		--arg cd "$(secs "$c0d" "$c1d")" --arg wr "$wr" --arg chk "$chk" '
		[$pre, ."total-time", .downtime, $g,
		 (.ram.transferred / 1048576 * 10 | round / 10), $cs, $cd, $wr,
		 $chk] |
		map(tostring) | join(" ")' >>"$TMP/rows"
	tail -1 "$TMP/rows" | print_row
	qemu_end
}

# ---- table ---------------------------------------------------------------

# Row fields: link mem content rate side rep total down guest wire cpu_s
# cpu_d wr/s check
HDR='%-4s %-4s %-7s %-5s %-16s %3s | %9s %8s %8s %7s | %6s %6s | %7s | %s\n'
print_row() {
	awk -v f="$HDR" '{ printf f, $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14 }'
}

what=$(vsq_what "not the KVM comparison issue 12 asks for")
echo "vs-qemu: $what; $(git -C "$top" log -1 --format=%h 2>/dev/null ||
	echo '?'); 1 vCPU; REPS=$REPS; heartbeat ${HB_US} us;" \
	"destination memory $([ "$WARM" = 1 ] && echo recycled ||
		echo "fresh after SETTLE=${SETTLE}s"); host TSC" \
	"$TSC_KHZ kHz; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "$HDR" link mem content MiB/s side rep "total ms" "down ms" \
	"guest ms" "wire MB" "cpu s" "cpu d" "wr/s" check
printf '%s\n' "$(printf '%.0s-' $(seq 118))"
touch "$TMP/rows"

for link in $LINKS; do
	link_up "$link"
	bench_start_daemon "src-$link" "${NSX_S[@]}"
	DPID_S=$DPID
	# The second daemon must not race the first generating the dev CA.
	bench_start_daemon "dst-$link" "${NSX_D[@]}"
	DPID_D=$DPID
	DSOCK_S=$TMP/src-$link/control.sock
	DSOCK_D=$TMP/dst-$link/control.sock
	for mem in $MEMS; do
		for content in $CONTENTS; do
			for rate in $RATES; do
				for rep in $(seq "$REPS"); do
					ours "$link" "$mem" "$content" "$rate" "$rep"
					for set in $SETTINGS; do
						qemu_run "$link" "$mem" "$content" \
							"$rate" "$rep" "$set"
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
echo "per cell, medians of $REPS: ours vs QEMU's best total (over its" \
	"settings) and QEMU's lowest guest-seen downtime"
printf '%-4s %-4s %-7s %-5s | %-17s | %-22s | %-22s | %6s %6s | %s\n' link \
	mem content MiB/s "ours total/guest" "QEMU best total (set)" \
	"QEMU min guest (set)" "t/best" "g/min" "goals 1 / 2 / wire"
awk "$VSQ_AWK_MED"'
$6 ~ /^[0-9]+$/ {
	c = $1 " " $2 " " $3 " " $4
	if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
	k = c SUBSEP $5
	if (!(k in sides)) { sides[k] = 1; sl[c] = sl[c] " " $5 }
	tot[k] = tot[k] " " $7
	if ($9 != "-") gs[k] = gs[k] " " $9
	wire[k] = wire[k] " " $10
	if ($14 !~ /^ok/) bad[k]++
}
END {
	for (i = 1; i <= nc; i++) {
		c = order[i]
		ot = med(tot[c SUBSEP "ours"]); og = med(gs[c SUBSEP "ours"])
		ow = med(wire[c SUBSEP "ours"])
		bt = ""; bs = "-"; mg = ""; ms = "-"; zw = "-"
		n = split(sl[c], s, " ")
		for (j = 1; j <= n; j++) {
			if (s[j] == "ours") continue
			t = med(tot[c SUBSEP s[j]]); g = med(gs[c SUBSEP s[j]])
			if (t != "-" && (bt == "" || t + 0 < bt + 0)) { bt = t; bs = s[j] }
			if (g != "-" && (mg == "" || g + 0 < mg + 0)) { mg = g; ms = s[j] }
			if (s[j] == "q-multifd2zstd") zw = med(wire[c SUBSEP s[j]])
		}
		if (bt == "") bt = "-"
		if (mg == "") mg = "-"
		tr = (ot != "-" && bt != "-" && bt > 0) ? sprintf("%.2f", ot / bt) : "-"
		gr = (og != "-" && mg != "-" && mg > 0) ? sprintf("%.2f", og / mg) : "-"
		g1 = (tr == "-" || og == "-") ? "?" : (tr <= 1 && og <= 50 ? "yes" : "NO")
		g2 = (gr == "-") ? "?" : (og + 0 <= mg + 0 ? "yes" : "NO")
		split(c, cf, " ")
		g3 = "n/a"
		if (cf[3] == "text" && zw != "-" && ow != "-")
			g3 = (ow <= 0.8 * zw) ? "yes" : "NO"
		chk = (bad[c SUBSEP "ours"] ? "ours-check-BAD " : "")
		printf "%-4s %-4s %-7s %-5s | %7s / %7s | %9s %-12s | %9s %-12s | %6s %6s | %s / %s / %s %s\n",
			cf[1], cf[2], cf[3], cf[4], ot, og, bt, "(" bs ")", mg,
			"(" ms ")", tr, gr, g1, g2, g3, chk
	}
}' "$TMP/rows"
echo
echo "goal 1: ours total <= QEMU best total and ours guest-seen <= 50 ms;" \
	"goal 2: ours guest-seen <= QEMU's lowest guest-seen; wire: text," \
	"ours bytes <= 0.8 x QEMU multifd2+zstd (issue 12, Goals)"
[ -s "$TMP/failed" ] && { echo; echo "failed runs:"; cat "$TMP/failed"; }
exit 0
