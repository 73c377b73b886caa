#!/bin/bash
# SIGHUP reload and the service manager's notify protocol.
#
# Part 1, one daemon (TCP RPC on 127.0.0.1:0, TLS dir from CA1 made with
# the openssl CLI, $NOTIFY_SOCKET on a python3 datagram listener):
# READY=1 at start; a CA1 client works; the TLS files are replaced with
# CA2 material and the config file changes (log level, a live timeout, a
# restart-only option); SIGHUP: RELOADING=1 then READY=1, a CA2 client
# works, a CA1 client is refused, a connection opened before keeps
# serving, the running VM is untouched, the debug level is in effect and
# the restart-only option is logged as such. Bad TLS files + SIGHUP: the
# old context keeps serving and the log says why. SIGTERM: STOPPING=1.
# Part 2, migrations: two daemons rotate their migration TLS to CA2 and
# reload; a migration between them succeeds and verifies; a third daemon
# still on CA1 is refused by the TLS handshake, the VM stays on the source.
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: no openssl CLI"; exit 77; }
ACCEL=$(it_accel)

# install_tls CA_DIR TLS_DIR: what a daemon reads (ca.pem host.pem host.key)
install_tls() {
	mkdir -p "$2" && chmod 700 "$2"
	cp "$1/ca.pem" "$1/host.pem" "$1/host.key" "$2/"
}
mkca "$TMP/ca1" migd-test-ca1 && mkca "$TMP/ca2" migd-test-ca2 ||
	{ fail "openssl could not make the test CAs"; finish; }
ok "CA1 and CA2 made with the openssl CLI"

# wait_count FILE REGEX N: until FILE has N lines matching (10 s).
wait_count() {
	local file=$1 re=$2 n=$3
	wait_until '[ "$(grep -cE "$re" "$file")" -ge "$n" ]' 10
}
# rpc TRUST CERT CMD...: migratectl over TCP + mutual TLS, trusting the
# server certificates of CA dir TRUST, presenting the client certificate
# of CA dir CERT.
rpc() {
	local trust=$1 cert=$2
	shift 2
	"$CTL" --connect "127.0.0.1:$RPC_PORT" --tls-ca "$trust/ca.pem" \
		--tls-cert "$cert/client.pem" --tls-key "$cert/client.key" \
		--timeout 5000 "$@"
}
refusals() { grep -c "event=tls_refused" "$LOG"; }
# refused DESC TRUST CERT: the daemon refuses the client's certificate in
# the handshake (migratectl: exit 5, "our certificate refused"; the
# daemon logs event=tls_refused).
refused() {
	local desc=$1 r0 out rc
	r0=$(refusals)
	out=$(rpc "$2" "$3" ping 2>&1)
	rc=$?
	if [ $rc = 5 ] && grep -q "our certificate refused" <<<"$out" &&
		[ "$(refusals)" -gt "$r0" ]; then
		ok "$desc (rc=5, event=tls_refused)"
	else
		fail "$desc: rc=$rc refusals $r0 -> $(refusals): $out"
	fi
}
# progress NAME: sum of the VM's vCPU write sequences and heartbeats.
progress() {
	ctl --json vm inspect "$1" | jq '[.vcpus[] | .seq + .heartbeats] | add'
}

# ---- part 1: one daemon -------------------------------------------------
NOTIFY=$TMP/notify.sock
python3 - "$NOTIFY" "$TMP/notify.txt" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        # One line per datagram, its newlines as '|'.
        f.write(s.recv(65536).decode().replace("\n", "|") + "\n")
PY
PIDS+=($!)
for _ in $(seq 100); do [ -S "$NOTIFY" ] && break; sleep 0.05; done
[ -S "$NOTIFY" ] || { fail "notify listener did not start"; finish; }

install_tls "$TMP/ca1" "$TMP/tls-a"
CONF=$TMP/a.conf
cat >"$CONF" <<EOF
log-level = info
rpc-idle-timeout-ms = 120000
EOF
export NOTIFY_SOCKET=$NOTIFY
start_daemon a --config "$CONF" --tls-dir "$TMP/tls-a" --accel "$ACCEL" \
	--rpc-listen 127.0.0.1:0
unset NOTIFY_SOCKET
LOG=$TMP/a.log
wait_count "$LOG" "event=started" 1 || fail "no event=started"
RPC_PORT=$(sed -nE 's/.*event=listening transport=tls addr=127\.0\.0\.1:([0-9]+).*/\1/p' "$LOG")
[ -n "$RPC_PORT" ] || { fail "no RPC port in the log"; finish; }

wait_count "$TMP/notify.txt" "^READY=1\|MAINPID=$DPID\|STATUS=running" 1 &&
	ok "READY=1 with MAINPID=$DPID and a STATUS line at start" ||
	fail "no READY=1 at start: $(cat "$TMP/notify.txt")"

expect_rc 0 "create a running VM" ctl vm create v1 --mem 64M --vcpus 1 \
	--rate 2000 --heartbeat-us 2000
expect_rc 0 "CA1 client served before the reload" rpc "$TMP/ca1" "$TMP/ca1" ping
refused "CA2 client refused before the reload" "$TMP/ca1" "$TMP/ca2"
# A subscriber that connected with CA1 before the reload: its connection
# keeps the old context and goes on receiving DIRTY_RATE events.
rpc "$TMP/ca1" "$TMP/ca1" events --kind dirty --count 1000 >"$TMP/sub.txt" 2>&1 &
SUB=$!
PIDS+=($SUB)
wait_count "$TMP/sub.txt" . 1 || fail "subscriber got no event before reload"

# The log level is info: a refused call (logged at debug) leaves no line.
ctl vm inspect nosuch-before >/dev/null 2>&1
sleep 0.2
grep -q "nosuch-before" "$LOG" && fail "debug line at info level" ||
	ok "info level: no debug line for a refused call"

p1=$(progress v1)
# Rotate: CA2 material in place of CA1's, and a new config.
install_tls "$TMP/ca2" "$TMP/tls-a"
cat >"$CONF" <<EOF
log-level = debug
rpc_idle_timeout_ms = 60000
migration-listen = 127.0.0.1:4999
EOF
kill -HUP "$DPID"
wait_count "$LOG" "event=reloaded " 1 || fail "no event=reloaded after SIGHUP"
wait_count "$TMP/notify.txt" "^READY=1" 2 || fail "no second READY=1"
seq1=$(cut -d'|' -f1 "$TMP/notify.txt" | tr '\n' ' ')
[ "$seq1" = "READY=1 RELOADING=1 READY=1 " ] &&
	ok "notify: READY=1, then RELOADING=1 and READY=1 on SIGHUP" ||
	fail "notify sequence: $seq1"
grep -qE "^RELOADING=1\|MONOTONIC_USEC=[0-9]+(\||$)" "$TMP/notify.txt" &&
	ok "RELOADING=1 carries MONOTONIC_USEC" ||
	fail "RELOADING=1 without MONOTONIC_USEC: $(cat "$TMP/notify.txt")"

expect_rc 0 "CA2 client served after the reload" rpc "$TMP/ca2" "$TMP/ca2" ping
refused "CA1 client refused after the reload" "$TMP/ca2" "$TMP/ca1"
expect_rc 5 "a CA1-only client distrusts the new host.pem" \
	rpc "$TMP/ca1" "$TMP/ca1" ping
grep -q "its certificate is not trusted" <<<"$LAST_OUT" &&
	ok "  ... and says so" || fail "  ... with: $LAST_OUT"
n1=$(wc -l <"$TMP/sub.txt")
sleep 2.2
n2=$(wc -l <"$TMP/sub.txt")
kill -0 "$SUB" 2>/dev/null && [ "$n2" -gt "$n1" ] &&
	ok "connection from before the reload still served ($n1 -> $n2 events)" ||
	fail "subscriber lost: $n1 -> $n2 events: $(tail -2 "$TMP/sub.txt")"
st=$(ctl --json vm inspect v1 | jq -r .info.state)
p2=$(progress v1)
sleep 0.5
p3=$(progress v1)
[ "$st" = VM_STATE_RUNNING ] && [ "$p3" -gt "$p2" ] && [ "$p2" -gt "$p1" ] &&
	ok "VM untouched: RUNNING, counters $p1 -> $p2 -> $p3" ||
	fail "VM after reload: $st, counters $p1 -> $p2 -> $p3"

grep -q 'event=reload_option option=log-level old="info" new="debug" applied=yes' "$LOG" &&
	ok "log-level change logged and applied" || fail "no log-level reload line"
grep -q 'event=reload_option option=rpc-idle-timeout-ms old="120000" new="60000" applied=yes' "$LOG" &&
	ok "rpc_idle_timeout_ms (key with '_') applied" || fail "no rpc-idle-timeout-ms line"
grep -q 'event=reload_option option=migration-listen old="127.0.0.1:0" new="127.0.0.1:4999" applied=no why="needs a restart"' "$LOG" &&
	ok "migration-listen logged as needing a restart" ||
	fail "no restart line for migration-listen"
ctl vm inspect nosuch-after >/dev/null 2>&1
wait_count "$LOG" "nosuch-after" 1 &&
	ok "debug level in effect after SIGHUP" ||
	fail "debug level not applied"

# Bad TLS files: the old (CA2) context keeps serving, the log says why.
cp "$TMP/ca1/host.key" "$TMP/tls-a/host.key" # does not match host.pem
kill -HUP "$DPID"
wait_count "$LOG" "event=reloaded " 2 || fail "no event=reloaded (bad key)"
grep -q 'event=tls_reload_failed .*why="host.key does not match host.pem" rpc="kept the previous TLS context"' "$LOG" &&
	ok "mismatched key: reload refused, reason logged" ||
	fail "no reason for the mismatched key: $(grep tls_reload "$LOG")"
expect_rc 0 "old context still serves (mismatched key)" \
	rpc "$TMP/ca2" "$TMP/ca2" ping
install_tls "$TMP/ca2" "$TMP/tls-a"
cp "$TMP/ca1/host.pem" "$TMP/tls-a/host.pem" # CA1's under CA2
cp "$TMP/ca1/host.key" "$TMP/tls-a/host.key"
kill -HUP "$DPID"
wait_count "$LOG" "event=reloaded " 3 || fail "no event=reloaded (half rotated)"
grep -q 'event=tls_reload_failed .*host.pem does not verify against .*ca.pem: unable to get local issuer certificate' "$LOG" &&
	ok "host.pem of another CA: reload refused, reason logged" ||
	fail "no reason for the foreign host.pem: $(grep tls_reload "$LOG")"
echo "not a certificate" >"$TMP/tls-a/ca.pem"
kill -HUP "$DPID"
wait_count "$LOG" "event=reloaded " 4 || fail "no event=reloaded (garbage CA)"
grep -q 'event=tls_reload_failed .*ca.pem: no PEM certificate in it' "$LOG" &&
	ok "garbage ca.pem: reload refused, reason logged" ||
	fail "no reason for the garbage ca.pem: $(grep tls_reload "$LOG")"
expect_rc 0 "old context still serves (garbage files)" \
	rpc "$TMP/ca2" "$TMP/ca2" ping
refused "CA1 client still refused" "$TMP/ca2" "$TMP/ca1"

kill "$SUB" 2>/dev/null
kill -TERM "$DPID"
wait "$DPID"
rc=$?
[ $rc -eq 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $rc"
last=$(tail -1 "$TMP/notify.txt")
case $last in
STOPPING=1*) ok "STOPPING=1 on SIGTERM" ;;
*) fail "last notify message: $last" ;;
esac

# ---- part 2: migrations over rotated TLS -------------------------------
install_tls "$TMP/ca1" "$TMP/tls-s"
install_tls "$TMP/ca1" "$TMP/tls-d"
install_tls "$TMP/ca1" "$TMP/tls-t"
start_daemon s --tls-dir "$TMP/tls-s" --accel "$ACCEL"
S_PID=$DPID S_SOCK=$SOCK
start_daemon d --tls-dir "$TMP/tls-d" --accel "$ACCEL"
D_PID=$DPID D_SOCK=$SOCK
start_daemon t --tls-dir "$TMP/tls-t" --accel "$ACCEL"
T_SOCK=$SOCK
if [ "$(SOCK=$S_SOCK ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP part 2: migration engine not built"
	finish
fi
SOCK=$S_SOCK expect_rc 0 "create m1 on s" ctl vm create m1 --mem 64M \
	--vcpus 2 --rate 2000 --content stamp
SOCK=$S_SOCK expect_rc 0 "create m2 on s" ctl vm create m2 --mem 32M \
	--vcpus 1 --rate 500 --content stamp
install_tls "$TMP/ca2" "$TMP/tls-s"
install_tls "$TMP/ca2" "$TMP/tls-d"
kill -HUP "$S_PID" "$D_PID"
wait_count "$TMP/s.log" "event=reloaded .*tls=ok" 1 &&
	wait_count "$TMP/d.log" "event=reloaded .*tls=ok" 1 &&
	ok "s and d reloaded CA2 material" || fail "s or d did not reload"

port=$("$RECV" --socket "$D_SOCK" --name m1 127.0.0.1:0) ||
	fail "migrate-recv on d: $port"
expect_rc 0 "migrate m1 s -> d, both on CA2 after SIGHUP" \
	"$SEND" --socket "$S_SOCK" m1 "127.0.0.1:$port"
echo "$LAST_OUT" >"$TMP/m1.out"
assert_verified_zero "$TMP/m1.out" "m1 over CA2"
[ "$(SOCK=$D_SOCK ctl --json vm inspect m1 | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "m1 runs on d" || fail "m1 not running on d"

port=$("$RECV" --socket "$T_SOCK" --name m2 127.0.0.1:0) ||
	fail "migrate-recv on t: $port"
expect_rc 1 "migrate m2 s (CA2) -> t (CA1): refused" \
	"$SEND" --socket "$S_SOCK" --timeout-ms 8000 m2 "127.0.0.1:$port"
grep -iE "certificate|tls|handshake" <<<"$LAST_OUT" | head -2
echo "$LAST_OUT" | grep -qiE "certificate|tls|handshake" &&
	ok "the refusal names the TLS handshake" ||
	fail "refusal without a TLS reason: $(echo "$LAST_OUT" | tail -3)"
[ "$(SOCK=$S_SOCK ctl --json vm inspect m2 | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "m2 still runs on s" || fail "m2 lost on s"
SOCK=$T_SOCK expect_rc 3 "t holds no m2" ctl vm inspect m2
finish
