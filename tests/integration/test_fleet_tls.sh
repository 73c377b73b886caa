#!/usr/bin/env bash
# The fleet over TLS: etcd serves its clients over TLS and wants a client
# certificate (certificates made here with openssl). A daemon given the
# CA, its client certificate and key registers, claims a VM's key, and a
# migration's commit transaction (made by the worker processes, which get
# the same options from their daemon) moves it; a daemon given the wrong
# CA, or no client certificate, is refused at start with a clear message.
# argv: migrated migratectl migrate-send migrate-recv
DIR=$(cd "$(dirname "$0")" && pwd)
source "$DIR/lib_faults.sh" "$@"
source "$DIR/lib_etcd.sh"
etcd_need
command -v openssl >/dev/null || { echo "SKIP: no openssl CLI"; exit 77; }
[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
ACCEL=soft
P=/migrated/
PKI=$TMP/pki

mkca "$PKI" etcd-it-ca || { fail "cannot make the test CA"; finish; }
mkca "$TMP/other" other-ca || { fail "cannot make the other CA"; finish; }
ETCD_TLS=$PKI
etcd_start 1
[[ $ETCD_ENDPOINTS == https://* ]] && ok "etcd serves clients over TLS ($ETCD_ENDPOINTS)" ||
	fail "etcd endpoints: $ETCD_ENDPOINTS"
# etcd refuses a plain client: what the daemon gets is TLS or nothing.
curl -s -m 2 "http://${ETCD_ENDPOINTS#https://}/health" | grep -q '"health":"true"' &&
	fail "etcd answered plain http" || ok "etcd does not answer plain http"

ETLS=(--etcd-cacert "$PKI/ca.pem" --etcd-cert "$PKI/client.pem" --etcd-key "$PKI/client.key")
owner_is() { etcd_owner_is "$@"; }
host_key() { [ -n "$(etcd_get "${P}hosts/$1")" ]; }

# --- a daemon registers through TLS --------------------------------------------
daemon() {
	start_daemon "$1" --accel $ACCEL --dev-tls --tls-dir "$TMP/tls" \
		--etcd "$ETCD_ENDPOINTS" --host-id "$1" --etcd-ttl 5 "${ETLS[@]}"
	printf -v "SOCK_$1" %s "$SOCK"
}
daemon t1
for _ in $(seq 50); do [ -f "$TMP/tls/host.key" ] && break; sleep 0.1; done
daemon t2
wait_for 10 "t1 registered through TLS" host_key t1
wait_for 10 "t2 registered through TLS" host_key t2
SOCK=$SOCK_t1 expect_rc 0 "create v1 on t1" ctl vm create v1 --mem 16M --vcpus 1 --rate 2000
wait_for 5 "v1's key: owner t1, generation 1" owner_is v1 t1 1

# --- the workers' commit transaction, through TLS too ---------------------------
port=$("$RECV" --socket "$SOCK_t2" --name v1 127.0.0.1:0) || fail "migrate-recv: $port"
"$SEND" --socket "$SOCK_t1" v1 "127.0.0.1:$port" >"$TMP/v1.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "v1 migrated t1 -> t2" || fail "migrate-send rc=$rc: $(tail -3 "$TMP/v1.out")"
wait_for 5 "v1's key: owner t2, generation 2" owner_is v1 t2 2
wait_state "$SOCK_t2" v1 VM_STATE_RUNNING && ok "v1 runs on t2" ||
	fail "v1 on t2: $(vm_state "$SOCK_t2" v1)"
wait_state "$SOCK_t1" v1 absent && ok "v1 gone from t1" || fail "v1 on t1: $(vm_state "$SOCK_t1" v1)"
expect_intact "v1 on t2, every page" "$SOCK_t2" v1

# --- refused: wrong CA, no client certificate ---------------------------------
# refused NAME DESC ARGS...: the daemon exits 1 at start, saying why.
refused() {
	local n=$1 desc=$2 rc
	shift 2
	timeout 30 "$MIGRATED" --state-dir "$TMP/$n" --accel $ACCEL \
		--etcd "$ETCD_ENDPOINTS" --host-id "$n" "$@" >"$TMP/$n.log" 2>&1
	rc=$?
	if [ "$rc" = 1 ] && grep -q "cannot join the fleet: etcd" "$TMP/$n.log"; then
		ok "$desc: refused at start (rc=1)"
	else
		fail "$desc: rc=$rc, log: $(tail -3 "$TMP/$n.log")"
	fi
}
refused wrongca "etcd's certificate from another CA" --etcd-cacert "$TMP/other/ca.pem" \
	--etcd-cert "$PKI/client.pem" --etcd-key "$PKI/client.key"
grep -qi "certificate" "$TMP/wrongca.log" && ok "the refusal names the certificate problem" ||
	fail "wrong CA: no word of the certificate: $(grep -i fleet "$TMP/wrongca.log" | tail -2)"
refused nocert "no client certificate" --etcd-cacert "$PKI/ca.pem"
grep -q "no client certificate given" "$TMP/nocert.log" &&
	ok "the refusal suggests the missing client certificate" ||
	fail "no client certificate: $(grep -i fleet "$TMP/nocert.log" | tail -2)"
host_key wrongca || host_key nocert && fail "a refused daemon registered" ||
	ok "neither refused daemon has a host key"
finish
