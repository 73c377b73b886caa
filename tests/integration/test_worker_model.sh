#!/bin/bash
# The worker-per-VM model (migrated/host/host.h, migrated/vmm/worker.h)
# against real processes:
#   1. the daemon killed (-9) while two VMs dirty memory: the workers and
#      their guests run on; a new daemon re-adopts them (same pids) and
#      one of them then migrates and verifies;
#   2. a worker killed (-9): its VM is CRASHED with the signal, an event
#      says so, the other VM runs on, vm destroy removes it; a worker that
#      dies while no daemon runs is reported by the next daemon;
#   3. the source daemon killed during an outgoing migration: the VM runs
#      on the source, the next daemon reports the migration cancelled;
#   4. the destination daemon killed during an incoming migration: the VM
#      runs on the source, the destination worker exits, the next
#      destination daemon reports the outcome and lists no VM;
#   5. a record whose pid is alive but is another process (start time
#      differs) is not adopted.
# argv: migrated migratectl migrate-send migrate-recv
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
# KVM where /dev/kvm is there, else the soft accelerator.
# MIGD_IT_ACCEL=soft forces the soft one.
ACCEL=$(it_accel)
echo "accelerator: $ACCEL"
TLS=(--dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL")

# The largest heartbeat gap a guest may show across a daemon's death and
# re-adoption. The guests beat every 2 ms (--heartbeat-us 2000); the
# daemon is not on the path (its worker counts the beats), so any gap is
# scheduling: the ASan build, four vCPU threads and the daemons' start-up
# on two cores shared with other builds. Measured there at load average
# 12: 40-60 ms typical, spikes to 210 ms. 500 ms stays clear of those and
# well below the 1.5 s the daemon stays dead: a guest that stopped while
# no daemon ran shows at least that.
MAX_GAP_US=${MIGD_IT_MAX_GAP_US:-500000}
DEAD_S=1.5

vm_json() { ctl --json vm inspect "$1" 2>/dev/null; }
# listed NAME FIELD: a field of NAME's VmInfo in vm list (a CRASHED VM
# has no inspect: its guest is gone).
listed() {
	ctl --json vm list | jq -r --arg n "$1" \
		".vms[]? | select(.name == \$n) | .$2"
}
vm_state() { local s; s=$(listed "$1" state); echo "${s:-none}"; }
vm_pid() { local p; p=$(listed "$1" worker_pid); echo "${p:-0}"; }
hb_sum() { vm_json "$1" | jq '[.vcpus[].heartbeats] | add // 0'; }
nr_vms() { ctl --json vm list | jq '[.vms[]?] | length'; }
# alive PID: runs (a zombie does not: orphaned workers are init's
# children, and init may reap them late).
alive() {
	kill -0 "$1" 2>/dev/null &&
		! sed -E 's/.*\) //' "/proc/$1/stat" 2>/dev/null | grep -q '^[ZX]'
}
# wait_log FILE REGEX: up to 5 s for a line.
wait_log() {
	local file=$1 re=$2
	wait_until 'grep -qE "$re" "$file"' 5
}

# guest NAME [ACCEL]: a 64 MiB VM whose vCPUs sweep their regions with
# stamped pages (vm check verifies them) and beat every 2 ms.
guest() {
	expect_rc 0 "create $1 (${2:-$ACCEL})" ctl vm create "$1" --mem 64M \
		--vcpus 2 --pattern sweep --content stamp --rate 5000 \
		--heartbeat-us 2000 --accel "${2:-$ACCEL}"
}

# kill_daemon PID: SIGKILL a daemon and reap it.
kill_daemon() {
	kill -9 "$1"
	wait "$1" 2>/dev/null
}

# restart NAME: a new daemon on state dir NAME (the old log is kept as
# NAME.N.log); waits until it has adopted what it found.
restart() {
	local n=1
	while [ -e "$TMP/$1.$n.log" ]; do n=$((n + 1)); done
	mv "$TMP/$1.log" "$TMP/$1.$n.log"
	start_daemon "$1" "${TLS[@]}"
	[ "$1" = src ] && SRC=$SOCK SRC_PID=$DPID
	local log=$TMP/$1.log
	wait_until 'grep -q "event=adopt_done\|event=host_ready .*adopting=0" \
		"$log"' 5 && return 0
	fail "$1: the new daemon did not finish adopting: $(tail -5 "$TMP/$1.log")"
}

# check_clean SOCK NAME DESC: vm check finds every page's stamp right.
check_clean() {
	local out
	out=$(SOCK=$1 ctl vm check "$2" 2>&1) &&
		ok "$3: vm check clean" || fail "$3: vm check: $out"
}

# start_send NAME: migrate NAME from $SRC to $DST capped at 4 MB/s in the
# background (SP, report in $TMP/NAME.out); returns 1 (a failed check)
# unless the migration is iterating with pages sent: a fault injected
# into a migration that is not running would test nothing.
start_send() {
	local port phase= sent=0 st
	port=$("$RECV" --socket "$DST" --name "$1" 127.0.0.1:0) ||
		{ fail "migrate-recv $1: $port"; return 1; }
	"$SEND" --socket "$SRC" --bandwidth 4M "$1" "127.0.0.1:$port" \
		>"$TMP/$1.out" 2>&1 &
	SP=$!
	for _ in $(seq 100); do
		phase=$(SOCK=$SRC ctl --json migration status "$1" 2>/dev/null |
			jq -r '.. | .phase? // empty' | head -1)
		[ "$phase" = MIG_PHASE_ITERATE ] && break
		alive "$SP" || break
		sleep 0.05
	done
	sleep 0.7
	st=$(SOCK=$SRC ctl --json migration status "$1" 2>/dev/null)
	phase=$(jq -r '.. | .phase? // empty' <<<"$st" | head -1)
	sent=$(jq -r '[.. | .pages_sent? // empty] | first // 0' <<<"$st")
	MIG_ID=$(jq -r '[.. | .id? // empty] | first // 0' <<<"$st")
	if [ "$phase" != MIG_PHASE_ITERATE ] || [ "${sent:-0}" -eq 0 ] ||
		! alive "$SP"; then
		fail "$1: not iterating before the fault (phase ${phase:-none}," \
			"$sent pages sent): $(tail -4 "$TMP/$1.out")"
		kill "$SP" 2>/dev/null
		wait "$SP" 2>/dev/null
		return 1
	fi
	ok "$1: migration $MIG_ID iterating, $sent pages sent, when the fault comes"
}

# send_fails DESC NAME: migrate-send (SP) exits non-zero within 30 s.
send_fails() {
	local rc
	wait_until '! alive "$SP"' 30
	if alive "$SP"; then
		fail "$1: migrate-send still runs 30 s after the fault"
		kill "$SP"
	fi
	wait "$SP"
	rc=$?
	[ $rc -ne 0 ] && ok "$1: migrate-send fails (rc=$rc)" ||
		fail "$1: migrate-send exited 0: $(cat "$TMP/$2.out")"
}

# runs_on_source NAME DESC: RUNNING on $SRC, its guest writing.
runs_on_source() {
	local state s1 s2
	for _ in $(seq 50); do
		state=$(SOCK=$SRC vm_state "$1")
		[ "$state" = VM_STATE_RUNNING ] && break
		sleep 0.1
	done
	[ "$state" = VM_STATE_RUNNING ] && ok "$2: $1 RUNNING on the source" ||
		fail "$2: $1 on the source is $state"
	s1=$(SOCK=$SRC seq_sum "$1")
	sleep 0.5
	s2=$(SOCK=$SRC seq_sum "$1")
	[ "${s2:-0}" -gt "${s1:-0}" ] &&
		ok "$2: $1 keeps writing on the source ($s1 -> $s2)" ||
		fail "$2: $1 makes no progress on the source: $s1 -> $s2"
}

# dst_empty DESC: the destination daemon lists no VM.
dst_empty() {
	local n
	wait_until 'n=$(SOCK=$DST nr_vms); [ "$n" = 0 ]' 5
	[ "$n" = 0 ] && ok "$1: the destination lists no VM" ||
		fail "$1: the destination lists: $(SOCK=$DST ctl vm list)"
}

# mig_ended SOCK [NAME] DESC: migration status of NAME's latest migration
# ("": the daemon's latest) is CANCELLED or FAILED, with a reason.
mig_ended() {
	local st phase msg
	st=$(SOCK=$1 ctl --json migration status $2 2>&1)
	phase=$(jq -r '[.. | .phase? // empty] | first // "none"' <<<"$st" 2>/dev/null)
	msg=$(jq -r '[.. | .message? // empty] | first // ""' <<<"$st" 2>/dev/null)
	case "$phase" in
	MIG_PHASE_CANCELLED | MIG_PHASE_FAILED)
		[ -n "$msg" ] && ok "$3: migration status: $phase, \"$msg\"" ||
			fail "$3: migration $phase without a reason: $st" ;;
	*) fail "$3: migration status: ${phase}: $st" ;;
	esac
}

# ---- 1. daemon killed while two VMs run; re-adoption; then a migration
start_daemon src "${TLS[@]}"
SRC=$SOCK
SRC_PID=$DPID
if [ "$(ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi
# With KVM, w2 runs on the soft accelerator: both survive their daemon.
guest w1
guest w2 soft
sleep 1
P1=$(vm_pid w1)
P2=$(vm_pid w2)
[ "$P1" -gt 0 ] && [ "$P2" -gt 0 ] && [ "$P1" != "$P2" ] &&
	ok "1: w1 and w2 run in workers $P1 and $P2" ||
	fail "1: worker pids '$P1' '$P2'"
H0=$(hb_sum w1)
T0=$(date +%s%N)
sleep 0.5
S1=$(seq_sum w1)
H1=$(hb_sum w1)
S2=$(seq_sum w2)
T1=$(date +%s%N)
kill_daemon "$SRC_PID"
sleep "$DEAD_S"
alive "$P1" && alive "$P2" && ok "1: both workers outlive the daemon" ||
	fail "1: a worker died with its daemon ($P1, $P2)"
[ "$(grep -c "event=orphaned" "$TMP/src.log")" = 2 ] &&
	ok "1: both workers logged that they are orphaned" ||
	fail "1: orphan lines: $(grep orphaned "$TMP/src.log")"
restart src
DEAD_MS=$((($(date +%s%N) - T1) / 1000000))
L=$(ctl --json vm list)
[ "$(jq -r '[.vms[] | .name + ":" + .state] | sort | join(",")' <<<"$L")" = \
	"w1:VM_STATE_RUNNING,w2:VM_STATE_RUNNING" ] &&
	ok "1: the new daemon lists w1 and w2 RUNNING" || fail "1: vm list: $L"
[ "$(jq -r '.vms[] | select(.name == "w1") | .worker_pid' <<<"$L")" = "$P1" ] &&
	[ "$(jq -r '.vms[] | select(.name == "w2") | .worker_pid' <<<"$L")" = "$P2" ] &&
	ok "1: ... in the same workers (re-adopted, not restarted)" ||
	fail "1: worker pids changed: $P1 $P2 -> $L"
[ "$(grep -c "event=worker_adopted.*orphaned=yes" "$TMP/src.log")" = 2 ] &&
	ok "1: ... the log says both were adopted" ||
	fail "1: adoption lines: $(grep -E "adopt" "$TMP/src.log")"
# Heartbeats went on while no daemon ran: at least half as many as the
# rate measured just before the kill gives for that time, and no gap
# longer than MAX_GAP_US across the whole life of either guest.
I1=$(vm_json w1)
S1b=$(jq '[.vcpus[].seq] | add' <<<"$I1")
H1b=$(jq '[.vcpus[].heartbeats] | add' <<<"$I1")
S2b=$(seq_sum w2)
[ "$S1b" -gt "$S1" ] && [ "$S2b" -gt "$S2" ] &&
	ok "1: the guests kept writing (w1 $S1 -> $S1b, w2 $S2 -> $S2b)" ||
	fail "1: seq: w1 $S1 -> $S1b, w2 $S2 -> $S2b"
want=$(((H1 - H0) * DEAD_MS * 1000000 / (T1 - T0) / 2))
[ $((H1b - H1)) -ge "$want" ] &&
	ok "1: w1 beat $((H1b - H1)) times in ${DEAD_MS} ms without a" \
		"daemon (>= $want)" ||
	fail "1: w1 beat $((H1b - H1)) times in ${DEAD_MS} ms (wanted >= $want)"
for v in w1 w2; do
	gap=$(vm_json "$v" | jq '[.vcpus[].max_heartbeat_gap_us] | max')
	age=$(vm_json "$v" | jq '[.vcpus[].last_heartbeat_age_ms] | max')
	[ "$gap" -lt "$MAX_GAP_US" ] && [ "$age" -lt $((MAX_GAP_US / 1000)) ] &&
		ok "1: $v: largest heartbeat gap ${gap} us, last beat" \
			"${age} ms ago (< $MAX_GAP_US us)" ||
		fail "1: $v: heartbeat gap ${gap} us, last ${age} ms ago" \
			"(bound $MAX_GAP_US us)"
done
check_clean "$SRC" w2 "1: re-adopted w2"
# A migration of a re-adopted VM to a second daemon.
start_daemon dst "${TLS[@]}"
DST=$SOCK
port=$("$RECV" --socket "$DST" --name w1 127.0.0.1:0) ||
	fail "1: migrate-recv: $port"
expect_rc 0 "1: migrate the re-adopted w1" \
	"$SEND" --socket "$SRC" w1 "127.0.0.1:$port"
echo "$LAST_OUT" >"$TMP/w1.out"
assert_verified_zero "$TMP/w1.out" "1: w1"
[ "$(SOCK=$DST vm_state w1)" = VM_STATE_RUNNING ] &&
	ok "1: w1 runs on the destination" ||
	fail "1: w1 on the destination: $(SOCK=$DST vm_state w1)"
check_clean "$DST" w1 "1: w1 on the destination"
SOCK=$SRC expect_rc 3 "1: the source no longer has w1" ctl vm inspect w1
wait_until '! alive "$P1"' 5
alive "$P1" && fail "1: w1's source worker $P1 still runs" ||
	ok "1: w1's source worker exited"
SOCK=$DST ctl vm destroy w1 >/dev/null

# ---- 2. a worker killed -9 -------------------------------------------
SOCK=$SRC
guest w3
P3=$(vm_pid w3)
ctl --json events --kind vm >"$TMP/events" 2>&1 &
EVP=$!
sleep 0.3
kill -9 "$P3"
for _ in $(seq 50); do
	[ "$(vm_state w3)" = VM_STATE_CRASHED ] && break
	sleep 0.1
done
L=$(ctl --json vm list)
why=$(jq -r '.vms[] | select(.name == "w3") | .exit_reason' <<<"$L")
[ "$(jq -r '.vms[] | select(.name == "w3") | .state' <<<"$L")" = VM_STATE_CRASHED ] &&
	ok "2: w3 is CRASHED after kill -9 of its worker" || fail "2: vm list: $L"
grep -q "signal 9" <<<"$why" && ok "2: exit_reason: $why" ||
	fail "2: exit_reason does not name signal 9: '$why'"
sleep 0.3
kill "$EVP" 2>/dev/null
wait "$EVP" 2>/dev/null
jq -e 'select(.vm_state.vm.name == "w3" and
	.vm_state.vm.state == "VM_STATE_CRASHED") |
	.vm_state.vm.exit_reason | test("signal 9")' "$TMP/events" >/dev/null 2>&1 &&
	ok "2: a VM_STATE event reported w3 CRASHED by signal 9" ||
	fail "2: no CRASHED event for w3: $(cat "$TMP/events")"
runs_on_source w2 "2"
for c in "vm inspect" "vm pause" "vm check" "dirty"; do
	expect_rc 1 "2: $c w3 refused" ctl $c w3
	grep -q "crashed" <<<"$LAST_OUT" && grep -q "signal 9" <<<"$LAST_OUT" &&
		ok "2: ... saying why: $LAST_OUT" || fail "2: $c w3 says: $LAST_OUT"
done
expect_rc 0 "2: vm destroy removes the crashed w3" ctl vm destroy w3
expect_rc 3 "2: ... w3 is gone" ctl vm inspect w3
[ "$(nr_vms)" = 1 ] && ok "2: only w2 is listed" || fail "2: $(ctl vm list)"
ls "$TMP/src/vms/"*.rec 2>/dev/null | xargs grep -l "^vm=w3$" >/dev/null 2>&1 &&
	fail "2: w3's record is left in $TMP/src/vms" || ok "2: w3's record removed"
# A worker that dies while no daemon runs: the next daemon says so.
kill_daemon "$SRC_PID"
kill -9 "$P2"
sleep 0.3
restart src
why=$(listed w2 exit_reason)
[ "$(vm_state w2)" = VM_STATE_CRASHED ] &&
	grep -q "exited while no daemon watched it" <<<"$why" &&
	ok "2: w2, killed while no daemon ran, is CRASHED: $why" ||
	fail "2: w2 after the restart: $(ctl --json vm list)"
expect_rc 0 "2: vm destroy removes w2" ctl vm destroy w2

# ---- 3. source daemon killed during an outgoing migration -------------
start_daemon dst3 "${TLS[@]}"
DST=$SOCK
SOCK=$SRC
expect_rc 0 "3: create o1" ctl vm create o1 --mem 128M --vcpus 2 \
	--content random --rate 8000 --heartbeat-us 2000
sleep 0.5
PO=$(vm_pid o1)
if start_send o1; then
	kill_daemon "$SRC_PID"
	send_fails 3 o1
	wait_log "$TMP/src.log" \
		"event=migration_cancelled mig=$MIG_ID why=\"daemon gone\"" &&
		ok "3: the orphaned worker cancelled it" ||
		fail "3: no cancel in the worker's log"
	restart src
	[ "$(vm_pid o1)" = "$PO" ] && ok "3: o1 re-adopted in worker $PO" ||
		fail "3: o1's worker: $PO -> $(vm_pid o1)"
	runs_on_source o1 "3"
	check_clean "$SRC" o1 "3: o1 on the source"
	dst_empty "3"
	mig_ended "$SRC" o1 "3: new source daemon"
	SOCK=$SRC ctl vm destroy o1 >/dev/null
fi

# ---- 4. destination daemon killed during an incoming migration --------
start_daemon dst4 "${TLS[@]}"
DST=$SOCK
DST_PID=$DPID
SOCK=$SRC
expect_rc 0 "4: create i1" ctl vm create i1 --mem 128M --vcpus 2 \
	--content random --rate 8000 --heartbeat-us 2000
sleep 0.5
if start_send i1; then
	dw=$(pgrep -f -- "migrated-vmm .*--state-dir $TMP/dst4 " | head -1)
	kill_daemon "$DST_PID"
	send_fails 4 i1
	runs_on_source i1 "4"
	check_clean "$SRC" i1 "4: i1 on the source"
	# Up to 15 s: the orphan cancels, tells the source, discards what
	# it received and writes its outcome; one fresh-clone ASan run took
	# longer than 5 s here (not understood yet, see the issue notes).
	wait_until '! alive "$dw"' 15
	[ -n "$dw" ] && ! alive "$dw" &&
		ok "4: the destination worker ($dw) exited" ||
		fail "4: destination worker '$dw' still runs"
	ls "$TMP/dst4/vms/"*.outcome >/dev/null 2>&1 &&
		ok "4: it left its outcome in $TMP/dst4/vms" ||
		fail "4: no outcome file: $(ls "$TMP/dst4/vms")"
	restart dst4
	DST=$SOCK
	mig_ended "$DST" "" "4: new destination daemon"
	st=$(SOCK=$DST ctl --json migration status)
	[ "$(jq -r '.migrations[0] | .direction + " " + .vm' <<<"$st")" = \
		"MIG_DIRECTION_INCOMING i1" ] &&
		ok "4: ... the incoming migration of i1" ||
		fail "4: migration status: $st"
	ls "$TMP/dst4/vms/"*.outcome >/dev/null 2>&1 &&
		fail "4: the outcome file was not consumed" ||
		ok "4: ... the outcome file consumed"
	grep -q "event=migration_outcome .*how=\"finished while no daemon ran\"" \
		"$TMP/dst4.log" && ok "4: ... read from the outcome file" ||
		fail "4: no outcome line in the new daemon's log"
	dst_empty "4"
	SOCK=$SRC ctl vm destroy i1 >/dev/null
fi

# ---- 5. a recycled pid is not adopted ----------------------------------
mkdir -p -m 700 "$TMP/r5/vms"
sleep 100 &
SLP=$!
PIDS+=("$SLP")
st=$(sed -E 's/.*\) //' "/proc/$SLP/stat" | cut -d' ' -f20)
printf 'wid=7\npid=%d\nstart_time=%llu\nsocket=%s\nvm=ghost\ncrashed=\n' \
	"$SLP" $((st + 1)) "$TMP/r5/vms/7.sock" >"$TMP/r5/vms/7.rec"
start_daemon r5 "${TLS[@]}"
sleep 0.5
alive "$SLP" && ok "5: the process behind the recycled pid runs on" ||
	fail "5: the daemon killed pid $SLP"
grep -q "event=worker_adopted\|adopt_failed" "$TMP/r5.log" &&
	fail "5: the daemon tried to adopt pid $SLP: $(grep adopt "$TMP/r5.log")" ||
	ok "5: no adoption of pid $SLP"
grep -q "event=record_not_adopted wid=7 pid=$SLP .*recycled" "$TMP/r5.log" &&
	ok "5: the log says why: $(grep -o 'event=record_not_adopted.*' "$TMP/r5.log")" ||
	fail "5: nothing logged about the recycled pid: $(cat "$TMP/r5.log")"
# Its VM is reported as a worker that died while no daemon watched it.
[ "$(vm_state ghost)" = VM_STATE_CRASHED ] &&
	grep -q "exited while no daemon watched it" <<<"$(listed ghost exit_reason)" &&
	ok "5: ghost is listed CRASHED: $(listed ghost exit_reason)" ||
	fail "5: ghost: $(ctl --json vm list)"
expect_rc 0 "5: vm destroy removes ghost" ctl vm destroy ghost
alive "$SLP" && ok "5: ... and pid $SLP still runs" ||
	fail "5: vm destroy killed pid $SLP"
finish
