#!/usr/bin/env bash
# The commit with the ownership transaction (docs/architecture.md), real
# daemons and a real 3-member etcd on loopback:
#   1. a migration moves ownership: the key names the destination with
#      generation + 1, the VM runs there only, every page checked;
#   2. the destination's worker killed after its transaction, before it
#      started the VM (dst.owned=kill): the source's commit has no answer,
#      it reads the key, sees the destination owns the VM and drops its
#      paused copy -- no second copy runs, and the loss is reported;
#   3. the destination's worker killed when the Commit arrives, before
#      its transaction (dst.commit=kill): the source's own transaction
#      keeps the VM (generation + 1, which also fences out any late
#      transaction of the destination) and resumes it, no operator needed;
#   4. the etcd leader killed while the destination holds at the Commit
#      (dst.commit=sleep:1500): whichever way etcd and the timeouts decide,
#      the VM runs on exactly one host, the one its key names, every page
#      intact;
#   5. two of three etcd members down during the commit (no quorum), back
#      6 s later: the transactions are tried again until etcd answers, and
#      the VM runs on exactly one host, the one its key names;
#   6. the at-most-one-copy oracle over the whole run (fleet_timeline.py):
#      each VM's running intervals, rebuilt from every daemon's log, never
#      overlap across hosts, and its key's history (watched from revision
#      1) has the generation grow by one at each write.
# argv: migrated migratectl migrate-send migrate-recv
DIR=$(cd "$(dirname "$0")" && pwd)
source "$DIR/lib_faults.sh" "$@"
source "$DIR/lib_etcd.sh"
etcd_need
[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
ACCEL=soft
P=/migrated/

owner_is() { etcd_owner_is "$@"; }

# daemon NAME FAULTS: host id NAME; sets SOCK_<NAME> and LOG_<NAME>.
daemon() {
	MIGRATED_FAULTPOINTS=$2 start_daemon "$1" --accel $ACCEL \
		--dev-tls --tls-dir "$TMP/tls" --migration-io-timeout-ms 3000 \
		--etcd "$ETCD_ENDPOINTS" --host-id "$1" --etcd-ttl 5
	printf -v "SOCK_$1" %s "$SOCK"
}

# migrate NAME SRC_SOCK DST_SOCK: sets SEND_RC.
migrate() {
	local port
	port=$("$RECV" --socket "$3" --name "$1" 127.0.0.1:0) ||
		{ fail "migrate-recv $1: $port"; return 1; }
	"$SEND" --socket "$2" "$1" "127.0.0.1:$port" >"$TMP/$1.out" 2>&1
	SEND_RC=$?
}

# one_copy VM: after a commit that etcd answered late (or not at all),
# poll up to 40 s until VM runs somewhere and its key can be read (the
# survivors elect a leader first; slow under TSan), then VM must run on
# exactly one of src and dstslow, the one its key names, every page intact.
one_copy() {
	local S D O
	for _ in $(seq 80); do
		S=$(vm_state "$SOCK_src" "$1")
		D=$(vm_state "$SOCK_dstslow" "$1")
		O=$(etcd_get "${P}vms/$1" 2>/dev/null | jq -r .owner 2>/dev/null)
		{ [ "$S" = VM_STATE_RUNNING ] || [ "$D" = VM_STATE_RUNNING ]; } &&
			[ -n "$O" ] && break
		sleep 0.5
	done
	echo "after the commit: src=$S dst=$D key owner=$O"
	if [ "$S" = VM_STATE_RUNNING ] && [ "$D" = VM_STATE_RUNNING ]; then
		fail "$1 runs on BOTH hosts"
	elif [ "$S" = VM_STATE_RUNNING ] && [ "$O" = src ]; then
		ok "$1 runs on src only, and its key says src"
		expect_intact "$1 on src, every page" "$SOCK_src" "$1"
	elif [ "$D" = VM_STATE_RUNNING ] && [ "$O" = dstslow ]; then
		ok "$1 runs on dstslow only, and its key says dstslow"
		expect_intact "$1 on dstslow, every page" "$SOCK_dstslow" "$1"
	else
		fail "$1: src=$S dst=$D owner=$O (lost, or where it runs is not its key's)"
	fi
}

etcd_start 3
# The first daemon makes the shared dev TLS material; wait for it.
daemon src ""
for _ in $(seq 50); do [ -f "$TMP/tls/host.key" ] && break; sleep 0.1; done
daemon dst ""
daemon dstowned "dst.owned=kill"
daemon dstcommit "dst.commit=kill"
daemon dstslow "dst.commit=sleep:1500"

# --- 1. ownership moves with the VM -------------------------------------------
SOCK=$SOCK_src expect_rc 0 "create f1 on src" ctl vm create f1 --mem 32M --vcpus 1 --rate 2000
owner_is f1 src 1 && ok "f1 owned by src, generation 1" || fail "f1 key: $(etcd_get ${P}vms/f1)"
migrate f1 "$SOCK_src" "$SOCK_dst"
[ "$SEND_RC" = 0 ] && ok "f1 migrated (rc 0)" || fail "f1: migrate-send rc=$SEND_RC: $(tail -3 "$TMP/f1.out")"
owner_is f1 dst 2 && ok "f1's key: owner dst, generation 2" || fail "f1 key: $(etcd_get ${P}vms/f1)"
wait_state "$SOCK_dst" f1 VM_STATE_RUNNING && ok "f1 runs on dst" || fail "f1 on dst: $(vm_state "$SOCK_dst" f1)"
wait_state "$SOCK_src" f1 absent && ok "f1 gone from src" || fail "f1 on src: $(vm_state "$SOCK_src" f1)"
expect_intact "f1 on dst, every page" "$SOCK_dst" f1
grep -q "event=fleet_commit .*vm=f1 from=src generation=2 err=0" "$TMP/dst.log" &&
	ok "dst logged its commit transaction" || fail "no fleet_commit line in dst.log"

# --- 2. destination killed after its transaction, before resume ---------------
SOCK=$SOCK_src expect_rc 0 "create f2 on src" ctl vm create f2 --mem 32M --vcpus 1 --rate 2000
S0=$(seq_total "$SOCK_src" f2)
migrate f2 "$SOCK_src" "$SOCK_dstowned"
owner_is f2 dstowned 2 && ok "f2's key moved to dstowned (its txn ran)" ||
	fail "f2 key: $(etcd_get ${P}vms/f2)"
grep -q "event=fleet_settle .*vm=f2 how=confirm_destination owner=dstowned" "$TMP/src.log" &&
	ok "src read the key after a commit without answer: confirm destination" ||
	fail "src did not settle f2 by the key: $(grep -E 'fleet_settle|f2' "$TMP/src.log" | tail -3)"
wait_state "$SOCK_src" f2 absent && ok "src dropped its paused copy of f2" ||
	fail "f2 on src: $(vm_state "$SOCK_src" f2)"
[ "$(vm_state "$SOCK_dstowned" f2)" != VM_STATE_RUNNING ] &&
	ok "f2 does not run on dstowned either (its worker died): at most one copy" ||
	fail "f2 runs on dstowned"
grep -q "faultpoint name=dst.owned action=kill" "$TMP/dstowned.log" &&
	ok "the dst.owned fault fired" || fail "dst.owned never fired"
[ "$SEND_RC" != 6 ] && ok "f2 not left UNRESOLVED (migrate-send rc=$SEND_RC)" ||
	fail "f2 left unresolved"

# --- 3. destination killed before its transaction -----------------------------
SOCK=$SOCK_src expect_rc 0 "create f3 on src" ctl vm create f3 --mem 32M --vcpus 1 --rate 2000
migrate f3 "$SOCK_src" "$SOCK_dstcommit"
owner_is f3 src 2 && ok "f3's key: src kept it, generation 2 (fences out a late txn)" ||
	fail "f3 key: $(etcd_get ${P}vms/f3)"
grep -q "event=fleet_settle .*vm=f3 how=resume_source" "$TMP/src.log" &&
	ok "src settled f3 by its own transaction: resume" ||
	fail "src did not settle f3: $(grep -E 'fleet_settle' "$TMP/src.log" | tail -3)"
wait_state "$SOCK_src" f3 VM_STATE_RUNNING && ok "f3 runs on src again" ||
	fail "f3 on src: $(vm_state "$SOCK_src" f3)"
expect_intact "f3 on src, every page" "$SOCK_src" f3
[ "$(vm_state "$SOCK_dstcommit" f3)" = absent ] && ok "f3 not on dstcommit" ||
	fail "f3 on dstcommit: $(vm_state "$SOCK_dstcommit" f3)"
# --- 4. the etcd leader killed during the commit -------------------------------
leader() {
	ectl endpoint status -w table 2>/dev/null |
		awk -F'|' '$6 ~ /true/ { gsub(/ /, "", $2); print $2 }'
}
SOCK=$SOCK_src expect_rc 0 "create f4 on src" ctl vm create f4 --mem 32M --vcpus 1 --rate 2000
L=$(leader)
LI=
for i in 1 2 3; do
	[ "$L" = "http://127.0.0.1:${ETCD_CPORT[$i]}" ] && LI=$i
done
if [ -z "$LI" ]; then
	fail "no etcd leader found ($L)"
else
	migrate f4 "$SOCK_src" "$SOCK_dstslow" &
	MPID=$!
	wait_log "$TMP/dstslow.log" "faultpoint name=dst.commit action=sleep" 300 &&
		ok "the destination holds at the Commit" || fail "dst.commit never fired"
	etcd_kill "$LI"
	ok "etcd leader (member $LI) killed during the commit"
	wait "$MPID"
	ECTL_ENDPOINTS=$(for i in 1 2 3; do [ "$i" != "$LI" ] && echo -n "http://127.0.0.1:${ETCD_CPORT[$i]},"; done)
	export ECTL_ENDPOINTS=${ECTL_ENDPOINTS%,}
	one_copy f4
fi

# --- 5. etcd without a quorum during the commit ---------------------------------
# Two of three members down while the destination holds at the Commit:
# neither side's transaction can get an answer; both must keep trying
# (not give up after one try) until the members are back, and then the
# VM runs on exactly one host, the one its key names.
# The leader's death in case 4 may have fenced src for a moment (its lease
# unanswered past the grace): it refuses new VMs until contact is back.
for _ in $(seq 60); do
	SOCK=$SOCK_src ctl vm create f5 --mem 32M --vcpus 1 --rate 2000 \
		>"$TMP/f5.create" 2>&1 && break
	grep -q fenced "$TMP/f5.create" || break
	sleep 0.5
done
[ "$(vm_state "$SOCK_src" f5)" = VM_STATE_RUNNING ] && ok "create f5 on src" ||
	fail "create f5 on src: $(cat "$TMP/f5.create")"
DOWN=()
for i in 1 2 3; do [ "$i" = "${LI:-0}" ] && DOWN+=("$i"); done
for i in 1 2 3; do
	[ "$i" != "${LI:-0}" ] && [ ${#DOWN[@]} -lt 2 ] && ALIVE_KILL=$i && DOWN+=("$i")
done
N0=$(grep -c "faultpoint name=dst.commit action=sleep" "$TMP/dstslow.log")
migrate f5 "$SOCK_src" "$SOCK_dstslow" &
MPID=$!
for _ in $(seq 300); do
	[ "$(grep -c "faultpoint name=dst.commit action=sleep" "$TMP/dstslow.log")" -gt "$N0" ] && break
	sleep 0.1
done
etcd_kill "$ALIVE_KILL"
ok "etcd members ${DOWN[*]} down during f5's commit: no quorum"
sleep 6
for i in "${DOWN[@]}"; do etcd_restart "$i"; done
unset ECTL_ENDPOINTS
etcd_wait_healthy && ok "etcd members back" || fail "etcd not healthy again"
wait "$MPID"
one_copy f5
grep -hq "event=fleet_txn_retry .*vm=f5" "$TMP/src.log" "$TMP/dstslow.log" &&
	ok "a transaction met no quorum and was tried again" ||
	fail "no fleet_txn_retry for f5 (was quorum really lost?)"

# --- 6. at most one copy, at every moment --------------------------------------
etcd_history ${P}vms/ >"$TMP/history.json" 2>"$TMP/history.err"
if python3 "$DIR/fleet_timeline.py" --history "$TMP/history.json" \
	--prefix ${P}vms/ src="$TMP/src.log" dst="$TMP/dst.log" \
	dstowned="$TMP/dstowned.log" dstcommit="$TMP/dstcommit.log" \
	dstslow="$TMP/dstslow.log" -- f1 f2 f3 f4 f5 >"$TMP/oracle.out" 2>&1; then
	sed 's/^/  /' "$TMP/oracle.out"
	ok "timelines: never two copies running, generations +1 per write"
else
	cat "$TMP/oracle.out" "$TMP/history.err"
	fail "at-most-one-copy oracle"
fi
finish
