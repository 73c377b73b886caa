#!/usr/bin/env bash
# Fleet membership in etcd (a real 3-member cluster on loopback):
# etcd down at start refuses (or runs standalone when asked); hosts
# register under a lease; a host id is one daemon's; a VM name is unique
# fleet-wide and its ownership key follows create/destroy; a lost lease
# fences (pauses) and re-registers, then resumes what is still owned; a
# daemon partitioned from etcd pauses its VMs after the grace and, on
# reconnect, drops a VM that another host took over meanwhile.
DIR=$(cd "$(dirname "$0")" && pwd)
source "$DIR/lib.sh" "$@"
source "$DIR/lib_etcd.sh"
etcd_need
ACCEL=soft
P=/migrated/

state_is() { [ "$(json_get "$(ctl --json vm inspect "$1" 2>&1)" .info.state)" = "$2" ]; }
owner_is() { etcd_owner_is "$@"; }
host_key() { [ -n "$(etcd_get "${P}hosts/$1")" ]; }
no_key() { [ -z "$(etcd_get "$1")" ]; }

# --- etcd down at start ------------------------------------------------------
DEAD=http://127.0.0.1:$(etcd_free_port)
timeout 30 "$MIGRATED" --state-dir "$TMP/refuse" --accel $ACCEL \
	--etcd "$DEAD" --host-id refuse >"$TMP/refuse.log" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "cannot join the fleet: etcd" "$TMP/refuse.log" &&
	grep -q "127.0.0.1" "$TMP/refuse.log"; then
	ok "etcd unreachable at start: refused with a clear message (rc=1)"
else
	fail "etcd unreachable at start: rc=$rc, log: $(tail -3 "$TMP/refuse.log")"
fi
start_daemon opt --accel $ACCEL --etcd "$DEAD" --host-id opt --etcd-optional
sleep 0.5
if kill -0 "$DPID" 2>/dev/null && grep -q "event=fleet_standalone" "$TMP/opt.log"; then
	ok "--etcd-optional: runs standalone, says so"
else
	fail "--etcd-optional: $(tail -3 "$TMP/opt.log")"
fi
expect_rc 0 "standalone daemon creates VMs" ctl vm create s1 --mem 16M --vcpus 1 --pattern idle
kill -TERM "$DPID"; wait "$DPID" 2>/dev/null

# --- registration ------------------------------------------------------------
etcd_start 3
start_daemon a --accel $ACCEL --etcd "$ETCD_ENDPOINTS" --host-id a --etcd-ttl 3
SOCK_A=$SOCK PID_A=$DPID
wait_for 10 "host a registered" host_key a
REC=$(etcd_get ${P}hosts/a)
if jq -e '.id == "a" and .mem_bytes > 0 and .vcpus > 0 and .accel == "soft" and (.migration | test(":"))' <<<"$REC" >/dev/null; then
	ok "host record: id, migration address, capacity, accelerator"
else
	fail "host record: $REC"
fi
# jq reads int64 as a double: compare the lease in hex, as etcdctl shows it.
LEASE_A=$(printf '%x' "$(cat "$TMP/a/fleet.lease")")
ectl get ${P}hosts/a -w fields | grep -q "\"Lease\" : $(cat "$TMP/a/fleet.lease")\$" &&
	ok "host key under the daemon's lease ($LEASE_A)" ||
	fail "host key not under lease $LEASE_A: $(ectl get ${P}hosts/a -w fields)"

# Same id, another daemon: refused while a's lease lives.
timeout 30 "$MIGRATED" --state-dir "$TMP/dup" --accel $ACCEL \
	--etcd "$ETCD_ENDPOINTS" --host-id a >"$TMP/dup.log" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "registered by another live daemon" "$TMP/dup.log" &&
	ok "a second daemon with host id 'a' is refused" ||
	fail "duplicate host id: rc=$rc $(tail -2 "$TMP/dup.log")"

# b talks to member 3 only, so that stopping member 3 partitions it alone.
start_daemon b --accel $ACCEL --etcd "http://127.0.0.1:${ETCD_CPORT[3]}" \
	--host-id b --etcd-ttl 3 --fence-grace-ms 1500
SOCK_B=$SOCK PID_B=$DPID
wait_for 10 "host b registered" host_key b

# --- names are fleet-wide ----------------------------------------------------
SOCK=$SOCK_A
expect_rc 0 "create v1 on a" ctl vm create v1 --mem 16M --vcpus 1 --rate 2000
wait_for 5 "ownership key of v1: owner a, generation 1" owner_is v1 a 1
SOCK=$SOCK_B
expect_rc 1 "create v1 on b refused (exists in the fleet)" ctl vm create v1 --mem 16M --vcpus 1
grep -q "on host 'a'" <<<"$LAST_OUT" && ok "the refusal names the owner" ||
	fail "refusal does not name the owner: $LAST_OUT"
expect_rc 3 "v1 not created on b" ctl vm inspect v1
SOCK=$SOCK_A
expect_rc 0 "destroy v1 on a" ctl vm destroy v1
wait_for 5 "ownership key of v1 deleted" no_key ${P}vms/v1
SOCK=$SOCK_B
expect_rc 0 "create v1 on b once a destroyed it" ctl vm create v1 --mem 16M --vcpus 1 --rate 2000
wait_for 5 "v1 now owned by b" owner_is v1 b 1
expect_rc 0 "create v2 on b" ctl vm create v2 --mem 16M --vcpus 1 --rate 2000

# --- lease lost: fence, re-register, resume what is still ours ---------------
SOCK=$SOCK_A
expect_rc 0 "create v3 on a" ctl vm create v3 --mem 16M --vcpus 1 --rate 2000
ectl lease revoke "$LEASE_A" >/dev/null
wait_for 10 "a notices its lease is gone" grep -q "event=fleet_lease_lost" "$TMP/a.log"
wait_for 10 "a fenced its VMs" grep -q "event=fleet_fenced host=a .*paused=1" "$TMP/a.log"
wait_for 10 "a registered again under a new lease" host_key a
wait_for 10 "a reconciled: v3 still its own, resumed" grep -q "event=fleet_reconciled host=a resumed=1 dropped=0" "$TMP/a.log"
wait_for 5 "v3 running again" state_is v3 VM_STATE_RUNNING

# --- partition: b loses etcd, pauses after the grace; v1 taken over ----------
kill -STOP "${ETCD_PID[3]}"
export ECTL_ENDPOINTS="http://127.0.0.1:${ETCD_CPORT[1]},http://127.0.0.1:${ETCD_CPORT[2]}"
T0=$(date +%s%N)
SOCK=$SOCK_B
wait_for 10 "b paused v1 after the grace" state_is v1 VM_STATE_PAUSED
MS=$((($(date +%s%N) - T0) / 1000000))
# The grace counts from the last keepalive, sent up to ttl/3 before the
# partition: paused within [grace - ttl/3, ttl).
if [ "$MS" -lt 3000 ]; then
	ok "paused ${MS} ms after the partition (grace 1500, ttl 3000)"
else
	fail "paused ${MS} ms after the partition: not before the TTL"
fi
state_is v2 VM_STATE_PAUSED && ok "v2 paused too" || fail "v2 not paused"
expect_rc 4 "no VM created while fenced" ctl vm create v9 --mem 16M --vcpus 1
grep -q "fenced" <<<"$LAST_OUT" && ok "the refusal says the host is fenced" ||
	fail "refusal while fenced: $LAST_OUT"
# Another host takes v1 over while b cannot see etcd.
ectl put ${P}vms/v1 \
	'{"owner":"c","generation":2}' >/dev/null && ok "v1 handed to host c in etcd" ||
	fail "could not write v1's key"
sleep 1
state_is v1 VM_STATE_PAUSED && ok "v1 still paused while partitioned" ||
	fail "v1 not paused while partitioned"
kill -CONT "${ETCD_PID[3]}"
unset ECTL_ENDPOINTS
wait_for 15 "b reconciled after the partition" grep -q "event=fleet_reconciled host=b resumed=1 dropped=1" "$TMP/b.log"
wait_for 5 "v1 (moved to c) dropped on b" bash -c "! \"$CTL\" --socket $SOCK_B vm inspect v1"
wait_for 5 "v2 (still b's) running again" state_is v2 VM_STATE_RUNNING
owner_is v1 c 2 >/dev/null && ok "v1's key untouched by b's reconciliation" ||
	fail "v1's key changed: $(etcd_get ${P}vms/v1)"

# --- daemon restart: its VMs keep running, it takes its record back ----------
LEASE_B=$(cat "$TMP/b/fleet.lease")
kill -TERM "$PID_B"; wait "$PID_B" 2>/dev/null
T_STOP=$SECONDS
host_key b && ok "b stopped with a VM left: its record stays (lease not revoked)" ||
	fail "b's record went at a stop with a VM left"
start_daemon b --accel $ACCEL --etcd "http://127.0.0.1:${ETCD_CPORT[3]}" \
	--host-id b --etcd-ttl 3 --fence-grace-ms 1500
SOCK_B=$SOCK PID_B=$DPID
wait_for 10 "restarted b registered again" grep -q "event=fleet_joined host=b" "$TMP/b.log"
# Within the TTL (3 s) of the stop it must be the same lease; a restart
# slower than that (a loaded machine) legitimately gets a new one.
if [ "$(cat "$TMP/b/fleet.lease")" = "$LEASE_B" ]; then
	ok "restarted b took its own lease back (no wait for the TTL)"
elif [ $((SECONDS - T_STOP)) -ge 3 ]; then
	echo "note: b's restart took $((SECONDS - T_STOP)) s, over the TTL: new lease"
else
	fail "restarted b has lease $(cat "$TMP/b/fleet.lease"), had $LEASE_B"
fi
wait_for 10 "v2 adopted and running on the restarted b" state_is v2 VM_STATE_RUNNING

# --- host list: the fleet from etcd --------------------------------------------
HL=$("$CTL" host list --etcd "$ETCD_ENDPOINTS" 2>&1)
if grep -qE '^a +soft .* v3\(1\)' <<<"$HL" && grep -qE '^b +soft .* v2\(1\)' <<<"$HL"; then
	ok "host list: a with v3, b with v2"
else
	fail "host list: $HL"
fi
HJ=$("$CTL" --json host list --etcd "$ETCD_ENDPOINTS" 2>&1)
jq -e 'map(select(.host == "b"))[0].vms == ["v2"] and (map(.host) | sort) == ["a", "b"]' <<<"$HJ" >/dev/null &&
	ok "host list --json: hosts and their VMs" || fail "host list --json: $HJ"

# --- shutdown ----------------------------------------------------------------
SOCK=$SOCK_A
ctl vm destroy v3 >/dev/null
kill -TERM "$PID_A"; wait "$PID_A" 2>/dev/null
wait_for 5 "a's host key gone at once when it stopped with no VM" bash -c "[ -z \"\$(ETCDCTL_API=3 $ETCDCTL --endpoints $ETCD_ENDPOINTS get --print-value-only ${P}hosts/a)\" ]"
no_key ${P}vms/v3 && ok "v3's key deleted by destroy" || fail "v3's key left"
finish
