#!/bin/bash
# The commit handshake between real daemons, with a message lost or a
# daemon killed at an exact step (MIGRATED_FAULTPOINTS, one daemon at a
# time; migrated/mig/faultpoint.h):
#   1. destination (its worker) killed when the Commit arrives (dst.commit=kill): no
#      word reaches the source -> UNRESOLVED, migrate-send exits 6, the VM
#      paused on the source; resolve --resume-source runs it again;
#   2. Resumed lost (dst.resumed.send=drop): the destination runs the VM
#      -> UNRESOLVED, exit 6; the orchestrator asks the destination, then
#      resolve --confirm-destination frees the source's copy;
#   3. Commit lost (src.commit.send=drop on the source): the destination
#      gives up and says so -> the source resumes by itself, exit 1;
#   4. a source page changed after the Ack (written into the paused VM's
#      memfd while the source stalls at src.acked): the VM runs on the
#      destination, the post-commit verification finds the page, and
#      that is an error: migrate-send exits 7, the event and the metrics
#      say so;
#   5. a destination whose engine is slow to end after Resumed
#      (dst.done=sleep:2000): the moment migrate-send returned, the
#      destination daemon lists the VM as running and checks its pages.
# After every step: the VM is never running on both daemons.
# KVM where available, else the soft accelerator: this runs everywhere.
# argv: migrated migratectl migrate-send migrate-recv
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
# $TEST_ACCEL forces one (the soft run where KVM exists too); else
# MIGD_IT_ACCEL as ctest sets it (lib.sh it_accel).
ACCEL=${TEST_ACCEL:-$(it_accel)}
echo "accelerator: $ACCEL"

# src_daemon NAME FAULTS / dst_daemon NAME FAULTS: a fresh daemon with
# those faults armed, as the source (SRC, SRC_LOG) or the destination (DST,
# DST_PID). A 3 s I/O timeout: a destination gives up on a lost Commit
# after 1.5 s.
src_daemon() {
	MIGRATED_FAULTPOINTS=$2 start_daemon "$1" --accel "$ACCEL" \
		--dev-tls --tls-dir "$TMP/tls" --metrics-listen 127.0.0.1:0 \
		--migration-io-timeout-ms 3000
	SRC=$SOCK
	SRC_LOG=$TMP/$1.log
}
dst_daemon() {
	MIGRATED_FAULTPOINTS=$2 start_daemon "$1" --accel "$ACCEL" \
		--dev-tls --tls-dir "$TMP/tls" --migration-io-timeout-ms 3000
	DST=$SOCK
	DST_PID=$DPID
}

# A small guest writing steadily: the migration converges at once.
guest() { # NAME [vm create options]
	local n=$1
	shift
	SOCK=$SRC expect_rc 0 "create $n" ctl vm create "$n" --mem 64M \
		--vcpus 1 --rate 2000 --heartbeat-us 2000 "$@"
}

# migrate NAME: migrate-send to a fresh listener on DST; sets SEND_RC.
migrate() {
	local port
	port=$("$RECV" --socket "$DST" --name "$1" 127.0.0.1:0) ||
		{ fail "migrate-recv $1: $port"; return 1; }
	"$SEND" --socket "$SRC" "$1" "127.0.0.1:$port" >"$TMP/$1.out" 2>&1
	SEND_RC=$?
}

# state SOCK NAME -> VM_STATE_* or "none" (no such VM / daemon gone)
state() {
	SOCK=$1 ctl --json vm inspect "$2" 2>/dev/null | jq -r .info.state ||
		echo none
}
seq_of() { SOCK=$1 ctl --json vm inspect "$2" 2>/dev/null | jq '[.vcpus[]?.seq] | add // 0'; }

# where NAME WANT: WANT is src, dst or none; never both. "Runs" means
# RUNNING there with the guest's counters moving (one shared 0.3 s wait).
where() {
	local s=0 d=0 got sa sb da db
	sa=$(seq_of "$SRC" "$1")
	[ -n "$DST" ] && da=$(seq_of "$DST" "$1")
	sleep 0.3
	sb=$(seq_of "$SRC" "$1")
	[ -n "$DST" ] && db=$(seq_of "$DST" "$1")
	[ "$(state "$SRC" "$1")" = VM_STATE_RUNNING ] &&
		[ "${sb:-0}" -gt "${sa:-0}" ] && s=1
	[ -n "$DST" ] && [ "$(state "$DST" "$1")" = VM_STATE_RUNNING ] &&
		[ "${db:-0}" -gt "${da:-0}" ] && d=1
	case "$s$d" in
	11) fail "$1: the VM runs on BOTH daemons"; return ;;
	10) got=src ;;
	01) got=dst ;;
	00) got=none ;;
	esac
	[ "$got" = "$2" ] && ok "$1: runs on $2 only" ||
		fail "$1: runs on $got, wanted $2"
}

# metric NAME: its value on the current source daemon.
metric() {
	local port
	port=$(sed -n 's/.*comp=migd.metrics event=listening addr=[^:]*:\([0-9]*\).*/\1/p' \
		"$SRC_LOG" | head -1)
	curl -sf "http://127.0.0.1:$port/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

phase() {
	SOCK=$1 ctl --json migration status "$2" 2>/dev/null |
		jq -r '.migrations[0].progress.phase'
}

# 1. The destination dies when the Commit arrives.
src_daemon src1 ""
dst_daemon dst1 "dst.commit=kill"
guest k1
migrate k1
[ "$SEND_RC" = 6 ] && ok "k1: migrate-send exits 6 (unresolved)" ||
	fail "k1: migrate-send exit $SEND_RC: $(tail -5 "$TMP/k1.out")"
grep -q "resolve" "$TMP/k1.out" && ok "k1: the report says how to resolve" ||
	fail "k1: report: $(cat "$TMP/k1.out")"
# The fault kills the process that runs the migration: the destination's
# worker. Its daemon lives on and reports that worker's migration failed;
# it never had the VM.
dworkers() { pgrep -f -- "migrated-vmm .*--state-dir $TMP/dst1/" || true; }
for _ in $(seq 50); do [ -z "$(dworkers)" ] && break; sleep 0.1; done
[ -z "$(dworkers)" ] && ok "k1: destination worker died at dst.commit" ||
	fail "k1: destination worker still alive: $(dworkers)"
SOCK=$DST expect_rc 3 "k1: the destination has no k1" ctl vm inspect k1
kill -9 "$DST_PID" 2>/dev/null
wait "$DST_PID" 2>/dev/null
DST=
[ "$(state "$SRC" k1)" = VM_STATE_UNRESOLVED ] && ok "k1: source VM unresolved" ||
	fail "k1: source VM state $(state "$SRC" k1)"
[ "$(phase "$SRC" k1)" = MIG_PHASE_UNRESOLVED ] && ok "k1: migration unresolved" ||
	fail "k1: migration phase $(phase "$SRC" k1)"
where k1 none
[ "$(metric migd_migration_unresolved_total)" = 1 ] && ok "k1: counted unresolved" ||
	fail "k1: migd_migration_unresolved_total $(metric migd_migration_unresolved_total)"
[ "$(metric 'migd_vms{state="unresolved"}')" = 1 ] && ok "k1: metrics show the VM unresolved" ||
	fail "k1: migd_vms unresolved $(metric 'migd_vms{state="unresolved"}')"
SOCK=$SRC expect_rc 1 "k1: the VM API refuses it while unresolved" ctl vm resume k1
SOCK=$SRC expect_rc 0 "k1: resolve --resume-source" \
	ctl migration resolve k1 --resume-source
where k1 src
[ "$(phase "$SRC" k1)" = MIG_PHASE_FAILED ] && ok "k1: migration now failed" ||
	fail "k1: migration phase $(phase "$SRC" k1)"
SOCK=$SRC expect_rc 1 "k1: a second resolve is refused" \
	ctl migration resolve k1 --confirm-destination

# 2. Resumed is lost: the destination runs the VM, the source cannot know.
#    (The source of step 1 again.)
dst_daemon dst2 "dst.resumed.send@1=drop"
guest r3
migrate r3
[ "$SEND_RC" = 6 ] && ok "r3: migrate-send exits 6 (unresolved)" ||
	fail "r3: migrate-send exit $SEND_RC: $(tail -5 "$TMP/r3.out")"
where r3 dst
[ "$(state "$SRC" r3)" = VM_STATE_UNRESOLVED ] && ok "r3: source copy kept, paused" ||
	fail "r3: source VM state $(state "$SRC" r3)"
# The orchestrator's question to the destination.
[ "$(phase "$DST" r3)" = MIG_PHASE_COMPLETED ] && ok "r3: the destination says it runs r3" ||
	fail "r3: destination phase $(phase "$DST" r3)"
SOCK=$SRC expect_rc 2 "r3: resolve needs an action" ctl migration resolve r3
SOCK=$SRC expect_rc 0 "r3: resolve --confirm-destination" \
	ctl migration resolve r3 --confirm-destination
grep -q "differ" <<<"$LAST_OUT" && ok "r3: verified after confirmation" ||
	fail "r3: resolve said: $LAST_OUT"
SOCK=$SRC expect_rc 3 "r3: the source's copy is gone" ctl vm inspect r3
[ "$(phase "$SRC" r3)" = MIG_PHASE_COMPLETED ] && ok "r3: migration completed" ||
	fail "r3: migration phase $(phase "$SRC" r3)"
[ "$(metric migd_migration_verify_failures_total)" = 0 ] && ok "r3: no verification failure counted" ||
	fail "r3: verify failures $(metric migd_migration_verify_failures_total)"
# 3. The Commit is lost: the destination gives up (half its I/O timeout)
#    and its Abort lets the source resume.
#    (The destination of step 2 again: the Commit never reaches it.)
src_daemon src3 "src.commit.send@1=drop,src.acked@2=sleep:1000"
guest c2
migrate c2
[ "$SEND_RC" = 1 ] && ok "c2: migrate-send exits 1 (failed, VM on source)" ||
	fail "c2: migrate-send exit $SEND_RC: $(tail -5 "$TMP/c2.out")"
where c2 src
grep -q "no commit within" "$TMP/c2.out" && ok "c2: the destination's reason is reported" ||
	fail "c2: report: $(cat "$TMP/c2.out")"
SOCK=$DST expect_rc 3 "c2: the destination holds no c2" ctl vm inspect c2


# 4. A page changed behind the engine's back after the Ack. A source
#    daemon of its own (fault points count per worker process, and each
#    VM has its own); v4's worker process holds its memfd (a memfd
#    backing, so that the test can write it through /proc).
SOCK=$SRC expect_rc 0 "v4: c2 destroyed" ctl vm destroy c2
src_daemon src4 "src.acked@1=sleep:1000"
dst_daemon dst4 ""
guest v4 --backing memfd
spid=$(SOCK=$SRC ctl --json vm inspect v4 | jq -r .info.worker_pid)
# The memfd is found before the migration: the write must land inside the
# source's 1 s stall after the Ack, which on a slow machine (KVM nested
# under TCG) an ls of /proc in that window could miss.
fd=$(ls -l /proc/"$spid"/fd 2>/dev/null | awk '/memfd:hv-guest-ram/ { print $9; exit }')
port=$("$RECV" --socket "$DST" --name v4 127.0.0.1:0) || fail "migrate-recv v4: $port"
"$SEND" --socket "$SRC" --json v4 "127.0.0.1:$port" >"$TMP/v4.out" 2>&1 &
sp=$!
for _ in $(seq 100); do
	[ "$(grep -c 'op=faultpoint name=src.acked action=sleep' "$SRC_LOG")" -ge 1 ] && break
	sleep 0.02
done
if [ -n "$fd" ] &&
	printf 'changed after the ack' | dd of=/proc/"$spid"/fd/"$fd" bs=4096 \
		seek=4096 conv=notrunc status=none; then
	ok "v4: wrote a page into the paused source VM"
else
	fail "v4: could not write the source's memory (pid $spid fd $fd)"
fi
wait "$sp"
rc=$?
[ "$rc" = 7 ] && ok "v4: migrate-send exits 7 (verification mismatch)" ||
	fail "v4: migrate-send exit $rc: $(tail -3 "$TMP/v4.out")"
[ "$(tail -1 "$TMP/v4.out" | jq -r '.progress.verify_failed')" = true ] &&
	ok "v4: the final event says verify_failed" ||
	fail "v4: final event: $(tail -1 "$TMP/v4.out")"
[ "$(tail -1 "$TMP/v4.out" | jq -r '.progress.verify_mismatches')" = 1 ] &&
	ok "v4: one page differs" ||
	fail "v4: mismatches $(tail -1 "$TMP/v4.out" | jq -r '.progress.verify_mismatches')"
where v4 dst
[ "$(metric migd_migration_verify_failures_total)" = 1 ] && ok "v4: counted as a verification failure" ||
	fail "v4: verify failures $(metric migd_migration_verify_failures_total)"

# 5. The source hears of the success only once the destination registered
#    the VM: its engine still sleeps 5 s after Resumed, and yet the VM is
#    listed, running and checkable there the moment migrate-send returns.
dst_daemon dst5 "dst.done@1=sleep:5000"
guest n5
migrate n5
[ "$SEND_RC" = 0 ] && ok "n5: migrated" ||
	fail "n5: migrate-send exit $SEND_RC: $(tail -5 "$TMP/n5.out")"
SOCK=$DST ctl --json vm list >"$TMP/n5.list" 2>&1
grep -q "event=migration_finished.*vm=n5" "$TMP/dst5.log" &&
	fail "n5: the destination's engine had ended already (no race tested)"
[ "$(jq -r '[.vms[]? | select(.name == "n5") | .state] | first // "none"' \
	"$TMP/n5.list")" = VM_STATE_RUNNING ] &&
	ok "n5: listed as running on the destination at once" ||
	fail "n5: destination list right after migrate-send: $(cat "$TMP/n5.list")"
SOCK=$DST expect_rc 0 "n5: its pages check on the destination at once" \
	ctl vm check n5
finish
