#!/usr/bin/env bash
# Fencing and a VM in a migration (docs/fleet.md, "Fencing"): the
# source host s loses etcd while its VM w migrates out to d (slowly: 256
# KiB/s of incompressible pages, so it is still in precopy).
#   1. the fence leaves w to its migration (fleet_fence_skip): it stays
#      MIGRATING, nothing is paused under the migration;
#   2. the migration is cancelled while s is still fenced: w comes back
#      on s and the fence pauses it then (fleet_fenced_late) -- a fenced
#      host runs no VM;
#   3. contact is back: w is still s's, resumed, intact, not on d.
# s talks to one etcd member that is not the leader, and the partition
# stops that member only: the cluster keeps its leader, d its contact.
# argv: migrated migratectl migrate-send migrate-recv
DIR=$(cd "$(dirname "$0")" && pwd)
source "$DIR/lib_faults.sh" "$@"
source "$DIR/lib_etcd.sh"
etcd_need
[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }

etcd_start 3
LEADER=$(ectl endpoint status -w table 2>/dev/null |
	awk -F'|' '$6 ~ /true/ { gsub(/ /, "", $2); print $2 }')
M=3
[ "$LEADER" = "http://127.0.0.1:${ETCD_CPORT[3]}" ] && M=2
OTHERS=
for i in 1 2 3; do
	[ "$i" != "$M" ] && OTHERS+="${OTHERS:+,}http://127.0.0.1:${ETCD_CPORT[$i]}"
done
start_daemon s --accel soft --dev-tls --tls-dir "$TMP/tls" \
	--etcd "http://127.0.0.1:${ETCD_CPORT[$M]}" --host-id s \
	--etcd-ttl 6 --fence-grace-ms 3000
SOCK_S=$SOCK
for _ in $(seq 50); do [ -f "$TMP/tls/host.key" ] && break; sleep 0.1; done
start_daemon d --accel soft --dev-tls --tls-dir "$TMP/tls" \
	--etcd "$OTHERS" --host-id d --etcd-ttl 6 --fence-grace-ms 3000
SOCK_D=$SOCK

SOCK=$SOCK_S expect_rc 0 "create w on s" ctl vm create w --mem 32M --vcpus 1 --rate 2000 --content random
PORT=$("$RECV" --socket "$SOCK_D" --name w 127.0.0.1:0)
"$SEND" --socket "$SOCK_S" --bandwidth 256KiB/s w "127.0.0.1:$PORT" >"$TMP/send.w" 2>&1 &
SPID_w=$!
wait_state "$SOCK_S" w VM_STATE_MIGRATING 100 && ok "w migrating out of s" ||
	fail "w not migrating: $(vm_state "$SOCK_S" w)"

# --- 1. partition s while w migrates -------------------------------------------
kill -STOP "${ETCD_PID[$M]}"
wait_log "$TMP/s.log" "event=fleet_fenced host=s" 150 && ok "s fenced" || fail "s never fenced"
grep -q "event=fleet_fence_skip vm=w why=migrating" "$TMP/s.log" &&
	ok "the fence left w to its migration" || fail "no fleet_fence_skip for w"
[ "$(vm_state "$SOCK_S" w)" = VM_STATE_MIGRATING ] && ok "w still migrating while s is fenced" ||
	fail "w while fenced: $(vm_state "$SOCK_S" w)"

# --- 2. w's migration gives it back while s is fenced ---------------------------------
SOCK=$SOCK_S expect_rc 0 "cancel w's migration" ctl migration cancel w
wait "$SPID_w" || true
if wait_state "$SOCK_S" w VM_STATE_PAUSED 100; then
	ok "w back on s, and paused by the fence"
else
	fail "w back on s while fenced: $(vm_state "$SOCK_S" w)"
fi
grep -q "event=fleet_fenced_late vm=w" "$TMP/s.log" && ok "logged fleet_fenced_late" ||
	fail "no fleet_fenced_late line"
A=$(seq_total "$SOCK_S" w)
sleep 1
B=$(seq_total "$SOCK_S" w)
[ "$A" = "$B" ] && ok "w writes nothing while s is fenced ($A)" || fail "w ran while fenced: $A -> $B"

# --- 3. contact back ------------------------------------------------------------------
kill -CONT "${ETCD_PID[$M]}"
wait_state "$SOCK_S" w VM_STATE_RUNNING 300 && ok "contact back: w resumed on s" ||
	fail "w after the partition: $(vm_state "$SOCK_S" w)"
[ "$(etcd_get /migrated/vms/w | jq -r .owner)" = s ] && ok "w's key still names s" ||
	fail "w key: $(etcd_get /migrated/vms/w)"
[ "$(vm_state "$SOCK_D" w)" = absent ] && ok "no copy of w on d" || fail "w on d: $(vm_state "$SOCK_D" w)"
expect_intact "w on s, every page" "$SOCK_S" w
finish
