#!/bin/bash
# The source's switch controls between real daemons on loopback (soft
# accelerator), every migrated VM checked page by page (migratectl vm
# check) where it ends up:
#  - postcopy auto: a guest writing random pages flat out behind a
#    link capped at 8 MB/s switches to postcopy by the convergence model
#    (and the report says why, with the model's figures); an idle guest
#    behind the same link converges in precopy and never switches;
#  - migratectl migration switchover forces a migration that cannot
#    converge to finish now;
#  - each timeout policy: abort (the VM stays on the source), switchover,
#    postcopy, and postcopy towards a destination that does not offer it
#    (aborted, saying why);
#  - migration status shows a percentage and an ETA while it runs.
source "$(dirname "$0")/lib_faults.sh" "$@"

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
# A destination that does not offer postcopy (its old digest check keeps
# no page-hash table, which postcopy needs).
MIGRATED_DST_DIGEST=reread start_daemon nopc --dev-tls --tls-dir "$TMP/tls" \
	--accel soft
NOPC=$SOCK

# hot NAME [MEM]: a guest (16 MiB) writing random pages flat out: behind
# 8 MB/s, with the throttle held at 10% and a 1 ms downtime limit, it
# never converges.
hot() {
	ctl vm create "$1" --mem "${2:-16M}" --vcpus 1 --pattern random --rate 0 \
		--content random --heartbeat-us 2000 >/dev/null 2>&1 ||
		fail "create $1"
}
declare -A PID
# send NAME DEST_SOCK ARGS...: migrate NAME in the background (report in
# $TMP/NAME.out).
send() {
	local name=$1 dsock=$2 port
	shift 2
	port=$("$RECV" --socket "$dsock" --name "$name" 127.0.0.1:0) ||
		fail "migrate-recv: $port"
	"$SEND" --socket "$SRC" --bandwidth 8M --compress off "$@" "$name" \
		"127.0.0.1:$port" >"$TMP/$name.out" 2>&1 &
	PID[$name]=$!
}
# wait_send NAME WANT_RC: wait for the migrate-send of NAME.
wait_send() {
	wait "${PID[$1]}"
	local rc=$?
	[ "$rc" = "$2" ] && ok "$1: migrate-send rc=$rc" ||
		fail "$1: migrate-send rc=$rc, wanted $2: $(tail -12 "$TMP/$1.out")"
}
# landed NAME: NAME left the source and is intact on the destination.
landed() {
	assert_verified_zero "$TMP/$1.out" "$1"
	wait_state "$SRC" "$1" absent 50 && ok "$1 left the source" ||
		fail "$1 still on the source: $(vm_state "$SRC" "$1")"
	wait_state "$DST" "$1" VM_STATE_RUNNING 100 ||
		fail "$1 not running on the destination"
	expect_intact "$1 intact on the destination" "$DST" "$1"
}
# stayed NAME: the migration failed and NAME runs, intact, on the source.
stayed() {
	[ "$(vm_state "$SRC" "$1")" = VM_STATE_RUNNING ] &&
		ok "$1 runs on the source" || fail "$1: $(vm_state "$SRC" "$1")"
	expect_intact "$1 intact on the source" "$SRC" "$1"
}
# has NAME REGEX DESC: the report of NAME has a line matching REGEX.
has() {
	grep -qE "$2" "$TMP/$1.out" && ok "$1: $3" ||
		fail "$1: $3: no /$2/ in: $(tail -14 "$TMP/$1.out")"
}
hasnt() {
	grep -qE "$2" "$TMP/$1.out" &&
		fail "$1: $3: $(grep -E "$2" "$TMP/$1.out")" || ok "$1: $3"
}
# progress NAME: the source's MigProgress of NAME (JSON), or "".
progress() {
	SOCK=$SRC ctl --json migration status "$1" 2>/dev/null |
		jq -c '.migrations[0].progress // empty'
}

SOCK=$SRC
hot auto1
hot so1 32M
ctl vm create idle1 --mem 16M --vcpus 1 --pattern idle --content stamp \
	--prefill >/dev/null 2>&1 || fail "create idle1"
ok "3 VMs created"

# 1. postcopy auto: the guest outruns the link (the model wants far more
# than a 20% throttle) and switches; an idle guest behind the same link
# converges in precopy. 2. A forced switchover of a migration that
# cannot converge (it would iterate for ever under its throttle).
send auto1 "$DST" --postcopy-after auto --postcopy-throttle-max 20
send idle1 "$DST" --postcopy-after auto --postcopy-throttle-max 20
send so1 "$DST" --downtime 1 --throttle-max 10
# While so1 iterates: a percentage that never decreases; an ETA while the
# first pass runs (its bandwidth so far; afterwards the guest outruns the
# link at the throttle ceiling, and the ETA is honestly unknown, 0).
pcts=() eta0=none
for _ in $(seq 150); do
	p=$(progress so1)
	if [ "$(jq -r .phase <<<"$p")" = MIG_PHASE_ITERATE ]; then
		pcts+=("$(jq -r '.percent // 0' <<<"$p")")
		e=$(jq -r '.etaNs // .eta_ns // 0' <<<"$p")
		[ "$(jq -r '.iteration // 0' <<<"$p")" = 0 ] &&
			{ [ "$eta0" = none ] || [ "$eta0" = 0 ]; } && eta0=$e
		[ "${#pcts[@]}" -ge 5 ] && break
	fi
	sleep 0.1
done
sorted=$(printf '%s\n' "${pcts[@]}" | sort -n | tr '\n' ' ')
[ "${#pcts[@]}" -ge 2 ] && [ "$sorted" = "$(printf '%s\n' "${pcts[@]}" | tr '\n' ' ')" ] &&
	[ "${pcts[-1]}" -gt 0 ] &&
	ok "so1: percent ${pcts[*]} (never decreasing)" ||
	fail "so1: percent ${pcts[*]:-none}"
case $eta0 in
none) echo "note: no status sample fell in so1's first pass (loaded machine)" ;;
0) fail "so1: no ETA in the first pass" ;;
*) ok "so1: ETA ${eta0} ns in the first pass" ;;
esac
ctl migration status so1 | grep -qE '^ *progress: +[0-9]+%, eta [^,]+, .* left, throttle [0-9]+%, expected downtime ' &&
	ok "so1: migratectl migration status prints the progress line" ||
	fail "so1: no progress line: $(ctl migration status so1)"
expect_rc 0 "migratectl migration switchover so1" ctl migration switchover so1
wait_send so1 0
has so1 '^ *ended early: +switchover forced' "the report says the switchover was forced"
hasnt so1 '^ *postcopy:' "no postcopy"
landed so1
expect_rc 1 "switchover of a finished migration is refused" \
	ctl migration switchover so1

wait_send auto1 0
has auto1 '^ *ended early: +postcopy automatically .*needed throttle [0-9]+% \(limit 20%\)' \
	"switched to postcopy by the model, with its figures"
has auto1 '^ *postcopy: +[0-9]+ pages missing' "the postcopy report"
landed auto1
wait_send idle1 0
hasnt idle1 '^ *(postcopy|ended early):' "no postcopy switch for an idle guest"
landed idle1

# 3. Timeout policies: a 2 s limit on guests that cannot converge (the
# first pass alone takes 2 s at 8 MB/s).
for v in toa tos top ton; do hot "$v"; done
ok "4 more VMs created"
send toa "$DST" --timeout-ms 2000 --downtime 1 --throttle-max 10
send tos "$DST" --timeout-ms 2000 --downtime 1 --throttle-max 10 \
	--timeout-policy switchover
send top "$DST" --timeout-ms 2000 --downtime 1 --throttle-max 10 \
	--timeout-policy postcopy
send ton "$NOPC" --timeout-ms 2000 --downtime 1 --throttle-max 10 \
	--timeout-policy postcopy
wait_send toa 1
has toa 'could not converge within 2000 ms' "policy abort: the time limit failed it"
stayed toa
wait_send tos 0
has tos '^ *ended early: +switchover at the time limit' "policy switchover"
hasnt tos '^ *postcopy:' "no postcopy"
landed tos
wait_send top 0
has top '^ *ended early: +postcopy at the time limit' "policy postcopy"
has top '^ *postcopy: +[0-9]+ pages missing' "it ran as postcopy"
landed top
wait_send ton 1
has ton 'does not offer postcopy \(timeout policy postcopy\): aborted' \
	"policy postcopy without an offer aborts, saying why"
stayed ton

finish
