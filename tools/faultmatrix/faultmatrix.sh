#!/usr/bin/env bash
# The fault matrix (docs/reliability.md): every migration step crossed
# with every fault, one fresh pair of daemons per cell, and for each cell
# the answer to three questions, from the page stamps:
#   - where does the VM run (vm inspect on both sides)?
#   - is it intact (vm check, the page-stamp oracle, on every side that
#     holds it; plus the post-commit verification when it completed)?
#   - does what the tools reported (migrate-send's exit code and final
#     line) match?
# One markdown table row per cell. Not part of the default test command
# (about 10-15 minutes); a separate command.
#
# usage: tools/faultmatrix/faultmatrix.sh [--doc FILE] [BUILD_DIR]
#   BUILD_DIR  default build/release, else build/asan
#   --doc FILE replace the table between the faultmatrix markers of FILE
#              (docs/reliability.md) with this run's table
# env: STEPS="setup iter1 iter3 switchover commit"
#      FAULTS="drop dstkill srckill dststop srccancel dstcancel corrupt tbf"
#      HOLD_MS=3000 (how long the source holds at the step)
#
# Topology: the source daemon runs in network namespace fm-s, the
# destination in fm-d, joined by a veth pair (10.77.0.1 <-> 10.77.0.2);
# the migration goes through faultproxy.py (in fm-s on 127.0.0.1, which
# the development TLS certificate names, forwarding over the veth to the
# destination's listener on 10.77.0.2), which can drop every connection
# or flip one byte on command; the 1 Mbit/s cells put tc tbf on both veth
# ends. The
# control sockets are Unix sockets in the state dirs, reachable from
# here. Needs root, /dev/kvm, iproute2 (ip, tc), jq, python3.
#
# The step is hit exactly by a fault point (migrated/mig/faultpoint.h):
# the source daemon starts with MIGRATED_FAULTPOINTS=POINT=sleep:HOLD_MS
# and the fault is applied while it holds there:
#   setup       src.setup       channels up, before Setup
#   iter1       src.iter@1      start of the first iteration
#   iter3       src.iter@3      start of the third iteration
#   switchover  src.switchover  converged, before the pause
#   commit      src.committed   Commit sent, waiting for Resumed
#               (the corrupt cell holds at src.acked instead, so that
#               the byte lands in the Commit frame: after Commit no
#               frame goes from source to destination)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
DOC=
if [ "${1:-}" = --doc ]; then
	DOC=$2
	shift 2
fi
B=${1:-}
if [ -z "$B" ]; then
	B=$top/build/release
	[ -x "$B/migrated/daemon/migrated" ] || B=$top/build/asan
fi
MIGRATED=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
SEND=$B/tools/migrate-send/migrate-send
RECV=$B/tools/migrate-recv/migrate-recv
PROXY=$top/tools/faultmatrix/faultproxy.py
# The Debian interpreter: a version-manager shim in PATH can take seconds
# to start on a loaded machine, and a proxy command must land inside the
# hold.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
STEPS=${STEPS:-setup iter1 iter3 switchover commit}
FAULTS=${FAULTS:-drop dstkill srckill dststop srccancel dstcancel corrupt tbf}
HOLD_MS=${HOLD_MS:-3000}
# The guest: 32 MiB, 1 vCPU, incompressible pages, first written flat out,
# then rewritten at 800 pages/s (3.2 MB/s) against a 6 MB/s cap: about
# five iterations and 8 s per migration, so that a third iteration exists.
MEM=32M RATE=800 BW=6M
TIMEOUT_MS=30000 # whole migration: bounds the 1 Mbit/s cells

for t in "$MIGRATED" "$CTL" "$SEND" "$RECV"; do
	[ -x "$t" ] || { echo "missing $t (build first)" >&2; exit 1; }
done
for c in jq ip tc "$PY"; do
	command -v "$c" >/dev/null || { echo "needs $c" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 1; }
[ -w /dev/kvm ] || { echo "needs /dev/kvm" >&2; exit 1; }

TMP=$(mktemp -d /tmp/faultmatrix.XXXXXX)
NS_S=fm-s-$$ NS_D=fm-d-$$
VS=fms$$ VD=fmd$$
PIDS=()
# Every VM runs in a worker process of its daemon (migrated-vmm, with the
# daemon's --state-dir): a host's processes are the daemon and those.
tree_pids() { echo "$1"; pgrep -f -- "migrated-vmm .*--state-dir $2 " || true; }
# killtree SIG PID DIR: the daemon PID of state dir DIR and its workers,
# as when the host itself dies or hangs.
killtree() { local p; for p in $(tree_pids "$2" "$3"); do kill "$1" "$p" 2>/dev/null; done; }
cleanup() {
	for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	for p in $(pgrep -f -- "migrated-vmm .*--state-dir $TMP/" || true); do
		kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	ip netns del "$NS_S" 2>/dev/null
	ip netns del "$NS_D" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS_S" && ip netns add "$NS_D" &&
	ip link add "$VS" type veth peer name "$VD" &&
	ip link set "$VS" netns "$NS_S" && ip link set "$VD" netns "$NS_D" &&
	ip -n "$NS_S" addr add 10.77.0.1/24 dev "$VS" &&
	ip -n "$NS_D" addr add 10.77.0.2/24 dev "$VD" &&
	ip -n "$NS_S" link set "$VS" up && ip -n "$NS_D" link set "$VD" up &&
	ip -n "$NS_S" link set lo up && ip -n "$NS_D" link set lo up ||
	{ echo "cannot set up the network namespaces" >&2; exit 1; }

# daemon NS NAME DIR [env...]: start migrated in NS; sets DPID, DSOCK.
daemon() {
	local ns=$1 name=$2 dir=$3
	shift 3
	ip netns exec "$ns" env "$@" "$MIGRATED" --state-dir "$dir/$name" \
		--dev-tls --tls-dir "$TMP/tls" --accel kvm --log-level debug \
		--stop-vms >"$dir/$name.log" 2>&1 &
	DPID=$!
	PIDS+=("$DPID")
	DSOCK=$dir/$name/control.sock
	for _ in $(seq 200); do
		[ -S "$DSOCK" ] && return 0
		sleep 0.05
	done
	echo "daemon $name did not start: $(tail -3 "$dir/$name.log")" >&2
	return 1
}

ctl() { local s=$1; shift; "$CTL" --socket "$s" --timeout 20000 "$@"; }

# state SOCK PID: the VM's state on that daemon, "absent", or "dead".
state() {
	kill -0 "$2" 2>/dev/null || { echo dead; return; }
	local s
	s=$(ctl "$1" --json vm inspect fm 2>/dev/null | jq -r '.info.state // empty')
	s=${s#VM_STATE_}
	echo "${s:-absent}"
}

# check SOCK: the oracle's verdict in a few words in CHECK_TXT; CLEAN=1
# when the pages are intact.
check() {
	local j rc
	j=$(ctl "$1" --json vm check fm 2>&1)
	rc=$?
	CLEAN=0
	if [ "$rc" = 0 ]; then
		CLEAN=1
		CHECK_TXT="intact ($(echo "$j" | jq -r .pages) pages)"
	elif echo "$j" | jq -e .pages >/dev/null 2>&1; then
		CHECK_TXT=$(echo "$j" | jq -r '"\(.bad) BAD of \(.pages) (stamp \(.bad_stamp), content \(.bad_content), stale \(.stale), lost \(.lost_vcpus))"')
	else
		CHECK_TXT="check failed: $(echo "$j" | tail -1 | cut -c1-60)"
	fi
}

# unfinished SOCK PID: migrations of the daemon not finished yet.
unfinished() {
	kill -0 "$2" 2>/dev/null || { echo 0; return; }
	ctl "$1" --json migration list 2>/dev/null |
		jq '[.migrations[]? | select(.finished | not)] | length' 2>/dev/null ||
		echo 0
}

# held STATE: the source keeps a paused copy for a resolve.
held() { [ "$1" = UNRESOLVED ] || [ "$1" = PAUSED ]; }

# settle SOCK PID FLAG WANT: migration resolve FLAG on the source, then
# its VM state in S2; SETTLED=1 when that is WANT.
settle() {
	SETTLED=0
	ctl "$1" migration resolve fm "$3" >/dev/null 2>&1
	S2=$(state "$1" "$2")
	[ "$S2" = "$4" ] && SETTLED=1
}

point_of() { # STEP FAULT -> fault point spec name[@n]
	case $1 in
	setup) echo src.setup ;;
	iter1) echo src.iter@1 ;;
	iter3) echo src.iter@3 ;;
	switchover) echo src.switchover ;;
	commit) [ "$2" = corrupt ] && echo src.acked || echo src.committed ;;
	esac
}

ROWS=()
NPASS=0 NFAIL=0 NKNOWN=0

# cell STEP FAULT: one migration, one fault, one table row.
cell() {
	local step=$1 fault=$2 dir=$TMP/$1.$2 point sec=() rc port pport
	local spid dpid ssock dsock sp fired=1 note= t0 s d cs= cd= where
	local said verdict why
	mkdir -p "$dir"
	point=$(point_of "$step" "$fault")
	[ "$fault" = corrupt ] && sec=(--insecure)
	t0=$(date +%s)
	daemon "$NS_S" src "$dir" "MIGRATED_FAULTPOINTS=$point=sleep:$HOLD_MS" || return
	spid=$DPID ssock=$DSOCK
	daemon "$NS_D" dst "$dir" || return
	dpid=$DPID dsock=$DSOCK
	ctl "$ssock" vm create fm --mem "$MEM" --vcpus 1 --content random \
		--heartbeat-us 2000 >/dev/null || { echo "create failed" >&2; return; }
	sleep 0.7
	ctl "$ssock" vm set-rate fm "$RATE" >/dev/null
	port=$("$RECV" --socket "$dsock" --name fm \
		--timeout-ms "$((TIMEOUT_MS + 10000))" "${sec[@]}" 10.77.0.2:0) ||
		{ echo "migrate-recv failed: $port" >&2; return; }
	ip netns exec "$NS_S" "$PY" "$PROXY" --listen 127.0.0.1:0 \
		--to "10.77.0.2:$port" --ctl "$dir/proxy.sock" >"$dir/proxy.out" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		pport=$(awk '/^listening/ { print $2 }' "$dir/proxy.out")
		[ -n "$pport" ] && [ -S "$dir/proxy.sock" ] && break
		sleep 0.05
	done
	"$SEND" --socket "$ssock" --bandwidth "$BW" --timeout-ms "$TIMEOUT_MS" \
		"${sec[@]}" fm "127.0.0.1:$pport" >"$dir/send.out" 2>&1 &
	sp=$!

	# Wait for the source to hold at the step, then strike.
	local pname=${point%@*}
	for _ in $(seq 400); do
		grep -qE "op=faultpoint name=$pname " "$dir/src.log" && break
		kill -0 "$sp" 2>/dev/null || { fired=0; break; }
		sleep 0.05
	done
	grep -qE "op=faultpoint name=$pname " "$dir/src.log" || fired=0
	if [ "$fired" = 0 ]; then
		note="step never reached"
	else
		case $fault in
		drop) "$PY" "$PROXY" --ctl "$dir/proxy.sock" --send drop >/dev/null ;;
		dstkill) killtree -9 "$dpid" "$dir/dst"; wait "$dpid" 2>/dev/null ;;
		srckill) killtree -9 "$spid" "$dir/src"; wait "$spid" 2>/dev/null ;;
		dststop)
			killtree -STOP "$dpid" "$dir/dst"
			# Past the engine's I/O timeout (10 s): the source must
			# give up by itself while the destination is frozen.
			for _ in $(seq 300); do
				kill -0 "$sp" 2>/dev/null || break
				sleep 0.1
			done
			killtree -CONT "$dpid" "$dir/dst"
			;;
		srccancel)
			ctl "$ssock" migration cancel fm >"$dir/cancel.out" 2>&1 ||
				note="cancel refused: $(head -c 60 "$dir/cancel.out")"
			;;
		dstcancel)
			local id
			id=$(ctl "$dsock" --json migration list |
				jq -r '[.migrations[]? | select(.finished | not)][0].id // empty')
			if [ -z "$id" ]; then
				note="nothing left to cancel on the destination"
			else
				ctl "$dsock" migration cancel "$id" >"$dir/cancel.out" 2>&1 ||
					note="cancel refused: $(head -c 60 "$dir/cancel.out")"
			fi
			;;
		corrupt)
			if [ "$step" = commit ]; then
				"$PY" "$PROXY" --ctl "$dir/proxy.sock" --send flip 1 any >/dev/null
			else
				"$PY" "$PROXY" --ctl "$dir/proxy.sock" --send flip 3000 data >/dev/null
			fi
			;;
		tbf)
			for d in "$NS_S:$VS" "$NS_D:$VD"; do
				ip netns exec "${d%%:*}" tc qdisc replace dev "${d##*:}" \
					root tbf rate 1mbit burst 16kb latency 200ms
			done
			;;
		esac
	fi

	# The end: migrate-send exits, the daemons settle.
	for _ in $(seq 900); do
		kill -0 "$sp" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$sp" 2>/dev/null; then
		kill -9 "$sp"
		note="${note:+$note; }migrate-send hung (killed after 90 s)"
	fi
	wait "$sp"
	rc=$?
	for _ in $(seq 100); do
		[ "$(unfinished "$ssock" "$spid")" = 0 ] &&
			[ "$(unfinished "$dsock" "$dpid")" = 0 ] && break
		sleep 0.1
	done
	for d in "$NS_S:$VS" "$NS_D:$VD"; do
		ip netns exec "${d%%:*}" tc qdisc del dev "${d##*:}" root 2>/dev/null
	done
	if [ "$fault" = corrupt ]; then
		local fl
		fl=$(awk '/^flipped/ { print $2, $3 }' "$dir/proxy.out")
		note="${note:+$note; }${fl:+flipped $fl}"
		[ -n "$fl" ] || note="${note:+$note; }no byte after the step to flip"
	fi

	s=$(state "$ssock" "$spid")
	d=$(state "$dsock" "$dpid")
	local cs_clean=0 cd_clean=0
	case $s in RUNNING | PAUSED | STOPPED | CREATED | UNRESOLVED)
		check "$ssock"
		cs=$CHECK_TXT cs_clean=$CLEAN
		;;
	esac
	case $d in RUNNING | PAUSED | STOPPED | CREATED)
		check "$dsock"
		cd=$CHECK_TXT cd_clean=$CLEAN
		;;
	esac
	said=$(grep -E '^migration [0-9]+ of fm: ' "$dir/send.out" | tail -1 | sed 's/^migration [0-9]* of fm: //')
	[ -n "$said" ] || said=$(grep -m1 '^migrate-send: ' "$dir/send.out" | cut -c1-70)
	[ -n "$said" ] || said=$(tail -1 "$dir/send.out" | cut -c1-70)
	local reason
	reason=$(grep -E '^  reason: ' "$dir/send.out" | sed 's/^  reason: *//' | cut -c1-70)
	local unresolved=0
	grep -qi unresolved "$dir/send.out" && unresolved=1
	if [ "$rc" = 0 ] && ! grep -qE 'verified: +[1-9][0-9]* pages.*: 0 differ' "$dir/send.out"; then
		note="${note:+$note; }no clean post-commit verification"
	fi

	# The verdict.
	local runs=0
	[ "$s" = RUNNING ] && runs=$((runs + 1))
	[ "$d" = RUNNING ] && runs=$((runs + 1))
	verdict=FAIL why=
	if [ "$runs" = 2 ]; then
		why="runs on BOTH sides"
	elif [ "$d" = RUNNING ]; then
		if [ "$cd_clean" != 1 ]; then
			why="destination copy damaged"
		elif held "$s" && [ "$unresolved" = 1 ]; then
			# What an orchestrator does: the destination runs it,
			# so the source's copy goes.
			settle "$ssock" "$spid" --confirm-destination absent
			[ "$cs_clean" = 1 ] && [ "$SETTLED" = 1 ] && verdict=PASS
			why="destination runs; source UNRESOLVED (paused, intact) until resolve --confirm-destination: source $S2"
		elif [ "$s" != absent ] && [ "$s" != dead ]; then
			why="a second copy stays on the source ($s)"
		elif [ "$rc" = 0 ] && ! echo "$note" | grep -q "verification"; then
			verdict=PASS why="completed"
		elif [ "$rc" = 5 ] && [ "$fault" = srckill ]; then
			verdict=PASS why="destination runs; migrate-send lost its daemon"
		else
			why="runs on the destination but migrate-send said: rc $rc"
		fi
	elif [ "$s" = RUNNING ]; then
		if [ "$cs_clean" != 1 ]; then
			why="source copy damaged"
		elif [ "$rc" = 0 ]; then
			why="migrate-send said completed, VM runs on the source"
		else
			verdict=PASS why="stays on the source"
		fi
	elif held "$s" && [ "$unresolved" = 1 ]; then
		# The destination does not run it: the source takes it back.
		settle "$ssock" "$spid" --resume-source RUNNING
		if [ "$SETTLED" = 1 ]; then
			check "$ssock"
			[ "$CLEAN" = 1 ] || SETTLED=0
		fi
		[ "$cs_clean" = 1 ] && [ "$SETTLED" = 1 ] && verdict=PASS
		why="UNRESOLVED on the source (paused, intact), destination not running; resolve --resume-source: source $S2${CHECK_TXT:+ $CHECK_TXT}"
	elif [ "$fault" = srckill ] && [ "$s" = dead ] &&
		[ "$d" != RUNNING ]; then
		verdict=KNOWN
		why="VM lost with the source host (its daemon and workers killed)"
	else
		why="runs NOWHERE (source $s, destination $d)"
	fi
	case $verdict in
	PASS) NPASS=$((NPASS + 1)) ;;
	FAIL) NFAIL=$((NFAIL + 1)) ;;
	KNOWN) NKNOWN=$((NKNOWN + 1)) ;;
	esac
	where="src ${s}${cs:+: $cs}, dst ${d}${cd:+: $cd}"
	local row
	row="| $step | $fault | $where | rc $rc: ${said}${reason:+ ($reason)} | **$verdict** $why${note:+; $note} | $(($(date +%s) - t0)) s |"
	ROWS+=("$row")
	echo "$row"

	# Tear down the cell.
	for p in "$spid" "$dpid"; do
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	for _ in $(seq 50); do
		kill -0 "$spid" 2>/dev/null || kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$spid" "$dpid" 2>/dev/null
	wait "$spid" "$dpid" 2>/dev/null
	pkill_proxy "$dir"
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$dir"/*.log; then
		echo "  sanitizer report in $dir (kept)" >&2
		cp -r "$dir" "$TMP/../faultmatrix-san-$step-$fault" 2>/dev/null
	fi
}

# The proxy of a cell: the PIDS entry whose command line names its socket.
pkill_proxy() {
	local p
	for p in "${PIDS[@]}"; do
		[ -r "/proc/$p/cmdline" ] || continue
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$1/proxy.sock"; then
			kill "$p" 2>/dev/null
			wait "$p" 2>/dev/null
		fi
	done
}

HEADER="| step | fault | where the VM is, and its pages | migrate-send said | verdict | time |
|---|---|---|---|---|---|"
echo "fault matrix: $B, hold $HOLD_MS ms, VM $MEM random at $RATE pages/s, cap $BW/s"
echo "$HEADER"
T0=$(date +%s)
for step in $STEPS; do
	for fault in $FAULTS; do
		cell "$step" "$fault"
	done
done
SUMMARY="$NPASS PASS, $NKNOWN KNOWN (documented limitation), $NFAIL FAIL; $(($(date +%s) - T0)) s"
echo
echo "$SUMMARY"

if [ -n "$DOC" ]; then
	{
		echo "<!-- faultmatrix:begin -->"
		echo "Run $(date -u +%Y-%m-%d) with \`tools/faultmatrix/faultmatrix.sh --doc docs/reliability.md\`"
		echo "($(basename "$B") build, hold $HOLD_MS ms): $SUMMARY."
		echo
		echo "$HEADER"
		printf '%s\n' "${ROWS[@]}"
		echo "<!-- faultmatrix:end -->"
	} >"$TMP/table.md"
	python3 - "$DOC" "$TMP/table.md" <<'EOF'
import re, sys
doc, table = sys.argv[1], open(sys.argv[2]).read()
s = open(doc).read()
pat = re.compile(r"<!-- faultmatrix:begin -->.*?<!-- faultmatrix:end -->\n?", re.S)
s = pat.sub(lambda m: table, s) if pat.search(s) else s + "\n" + table
open(doc, "w").write(s)
EOF
	echo "table written to $DOC"
fi
[ "$NFAIL" = 0 ]
