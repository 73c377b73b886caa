#!/bin/bash
# Idle connections must not lock migrations out: 200 idle TCP connections
# and a few truncated TLS ClientHellos against the migration port that
# migrate-recv opened, and 600 against the control RPC port, held open
# while a real migration runs between two daemons. The migration completes
# and verifies with no page differing; the RPC port and the Unix socket
# still serve clients, and the RPC handshake time-out closes idle ones.
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
# The flood is the point, not the accelerator: soft in the plain test (KVM
# nested under TCG starved the 600-connection flood past the budget).
ACCEL=$(it_accel)
FLOOD="$(dirname "$0")/flood.py"

start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
SRC=$SOCK
RPC_PORT=$(free_port)
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL" \
	--rpc-listen "127.0.0.1:$RPC_PORT" --rpc-handshake-timeout-ms 2000
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi

SOCK=$SRC expect_rc 0 "create fl1" ctl vm create fl1 --mem 64M --vcpus 2 \
	--pattern sweep --rate 5000 --heartbeat-us 2000
port=$("$RECV" --socket "$DST" --name fl1 127.0.0.1:0) ||
	{ fail "migrate-recv: $port"; finish; }

# flood PORT NAME IDLE: start a flood, wait until its connections are open.
flood() {
	rm -f "$TMP/$2.ready"
	python3 "$FLOOD" "$1" --idle "$3" --truncated 5 --hold 15 \
		--ready "$TMP/$2.ready" &
	PIDS+=($!)
	for _ in $(seq 200); do
		[ -s "$TMP/$2.ready" ] && break
		sleep 0.05
	done
	[ -s "$TMP/$2.ready" ] && ok "flood on $2: $(cat "$TMP/$2.ready")" ||
		fail "flood on $2 did not open its connections"
}
flood "$port" migration 200
# More than the daemon's 512 RPC connection slots, which the Unix socket
# shares: at once, before any handshake time-out, a real client over TCP
# and one on the Unix socket are served (newer handshakes evict the oldest
# idle ones).
flood "$RPC_PORT" rpc 600
expect_rc 0 "RPC over TCP during the flood" timeout 10 "$CTL" \
	--connect "127.0.0.1:$RPC_PORT" --tls-dir "$TMP/tls" ping
expect_rc 0 "RPC on the Unix socket during the flood" \
	timeout 10 "$CTL" --socket "$DST" ping

expect_rc 0 "migrate fl1 under the flood" \
	"$SEND" --socket "$SRC" fl1 "127.0.0.1:$port"
echo "$LAST_OUT" | tail -4
v=$(echo "$LAST_OUT" | grep 'verified:')
bad=$(sed -n 's/.*: \([0-9][0-9]*\) differ.*/\1/p' <<<"$v")
pages=$(sed -n 's/.*verified: *\([0-9][0-9]*\) pages.*/\1/p' <<<"$v")
[ -n "$bad" ] && [ "$bad" = 0 ] && [ "${pages:-0}" -gt 0 ] &&
	ok "verified $pages pages, 0 differ" || fail "verification: '$v'"
i=$(SOCK=$DST ctl --json vm inspect fl1)
[ "$(json_get "$i" .info.state)" = VM_STATE_RUNNING ] &&
	ok "fl1 runs on the destination" || fail "dest state: $i"
# The flood reached the migration port and was dropped there.
n=$(grep -c 'op=accept_drop' "$TMP/dst.log")
[ "$n" -gt 0 ] && ok "$n flood connections dropped by the listener" ||
	fail "no flood connection was dropped by the migration listener"

# And the handshake time-out (2 s) closes the idle ones that were left,
# while the flood still holds them open.
for _ in $(seq 50); do
	n=$(grep -c 'event=tls_handshake_timeout' "$TMP/dst.log")
	[ "$n" -gt 0 ] && break
	sleep 0.1
done
[ "$n" -gt 0 ] && ok "$n idle RPC connections closed by the handshake time-out" ||
	fail "no RPC handshake time-out fired"
finish
