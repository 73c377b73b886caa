#!/bin/bash
# Postcopy recovery between two real daemons on loopback (soft
# accelerator). The migration runs through a TCP relay (tcpproxy.py);
# killing the relay breaks every channel at once, as a link failure does.
#   1. A guest writing random pages flat out switches to postcopy (its
#      push slowed by the src.pc.push fault point so that the break lands
#      inside the postcopy); the relay is killed: both sides must pause
#      (POSTCOPY_PAUSED), the destination must not list the VM as running,
#      migrate-send must wait and say how to recover.
#   2. Recovered through a second relay, which is killed as soon as the
#      recovery is through: paused again; a recovery to a dead address
#      fails and leaves it paused.
#   3. Recovered straight to the destination's port: COMPLETED, the VM
#      runs there and every page stamp checks.
#   4. The source daemon and its worker killed during a postcopy: the
#      destination says the source is gone and that the VM cannot run on
#      partial memory, and does not list it as running; a cancel there
#      ends it.
source "$(dirname "$0")/lib_faults.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
[ -e /dev/userfaultfd ] || [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 1 ] ||
	[ "$(id -u)" = 0 ] || { echo "SKIP: no userfaultfd for this user"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
PROXY="python3 $(dirname "$0")/tcpproxy.py"

# 64 pages per push refill, 20 ms each: about 12 MiB/s of background
# push, so the postcopy lasts seconds; faults are served at full speed.
MIGRATED_FAULTPOINTS="src.pc.push=sleep:20" start_daemon src --dev-tls \
	--tls-dir "$TMP/tls" --accel soft
SRC=$SOCK
SRC_PID=$DPID
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel soft
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi

# st SOCK VM: PH and MSG of VM's latest migration there (one call).
st() {
	local j
	j=$("$CTL" --socket "$1" --json migration status "$2" 2>/dev/null)
	PH=$(jq -r '.migrations[0].progress.phase // empty' <<<"$j" 2>/dev/null)
	MSG=$(jq -r '.migrations[0].progress.message // empty' <<<"$j" 2>/dev/null)
}
# wait_phase SOCK VM PHASE [TENTHS]: 0 once VM's migration is in PHASE
# (PH and MSG as it was then); 1 at another end, or after the wait.
wait_phase() {
	local n=${4:-300}
	for _ in $(seq "$n"); do
		st "$1" "$2"
		[ "$PH" = "$3" ] && return 0
		case "$PH" in MIG_PHASE_COMPLETED | MIG_PHASE_FAILED | MIG_PHASE_CANCELLED)
			return 1 ;;
		esac
		sleep 0.1
	done
	return 1
}
# relay NAME TARGET_PORT: start a relay; sets RPID and RPORT.
relay() {
	rm -f "$TMP/$1.port"
	$PROXY "$2" --ready "$TMP/$1.port" --life 120 &
	RPID=$!
	PIDS+=("$RPID")
	for _ in $(seq 100); do
		[ -s "$TMP/$1.port" ] && break
		sleep 0.05
	done
	RPORT=$(cat "$TMP/$1.port" 2>/dev/null)
	[ -n "$RPORT" ] || { fail "relay $1 did not start"; exit 1; }
}
break_link() {
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# --- 1. a break in postcopy pauses both sides -----------------------------
SOCK=$SRC expect_rc 0 "create pr1 (64M, random pages flat out)" \
	ctl vm create pr1 --mem 64M --vcpus 2 --pattern random --rate 0 \
	--content random --heartbeat-us 2000
port=$("$RECV" --socket "$DST" --name pr1 127.0.0.1:0) || fail "migrate-recv: $port"
relay a "$port"
"$SEND" --socket "$SRC" --postcopy-after 0 --downtime 1 pr1 "127.0.0.1:$RPORT" \
	>"$TMP/pr1.out" 2>&1 &
send_pid=$!
if ! wait_phase "$SRC" pr1 MIG_PHASE_POSTCOPY 400; then
	fail "pr1 never in postcopy (phase $PH $MSG)"
	tail -5 "$TMP/pr1.out"
	exit 1
fi
sleep 0.3
break_link "$RPID"
ok "relay killed in phase POSTCOPY"
wait_phase "$SRC" pr1 MIG_PHASE_POSTCOPY_PAUSED 150 &&
	ok "source paused: $MSG" || fail "source not paused: $PH $MSG"
wait_phase "$DST" pr1 MIG_PHASE_POSTCOPY_PAUSED 150 &&
	ok "destination paused: $MSG" || fail "destination not paused: $PH $MSG"
grep -q "partial memory" <<<"$MSG" &&
	ok "the destination says the VM cannot run on partial memory" ||
	fail "destination message: $MSG"
[ "$(vm_state "$DST" pr1)" != VM_STATE_RUNNING ] &&
	ok "pr1 is not listed running on the destination while paused" ||
	fail "pr1 listed running on partial memory"
kill -0 "$send_pid" 2>/dev/null && ok "migrate-send waits" ||
	fail "migrate-send ended: $(tail -3 "$TMP/pr1.out")"
SOCK=$DST expect_rc 2 "recover on the destination side is refused" \
	ctl migration recover pr1

# --- 2. a second break, right after the recovery --------------------------
relay b "$port"
SOCK=$SRC expect_rc 0 "recover through a new relay" \
	ctl migration recover pr1 "127.0.0.1:$RPORT"
if wait_phase "$SRC" pr1 MIG_PHASE_POSTCOPY 150; then
	break_link "$RPID"
	ok "recovered once ($MSG), relay killed again"
	wait_phase "$SRC" pr1 MIG_PHASE_POSTCOPY_PAUSED 150 &&
		ok "paused again after the second break" ||
		fail "second break: source $PH $MSG"
	wait_phase "$DST" pr1 MIG_PHASE_POSTCOPY_PAUSED 150 &&
		ok "destination paused again: $MSG" ||
		fail "second break: destination $PH $MSG"
else
	fail "first recovery: $PH $MSG"
fi
# A recovery to an address nobody listens on fails: paused again.
SOCK=$SRC expect_rc 0 "recover to a dead address" \
	ctl migration recover pr1 127.0.0.1:1
for _ in $(seq 100); do
	st "$SRC" pr1
	grep -q "127.0.0.1:1" <<<"$MSG" && break
	sleep 0.1
done
[ "$PH" = MIG_PHASE_POSTCOPY_PAUSED ] && grep -q "127.0.0.1:1" <<<"$MSG" &&
	ok "the failed attempt leaves it paused: $MSG" ||
	fail "after a failed recovery: $PH $MSG"

# --- 3. recovered to the destination's own port: complete ----------------
# What the destination still lacks must come by the push, not only by
# the faults of the guest (which would touch every page in the end).
j=$("$CTL" --socket "$DST" --json migration status pr1)
lack=$(jq -r '.migrations[0].progress.remaining_bytes // 0' <<<"$j")
pushed0=$(jq -r '.migrations[0].progress.pc_pages_pushed // 0' <<<"$j")
SOCK=$SRC expect_rc 0 "recover straight to the destination" \
	ctl migration recover pr1 "127.0.0.1:$port"
for _ in $(seq 600); do
	kill -0 "$send_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$send_pid" 2>/dev/null; then
	st "$SRC" pr1
	fail "pr1 not complete 60 s after the recovery: $PH $MSG"
	kill "$send_pid"
fi
wait "$send_pid"
rc=$?
j=$("$CTL" --socket "$DST" --json migration status pr1)
pushed1=$(jq -r '.migrations[0].progress.pc_pages_pushed // 0' <<<"$j")
if [ "${lack:-0}" -gt 0 ]; then
	[ "${pushed1:-0}" -gt "${pushed0:-0}" ] &&
		ok "the push went on after the recovery ($pushed0 -> $pushed1 pages pushed, $lack bytes were missing)" ||
		fail "nothing pushed after the recovery ($pushed0 -> $pushed1, $lack bytes were missing)"
else
	echo "note: nothing was missing at the last pause (push not checked)"
fi
tail -12 "$TMP/pr1.out"
[ "$rc" = 0 ] && ok "pr1 migrated after two recoveries (migrate-send rc=0)" ||
	fail "migrate-send rc=$rc"
grep -q "migration recover 1" "$TMP/pr1.out" &&
	ok "migrate-send said how to recover" ||
	fail "migrate-send did not say how to recover"
assert_verified_zero "$TMP/pr1.out" pr1
wait_phase "$DST" pr1 MIG_PHASE_COMPLETED 100 &&
	ok "destination COMPLETED" || fail "destination: $PH $MSG"
wait_state "$DST" pr1 VM_STATE_RUNNING && ok "pr1 runs on the destination" ||
	fail "pr1 on the destination: $(vm_state "$DST" pr1)"
expect_intact "every page stamp intact on the destination" "$DST" pr1
SOCK=$SRC expect_rc 1 "recover of a finished migration is refused" \
	ctl migration recover pr1
grep -qE 'op=postcopy_in .*err=0 .*recoveries=2' "$TMP/dst.log" &&
	ok "the destination counted two recoveries" ||
	fail "no 'recoveries=2' in the destination's log"

# --- 4. the source killed during postcopy ---------------------------------
SOCK=$SRC expect_rc 0 "create pr2 (64M)" ctl vm create pr2 --mem 64M \
	--vcpus 2 --pattern random --rate 0 --content random --heartbeat-us 2000
sw=$(SOCK=$SRC ctl --json vm list | jq -r '.vms[] | select(.name == "pr2") | .worker_pid')
port=$("$RECV" --socket "$DST" --name pr2 127.0.0.1:0) || fail "migrate-recv: $port"
"$SEND" --socket "$SRC" --postcopy-after 0 --downtime 1 pr2 "127.0.0.1:$port" \
	>"$TMP/pr2.out" 2>&1 &
send_pid=$!
if wait_phase "$SRC" pr2 MIG_PHASE_POSTCOPY 400 && [ -n "$sw" ]; then
	kill -9 "$SRC_PID" "$sw" 2>/dev/null
	ok "source daemon $SRC_PID and its worker $sw killed in phase POSTCOPY"
	if wait_phase "$DST" pr2 MIG_PHASE_POSTCOPY_PAUSED 150; then
		grep -q "source gone" <<<"$MSG" && grep -q "partial memory" <<<"$MSG" &&
			ok "the destination reports it: $MSG" ||
			fail "destination message: $MSG"
	else
		fail "destination after the source died: $PH $MSG"
	fi
	[ "$(vm_state "$DST" pr2)" != VM_STATE_RUNNING ] &&
		ok "pr2 is not listed running on the destination" ||
		fail "pr2 runs on the destination on partial memory"
	SOCK=$DST expect_rc 0 "cancel the paused incoming migration" \
		ctl migration cancel pr2
	wait_phase "$DST" pr2 MIG_PHASE_CANCELLED 100 &&
		ok "destination CANCELLED: $MSG" || fail "after cancel: $PH $MSG"
	wait_state "$DST" pr2 absent 50 && ok "no pr2 left on the destination" ||
		fail "pr2 on the destination: $(vm_state "$DST" pr2)"
else
	fail "pr2 never in postcopy (phase $PH $MSG)"
fi
kill "$send_pid" 2>/dev/null
wait "$send_pid" 2>/dev/null
echo "elapsed: $SECONDS s"
finish
