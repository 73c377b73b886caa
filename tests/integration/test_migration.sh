#!/bin/bash
# Live migration between two real daemons on loopback, through
# migrate-recv / migrate-send. Skipped (77) until the migration engine is
# built into the daemon.
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
# KVM where /dev/kvm is there, else the soft accelerator: these run on
# every machine. MIGD_IT_ACCEL=soft forces the soft one.
ACCEL=$(it_accel)
echo "accelerator: $ACCEL"
start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	# Without the engine every migration call must say so clearly.
	SOCK=$SRC expect_rc 0 "create" ctl vm create m1 --mem 64M --pattern idle
	expect_rc 4 "migrate-recv: engine missing" "$RECV" --socket "$DST" 127.0.0.1:0
	expect_rc 4 "migrate-send: engine missing" "$SEND" --socket "$SRC" m1 127.0.0.1:4000
	expect_rc 3 "migrate-send: unknown VM" "$SEND" --socket "$SRC" nosuch 127.0.0.1:4000
	expect_rc 2 "migrate-send: bad address" "$SEND" --socket "$SRC" m1 127.0.0.1
	echo "SKIP: migration engine not built (refusals checked)"
	[ "$FAILS" -eq 0 ] && exit 77 || finish
fi

# Refusals first.
expect_rc 3 "unknown VM" "$SEND" --socket "$SRC" nosuch 127.0.0.1:1
expect_rc 2 "bad address" "$SEND" --socket "$SRC" m1 localhost
expect_rc 2 "bad port" "$SEND" --socket "$SRC" m1 localhost:70000
expect_rc 5 "no daemon" "$SEND" --socket "$TMP/none.sock" m1 localhost:1

# run_one name mem pattern rate flags [recv-args]: recv-args defaults to
# "--name NAME"; "-" gives migrate-recv no --name (the name offered by the
# source must be kept).
run_one() {
	local name=$1 mem=$2 pattern=$3 rate=$4 flags=$5
	local recv_args=${6:---name $name}
	[ "$recv_args" = - ] && recv_args=
	SOCK=$SRC expect_rc 0 "create $name" ctl vm create "$name" --mem "$mem" \
		--vcpus 2 --pattern "$pattern" --rate "$rate" --heartbeat-us 2000
	sleep 0.5
	local before port
	before=$(SOCK=$SRC ctl --json vm inspect "$name" | jq '[.vcpus[].seq] | add')
	port=$("$RECV" --socket "$DST" $recv_args $flags 127.0.0.1:0) ||
		{ fail "migrate-recv: $port"; return; }
	expect_rc 0 "migrate $name ($mem, $rate pages/s $flags)" \
		"$SEND" --socket "$SRC" $flags "$name" "127.0.0.1:$port"
	echo "$LAST_OUT" | tail -8
	echo "$LAST_OUT" >"$TMP/$name.out"
	if [ "$LAST_RC" != 0 ]; then
		# Whatever failed, the failure semantics must hold.
		[ "$(SOCK=$SRC ctl --json vm inspect "$name" | jq -r .info.state)" = VM_STATE_RUNNING ] &&
			ok "  ... $name still runs on the source" || fail "$name lost on the source"
		SOCK=$DST expect_rc 3 "  ... destination holds no $name" ctl vm inspect "$name"
		return
	fi
	assert_verified_zero "$TMP/$name.out" "$name"
	SOCK=$SRC expect_rc 3 "source no longer has $name" ctl vm inspect "$name"
	sleep 0.5
	local i after
	i=$(SOCK=$DST ctl --json vm inspect "$name")
	[ "$(json_get "$i" .info.state)" = VM_STATE_RUNNING ] &&
		ok "$name runs on the destination" || fail "dest state: $i"
	[ "$(json_get "$i" .info.origin)" = migrated ] && ok "origin migrated" ||
		fail "origin: $i"
	# Guest memory came along (seq never goes back) and the guest keeps
	# running there (writes or heartbeats move on).
	after=$(echo "$i" | jq '[.vcpus[].seq] | add')
	[ "${after:-0}" -ge "$before" ] && ok "guest state carried ($before -> $after)" ||
		fail "seq went back: $before -> $after"
	local l1 l2
	l1=$(echo "$i" | jq '[.vcpus[] | .seq + .heartbeats] | add')
	sleep 0.5
	l2=$(SOCK=$DST ctl --json vm inspect "$name" | jq '[.vcpus[] | .seq + .heartbeats] | add')
	[ "${l2:-0}" -gt "${l1:-0}" ] && ok "guest keeps running on the destination ($l1 -> $l2)" ||
		fail "no progress on destination: $l1 -> $l2"
}
# ThreadSanitizer daemons hash and check every page through instrumented
# code, 5 to 15 times slower: there the busy VM is 64 MiB, so that the work
# between two passes stays inside the engine's 10 s I/O timeout.
# KVM nested under TCG (tools/kvmrig, the "kvm"-labelled twin): a guest's
# first touch of a page costs ~80 us and every exit ~50 us there, so the
# VMs are smaller; the pages are checked all the same, every one of them.
BUSY_MEM=256M FLAT_MEM=128M CANCEL_MEM=512M
ldd "$MIGRATED" 2>/dev/null | grep -q libtsan && BUSY_MEM=64M
if [ "$ACCEL" = kvm ] && [ -n "${KVMRIG:-}" ]; then
	BUSY_MEM=64M FLAT_MEM=32M CANCEL_MEM=128M
fi
run_one idle1 64M idle 0 "--insecure"
# No --name: the VM keeps the name it had on the source.
run_one busy1 "$BUSY_MEM" sweep 20000 "" -
run_one flat1 "$FLAT_MEM" sweep 0 ""

# --name renames on arrival; the offered name is not used.
SOCK=$SRC expect_rc 0 "create ren1" ctl vm create ren1 --mem 64M --pattern idle
port=$("$RECV" --socket "$DST" --name ren1-moved --insecure 127.0.0.1:0)
expect_rc 0 "migrate ren1 with --name ren1-moved" \
	"$SEND" --socket "$SRC" --insecure ren1 "127.0.0.1:$port"
echo "$LAST_OUT" >"$TMP/ren1.out"
assert_verified_zero "$TMP/ren1.out" ren1
# migrate-send returns when the source has the destination's Resumed; the
# destination daemon lists the VM when its worker's event reaches it, a
# moment later under a sanitizer (up to 5 s here).
for _ in $(seq 50); do
	SOCK=$DST ctl vm inspect ren1-moved >/dev/null 2>&1 && break
	sleep 0.1
done
SOCK=$DST expect_rc 0 "  ... destination has ren1-moved" ctl vm inspect ren1-moved
SOCK=$DST expect_rc 3 "  ... and no ren1" ctl vm inspect ren1

# Name collision: the destination already has a VM of that name. With
# --name the call is refused at once; without it the setup is refused:
# nothing is created there and the VM keeps running on the source.
SOCK=$SRC expect_rc 0 "create dup1 on the source" ctl vm create dup1 \
	--mem 64M --vcpus 1 --rate 2000 --heartbeat-us 2000
SOCK=$DST expect_rc 0 "create dup1 on the destination" ctl vm create dup1 \
	--mem 32M --pattern idle
expect_rc 1 "migrate-recv --name dup1 refused (name exists)" \
	"$RECV" --socket "$DST" --name dup1 127.0.0.1:0
echo "$LAST_OUT" | grep -q "exists" && ok "  ... and says why" ||
	fail "no reason: $LAST_OUT"
nvms=$(SOCK=$DST ctl --json vm list | jq '.vms | length')
port=$("$RECV" --socket "$DST" --insecure 127.0.0.1:0) ||
	fail "migrate-recv: $port"
hb1=$(SOCK=$SRC ctl --json vm inspect dup1 | jq '[.vcpus[] | .seq + .heartbeats] | add')
expect_rc 1 "migrate dup1 into a taken name fails" \
	"$SEND" --socket "$SRC" --insecure dup1 "127.0.0.1:$port"
echo "$LAST_OUT" | grep -q "already exists on the destination" &&
	ok "  ... with a clear reason" || fail "reason: $LAST_OUT"
[ "$(SOCK=$SRC ctl --json vm inspect dup1 | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "  ... dup1 still runs on the source" || fail "dup1 lost on the source"
sleep 0.3
hb2=$(SOCK=$SRC ctl --json vm inspect dup1 | jq '[.vcpus[] | .seq + .heartbeats] | add')
[ "${hb2:-0}" -gt "${hb1:-0}" ] && ok "  ... and makes progress ($hb1 -> $hb2)" ||
	fail "dup1 stalled on the source: $hb1 -> $hb2"
i=$(SOCK=$DST ctl --json vm inspect dup1)
[ "$(json_get "$i" .info.origin)" = created ] &&
	ok "  ... the destination's own dup1 is untouched" || fail "dest dup1: $i"
[ "$(SOCK=$DST ctl --json vm list | jq '.vms | length')" = "$nvms" ] &&
	ok "  ... and nothing was added there" || fail "VM count changed"
# A name given to migrate-recv is held until the migration ends: nobody
# can create that VM meanwhile, and a cancelled migration frees it.
"$RECV" --socket "$DST" --name hold1 --insecure 127.0.0.1:0 >/dev/null ||
	fail "migrate-recv --name hold1"
SOCK=$DST expect_rc 1 "create hold1 while it is arriving: refused" \
	ctl vm create hold1 --mem 32M --pattern idle
SOCK=$DST expect_rc 0 "cancel the incoming hold1" ctl migration cancel hold1
sleep 0.3
SOCK=$DST expect_rc 0 "  ... the name is free again" ctl vm create hold1 \
	--mem 32M --pattern idle

# Cancel: the VM stays on the source, the destination holds nothing.
SOCK=$SRC expect_rc 0 "create c1" ctl vm create c1 --mem "$CANCEL_MEM" --rate 100000 --content random
port=$("$RECV" --socket "$DST" --name c1 127.0.0.1:0)
"$SEND" --socket "$SRC" --bandwidth 20M c1 "127.0.0.1:$port" >"$TMP/c1.out" 2>&1 &
SP=$!
# Cancelled once it iterates: not after a fixed time, which a loaded
# machine can spend before the migration exists.
wait_until '[ "$(SOCK=$SRC ctl --json migration status c1 |
	jq -r ".. | .phase? // empty" | head -1)" = MIG_PHASE_ITERATE ]' 30 ||
	fail "c1's migration never iterated: $(cat "$TMP/c1.out")"
SOCK=$SRC expect_rc 0 "cancel" ctl migration cancel c1
wait $SP
rc=$?
[ $rc -eq 1 ] && ok "migrate-send exits 1 after cancel" || fail "rc=$rc $(cat "$TMP/c1.out")"
[ "$(SOCK=$SRC ctl --json vm inspect c1 | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "c1 still runs on the source" || fail "c1 state on source"
SOCK=$DST expect_rc 3 "destination holds no c1" ctl vm inspect c1
finish
