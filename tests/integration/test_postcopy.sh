#!/bin/bash
# Postcopy between two real daemons on loopback (soft accelerator): a
# 256 MiB guest writing random pages flat out cannot converge without a
# throttle; with --postcopy-after 0 it switches after the first pass, runs
# on the destination at once and pulls what it lacks. It must complete,
# pass the source's post-commit verification (every page re-hashed
# against the digest the destination computed as it installed them), pass
# the page-stamp oracle on the destination, and keep running there.
# Then the switch asked for by RPC (migratectl migration postcopy) on a
# precopy held back by a bandwidth cap; then the source's worker killed
# during a postcopy: the destination must say so (paused, waiting for a
# recovery that cannot come: test_postcopy_recover.sh) and never run the
# VM as a finished migration.
# Every migrate-send runs under its own deadline ($MIGD_IT_DEADLINE, 60 s):
# a postcopy that stalls (a page installed at the wrong place leaves the
# guest faulting on the one it needs, for ever) fails here, saying where
# it stood, not at ctest's timeout. Every page's stamp is checked on the
# destination after each completed postcopy.
source "$(dirname "$0")/lib_faults.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
[ -e /dev/userfaultfd ] || [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 1 ] ||
	[ "$(id -u)" = 0 ] || { echo "SKIP: no userfaultfd for this user"; exit 77; }
# Soft in the plain test; its "kvm"-labelled twin (MIGD_IT_ACCEL=kvm) runs
# pc1 on KVM: the guest faults on missing pages through KVM's own page
# walk into our userfaultfd. The cases after pc1 test the engine's
# controls, the same on either accelerator, and are left to the plain test.
ACCEL=$(MIGD_IT_ACCEL=${MIGD_IT_ACCEL:-soft} it_accel)
echo "accelerator: $ACCEL"
start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi

MEM=256M
# KVM nested under TCG (tools/kvmrig): a guest's first touch of a page
# costs ~80 us there; 64 MiB is thousands of faulted pages all the same.
[ "$ACCEL" = kvm ] && [ -n "${KVMRIG:-}" ] && MEM=64M
MEM=${MIGD_IT_PC_MEM:-$MEM}
# 60 s: more than six times what pc1 takes with the ASan build on two
# busy cores (9 s, a build running alongside); the TSan build is slower.
DEADLINE=60
ldd "$MIGRATED" 2>/dev/null | grep -q libtsan && DEADLINE=110
DEADLINE=${MIGD_IT_DEADLINE:-$DEADLINE}

# deadline_hit NAME RC: RC is timeout(1)'s for a migrate-send that did
# not end in time; then fail now, saying what each side was doing (the
# checks after it would only wait on the same stall).
deadline_hit() {
	[ "$2" = 124 ] || [ "$2" = 137 ] || return 0
	fail "$1: migrate-send still running after ${DEADLINE}s (postcopy stalled?)"
	echo "  source: $(SOCK=$SRC ctl --json migration status "$1" 2>/dev/null |
		jq -c '.migrations[0].progress | {phase, message}')"
	echo "  destination: $(SOCK=$DST ctl --json migration status "$1" 2>/dev/null |
		jq -c '.migrations[0].progress | with_entries(select(.key |
			test("phase|pc_|postcopy|message")))')"
	finish
}
SOCK=$SRC expect_rc 0 "create pc1 ($MEM, random pages flat out)" \
	ctl vm create pc1 --mem "$MEM" --vcpus 2 --pattern random --rate 0 \
	--content random --heartbeat-us 2000
sleep 1
before=$(seq_total "$SRC" pc1)
port=$("$RECV" --socket "$DST" --name pc1 127.0.0.1:0) || fail "migrate-recv: $port"
expect_rc 0 "migrate pc1 with --postcopy-after 0" timeout -k 5 "$DEADLINE" \
	"$SEND" --socket "$SRC" --postcopy-after 0 --downtime 1 pc1 "127.0.0.1:$port"
deadline_hit pc1 "$LAST_RC"
echo "$LAST_OUT" | tail -12
echo "$LAST_OUT" >"$TMP/pc1.out"
grep -q "warning: postcopy enabled" "$TMP/pc1.out" &&
	ok "the risk is stated when postcopy is enabled" ||
	fail "no postcopy warning"
line=$(grep -E '^ *postcopy: ' "$TMP/pc1.out")
unsent=$(sed -nE 's/^ *postcopy: +([0-9]+) pages missing.*/\1/p' <<<"$line")
[ -n "$unsent" ] && [ "$unsent" -gt 0 ] &&
	ok "it switched to postcopy with $unsent pages missing ($line)" ||
	fail "no postcopy in the report: $line"
assert_verified_zero "$TMP/pc1.out" pc1
# The switch as the guest saw it: the source's last heartbeat to the
# destination's first, reported with the PostcopyDone.
gs=$(sed -nE 's/^ *guest saw: +(.*) without a heartbeat/\1/p' "$TMP/pc1.out")
[ -n "$gs" ] && ok "guest-seen switch downtime reported: $gs" ||
	fail "no guest-seen downtime in the postcopy report"
SOCK=$SRC expect_rc 3 "the source no longer has pc1" ctl vm inspect pc1
# The destination daemon lists the VM when its worker's event arrives,
# which may come just after migrate-send returned.
for _ in $(seq 100); do
	i=$(SOCK=$DST ctl --json vm inspect pc1 2>/dev/null)
	[ "$(json_get "$i" .info.state)" = VM_STATE_RUNNING ] && break
	sleep 0.1
done
[ "$(json_get "$i" .info.state)" = VM_STATE_RUNNING ] &&
	ok "pc1 runs on the destination" || fail "dest state: $i"
after=$(seq_total "$DST" pc1)
[ "${after:-0}" -ge "$before" ] && ok "guest state carried ($before -> $after)" ||
	fail "seq went back: $before -> $after"
l1=$(SOCK=$DST ctl --json vm inspect pc1 | jq '[.vcpus[] | .seq + .heartbeats] | add')
sleep 0.5
l2=$(SOCK=$DST ctl --json vm inspect pc1 | jq '[.vcpus[] | .seq + .heartbeats] | add')
[ "${l2:-0}" -gt "${l1:-0}" ] && ok "guest keeps running on the destination ($l1 -> $l2)" ||
	fail "no progress on the destination: $l1 -> $l2"
expect_intact "every page stamp intact on the destination" "$DST" pc1
# The destination's own account: pages missing, asked for, fault latency.
s=$(SOCK=$DST ctl --json migration status pc1)
echo "destination: $(echo "$s" | jq -c '.migrations[0].progress | with_entries(select(.key | test("pc_|postcopy|phase")))')"
[ "$(echo "$s" | jq -r '.migrations[0].progress.postcopy')" = true ] &&
	ok "the destination reports the postcopy" || fail "destination status: $s"
[ "$ACCEL" = kvm ] && finish

# The switch asked for by RPC on a running precopy (migratectl migration
# postcopy): a link capped at 8 MB/s keeps the first pass going.
SOCK=$SRC expect_rc 0 "create pc3 (64M)" ctl vm create pc3 --mem 64M \
	--vcpus 1 --pattern random --rate 0 --content random --heartbeat-us 2000
port=$("$RECV" --socket "$DST" --name pc3 127.0.0.1:0) || fail "migrate-recv: $port"
timeout -k 5 "$DEADLINE" "$SEND" --socket "$SRC" --bandwidth 8M pc3 \
	"127.0.0.1:$port" >"$TMP/pc3.out" 2>&1 &
send_pid=$!
for _ in $(seq 200); do
	ph=$(SOCK=$SRC ctl --json migration status pc3 2>/dev/null |
		jq -r '.migrations[0].progress.phase // empty')
	[ "$ph" = MIG_PHASE_ITERATE ] && break
	sleep 0.05
done
SOCK=$SRC expect_rc 0 "migratectl migration postcopy pc3 (in $ph)" ctl migration postcopy pc3
grep -q "warning: after the postcopy switch" <<<"$LAST_OUT" &&
	ok "migratectl states the risk" || fail "no warning: $LAST_OUT"
wait "$send_pid"
rc=$?
deadline_hit pc3 "$rc"
[ "$rc" = 0 ] && ok "pc3 migrated (rc=0)" || fail "pc3: migrate-send rc=$rc: $(tail -5 "$TMP/pc3.out")"
grep -qE '^ *postcopy: +[0-9]+ pages missing' "$TMP/pc3.out" &&
	ok "pc3 switched to postcopy on request" || fail "pc3 did not switch: $(tail -8 "$TMP/pc3.out")"
assert_verified_zero "$TMP/pc3.out" pc3
wait_state "$DST" pc3 VM_STATE_RUNNING 100 ||
	fail "pc3 not running on the destination: $(vm_state "$DST" pc3)"
expect_intact "every page stamp of pc3 intact on the destination" "$DST" pc3
SOCK=$SRC expect_rc 1 "postcopy of a finished migration is refused" ctl migration postcopy pc3
echo "  ($LAST_OUT)"

# --bandwidth holds after the switch too: the background push of pcb
# (32 MiB written flat out, nearly all of it re-dirtied by the switch)
# at 8 MiB/s takes seconds; uncapped it took a fraction of one (~165
# MiB/s seen). Faulted pages are not held back.
SOCK=$SRC expect_rc 0 "create pcb (32M)" ctl vm create pcb --mem 32M \
	--vcpus 1 --pattern random --rate 0 --content random --heartbeat-us 2000
port=$("$RECV" --socket "$DST" --name pcb 127.0.0.1:0) || fail "migrate-recv: $port"
expect_rc 0 "migrate pcb with --postcopy-after 0 --bandwidth 8M" \
	"$SEND" --socket "$SRC" --postcopy-after 0 --downtime 1 --bandwidth 8M \
	--compress off pcb "127.0.0.1:$port"
echo "$LAST_OUT" >"$TMP/pcb.out"
pushed=$(sed -nE 's/^ *postcopy: .* ([0-9]+) pushed$/\1/p' "$TMP/pcb.out")
last=$(sed -nE 's/^ *last page: +(.*) after the switch$/\1/p' "$TMP/pcb.out")
# The floor: the pushed bytes at four times the cap, in seconds. The
# source paces from the push's start; "last page" counts from the
# destination's switch, which comes later by the time it takes to drain
# the precopy pages still in the sockets: under TSan that made the push
# look twice as fast as the cap (5291 pages in 1.28 s). Uncapped it is
# twenty times the cap.
floor=$(echo "${pushed:-0} * 4096 / (32 * 1048576)" | bc -l)
secs=$(awk -v v="$last" 'BEGIN { split(v, a, " "); m = 1e-9
	if (a[2] == "s") m = 1; if (a[2] == "ms") m = 1e-3; if (a[2] == "us") m = 1e-6
	print a[1] * m }')
if [ "${pushed:-0}" -gt 1000 ] && awk -v s="$secs" -v f="$floor" 'BEGIN { exit !(s >= f) }'; then
	ok "postcopy push held to --bandwidth: $pushed pages pushed, last page after $last (>= ${floor:0:4} s)"
else
	fail "postcopy push not capped: $pushed pages pushed, last page after $last (floor ${floor:0:4} s): $(tail -6 "$TMP/pcb.out")"
fi

# The source's worker killed during postcopy: the VM's pages are split.
SOCK=$SRC expect_rc 0 "create pc2 (128M, random pages flat out)" \
	ctl vm create pc2 --mem 128M --vcpus 2 --pattern random --rate 0 \
	--content random --heartbeat-us 2000
sleep 0.5
sw=$(SOCK=$SRC ctl --json vm list | jq -r '.vms[] | select(.name == "pc2") | .worker_pid')
port=$("$RECV" --socket "$DST" --name pc2 127.0.0.1:0) || fail "migrate-recv: $port"
# --bandwidth holds the push after the switch too: pages are still
# missing when the kill lands, even on a quiet machine (uncapped, the push
# of 128 MiB could end before the kill, as seen once).
timeout -k 5 "$DEADLINE" "$SEND" --socket "$SRC" --postcopy-after 0 \
	--downtime 1 --bandwidth 48M pc2 "127.0.0.1:$port" >"$TMP/pc2.out" 2>&1 &
send_pid=$!
ph=
for _ in $(seq 400); do
	ph=$(SOCK=$SRC ctl --json migration status pc2 2>/dev/null |
		jq -r '.migrations[0].progress.phase // empty')
	[ "$ph" = MIG_PHASE_POSTCOPY ] || [ "$ph" = MIG_PHASE_COMPLETED ] && break
	sleep 0.05
done
if [ "$ph" = MIG_PHASE_POSTCOPY ] && [ -n "$sw" ] && kill -9 "$sw" 2>/dev/null; then
	ok "source worker $sw killed in phase POSTCOPY"
	for _ in $(seq 200); do
		d=$(SOCK=$DST ctl --json migration status pc2 2>/dev/null | jq -c '.migrations[0].progress')
		case "$(jq -r .phase <<<"$d")" in
		MIG_PHASE_POSTCOPY_PAUSED | MIG_PHASE_FAILED | MIG_PHASE_COMPLETED | MIG_PHASE_CANCELLED) break ;;
		esac
		sleep 0.1
	done
	msg=$(jq -r .message <<<"$d")
	case "$(jq -r .phase <<<"$d")" in
	MIG_PHASE_POSTCOPY_PAUSED | MIG_PHASE_FAILED)
		grep -q postcopy <<<"$msg" &&
			ok "the destination reports it: $msg" ||
			fail "destination after the source died: $d"
		if grep -q "every page is in place" <<<"$msg"; then
			# The push had ended: only the source's Done was
			# missing. The VM is whole here and may run.
			SOCK=$DST expect_rc 0 "pc2 whole on the destination before the kill: every page checks" \
				ctl vm check pc2
		else
			[ "$(vm_state "$DST" pc2)" != VM_STATE_RUNNING ] &&
				ok "pc2 is not run on the destination as a finished migration" ||
				fail "pc2 runs on the destination on partial memory"
		fi
		;;
	MIG_PHASE_COMPLETED)
		# The source's status lags: the last page was in before the
		# kill landed. Then the VM is whole on the destination.
		echo "note: postcopy of pc2 completed before the kill: kill not tested"
		SOCK=$DST expect_rc 0 "pc2 completed before the kill: every page checks" \
			ctl vm check pc2
		;;
	*) fail "destination after the source died: $d" ;;
	esac
else
	echo "note: postcopy of pc2 not caught in time (phase '$ph'): kill not tested"
fi
# migrate-send follows the migration to its end; with the worker gone the
# daemon marks it FAILED. (Seen: migrate-send then waits for an end event
# that does not come; bounded here, reported, not hidden.)
for _ in $(seq 30); do
	kill -0 "$send_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$send_pid" 2>/dev/null; then
	echo "note: migrate-send still waiting 3 s after the source worker died"
	kill "$send_pid" 2>/dev/null
fi
wait "$send_pid" 2>/dev/null
tail -3 "$TMP/pc2.out"
finish
