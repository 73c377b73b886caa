#!/usr/bin/env bash
# Host drain (docs/architecture.md, "Host drain"): three daemons and a
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
#      a while the drain runs, and the drain's own count).
# argv: migrated migratectl migrate-send migrate-recv
DIR=$(cd "$(dirname "$0")" && pwd)
source "$DIR/lib_faults.sh" "$@"
source "$DIR/lib_etcd.sh"
etcd_need
P=/migrated/

# daemon NAME: host id NAME, control RPC on TCP (the drain calls its
# peers there); sets SOCK_<NAME>.
daemon() {
	start_daemon "$1" --accel soft --dev-tls --tls-dir "$TMP/tls" \
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
expect_rc 2 "drain of another host's id refused" on "$SOCK_a" host drain b
grep -q "this daemon is host 'a'" <<<"$LAST_OUT" || fail "wrong-host message: $LAST_OUT"

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
expect_rc 0 "drain a started (--max-fleet 1, --no-wait)" on "$SOCK_a" host drain a --max-fleet 1 --no-wait
sleep 1.5
ST=$(on "$SOCK_a" --json host drain-status a)
N=$(jq '[.vms[] | select(.state == "pending")] | length' <<<"$ST")
[ "$N" = 4 ] && ok "the fleet's only slot is held elsewhere: all 4 wait" ||
	fail "slot held elsewhere, yet: $(jq -c '[.vms[] | .state]' <<<"$ST")"
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
finish
