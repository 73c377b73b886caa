#!/bin/bash
# Postcopy between two real daemons on loopback (soft accelerator): a
# 256 MiB guest writing random pages flat out cannot converge without a
# throttle; with --postcopy-after 0 it switches after the first pass, runs
# on the destination at once and pulls what it lacks. It must complete,
# pass the source's post-commit verification (every page re-hashed
# against the digest the destination computed as it installed them), pass
# the page-stamp oracle on the destination, and keep running there.
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/lib_faults.sh"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
[ -e /dev/userfaultfd ] || [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 1 ] ||
	[ "$(id -u)" = 0 ] || { echo "SKIP: no userfaultfd for this user"; exit 77; }
start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel soft
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel soft
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi

MEM=${MIGD_IT_PC_MEM:-256M}
SOCK=$SRC expect_rc 0 "create pc1 ($MEM, random pages flat out)" \
	ctl vm create pc1 --mem "$MEM" --vcpus 2 --pattern random --rate 0 \
	--content random --heartbeat-us 2000
sleep 1
before=$(seq_total "$SRC" pc1)
port=$("$RECV" --socket "$DST" --name pc1 127.0.0.1:0) || fail "migrate-recv: $port"
expect_rc 0 "migrate pc1 with --postcopy-after 0" \
	"$SEND" --socket "$SRC" --postcopy-after 0 pc1 "127.0.0.1:$port"
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
finish
