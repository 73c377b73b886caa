#!/bin/bash
# A real daemon: VM create / list / inspect / pause / resume / destroy
# through migratectl, and every refusal the API promises.
source "$(dirname "$0")/lib.sh" "$@"

ACCEL=$(it_accel)
start_daemon d1 --accel "$ACCEL"
PING=$(ctl --json ping) || { fail "ping"; finish; }
ok "ping: $PING"

expect_rc 0 "create vm1" ctl vm create vm1 --mem 64M --vcpus 2 \
	--rate 2000 --heartbeat-us 5000
if [ "$(json_get "$(ctl --json vm inspect vm1 2>&1)" .info.accel)" = "" ]; then
	echo "cannot create VMs on $ACCEL here:"; cat "$TMP/d1.log"
	[ "$ACCEL" = soft ] && exit 77
fi
expect_rc 0 "create vm2 paused, idle" ctl vm create vm2 --mem 32M \
	--pattern idle --paused

# list
L=$(ctl --json vm list)
[ "$(json_get "$L" '.vms | length')" = 2 ] && ok "list shows 2 VMs" ||
	fail "list: $L"
[ "$(json_get "$L" '.vms[0].name')" = vm1 ] && ok "list keeps creation order" ||
	fail "list order: $L"
[ "$(json_get "$L" '.vms[1].state')" = VM_STATE_CREATED ] &&
	ok "paused create leaves the VM CREATED" || fail "vm2 state: $L"

# inspect: the guest makes progress and sends heartbeats
sleep 1
I1=$(ctl --json vm inspect vm1)
S1=$(json_get "$I1" '.vcpus[0].seq')
H1=$(json_get "$I1" '.vcpus[0].heartbeats')
[ "$(json_get "$I1" .info.state)" = VM_STATE_RUNNING ] && ok "vm1 running" ||
	fail "vm1 state: $I1"
[ "$(json_get "$I1" '.vcpus | length')" = 2 ] && ok "inspect has 2 vCPUs" ||
	fail "inspect vcpus: $I1"
[ "$(json_get "$I1" .workload.rate_pages)" = 2000 ] &&
	ok "inspect returns the workload" || fail "workload: $I1"
[ "$S1" -gt 0 ] && ok "vCPU 0 writes pages (seq=$S1)" || fail "seq=$S1"
[ "$H1" -gt 0 ] && ok "vCPU 0 heartbeats ($H1)" || fail "heartbeats=$H1"

# pause: the counters freeze; resume: they move again
expect_rc 0 "pause vm1" ctl vm pause vm1
P1=$(json_get "$(ctl --json vm inspect vm1)" '.vcpus[0].seq')
sleep 0.5
P2=$(json_get "$(ctl --json vm inspect vm1)" '.vcpus[0].seq')
[ "$P1" = "$P2" ] && ok "paused guest makes no progress" ||
	fail "seq moved while paused: $P1 -> $P2"
[ "$(json_get "$(ctl --json vm inspect vm1)" .info.state)" = VM_STATE_PAUSED ] &&
	ok "state paused" || fail "state after pause"
expect_rc 1 "pause a paused VM refused" ctl vm pause vm1
expect_rc 0 "resume vm1" ctl vm resume vm1
sleep 0.5
P3=$(json_get "$(ctl --json vm inspect vm1)" '.vcpus[0].seq')
[ "$P3" -gt "$P2" ] && ok "resumed guest progresses ($P2 -> $P3)" ||
	fail "no progress after resume: $P2 -> $P3"
expect_rc 1 "resume a running VM refused" ctl vm resume vm1
expect_rc 0 "resume (start) the CREATED vm2" ctl vm resume vm2

# refusals
expect_rc 1 "duplicate name refused" ctl vm create vm1 --mem 32M
echo "$LAST_OUT" | grep -q "already exists" && ok "  ... says already exists" ||
	fail "duplicate message: $LAST_OUT"
expect_rc 3 "inspect unknown VM" ctl vm inspect nosuch
expect_rc 3 "pause unknown VM" ctl vm pause nosuch
expect_rc 3 "destroy unknown VM" ctl vm destroy nosuch
expect_rc 2 "memory not a multiple of 2 MiB" ctl vm create x --mem 33M
expect_rc 2 "memory too small" ctl vm create x --mem 8M
expect_rc 2 "memory too large" ctl vm create x --mem 8T
expect_rc 2 "zero vCPUs" ctl vm create x --vcpus 0
expect_rc 2 "too many vCPUs" ctl vm create x --vcpus 65
expect_rc 2 "bad name" ctl vm create 'a/b'
expect_rc 2 "unknown accelerator" ctl vm create x --accel qemu
expect_rc 2 "region outside RAM" ctl vm create x --mem 32M \
	--region-offset 16M --region-size 32M
expect_rc 2 "bad size syntax (tool)" ctl vm create x --mem 12Q
expect_rc 3 "cancel of an unknown migration refused" \
	ctl migration cancel 99
echo "$LAST_OUT" | grep -q "no migration 99" && ok "  ... and names it" ||
	fail "cancel message: $LAST_OUT"
[ "$(json_get "$(ctl --json vm list)" '.vms | length')" = 2 ] &&
	ok "refused creates left nothing behind" || fail "VM count changed"

# destroy
expect_rc 0 "destroy vm2" ctl vm destroy vm2
expect_rc 3 "destroy twice" ctl vm destroy vm2
[ "$(json_get "$(ctl --json vm list)" '.vms | length')" = 1 ] &&
	ok "one VM left" || fail "list after destroy"

# the daemon is still healthy after all that
expect_rc 0 "ping after refusals" ctl ping
finish
