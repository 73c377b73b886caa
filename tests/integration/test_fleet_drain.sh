#!/usr/bin/env bash
# Host drain (docs/fleet.md, "Host drain"): three daemons and a
# real 3-member etcd on loopback.
#   1. a drain with no other host in the fleet fails, says so, exits 1,
#      and leaves every VM running where it was;
#   2. the host is then marked draining: host list shows it, vm create
#      is refused there;
#   3. with b and c up (b already runs a 64 MiB VM), a drain of a's four
#      32 MiB VMs moves them all: three to c, one to b (the capacity
#      rule: most free memory, then free vCPUs, then id), each checked
#      page by page where it landed, each ownership key naming where it
#      runs, none left on a or owned by a;
#   4. the limits: the fleet-wide one is held in etcd (a slot another
#      drain holds is respected: nothing starts until it is freed), and
#      no more than --max-fleet migrations ever run at once (sampled on
#      a while the drain runs, and the drain's own count);
#      the drain of 3. is started through b's daemon and read through
#      c's (each forwards the call to a's daemon); undrain is refused
#      while it runs;
#   5. undrain (through c) clears a's mark: host list shows it up and a
#      VM can be created there again;
#   6. cancel (through b) of e's drain while its first migration is in
#      flight (held 6 s in its setup by a fault point): nothing more
#      starts, the one in flight is cancelled; every VM still runs on e,
#      checked page by page, on no other host; e stays draining;
#   7. cancel of f's drain while its first migration is past its commit
#      point (held there by a fault point): that one is left to finish
#      (the status says so) and lands on its target, checked; the other
#      is cancelled and runs on f, checked.
# argv: migrated migratectl migrate-send migrate-recv
DIR=$(cd "$(dirname "$0")" && pwd)
source "$DIR/lib_faults.sh" "$@"
source "$DIR/lib_etcd.sh"
etcd_need
P=/migrated/

# daemon NAME [FAULTS]: host id NAME, control RPC on TCP (the drain calls
# its peers there), its workers armed with fault points FAULTS; sets
# SOCK_<NAME>.
daemon() {
	MIGRATED_FAULTPOINTS=${2:-} start_daemon "$1" --accel soft \
		--dev-tls --tls-dir "$TMP/tls" \
		--rpc-listen 127.0.0.1:0 --etcd "$ETCD_ENDPOINTS" \
		--host-id "$1" --etcd-ttl 5
	printf -v "SOCK_$1" %s "$SOCK"
}
owner_of() { etcd_get "${P}vms/$1" | jq -r .owner; }
on() { local s=$1; shift; "$CTL" --socket "$s" "$@"; }

etcd_start 3
daemon a
for _ in $(seq 50); do [ -f "$TMP/tls/host.key" ] && break; sleep 0.1; done
for v in d1 d2 d3 d4; do
	SOCK=$SOCK_a expect_rc 0 "create $v on a" ctl vm create $v --mem 32M --vcpus 1 --rate 2000
done

# --- 1. nowhere to go ------------------------------------------------------------
OUT=$(on "$SOCK_a" host drain a 2>&1)
RC=$?
if [ "$RC" = 1 ] && grep -q "no other host of the fleet can take VMs" <<<"$OUT"; then
	ok "drain with no other host: rc 1, says why"
else
	fail "drain with no other host: rc=$RC: $OUT"
fi
grep -qE '^d1 +failed +- +no destination' <<<"$OUT" && ok "each VM reported failed: no destination" ||
	fail "per-VM rows: $OUT"
L=$(on "$SOCK_a" --json vm list | jq -c '[.vms[] | select(.state == "VM_STATE_RUNNING") | .name] | sort')
[ "$L" = '["d1","d2","d3","d4"]' ] && ok "the VMs still run on a" || fail "on a after the failed drain: $L"
expect_rc 3 "drain of a host not registered: not found" on "$SOCK_a" host drain b
grep -q "no host 'b' is registered" <<<"$LAST_OUT" || fail "unknown-host message: $LAST_OUT"

# --- 2. marked draining ------------------------------------------------------------
expect_rc 1 "vm create refused on a draining host" on "$SOCK_a" vm create late --mem 32M
grep -q "draining" <<<"$LAST_OUT" || fail "create refusal: $LAST_OUT"
HL=$("$CTL" host list --etcd "$ETCD_ENDPOINTS" 2>&1)
grep -qE '^a +soft .* draining ' <<<"$HL" && ok "host list shows a draining" || fail "host list: $HL"

# --- 3. drain to b and c -------------------------------------------------------------
daemon b
daemon c
SOCK=$SOCK_b expect_rc 0 "create big (64 MiB) on b" ctl vm create big --mem 64M --vcpus 1 --rate 2000
# Another drain holds the only fleet slot: nothing may start.
ectl put "${P}drain/slots/0" "elsewhere/vm" >/dev/null
expect_rc 0 "drain a started through b's daemon (--max-fleet 1, --no-wait)" \
	on "$SOCK_b" host drain a --max-fleet 1 --no-wait
sleep 1.5
ST=$(on "$SOCK_c" --json host drain-status a)
N=$(jq '[.vms[] | select(.state == "pending")] | length' <<<"$ST")
[ "$N" = 4 ] && [ "$(jq -r '.host + " " + .state' <<<"$ST")" = "a running" ] &&
	ok "status of a's drain through c: the fleet's only slot is held elsewhere, all 4 wait" ||
	fail "slot held elsewhere, yet: $ST"
expect_rc 3 "the drain runs in a's daemon, not b's" on "$SOCK_b" host drain-status
expect_rc 1 "undrain refused while the drain runs" on "$SOCK_a" host undrain a
grep -q "drain of host 'a' is running: cancel it first" <<<"$LAST_OUT" ||
	fail "undrain refusal: $LAST_OUT"
ectl del "${P}drain/slots/0" >/dev/null
# Sample a's outgoing migrations while the drain runs (up to 90 s).
MAXC=0
T0=$SECONDS
while [ $((SECONDS - T0)) -lt 90 ]; do
	M=$(on "$SOCK_a" --json migration list 2>/dev/null)
	C=$(jq '[.migrations[]? | select(.direction == "MIG_DIRECTION_OUTGOING" and (.finished | not))] | length' <<<"$M")
	[ "${C:-0}" -gt "$MAXC" ] && MAXC=$C
	[ "$(jq '[.migrations[]? | select(.finished)] | length' <<<"$M")" -ge 4 ] && break
	sleep 0.2
done
[ "$MAXC" -le 1 ] && ok "at most 1 migration at once on a (sampled: $MAXC)" ||
	fail "$MAXC migrations at once, limit 1"
for _ in $(seq 50); do
	[ "$(on "$SOCK_a" --json host drain-status a | jq -r .running)" = false ] && break
	sleep 0.2
done
OUT=$(on "$SOCK_a" --json host drain-status a)
RC=$?
[ "$RC" = 0 ] && ok "drain finished, rc 0" || fail "drain rc=$RC: $OUT"
jq -e '.migrated == 4 and .failed == 0 and .peak_fleet == 1 and .peak_per_host == 1' <<<"$OUT" >/dev/null &&
	ok "4 migrated, the drain ran at most 1 at once" || fail "drain status: $OUT"
TB=$(jq '[.vms[] | select(.target == "b")] | length' <<<"$OUT")
TC=$(jq '[.vms[] | select(.target == "c")] | length' <<<"$OUT")
[ "$TB" = 1 ] && [ "$TC" = 3 ] && ok "spread by capacity: 3 to c, 1 to b (b runs big)" ||
	fail "spread: b=$TB c=$TC: $(jq -c '[.vms[] | [.vm, .target]]' <<<"$OUT")"
LB=$(on "$SOCK_b" --json vm list | jq -r '.vms[] | select(.state == "VM_STATE_RUNNING") | .name')
LC=$(on "$SOCK_c" --json vm list | jq -r '.vms[] | select(.state == "VM_STATE_RUNNING") | .name')
KEYS=$(ectl get --prefix "${P}vms/" -w json | jq -r '.kvs[]? | "\(.key | @base64d) \(.value | @base64d | fromjson | .owner)"')
for v in d1 d2 d3 d4; do
	T=$(jq -r ".vms[] | select(.vm == \"$v\") | .target" <<<"$OUT")
	S=SOCK_$T
	if [ -z "$T" ] || [ -z "${!S:-}" ]; then
		fail "$v: no target"
		continue
	fi
	L=LB
	[ "$T" = c ] && L=LC
	grep -qx "$v" <<<"${!L}" && ok "$v runs on $T" || fail "$v not running on $T: ${!L}"
	grep -qx "${P}vms/$v $T" <<<"$KEYS" && ok "$v's key: owner $T" || fail "$v key: $KEYS"
	expect_intact "$v on $T, every page" "${!S}" $v
done
[ "$(on "$SOCK_a" --json vm list | jq '.vms | length')" = 0 ] && ok "a runs no VM" ||
	fail "a still has: $(on "$SOCK_a" vm list)"
OWNED=$(grep -c ' a$' <<<"$KEYS")
[ "$OWNED" = 0 ] && ok "no ownership key names a" || fail "$OWNED keys still name a"
[ -z "$(ectl get --prefix "${P}drain/slots/" --keys-only)" ] && ok "every fleet slot released" ||
	fail "slots left: $(ectl get --prefix "${P}drain/slots/")"
TXT=$(on "$SOCK_a" host drain-status a)
grep -qE '^d1 +migrated +[bc] ' <<<"$TXT" && ok "drain-status table" || fail "drain-status: $TXT"

# --- 5. undrain ------------------------------------------------------------------------
OUT=$(on "$SOCK_c" host undrain a 2>&1)
RC=$?
[ "$RC" = 0 ] && grep -q "host a: no longer draining" <<<"$OUT" &&
	ok "undrain a through c's daemon" || fail "undrain a: rc=$RC: $OUT"
HL=$("$CTL" host list --etcd "$ETCD_ENDPOINTS" 2>&1)
grep -qE '^a +soft .* up ' <<<"$HL" && ok "host list shows a up" || fail "host list: $HL"
SOCK=$SOCK_a expect_rc 0 "vm create on a after undrain" ctl vm create u1 --mem 32M --vcpus 1 --rate 2000
expect_intact "u1 on a, every page" "$SOCK_a" u1
expect_rc 0 "undrain of a host not draining: a no-op" on "$SOCK_a" host undrain a
grep -q "was not draining" <<<"$LAST_OUT" || fail "second undrain: $LAST_OUT"

# hosts_of VM: the hosts (of a b c e f) where VM runs, space-separated
# (an incoming copy a cancelled migration left behind is not running).
hosts_of() {
	local h s out=
	for h in a b c e f; do
		s=SOCK_$h
		[ -n "${!s:-}" ] || continue
		[ "$(vm_state "${!s}" "$1")" = VM_STATE_RUNNING ] && out+="$h "
	done
	echo "${out% }"
}

# wait_drain SOCK HOST: until HOST's drain is no longer running (60 s).
wait_drain() {
	local sock=$1 host=$2
	wait_until '[ "$(on "$sock" --json host drain-status "$host" |
		jq -r .running)" = false ]' 60
}

# --- 6. cancel with a migration in flight -----------------------------------------
daemon e "src.setup=sleep:6000"
for v in e1 e2 e3; do
	SOCK=$SOCK_e expect_rc 0 "create $v on e" ctl vm create $v --mem 32M --vcpus 1 --rate 2000
done
expect_rc 0 "drain e started through a's daemon" on "$SOCK_a" host drain e --max-fleet 1 --no-wait
for _ in $(seq 100); do
	ST=$(on "$SOCK_e" --json host drain-status e)
	[ "$(jq '[.vms[] | select(.state == "migrating")] | length' <<<"$ST")" = 1 ] && break
	sleep 0.2
done
INFLIGHT=$(jq -r '.vms[] | select(.state == "migrating") | .vm' <<<"$ST")
[ -n "$INFLIGHT" ] && ok "e's drain: $INFLIGHT in flight" || fail "nothing in flight: $ST"
OUT=$(on "$SOCK_b" host drain-cancel e 2>&1)
RC=$?
[ "$RC" = 0 ] && grep -q "drain cancelled: 0 migrated, 0 not moved, 3 cancelled" <<<"$OUT" &&
	ok "drain-cancel e through b: the drain ended cancelled" || fail "drain-cancel: rc=$RC: $OUT"
ST=$(on "$SOCK_e" --json host drain-status e)
jq -e '.state == "cancelled" and (.running | not) and .cancelled == 3 and
	([.vms[] | select(.state == "cancelled")] | length) == 3' <<<"$ST" >/dev/null &&
	ok "status: cancelled, every VM cancelled" || fail "status after cancel: $ST"
grep -qE "^$INFLIGHT +cancelled .*migration [0-9]+ cancelled with the drain" <<<"$OUT" &&
	ok "the migration in flight was cancelled" || fail "in-flight row: $OUT"
for v in e1 e2 e3; do
	H=$(hosts_of $v)
	[ "$H" = e ] && ok "$v runs on e only" || fail "$v runs on: '$H'"
	[ "$(vm_state "$SOCK_e" $v)" = VM_STATE_RUNNING ] || fail "$v on e: $(vm_state "$SOCK_e" $v)"
	expect_intact "$v on e after the cancel, every page" "$SOCK_e" $v
	[ "$(owner_of $v)" = e ] || fail "$v's key: $(owner_of $v)"
done
HL=$("$CTL" host list --etcd "$ETCD_ENDPOINTS" 2>&1)
grep -qE '^e +soft .* draining ' <<<"$HL" && ok "e stays draining after the cancel" || fail "host list: $HL"
expect_rc 1 "drain-cancel of a drain that ended" on "$SOCK_e" host drain-cancel e

# --- 7. cancel with a migration past its commit point -----------------------------------
daemon f "src.committed=sleep:5000"
for v in f1 f2; do
	SOCK=$SOCK_f expect_rc 0 "create $v on f" ctl vm create $v --mem 32M --vcpus 1 --rate 2000
done
expect_rc 0 "drain f started" on "$SOCK_f" host drain f --max-fleet 1 --no-wait
wait_log "$TMP/f.log" "name=src.committed" 300 && ok "f1 held past its commit" ||
	fail "src.committed never fired"
OUT=$(on "$SOCK_f" host drain-cancel f 2>&1)
RC=$?
[ "$RC" = 0 ] && ok "drain-cancel f" || fail "drain-cancel f: rc=$RC: $OUT"
ST=$(on "$SOCK_f" --json host drain-status f)
jq -e '.state == "cancelled" and .migrated == 1 and .cancelled == 1 and
	(.vms[] | select(.vm == "f1") | .state == "migrated" and .committing and
	 (.reason | test("past its commit point")))' <<<"$ST" >/dev/null &&
	ok "f1 left to finish (committing, migrated), f2 cancelled" || fail "status: $ST"
T=$(jq -r '.vms[] | select(.vm == "f1") | .target' <<<"$ST")
S=SOCK_$T
[ "$(hosts_of f1)" = "$T" ] && ok "f1 runs on $T only" || fail "f1 runs on '$(hosts_of f1)', target '$T'"
[ -n "${!S:-}" ] && expect_intact "f1 on $T, every page" "${!S}" f1
[ "$(owner_of f1)" = "$T" ] || fail "f1's key: $(owner_of f1)"
[ "$(hosts_of f2)" = f ] && ok "f2 runs on f only" || fail "f2 runs on '$(hosts_of f2)'"
expect_intact "f2 on f, every page" "$SOCK_f" f2
finish
