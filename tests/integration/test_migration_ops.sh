#!/bin/bash
# Operator controls of migrations: the capabilities call, one migration
# UUID on both daemons (status, events, logs), host names and IPv6
# literals as addresses, the receiving accelerator's choice, and paused
# VMs (migrated paused, paused and resumed mid-migration). Every migrated
# VM is checked page by page (vm check).
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
# Both control RPCs on TCP too: migrate-send and migrate-recv --connect.
SRC_RPC=$(free_port)
start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel soft \
	--rpc-listen "127.0.0.1:$SRC_RPC"
SRC=$SOCK
DST_RPC=$(free_port)
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel soft \
	--rpc-listen "127.0.0.1:$DST_RPC"
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi
UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'

# --- capabilities ---------------------------------------------------------
caps=$(SOCK=$SRC ctl --json capabilities)
[ "$(json_get "$caps" '.apiVersion // .api_version')" -ge 2 ] 2>/dev/null &&
	ok "capabilities: api version $(json_get "$caps" '.apiVersion // .api_version')" ||
	fail "capabilities: $caps"
[ "$(json_get "$caps" '.apiPackage // .api_package')" = migd.v1 ] &&
	ok "capabilities: api package migd.v1" ||
	fail "capabilities: api package: $caps"
for f in migration migration-uuid postcopy tls paused-migration; do
	json_get "$caps" '.features[]' | grep -qx "$f" &&
		ok "capabilities: feature $f" || fail "capabilities lacks $f: $caps"
done
json_get "$caps" '.accelerators[]' | grep -qx soft &&
	ok "capabilities: soft accelerator" || fail "capabilities: $caps"

# migrate NAME RECV-ADDR SEND-HOST [tool args]: one migration; sets
# PORT. Without tool args both tools use the control sockets.
migrate() {
	local name=$1 raddr=$2 shost=$3
	shift 3
	local rargs=(--socket "$DST") sargs=(--socket "$SRC")
	if [ "${1:-}" = --connect ]; then
		rargs=(--connect "127.0.0.1:$DST_RPC" --tls-dir "$TMP/tls")
		sargs=(--connect "127.0.0.1:$SRC_RPC" --tls-dir "$TMP/tls")
	fi
	PORT=$("$RECV" "${rargs[@]}" "$raddr") ||
		{ fail "migrate-recv $raddr: $PORT"; return 1; }
	expect_rc 0 "migrate $name to $shost:$PORT${1:+ $1}" \
		"$SEND" "${sargs[@]}" "$name" "$shost:$PORT"
	echo "$LAST_OUT" >"$TMP/$name.out"
	[ "$LAST_RC" = 0 ] || { echo "$LAST_OUT" | tail -5; return 1; }
	SOCK=$DST expect_rc 0 "$name: vm check on the destination" \
		ctl vm check "$name"
}

# --- UUID, host name --------------------------------------------------------
SOCK=$SRC expect_rc 0 "create u1" ctl vm create u1 --mem 32M --vcpus 2 \
	--rate 2000 --prefill
SOCK=$SRC ctl --json events --kind phase --count 3 >"$TMP/events_src" 2>&1 &
EVPID=$!
PIDS+=("$EVPID")
sleep 0.3
if migrate u1 localhost:0 localhost --connect; then
	us=$(SOCK=$SRC ctl --json migration status u1 | jq -r '.migrations[0].uuid')
	ud=$(SOCK=$DST ctl --json migration status u1 | jq -r '.migrations[0].uuid')
	[[ $us =~ $UUID_RE ]] && ok "source uuid $us" || fail "source uuid '$us'"
	[ "$us" = "$ud" ] && ok "destination shows the same uuid" ||
		fail "uuids differ: source '$us', destination '$ud'"
	SOCK=$DST ctl migration status u1 | grep -q "uuid: *$us" &&
		ok "status report prints the uuid" ||
		fail "no uuid in: $(SOCK=$DST ctl migration status u1)"
	grep -q "event=migration_started .*uuid=$us" "$TMP/src.log" &&
		ok "source log names the uuid" || fail "no uuid in the source log"
	grep -q "event=migration_finished .*uuid=$us" "$TMP/dst.log" &&
		ok "destination log names the uuid" ||
		fail "no uuid in the destination log"
	for _ in $(seq 100); do
		[ "$(wc -l <"$TMP/events_src")" -ge 3 ] && break
		sleep 0.1
	done
	grep -q "\"uuid\":\"$us\"" "$TMP/events_src" &&
		ok "events carry the uuid" ||
		fail "events: $(head -c 600 "$TMP/events_src")"
fi
kill "$EVPID" 2>/dev/null

# --- IPv6 literal -------------------------------------------------------------
if ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/'; then
	SOCK=$SRC expect_rc 0 "create u6" ctl vm create u6 --mem 32M \
		--rate 2000 --prefill
	if migrate u6 '[::1]:0' '[::1]'; then
		SOCK=$SRC ctl migration list | grep -q "\[::1\]:$PORT" &&
			ok "status prints [::1]:$PORT" ||
			fail "no [::1]:$PORT in: $(SOCK=$SRC ctl migration list)"
	fi
else
	echo "SKIP ipv6: no ::1 on the loopback"
fi

# --- paused VMs ------------------------------------------------------------------
state() { ctl --json vm inspect "$1" | jq -r .info.state; }
seqs() { ctl --json vm inspect "$1" | jq '[.vcpus[].seq] | add'; }

# Paused when the migration starts: it arrives paused, whole.
SOCK=$SRC expect_rc 0 "create p1" ctl vm create p1 --mem 32M --rate 2000 \
	--prefill
for _ in $(seq 100); do
	[ "$(SOCK=$SRC ctl --json vm inspect p1 | jq -r .prefill_done)" = true ] && break
	sleep 0.1
done
SOCK=$SRC expect_rc 0 "pause p1" ctl vm pause p1
if migrate p1 127.0.0.1:0 127.0.0.1; then
	[ "$(SOCK=$DST state p1)" = VM_STATE_PAUSED ] &&
		ok "p1 arrived paused" || fail "p1 on the destination: $(SOCK=$DST state p1)"
	SOCK=$DST expect_rc 0 "resume p1 on the destination" ctl vm resume p1
	a=$(SOCK=$DST seqs p1)
	for _ in $(seq 50); do
		[ "$(SOCK=$DST seqs p1)" -gt "$a" ] && break
		sleep 0.1
	done
	[ "$(SOCK=$DST seqs p1)" -gt "$a" ] && ok "p1 runs once resumed" ||
		fail "p1 does not run after resume"
fi

# Paused and resumed by its operator while it migrates, paused again: it
# arrives paused. The link is slowed to a crawl (256 KiB/s) so that the
# migration is still iterating whatever the machine's load, then opened
# up (migration tune) once the checks are done.
SOCK=$SRC expect_rc 0 "create p2" ctl vm create p2 --mem 32M --rate 2000 \
	--content random --prefill
for _ in $(seq 100); do
	[ "$(SOCK=$SRC ctl --json vm inspect p2 | jq -r .prefill_done)" = true ] && break
	sleep 0.1
done
PORT=$("$RECV" --socket "$DST" 127.0.0.1:0) || fail "migrate-recv p2: $PORT"
"$SEND" --socket "$SRC" --bandwidth 256KiB/s --compress off p2 \
	"127.0.0.1:$PORT" >"$TMP/p2.out" 2>&1 &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 200); do
	[ "$(SOCK=$SRC ctl --json migration status p2 2>/dev/null |
		jq -r '.migrations[0].progress.pages_sent // 0')" -gt 0 ] && break
	sleep 0.1
done
SOCK=$SRC expect_rc 0 "pause p2 while it migrates" ctl vm pause p2
SOCK=$SRC expect_rc 1 "pause p2 twice is refused" ctl vm pause p2
a=$(SOCK=$SRC seqs p2)
sleep 0.5
b=$(SOCK=$SRC seqs p2)
[ "$a" = "$b" ] && ok "p2 stopped writing while paused ($a)" ||
	fail "p2 wrote while paused: $a -> $b"
SOCK=$SRC expect_rc 0 "resume p2 while it migrates" ctl vm resume p2
for _ in $(seq 50); do
	c=$(SOCK=$SRC seqs p2)
	[ "${c:-0}" -gt "${b:-0}" ] && break
	sleep 0.1
done
[ "${c:-0}" -gt "${b:-0}" ] && ok "p2 writes again once resumed ($b -> $c)" ||
	fail "p2 did not resume on the source ($b -> $c)"
SOCK=$SRC expect_rc 0 "pause p2 again" ctl vm pause p2
SOCK=$SRC expect_rc 0 "open the link" ctl migration tune p2 --bandwidth 1GiB/s
wait "$SPID" && ok "p2 migrated" || fail "migrate-send p2: $(tail -5 "$TMP/p2.out")"
[ "$(SOCK=$DST state p2)" = VM_STATE_PAUSED ] && ok "p2 arrived paused" ||
	fail "p2 on the destination: $(SOCK=$DST state p2)"
SOCK=$DST expect_rc 0 "p2: vm check on the destination" ctl vm check p2

# --- receiving accelerator ------------------------------------------------------
if [ -e /dev/kvm ]; then
	echo "SKIP accel refusal: this machine has /dev/kvm"
else
	expect_rc 4 "migrate-recv --accel kvm without kvm" \
		"$RECV" --socket "$DST" --accel kvm 127.0.0.1:0
	grep -q -- "--accel" <<<"$LAST_OUT" && ok "  ... the refusal names --accel" ||
		fail "refusal: $LAST_OUT"
fi
expect_rc 2 "migrate-recv --accel bogus" "$RECV" --socket "$DST" \
	--accel bogus 127.0.0.1:0

finish
