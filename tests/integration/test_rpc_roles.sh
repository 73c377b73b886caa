#!/bin/bash
# Per-client authorisation on the TCP control RPC (rpcauth.h): certificate
# identities (CN or subjectAltName) map to roles; a call the role does not
# cover is refused with PERMISSION_DENIED (exit 8) and does not run. And
# where incoming migrations listen by default (the configured address,
# not every interface) and in a --migration-listen port range.
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$RECV" ] || { echo "SKIP: migrate-recv not built"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: no openssl CLI"; exit 77; }

# The config file the daemon reads (and reads again on SIGHUP).
CONF=$TMP/migrated.conf
cat >"$CONF" <<EOF
rpc-role = viewer:read-only
rpc-role = peer.example:peer-daemon
rpc-role = ops:operator
EOF
RPC_PORT=$(free_port)
start_daemon d1 --accel soft --dev-tls --tls-dir "$TMP/tls" \
	--rpc-listen "127.0.0.1:$RPC_PORT" --config "$CONF"
D1=$SOCK

# issue NAME SUBJ [SAN]: a client certificate from the daemon's dev CA.
issue() {
	local ext=$TMP/$1.ext
	printf 'extendedKeyUsage = clientAuth\n' >"$ext"
	[ -n "${3:-}" ] && printf 'subjectAltName = %s\n' "$3" >>"$ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -keyout "$TMP/$1.key" -subj "$2" \
		-out "$TMP/$1.csr" 2>/dev/null &&
	openssl x509 -req -in "$TMP/$1.csr" -CA "$TMP/tls/ca.pem" \
		-CAkey "$TMP/tls/ca.key" -CAcreateserial -days 1 \
		-extfile "$ext" -out "$TMP/$1.pem" 2>/dev/null ||
		{ fail "cannot issue a certificate for $1"; finish; }
}
issue viewer "/CN=viewer"
# The peer is named by its subjectAltName only: its CN matches no rule.
issue peer "/CN=some-host" "DNS:peer.example"
issue ops "/CN=ops"
issue stranger "/CN=stranger"

# as NAME ARGS...: migratectl over TCP with NAME's certificate.
as() {
	local who=$1
	shift
	"$CTL" --connect "127.0.0.1:$RPC_PORT" --tls-ca "$TMP/tls/ca.pem" \
		--tls-cert "$TMP/$who.pem" --tls-key "$TMP/$who.key" "$@"
}

expect_rc 0 "operator (Unix socket) creates vm1" ctl vm create vm1 \
	--mem 32M --pattern idle
if [ "$(json_get "$(ctl --json vm inspect vm1 2>&1)" .info.accel)" = "" ]; then
	echo "cannot create VMs here:"; cat "$TMP/d1.log"; exit 77
fi

# read-only: lists and inspects, cannot create or destroy.
expect_rc 0 "read-only lists VMs" as viewer vm list
grep -q vm1 <<<"$LAST_OUT" && ok "read-only sees vm1" ||
	fail "read-only list: $LAST_OUT"
expect_rc 0 "read-only inspects vm1" as viewer vm inspect vm1
expect_rc 8 "read-only cannot create" as viewer vm create ro1 --mem 32M
grep -q "permission denied" <<<"$LAST_OUT" &&
	grep -q "needs role operator" <<<"$LAST_OUT" &&
	ok "the refusal is typed and names the role needed" ||
	fail "refusal text: $LAST_OUT"
[ "$(ctl --json vm list | jq '.vms | length')" = 1 ] &&
	ok "the refused create did not run" || fail "a VM was created"
expect_rc 8 "read-only cannot destroy" as viewer vm destroy vm1

# peer-daemon (matched by SAN): reads, but cannot destroy or pause.
expect_rc 0 "peer-daemon lists VMs (SAN identity)" as peer vm list
expect_rc 8 "peer-daemon cannot destroy" as peer vm destroy vm1
expect_rc 8 "peer-daemon cannot pause" as peer vm pause vm1
OUT=$(as peer --json vm destroy vm1 2>&1)
[ "$(jq -r .status <<<"$OUT" 2>/dev/null)" = STATUS_PERMISSION_DENIED ] &&
	ok "--json shows STATUS_PERMISSION_DENIED" ||
	echo "note: --json refusal: $OUT"

# An identity no rule names gets the default: none (rules exist).
expect_rc 8 "an unnamed identity is refused even ping" as stranger ping

# operator over TCP: destroys.
expect_rc 0 "operator (TCP) destroys vm1" as ops vm destroy vm1

# SIGHUP: viewer revoked, takes effect without a restart.
sed -i 's/^rpc-role = viewer:read-only/rpc-role = viewer:none/' "$CONF"
kill -HUP "$DPID"
for _ in $(seq 100); do
	grep -q 'event=reload_option option=rpc-role' "$TMP/d1.log" && break
	sleep 0.1
done
expect_rc 8 "after reload the revoked viewer cannot list" as viewer vm list
expect_rc 0 "after reload ops still can" as ops vm list

# The refusal is logged once, naming the peer.
grep -q 'event=rpc_denied .*peer="stranger" role=none' "$TMP/d1.log" &&
	ok "refusal logged with the peer's CN" || fail "no rpc_denied line"

# --- where incoming migrations listen -----------------------------------
# Default: the --rpc-listen host (127.0.0.1 here), never 0.0.0.0.
J=$("$RECV" --socket "$D1" --json) || fail "migrate-recv (default): $J"
[ "$(jq -r .listen <<<"$J")" = 127.0.0.1 ] &&
	ok "default listen address: the configured one ($(jq -c . <<<"$J"))" ||
	fail "default listen: $J"
P=$(jq -r .port <<<"$J")
if [ -n "$P" ] && [ "$P" != null ] && command -v ss >/dev/null; then
	ss -ltnH "sport = :$P" | grep -q "127.0.0.1:$P" &&
		ok "bound to 127.0.0.1:$P only" ||
		fail "socket of port $P: $(ss -ltnH "sport = :$P")"
fi

# A range: two incoming migrations take its two ports, a third is refused
# with a message that says the range is full.
start_daemon d2 --accel soft --dev-tls --tls-dir "$TMP/tls" \
	--migration-listen "127.0.0.1:$((RPC_PORT + 1))-$((RPC_PORT + 2))"
R1=$("$RECV" --socket "$SOCK") || fail "first recv in range: $R1"
R2=$("$RECV" --socket "$SOCK") || fail "second recv in range: $R2"
[ "$R1" = $((RPC_PORT + 1)) ] && [ "$R2" = $((RPC_PORT + 2)) ] &&
	ok "range: ports $R1 and $R2, in order" ||
	fail "range ports: '$R1' '$R2' (range $((RPC_PORT + 1))-$((RPC_PORT + 2)))"
expect_rc 4 "range full: third incoming refused" "$RECV" --socket "$SOCK"
grep -q "every port of the range is in use" <<<"$LAST_OUT" &&
	ok "the refusal says the range is full" || fail "message: $LAST_OUT"
expect_rc 2 "a reversed range is refused at start" "$MIGRATED" \
	--migration-listen "127.0.0.1:5001-5000" --state-dir "$TMP/bad"
grep -q "HOST:FIRST-LAST" <<<"$LAST_OUT" &&
	ok "the error shows the accepted format" || fail "msg: $LAST_OUT"

finish
